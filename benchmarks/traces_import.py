"""Production traces in, at scale: import an OTLP JSON file of N retriever spans, streamed.

Generates (one request a line, never the whole file in memory) an OTLP JSON file of ``--spans``
OpenInference retriever spans: ``--queries`` distinct queries drawn with Zipf-like popularity
(weight 1 / rank, some typed again in lower case), each request answered by two retrievers
(``prod`` and ``canary``) with ``--depth`` documents each (id, score, content of about 150
characters) out of ``--documents``. Then :func:`ragnb.io.traces.read_traces` imports it in a
separate process for each file size given, which prints its time and peak resident memory
(``ru_maxrss``): a streamed import's peak grows with the distinct queries and documents, not
with the spans, so the peaks of a file ten times shorter and of the full file are close.

Usage::

    nice python benchmarks/traces_import.py                     # 1,000,000 spans (and 100,000)
    python benchmarks/traces_import.py --spans 20000 --sizes 2000 20000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ragnb.io.traces import otlp_request, retriever_span

WORDS = (
    "sort list dict file path json parse thread lock socket encode decode regex match "
    "date time zone random sample hash digest queue heap csv read write zip archive"
).split()


def generate(path: Path, spans: int, queries: int, documents: int, depth: int, seed: int) -> None:
    """Write ``spans`` retriever spans (two per request) as OTLP JSON lines."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, 6)) + f" #{i}" for i in range(queries)]
    weights = 1.0 / np.arange(1, queries + 1)
    drawn = rng.choice(queries, size=spans // 2, p=weights / weights.sum())
    content = [" ".join(rng.choice(WORDS, 25)) for _ in range(1000)]
    start = 1_767_225_600_000_000_000
    with path.open("w", encoding="utf-8") as f:
        for request, q in enumerate(drawn):
            text = texts[q] if request % 5 else texts[q].upper()
            trace_id = f"{request:032x}"
            out = []
            for system, offset in (("prod", 0), ("canary", 7)):
                ids = (q * 31 + offset + np.arange(depth) * 13) % documents
                docs = [
                    {"id": f"d{d}", "score": float(depth - r), "content": content[d % 1000]}
                    for r, d in enumerate(ids)
                ]
                out.append(
                    retriever_span(
                        text,
                        docs,
                        span_id=f"{request * 2 + offset % 2:016x}",
                        trace_id=trace_id,
                        name=system,
                        start_ns=start + request * 1_000_000,
                    )
                )
            f.write(json.dumps(otlp_request(out), separators=(",", ":")))
            f.write("\n")


def import_once(path: Path) -> None:
    """Child process: import ``path`` and print time and peak memory as JSON."""
    from ragnb.io.traces import read_traces

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    traces = read_traces(path)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "retriever_spans": traces.retriever_spans,
                "queries": len(traces.queries),
                "requests": int(traces.queries["count"].sum()),
                "corpus": len(traces.corpus),
                "bad": len(traces.bad),
                "seconds": round(seconds, 1),
                "spans_per_s": round(traces.retriever_spans / seconds),
                "rss_before_mib": round(before / 1024),
                "peak_rss_mib": round(peak / 1024),
                "file_mib": round(path.stat().st_size / 2**20),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--documents", type=int, default=50_000)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--import-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.import_only:
        import_once(args.import_only)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"spans-{size}.jsonl"
            t0 = time.perf_counter()
            generate(path, size, args.queries, args.documents, args.depth, args.seed)
            print(f"generated {size:,} spans in {time.perf_counter() - t0:.0f} s", flush=True)
            child = [sys.executable, __file__, "--import-only", str(path)]
            result = subprocess.run(child, capture_output=True, text=True, check=True)
            print(f"import of {size:,} spans: {result.stdout.strip()}", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
