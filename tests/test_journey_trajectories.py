"""Journey: an agent's search traces scored per question and per turn, the scores written back.

The installed ``ragnb`` command, run from a temporary folder outside the checkout, on files the
test writes there: an agent's traces recorded by the OpenTelemetry SDK (GenAI retrieval spans
under an ``invoke_agent`` span, one OpenInference rerank span), per-question qrels, and a chat's
traces with per-turn qrels in the TREC CAsT layout. ``ragnb traces evaluate`` prints the table
of trajectory measures, writes the scores as ``gen_ai.evaluation.result`` events that the OTLP
protobuf parses, and the measures by turn. ``docs/journeys.md`` ("An agent's searches scored
and the scores put back on its spans") is written from this test.
"""

from __future__ import annotations

import json

import pytest
from agent_spans import record, write_otlp
from journeys import ragnb

QUESTIONS = [
    {
        "start": 0.0,
        "end": 3.0,
        "attributes": {"app.question_id": "bm25"},
        "steps": [
            {"op": "chat", "tokens": (300, 40), "at": (0.0, 0.4)},
            {
                "op": "retrieval",
                "query": "what is bm25",
                "docs": [("d1", 9.1), ("d2", 8.0), ("d3", 7.2)],
                "at": (0.4, 0.6),
            },
            {
                "op": "rerank",
                "query": "what is bm25",
                "inputs": [("d1", 9.1), ("d2", 8.0), ("d3", 7.2)],
                "outputs": [("d3", 0.9), ("d1", 0.2)],
                "at": (0.6, 0.7),
            },
            {
                "op": "retrieval",
                "query": "bm25 term frequency saturation k1",
                "docs": [("d4", 5.0), ("d3", 4.0)],
                "at": (0.9, 1.1),
            },
            {"op": "chat", "tokens": (500, 80), "at": (1.1, 3.0)},
        ],
    },
    {
        "start": 5.0,
        "end": 6.0,
        "attributes": {"app.question_id": "splade"},
        "steps": [
            {"op": "retrieval", "query": "splade", "docs": [("d7", 3.0)], "at": (5.1, 5.3)},
            {"op": "chat", "tokens": (200, 20), "at": (5.3, 6.0)},
        ],
    },
]
QRELS = "bm25 0 d3 2\nbm25 0 d4 1\nsplade 0 d8 1\n"
CHAT = [
    {
        "start": float(i),
        "end": i + 0.5,
        "conversation": conversation,
        "steps": [{"op": "retrieval", "query": query, "docs": docs, "at": (i, i + 0.2)}],
    }
    for i, (conversation, query, docs) in enumerate(
        [
            ("31", "Hi! Quick question: what is a vector database?", [("v1", 1.0)]),
            ("32", "what is reranking", [("r1", 1.0), ("r2", 0.5)]),
            ("31", "how does it index?", [("v9", 1.0)]),
            ("32", "which models do it?", [("r3", 1.0)]),
        ]
    )
]
CAST_QRELS = "31_1 0 v1 1\n32_1 0 r2 1\n31_2 0 v2 1\n32_2 0 r3 1\n"


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    home = tmp_path_factory.mktemp("agent-journey")
    write_otlp(home / "agent.jsonl", record(QUESTIONS))
    (home / "qrels.txt").write_text(QRELS)
    write_otlp(home / "chat.jsonl", record(CHAT))
    (home / "cast.qrels").write_text(CAST_QRELS)
    base = ("traces", "evaluate", "agent.jsonl", "--qrels", "qrels.txt")
    ids = ("--id-attribute", "app.question_id")
    return {
        "home": home,
        "table": ragnb(*base, *ids, "--events", "evaluations.jsonl", cwd=home),
        "unnamed": ragnb(*base, cwd=home),
        "turns": ragnb(
            *("traces", "evaluate", "chat.jsonl", "--qrels", "cast.qrels", "--turn-ids"),
            *("--by-turn", "-m", "EvidenceRecall", "CallsToFirstRel"),
            cwd=home,
        ),
    }


