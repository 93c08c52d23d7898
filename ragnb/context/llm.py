"""LLM-judged context precision and context recall of RAG samples ("RAG Evaluation Part 1").

The measures run on an :class:`ragnb.judge.OpenAIJudge` (pass the judge): its grading for the
relevance and attribution verdicts, its :class:`~ragnb.llm.ChatClient` (``judge.client``: cache,
retries, ledger) for claim extraction, with that post's prompts as editable templates in
``ragnb/prompts/``.

Samples use ragas' field names, one row per sample (a DataFrame, a list of dicts, or anything
with ``to_pandas()`` such as a ragas ``EvaluationDataset``):

===================== ======================== ===========================================
field                 type                     used by
===================== ======================== ===========================================
``user_input``        str                      both context precisions
``retrieved_contexts`` list of str, rank order all three
``reference``         str                      precision with reference, recall
``response``          str                      precision without reference
===================== ======================== ===========================================

Measures
--------
:func:`llm_context_precision_with_reference`
    Each retrieved context k is judged relevant (v_k = 1) or not (0) by the binary relevance
    prompt, anchored on the reference answer; then
    ``CP@K = sum_k P@k v_k / sum_k v_k`` (0 when no context is relevant, as ragas).
:func:`llm_context_precision_without_reference`
    The same, anchored on the generated ``response`` (for live traffic without a reference).
:func:`llm_context_recall`
    The reference is split into claims (claim extraction prompt, a numbered list); each claim
    is judged supported (1) or not (0) by the retrieved contexts together (claim attribution
    prompt); recall = supported claims / claims.

A judgement that stays invalid after the reminder, or fails, is never guessed: the sample's
score is NaN, ``valid`` is False and ``reason`` says which judgement failed and why.

References
----------
.. [1] "RAG Evaluation Part 1: Retriever Evaluation": Context Precision@K (worked examples
   0.917 and 0.477), LLMContextPrecisionWithReference / WithoutReference, LLM-based Context
   Recall (claims C1-C4, recall 3/4), with the retrival_relevance_prompt,
   claim_extraction_prompt and claim_context_attribution_prompt.
.. [2] S. Es et al., "Ragas: automated evaluation of retrieval augmented generation", EACL
   2024; ragas ``LLMContextPrecisionWithReference``, ``LLMContextPrecisionWithoutReference``,
   ``LLMContextRecall``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ragnb.context.nonllm import samples_frame
from ragnb.core.docstrings import doc_filler
from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.judge.llm import OpenAIJudge
from ragnb.llm.calls import CallResult, LLMCall
from ragnb.llm.client import ChatClient
from ragnb.llm.ledger import CostEstimate, PlannedCall, estimate_calls
from ragnb.llm.prompts import PromptTemplate, available_prompts, load_prompt
from ragnb.measures.context import context_precision_from_verdicts

__all__ = [
    "context_precision_from_verdicts",  # re-exported; its home is ragnb.measures.context
    "estimate_llm_measure",
    "llm_context_precision_with_reference",
    "llm_context_precision_without_reference",
    "llm_context_recall",
]

Template = str | os.PathLike[str] | PromptTemplate

#: numpydoc entries the LLM measures share; :data:`_fill_doc` substitutes them
#: (:func:`ragnb.core.docstrings.doc_filler`).
_DOC_ENTRIES: dict[str, str] = {
    "bad_samples": "InputError\n"
    "    When a sample lacks a field or holds an empty text, or a grade prompt does not grade\n"
    "    on 0-1 (before any call).",
}
_fill_doc = doc_filler(_DOC_ENTRIES)


# ----------------------------------------------------------------------------- samples


def _text(frame: pd.DataFrame, i: int, col: str) -> str:
    if col not in frame.columns:
        raise InputError(f"samples lack the field {col!r}", column=col)
    v = frame[col].iloc[i]
    if not isinstance(v, str) or not v.strip():
        raise InputError(f"row {i}: {col} must be a non-empty text, got {v!r}", column=col)
    return v


def _contexts(frame: pd.DataFrame, i: int, k: int | None) -> list[str]:
    col = "retrieved_contexts"
    if col not in frame.columns:
        raise InputError(f"samples lack the field {col!r}", column=col)
    v = frame[col].iloc[i]
    if isinstance(v, str | bytes) or not hasattr(v, "__iter__"):
        raise InputError(f"row {i}: {col} must be a list of texts", column=col)
    out = list(v)
    for x in out:
        if not isinstance(x, str):
            raise InputError(f"row {i}: {col} holds {x!r}, not text", column=col)
    return out if k is None else out[:k]


def _check_judge(judge: Any) -> OpenAIJudge:
    if not isinstance(judge, OpenAIJudge):
        raise InputError(
            f"the LLM measures need an OpenAIJudge (client, cache, ledger), got {type(judge)}"
        )
    return judge


def _checked(samples: Any, judge: Any, k: int | None) -> tuple[OpenAIJudge, pd.DataFrame]:
    """A measure's arguments checked (``k``, then the judge) and its samples as a frame."""
    check_positive_int(k, allow_none=True)
    return _check_judge(judge), samples_frame(samples)


