"""ragnb.studies.whatif.widgets: the what-if view as a function, and the ipywidgets controls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.measures import map_grades
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies.whatif.grid import WhatIfFrames, combine, precompute
from ragnb.studies.whatif.widgets import WhatIfWidget, interactive_frontend, view


@pytest.fixture(scope="module")
def setup():
    ds = read_beir("data/pydocs")
    bm25 = BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, k=30)
    bm25 = bm25.drop(columns=[c for c in ("rank", "tag") if c in bm25])
    rng = np.random.default_rng(1)
    shuffled = bm25.assign(score=rng.permutation(len(bm25)).astype(float))
    runs = {"bm25": bm25, "shuffled": shuffled}
    frames = precompute(
        ds.qrels,
        runs,
        ks=[1, 5, 10, 20],
        alphas=[0.0, 0.5, 1.0],
        families=["F", "T", "RA-nWG", "P"],
        graded_qrels=map_grades(ds.qrels, {1: 5, 0: 1}),
        dataset="pydocs",
    )
    return ds, runs, frames


def test_view_table_and_chart(setup):
    ds, runs, frames = setup
    table, chart = view(frames, k=5, alpha=0.5)
    assert list(table.index) == ["bm25", "shuffled"]
    assert list(table.columns) == ["F(alpha=0.5)@5", "T(alpha=0.5)@5", "RA-nWG@5", "P@5"]
    direct = evaluate(ds.qrels, runs["shuffled"], ["F(alpha=0.5)@5", "P@5"]).aggregate_to_dict()
    assert table.loc["shuffled", "F(alpha=0.5)@5"] == pytest.approx(direct["F(alpha=0.5)@5"])
    assert table.loc["shuffled", "P@5"] == pytest.approx(direct["P@5"])
    assert table.attrs == {"k": 5, "alpha": 0.5, "dataset": "pydocs"}
    # the chart draws the grid at K = 5 for every alpha, with a rule at the selected alpha
    spec = chart.to_dict()
    (values,) = spec["datasets"].values()
    assert {v["k"] for v in values} == {5} and {v["alpha"] for v in values} == {0.0, 0.5, 1.0}
    assert len(values) == 2 * 3 * 4
    one, _ = view(frames, k=5, alpha=0.5, retriever="bm25")
    assert list(one.index) == ["bm25"]
    with pytest.raises(InputError, match="K=3 is not in the grid"):
        view(frames, k=3, alpha=0.5)
    with pytest.raises(InputError, match="retriever 'dense' is not among"):
        view(frames, k=5, alpha=0.5, retriever="dense")


def _plain(widget: WhatIfWidget) -> str:
    return widget.output.outputs[0]["data"]["text/plain"]


def test_widget_sliders_redraw_the_output(setup):
    _, _, frames = setup
    w = WhatIfWidget(frames, k=5, alpha=0.5)
    table0, text0 = w.table.copy(), _plain(w)
    assert "F(alpha=0.5)@5" in text0
    w.k_slider.value = 20
    assert list(w.table.columns)[0] == "F(alpha=0.5)@20"
    pd.testing.assert_frame_equal(w.table, view(frames, k=20, alpha=0.5)[0])
    assert _plain(w) != text0 and "P@20" in _plain(w)
    assert not np.allclose(w.table.to_numpy(), table0.to_numpy())
    # alpha moves F and T, not P or RA-nWG
    before = w.table.copy()
    w.alpha_slider.value = 1.0
    assert not np.isclose(w.table["F(alpha=1)@20"], before["F(alpha=0.5)@20"]).all()
    np.testing.assert_allclose(w.table["P@20"], before["P@20"])
    np.testing.assert_allclose(w.table["F(alpha=1)@20"], w.table["P@20"])  # Primer eq. 1
    chart_data = next(iter(w.chart.to_dict()["datasets"].values()))
    assert {v["k"] for v in chart_data} == {20}
    w.retriever.value = "shuffled"
    assert list(w.table.index) == ["shuffled"]


def test_widget_dataset_dropdown(setup):
    _, _, frames = setup
    half = frames.per_query[frames.per_query["retriever"] == "bm25"].assign(dataset="bm25-only")
    both = combine([frames, WhatIfFrames(half, frames.ks, frames.alphas, frames.families)])
    w = WhatIfWidget(both)
    assert w.k_slider.value == 10 and w.alpha_slider.value == 0.5
    w.retriever.value = "shuffled"
    w.dataset.value = "bm25-only"
    assert list(w.retriever.options) == ["(all)", "bm25"] and w.retriever.value == "(all)"
    assert list(w.table.index) == ["bm25"] and w.table.attrs["dataset"] == "bm25-only"


def test_widget_rejects_bad_input(setup):
    _, _, frames = setup
    with pytest.raises(InputError, match="WhatIfFrames"):
        WhatIfWidget(frames.per_query)
    with pytest.raises(InputError, match="alpha=0.25 is not in the grid"):
        WhatIfWidget(frames, alpha=0.25)
    assert interactive_frontend() is False  # no kernel under pytest
