"""Every per-query value of trec_eval 10.0's ``-q -m all_trec`` against ``ragnb evaluate``.

trec_eval prints 4 decimals (``%6.4f``), too few to compare to 1e-9, so this script builds it
from ``--trec-eval-src`` (a source tree, e.g. ``git archive`` of https://github.com/usnistgov/
trec_eval) twice, in a work folder: once as it is, and once with every ``%6.4f`` of
``meas_print_single.c`` and ``meas_print_final.c`` replaced by ``%.17g`` (every digit of each
double; the copy is patched with a regular expression, the source tree is left alone). Then,
on the BM25 run of each shared dataset (``tests/bm25_runs.py``: bm25s, top 100, a few judged
queries left out of the run and a few queries without qrels added):

* ``trec_eval -q -c -m all_trec`` (the widened build; ``-c`` because the run lacks judged
  queries, which trec_eval 10.0 refuses otherwise) against ``ragnb evaluate`` with the same
  measure names (``P_5``, ``iprec_at_recall_0.10``, ``ndcg_cut_10``, ...; ``-l`` as each
  measure's ``rel``; the run read back from its file by ``read_run_columnar``, as the command
  reads it), query by query: it prints how many (query, measure) values were compared
  and how many differ by more than ``--tol`` (1e-9), with their values. ``relstring`` is a
  string and is compared through the next point;
* ``trec_eval -q -c -m all_trec`` (the build as it is) against ``ragnb trec-eval`` with the
  same arguments: equal byte for byte or not.

The graded datasets (``msmarco-dl-subset``, ``dbpedia-entity-subset``) run at ``-l1`` and
``-l2``. The exit status is 1 when a value differs or an output is not byte-identical.

Usage::

    python benchmarks/trec_eval_equality.py --trec-eval-src /path/to/trec_eval
    python benchmarks/trec_eval_equality.py --trec-eval-src src --datasets ../shared/datasets
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from bm25_runs import SHARED_DATASETS, bm25_run  # noqa: E402

from ragnb.evaluation.evaluate import evaluate  # noqa: E402
from ragnb.evaluation.trec_eval import run_trec_eval  # noqa: E402
from ragnb.io.columnar import read_run_columnar  # noqa: E402
from ragnb.io.files import write_qrels, write_run  # noqa: E402
from ragnb.measures import Measure, parse_measure  # noqa: E402

#: The files whose ``%6.4f`` formats print the measures' values.
PRINT_FILES = ("meas_print_single.c", "meas_print_final.c")
#: Levels (``-l``) each dataset is evaluated at: the graded ones at 1 and 2.
LEVELS = {"scifact": (1,), "msmarco-dl-subset": (1, 2), "dbpedia-entity-subset": (1, 2)}


def build(source: Path, folder: Path, *, widened: bool) -> Path:
    """trec_eval built with ``make`` in a copy of ``source``; ``widened``: ``%6.4f`` -> ``%.17g``
    in :data:`PRINT_FILES` first. Returns the binary's path."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".git", "test"))
    if widened:
        for name in PRINT_FILES:
            path = folder / name
            text, n = re.subn(r"%6\.4f", "%.17g", path.read_text())
            if not n:
                raise SystemExit(f"{path}: no %6.4f format to widen")
            path.write_text(text)
    subprocess.run(["make", "-s"], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return folder / "trec_eval"


def trec_eval_values(binary: Path, args: list[str]) -> pd.DataFrame:
    """The per-query lines of ``binary -q ARGS`` as a frame ``name``, ``query_id``, ``value``
    (str), without the ``all`` lines."""
    out = subprocess.run([str(binary), "-q", *args], check=True, capture_output=True, text=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    frame = pd.DataFrame(rows, columns=["name", "query_id", "value"])
    frame["name"] = frame["name"].str.strip()
    return frame[frame["query_id"] != "all"]


def ragnb_measure(name: str, level: int) -> Measure:
    """The ragnb measure of a trec_eval name, at trec_eval's ``-l`` level."""
    m = parse_measure(name)
    if m.spec.param("rel") is not None:
        m = Measure(m.family, m.cutoff, **{**m.params, "rel": level})
    return m


def compare_values(
    wide_binary: Path, qrels, run, qrels_path: Path, run_path: Path, level: int, tol: float
) -> tuple[int, list[tuple[str, str, float, float]]]:
    """(values compared, values differing by more than ``tol`` as (measure, query, trec_eval,
    ragnb)) of ``-c -m all_trec`` at ``-l level``."""
    args = ["-c", "-m", "all_trec", f"-l{level}", str(qrels_path), str(run_path)]
    theirs = trec_eval_values(wide_binary, args)
    theirs = theirs[theirs["name"] != "relstring"]
    names = list(dict.fromkeys(theirs["name"]))
    measures = {name: ragnb_measure(name, level) for name in names}
    wide = evaluate(qrels, run, list(measures.values())).per_query_wide()
    columns = [str(measures[n]) for n in theirs["name"]]
    rows_at, columns_at = (
        wide.index.get_indexer(theirs["query_id"]),
        wide.columns.get_indexer(columns),
    )
    if (rows_at < 0).any() or (columns_at < 0).any():
        raise SystemExit("ragnb evaluate lacks a query or a measure trec_eval printed")
    ours = wide.to_numpy(dtype=np.float64)[rows_at, columns_at]
    expected = theirs["value"].astype(np.float64).to_numpy()
    bad = np.nonzero(~(np.abs(ours - expected) <= tol))[0]
    diffs = [
        (theirs["name"].iloc[i], theirs["query_id"].iloc[i], float(expected[i]), float(ours[i]))
        for i in bad
    ]
    return len(expected), diffs


def compare_text(binary: Path, qrels_path: Path, run_path: Path, level: int) -> str | None:
    """None when ``ragnb trec-eval -q -c -m all_trec -l level`` prints what trec_eval prints,
    else the first line that differs (trec_eval's, then ragnb's)."""
    args = ["-q", "-c", "-m", "all_trec", f"-l{level}", str(qrels_path), str(run_path)]
    theirs = subprocess.run([str(binary), *args], check=True, capture_output=True, text=True)
    ours, _ = run_trec_eval(args)
    if ours == theirs.stdout:
        return None
    for a, b in zip(theirs.stdout.splitlines(), ours.splitlines(), strict=False):
        if a != b:
            return f"trec_eval {a!r} / ragnb {b!r}"
    return "the outputs differ in length"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--trec-eval-src", type=Path, required=True, help="trec_eval source tree")
    p.add_argument("--datasets", type=Path, default=REPO.parent / "shared" / "datasets")
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temp one)")
    p.add_argument("--tol", type=float, default=1e-9)
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="ragnb-trec-eval-equality-"))
    work.mkdir(parents=True, exist_ok=True)
    wide = build(args.trec_eval_src, work / "trec_eval-wide", widened=True)
    plain = build(args.trec_eval_src, work / "trec_eval-plain", widened=False)
    failed = False
    print(f"{'dataset':<24} {'-l':>3} {'queries':>8} {'compared':>9} {'differ':>7}  text")
    for name in SHARED_DATASETS:
        qrels, run, _ = bm25_run(args.datasets / name)
        qrels_path, run_path = work / f"{name}.qrels", work / f"{name}.run"
        write_qrels(qrels, qrels_path, form="trec")
        write_run(run, run_path, tag="bm25")
        for level in LEVELS[name]:
            # the run as `ragnb evaluate` reads the file: arrow-backed ids
            coded, _ = read_run_columnar(run_path)
            n, diffs = compare_values(wide, qrels, coded, qrels_path, run_path, level, args.tol)
            text = compare_text(plain, qrels_path, run_path, level)
            n_queries = qrels["query_id"].nunique()
            same = "identical" if text is None else "DIFFERS"
            print(f"{name:<24} {level:>3} {n_queries:>8} {n:>9} {len(diffs):>7}  {same}")
            for measure, qid, theirs, ours in diffs[:20]:
                print(f"    {measure} query {qid}: trec_eval {theirs!r}, ragnb {ours!r}")
            if text is not None:
                print(f"    first differing line: {text}")
            failed |= bool(diffs) or text is not None
    print(f"files in {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
