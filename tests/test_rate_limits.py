"""Rate limits on the one transport: the per-endpoint token buckets (rpm, tpm), the server's
``x-ratelimit-*`` headers, AIMD after a 429, and the waits in the ledger.

The arithmetic is checked on a hand-driven clock; the behaviour against the scripted server
(``openai_server.RateLimited``: a server that answers 429 beyond N requests per window) through
the real ``openai`` client, with rates scaled up so each test takes a few seconds.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace

import pandas as pd
import pytest
from openai_server import ChatAnswer, RateLimited, openai_duration, rerank_answer
from scripted_judging import items, passage_number, scripted_judge

from ragnb.core.cache import Cache
from ragnb.embed import OpenAIEmbedder
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge
from ragnb.llm import ChatClient
from ragnb.llm.ledger import Ledger, PriceTable, count_message_tokens
from ragnb.llm.transport import RateLimiter, RetryPolicy, rate_limiter, reset_seconds
from ragnb.rerank import HTTPReranker

CHAT = "/v1/chat/completions"
PRICES = PriceTable.from_dict({"models": {"judge-test": {"input": 1.0, "output": 4.0}}})
FAST = RetryPolicy(backoff_base=0.01, backoff_max=0.05, timeout=5.0)


@pytest.fixture(scope="module", autouse=True)
def _warm_tokenizer() -> None:
    """Load the BPE tokenizer (seconds, once per process) before any job is timed, so a lower
    bound on a job's time is met by its waits, not by the load."""
    count_message_tokens([{"role": "user", "content": "warm"}], "judge-test")


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def rubric(request):
    return ChatAnswer(json.dumps({"grade": passage_number(request) % 5 + 1}))


def make_judge(server, tmp_path, **kwargs) -> OpenAIJudge:
    kwargs.setdefault("concurrency", 8)
    return scripted_judge(server, tmp_path, prices=PRICES, **kwargs)


def chat_times(server) -> list[float]:
    return [r.received_at for r in server.requests if r.path == CHAT]


def assert_every_item_answered(df, n: int) -> None:
    assert len(df) == n
    assert df["status"].tolist() == ["ok"] * n
    expected = [int(d[1:]) % 5 + 1 for d in df["doc_id"]]
    assert df["grade"].astype(int).tolist() == expected


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360.0),
        ("1s", 1.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5s", 0.5),
        ("2", 2.0),
        ("17.25", 17.25),
    ],
)
def test_reset_durations_in_openai_format(text, seconds):
    assert reset_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "soon", "5 s", "1x", "-3", "s", "1s2"])
def test_unreadable_reset_is_none(text):
    assert reset_seconds(text) is None


@pytest.mark.parametrize("seconds", [0.02, 0.999, 1.0, 6.5, 60.0, 360.0, 3723.5])
def test_the_scripted_servers_durations_read_back(seconds):
    assert reset_seconds(openai_duration(seconds)) == pytest.approx(seconds, abs=1e-3)


@pytest.mark.parametrize(
    ("rpm", "tpm", "message"),
    [
        (0, None, "rpm must be None or a number of requests per minute > 0, got 0"),
        (-5, None, "rpm must be"),
        (True, None, "rpm must be"),
        ("60", None, "rpm must be"),
        (None, float("inf"), "tpm must be None or a number of tokens per minute > 0"),
        (None, float("nan"), "tpm must be"),
    ],
)
def test_bad_limits_are_refused_by_every_client(rpm, tpm, message, tmp_path):
    with pytest.raises(InputError, match=message):
        RateLimiter(rpm, tpm)
    with pytest.raises(InputError, match=message):
        ChatClient("m", base_url="http://127.0.0.1:9/v1", rpm=rpm, tpm=tpm, cache_dir=tmp_path)
    with pytest.raises(InputError, match=message):
        HTTPReranker("r", base_url="http://127.0.0.1:9/v1", rpm=rpm, tpm=tpm, cache=False)
    with pytest.raises(InputError, match=message):
        OpenAIEmbedder("e", base_url="http://127.0.0.1:9/v1", rpm=rpm, tpm=tpm)


# ----------------------------------------------------------------------------- the arithmetic


