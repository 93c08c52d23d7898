"""Compile ragnb's numba kernels once, into numba's on-disk cache (``make`` runs this).

numba compiles a kernel on its first call (about 15 seconds for the evaluation kernels on two
cores) and caches the machine code beside the module; running the common evaluation paths on a
few rows here fills that cache at install time, so that the first ``ragnb evaluate`` or
``ragnb trec-eval`` on a real run does not wait for the compiler. The paths run: a run and qrels
as dicts, as DataFrames, and as TREC files read by the columnar reader (dictionary-coded ids),
evaluated by ``evaluate`` and by ``ragnb trec-eval``.

Usage::

    .venv/bin/python scripts/compile_kernels.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from ragnb import groupsort
from ragnb.evaluate import evaluate
from ragnb.streaming import read_run_columnar
from ragnb.trec_eval import run_trec_eval

QRELS = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"a": 1, "d": 3}}
RUN = {"q1": {"a": 0.9, "x": 0.8, "b": 0.8, "c": 0.1}, "q2": {"d": 1.0, "a": 0.5}, "q3": {"a": 1}}
MEASURES = ["nDCG@10", "P@10", "R@100", "AP", "Bpref", "infAP", "RR"]


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.DataFrame(
        [(q, d, g) for q, docs in QRELS.items() for d, g in docs.items()],
        columns=["query_id", "doc_id", "relevance"],
    )
    run = pd.DataFrame(
        [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    return qrels, run


def main() -> None:
    if not groupsort.COMPILED:
        print("numba is not installed: nothing to compile")
        return
    start = time.perf_counter()
    evaluate(QRELS, RUN, MEASURES)
    qrels, run = _frames()
    evaluate(qrels, run, MEASURES)
    evaluate(qrels, run.astype({"query_id": "str", "doc_id": "str"}), MEASURES, order="file")
    evaluate(qrels, run.astype({"doc_id": "category"}), MEASURES)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run_file, qrels_file = folder / "run.trec", folder / "qrels.txt"
        ranked = run.sort_values(["query_id", "score"], ascending=[True, False])
        ranked = ranked.assign(rank=ranked.groupby("query_id").cumcount() + 1)
        lines = (f"{r.query_id} Q0 {r.doc_id} {r.rank} {r.score} t\n" for r in ranked.itertuples())
        run_file.write_text("".join(lines))
        qrels_file.write_text(
            "".join(f"{r.query_id} 0 {r.doc_id} {r.relevance}\n" for r in qrels.itertuples())
        )
        coded = read_run_columnar(run_file)[0]
        evaluate(qrels, coded, MEASURES)
        evaluate(qrels, coded, MEASURES, order="file")
        run_trec_eval(["-m", "all_trec", str(qrels_file), str(run_file)])
        run_trec_eval(["-q", "-m", "ndcg_cut.10", str(qrels_file), str(run_file)])
    print(f"ragnb's kernels compiled and cached in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