def _template(t: Template, judge: OpenAIJudge, kind: str) -> PromptTemplate:
    shipped = available_prompts()
    if isinstance(t, str) and t in shipped:
        # the judge's language when the prompt ships in it, else English
        tpl = load_prompt(t, judge.language if judge.language in shipped[t] else "en")
    else:
        tpl = load_prompt(t)
    if tpl.kind != kind:
        raise InputError(f"prompt {tpl.id} is a {tpl.kind} prompt; a {kind} prompt is needed")
    if kind == "grade" and tuple(tpl.scale or ()) != (0, 1):
        # the measures' formulas take verdicts of 0 and 1 (context_precision_from_verdicts)
        lo, hi = tpl.scale or (None, None)
        raise InputError(f"prompt {tpl.id} grades on {lo}-{hi}; a 0/1 grade prompt is needed")
    return tpl


def _head(frame: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"sample": np.arange(len(frame))}
    if "user_input" in frame.columns:
        out["user_input"] = frame["user_input"].to_numpy(dtype=object)
    return out


def _verdict(c: CallResult) -> int | None:
    return int(c.value) if c.valid else None


def _scores_frame(
    frame: pd.DataFrame,
    name: str,
    scores: list[float],
    details: dict[str, Any],
    raws: Sequence[tuple[str | None, ...]],
    reasons: list[str],
    judge: OpenAIJudge,
    prompt: PromptTemplate,
) -> pd.DataFrame:
    """A measure's output: head, score column ``name``, ``details``, then the judge's columns
    (a sample is ``valid`` when it has no failure ``reason``)."""
    return pd.DataFrame(
        {
            **_head(frame),
            name: np.asarray(scores, dtype=float),
            **details,
            "raw_answers": pd.Series(raws, dtype=object),
            "valid": np.asarray([not r for r in reasons], dtype=bool),
            "reason": pd.Series(reasons, dtype=object),
            "judge_id": judge.judge_id,
            "prompt": prompt.id,
        }
    )


def _run_grouped(
    judge: OpenAIJudge, per_sample: Sequence[Sequence[LLMCall]], stage: str
) -> list[list[CallResult]]:
    """Every sample's grade calls sent as one job; the results grouped back by sample."""
    results = iter(judge.run([c for calls in per_sample for c in calls], stage=stage, kind="grade"))
    return [[next(results) for _ in calls] for calls in per_sample]


def _failures(results: Sequence[CallResult], item: str) -> str:
    """Which judgements failed and why (``"<item> <j>: <status>: <reason>"``); "" if none."""
    return "; ".join(
        f"{item} {j}: {r.status}: {r.reason}" for j, r in enumerate(results, 1) if not r.valid
    )


