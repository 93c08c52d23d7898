"""Judge calibration (confusion matrix, weighted kappa, Krippendorff's alpha, bootstrap intervals,
bias per grade, system rankings) and SPEAR's pseudo ground truth, on hand-computed examples, naive
references on random inputs, real qrels with a simulated noisy judge, and edge cases."""

from __future__ import annotations

import doctest
import itertools
import json
import math

import numpy as np
import oracle_data
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.judge import agreement as agreement_module
from ragnb.judge import calibration as calibration_module
from ragnb.judge.agreement import (
    STATISTICS,
    _tau_b_rows,
    agreement_intervals,
    confusion_matrix,
    judge_bias,
    kendall_tau,
    krippendorff_alpha,
    tau_interval,
    weighted_kappa,
)
from ragnb.judge.calibration import (
    Calibration,
    agreement_pairs,
    calibrate,
    system_agreement,
    system_tau_interval,
)
from ragnb.measures import pr_auc
from ragnb.studies.golden import spear as spear_module
from ragnb.studies.golden.spear import interpolated_pr, spear_evaluate, spear_pool

# ----------------------------------------------------------------------------- kappa

HUMAN = [0, 0, 1, 1, 2, 2]
JUDGE = [0, 1, 1, 1, 2, 0]


def test_weighted_kappa_hand_computed():
    # observed disagreement: (0,1) weight 1/2 and (2,0) weight 1, over 6 pairs; chance from the
    # marginals human (2,2,2)/6 and judge (2,3,1)/6: sum_ij w_ij r_i c_j = 15/36 (linear)
    assert weighted_kappa(HUMAN, JUDGE, weights="linear") == pytest.approx(
        1 - (1.5 / 6) / (15 / 36)
    )
    assert weighted_kappa(HUMAN, JUDGE, weights="linear") == pytest.approx(0.4)
    # quadratic: (1/4 + 1) / 6 against 10.5 / 36
    assert weighted_kappa(HUMAN, JUDGE, weights="quadratic") == pytest.approx(2 / 7)
    # unweighted: p_o = 4/6, p_e = (2*2 + 2*3 + 2*1)/36 = 1/3
    assert weighted_kappa(HUMAN, JUDGE, weights="none") == pytest.approx(0.5)
    assert weighted_kappa(HUMAN, HUMAN, weights="quadratic") == pytest.approx(1.0)
    # symmetric in the raters
    assert weighted_kappa(JUDGE, HUMAN) == pytest.approx(weighted_kappa(HUMAN, JUDGE))


def _naive_kappa(a, b, weights, labels):
    k = len(labels)
    n = len(a)
    pos = {c: i for i, c in enumerate(labels)}
    obs = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        obs[pos[x], pos[y]] += 1 / n
    num = den = 0.0
    for i, j in itertools.product(range(k), repeat=2):
        if weights == "none":
            w = float(i != j)
        elif weights == "linear":
            w = abs(i - j) / (k - 1)
        else:
            w = (i - j) ** 2 / (k - 1) ** 2
        num += w * obs[i, j]
        den += w * obs[i, :].sum() * obs[:, j].sum()
    return 1 - num / den


@pytest.mark.parametrize("weights", ["none", "linear", "quadratic"])
def test_weighted_kappa_matches_a_naive_reference_on_random_grades(weights):
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(5, 60))
        a = rng.integers(1, 6, n)
        b = np.clip(a + rng.integers(-2, 3, n), 1, 5)
        labels = list(range(1, 6))
        got = weighted_kappa(a, b, weights=weights, labels=labels)
        assert got == pytest.approx(_naive_kappa(a.tolist(), b.tolist(), weights, labels))


