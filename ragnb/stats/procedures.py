"""The tests :func:`ragnb.stats.compare` runs on each measure: the test of all systems at once
(an ANOVA, always reported) and the p-value of each pair by the ``test`` chosen.

Tests
-----
``"randomization"`` (default)
    Paired randomization test of each pair (:func:`ragnb.stats.randomization_test`); when a
    system of the pair has several runs, the two-level test over queries and runs
    (:func:`ragnb.stats.two_level_randomization_test`). The correction adjusts the p-values.
``"t"``
    Paired t-test of each pair (``scipy.stats.ttest_rel``) on the run-averaged values.
``"anova"``
    Fisher's protected least significant difference: each pair's t-test on the ANOVA's error
    term (the all-systems one), and a pair is significant only when the ANOVA rejects too.
``"tukey"``
    Tukey's HSD on the ANOVA's error term (:func:`ragnb.stats.tukey_hsd`): the p-values are
    already adjusted over all pairs of systems on the measure.
``"randomized-tukey"``
    Carterette's randomised Tukey HSD (:func:`ragnb.stats.randomized_tukey_hsd`), adjusted
    likewise.

The ANOVA's design: ``"two-way"`` with the runs nested in their systems when every system has
the same number R >= 2 of runs, else ``"repeated-measures"`` on the run-averaged values
(:mod:`ragnb.stats.anova`). The all-systems tests use the queries where every system (and run)
has a value.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.stats.anova import AnovaResult, Design, anova, randomized_tukey_table, tukey_table

__all__ = [
    "ALL_SYSTEMS_TESTS",
    "TESTS",
    "TEST_NAMES",
    "Test",
    "all_systems_p_values",
    "omnibus_row",
    "run_arrays",
]

Test = Literal["randomization", "t", "anova", "tukey", "randomized-tukey"]
#: The tests :func:`ragnb.stats.compare` takes.
TESTS: tuple[str, ...] = ("randomization", "t", "anova", "tukey", "randomized-tukey")
#: Each test in a phrase, for legends and captions.
TEST_NAMES: dict[str, str] = {
    "randomization": "paired randomization test (two-level over queries and runs when a "
    "system has several runs)",
    "t": "paired t-test",
    "anova": "t-test on the ANOVA's error, significant only where the ANOVA rejects "
    "(Fisher's protected LSD)",
    "tukey": "Tukey's HSD on the ANOVA's error (already adjusted over the measure's pairs)",
    "randomized-tukey": "randomised Tukey HSD (Carterette 2012; already adjusted over the "
    "measure's pairs)",
}
#: The tests that read every system at once.
ALL_SYSTEMS_TESTS: tuple[str, ...] = ("anova", "tukey", "randomized-tukey")
#: The columns of :attr:`ragnb.stats.ComparisonResult.omnibus`.
OMNIBUS_COLUMNS = [
    "measure",
    "design",
    "f",
    "df_systems",
    "df_error",
    "p_value",
    "n_queries",
    "n_runs",
    "n_dropped",
]


def run_arrays(measure: str, runs: dict[str, list[pd.DataFrame]]) -> list[np.ndarray]:
    """Each system's values on ``measure``, shape (n_runs, n_queries), the queries in the first
    system's order (a query a system lacks is NaN there)."""
    order = next(iter(runs.values()))[0].index
    return [
        np.stack([r[measure].reindex(order).to_numpy(np.float64) for r in system])
        for system in runs.values()
    ]


def omnibus_row(
    measure: str, names: list[str], arrays: list[np.ndarray], strict: bool
) -> tuple[AnovaResult | None, dict[str, Any]]:
    """The ANOVA of all systems on one measure and its row of the ``omnibus`` frame.

    Parameters
    ----------
    measure : str
    names : list of str
    arrays : list of ndarray of shape (n_runs, n_queries)
    strict : bool
        True: an ANOVA that cannot be computed is an error; False: its row is NaN.

    Returns
    -------
    AnovaResult or None, dict
    """
    counts = {a.shape[0] for a in arrays}
    design: Design = "two-way" if len(counts) == 1 and counts.pop() > 1 else "repeated-measures"
    try:
        result = anova(dict(zip(names, arrays, strict=True)), design=design)
    except InputError as err:
        if strict:
            raise InputError(f"{measure}: {err.message}") from None
        return None, dict.fromkeys(OMNIBUS_COLUMNS, np.nan) | {"measure": measure, "design": design}
    row = {
        "measure": measure,
        "design": result.design,
        "f": result.f,
        "df_systems": result.df_systems,
        "df_error": result.df_error,
        "p_value": result.p_value,
        "n_queries": result.n_queries,
        "n_runs": result.n_runs,
        "n_dropped": result.n_dropped,
    }
    return result, row


def all_systems_p_values(
    test: str,
    result: AnovaResult,
    arrays: list[np.ndarray],
    settings: dict[str, Any],
) -> dict[frozenset[str], float]:
    """Each pair's p-value by an all-systems ``test`` (``"anova"``, ``"tukey"`` or
    ``"randomized-tukey"``), keyed by the pair of names.

    Parameters
    ----------
    test : str
    result : AnovaResult
        The measure's ANOVA (its error term, its systems).
    arrays : list of ndarray of shape (n_runs, n_queries)
        The values it was computed on.
    settings : dict
        :attr:`ragnb.stats.ComparisonResult.settings` (``n_resamples``, ``seed``).

    Returns
    -------
    dict of frozenset to float
    """
    names = list(result.systems)
    if test == "tukey":
        table = tukey_table(result)
    elif test == "randomized-tukey":
        complete = _complete_queries(arrays)
        table = randomized_tukey_table(names, complete, settings["n_resamples"], settings["seed"])
    else:
        table = _lsd_table(result)
    return {
        frozenset((a, b)): float(p)
        for a, b, p in zip(table["system_a"], table["system_b"], table["p_value"], strict=True)
    }


def _complete_queries(arrays: list[np.ndarray]) -> list[np.ndarray]:
    keep = np.all([~np.isnan(a).any(axis=0) for a in arrays], axis=0)
    return [a[:, keep] for a in arrays]


def _lsd_table(result: AnovaResult) -> pd.DataFrame:
    """Fisher's least significant difference: each pair's two-sided t-test on the ANOVA's error
    mean square and degrees of freedom."""
    from scipy import stats

    rows = []
    k = len(result.systems)
    for i in range(k):
        for j in range(i + 1, k):
            diff = result.means[i] - result.means[j]
            se = np.sqrt(result.error_ms * (1 / result.n_obs[i] + 1 / result.n_obs[j]))
            t = abs(diff) / se if se > 0 else (np.inf if diff else 0.0)
            p = 2 * float(stats.t.sf(t, result.df_error)) if np.isfinite(t) else 0.0
            rows.append((result.systems[i], result.systems[j], min(1.0, p)))
    return pd.DataFrame(rows, columns=["system_a", "system_b", "p_value"])
