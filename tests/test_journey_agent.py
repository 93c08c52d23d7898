"""Journey: a search agent's traces written by the installed command, then imported.

The installed ``ragnb`` command, run from a temporary folder outside the checkout, starts the
local model (SmolLM2-135M-Instruct, a tiny stand-in), lets the agent answer questions of the
sample dataset it ships (single questions, then a conversation), and writes the trace file with
its qrels and questions beside it; ``ragnb traces import`` then reads the agent's retrieval spans
(their OpenInference attributes) into one run per retriever.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from journeys import ragnb

from ragnb.io.readers import read_qrels


def trace_spans(path: Path) -> list[dict]:
    spans = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
                    spans.append({**span, "attrs": attrs})
    return spans


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    from test_local_llm import require_local_llm

    require_local_llm()
    home = tmp_path_factory.mktemp("agent-journey")
    steps: dict[str, object] = {"home": home}
    steps["single"] = ragnb(
        "traces", "example", "--agent", "agent.jsonl", "--questions", "2", cwd=home
    )
    steps["talk"] = ragnb(
        *("traces", "example", "--agent", "talk.jsonl", "--conversations"),
        *("--questions", "1", "--seed", "4"),
        cwd=home,
    )
    steps["import"] = ragnb(
        *("traces", "import", "agent.jsonl", "--out", "prod"),
        *("--retriever-attribute", "gen_ai.data_source.id"),
        cwd=home,
    )
    return steps


def test_the_agent_example_says_what_it_wrote_and_with_which_model(journey):
    done = journey["single"]
    assert done.returncode == 0, done.stderr
    assert "wrote agent.jsonl: 2 questions, one trace each" in done.stdout
    assert re.search(
        r"^searches per question: .*\(mean [0-9.]+; 2 to 4 allowed\)$", done.stdout, re.M
    )
    assert "model: smollm2-135m-instruct (SmolLM2-135M-Instruct" in done.stdout
    assert "wrote agent.qrels:" in done.stdout and "wrote agent.queries.jsonl" in done.stdout


def test_the_trace_file_and_its_qrels_name_the_same_questions(journey):
    home = journey["home"]
    spans = trace_spans(home / "agent.jsonl")
    roots = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "invoke_agent"]
    asked = {s["attrs"]["ragnb.query.id"] for s in roots}
    assert len(roots) == len(asked) == 2
    assert set(read_qrels(home / "agent.qrels")["query_id"]) == asked
    queries = [json.loads(x) for x in (home / "agent.queries.jsonl").read_text().splitlines()]
    assert {q["_id"] for q in queries} == asked
    for root in roots:
        searches = [
            s
            for s in spans
            if s["traceId"] == root["traceId"]
            and s["attrs"].get("gen_ai.operation.name") == "retrieval"
        ]
        assert 2 <= len(searches) <= 4
        assert all(s["name"] == "retrieval bm25" for s in searches)


def test_a_conversation_is_written_with_cast_ids_and_its_id_on_every_span(journey):
    done, home = journey["talk"], journey["home"]
    assert done.returncode == 0, done.stderr
    assert re.search(r"wrote talk\.jsonl: [234] questions in 1 conversation,", done.stdout)
    qrels = read_qrels(home / "talk.qrels")
    turns = sorted(set(qrels["query_id"]))
    assert turns == [f"1_{t}" for t in range(1, len(turns) + 1)]
    spans = trace_spans(home / "talk.jsonl")
    assert {s["attrs"]["gen_ai.conversation.id"] for s in spans} == {"1"}
    assert {s["attrs"]["ragnb.query.id"] for s in spans} == set(turns)


def test_the_agents_retrieval_spans_import_as_a_run(journey):
    done, home = journey["import"], journey["home"]
    assert done.returncode == 0, done.stderr
    assert "run bm25:" in done.stdout
    run = (home / "prod" / "runs" / "bm25.trec").read_text().splitlines()
    assert run and all(len(line.split()) == 6 for line in run)
