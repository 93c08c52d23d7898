"""Compile ragnb's numba kernels once, into numba's on-disk cache (``make`` runs this).

numba compiles a kernel on its first call (about 15 seconds for the evaluation kernels on two
cores) and caches the machine code beside the module; running the common evaluation paths on a
few rows here fills that cache at install time, so that the first ``ragnb evaluate`` or
``ragnb trec-eval`` on a real run does not wait for the compiler. The paths run: a run and qrels
as dicts, as DataFrames, and as TREC files read by the columnar reader (dictionary-coded ids),
evaluated by ``evaluate`` and by ``ragnb trec-eval``, and a TREC file joined with its qrels as it
is read (``ragnb.io.runscan``, the path of ``ragnb trec-eval`` on a large run).

Usage::

    .venv/bin/python scripts/compile_kernels.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from ragnb.evaluation.evaluate import evaluate
from ragnb.evaluation.trec_eval import run_trec_eval
from ragnb.frames import groupsort  # imported: the few rows below take the compiled kernels
from ragnb.frames.index import index_qrels
from ragnb.frames.schema import qrels_from_dict, run_from_dict
from ragnb.io.columnar import read_run_columnar
from ragnb.io.files import write_qrels, write_run

QRELS = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"a": 1, "d": 3}}
RUN = {"q1": {"a": 0.9, "x": 0.8, "b": 0.8, "c": 0.1}, "q2": {"d": 1.0, "a": 0.5}, "q3": {"a": 1}}
MEASURES = ["nDCG@10", "P@10", "R@100", "AP", "Bpref", "infAP", "RR"]


def main() -> None:
    if not groupsort.COMPILED:
        print("numba is not installed: nothing to compile")
        return
    from ragnb.io.runscan import scan_qrels, scan_run  # numba's, like the kernels

    start = time.perf_counter()
    evaluate(QRELS, RUN, MEASURES)
    qrels, run = qrels_from_dict(QRELS), run_from_dict(RUN)
    evaluate(qrels, run, MEASURES)
    evaluate(qrels, run, MEASURES, order="file")
    evaluate(qrels, run.astype({"doc_id": "category"}), MEASURES)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run_file, qrels_file = folder / "run.trec", folder / "qrels.txt"
        write_run(run, run_file, tag="t")
        write_qrels(qrels, qrels_file)
        coded = read_run_columnar(run_file)[0]
        evaluate(qrels, coded, MEASURES)
        evaluate(qrels, coded, MEASURES, order="file")
        run_trec_eval(["-m", "all_trec", str(qrels_file), str(run_file)])
        # a large run file is joined with its qrels as it is read (ragnb.io.runscan)
        scan_run(run_file, index_qrels(qrels))
        scan_run(run_file, scan_qrels(qrels_file))
        run_trec_eval(["-q", "-m", "ndcg_cut.10", str(qrels_file), str(run_file)])
    print(f"ragnb's kernels compiled and cached in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
