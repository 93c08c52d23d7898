"""``ragnb trec-eval``: trec_eval 10.0's command line and output, byte for byte
(:func:`ragnb.evaluation.trec_eval.run_trec_eval`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """``trec-eval`` in the list of subcommands; its arguments are trec_eval's own flags (GNU
    getopt), which :func:`run` reads."""
    sub.add_parser(
        "trec-eval",
        help="trec_eval's command line and output: ragnb trec-eval [-q] [-c] [-m MEASURE]... "
        "QRELS RUN",
        add_help=False,
    )


def run(argv: Sequence[str]) -> int:
    """``ragnb trec-eval ARGV``: trec_eval's output on stdout, the readers' notes on stderr."""
    from ragnb.evaluation.trec_eval import run_trec_eval

    text, notes = run_trec_eval(argv)
    for note in notes:
        print(f"ragnb trec-eval: note: {note}", file=sys.stderr)
    sys.stdout.write(text)
    return 0
