"""Notebook 01 with a non-default fusion: the hybrid is that fusion of BM25 and dense, the fusion
comparison and the context measures are shown and exported, and agree with the core measures.

Rendered once on the embedded sample (``data/pydocs``, 95 queries) with WordLlama as the dense
embedder (static embeddings: seconds) and 200 resamples, to stay fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ragnb.report.render import render_report

FUSION = "wsum/z-score(0.3,0.7)"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report-fusion")
    params = {
        "model": "wordllama",
        "fusion": "wsum/z-score",
        "fusion_weights": "[0.3, 0.7]",
        "n_resamples": 200,
        "export_dir": str(out / "export"),
        "cache_dir": str(out / "cache"),
    }
    return render_report("01_retrieval_evaluation", params, reports_dir=out)


def _export(report) -> Path:
    return Path(report.parameters["export_dir"])


def test_hybrid_uses_the_fusion_and_the_comparison_agrees(report):
    export = _export(report)
    prov = json.loads((export / "provenance.json").read_text())
    assert prov["retrievers"]["hybrid"]["fusion"] == FUSION
    assert prov["retrievers"]["hybrid"]["kind"] == "hybrid-wsum"
    agg = pd.read_csv(export / "aggregate.csv")
    hybrid = agg[agg["retriever"] == "hybrid"].set_index("measure")["value"]
    table = pd.read_csv(export / "fusion.csv").set_index("fusion")
    assert {"rrf", "isr", "borda", "combsum", "combmnz", "combmed", FUSION} <= set(table.index)
    # the comparison fuses the same BM25 and dense runs: its row is the hybrid retriever's
    for measure in ("nDCG@10", "R@10", "RR"):
        assert table.loc[FUSION, measure] == pytest.approx(hybrid[measure], abs=1e-12)
    held = pd.read_csv(export / "fusion_heldout.csv")
    assert set(held["search"]) == {"wsum", "wrrf"}
    assert held["n_queries"].nunique() == 1 and 0 < held["n_queries"].iloc[0] < 95
    html = report.html.read_text(encoding="utf-8")
    assert FUSION in html and "Fusion: BM25 and dense" in html
    assert html.count('class="ragnb-chart"') == 4  # tables only: no chart added


def test_context_measures_are_shown_and_agree_with_precision_and_recall(report):
    export = _export(report)
    ctx = pd.read_csv(export / "contexts.csv")
    assert set(ctx["retriever"]) == {"bm25", "dense", "hybrid"}
    assert (ctx["k"] == 10).all()
    # ID-based on BEIR qrels: dense fills all 10 ranks, so precision is P@10 and recall R@10
    agg = pd.read_csv(export / "aggregate.csv")
    dense = agg[agg["retriever"] == "dense"].set_index("measure")["value"]
    mine = ctx[ctx["retriever"] == "dense"]
    assert mine["id_based_context_precision"].mean() == pytest.approx(dense["P@10"], abs=1e-12)
    assert mine["id_based_context_recall"].mean() == pytest.approx(dense["R@10"], abs=1e-12)
    # a retrieved relevant document matches itself (similarity 1): non-LLM >= ID-based
    valid = ctx.dropna(subset=["non_llm_precision"])
    assert (valid["non_llm_precision"] >= valid["id_based_context_precision"] - 1e-12).all()
    assert (valid["non_llm_context_recall"] >= valid["id_based_context_recall"] - 1e-12).all()
    html = report.html.read_text(encoding="utf-8")
    assert "Context precision and recall" in html and "non-LLM CP@K" in html
