"""Tie groups, rank intervals, power and MDE, several runs per system, several baselines."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from ragnb.errors import InputError
from ragnb.stats import (
    compare,
    holm,
    minimum_detectable_effect,
    paired_bootstrap,
    paired_t_power,
    queries_needed,
    rank_intervals,
    simulated_minimum_detectable_effect,
    simulated_power,
    simulated_queries_needed,
    tie_groups,
    two_level_bootstrap,
    two_level_randomization_test,
)

MEASURE = "nDCG@10"


def _long(values: np.ndarray, measure: str = MEASURE) -> pd.DataFrame:
    return pd.DataFrame(
        {"query_id": [f"q{i:03d}" for i in range(values.size)], "measure": measure, "value": values}
    )


def _systems(n: int = 120, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    shifts = {"a": 0.06, "b": 0.055, "c": 0.0, "d": -0.003, "e": -0.15}
    return {s: np.clip(base + v + rng.normal(0, 0.08, n), 0, 1) for s, v in shifts.items()}


# ------------------------------------------------------------------ tie groups


def _fake(means: list[float], separated: set[tuple[int, int]]) -> SimpleNamespace:
    """A comparison of systems s0, s1, ... with these means and separated pairs."""
    names = [f"s{i}" for i in range(len(means))]
    pairs = [
        (MEASURE, names[i], names[j], (i, j) in separated)
        for i, j in itertools.combinations(range(len(names)), 2)
    ]
    return SimpleNamespace(
        systems=tuple(names),
        measures=(MEASURE,),
        means=pd.DataFrame({"system": names, "measure": MEASURE, "value": means}),
        pairs=pd.DataFrame(pairs, columns=["measure", "system_a", "system_b", "significant"]),
    )


def _brute_force_groups(fake: SimpleNamespace) -> set[tuple[str, ...]]:
    """Every subset, kept when contiguous in mean order and free of separated pairs, then only
    the maximal ones."""
    order = list(fake.means.sort_values("value", ascending=False, kind="stable")["system"])
    sig = fake.pairs[fake.pairs["significant"]]
    separated = {frozenset(p) for p in zip(sig["system_a"], sig["system_b"], strict=True)}
    candidates = []
    for size in range(1, len(order) + 1):
        for subset in itertools.combinations(order, size):
            positions = sorted(order.index(s) for s in subset)
            contiguous = positions == list(range(positions[0], positions[-1] + 1))
            tied = all(frozenset(p) not in separated for p in itertools.combinations(subset, 2))
            if contiguous and tied:
                candidates.append(frozenset(subset))
    maximal = [c for c in candidates if not any(c < other for other in candidates)]
    return {tuple(s for s in order if s in c) for c in maximal}


def test_tie_groups_match_a_brute_force_on_random_patterns() -> None:
    rng = np.random.default_rng(7)
    for _ in range(120):
        k = int(rng.integers(2, 7))
        means = list(rng.permutation(k).astype(float))
        pairs = list(itertools.combinations(range(k), 2))
        separated = {p for p in pairs if rng.random() < 0.5}
        fake = _fake(means, separated)
        assert set(tie_groups(fake, MEASURE)) == _brute_force_groups(fake)


def test_tie_groups_hand_example() -> None:
    # s0 ties s1, s1 ties s2, s0 beats s2; s3 beaten by all
    fake = _fake([0.9, 0.8, 0.7, 0.1], {(0, 2), (0, 3), (1, 3), (2, 3)})
    assert tie_groups(fake, MEASURE) == [("s0", "s1"), ("s1", "s2"), ("s3",)]


def test_tie_groups_of_a_real_comparison() -> None:
    values = _systems()
    res = compare({s: _long(v) for s, v in values.items()}, n_resamples=2000)
    groups = tie_groups(res)
    assert groups[0][:2] == ("a", "b")  # 0.005 apart: not separable on 120 queries
    assert groups[-1] == ("e",)  # 0.15 below every other: alone
    assert {s for g in groups for s in g} == set(values)


# ------------------------------------------------------------------ rank intervals


def test_rank_intervals_cover_the_observed_rank_and_separate_the_clear_last() -> None:
    values = _systems()
    res = compare({s: _long(v) for s, v in values.items()}, n_resamples=2000)
    ranks = rank_intervals(res).set_index("system")
    assert (ranks["rank_low"] <= ranks["rank"]).all() and (
        ranks["rank"] <= ranks["rank_high"]
    ).all()
    assert tuple(ranks.loc["e", ["rank_low", "rank_high"]]) == (5, 5)
    assert ranks.loc["a", "rank_low"] == 1 and ranks.loc["b", "rank_low"] == 1
    assert ranks.loc["a", "rank_high"] >= 2
    table = res.ranking()
    assert table["rank"].iloc[-1] == "5" and "-" in table["rank"].iloc[0]
    shown = res.table(ranks=MEASURE)
    assert list(shown.columns[:4]) == ["#", "system", "rank", "tie_group"]
    assert shown.set_index("system").loc["e", "tie_group"] not in shown["tie_group"].iloc[0]


def test_rank_intervals_follow_the_seed_and_are_reproducible() -> None:
    values = _systems(60)
    res = compare({s: _long(v) for s, v in values.items()}, n_resamples=500)
    pd.testing.assert_frame_equal(rank_intervals(res), rank_intervals(res))
    with pytest.raises(InputError, match="no measure"):
        rank_intervals(res, "R@100")


# ------------------------------------------------------------------ power and MDE


def _skewed_differences(n: int = 300, seed: int = 3) -> np.ndarray:
    """Differences shaped like nDCG@10's: many exact zeros, bounded, skewed."""
    rng = np.random.default_rng(seed)
    d = np.clip(rng.normal(0.01, 0.25, n), -1, 1)
    d[rng.random(n) < 0.45] = 0.0
    return d


