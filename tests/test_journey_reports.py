"""Journey: a report of one's own data, rendered into one's own folder.

The installed ``ragnb`` command runs in a subprocess from a temporary folder outside the
checkout, on a small BEIR folder the test writes there (a part of the shipped ``data/pydocs``):
``ragnb report`` writes the HTML report, its data and the index under ``--out``; ``-p`` takes
``NAME=VALUE`` for ``report``, ``run`` and ``golden`` alike, and a misspelt name is refused
with the closest one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import journeys
import pytest
from journeys import RAGNB, ragnb

NOTEBOOK = "01_retrieval_evaluation"


def write_dataset(folder: Path, n_queries: int = 8, n_docs: int = 200) -> Path:
    """The user's BEIR folder (:func:`journeys.write_dataset`)."""
    return journeys.write_dataset(folder, n_queries, n_docs)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """``ragnb report 01_retrieval_evaluation --dataset mydocs --out out/ -p depth=20``, run
    once from a folder of the user's: (folder, completed process, seconds)."""
    home = tmp_path_factory.mktemp("user")
    write_dataset(home / "mydocs")
    start = time.perf_counter()
    args = ["report", NOTEBOOK, "--dataset", "mydocs", "--out", "out/", "-p", "depth=20"]
    done = ragnb(*args, cwd=home)
    return home, done, time.perf_counter() - start


@pytest.mark.slow
def test_report_writes_the_html_and_its_data_under_out(rendered):
    home, done, seconds = rendered
    assert done.returncode == 0, done.stderr
    out = home / "out"
    html = out / f"{NOTEBOOK}.html"
    # the console names the report it wrote, and the index
    assert f"{NOTEBOOK}: " in done.stdout and str(html.resolve()) in done.stdout
    assert f"index: {(out / 'index.html').resolve()}" in done.stdout
    assert "Executing" in done.stderr  # the progress bar over the notebook's cells
    assert html.is_file() and (out / "index.html").is_file()
    assert (out / "_executed" / f"{NOTEBOOK}.ipynb").is_file()
    runs = sorted(p.name for p in (out / NOTEBOOK / "runs").glob("*.trec"))
    assert runs == ["bm25.trec", "dense.trec", "hybrid.trec"]
    # depth=20 reached the notebook: no run has more than 20 documents a query
    for run in (out / NOTEBOOK / "runs").glob("*.trec"):
        ranks = [int(line.split()[3]) for line in run.read_text().splitlines()]
        assert max(ranks) == 20
    # the report speaks of the user's dataset, never of the checkout's sample
    page = html.read_text(encoding="utf-8")
    assert "data/pydocs" not in page and str(home) not in page
    assert "<code>mydocs</code> (split <code>test</code>): 200 documents, 8 judged queries" in page
    # nothing was written into the checkout's reports/ folder
    assert not (Path(__file__).resolve().parents[1] / "reports" / NOTEBOOK / "mydocs").exists()
    assert seconds < 300


@pytest.mark.slow
def test_report_numbers_are_what_ragnb_evaluate_gives(rendered):
    home, done, _ = rendered
    assert done.returncode == 0, done.stderr
    run = home / "out" / NOTEBOOK / "runs" / "bm25.trec"
    qrels = home / "mydocs" / "qrels" / "test.tsv"
    ev = ragnb("evaluate", str(qrels), str(run), "-m", "nDCG@10", "--format", "csv", cwd=home)
    assert ev.returncode == 0, ev.stderr
    header, row = ev.stdout.strip().splitlines()
    value = float(dict(zip(header.split(","), row.split(","), strict=True))["value"])
    assert 0 < value <= 1
    page = (home / "out" / f"{NOTEBOOK}.html").read_text(encoding="utf-8")
    assert re.search(rf"<td [^>]*>{value:.4f}</td>", page)  # the summary table's cell


