"""Throughput of OpenAIJudge against the local test server: is concurrency used fully?

1,000 grading calls against ``tests/openai_server.py`` (a real HTTP server on 127.0.0.1, imported
by path) answering every request after ``latency`` seconds, at ``concurrency`` requests in
flight. The ideal wall time is ``n * latency / concurrency`` (3.125 s for the defaults); the
judge (rendering, cache lookups and writes, in-flight markers, ledger lines, parsing) should
stay within 1.25 times that. The time counts everything ``grade_many`` does (building the
client, rendering, the cache, the ledger, the result frame) but not the one-off import of the
``openai`` package.

The server runs in its own process (``--serve``), so its request handling does not compete
with the judge for the interpreter lock; a real endpoint is remote too.

Run: ``.venv/bin/python benchmarks/judge.py [--n 1000] [--latency 0.05] [--concurrency 16]``.
Exits with status 1 when the ratio exceeds ``--max-ratio``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
_DOC = re.compile(r"passage number (\d+)")


def _server_module() -> Any:
    path = REPO / "tests" / "openai_server.py"
    spec = importlib.util.spec_from_file_location("ragnb_bench_openai_server", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def serve(latency: float) -> None:
    """Run the test server until stdin closes; print its base URL first."""
    module = _server_module()

    def answer(request: Any) -> Any:
        text = request.json["messages"][-1]["content"]
        n = int(_DOC.search(text).group(1))
        return module.ChatAnswer(json.dumps({"grade": n % 5 + 1}), completion_tokens=6)

    with module.OpenAIServer() as server:
        server.chat.handler = answer
        server.chat.latency = latency
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes the pipe
        print(server.request_count("/v1/chat/completions"), flush=True)


def run(
    n: int = 1000,
    latency: float = 0.05,
    concurrency: int = 16,
    *,
    progress: bool = False,
) -> dict[str, float]:
    """Judge ``n`` items; return ``{"seconds", "ideal_seconds", "ratio", "requests", "faults"}``
    (``faults``: requests that got no answer and were retried)."""
    import openai  # noqa: F401  # the one-off import (~0.5 s) is not judging time

    from ragnb.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.ledger import Ledger

    items = [
        {
            "query_id": f"q{i // 10}",
            "doc_id": f"d{i}",
            "query": f"question {i // 10} about retrieval",
            "passage": f"passage number {i}: some text about dense and sparse retrieval",
        }
        for i in range(n)
    ]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", "--latency", str(latency)]
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
                cache=Cache(tmp),
                ledger=Ledger(Path(tmp) / "ledger.jsonl"),
                progress=progress,
            )
            start = time.perf_counter()
            frame = judge.grade_many(items)
            seconds = time.perf_counter() - start
            faults = int((judge.ledger.frame()["status"] != "ok").sum())
            judge.cache.close()
            judge.ledger.close()
        if len(frame) != n or not frame["valid"].all():
            raise RuntimeError("the benchmark run has invalid results")
        expected = [i % 5 + 1 for i in range(n)]
        if frame["grade"].tolist() != expected:
            raise RuntimeError("the benchmark run has wrong grades")
        proc.stdin.close()
        requests = int(proc.stdout.readline().strip() or -1)
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=10)
    ideal = n * latency / concurrency
    return {
        "seconds": seconds,
        "ideal_seconds": ideal,
        "ratio": seconds / ideal,
        "requests": float(requests),
        "faults": float(faults),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-ratio", type=float, default=1.25)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency)
        return 0
    out = run(args.n, args.latency, args.concurrency)
    print(
        f"{args.n} judgements, {args.latency * 1000:g} ms latency, concurrency "
        f"{args.concurrency}: {out['seconds']:.3f} s (ideal {out['ideal_seconds']:.3f} s), "
        f"ratio {out['ratio']:.3f} (limit {args.max_ratio:g}), {out['requests']:.0f} requests, "
        f"{out['faults']:.0f} retried after a fault"
    )
    return 0 if out["ratio"] <= args.max_ratio else 1


if __name__ == "__main__":
    raise SystemExit(main())
