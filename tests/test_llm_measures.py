"""LLM context precision (with and without reference) and context recall ("RAG Evaluation Part
1"), against a real local server that plays the LLM by reading the seed's prompts.

The server answers like a careful judge of the seed's worked examples: Example 1 (relevance
v = [1, 1, 0, 1, 0], Context Precision@5 = 0.917), Example 2 (v = [0, 0, 1, 1, 1], 0.478) and the
Einstein claims C1-C4 of which C4 ("Bern") is unsupported (recall 3/4).
"""

from __future__ import annotations

import dataclasses
import math
import re

import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.context.llm import (
    context_precision_from_verdicts,
    estimate_llm_measure,
    llm_context_precision_with_reference,
    llm_context_precision_without_reference,
    llm_context_recall,
)
from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge, QrelsJudge
from ragnb.llm.ledger import Ledger, PriceTable
from ragnb.llm.prompts import load_prompt
from ragnb.llm.transport import RetryPolicy

CHAT = "/v1/chat/completions"
PRICES = PriceTable.from_dict({"models": {"judge-test": {"input": 1.0, "output": 4.0}}})

QUESTION = "Who developed the theory of relativity, when and where?"
REFERENCE = (
    "Einstein developed the theory of relativity in 1905 while working at the Swiss patent "
    "office in Bern."
)
RESPONSE = "Albert Einstein, in 1905."
EXAMPLE_1 = [
    "Einstein was a theoretical physicist.",
    "Einstein born in Ulm in 1879.",
    "Physics history spans centuries.",
    "Relativity theory was published by Einstein in 1905.",
    "Tesla was an inventor.",
]
EXAMPLE_2 = [
    "Tesla worked on alternating current.",
    "Physics is a natural science.",
    "Einstein was a theoretical physicist.",
    "Einstein born in Ulm in 1879.",
    "Relativity theory was published by Einstein in 1905.",
]
RECALL_CONTEXTS = [
    "Einstein published the theory of relativity in a groundbreaking 1905 paper.",
    "During the early 1900s, Einstein worked at a government office evaluating patents.",
    "Einstein later moved to Berlin to join the Prussian Academy of Sciences.",
    "He studied physics in Zurich before becoming one of the most influential scientists.",
]
CLAIMS = [
    "Einstein developed the theory of relativity",
    "He developed it in 1905",
    "He was working at the Swiss patent office",
    "The office was in Bern",
]


def between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


class FakeLLM:
    """Answers the three seed prompts; records what each prompt contained."""

    def __init__(self, overrides: dict[str, list[str]] | None = None) -> None:
        self.overrides = overrides or {}
        self.seen: list[tuple[str, str]] = []

    def __call__(self, request):
        messages = request.json["messages"]
        text = next(m["content"] for m in messages if m["role"] == "user")  # the prompt
        if "semantic relevance evaluator" in text:
            passage = between(text, "Context:\n", "\n\nAnswer:")
            self.seen.append(("relevance", between(text, "Answer:\n", "\n\nIs the passage")))
            answer = "1" if passage.startswith(("Einstein", "Relativity")) else "0"
        elif "information analyst" in text:
            self.seen.append(("claims", between(text, "Answer:\n", "\n\nReturn the claims")))
            answer = "\n".join(f"{i}. {c}" for i, c in enumerate(CLAIMS, start=1))
        elif "factual evaluator" in text:
            claim = between(text, "Claim:\n", "\n\nRetrieved Contexts:")
            self.seen.append(("attribution", between(text, "Retrieved Contexts:\n", "\n\nDoes")))
            answer = "0" if "Bern" in claim else "1"
            key = claim
        else:
            raise AssertionError(f"unexpected prompt: {text[:80]}")
        queue = self.overrides.get(key if "factual evaluator" in text else text[:20])
        if queue:
            answer = queue.pop(0)
        return ChatAnswer(answer)


def make_judge(server, tmp_path, **kwargs) -> OpenAIJudge:
    return OpenAIJudge(
        "judge-test",
        base_url=server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(tmp_path / "ledger.jsonl", prices=PRICES),
        progress=False,
        retry=RetryPolicy(backoff_base=0.01),
        **kwargs,
    )


def samples() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_input": [QUESTION, QUESTION],
            "retrieved_contexts": [EXAMPLE_1, EXAMPLE_2],
            "reference": [REFERENCE, REFERENCE],
            "response": [RESPONSE, RESPONSE],
        }
    )


