"""The cost ledger: price table, offline token counts, JSONL ledger (SIGKILL-safe), estimates and
budgets."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge, QrelsJudge
from ragnb.llm.ledger import (
    LEDGER_FIELDS,
    BudgetExceededError,
    Ledger,
    PriceTable,
    check_budget,
    count_message_tokens,
    count_tokens,
    encoding_for_model,
    estimate,
)

REPO = Path(__file__).resolve().parents[1]
PRICES = PriceTable.from_dict(
    {
        "as_of": "2025-01-01",
        "source": "test",
        "models": {"judge-test": {"input": 2.0, "output": 8.0}, "cheap": {"input": 0, "output": 0}},
    }
)


# ----------------------------------------------------------------------------- prices


def test_shipped_price_table_is_dated_and_matches_prefixes():
    t = PriceTable.load()
    assert t.as_of == "2025-08-07" and "openai.com" in t.source
    p = t.price("gpt-4o-mini")
    assert (p.model, p.input_usd_per_1m, p.output_usd_per_1m) == ("gpt-4o-mini", 0.15, 0.60)
    assert t.price("gpt-4o-2024-08-06").model == "gpt-4o"
    assert t.price("gpt-4o-mini-2024-07-18").model == "gpt-4o-mini"
    assert t.price("gpt-4-0613").model == "gpt-4"
    assert t.price("gpt-4o").model == "gpt-4o"  # not "gpt-4": the next character is no "-"
    assert t.price("gpt-5-nano").model == "gpt-5-nano"
    assert t.price("llama3") is None and math.isnan(t.cost("llama3", 10, 10))
    # 1M input tokens of gpt-4o-mini cost 0.15 USD; 2,000 in + 500 out = 0.0003 + 0.0003
    assert t.cost("gpt-4o-mini", 2_000, 500) == pytest.approx(0.0006)


def test_user_price_file_and_its_errors(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text(
        "as_of: '2026-01-01'\nsource: my contract\nmodels:\n"
        "  local-llm: {input: 0.5, output: 1.5, as_of: '2026-02-01'}\n",
        encoding="utf-8",
    )
    t = PriceTable.load(path)
    p = t.price("local-llm")
    assert (p.as_of, p.source, t.path) == ("2026-02-01", "my contract", str(path))
    assert t.describe() == {"as_of": "2026-01-01", "source": "my contract", "path": str(path)}
    for body, match in [
        ("models: []\n", "'models' mapping"),
        ("models:\n  m: {input: -1, output: 1}\n", "input price must be a number >= 0"),
        ("models:\n  m: {input: 1}\n", "output price"),
        ("models:\n  m: {input: '1', output: 1}\n", "input price"),
        ("models: [unclosed\n", "malformed YAML"),
    ]:
        path.write_text(body, encoding="utf-8")
        with pytest.raises(InputError, match=match):
            PriceTable.load(path)


# ----------------------------------------------------------------------------- tokens


@pytest.mark.parametrize(
    "model, encoding, exact",
    [
        ("gpt-4o", "o200k_base", True),
        ("gpt-4o-mini-2024-07-18", "o200k_base", True),
        ("gpt-4.1-nano", "o200k_base", True),
        ("gpt-5", "o200k_base", True),
        ("o3-mini", "o200k_base", True),
        ("o1", "o200k_base", True),
        ("openai/gpt-4o", "o200k_base", True),
        ("gpt-4", "cl100k_base", True),
        ("gpt-4-turbo", "cl100k_base", True),
        ("gpt-3.5-turbo", "cl100k_base", True),
        ("llama-3.1-8b-instruct", "o200k_base", False),
        ("judge-test", "o200k_base", False),
    ],
)
def test_encoding_for_model(model, encoding, exact):
    assert encoding_for_model(model) == (encoding, exact)


def test_token_counts_are_offline_bpe():
    # "tiktoken is great!" is 6 tokens in cl100k_base (OpenAI Cookbook, "How to count tokens")
    assert count_tokens("tiktoken is great!", "gpt-4") == (6, True)
    assert count_tokens("tiktoken is great!", "gpt-4o") == (6, True)
    assert count_tokens("", "gpt-4o") == (0, True)
    assert count_tokens("tiktoken is great!", "mystery-model") == (6, False)
    # a special-token string in user text is ordinary text, not an error
    n, _ = count_tokens("<|endoftext|>", "gpt-4o")
    assert n > 1
    msgs = [{"role": "system", "content": "tiktoken is great!"}, {"role": "user", "content": ""}]
    # contents + 3 per message + 3 for the reply priming
    assert count_message_tokens(msgs, "gpt-4o") == (6 + 0 + 3 * 2 + 3, True)


# ----------------------------------------------------------------------------- the ledger


def test_ledger_entries_costs_and_file(tmp_path):
    path = tmp_path / "sub" / "ledger.jsonl"
    led = Ledger(path, prices=PRICES, run_id="run-a")
    e1 = led.record(
        stage="s4", model="judge-test", item="q1/d1", key="k1", attempt=1, status="http_429"
    )
    e2 = led.record(
        stage="s4", model="judge-test", item="q1/d1", key="k1", attempt=2, status="ok",
        input_tokens=1000, output_tokens=100,
    )  # fmt: skip
    e3 = led.record(
        stage="s6", model="judge-test", item="q1/0", key="k2", attempt=0, status="cached",
        input_tokens=500, output_tokens=50, cached=True,
    )  # fmt: skip
    e4 = led.record(
        stage="s6", model="unpriced", item="q1/1", key="k3", attempt=1, status="ok",
        input_tokens=10, output_tokens=1, repeated=True,
    )  # fmt: skip
    assert tuple(e1) == LEDGER_FIELDS
    assert e1["cost_usd"] == 0.0
    assert e2["cost_usd"] == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)  # 0.0028
    assert e3["cost_usd"] == 0.0 and e4["cost_usd"] is None
    assert e1["ts"].endswith("Z") and e1["run_id"] == "run-a"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == [e1, e2, e3, e4]

    totals = led.totals()
    s4 = totals.set_index("stage").loc["s4"]
    assert (s4["requests"], s4["answered"], s4["failed"], s4["cached"]) == (2, 1, 1, 0)
    assert (s4["input_tokens"], s4["output_tokens"]) == (1000, 100)
    assert s4["cost_usd"] == pytest.approx(0.0028)
    s6 = totals.set_index("stage").loc["s6"]
    assert (s6["requests"], s6["cached"], s6["repeated"], s6["unpriced"]) == (1, 1, 1, 1)
    assert (s6["input_tokens"], s6["output_tokens"]) == (10, 1)  # cache hits are not billed
    assert math.isnan(s6["cost_usd"])  # an unpriced request makes the total unknown
    summary = led.summary()
    json.dumps(summary)  # JSON-safe
    assert summary["total"]["requests"] == 3 and summary["total"]["cost_usd"] is None
    assert summary["prices"]["as_of"] == "2025-01-01"
    led.close()

    # reopening appends to the same file and loads the earlier lines
    again = Ledger(path, prices=PRICES)
    assert len(again.entries) == 4 and again.run_id != "run-a"
    again.record(stage="s4", model="cheap", item="x", key="k", attempt=1, status="ok")
    assert len(Ledger.read(path)) == 5
    assert set(again.frame()["run_id"]) == {"run-a", again.run_id}
    assert len(again.frame(run_id=again.run_id)) == 1


def test_ledger_skips_a_torn_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    led = Ledger(path, prices=PRICES)
    led.record(stage="s", model="cheap", item="a", key="k", attempt=1, status="ok")
    led.close()
    with path.open("a", encoding="utf-8") as f:
        f.write('{"ts": "2025-')  # a line cut short (e.g. an editor crash)
    again = Ledger(path, prices=PRICES)
    assert len(again.entries) == 1 and again.skipped_lines == 1


def test_ledger_threads_append_whole_lines(tmp_path):
    path = tmp_path / "ledger.jsonl"
    led = Ledger(path, prices=PRICES)

    def work(t: int) -> None:
        for i in range(200):
            led.record(stage="s", model="cheap", item=f"{t}/{i}", key="k" * 64, attempt=1,
                       status="ok")  # fmt: skip

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    led.close()
    frame = Ledger.read(path)
    assert len(frame) == 1600 and frame["item"].nunique() == 1600


APPENDER = """
import sys, time
from ragnb.llm.ledger import Ledger, PriceTable
prices = PriceTable.from_dict({"models": {"m": {"input": 1, "output": 1}}})
led = Ledger(sys.argv[1], prices=prices)
i = 0
while True:
    led.record(stage="s", model="m", item=f"x/{i}", key="k" * 64, attempt=1, status="ok",
               input_tokens=i, output_tokens=1)
    i += 1
    if i == 300:
        print("ready", flush=True)
