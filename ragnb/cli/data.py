"""``ragnb retrieve`` and ``ragnb data``: a TREC run written by a retriever, and the shipped sample
dataset built.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_data_parser", "add_retrieve_parser"]


def _cmd_retrieve(args: argparse.Namespace) -> int:
    from ragnb.io.files import read_beir, write_run
    from ragnb.retrievers.retrieve import make_retriever

    dataset = read_beir(args.dataset, split=args.split)
    queries = dataset.judged_queries
    retriever = make_retriever(
        args.retriever,
        model=args.model,
        rrf_k=args.rrf_k,
        depth=max(args.k, 100),
        cache_dir=args.cache_dir or None,
    )
    retriever.index(dataset.corpus)
    run = retriever.retrieve(queries, k=args.k)
    write_run(run, args.out, tag=args.tag or args.retriever)
    print(
        f"{args.out}: {run['query_id'].nunique()} queries x top {args.k} "
        f"({args.retriever} on {dataset.name}/{args.split})",
        file=sys.stderr,
    )
    return 0


def add_retrieve_parser(sub: Any) -> None:
    """The ``retrieve`` subcommand's arguments."""
    p = sub.add_parser("retrieve", help="write a TREC run for the queries of a qrels split")
    p.add_argument("--dataset", required=True, help="BEIR folder")
    p.add_argument("--retriever", required=True, choices=["bm25", "dense", "hybrid"])
    p.add_argument(
        "--model",
        default="all-MiniLM-L6-v2",
        help="sentence-transformers name or path, or openai:<model>",
    )
    p.add_argument("-k", type=int, default=100, help="documents per query (default 100)")
    p.add_argument("--split", default="test", help="qrels split (default test)")
    p.add_argument("--rrf-k", type=int, default=60, help="RRF constant for hybrid (default 60)")
    p.add_argument("--cache-dir", default="", help="embedding cache folder")
    p.add_argument("--tag", default="", help="run tag (default: the retriever)")
    p.add_argument("--out", required=True, help="TREC run file to write")
    p.set_defaults(func=_cmd_retrieve)


def _cmd_data(args: argparse.Namespace) -> int:
    from ragnb.io.sample_data import build_sample

    summary = build_sample(args.out)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if not isinstance(v, dict | list)},
            indent=2,
            default=str,
        )
    )
    return 0


def add_data_parser(sub: Any) -> None:
    """The ``data`` subcommands' arguments."""
    p = sub.add_parser("data", help="build the embedded sample dataset")
    dsub = p.add_subparsers(dest="data_command", required=True)
    b = dsub.add_parser("build-sample", help="build data/pydocs from the stdlib's docstrings")
    b.add_argument("--out", default="data/pydocs", help="output folder (default data/pydocs)")
    b.set_defaults(func=_cmd_data)
