"""Power of a paired comparison: the minimum detectable effect (MDE) for the queries at hand
and the number of queries a target effect needs, by the paired t-test and by simulation.

Both versions start from the per-query differences ``d_i = a_i - b_i`` of two systems on one
measure, the only thing a power analysis of a paired design needs (topic set size design, Sakai
2016):

* **Paired t (noncentral t, exact under normality).** With ``n`` queries and the differences'
  standard deviation ``sd``, the two-sided paired t-test at level ``alpha`` rejects with
  probability ``P(|T| > t_{1-alpha/2, n-1})``, ``T`` noncentral t with ``n - 1`` degrees of
  freedom and noncentrality ``delta * sqrt(n) / sd``. The MDE is the ``delta`` at which that
  probability equals the target power, solved exactly (not the textbook approximation
  ``(t_{1-alpha/2, n-1} + t_{power, n-1}) * sd / sqrt(n)``, which ignores the far rejection
  tail and differs from it by less than 0.5% at 30 queries or more). Assumes the differences
  are independent across queries and roughly normal, with the variance observed.
* **Simulation (bootstrap).** Queries are drawn with replacement from the observed differences,
  centred and shifted to the effect, and each simulated sample is tested with the same paired
  t-test; the power is the share of rejections. It keeps the differences' actual shape (many
  zeros, skew, bounded measures) instead of assuming normality, and assumes that a system
  better by ``delta`` would shift every query's difference by ``delta``.

The significance level is the one each test is run at: to plan for a table corrected for m
comparisons, pass the corrected level (e.g. ``alpha / m`` for Bonferroni).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ragnb.errors import InputError
from ragnb.stats.paired import RESAMPLE_BLOCK, check_fraction, check_resamples

__all__ = [
    "minimum_detectable_effect",
    "paired_t_power",
    "queries_needed",
    "simulated_minimum_detectable_effect",
    "simulated_power",
    "simulated_queries_needed",
]

#: The largest number of queries :func:`queries_needed` searches.
MAX_QUERIES = 1_000_000


def _sps() -> Any:
    """``scipy.stats``, imported on first use: it takes about a second, and every ragnb command
    that gates or compares imports this module."""
    from scipy import stats

    return stats


def _differences(differences: Iterable[float] | np.ndarray) -> np.ndarray:
    """The finite differences as float64, NaN dropped; at least two, not all equal."""
    try:
        d = np.asarray(list(differences), dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("per-query differences must be numbers") from None
    if np.isinf(d).any():
        raise InputError(f"per-query difference {int(np.argmax(np.isinf(d)))} is infinite")
    d = d[~np.isnan(d)]
    if d.size < 2:
        raise InputError(f"a power analysis needs at least two per-query differences, got {d.size}")
    return d


def _sd(d: np.ndarray) -> float:
    sd = float(d.std(ddof=1))
    if sd == 0.0 or np.all(d == d[0]):
        raise InputError(
            "every per-query difference is the same: their standard deviation is 0, so any "
            "effect is detected with certainty and a power analysis says nothing"
        )
    return sd


def _check_n(n: int, name: str = "n_queries") -> int:
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise InputError(f"{name} must be an integer >= 2, got {n!r}")
    return int(n)


def paired_t_power(effect: float, sd: float, n_queries: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test to detect a mean difference ``effect``.

    Parameters
    ----------
    effect : float
        The true mean difference, same unit as the measure (its sign does not matter).
    sd : float > 0
        Standard deviation of the per-query differences.
    n_queries : int >= 2
    alpha : float in (0, 1), default 0.05
        Level of the two-sided test.

    Returns
    -------
    float in [alpha, 1]
        ``P(|T| > t_{1-alpha/2, n-1})`` with ``T`` noncentral t, ``n - 1`` degrees of freedom,
        noncentrality ``effect * sqrt(n) / sd``.

    Raises
    ------
    InputError
        If ``sd`` is not positive, ``n_queries < 2`` or ``alpha`` is outside (0, 1).

    References
    ----------
    Sakai, T. (2016). Topic set size design. Information Retrieval Journal 19(3), 256-283,
    section 3 (the paired t-test's power through the noncentral t distribution).

    Examples
    --------
    A difference of one standard deviation with 10 queries:

    >>> round(paired_t_power(0.1, 0.1, 10), 3)
    0.803
    """
    n = _check_n(n_queries)
    alpha = check_fraction(alpha, "alpha")
    if not sd > 0:
        raise InputError(f"sd must be positive, got {sd!r}")
    df = n - 1
    crit = _sps().t.ppf(1 - alpha / 2, df)
    nc = abs(effect) * math.sqrt(n) / sd
    power = _sps().nct.sf(crit, df, nc) + _sps().nct.cdf(-crit, df, nc)
    if not np.isfinite(power):  # scipy's noncentral t fails far in the tail: normal limit
        power = _sps().norm.sf(crit - nc) + _sps().norm.cdf(-crit - nc)
    return float(min(1.0, power))