def test_weighted_kappa_edge_cases():
    # grade 3 unused: with the full scale, 2 -> 4 is two steps, not one like 1 -> 2
    a, b = [1, 2, 4, 2, 1], [2, 4, 4, 1, 1]
    assert weighted_kappa(a, b) != pytest.approx(weighted_kappa(a, b, labels=[1, 2, 3, 4]))
    assert weighted_kappa(a, b, labels=[1, 2, 3, 4]) == pytest.approx(
        _naive_kappa(a, b, "linear", [1, 2, 3, 4])
    )
    # both raters used one grade: chance explains everything
    assert math.isnan(weighted_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(weighted_kappa([], []))
    with pytest.raises(InputError, match="aligned"):
        weighted_kappa([1, 2], [1])
    with pytest.raises(InputError, match="not among labels"):
        weighted_kappa([1, 7], [1, 2], labels=[1, 2, 3])
    with pytest.raises(InputError, match="integer"):
        weighted_kappa([1.5, 2], [1, 2])
    with pytest.raises(InputError, match="weights"):
        weighted_kappa([1], [1], weights="cubic")


def test_confusion_matrix_hand_computed():
    m = confusion_matrix(HUMAN, JUDGE)
    wide = m.pivot(index="human", columns="judge", values="count")
    assert wide.to_numpy().tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    assert m["count"].sum() == 6 and m["share"].sum() == pytest.approx(1.0)
    # the full scale lists unused grades with zero counts
    full = confusion_matrix(HUMAN, JUDGE, labels=[0, 1, 2, 3])
    assert len(full) == 16 and full.loc[full["human"] == 3, "count"].sum() == 0


# ----------------------------------------------------------------------------- system rankings


def test_kendall_tau_hand_computed_and_degenerate_cases():
    # only the pair (3rd, 4th) disagrees: (5 - 1) / 6
    assert kendall_tau([0.5, 0.4, 0.3, 0.2], [0.45, 0.42, 0.1, 0.3]).tau == pytest.approx(4 / 6)
    assert kendall_tau([1, 2, 3], [3, 2, 1]).tau == pytest.approx(-1.0)
    assert math.isnan(kendall_tau([1.0], [1.0]).tau)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]).tau)
    with pytest.raises(InputError):
        kendall_tau([1, 2], [1, 2, 3])


def test_system_agreement_by_hand():
    # q: the human says a relevant, b not; the judge the opposite
    human = {"q": {"a": 1, "b": 0}}
    judge = {"q": {"a": 0, "b": 1}}
    runs = {"s1": {"q": {"a": 2.0, "b": 1.0}}, "s2": {"q": {"b": 2.0, "a": 1.0}}}
    frame, tau = system_agreement(human, judge, runs, "P@1")
    assert frame.set_index("system")[["human", "judge"]].to_dict("index") == {
        "s1": {"human": 1.0, "judge": 0.0},
        "s2": {"human": 0.0, "judge": 1.0},
    }
    assert frame["rank_human"].tolist() == [1, 2] and frame["rank_judge"].tolist() == [2, 1]
    assert tau.tau == pytest.approx(-1.0) and tau.n == 2


def test_calibrate_uses_only_the_pairs_both_labelled():
    human = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": list("abcd"), "relevance": [2, 1, 0, 2]})
    judge = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": list("abce"), "relevance": [2, 2, 0, 2]})
    pairs = agreement_pairs(human, judge)
    assert pairs[["doc_id", "human", "judge"]].values.tolist() == [
        ["a", 2, 2],
        ["b", 1, 2],
        ["c", 0, 0],
    ]
    runs = {"r": {"q": {"d": 3.0, "e": 2.0, "a": 1.0}}}  # d, e: labelled by one side only
    cal = calibrate(human, judge, runs, measure="P@3", labels=[0, 1, 2])
    stats = cal.agreement.set_index("statistic")["value"]
    assert stats["exact agreement"] == pytest.approx(2 / 3)
    assert stats["within one grade"] == pytest.approx(1.0)
    assert stats["pairs"] == 3
    assert cal.kappas()["linear"] == pytest.approx(
        weighted_kappa([2, 1, 0], [2, 2, 0], labels=[0, 1, 2])
    )
    # both measured on the shared pairs only: d (human only) and e (judge only, grade 2) count
    # as unjudged for both, so P@3 = 1/3 (a) under each, not 2/3 for the judge
    np.testing.assert_allclose(cal.systems[["human", "judge"]].to_numpy(), [[1 / 3, 1 / 3]])
    assert cal.matrix.loc[1, 2] == 1
    assert any("weak evidence" in n for n in cal.notes)
    summary = cal.summary()
    assert summary["pairs"] == 3 and summary["labels"] == [0, 1, 2]
    with pytest.raises(InputError, match="both"):
        calibrate({"q": {"a": 1}}, {"q": {"b": 1}})


def test_calibration_export(tmp_path):
    cal = calibrate({"q": {"a": 1, "b": 0}}, {"q": {"a": 1, "b": 1}}, {"s": {"q": {"a": 1.0}}})
    cal.export(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {
        "pairs.csv",
        "confusion.csv",
        "agreement.csv",
        "systems.csv",
        "calibration.json",
    }


# ----------------------------------------------------------------------------- Krippendorff's alpha


def _naive_alpha(a, b, level):
    """Krippendorff (2011) step by step: coincidences unit by unit, then D_o and D_e."""
    values = sorted(set(a) | set(b))
    o = {(c, k): 0.0 for c in values for k in values}
    for x, y in zip(a, b, strict=True):  # m_u = 2 values: each ordered pair weighs 1 / (m_u - 1)
        o[x, y] += 1
        o[y, x] += 1
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c, k):
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return float((c - k) ** 2)
        lo, hi = min(c, k), max(c, k)
        return (sum(n_c[g] for g in values if lo <= g <= hi) - (n_c[c] + n_c[k]) / 2) ** 2

    d_o = sum(o[c, k] * delta(c, k) for c in values for k in values) / n
    d_e = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values) / (n * (n - 1))
    return 1 - d_o / d_e


