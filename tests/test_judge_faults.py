"""OpenAIJudge under faults, against a real local server through the real ``openai`` client.

Malformed answers ("Score: 4/5", "four", "", "6" on 1-5, permutations missing or repeating an
item), 429 with Retry-After / retry-after-ms, 5xx, truncated bodies, dropped connections, slow
answers (timeouts), fatal 401, and a canary API key that must appear in no file written.
Each case ends in its documented outcome and no item is lost: every input has a result row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
from dataclasses import replace

import pytest
from openai_server import ChatAnswer, Reply, Route, disconnect, error, malformed
from scripted_judging import items, passage_number, scripted_judge

from ragnb.core.cache import Cache
from ragnb.errors import JudgeUnavailable
from ragnb.io.files import write_json
from ragnb.judge import OpenAIJudge
from ragnb.llm.ledger import Ledger, PriceTable, estimate
from ragnb.llm.sender import server_slots
from ragnb.llm.transport import RetryPolicy

CHAT = "/v1/chat/completions"
PRICES = PriceTable.from_dict({"models": {"judge-test": {"input": 1.0, "output": 4.0}}})
FAST = RetryPolicy(backoff_base=0.01, backoff_max=0.05, timeout=5.0)


def grade_of(n: int) -> int:
    return n % 5 + 1


def rubric(request):
    return ChatAnswer(json.dumps({"grade": grade_of(passage_number(request))}))


def make_judge(server, tmp_path, **kwargs) -> OpenAIJudge:
    kwargs.setdefault("concurrency", 1)
    return scripted_judge(server, tmp_path, prices=PRICES, **kwargs)


def chat_times(server) -> list[float]:
    return [r.received_at for r in server.requests if r.path == CHAT]


# ----------------------------------------------------------------------------- invalid answers


def test_invalid_grades_are_recorded_reminded_once_and_never_coerced(openai_server, tmp_path):
    # primer-response asks for one bare digit 1-5
    openai_server.chat.push(
        "Score: 4/5", "4",  # d0: valid after the reminder
        "four", "four",  # d1: invalid twice
        "", "  ",  # d2: empty twice
        "6", "6",  # d3: off the scale twice
        " 2\n",  # d4: valid at once
    )  # fmt: skip
    judge = make_judge(openai_server, tmp_path, prompt="primer-response")
    df = judge.grade_many(items(5, reference="the ideal answer"))
    assert len(df) == 5
    assert df["grade"].tolist()[0] == 4 and df["grade"].tolist()[4] == 2
    assert df["grade"].isna().tolist() == [False, True, True, True, False]
    assert df["status"].tolist() == ["ok", "invalid", "invalid", "invalid", "ok"]
    assert df["reminded"].tolist() == [True, True, True, True, False]
    assert df["attempts"].tolist() == [2, 2, 2, 2, 1]
    assert df["first_raw"].tolist() == ["Score: 4/5", "four", "", "6", None]
    assert df["raw"].tolist() == ["4", "four", "  ", "6", " 2\n"]
    assert "not a bare integer: 'four' (after a reminder" in df["reason"][1]
    assert df["reason"][2].startswith("empty answer (after a reminder")
    assert df["reason"][3].startswith("6 is off the scale 1-5 (after a reminder")
    # the reminder: the conversation so far, then the required format
    reminder = openai_server.bodies(CHAT)[1]["messages"]
    assert [m["role"] for m in reminder] == ["system", "user", "assistant", "user"]
    assert reminder[2]["content"] == "Score: 4/5"
    assert "only a single digit (1, 2, 3, 4, or 5)" in reminder[3]["content"]
    assert openai_server.request_count(CHAT) == 9

    # invalid answers are final: a rerun serves them from the cache ...
    again = make_judge(openai_server, tmp_path, prompt="primer-response").grade_many(
        items(5, reference="the ideal answer")
    )
    assert again["cached"].all() and again["status"].tolist() == df["status"].tolist()
    assert openai_server.request_count(CHAT) == 9
    # ... unless retry_invalid
    openai_server.chat.push("3", "3", "3")
    retried = make_judge(
        openai_server, tmp_path, prompt="primer-response", retry_invalid=True
    ).grade_many(items(5, reference="the ideal answer"))
    assert retried["grade"].tolist() == [4, 3, 3, 3, 2]
    assert retried["cached"].tolist() == [True, False, False, False, True]
    assert not retried["repeated"].any()


def test_without_reminder_an_invalid_answer_is_final_at_once(openai_server, tmp_path):
    openai_server.chat.push('{"grade": "4"}')
    judge = make_judge(openai_server, tmp_path, reminder=False)
    (res,) = judge.grade("q", ["passage number 1"])
    assert not res.valid and not res.reminded and res.attempts == 1
    assert res.raw == '{"grade": "4"}' and "not a JSON integer" in res.reason
    assert openai_server.request_count(CHAT) == 1


def test_permutation_missing_or_repeating_an_item_is_invalid(openai_server, tmp_path):
    openai_server.chat.push(
        '{"order": ["B", "A"]}', '{"order": ["B", "A", "B"]}',  # batch 0: invalid twice
        '{"order": ["C", "A"]}', '{"order": ["C", "A", "B"]}',  # batch 1: fixed by the reminder
    )  # fmt: skip
    judge = make_judge(openai_server, tmp_path)
    batch = {"doc_ids": ["x", "y", "z"], "passages": ["one", "two", "three"]}
    df = judge.rank_many(
        [{"query_id": "q1", "query": "q1?", **batch}, {"query_id": "q2", "query": "q2?", **batch}]
    )
    first, second = df.to_dict(orient="records")
    assert not first["valid"] and first["status"] == "invalid" and first["order"] is None
    assert first["permutation"] is None and first["doc_ids"] == ("x", "y", "z")
    assert first["first_raw"] == '{"order": ["B", "A"]}'
    assert first["raw"] == '{"order": ["B", "A", "B"]}'
    assert "repeated label(s) ['B']" in first["reason"]
    assert "missing label(s) ['C']" in first["reason"]  # the first answer's problem
    assert second["valid"] and second["order"] == ("z", "x", "y") and second["reminded"]
    reminder = openai_server.bodies(CHAT)[1]["messages"][-1]["content"]
    assert "each of the labels A, B, C exactly once" in reminder


# ----------------------------------------------------------------------------- HTTP faults


def test_429_retry_after_is_honoured(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.push(error(429, retry_after=0.4))
    judge = make_judge(openai_server, tmp_path)
    (res,) = judge.grade("q", ["passage number 2"])
    assert res.valid and res.grade == 3 and res.attempts == 2
    t = chat_times(openai_server)
    assert 0.4 <= t[1] - t[0] < 0.4 + 0.3
    led = judge.ledger.frame()
    assert led["status"].tolist() == ["http_429", "ok"]
    assert led["attempt"].tolist() == [1, 2]
    assert led["cost_usd"].iloc[0] == 0.0 and led["input_tokens"].iloc[0] == 0


def test_retry_after_ms_is_preferred(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.push(error(503, retry_after_ms=150, retry_after=5))
    judge = make_judge(openai_server, tmp_path)
    assert judge.grade("q", ["passage number 0"])[0].grade == 1
    t = chat_times(openai_server)
    assert 0.15 <= t[1] - t[0] < 1.0


def test_a_429_pauses_every_worker(openai_server, tmp_path):
    """While one request waits out a 429's Retry-After, the others do not hammer the server."""
    openai_server.chat.handler = rubric
    # the first request is rate limited; the second is answered after the 429 arrived
    openai_server.chat.push(error(429, retry_after=0.5), Reply(delay=0.2))
    judge = make_judge(openai_server, tmp_path, concurrency=2)
    df = judge.grade_many(items(4))
    assert df["valid"].all() and df["grade"].tolist() == [1, 2, 3, 4]
    times = chat_times(openai_server)
    first = min(times)
    # two requests went out at once; every later one waited for the 429's half second
    later = sorted(times)[2:]
    assert len(later) == 3 and all(t - first >= 0.5 for t in later)


