"""The core install evaluates without the ``fast`` extra: same numbers, clear errors.

A child interpreter runs with numba, pyarrow, DuckDB and openai made unimportable (``None`` in
``sys.modules``, which is what a missing package looks like to ``import``): the evaluation
kernels then run as plain Python and strings are encoded by Python. Its per-query values must
equal this process's (compiled kernels, Arrow strings) on random runs with ties, unjudged
documents and missing queries; modules that need an extra must say which.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.evaluation.evaluate import evaluate

BLOCKED = ("numba", "pyarrow", "duckdb", "openai")
MEASURES = [
    "P@5",
    "P@10",
    "R@100",
    "nDCG@10",
    "nDCG@100",
    "RR",
    "map",
    "Rprec",
    "bpref",
    "Judged@10",
    "Success@3",
    "F(alpha=0.5)@10",
]

CHILD = """
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None
from ragnb.frames import groupsort
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.readers import read_qrels, read_run
result = evaluate(read_qrels(sys.argv[1]), read_run(sys.argv[2]), {measures!r})
print(json.dumps({{"compiled": groupsort.COMPILED,
                   "per_query": result.per_query.to_dict(orient="records")}}))
"""


def _write_random_case(folder: Path, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    qrels_lines, run_lines = [], []
    for q in range(30):
        qid = f"q{q:02d}"
        docs = [f"d{d}" for d in rng.choice(400, size=120, replace=False)]
        if q % 7 != 3:  # some queries have no judgements
            for doc in docs[: int(rng.integers(1, 40))]:
                qrels_lines.append(f"{qid} 0 {doc} {int(rng.integers(0, 4))}")
        if q % 11 != 5:  # some judged queries are missing from the run
            n = int(rng.integers(1, 120))
            scores = -np.sort(-np.round(rng.normal(size=n), 1))  # rounded: ties
            for rank, (doc, score) in enumerate(
                zip(rng.permutation(docs)[:n], scores, strict=True)
            ):
                run_lines.append(f"{qid} Q0 {doc} {rank + 1} {score} sys")
    qrels, run = folder / "qrels.txt", folder / "run.trec"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    run.write_text("\n".join(run_lines) + "\n")
    return qrels, run


@pytest.mark.filterwarnings("ignore:.*rank column that disagrees")  # ties ranked by position
def test_plain_python_kernels_give_the_compiled_values(tmp_path: Path):
    from ragnb.frames import groupsort
    from ragnb.io.readers import read_qrels, read_run

    assert groupsort.COMPILED  # this process has the fast extra (make test installs it)
    for seed in range(2):
        qrels, run = _write_random_case(tmp_path, seed)
        code = CHILD.format(blocked=BLOCKED, measures=MEASURES)
        out = subprocess.run(
            [sys.executable, "-c", code, str(qrels), str(run)],
            capture_output=True,
            text=True,
            check=True,
        )
        child = json.loads(out.stdout)
        assert child["compiled"] is False
        theirs = pd.DataFrame(child["per_query"]).set_index(["query_id", "measure"])["value"]
        ours = evaluate(read_qrels(qrels), read_run(run), MEASURES).per_query
        ours = ours.set_index(["query_id", "measure"])["value"]
        assert len(ours) > 200
        pd.testing.assert_series_equal(theirs.sort_index(), ours.sort_index(), check_exact=True)


def test_a_module_that_needs_an_extra_names_it():
    code = (
        f"import sys\nfor n in {BLOCKED!r}: sys.modules[n] = None\n"
        "try:\n    import ragnb.evaluation.streaming\nexcept ImportError as e:\n    print(e)\n"
        "from ragnb.io.files import write_parquet\nimport pandas as pd\n"
        "try:\n    write_parquet(pd.DataFrame({'a': [1]}), 'never-written.parquet')\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines == [
        'pyarrow is not installed: pip install "ragnb[fast]"',
        'pyarrow is not installed: pip install "ragnb[fast]"',
    ]
    assert not Path("never-written.parquet").exists()
