"""Graded samples from ranked samples: answers from the chat client, grades from the judge.

For each ranked sample and each of its K (Primer Appendix A.1.3):

1. ``answer_topK``: the LLM answers the query from the top K candidates, in rank order
   (prompt of Appendix A.2, ``ragnb/prompts/primer_answer.yaml``);
2. ``answer_ideal``: the LLM answers the query from all the positives of the query-texts sample
   (same prompt; one call per query-texts sample);
3. ``grade``: the LLM compares the top-K answer with the ideal one, 1-5 (prompt of Appendix
   A.3, the shipped ``primer-response`` template).

The answers are sent by the judge's :class:`~ragnb.llm.ChatClient` (``judge.client``), the
grades by the :class:`ragnb.judge.OpenAIJudge` itself (its grading options: constrained output,
log-probabilities): one client, retries, cache (a repeated run sends nothing) and ledger, with
one ledger stage per step (``answer_ideal``, ``answer_topK``, ``grade``). Identical prompts (the
same top K reached by two embedders) are sent once.

References
----------
.. [1] S. Schwartz, O. Vasilyev and R. Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer, Section 2.4 and Appendices A.2, A.3.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge.llm import OpenAIJudge
from ragnb.llm.calls import CallResult, LLMCall
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import PromptTemplate, load_prompt
from ragnb.studies.correlation.data import graded_labels, ranked_texts

__all__ = ["AnswerTemplate", "generate_graded", "load_answer_prompt"]

STAGES = ("answer_ideal", "answer_topK", "grade")


@dataclass(frozen=True)
class AnswerTemplate(PromptTemplate):
    """A free-text generation prompt (``kind: generate``, ``answer: text``).

    The YAML format of :class:`ragnb.llm.PromptTemplate`; any non-empty answer is valid (an
    empty one gets the reminder once). ``passage_format`` writes each reference with its
    1-based number as ``{label}``.
    """

    def __post_init__(self) -> None:
        where = f"prompt template {self.name!r}" + (f" ({self.path})" if self.path else "")
        if self.kind != "generate" or self.answer != "text":
            raise InputError(f"{where}: an answer prompt needs kind: generate and answer: text")
        if not isinstance(self.user, str) or not self.user.strip():
            raise InputError(f"{where}: the user message is empty")
        missing = {"query", "references"} - set(self.fields)
        if missing:
            raise InputError(f"{where}: the messages never use the field(s) {sorted(missing)}")

    def parse(self, text: str, labels: Any = None) -> tuple[Any, str | None]:
        """Any non-empty text (stripped) is the answer."""
        s = text.strip()
        return (s, None) if s else (None, "empty answer")

    def references(self, passages: list[str]) -> str:
        """The ``{references}`` block: each passage numbered in the order given."""
        return self.passage_separator.join(
            self.passage_format.format(label=str(i), passage=p)
            for i, p in enumerate(passages, start=1)
        )


def load_answer_prompt(path: str | os.PathLike[str] | None = None) -> AnswerTemplate:
    """The response-generation prompt (Primer A.2) shipped as ``ragnb/prompts/primer_answer.yaml``,
    or a YAML file of the same form.

    Raises
    ------
    InputError
        On a malformed template.
    """
    if path is None:
        path = Path(__file__).resolve().parents[2] / "prompts" / "primer_answer.yaml"
    tpl = AnswerTemplate.from_file(path)
    if not isinstance(tpl, AnswerTemplate):  # from_file builds cls
        raise InputError("not an answer template", path=path)
    return tpl


def _check(judge: Any) -> OpenAIJudge:
    if not isinstance(judge, OpenAIJudge):
        raise InputError(f"generation needs an OpenAIJudge (client, cache, ledger), got {judge!r}")
    return judge


def _calls(
    ranked: pd.DataFrame,
    query_texts: pd.DataFrame,
    client: ChatClient,
    answer: AnswerTemplate,
    ideal: str,
) -> tuple[pd.DataFrame, dict[str, LLMCall], list[LLMCall]]:
    if ideal not in ("all", "Np"):
        raise InputError(f"ideal must be 'all' or 'Np', got {ideal!r}")
    qt = {r["id"]: r for r in query_texts.to_dict("records")}
    skeleton = graded_labels(ranked)
    ideal_calls: dict[str, LLMCall] = {}
    topk_calls = []
    by_key = {(r["id"], r["E"], r["Nc"], r["Np"]): r for r in ranked.to_dict("records")}
    for g in skeleton.itertuples(index=False):
        sq = qt.get(g.id)
        if sq is None:
            raise InputError(f"ranked sample id {g.id!r} has no query-texts sample", query_id=g.id)
        ideal_key = g.id if ideal == "all" else f"{g.id}/Np={g.Np}"
        if ideal_key not in ideal_calls:
            positives = list(sq["p"]) if ideal == "all" else list(sq["p"])[: g.Np]
            values = {"query": sq["q"], "references": answer.references(positives)}
            ideal_calls[ideal_key] = client.make_call(
                answer, values, item=f"{ideal_key}/ideal", query_id=g.id
            )
        texts = ranked_texts(by_key[(g.id, g.E, g.Nc, g.Np)], sq)[: g.K]
        values = {"query": sq["q"], "references": answer.references(texts)}
        item = f"{g.id}/{g.E}/Nc={g.Nc}/Np={g.Np}/K={g.K}"
        topk_calls.append(client.make_call(answer, values, item=item, query_id=g.id))
    skeleton["_ideal"] = [
        g.id if ideal == "all" else f"{g.id}/Np={g.Np}" for g in skeleton.itertuples(index=False)
    ]
    return skeleton, ideal_calls, topk_calls


def _answer(p: str | os.PathLike[str] | AnswerTemplate | None) -> AnswerTemplate:
    if isinstance(p, AnswerTemplate):
        return p
    return load_answer_prompt(p)


def generate_graded(
    ranked: pd.DataFrame,
    query_texts: pd.DataFrame,
    judge: OpenAIJudge,
    *,
    answer_prompt: str | os.PathLike[str] | AnswerTemplate | None = None,
    grade_prompt: str | os.PathLike[str] | PromptTemplate = "primer-response",
    ideal: str = "all",
) -> pd.DataFrame:
    """Graded samples (Primer A.1.3) for every K of every ranked sample, through the LLM.

    Parameters
    ----------
    ranked : DataFrame
        Ranked samples (:func:`ragnb.studies.correlation.rank_samples` or :func:`read_ranked`).
    query_texts : DataFrame
        Their query-texts samples (``id``, ``q``, ``p``, ``n``).
    judge : OpenAIJudge
        Grades with ``grade_prompt`` and its options; its client (model, endpoint, cache, ledger,
        retries) writes the answers. Its own prompts are not used.
    answer_prompt : str, PathLike or AnswerTemplate, optional
        Default ``ragnb/prompts/primer_answer.yaml`` (A.2).
    grade_prompt : str, PathLike or PromptTemplate, default "primer-response"
        A 1-5 grade template with fields ``query``, ``response``, ``reference`` (A.3).
    ideal : {"all", "Np"}, default "all"
        The ideal answer uses all positives of the query-texts sample (the paper, A.1.3 item 8)
        or only the ranked sample's first ``Np``.

    Returns
    -------
    DataFrame
        Columns of :data:`ragnb.studies.correlation.GRADED_COLUMNS` (``grade``: float 1-5, NaN when
        an answer or the grade is missing or invalid) plus ``grade_expected`` (float 1-5: the
        probability-weighted grade from the grade token's log-probabilities, Zhuang et al.,
        NAACL 2024, when ``judge`` asks for them (``logprobs``) and the server returns them;
        else NaN), ``grade_raw`` (the grader's answer text), ``valid`` (bool), ``reason`` (why
        not valid), ``judge_id``, ``answer_prompt``, ``grade_prompt``.

    Raises
    ------
    InputError
        When a ranked sample has no query-texts sample, or a prompt is of the wrong kind.

    Notes
    -----
    Ledger stages ``answer_ideal``, ``answer_topK`` and ``grade``; the API key is sent only in
    the request header (see :class:`ragnb.judge.OpenAIJudge`).
    """
    judge = _check(judge)
    answer = _answer(answer_prompt)
    grader = load_prompt(grade_prompt)
    if grader.kind != "grade" or {"query", "reference"} - set(grader.fields):
        raise InputError(
            f"grade_prompt {grader.id} must be a grade prompt with {{query}}, {{reference}} and "
            f"its item field"
        )
    client = judge.client
    skeleton, ideal_calls, topk_calls = _calls(ranked, query_texts, client, answer, ideal)
    keys = list(ideal_calls)
    ideal_res = dict(
        zip(
            keys,
            client.run([ideal_calls[k] for k in keys], stage="answer_ideal", kind="generate"),
            strict=True,
        )
    )
    topk_res = client.run(topk_calls, stage="answer_topK", kind="generate")
    qt = dict(zip(query_texts["id"], query_texts["q"], strict=True))
    grade_calls: list[LLMCall] = []
    grade_pos: list[int] = []
    answers_ideal, answers_topk, reasons = [], [], []
    ideal_keys = skeleton.pop("_ideal").tolist()
    rows = zip(skeleton.itertuples(index=False), topk_res, ideal_keys, strict=True)
    for i, (g, res, ideal_key) in enumerate(rows):
        ires = ideal_res[ideal_key]
        answers_ideal.append(ires.value if ires.valid else None)
        answers_topk.append(res.value if res.valid else None)
        bad = [
            f"{name}: {r.status}: {r.reason}"
            for name, r in (("answer_ideal", ires), ("answer_topK", res))
            if not r.valid
        ]
        reasons.append("; ".join(bad))
        if bad:
            continue
        values = {"query": qt[g.id], grader.item_field: res.value, "reference": ires.value}
        item = f"{g.id}/{g.E}/Nc={g.Nc}/Np={g.Np}/K={g.K}/grade"
        options = judge.call_options(grader)
        grade_calls.append(
            judge.client.make_call(grader, values, item=item, query_id=g.id, **options)
        )
        grade_pos.append(i)
    grade_res: list[CallResult] = judge.run(grade_calls, stage="grade", kind="grade")
    grades = np.full(len(skeleton), math.nan)
    expected = np.full(len(skeleton), math.nan)
    raw: list[str | None] = [None] * len(skeleton)
    for i, r in zip(grade_pos, grade_res, strict=True):
        raw[i] = r.raw
        if r.valid:
            grades[i] = float(r.value)
            if r.expected_grade is not None:
                expected[i] = float(r.expected_grade)
        else:
            reasons[i] = f"grade: {r.status}: {r.reason}"
    out = skeleton
    out["answer_ideal"] = answers_ideal
    out["answer_topK"] = answers_topk
    out["grade"] = grades
    out["grade_expected"] = expected
    out["grade_raw"] = raw
    out["valid"] = ~np.isnan(grades)
    out["reason"] = reasons
    out["judge_id"] = judge.judge_id
    out["answer_prompt"] = answer.id
    out["grade_prompt"] = grader.id
    return out
