"""Nugget evaluation of retrieved contexts: creation, importance, assignment, NuggetRecall@K.

On the scripted OpenAI-compatible server (``tests/openai_server.py``) an LLM answers by rules a
reader can follow by hand, so every NuggetRecall@K value below is computed by hand; the calls
go through the real client (cache, ledger). The files round trip: a corrected CSV changes the
values as the correction says. One test runs the whole path on the local model.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.judge.nuggets import (
    ASSIGN_STAGE,
    CREATE_STAGE,
    IMPORTANCE_STAGE,
    assign_nuggets,
    create_nuggets,
    export_assignments,
    export_nuggets,
    nugget_counts,
    nugget_qrels,
    read_assignments,
    read_nuggets,
)
from ragnb.llm import ChatClient
from ragnb.llm.ledger import Ledger
from ragnb.measures import nugget_recall, parse_measure
from ragnb.stats.gates import check_gates
from ragnb.studies.whatif.grid import precompute

QUERIES = {"q1": "what is bm25", "q2": "who made dense retrieval"}
CORPUS = {
    "d1": "bm25 ranks documents by a score.",
    "d2": "bm25 uses term frequency and document length.",
    "d3": "bm25 dates back to the nineties.",
    "d4": "karpukhin et al. made dense passage retrieval in 2020.",
    "d5": "dense retrieval maps text to vectors.",
}
#: What the scripted creator answers: q1 in two windows (d1, d2 then d3), q2 in one.
CREATED = {
    ("q1", 0): ["bm25 ranks documents", "bm25 uses term frequency"],
    ("q1", 2): ["bm25 ranks documents", "bm25 uses term frequency", "bm25 dates from 1994"],
    ("q2", 0): ["dense retrieval uses embeddings", "karpukhin et al. made dense passage retrieval"],
}
RUN = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q2"],
        "doc_id": ["d1", "d3", "d2", "d5", "d4"],
        "score": [3.0, 2.0, 1.0, 2.0, 1.0],
    }
)
POOLED = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2"],
        "doc_id": ["d1", "d2", "d3", "d4"],
        "text": [CORPUS[d] for d in ("d1", "d2", "d3", "d4")],
    }
)


def _field(text: str, name: str) -> str:
    return re.search(rf"^{name}: (.*)$", text, re.M).group(1)


def scripted_llm(request) -> ChatAnswer:
    """AutoNuggetizer by rules: importance vital for 'ranks' and 'karpukhin'; a passage supports
    a nugget it contains, partly one whose first two words it contains."""
    system, user = (m["content"] for m in request.json["messages"][:2])
    query_id = next(q for q, t in QUERIES.items() if f"Search Query: {t}" in user)
    if "NuggetizeLLM" in system:
        done = int(_field(user, "Initial Nugget List Length"))
        return ChatAnswer(json.dumps({"items": CREATED[(query_id, done)]}))
    nuggets = json.loads(_field(user, "Nugget List"))
    if "NuggetizeScoreLLM" in system:
        labels = ["vital" if ("ranks" in n or "karpukhin" in n) else "okay" for n in nuggets]
    else:
        passage = _field(user, "Passage").lower()
        labels = [
            "support"
            if n in passage
            else "partial_support"
            if " ".join(n.split()[:2]) in passage
            else "not_support"
            for n in nuggets
        ]
    return ChatAnswer(json.dumps({"labels": labels}))


def _client(server, tmp_path) -> ChatClient:
    return ChatClient(
        "gpt-4o-mini",
        base_url=server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(tmp_path / "ledger.jsonl"),
        progress=False,
    )


def _pipeline(client: ChatClient) -> tuple[pd.DataFrame, pd.DataFrame]:
    nuggets = create_nuggets(client, QUERIES, POOLED, max_nuggets=5, window=2)
    assignments = assign_nuggets(client, nuggets, QUERIES, RUN, CORPUS, k=3, window=2)
    return nuggets, assignments


MEASURES = [
    "NuggetRecall@1",
    "NuggetRecall@3",
    "NuggetRecall(partial=0.5)@3",
    "NuggetRecall(vital=1)@1",
    "NuggetRecall(vital=1)@2",
]


def test_nugget_recall_on_the_scripted_llm_equals_the_hand_computation(openai_server, tmp_path):
    openai_server.chat.handler = scripted_llm
    nuggets, assignments = _pipeline(_client(openai_server, tmp_path))
    assert nuggets[["query_id", "nugget_id", "importance"]].values.tolist() == [
        ["q1", "n01", "vital"],
        ["q1", "n02", "okay"],
        ["q1", "n03", "okay"],
        ["q2", "n01", "okay"],
        ["q2", "n02", "vital"],
    ]
    assert nuggets["text"].iloc[2] == "bm25 dates from 1994"
    # creation: q1 two windows, q2 one; importance: q1 two windows, q2 one; assignment: five
    # passages, q1 in two nugget windows, q2 in one
    assert len(openai_server.bodies("/v1/chat/completions")) == 3 + 3 + (3 * 2 + 2)
    assert len(assignments) == 3 * 3 + 2 * 2
    labels = assignments.set_index(["query_id", "nugget_id", "doc_id"])["label"]
    assert labels[("q1", "n03", "d3")] == "partial_support"
    assert labels[("q2", "n02", "d4")] == "support"

    result = evaluate(nugget_qrels(nuggets, assignments), RUN, MEASURES)
    # q1: d1 supports n01, d2 n02, d3 n03 partly; q2: d5 supports n01 partly, d4 n02
    expected = {
        "NuggetRecall@1": (1 / 3 + 0) / 2,
        "NuggetRecall@3": (2 / 3 + 1 / 2) / 2,
        "NuggetRecall(partial=0.5)@3": (2.5 / 3 + 1.5 / 2) / 2,
        "NuggetRecall(vital=1)@1": (1 + 0) / 2,  # vital: q1 n01 (d1), q2 n02 (d4 at rank 2)
        "NuggetRecall(vital=1)@2": (1 + 1) / 2,
    }
    assert result.aggregate_to_dict() == pytest.approx(expected)
    report = check_gates(result, ["NuggetRecall@3=0.5", "NuggetRecall(vital=1)@1=0.6"])
    assert report.failures["measure"].tolist() == ["NuggetRecall(vital=1)@1"]
    # the what-if grid takes the family at each K, on the same nugget qrels
    grid = precompute(
        nugget_qrels(nuggets, assignments),
        {"A": RUN},
        ks=[1, 3],
        alphas=[0.5],
        families=["NuggetRecall", "P"],
    ).per_query
    means = grid.groupby("measure")["value"].mean()
    assert means[["NuggetRecall@1", "NuggetRecall@3"]].tolist() == pytest.approx(
        [expected["NuggetRecall@1"], expected["NuggetRecall@3"]]
    )
    assert nugget_counts(nuggets, assignments) == {
        "queries": 2,
        "nuggets": 5,
        "vital": 2,
        "importance_invalid": 0,
        "assignments": 13,
        "assignments_invalid": 0,
        "support": 3,
        "partial_support": 2,
    }


def test_a_second_run_is_served_from_the_cache_and_the_ledger_prices_each_stage(
    openai_server, tmp_path
):
    openai_server.chat.handler = scripted_llm
    first = _client(openai_server, tmp_path)
    nuggets, assignments = _pipeline(first)
    sent = len(openai_server.bodies("/v1/chat/completions"))
    ledger = first.ledger.frame()
    assert set(ledger["stage"]) == {CREATE_STAGE, IMPORTANCE_STAGE, ASSIGN_STAGE}
    assert (ledger.groupby("stage")["cost_usd"].sum() > 0).all()

    again = _client(openai_server, tmp_path)
    nuggets2, assignments2 = _pipeline(again)
    assert len(openai_server.bodies("/v1/chat/completions")) == sent
    pd.testing.assert_frame_equal(nuggets2, nuggets)
    pd.testing.assert_frame_equal(assignments2, assignments)
    cached = again.ledger.frame()
    cached = cached[cached["run_id"] == cached["run_id"].iloc[-1]]
    assert cached["cached"].all() and cached["cost_usd"].sum() == 0


def test_a_corrected_file_is_read_back_and_changes_the_values(openai_server, tmp_path):
    openai_server.chat.handler = scripted_llm
    nuggets, assignments = _pipeline(_client(openai_server, tmp_path))
    npath, apath = tmp_path / "nuggets.csv", tmp_path / "assignments.csv"
    export_nuggets(nuggets, npath)
    export_assignments(assignments, apath)
    # a person marks q1's n02 vital and says d3 does support n03
    text = npath.read_text(encoding="utf-8")
    npath.write_text(
        text.replace(
            "q1,n02,bm25 uses term frequency,okay", "q1,n02,bm25 uses term frequency,vital"
        ),
        encoding="utf-8",
    )
    text = apath.read_text(encoding="utf-8")
    apath.write_text(text.replace("q1,n03,d3,partial_support", "q1,n03,d3,support"), "utf-8")
    edited_n, edited_a = read_nuggets(npath), read_assignments(apath)
    assert edited_n["line"].tolist() == [2, 3, 4, 5, 6]
    values = evaluate(nugget_qrels(edited_n, edited_a), RUN, MEASURES).aggregate_to_dict()
    assert values["NuggetRecall@3"] == pytest.approx((3 / 3 + 1 / 2) / 2)
    assert values["NuggetRecall(vital=1)@1"] == pytest.approx((1 / 2 + 0) / 2)
    # exporting the LLM's frames again keeps the corrections
    export_nuggets(nuggets, npath)
    export_assignments(assignments, apath)
    again = evaluate(nugget_qrels(read_nuggets(npath), read_assignments(apath)), RUN, MEASURES)
    assert again.aggregate_to_dict() == pytest.approx(values)
    # a nugget a person deletes stays deleted; its assignment rows are then refused
    lines = npath.read_text(encoding="utf-8").splitlines(keepends=True)
    npath.write_text("".join(line for line in lines if not line.startswith("q1,n03,")), "utf-8")
    kept = export_nuggets(nuggets, npath)
    assert kept["nugget_id"].tolist() == ["n01", "n02", "n01", "n02"]
    with pytest.raises(InputError, match="'n03', not among the nuggets"):
        nugget_qrels(kept, read_assignments(apath))


def test_bad_files_are_named_by_file_line_and_column(tmp_path):
    path = tmp_path / "nuggets.csv"
    path.write_text("query_id,nugget_id,text,importance\nq1,n01,a fact,vital\nq1,n02,b,key\n")
    with pytest.raises(InputError, match=r"nuggets.csv, line 3, column 'importance'.*'key'"):
        read_nuggets(path)
    path.write_text("query_id,nugget_id,text,importance\nq1,n01,a,vital\nq1,n01,b,okay\n")
    with pytest.raises(InputError, match=r"line 3.*also on line 2"):
        read_nuggets(path)
    path.write_text("query_id,nugget_id,text\nq1,n01,a\n")
    with pytest.raises(InputError, match=r"line 1, column 'importance': missing column"):
        read_nuggets(path)
    apath = tmp_path / "assignments.csv"
    apath.write_text("query_id,nugget_id,doc_id,label\nq1,n01,d1,supports\n")
    with pytest.raises(InputError, match=r"line 2, column 'label'"):
        read_assignments(apath)


def test_nugget_qrels_refuse_unknown_and_unassessed_nuggets():
    nuggets = pd.DataFrame(
        {"query_id": ["q", "q"], "nugget_id": ["n01", "n02"], "importance": ["vital", "okay"]}
    )
    one = pd.DataFrame({"query_id": ["q"], "nugget_id": ["n01"], "doc_id": ["d"], "label": [""]})
    with pytest.raises(InputError, match="'n02' has no assignment row"):
        nugget_qrels(nuggets, one)
    with pytest.raises(InputError, match="'n09', not among the nuggets"):
        nugget_qrels(nuggets, one.assign(nugget_id="n09"))


def test_invalid_answers_are_counted_and_never_credited(openai_server, tmp_path):
    def muddled(request) -> ChatAnswer:
        if "NuggetizeAssignerLLM" in request.json["messages"][0]["content"]:
            return ChatAnswer("support")  # not the JSON object, even after the reminder
        return scripted_llm(request)

    openai_server.chat.handler = muddled
    nuggets, assignments = _pipeline(_client(openai_server, tmp_path))
    assert (assignments["label"] == "").all()
    assert assignments["status"].str.startswith("invalid").all()
    assert nugget_counts(nuggets, assignments)["assignments_invalid"] == len(assignments)
    values = evaluate(nugget_qrels(nuggets, assignments), RUN, MEASURES).aggregate_to_dict()
    assert set(values.values()) == {0.0}


# ----------------------------------------------------------------------------- the measure


def test_names_round_trip_and_the_kernel_matches_a_naive_loop():
    for name in MEASURES:
        assert str(parse_measure(name)) == name
    assert str(parse_measure("nugget_recall(partial=0.50,vital=1)@5")) == (
        "NuggetRecall(vital=1,partial=0.5)@5"
    )
    rng = np.random.default_rng(3)
    rows = []
    for q in range(6):
        for n in range(rng.integers(1, 5)):
            imp = "vital" if rng.random() < 0.5 else "okay"
            for d in rng.choice(8, size=3, replace=False):
                rows.append((f"q{q}", f"n{n}", f"d{d}", int(rng.integers(0, 3)), imp))
    qrels = pd.DataFrame(
        rows, columns=["query_id", "subtopic", "doc_id", "relevance", "importance"]
    )
    run = {f"q{q}": {f"d{d}": float(rng.random()) for d in range(8)} for q in range(6)}
    for k, vital, partial in [(1, False, 0.0), (3, True, 0.5), (5, False, 0.25), (8, True, 0.0)]:
        naive = []
        for q, group in qrels.groupby("query_id"):
            top = sorted(run[q], key=run[q].get, reverse=True)[:k]
            counted = group[group["importance"] == "vital"] if vital else group
            credits = []
            for _, g in counted.groupby("subtopic"):
                best = g[g["doc_id"].isin(top)]["relevance"].max()
                credits.append(1.0 if best == 2 else partial if best == 1 else 0.0)
            naive.append(np.mean(credits) if credits else 0.0)
        got = nugget_recall(qrels, run, k, vital=vital, partial=partial)
        assert got == pytest.approx(np.mean(naive))


def test_nugget_recall_needs_nugget_qrels():
    with pytest.raises(InputError, match="NuggetRecall@5 needs nugget judgements"):
        evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["NuggetRecall@5"])
    bad = pd.DataFrame(
        {
            "query_id": ["q", "q"],
            "subtopic": ["n", "n"],
            "doc_id": ["a", "b"],
            "relevance": [2, 1],
            "importance": ["vital", "okay"],
        }
    )
    with pytest.raises(InputError, match="both vital and okay"):
        nugget_recall(bad, {"q": {"a": 1.0}}, 1)


# ----------------------------------------------------------------------------- the local model


def test_the_local_model_runs_the_whole_path_and_a_second_run_is_cached(local_server, tmp_path):
    """SmolLM2-135M through llama.cpp: every answer parses under constrained output, the
    ledger holds each stage's tokens, a second run sends nothing. Its nuggets are not checked:
    a 135M-parameter model's facts are near noise."""
    from ragnb.llm.server import LocalLLMServer

    queries = {"q1": QUERIES["q1"], "q2": QUERIES["q2"]}
    pooled = POOLED[POOLED["doc_id"].isin(["d1", "d4"])]
    run = RUN[RUN["doc_id"].isin(["d1", "d2", "d4", "d5"])]

    def pipeline(server: LocalLLMServer) -> tuple[ChatClient, pd.DataFrame, pd.DataFrame]:
        client = ChatClient(
            **server.client_options(),
            request_params={"max_tokens": 120},
            cache=Cache(tmp_path / "cache"),
            ledger=Ledger(tmp_path / "ledger.jsonl"),
            progress=False,
        )
        options = {"window": 3, "constrained": "json_object_schema"}
        nuggets = create_nuggets(client, queries, pooled, max_nuggets=2, **options)
        assignments = assign_nuggets(client, nuggets, queries, run, CORPUS, k=1, **options)
        return client, nuggets, assignments

    client, nuggets, assignments = pipeline(local_server)
    again, nuggets2, assignments2 = pipeline(local_server)
    ledger = client.ledger.frame()
    first = ledger[ledger["run_id"] == client.ledger.run_id]
    assert {CREATE_STAGE, IMPORTANCE_STAGE} <= set(first["stage"])
    assert (first["input_tokens"] > 0).all() and not first["cached"].any()
    assert set(nuggets["importance"]) <= {"vital", "okay"}
    assert len(nuggets) and nuggets["text"].str.len().gt(0).all()
    assert set(assignments["label"]) <= {"support", "partial_support", "not_support", ""}
    values = evaluate(nugget_qrels(nuggets, assignments), run, ["NuggetRecall@1"])
    assert 0.0 <= values.aggregate_to_dict()["NuggetRecall@1"] <= 1.0
    pd.testing.assert_frame_equal(nuggets2, nuggets)
    pd.testing.assert_frame_equal(assignments2, assignments)
    second = again.ledger.frame()
    second = second[second["run_id"] == again.ledger.run_id]
    assert len(second) == len(first) and second["cached"].all()


def test_notebook_02_skips_nuggets_without_an_llm_and_says_why(tmp_path):
    from ragnb.studies import golden

    config = golden.GoldenSetConfig(
        judge="noisy",
        retrievers=["bm25"],
        new_systems=[],
        max_queries=1,
        depth=2,
        min_pool=2,
        top_n=2,
        simulate=False,
        ppi_labels=0,
        cache_dir=str(tmp_path / "cache"),
    )
    result = golden.run(config)
    assert result.nuggets is None and "nugget_recall" not in result.tables()
    assert "**Nugget recall skipped** because the judge noisy-judge" in result.banner()
    assert "is not an LLM" in result.section("nuggets")
    off = golden.run(dataclasses.replace(config, nugget_max=0))
    assert "**Nugget recall skipped** because `nugget_max=0`." in off.banner()
    with pytest.raises(InputError, match="nugget_k"):
        golden.GoldenSetConfig(nugget_k=0)
