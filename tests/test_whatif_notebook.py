"""Notebook 06 (what-if): its parameters, its widgets under a live kernel, and its HTML report's
K and alpha sliders in headless Chromium with networking disabled."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from browser import check_offline_render, open_offline

from ragnb.core.paths import project_root
from ragnb.io.files import read_beir
from ragnb.io.readers import read_run
from ragnb.report.render import render_report, resolve_notebook
from ragnb.studies.whatif.grid import precompute

NOTEBOOK = "06_what_if"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(str(resolve_notebook(NOTEBOOK)), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert code[0].metadata.get("tags") == ["parameters"]


# The cell appended after the notebook ran: move the K slider of the live widget and report the
# tables, the Output widget's text and an independent evaluation of the same run.
MOVE_SLIDER = """
import json
from ragnb.evaluation.evaluate import evaluate
before = widget.table.copy()
text_before = widget.output.outputs[0]["data"]["text/plain"]
widget.k_slider.value = 20
direct = evaluate(result.dataset.qrels, result.runs["dense"], ["P@20", "F(alpha=0.5)@20"])
print(json.dumps({
    "before": before.to_dict(), "after": widget.table.to_dict(),
    "text_before": text_before, "text_after": widget.output.outputs[0]["data"]["text/plain"],
    "direct": direct.aggregate_to_dict(), "output_model": widget.output.model_id,
}))
"""


def test_widget_notebook_executes_and_its_slider_moves_the_output():
    """Notebook 06 on data/pydocs under nbclient with a kernel; then its K slider is moved."""
    from nbclient import NotebookClient
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(resolve_notebook(NOTEBOOK)))  # with papermill's metadata
    params = {
        "embedder": "wordllama",  # ~300 passages/s cold: the notebook's own default is MiniLM
        "ks": [1, 5, 10, 20],
        "alphas": [0.0, 0.25, 0.5, 0.75, 1.0],
        "widgets": "on",
    }
    nb = parameterize_notebook(nb, params, kernel_name="python3", language="python")
    nb.cells.append(nbformat.v4.new_code_cell(MOVE_SLIDER))
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(project_root())}},
    )
    client.execute()
    # the widget cell displayed a widget view (not the report's "no kernel" note)
    widget_cell = [c for c in nb.cells if "WhatIfWidget(" in c.source][0]
    views = [
        o
        for o in widget_cell.outputs
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(views) == 1
    out = json.loads([o for o in nb.cells[-1].outputs if o.get("name") == "stdout"][0]["text"])
    assert list(out["before"]) == [
        "F(alpha=0.5)@10",
        "T(alpha=0.5)@10",
        "RA-nWG@10",
        "P@10",
        "R@10",
        "nDCG@10",
    ]
    assert list(out["after"]) == [
        "F(alpha=0.5)@20",
        "T(alpha=0.5)@20",
        "RA-nWG@20",
        "P@20",
        "R@20",
        "nDCG@20",
    ]
    assert set(out["after"]["P@20"]) == {"bm25", "dense", "hybrid"}
    # the moved table holds the values a direct evaluation of the same run gives
    assert out["after"]["P@20"]["dense"] == pytest.approx(out["direct"]["P@20"])
    assert out["after"]["F(alpha=0.5)@20"]["dense"] == pytest.approx(
        out["direct"]["F(alpha=0.5)@20"]
    )
    assert out["after"]["P@20"]["dense"] != out["before"]["P@10"]["dense"]
    assert out["text_before"] != out["text_after"] and "P@20" in out["text_after"]
    # what a frontend holds: the Output widget's synced state shows the moved table
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    output_model = state[out["output_model"]]["state"]
    assert output_model["_model_name"] == "OutputModel"
    shown = output_model["outputs"][0]["data"]["text/plain"]
    assert shown == out["text_after"] and "P@20" in shown and "P@10" not in shown


def test_interactive_frontend_follows_the_requests_allow_stdin():
    """widgets="auto" builds widgets for JupyterLab-like requests (allow_stdin=True) only."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        seen = {}
        for allow in (True, False):
            lines: list[str] = []
            kc.execute_interactive(
                "from ragnb.studies.whatif.widgets import interactive_frontend\n"
                "print(interactive_frontend())",
                allow_stdin=allow,
                output_hook=lambda msg, lines=lines: lines.append(msg["content"].get("text", "")),
                timeout=60,
            )
            seen[allow] = "".join(lines).strip()
        assert seen == {True: "True", False: "False"}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _table_texts(driver, chart) -> list[str]:
    """The text marks (not the axis labels) of the what-if chart: header and cell values."""
    marks = chart.find_elements("css selector", "svg g.mark-text.role-mark text")
    return [m.get_attribute("textContent") for m in marks]


