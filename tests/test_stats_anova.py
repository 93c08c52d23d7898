"""All-systems tests: ANOVA, Tukey HSD (parametric and randomised), Benjamini-Hochberg, effect
sizes and the two-level randomization test, against scipy and statsmodels, hand-computed cases
and invalid input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from ragnb.errors import InputError
from ragnb.stats import (
    anova,
    benjamini_hochberg,
    paired_effect_size,
    randomized_tukey_hsd,
    tukey_hsd,
    two_level_randomization_test,
)

pytest.importorskip("statsmodels")  # the oracle: the `test` extra installs it


@pytest.fixture(scope="module")
def blocked() -> np.ndarray:
    """20 queries x 4 systems: query effects, system effects, noise."""
    rng = np.random.default_rng(3)
    query = rng.normal(0.5, 0.2, (20, 1))
    return query + np.array([0.0, 0.02, 0.08, 0.1]) + rng.normal(0, 0.1, (20, 4))


@pytest.fixture(scope="module")
def replicated() -> np.ndarray:
    """3 runs x 12 queries x 3 systems with seed effects."""
    rng = np.random.default_rng(5)
    query = rng.normal(0.5, 0.2, (1, 12, 1))
    seed = rng.normal(0, 0.03, (3, 1, 3))
    inter = rng.normal(0, 0.08, (1, 12, 3))
    return query + np.array([0.0, 0.05, 0.1]) + seed + inter + rng.normal(0, 0.05, (3, 12, 3))


def _long(y: np.ndarray) -> pd.DataFrame:
    """(n, k) or (R, n, k) as a long frame system, query, run, value."""
    cube = y if y.ndim == 3 else y[None]
    r, n, k = cube.shape
    grid = itertools.product(range(r), range(n), range(k))
    return pd.DataFrame(
        [
            {"run": a, "query": f"q{b}", "system": f"s{c}", "value": cube[a, b, c]}
            for a, b, c in grid
        ]
    )


# --------------------------------------------------------------------------------------------
# hand-computed


def test_anova_and_tukey_by_hand() -> None:
    # c = a + 0.2 on every query, b = a -+ 0.1: means 0.35, 0.35, 0.55
    y = np.array([[0.2, 0.3, 0.4], [0.5, 0.4, 0.7], [0.1, 0.2, 0.3], [0.6, 0.5, 0.8]])
    res = anova(y, systems=["a", "b", "c"])
    table = res.table.set_index("source")
    assert table.loc["system", "ss"] == pytest.approx(
        4 * (2 * (0.35 - 5 / 12) ** 2 + (0.55 - 5 / 12) ** 2)
    )
    assert table.loc["residual", "ss"] == pytest.approx(0.08 / 3)
    assert res.f == pytest.approx(12.0) and res.p_value == pytest.approx(sps.f.sf(12.0, 2, 6))
    tukey = tukey_hsd(y, systems=["a", "b", "c"])
    # se of a difference: sqrt(MS_res / n) = sqrt((0.08 / 3 / 6) / 4)
    se = np.sqrt(0.08 / 18 / 4)
    assert tukey["q"].tolist() == pytest.approx([0.0, 0.2 / se, 0.2 / se])
    assert tukey["p_value"].iloc[1] == pytest.approx(sps.studentized_range.sf(0.2 / se, 3, 6))


def test_two_way_without_replication_adds_the_query_test() -> None:
    y = np.array([[0.2, 0.3, 0.4], [0.5, 0.4, 0.7], [0.1, 0.2, 0.3], [0.6, 0.5, 0.8]])
    rm, two = anova(y), anova(y, design="two-way")
    assert two.f == rm.f and np.isnan(rm.table.loc[1, "f"])
    assert two.table.loc[1, "f"] == pytest.approx((1.09 / 3 / 3) / (0.08 / 18))


def test_randomized_tukey_two_systems_is_the_exact_sign_flip_count() -> None:
    # two systems, 3 queries: all 2**3 swaps; a permutation per query of 2 values is a swap
    y = np.array([[0.5, 0.25], [0.25, 0.0], [1.0, 0.75]])
    res = randomized_tukey_hsd(y, n_resamples=20_000, seed=1)
    # only (+,+,+) and (-,-,-) reach |0.25|: p -> 2/8
    assert res["p_value"].iloc[0] == pytest.approx(0.25, abs=0.01)


def test_effect_size_by_hand() -> None:
    e = paired_effect_size(np.array([0.6, 0.7, 0.8]), np.array([0.5, 0.5, 0.5]))
    j = 1 - 3 / (4 * 2 - 1)  # rough J(2): the exact one is Γ(1) / (1 * Γ(1/2)) = 1/sqrt(pi)
    assert e.cohens_dz == pytest.approx(2.0)
    assert e.hedges_gz == pytest.approx(2.0 / np.sqrt(np.pi)) and j > e.hedges_gz / 2
    # the interval's ends put t = d_z sqrt(n) at the 97.5% and 2.5% quantiles
    t = 2.0 * np.sqrt(3)
    assert sps.nct.cdf(t, 2, e.dz_low * np.sqrt(3)) == pytest.approx(0.975, abs=1e-9)
    assert sps.nct.cdf(t, 2, e.dz_high * np.sqrt(3)) == pytest.approx(0.025, abs=1e-9)
    assert e.gz_low == pytest.approx(e.dz_low / np.sqrt(np.pi))


def test_effect_size_of_constant_differences_is_undefined() -> None:
    e = paired_effect_size(np.array([0.6, 0.7]), np.array([0.5, 0.6]))
    assert np.isnan(e.cohens_dz) and np.isnan(e.gz_high) and e.n_queries == 2


def test_effect_size_interval_covers_on_normal_data() -> None:
    # 200 samples of 15 differences with d_z = 0.5: a 95% interval covers about 190 times
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(200):
        d = rng.normal(0.5, 1.0, 15)
        e = paired_effect_size(d, np.zeros(15))
        hits += e.dz_low <= 0.5 <= e.dz_high
    # binomial(200, 0.95): sd 3.1; 6 sd below 190 is 172
    assert hits >= 172


# --------------------------------------------------------------------------------------------
# oracles: scipy and statsmodels


def test_one_way_equals_scipy_and_statsmodels() -> None:
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    rng = np.random.default_rng(2)
    groups = {
        f"g{i}": rng.normal(0.4 + 0.05 * i, 0.15, size) for i, size in enumerate([9, 14, 11, 7])
    }
    res = anova(groups, design="one-way")
    f, p = sps.f_oneway(*groups.values())
    assert res.f == pytest.approx(f, rel=1e-12) and res.p_value == pytest.approx(p, rel=1e-9)
    ours = tukey_hsd(groups, design="one-way", confidence=0.9)
    scipy_res = sps.tukey_hsd(*groups.values())
    ci = scipy_res.confidence_interval(confidence_level=0.9)
    for row, (i, j) in zip(ours.itertuples(), itertools.combinations(range(4), 2), strict=True):
        assert row.difference == pytest.approx(scipy_res.statistic[i, j], abs=1e-12)
        assert row.p_value == pytest.approx(scipy_res.pvalue[i, j], abs=1e-9)
        assert (row.ci_low, row.ci_high) == pytest.approx((ci.low[i, j], ci.high[i, j]), abs=1e-9)
    values = np.concatenate(list(groups.values()))
    labels = np.repeat(list(groups), [g.size for g in groups.values()])
    sm = pairwise_tukeyhsd(values, labels, alpha=0.1)
    # statsmodels: group names sorted, meandiff = mean(group2) - mean(group1)
    assert -ours["difference"].to_numpy() == pytest.approx(sm.meandiffs, abs=1e-12)
    assert ours["p_value"].to_numpy() == pytest.approx(sm.pvalues, abs=1e-9)
    assert -ours["ci_high"].to_numpy() == pytest.approx(sm.confint[:, 0], abs=1e-9)


def test_repeated_measures_equals_anova_rm(blocked) -> None:
    from statsmodels.stats.anova import AnovaRM

    res = anova(blocked)
    table = AnovaRM(_long(blocked), "value", "query", within=["system"]).fit().anova_table
    assert res.f == pytest.approx(table.loc["system", "F Value"], rel=1e-10)
    assert res.df_error == table.loc["system", "Den DF"]
    assert res.p_value == pytest.approx(table.loc["system", "Pr > F"], rel=1e-8)


def test_repeated_measures_averages_runs_as_anova_rm(replicated) -> None:
    from statsmodels.stats.anova import AnovaRM

    res = anova(replicated)  # (R, n, k): averaged over runs
    fit = AnovaRM(_long(replicated), "value", "query", within=["system"], aggregate_func="mean")
    table = fit.fit().anova_table
    assert res.f == pytest.approx(table.loc["system", "F Value"], rel=1e-10)
    assert res.n_runs == 1 and res.n_queries == 12


def test_two_way_sums_of_squares_equal_ols(blocked, replicated) -> None:
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    fit = smf.ols("value ~ C(system) + C(query)", _long(blocked)).fit()
    lm = anova_lm(fit)
    res = anova(blocked, design="two-way").table.set_index("source")
    assert res.loc["system", "ss"] == pytest.approx(lm.loc["C(system)", "sum_sq"], rel=1e-10)
    assert res.loc["query", "f"] == pytest.approx(lm.loc["C(query)", "F"], rel=1e-10)
    assert res.loc["residual", "ss"] == pytest.approx(lm.loc["Residual", "sum_sq"], rel=1e-10)
    formula = "value ~ C(system) + C(query) + C(system):C(query) + C(system):C(run)"
    lm = anova_lm(smf.ols(formula, _long(replicated)).fit())
    res = anova(replicated, design="two-way")
    table = res.table.set_index("source")
    for ours, theirs in [
        ("system", "C(system)"),
        ("query", "C(query)"),
        ("system:query", "C(system):C(query)"),
        ("run(system)", "C(system):C(run)"),
        ("residual", "Residual"),
    ]:
        assert table.loc[ours, "ss"] == pytest.approx(lm.loc[theirs, "sum_sq"], rel=1e-9)
        assert table.loc[ours, "df"] == lm.loc[theirs, "df"]
    # the quasi-F's error: MS_sq + MS_run - MS_res when both exceed MS_res (Satterthwaite df)
    ms = table["ms"]
    if ms["system:query"] > ms["residual"] and ms["run(system)"] > ms["residual"]:
        error = ms["system:query"] + ms["run(system)"] - ms["residual"]
        assert res.error_ms == pytest.approx(error)
        assert res.f == pytest.approx(ms["system"] / error)


def test_benjamini_hochberg_equals_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(4)
    p = np.concatenate([rng.uniform(0, 0.02, 8), rng.uniform(0, 1, 30), [0.01, 0.01]])
    assert benjamini_hochberg(p) == pytest.approx(multipletests(p, method="fdr_bh")[1], abs=1e-15)
    assert benjamini_hochberg([]).size == 0


def test_randomized_tukey_agrees_with_parametric_on_normal_data() -> None:
    # normal data, equal system means, 60 queries x 4 systems: the permutation distribution of
    # the range is close to the studentized range's. A Monte Carlo p-value has binomial standard
    # error sqrt(p (1 - p) / B); the tolerance is 4 of those plus 1/B (the "+ 1" of the
    # estimator). Under an alternative the randomised p-values run higher: permuting within a
    # query mixes the system effects into the null distribution.
    rng = np.random.default_rng(0)
    y = rng.normal(0.5, 0.2, (60, 1)) + rng.normal(0, 0.1, (60, 4))
    n_resamples = 10_000
    param = tukey_hsd(y)["p_value"].to_numpy()
    rand = randomized_tukey_hsd(y, n_resamples=n_resamples, seed=0)["p_value"].to_numpy()
    assert param.min() < 0.1  # the range covers a small p-value too
    tolerance = 4 * np.sqrt(param * (1 - param) / n_resamples) + 1 / n_resamples
    assert np.all(np.abs(rand - param) <= tolerance), (rand, param)


def test_two_level_test_with_one_run_is_the_paired_randomization_test() -> None:
    from ragnb.stats import randomization_test

    rng = np.random.default_rng(8)
    a, b = rng.normal(0.5, 0.2, 30), rng.normal(0.45, 0.2, 30)
    two = two_level_randomization_test(a, b, n_resamples=20_000, seed=1)
    one = randomization_test(pd.Series(a), pd.Series(b), n_resamples=20_000, exact=False, seed=1)
    assert two.p_value == pytest.approx(one.p_value, abs=0.01)  # 3 binomial se at p ~ 0.2


def test_two_level_test_widens_with_seed_spread() -> None:
    # the same run-averaged values; b's seeds spread widely: the run level adds that spread
    rng = np.random.default_rng(9)
    base = rng.normal(0.5, 0.2, 40)
    a = np.stack([base + 0.03 + s for s in (-0.01, 0.0, 0.01)])
    tight = np.stack([base + s for s in (-0.001, 0.0, 0.001)])
    wide = np.stack([base + s for s in (-0.06, 0.0, 0.06)])
    p_tight = two_level_randomization_test(a, tight, n_resamples=4000).p_value
    p_wide = two_level_randomization_test(a, wide, n_resamples=4000).p_value
    assert p_tight < 0.01 < 0.2 < p_wide


# --------------------------------------------------------------------------------------------
# invalid input


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: anova(np.ones((5, 1))), "at least two systems"),
        (lambda: anova(np.ones((5, 3)), design="three-way"), "unknown design"),
        (lambda: anova({"a": [0.1, 0.2, 0.3], "b": [0.2, 0.3]}), "number of queries"),
        (lambda: anova(np.array([[0.1, np.nan], [0.2, 0.3]])), "fewer than two queries"),
        (lambda: anova(np.array([[0.1, np.inf], [0.2, 0.3]])), "infinite"),
        (
            lambda: anova({"a": np.ones((2, 4)), "b": np.ones((3, 4))}, design="two-way"),
            "same number of runs",
        ),
        (lambda: anova(np.ones((3, 2)), systems=["x"]), "1 names for 2 systems"),
        (lambda: tukey_hsd(np.ones((3, 2)), confidence=1.5), "confidence"),
        (lambda: randomized_tukey_hsd(np.ones((3, 2)), n_resamples=0), "n_resamples"),
        (lambda: benjamini_hochberg([0.1, 1.2]), "must lie in"),
        (lambda: paired_effect_size(np.ones(3), np.ones(4)), "paired 1-D"),
        (lambda: two_level_randomization_test(np.ones((2, 3)), np.ones(4)), "pair them first"),
    ],
)
def test_invalid_input_is_an_error(call, message) -> None:
    with pytest.raises(InputError, match=message):
        call()


# --------------------------------------------------------------------------------------------
# compare(test=...): the table's p-values are the functions above


@pytest.fixture(scope="module")
def four_systems() -> pd.DataFrame:
    """A long per-query frame: 4 systems x 30 queries on two measures."""
    rng = np.random.default_rng(11)
    base = rng.random((30, 1))
    values = np.clip(base + np.array([0.0, 0.03, 0.12, 0.13]) + rng.normal(0, 0.08, (30, 4)), 0, 1)
    rows = []
    for m, shift in (("nDCG@10", 0.0), ("R@100", 0.05)):
        for j, system in enumerate(["w", "x", "y", "z"]):
            for q in range(30):
                rows.append((system, f"q{q:02d}", m, min(1.0, values[q, j] + shift)))
    return pd.DataFrame(rows, columns=["retriever", "query_id", "measure", "value"])


def _wide(frame: pd.DataFrame, measure: str) -> pd.DataFrame:
    rows = frame[frame["measure"] == measure]
    return rows.pivot(index="query_id", columns="retriever", values="value")[["w", "x", "y", "z"]]


def test_compare_tukey_rows_are_tukey_hsd_and_bh_adjusts_them(four_systems) -> None:
    from ragnb.stats import compare

    res = compare(four_systems, test="tukey", correction="bh", n_resamples=500)
    for m in ("nDCG@10", "R@100"):
        expected = tukey_hsd(_wide(four_systems, m))["p_value"].to_numpy()
        rows = res.pairs[res.pairs["measure"] == m]
        assert rows["p_value"].to_numpy() == pytest.approx(expected, abs=1e-12)
        omnibus = res.omnibus.set_index("measure").loc[m]
        assert omnibus["f"] == pytest.approx(anova(_wide(four_systems, m)).f)
        assert omnibus["design"] == "repeated-measures"
    adjusted = benjamini_hochberg(res.pairs["p_value"].to_numpy())
    assert res.pairs["p_adjusted"].to_numpy() == pytest.approx(adjusted)
    assert res.settings["test"] == "tukey" and res.settings["correction"] == "bh"


def test_compare_other_tests_are_their_functions(four_systems) -> None:
    from ragnb.stats import compare

    wide = _wide(four_systems, "nDCG@10")
    rand = compare(four_systems, "nDCG@10", test="randomized-tukey", n_resamples=2000, seed=5)
    expected = randomized_tukey_hsd(wide, n_resamples=2000, seed=5)["p_value"].to_numpy()
    assert rand.pairs["p_value"].to_numpy() == pytest.approx(expected)
    t = compare(four_systems, "nDCG@10", test="t", n_resamples=200)
    assert t.pairs["p_value"].iloc[0] == pytest.approx(sps.ttest_rel(wide["w"], wide["x"]).pvalue)
    lsd = compare(four_systems, "nDCG@10", test="anova", n_resamples=200, correction="none")
    result = anova(wide)
    se = np.sqrt(2 * result.error_ms / 30)
    t_wy = abs(wide["w"].mean() - wide["y"].mean()) / se
    assert lsd.pairs["p_value"].iloc[1] == pytest.approx(2 * sps.t.sf(t_wy, result.df_error))
    effect = paired_effect_size(wide["w"].to_numpy(), wide["x"].to_numpy())
    assert t.pairs["cohens_dz"].iloc[0] == pytest.approx(effect.cohens_dz)
    assert t.pairs["gz_high"].iloc[0] == pytest.approx(effect.gz_high)


def test_anova_test_is_protected_by_the_omnibus() -> None:
    from ragnb.stats import compare

    # three systems on 8 noisy queries: one pair's LSD p-value passes alpha = 0.2 (0.18) while
    # the ANOVA does not (0.33); the pair is then not significant
    rng = np.random.default_rng(2)
    y = rng.normal(0.5, 0.2, (8, 3))
    frame = pd.DataFrame(
        [(s, f"q{q}", "P@1", y[q, j]) for j, s in enumerate("abc") for q in range(8)],
        columns=["retriever", "query_id", "measure", "value"],
    )
    res = compare(frame, test="anova", correction="none", alpha=0.2, n_resamples=200)
    assert res.omnibus["p_value"].iloc[0] > 0.2 and (res.pairs["p_adjusted"] <= 0.2).any()
    assert not res.pairs["significant"].any()
    rejected = compare(frame, test="anova", correction="none", alpha=0.4, n_resamples=200)
    assert rejected.omnibus["p_value"].iloc[0] <= 0.4
    assert (rejected.pairs["significant"] == (rejected.pairs["p_adjusted"] <= 0.4)).all()


def test_tukey_letters_are_the_tie_groups_and_separate_what_tukey_separates(four_systems) -> None:
    from ragnb.stats import compare, tie_groups

    res = compare(four_systems, "nDCG@10", test="tukey", correction="none", n_resamples=200)
    letters = res.letters()["nDCG@10"]
    groups = tie_groups(res, "nDCG@10")
    assert list(letters.index) == ["w", "x", "y", "z"] and len(groups) >= 2
    assert res.ranking("nDCG@10").set_index("system")["tie_group"].to_dict() == letters.to_dict()
    for row in res.pairs.itertuples():
        share = bool(set(letters[row.system_a]) & set(letters[row.system_b]))
        # balanced design, one standard error: sharing a letter = not separated, and back
        assert share == (not row.significant), (row.pair, letters.to_dict(), groups)
    assert res.pairs["significant"].any() and not res.pairs["significant"].all()


def test_compare_with_equal_runs_uses_the_two_way_design() -> None:
    from ragnb.stats import compare

    rng = np.random.default_rng(6)
    base = rng.random(25)

    def frame(shift: float) -> pd.DataFrame:
        values = base + shift + rng.normal(0, 0.05, 25) + rng.normal(0, 0.02)
        return pd.DataFrame({"query_id": [f"q{i}" for i in range(25)], "P@5": values})

    systems = {"a": [frame(0.0) for _ in range(3)], "b": [frame(0.1) for _ in range(3)]}
    res = compare(systems, test="tukey", n_resamples=200)
    omnibus = res.omnibus.iloc[0]
    assert omnibus["design"] == "two-way" and omnibus["n_runs"] == 3
    cube = np.stack([np.stack([r["P@5"] for r in systems[s]]) for s in "ab"], axis=2)
    assert omnibus["f"] == pytest.approx(anova(cube, design="two-way").f)
    # unequal runs: the repeated-measures design on the run averages
    systems["b"] = systems["b"][:2]
    assert compare(systems, n_resamples=200).omnibus["design"].iloc[0] == "repeated-measures"


def test_compare_rejects_unknown_tests_and_corrections(four_systems) -> None:
    from ragnb.stats import compare

    with pytest.raises(InputError, match="unknown test 'wilcoxon'"):
        compare(four_systems, test="wilcoxon")
    with pytest.raises(InputError, match="unknown correction 'fdr'"):
        compare(four_systems, correction="fdr")
    one_query = four_systems[four_systems["query_id"] == "q00"]
    with pytest.raises(InputError, match="fewer than two queries"):
        compare(one_query, "nDCG@10", test="tukey", n_resamples=10)