def test_simulated_power_at_the_mde_is_the_target_power() -> None:
    d = _skewed_differences()
    for power in (0.5, 0.8, 0.9):
        mde = minimum_detectable_effect(d, power=power)
        assert abs(simulated_power(d, mde, n_simulations=20_000, seed=1) - power) < 0.03


def test_mde_against_the_textbook_approximation_and_the_simulation() -> None:
    d = _skewed_differences()
    n, sd = d.size, d.std(ddof=1)
    rough = (sps.t.ppf(0.975, n - 1) + sps.t.ppf(0.8, n - 1)) * sd / np.sqrt(n)
    mde = minimum_detectable_effect(d)
    assert abs(mde - rough) / rough < 0.005
    assert paired_t_power(mde, sd, n) == pytest.approx(0.8, abs=1e-9)
    assert abs(simulated_minimum_detectable_effect(d, n_simulations=8000) - mde) / mde < 0.05
    # four times the queries halve the MDE (up to the t quantiles)
    assert minimum_detectable_effect(d, n_queries=4 * n) == pytest.approx(mde / 2, rel=0.01)


def test_queries_needed_is_the_first_n_reaching_the_power() -> None:
    d = _skewed_differences()
    sd = d.std(ddof=1)
    n = queries_needed(d, 0.02)
    assert paired_t_power(0.02, sd, n) >= 0.8 > paired_t_power(0.02, sd, n - 1)
    assert abs(simulated_queries_needed(d, 0.02) - n) / n < 0.1
    assert queries_needed(d, -0.02) == n


def test_power_errors() -> None:
    with pytest.raises(InputError, match="standard deviation is 0"):
        minimum_detectable_effect([0.1, 0.1, 0.1])
    with pytest.raises(InputError, match="at least two"):
        minimum_detectable_effect([0.1, np.nan])
    with pytest.raises(InputError, match="nonzero"):
        queries_needed([0.1, -0.1], 0.0)
    with pytest.raises(InputError, match="must exceed alpha"):
        minimum_detectable_effect([0.1, -0.1], alpha=0.5, power=0.4)
    with pytest.raises(InputError, match="more than"):
        queries_needed([1.0, -1.0], 1e-6)


def test_power_table_of_a_comparison() -> None:
    values = _systems()
    res = compare({s: _long(values[s]) for s in "abc"}, n_resamples=500)
    table = res.power(target_effect=0.02)
    assert len(table) == len(res.pairs)
    row = table.set_index("pair").loc["a − b"]
    d = values["a"] - values["b"]
    assert row["mde_t"] == pytest.approx(minimum_detectable_effect(d))
    assert row["queries_needed_t"] == queries_needed(d, 0.02)
    with pytest.raises(InputError, match="target_effect"):
        res.power(target_effect=0.0)


# ------------------------------------------------------------------ several runs per system


