"""Notebook 01 end to end: papermill execution, HTML export, offline rendering in Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from browser import check_offline_render

from ragnb.errors import InputError
from ragnb.report.render import render_report, resolve_notebook


def test_unknown_parameter_is_an_error(tmp_path):
    with pytest.raises(InputError, match=r"unknown parameter 'datset' \(did you mean 'dataset'"):
        render_report("01_retrieval_evaluation", {"datset": "x"}, reports_dir=tmp_path)
    with pytest.raises(InputError, match="takes a int"):
        render_report("01_retrieval_evaluation", {"depth": "many"}, reports_dir=tmp_path)
    assert not list(tmp_path.glob("*.html"))


def test_unknown_notebook_lists_the_available_ones():
    with pytest.raises(InputError, match="01_retrieval_evaluation"):
        resolve_notebook("99_nothing")


def _export(report) -> Path:
    return Path(report.parameters["export_dir"])


def test_sample_report_is_self_contained(sample_report):
    html = sample_report.html.read_text(encoding="utf-8")
    # no script or stylesheet fetched from anywhere
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=\"https?:", html)
    assert "cdn.jsdelivr" not in html and "cdnjs" not in html
    # code cells hidden, charts present, provenance stated
    assert "retrieval.run(" not in html
    # K curves, per-query boxes, PROC curves, significance; no graded section on binary qrels
    assert html.count('class="ragnb-chart"') == 4
    assert "Graded set measures skipped</strong> because the qrels are binary" in html
    for fact in (
        "What produced these numbers",
        "pydocs",
        "all-MiniLM-L6-v2",
        "bm25s",
        "Versions",
        "hits",
        "misses",
    ):
        assert fact in html, fact
    index = (sample_report.html.parent / "index.html").read_text(encoding="utf-8")
    assert 'href="01_retrieval_evaluation.html"' in index


def test_sample_report_exports_runs_and_tables(sample_report):
    export = _export(sample_report)
    agg = pd.read_csv(export / "aggregate.csv")
    assert set(agg["retriever"]) == {"bm25", "dense", "hybrid"}
    assert (agg["n_queries"] == 95).all()
    for name in ("bm25", "dense", "hybrid"):
        lines = (export / "runs" / f"{name}.trec").read_text().splitlines()
        per_query = pd.Series([line.split()[0] for line in lines]).value_counts()
        assert len(per_query) == 95 and per_query.max() == 100
        # dense and hybrid fill every rank; BM25 returns only documents sharing a term
        assert len(lines) == 95 * 100 if name != "bm25" else len(lines) <= 95 * 100
    prov = json.loads((export / "provenance.json").read_text())
    # the studies' default embedder: all-MiniLM-L6-v2 as int8 ONNX (ragnb.embed.STUDY_MODEL)
    assert prov["retrievers"]["dense"]["embedder_model"] == "all-MiniLM-L6-v2-onnx-int8"
    # dense retrieval finds the module's own functions far better than chance
    ndcg = agg[agg["measure"] == "nDCG@10"].set_index("retriever")["value"]
    assert ndcg["dense"] > 0.5 and ndcg["bm25"] > 0.3


def test_sample_report_exports_proc_and_significance(sample_report):
    export = _export(sample_report)
    proc = pd.read_csv(export / "proc.csv")
    assert set(proc["retriever"]) == {"bm25", "dense", "hybrid"}
    assert set(proc["family"]) == {"nDCG", "R"}  # binary qrels: no graded ceilings
    assert (proc["proc"] >= proc["actual"] - 1e-12).all() and (proc["proc"] <= 1).all()
    # the top-100 pool holds every document the run ranks: R@100's ceiling is the run's R@100
    r100 = proc[proc["measure"] == "R@100"]
    assert (abs(r100["proc"] - r100["actual"]) < 1e-12).all()
    sig = pd.read_csv(export / "significance.csv")
    assert len(sig) == 3 * 2  # 3 pairs x {nDCG@10, R@100}; graded measures dropped
    assert sig["p_adjusted"].between(0, 1).all() and (sig["p_adjusted"] >= sig["p_value"]).all()
    assert ((sig["dz_low"] <= sig["cohens_dz"]) & (sig["cohens_dz"] <= sig["dz_high"])).all()
    anova = pd.read_csv(export / "anova.csv").set_index("measure")
    assert list(anova.index) == ["nDCG@10", "R@100"] and (anova["df_systems"] == 2).all()
    assert (anova["df_error"] == 2 * (95 - 1)).all() and anova["p_value"].between(0, 1).all()
    letters = pd.read_csv(export / "tukey_letters.csv").set_index("retriever")
    assert list(letters.index) == ["bm25", "dense", "hybrid"]
    assert letters["nDCG@10"].str.fullmatch(r"0\.\d{4} [A-Z]+").all()
    html = sample_report.html.read_text(encoding="utf-8")
    assert "All retrievers at once" in html and "cohens_dz" in html


@pytest.mark.slow
def test_dbpedia_report_has_graded_measures_proc_and_significance(dbpedia_report):
    export = _export(dbpedia_report)
    agg = pd.read_csv(export / "aggregate.csv")
    ra = agg[agg["measure"] == "RA-nWG@10"].set_index("retriever")
    assert set(ra.index) == {"bm25", "dense", "hybrid"}
    assert ra["value"].between(0, 1).all() and (ra["n_valid"] == 40).all()
    n5 = agg[agg["measure"] == "N-Recall5@10"]
    assert (n5["n_valid"] < n5["n_queries"]).all()  # queries without grade-2 (-> 5) are NA
    proc = pd.read_csv(export / "proc.csv")
    assert {"RA-nWG", "N-Recall4+", "nDCG", "R"} <= set(proc["family"])
    assert proc["pct_proc"].between(0, 1).all()
    sig = pd.read_csv(export / "significance.csv")
    assert set(sig["measure"]) == {"nDCG@10", "R@100", "RA-nWG@10", "N-Recall4+@10"}
    prov = json.loads((export / "provenance.json").read_text())
    assert prov["grade_map"] == {"name": "dbpedia-entity", "map": {"2": 5, "1": 4, "0": 1}}
    grid = pd.read_csv(export / "ranwg_sensitivity.csv")
    assert len(grid) == 24 * 3  # a x cap4 x cap3 of Dallaire Appendix A, per retriever
    default = grid[grid["is_default"]].set_index("retriever")["value"]
    assert (abs(default - ra["value"].reindex(default.index)) < 1e-12).all()
    html = dbpedia_report.html.read_text(encoding="utf-8")
    assert "Grade map" in html and "dbpedia-entity" in html
    assert "Does the RA-nWG conclusion depend on its parameters?" in html
    # K curves, per-query boxes, graded K curves, PROC curves, significance
    assert html.count('class="ragnb-chart"') == 5


@pytest.mark.slow
def test_dbpedia_report_draws_offline_in_chromium(dbpedia_report, tmp_path):
    check_offline_render(dbpedia_report.html, tmp_path)


def test_sample_report_draws_offline_in_chromium(sample_report, tmp_path):
    check_offline_render(sample_report.html, tmp_path)


@pytest.mark.slow
def test_scifact_report_draws_offline_in_chromium(scifact_report, tmp_path):
    check_offline_render(scifact_report.html, tmp_path)


def _small_beir(src: Path, dst: Path, n_queries: int = 8) -> Path:
    """The first ``n_queries`` judged queries of ``src`` and only the documents they judge."""
    from ragnb.io.files import read_beir, write_jsonl, write_qrels

    data = read_beir(src)
    qids = sorted(data.qrels["query_id"].unique())[:n_queries]
    qrels = data.qrels[data.qrels["query_id"].isin(qids)]
    corpus = data.corpus[data.corpus["doc_id"].isin(set(qrels["doc_id"]))]
    write_jsonl(
        [{"_id": d, "title": t, "text": x} for d, t, x in corpus.itertuples(index=False)],
        dst / "corpus.jsonl",
    )
    queries = data.queries[data.queries["query_id"].isin(qids)]
    write_jsonl(
        [{"_id": q, "text": t} for q, t in queries.itertuples(index=False)], dst / "queries.jsonl"
    )
    write_qrels(qrels, dst / "qrels" / "test.tsv", form="beir")
    return dst


def test_second_report_run_makes_zero_model_calls(tmp_path):
    """Counted at the embedding backend (its calls), as the report's provenance records them."""
    data = _small_beir(Path(__file__).resolve().parents[1] / "data" / "pydocs", tmp_path / "d")
    params = {
        "dataset": str(data),
        "cache_dir": str(tmp_path / "cache"),
        "depth": 20,
        "proc_pool": 20,
        "cutoffs": "[1, 5, 10, 20]",
        "retrievers": "[dense, hybrid]",
        "model": "wordllama",  # any embedder behind the cache; a fast one
    }
    calls = []
    for attempt in ("first", "second"):
        out = tmp_path / attempt
        render_report(
            "01_retrieval_evaluation", {**params, "export_dir": str(out / "x")}, reports_dir=out
        )
        prov = json.loads((out / "x" / "provenance.json").read_text())
        dense = prov["retrievers"]["dense"]
        calls.append(
            (dense["embedder_calls"], dense["embedder_cache_hits"], dense["embedder_cache_misses"])
        )
    (first_calls, _, first_misses), (second_calls, second_hits, second_misses) = calls
    assert first_calls > 0 and first_misses > 0
    assert second_calls == 0 and second_misses == 0 and second_hits == first_misses


def test_export_drops_live_widgets_so_nothing_loads_from_a_cdn(tmp_path):
    """tqdm.auto's bars become ipywidgets in a kernel; their state would pull the widget manager
    from unpkg into the HTML. The export drops widget views and state, keeps everything else."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from ragnb.report.render import WIDGET_VIEW, export_html

    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    cell = new_code_cell(
        "bar()",
        outputs=[
            new_output("display_data", {WIDGET_VIEW: view, "text/plain": "Loading 0%|"}),
            new_output("display_data", {"text/plain": "kept output 42"}),
        ],
    )
    nb = new_notebook(cells=[cell])
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}
    }
    executed = tmp_path / "executed.ipynb"
    nbformat.write(nb, str(executed))
    out = tmp_path / "report.html"
    export_html(executed, out)
    html = out.read_text(encoding="utf-8")
    assert "kept output 42" in html
    assert "Loading 0%" not in html
    assert "unpkg" not in html and "widget-state" not in html and "html-manager" not in html
    nb_again = nbformat.read(str(executed), as_version=4)  # the executed notebook is untouched
    assert "widgets" in nb_again.metadata