def test_krippendorff_alpha_hand_computed():
    # perfect agreement is 1 at every level
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha([0, 1, 2, 2], [0, 1, 2, 2], level=level) == pytest.approx(1.0)
    # two items graded (1, 2) and (3, 3): coincidences o_12 = o_21 = 1, o_33 = 2, so n_1 = n_2 = 1,
    # n_3 = 2, n = 4. Observed sum o delta = 2 * delta_12.
    # interval: delta_12 = 1, delta_13 = 4, delta_23 = 1; expected sum n_c n_k delta =
    # 2 * (1*1*1 + 1*2*4 + 1*2*1) = 22; alpha = 1 - (n - 1) * 2 / 22 = 1 - 6/22 = 8/11
    assert krippendorff_alpha([1, 3], [2, 3], level="interval") == pytest.approx(8 / 11)
    # ordinal: delta_12 = (n_1 + n_2 - (n_1 + n_2)/2)**2 = 1, delta_13 = (4 - 1.5)**2 = 6.25,
    # delta_23 = (3 - 1.5)**2 = 2.25; expected 2 * (1 + 2 * 6.25 + 2 * 2.25) = 36; 1 - 6/36
    assert krippendorff_alpha([1, 3], [2, 3], level="ordinal") == pytest.approx(5 / 6)
    # nominal: expected n**2 - sum n_c**2 = 16 - 6 = 10; 1 - 6/10
    assert krippendorff_alpha([1, 3], [2, 3], level="nominal") == pytest.approx(0.4)
    # Krippendorff (2011), Section A: ten units, two observers, binary: o_01 = 4, n_0 = 14,
    # n_1 = 6, n = 20: alpha = 1 - 19 * 4 / (14 * 6) = 0.095
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha(a, b, level="nominal") == pytest.approx(1 - 76 / 84)
    # for binary data the three levels coincide
    assert krippendorff_alpha(a, b, level="interval") == pytest.approx(1 - 76 / 84)
    assert krippendorff_alpha(a, b, level="ordinal") == pytest.approx(1 - 76 / 84)


def test_krippendorff_alpha_matches_a_naive_reference_and_its_invariances():
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(2, 50))
        a = rng.integers(0, 5, n)
        b = np.clip(a + rng.integers(-2, 3, n), 0, 4)
        if len(set(a.tolist()) | set(b.tolist())) < 2:
            continue
        for level in ("nominal", "ordinal", "interval"):
            got = krippendorff_alpha(a, b, level=level)
            assert got == pytest.approx(_naive_alpha(a.tolist(), b.tolist(), level))
            # symmetric in the coders; a shift of the scale changes nothing
            assert krippendorff_alpha(b, a, level=level) == pytest.approx(got)
            assert krippendorff_alpha(a + 3, b + 3, level=level) == pytest.approx(got)
        # ordinal and nominal only see the order / identity of the grades: square them
        for level in ("nominal", "ordinal"):
            assert krippendorff_alpha(a**2, b**2, level=level) == pytest.approx(
                krippendorff_alpha(a, b, level=level)
            )


def test_krippendorff_alpha_matches_the_krippendorff_package():
    kr = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(3, 80))
        a = rng.integers(1, 6, n)
        b = np.clip(a + rng.integers(-1, 3, n), 1, 5)
        if len(set(a.tolist()) | set(b.tolist())) < 2:
            continue
        for level in ("nominal", "ordinal", "interval"):
            ref = kr.alpha(reliability_data=np.array([a, b], float), level_of_measurement=level)
            assert krippendorff_alpha(a, b, level=level) == pytest.approx(ref)


def test_krippendorff_alpha_edge_cases():
    assert math.isnan(krippendorff_alpha([], []))
    assert math.isnan(krippendorff_alpha([2, 2], [2, 2]))  # one value: D_e = 0
    # a single disagreeing item: o_01 = o_10 = 1, n_0 = n_1 = 1, n = 2: 1 - (2 - 1) * 2 / 2 = 0
    assert krippendorff_alpha([0], [1], level="nominal") == pytest.approx(0.0)
    # systematic disagreement is worse than chance
    assert krippendorff_alpha([0, 1, 0, 1], [1, 0, 1, 0], level="nominal") < 0
    with pytest.raises(InputError, match="level"):
        krippendorff_alpha([1], [1], level="ratio")
    with pytest.raises(InputError, match="aligned"):
        krippendorff_alpha([1, 2], [1])
    with pytest.raises(InputError, match="integer"):
        krippendorff_alpha([1.5], [1])