def minimum_detectable_effect(
    differences: Iterable[float] | np.ndarray,
    *,
    n_queries: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The smallest mean difference the paired t-test detects with probability ``power``.

    Parameters
    ----------
    differences : array-like of shape (n,)
        Per-query differences ``a_i - b_i`` on one measure (NaN entries dropped); only their
        standard deviation is used.
    n_queries : int, optional
        The number of queries planned; default: ``n``, the queries at hand.
    alpha : float in (0, 1), default 0.05
        Level of the two-sided test.
    power : float in (alpha, 1), default 0.8
        The probability of detecting the effect.

    Returns
    -------
    float >= 0
        The MDE, same unit as the measure (e.g. nDCG@10 points on the 0-1 scale).

    Raises
    ------
    InputError
        With fewer than two differences, all of them equal, or a parameter out of range.

    References
    ----------
    Sakai, T. (2016). Topic set size design. Information Retrieval Journal 19(3), 256-283
    (the MDE and the topic set size of the paired t-test). Cohen, J. (1988). *Statistical Power
    Analysis for the Behavioral Sciences*, 2nd ed., chapter 2 (the t-test's power).

    Examples
    --------
    Differences with sd 0.1 over 10 queries: an effect of about one sd is needed.

    >>> d = [0.1, -0.1] * 5
    >>> round(minimum_detectable_effect(d, n_queries=10), 3)
    0.105
    """
    d = _differences(differences)
    sd = _sd(d)
    n = _check_n(d.size if n_queries is None else n_queries)
    alpha, power = _check_alpha_power(alpha, power)
    rough = (_sps().t.ppf(1 - alpha / 2, n - 1) + _sps().t.ppf(power, n - 1)) * sd / math.sqrt(n)
    from scipy.optimize import brentq

    return float(brentq(lambda e: paired_t_power(e, sd, n, alpha) - power, 0.0, 4 * rough))


def queries_needed(
    differences: Iterable[float] | np.ndarray,
    effect: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """The fewest queries for which the paired t-test detects ``effect`` with ``power``.

    Parameters
    ----------
    differences : array-like of shape (n,)
        Per-query differences on one measure (NaN dropped); their standard deviation is taken as
        the one future queries will show.
    effect : float, nonzero
        The mean difference to detect, same unit as the measure.
    alpha : float in (0, 1), default 0.05
    power : float in (alpha, 1), default 0.8

    Returns
    -------
    int in [2, 1000000]
        The smallest ``n`` with :func:`paired_t_power` ``>= power``.

    Raises
    ------
    InputError
        If ``effect`` is 0, more than a million queries would be needed, or as
        :func:`minimum_detectable_effect`.

    References
    ----------
    Sakai, T. (2016). Topic set size design. Information Retrieval Journal 19(3), 256-283,
    section 3.

    Examples
    --------
    >>> queries_needed([0.1, -0.1] * 5, 0.05)
    37
    """
    d = _differences(differences)
    sd = _sd(d)
    alpha, power = _check_alpha_power(alpha, power)
    effect = _check_effect(effect)
    return _smallest_n(lambda n: paired_t_power(effect, sd, n, alpha) >= power, effect)


def _smallest_n(enough: Callable[[int], bool], effect: float, limit: int = MAX_QUERIES) -> int:
    """The smallest n in [2, limit] where ``enough(n)`` holds (``enough`` monotone in n)."""
    low, high = 1, 2
    while not enough(high):
        if high >= limit:
            raise InputError(f"detecting an effect of {effect:g} needs more than {limit:,} queries")
        low, high = high, min(2 * high, limit)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def _check_alpha_power(alpha: float, power: float) -> tuple[float, float]:
    alpha = check_fraction(alpha, "alpha")
    power = check_fraction(power, "power")
    if power <= alpha:
        raise InputError(f"power ({power}) must exceed alpha ({alpha})")
    return alpha, power


def _check_effect(effect: float) -> float:
    effect = float(effect)
    if not math.isfinite(effect) or effect == 0.0:
        raise InputError(f"effect must be a finite nonzero number, got {effect!r}")
    return abs(effect)


def simulated_power(
    differences: Iterable[float] | np.ndarray,
    effect: float,
    *,
    n_queries: int | None = None,
    alpha: float = 0.05,
    n_simulations: int = 4000,
    seed: int | None = 0,
) -> float:
    """The share of simulated experiments in which the paired t-test detects ``effect``.

    Each of ``n_simulations`` experiments draws ``n_queries`` differences with replacement from
    the observed ones after centring them on ``effect`` (``d_i - mean(d) + effect``), and runs
    the two-sided paired t-test at ``alpha`` on them.

    Parameters
    ----------
    differences : array-like of shape (n,)
        Observed per-query differences (NaN dropped).
    effect : float
        The true mean difference assumed, same unit as the measure.
    n_queries : int, optional
        Queries per simulated experiment; default ``n``.
    alpha : float in (0, 1), default 0.05
    n_simulations : int, default 4000
        Simulated experiments; the power's Monte Carlo standard error is at most
        ``0.5 / sqrt(n_simulations)`` (0.008 at 4000).
    seed : int or None, default 0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    InputError
        As :func:`minimum_detectable_effect`.

    References
    ----------
    Efron, B., Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, section 16.4
    (resampling centred data to test a mean). Sakai, T. (2016). Topic set size design.
    Information Retrieval Journal 19(3), 256-283 (the power being simulated).

    Examples
    --------
    With no effect the test rejects at about its level:

    >>> d = np.random.default_rng(1).normal(0, 0.1, 50)
    >>> float(simulated_power(d, 0.0, n_simulations=2000))
    0.0435
    """
    d = _differences(differences)
    _sd(d)
    n = _check_n(d.size if n_queries is None else n_queries)
    alpha = check_fraction(alpha, "alpha")
    means, se = _means_and_se(d - d.mean(), n, check_resamples(n_simulations), seed)
    return _rejected(means, se, float(effect), _sps().t.ppf(1 - alpha / 2, n - 1))


def _rejected(means: np.ndarray, se: np.ndarray, effect: float, crit: float) -> float:
    """Share of resamples whose t statistic ``(mean + effect) / se`` exceeds ``crit`` in size;
    a resample with ``se = 0`` rejects when its shifted mean is nonzero."""
    shifted = means + effect
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, shifted / se, np.where(shifted != 0, np.inf, 0.0))
    return float((np.abs(t) > crit).mean())


def simulated_minimum_detectable_effect(
    differences: Iterable[float] | np.ndarray,
    *,
    n_queries: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    n_simulations: int = 4000,
    seed: int | None = 0,
) -> float:
    """The MDE by simulation: the effect at which :func:`simulated_power` reaches ``power``.

    Every candidate effect is simulated with the same resampled queries (common random numbers),
    so the simulated power rises with the effect and bisection finds the crossing.

    Parameters
    ----------
    differences, n_queries, alpha, n_simulations, seed
        As :func:`simulated_power`.
    power : float in (alpha, 1), default 0.8

    Returns
    -------
    float >= 0
        Same unit as the measure; within about ``1e-5`` of the crossing.

    Raises
    ------
    InputError
        As :func:`minimum_detectable_effect`.

    References
    ----------
    As :func:`simulated_power`.
    """
    d = _differences(differences)
    sd = _sd(d)
    n = _check_n(d.size if n_queries is None else n_queries)
    alpha, power = _check_alpha_power(alpha, power)
    n_simulations = check_resamples(n_simulations)
    crit = _sps().t.ppf(1 - alpha / 2, n - 1)
    # shifting a resample by e leaves its se unchanged: t = (mean + e) / se
    means, se = _means_and_se(d - d.mean(), n, n_simulations, seed)
    if _rejected(means, se, 0.0, crit) >= power:
        return 0.0
    high = sd * (crit + 10.0) / math.sqrt(n)
    while _rejected(means, se, high, crit) < power:
        high *= 2
    low = 0.0
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (low, mid) if _rejected(means, se, mid, crit) >= power else (mid, high)
    return float(high)


def simulated_queries_needed(
    differences: Iterable[float] | np.ndarray,
    effect: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    n_simulations: int = 4000,
    seed: int | None = 0,
) -> int:
    """The fewest queries for which :func:`simulated_power` of ``effect`` reaches ``power``.

    Parameters
    ----------
    differences, alpha, n_simulations, seed
        As :func:`simulated_power`.
    effect : float, nonzero
        The mean difference to detect, same unit as the measure.
    power : float in (alpha, 1), default 0.8

    Returns
    -------
    int in [2, 100000]
        Found by bisection over n; the simulated power is monotone in n up to its Monte Carlo
        error, so the answer may differ from the exact crossing by a few queries.

    Raises
    ------
    InputError
        As :func:`queries_needed`.

    References
    ----------
    As :func:`simulated_power`.
    """
    d = _differences(differences)
    _sd(d)
    alpha, power = _check_alpha_power(alpha, power)
    effect = _check_effect(effect)
    n_simulations = check_resamples(n_simulations)
    centred = d - d.mean()

    def enough(n: int) -> bool:
        means, se = _means_and_se(centred, n, n_simulations, seed)
        return _rejected(means, se, effect, _sps().t.ppf(1 - alpha / 2, n - 1)) >= power

    return _smallest_n(enough, effect, limit=100_000)


def _means_and_se(
    centred: np.ndarray, n: int, n_simulations: int, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Means and standard errors of ``n_simulations`` resamples of size n: (S,), (S,)."""
    rng = np.random.default_rng(seed)
    rows = max(1, RESAMPLE_BLOCK // n)
    means, ses = np.empty(n_simulations), np.empty(n_simulations)
    for start in range(0, n_simulations, rows):
        stop = min(n_simulations, start + rows)
        sample = centred[rng.integers(0, centred.size, size=(stop - start, n))]
        means[start:stop] = sample.mean(axis=1)
        ses[start:stop] = sample.std(axis=1, ddof=1) / math.sqrt(n)
    return means, ses
