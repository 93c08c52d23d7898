"""ragnb.stats: paired bootstrap, randomization test, Holm/Bonferroni, top-K agreement, compare."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import altair as alt
import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from ragnb import stats
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.report.charts import comparison_chart

IDS = [f"q{i:04d}" for i in range(2000)]


def series(values, ids=None) -> pd.Series:
    values = np.asarray(values, dtype=float)
    return pd.Series(values, index=(ids or IDS)[: len(values)])


# --------------------------------------------------------------------------------------------
# inputs


def test_every_input_form_gives_the_same_pairing():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1, "d": 1}}
    run_a = {"q1": {"a": 1.0}, "q2": {"x": 1.0, "b": 0.5}, "q3": {"c": 1.0}}
    run_b = {"q1": {"x": 1.0}, "q2": {"b": 1.0}, "q3": {"d": 1.0, "c": 0.5}}
    ra = evaluate(qrels, run_a, ["P@1", "R@2"])
    rb = evaluate(qrels, run_b, ["P@1", "R@2"])
    # P@1: a = (1, 0, 1), b = (0, 1, 1): differences 1, -1, 0
    forms = [
        (ra, rb, "P@1"),
        (ra.per_query, rb.per_query, "P_1"),  # a trec_eval alias finds P@1
        (ra.per_query_wide(), rb.per_query_wide(), "P@1"),
        (ra.per_query_wide().reset_index(), rb.per_query_wide().reset_index(), "P@1"),
        (ra.per_query_wide()["P@1"], rb.per_query_wide()["P@1"], None),
        ({"q1": 1.0, "q2": 0.0, "q3": 1.0}, {"q3": 1.0, "q1": 0.0, "q2": 1.0}, None),
    ]
    for a, b, measure in forms:
        r = stats.randomization_test(a, b, measure=measure)
        # 2**3 sign vectors; |sum| >= 0 for all of them
        assert (r.difference, r.p_value, r.method, r.n_permutations) == (0.0, 1.0, "exact", 8)
        assert (r.mean_a, r.mean_b) == (pytest.approx(2 / 3), pytest.approx(2 / 3))


def test_queries_that_do_not_align_are_named():
    a = {"q1": 0.5, "q2": 0.25, "q3": 1.0}
    b = {"q1": 0.5, "q2": 0.25, "q9": 1.0}
    with pytest.raises(InputError, match=r"1 only in system a \('q3'\); 1 only in system b"):
        stats.paired_bootstrap(a, b)
    with pytest.raises(InputError) as err:
        stats.randomization_test(a, b)
    assert err.value.query_id == "q3"


def test_nan_values_are_dropped_pairwise_and_counted():
    a = {"q1": 0.75, "q2": np.nan, "q3": 0.5, "q4": 0.5}
    b = {"q1": 0.5, "q2": 0.5, "q3": 0.25, "q4": np.nan}
    boot = stats.paired_bootstrap(a, b)
    assert (boot.n_queries, boot.n_dropped) == (2, 2)
    assert (boot.low, boot.high, boot.difference) == (0.25, 0.25, 0.25)
    test = stats.randomization_test(a, b)
    assert (test.n_queries, test.n_dropped, test.p_value) == (2, 2, 0.5)  # ++ and -- of 4
    with pytest.raises(InputError, match="no query has a defined"):
        stats.paired_bootstrap({"q1": np.nan}, {"q1": 0.5})


def test_input_errors():
    long = pd.DataFrame({"query_id": ["q1", "q1"], "measure": ["P@1", "R@1"], "value": [1.0, 0.5]})
    with pytest.raises(InputError, match="several measures"):
        stats.paired_bootstrap(long, long)
    with pytest.raises(InputError, match="no measure 'nDCG@10'"):
        stats.paired_bootstrap(long, long, measure="nDCG@10")
    dup = pd.Series([1.0, 0.5], index=["q1", "q1"])
    with pytest.raises(InputError, match="several values") as err:
        stats.paired_bootstrap(dup, dup)
    assert err.value.query_id == "q1"
    with pytest.raises(InputError, match="not a number"):
        stats.paired_bootstrap({"q1": "high"}, {"q1": 0.5})
    with pytest.raises(InputError, match="infinite"):
        stats.paired_bootstrap({"q1": np.inf}, {"q1": 0.5})
    with pytest.raises(InputError, match="expected per-query values"):
        stats.paired_bootstrap([1.0], [0.5])
    with pytest.raises(InputError, match="confidence"):
        stats.paired_bootstrap({"q1": 1.0}, {"q1": 0.5}, confidence=95)
    with pytest.raises(InputError, match="n_resamples"):
        stats.randomization_test({"q1": 1.0}, {"q1": 0.5}, n_resamples=0)
    with pytest.raises(InputError, match="unknown interval method"):
        stats.paired_bootstrap({"q1": 1.0}, {"q1": 0.5}, method="basic")


# --------------------------------------------------------------------------------------------
# paired bootstrap


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_of_a_constant_difference_is_that_constant(method):
    b = np.arange(50) / 64
    r = stats.paired_bootstrap(series(b + 0.125), series(b), method=method)
    assert (r.difference, r.low, r.high) == (0.125, 0.125, 0.125)
    assert (r.n_queries, r.n_dropped, r.n_resamples) == (50, 0, 10_000)


def test_bootstrap_percentile_matches_a_naive_reference():
    rng = np.random.default_rng(11)
    a, b = rng.random(30), rng.random(30)
    r = stats.paired_bootstrap(series(a), series(b), n_resamples=2000, seed=5)
    # naive: one (B, n) index matrix from the same generator (30 * 2000 fits in one block)
    d = a - b
    idx = np.random.default_rng(5).integers(0, 30, size=(2000, 30))
    alpha = 1 - 0.95  # 0.050000000000000044, as scipy computes it
    low, high = np.quantile(d[idx].mean(axis=1), [alpha / 2, 1 - alpha / 2])
    assert (r.low, r.high) == (low, high)
    assert r.low < r.difference < r.high
    assert r.difference == pytest.approx(d.mean()) and r.mean_a == pytest.approx(a.mean())


@pytest.mark.parametrize("n", [5, 40, 300])
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_intervals_match_scipy_on_the_same_resamples(n, method):
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n).round(1)  # b is coarse: resampled means tie
    r = stats.paired_bootstrap(series(a), series(b), n_resamples=3000, method=method, seed=2)
    boot = stats.bootstrap._bootstrap_means(a - b, 3000, np.random.default_rng(2))
    ref = scipy.stats.bootstrap(
        (a - b,),
        np.mean,
        n_resamples=0,
        bootstrap_result=SimpleNamespace(bootstrap_distribution=boot),
        method={"percentile": "percentile", "bca": "BCa"}[method],
        vectorized=True,
    ).confidence_interval
    assert r.low == pytest.approx(ref.low, abs=1e-12)
    assert r.high == pytest.approx(ref.high, abs=1e-12)


def test_bootstrap_in_several_blocks_is_deterministic_and_close_to_the_normal_interval():
    rng = np.random.default_rng(0)
    n = 1000  # 3000 resamples x 1000 queries: two blocks
    ids = [f"q{i:04d}" for i in range(n)]
    a, b = series(rng.random(n), ids), series(rng.random(n), ids)
    r1 = stats.paired_bootstrap(a, b, n_resamples=3000, seed=3)
    r2 = stats.paired_bootstrap(a, b, n_resamples=3000, seed=3)
    r3 = stats.paired_bootstrap(a, b, n_resamples=3000, seed=4)
    assert r1 == r2 and (r1.low, r1.high) != (r3.low, r3.high)
    d = (a - b).to_numpy()
    half = 1.96 * d.std() / np.sqrt(n)
    assert r1.low == pytest.approx(d.mean() - half, abs=0.1 * half)
    assert r1.high == pytest.approx(d.mean() + half, abs=0.1 * half)


# --------------------------------------------------------------------------------------------
# randomization test


def test_identical_systems_give_p_1():
    x = series(np.random.default_rng(1).random(40))
    assert stats.randomization_test(x, x).p_value == 1.0  # Monte Carlo: (B + 1) / (B + 1)
    small = series([0.5, 0.25, 0.0])
    r = stats.randomization_test(small, small)
    assert (r.p_value, r.method) == (1.0, "exact")


def test_a_constant_shift_gives_a_tiny_p():
    b = np.arange(10) / 16
    # exact: 2**10 = 1024 sign vectors; only all-plus and all-minus reach |sum| = 10 * 0.25
    r = stats.randomization_test(series(b + 0.25), series(b), n_resamples=2000)
    assert (r.method, r.n_permutations, r.p_value) == ("exact", 1024, 2 / 1024)
    b = np.arange(40) / 64
    r = stats.randomization_test(series(b + 0.25), series(b), n_resamples=1000)
    # Monte Carlo: no random sign vector of 40 reaches it; (0 + 1) / (1000 + 1)
    assert (r.method, r.p_value) == ("monte_carlo", 1 / 1001)


def _scipy_p(a: np.ndarray, b: np.ndarray) -> float:
    res = scipy.stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    )
    return float(res.pvalue)


@pytest.mark.parametrize("case", range(24))
def test_exact_randomization_agrees_with_scipy_permutation_test(case):
    rng = np.random.default_rng(100 + case)
    n = 2 + case % 10  # scipy needs two observations
    if case % 2:
        a, b = rng.random(n), rng.random(n)  # continuous
    else:
        a, b = rng.integers(0, 9, n) / 8, rng.integers(0, 9, n) / 8  # many ties, exact sums
    r = stats.randomization_test(series(a), series(b), exact=True)
    assert r.p_value == pytest.approx(_scipy_p(a, b), abs=1e-12)


def test_monte_carlo_is_close_to_exact_and_deterministic():
    rng = np.random.default_rng(9)
    a, b = series(rng.random(12)), series(rng.random(12))
    exact = stats.randomization_test(a, b, exact=True)
    mc = stats.randomization_test(a, b, exact=False, n_resamples=20_000, seed=1)
    assert exact.n_permutations == 4096 and mc.n_permutations == 20_000
    assert mc.p_value == pytest.approx(exact.p_value, abs=0.015)
    assert stats.randomization_test(a, b, exact=False, n_resamples=500, seed=1) == (
        stats.randomization_test(a, b, exact=False, n_resamples=500, seed=1)
    )
    # default: exact when 2**n <= n_resamples
    assert stats.randomization_test(a, b, n_resamples=4096).method == "exact"
    assert stats.randomization_test(a, b, n_resamples=4095).method == "monte_carlo"
    with pytest.raises(InputError, match="too large"):
        x = series(np.arange(25.0))
        stats.randomization_test(x, x * 2, exact=True)


# --------------------------------------------------------------------------------------------
# multiple comparisons


def test_holm_on_a_textbook_list():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1); times m - i + 1 = 4, 3, 2, 1:
    # 0.02, 0.03, 0.06, 0.04; running maximum: 0.02, 0.03, 0.06, 0.06
    np.testing.assert_allclose(stats.holm(p), [0.03, 0.06, 0.06, 0.02])
    # Holm's steps at alpha = 0.05: 0.005 <= 0.05/4 reject; 0.01 <= 0.05/3 reject;
    # 0.03 > 0.05/2 stop. The adjusted values reject the same hypotheses.
    assert (stats.holm(p) <= 0.05).tolist() == [True, False, False, True]
    # ties keep input order and values clip at 1 (as statsmodels' multipletests "holm")
    # sorted 0.2, 0.2, 0.5, 0.9 -> 0.8, 0.6, 1.0, 0.9 -> running max 0.8, 0.8, 1.0, 1.0
    np.testing.assert_allclose(stats.holm([0.5, 0.2, 0.2, 0.9]), [1.0, 0.8, 0.8, 1.0])
    np.testing.assert_allclose(stats.bonferroni(p), [0.04, 0.16, 0.12, 0.02])
    np.testing.assert_allclose(stats.adjust_p_values(p, "none"), p)
    assert stats.holm([]).shape == (0,)
    for bad in ([0.5, np.nan], [1.5], [-0.1]):
        with pytest.raises(InputError, match=r"\[0, 1\]"):
            stats.holm(bad)
    with pytest.raises(InputError, match="unknown correction"):
        stats.adjust_p_values(p, "fdr")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_lies_between_raw_and_bonferroni_and_keeps_the_order(p):
    raw = np.asarray(p)
    adj = stats.holm(raw)
    assert np.all(adj >= raw) and np.all(adj <= stats.bonferroni(raw) + 1e-15)
    assert np.all((adj >= 0) & (adj <= 1))
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(adj[order]) >= 0)


# --------------------------------------------------------------------------------------------
# top-K agreement


def naive_kp(la: list[str], lb: list[str], p: float) -> float:
    """K^(p) written case by case from Fagin, Kumar and Sivakumar (2003), section 3.1."""
    ra = {d: i for i, d in enumerate(la)}
    rb = {d: i for i, d in enumerate(lb)}
    total = 0.0
    for i, j in itertools.combinations(list(dict.fromkeys(la + lb)), 2):
        ai, aj, bi, bj = i in ra, j in ra, i in rb, j in rb
        if ai and aj and bi and bj:  # case 1: opposite order
            total += (ra[i] - ra[j]) * (rb[i] - rb[j]) < 0
        elif ai and aj and bi != bj:  # case 2 in A: the member absent from B is ahead in A
            present, absent = (i, j) if bi else (j, i)
            total += ra[absent] < ra[present]
        elif bi and bj and ai != aj:  # case 2 in B
            present, absent = (i, j) if ai else (j, i)
            total += rb[absent] < rb[present]
        elif (ai and not bi and bj and not aj) or (bi and not ai and aj and not bj):  # case 3
            total += 1
        else:  # case 4: both in one list, neither in the other
            total += p
    return total


def test_kendall_top_k_by_hand():
    # A = (a, b, c), B = (b, a, d): {a,b} swapped 1; {a,c} {b,c} {a,d} {b,d} case 2 in the
    # right order 0; {c,d} case 3: 1. K = 2 whatever p; maximum 3*3 + p*(3 + 3)
    r = stats.kendall_top_k(["a", "b", "c"], ["b", "a", "d"])
    assert r.k_p == 2.0 and r.distance == pytest.approx(2 / 12) and r.tau == pytest.approx(2 / 3)
    # A = (a, b, c), B = (d, e, a): {a,b} {a,c} case 2 ok: 0; {b,c} case 4: p; {a,d} {a,e}:
    # case 2 in B with a behind: 1 + 1; {d,e} case 4: p; {b,d} {b,e} {c,d} {c,e} case 3: 4
    for p, k_p, top in [(0.0, 6.0, 9.0), (0.5, 7.0, 12.0), (1.0, 8.0, 15.0)]:
        r = stats.kendall_top_k(list("abc"), list("dea"), p=p)
        assert r.k_p == k_p and r.distance == pytest.approx(k_p / top)
        assert r.tau == pytest.approx(1 - 2 * k_p / top)
    # reversed list: all 3 pairs discordant, nothing else; 3 / 12
    assert stats.kendall_top_k(list("abc"), list("cba")).distance == pytest.approx(0.25)
    # lengths may differ: A = (a, b), B = (a): {a,b} case 2, a ahead in A: 0
    assert stats.kendall_top_k(["a", "b"], ["a"]).k_p == 0.0
    # the maximum is 0 for one list of one and one empty list: undefined
    assert np.isnan(stats.kendall_top_k(["a"], []).distance)
    with pytest.raises(InputError, match="'a' more than once"):
        stats.kendall_top_k(["a", "b", "a"], ["a"])
    with pytest.raises(InputError, match="penalty p"):
        stats.kendall_top_k(["a"], ["a"], p=2)


top_lists = st.lists(st.sampled_from("abcdefghijkl"), min_size=1, max_size=8, unique=True)


@settings(max_examples=300, deadline=None)
@given(top_lists, top_lists, st.sampled_from([0.0, 0.25, 0.5, 1.0]))
def test_kendall_top_k_properties(la, lb, p):
    r = stats.kendall_top_k(la, lb, p=p)
    assert r.k_p == pytest.approx(naive_kp(la, lb, p))
    if not np.isnan(r.distance):
        assert 0.0 <= r.distance <= 1.0 + 1e-12 and -1.0 - 1e-12 <= r.tau <= 1.0
    back = stats.kendall_top_k(lb, la, p=p)
    assert back.k_p == r.k_p and (back.tau == r.tau or np.isnan(r.tau))
    same = stats.kendall_top_k(la, la, p=p)
    assert (same.k_p, same.distance, same.tau) == (0.0, 0.0, 1.0)
    disjoint = [x.upper() for x in lb]  # no member in common with la
    far = stats.kendall_top_k(la, disjoint, p=p)
    assert far.distance == pytest.approx(1.0) and far.tau == pytest.approx(-1.0)
    if len(la) == len(lb):
        k = len(la)
        assert far.k_p == pytest.approx(k * k + p * k * (k - 1))


def run(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def test_top_k_agreement_on_runs_by_hand():
    run_a = run(
        [
            ("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0), ("q1", "z", 0.5),
            ("q2", "x", 1.0), ("q2", "y", 1.0),  # tie: trec_eval order is y, x (doc_id desc)
            ("q3", "m", 1.0), ("q3", "n", 0.5),
        ]
    )  # fmt: skip
    run_b = run(
        [
            ("q1", "b", 3.0), ("q1", "a", 2.0), ("q1", "d", 1.0),
            ("q2", "y", 2.0), ("q2", "x", 1.0),
            ("q4", "m", 1.0),
        ]
    )  # fmt: skip
    res = stats.top_k_agreement(run_a, run_b, k=3)
    pq = res.per_query.set_index("query_id")
    assert pq.index.tolist() == ["q1", "q2", "q3", "q4"]
    # q1: (a, b, c) vs (b, a, d), z cut at K = 3: K = 2 of 12
    assert pq.loc["q1", ["k_a", "k_b", "n_common"]].tolist() == [3, 3, 2]
    assert pq.loc["q1", "overlap"] == pytest.approx(2 / 3)
    assert pq.loc["q1", "kendall_tau"] == pytest.approx(1 - 2 * 2 / 12)
    # q2: (y, x) vs (y, x): identical; overlap 2 / K
    assert pq.loc["q2", ["overlap", "k_p", "kendall_tau"]].tolist() == [
        pytest.approx(2 / 3),
        0.0,
        1.0,
    ]
    # q3 only in A: (m, n) vs (): the one pair is case 4, p of at most p -> distance 1
    assert pq.loc["q3", ["k_b", "overlap", "kendall_distance"]].tolist() == [0, 0.0, 1.0]
    # q4 only in B with one document: maximum 0, undefined
    assert np.isnan(pq.loc["q4", "kendall_tau"]) and pq.loc["q4", "overlap"] == 0.0
    agg = res.aggregate.set_index("measure")
    assert agg.loc["overlap", "value"] == pytest.approx((2 / 3 + 2 / 3) / 4)
    assert agg.loc["kendall_tau", ["n_valid", "n_queries"]].tolist() == [3, 4]
    assert res.aggregate_to_dict()["kendall_tau"] == pytest.approx((2 / 3 + 1 - 1) / 3)
    # the file order instead of the score order makes q2's A (x, y): one discordant pair of
    # at most 2*2 + p*(1 + 1) = 5
    by_file = stats.top_k_agreement(run_a, run_b, k=3, order="file").per_query
    assert by_file.set_index("query_id").loc["q2", "kendall_tau"] == pytest.approx(1 - 2 / 5)
    with pytest.raises(InputError, match="positive integer"):
        stats.top_k_agreement(run_a, run_b, k=0)


def test_top_k_agreement_matches_the_list_function_on_random_runs():
    rng = np.random.default_rng(4)
    docs = [f"d{i}" for i in range(30)]
    rows_a, rows_b = [], []
    for q in range(25):
        for rows in (rows_a, rows_b):
            for d in rng.choice(docs, size=int(rng.integers(1, 20)), replace=False):
                rows.append((f"q{q:02d}", d, float(rng.random())))
    run_a, run_b = run(rows_a), run(rows_b)
    res = stats.top_k_agreement(run_a, run_b, k=10, p=0.25)

    def top10(rows, qid):
        return [d for _, d, _ in sorted((r for r in rows if r[0] == qid), key=lambda r: -r[2])][:10]

    for row in res.per_query.itertuples():
        la, lb = top10(rows_a, row.query_id), top10(rows_b, row.query_id)
        ref = stats.kendall_top_k(la, lb, p=0.25)
        assert row.k_p == ref.k_p == naive_kp(la, lb, 0.25)
        assert row.overlap == len(set(la) & set(lb)) / 10


# --------------------------------------------------------------------------------------------
# compare


def per_query_frame(systems: dict[str, np.ndarray], measures=("nDCG@10", "P@10")) -> pd.DataFrame:
    rows = []
    for name, values in systems.items():
        for j, m in enumerate(measures):
            rows += [(name, IDS[i], m, v / (j + 1)) for i, v in enumerate(values)]
    return pd.DataFrame(rows, columns=["retriever", "query_id", "measure", "value"])


def three_systems() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    base = np.round(rng.random(40) * 16) / 16
    return {
        "bm25": base,
        "dense": base + 0.125,  # a constant gain: significant
        "noise": np.round((base + rng.normal(0, 0.1, 40)) * 16) / 16,
    }


def test_compare_rows_are_the_paired_functions_and_holm_spans_all_comparisons():
    systems = three_systems()
    frame = per_query_frame(systems)
    res = stats.compare(frame, n_resamples=2000, seed=3)
    pairs = res.pairs
    assert list(pairs.columns) == [
        "measure",
        "system_a",
        "system_b",
        "pair",
        "mean_a",
        "mean_b",
        "difference",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "significant",
        "cohens_dz",
        "dz_low",
        "dz_high",
        "hedges_gz",
        "gz_low",
        "gz_high",
        "n_queries",
        "n_dropped",
    ]
    assert res.measures == ("nDCG@10", "P@10") and res.systems == ("bm25", "dense", "noise")
    assert pairs[["system_a", "system_b"]].values.tolist()[:3] == [
        ["bm25", "dense"],
        ["bm25", "noise"],
        ["dense", "noise"],
    ]
    assert len(pairs) == res.settings["n_comparisons"] == 6
    np.testing.assert_allclose(pairs["p_adjusted"], stats.holm(pairs["p_value"]))
    for row in pairs.itertuples():
        div = 1 if row.measure == "nDCG@10" else 2
        a, b = series(systems[row.system_a] / div), series(systems[row.system_b] / div)
        boot = stats.paired_bootstrap(a, b, n_resamples=2000, seed=3)
        test = stats.randomization_test(a, b, n_resamples=2000, seed=3)
        assert (row.difference, row.ci_low, row.ci_high) == (boot.difference, boot.low, boot.high)
        assert row.p_value == test.p_value and row.n_queries == 40
    first = pairs.iloc[0]  # bm25 - dense: exactly -0.125 on every query
    assert (first["difference"], first["ci_low"], first["ci_high"]) == (-0.125, -0.125, -0.125)
    assert first["p_value"] == 1 / 2001 and first["significant"]
    # the same numbers from a dict of per-query frames, and from the runs themselves
    as_dict = {
        name: g.drop(columns="retriever") for name, g in frame.groupby("retriever", sort=False)
    }
    pd.testing.assert_frame_equal(stats.compare(as_dict, n_resamples=2000, seed=3).pairs, pairs)


def test_compare_with_a_baseline_runs_and_bonferroni():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
    runs = {
        "good": run([(q, d, 1.0) for q, d in zip(["q1", "q2", "q3", "q4"], "abcd", strict=True)]),
        "bad": run([(q, "x", 1.0) for q in ["q1", "q2", "q3", "q4"]]),
        "half": run([("q1", "a", 1.0), ("q2", "b", 1.0), ("q3", "x", 1.0), ("q4", "x", 1.0)]),
    }
    res = stats.compare(
        runs, ["P@1", "success_1"], qrels=qrels, baseline="bad", correction="bonferroni"
    )
    pairs = res.pairs
    assert res.measures == ("P@1", "Success@1")
    assert pairs[["measure", "system_a", "system_b"]].values.tolist() == [
        ["P@1", "good", "bad"],
        ["P@1", "half", "bad"],
        ["Success@1", "good", "bad"],
        ["Success@1", "half", "bad"],
    ]
    # good - bad = 1 on 4 queries: exact, 2 of 16; half - bad: 1, 1, 0, 0: 8 of 16
    np.testing.assert_allclose(pairs["p_value"], [2 / 16, 8 / 16] * 2)
    np.testing.assert_allclose(pairs["p_adjusted"], [0.5, 1.0, 0.5, 1.0])
    assert pairs["difference"].tolist() == [1.0, 0.5, 1.0, 0.5]
    assert not pairs["significant"].any()
    means = res.means_wide()
    assert means.loc["half", "P@1"] == 0.5 and means.index.tolist() == ["good", "bad", "half"]
    with pytest.raises(InputError, match="pass qrels="):
        stats.compare(runs, ["P@1"])
    with pytest.raises(InputError, match="baseline 'none'"):
        stats.compare(runs, ["P@1"], qrels=qrels, baseline="none")


def test_compare_errors_name_the_measure_and_queries():
    frame = per_query_frame(three_systems())
    frame = frame[~((frame["retriever"] == "noise") & (frame["query_id"] == "q0005"))]
    with pytest.raises(InputError, match=r"nDCG@10: .*only in system 'bm25' \('q0005'\)"):
        stats.compare(frame, n_resamples=100)
    with pytest.raises(InputError, match="at least two systems"):
        stats.compare(frame[frame["retriever"] == "bm25"])
    with pytest.raises(InputError, match="no system column 'system'"):
        stats.compare(frame, system_column="system")
    with pytest.raises(InputError, match="no measure 'R@5'"):
        stats.compare(frame, ["R@5"])


def test_compare_table_and_chart():
    res = stats.compare(per_query_frame(three_systems()), n_resamples=2000)
    table = res.table()
    assert table.columns.tolist() == ["#", "system", "nDCG@10", "P@10"]
    assert table["#"].tolist() == ["a", "b", "c"]
    sig = res.pairs[res.pairs["significant"] & (res.pairs["measure"] == "nDCG@10")]
    # dense beats bm25 on every query; each marker is a significant win
    assert ("bm25", "dense") in set(zip(sig["system_a"], sig["system_b"], strict=True))
    dense = table.loc[1, "nDCG@10"]
    assert dense.startswith(f"{res.means_wide().loc['dense', 'nDCG@10']:.4f}") and "ᵃ" in dense
    assert not any("ᵇ" in cell for cell in table["nDCG@10"])  # nobody beats dense
    assert res.table(markers=False, digits=2).loc[1, "nDCG@10"] == (
        f"{res.means_wide().loc['dense', 'nDCG@10']:.2f}"
    )
    chart = comparison_chart(res.pairs)
    assert isinstance(chart, alt.FacetChart)
    spec = chart.to_dict()
    assert spec["facet"]["field"] == "measure"
    layers = spec["spec"]["layer"]
    assert [layer["mark"]["type"] for layer in layers] == ["rule", "rule", "point"]


def test_compare_is_deterministic_under_seed():
    frame = per_query_frame(three_systems())
    a = stats.compare(frame, n_resamples=500, seed=1).pairs
    b = stats.compare(frame, n_resamples=500, seed=1).pairs
    c = stats.compare(frame, n_resamples=500, seed=2).pairs
    pd.testing.assert_frame_equal(a, b)
    assert not a["ci_high"].equals(c["ci_high"])  # ci_low happens to agree: discrete values


def test_edge_cases_empty_runs_nan_values_and_evaluation_results():
    empty = run([]).astype({"score": "float64"})
    res = stats.top_k_agreement(empty, empty)
    assert len(res.per_query) == 0 and np.isnan(res.aggregate["value"]).all()
    assert res.aggregate["n_queries"].tolist() == [0, 0, 0]
    # NaN per-query values are dropped pairwise in compare and counted
    frame = per_query_frame(three_systems(), measures=("nDCG@10",))
    frame.loc[(frame["retriever"] == "noise") & frame["query_id"].isin(IDS[:3]), "value"] = np.nan
    res = stats.compare(frame, n_resamples=200)
    assert res.pairs["n_dropped"].tolist() == [0, 3, 3]
    assert res.pairs["n_queries"].tolist() == [40, 37, 37]
    means = res.means.set_index("system")
    assert means.loc["noise", ["n_valid", "n_queries"]].tolist() == [37, 40]
    # EvaluationResults and wide frames are accepted too
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    ev = {
        "x": evaluate(qrels, {"q1": {"a": 1.0}, "q2": {"b": 1.0}}, ["P@1", "RR"]),
        "y": evaluate(qrels, {"q1": {"a": 1.0}, "q2": {"c": 1.0}}, ["P@1", "RR"]).per_query_wide(),
    }
    res = stats.compare(ev, "P_1")  # trec_eval alias
    assert res.measures == ("P@1",)
    assert res.pairs[["difference", "p_value"]].values.tolist() == [[0.5, 1.0]]  # 1, 0 -> 2 of 4
