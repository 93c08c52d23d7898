"""Agent search trajectories: spans in (GenAI and OpenInference), trajectory measures, compare,
conversation turns and evaluation events out.

The traces are recorded by the OpenTelemetry SDK (:mod:`tests.agent_spans`) and encoded by the
OTLP exporter's encoder. Two questions are searched: q1 in two retrieval calls with a rerank
step between them, q2 in one call that finds nothing relevant; q3 of the qrels is never
searched. Every measure is checked against the value worked out by hand below.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agent_spans import T0, hex_span_id, hex_trace_id, record, write_otlp

from ragnb import evaluate, evaluate_trajectories, read_trajectories
from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.io.events import EVALUATION_EVENT, read_evaluation_events, write_evaluation_events
from ragnb.io.otlp import hex_ids
from ragnb.io.traces import otlp_request, retriever_span
from ragnb.io.trajectories import CALL_BAD_CAUSES, genai_retrieval_span, reranker_span
from ragnb.measures import parse_measure
from ragnb.measures.trajectory import TRAJECTORY_FAMILIES, discovery_run
from ragnb.rewrite import noise_by_turn
from ragnb.stats import compare

ID = "app.question_id"
PLAN = [
    {
        "start": 0.0,
        "end": 4.0,
        "attributes": {ID: "q1"},
        "steps": [
            {"op": "chat", "tokens": (100, 20), "at": (0.0, 0.5)},
            {
                "op": "retrieval",
                "query": "what is bm25",
                "docs": [("d1", 0.9), ("d2", 0.8), ("d3", 0.7)],
                "at": (0.5, 0.75),
            },
            {
                "op": "rerank",
                "query": "what is bm25",
                "inputs": [("d1", 0.9), ("d2", 0.8), ("d3", 0.7)],
                "outputs": [("d3", 3.0), ("d1", 1.0)],
                "at": (0.75, 0.8),
            },
            {
                "op": "retrieval",
                "query": "bm25 term saturation",
                "docs": [("d3", 0.9), ("d4", 0.6)],
                "at": (1.0, 1.5),
            },
            {"op": "chat", "tokens": (50, 10), "at": (1.5, 4.0)},
        ],
    },
    {
        "start": 10.0,
        "end": 11.0,
        "attributes": {ID: "q2"},
        "steps": [
            {"op": "retrieval", "query": "unrelated", "docs": [("x1", 0.5)], "at": (10.1, 10.3)},
            {"op": "chat", "tokens": (30, 10), "at": (10.3, 11.0)},
        ],
    },
]
QRELS = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q3"],
        "doc_id": ["d3", "d4", "d9", "y", "z"],
        "relevance": [2, 1, 1, 1, 1],
    }
)
# nDCG@3 against q1's ideal [2, 1, 1]: IDCG = 2 + 1/log2(3) + 1/log2(4)
IDCG = 2 + 1 / math.log2(3) + 0.5
NDCG_CALL1 = 1.0 / IDCG  # [d1, d2, d3]: the 2 of d3 at rank 3, 2 / log2(4)
NDCG_CALL2 = (2 + 1 / math.log2(3)) / IDCG  # [d3, d4]
NDCG_RERANKED = 2 / IDCG  # [d3, d1]
INF, NAN = math.inf, math.nan
EXPECTED = {  # q1, q2, q3 (no trajectory)
    "EvidenceRecall": [2 / 3, 0.0, 0.0],  # d3, d4 of {d3, d4, d9}
    "EvidenceRecall@1": [1 / 3, 0.0, 0.0],  # the first call finds d3 only
    "SearchCalls": [2.0, 1.0, 0.0],
    "CallsToFirstRel": [1.0, INF, INF],
    "CallRR": [1.0, 0.0, 0.0],
    "CallsToEvidence": [INF, INF, INF],  # d9 is never found
    "CallsToEvidence(share=0.5)": [2.0, INF, INF],  # 2 of 3 needed: d4 at call 2
    "Redundancy": [1 / 5, 0.0, NAN],  # 5 returned, d3 twice
    "CallnDCG@3": [(NDCG_CALL1 + NDCG_CALL2) / 2, 0.0, NAN],
    "CallnDCGSlope@3": [NDCG_CALL2 - NDCG_CALL1, NAN, NAN],
    "RerankGain@3": [NDCG_RERANKED - NDCG_CALL1, NAN, NAN],
    "TokensPerRel": [(120 + 60) / 2, INF, NAN],  # chat spans only; q2 paid 40 for nothing
    "SecondsPerRel": [4.0 / 2, INF, NAN],
    "nDCG@10": [(2 / math.log2(4) + 1 / math.log2(5)) / IDCG, 0.0, 0.0],  # d1 d2 d3 d4
}


@pytest.fixture(scope="module")
def spans():
    return record(PLAN)


@pytest.fixture(scope="module")
def genai_file(tmp_path_factory, spans):
    return write_otlp(tmp_path_factory.mktemp("agent") / "agent.jsonl", spans)


@pytest.fixture(scope="module")
def trajectories(genai_file):
    return read_trajectories(genai_file, id_attribute=ID)


@pytest.fixture(scope="module")
def result(trajectories):
    return evaluate_trajectories(trajectories, QRELS, list(EXPECTED), lists="retrieved")


# what the agent received: q1's first search reranked to [d3, d1]
EXPECTED_SEEN = EXPECTED | {
    "Redundancy": [1 / 4, 0.0, NAN],  # 2 + 2 returned, d3 twice
    "CallnDCG@3": [(NDCG_RERANKED + NDCG_CALL2) / 2, 0.0, NAN],
    "CallnDCGSlope@3": [NDCG_CALL2 - NDCG_RERANKED, NAN, NAN],
    "nDCG@10": [(2 + 1 / math.log2(4)) / IDCG, 0.0, 0.0],  # d3 d1 d4
}


def _by_name(spans, name):
    return [s for s in spans if s.name == name]


def test_sdk_genai_spans_read_into_one_trajectory_per_question(trajectories, spans):
    calls = trajectories.calls
    assert calls[
        ["trajectory_id", "call", "search_call", "kind", "convention"]
    ].values.tolist() == [
        ["q1", 1, 1, "retrieval", "gen_ai"],
        ["q1", 2, 1, "rerank", "openinference"],
        ["q1", 3, 2, "retrieval", "gen_ai"],
        ["q2", 1, 1, "retrieval", "gen_ai"],
    ]
    assert calls["query"].tolist() == [
        "what is bm25",
        "what is bm25",
        "bm25 term saturation",
        "unrelated",
    ]
    assert calls["n_documents"].tolist() == [3, 2, 2, 1]
    assert calls["n_input"].tolist() == [0, 3, 0, 0]
    np.testing.assert_allclose(calls["latency_s"], [0.25, 0.05, 0.5, 0.2])
    assert calls["top_k"].tolist()[0] == 3.0 and calls["data_source"].iat[0] == "docs"
    assert calls["model"].iat[1] == "cross-encoder" and calls["provider"].iat[0] == "ragnb-test"
    assert calls["input_tokens"].isna().all()
    retrievals = _by_name(spans, "retrieval docs")
    assert calls["span_id"].iat[0] == hex_span_id(retrievals[0])
    assert calls["trace_id"].iat[0] == hex_trace_id(retrievals[0])
    docs = trajectories.documents
    q1 = docs[docs["trajectory_id"] == "q1"]
    assert q1[["call", "rank", "doc_id"]].values.tolist() == [
        [1, 1, "d1"],
        [1, 2, "d2"],
        [1, 3, "d3"],
        [2, 1, "d3"],
        [2, 2, "d1"],
        [3, 1, "d3"],
        [3, 2, "d4"],
    ]
    assert trajectories.rerank_inputs["doc_id"].tolist() == ["d1", "d2", "d3"]
    t = trajectories.trajectories.set_index("trajectory_id")
    roots = _by_name(spans, "invoke_agent researcher")
    assert t.loc["q1", "root_span_id"] == hex_span_id(roots[0])
    assert t.loc["q1", ["n_calls", "n_searches", "n_reranks"]].tolist() == [3, 2, 1]
    assert t.loc["q1", "tokens"] == 180 and t.loc["q2", "tokens"] == 40  # the agent's sum: out
    assert t.loc["q1", "seconds"] == pytest.approx(4.0)
    assert t.loc["q1", "start_s"] == pytest.approx(T0 / 1e9)
    assert trajectories.bad.empty and trajectories.spans == 9 and trajectories.call_spans == 4


def test_openinference_spans_read_into_the_same_trajectories(tmp_path, trajectories):
    path = write_otlp(tmp_path / "oi.jsonl", record(PLAN, convention="openinference"))
    oi = read_trajectories(path, id_attribute=ID)
    assert set(oi.calls["convention"]) == {"openinference"}
    for frame in ("documents", "rerank_inputs"):
        pd.testing.assert_frame_equal(getattr(oi, frame), getattr(trajectories, frame))
    same = ["trajectory_id", "call", "search_call", "kind", "query", "n_documents", "latency_s"]
    pd.testing.assert_frame_equal(oi.calls[same], trajectories.calls[same])
    cost = ["trajectory_id", "n_calls", "seconds", "tokens"]
    pd.testing.assert_frame_equal(oi.trajectories[cost], trajectories.trajectories[cost])


def test_trace_ids_group_by_default_and_base64_ids_read_as_hex(tmp_path, spans, trajectories):
    path = write_otlp(tmp_path / "b64.jsonl", spans, base64_ids=True)
    by_trace = read_trajectories(path)
    assert by_trace.trajectories["trajectory_id"].tolist() == [
        hex_trace_id(_by_name(spans, "invoke_agent researcher")[0]),
        hex_trace_id(_by_name(spans, "invoke_agent researcher")[1]),
    ]
    assert by_trace.calls["span_id"].tolist() == trajectories.calls["span_id"].tolist()
    queries = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["What is  BM25", "Unrelated "]})
    named = by_trace.with_dataset_ids(queries)
    assert named.trajectories["trajectory_id"].tolist() == ["q1", "q2"]


def _line(*spans):
    return json.dumps(otlp_request(list(spans))) + "\n"


def test_bad_spans_are_counted_by_cause(tmp_path):
    good = genai_retrieval_span("q", [{"id": "d1", "score": 1.0}], span_id="01", trace_id="aa")
    not_json = genai_retrieval_span("q", [], span_id="02", trace_id="aa")
    not_json["attributes"][3]["value"] = {"stringValue": "[{'id': 'd1'}"}
    no_docs = genai_retrieval_span("q", [], span_id="03", trace_id="aa")
    del no_docs["attributes"][3]
    bad_id = genai_retrieval_span("q", [{"id": "d 1", "score": 1.0}], span_id="04", trace_id="aa")
    text_score = genai_retrieval_span(
        "q", [{"id": "d1", "score": "high"}], span_id="05", trace_id="aa"
    )
    empty = genai_retrieval_span("q", [], span_id="06", trace_id="aa")  # a search finding nothing
    no_output = reranker_span("q", [{"id": "d1", "score": 1.0}], [], span_id="07", trace_id="aa")
    oi_none = retriever_span("q", [], span_id="08", trace_id="aa")
    unnamed = genai_retrieval_span("q", [{"id": "d1", "score": 1.0}], span_id="09", trace_id="bb")
    path = tmp_path / "bad.jsonl"
    spans = [good, not_json, no_docs, bad_id, text_score, empty, no_output, oi_none]
    for span in spans:
        span["attributes"].append({"key": ID, "value": {"stringValue": "q1"}})
    path.write_text(
        _line(good, not_json, no_docs)
        + _line(bad_id, text_score, empty)
        + _line(no_output, oi_none)
        + _line(unnamed)
    )
    t = read_trajectories(path, id_attribute=ID)
    assert t.bad_by_cause() == {
        "no documents": 3,
        "documents not JSON": 1,
        "bad document id": 1,
        "score not a number": 1,
        "no question id": 1,
    }
    assert list(t.bad_by_cause()) == list(CALL_BAD_CAUSES)
    assert t.bad[["line", "span_id"]].values.tolist() == [
        [1, "02"],
        [1, "03"],
        [2, "04"],
        [2, "05"],
        [3, "07"],
        [3, "08"],
        [4, "09"],
    ]
    assert t.calls["span_id"].tolist() == ["01", "06"] and t.calls["n_documents"].tolist() == [1, 0]
    assert "no question id: 1" in t.describe()
    with pytest.raises(InputError, match=r"no usable retrieval or rerank span.*no documents: 1"):
        path.write_text(_line(no_docs))
        read_trajectories(path)


def test_every_measure_equals_the_hand_computation(result):
    assert result.query_ids.tolist() == ["q1", "q2", "q3"]
    wide = result.per_query_wide()
    for name, want in EXPECTED.items():
        canonical = parse_measure(name).name
        np.testing.assert_allclose(wide[canonical].to_numpy(), want, rtol=1e-12, err_msg=name)


def test_by_default_a_reranked_search_is_read_as_the_agent_received_it(trajectories):
    seen = evaluate_trajectories(trajectories, QRELS, list(EXPECTED_SEEN))
    assert seen.counts["lists"] == "seen"
    wide = seen.per_query_wide()
    for name, want in EXPECTED_SEEN.items():
        canonical = parse_measure(name).name
        np.testing.assert_allclose(wide[canonical].to_numpy(), want, rtol=1e-12, err_msg=name)
    c = seen.calls
    assert c["new_documents"].tolist() == [2, 0, 1, 1]  # [d3, d1], then d4 new
    np.testing.assert_allclose(c["nDCG@3"], [NDCG_RERANKED, NDCG_RERANKED, NDCG_CALL2, 0])
    with pytest.raises(InputError, match="lists must be one of"):
        evaluate_trajectories(trajectories, QRELS, ["EvidenceRecall"], lists="final")


def test_never_found_trajectories_are_counted_not_dropped(result):
    agg = result.aggregate.set_index("measure")
    first = agg.loc["CallsToFirstRel"]
    assert first["value"] == 1.0  # the mean over the trajectories that found one
    assert (first["n_valid"], first["n_never"]) == (3, 2)
    assert first["share_never"] == pytest.approx(2 / 3) and first["median"] == INF
    assert agg.loc["EvidenceRecall", "value"] == pytest.approx(2 / 9)
    assert agg.loc["Redundancy", ["n_valid", "n_never"]].tolist() == [2, 0]
    assert result.counts["queries_without_trajectory"] == 1


def test_calls_frame_and_evidence_curve(result):
    c = result.calls
    assert c["relevant"].tolist() == [1, 1, 2, 0]
    assert c["new_relevant"].tolist() == [1, 0, 1, 0]
    assert c["new_documents"].tolist() == [3, 0, 1, 1]
    np.testing.assert_allclose(c["evidence_recall"], [1 / 3, 1 / 3, 2 / 3, 0])
    np.testing.assert_allclose(c["redundant"], [0, np.nan, 0.5, 0])
    np.testing.assert_allclose(c["nDCG@3"], [NDCG_CALL1, NDCG_RERANKED, NDCG_CALL2, 0])
    np.testing.assert_allclose(c["input_nDCG@3"], [np.nan, NDCG_CALL1, np.nan, np.nan])
    np.testing.assert_allclose(
        c["RerankGain@3"], [np.nan, NDCG_RERANKED - NDCG_CALL1] + [np.nan] * 2
    )
    np.testing.assert_allclose(c["latency_s"], [0.25, 0.05, 0.5, 0.2])
    curve = result.curve
    assert curve["search_call"].tolist() == [1, 2] and curve["n_searching"].tolist() == [2, 1]
    np.testing.assert_allclose(curve["value"], [1 / 9, 2 / 9])
    assert (curve["ci_low"] <= curve["value"]).all() and (curve["value"] <= curve["ci_high"]).all()


def test_other_measures_read_the_discovery_run(result, trajectories):
    run = discovery_run(trajectories.calls, trajectories.documents, "retrieved")
    assert run[run["query_id"] == "q1"]["doc_id"].tolist() == ["d1", "d2", "d3", "d4"]
    plain = evaluate(QRELS, run.drop(columns="search_call"), ["nDCG@10", "R@3"], order="file")
    mine = evaluate_trajectories(trajectories, QRELS, ["nDCG@10", "R@3"], lists="retrieved")
    np.testing.assert_allclose(mine.values, plain.values)


def test_trajectory_families_name_the_way_on_a_plain_run():
    with pytest.raises(InputError, match="EvidenceRecall is a trajectory measure.*traces evaluate"):
        evaluate(QRELS, {"q1": {"d3": 1.0}}, ["EvidenceRecall"])


@pytest.mark.parametrize(
    "name",
    [
        "EvidenceRecall",
        "EvidenceRecall@3",
        "EvidenceRecall(rel=2)@2",
        "SearchCalls",
        "CallRR",
        "CallsToFirstRel(rel=2)",
        "CallsToEvidence(share=0.5)",
        "Redundancy",
        "CallnDCG@10",
        "CallnDCGSlope@5",
        "RerankGain@10",
        "TokensPerRel",
        "SecondsPerRel(rel=2)",
    ],
)
def test_names_round_trip(name):
    m = parse_measure(name)
    assert str(m) == name and parse_measure(str(m)) == m
    assert m.family in TRAJECTORY_FAMILIES


def test_aliases_and_bad_parameters():
    assert str(parse_measure("evidence_recall@2")) == "EvidenceRecall@2"
    assert str(parse_measure("search_calls")) == "SearchCalls"
    assert str(parse_measure("CallsToEvidence(share=1)")) == "CallsToEvidence"
    with pytest.raises(InputError, match="share"):
        parse_measure("CallsToEvidence(share=1.5)")
    with pytest.raises(InputError, match="takes no cutoff"):
        parse_measure("SearchCalls@3")


def _second_system(tmp_path):
    """q2 finds y at its second call; q1 as before."""
    plan = [PLAN[0], dict(PLAN[1])]
    plan[1]["steps"] = [
        PLAN[1]["steps"][0],
        {"op": "retrieval", "query": "y", "docs": [("y", 0.9)], "at": (10.4, 10.5)},
    ]
    return write_otlp(tmp_path / "b.jsonl", record(plan))


def test_compare_gives_intervals_on_trajectory_measures(tmp_path, result):
    other = read_trajectories(_second_system(tmp_path), id_attribute=ID)
    b = evaluate_trajectories(other, QRELS, list(EXPECTED), lists="retrieved")
    res = compare(
        {"a": result.per_query, "b": b.per_query}, ["EvidenceRecall", "CallRR"], n_resamples=500
    )
    pairs = res.pairs.set_index("measure")
    # a - b: q2's EvidenceRecall 0 vs 1 and CallRR 0 vs 1/2; q1 and q3 equal
    assert pairs.loc["EvidenceRecall", "difference"] == pytest.approx(-1 / 3)
    assert pairs.loc["CallRR", "difference"] == pytest.approx(-1 / 6)
    for m in ("EvidenceRecall", "CallRR"):
        low, high = pairs.loc[m, ["ci_low", "ci_high"]]
        assert np.isfinite([low, high]).all() and low <= pairs.loc[m, "difference"] <= high
    with pytest.raises(InputError, match="infinite"):
        compare({"a": result.per_query, "b": b.per_query}, ["CallsToFirstRel"])


def test_a_system_attribute_splits_one_file(tmp_path):
    plan = [
        dict(PLAN[0], attributes={ID: "q1", "app.system": "v1"}),
        dict(PLAN[0], start=20.0, end=24.0, attributes={ID: "q1", "app.system": "v2"}),
    ]
    path = write_otlp(tmp_path / "two.jsonl", record(plan))
    t = read_trajectories(path, id_attribute=ID, system_attribute="app.system")
    assert t.systems == ["v1", "v2"]
    parts = t.by_system()
    assert [len(p.calls) for p in parts.values()] == [3, 3]
    with pytest.raises(InputError, match="2 systems"):
        evaluate_trajectories(t, QRELS)
    assert evaluate_trajectories(parts["v2"], QRELS, ["EvidenceRecall"]).values[
        0, 0
    ] == pytest.approx(2 / 3)


# ----------------------------------------------------------------------------- conversations


def _turn(conversation, start, query, docs):
    return {
        "start": start,
        "end": start + 1.0,
        "conversation": conversation,
        "steps": [{"op": "retrieval", "query": query, "docs": docs, "at": (start, start + 0.5)}],
    }


CONVERSATIONS = [  # CAsT-style: per-turn qrels <conversation>_<turn>
    _turn("c1", 0, "Hi! Quick question: what is BM25?", [("a", 1.0), ("b", 0.5)]),
    _turn("c2", 1, "what is dense retrieval", [("e", 1.0)]),
    _turn("c1", 2, "and its saturation?", [("c", 1.0)]),
    _turn("c2", 3, "Sorry to bother you. how is it trained? Thanks!", [("x", 1.0)]),
    _turn("c1", 4, "who proposed it", [("d", 1.0)]),
]
TURN_QRELS = pd.DataFrame(
    {
        "query_id": ["c1_1", "c1_1", "c2_1", "c1_2", "c2_2", "c1_3"],
        "doc_id": ["a", "z", "e", "c", "f", "q"],
        "relevance": [1, 1, 1, 1, 1, 1],
    }
)


@pytest.fixture(scope="module")
def turns(tmp_path_factory):
    path = write_otlp(tmp_path_factory.mktemp("cast") / "chat.jsonl", record(CONVERSATIONS))
    t = read_trajectories(path, turn_ids=True)
    return t, evaluate_trajectories(
        t, TURN_QRELS, ["EvidenceRecall", "SearchCalls"], n_resamples=200
    )


def test_conversation_turns_name_the_trajectories_as_cast_does(turns):
    t, _ = turns
    rows = t.trajectories[["trajectory_id", "conversation_id", "turn"]].values.tolist()
    assert rows == [
        ["c1_1", "c1", 1],
        ["c2_1", "c2", 1],
        ["c1_2", "c1", 2],
        ["c2_2", "c2", 2],
        ["c1_3", "c1", 3],
    ]


def test_every_measure_by_turn(turns):
    _, res = turns
    table = res.by_turn(n_resamples=500)
    recall = table[table["measure"] == "EvidenceRecall"].set_index("turn")
    # turn 1: c1_1 finds a of {a, z} (1/2), c2_1 finds e (1); turn 2: c1_2 1, c2_2 0; turn 3: 0
    np.testing.assert_allclose(recall["value"], [0.75, 0.5, 0.0])
    assert recall["n_queries"].tolist() == [2, 2, 1]
    assert recall.loc[1, "ci_low"] <= 0.75 <= recall.loc[1, "ci_high"]
    assert recall.loc[2, ["ci_low", "ci_high"]].tolist() == pytest.approx([0.0, 1.0])
    assert np.isnan(recall.loc[3, "ci_low"])  # one question: no interval
    calls = table[table["measure"] == "SearchCalls"]
    assert calls["value"].tolist() == [1.0, 1.0, 1.0]


def test_noise_by_turn_reads_the_span_queries(turns):
    t, res = turns
    table = noise_by_turn(t, res, "EvidenceRecall").set_index("turn")
    assert table["noisy_share"].tolist() == [0.5, 0.5, 0.0]
    assert table.loc[1, ["n_noisy", "value_noisy", "n_clean", "value_clean"]].tolist() == [
        1,
        0.5,
        1,
        1.0,
    ]
    assert table.loc[1, "difference"] == -0.5
    assert table.loc[2, "value_noisy"] == 0.0 and table.loc[2, "value_clean"] == 1.0
    removed = 1 - len("what is BM25?") / len("Hi! Quick question: what is BM25?")
    assert table.loc[1, "removed"] == pytest.approx(removed / 2)
    with pytest.raises(InputError, match="not among"):
        noise_by_turn(t, res, "nDCG@10")


def test_by_turn_without_turns_says_why(result):
    with pytest.raises(InputError, match="no question has a conversation turn"):
        result.by_turn()


# ----------------------------------------------------------------------------- events out


def _protobuf(line: str):
    """An OTLP/JSON line parsed by protobuf's JSON parser (hex ids back to base64 first)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    obj = hex_ids(json.loads(line), to="base64")
    return json_format.Parse(json.dumps(obj), ExportLogsServiceRequest())


