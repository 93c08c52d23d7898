"""Journey: nothing half-done after a kill.

A user builds a golden set with ``ragnb golden`` against an OpenAI-compatible server and the
run is killed (SIGKILL: an out-of-memory killer, a closed laptop, a cancelled job) three times
at random points, then run to the end. After every kill, the ledger bills the requests the
server received (sent and answered, or sent and in flight at the kill: "may have been billed"),
never a request that was written ahead but never left. A request counts as sent when its body
starts to leave, so one whose body the kill cut off is in flight in the ledger though the
server got no whole request: the ledger may count more than the server got by such requests,
in flight at that kill, and never less. After the last run every request the server received
is billed once (with those cut ones, billed as interrupted) and none is in flight. A write
killed halfway leaves a temporary file beside its target; the next run removes it, and never
the temporary file of a write another live process is making.

The installed ``ragnb`` command runs in a subprocess from a temporary folder (the user's files:
a copy of four queries of the shipped ``data/pydocs``), against the scripted local server
(``tests/openai_server.py``), which counts the requests it received.
"""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from openai_server import ChatAnswer
from test_golden import PYDOCS, small_beir

from ragnb.llm.ledger import Ledger

RAGNB = Path(sys.executable).parent / "ragnb"
PYTHON = Path(sys.executable)
CHAT = "/v1/chat/completions"
KILLS = 3


def judge_answers(request):
    """Answers of a judge: a grade from the passage's length, the reverse of the order shown
    for a listwise call, no nugget."""
    messages = request.json["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = next(m["content"] for m in messages if m["role"] == "user")
    if "ranking judge" in system:
        n = int(system.split("receive ", 1)[1].split(" passages", 1)[0])
        return ChatAnswer(json.dumps({"order": [chr(65 + i) for i in reversed(range(n))]}))
    if "Text:\n" in user:
        passage = user.split("Text:\n", 1)[1]
        return ChatAnswer(json.dumps({"grade": len(passage) % 5 + 1}))
    return ChatAnswer(json.dumps({"items": []}))


def received(server) -> int:
    """Chat requests the server received whole (a body cut off by a kill is no request)."""
    return sum(1 for r in server.requests if r.path == CHAT and r.json is not None)


def settled(server) -> int:
    """:func:`received` once the requests a killed client had written have all arrived."""
    count, stable_since = received(server), time.monotonic()
    while time.monotonic() - stable_since < 0.5:
        time.sleep(0.05)
        now = received(server)
        if now != count:
            count, stable_since = now, time.monotonic()
    return count


def temporaries(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.tmp"))


HALF_WRITE = """
import sys, time
from ragnb.io.files import atomic_write

with atomic_write(sys.argv[1]) as f:
    f.write("half of a file\\n")
    f.flush()
    print("writing", flush=True)
    sys.stdin.readline()  # killed here, or told to finish
    f.write("the other half\\n")
print("done", flush=True)
"""


def start_writer(script: Path, target: Path, cwd: Path) -> subprocess.Popen:
    """A process in the middle of an atomic write of ``target`` (waits on its stdin)."""
    proc = subprocess.Popen(
        [str(PYTHON), str(script), str(target)],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    return proc


def test_a_golden_run_killed_three_times_bills_what_the_server_received(openai_server, tmp_path):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    why = f"(kill points drawn with random.Random({seed}))"
    small_beir(PYDOCS, tmp_path / "pydocs", n_queries=4)
    openai_server.chat.handler = judge_answers
    openai_server.chat.latency = 0.02  # a request is in flight for 20 ms at least
    argv = [
        str(RAGNB), "golden", "--dataset", "pydocs", "--judge", "openai",
        "--model", "gpt-4o-mini", "--base-url", openai_server.base_url,
        "--retriever", "bm25", "--depth", "8", "--top-n", "3", "--refine-max-iterations", "1",
        "--cache-dir", "cache", "--out", "gold",
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "sk-journey-crash"}
    ledger = tmp_path / "gold" / "ledger.jsonl"

    cut = 0  # requests in flight at a kill whose body never reached the server whole
    for kill in range(1, KILLS + 1):
        target = received(openai_server) + rng.randint(1, 30)
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        while received(openai_server) < target:
            assert proc.poll() is None, proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.03))  # anywhere in a request's life
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        server_got = settled(openai_server)

        # what a notebook on the ledger says: billed plus in flight is what the server got
        total = Ledger(ledger).summary()["total"]
        excess = total["requests"] + total["in_flight"] - server_got
        assert cut <= excess <= cut + total["in_flight"], (kill, total, server_got, cut, why)
        cut = excess

    # a write killed halfway, and one a live process is making, in the run folder
    script = tmp_path / "half_write.py"
    script.write_text(HALF_WRITE, encoding="utf-8")
    stages = tmp_path / "gold" / "stages"
    killed = start_writer(script, stages / "notes.json", tmp_path)
    killed.kill()
    killed.communicate(timeout=30)
    live = start_writer(script, tmp_path / "gold" / "mine.txt", tmp_path)
    left = temporaries(tmp_path / "gold")
    assert any(n.startswith("stages/.notes.json.") for n in left), left
    assert any(n.startswith(".mine.txt.") for n in left), left

    # the last run goes to the end
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert "golden.qrels: 32 judgements of 4 queries" in done.stdout
    # the console says what the last kill may have cost, before the run re-sends it
    if total["in_flight"]:
        assert (
            f"{total['in_flight']} requests were in flight when an earlier run was interrupted; "
            "they may have been billed (up to $"
        ) in done.stderr

    # the live writer's file was not touched; it finishes whole
    assert temporaries(tmp_path / "gold") == [n for n in left if n.startswith(".mine.txt.")]
    out, _ = live.communicate("go\n", timeout=30)
    assert out == "done\n" and live.returncode == 0
    mine = (tmp_path / "gold" / "mine.txt").read_text(encoding="utf-8")
    assert mine == "half of a file\nthe other half\n"
    assert temporaries(tmp_path) == [] and not (stages / "notes.json").exists()

    # every request the server received is billed once, none is left "in flight"
    server_got = settled(openai_server)
    with (tmp_path / "gold" / "ledger.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sum(int(r["requests"]) for r in rows) == server_got + cut, (cut, why)
    assert sum(int(r["in_flight"]) for r in rows) == 0, why
    led = Ledger(ledger)
    assert not led.interrupted
    frame = Ledger.read(ledger)
    sent = frame[~frame["cached"]]
    assert sent["sent"].all() and len(sent) == server_got + cut, (cut, why)
    print(
        f"\n{KILLS} kills, {server_got} requests received and billed ({cut} cut off at a kill "
        f"billed too); last run {seconds:.1f} s"
    )