def test_alpha_penalises_a_biased_judge_more_than_kappa():
    # the judge grades every pair one higher: kappa (own marginals) sees a perfect association
    # between the two shifted scales only partly, alpha (pooled values) sees disagreement
    human = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 1])
    judge = human + 1
    assert krippendorff_alpha(human, judge, level="interval") < weighted_kappa(
        human, judge, weights="quadratic"
    )


# ----------------------------------------------------------------------------- bootstrap intervals


def _noisy_pairs(n, rng, sd=0.8):
    a = rng.integers(0, 4, n)
    b = np.clip(np.floor(a + sd * rng.standard_normal(n) + 0.5), 0, 3).astype(int)
    return a, b


def test_agreement_intervals_point_values_are_the_statistics():
    a, b = _noisy_pairs(200, np.random.default_rng(3))
    iv = agreement_intervals(a, b, labels=[0, 1, 2, 3], n_boot=50).set_index("statistic")
    assert list(iv.index) == list(STATISTICS)
    assert iv.loc["exact agreement", "value"] == pytest.approx(np.mean(a == b))
    assert iv.loc["within one grade", "value"] == pytest.approx(np.mean(np.abs(a - b) <= 1))
    for w, name in (
        ("none", "kappa"),
        ("linear", "kappa (linear)"),
        ("quadratic", "kappa (quadratic)"),
    ):
        assert iv.loc[name, "value"] == pytest.approx(
            weighted_kappa(a, b, weights=w, labels=[0, 1, 2, 3])
        )
    for level in ("nominal", "ordinal", "interval"):
        assert iv.loc[f"alpha ({level})", "value"] == pytest.approx(
            krippendorff_alpha(a, b, level=level)
        )
    assert (iv["resampled"] == "pairs").all() and (iv["n_units"] == 200).all()
    assert (iv["n_boot"] == 50).all() and (iv["ci"] == 0.95).all()


def test_agreement_intervals_match_a_naive_bootstrap_of_pairs():
    # the same generator draws the same index matrix: resample, recompute, take quantiles
    a, b = _noisy_pairs(60, np.random.default_rng(4))
    n_boot, labels = 300, [0, 1, 2, 3]
    iv = agreement_intervals(a, b, labels=labels, n_boot=n_boot, seed=7, ci=0.9)
    iv = iv.set_index("statistic")
    idx = np.random.default_rng(7).integers(0, a.size, size=(n_boot, a.size))
    kq = [weighted_kappa(a[i], b[i], weights="quadratic", labels=labels) for i in idx]
    ao = [krippendorff_alpha(a[i], b[i], level="ordinal") for i in idx]
    np.testing.assert_allclose(
        iv.loc["kappa (quadratic)", ["low", "high"]].to_numpy(float), np.quantile(kq, [0.05, 0.95])
    )
    np.testing.assert_allclose(
        iv.loc["alpha (ordinal)", ["low", "high"]].to_numpy(float), np.quantile(ao, [0.05, 0.95])
    )


def test_agreement_intervals_contain_the_estimate_narrow_with_more_pairs_and_are_seeded():
    rng = np.random.default_rng(5)
    small = agreement_intervals(*_noisy_pairs(50, rng), n_boot=500, seed=1)
    large = agreement_intervals(*_noisy_pairs(2000, rng), n_boot=500, seed=1)
    for frame in (small, large):
        assert (frame["low"] <= frame["value"]).all() and (frame["value"] <= frame["high"]).all()
    width = lambda f: (f["high"] - f["low"]).to_numpy()  # noqa: E731
    assert (width(large) < width(small) / 3).all()  # about sqrt(2000 / 50) = 6.3 times narrower
    a, b = _noisy_pairs(100, np.random.default_rng(6))
    once = agreement_intervals(a, b, n_boot=200, seed=3)
    pd.testing.assert_frame_equal(once, agreement_intervals(a, b, n_boot=200, seed=3))
    assert not once.equals(agreement_intervals(a, b, n_boot=200, seed=4))
    # a wider coverage gives a wider interval from the same resamples
    wide = agreement_intervals(a, b, n_boot=200, seed=3, ci=0.99)
    assert (width(wide) >= width(once)).all()