def _attributes(record):
    out = {}
    for kv in record.attributes:
        field = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, field)
    return out


def test_events_parse_back_with_the_otlp_protobuf(tmp_path, result, spans):
    path = write_evaluation_events(result.events(), tmp_path / "events.jsonl", batch=10)
    lines = path.read_text().splitlines()
    requests = [_protobuf(line) for line in lines]
    records = [
        r
        for req in requests
        for rl in req.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    ]
    assert len(lines) == math.ceil(len(result.events()) / 10)
    assert all(r.event_name == EVALUATION_EVENT and r.severity_number == 9 for r in records)
    root = _by_name(spans, "invoke_agent researcher")[0]
    on_root = [r for r in records if r.span_id == root.context.span_id.to_bytes(8, "big")]
    assert all(r.trace_id == root.context.trace_id.to_bytes(16, "big") for r in on_root)
    named = {_attributes(r)["gen_ai.evaluation.name"]: _attributes(r) for r in on_root}
    assert named["EvidenceRecall"]["gen_ai.evaluation.score.value"] == pytest.approx(2 / 3)
    assert named["CallsToEvidence"]["gen_ai.evaluation.score.label"] == "never"
    assert "gen_ai.evaluation.score.value" not in named["CallsToEvidence"]
    assert (
        "2 retrieval calls found 2 of 3 relevant"
        in named["EvidenceRecall"]["gen_ai.evaluation.explanation"]
    )
    assert named["EvidenceRecall"]["ragnb.query.id"] == "q1"
    rerank = _by_name(spans, "rerank")[0]
    gains = [
        _attributes(r) for r in records if r.span_id == rerank.context.span_id.to_bytes(8, "big")
    ]
    gain = {a["gen_ai.evaluation.name"]: a["gen_ai.evaluation.score.value"] for a in gains}
    assert gain["RerankGain@3"] == pytest.approx(NDCG_RERANKED - NDCG_CALL1)
    assert requests[0].resource_logs[0].resource.attributes[0].value.string_value == "ragnb"
    back = read_evaluation_events(path)
    assert len(back) == len(result.events()) and "q3" not in set(result.events()["ragnb.query.id"])
    assert back["span_id"].tolist() == result.events()["span_id"].tolist()


