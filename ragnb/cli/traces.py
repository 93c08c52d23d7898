"""``ragnb traces``: production traces read into queries and runs, example traces written
(retrievers answering a dataset's queries, or a search agent with ``--agent``), and an agent's
search trajectories evaluated."""

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


def _read_systems(args: argparse.Namespace) -> dict[str, Any]:
    """Each trace file's trajectories, split by ``--system-attribute``: ``{name: Trajectories}``
    (a file's name, or ``file:value`` with several files and a system attribute)."""
    import sys
    from pathlib import Path

    from ragnb.io.readers import read_query_file
    from ragnb.io.trajectories import read_trajectories

    queries = read_query_file(args.queries) if args.queries else None
    systems: dict[str, Any] = {}
    for path in args.traces:
        read = read_trajectories(
            path,
            id_attribute=args.id_attribute,
            system_attribute=args.system_attribute,
            turn_ids=args.turn_ids,
        )
        print(read.describe(), file=sys.stderr)
        if queries is not None:
            read = read.with_dataset_ids(queries)
        for name, part in read.by_system().items():
            label = name or Path(path).stem
            if name and len(args.traces) > 1:
                label = f"{Path(path).stem}:{name}"
            if label in systems:
                raise InputError(f"two systems are named {label!r}: rename a trace file", path=path)
            systems[label] = part
    return systems


def _fmt(frame: Any) -> str:
    return frame.to_string(index=False, float_format="{:.4f}".format, na_rep="-")


def _turn_tables(
    systems: dict[str, Any], results: dict[str, Any], args: argparse.Namespace
) -> dict[str, tuple[Any, Any]]:
    """With ``--by-turn``: each system's measures by turn and the conversational noise of its
    turns' search queries (None when no call is in a conversation)."""
    from ragnb.rewrite import noise_by_turn

    if not args.by_turn:
        return {}
    out = {}
    for name, result in results.items():
        by_turn = result.by_turn(n_resamples=args.resamples, seed=args.seed)
        try:
            noise = noise_by_turn(systems[name], result, result.names[0])
        except InputError:
            noise = None
        out[name] = (by_turn, noise)
    return out


def _print_tables(
    results: dict[str, Any], turns: dict[str, tuple[Any, Any]], comparison: Any
) -> None:
    """The aggregate table of each system, its turn tables, then the comparison."""
    for name, result in results.items():
        c = result.counts
        print(
            f"system {name} ({c['path']}): {c['queries_in_qrels']} questions, "
            f"{c['queries_without_trajectory']} without a trajectory; "
            f"{c['retrieval_calls']} retrieval calls, {c['rerank_calls']} rerank calls"
        )
        print(_fmt(result.aggregate))
        if name in turns:
            by_turn, noise = turns[name]
            print("\nby turn:")
            print(_fmt(by_turn))
            if noise is not None:
                print(f"\nconversational noise in the search queries ({result.names[0]}):")
                print(_fmt(noise))
        print()
    if comparison is not None:
        print("compared (paired bootstrap intervals, randomization p-values, Holm):")
        shown = comparison.pairs[
            ["measure", "pair", "difference", "ci_low", "ci_high", "p_adjusted"]
        ]
        print(_fmt(shown))


def _comparison(results: dict[str, Any], args: argparse.Namespace) -> Any:
    """With several systems: compare them on the measures with finite values (None else)."""
    import numpy as np

    from ragnb.stats import compare

    if len(results) < 2:
        return None
    first = next(iter(results.values()))
    finite = [
        name
        for j, name in enumerate(first.names)
        if all(not np.isinf(r.values[:, j]).any() for r in results.values())
    ]
    if not finite:
        return None
    systems = {name: r.per_query for name, r in results.items()}
    return compare(systems, finite, n_resamples=args.resamples, seed=args.seed)


def _payload(
    results: dict[str, Any], turns: dict[str, tuple[Any, Any]], comparison: Any
) -> dict[str, Any]:
    """What ``--format json`` prints."""
    payload: dict[str, Any] = {"systems": []}
    for name, r in results.items():
        entry = {
            "system": name,
            "aggregate": r.aggregate.to_dict(orient="records"),
            "counts": r.counts,
            "curve": r.curve.to_dict(orient="records"),
        }
        if name in turns:
            by_turn, noise = turns[name]
            entry["by_turn"] = by_turn.to_dict(orient="records")
            entry["noise_by_turn"] = None if noise is None else noise.to_dict(orient="records")
        payload["systems"].append(entry)
    if comparison is not None:
        payload["pairs"] = comparison.pairs.to_dict(orient="records")
    return payload


