"""Paired randomization (sign-flip permutation) test, exact or Monte Carlo."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragnb.errors import InputError
from ragnb.measures import Measure
from ragnb.stats.paired import (
    RESAMPLE_BLOCK,
    PairedValues,
    PerQueryValues,
    check_resamples,
    pair_values,
)

_MAX_EXACT_N = 24  # 2**24 sign vectors: about 17 million, a few seconds
# statistics this close (relative to sum |d_i|) to the observed one count as ties
_TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RandomizationResult:
    """A two-sided paired randomization test of ``mean(a) = mean(b)``.

    Attributes
    ----------
    difference : float
        Observed mean of ``a - b`` over the queries kept.
    p_value : float in (0, 1]
        Share of sign assignments whose mean difference is at least as far from 0 as the
        observed one.
    mean_a, mean_b : float
        Means of each system over the queries kept.
    method : {"exact", "monte_carlo"}
    n_permutations : int
        Sign assignments evaluated: ``2 ** n_queries`` (exact) or B (Monte Carlo).
    n_queries, n_dropped : int
        Queries used; queries dropped because a value was NaN.
    seed : int or None
        Random seed (unused by the exact test).
    """

    difference: float
    p_value: float
    mean_a: float
    mean_b: float
    method: str
    n_permutations: int
    n_queries: int
    n_dropped: int
    seed: int | None


def _randomization_p(
    d: np.ndarray, n_resamples: int, exact: bool | None, seed: int | None
) -> tuple[float, str, int]:
    """Two-sided sign-flip p-value of ``sum(d)``: (p, method, sign vectors evaluated)."""
    n = d.size
    if exact is None:
        exact = n < 63 and (1 << n) <= n_resamples
    if exact and n > _MAX_EXACT_N:
        raise InputError(
            f"exact enumeration of 2**{n} sign assignments is too large (at most "
            f"{_MAX_EXACT_N} queries); use exact=False for a Monte Carlo test"
        )
    threshold = abs(d.sum()) - _TIE_TOLERANCE * np.abs(d).sum()
    rows = max(1, RESAMPLE_BLOCK // n)
    count = 0
    if exact:
        total = 1 << n
        shifts = np.arange(n, dtype=np.int64)
        for start in range(0, total, rows):
            k = np.arange(start, min(total, start + rows), dtype=np.int64)
            signs = 1.0 - 2.0 * ((k[:, None] >> shifts) & 1)  # (block, n): bits of k -> -1/+1
            count += int((np.abs(signs @ d) >= threshold).sum())
        return count / total, "exact", total
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, rows):
        block = min(n_resamples, start + rows) - start
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(block, n))
        count += int((np.abs(signs @ d) >= threshold).sum())
    return (count + 1) / (n_resamples + 1), "monte_carlo", n_resamples


def randomization_test(
    a: PerQueryValues,
    b: PerQueryValues,
    *,
    measure: str | Measure | None = None,
    n_resamples: int = 10_000,
    exact: bool | None = None,
    seed: int | None = 0,
) -> RandomizationResult:
    """Paired randomization (permutation) test, two-sided, by sign flips of the differences.

    Under the null hypothesis the labels "a" and "b" are exchangeable within each query, so each
    per-query difference ``d_i = a_i - b_i`` is as likely to have been ``-d_i``. The statistic is
    the mean difference; the p-value is the share of sign assignments ``s`` in ``{-1, +1}^n``
    with ``|mean(s * d)| >= |mean(d)|`` (statistics within ``1e-9 * sum|d_i| / n`` of the
    observed one count as ties, to absorb floating-point rounding).

    Parameters
    ----------
    a, b, measure
        As for :func:`~ragnb.stats.paired_bootstrap`: the two systems' per-query values
        (Series, dict, DataFrame or EvaluationResult) paired by ``query_id``, and the measure to
        take from a frame holding several.
    n_resamples : int, default 10000
        B, random sign assignments for the Monte Carlo test.
    exact : bool or None, default None
        True: enumerate all ``2**n`` assignments (at most 24 queries), p = count / 2**n.
        False: Monte Carlo with B random assignments, p = (count + 1) / (B + 1), which never
        returns 0 and is a valid p-value. None: exact when ``2**n <= n_resamples``.
    seed : int or None, default 0
        Seed of ``numpy.random.default_rng`` (Monte Carlo only); None draws fresh entropy.

    Returns
    -------
    RandomizationResult
        ``difference``, ``p_value`` in (0, 1], the method and counts. Identical systems give
        p = 1.

    Raises
    ------
    InputError
        As :func:`paired_bootstrap`, and when ``exact=True`` with more than 24 queries.

    References
    ----------
    Fisher, R. A. (1935). *The Design of Experiments*. Oliver & Boyd (the randomization test).
    Smucker, M. D., Allan, J., Carterette, B. (2007). A comparison of statistical significance
    tests for information retrieval evaluation. CIKM, 623-632 (the test for IR, mean
    difference as the statistic). Phipson, B., Smyth, G. K. (2010). Permutation p-values
    should never be zero. Stat. Appl. Genet. Mol. Biol. 9(1), article 39 (the (b + 1) / (m + 1)
    estimator).

    Examples
    --------
    Three queries each gain 0.25; of the 2**3 = 8 sign assignments only (+, +, +) and
    (-, -, -) reach |mean| = 0.25, so p = 2 / 8:

    >>> a = {"q1": 0.5, "q2": 0.25, "q3": 1.0}
    >>> b = {"q1": 0.25, "q2": 0.0, "q3": 0.75}
    >>> r = randomization_test(a, b)
    >>> r.method, r.n_permutations, r.p_value
    ('exact', 8, 0.25)
    """
    n_resamples = check_resamples(n_resamples)
    if exact not in (None, True, False):
        raise InputError(f"exact must be True, False or None, got {exact!r}")
    pair = pair_values(a, b, measure)
    return randomization_result(pair, n_resamples, exact, seed)


def randomization_result(
    pair: PairedValues, n_resamples: int, exact: bool | None, seed: int | None
) -> RandomizationResult:
    """The paired randomization test of the mean difference ``a - b`` of a checked pair.

    :func:`randomization_test` after its checks; :func:`ragnb.stats.compare` calls it per pair.

    Parameters
    ----------
    pair : PairedValues
        The two systems' per-query values.
    n_resamples : int
        Random sign flips when the test is not exact, >= 1.
    exact : bool, optional
        True: all ``2**n`` sign flips; False: ``n_resamples`` random ones; None: exact when
        ``2**n <= n_resamples``.
    seed : int, optional
        Seed of the sign flips.

    Returns
    -------
    RandomizationResult
        Two-sided p-value in (0, 1].

    References
    ----------
    Fisher (1935), *The Design of Experiments*; Smucker, Allan and Carterette, CIKM 2007.
    """
    d = pair.a - pair.b
    p, method, n_perm = _randomization_p(d, n_resamples, exact, seed)
    return RandomizationResult(
        **pair.summary(),
        difference=float(d.mean()),
        p_value=float(p),
        method=method,
        n_permutations=n_perm,
        seed=seed,
    )
