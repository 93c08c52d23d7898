"""The traced search agent (``ragnb.studies.agentic``): its spans, its loop, its questions.

Three tiers. Without a model: the OTLP JSON lines exporter against the SDK's own encoder (the
spans captured in memory, encoded by ``encode_spans``, must equal what protobuf parses back from
the file), the ``json_action`` answer, the fallback query, and the conversations built from the
shipped sample dataset (CAsT ids, per-turn qrels, one seed one result). Against the scripted
OpenAI-compatible server (``tests/openai_server.py``, real HTTP): the loop's bounds and fallbacks
under answers chosen by the test, the usage tokens on the chat spans, the reranker spans. Against
the real local model (SmolLM2-135M-Instruct through llama.cpp, a tiny stand-in): a two-turn
conversation, whose traces must hold GenAI retrieval spans, 2 to 4 per question.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.io.traces import otlp_attributes, read_traces
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import PromptTemplate, load_prompt, parse_json_action
from ragnb.llm.transport import RetryPolicy
from ragnb.rerank import NoReranker
from ragnb.retrievers.retrieve import Retriever, make_retriever
from ragnb.rewrite.rules import denoise_query
from ragnb.studies.agentic.agent import AgentConfig, Question, SearchAgent, fallback_query
from ragnb.studies.agentic.conversations import (
    DRILL_TEMPLATES,
    build_conversations,
    related_topics,
    sample_questions,
    turn_ids,
)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "pydocs"
STOP = '{"action": "stop", "query": ""}'


@pytest.fixture(scope="module")
def pydocs():
    return read_beir(SAMPLE)


@pytest.fixture(scope="module")
def bm25(pydocs):
    return make_retriever("bm25").index(pydocs.corpus)


def spans_of(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP JSON lines file, attributes as a dict, with its line."""
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    out.append(
                        {**span, "attrs": otlp_attributes(span["attributes"]), "line": lineno}
                    )
    return out


