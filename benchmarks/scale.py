"""Runs larger than memory: evaluate a generated run of N queries x 100 documents from a file.

Generates (in chunks of 10,000 queries, never the whole run in memory) a parquet run of
``--queries`` queries x ``--depth`` documents, grouped by query, with qrels of ``--judged``
documents per query (grades 1-2, some outside the run), then evaluates it on nDCG@10, P@10 and
R@100 in separate processes, each printing its peak resident memory (``ru_maxrss``) and time per
run row:

* ``stream``: :func:`ragnb.evaluation.streaming.evaluate_file` on the file;
* ``memory``: read the parquet file into a DataFrame, then
  :func:`ragnb.evaluation.evaluate.evaluate` (only up to ``--memory-max`` queries);
* ``ranx`` / ``ir_measures``: the same file as dicts / namedtuples (only up to
  ``--others-max`` queries; beyond, they do not fit in memory on a small machine).

Per-query values of the streamed and in-memory paths are compared (bit-identical) when both run.

Usage::

    python benchmarks/scale.py --queries 1000000          # 100 M rows
    python benchmarks/scale.py --queries 100000 --modes stream memory ranx
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
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

MEASURES = ["nDCG@10", "P@10", "R@100"]
CHUNK = 10_000


def _ids(prefix: str, numbers: np.ndarray) -> pa.Array:
    """``prefix`` + zero-padded numbers as an arrow string array (sorted like the numbers)."""
    text = pc.utf8_lpad(pa.array(numbers).cast(pa.string()), width=8, padding="0")
    return pc.binary_join_element_wise(pa.scalar(prefix), text, "")


def generate(
    folder: Path, n_queries: int, depth: int, judged: int, seed: int = 0, unsorted: bool = False
) -> tuple[Path, Path]:
    """Write ``run.parquet`` (query_id, doc_id, score, rank) and ``qrels.parquet`` in chunks."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / "run.parquet", folder / "qrels.parquet"
    run_schema = pa.schema(
        [
            ("query_id", pa.string()),
            ("doc_id", pa.string()),
            ("score", pa.float64()),
            ("rank", pa.int64()),
        ]
    )
    qrels_schema = pa.schema(
        [("query_id", pa.string()), ("doc_id", pa.string()), ("relevance", pa.int64())]
    )
    with (
        pq.ParquetWriter(run_path, run_schema) as run_w,
        pq.ParquetWriter(qrels_path, qrels_schema) as qrels_w,
    ):
        for start in range(0, n_queries, CHUNK):
            q = np.arange(start, min(start + CHUNK, n_queries))
            n = len(q)
            # each query ranks `depth` distinct documents of a 10,000-document pool
            docs = (q[:, None] * 7919 + np.arange(depth)[None, :] * 13) % 10_000
            score = -np.sort(-rng.random((n, depth)), axis=1)
            qid = _ids("q", np.repeat(q, depth))
            table = pa.table(
                [
                    qid,
                    _ids("d", docs.reshape(-1)),
                    pa.array(score.reshape(-1)),
                    pa.array(np.tile(np.arange(1, depth + 1), n)),
                ],
                schema=run_schema,
            )
            if unsorted:  # rows of a chunk's queries interleaved: not grouped by query
                table = table.take(pa.array(rng.permutation(table.num_rows)))
            run_w.write_table(table)
            # judged documents: positions 0..2*depth-1 of the query's sequence (half not retrieved)
            pos = rng.integers(0, 2 * depth, size=(n, judged))
            jdocs = (q[:, None] * 7919 + pos * 13) % 10_000
            table = pa.table(
                [
                    _ids("q", np.repeat(q, judged)),
                    _ids("d", jdocs.reshape(-1)),
                    pa.array(rng.integers(1, 3, size=n * judged)),
                ],
                schema=qrels_schema,
            )
            qrels_w.write_table(
                pa.Table.from_pandas(
                    table.to_pandas().drop_duplicates(["query_id", "doc_id"]),
                    schema=qrels_schema,
                    preserve_index=False,
                )
            )
    return run_path, qrels_path