def test_a_failed_events_write_leaves_the_file_whole(tmp_path, result):
    path = write_evaluation_events(result.events(), tmp_path / "events.jsonl")
    before = path.read_bytes()
    with pytest.raises(InputError, match="missing"):
        write_evaluation_events(result.events().drop(columns="name"), path)
    assert path.read_bytes() == before


# ----------------------------------------------------------------------------- command line


def _qrels_file(folder: Path, qrels: pd.DataFrame) -> Path:
    path = folder / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.itertuples(index=False)))
    return path


def test_cli_evaluate_prints_a_table_and_writes_events(tmp_path, genai_file, capsys):
    qrels = _qrels_file(tmp_path, QRELS)
    out = tmp_path / "ev.jsonl"
    argv = ["traces", "evaluate", str(genai_file), "--qrels", str(qrels), "--id-attribute", ID]
    assert main([*argv, "-m", "EvidenceRecall", "CallsToFirstRel", "--events", str(out)]) == 0
    printed = capsys.readouterr()
    assert "3 questions, 1 without a trajectory" in printed.out
    row = next(line for line in printed.out.splitlines() if line.startswith("CallsToFirstRel"))
    assert row.split()[1:6] == ["1.0000", "3", "3", "2", "0.6667"]
    assert f"wrote 9 evaluation events to {out}" in printed.err
    # 2 per question searched, each call's nDCG@10 (4) and the reranker's RerankGain@10
    assert len(read_evaluation_events(out)) == 9
    assert main([*argv, "-m", "EvidenceRecall", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["systems"][0]["aggregate"][0]["value"] == pytest.approx(2 / 9)


def test_cli_by_turn_and_two_systems(tmp_path, genai_file, capsys):
    qrels = _qrels_file(tmp_path, QRELS)
    other = _second_system(tmp_path)
    argv = ["traces", "evaluate", str(genai_file), str(other), "--qrels", str(qrels)]
    assert main([*argv, "--id-attribute", ID, "-m", "EvidenceRecall", "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "system agent (" in printed and "system b (" in printed
    assert "agent − b" in printed
    assert main([*argv, "--id-attribute", ID, "--by-turn"]) == 2
    assert "no question has a conversation turn" in capsys.readouterr().err


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_phoenix_exports_of_genai_and_reranker_spans(tmp_path, form):
    """Phoenix's span frame (nested ``attributes``, ``start_time`` and ``end_time`` as
    timestamps, ``parent_id``): the documents as a JSON string or as a list of objects."""
    start = pd.Timestamp("2026-01-01", tz="UTC")
    docs = [{"id": "d1", "score": 0.9}, {"id": "d2", "score": 0.5}]

    def row(i, span_kind, attributes, seconds):
        return {
            "name": span_kind,
            "span_kind": span_kind,
            "context.span_id": f"{i:016x}",
            "context.trace_id": "ab" * 16,
            "parent_id": None if i == 0 else f"{0:016x}",
            "start_time": start + pd.Timedelta(seconds=seconds[0]),
            "end_time": start + pd.Timedelta(seconds=seconds[1]),
            "attributes": attributes,
        }

    genai = {"operation": {"name": "retrieval"}, "retrieval": {"query": {"text": "bm25"}}}
    frame = pd.DataFrame(
        [
            row(0, "AGENT", {"gen_ai": {"conversation": {"id": "c9"}}}, (0, 3)),
            row(
                1,
                "UNKNOWN",
                {
                    "gen_ai": genai
                    | {"retrieval": genai["retrieval"] | {"documents": json.dumps(docs)}}
                },
                (0.5, 1.0),
            ),
            row(
                2,
                "RERANKER",
                {
                    "reranker": {
                        "query": "bm25",
                        "input_documents": [{"document.id": "d1"}, {"document.id": "d2"}],
                        "output_documents": [{"document.id": "d2"}],
                    }
                },
                (1.0, 1.25),
            ),
        ]
    )
    path = tmp_path / f"spans.{form}"
    if form == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True, date_format="iso")
    t = read_trajectories(path)
    assert t.calls["kind"].tolist() == ["retrieval", "rerank"]
    assert t.calls["query"].tolist() == ["bm25", "bm25"]
    np.testing.assert_allclose(t.calls["latency_s"], [0.5, 0.25])
    assert t.documents["doc_id"].tolist() == ["d1", "d2", "d2"]
    assert t.rerank_inputs["doc_id"].tolist() == ["d1", "d2"]
    assert t.trajectories["conversation_id"].tolist() == ["c9"]
    assert t.trajectories["root_span_id"].tolist() == [f"{0:016x}"]
    assert t.trajectories["seconds"].tolist() == [3.0]


def test_structured_documents_attribute_reads_as_the_json_string(tmp_path):
    """``gen_ai.retrieval.documents`` as an OTLP array of key-value lists (the structured form
    the conventions prefer) or flattened as a frame flattens it."""
    span = genai_retrieval_span("q", [], span_id="01", trace_id="aa")

    def doc(i, score):
        pairs = [{"key": "id", "value": {"stringValue": i}}]
        pairs.append({"key": "score", "value": {"doubleValue": score}})
        return {"kvlistValue": {"values": pairs}}

    span["attributes"][3]["value"] = {"arrayValue": {"values": [doc("d2", 0.7), doc("d1", 0.2)]}}
    flat = genai_retrieval_span("q", [], span_id="02", trace_id="bb")
    del flat["attributes"][3]
    for i, d in enumerate(["d5", "d6"]):
        flat["attributes"].append(
            {"key": f"gen_ai.retrieval.documents.{i}.id", "value": {"stringValue": d}}
        )
    path = tmp_path / "s.jsonl"
    path.write_text(_line(span, flat))
    t = read_trajectories(path)
    assert t.documents[["trajectory_id", "doc_id"]].values.tolist() == [
        ["aa", "d2"],
        ["aa", "d1"],
        ["bb", "d5"],
        ["bb", "d6"],
    ]
    assert (
        t.documents["score"].tolist()[:2] == [0.7, 0.2]
        and t.documents["score"].iloc[2:].isna().all()
    )


def test_noise_by_turn_with_an_embedder_gives_the_cosine_with_the_denoised_query(turns):
    from ragnb.embed.base import Embedder

    class Lookup(Embedder):
        """[1, 0] for the two noisy queries, [0.6, 0.8] for their denoised forms, [0, 1] for
        every other text: cosine 0.6 for a noisy query, 1 for a clean one."""

        model_id = "lookup"

        def _embed(self, texts, kind):
            noisy = {
                "Hi! Quick question: what is BM25?",
                "Sorry to bother you. how is it trained? Thanks!",
            }
            denoised = {"what is BM25?", "how is it trained?"}
            rows = [
                [1.0, 0.0] if t in noisy else [0.6, 0.8] if t in denoised else [0.0, 1.0]
                for t in texts
            ]
            return np.asarray(rows, dtype=np.float32)

    t, res = turns
    table = noise_by_turn(t, res, embedder=Lookup()).set_index("turn")
    np.testing.assert_allclose(table["cos_denoised"], [0.8, 0.8, 1.0], rtol=1e-6)


# ----------------------------------------------------------------------------- a naive reference


def _naive_ndcg(docs, grades, k):
    gain = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(docs[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum(max(g, 0) / math.log2(i + 2) for i, g in enumerate(ideal))
    return gain / best if best > 0 else 0.0


def _naive(searches, reranks, grades):
    """Every measure of one trajectory, by the definitions, one call at a time."""
    relevant = {d for d, g in grades.items() if g >= 1}
    seen, found, first, full, half, returned = [], set(), INF, INF, INF, 0
    for c, docs in enumerate(searches, start=1):
        returned += len(docs)
        seen += [d for d in docs if d not in seen]
        found |= relevant & set(docs)
        if found and first == INF:
            first = c
        if relevant and len(found) >= math.ceil(0.5 * len(relevant)) and half == INF:
            half = c
        if relevant and found == relevant and full == INF:
            full = c
    ndcgs = [_naive_ndcg(docs, grades, 3) for docs in searches]
    gains = [_naive_ndcg(o, grades, 3) - _naive_ndcg(i, grades, 3) for i, o in reranks if i]
    slope = np.polyfit(np.arange(1, len(ndcgs) + 1), ndcgs, 1)[0] if len(ndcgs) > 1 else NAN
    return {
        "EvidenceRecall": len(found) / len(relevant) if relevant else 0.0,
        "EvidenceRecall@2": len(relevant & {d for s in searches[:2] for d in s}) / len(relevant)
        if relevant
        else 0.0,
        "CallsToFirstRel": first if relevant else NAN,
        "CallsToEvidence(share=0.5)": half if relevant else NAN,
        "Redundancy": 1 - len(seen) / returned if returned else NAN,
        "CallnDCG@3": float(np.mean(ndcgs)) if ndcgs else NAN,
        "CallnDCGSlope@3": slope,
        "RerankGain@3": float(np.mean(gains)) if gains else NAN,
        "nDCG@5": _naive_ndcg(seen, grades, 5),
    }


@pytest.mark.parametrize("lists", ["retrieved", "seen"])
def test_measures_match_a_naive_reference_on_random_trajectories(lists):
    from ragnb.measures.trajectory import prepare_trajectories

    rng = np.random.default_rng(7)
    calls, docs, inputs, qrels, want = [], [], [], [], {}
    for q in range(40):
        tid = f"t{q:02d}"
        grades = {
            f"d{d}": int(rng.integers(0, 3))
            for d in rng.choice(12, rng.integers(0, 5), replace=False)
        }
        qrels += [(tid, d, g) for d, g in grades.items()]
        searches, reranks, call, n_search, seen_as = [], [], 0, 0, {}
        for _ in range(int(rng.integers(0, 5))):
            call += 1
            if n_search and rng.random() < 0.3:  # a rerank of the last search's list
                given = searches[-1]
                out = (
                    list(rng.permutation(given))[: int(rng.integers(1, len(given) + 1))]
                    if given
                    else []
                )
                reranks.append((given, out))
                seen_as[n_search - 1] = out  # the last reranker's output stands for the search
                calls.append((tid, call, n_search, "rerank"))
                docs += [(tid, call, r + 1, d) for r, d in enumerate(out)]
                inputs += [(tid, call, r + 1, d) for r, d in enumerate(given)]
                continue
            n_search += 1
            listed = [f"d{d}" for d in rng.choice(12, rng.integers(0, 5), replace=False)]
            searches.append(listed)
            calls.append((tid, call, n_search, "retrieval"))
            docs += [(tid, call, r + 1, d) for r, d in enumerate(listed)]
        if grades:
            read = [seen_as.get(i, docs_) for i, docs_ in enumerate(searches)]
            want[tid] = _naive(
                read if lists == "seen" else searches, [r for r in reranks if r[1]], grades
            )
    frame = {
        "calls": pd.DataFrame(calls, columns=["trajectory_id", "call", "search_call", "kind"]),
        "documents": pd.DataFrame(docs, columns=["trajectory_id", "call", "rank", "doc_id"]),
        "rerank_inputs": pd.DataFrame(inputs, columns=["trajectory_id", "call", "rank", "doc_id"]),
    }
    qrels = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    arrays = prepare_trajectories(qrels, **frame, lists=lists)
    assert arrays.query_ids.tolist() == sorted(want)
    for name in next(iter(want.values())):
        got = parse_measure(name).compute(arrays)
        expected = [want[t][name] for t in arrays.query_ids]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=name)


def test_a_traces_ragnb_query_id_names_it_by_default(tmp_path):
    """ragnb's search agent writes ``ragnb.query.id`` on its spans: no option needed."""
    plan = [dict(PLAN[0], attributes={"ragnb.query.id": "q1"}), PLAN[1]]
    spans = record(plan)
    t = read_trajectories(write_otlp(tmp_path / "a.jsonl", spans))
    root = _by_name(spans, "invoke_agent researcher")[1]
    assert t.trajectories["trajectory_id"].tolist() == ["q1", hex_trace_id(root)]