def _move(driver, slider, value: str) -> None:
    driver.execute_script(
        "const el = arguments[0]; el.value = arguments[1];"
        "el.dispatchEvent(new Event('input', {bubbles: true}));"
        "el.dispatchEvent(new Event('change', {bubbles: true}));",
        slider,
        value,
    )


def _wait_for(driver, predicate, timeout: float = 30.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(predicate)


@pytest.mark.slow
def test_scifact_report_sliders_move_the_table_offline(scifact_report, scifact_path, tmp_path):
    """Notebook 06 on SciFact over notebook 01's exported runs; sliders moved in Chromium."""
    runs_dir = Path(scifact_report.parameters["export_dir"]) / "runs"
    ks, alphas = [1, 5, 10, 20, 50], [0.0, 0.25, 0.5, 0.75, 1.0]
    report = render_report(
        NOTEBOOK,
        {"dataset": str(scifact_path), "runs_dir": str(runs_dir), "ks": ks, "alphas": alphas},
        reports_dir=tmp_path / "reports",
        update_index=False,
    )
    html = report.html.read_text(encoding="utf-8")
    assert html.count('class="ragnb-chart"') == 2
    assert "widget-state" not in html and "jsdelivr" not in html  # no widget, no CDN
    assert "3 retrievers x 5 K x 5 alpha x 6 families = 450 inline rows" in html
    check_offline_render(report.html, tmp_path / "render")

    # expected cells, from the same run files evaluated in this process
    ds = read_beir(scifact_path)
    runs = {n: read_run(runs_dir / f"{n}.trec") for n in ("bm25", "dense", "hybrid")}
    from ragnb.measures import map_grades

    frames = precompute(
        ds.qrels,
        runs,
        ks=ks,
        alphas=alphas,
        families=["F", "P"],
        dataset="scifact",
        graded_qrels=map_grades(ds.qrels, {1: 5, 0: 1}),
    )
    g = frames.grid.set_index(["retriever", "family", "k", "alpha"])["value"]

    driver = open_offline(report.html.as_uri(), tmp_path / "profile")
    try:

        def what_if_chart(d):
            for el in d.find_elements("css selector", ".ragnb-chart"):
                if any(t.startswith("What-if table") for t in _table_texts(d, el)):
                    return el
            return False

        chart = _wait_for(driver, what_if_chart, 60)
        sliders = {
            s.get_attribute("name"): s
            for s in chart.find_elements("css selector", ".vega-bindings input[type=range]")
        }
        assert set(sliders) == {"K", "alpha"}
        before = _table_texts(driver, chart)
        assert before[0] == "What-if table: K = 10, alpha = 0.50"
        assert f"{g[('bm25', 'F', 10, 0.5)]:.4f}" in before

        _move(driver, sliders["K"], "20")
        _wait_for(driver, lambda d: _table_texts(d, chart)[0].startswith("What-if table: K = 20"))
        after_k = _table_texts(driver, chart)
        assert after_k != before
        for ret in ("bm25", "dense", "hybrid"):
            assert f"{g[(ret, 'P', 20, 0.0)]:.4f}" in after_k
            assert f"{g[(ret, 'F', 20, 0.5)]:.4f}" in after_k

        # between grid values the K slider snaps down to the grid: 7 shows K = 5, 35 shows K = 20
        _move(driver, sliders["K"], "7")
        _wait_for(driver, lambda d: _table_texts(d, chart)[0].startswith("What-if table: K = 5,"))
        assert f"{g[('hybrid', 'P', 5, 0.0)]:.4f}" in _table_texts(driver, chart)
        _move(driver, sliders["K"], "35")
        _wait_for(driver, lambda d: _table_texts(d, chart)[0].startswith("What-if table: K = 20,"))
        assert _table_texts(driver, chart) == after_k

        _move(driver, sliders["alpha"], "1")
        _wait_for(driver, lambda d: _table_texts(d, chart)[0].endswith("alpha = 1.00"))
        after_alpha = _table_texts(driver, chart)
        assert after_alpha != after_k
        assert f"{g[('dense', 'F', 20, 1.0)]:.4f}" in after_alpha
        # F(alpha=1) = P (Primer eq. 1): the F column now repeats the P column
        assert f"{g[('dense', 'P', 20, 0.0)]:.4f}" in after_alpha
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "profile", ignore_errors=True)
