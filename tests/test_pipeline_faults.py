"""Faults a new user meets, against the real local OpenAI-compatible server.

A partial outage stops the golden pipeline before S5 and the resume re-sends exactly the failed
judgements; a wrong key stops it at S4 naming the 401; an unreachable URL stops a 1,000-item job
within seconds; an answer without usage is costed from local token counts and flagged; a torn
ledger line and a torn cache value are survived; a SIGKILL mid-request leaves write-ahead rows
that the resume reconciles.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import socket
import time
from collections import Counter

import pytest
from openai_server import ChatAnswer, error
from test_golden import PYDOCS, llm_config, small_beir
from test_judge_crash import CHAT, answer, finish, start

from ragnb.core.cache import Cache
from ragnb.errors import JudgeFailures, JudgeUnavailable
from ragnb.judge import OpenAIJudge
from ragnb.judge.base import grade_requests as to_requests
from ragnb.llm.calls import NAMESPACE
from ragnb.llm.ledger import Ledger, PriceTable, count_message_tokens
from ragnb.studies.golden import build_pipeline

PRICES = PriceTable.from_dict({"models": {"judge-test": {"input": 1.0, "output": 4.0}}})


def passage_of(request) -> str | None:
    """The passage of a grading request (None for other requests)."""
    user = next(m["content"] for m in request.json["messages"] if m["role"] == "user")
    if "Text:\n" not in user:
        return None
    return user.split("Text:\n", 1)[1].rsplit("\n\nAnswer with EXACTLY", 1)[0]


def grade_of(passage: str) -> int:
    return int(hashlib.sha256(passage.encode()).hexdigest(), 16) % 5 + 1


def outage(failing) -> object:
    """Grades by passage hash; a passage for which ``failing(passage)`` holds gets a 503; listwise
    requests get the reversed order."""

    def handler(request):
        messages = request.json["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        if "ranking judge" in system:
            n = int(re.search(r"receive (\d+) passages", system).group(1))
            return ChatAnswer(json.dumps({"order": [chr(65 + i) for i in reversed(range(n))]}))
        passage = passage_of(request)
        if failing(passage):
            return error(503, "The server is overloaded", retry_after_ms=1)
        return ChatAnswer(json.dumps({"grade": grade_of(passage)}))

    return handler


def grade_requests(server, since: int = 0) -> Counter:
    return Counter(
        p for r in server.requests[since:] if r.path == CHAT and (p := passage_of(r)) is not None
    )


def items(n: int) -> list[dict[str, str]]:
    return [
        {
            "query_id": f"q{i // 10}",
            "doc_id": f"d{i}",
            "query": "how do I sort a list?",
            "passage": f"passage number {i}: sorted(iterable) returns a new list",
        }
        for i in range(n)
    ]


def make_judge(server, tmp_path, **kw) -> OpenAIJudge:
    kw.setdefault("cache", Cache(tmp_path / "cache"))
    kw.setdefault("ledger", Ledger(tmp_path / "ledger.jsonl", prices=PRICES))
    kw.setdefault("api_key", "sk-test")
    return OpenAIJudge("judge-test", base_url=server.base_url, progress=False, **kw)


# ----------------------------------------------------------------------------- 1. failed grades


def test_partial_outage_stops_before_s5_and_the_resume_resends_exactly_the_failed(
    openai_server, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-outage")
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=3)
    config = llm_config(data, tmp_path, openai_server, rewrite=False, new_systems=[])
    stages = tmp_path / "run" / "stages"

    def failing(passage: str) -> bool:
        return int(hashlib.sha256(passage.encode()).hexdigest(), 16) % 10 < 4

    openai_server.chat.handler = outage(failing)
    with pytest.raises(JudgeFailures) as info:
        build_pipeline(config).run()
    sent = grade_requests(openai_server)
    failed = {p for p in sent if failing(p)}
    assert failed and len(failed) < len(sent)
    message = str(info.value)
    assert f"{len(failed)} of {len(sent)} judgements failed" in message
    assert "HTTP 503: The server is overloaded" in message
    assert f"only the {len(failed)} failed ones are sent" in message
    assert info.value.failed == len(failed) and info.value.total == len(sent)
    # S4 is not a finished stage; S5 and S6 never ran, and no listwise call was made
    assert not (stages / "s4.done.json").exists() and (stages / "s4.partial.json").exists()
    assert not (stages / "s5.done.json").exists() and not (stages / "s6.done.json").exists()
    assert sum(grade_requests(openai_server).values()) == openai_server.request_count(CHAT)

    # the first screen of the next run says so
    pipeline = build_pipeline(config)
    assert f"**{len(failed)} of {len(sent)} judgements failed**" in pipeline.banner()

    # below a looser threshold the run goes on, and says how many failed
    before = len(openai_server.requests)
    config.max_failed_share = 0.9
    gs = build_pipeline(config).run()
    assert set(grade_requests(openai_server, before)) == failed  # only those were re-sent
    assert (gs.grades["status"] == "failed").sum() == len(failed)
    assert f"**{len(failed)} of {len(sent)} judgements failed**" in gs.summary_markdown()
    assert not (stages / "s4.done.json").exists()

    # the server is healthy again: the resume sends exactly the failed grades, once each
    openai_server.chat.handler = outage(lambda p: False)
    before = len(openai_server.requests)
    config.max_failed_share = 0.0
    gs = build_pipeline(config).run()
    resent = grade_requests(openai_server, before)
    assert set(resent) == failed and max(resent.values()) == 1
    assert gs.grades["valid"].all() and gs.grades["cached"].sum() == len(sent) - len(failed)
    assert (stages / "s4.done.json").exists() and not (stages / "s4.partial.json").exists()
    assert "judgements failed" not in gs.summary_markdown()


def test_a_wrong_key_stops_the_pipeline_at_s4_naming_the_401(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=3)
    config = llm_config(data, tmp_path, openai_server, rewrite=False, new_systems=[])
    openai_server.chat.handler = lambda r: error(401, "Incorrect API key provided: sk-wr****")
    with pytest.raises(JudgeUnavailable) as info:
        build_pipeline(config).run()
    message = str(info.value)
    assert message.startswith("S4 grades stopped")
    assert "HTTP 401: Incorrect API key provided" in message
    assert openai_server.base_url in message and "$OPENAI_API_KEY" in message
    assert "sk-wrong" not in message
    # the breaker stopped the job: at most the first wave of requests (concurrency 8), all
    # grading requests; S5 and S6 sent nothing
    assert 1 <= openai_server.request_count(CHAT) <= 8
    assert sum(grade_requests(openai_server).values()) == openai_server.request_count(CHAT)
    stages = tmp_path / "run" / "stages"
    assert not (stages / "s4.done.json").exists() and not (stages / "s5.done.json").exists()


# ----------------------------------------------------------------------------- 2. the breaker


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_url_stops_a_1000_item_job_within_seconds(tmp_path, capsys):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    ledger = Ledger(tmp_path / "ledger.jsonl", prices=PRICES)
    judge = OpenAIJudge(
        "judge-test",
        base_url=url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        ledger=ledger,
        progress=False,
    )  # default retry settings: 5 attempts, 0.5 s backoff base, concurrency 8
    start_s = time.perf_counter()
    with pytest.raises(JudgeUnavailable) as info:
        judge.grade_many(items(1000))
    seconds = time.perf_counter() - start_s
    with capsys.disabled():
        print(f"\nunreachable URL, 1,000 items: stopped after {seconds:.2f} s")
    assert seconds < 10
    message = str(info.value)
    assert url in message and "5 connection failures in a row" in message
    assert "0 of 1000 calls have an answer" in message
    assert len(info.value.results) == 1000
    assert all(r.status == "failed" for r in info.value.results)
    requests = ledger.frame()
    assert 5 <= len(requests) <= 5 + 8 * 5  # a handful of requests, not 5,000
    assert not ledger.interrupted and not ledger._pending


# ----------------------------------------------------------------------------- 3. usage


def test_an_answer_without_usage_is_costed_from_local_counts_and_flagged(openai_server, tmp_path):
    body = {"choices": [{"message": {"role": "assistant", "content": '{"grade": 3}'}}]}
    openai_server.chat.push(
        body, ChatAnswer('{"grade": 2}', prompt_tokens=100, completion_tokens=4)
    )
    judge = make_judge(openai_server, tmp_path, concurrency=1)
    df = judge.grade_many(items(2))
    assert df["grade"].tolist() == [3, 2]
    led = judge.ledger.frame()
    assert led["usage_estimated"].tolist() == [True, False]
    call = judge._grade_calls(to_requests(items(1)))[0]
    assert led["input_tokens"][0] == count_message_tokens(call.messages, "judge-test")[0]
    assert led["output_tokens"][0] > 0 and df["input_tokens"][0] == led["input_tokens"][0]
    totals = judge.ledger.totals().iloc[0]
    assert totals["estimated"] == 1 and totals["requests"] == 2
    assert totals["estimated_usd"] == pytest.approx(led["cost_usd"][0])
    note = judge.ledger.cost_note()
    assert "estimated from local token counts (1 requests without usage" in note
    assert f"${led['cost_usd'][0]:.4f} of it" in note
    # the flag survives a reload
    assert Ledger.read(tmp_path / "ledger.jsonl")["usage_estimated"].tolist() == [True, False]


# ----------------------------------------------------------------------------- 4-5. torn files


def test_a_torn_ledger_line_is_quarantined_and_the_next_entry_survives(tmp_path, caplog):
    path = tmp_path / "ledger.jsonl"
    led = Ledger(path, prices=PRICES)
    led.record(stage="s", model="judge-test", item="a", key="k1", attempt=1, status="ok")
    led.close()
    with path.open("a", encoding="utf-8") as f:
        f.write('{"ts": "2025-01-01T00:00:00Z", "run_id": "x", "sta')  # a write cut short
    with caplog.at_level(logging.WARNING, logger="ragnb.io.files"):
        again = Ledger(path, prices=PRICES)
    assert again.torn_lines == 1 and len(again.entries) == 1
    assert str(path) in caplog.text and "torn" in caplog.text
    torn = path.with_name("ledger.jsonl.torn")
    assert torn.read_text(encoding="utf-8").startswith('{"ts": "2025-01-01')
    again.record(stage="s", model="judge-test", item="b", key="k2", attempt=1, status="ok")
    again.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["item"] for line in lines] == ["a", "b"]  # nothing swallowed
    assert Ledger(path, prices=PRICES).skipped_lines == 0
    assert again.summary()["torn_lines"] == 1


def test_a_torn_cache_value_is_a_miss_logged_with_the_cache_path(openai_server, tmp_path, caplog):
    openai_server.chat.handler = answer
    judge = make_judge(openai_server, tmp_path, concurrency=2)
    first = judge.grade_many(items(4))
    assert first["valid"].all() and openai_server.request_count(CHAT) == 4
    key = judge._grade_calls(to_requests(items(4)))[2].key
    blob = judge.cache.get(NAMESPACE, key)
    judge.cache.put(NAMESPACE, key, blob[: len(blob) // 2])  # torn
    again = make_judge(openai_server, tmp_path, cache=Cache(tmp_path / "cache"))
    with caplog.at_level(logging.WARNING, logger="ragnb.core.cache"):
        df = again.grade_many(items(4))
    assert df["valid"].all() and df["grade"].tolist() == first["grade"].tolist()
    assert df["cached"].tolist() == [True, True, False, True]
    assert openai_server.request_count(CHAT) == 5  # only the torn one was sent again
    assert str(again.cache.path) in caplog.text and key in caplog.text
    assert again.cache.summary()["namespaces"][NAMESPACE]["corrupt"] == 1
    # the fresh answer overwrote it
    assert json.loads(Cache(tmp_path / "cache").get(NAMESPACE, key))["valid"] is True


# ----------------------------------------------------------------------------- 6. write-ahead


def test_sigkill_mid_request_leaves_write_ahead_rows_that_the_resume_reconciles(
    openai_server, tmp_path
):
    script = tmp_path / "worker.py"
    from test_judge_crash import WORKER, kill_after_requests

    script.write_text(WORKER, encoding="utf-8")
    openai_server.chat.handler = answer
    openai_server.chat.latency = 3.0  # every request is in flight when the kill lands
    cache, ledger = tmp_path / "cache", tmp_path / "ledger.jsonl"
    proc = start(script, openai_server, cache, ledger, tmp_path / "never.json")
    kill_after_requests(proc, openai_server, 4)

    killed = Ledger(ledger, prices=PRICES)
    assert len(killed.entries) == 0 and len(killed.interrupted) == 4
    items_in_flight = {e["item"] for e in killed.interrupted.values()}
    total = killed.summary()["total"]
    assert total["requests"] == 0 and total["in_flight"] == 4 and total["in_flight_usd"] > 0
    assert "up to $" in killed.cost_note() and "4 requests in flight at an interruption" in (
        killed.cost_note()
    )

    openai_server.chat.latency = 0.0
    proc = start(script, openai_server, cache, ledger, tmp_path / "resumed.json")
    finish(proc)
    resumed = Ledger(ledger, prices=PRICES)
    assert not resumed.interrupted
    frame = Ledger.read(ledger)
    reconciled = frame[frame["status"] == "interrupted"]
    assert set(reconciled["item"]) == items_in_flight and reconciled["usage_estimated"].all()
    again = frame[(frame["status"] == "ok") & frame["item"].isin(items_in_flight)]
    assert again["repeated"].all() and len(again) == 4
    t = resumed.summary()["total"]
    assert t["in_flight"] == 0 and t["requests"] == 60 + 4 and t["estimated"] == 4
    assert "up to" not in resumed.cost_note()
