"""What a command imports on a small file: only what it needs (a structural check, not a timed one).

Each command runs in a child interpreter through ``ragnb.cli.main.main``, which then prints the
modules it imported. ``ragnb trec-eval`` and ``ragnb evaluate`` on a small file start neither
numba (its compiled kernels cost about a second to load; a small input takes the plain-Python
copy of the kernels) nor DuckDB (a small file that pyarrow's reader does not take is read by the
Python readers), and none of the libraries of the other commands (scipy, the notebooks',
the models').
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data" / "trec_eval"

CHILD = """
import contextlib, io, json, sys
from ragnb.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""

#: Top-level modules a command on a small file must not import.
NOT_NEEDED = (
    "numba",
    "llvmlite",
    "duckdb",
    "scipy",
    "sklearn",
    "statsmodels",
    "matplotlib",
    "altair",
    "papermill",
    "nbformat",
    "openai",
    "httpx",
    "torch",
    "sentence_transformers",
    "onnxruntime",
    "ranx",
    "ir_measures",
    "yaml",
)


def _run(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def _imported(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(NOT_NEEDED))


@pytest.mark.parametrize("flags", [[], ["-q", "-m", "all_trec"]])
def test_trec_eval_on_a_small_file_imports_only_what_it_needs(flags):
    # results.test is tab-separated: the file pyarrow's CSV reader does not take
    child = _run("trec-eval", *flags, str(DATA / "qrels.test"), str(DATA / "results.test"))
    assert child["status"] == 0
    assert _imported(child["modules"]) == []
    assert "ragnb.frames.groupsort" not in child["modules"]  # the plain-Python copy ran
    assert "ragnb.frames.groupsort_plain" in child["modules"]
    assert "pyarrow.parquet" not in child["modules"]
    if not flags:  # trec_eval 10.0's own output for these files
        assert child["out"] == (DATA / "out.test").read_text()


def _random_files(folder: Path) -> tuple[Path, Path]:
    """Qrels and a run of 40 queries with tied scores, unjudged documents, shared id prefixes
    longer than 8 bytes, multi-byte ids, queries missing from either side."""
    rng = np.random.default_rng(7)
    docs = [f"doc-prefix-{'é' if d % 3 else ''}{d}" for d in range(300)]
    qrels, run = [], []
    for q in range(40):
        picked = rng.choice(len(docs), size=80, replace=False)
        if q % 9 != 4:
            qrels += [f"q{q} 0 {docs[d]} {rng.integers(-1, 4)}" for d in picked[:30]]
        if q % 7 != 2:
            n = int(rng.integers(1, 80))
            scores = np.round(rng.normal(size=n), 1)  # ties
            run += [
                f"q{q} Q0 {docs[d]} {r + 1} {s} sys"
                for r, (d, s) in enumerate(zip(picked[-n:], scores, strict=True))
            ]
    (folder / "qrels").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (folder / "run").write_text("\n".join(run) + "\n", encoding="utf-8")
    return folder / "qrels", folder / "run"


def test_trec_eval_on_a_small_file_prints_what_the_compiled_kernels_give(tmp_path):
    """The plain-Python kernels of the child against this process's compiled ones."""
    pytest.importorskip("numba")
    from ragnb.evaluation.trec_eval import run_trec_eval
    from ragnb.frames import groupsort

    assert groupsort.COMPILED  # imported: this process takes the compiled kernels
    qrels, run = _random_files(tmp_path)
    for files in ([DATA / "qrels.test", DATA / "results.test"], [qrels, run]):
        argv = ["-q", "-c", "-m", "all_trec", *map(str, files)]
        child = _run("trec-eval", *argv)
        assert "ragnb.frames.groupsort" not in child["modules"]
        assert child["out"] == run_trec_eval(argv)[0]
        assert len(child["out"].splitlines()) > 3 * 95


def test_evaluate_on_a_small_file_imports_only_what_it_needs(tmp_path):
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\nq2 Q0 d3 1 1.0 sys\n")
    qrels.write_text("q1 0 d2 1\nq2 0 d3 2\n")
    child = _run("evaluate", str(qrels), str(run), "-m", "nDCG@10", "-m", "P@1")
    assert child["status"] == 0
    assert _imported(child["modules"]) == []
    assert "nDCG@10" in child["out"]


PRELOAD = """
import sys, threading
from ragnb.io import dispatch
dispatch.PYTHON_READS_BYTES = int(sys.argv[2])
run = dispatch.read_run_file(sys.argv[1])
for thread in threading.enumerate():
    if thread.name == "ragnb-kernels":
        thread.join()
print(len(run.frame), "ragnb.frames.groupsort" in sys.modules, "numba" in sys.modules)
"""


@pytest.mark.parametrize(("limit", "loaded"), [(1 << 20, "False"), (0, "True")])
def test_a_large_run_loads_the_compiled_kernels_while_it_is_read(tmp_path, limit, loaded):
    """Above the size the Python readers take, reading the run starts loading the kernels."""
    pytest.importorskip("numba")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\n")
    done = subprocess.run(
        [sys.executable, "-c", PRELOAD, str(run), str(limit)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["2", loaded, loaded]
