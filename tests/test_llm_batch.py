"""The batch API (ragnb.llm.batch) against the scripted server: one submission per job, every
item answered and cached, the batch rate in the ledger, a run killed after submitting resumed
without paying twice, expired and partly failed batches left for the next run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from openai_server import ChatAnswer
from scripted_judging import items, passage_number

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge
from ragnb.llm.ledger import Ledger, PriceTable
from ragnb.llm.transport import RetryPolicy

PRICES = PriceTable.from_dict(
    {"batch_discount": 0.5, "models": {"judge-test": {"input": 1.0, "output": 4.0}}}
)
FAST = RetryPolicy(backoff_base=0.01, backoff_max=0.05, timeout=5.0)
FILES, BATCHES, CHAT = "/v1/files", "/v1/batches", "/v1/chat/completions"


def grade_of(n: int) -> int:
    return n % 3 + 1


def rubric(request):
    return ChatAnswer(json.dumps({"grade": grade_of(passage_number(request))}))


def make_judge(server, tmp_path, **kwargs) -> OpenAIJudge:
    kwargs.setdefault("retry", FAST)
    kwargs.setdefault("cache", Cache(tmp_path / "cache"))
    kwargs.setdefault("ledger", Ledger(tmp_path / "ledger.jsonl", prices=PRICES))
    kwargs.setdefault("batch_poll_s", 0.01)
    return OpenAIJudge(
        "judge-test",
        base_url=server.base_url,
        api_key="sk-test",
        progress=False,
        batch=True,
        **kwargs,
    )


def submissions(server) -> tuple[int, int]:
    """Uploads and batch creations the server received."""
    posts = [r.path for r in server.requests if r.method == "POST"]
    return posts.count(FILES), posts.count(BATCHES)


def test_a_batch_job_is_one_submission_answering_every_item(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.batch.polls = 2
    judge = make_judge(openai_server, tmp_path)
    out = judge.grade_many(items(36))
    assert out["valid"].all()
    assert list(out["grade"]) == [grade_of(i) for i in range(36)]
    assert openai_server.request_count(CHAT) == 0  # nothing sent singly
    assert submissions(openai_server) == (1, 1)
    assert openai_server.batch.lines_answered == 36
    upload = next(iter(openai_server.batch.files.values())).decode().splitlines()
    first = json.loads(upload[0])
    assert first["method"] == "POST" and first["url"] == CHAT
    assert first["body"]["model"] == "judge-test" and first["body"]["temperature"] == 0.0
    # the answers are cached: a second run sends nothing
    again = make_judge(openai_server, tmp_path).grade_many(items(36))
    assert again["cached"].all() and submissions(openai_server) == (1, 1)
    # the state file is gone once the batch is folded in
    assert not list((tmp_path / "cache" / "batches").glob("*.json"))


def test_batch_answers_are_priced_at_the_batch_rate(openai_server, tmp_path):
    answer = ChatAnswer('{"grade": 2}', prompt_tokens=1000, completion_tokens=10)
    openai_server.chat.handler = lambda r: answer
    judge = make_judge(openai_server, tmp_path)
    judge.grade_many(items(4))
    df = Ledger.read(tmp_path / "ledger.jsonl")
    ok = df[df["status"] == "ok"]
    assert len(ok) == 4 and ok["batch"].all()
    # half of (1000 * $1 + 10 * $4) per 1M tokens
    assert ok["cost_usd"].tolist() == pytest.approx([0.00052] * 4)
    assert PRICES.cost("judge-test", 1000, 10) == pytest.approx(0.00104)


def test_the_batch_discount_is_read_per_table_and_per_model():
    table = PriceTable.from_dict(
        {
            "batch_discount": 0.5,
            "models": {
                "a": {"input": 2.0, "output": 8.0},
                "b": {"input": 2.0, "output": 8.0, "batch_discount": 0.0},
            },
        }
    )
    assert table.cost("a", 1000, 100, batch=True) == pytest.approx(0.0014)
    assert table.cost("a", 1000, 100) == pytest.approx(0.0028)
    assert table.cost("b", 1000, 100, batch=True) == pytest.approx(0.0028)
    shipped = PriceTable.load()
    full = shipped.cost("gpt-4o-mini", 10**6, 10**6)
    assert shipped.cost("gpt-4o-mini", 10**6, 10**6, batch=True) == pytest.approx(full / 2)
    with pytest.raises(InputError, match="model 'b': batch_discount must be a number in"):
        PriceTable.from_dict({"models": {"b": {"input": 1, "output": 1, "batch_discount": 1.5}}})
    with pytest.raises(InputError, match="batch_discount"):
        PriceTable.from_dict({"batch_discount": "half", "models": {}})


def test_an_invalid_batch_answer_gets_its_reminder_singly(openai_server, tmp_path):
    def answer(request):
        reminded = len(request.json["messages"]) > 2
        return ChatAnswer('{"grade": 2}' if reminded else "two")

    openai_server.chat.handler = answer
    out = make_judge(openai_server, tmp_path).grade_many(items(3))
    assert out["valid"].all() and out["reminded"].all() and (out["grade"] == 2).all()
    assert openai_server.request_count(CHAT) == 3  # the three reminders, one request each
    df = Ledger.read(tmp_path / "ledger.jsonl")
    ok = df[df["status"] == "ok"]
    assert ok["batch"].tolist().count(True) == 3 and ok["batch"].tolist().count(False) == 3
    assert (ok.loc[~ok["batch"], "attempt"] == 2).all()


def test_batch_is_described_and_not_in_the_cache_key(openai_server, tmp_path):
    judge = make_judge(openai_server, tmp_path)
    single = OpenAIJudge("judge-test", base_url=openai_server.base_url, progress=False)
    assert judge.describe()["batch"] is True and judge.describe()["batch_poll_s"] == 0.01
    assert single.describe()["batch"] is False
    values = {"query": "q", "passage": "p"}
    opts, single_opts = judge.call_options(judge.prompt), single.call_options(single.prompt)
    assert (
        judge.client.make_call(judge.prompt, values, item="i", **opts).key
        == single.client.make_call(single.prompt, values, item="i", **single_opts).key
    )
    with pytest.raises(InputError, match="batch_poll_s"):
        make_judge(openai_server, tmp_path, batch_poll_s=-1)


def test_a_partly_failed_batch_leaves_the_failed_items_for_the_next_run(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    judge = make_judge(openai_server, tmp_path)
    opts = judge.call_options(judge.prompt)
    calls = [
        judge.client.make_call(judge.prompt, i, item=f"{i['query_id']}/{i['doc_id']}", **opts)
        for i in items(10)
    ]
    failing = {calls[1].key, calls[7].key}
    openai_server.batch.fail = set(failing)
    out = judge.grade_many(items(10))
    assert out["status"].tolist().count("failed") == 2
    assert set(out.loc[out["status"] == "failed", "doc_id"]) == {"d1", "d7"}
    assert out.loc[out["status"] == "failed", "reason"].str.contains("server_error").all()
    df = Ledger.read(tmp_path / "ledger.jsonl")
    assert (df["status"] == "batch_error").sum() == 2
    assert df.loc[df["status"] == "batch_error", "cost_usd"].eq(0).all()
    # the next run resubmits only the two failed items
    openai_server.batch.fail = set()
    again = make_judge(openai_server, tmp_path).grade_many(items(10))
    assert again["valid"].all() and again["cached"].sum() == 8
    sent = list(openai_server.batch.files.values())
    uploads = [b for b in sent if b"custom_id" in b and b'"method"' in b]
    assert len(uploads) == 2 and len(uploads[1].splitlines()) == 2
    assert openai_server.batch.lines_answered == 10


def test_a_refused_batch_fails_its_calls_and_leaves_nothing_to_resume(openai_server, tmp_path):
    openai_server.chat.handler = rubric
    openai_server.batch.refuse = 1
    out = make_judge(openai_server, tmp_path).grade_many(items(5))
    assert (out["status"] == "failed").all()
    assert out["reason"].str.contains("not submitted").all()
    assert out["reason"].str.contains("scripted refusal").all()
    assert not list((tmp_path / "cache" / "batches").glob("*.json"))
    led = Ledger(tmp_path / "ledger.jsonl", prices=PRICES)
    assert not led.interrupted and (led.frame()["status"] == "http_400").sum() == 5
    assert led.frame()["cost_usd"].eq(0).all()
    again = make_judge(openai_server, tmp_path).grade_many(items(5))
    assert again["valid"].all() and submissions(openai_server) == (2, 2)


@pytest.mark.parametrize("outcome", ["expired", "cancelled", "failed"])
def test_an_ended_batch_is_reported_and_its_unanswered_items_resubmitted_later(
    openai_server, tmp_path, caplog, outcome
):
    openai_server.chat.handler = rubric
    openai_server.batch.outcome = outcome
    openai_server.batch.answered = 3
    out = make_judge(openai_server, tmp_path).grade_many(items(8))
    answered = 0 if outcome == "failed" else 3
    assert out["valid"].sum() == answered
    failed = out[out["status"] == "failed"]
    assert len(failed) == 8 - answered
    assert failed["reason"].str.contains(outcome).all()
    assert any(outcome in r.message and "run again" in r.message for r in caplog.records)
    # nothing is pending in the ledger, no failure is cached
    led = Ledger(tmp_path / "ledger.jsonl", prices=PRICES)
    assert not led.interrupted
    openai_server.batch.outcome = "completed"
    again = make_judge(openai_server, tmp_path).grade_many(items(8))
    assert again["valid"].all() and again["cached"].sum() == answered
    assert openai_server.batch.lines_answered == 8


RESUME = """
import sys
sys.path.insert(0, {tests!r})
from openai_server import ChatAnswer
from ragnb.core.cache import Cache
from ragnb.judge import OpenAIJudge
from ragnb.llm.ledger import Ledger, PriceTable
from scripted_judging import items
prices = PriceTable.from_dict({prices!r})
judge = OpenAIJudge("judge-test", base_url={url!r}, api_key="sk-test", progress=False,
                    batch=True, batch_poll_s=0.05, cache=Cache({cache!r}),
                    ledger=Ledger({ledger!r}, prices=prices))