"""


def test_ledger_survives_sigkill_mid_append(tmp_path):
    path = tmp_path / "ledger.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    led = Ledger(path, prices=PRICES)
    assert led.skipped_lines == 0 and len(led.entries) >= 300
    assert [e["input_tokens"] for e in led.entries] == list(range(len(led.entries)))


# ----------------------------------------------------------------------------- estimates


def rows(n: int) -> list[dict[str, str]]:
    return [
        {"query_id": "q", "doc_id": f"d{i}", "query": "what is BM25?", "passage": f"text {i}"}
        for i in range(n)
    ]


def test_estimate_counts_rendered_prompts_and_prices_them(tmp_path):
    judge = OpenAIJudge("gpt-4o-mini", cache=Cache(tmp_path), ledger=Ledger(), progress=False)
    est = estimate(judge, rows(4))
    f = est.frame
    assert len(f) == 4 and est.calls == 4 and est.cached_calls == 0
    assert not est.approximate and (f["encoding"] == "o200k_base").all()
    messages = judge.prompt.render({"query": "what is BM25?", "passage": "text 0"})
    assert f["input_tokens"].iloc[0] == count_message_tokens(messages, "gpt-4o-mini")[0]
    assert (f["output_tokens"] == judge.prompt.expected_output_tokens).all()
    expected = (f["input_tokens"].sum() * 0.15 + f["output_tokens"].sum() * 0.60) / 1e6
    assert est.total_usd == pytest.approx(expected)
    assert est.prices["as_of"] == "2025-08-07"
    assert "4 calls" in repr(est) and "prices as of 2025-08-07" in repr(est)
    # an assumed answer length
    assert estimate(judge, rows(4), output_tokens=100).frame["output_tokens"].eq(100).all()
    # listwise batches
    rank = estimate(
        judge, [{"query_id": "q", "query": "q", "doc_ids": ["a", "b"], "passages": ["x", "y"]}],
        kind="rank",
    )  # fmt: skip
    assert rank.calls == 1 and rank.frame["output_tokens"].iloc[0] == 30


def test_estimate_flags_unknown_tokenizers_and_unpriced_models(tmp_path):
    judge = OpenAIJudge("my-llm", cache=Cache(tmp_path), ledger=Ledger(), progress=False)
    est = estimate(judge, rows(2))
    assert est.approximate and est.frame["approximate"].all()
    assert math.isnan(est.total_usd) and est.unpriced_models == ["my-llm"]
    assert any("approximate" in n for n in est.notes)
    with pytest.raises(BudgetExceededError, match=r"no price for model\(s\) \['my-llm'\]"):
        check_budget(est, 100.0)
    priced = estimate(judge, rows(2), prices=PriceTable.from_dict(
        {"models": {"my-llm": {"input": 1, "output": 1}}}
    ))  # fmt: skip
    assert not math.isnan(priced.total_usd) and priced.approximate


def test_check_budget(tmp_path):
    judge = OpenAIJudge("gpt-4o", cache=Cache(tmp_path), ledger=Ledger(), progress=False)
    est = estimate(judge, rows(1000))
    assert est.total_usd > 0
    assert check_budget(est, est.total_usd * 1.01) == est.total_usd
    with pytest.raises(
        BudgetExceededError, match=r"for 1000 calls .* exceeds the budget \$0\.0100"
    ):
        check_budget(est, 0.01)
    with pytest.raises(InputError, match=">= 0"):
        check_budget(est, -1)
    with pytest.raises(InputError, match="number"):
        check_budget(est, "10")


def test_estimate_after_a_run_counts_cached_calls_as_free(openai_server, tmp_path):
    openai_server.chat.handler = lambda r: ChatAnswer('{"grade": 3}')
    judge = OpenAIJudge(
        "gpt-4o-mini",
        base_url=openai_server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path),
        ledger=Ledger(tmp_path / "ledger.jsonl"),
        progress=False,
    )
    judge.grade_many(rows(3))
    est = estimate(judge, rows(5))
    assert est.cached_calls == 3 and est.calls == 2
    assert est.frame.loc[est.frame["cached"], "cost_usd"].eq(0).all()
    # the ledger of the run: one answered request per item, priced from the shipped table
    totals = judge.ledger.totals().iloc[0]
    assert totals["requests"] == totals["answered"] == 3
    assert totals["cost_usd"] == pytest.approx(
        (totals["input_tokens"] * 0.15 + totals["output_tokens"] * 0.60) / 1e6
    )


def test_offline_judges_plan_no_calls():
    judge = QrelsJudge({"q": {"d0": 1}})
    est = estimate(judge, rows(3))
    assert est.calls == 0 and est.total_usd == 0.0


# ----------------------------------------------------------------------------- sent marks


def begin(led: Ledger, item: str) -> str:
    return led.begin(
        stage="s", model="judge-test", item=item, key=f"key-{item}", attempt=1,
        input_tokens=1000, output_tokens=10,
    )  # fmt: skip


def test_a_request_killed_before_it_left_is_never_billed(tmp_path):
    path = tmp_path / "ledger.jsonl"
    led = Ledger(path, prices=PRICES)
    answered, in_flight, never_sent = begin(led, "a"), begin(led, "b"), begin(led, "c")
    for rid in (answered, in_flight):
        led.mark_sent(rid)
    led.mark_sent(in_flight)  # a second mark writes nothing
    led.record(
        stage="s", model="judge-test", item="a", key="key-a", attempt=1, status="ok",
        input_tokens=900, output_tokens=5, request_id=answered,
    )  # fmt: skip
    led.close()  # killed here: b was sent, c was waiting for a connection
    statuses = [json.loads(line)["status"] for line in path.read_text().splitlines()]
    assert statuses == ["pending"] * 3 + ["sent"] * 2 + ["ok"]

    again = Ledger(path, prices=PRICES)
    assert list(again.interrupted) == [in_flight] and list(again.unsent) == [never_sent]
    assert again.unsent_keys() == {"key-c"} and again.interrupted_keys() == {"key-b"}
    total = again.summary()["total"]
    assert total["requests"] == 1 and total["in_flight"] == 1  # c counts nowhere
    assert total["in_flight_usd"] == pytest.approx((1000 * 2.0 + 10 * 8.0) / 1e6)
    assert "1 requests in flight at an interruption" in again.cost_note()
    # a resume re-sends b and c: b is reconciled as billed, c was never billed
    assert again.reconcile("key-b") == 1 and again.reconcile("key-c") == 0
    t = again.summary()["total"]
    assert t["requests"] == 2 and t["in_flight"] == 0 and t["estimated"] == 1


def test_an_attempt_that_never_connected_is_listed_not_billed(tmp_path):
    led = Ledger(tmp_path / "ledger.jsonl", prices=PRICES)
    rid = begin(led, "a")
    led.record(
        stage="s", model="judge-test", item="a", key="key-a", attempt=1, status="connection",
        request_id=rid,
    )  # fmt: skip
    frame = Ledger.read(tmp_path / "ledger.jsonl")
    assert frame["status"].tolist() == ["connection"] and not frame["sent"].any()
    assert led.summary()["total"]["requests"] == 0
    assert led.cost_note() == "No LLM request was billed."


def test_a_ledger_written_before_sent_marks_bills_its_pending_lines_as_before(tmp_path):
    path = tmp_path / "ledger.jsonl"
    old = {
        "ts": "2025-01-01T00:00:00.000Z", "run_id": "r0", "stage": "s", "judge_id": "",
        "model": "judge-test", "kind": "grade", "item": "a", "key": "key-a", "attempt": 1,
        "status": "pending", "input_tokens": 1000, "output_tokens": 10, "cached": False,
        "repeated": False, "cost_usd": 0.00208, "request_id": "r1", "usage_estimated": True,
    }  # fmt: skip
    done = {**old, "item": "b", "key": "key-b", "status": "ok", "request_id": "r2"}
    path.write_text(json.dumps(old) + "\n" + json.dumps(done) + "\n")
    led = Ledger(path, prices=PRICES)
    assert list(led.interrupted) == ["r1"] and not led.unsent
    assert Ledger.read(path)["sent"].tolist() == [True]
    assert led.summary()["total"]["requests"] == 1
