"""A judging job killed with SIGKILL midway resumes without paying twice for what it had.

60 prompts at concurrency 4 run in a subprocess against the local server (answers take 0.15 s,
so the kill lands midway); the test sends SIGKILL once 20 requests have arrived, then resumes
the job in a new subprocess on the same cache and ledger, and compares with an uninterrupted
run on a fresh cache. The server counts the requests of every prompt.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from openai_server import ChatAnswer

from ragnb.llm.ledger import Ledger

REPO = Path(__file__).resolve().parents[1]
CHAT = "/v1/chat/completions"
N = 60
CONCURRENCY = 4
DOC = re.compile(r"passage number (\d+)")

WORKER = """
import sys
from pathlib import Path

from ragnb.core.cache import Cache
from ragnb.io.files import write_json
from ragnb.judge import OpenAIJudge
from ragnb.llm.ledger import Ledger, PriceTable

base_url, cache_dir, ledger_path, out_path, n, concurrency = sys.argv[1:7]
prices = PriceTable.from_dict({"models": {"judge-test": {"input": 1.0, "output": 4.0}}})
judge = OpenAIJudge(
    "judge-test",
    base_url=base_url,
    cache=Cache(cache_dir),
    ledger=Ledger(ledger_path, prices=prices),
    concurrency=int(concurrency),
    progress=False,
)
items = [
    {
        "query_id": f"q{i // 6}",
        "doc_id": f"d{i}",
        "query": f"question {i // 6}",
        "passage": f"passage number {i}: text about retrieval",
    }
    for i in range(int(n))
]
df = judge.grade_many(items)
grades = [int(g) if ok else None for g, ok in zip(df["grade"], df["valid"])]
write_json(
    {"grades": grades, "repeated": df["repeated"].tolist(), "cached": df["cached"].tolist()},
    out_path,
)
"""


def number(request) -> int:
    return int(DOC.search(request.json["messages"][1]["content"]).group(1))


def answer(request):
    return ChatAnswer(json.dumps({"grade": number(request) % 5 + 1}))


def start(script: Path, server, cache: Path, ledger: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "sk-crash-test"}
    args = [server.base_url, str(cache), str(ledger), str(out), str(N), str(CONCURRENCY)]
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def kill_after_requests(proc: subprocess.Popen, server, n: int) -> None:
    """SIGKILL the worker once ``n`` chat requests have reached ``server`` (60 s at most)."""
    deadline = time.monotonic() + 60
    while server.request_count(CHAT) < n:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the worker never got going"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()


def cached_keys(cache_dir: Path) -> set[str]:
    with sqlite3.connect(cache_dir / "cache.sqlite") as conn:
        rows = conn.execute("SELECT key FROM entries WHERE namespace = 'judge'").fetchall()
    return {k for (k,) in rows}


def test_sigkill_midway_then_resume(openai_server, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    openai_server.chat.handler = answer
    openai_server.chat.latency = 0.15
    cache, ledger = tmp_path / "cache", tmp_path / "ledger.jsonl"

    # run 1: killed once 20 requests have arrived
    proc = start(script, openai_server, cache, ledger, tmp_path / "never.json")
    kill_after_requests(proc, openai_server, 20)
    assert proc.returncode == -signal.SIGKILL
    assert not (tmp_path / "never.json").exists()
    sent_1 = Counter(number(r) for r in openai_server.requests if r.path == CHAT)
    assert 20 <= sum(sent_1.values()) < N  # killed midway
    answered_keys = cached_keys(cache)
    ledger_1 = Ledger.read(ledger)
    assert len(ledger_1) > 0 and ledger_1["run_id"].nunique() == 1
    key_to_item = dict(zip(ledger_1["key"], ledger_1["item"], strict=True))
    answered_items = {key_to_item[k] for k in answered_keys}
    assert len(answered_items) == len(answered_keys) >= 10

    # run 2: resume on the same cache and ledger
    proc = start(script, openai_server, cache, ledger, tmp_path / "resumed.json")
    finish(proc)
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    sent = Counter(number(r) for r in openai_server.requests if r.path == CHAT)

    # nothing answered and cached before the kill was sent again
    for item in answered_items:
        assert sent[int(item.split("/d")[1])] == 1, item
    # every prompt was sent; at most `concurrency` (those in flight at the kill) twice
    assert set(sent) == set(range(N))
    twice = {n for n, c in sent.items() if c == 2}
    assert max(sent.values()) <= 2 and 1 <= len(twice) <= CONCURRENCY
    # the ledger flags the re-sent prompts as repeated: in flight at the kill, no answer cached
    full = Ledger.read(ledger)
    assert full["run_id"].nunique() == 2
    run_2 = full[full["run_id"] != ledger_1["run_id"].iloc[0]]
    repeated = {int(i.split("/d")[1]) for i in run_2.loc[run_2["repeated"], "item"]}
    assert twice <= repeated and len(repeated) <= CONCURRENCY
    assert sum(resumed["repeated"]) == len(repeated)
    assert sum(resumed["cached"]) == len(answered_items)
    assert (run_2["status"] == "cached").sum() == len(answered_items)
    assert len(Ledger(ledger).entries) == len(full)  # every line parses, none torn
    assert Ledger(ledger).skipped_lines == 0

    # run 3: uninterrupted, fresh cache: the same grades
    openai_server.chat.latency = 0.0
    proc = start(script, openai_server, tmp_path / "fresh", tmp_path / "fresh.jsonl",
                 tmp_path / "fresh.json")  # fmt: skip
    finish(proc)
    fresh = json.loads((tmp_path / "fresh.json").read_text())
    assert resumed["grades"] == fresh["grades"] == [i % 5 + 1 for i in range(N)]
    assert not any(fresh["repeated"]) and not any(fresh["cached"])