def test_parameter_in_two_words_is_refused_with_the_right_form(tmp_path):
    write_dataset(tmp_path / "mydocs")
    for command in (["report", NOTEBOOK], ["run", "retrieval"]):
        done = ragnb(
            *command,
            "--dataset" if command[0] == "report" else "-p",
            *(["mydocs"] if command[0] == "report" else ["dataset=mydocs"]),
            "-p",
            "depth",
            "20",
            cwd=tmp_path,
        )
        assert done.returncode == 2
        assert done.stderr.strip() == (
            "ragnb: error: -p takes NAME=VALUE: write -p depth=20, not -p depth 20"
        )
    assert not (tmp_path / "reports").exists()


def test_misspelt_parameter_names_the_closest_one(tmp_path):
    write_dataset(tmp_path / "mydocs")
    cases = {
        ("report", NOTEBOOK, "--dataset", "mydocs"): f"notebook {NOTEBOOK!r}",
        ("run", "retrieval", "-p", "dataset=mydocs"): "study 'retrieval'",
        ("golden", "--dataset", "mydocs", "--out", "gs"): "study 'golden'",
    }
    for command, owner in cases.items():
        done = ragnb(*command, "-p", "dept=20", cwd=tmp_path)
        assert done.returncode == 2, command
        assert done.stderr.strip() == (
            f"ragnb: error: {owner}: unknown parameter 'dept' (did you mean 'depth'?)"
        )
    assert not (tmp_path / "reports").exists() and not (tmp_path / "gs").exists()


def test_run_takes_paths_from_the_working_folder(tmp_path):
    write_dataset(tmp_path / "mydocs")
    done = ragnb(
        "run",
        "retrieval",
        "-p",
        "dataset=mydocs",
        "-p",
        "retrievers=[bm25]",
        "-p",
        "depth=20",
        "-p",
        "n_resamples=200",
        "--export",
        "exported",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "**Dataset** `mydocs`" in done.stdout and "8 judged queries of 8" in done.stdout
    assert (tmp_path / "exported" / "runs" / "bm25.trec").is_file()


@pytest.mark.slow
def test_a_non_editable_install_renders_a_report_from_any_folder(tmp_path):
    """``pip install`` of the built wheel (no checkout beside it): ``ragnb report`` finds the
    notebook and the sample dataset the wheel ships in ``share/ragnb``."""
    checkout = Path(__file__).resolve().parents[1]
    source = tmp_path / "source"  # the files a wheel is built from, not the whole checkout
    for part in ("pyproject.toml", "README.md"):
        (source / part).parent.mkdir(parents=True, exist_ok=True)
        (source / part).write_bytes((checkout / part).read_bytes())
    for part in ("ragnb", "notebooks", "data/pydocs"):
        shutil.copytree(
            checkout / part, source / part, ignore=shutil.ignore_patterns("__pycache__")
        )
    pip = [sys.executable, "-m", "pip"]
    wheels = tmp_path / "wheels"
    build = pip + ["wheel", "-q", "--no-deps", "--no-build-isolation", str(source), "-w"]
    subprocess.run([*build, str(wheels)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("ragnb-*.whl")
    site = tmp_path / "site"
    install = pip + ["install", "-q", "--no-deps", "--target", str(site), str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    assert (site / "share" / "ragnb" / "notebooks" / f"{NOTEBOOK}.ipynb").is_file()
    assert (site / "share" / "ragnb" / "data" / "pydocs" / "corpus.jsonl").is_file()

    home = tmp_path / "user"
    home.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}  # the installed copy, not the checkout
    env.pop("RAGNB_ROOT", None)
    args = ["report", NOTEBOOK, "--out", "out", "-p", "retrievers=[bm25]", "-p", "depth=20"]
    done = subprocess.run(
        [str(RAGNB), *args, "-p", "n_resamples=200"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    page = (home / "out" / f"{NOTEBOOK}.html").read_text(encoding="utf-8")
    # the shipped sample dataset: 1683 documents
    assert "<code>pydocs</code>" in page or "<code>data/pydocs</code>" in page
    assert "1683 documents" in page
    assert (home / "out" / NOTEBOOK / "runs" / "bm25.trec").is_file()
