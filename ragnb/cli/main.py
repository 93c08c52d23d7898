"""The ``ragnb`` command line: the same functions the notebooks call.

::

    ragnb report NOTEBOOK [-p NAME=VALUE]... [--dataset PATH] [--out DIR]
    ragnb report --all [--dataset PATH] [--out DIR]
    ragnb retrieve --dataset PATH --retriever bm25|dense|hybrid [--model M] [-k 100] --out RUN
    ragnb evaluate QRELS RUN -m nDCG@10 -m P@5 ... [--per-query] [--format table|csv|json]
                   [--fail-under nDCG@10=0.60]... [--baseline BASE.trec [--max-drop D]]
    ragnb evaluate-samples SAMPLES.jsonl|.csv [-m id_based_context_recall@5]... [--per-query]
                   [--format ...] [--fail-under ...]... [--baseline BASE.jsonl [--max-drop D]]
    ragnb compare QRELS --run NAME=RUN[,RUN...]... [-m nDCG@10]... [--baseline NAME]...
                  [--target-effect 0.02] [--format table|csv|json]
    ragnb data build-sample [--out data/pydocs]
    ragnb llm serve [--model NAME] [--port N] [--n-ctx 2048] [--threads N]
    ragnb trec-eval [-q] [-c] [-n] [-J] [-l L] [-M M] [-m MEASURE[.PARAMS]]... QRELS RUN
    ragnb golden --dataset PATH [--queries FILE | --traces FILE] --out DIR
                 [--judge local|openai|noisy|qrels] [--max-queries N] [--depth 5]
                 [--human-labels QRELS] [-p NAME=VALUE]... ...
    ragnb golden audit DIR [--judge-kappa-min 0.4] [--judge J --model M --prompt P ...]
    ragnb run STUDY [-p NAME=VALUE]... [--export DIR]
    ragnb params [--check | --write] [--only STUDY]... [--notebooks DIR]
    ragnb traces import TRACES --out DIR [--retriever-attribute NAME]
    ragnb traces example OUT [--dataset data/pydocs] [--spans 200] [--retrievers bm25 dense]

Bad input ends with ``ragnb: error: ...`` naming the file, line, query or parameter, and exit
status 2; ``report``, ``run`` and ``golden`` take parameters as ``-p NAME=VALUE``, and refuse
an unknown name with the closest known one. ``ragnb evaluate`` and ``ragnb evaluate-samples``
exit with 1 when a build gate (``--fail-under``, ``--baseline``) fails, after printing the table;
``ragnb golden audit`` exits with 1 when the judge's kappa against the human labels falls below
``--judge-kappa-min`` or below the calibration the golden set was accepted with; ``ragnb params
--check`` exits with 1 when a notebook's parameters cell differs from its config.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ragnb.cli.options import param_syntax_error
from ragnb.errors import InputError, MissingExtra

__all__ = ["build_parser", "command", "main"]

#: The subcommands' parsers in the order of ``ragnb -h``: the module of :mod:`ragnb.cli` and
#: its function that adds them, and the commands each adds. A command imports its own module
#: only, so that ``ragnb trec-eval`` loads no study, no report and no model library.
PARSERS = (
    ("report", "add_report_parser", ("report",)),
    ("data", "add_retrieve_parser", ("retrieve",)),
    ("evaluate", "add_parsers", ("evaluate", "evaluate-samples", "compare")),
    ("data", "add_data_parser", ("data",)),
    ("llm", "add_parser", ("llm",)),
    ("golden", "add_parser", ("golden",)),
    ("report", "add_study_parsers", ("run", "params")),
    ("traces", "add_parser", ("traces",)),
    ("trec_eval", "add_parser", ("trec-eval",)),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests).

    Parameters
    ----------
    command : str, optional
        A subcommand (``"evaluate"``): the parser holds only the subcommands of its module's
        function, which is all it imports. Default (or an unknown name): every subcommand.
    """
    parser = argparse.ArgumentParser(
        prog="ragnb", description="Evaluate the retrieval step of RAG systems."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = [p for p in PARSERS if command in p[2]] or PARSERS
    for module, function, _ in wanted:
        getattr(importlib.import_module(f"ragnb.cli.{module}"), function)(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragnb`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trec-eval"]:  # trec_eval's own flags (GNU getopt), not argparse's
        from ragnb.cli import trec_eval

        try:
            return trec_eval.run(argv[1:])
        except (InputError, FileNotFoundError) as e:
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 2
    wrong = param_syntax_error(argv)
    if wrong is not None:
        print(f"ragnb: error: {wrong}", file=sys.stderr)
        return 2
    if argv[:2] == ["golden", "audit"]:
        from ragnb.cli import golden

        args = golden.audit_parser().parse_args(argv[2:])
    else:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
    try:
        return int(args.func(args))
    except (InputError, FileNotFoundError, MissingExtra) as e:
        print(f"ragnb: error: {e}", file=sys.stderr)
        return 2


#: Commands that only compute and print: once their output is flushed, the program ends at once.
QUICK_EXIT = ("trec-eval", "evaluate")


def command() -> None:
    """The installed ``ragnb`` program: :func:`main` on ``sys.argv``, then exit with its status.

    After ``ragnb trec-eval`` and ``ragnb evaluate`` (:data:`QUICK_EXIT`), whose work ends with
    their output, the process flushes standard output and error and ends there (``os._exit``),
    as trec_eval's C program does, instead of freeing every array and unloading every module one
    by one: on a run of ten million lines that teardown takes about a quarter of a second. Other
    commands (servers, caches, ledgers) exit normally. :func:`main` itself never exits, for
    callers in the same process.
    """
    argv = sys.argv[1:]
    status = main(argv)
    if argv[:1] and argv[0] in QUICK_EXIT:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # the reader left (``| head``): as Python's own exit does
            status = status or 120
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    command()