def test_request_bucket_spends_a_burst_then_the_rate():
    clock = Clock()
    lim = RateLimiter(rpm=600, clock=clock)  # 10 per second, a burst of 10
    waits = [lim.reserve() for _ in range(30)]
    assert waits[:10] == [0.0] * 10
    # request i (0-based) waits until the bucket has refilled i - 9 requests at 10 per second
    assert waits[10:] == pytest.approx([(i - 9) / 10 for i in range(10, 30)])
    assert lim.waited_s == pytest.approx(sum(waits))
    clock.t = 10.0  # the debt (2 s) is repaid and the bucket full again, but no fuller
    assert [lim.reserve() for _ in range(11)][-2:] == [0.0, pytest.approx(0.1)]


def test_token_bucket_charges_the_prompt_tokens():
    clock = Clock()
    lim = RateLimiter(tpm=6000, clock=clock)  # 100 tokens per second, a burst of 100
    assert lim.reserve(60) == 0.0
    assert lim.reserve(60) == pytest.approx(0.2)  # 20 tokens short at 100 per second
    assert lim.reserve(1000) == pytest.approx(10.2)  # a request larger than the burst waits
    clock.t = 10.2
    assert lim.reserve(0) == pytest.approx(0.0, abs=1e-9)


def test_both_budgets_the_longer_wait_wins():
    clock = Clock()
    lim = RateLimiter(rpm=60, tpm=600, clock=clock)  # 1 request/s; 10 tokens/s, burst 10
    assert lim.reserve(10) == 0.0
    assert lim.reserve(5) == pytest.approx(1.0)  # requests: 1 s; tokens: 0.5 s
    assert lim.reserve(30) == pytest.approx(3.5)  # tokens: 35 short; requests: 2 s