# ----------------------------------------------------------------------------- precision


#: The two LLM context precisions by measure name (also their default ledger stage): the field
#: each context is judged against. The score column is ``llm_<measure>``.
_PRECISION_ANCHORS: dict[str, str] = {
    "context_precision_with_reference": "reference",
    "context_precision_without_reference": "response",
}


def _precision_calls(
    frame: pd.DataFrame, judge: OpenAIJudge, tpl: PromptTemplate, anchor: str, k: int | None
) -> list[list[LLMCall]]:
    out = []
    for i in range(len(frame)):
        query = _text(frame, i, "user_input")
        answer = _text(frame, i, anchor)
        calls = []
        for j, ctx in enumerate(_contexts(frame, i, k)):
            values = {"query": query, tpl.item_field: ctx, "answer": answer}
            item, qid = f"s{i}/c{j + 1}", f"s{i}"
            options = judge.call_options(tpl)
            calls.append(judge.client.make_call(tpl, values, item=item, query_id=qid, **options))
        out.append(calls)
    return out


def _context_precision(
    samples: Any, judge: Any, measure: str, k: int | None, prompt: Template, stage: str
) -> pd.DataFrame:
    """The LLM context precision ``measure`` (a key of :data:`_PRECISION_ANCHORS`)."""
    judge, frame = _checked(samples, judge, k)
    tpl = _template(prompt, judge, "grade")
    per_sample = _precision_calls(frame, judge, tpl, _PRECISION_ANCHORS[measure], k)
    scores, verdicts, raws, reasons, n_ctx = [], [], [], [], []
    for rs in _run_grouped(judge, per_sample, stage):
        v = [_verdict(r) for r in rs]
        reason = _failures(rs, "context")
        verdicts.append(tuple(v))
        raws.append(tuple(r.raw for r in rs))
        n_ctx.append(len(rs))
        scores.append(math.nan if reason else context_precision_from_verdicts([x or 0 for x in v]))
        reasons.append(reason)
    details = {
        "n_contexts": np.asarray(n_ctx, dtype="int64"),
        "verdicts": pd.Series(verdicts, dtype=object),
    }
    return _scores_frame(frame, f"llm_{measure}", scores, details, raws, reasons, judge, tpl)


@_fill_doc
def llm_context_precision_with_reference(
    samples: Any,
    judge: OpenAIJudge,
    *,
    k: int | None = None,
    prompt: Template = "binary-relevance",
    stage: str = "context_precision_with_reference",
) -> pd.DataFrame:
    """Context precision with each context judged against the reference answer.

    Parameters
    ----------
    samples : DataFrame, list of dict or ragas EvaluationDataset
        Fields ``user_input``, ``retrieved_contexts`` (rank order), ``reference``.
    judge : OpenAIJudge
        Client, model, cache, ledger and retry settings (its own prompts are not used).
    k : int, optional
        Judge only the top ``k`` contexts (default all).
    prompt : str, PathLike or PromptTemplate, default "binary-relevance"
        A 0/1 grade template with fields ``query``, ``passage``, ``answer``.
    stage : str
        Ledger label.

    Returns
    -------
    DataFrame
        One row per sample: ``sample`` (0-based position), ``user_input``,
        ``llm_context_precision_with_reference`` (float in [0, 1], NaN unless ``valid``),
        ``n_contexts``, ``verdicts`` (tuple of 1/0/None per context, rank order),
        ``raw_answers`` (tuple of the judge's answers), ``valid`` (bool), ``reason`` (str),
        ``judge_id``, ``prompt``.

    {{Raises: bad_samples}}

    References
    ----------
    .. [1] "RAG Evaluation Part 1", Context Precision@K and LLMContextPrecisionWithReference.
    """
    measure = "context_precision_with_reference"
    return _context_precision(samples, judge, measure, k, prompt, stage)


