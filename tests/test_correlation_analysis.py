"""The correlation study: measures per graded sample against hand-computed values, the alpha
maximisation against a brute-force scipy loop, recovery of a known alpha from grades simulated
from F, segments, bootstrap differences and Acc|Hit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ragnb.studies.correlation import (
    acc_given_hit,
    alpha_grid,
    correlate,
    correlation_table,
    difference_table,
    grade_distribution,
    graded_labels,
    measure_matrix,
    sample_set,
    simulate_grades,
)
from ragnb.studies.correlation.analysis import segments


def synthetic_ranked(n_queries: int, configs, ks, seed: int = 0) -> pd.DataFrame:
    """Ranked samples whose positives rank higher with a per-query strength (varied n_p)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_queries):
        for nc, np_ in configs:
            score = rng.normal(0, 1, nc)
            score[:np_] += rng.uniform(0, 3)
            rank = [int(r) for r in np.argsort(-score)]
            n_in = np.cumsum(np.asarray(rank) < np_)
            k_here = [k for k in ks if k <= nc]
            rows.append(
                {
                    "id": f"S-{i}",
                    "E": "X",
                    "Nc": nc,
                    "Np": np_,
                    "K": k_here,
                    "P": [n_in[k - 1] / k for k in k_here],
                    "R": [n_in[k - 1] / np_ for k in k_here],
                    "rank": rank,
                }
            )
    return pd.DataFrame(rows)


def test_alpha_grid_is_the_papers():
    g = alpha_grid()
    assert len(g) == 702 and g[0] == 0 and g[-1] == 1 and np.all(np.diff(g) > 0)
    assert np.isclose(g, 0.95).any() and np.isclose(g, 0.05).any()
    assert np.isclose(g, 0.95**350).any() and np.isclose(g, 1 - 0.95**350).any()


def test_measures_per_sample_by_hand():
    # Nc=6, Np=3; rank: positive, negative, positive, negative, negative, positive
    ranked = pd.DataFrame(
        {
            "id": ["A-0"],
            "E": ["X"],
            "Nc": [6],
            "Np": [3],
            "K": [[1, 2]],
            "P": [[1.0, 0.5]],
            "R": [[1 / 3, 1 / 3]],
            "rank": [[0, 3, 1, 4, 5, 2]],
        }
    )
    g = graded_labels(ranked).assign(grade=[4.0, 2.0])
    ss = sample_set(g, ranked)
    a = np.array([0.25, 0.5])
    f = measure_matrix(ss, "F", a)
    # K=2: n_p=1 -> F = 1 / (alpha*2 + (1-alpha)*3)
    assert f[:, 1] == pytest.approx([1 / (0.5 + 2.25), 1 / (1 + 1.5)])
    fe = measure_matrix(ss, "F_e", a)
    # K=2: rank[:4] holds 2 positives -> N_p estimate 2; K=1: rank[:2] holds 1
    assert fe[:, 1] == pytest.approx([1 / (0.5 + 1.5), 1 / (1 + 1)])
    assert fe[:, 0] == pytest.approx([1.0, 1.0])
    t = measure_matrix(ss, "T", a)
    assert t[:, 1] == pytest.approx([0.75 * 1 - 0.25 * 1 / 2, 0.5 - 0.5 / 2])
    tu = measure_matrix(ss, "T_u", a)
    assert tu[:, 1] == pytest.approx([0.75 - 0.25, 0.0])
    ndcg = measure_matrix(ss, "nDCG_inK")
    assert ndcg[0].tolist() == pytest.approx([1.0, 1.0])
    # a top K without a positive scores 0; one found late scores below 1
    ranked2 = ranked.assign(rank=[[3, 0, 1, 4, 5, 2]], P=[[0.0, 0.5]], R=[[0.0, 1 / 3]])
    ss2 = sample_set(graded_labels(ranked2).assign(grade=1.0), ranked2)
    assert measure_matrix(ss2, "nDCG_inK")[0].tolist() == pytest.approx([0.0, 1 / math.log2(3)])
    assert ss.frame["width"].tolist() == ["narrow", "narrow"]
    # without the ranked samples, F_e is undefined
    assert np.isnan(measure_matrix(sample_set(g), "F_e", a)).all()


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall_b", "kendall_c"])
def test_correlate_matches_scipy_row_by_row(method):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(12, 60)).astype(float)  # many ties
    x[5] = 1.0  # a constant row
    y = rng.integers(1, 6, size=60).astype(float)
    got = correlate(x, y, method)
    for i, row in enumerate(x):
        if np.ptp(row) == 0:
            assert np.isnan(got[i])
            continue
        if method == "spearman":
            want = stats.spearmanr(row, y).statistic
        elif method == "pearson":
            want = stats.pearsonr(row, y).statistic
        else:
            want = stats.kendalltau(row, y, variant=method[-1]).statistic
        assert got[i] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall_b", "kendall_c"])
def test_alpha_maximisation_matches_brute_force(method):
    ranked = synthetic_ranked(25, [(10, 2), (10, 4)], [2, 3, 4, 6], seed=1)
    g = graded_labels(ranked)
    g["grade"] = np.random.default_rng(2).integers(1, 6, len(g)).astype(float)
    ss = sample_set(g, ranked)
    alphas = alpha_grid(12, 0.7)
    table = correlation_table(
        ss, methods=(method,), alphas=alphas, min_segment=50, kendall_max_samples=0
    )
    segs = {labels["segment"]: idx for labels, idx in segments(ss, min_segment=50)}
    for row in table.itertuples():
        part = ss.take(segs[row.segment])
        y = part.frame["grade"].to_numpy()
        x = measure_matrix(part, row.measure, alphas)
        values = []
        for xr in x:
            if np.ptp(xr) == 0:
                values.append(np.nan)
            elif method == "spearman":
                values.append(stats.spearmanr(xr, y).statistic)
            elif method == "pearson":
                values.append(stats.pearsonr(xr, y).statistic)
            else:
                values.append(stats.kendalltau(xr, y, variant=method[-1]).statistic)
        values = np.asarray(values)
        assert row.corr == pytest.approx(np.nanmax(values), abs=1e-9), (row.measure, row.segment)
        if row.measure in ("F", "F_e", "T", "T_u"):
            best = np.flatnonzero(np.isclose(values, np.nanmax(values), atol=1e-9))
            assert row.alpha in alphas[best]
        else:
            assert np.isnan(row.alpha)
    assert len(segs) >= 3 and set(table["kind"]) == {"all", "width", "ratio"}