def test_kernel_reproduces_the_worked_examples():
    assert context_precision_from_verdicts([1, 1, 0, 1, 0]) == pytest.approx(2.75 / 3)
    assert context_precision_from_verdicts([0, 0, 1, 1, 1]) == pytest.approx(
        (1 / 3 + 2 / 4 + 3 / 5) / 3
    )
    assert context_precision_from_verdicts([0, 0, 0]) == 0.0
    assert context_precision_from_verdicts([]) == 0.0


def test_context_precision_with_reference(openai_server, tmp_path):
    llm = FakeLLM()
    openai_server.chat.handler = llm
    judge = make_judge(openai_server, tmp_path)
    df = llm_context_precision_with_reference(samples(), judge)
    assert df["llm_context_precision_with_reference"].round(3).tolist() == [0.917, 0.478]
    assert df["verdicts"].tolist() == [(1, 1, 0, 1, 0), (0, 0, 1, 1, 1)]
    assert df["valid"].all() and (df["reason"] == "").all() and df["n_contexts"].eq(5).all()
    assert df["raw_answers"][0] == ("1", "1", "0", "1", "0")
    assert df["user_input"].tolist() == [QUESTION, QUESTION]
    assert (df["judge_id"] == "openai-judge:judge-test").all()
    # anchored on the reference; one call per distinct (question, context, reference)
    assert {a for kind, a in llm.seen} == {REFERENCE}
    assert openai_server.request_count(CHAT) == 7  # 10 contexts, 3 shared by both samples
    stages = set(judge.ledger.frame()["stage"])
    assert stages == {"context_precision_with_reference"}


def test_context_precision_without_reference_uses_the_response(openai_server, tmp_path):
    llm = FakeLLM()
    openai_server.chat.handler = llm
    judge = make_judge(openai_server, tmp_path)
    df = llm_context_precision_without_reference(samples().drop(columns="reference"), judge, k=3)
    assert df["llm_context_precision_without_reference"].tolist() == pytest.approx([1.0, 1 / 3])
    assert df["n_contexts"].tolist() == [3, 3]
    assert {a for _, a in llm.seen} == {RESPONSE}
    with pytest.raises(InputError, match="lack the field 'response'"):
        llm_context_precision_without_reference(samples().drop(columns="response"), judge)


def test_an_invalid_verdict_makes_the_sample_nan_not_a_guess(openai_server, tmp_path):
    llm = FakeLLM({"You are a semantic r": ["Yes", "yes"]})  # first call, then its reminder
    openai_server.chat.handler = llm
    judge = make_judge(openai_server, tmp_path, concurrency=1)
    df = llm_context_precision_with_reference(samples().iloc[:1], judge)
    assert math.isnan(df["llm_context_precision_with_reference"][0]) and not df["valid"][0]
    assert df["verdicts"][0][0] is None and df["verdicts"][0][1:] == (1, 0, 1, 0)
    assert df["reason"][0].startswith("context 1: invalid: not a bare integer: 'yes'")


def test_context_recall_by_claims(openai_server, tmp_path):
    llm = FakeLLM()
    openai_server.chat.handler = llm
    judge = make_judge(openai_server, tmp_path)
    frame = pd.DataFrame(
        {
            "user_input": [QUESTION],
            "retrieved_contexts": [RECALL_CONTEXTS],
            "reference": [REFERENCE],
        }
    )
    df = llm_context_recall(frame, judge)
    row = df.iloc[0]
    assert row["context_recall"] == 0.75 and row["valid"]
    assert row["claims"] == tuple(CLAIMS) and row["n_claims"] == 4
    assert row["supported"] == (1, 1, 1, 0)
    assert len(row["raw_answers"]) == 5 and row["raw_answers"][0].startswith("1. Einstein")
    assert ("claims", REFERENCE) in llm.seen
    blocks = [c for kind, c in llm.seen if kind == "attribution"]
    assert len(blocks) == 4 and blocks[0].startswith("1. Einstein published")
    assert "\n\n4. He studied physics in Zurich" in blocks[0]
    ledger = judge.ledger.frame()
    assert ledger["stage"].value_counts().to_dict() == {
        "context_recall/attribution": 4,
        "context_recall/claims": 1,
    }
    # a second run is free
    again = llm_context_recall(frame, make_judge(openai_server, tmp_path))
    assert again["context_recall"][0] == 0.75
    assert openai_server.request_count(CHAT) == 5