def test_agreement_intervals_resample_queries_when_given():
    a, b = _noisy_pairs(120, np.random.default_rng(8))
    queries = np.repeat([f"q{i}" for i in range(12)], 10)
    iv = agreement_intervals(a, b, groups=queries, n_boot=300)
    assert (iv["resampled"] == "queries").all() and (iv["n_units"] == 12).all()
    pd.testing.assert_series_equal(
        iv["value"], agreement_intervals(a, b, n_boot=0)["value"], check_exact=False
    )
    assert (iv["low"] <= iv["value"]).all() and (iv["value"] <= iv["high"]).all()
    # one query: every resample is the data, the interval collapses to the estimate
    one = agreement_intervals(a, b, groups=["q"] * a.size, n_boot=20)
    np.testing.assert_allclose(one["low"], one["value"])
    np.testing.assert_allclose(one["high"], one["value"])


def test_agreement_intervals_edge_cases():
    none = agreement_intervals([0, 1, 1], [0, 1, 0], n_boot=0)
    assert none["low"].isna().all() and (none["n_boot"] == 0).all()
    # a statistic some resamples leave undefined (all pairs (1, 1)) counts only the others
    few = agreement_intervals([0, 1, 1], [0, 1, 1], n_boot=200, seed=0)
    kappa = few.set_index("statistic").loc["kappa"]
    assert 0 < kappa["n_boot"] < 200 and kappa["low"] == kappa["high"] == 1.0
    with pytest.raises(InputError, match="at least one pair"):
        agreement_intervals([], [])
    with pytest.raises(InputError, match="n_boot"):
        agreement_intervals([1], [1], n_boot=-1)
    with pytest.raises(InputError, match="ci"):
        agreement_intervals([1], [1], ci=1.0)
    with pytest.raises(InputError, match="seed"):
        agreement_intervals([1], [1], seed=1.5)
    with pytest.raises(InputError, match="groups"):
        agreement_intervals([1, 2], [1, 2], groups=["q"])


# ----------------------------------------------------------------------------- bias per grade


def test_judge_bias_of_a_judge_one_grade_too_lenient():
    human = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    bias = judge_bias(human, human + 1)
    assert bias.columns.tolist() == [
        "human_grade",
        "n",
        "mean_judge",
        "bias",
        "share_higher",
        "share_lower",
    ]
    assert bias["human_grade"].tolist() == [0, 1, 2, 3] and bias["n"].tolist() == [2, 3, 1, 2]
    assert (bias["bias"] == 1.0).all() and (bias["share_higher"] == 1.0).all()
    assert (bias["share_lower"] == 0.0).all()
    np.testing.assert_allclose(bias["mean_judge"], [1, 2, 3, 4])


def test_judge_bias_hand_computed_and_unused_grades():
    # human 2 three times, judged 1, 2, 4: mean 7/3, bias 1/3, one above, one below
    bias = judge_bias([2, 2, 2, 0], [1, 2, 4, 0], labels=[0, 1, 2, 3, 4]).set_index("human_grade")
    assert bias.loc[2, "bias"] == pytest.approx(1 / 3)
    assert bias.loc[2, "share_higher"] == pytest.approx(1 / 3)
    assert bias.loc[2, "share_lower"] == pytest.approx(1 / 3)
    assert bias.loc[0, "bias"] == 0.0
    assert bias.loc[1, "n"] == 0 and math.isnan(bias.loc[1, "bias"])
    assert judge_bias([], []).empty
    with pytest.raises(InputError, match="aligned"):
        judge_bias([1], [1, 2])


# ----------------------------------------------------------------------------- tau interval


def test_tau_b_kernel_matches_kendall_tau():
    rng = np.random.default_rng(9)
    x = rng.integers(0, 4, (50, 6)).astype(float)  # many ties
    y = rng.integers(0, 4, (50, 6)).astype(float)
    x[3, 2] = np.nan
    got = _tau_b_rows(x, y)
    want = [kendall_tau(x[i], y[i]).tau for i in range(50)]
    np.testing.assert_allclose(got, want, equal_nan=True)