def _cmd_traces_evaluate(args: argparse.Namespace) -> int:
    import json
    import sys

    import pandas as pd

    from ragnb.evaluation.trajectories import DEFAULT_TRAJECTORY_MEASURES, evaluate_trajectories
    from ragnb.io.dispatch import read_qrels_file

    qrels = read_qrels_file(args.qrels).frame
    measures = args.measure or list(DEFAULT_TRAJECTORY_MEASURES)
    systems = _read_systems(args)
    results = {
        name: evaluate_trajectories(
            t, qrels, measures, rel=args.rel, lists=args.lists, seed=args.seed
        )
        for name, t in systems.items()
    }
    turns = _turn_tables(systems, results, args)
    comparison = _comparison(results, args)
    if args.events:
        from ragnb.io.events import write_evaluation_events

        events = pd.concat([r.events() for r in results.values()], ignore_index=True)
        write_evaluation_events(events, args.events)
        print(f"wrote {len(events)} evaluation events to {args.events}", file=sys.stderr)
    if args.format == "json":
        json.dump(_payload(results, turns, comparison), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.format == "csv":
        tables = [
            (turns[name][0] if name in turns else r.aggregate).assign(system=name)
            for name, r in results.items()
        ]
        pd.concat(tables, ignore_index=True).to_csv(sys.stdout, index=False)
    else:
        _print_tables(results, turns, comparison)
    return 0


def add_parser(sub: Any) -> None:
    """The ``traces`` subcommands' arguments."""
    p = sub.add_parser(
        "traces",
        help="production traces: retriever spans -> queries, runs; agent trajectories scored",
    )
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
    _add_evaluate_parser(tsub)


_EVALUATE_EPILOG = """
Spans read: OpenTelemetry GenAI retrieval spans (gen_ai.operation.name = retrieval) and
OpenInference RETRIEVER and RERANKER spans. A trajectory is one trace by default (named by its
ragnb.query.id attribute, else its trace id), or the spans sharing --id-attribute; its id must
be the question's id in QRELS.

examples:
  ragnb traces example agent.jsonl --agent && ragnb traces evaluate agent.jsonl --qrels agent.qrels
  ragnb traces evaluate agent.jsonl --qrels qrels.tsv -m EvidenceRecall EvidenceRecall@1 \\
      CallsToFirstRel CallRR RerankGain@5 --events evaluations.jsonl
  ragnb traces evaluate chat.jsonl --qrels cast.qrels --turn-ids --by-turn
  ragnb traces evaluate a.jsonl b.jsonl --qrels qrels.tsv --id-attribute question.id
"""


def _add_evaluate_parser(tsub: Any) -> None:
    import argparse

    v = tsub.add_parser(
        "evaluate",
        help="score an agent's search trajectories (GenAI or OpenInference retrieval spans) "
        "against per-question qrels; write the scores back as OpenTelemetry events",
        epilog=_EVALUATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    v.add_argument("traces", nargs="+", help="trace files: one system each (.jsonl, .parquet)")
    v.add_argument("--qrels", required=True, help="per-question qrels (TREC or BEIR .tsv)")
    v.add_argument(
        "-m",
        "--measure",
        nargs="+",
        default=None,
        help="measures (default: every trajectory family, K = 10); any other measure is read "
        "on each trajectory's documents in the order found",
    )
    v.add_argument("--by-turn", action="store_true", help="every measure by conversation turn")
    v.add_argument("--events", default="", help="write gen_ai.evaluation.result events here")
    v.add_argument("--format", choices=["table", "csv", "json"], default="table")
    v.add_argument(
        "--id-attribute",
        default="",
        help="attribute naming a call's question (on the span, its trace or resource; default: "
        "one trajectory per trace, named by its ragnb.query.id or else its trace id)",
    )
    v.add_argument("--system-attribute", default="", help="attribute naming the system of a call")
    v.add_argument(
        "--turn-ids",
        action="store_true",
        help="name a conversation's trajectories <conversation>_<turn> (TREC CAsT / iKAT qrels)",
    )
    v.add_argument(
        "--queries",
        default="",
        help="queries file: a trajectory whose first search asks one of them takes its id",
    )
    v.add_argument(
        "--lists",
        choices=["seen", "retrieved"],
        default="seen",
        help="a reranked search read as the reranker's output, what the agent received "
        "(seen, default), or as the retrieval span's list (retrieved)",
    )
    v.add_argument("--rel", type=int, default=1, help="lowest relevant grade (default 1)")
    v.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    v.add_argument("--seed", type=int, default=0, help="seed of the intervals (default 0)")
    v.set_defaults(func=_cmd_traces_evaluate)
