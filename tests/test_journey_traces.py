"""Journey: production traces -> a golden set -> the production runs scored and compared.

The installed ``ragnb`` command, run from a temporary folder outside the checkout, on the sample
dataset the repository ships (copied into that folder, as a user's own corpus): example traces
written, imported with the dataset's query ids, a golden set built from the same traces by the
offline qrels judge, the production runs evaluated on it (above 0) and compared with the kit's
retrievers in one table. ``docs/journeys.md`` ("Production traces scored against their golden
set") is written from this test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

RAGNB = Path(sys.executable).parent / "ragnb"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "pydocs"
PRODUCTION = ("bm25", "bm25-plain")


def ragnb(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ragnb ARGS`` run from ``cwd`` as a user types it; the wall time on stdout's record."""
    start = time.perf_counter()
    done = subprocess.run([str(RAGNB), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    print(f"ragnb {' '.join(args)}: {time.perf_counter() - start:.1f} s, exit {done.returncode}")
    return done


def measure(printed: str, name: str) -> tuple[float, int]:
    """The mean and ``n_valid`` of ``name`` in ``ragnb evaluate``'s table."""
    found = re.search(rf"^{re.escape(name)}\s+all\s+([0-9.]+)\s+\(n_valid=(\d+)\)", printed, re.M)
    assert found, printed
    return float(found[1]), int(found[2])


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every command of the journey, run once in one folder: their results by step."""
    home = tmp_path_factory.mktemp("traces-journey")
    shutil.copytree(SAMPLE, home / "pydocs")
    steps: dict[str, object] = {"home": home}
    steps["example"] = ragnb(
        home, "traces", "example", "spans.jsonl", "--retrievers", *PRODUCTION, "--spans", "120"
    )
    steps["import"] = ragnb(
        home, "traces", "import", "spans.jsonl", "--out", "prod", "--dataset", "pydocs"
    )
    steps["golden"] = ragnb(
        home,
        *("golden", "--dataset", "pydocs", "--traces", "spans.jsonl", "--judge", "qrels"),
        *("--retriever", "bm25", "--max-queries", "20", "--out", "golden", "--quiet"),
    )
    steps["evaluate"] = {
        name: ragnb(home, "evaluate", "golden/golden.qrels", f"prod/runs/{name}.trec")
        for name in PRODUCTION
    }
    steps["compare"] = ragnb(
        home,
        *("compare", "golden/golden.qrels"),
        *("--run", "prod-bm25=prod/runs/bm25.trec"),
        *("--run", "prod-bm25-plain=prod/runs/bm25-plain.trec"),
        *("--retriever", "bm25", "--retriever", "bm25-plain"),
        *("--dataset", "pydocs", "--queries", "prod/queries.jsonl", "--resamples", "1000"),
    )
    return steps


def test_example_traces_are_written_from_any_folder_on_the_shipped_sample(journey):
    done = journey["example"]
    assert done.returncode == 0, done.stderr
    assert "wrote spans.jsonl: 120 retriever spans of ['bm25', 'bm25-plain']" in done.stdout
    assert (journey["home"] / "spans.jsonl").is_file()


def test_import_names_queries_as_the_golden_set_will(journey):
    done = journey["import"]
    assert done.returncode == 0, done.stderr
    assert re.search(r"query ids: (\d+) of \1 taken from pydocs/queries.jsonl", done.stdout)
    prod = journey["home"] / "prod"
    assert sorted(p.name for p in (prod / "runs").iterdir()) == ["bm25-plain.trec", "bm25.trec"]
    ids = {json.loads(line)["_id"] for line in (prod / "queries.jsonl").read_text().splitlines()}
    sample = (journey["home"] / "pydocs" / "queries.jsonl").read_text().splitlines()
    assert ids <= {json.loads(line)["_id"] for line in sample}


def test_golden_set_from_the_same_traces_shares_the_query_ids(journey):
    done = journey["golden"]
    assert done.returncode == 0, done.stderr
    home = journey["home"]
    assert "judgements of 20 queries" in done.stdout
    assert "judge:       qrels-judge" in (home / "golden" / "golden.qrels.README").read_text()
    judged = {
        line.split()[0]
        for line in (home / "golden" / "golden.qrels").read_text().split("\n")
        if line
    }
    ranked = {
        line.split()[0]
        for line in (home / "prod" / "runs" / "bm25.trec").read_text().split("\n")
        if line
    }
    assert len(judged) == 20 and judged <= ranked


@pytest.mark.parametrize("name", PRODUCTION)
def test_production_runs_score_above_zero_on_their_golden_set(journey, name):
    done = journey["evaluate"][name]
    assert done.returncode == 0, done.stderr
    ndcg, n_valid = measure(done.stdout, "nDCG@10")
    assert ndcg > 0.3 and n_valid == 20
    assert measure(done.stdout, "P@5")[0] > 0.3


def test_one_table_compares_the_production_and_the_kits_retrievers(journey):
    done = journey["compare"]
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("\n\n")[0].splitlines()
    assert table[0].split()[:5] == ["#", "system", "rank", "tie_group", "nDCG@10"]
    rows = {row.split()[1]: row.split() for row in table[1:]}
    assert sorted(rows) == ["bm25", "bm25-plain", "prod-bm25", "prod-bm25-plain"]
    for row in rows.values():
        ndcg = float(re.match(r"[0-9.]+", row[4])[0])
        assert 0 < ndcg <= 1
    # the production spans hold 5 documents; the kit's BM25 ranks 100 from the whole corpus
    assert float(re.match(r"[0-9.]+", rows["bm25"][5])[0]) > float(rows["prod-bm25"][5])
    assert "ranks on nDCG@10:" in done.stdout