def llm_context_precision_without_reference(
    samples: Any,
    judge: OpenAIJudge,
    *,
    k: int | None = None,
    prompt: Template = "binary-relevance",
    stage: str = "context_precision_without_reference",
) -> pd.DataFrame:
    """Context precision with each context judged against the generated response.

    As :func:`llm_context_precision_with_reference`, with the field ``response`` in place of
    ``reference`` and the score column ``llm_context_precision_without_reference``.

    References
    ----------
    .. [1] "RAG Evaluation Part 1", LLMContextPrecisionWithoutReference.
    """
    measure = "context_precision_without_reference"
    return _context_precision(samples, judge, measure, k, prompt, stage)


# ----------------------------------------------------------------------------- recall


def _numbered(contexts: Sequence[str]) -> str:
    """The contexts as the attribution prompt's numbered block ("1. ..."), or a placeholder."""
    if not contexts:
        return "(no context retrieved)"
    return "\n\n".join(f"{i}. {c}" for i, c in enumerate(contexts, start=1))


def _extraction_call(client: ChatClient, ext: PromptTemplate, i: int, reference: str) -> LLMCall:
    """Sample ``i``'s claim extraction call (the same key in a run and in its estimate)."""
    return client.make_call(ext, {"reference": reference}, item=f"s{i}/claims", query_id=f"s{i}")


def _attribution_calls(
    judge: OpenAIJudge, att: PromptTemplate, i: int, claims: Sequence[str], block: str
) -> list[LLMCall]:
    """Sample ``i``'s claim attribution calls: each claim against the numbered contexts."""
    return [
        judge.client.make_call(
            att,
            {att.item_field: claim, "contexts": block},
            item=f"s{i}/claim{j + 1}",
            query_id=f"s{i}",
            **judge.call_options(att),
        )
        for j, claim in enumerate(claims)
    ]


@_fill_doc
def llm_context_recall(
    samples: Any,
    judge: OpenAIJudge,
    *,
    k: int | None = None,
    extraction_prompt: Template = "claim-extraction",
    attribution_prompt: Template = "claim-attribution",
    stage: str = "context_recall",
) -> pd.DataFrame:
    """Context recall: the share of the reference's claims that the retrieved contexts support.

    Parameters
    ----------
    samples : DataFrame, list of dict or ragas EvaluationDataset
        Fields ``reference`` and ``retrieved_contexts``; ``user_input`` is copied if present.
    judge : OpenAIJudge
    k : int, optional
        Use only the top ``k`` contexts (default all).
    extraction_prompt : default "claim-extraction"
        An ``extract`` template with field ``reference`` (answer: numbered list).
    attribution_prompt : default "claim-attribution"
        A 0/1 grade template with fields ``claim`` and ``contexts`` (numbered "1. ...").
    stage : str
        Ledger label (the two steps are ``<stage>/claims`` and ``<stage>/attribution``).

    Returns
    -------
    DataFrame
        One row per sample: ``sample``, ``user_input``, ``context_recall`` (float in [0, 1],
        NaN unless ``valid``), ``n_claims``, ``claims`` (tuple of str), ``supported`` (tuple of
        1/0/None per claim), ``raw_answers`` (the extraction answer, then each attribution
        answer), ``valid``, ``reason``, ``judge_id``, ``prompt`` (the attribution template).

    {{Raises: bad_samples}}

    References
    ----------
    .. [1] "RAG Evaluation Part 1", LLM-based Context Recall: claims C1-C4 of the Einstein
       example, 3 of 4 supported, recall 0.75.
    """
    judge, frame = _checked(samples, judge, k)
    ext = _template(extraction_prompt, judge, "extract")
    att = _template(attribution_prompt, judge, "grade")
    refs = [_text(frame, i, "reference") for i in range(len(frame))]
    contexts = [_contexts(frame, i, k) for i in range(len(frame))]
    ext_calls = [_extraction_call(judge.client, ext, i, r) for i, r in enumerate(refs)]
    extracted = judge.client.run(ext_calls, stage=f"{stage}/claims", kind="extract")
    att_calls: list[list[LLMCall]] = []
    for i, res in enumerate(extracted):
        claims = res.value if res.valid else ()
        block = _numbered(contexts[i])
        att_calls.append(_attribution_calls(judge, att, i, claims, block))
    attributed = _run_grouped(judge, att_calls, f"{stage}/attribution")
    scores, claims_col, supported, raws, reasons = [], [], [], [], []
    for res, rs in zip(extracted, attributed, strict=True):
        claims_col.append(tuple(res.value) if res.valid else ())
        supported.append(tuple(_verdict(r) for r in rs))
        raws.append((res.raw, *(r.raw for r in rs)))
        if res.valid:
            reason = _failures(rs, "claim")
        else:
            reason = f"claim extraction: {res.status}: {res.reason}"
        scores.append(math.nan if reason else sum(int(r.value) for r in rs) / len(rs))
        reasons.append(reason)
    details = {
        "n_claims": np.asarray([len(c) for c in claims_col], dtype="int64"),
        "claims": pd.Series(claims_col, dtype=object),
        "supported": pd.Series(supported, dtype=object),
    }
    return _scores_frame(frame, "context_recall", scores, details, raws, reasons, judge, att)


