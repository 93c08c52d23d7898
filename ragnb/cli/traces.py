"""``ragnb traces``: production traces read into queries and runs, and example traces written."""

from __future__ import annotations

import argparse
from typing import Any

from ragnb.errors import InputError
from ragnb.report.params import SAMPLE_DATASET

__all__ = ["add_parser"]


def _cmd_traces_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ragnb.io.readers import read_queries
    from ragnb.io.traces import read_traces, write_traces_folder

    traces = read_traces(args.traces, retriever_attribute=args.retriever_attribute)
    if args.dataset:
        queries = Path(args.dataset) / "queries.jsonl"
        if not queries.is_file():
            raise InputError(
                "--dataset: no queries.jsonl in this folder (a BEIR dataset folder)",
                path=args.dataset,
            )
        traces = traces.with_dataset_ids(read_queries(queries), str(queries))
    written = write_traces_folder(traces, args.out)
    print(traces.describe())
    if not args.dataset:
        print(
            "  (to score these runs against a golden set built by `ragnb golden --dataset DIR "
            "--traces`, import with --dataset DIR: its queries keep their ids)"
        )
    for row in traces.bad.head(args.show_bad).itertuples(index=False):
        print(f"  bad span line {row.line} id {row.span_id or '-'} ({row.name}): {row.cause}")
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def _cmd_traces_example(args: argparse.Namespace) -> int:
    from ragnb.core.paths import resolve_path
    from ragnb.io.files import read_beir
    from ragnb.io.traces import write_example_traces
    from ragnb.retrievers.retrieve import check_retrievers, compute_runs

    check_retrievers(args.retrievers, column="--retrievers")
    dataset = read_beir(args.dataset or resolve_path(SAMPLE_DATASET), qrels="optional")
    runs, _, _ = compute_runs(
        dataset, args.retrievers, depth=args.depth, cache_dir=args.cache_dir, progress=True
    )
    queries = dataset.judged_queries if dataset.has_qrels else dataset.queries
    path = write_example_traces(
        args.out,
        queries,
        runs,
        dataset.corpus,
        n_spans=args.spans,
        depth=args.depth,
        seed=args.seed,
    )
    print(f"wrote {path}: {args.spans // len(runs) * len(runs)} retriever spans of {list(runs)}")
    return 0


def add_parser(sub: Any) -> None:
    """The ``traces`` subcommands' arguments."""
    p = sub.add_parser("traces", help="production traces: retriever spans -> queries, runs")
    tsub = p.add_subparsers(dest="traces_command", required=True)
    t = tsub.add_parser(
        "import",
        help="read OpenInference retriever spans (OTLP JSON, Phoenix JSONL or parquet) into a "
        "BEIR folder (queries with counts, corpus seen) and one TREC run per retriever",
    )
    t.add_argument("traces", help="trace file (.jsonl, .json, .gz or .parquet)")
    t.add_argument("--out", required=True, help="folder to write")
    t.add_argument(
        "--retriever-attribute",
        default="",
        help="span (or resource) attribute naming the run of a span (default: the span name)",
    )
    t.add_argument(
        "--dataset",
        default="",
        help="BEIR folder whose queries lend their ids: a query its queries.jsonl holds (same "
        "text once normalised) keeps the dataset's id, as in `ragnb golden --traces` on that "
        "dataset (default: every id is q + a hash of the text)",
    )
    t.add_argument("--show-bad", type=int, default=20, help="bad spans listed (default 20)")
    t.set_defaults(func=_cmd_traces_import)
    e = tsub.add_parser(
        "example",
        help="write an OTLP JSON trace file: the dataset's queries answered by retrievers",
    )
    e.add_argument("out", help="trace file to write (.jsonl)")
    e.add_argument(
        "--dataset",
        default="",
        help=f"BEIR folder (default: the sample dataset the kit ships, {SAMPLE_DATASET})",
    )
    e.add_argument("--spans", type=int, default=200, help="retriever spans (default 200)")
    e.add_argument("--retrievers", nargs="+", default=["bm25", "dense"], help="runs answering")
    e.add_argument("--depth", type=int, default=5, help="documents per span (default 5)")
    e.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    e.add_argument("--cache-dir", default="", help="embedding cache folder")
    e.set_defaults(func=_cmd_traces_example)