def test_tau_interval_contains_tau_and_is_seeded():
    rng = np.random.default_rng(10)
    quality = np.linspace(0.3, 0.7, 6)
    human = quality + 0.15 * rng.standard_normal((40, 6))
    judge = human + 0.1 * rng.standard_normal((40, 6))
    t = tau_interval(human, judge, n_boot=400, seed=2)
    assert t.tau == pytest.approx(kendall_tau(human.mean(0), judge.mean(0)).tau)
    assert t.low <= t.tau <= t.high and t.n_boot == 400
    assert (t.n_queries, t.n_systems, t.ci, t.seed) == (40, 6, 0.95, 2)
    assert tau_interval(human, judge, n_boot=400, seed=2) == t
    # a NaN value (undefined for that query) is left out of the system's mean
    human[0, 0] = np.nan
    means = np.nanmean(human, axis=0)
    assert tau_interval(human, judge, n_boot=0).tau == pytest.approx(
        kendall_tau(means, judge.mean(0)).tau
    )
    assert math.isnan(tau_interval(human, judge, n_boot=0).low)
    with pytest.raises(InputError, match="aligned"):
        tau_interval(human, judge[:, :3])


def test_system_tau_interval_by_hand():
    # q1: the judge agrees with the human; q2: it swaps s1 and s2
    human = {"q1": {"a": 1, "b": 0}, "q2": {"a": 1, "b": 0}}
    judge = {"q1": {"a": 1, "b": 0}, "q2": {"a": 0, "b": 1}}
    runs = {
        "s1": {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}},
        "s2": {"q1": {"b": 2.0, "a": 1.0}, "q2": {"b": 2.0, "a": 1.0}},
        "s3": {"q1": {"b": 2.0, "a": 1.0}, "q2": {"a": 2.0, "b": 1.0}},
    }
    # P@1 human: s1 1, s2 0, s3 0.5; judge: s1 0.5, s2 0.5, s3 0. Pairs: (s1, s2) human +,
    # judge tied; (s1, s3) +, +; (s2, s3) -, +: tau_b = (1 - 1) / sqrt(3 * 2) = 0
    frame, tau = system_agreement(human, judge, runs, "P@1")
    t = system_tau_interval(human, judge, runs, "P@1", n_boot=200)
    assert tau.tau == pytest.approx(0.0) and t.tau == pytest.approx(tau.tau)
    # resample {q1, q1}: the rankings agree (human 1, 0, 0; judge 1, 0, 0): tau 1;
    # {q2, q2}: human 1, 0, 1, judge 0, 1, 0: tau -1
    assert t.low == pytest.approx(-1.0) and t.high == pytest.approx(1.0)
    assert t.n_queries == 2 and t.n_systems == 3


# ----------------------------------------------------------------------------- calibrate, extended


def test_calibrate_reports_alpha_intervals_bias_and_the_tau_interval(tmp_path):
    rng = np.random.default_rng(11)
    rows, judged, runs = [], [], {f"s{i}": [] for i in range(5)}
    for q in range(15):
        for d in range(8):
            g = int(rng.integers(0, 4))
            rows.append((f"q{q}", f"d{d}", g))
            judged.append((f"q{q}", f"d{d}", int(np.clip(g + rng.integers(0, 2), 0, 3))))
            for i, name in enumerate(runs):
                runs[name].append((f"q{q}", f"d{d}", g + (1.0 + i) * rng.standard_normal()))
    human = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    judge = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    runs = {k: pd.DataFrame(v, columns=["query_id", "doc_id", "score"]) for k, v in runs.items()}
    cal = calibrate(human, judge, runs, measure="nDCG@5", labels=[0, 1, 2, 3], n_boot=300)
    a = cal.agreement.set_index("statistic")
    assert a.columns.tolist() == ["value", "low", "high"]
    assert list(a.index) == [*STATISTICS, "pairs"]
    h, j = cal.pairs["human"], cal.pairs["judge"]
    assert cal.alphas()["interval"] == pytest.approx(krippendorff_alpha(h, j))
    assert cal.alphas()["ordinal"] == pytest.approx(krippendorff_alpha(h, j, level="ordinal"))
    stats = a.drop(index="pairs")
    assert (stats["low"] <= stats["value"]).all() and (stats["value"] <= stats["high"]).all()
    # the intervals resample the 15 queries, as agreement_intervals with groups
    iv = agreement_intervals(h, j, groups=cal.pairs["query_id"], labels=[0, 1, 2, 3], n_boot=300)
    np.testing.assert_allclose(stats["low"], iv["low"])
    # the judge adds 0 or 1: lenient, never strict (except where 3 is clipped)
    assert (cal.bias["bias"] > 0).iloc[:-1].all() and (cal.bias["share_lower"] == 0).all()
    ti = cal.tau_interval
    assert ti is not None and ti.tau == pytest.approx(cal.tau.tau)
    assert ti.low <= ti.tau <= ti.high and ti.n_queries == 15 and ti.n_systems == 5
    summary = cal.summary()
    assert summary["alpha"]["interval"] == pytest.approx(cal.alphas()["interval"])
    assert summary["intervals"]["kappa (quadratic)"]["low"] == pytest.approx(
        a.loc["kappa (quadratic)", "low"]
    )
    assert summary["kendall_tau_interval"]["high"] == pytest.approx(ti.high)
    assert summary["n_boot"] == 300 and summary["ci"] == 0.95 and summary["resampled"] == "queries"
    assert [b["human_grade"] for b in summary["bias"]] == [0, 1, 2, 3]
    json.dumps(summary, allow_nan=False)  # JSON-safe
    cal.export(tmp_path, bias_table=True)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "bias.csv"), cal.bias)
    assert pd.read_csv(tmp_path / "agreement.csv").columns.tolist() == [
        "statistic",
        "value",
        "low",
        "high",
    ]
    # seeded: the same call gives the same intervals
    again = calibrate(human, judge, runs, measure="nDCG@5", labels=[0, 1, 2, 3], n_boot=300)
    pd.testing.assert_frame_equal(again.agreement, cal.agreement)
    assert again.tau_interval == ti