def _peak_gib() -> float:
    """Peak resident memory of this process (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def measure(mode: str, run_path: Path, qrels_path: Path, out: Path, block_rows: int) -> None:
    """One evaluation in this process; writes its numbers (and per-query values) to ``out``."""
    import pandas as pd

    qrels = pd.read_parquet(qrels_path)
    rows = pq.ParquetFile(run_path).metadata.num_rows
    t0 = time.perf_counter()
    per_query = None
    if mode == "stream":
        from ragnb.evaluation.streaming import evaluate_file

        res = evaluate_file(qrels, run_path, MEASURES, block_rows=block_rows)
        agg, per_query = res.aggregate_to_dict(), res.per_query["value"].to_numpy()
    elif mode == "memory":
        from ragnb.evaluation.evaluate import evaluate

        res = evaluate(qrels, pd.read_parquet(run_path), MEASURES)
        agg, per_query = res.aggregate_to_dict(), res.per_query["value"].to_numpy()
    elif mode == "ranx":
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate

        run_df = pd.read_parquet(run_path, columns=["query_id", "doc_id", "score"])
        run_df = run_df.astype({"query_id": object, "doc_id": object})
        qrels = qrels.astype({"query_id": object, "doc_id": object})
        scores = ranx_evaluate(
            Qrels.from_df(qrels, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance"),
            Run.from_df(run_df, q_id_col="query_id", doc_id_col="doc_id", score_col="score"),
            ["ndcg@10", "precision@10", "recall@100"],
        )
        agg = {k: float(v) for k, v in scores.items()}
    else:  # ir_measures
        import ir_measures
        from ir_measures import P, R, nDCG

        run_df = pd.read_parquet(run_path, columns=["query_id", "doc_id", "score"])
        q = qrels.rename(columns={"relevance": "relevance"})
        agg = {
            str(k): float(v)
            for k, v in ir_measures.calc_aggregate([nDCG @ 10, P @ 10, R @ 100], q, run_df).items()
        }
    seconds = time.perf_counter() - t0
    if per_query is not None:
        np.save(out.with_suffix(".npy"), per_query)
    out.write_text(
        json.dumps(
            {
                "mode": mode,
                "rows": rows,
                "seconds": seconds,
                "ns_per_row": 1e9 * seconds / rows,
                "peak_gib": _peak_gib(),
                "aggregate": agg,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--judged", type=int, default=2, help="judged documents per query")
    ap.add_argument("--block-rows", type=int, default=1_000_000)
    ap.add_argument("--modes", nargs="+", default=["stream", "memory", "ranx", "ir_measures"])
    ap.add_argument("--memory-max", type=int, default=200_000, help="largest in-memory run")
    ap.add_argument("--others-max", type=int, default=100_000, help="largest ranx/ir_measures run")
    ap.add_argument(
        "--unsorted", action="store_true", help="interleave rows (DuckDB groups them out of core)"
    )
    ap.add_argument("--tmp", default=None, help="folder of the generated files (default /tmp)")
    ap.add_argument("--_measure", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._measure:
        mode, run_path, qrels_path, out = args._measure
        measure(mode, Path(run_path), Path(qrels_path), Path(out), args.block_rows)
        return
    with tempfile.TemporaryDirectory(prefix="ragnb-scale-", dir=args.tmp) as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        run_path, qrels_path = generate(
            folder, args.queries, args.depth, args.judged, unsorted=args.unsorted
        )
        rows = pq.ParquetFile(run_path).metadata.num_rows
        print(
            f"generated {'unsorted ' if args.unsorted else ''}{args.queries:,} queries x "
            f"{args.depth} = {rows:,} rows "
            f"({run_path.stat().st_size / 2**30:.2f} GiB parquet) in "
            f"{time.perf_counter() - t0:.1f} s; peak RSS of the generator {_peak_gib():.2f} GiB"
        )
        results = {}
        for mode in args.modes:
            limit = args.memory_max if mode == "memory" else args.others_max
            if mode != "stream" and args.queries > limit:
                print(
                    f"{mode:12s} skipped: {args.queries:,} queries > {limit:,} (the whole run "
                    "in memory; raise --memory-max / --others-max to try)"
                )
                continue
            out = folder / f"{mode}.json"
            cmd = [
                sys.executable,
                __file__,
                "--block-rows",
                str(args.block_rows),
                "--_measure",
                mode,
                str(run_path),
                str(qrels_path),
                str(out),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                print(f"{mode:12s} failed: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            r = results[mode] = json.loads(out.read_text())
            agg = ", ".join(f"{k} {v:.4f}" for k, v in r["aggregate"].items())
            print(
                f"{mode:12s} {r['seconds']:8.1f} s  {r['ns_per_row']:7.1f} ns/row  "
                f"peak RSS {r['peak_gib']:.2f} GiB  {agg}"
            )
        if "stream" in results and "memory" in results:
            same = np.array_equal(np.load(folder / "stream.npy"), np.load(folder / "memory.npy"))
            ratio = results["stream"]["ns_per_row"] / results["memory"]["ns_per_row"]
            print(f"stream / memory time per row: {ratio:.2f}x; per-query values identical: {same}")


if __name__ == "__main__":
    main()