def recovery_samples(alpha: float, seed: int):
    ranked = synthetic_ranked(
        90, [(12, 2), (20, 3), (20, 5), (30, 8)], list(range(1, 13)), seed=seed
    )
    ss = sample_set(graded_labels(ranked), ranked)
    ss.frame["grade"] = simulate_grades(ss, alpha, noise=0.05, seed=seed, discrete=False)
    return ss


@pytest.mark.parametrize("alpha", [0.3, 0.8])
def test_study_recovers_the_alpha_of_simulated_grades_and_ranks_f_first(alpha):
    ss = recovery_samples(alpha, seed=int(alpha * 10))
    assert ss.frame["Np"].nunique() == 4 and ss.frame["K"].nunique() == 12
    grid = alpha_grid()
    table = correlation_table(ss, methods=("spearman", "pearson"), alphas=grid, min_segment=300)
    whole = table[table["kind"] == "all"].set_index(["method", "measure"])
    nearest = int(np.argmin(np.abs(grid - alpha)))
    for method in ("spearman", "pearson"):
        found = int(np.flatnonzero(grid == whole.loc[(method, "F"), "alpha"])[0])
        assert abs(found - nearest) <= 1, (method, grid[found])  # within the grid's resolution
        f = whole.loc[(method, "F"), "corr"]
        for other in ("T", "T_u", "nDCG_inK", "F_e"):
            assert f > whole.loc[(method, other), "corr"], (method, other)
    diff = difference_table(ss, table, pairs=[("T", "F")], n_boot=100)
    overall = diff[diff["kind"] == "all"].iloc[0]
    assert overall["diff"] < 0 and overall["ci_high"] < 0 and overall["significant"]


def test_segments_split_narrow_wide_and_ratios_with_a_minimum_size():
    ss = recovery_samples(0.5, seed=1)
    segs = segments(ss, min_segment=300)
    f = ss.frame
    for labels, idx in segs:
        assert len(idx) >= 300
        if labels["kind"] == "width":
            assert set(f["width"].iloc[idx]) == {labels["segment"]}
            want = (f["K"] < f["Np"]) if labels["segment"] == "narrow" else (f["K"] >= f["Np"])
            assert len(idx) == int(want.sum())
        if labels["kind"] == "ratio":
            assert set(f["ratio"].iloc[idx].map(lambda r: f"{r:.1f}")) == {labels["segment"]}
    kept = {labels["segment"] for labels, _ in segs if labels["kind"] == "ratio"}
    counts = f["ratio"].value_counts()
    assert kept == {f"{r:.1f}" for r, n in counts.items() if n >= 300}
    assert kept != {f"{r:.1f}" for r in counts.index}  # some ratios are too small
    dist = grade_distribution(ss, min_segment=300)
    sums = dist.groupby("ratio")["share"].sum()
    assert np.allclose(sums, 1.0) and set(sums.index) == kept


def test_acc_given_hit_by_hand():
    ranked = pd.DataFrame(
        {
            "id": ["A-0", "A-1"],
            "E": ["X", "X"],
            "Nc": [4, 4],
            "Np": [2, 2],
            "K": [[2, 3], [2, 3]],
            "P": [[1.0, 2 / 3], [0.5, 1 / 3]],
            "R": [[1.0, 1.0], [0.5, 0.5]],
            "rank": [[0, 1, 2, 3], [0, 2, 3, 1]],
        }
    )
    g = graded_labels(ranked).assign(grade=[5.0, 4.0, 3.0, 2.0])
    t = acc_given_hit(sample_set(g, ranked), accurate_grade=4)
    row = t.iloc[0]  # all four are wide (K >= Np)
    assert row["n"] == 4 and row["n_hit"] == 2 and row["hit_rate"] == 0.5
    assert row["grade_hit"] == 4.5 and row["grade_miss"] == 2.5 and row["grade_all"] == 3.5
    assert row["acc_hit"] == 1.0 and row["acc_miss"] == 0.0 and row["acc_all"] == 0.5


def test_differences_of_a_segment_with_constant_grades_are_nan_not_an_error():
    # a small model may grade every narrow sample alike: no correlation, so no argmax alpha
    ranked = synthetic_ranked(20, [(10, 4)], [1, 2, 3, 4, 6, 8], seed=3)
    ss = sample_set(graded_labels(ranked), ranked)
    narrow = (ss.frame["K"] < ss.frame["Np"]).to_numpy()
    rng = np.random.default_rng(0)
    ss.frame["grade"] = np.where(narrow, 1.0, rng.integers(1, 6, len(narrow)).astype(float))
    table = correlation_table(ss, methods=("spearman",), min_segment=10)
    diff = difference_table(ss, table, n_boot=20, min_segment=10)
    flat = diff[diff["segment"] == "narrow"]
    assert len(flat) and flat["diff"].isna().all() and not flat["significant"].any()
    assert diff.loc[diff["segment"] == "wide", "diff"].notna().any()
