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
import sys
from collections.abc import Sequence

from ragnb.cli import data, evaluate, golden, llm, report, traces, trec_eval
from ragnb.cli.options import param_syntax_error
from ragnb.core.lazylibs import MissingExtra
from ragnb.errors import InputError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="ragnb", description="Evaluate the retrieval step of RAG systems."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    report.add_report_parser(sub)
    data.add_retrieve_parser(sub)
    evaluate.add_parsers(sub)
    data.add_data_parser(sub)
    llm.add_parser(sub)
    golden.add_parser(sub)
    report.add_study_parsers(sub)
    traces.add_parser(sub)
    trec_eval.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragnb`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trec-eval"]:  # trec_eval's own flags (GNU getopt), not argparse's
        try:
            return trec_eval.run(argv[1:])
        except (InputError, FileNotFoundError) as e:
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 2
    wrong = param_syntax_error(argv)
    if wrong is not None:
        print(f"ragnb: error: {wrong}", file=sys.stderr)
        return 2
    parser = golden.audit_parser() if argv[:2] == ["golden", "audit"] else build_parser()
    args = parser.parse_args(argv[2:] if argv[:2] == ["golden", "audit"] else argv)
    try:
        return int(args.func(args))
    except (InputError, FileNotFoundError, MissingExtra) as e:
        print(f"ragnb: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
