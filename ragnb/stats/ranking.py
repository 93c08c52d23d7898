"""How well a comparison ranks its systems: tie groups from the paired tests, rank intervals
from a bootstrap over queries, and the power of each compared pair.

The functions read a comparison (:class:`ragnb.stats.ComparisonResult`): its ``systems``,
``means``, ``pairs`` (with the adjusted p-values), ``per_query`` values and ``settings``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.stats.paired import RESAMPLE_BLOCK, check_fraction, check_resamples, pick_measure
from ragnb.stats.power import (
    minimum_detectable_effect,
    queries_needed,
    simulated_minimum_detectable_effect,
    simulated_queries_needed,
)

__all__ = ["letter_display", "power_table", "rank_intervals", "ranking_table", "tie_groups"]


class Compared(Protocol):
    """What the functions read from a comparison (:class:`ragnb.stats.ComparisonResult`)."""

    @property
    def systems(self) -> tuple[str, ...]: ...
    @property
    def measures(self) -> tuple[str, ...]: ...
    @property
    def means(self) -> pd.DataFrame: ...
    @property
    def pairs(self) -> pd.DataFrame: ...
    @property
    def settings(self) -> dict[str, Any]: ...
    @property
    def per_query(self) -> pd.DataFrame: ...


def _measure(comparison: Compared, measure: str | None) -> str:
    return pick_measure(list(comparison.measures), measure, "the comparison")


def _order(comparison: Compared, measure: str) -> list[str]:
    """The systems by mean on ``measure``, best first (input order among equal means, NaN last)."""
    means = comparison.means[comparison.means["measure"] == measure].set_index("system")["value"]
    position = {s: i for i, s in enumerate(comparison.systems)}
    return sorted(
        comparison.systems,
        key=lambda s: (np.isnan(means[s]), -np.nan_to_num(means[s]), position[s]),
    )


def _separated(comparison: Compared, measure: str) -> set[frozenset[str]]:
    """The pairs of systems significantly different on ``measure``."""
    rows = comparison.pairs[
        (comparison.pairs["measure"] == measure) & comparison.pairs["significant"]
    ]
    return {frozenset((a, b)) for a, b in zip(rows["system_a"], rows["system_b"], strict=True)}


def tie_groups(comparison: Compared, measure: str | None = None) -> list[tuple[str, ...]]:
    """The groups of systems that the comparison's tests cannot separate on ``measure``.

    With the systems ordered by mean (best first), a tie group is a maximal run of systems
    adjacent in that order in which no two are significantly different (adjusted p-value at
    most alpha, with the comparison's correction): the groups of a compact letter display. A
    system may belong to several groups (A ties with B, B with C, A is better than C: groups
    ``(A, B)`` and ``(B, C)``); a system separated from every other forms a group of its own.
    Pairs the comparison did not test (the comparison was against baselines) count as not
    separated.

    Parameters
    ----------
    comparison : ComparisonResult
    measure : str, optional
        One of the comparison's measures (aliases accepted); default: the only one.

    Returns
    -------
    list of tuple of str
        The groups, each in mean order, ordered by their best system; they cover every system.

    Raises
    ------
    InputError
        On a measure the comparison does not hold, or none given when it holds several.

    References
    ----------
    Piepho, H.-P. (2004). An algorithm for a letter-based representation of all-pairwise
    comparisons. Journal of Computational and Graphical Statistics 13(2), 456-466 (letter
    displays: groups of means not significantly different). Sakai, T. (2014). Statistical
    reform in information retrieval? SIGIR Forum 48(1), 3-12 (reporting which differences are
    not significant).

    Examples
    --------
    >>> import pandas as pd
    >>> from ragnb.stats import compare
    >>> per_query = pd.DataFrame({"retriever": ["x"] * 4 + ["y"] * 4,
    ...     "query_id": ["q1", "q2", "q3", "q4"] * 2, "measure": "P@1",
    ...     "value": [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]})
    >>> tie_groups(compare(per_query))   # p = 0.5: not separated
    [('x', 'y')]
    """
    measure = _measure(comparison, measure)
    order = _order(comparison, measure)
    separated = _separated(comparison, measure)
    groups: list[tuple[str, ...]] = []
    reach = -1
    for start in range(len(order)):
        stop = start
        while stop + 1 < len(order) and all(
            frozenset((order[stop + 1], s)) not in separated for s in order[start : stop + 1]
        ):
            stop += 1
        if stop > reach:  # not inside the group found before
            groups.append(tuple(order[start : stop + 1]))
            reach = stop
    return groups


def _value_matrix(comparison: Compared, measure: str) -> np.ndarray:
    """Per-query values, shape (n_queries, n_systems), queries with a NaN value left out."""
    rows = comparison.per_query[comparison.per_query["measure"] == measure]
    if rows.empty:
        raise InputError(f"the comparison holds no per-query values of {measure!r}")
    wide = rows.pivot(index="query_id", columns="system", values="value")
    wide = wide[list(comparison.systems)].dropna()
    if wide.empty:
        raise InputError(f"no query has a value of {measure!r} for every system")
    return wide.to_numpy(np.float64)


def _ranks(means: np.ndarray) -> np.ndarray:
    """Competition ranks of each row's means, 1 = highest; equal means share the best rank."""
    return 1 + (means[:, None, :] > means[:, :, None]).sum(axis=2)


def rank_intervals(
    comparison: Compared,
    measure: str | None = None,
    *,
    confidence: float | None = None,
    n_resamples: int | None = None,
    seed: int | None = -1,
) -> pd.DataFrame:
    """Each system's rank with a bootstrap interval: how firmly the data place it.

    The queries holding a value for every system are resampled with replacement B times; in
    each resample the systems are ranked by their mean (1 = best; equal means share the better
    rank), and a system's interval runs from the ``(1 - confidence) / 2`` to the
    ``(1 + confidence) / 2`` quantile of its B ranks (the inverse of the empirical distribution
    function, so both ends are ranks that occurred). Systems whose intervals overlap are not
    reliably ordered. With several runs per system the per-query values are the run averages
    (queries are the resampled unit).

    Parameters
    ----------
    comparison : ComparisonResult
    measure : str, optional
        One of the comparison's measures (aliases accepted); default: the only one.
    confidence : float in (0, 1), optional
        Default: the comparison's.
    n_resamples : int, optional
        B; default: the comparison's.
    seed : int or None, optional
        Default: the comparison's seed.

    Returns
    -------
    DataFrame
        One row per system in input order: ``system``, ``mean`` (over the queries used),
        ``rank`` (of that mean, int), ``rank_low``, ``rank_high`` (int in [1, n_systems]),
        ``n_queries`` (used).

    Raises
    ------
    InputError
        On a measure the comparison does not hold, no query with every system's value, or a
        parameter out of range.

    References
    ----------
    Hall, P., Miller, H. (2009). Using the bootstrap to quantify the authority of an empirical
    ranking. Annals of Statistics 37(6B), 3929-3959 (the bootstrap distribution of ranks;
    sections 2-3). Efron and Tibshirani (1993), chapter 13 (percentile intervals).
    """
    measure = _measure(comparison, measure)
    settings = comparison.settings
    confidence = check_fraction(
        settings["confidence"] if confidence is None else confidence, "confidence"
    )
    n_resamples = check_resamples(settings["n_resamples"] if n_resamples is None else n_resamples)
    values = _value_matrix(comparison, measure)
    n, k = values.shape
    rng = np.random.default_rng(settings["seed"] if seed == -1 else seed)
    rows = max(1, RESAMPLE_BLOCK // (n * k))
    ranks = np.empty((n_resamples, k), dtype=np.int64)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        ranks[start:stop] = _ranks(values[idx].mean(axis=1))
    tail = (1 - confidence) / 2
    low, high = np.quantile(ranks, [tail, 1 - tail], axis=0, method="inverted_cdf")
    means = values.mean(axis=0)
    return pd.DataFrame(
        {
            "system": list(comparison.systems),
            "mean": means,
            "rank": _ranks(means[None, :])[0],
            "rank_low": low.astype(np.int64),
            "rank_high": high.astype(np.int64),
            "n_queries": n,
        }
    )


def _letters(i: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i] if i < 26 else f"G{i + 1}"


def letter_display(comparison: Compared) -> pd.DataFrame:
    """The compact letter display of every measure: systems sharing a letter are not separable.

    The letters are the tie groups' (:func:`tie_groups`): the group holding the best system is
    ``A``, the next ``B``, ...; a system in several groups has several letters. So two
    systems share a letter exactly when they fall in one tie group, and then the comparison's
    tests (``test=`` of :func:`ragnb.stats.compare`: with ``"tukey"``, Tukey's HSD) did not
    separate them. With Tukey's HSD on a balanced design (one standard error for every pair)
    the converse holds too: two systems with no letter in common differ significantly.

    Parameters
    ----------
    comparison : ComparisonResult

    Returns
    -------
    DataFrame
        Index ``system`` (input order), one str column per measure: the letters.

    References
    ----------
    Piepho (2004), the letter-based representation; Sakai (2018), chapter 4 (Tukey HSD groups).
    """
    columns = {}
    for measure in comparison.measures:
        groups = tie_groups(comparison, measure)
        columns[measure] = [
            "".join(_letters(i) for i, g in enumerate(groups) if system in g)
            for system in comparison.systems
        ]
    return pd.DataFrame(columns, index=pd.Index(list(comparison.systems), name="system"))


def ranking_table(comparison: Compared, measure: str | None = None) -> pd.DataFrame:
    """The systems best first with their rank intervals and tie groups, for display.

    Parameters
    ----------
    comparison : ComparisonResult
    measure : str, optional
        One of the comparison's measures; default: the first.

    Returns
    -------
    DataFrame
        One row per system, best mean first: ``system``, ``mean`` (the comparison's mean),
        ``rank`` (an interval such as ``"1-2"``, or ``"3"`` when the bootstrap never moves it;
        :func:`rank_intervals`), ``tie_group`` (letters: systems sharing a letter are not
        separable, :func:`tie_groups`), ``tied_with`` (the other systems of its groups,
        comma-separated; empty when none).

    Raises
    ------
    InputError
        As :func:`rank_intervals`.

    References
    ----------
    As :func:`tie_groups` and :func:`rank_intervals`.
    """
    measure = _measure(comparison, measure if measure is not None else comparison.measures[0])
    groups = tie_groups(comparison, measure)
    intervals = rank_intervals(comparison, measure).set_index("system")
    means = comparison.means[comparison.means["measure"] == measure].set_index("system")["value"]
    rows = []
    for system in _order(comparison, measure):
        mine = [i for i, g in enumerate(groups) if system in g]
        others = [s for i in mine for s in groups[i] if s != system]
        low, high = intervals.loc[system, ["rank_low", "rank_high"]]
        rows.append(
            {
                "system": system,
                "mean": float(means[system]),
                "rank": f"{low}" if low == high else f"{low}-{high}",
                "tie_group": "".join(_letters(i) for i in mine),
                "tied_with": ", ".join(dict.fromkeys(others)),
            }
        )
    return pd.DataFrame(rows)


def power_table(
    comparison: Compared,
    measure: str | None = None,
    *,
    target_effect: float = 0.02,
    power: float = 0.8,
    alpha: float | None = None,
    n_simulations: int = 4000,
) -> pd.DataFrame:
    """For each compared pair: the minimum detectable effect at the current number of queries
    and the queries a target effect needs, by the paired t-test and by simulation.

    Parameters
    ----------
    comparison : ComparisonResult
    measure : str, optional
        One of the comparison's measures; default: the first.
    target_effect : float, nonzero, default 0.02
        The difference to plan for, same unit as the measure (0.02 nDCG@10 points).
    power : float in (alpha, 1), default 0.8
    alpha : float in (0, 1), optional
        Level of each test; default the comparison's alpha. The comparison's correction makes
        each test stricter, so its own MDE is larger: pass ``alpha / m`` to plan for a
        Bonferroni correction over m comparisons.
    n_simulations : int, default 4000
        Simulated experiments of the simulation columns (seeded with the comparison's seed).

    Returns
    -------
    DataFrame
        One row per compared pair: ``pair``, ``difference`` (observed), ``sd`` (of the
        per-query differences), ``n_queries``, ``mde_t``, ``mde_simulated`` (same unit as the
        measure; :func:`minimum_detectable_effect`, :func:`simulated_minimum_detectable_effect`),
        ``queries_needed_t``, ``queries_needed_simulated`` (int, for ``target_effect``;
        :func:`queries_needed`, :func:`simulated_queries_needed`). A pair whose differences are
        all equal has NaN (nothing to estimate), and so has a number of queries beyond the
        search's limit (1,000,000 for the t-test, 100,000 for the simulation).

    Raises
    ------
    InputError
        On a measure the comparison does not hold or a parameter out of range.

    References
    ----------
    Sakai, T. (2016). Topic set size design. Information Retrieval Journal 19(3), 256-283.
    Sakai, T. (2014). Statistical reform in information retrieval? SIGIR Forum 48(1), 3-12.
    """
    measure = _measure(comparison, measure if measure is not None else comparison.measures[0])
    alpha = comparison.settings["alpha"] if alpha is None else alpha
    if not np.isfinite(target_effect) or target_effect == 0:
        raise InputError(f"target_effect must be a finite nonzero number, got {target_effect!r}")
    seed = comparison.settings.get("seed")
    wide = comparison.per_query[comparison.per_query["measure"] == measure].pivot(
        index="query_id", columns="system", values="value"
    )
    pairs = comparison.pairs[comparison.pairs["measure"] == measure]
    rows = []
    for sa, sb, label in zip(pairs["system_a"], pairs["system_b"], pairs["pair"], strict=True):
        d = (wide[sa] - wide[sb]).dropna().to_numpy()
        row: dict[str, Any] = {"pair": label, "difference": float(d.mean()), "n_queries": d.size}
        row.update(_power_row(d, target_effect, power, alpha, n_simulations, seed))
        rows.append(row)
    columns = ["pair", "difference", "sd", "n_queries", "mde_t", "mde_simulated"]
    columns += ["queries_needed_t", "queries_needed_simulated"]
    return pd.DataFrame(rows, columns=columns)


def _power_row(
    d: np.ndarray, effect: float, power: float, alpha: float, n_simulations: int, seed: int | None
) -> dict[str, Any]:
    """The power columns of one pair; NaN where the differences leave nothing to estimate."""
    out: dict[str, Any] = {"sd": float(d.std(ddof=1)) if d.size > 1 else np.nan}
    if d.size < 2 or out["sd"] == 0:
        return out | dict.fromkeys(
            ["mde_t", "mde_simulated", "queries_needed_t", "queries_needed_simulated"], np.nan
        )
    sim: dict[str, Any] = {"n_simulations": n_simulations, "seed": seed}
    out["mde_t"] = minimum_detectable_effect(d, alpha=alpha, power=power)
    out["mde_simulated"] = simulated_minimum_detectable_effect(d, alpha=alpha, power=power, **sim)
    for key, needed in (
        ("queries_needed_t", lambda: queries_needed(d, effect, alpha=alpha, power=power)),
        (
            "queries_needed_simulated",
            lambda: simulated_queries_needed(d, effect, alpha=alpha, power=power, **sim),
        ),
    ):
        try:
            out[key] = needed()
        except InputError:
            out[key] = np.nan
    return out
