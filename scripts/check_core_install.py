"""Check a core install of ragnb (``pip install ragnb``, no extras) in the venv given.

Run by ``make core-check`` (and so by ``make test``) with the project's interpreter::

    python scripts/check_core_install.py .venv-core

It fails (exit status 1, each failed check listed) when the venv is over its size budget, holds
a package that belongs to an extra, cannot run ``ragnb evaluate``, gives another value than the
project's own install on the same files, or raises an error for a missing extra that does not
name it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

MAX_MB = 500
# distributions that belong to extras, never to the core
FORBIDDEN = {
    "torch",
    "sentence-transformers",
    "transformers",
    "jupyterlab",
    "notebook",
    "papermill",
    "nbconvert",
    "altair",
    "faiss-cpu",
    "hnswlib",
    "bm25s",
    "onnxruntime",
    "ray",
    "llama-cpp-python",
    "optuna",
    "pytest",
    "ranx",
    "ir-measures",
}

QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d4 1\nq2 0 d9 1\n"
RUN = (
    "q1 Q0 d2 1 3.0 sys\nq1 Q0 d5 2 2.0 sys\nq1 Q0 d1 3 1.0 sys\n"
    "q2 Q0 d4 1 0.9 sys\nq2 Q0 d7 2 0.8 sys\n"
)


def megabytes(folder: Path) -> int:
    """``du -sm folder``: disk use, mebibytes."""
    out = subprocess.run(["du", "-sm", str(folder)], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[0])


def distributions(python: Path) -> set[str]:
    out = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return {d["name"].lower().replace("_", "-") for d in json.loads(out.stdout)}


def evaluate_value(ragnb: Path, qrels: Path, run: Path) -> tuple[int, str, str]:
    out = subprocess.run(
        [str(ragnb), "evaluate", str(qrels), str(run), "-m", "nDCG@10", "--format", "csv"],
        capture_output=True,
        text=True,
    )
    return out.returncode, out.stdout, out.stderr


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    venv = Path(argv[1])
    python, ragnb = venv / "bin" / "python", venv / "bin" / "ragnb"
    failures: list[str] = []

    size = megabytes(venv)
    print(f"core install: {size} MB in {venv} (budget {MAX_MB} MB)")
    if size > MAX_MB:
        failures.append(f"the core venv is {size} MB, over {MAX_MB} MB")

    installed = distributions(python)
    print(f"core install: {len(installed)} distributions")
    extra = sorted(installed & FORBIDDEN)
    if extra:
        failures.append(f"the core install holds packages of extras: {', '.join(extra)}")

    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = Path(tmp) / "qrels.txt", Path(tmp) / "run.trec"
        qrels.write_text(QRELS)
        run.write_text(RUN)
        code, core_out, err = evaluate_value(ragnb, qrels, run)
        print(f"core install: ragnb evaluate exit {code}\n{core_out.strip()}")
        if code != 0:
            failures.append(f"`ragnb evaluate` failed in the core install: {err.strip()}")
        full = Path(sys.executable).parent / "ragnb"
        if not full.is_file():
            failures.append(f"run this script with the project venv's python (no {full})")
            full_out = core_out
        else:
            _, full_out, _ = evaluate_value(full, qrels, run)
        if code == 0 and core_out != full_out:
            failures.append(
                "`ragnb evaluate` in the core install differs from the full install:\n"
                f"{core_out}\n{full_out}"
            )

        # a command that needs an extra says which one
        dataset = Path(__file__).resolve().parents[1] / "data" / "pydocs"
        out = subprocess.run(
            [str(ragnb), "retrieve", "--dataset", str(dataset), "--retriever", "bm25"]
            + ["--out", str(Path(tmp) / "bm25.trec")],
            capture_output=True,
            text=True,
        )
        err = out.stderr.strip()
        print(f"core install: ragnb retrieve (needs an extra) exit {out.returncode}: {err}")
        if out.returncode != 2 or 'pip install "ragnb[embed]"' not in err:
            failures.append(f"`ragnb retrieve` does not name the extra to install: {err!r}")

    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