def test_server_headers_hold_requests_until_the_reset():
    clock = Clock()
    lim = RateLimiter(clock=clock)  # no budget of its own: only the server's word
    assert lim.reserve() == 0.0
    lim.observe({"X-RateLimit-Remaining-Requests": "2", "x-ratelimit-reset-requests": "1s"})
    assert lim.reserve() == 0.0
    lim.observe({"X-RateLimit-Remaining-Requests": "0", "x-ratelimit-reset-requests": "1s"})
    clock.t = 0.25
    assert [lim.reserve() for _ in range(2)] == [pytest.approx(0.75)] * 2
    clock.t = 1.5  # the window has passed: nothing is known, nothing waits
    assert lim.reserve() == 0.0
    lim.observe({"x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "6m0s"})
    assert lim.reserve(50) == 0.0
    assert lim.reserve(120) == pytest.approx(360.0)  # 100 left, 120 needed
    lim.observe({"x-ratelimit-remaining-requests": "many", "x-ratelimit-reset-requests": "?"})
    lim.observe({"retry-after": "3"})  # not a rate-limit header: nothing changes
    clock.t = 400.0
    assert lim.reserve(80) == 0.0


def test_aimd_halves_on_429_and_climbs_back_by_steps():
    clock = Clock()
    lim = RateLimiter(rpm=1200, tpm=60_000, clock=clock)
    lim.throttled()
    assert (lim.allowed_rpm, lim.allowed_tpm) == (600.0, 30_000.0)
    assert lim.reserve() > 0  # no burst right after a 429
    lim.throttled()
    assert lim.allowed_rpm == 300.0 and lim.throttled_count == 2
    for _ in range(10):
        lim.answered()
    assert lim.allowed_rpm == pytest.approx(300.0 + 10 * 0.02 * 1200)  # additive steps
    for _ in range(100):
        lim.answered()
    assert lim.allowed_rpm == 1200.0  # never above the limit
    for _ in range(20):
        lim.throttled()
    assert lim.allowed_rpm == pytest.approx(1200 / 64)  # never below the floor
    lim.configure(90, None)
    assert (lim.rpm, lim.allowed_rpm, lim.tpm) == (90.0, 90.0, None)


def test_threads_share_one_schedule():
    clock = Clock()
    lim = RateLimiter(rpm=600, clock=clock)
    waits: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            w = lim.reserve()
            with lock:
                waits.append(w)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 40 reservations at one instant: each slot of the schedule handed out once
    assert sorted(waits) == pytest.approx([max(0, i - 9) / 10 for i in range(40)])


def test_one_limiter_per_endpoint_and_model():
    url = "http://user:secret@127.0.0.1:1/v1"
    a = rate_limiter(url, "m-shared", rpm=60)
    b = rate_limiter("http://127.0.0.1:1/v1/", "m-shared")  # same endpoint: shared
    assert a is b and b.rpm == 60.0
    assert rate_limiter(url, "other-model") is not a
    assert "secret" not in a.name
    rate_limiter(url, "m-shared", tpm=1000)  # a client that gives limits sets both
    assert (a.rpm, a.tpm) == (None, 1000.0)


# ----------------------------------------------------------------------------- against a server


def test_rpm_spaces_requests_and_the_server_sees_no_429(openai_server, tmp_path):
    # 30 judgements at rpm=600 (10 per second, a burst of 10) take at least 2 s; the server
    # admits 15 per second (a margin for requests that leave the client bunched), so a client
    # keeping its budget never meets a 429
    limited = RateLimited(rubric, requests=15, window=1.0)
    openai_server.chat.handler = limited
    judge = make_judge(openai_server, tmp_path, rpm=600)
    start = time.monotonic()
    df = judge.grade_many(items(30))
    elapsed = time.monotonic() - start
    assert_every_item_answered(df, 30)
    assert len(chat_times(openai_server)) == 30 and limited.refused == 0
    assert elapsed >= (30 - 10) / 10
    led = judge.ledger.frame()
    assert set(led["status"]) == {"ok"}
    assert led["wait_s"].sum() > 2.0  # the waits, summed over requests
    assert judge.ledger.totals()["wait_s"].iloc[0] == pytest.approx(led["wait_s"].sum())
    assert "s waited for rate limits" in judge.ledger.cost_note()
    # the same job without a budget meets the server's limit (the check above can fail)
    openai_server.chat.handler = control = RateLimited(rubric, requests=15, window=1.0)
    fresh = make_judge(openai_server, tmp_path, cache=Cache(tmp_path / "c2"), ledger=None)
    fresh.client.sender.limiter.configure(None, None)  # the endpoint's budget, lifted
    assert_every_item_answered(fresh.grade_many(items(30)), 30)
    assert control.refused > 0


def test_two_judges_in_two_threads_share_the_endpoints_budget(openai_server, tmp_path):
    # 2 x 15 judgements at rpm=600 (a burst of 10, then 10 per second): shared, the 30 requests
    # take at least 2 s; two budgets would let them through in 0.5 s
    openai_server.chat.handler = rubric
    judges = [
        make_judge(openai_server, tmp_path / f"j{k}", rpm=600, concurrency=4) for k in range(2)
    ]
    assert judges[0].client.sender.limiter is judges[1].client.sender.limiter
    frames: dict[int, object] = {}

    def grade(k: int) -> None:
        frames[k] = judges[k].grade_many(items(15, query=f"thread {k}"))

    threads = [threading.Thread(target=grade, args=(k,)) for k in range(2)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    for k in range(2):
        assert_every_item_answered(frames[k], 15)
    assert openai_server.request_count(CHAT) == 30
    assert elapsed >= (30 - 10) / 10


def test_tpm_spaces_requests_by_their_prompt_tokens(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    planned = make_judge(openai_server, tmp_path).plan(items(5))
    prompt = {count_message_tokens(p.messages, "judge-test")[0] for p in planned}
    assert len(prompt) == 1  # five prompts of one length
    (p,) = prompt
    # a budget of two prompts per second (a burst of two): the fifth waits (5 - 2) / 2 s
    judge = make_judge(openai_server, tmp_path, tpm=60 * 2 * p)
    start = time.monotonic()
    df = judge.grade_many(items(5))
    elapsed = time.monotonic() - start
    assert_every_item_answered(df, 5)
    assert elapsed >= (5 - 2) / 2
    lines = [json.loads(x) for x in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert {x["input_tokens"] for x in lines if x["status"] == "pending"} == {p}


def test_server_limit_every_item_answered_and_waits_in_the_ledger(openai_server, tmp_path):
    # a server admitting 5 requests per second, telling its remaining budget on every answer;
    # a job of 20 items (four windows' worth) with no budget of its own
    limited = RateLimited(rubric, requests=5, window=1.0)
    openai_server.chat.handler = limited
    judge = make_judge(openai_server, tmp_path, concurrency=4)
    df = judge.grade_many(items(20))
    assert_every_item_answered(df, 20)
    assert limited.admitted == 20
    led = Ledger.read(tmp_path / "ledger.jsonl")
    ok = led[led["status"] == "ok"]
    assert sorted(ok["item"]) == sorted(f"q1/d{i}" for i in range(20))  # one answer each
    assert led["wait_s"].sum() >= 1.0  # the headers made requests wait for the reset
    assert (led["wait_s"] >= 0).all()


def test_429_storm_is_retried_never_recorded_done_and_aimd_lowers_the_rate(openai_server, tmp_path):
    # the server says nothing until it refuses (no headers on answers); the client's budget
    # is four times the server's limit, so 429s come, each retried after Retry-After
    limited = RateLimited(rubric, requests=5, window=1.0, advertise=False)
    openai_server.chat.handler = limited
    judge = make_judge(openai_server, tmp_path, concurrency=4, rpm=1200)
    df = judge.grade_many(items(20))
    assert_every_item_answered(df, 20)
    assert limited.refused > 0 and limited.admitted == 20
    limiter = judge.client.sender.limiter
    assert limiter.throttled_count == limited.refused
    assert limiter.allowed_rpm < 1200
    led = Ledger.read(tmp_path / "ledger.jsonl")
    refused = led[led["status"] == "http_429"]
    assert len(refused) == limited.refused
    assert (refused["output_tokens"] == 0).all()
    assert len(led[led["status"] == "ok"]) == 20  # a 429 is never an answer
    assert led["wait_s"].sum() > 0
    # the rerun: everything cached, nothing sent, nothing waits
    before = openai_server.request_count(CHAT)
    again = make_judge(openai_server, tmp_path, concurrency=4, rpm=1200).grade_many(items(20))
    assert again["cached"].all() and openai_server.request_count(CHAT) == before


def test_a_rate_limit_does_not_spend_the_attempts_a_spent_quota_does(openai_server, tmp_path):
    # 2 requests per second, 6 workers, 2 attempts per message: most items meet more 429s than
    # attempts, yet each is answered (others are answered meanwhile: a rate limit)
    limited = RateLimited(rubric, requests=2, window=0.5, advertise=False)
    openai_server.chat.handler = limited
    judge = make_judge(openai_server, tmp_path, concurrency=6, retry=replace(FAST, max_attempts=2))
    df = judge.grade_many(items(10))
    assert_every_item_answered(df, 10)
    assert limited.refused > 10 and (df["attempts"] > 2).any()
    # a 429 on every request (a spent quota: nothing is answered) ends the call after its
    # attempts, recorded failed, never done
    openai_server.chat.handler = rubric
    openai_server.chat.fail(429, times=3, retry_after_ms=1)
    quota = make_judge(openai_server, tmp_path / "q", retry=replace(FAST, max_attempts=3))
    (res,) = quota.grade("q", ["passage number 1"])
    assert res.status == "failed" and res.attempts == 3 and "HTTP 429" in res.reason
    led = quota.ledger.frame()
    assert led["status"].tolist() == ["http_429"] * 3


def test_limits_are_described_and_not_in_the_cache_key(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    limited = make_judge(openai_server, tmp_path, rpm=90, tpm=20_000)
    assert (limited.describe()["rpm"], limited.describe()["tpm"]) == (90.0, 20_000.0)
    assert (limited.client.describe()["rpm"], limited.client.describe()["tpm"]) == (90, 20_000)
    limited.grade_many(items(1))
    plain = make_judge(openai_server, tmp_path)  # the same endpoint: its budget stays
    assert plain.describe()["rpm"] == 90.0
    # a rate does not change an answer: the answer cached under rpm serves the client without
    (planned,) = plain.plan(items(1))
    assert planned.cached
    assert "sk-test" not in json.dumps(limited.describe())


def test_old_ledgers_without_wait_still_read(tmp_path):
    path = tmp_path / "old.jsonl"
    old = {
        "ts": "2026-01-01T00:00:00.000Z",
        "run_id": "r",
        "stage": "judge",
        "judge_id": "j",
        "model": "judge-test",
        "kind": "grade",
        "item": "q1/d1",
        "key": "k",
        "attempt": 1,
        "status": "ok",
        "input_tokens": 10,
        "output_tokens": 1,
        "cached": False,
        "repeated": False,
        "cost_usd": 1.4e-5,
        "request_id": None,
    }
    path.write_text(json.dumps(old) + "\n")
    df = Ledger.read(path)
    assert df["wait_s"].tolist() == [0.0] and df["wait_s"].dtype == "float64"
    led = Ledger(path, prices=PRICES)
    led.record(
        stage="judge", model="judge-test", item="q1/d2", key="k2", attempt=1, status="ok",
        input_tokens=10, output_tokens=1, wait_s=1.25,
    )  # fmt: skip
    assert led.totals()["wait_s"].tolist() == [1.25]
    assert "1.2 s waited for rate limits" in led.cost_note()


def test_reranker_keeps_its_budget_and_reads_the_servers_headers(openai_server):
    limited = RateLimited(rerank_answer, requests=15, window=1.0)
    openai_server.rerank.handler = limited
    rr = HTTPReranker("rerank-test", base_url=openai_server.base_url, rpm=600, cache=False)
    assert rr.describe()["params"]["rpm"] == 600.0
    start = time.monotonic()
    for i in range(15):
        rr.rerank(f"query {i}", [("d1", "alpha beta"), ("d2", "query words")])
    elapsed = time.monotonic() - start
    assert openai_server.request_count("/v1/rerank") == 15 and limited.refused == 0
    assert elapsed >= (15 - 10) / 10
    assert rr.limiter.waited_s > 0


def test_embedder_waits_for_the_servers_reset(openai_server):
    # the server admits 2 requests per 0.5 s and says so: batches 3 and 5 wait for its reset
    limited = RateLimited(openai_server.embeddings.handler, requests=2, window=0.5)
    openai_server.embeddings.handler = limited
    emb = OpenAIEmbedder("embed-test", base_url=openai_server.base_url, api_key="k", batch_size=1)
    vecs = emb.embed([f"text number {i}" for i in range(6)])
    assert vecs.shape[0] == 6 and limited.refused == 0
    assert emb.limiter.waited_s > 0.2
    assert emb.describe()["rpm"] is None


def test_golden_set_parameters_rpm_and_tpm_reach_the_judge(openai_server, tmp_path, monkeypatch):
    # notebook 02 / `ragnb golden --rpm --tpm`: the golden set's judge keeps the budget, on a
    # server admitting 15 requests per second, and the run folder's ledger shows the waits
    from test_golden_drift import grade_request_answer

    from ragnb.studies.golden import GoldenSetConfig
    from ragnb.studies.golden.judging import make_judge as golden_judge
    from ragnb.studies.golden.pipeline import build_pipeline

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-rpm")
    limited = RateLimited(grade_request_answer, requests=15, window=1.0)
    openai_server.chat.handler = limited
    config = GoldenSetConfig(
        judge="openai",
        model="gpt-4o-mini",
        base_url=openai_server.base_url,
        rpm=600,
        tpm=1e6,
        retrievers=["bm25"],
        new_systems=[],
        max_queries=4,
        depth=6,
        min_pool=6,
        refine_max_iterations=1,
        simulate=False,
        consistency_samples=0,
        judge_audit=False,
        drift_prompt="",
        cache_dir=str(tmp_path / "cache"),
        export_dir=str(tmp_path / "run"),
    )
    described = golden_judge(config, pd.DataFrame()).describe()
    assert described["rpm"] == 600 and described["tpm"] == 1e6
    golden = build_pipeline(config).run()
    assert golden.grades["valid"].all() and len(golden.grades) >= 15
    assert limited.refused == 0
    led = Ledger.read(tmp_path / "run" / "ledger.jsonl")
    assert set(led["status"]) == {"ok"} and led["wait_s"].sum() > 0
    with pytest.raises(InputError, match="rpm"):
        GoldenSetConfig(rpm=-1)