def test_context_recall_failures_are_reported(openai_server, tmp_path):
    # the extraction answers with bullets twice: invalid, no attribution calls
    llm = FakeLLM({"You are an informati": ["- a claim", "- a claim"]})
    openai_server.chat.handler = llm
    judge = make_judge(openai_server, tmp_path, concurrency=1)
    frame = pd.DataFrame({"retrieved_contexts": [RECALL_CONTEXTS], "reference": [REFERENCE]})
    df = llm_context_recall(frame, judge)
    assert math.isnan(df["context_recall"][0]) and not df["valid"][0]
    assert df["reason"][0].startswith("claim extraction: invalid: line 1 is not")
    assert df["claims"][0] == () and openai_server.request_count(CHAT) == 2
    # an attribution answered off the scale twice
    llm2 = FakeLLM({CLAIMS[1]: ["2", "2"]})
    openai_server.chat.handler = llm2
    df2 = llm_context_recall(frame, make_judge(openai_server, tmp_path / "b", concurrency=1))
    assert math.isnan(df2["context_recall"][0])
    assert df2["supported"][0] == (1, None, 1, 0)
    assert df2["reason"][0].startswith("claim 2: invalid: 2 is off the scale 0-1")


def test_samples_are_validated_before_any_call(openai_server, tmp_path):
    judge = make_judge(openai_server, tmp_path)
    bad = samples()
    bad.loc[1, "reference"] = ""
    with pytest.raises(InputError, match="row 1: reference must be a non-empty text"):
        llm_context_precision_with_reference(bad, judge)
    with pytest.raises(InputError, match="row 0: retrieved_contexts must be a list"):
        llm_context_recall([{"retrieved_contexts": "one string", "reference": "r"}], judge)
    with pytest.raises(InputError, match="k must be a positive integer"):
        llm_context_recall(samples(), judge, k=0)
    with pytest.raises(InputError, match="need an OpenAIJudge"):
        llm_context_recall(samples(), QrelsJudge({"q": {"d": 1}}))
    assert openai_server.request_count() == 0


def test_a_graded_prompt_is_refused_before_any_call(openai_server, tmp_path):
    # the measures take verdicts of 0 and 1; a 0-3 grade would give "precisions" above 1
    judge = make_judge(openai_server, tmp_path)
    graded = dataclasses.replace(load_prompt("binary-relevance"), name="graded", scale=(0, 3))
    with pytest.raises(InputError, match="grades on 0-3; a 0/1 grade prompt is needed"):
        llm_context_precision_with_reference(samples(), judge, prompt=graded)
    with pytest.raises(InputError, match="grades on 0-3"):
        llm_context_recall(samples(), judge, attribution_prompt=graded)
    assert openai_server.request_count() == 0


def test_ragas_dataset_objects_are_accepted(openai_server, tmp_path):
    class EvaluationDataset:  # what ragas' dataset offers: to_pandas()
        def to_pandas(self):
            return samples()

    openai_server.chat.handler = FakeLLM()
    df = llm_context_precision_with_reference(
        EvaluationDataset(), make_judge(openai_server, tmp_path)
    )
    assert len(df) == 2 and df["valid"].all()


def test_estimates_of_the_llm_measures(openai_server, tmp_path):
    judge = make_judge(openai_server, tmp_path)
    est = estimate_llm_measure(samples(), judge, "context_precision_with_reference")
    assert est.calls == 7  # distinct prompts are counted once
    est_k = estimate_llm_measure(samples(), judge, "context_precision_without_reference", k=2)
    assert len(est_k.frame) == 4
    frame = pd.DataFrame({"retrieved_contexts": [RECALL_CONTEXTS], "reference": [REFERENCE]})
    before = estimate_llm_measure(frame, judge, "context_recall", claims_per_reference=6)
    assert len(before.frame) == 1 + 6
    assert any("assumed 6 per reference" in n for n in before.notes)
    openai_server.chat.handler = FakeLLM()
    llm_context_recall(frame, judge)
    after = estimate_llm_measure(frame, judge, "context_recall", claims_per_reference=6)
    assert len(after.frame) == 1 + 4 and after.calls == 0  # real claims, all cached
    with pytest.raises(InputError, match="measure must be"):
        estimate_llm_measure(frame, judge, "faithfulness")
    assert re.search(r"prices as of", repr(after))