judge.grade_many(items({n}))
"""


@pytest.mark.parametrize("n", [500])
def test_a_run_killed_after_submitting_resumes_the_same_batch(openai_server, tmp_path, n):
    openai_server.chat.handler = rubric
    openai_server.batch.polls = 10**9  # in progress until the test says otherwise
    cache, ledger = tmp_path / "cache", tmp_path / "ledger.jsonl"
    script = RESUME.format(
        tests=str(Path(__file__).parent),
        prices={"batch_discount": 0.5, "models": {"judge-test": {"input": 1.0, "output": 4.0}}},
        url=openai_server.base_url,
        cache=str(cache),
        ledger=str(ledger),
        n=n,
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = [json.loads(p.read_text()) for p in (cache / "batches").glob("*.json")]
            if states and states[0]["batch_id"]:
                break
            assert proc.poll() is None, "the first run ended before submitting"
            time.sleep(0.05)
        else:
            pytest.fail("no batch was submitted")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert len(states[0]["items"]) == n
    state_text = next((cache / "batches").glob("*.json")).read_text()
    assert "sk-test" not in state_text  # no secret in the state file
    assert all(set(v) == {"key", "item", "request_id"} for v in states[0]["items"].values())
    assert Ledger(ledger, prices=PRICES).interrupted  # the killed run's requests are in flight
    openai_server.batch.polls = 0
    judge = make_judge(openai_server, tmp_path)
    out = judge.grade_many(items(n))
    assert out["valid"].all() and len(out) == n
    assert not out["repeated"].any()
    assert submissions(openai_server) == (1, 1)  # resumed, not submitted again
    assert openai_server.batch.lines_answered == n  # zero repeated billed calls
    assert openai_server.request_count(CHAT) == 0
    df = Ledger.read(ledger)
    ok = df[df["status"] == "ok"]
    assert len(ok) == n and ok["batch"].all() and ok["key"].is_unique
    assert not (df["status"] == "interrupted").any()
    assert not Ledger(ledger, prices=PRICES).interrupted
    assert not list((cache / "batches").glob("*.json"))
