"""Rate limits against the scripted server: a budget kept, and a server's limit met.

Three jobs of ``OpenAIJudge`` against ``tests/openai_server.py`` (a real HTTP server on
127.0.0.1, in its own process, imported by path) whose chat route admits ``N`` requests per
window and answers 429 beyond (``RateLimited``: a token bucket of N refilled at N per window,
with ``Retry-After``, ``retry-after-ms`` and OpenAI's ``x-ratelimit-*`` headers):

1. ``budget``: ``rpm=120`` and 300 judgements against a server admitting 120 a minute. The
   client's bucket holds one second (2 requests), so the job takes at least (300 - 2) / 2 =
   149 s, and the server should refuse nothing.
2. ``server limit, headers``: no budget of the client's own, 200 items against a server
   admitting 60 a minute that tells its remaining budget on every answer. The server admits at
   most 60 + 1 per second, so the job takes at least 140 s; every item must be answered.
3. ``server limit, 429 only``: the same server saying nothing until it refuses (429 with
   ``Retry-After``); every item must be answered, the 429s retried (never recorded as done).

For each: the wall time, its lower bound, the items answered, the 429s the server sent, the
requests in the ledger and the seconds they waited for the rate limit (``wait_s``, summed).

Run: ``.venv/bin/python benchmarks/rate_limits.py [--scale 1] [--concurrency 8]``; ``--scale
10`` runs every rate ten times faster (a check in seconds, not the measurement). Exits with
status 1 when an item is not answered, the budget job meets a 429, or a job beats its bound.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHAT = "/v1/chat/completions"


def _module(name: str) -> Any:
    path = REPO / "tests" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"ragnb_bench_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def serve(requests: int, window: float, advertise: bool) -> None:
    """Run the rate-limited test server until stdin closes; print its base URL first, then the
    requests it admitted and refused (JSON)."""
    module = _module("openai_server")
    judging = _module("scripted_judging")

    def answer(request: Any) -> Any:
        n = judging.passage_number(request)
        return module.ChatAnswer(json.dumps({"grade": n % 5 + 1}), completion_tokens=6)

    limited = module.RateLimited(answer, requests=requests, window=window, advertise=advertise)
    with module.OpenAIServer() as server:
        server.chat.handler = limited
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes the pipe
        print(json.dumps({"admitted": limited.admitted, "refused": limited.refused}), flush=True)


def job(
    name: str,
    n: int,
    *,
    server_requests: int,
    window: float,
    advertise: bool,
    rpm: float | None,
    bound: float,
    concurrency: int,
) -> dict[str, Any]:
    """Grade ``n`` items against a server admitting ``server_requests`` per ``window`` s."""
    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger

    items = [
        {
            "query_id": f"q{i // 10}",
            "doc_id": f"d{i}",
            "query": f"question {i // 10} about retrieval",
            "passage": f"passage number {i}: some text about dense and sparse retrieval",
        }
        for i in range(n)
    ]
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--serve",
        f"--server-requests={server_requests}",
        f"--window={window}",
        *([] if advertise else ["--no-advertise"]),
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the server process did not start: {base_url!r}")
        with tempfile.TemporaryDirectory() as tmp:
            judge = OpenAIJudge(
                "gpt-4o-mini",
                base_url=base_url,
                api_key="sk-benchmark",
                concurrency=concurrency,
                rpm=rpm,
                cache=Cache(tmp),
                ledger=Ledger(Path(tmp) / "ledger.jsonl"),
                progress=False,
            )
            start = time.perf_counter()
            frame = judge.grade_many(items)
            seconds = time.perf_counter() - start
            led = judge.ledger.frame()
            judge.cache.close()
            judge.ledger.close()
        proc.stdin.close()
        counts = json.loads(proc.stdout.readline())
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=10)
    expected = [i % 5 + 1 for i in range(n)]
    answered = int((frame["status"] == "ok").sum())
    right = frame["grade"].tolist() == expected
    return {
        "job": name,
        "items": n,
        "rpm": rpm,
        "server": f"{server_requests} per {window:g} s" + ("" if advertise else ", 429 only"),
        "seconds": round(seconds, 1),
        "bound_seconds": round(bound, 1),
        "answered": answered,
        "grades_right": right,
        "server_429": counts["refused"],
        "ledger_requests": len(led),
        "ledger_429": int((led["status"] == "http_429").sum()),
        "ledger_ok": int((led["status"] == "ok").sum()),
        "wait_s": round(float(led["wait_s"].sum()), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=float, default=1.0, help="rates times this")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--server-requests", type=int, default=60, help=argparse.SUPPRESS)
    parser.add_argument("--window", type=float, default=60.0, help=argparse.SUPPRESS)
    parser.add_argument("--no-advertise", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.server_requests, args.window, not args.no_advertise)
        return 0
    import openai  # noqa: F401  # the one-off import is not judging time

    from ragnb.llm.ledger import count_tokens

    count_tokens("warm the tokenizer", "gpt-4o-mini")  # its one-off load neither
    s = args.scale
    minute = 60.0 / s
    rows = [
        job(
            "budget",
            300,
            server_requests=120,
            window=minute,
            advertise=True,
            rpm=120 * s,
            bound=(300 - max(1.0, 2 * s)) / (2 * s),  # minus one burst: a second's worth
            concurrency=args.concurrency,
        ),
        job(
            "server limit, headers",
            200,
            server_requests=60,
            window=minute,
            advertise=True,
            rpm=None,
            bound=(200 - 60) / s,
            concurrency=args.concurrency,
        ),
        job(
            "server limit, 429 only",
            200,
            server_requests=60,
            window=minute,
            advertise=False,
            rpm=None,
            bound=(200 - 60) / s,
            concurrency=args.concurrency,
        ),
    ]
    failed = False
    for row in rows:
        print(json.dumps(row), flush=True)
        ok = row["answered"] == row["items"] and row["grades_right"]
        ok = ok and row["seconds"] >= row["bound_seconds"] - 0.05
        ok = ok and row["ledger_ok"] == row["items"]
        if row["job"] == "budget":
            ok = ok and row["server_429"] == 0
        failed = failed or not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