def _seeds(values: np.ndarray, k: int, spread: float, seed: int) -> list[pd.DataFrame]:
    """k runs: each shifted by its own constant (sd ``spread``) plus per-query noise."""
    rng = np.random.default_rng(seed)
    return [
        _long(np.clip(values + rng.normal(0, spread) + rng.normal(0, 0.02, values.size), 0, 1))
        for _ in range(k)
    ]


def test_several_runs_are_averaged_per_query_before_pairing() -> None:
    values = _systems(80)
    dense = _seeds(values["a"], 3, 0.05, 1)
    res = compare({"dense": dense, "bm25": _long(values["c"])}, n_resamples=1000)
    average = np.mean([r["value"].to_numpy() for r in dense], axis=0)
    one = compare({"dense": _long(average), "bm25": _long(values["c"])}, n_resamples=1000)
    for col in ("difference", "ci_low", "ci_high", "cohens_dz"):
        assert res.pairs[col].iloc[0] == pytest.approx(one.pairs[col].iloc[0])
    # the test is two-level: queries and the seeds' spread
    runs = np.stack([r["value"].to_numpy() for r in dense])
    two = two_level_randomization_test(runs, values["c"], n_resamples=1000)
    assert res.pairs["p_value"].iloc[0] == pytest.approx(two.p_value)
    means = res.means.set_index("system")
    assert means.loc["dense", "n_runs"] == 3 and means.loc["bm25", "n_runs"] == 1
    run_means = [r["value"].mean() for r in dense]
    assert means.loc["dense", "sd_runs"] == pytest.approx(np.std(run_means, ddof=1))
    assert np.isnan(means.loc["bm25", "sd_runs"])
    assert "n_runs" not in one.means.columns and "ci_low_runs" not in one.pairs.columns


def test_the_two_level_interval_is_at_least_as_wide() -> None:
    values = _systems(100)
    for spread in (0.0, 0.01, 0.05):
        dense = _seeds(values["a"], 3, spread, 2)
        res = compare({"dense": dense, "bm25": _long(values["c"])}, n_resamples=2000)
        row = res.pairs.iloc[0]
        one = row["ci_high"] - row["ci_low"]
        two = row["ci_high_runs"] - row["ci_low_runs"]
        assert two >= one - 1e-12
    assert two > 1.2 * one  # a large seed spread widens it


def test_two_level_bootstrap_with_one_run_is_the_paired_bootstrap() -> None:
    values = _systems(50)
    low, high = two_level_bootstrap(values["a"], values["b"], n_resamples=3000, seed=4)
    a, b = (pd.Series(values[s], index=[f"q{i:03d}" for i in range(50)]) for s in "ab")
    ref = paired_bootstrap(a, b, n_resamples=3000, seed=4)
    assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    with pytest.raises(InputError, match="queries"):
        two_level_bootstrap(values["a"], values["b"][:10])


def test_runs_of_one_system_must_hold_the_same_queries() -> None:
    values = _systems(20)
    short = _long(values["a"][:19])
    with pytest.raises(InputError, match="run 2 and run 1") as err:
        compare({"dense": [_long(values["a"]), short], "bm25": _long(values["c"])})
    assert err.value.query_id == "q019"
    with pytest.raises(InputError, match="empty list"):
        compare({"dense": [], "bm25": _long(values["c"])})


# ------------------------------------------------------------------ several baselines


def test_several_baselines_share_one_correction() -> None:
    values = _systems(60)
    systems = {s: _long(v) for s, v in values.items()}
    res = compare(systems, baselines=["c", "e"], n_resamples=1000)
    pairs = list(zip(res.pairs["system_a"], res.pairs["system_b"], strict=True))
    assert pairs == [
        ("a", "c"),
        ("b", "c"),
        ("d", "c"),
        ("e", "c"),
        ("a", "e"),
        ("b", "e"),
        ("d", "e"),
    ]
    assert res.pairs["p_adjusted"].to_numpy() == pytest.approx(holm(res.pairs["p_value"]))
    assert res.baselines == ("c", "e") and res.baseline is None
    single = compare(systems, baselines=["c"], n_resamples=1000)
    old = compare(systems, baseline="c", n_resamples=1000)
    pd.testing.assert_frame_equal(single.pairs, old.pairs)
    assert single.baseline == old.baseline == "c"
    with pytest.raises(InputError, match="not both"):
        compare(systems, baseline="c", baselines=["e"])
    with pytest.raises(InputError, match="not one of the systems"):
        compare(systems, baselines=["c", "zz"])
    with pytest.raises(InputError, match="repeat"):
        compare(systems, baselines=["c", "c"])