# ----------------------------------------------------------------------------- estimates


def estimate_llm_measure(
    samples: Any,
    judge: OpenAIJudge,
    measure: str,
    *,
    k: int | None = None,
    claims_per_reference: int = 4,
) -> CostEstimate:
    """Dry-run cost of one LLM measure (see :func:`ragnb.llm.ledger.estimate`).

    Parameters
    ----------
    samples : as the measure takes them
    judge : OpenAIJudge
    measure : {"context_precision_with_reference", "context_precision_without_reference",
        "context_recall"}
    k : int, optional
    claims_per_reference : int, default 4
        For recall: claims assumed per reference whose extraction is not cached (each
        attribution prompt is counted with the whole reference as its claim, an upper bound
        on the claim's length). Cached extractions give their real claims.

    Returns
    -------
    CostEstimate
    """
    judge, frame = _checked(samples, judge, k)
    notes: list[str] = []
    if measure in _PRECISION_ANCHORS:
        anchor = _PRECISION_ANCHORS[measure]
        tpl = _template("binary-relevance", judge, "grade")
        calls = [c for cs in _precision_calls(frame, judge, tpl, anchor, k) for c in cs]
        planned: list[PlannedCall] = judge.plan_calls(calls, measure)
    elif measure == "context_recall":
        ext = _template("claim-extraction", judge, "extract")
        att = _template("claim-attribution", judge, "grade")
        planned = []
        for i in range(len(frame)):
            ref = _text(frame, i, "reference")
            block = _numbered(_contexts(frame, i, k))
            call = _extraction_call(judge.client, ext, i, ref)
            (p,) = judge.client.plan_calls([call], f"{measure}/claims")
            planned.append(p)
            cached = judge.client.cached([call]).get(call.key)
            if cached is not None and cached.valid:
                claims = list(cached.value)
            else:  # placeholders as long as the reference, distinct so none is deduplicated
                claims = [f"{ref} ({j + 1})" for j in range(claims_per_reference)]
            atts = _attribution_calls(judge, att, i, claims, block)
            planned.extend(judge.plan_calls(atts, f"{measure}/attribution"))
        notes.append(
            f"claims not yet extracted are assumed {claims_per_reference} per reference, each "
            "as long as the reference (an upper bound on its length)"
        )
    else:
        raise InputError(
            "measure must be context_precision_with_reference, "
            f"context_precision_without_reference or context_recall, got {measure!r}"
        )
    return estimate_calls(planned, prices=judge.ledger.prices, notes=notes)
