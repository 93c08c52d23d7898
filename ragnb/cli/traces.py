"""``ragnb traces``: production traces read into queries and runs, and example traces written
(retrievers answering a dataset's queries, or a search agent with ``--agent``)."""

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
    if args.agent:
        return _cmd_traces_agent(args)
    from ragnb.core.paths import resolve_path
    from ragnb.io.files import read_beir
    from ragnb.io.traces import write_example_traces
    from ragnb.retrievers.retrieve import check_retrievers, compute_runs

    check_retrievers(args.retrievers, column="--retrievers")
    depth = args.depth or 5
    dataset = read_beir(args.dataset or resolve_path(SAMPLE_DATASET), qrels="optional")
    runs, _, _ = compute_runs(
        dataset, args.retrievers, depth=depth, cache_dir=args.cache_dir, progress=True
    )
    queries = dataset.judged_queries if dataset.has_qrels else dataset.queries
    path = write_example_traces(
        args.out,
        queries,
        runs,
        dataset.corpus,
        n_spans=args.spans,
        depth=depth,
        seed=args.seed,
    )
    print(f"wrote {path}: {args.spans // len(runs) * len(runs)} retriever spans of {list(runs)}")
    return 0


def _cmd_traces_agent(args: argparse.Namespace) -> int:
    from ragnb.studies.agentic.agent import AgentConfig
    from ragnb.studies.agentic.example import write_agent_example

    config = AgentConfig(top_k=args.depth or 10, seed=args.seed)
    example = write_agent_example(
        args.out,
        dataset=args.dataset or None,
        retriever=args.retriever,
        reranker=args.rerank,
        questions=args.questions,
        conversations=args.conversations,
        config=config,
        base_url=args.base_url,
        model=args.model,
        cache_dir=args.cache_dir,
        progress=True,
    )
    print(example.describe())
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
        help="write an OTLP JSON trace file: the dataset's queries answered by retrievers, or "
        "by a search agent (--agent)",
    )
    e.add_argument("out", help="trace file to write (.jsonl)")
    e.add_argument(
        "--dataset",
        default="",
        help=f"BEIR folder (default: the sample dataset the kit ships, {SAMPLE_DATASET})",
    )
    e.add_argument("--spans", type=int, default=200, help="retriever spans (default 200)")
    e.add_argument("--retrievers", nargs="+", default=["bm25", "dense"], help="runs answering")
    e.add_argument(
        "--depth",
        type=int,
        default=0,
        help="documents per span (default 5; with --agent, per search: default 10)",
    )
    e.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    e.add_argument("--cache-dir", default="", help="cache folder (embeddings, model answers)")
    a = e.add_argument_group(
        "agent",
        "--agent: a search agent answers the dataset's questions (2 to 4 searches each, the "
        "model deciding after each), traced with the OpenTelemetry SDK (GenAI semantic "
        "conventions), one trace per question; writes OUT, <stem>.qrels (TREC) and "
        "<stem>.queries.jsonl",
    )
    a.add_argument("--agent", action="store_true", help="write an agent's traces")
    a.add_argument(
        "--retriever", default="bm25", help="the agent's retriever: bm25, dense, ... (default bm25)"
    )
    a.add_argument(
        "--rerank",
        nargs="?",
        const="rescore:wordllama",
        default="none",
        help="rerank each search (default spec rescore:wordllama; any reranker spec)",
    )
    a.add_argument(
        "--questions",
        type=int,
        default=None,
        help="questions asked (default 3), or conversations with --conversations (default 1)",
    )
    a.add_argument(
        "--conversations",
        action="store_true",
        help="conversations of 2 to 4 turns, qrels per turn as TREC CAsT (<conversation>_<turn>)",
    )
    a.add_argument(
        "--base-url",
        default="",
        help="OpenAI-compatible server of the model (default: start the local model server)",
    )
    a.add_argument(
        "--model",
        default="",
        help="the model (default the local SmolLM2-135M-Instruct; its name on --base-url)",
    )
    e.set_defaults(func=_cmd_traces_example)