def test_5xx_is_retried_with_backoff(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.fail(500, times=2)
    judge = make_judge(
        openai_server, tmp_path, retry=replace(FAST, backoff_base=0.1, backoff_max=1.0)
    )
    (res,) = judge.grade("q", ["passage number 4"])
    assert res.valid and res.grade == 5 and res.attempts == 3
    t = chat_times(openai_server)
    # jittered exponential backoff: 0.05-0.1 s, then 0.1-0.2 s
    assert 0.05 <= t[1] - t[0] < 0.5 and 0.1 <= t[2] - t[1] < 0.6
    assert judge.ledger.frame()["status"].tolist() == ["http_500", "http_500", "ok"]


def test_each_outcome_names_its_request_as_its_pending_line_does(openai_server, tmp_path):
    # item d0: a 500 then an invalid answer then the reminder's valid one; a second run: a hit
    openai_server.chat.fail(500, times=1)
    openai_server.chat.push("four", "4")
    make_judge(openai_server, tmp_path, prompt="primer-response", stage="s4").grade_many(
        items(1, reference="r")
    )
    make_judge(openai_server, tmp_path, prompt="primer-response", stage="s4").grade_many(
        items(1, reference="r")
    )
    lines = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    # each request: its pending line, its sent mark as it leaves, its outcome
    statuses = ["pending", "sent", "http_500", "pending", "sent", "ok", "pending", "sent", "ok"]
    assert [e["status"] for e in lines] == [*statuses, "cached"]
    who = ("stage", "judge_id", "model", "kind", "item", "key", "attempt", "repeated", "run_id")
    pending = {e["request_id"]: e for e in lines if e["status"] == "pending"}
    marks = [e for e in lines if e["status"] == "sent"]
    outcomes = [e for e in lines if e["status"] not in ("pending", "sent", "cached")]
    assert len(pending) == 3 and sorted(e["request_id"] for e in outcomes) == sorted(pending)
    assert sorted(e["request_id"] for e in marks) == sorted(pending)
    for e in outcomes + marks:
        assert {k: e[k] for k in who} == {k: pending[e["request_id"]][k] for k in who}
    assert all(e["sent"] for e in outcomes + marks) and not any(pending[r]["sent"] for r in pending)
    assert [e["attempt"] for e in outcomes] == [1, 2, 3]
    hit = lines[-1]
    assert (hit["attempt"], hit["request_id"], hit["cached"]) == (0, None, True)
    assert {k: hit[k] for k in who[:6]} == {k: outcomes[0][k] for k in who[:6]}
    assert (hit["stage"], hit["kind"], hit["item"]) == ("s4", "grade", "q1/d0")


def test_attempts_are_capped_and_the_failure_is_reported(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.fail(500, times=3)
    judge = make_judge(openai_server, tmp_path, retry=replace(FAST, max_attempts=3))
    df = judge.grade_many(items(2))
    assert df["status"].tolist() == ["failed", "ok"]
    failed = df.iloc[0]
    assert failed["raw"] is None and pd_na(failed["grade"]) and failed["attempts"] == 3
    assert failed["reason"] == "HTTP 500: scripted error 500 (request 3 of at most 3)"
    assert openai_server.request_count(CHAT) == 4
    # a failure is not cached: the next run sends it again, flagged as repeated
    again = make_judge(openai_server, tmp_path).grade_many(items(2))
    assert again["valid"].all() and again["repeated"].tolist() == [True, False]
    assert again["cached"].tolist() == [False, True]
    led = Ledger.read(tmp_path / "ledger.jsonl")
    assert led["repeated"].sum() == 1 and led.loc[led["repeated"], "item"].item() == "q1/d0"


def pd_na(v) -> bool:
    import pandas as pd

    return v is None or v is pd.NA


def test_no_retry_when_the_server_says_so(openai_server, tmp_path):
    openai_server.chat.fail(503, should_retry=False)
    (res,) = make_judge(openai_server, tmp_path).grade("q", ["passage number 1"])
    assert res.status == "failed" and res.attempts == 1 and "HTTP 503" in res.reason


def test_retry_after_beyond_the_limit_fails_without_waiting(openai_server, tmp_path):
    openai_server.chat.fail(429, retry_after=30)
    judge = make_judge(openai_server, tmp_path, retry=replace(FAST, max_retry_wait=1.0))
    (res,) = judge.grade("q", ["passage number 1"])
    assert res.status == "failed" and res.attempts == 1
    assert "asked to wait 30 s, more than max_retry_wait=1 s" in res.reason


def test_truncated_body_and_dropped_connection_are_retried(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.push(malformed(), disconnect(), malformed('{"choices": []}'))
    judge = make_judge(openai_server, tmp_path)
    (res,) = judge.grade("q", ["passage number 3"])
    assert res.valid and res.grade == 4 and res.attempts == 4
    statuses = judge.ledger.frame()["status"].tolist()
    assert statuses == ["malformed", "connection", "malformed", "ok"]


def test_slow_answers_time_out_and_are_retried(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.push(Reply(delay=2.0))
    judge = make_judge(openai_server, tmp_path, retry=replace(FAST, timeout=0.3))
    (res,) = judge.grade("q", ["passage number 1"])
    assert res.valid and res.grade == 2 and res.attempts == 2
    assert judge.ledger.frame()["status"].tolist() == ["timeout", "ok"]
    # always too slow: failed, with the reason
    openai_server.chat.push(Reply(delay=2.0), times=2)
    judge = make_judge(openai_server, tmp_path, retry=replace(FAST, timeout=0.3, max_attempts=2))
    (res,) = judge.grade("q", ["passage number 2"])
    assert (
        res.status == "failed" and res.reason == "no answer within 0.3 s (request 2 of at most 2)"
    )


def test_authentication_error_stops_the_job(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.fail(401)
    with pytest.raises(JudgeUnavailable, match="HTTP 401") as info:
        make_judge(openai_server, tmp_path).grade_many(items(5))
    results = info.value.results
    assert len(results) == 5 and all(r.status == "failed" for r in results)
    assert results[0].reason.startswith("HTTP 401")
    assert all(r.reason.startswith("not sent: the job stopped after HTTP 401") for r in results[1:])
    assert openai_server.request_count(CHAT) == 1
    assert openai_server.base_url in str(info.value) and "only the 5 failed" in str(info.value)


def test_no_item_is_lost_in_a_storm_of_faults(openai_server, tmp_path):
    """40 items at concurrency 4; every 3rd request fails one way or another, at most three
    times per item (the schedule is global, so without the cap the retries of one item can
    fall on every 3rd request when the workers wake together after a 429 pause)."""
    counter = iter(range(10_000))
    lock = threading.Lock()
    faulted: dict[int, int] = {}
    faults = [
        error(500),
        error(429, retry_after_ms=20),
        malformed(),
        disconnect(),
        "Score: 4/5",
        Reply(delay=1.0),  # beyond the judge's timeout
    ]

    def handler(request):
        item = passage_number(request)
        with lock:
            k = next(counter)
            fault = k % 3 == 0 and faulted.get(item, 0) < 3
            fault = fault and not request.json["messages"][-1]["content"].startswith("Your answer")
            if fault:
                faulted[item] = faulted.get(item, 0) + 1
        return faults[(k // 3) % len(faults)] if fault else rubric(request)

    openai_server.chat.handler = handler
    judge = make_judge(
        openai_server, tmp_path, concurrency=4, retry=replace(FAST, timeout=0.5, max_attempts=6)
    )
    df = judge.grade_many(items(40))
    assert len(df) == 40 and df["doc_id"].tolist() == [f"d{i}" for i in range(40)]
    assert set(df["status"]) <= {"ok", "invalid", "failed"}
    ok = df[df["valid"]]
    assert ok["grade"].tolist() == [grade_of(int(d[1:])) for d in ok["doc_id"]]
    # six attempts get through three faults; the reminder fixes "Score: 4/5" (a failure names
    # why)
    lost = df.loc[~df["valid"], ["doc_id", "status", "attempts", "reason"]]
    assert len(ok) == 40, lost.to_dict("records")
    # every request is in the ledger exactly once, and nothing else
    led = judge.ledger.frame()
    assert len(led) == openai_server.request_count(CHAT) == df["attempts"].sum()


# ----------------------------------------------------------------------------- the server's slots


def test_concurrency_server_sends_as_many_requests_at_once_as_the_server_reports(
    openai_server, tmp_path
):
    """llama.cpp's GET /props says 3 slots: three requests leave at once, the fourth only after
    an answer (each takes 0.5 s)."""
    props = Route("/props", lambda request: {"total_slots": 3, "model_path": "m.gguf"}, "GET")
    openai_server.routes["/props"] = props
    openai_server.chat.handler = lambda request: replace(rubric(request), delay=0.5)
    judge = make_judge(openai_server, tmp_path, concurrency="server")
    assert judge.describe()["concurrency"] == "server"
    df = judge.grade_many(items(6))
    assert df["valid"].all() and len(df) == 6
    assert judge.client.sender.sent_concurrency == 3
    first = [r for r in openai_server.requests if r.path in ("/props", CHAT)][0]
    assert first.path == "/props" and first.method == "GET"
    assert first.api_key_sha256 == hashlib.sha256(b"sk-test").hexdigest()  # sent as Bearer
    times = sorted(chat_times(openai_server))
    assert times[2] - times[0] < 0.5 <= times[3] - times[0]


@pytest.mark.parametrize(
    "answer", [None, {"total_slots": 0}, {"total_slots": "4"}, {"total_slots": True}, [4]]
)
def test_a_server_that_does_not_report_its_slots_gets_one_request_at_a_time(
    openai_server, tmp_path, caplog, answer
):
    if answer is not None:  # else 404: no such route, as on OpenAI's API
        openai_server.routes["/props"] = Route("/props", lambda request: answer, "GET")
    assert server_slots(openai_server.base_url) is None
    openai_server.chat.handler = rubric
    judge = make_judge(openai_server, tmp_path, concurrency="server")
    with caplog.at_level(logging.WARNING, logger="ragnb.llm"):
        assert judge.grade_many(items(2))["valid"].all()
    assert judge.client.sender.sent_concurrency == 1
    assert "does not report its slots (GET /props" in caplog.text


def test_server_slots_needs_a_url_and_concurrency_takes_no_other_word(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert server_slots(None) is None
    assert server_slots("http://127.0.0.1:9/v1", timeout=1.0) is None  # nothing listens there
    with pytest.raises(ValueError, match=r"concurrency must be an integer >= 1, got 'auto'"):
        OpenAIJudge("judge-test", concurrency="auto", cache=Cache(tmp_path / "c"))


# ----------------------------------------------------------------------------- secrets


def test_canary_api_key_appears_in_no_file_log_or_frame(openai_server, tmp_path, monkeypatch):
    canary = "sk-canary-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    log_path = tmp_path / "logs" / "ragnb.log"
    log_path.parent.mkdir()
    handler = logging.FileHandler(log_path, encoding="utf-8")
    logger = logging.getLogger("ragnb")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    openai_server.chat.handler = rubric
    # a server that echoes the key in an error message, a rate limit, an invalid answer
    openai_server.chat.push(
        error(500, f"invalid api key {canary}", should_retry=False),
        error(429, retry_after_ms=10),
        "Score: 4/5",
    )
    try:
        ledger = Ledger(tmp_path / "run" / "ledger.jsonl", prices=PRICES)
        judge = make_judge(
            openai_server,
            tmp_path / "run",
            api_key=canary,
            ledger=ledger,
            retry=replace(FAST, max_attempts=2),
        )
        est = estimate(judge, items(6))
        grades = judge.grade_many(items(6))
        ranks = judge.rank_many(
            [{"query_id": "q1", "query": "q", "doc_ids": ["a", "b"], "passages": ["x", "y"]}]
        )
        env_judge = OpenAIJudge(  # the key only from the environment
            "judge-test",
            base_url=openai_server.base_url,
            cache=Cache(tmp_path / "run" / "cache2"),
            ledger=ledger,
            progress=False,
        )
        env_judge.grade_many(items(2))
        write_json(
            {
                "judge": judge.describe(),
                "env_judge": env_judge.describe(),
                "ledger": ledger.summary(),
                "cache": judge.cache.summary(),
                "estimate": est.summary(),
                "grades": grades.astype(str).to_dict(orient="records"),
                "ranks": ranks.astype(str).to_dict(orient="records"),
            },
            tmp_path / "run" / "manifest.json",
        )
        judge.cache.close()
        ledger.close()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        handler.close()

    assert grades["reason"][0] == "HTTP 500: invalid api key [REDACTED] (request 1 of at most 2)"
    for frame in (grades, ranks):
        assert canary not in frame.astype(str).to_string()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"ledger.jsonl", "cache.sqlite", "manifest.json", "ragnb.log"}
    needle = canary.encode()
    for path in files:
        assert needle not in path.read_bytes(), path
    assert log_path.stat().st_size > 0  # the log did record the retries
    digest = hashlib.sha256(canary.encode()).hexdigest()
    for r in openai_server.requests:
        assert r.headers["authorization"] == "[REDACTED]"
        assert r.api_key_sha256 == digest


# ----------------------------------------------------------------------------- rejected options

# what llama-cpp-python 0.3.36's server answers to OpenAI's response_format (measured)
LLAMA_CPP_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


def test_a_500_to_constrained_output_stops_the_job_naming_the_option(openai_server, tmp_path):
    def handler(request):
        if "response_format" in request.json:
            return error(500, LLAMA_CPP_500)
        return rubric(request)

    openai_server.chat.handler = handler
    judge = make_judge(openai_server, tmp_path, constrained="json_schema", concurrency=2)
    with pytest.raises(JudgeUnavailable) as info:
        judge.grade_many(items(6))
    message = str(info.value)
    assert "constrained='json_schema' (sent as response_format)" in message
    assert "constrained=None" in message and "constrained='json_object_schema'" in message
    assert "HTTP 500" in message and "Change the option" in message
    results = info.value.results
    assert len(results) == 6 and all(r.status == "failed" for r in results)
    # not retried: at most one request per worker, not five per item
    assert openai_server.request_count(CHAT) <= 2
    statuses = Ledger(tmp_path / "ledger.jsonl").frame()["status"].tolist()
    assert "http_500" in statuses and "ok" not in statuses
    # the option off: the same server answers, and nothing was cached under the other key
    df = make_judge(openai_server, tmp_path).grade_many(items(6))
    assert df["valid"].all() and not df["cached"].any()


def test_a_400_to_logprobs_names_the_logprobs_option(openai_server, tmp_path):
    openai_server.chat.handler = lambda request: error(
        400, "logprobs is not supported for models created with logits_all=False"
    )
    judge = make_judge(openai_server, tmp_path, logprobs=5)
    with pytest.raises(JudgeUnavailable, match=r"logprobs=5 \(sent as logprobs/top_logprobs\)"):
        judge.grade_many(items(3))
    assert openai_server.request_count(CHAT) == 1


def test_a_500_that_names_no_option_is_retried_as_usual(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.chat.fail(500, times=2)
    judge = make_judge(openai_server, tmp_path, constrained="json_object_schema")
    df = judge.grade_many(items(1))
    assert df["valid"].all() and df["attempts"].tolist() == [3]