def _row(printed: str, measure: str) -> list[str]:
    return next(line.split() for line in printed.splitlines() if line.split()[:1] == [measure])


def test_the_table_gives_every_trajectory_measure(journey):
    done = journey["table"]
    assert done.returncode == 0, done.stderr
    assert "agent.jsonl: 9 spans, 4 retrieval and rerank spans" in done.stderr
    assert "2 questions, 0 without a trajectory; 3 retrieval calls, 1 rerank calls" in done.stdout
    # bm25 finds d3 and d4 of {d3, d4}; splade finds nothing of {d8}
    assert _row(done.stdout, "EvidenceRecall")[1:3] == ["0.5000", "2"]
    assert _row(done.stdout, "SearchCalls")[1] == "1.5000"
    assert _row(done.stdout, "CallsToFirstRel")[1:6] == ["1.0000", "2", "2", "1", "0.5000"]
    # bm25's first search as the agent received it, reranked: [d3, d1], then [d4, d3]
    assert _row(done.stdout, "Redundancy")[1] == "0.1250"  # (1/4 + 0) / 2
    assert _row(done.stdout, "TokensPerRel")[1] == "460.0000"  # 340 + 580 tokens / 2 found


def test_the_scores_go_back_onto_the_spans_as_events(journey):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    from ragnb.io.otlp import hex_ids

    assert "evaluation events to evaluations.jsonl" in journey["table"].stderr
    spans = {}
    for line in (journey["home"] / "agent.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for span in rs["scopeSpans"][0]["spans"]:
                spans[span["spanId"]] = span
    records = []
    for line in (journey["home"] / "evaluations.jsonl").read_text().splitlines():
        obj = hex_ids(json.loads(line), to="base64")
        parsed = json_format.Parse(json.dumps(obj), ExportLogsServiceRequest())
        records += list(parsed.resource_logs[0].scope_logs[0].log_records)
    assert records and all(r.event_name == "gen_ai.evaluation.result" for r in records)
    for r in records:
        span = spans[r.span_id.hex()]
        assert span["traceId"] == r.trace_id.hex()
        name = {kv.key: kv.value for kv in r.attributes}["gen_ai.evaluation.name"].string_value
        kind = "invoke_agent" if "invoke_agent" in span["name"] else span["name"]
        assert (kind, name.partition("@")[0]) in {
            ("invoke_agent", name.partition("@")[0]),
            ("retrieval docs", "nDCG"),
            ("rerank", "nDCG"),
            ("rerank", "RerankGain"),
        }


def test_ids_that_do_not_match_the_qrels_stop_the_command(journey):
    unnamed = journey["unnamed"]
    assert unnamed.returncode == 2
    assert "the qrels share no question with the 2 trajectories" in unnamed.stderr


def test_a_chat_is_scored_turn_by_turn_on_cast_qrels(journey):
    done = journey["turns"]
    assert done.returncode == 0, done.stderr
    by_turn = done.stdout.split("by turn:")[1].splitlines()
    rows = {
        (r.split()[0], r.split()[1]): r.split()
        for r in by_turn
        if r.split()[:1] in (["EvidenceRecall"], ["CallsToFirstRel"])
    }
    # turn 1: 31_1 finds v1, 32_1 finds r2: 1 each; turn 2: 31_2 nothing, 32_2 r3
    assert rows[("EvidenceRecall", "1")][4] == "1.0000"
    assert rows[("EvidenceRecall", "2")][4] == "0.5000"
    assert rows[("CallsToFirstRel", "2")][7:9] == ["1", "0.5000"]
    noise = done.stdout.split("conversational noise in the search queries (EvidenceRecall):")[1]
    turn_1 = noise.splitlines()[2].split()
    # turn 1: "Hi! Quick question: ..." is noisy, "what is reranking" is not
    assert turn_1[:4] == ["1", "2", "2", "0.5000"]