def test_calibrate_without_bootstrap_and_old_constructions():
    cal = calibrate({"q": {"a": 1, "b": 0}}, {"q": {"a": 1, "b": 1}}, n_boot=0)
    assert cal.agreement["low"].isna().all() and cal.tau_interval is None
    assert not any("rough" in n for n in cal.notes)
    with_boot = calibrate({"q": {"a": 1, "b": 0}}, {"q": {"a": 1, "b": 1}})
    assert any("resample 1 queries" in n for n in with_boot.notes)
    with pytest.raises(InputError, match="ci"):
        calibrate({"q": {"a": 1}}, {"q": {"a": 1}}, ci=0)
    # a Calibration built the old way (eight fields) still summarises and exports
    old = Calibration(
        cal.pairs,
        cal.labels,
        cal.confusion,
        cal.agreement[cal.agreement["statistic"].str.startswith(("kappa", "exact", "pairs"))][
            ["statistic", "value"]
        ],
        cal.systems,
        None,
        "nDCG@10",
    )
    s = old.summary()
    assert s["alpha"] == {"nominal": None, "ordinal": None, "interval": None}
    assert s["intervals"] == {} and s["bias"] == [] and s["kendall_tau_interval"] is None
    assert old.kappas()["none"] == pytest.approx(cal.kappas()["none"])


def _msmarco_qrels(request, source: str):
    """TREC DL graded labels (1-3): the MS MARCO subset's (``shared``, 43 queries) or those of the
    DL-like case the repository carries (``carried``, 30 queries)."""
    from ragnb.io.readers import read_qrels

    if source == "carried":
        return oracle_data.qrels("dl-like")
    return read_qrels(request.getfixturevalue("msmarco_path") / "qrels" / "test.tsv")


