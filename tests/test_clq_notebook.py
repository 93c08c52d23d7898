"""Notebook 04 (CLQ trade-offs): its parameters mirror the config dataclass, and it renders
offline on a tiny grid with every chart, the recommendations and the stated cap."""

from __future__ import annotations

from dataclasses import fields

import pytest
from browser import visible_text

from ragnb.errors import InputError
from ragnb.report.render import notebook_parameters, render_report, resolve_notebook
from ragnb.studies.clq.study import ClqTradeoffsConfig

NOTEBOOK = "04_clq_tradeoffs"
CHART = 'class="ragnb-chart"'
TINY = {
    "embedders": "[wordllama]",
    "dims": "[64, 0]",
    "chunkers": "[document]",
    "indexes": "[flat, hnsw]",
    "pool_ks": "[50, 100]",
    "rerankers": "[none, 'rescore:wordllama']",
    "modes": "[dense, bm25]",
    "dynamic_margins": "[0.05]",
    "max_docs": 300,
    "max_queries": 15,
    "sla_ms": 1000.0,
}


def test_parameters_cell_mirrors_config_dataclass():
    declared = notebook_parameters(resolve_notebook(NOTEBOOK))
    assert list(declared) == [f.name for f in fields(ClqTradeoffsConfig)]
    defaults = ClqTradeoffsConfig()
    for f in fields(ClqTradeoffsConfig):
        assert eval(declared[f.name]["default"]) == getattr(defaults, f.name), f.name
        assert declared[f.name]["help"], f"parameter {f.name} has no comment"
    with pytest.raises(InputError, match="unknown parameter"):
        ClqTradeoffsConfig.from_params(sla=5)
    with pytest.raises(InputError, match="indexes"):
        ClqTradeoffsConfig.from_params(indexes=["ivf"])


def test_tiny_grid_renders_offline_with_charts_and_recommendations(tmp_path):
    result = render_report(NOTEBOOK, TINY, reports_dir=tmp_path, update_index=False)
    page = result.html.read_text(encoding="utf-8")
    text = visible_text(page)
    # frontier, latency vs K, quality vs dimension, PROC vs actual, recall vs efSearch
    assert page.count(CHART) == 5
    assert "Capped for time: 15 of 95 judged queries" in text
    assert "Under a p95 SLA of 1000 ms, ship" in text
    assert "Under a budget of USD 1 per 1,000 queries" in text
    assert "For a quality target of" in text
    for heading in ("Scenario matrix", "Leaderboard", "Dynamic K", "Memory", "Cost tables"):
        assert heading in text
    assert "Traceback" not in text
    # the sweep folder holds the resumable results and, beside them, the report's tables
    exported = {p.name for p in (tmp_path / NOTEBOOK).iterdir()}
    assert {"results.parquet", "configurations.csv", "frontier.csv", "provenance.json"} <= exported
    assert "Not run" not in text  # every part of this grid ran


def test_parts_the_grid_leaves_out_are_named_in_the_banner_and_absent(tmp_path):
    from ragnb.studies.clq import run

    config = ClqTradeoffsConfig(
        embedders=["wordllama"],
        dims=[64],
        chunkers=["document"],
        indexes=["flat"],
        pool_ks=[50],
        rerankers=["none"],
        modes=["dense"],
        rewriters=["none"],
        dynamic_margins=[],
        max_docs=100,
        max_queries=5,
        warmup=1,
        export_dir=str(tmp_path / "sweep"),
    )
    result = run(config)
    banner = result.banner()
    for part in (
        "Query rewriting",
        "Marginal gains of K",
        "Dynamic K",
        "Approximate-search recall",
    ):
        assert f"**{part} skipped** because" in banner, part
    assert "Memory skipped" not in banner
    tables = result.tables()
    assert not {"rewriting", "marginal", "dynamic_k"} & set(tables)
    assert {"recommendations", "frontier", "memory", "configurations"} <= set(tables)
    assert list(tables["recommendations"]["rule"]) == ["sla", "budget", "target"]
    assert set(result.charts()) == {"frontier", "latency_vs_k", "quality_vs_dim", "proc_vs_actual"}
    written = result.export(tmp_path / "sweep")
    assert [p.name for p in written][-1] == "provenance.json"
    assert (tmp_path / "sweep" / "results.parquet").exists()