def by_trace(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in spans:
        out[s["traceId"]].append(s)
    for group in out.values():
        group.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return dict(out)


def operation(span: dict[str, Any]) -> str:
    return span["attrs"].get("gen_ai.operation.name") or span["attrs"].get(
        "openinference.span.kind", ""
    )


# ----------------------------------------------------------------------------- the exporter


def test_the_exporter_writes_what_the_sdk_encodes_with_hex_ids(tmp_path):
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from ragnb.io.otlp import OTLPJsonLinesExporter, hex_ids

    memory = InMemorySpanExporter()
    path = tmp_path / "spans.jsonl"
    with path.open("w", encoding="utf-8") as f:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPJsonLinesExporter(f)))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("invoke_agent a", attributes={"n": 3}):
            with tracer.start_as_current_span(
                "retrieval bm25", kind=SpanKind.CLIENT, attributes={"k": 10.0, "q": "é"}
            ):
                pass
        provider.shutdown()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2  # SimpleSpanProcessor: one export, one line, per span
    finished = memory.get_finished_spans()
    for line, span in zip(lines, finished, strict=True):
        obj = json.loads(line)
        written = obj["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        assert re.fullmatch(r"[0-9a-f]{32}", written["traceId"])
        assert re.fullmatch(r"[0-9a-f]{16}", written["spanId"])
        assert written["traceId"] == format(span.context.trace_id, "032x")
        assert isinstance(written["kind"], int)  # OTLP/JSON: enums as integers
        parsed = json_format.Parse(json.dumps(hex_ids(obj)), ExportTraceServiceRequest())
        assert parsed == encode_spans([span])
    child, parent = (spans_of(path)[i] for i in (0, 1))
    assert child["parentSpanId"] == parent["spanId"] and "parentSpanId" not in parent
    assert child["kind"] == 3 and child["attrs"] == {"k": 10.0, "q": "é"}


def test_ids_convert_between_hex_and_base64_and_refuse_other_text():
    from ragnb.io.otlp import hex_ids

    request = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ff" * 16, "n": 1}]}]}]}
    there = hex_ids(request)
    assert there["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == "/" * 21 + "w=="
    assert hex_ids(there, to="hex") == request
    with pytest.raises(ValueError):
        hex_ids({"spanId": "not hex"})
    with pytest.raises(ValueError):
        hex_ids(request, to="base32")


# ----------------------------------------------------------------------------- the answer


def test_an_action_answer_is_an_action_among_the_choices_and_a_string_query():
    choices = ("stop", "search")
    assert parse_json_action('{"action": "stop", "query": ""}', choices) == (("stop", ""), None)
    assert parse_json_action(' {"query": "k1", "action": "search"}\n', choices)[0] == (
        "search",
        "k1",
    )
    for bad in [
        "",
        "stop",
        '{"action": "stop"}',
        '{"action": "stop", "query": "", "why": "done"}',
        '{"action": "STOP", "query": ""}',
        '{"action": "search", "query": 3}',
        '{"action": "search", "query": null}',
        '["stop", ""]',
        'sure: {"action": "stop", "query": ""}',
    ]:
        value, reason = parse_json_action(bad, choices)
        assert value is None and reason, bad


def test_the_shipped_step_prompt_is_an_act_template_with_its_schema():
    template = load_prompt("agent-step")
    assert (template.kind, template.answer, template.choices) == (
        "act",
        "json_action",
        ("stop", "search"),
    )
    assert set(template.fields) == {"question", "context", "queries", "passages"}
    schema = template.response_schema()
    assert schema["properties"]["action"]["enum"] == ["stop", "search"]
    assert schema["required"] == ["action", "query"] and not schema["additionalProperties"]
    with pytest.raises(InputError, match="needs choices"):
        PromptTemplate("x", "en", "act", "json_action", "{question}")
    with pytest.raises(InputError, match="act prompt needs answer"):
        PromptTemplate("x", "en", "act", "json_list", "{question}", choices=("a", "b"))


def test_the_fallback_is_the_question_and_the_previous_turn_then_a_new_title():
    # normalised: lower case, punctuation gone; the previous turn only (not older ones)
    q = fallback_query("What does dumps do there?", ["Old turn.", "JSON encoder."], [], ["a.b"])
    assert q == "what does dumps do there json encoder a.b"
    base = "temporary files"
    titles = ["tempfile.mkdtemp", "tempfile.gettempdir"]
    assert fallback_query("Temporary files.", [], [], titles) == f"{base} tempfile.mkdtemp"
    # a query already searched (compared once normalised) is not searched again
    asked = ["Temporary  FILES tempfile.mkdtemp"]
    assert fallback_query("Temporary files.", [], asked, titles) == f"{base} tempfile.gettempdir"
    asked += [f"{base} tempfile.gettempdir"]
    assert fallback_query("Temporary files.", [], asked, titles) == base
    asked += [base]
    assert fallback_query("Temporary files.", [], asked, titles) == " ".join([base, *titles])
    assert fallback_query("Temporary files.", [], [], []) == base


def test_the_config_refuses_bounds_out_of_order():
    assert AgentConfig().min_calls == 2 and AgentConfig().max_calls == 4
    for bad in [
        {"min_calls": 0},
        {"min_calls": 3, "max_calls": 2},
        {"top_k": 0},
        {"top_k": 20, "rerank_depth": 10},
        {"passage_chars": 5},
        {"agent_name": " "},
    ]:
        with pytest.raises(InputError):
            AgentConfig(**bad)


# ----------------------------------------------------------------------------- conversations


def test_related_topics_of_the_sample_follow_its_negatives(pydocs):
    related = related_topics(pydocs.qrels)
    # the sample draws argparse's negatives from optparse, and optparse's from argparse
    assert related["q-argparse"][0] == "q-optparse"
    assert related["q-optparse"] == ["q-argparse"]


def test_conversations_follow_the_cast_layout_and_their_seed(pydocs):
    made = build_conversations(pydocs, 6, seed=3)
    again = build_conversations(pydocs, 6, seed=3)
    assert made.questions == again.questions and made.qrels.equals(again.qrels)
    other = build_conversations(pydocs, 6, seed=4)
    assert [q.text for q in other.questions] != [q.text for q in made.questions]
    frame = made.frame()
    assert frame["query_id"].str.fullmatch(r"[1-9][0-9]*_[1-9][0-9]*").all()
    assert turn_ids(made.questions) == list(
        zip(frame["conversation_id"], frame["turn"], strict=True)
    )
    assert sorted(set(made.qrels["query_id"])) == sorted(frame["query_id"])
    for _, turns in frame.groupby("conversation_id"):
        assert list(turns["turn"]) == list(range(1, len(turns) + 1))
        assert 2 <= len(turns) <= 4
        assert list(turns["context"]) == [list(turns["text"][:i]) for i in range(len(turns))]
        assert turns["kind"].iloc[0] == "open" and set(turns["kind"].iloc[1:]) <= {
            "drill",
            "switch",
        }
    assert set(frame["kind"]) == {"open", "drill", "switch"}  # seed 3 draws every kind


def test_each_turn_takes_its_qrels_from_its_topic(pydocs):
    made = build_conversations(pydocs, 8, seed=0)
    titles = dict(zip(pydocs.corpus["doc_id"], pydocs.corpus["title"], strict=True))
    related = related_topics(pydocs.qrels)
    data = pydocs.qrels.set_index(["query_id", "doc_id"])["relevance"]
    frame = made.frame()
    for row in frame.itertuples():
        turn = made.qrels[made.qrels["query_id"] == row.query_id]
        grades = dict(zip(turn["doc_id"], turn["relevance"], strict=True))
        topic = {d: int(data[(row.topic, d)]) for d in data[row.topic].index}
        if row.kind in ("open", "switch"):
            assert grades == topic
        if row.kind == "open":
            assert row.text == pydocs.queries.set_index("query_id")["text"][row.topic]
        if row.kind == "switch":
            before = frame[(frame.conversation_id == row.conversation_id) & (frame.turn < row.turn)]
            assert row.topic in related[before["topic"].iloc[-1]]
        if row.kind == "drill":
            (asked,) = [d for d, g in grades.items() if g == 2]
            name = titles[asked].rsplit(".", 1)[-1]
            assert row.text in [t.format(name=name) for t in DRILL_TEMPLATES]
            assert {d: g for d, g in grades.items() if d != asked} == {
                d: g for d, g in topic.items() if d != asked
            }
            assert topic[asked] == 1


def test_questions_and_conversations_refuse_impossible_counts(pydocs):
    with pytest.raises(InputError, match="judged queries"):
        sample_questions(pydocs, 96)
    with pytest.raises(InputError, match="can open one"):
        build_conversations(pydocs, 96)
    with pytest.raises(InputError):
        build_conversations(pydocs, 1, min_turns=3, max_turns=2)
    with pytest.raises(InputError, match="not <conversation>_<turn>"):
        turn_ids([Question("q-json", "x")])
    picked, again = sample_questions(pydocs, 4, seed=1), sample_questions(pydocs, 4, seed=1)
    assert len({q.query_id for q in picked.questions}) == 4
    assert set(picked.qrels["query_id"]) == {q.query_id for q in picked.questions}
    assert picked.questions == again.questions and picked.qrels.equals(again.qrels)
    kept = pydocs.qrels[pydocs.qrels["query_id"] == picked.questions[0].query_id]
    assert len(kept) == (picked.qrels["query_id"] == picked.questions[0].query_id).sum() > 0


# ----------------------------------------------------------------------------- the loop, scripted


def scripted_agent(
    server, tmp_path, retriever, pydocs, reranker=None, **config: Any
) -> SearchAgent:
    client = ChatClient(
        "agent-test",
        base_url=server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        progress=False,
        retry=RetryPolicy(max_attempts=1, timeout=10.0),
    )
    return SearchAgent(
        retriever, pydocs.corpus, client, config=AgentConfig(**config), reranker=reranker
    )


class FailingRetriever(Retriever):
    """BM25, except for one query text, where the search fails."""

    name = "bm25"

    def __init__(self, inner: Retriever, fails_on: str) -> None:
        self.inner, self.fails_on = inner, fails_on

    def index(self, corpus: pd.DataFrame) -> Retriever:
        return self

    def retrieve(self, queries: pd.DataFrame, k: int = 100) -> pd.DataFrame:
        if self.fails_on in set(queries["text"]):
            raise RuntimeError("the index went away")
        return self.inner.retrieve(queries, k)


QUESTIONS = [
    Question("q-tempfile", "Temporary files."),
    Question("q-bisect", "Bisection algorithms."),
]


def test_a_model_that_always_stops_is_overruled_until_the_minimum(
    openai_server, tmp_path, bm25, pydocs
):
    openai_server.chat.handler = lambda req: ChatAnswer(
        STOP, prompt_tokens=100, completion_tokens=7
    )
    agent = scripted_agent(openai_server, tmp_path, bm25, pydocs)
    run = agent.run(QUESTIONS, tmp_path / "agent.jsonl")
    assert run.calls_per_question() == {2: 2} and run.lines == 2
    titles = dict(zip(pydocs.corpus["doc_id"], pydocs.corpus["title"], strict=True))
    for t in run.trajectories:
        first, second = t.steps
        assert (first.source, first.decision.fallback) == ("question", "stop before 2 searches")
        expected = f"{denoise_query(t.question.text)} {titles[first.doc_ids[0]]}"
        assert (second.source, second.query) == ("fallback", expected)
        assert second.decision.stop and second.decision.action == "stop"
    traces = by_trace(spans_of(run.path))
    assert len(traces) == 2
    for trace in traces.values():
        chats = [s for s in trace if operation(s) == "chat"]
        assert len(chats) == 2  # after each search: the first overruled, the second final
        for chat in chats:
            assert chat["attrs"]["gen_ai.usage.input_tokens"] == 100
            assert chat["attrs"]["gen_ai.usage.output_tokens"] == 7
            assert chat["attrs"]["gen_ai.request.model"] == "agent-test"
            assert chat["attrs"]["server.address"] == "127.0.0.1"
    body = openai_server.bodies("/v1/chat/completions")[0]
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["properties"]["action"]["enum"] == ["stop", "search"]
    assert body["max_tokens"] == 96


def test_a_model_that_repeats_itself_gets_fallbacks_up_to_the_maximum(
    openai_server, tmp_path, bm25, pydocs
):
    openai_server.chat.handler = lambda req: '{"action": "search", "query": "sorted list insert"}'
    agent = scripted_agent(openai_server, tmp_path, bm25, pydocs)
    run = agent.run(QUESTIONS[1:], tmp_path / "agent.jsonl")
    (t,) = run.trajectories
    assert [s.source for s in t.steps] == ["question", "model", "fallback", "fallback"]
    assert t.steps[1].query == "sorted list insert"
    assert [s.decision.fallback for s in t.steps[1:3]] == ["query already searched"] * 2
    assert t.steps[3].decision is None and t.model_calls == 3
    assert len({s.query for s in t.steps}) == 4  # never the same search twice
    trace = spans_of(run.path)
    assert [operation(s) for s in trace].count("chat") == 3  # none after the last search
    assert [s["attrs"]["ragnb.agent.call"] for s in trace if operation(s) == "retrieval"] == [
        1,
        2,
        3,
        4,
    ]


def test_invalid_answers_fall_back_and_say_why(openai_server, tmp_path, bm25, pydocs):
    openai_server.chat.handler = lambda req: "I think you should search more."
    agent = scripted_agent(openai_server, tmp_path, bm25, pydocs, max_calls=3)
    (t,) = agent.run(QUESTIONS[:1], tmp_path / "agent.jsonl").trajectories
    assert t.calls == 3 and [s.source for s in t.steps] == ["question", "fallback", "fallback"]
    assert t.steps[0].decision.status == "invalid"
    assert t.steps[0].decision.fallback.startswith("invalid answer: not a JSON object")
    chat = [s for s in spans_of(tmp_path / "agent.jsonl") if operation(s) == "chat"][0]
    assert chat["attrs"]["ragnb.agent.answer_status"] == "invalid"
    assert chat["attrs"]["ragnb.agent.decision"] == ""


def test_the_trace_holds_genai_spans_under_one_agent_span_per_question(
    openai_server, tmp_path, bm25, pydocs
):
    openai_server.chat.handler = lambda req: STOP
    agent = scripted_agent(
        openai_server, tmp_path, bm25, pydocs, top_k=3, rerank_depth=5, reranker=NoReranker()
    )
    questions = [
        Question("1_1", "Temporary files.", "1", 1),
        Question("1_2", "What is mkdtemp?", "1", 2, ("Temporary files.",)),
    ]
    run = agent.run(questions, tmp_path / "talk.jsonl")
    traces = by_trace(spans_of(run.path))
    assert [t.trace_id for t in run.trajectories] == list(traces)
    for trajectory, trace in zip(run.trajectories, traces.values(), strict=True):
        assert {s["line"] for s in trace} == {trace[0]["line"]}  # one line, one trace
        (root,) = [s for s in trace if "parentSpanId" not in s]
        assert root["name"] == "invoke_agent ragnb-search-agent" and root["kind"] == 1
        assert root["attrs"]["gen_ai.operation.name"] == "invoke_agent"
        assert root["attrs"]["ragnb.agent.calls"] == trajectory.calls == 2
        message = json.loads(root["attrs"]["gen_ai.input.messages"])
        assert message[0]["parts"][0]["content"] == trajectory.question.text
        for span in trace:
            assert span["attrs"]["gen_ai.conversation.id"] == "1"
            assert span["attrs"]["ragnb.query.id"] == trajectory.question.query_id
            assert span is root or span["parentSpanId"] == root["spanId"]
        searches = [s for s in trace if operation(s) == "retrieval"]
        reranks = [s for s in trace if operation(s) == "RERANKER"]
        assert len(searches) == len(reranks) == trajectory.calls
        for search, rerank, step in zip(searches, reranks, trajectory.steps, strict=True):
            a = search["attrs"]
            assert search["name"] == "retrieval bm25" and search["kind"] == 3
            assert (a["gen_ai.data_source.id"], a["gen_ai.request.top_k"]) == ("bm25", 5.0)
            assert a["gen_ai.retrieval.query.text"] == a["input.value"] == step.query
            docs = json.loads(a["gen_ai.retrieval.documents"])
            assert len(docs) == 5 and set(docs[0]) == {"id", "score"}
            assert [a[f"retrieval.documents.{i}.document.id"] for i in range(5)] == [
                d["id"] for d in docs
            ]
            r = rerank["attrs"]
            assert (r["reranker.model_name"], r["reranker.top_k"]) == ("none", 3)
            assert [r[f"reranker.input_documents.{i}.document.id"] for i in range(5)] == [
                d["id"] for d in docs
            ]
            out = [r[f"reranker.output_documents.{i}.document.id"] for i in range(3)]
            assert out == [d["id"] for d in docs[:3]] == list(step.doc_ids)
            assert "reranker.output_documents.3.document.id" not in r
    imported = read_traces(run.path, retriever_attribute="gen_ai.data_source.id")
    assert list(imported.runs) == ["bm25"]
    assert imported.summary()["requests"] == 4 and imported.retriever_spans == 4


def test_a_seed_gives_the_same_ids_and_a_failed_run_leaves_the_file_as_it_was(
    openai_server, tmp_path, bm25, pydocs
):
    openai_server.chat.handler = lambda req: STOP
    agent = scripted_agent(openai_server, tmp_path, bm25, pydocs, seed=5)
    first = agent.run(QUESTIONS, tmp_path / "a.jsonl")
    second = agent.run(QUESTIONS, tmp_path / "b.jsonl")
    ids = [[s["spanId"] for s in spans_of(p)] for p in (first.path, second.path)]
    assert ids[0] == ids[1] and len(ids[0]) == 2 * (1 + 2 + 2)
    assert [t.trace_id for t in first.trajectories] == [t.trace_id for t in second.trajectories]
    other = scripted_agent(openai_server, tmp_path, bm25, pydocs, seed=6)
    assert other.run(QUESTIONS, tmp_path / "c.jsonl").trajectories[0].trace_id != ids[0][0]
    before = first.path.read_bytes()
    with pytest.raises(InputError, match="distinct ids"):
        agent.run([QUESTIONS[0], QUESTIONS[0]], first.path)
    broken = FailingRetriever(bm25, QUESTIONS[1].text)
    with pytest.raises(RuntimeError, match="went away"):
        scripted_agent(openai_server, tmp_path, broken, pydocs).run(QUESTIONS, first.path)
    assert first.path.read_bytes() == before  # the first question's trace was not half-written
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != "") == [
        "a.jsonl",
        "b.jsonl",
        "c.jsonl",
    ]


def test_a_failed_call_is_an_error_span_and_the_loop_goes_on(openai_server, tmp_path, bm25, pydocs):
    agent = scripted_agent(openai_server, tmp_path, bm25, pydocs)
    openai_server.stop()  # nothing answers any more
    (t,) = agent.run(QUESTIONS[:1], tmp_path / "agent.jsonl").trajectories
    assert t.calls == 4 and {s.decision.status for s in t.steps[:3]} == {"failed"}
    assert [s.source for s in t.steps] == ["question", "fallback", "fallback", "fallback"]
    for chat in [s for s in spans_of(tmp_path / "agent.jsonl") if operation(s) == "chat"]:
        assert chat["status"]["code"] == 2  # STATUS_CODE_ERROR
        assert chat["attrs"]["error.type"] == "_OTHER"
        assert chat["attrs"]["gen_ai.usage.input_tokens"] == 0


# ----------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, pydocs, bm25):
    from test_local_llm import require_local_llm

    from ragnb.llm.server import LocalLLMServer

    require_local_llm()
    folder = tmp_path_factory.mktemp("agent-local")
    talk = build_conversations(pydocs, 1, seed=0, max_turns=2)  # two questions, one trace each
    questions = talk.questions
    with LocalLLMServer() as server:
        client = ChatClient(**server.client_options(), progress=False)
        agent = SearchAgent(bm25, pydocs.corpus, client, provider="llama_cpp")
        run = agent.run(questions, folder / "agent.jsonl")
        return run, server.model, talk


def test_the_local_model_drives_two_to_four_genai_retrievals_per_question(local_run):
    run, model, talk = local_run
    traces = by_trace(spans_of(run.path))
    assert len(traces) == len(run.trajectories) == 2
    for trajectory, trace in zip(run.trajectories, traces.values(), strict=True):
        searches = [s for s in trace if operation(s) == "retrieval"]
        chats = [s for s in trace if operation(s) == "chat"]
        assert 2 <= len(searches) == trajectory.calls <= 4
        assert len(chats) == (trajectory.calls if trajectory.calls < 4 else 3)
        for search in searches:
            docs = json.loads(search["attrs"]["gen_ai.retrieval.documents"])
            assert 0 < len(docs) <= 10
        for chat in chats:
            a = chat["attrs"]
            assert a["gen_ai.request.model"] == model and a["gen_ai.provider.name"] == "llama_cpp"
            assert a["gen_ai.usage.input_tokens"] > 50 and a["gen_ai.usage.output_tokens"] > 0
            assert a["ragnb.agent.answer_status"] == "ok"  # constrained: every answer parses
            assert a["ragnb.agent.decision"] in ("stop", "search")
    every = spans_of(run.path)
    turns = [s for s in every if "gen_ai.conversation.id" in s["attrs"]]
    assert len(turns) == len(every)  # every span of a conversation carries its id
    assert {s["attrs"]["gen_ai.conversation.id"] for s in turns} == {"1"}
    assert (
        {s["attrs"]["ragnb.query.id"] for s in turns}
        == {q.query_id for q in talk.questions}
        == {"1_1", "1_2"}
    )


def test_the_local_models_file_parses_as_otlp_protobuf(local_run):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from ragnb.io.otlp import hex_ids

    run, _, _ = local_run
    names: list[str] = []
    for line in run.path.read_text(encoding="utf-8").splitlines():
        request = json_format.Parse(
            json.dumps(hex_ids(json.loads(line))), ExportTraceServiceRequest()
        )
        (resource,) = request.resource_spans
        (scope,) = resource.scope_spans
        assert scope.scope.name == "ragnb.studies.agentic"
        assert {len(s.trace_id) for s in scope.spans} == {16}
        assert {len(s.span_id) for s in scope.spans} == {8}
        names += [s.name for s in scope.spans]
    assert names.count("invoke_agent ragnb-search-agent") == 2
    assert pd.Series(names).str.match(r"^(invoke_agent|retrieval bm25|chat )").all()
