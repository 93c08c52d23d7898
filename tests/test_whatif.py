"""What-if grid (whatif.study): per-query values on a K x alpha grid, aggregates, rank stability,
the slider table's row budget, and the slider charts' specifications."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir, write_run
from ragnb.measures import map_grades
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies.whatif.charts import rank_bump_chart, what_if_chart
from ragnb.studies.whatif.grid import (
    DEFAULT_ALPHAS,
    chart_rows,
    combine,
    grid_measures,
    precompute,
    rank_table,
    slider_table,
    top_changes,
)
from ragnb.studies.whatif.study import WhatIfConfig, load_runs

KS = [1, 3, 5, 10, 20]
ALPHAS = [0.0, 0.25, 0.5, 0.75, 1.0]


def _shuffled(run: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The same documents per query in a random order (a weaker system)."""
    rng = np.random.default_rng(seed)
    out = run.drop(columns=[c for c in ("rank", "tag") if c in run]).copy()
    out["score"] = rng.permutation(len(out)).astype(float)
    return out


@pytest.fixture(scope="module")
def pydocs():
    ds = read_beir("data/pydocs")
    bm25 = BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, k=50)
    bm25 = bm25.drop(columns=[c for c in ("rank", "tag") if c in bm25])
    return ds, {"bm25": bm25, "shuffled": _shuffled(bm25)}


@pytest.fixture(scope="module")
def frames(pydocs):
    ds, runs = pydocs
    return precompute(
        ds.qrels,
        runs,
        ks=KS,
        alphas=ALPHAS,
        families=["F", "T", "RA-nWG", "P", "R", "nDCG"],
        graded_qrels=map_grades(ds.qrels, {1: 5, 0: 1}),
        dataset="pydocs",
    )


def test_grid_measures_names_and_count():
    ms = grid_measures([10, 5], [0.5, 0, 0.5], ["F", "P", "RA-nWG"])
    assert [m.name for m in ms] == [
        "F(alpha=0)@5",
        "F(alpha=0.5)@5",
        "P@5",
        "RA-nWG@5",
        "F(alpha=0)@10",
        "F(alpha=0.5)@10",
        "P@10",
        "RA-nWG@10",
    ]
    with pytest.raises(InputError, match="families must be among"):
        grid_measures([5], [0.5], ["RR"])
    with pytest.raises(InputError, match=r"alphas must lie in \[0, 1\]"):
        grid_measures([5], [1.5], ["F"])