@pytest.mark.parametrize("source", ["shared", "carried"])
def test_agreement_falls_as_the_judge_gets_noisier_on_msmarco(request, source):
    # TREC DL graded labels (1-3) as the human labels; NoisyJudge adds Gaussian noise of sd
    # grade units to each label and rounds onto 0-3. (SciFact's qrels hold only grade 1: kappa
    # against a constant human is 0 whatever the judge does, so it cannot show this.)
    from ragnb.judge import NoisyJudge

    human = _msmarco_qrels(request, source)
    items = human[["query_id", "doc_id"]]
    results = []
    for sd in (0.2, 0.6, 1.2, 2.5):
        graded = NoisyJudge(human, sd=sd, seed=1, scale=(0, 3)).grade_many(items)
        judge = graded[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
        cal = calibrate(human, judge.astype({"relevance": int}), labels=[0, 1, 2, 3], n_boot=200)
        results.append((cal.kappas(), cal.alphas(), cal.agreement.set_index("statistic")))
    for w in ("none", "linear", "quadratic"):
        k = [r[0][w] for r in results]
        assert all(x > y for x, y in itertools.pairwise(k)), (w, k)
    for level in ("nominal", "ordinal", "interval"):
        al = [r[1][level] for r in results]
        assert all(x > y for x, y in itertools.pairwise(al)), (level, al)
    assert results[0][1]["interval"] > 0.8 and results[-1][1]["interval"] < 0.5
    # over 43 (30) queries the intervals separate the least and the most noisy judge
    first, last = results[0][2], results[-1][2]
    assert last.loc["alpha (interval)", "high"] < first.loc["alpha (interval)", "low"]
    assert last.loc["kappa (quadratic)", "high"] < first.loc["kappa (quadratic)", "low"]


@pytest.mark.parametrize(("source", "n_queries"), [("shared", 43), ("carried", 30)])
def test_tau_interval_on_msmarco_systems(request, source, n_queries):
    # six systems of decreasing quality rank the labelled passages of each query by label + noise;
    # a judge close to the labels ranks the systems as the labels do
    from ragnb.judge import NoisyJudge

    human = _msmarco_qrels(request, source)
    rng = np.random.default_rng(12)
    runs = {
        f"sd{sd}": human.assign(score=human["relevance"] + sd * rng.standard_normal(len(human)))[
            ["query_id", "doc_id", "score"]
        ]
        for sd in (0.3, 0.6, 1.0, 1.5, 2.5, 4.0)
    }
    graded = NoisyJudge(human, sd=0.3, seed=2, scale=(0, 3)).grade_many(
        human[["query_id", "doc_id"]]
    )
    judge = graded[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
    cal = calibrate(human, judge.astype({"relevance": int}), runs, n_boot=300, seed=5)
    ti = cal.tau_interval
    assert ti is not None and ti.n_queries == n_queries and ti.n_systems == 6
    assert ti.low <= ti.tau <= ti.high
    assert ti.tau > 0.6


def test_agreement_doctests():
    for module in (agreement_module, calibration_module, spear_module):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


# ----------------------------------------------------------------------------- SPEAR

# Truth for q: a, b, c, z relevant, d, e not. s1 returns a, d, b; s2 returns c, e, x.
TRUTH = {"q": {"a": 1, "b": 1, "c": 1, "z": 1, "d": 0, "e": 0, "x": 0}}
JUDGED = {"q": {"a": 1, "b": 1, "c": 1, "d": 0, "e": 0, "x": 0}}  # the pool only: z unseen
RUNS = {"s1": {"q": {"a": 3.0, "d": 2.0, "b": 1.0}}, "s2": {"q": {"c": 3.0, "e": 2.0, "x": 1.0}}}


def test_spear_pool_is_the_union_of_the_top_k():
    pool = spear_pool(RUNS, k=2)
    assert pool[["doc_id", "systems", "best_rank"]].values.tolist() == [
        ["a", "s1", 1],
        ["c", "s2", 1],
        ["d", "s1", 2],
        ["e", "s2", 2],
    ]


def test_spear_precision_is_exact_and_recall_relative():
    s = spear_evaluate(JUDGED, RUNS, k=3).summary.set_index("system")
    # precision: the same as on the full truth
    assert s.loc["s1", "precision"] == pytest.approx(2 / 3)
    assert s.loc["s2", "precision"] == pytest.approx(1 / 3)
    # recall: TP / (P - FN_res) with P = 4 relevant, FN_res = 1 (z, found by nobody)
    assert s.loc["s1", "recall_relative"] == pytest.approx(2 / 3)  # true recall 2/4
    assert s.loc["s2", "recall_relative"] == pytest.approx(1 / 3)  # true recall 1/4
    # PR-AUC on the pseudo ground truth: s1 hits at ranks 1 and 3: (1 + 2/3) / 3
    assert s.loc["s1", "pr_auc"] == pytest.approx((1 + 2 / 3) / 3)
    assert s.loc["s1", "pr_auc"] == pytest.approx(pr_auc(TRUTH, RUNS["s1"]) * 4 / 3)
    assert (s["judged"] == 1.0).all()
    # the systems keep their order under the true labels
    true_recall = {"s1": 2 / 4, "s2": 1 / 4}
    assert (s["recall_relative"].rank() == pd.Series(true_recall).rank()).all()


def test_spear_curves_and_interpolation():
    res = spear_evaluate(JUDGED, RUNS, k=3)
    c = res.curves[res.curves["system"] == "s1"]
    np.testing.assert_allclose(
        c[["rank", "precision", "recall"]].to_numpy(dtype=float),
        [[1, 1.0, 1 / 3], [2, 0.5, 1 / 3], [3, 2 / 3, 2 / 3]],
    )
    ip = res.interpolated[res.interpolated["system"] == "s1"].set_index("recall")["precision"]
    # max precision at recall >= r: 1 up to 1/3, 2/3 up to 2/3, 0 beyond (never reached)
    assert ip[0.0] == pytest.approx(1.0) and ip[0.3] == pytest.approx(1.0)
    assert ip[0.4] == pytest.approx(2 / 3) and ip[0.6] == pytest.approx(2 / 3)
    assert ip[0.7] == 0.0 and ip[1.0] == 0.0
    # a curve with a query that has no relevant document contributes nothing
    curve = pd.DataFrame(
        {
            "query_id": ["q"],
            "rank": [1],
            "precision": [0.0],
            "recall": [np.nan],
            "relevant": [False],
        }
    )
    assert interpolated_pr(curve).empty
