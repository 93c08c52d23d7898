"""Journey: the reports render quickly, and an extra that means nothing with the stand-in LLM
is skipped, with the first screen saying how to run it.

The installed ``ragnb`` command runs in a subprocess from a temporary folder outside the
checkout, on a small BEIR folder the test writes there (a part of the shipped ``data/pydocs``).
Notebook 05's default LLM is a tiny local model (SmolLM2-135M-Instruct); its answers and grades
say nothing about retrieval, so by default they are not generated: no server starts, no request
is sent, and the report's first screen says ``llm_grades=True`` runs them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import journeys
import pytest
from browser import visible_text
from journeys import ragnb

NOTEBOOK = "05_measure_correlation"


def write_dataset(folder: Path, n_queries: int = 12, n_docs: int = 300) -> Path:
    """The user's BEIR folder (:func:`journeys.write_dataset`)."""
    return journeys.write_dataset(folder, n_queries, n_docs)


@pytest.mark.slow
def test_correlation_report_skips_the_stand_in_models_grades_and_says_how_to_run_them(
    tmp_path: Path,
):
    write_dataset(tmp_path / "mydocs")
    start = time.perf_counter()
    done = ragnb(
        "report",
        NOTEBOOK,
        "--dataset",
        "mydocs",
        "--out",
        "out",
        "-p",
        "embedders=[wordllama]",
        "-p",
        "n_negatives=20",
        "-p",
        "export_dir=out/samples",
        cwd=tmp_path,
    )
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert "Executing" in done.stderr  # the progress bar over the notebook's cells
    page = (tmp_path / "out" / f"{NOTEBOOK}.html").read_text(encoding="utf-8")
    text = visible_text(page)
    lead = "Skipped: the LLM-graded answers, and with them the correlation study."
    assert lead in text and text.index(lead) < text.index("Samples") < 3000
    assert "SmolLM2-135M-Instruct" in text  # the stand-in is called what it is
    assert "set llm_grades=True to run them" in text
    assert "12 of 12 judged queries qualify" in text
    assert "A TINY LOCAL MODEL WROTE THE ANSWERS" not in text
    # the ranked samples and their measures are there; nothing asked the model anything
    written = {p.name for p in (tmp_path / "out" / "samples").iterdir()}
    assert {"ranked.jsonl", "ranked_measures.csv", "provenance.json"} <= written
    assert "graded.jsonl" not in written and "ledger.jsonl" not in written
    provenance = json.loads((tmp_path / "out" / "samples" / "provenance.json").read_text())
    assert provenance["mode"] == "ranked-only" and provenance["generation"] == {}
    assert seconds < 180


def test_llm_grades_without_a_model_is_refused_naming_the_parameter(tmp_path: Path):
    write_dataset(tmp_path / "mydocs", n_queries=2, n_docs=20)
    done = ragnb(
        "run",
        "correlation",
        "-p",
        "dataset=mydocs",
        "-p",
        "llm=none",
        "-p",
        "llm_grades=true",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "llm_grades has the local model grade, but llm is 'none'" in done.stderr
    assert "llm_grades" in done.stderr.splitlines()[-1]