def test_hand_computed_values():
    # q1: relevant a, b, c (N_p = 3); top 4 = a, x, b, y -> n_p(2) = 1, n_p(4) = 2
    qrels = pd.DataFrame(
        {"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]}
    )
    run = pd.DataFrame(
        {"query_id": ["q1"] * 4, "doc_id": ["a", "x", "b", "y"], "score": [4.0, 3.0, 2.0, 1.0]}
    )
    fr = precompute(
        qrels,
        {"r": run},
        ks=[2, 4],
        alphas=[0.0, 0.5],
        families=["F", "T", "RA-nWG"],
        graded_qrels=map_grades(qrels, {1: 5}),
    )
    got = fr.grid.set_index(["family", "k", "alpha"])["value"]
    assert got[("F", 2, 0.5)] == pytest.approx(1 / (0.5 * 2 + 0.5 * 3))  # eq. 2
    assert got[("F", 4, 0.0)] == pytest.approx(2 / 3)  # = R@4
    assert got[("T", 4, 0.5)] == pytest.approx(0.5 * 2 - 0.5 * 2 / 4)  # eq. 3
    assert got[("T", 2, 0.0)] == pytest.approx(1.0)  # = n_p
    # every relevant document is grade 5 (w = 1): RA-nWG@K = n_p / min(K, N_p)
    assert got[("RA-nWG", 2, 0.0)] == pytest.approx(1 / 2)
    assert got[("RA-nWG", 4, 0.5)] == pytest.approx(2 / 3)


def test_grid_equals_direct_evaluation_and_primer_limits(pydocs, frames):
    ds, runs = pydocs
    g = frames.grid.set_index(["retriever", "family", "k", "alpha"])["value"]
    direct = evaluate(ds.qrels, runs["shuffled"], ["F(alpha=0.75)@5", "T(alpha=0.25)@20", "nDCG@3"])
    d = direct.aggregate_to_dict()
    assert g[("shuffled", "F", 5, 0.75)] == pytest.approx(d["F(alpha=0.75)@5"])
    assert g[("shuffled", "T", 20, 0.25)] == pytest.approx(d["T(alpha=0.25)@20"])
    assert g[("shuffled", "nDCG", 3, 0.5)] == pytest.approx(d["nDCG@3"])
    for k in KS:  # Primer eq. 1: F(alpha=1) = P, F(alpha=0) = R
        assert g[("bm25", "F", k, 1.0)] == pytest.approx(g[("bm25", "P", k, 0.0)])
        assert g[("bm25", "F", k, 0.0)] == pytest.approx(g[("bm25", "R", k, 0.0)])


def test_grid_shape_and_alpha_free_families_are_constant(frames):
    g = frames.grid
    assert len(g) == chart_rows(2, len(KS), len(ALPHAS), 6) == 300
    assert (g["n_queries"] == 95).all()
    for fam in ("RA-nWG", "P", "R", "nDCG"):
        spread = g[g["family"] == fam].groupby(["retriever", "k"])["value"].agg(np.ptp)
        assert (spread == 0).all(), fam
    f_spread = g[g["family"] == "F"].groupby(["retriever", "k"])["value"].agg(np.ptp)
    assert (f_spread > 0).any()
    at = frames.at(10, 0.5, retriever="bm25")
    assert list(at["measure"]) == [
        "F(alpha=0.5)@10",
        "T(alpha=0.5)@10",
        "RA-nWG@10",
        "P@10",
        "R@10",
        "nDCG@10",
    ]
    with pytest.raises(InputError, match="K=7 is not in the grid"):
        frames.at(7, 0.5)
    with pytest.raises(InputError, match="alpha=0.3 is not in the grid"):
        frames.at(10, 0.3)


def test_slider_table_row_budget(frames):
    table = slider_table(frames)
    assert len(table) == 2 * 5 * 5 * 6
    assert set(table.columns) >= {"retriever", "family", "k", "alpha", "value", "score"}
    with pytest.raises(InputError, match=r"2 retrievers x 5 K x 5 alpha x 6 families = 300 rows"):
        slider_table(frames, max_rows=299)
    # the notebook's default grid fits; a 0.01 alpha step does not
    assert chart_rows(3, 7, len(DEFAULT_ALPHAS), 6) == 2646
    fine = [round(i / 100, 2) for i in range(101)]
    with pytest.raises(InputError, match="= 12,726 rows, above the limit of 5,000"):
        WhatIfConfig(alphas=fine)


def test_config_rejects_unknown_and_inconsistent_parameters():
    with pytest.raises(InputError, match="unknown parameter 'alpha'"):
        WhatIfConfig.from_params(alpha=0.5)
    with pytest.raises(InputError, match="headline_k=7 is not in ks"):
        WhatIfConfig(headline_k=7)
    with pytest.raises(InputError, match="retrievers must be among"):
        WhatIfConfig(retrievers=["splade"])
    with pytest.raises(InputError, match="widgets must be"):
        WhatIfConfig(widgets="yes")
    with pytest.raises(InputError, match="rank_families"):
        WhatIfConfig(families=["F", "P"], rank_families=["T"])


def test_rank_table_and_top_changes_by_hand():
    # two systems, one K, three alphas: a wins at alpha 0 and 0.5, b at alpha 1
    rows = []
    for alpha, (va, vb) in {0.0: (0.9, 0.1), 0.5: (0.5, 0.5), 1.0: (0.2, 0.8)}.items():
        rows += [("a", alpha, va), ("b", alpha, vb)]
    pq = pd.DataFrame(rows, columns=["retriever", "alpha", "value"]).assign(
        dataset="d", family="F", k=5, measure=lambda f: "F@5", query_id="q"
    )
    from ragnb.studies.whatif.grid import WhatIfFrames

    fr = WhatIfFrames(pq, (5,), (0.0, 0.5, 1.0), ("F",))
    ranks = rank_table(fr, ["F"])
    by = ranks.set_index(["alpha", "retriever"])
    assert by.loc[(0.0, "a"), "rank"] == 1 and by.loc[(0.0, "b"), "rank"] == 2
    assert by.loc[(0.5, "a"), "rank"] == 1 and by.loc[(0.5, "b"), "rank"] == 1  # a tie
    assert by.loc[(0.5, "a"), "top"] == "a = b"
    assert by.loc[(1.0, "b"), "rank"] == 1
    ch = top_changes(ranks).iloc[0]
    assert ch["settings"] == 3 and ch["distinct_tops"] == 3
    assert ch["alpha_steps"] == 2 and ch["alpha_changes"] == 2
    assert ch["k_steps"] == 0 and ch["k_changes"] == 0
    assert ch["distinct_rankings"] == 2  # "a > b" (the tie sorts by name) and "b > a"


def test_t_ranking_never_moves_with_alpha(frames):
    # at a fixed K, T = n_p (1 - alpha + alpha / K) - alpha is increasing in n_p for every alpha
    ranks = rank_table(frames, ["T", "F", "RA-nWG"])
    t = ranks[ranks["family"] == "T"]
    per_k = t.groupby(["k", "retriever"])["rank"].nunique()
    assert (per_k == 1).all()
    p = frames.grid[(frames.grid["family"] == "P") & (frames.grid["alpha"] == 0.5)]
    best_p = p.loc[p.groupby("k")["value"].idxmax()].set_index("k")["retriever"]
    best_t = t[t["rank"] == 1].groupby("k")["retriever"].first()
    assert best_t.to_dict() == best_p.to_dict()
    # BM25 beats a random order of its own top 50 at every K <= 20
    assert (ranks[(ranks["retriever"] == "bm25")]["rank"] == 1).all()


def test_load_runs(tmp_path, pydocs):
    _, runs = pydocs
    for name, run in runs.items():
        write_run(run, tmp_path / "runs" / f"{name}.trec", tag=name)
    got = load_runs(tmp_path / "runs")
    assert list(got) == ["bm25", "shuffled"]
    assert len(got["bm25"]) == len(runs["bm25"])
    assert list(load_runs(tmp_path / "runs", ["shuffled"])) == ["shuffled"]
    with pytest.raises(InputError, match=r"no run file for \['dense'\]"):
        load_runs(tmp_path / "runs", ["dense"])
    with pytest.raises(InputError, match="not a folder"):
        load_runs(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .trec run file"):
        load_runs(tmp_path / "empty")


def test_combine_datasets(frames):
    other = frames.per_query.assign(dataset="pydocs-copy")
    from ragnb.studies.whatif.grid import WhatIfFrames

    both = combine([frames, WhatIfFrames(other, frames.ks, frames.alphas, frames.families)])
    assert both.datasets == ["pydocs", "pydocs-copy"]
    assert len(both.grid) == 2 * len(frames.grid)
    with pytest.raises(InputError, match="appears twice"):
        combine([frames, frames])


def test_slider_chart_spec(frames):
    table = slider_table(frames)
    spec = what_if_chart(table, k=10, alpha=0.5).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["K"]["bind"] == {"input": "range", "min": 1, "max": 20, "step": 1, "name": "K "}
    assert params["alpha"]["bind"]["step"] == 0.25 and params["alpha"]["value"] == 0.5
    # the aggregates are inlined once, never per-query rows
    (values,) = [v for v in spec["datasets"].values()]
    assert len(values) == len(table) == 300
    with pytest.raises(InputError, match="300 inline rows exceed the chart limit of 200"):
        what_if_chart(table, k=10, alpha=0.5, max_rows=200)
    ranks = rank_table(frames, ["F", "T", "RA-nWG"])
    bump = rank_bump_chart(ranks, k=10, alpha=0.5).to_dict()
    assert {p["name"] for p in bump["params"]} == {"K", "alpha"}
    assert all(len(v) == len(ranks) for v in bump["datasets"].values())


def test_doctests():
    import doctest

    import ragnb.studies.whatif.grid
    import ragnb.studies.whatif.study

    results = [doctest.testmod(m) for m in (ragnb.studies.whatif.grid, ragnb.studies.whatif.study)]
    result = doctest.TestResults(sum(r.failed for r in results), sum(r.attempted for r in results))
    assert result.attempted >= 5 and result.failed == 0
