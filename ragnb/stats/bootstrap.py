"""Paired bootstrap confidence intervals for a difference of means (percentile and BCa)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragnb.errors import InputError
from ragnb.measures import Measure
from ragnb.stats.paired import (
    RESAMPLE_BLOCK,
    PairedValues,
    PerQueryValues,
    check_fraction,
    check_resamples,
    pair_values,
)

CIMethod = Literal["percentile", "bca"]


@dataclass(frozen=True)
class BootstrapResult:
    """A paired bootstrap confidence interval for ``mean(a) - mean(b)``.

    Attributes
    ----------
    difference : float
        Observed mean of the per-query differences ``a - b`` over the queries kept.
    low, high : float
        The interval's ends, same unit as the measure.
    mean_a, mean_b : float
        Means of each system over the queries kept (``difference = mean_a - mean_b``).
    confidence : float in (0, 1)
        Nominal coverage, e.g. 0.95.
    method : {"percentile", "bca"}
    n_queries : int
        Queries used (both values defined).
    n_dropped : int
        Queries dropped because a value was NaN.
    n_resamples : int
        Bootstrap resamples B.
    seed : int or None
    """

    difference: float
    low: float
    high: float
    mean_a: float
    mean_b: float
    confidence: float
    method: str
    n_queries: int
    n_dropped: int
    n_resamples: int
    seed: int | None


def _bootstrap_means(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples of ``d`` (with replacement): shape (B,)."""
    n = d.size
    rows = max(1, RESAMPLE_BLOCK // n)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))  # (block, n) index matrix
        out[start:stop] = d[idx].mean(axis=1)
    return out


def _bootstrap_interval(
    d: np.ndarray, n_resamples: int, confidence: float, method: str, seed: int | None
) -> tuple[float, float]:
    if np.all(d == d[0]):
        # every resample has the same mean: the interval is that constant
        return float(d[0]), float(d[0])
    rng = np.random.default_rng(seed)
    theta = d.mean()
    boot = _bootstrap_means(d, n_resamples, rng)
    alpha = 1.0 - confidence
    levels = np.array([alpha / 2, 1 - alpha / 2])
    if method == "bca":
        from scipy.special import ndtr, ndtri  # on first use: scipy costs every command

        # bias correction z0: share of resampled means below theta, ties counted half
        # (mid-rank, as scipy), clipped so that z0 stays finite
        below = ((boot < theta).sum() + (boot <= theta).sum()) / (2 * n_resamples)
        below = np.clip(below, 0.5 / n_resamples, 1 - 0.5 / n_resamples)
        z0 = ndtri(below)
        # acceleration from the jackknife means
        jack = (d.sum() - d) / (d.size - 1)
        u = jack.mean() - jack
        acc = (u**3).sum() / (6.0 * ((u**2).sum()) ** 1.5)
        z = ndtri(levels)
        levels = ndtr(z0 + (z0 + z) / (1 - acc * (z0 + z)))
    low, high = np.quantile(boot, levels)
    return float(low), float(high)


def paired_bootstrap(
    a: PerQueryValues,
    b: PerQueryValues,
    *,
    measure: str | Measure | None = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: CIMethod = "percentile",
    seed: int | None = 0,
) -> BootstrapResult:
    """Paired bootstrap confidence interval for the difference of two systems' means.

    The per-query differences ``d_i = a_i - b_i`` are resampled with replacement (queries are
    the sampling unit, so the pairing is kept); each of the B resamples gives a mean, and the
    interval is read off their distribution.

    Parameters
    ----------
    a, b : Series, dict, DataFrame or EvaluationResult
        Per-query values of the two systems (see the module docstring), paired by ``query_id``.
    measure : str or Measure, optional
        The measure to take from a frame holding several.
    n_resamples : int, default 10000
        B, the number of bootstrap resamples.
    confidence : float in (0, 1), default 0.95
    method : {"percentile", "bca"}, default "percentile"
        ``"percentile"``: the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
        the B resampled means (numpy's linear interpolation). ``"bca"``: bias-corrected and
        accelerated quantile levels from the same resamples (bias from the share of resampled
        means below the observed one, ties counted half as scipy does; acceleration from the
        jackknife).
    seed : int or None, default 0
        Seed of ``numpy.random.default_rng``; None draws fresh entropy.

    Returns
    -------
    BootstrapResult
        ``difference``, ``low``, ``high`` (same unit as the measure), the means and counts.
        When all differences are equal the interval is that constant (no resampling needed).

    Raises
    ------
    InputError
        If the two systems' queries differ (naming them), no query has both values defined, a
        value is not a finite number or NaN, a measure is ambiguous or absent, or a parameter is
        out of range.

    References
    ----------
    Efron, B., Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall.
    Chapter 13 (percentile intervals) and chapter 14, section 14.3 (BCa: bias correction z0
    from the share of bootstrap replicates below the estimate, acceleration from the
    jackknife).

    Examples
    --------
    Every query gains 0.25, so every resample's mean gain is 0.25:

    >>> a = {"q1": 0.5, "q2": 0.25, "q3": 1.0}
    >>> b = {"q1": 0.25, "q2": 0.0, "q3": 0.75}
    >>> r = paired_bootstrap(a, b, seed=1)
    >>> r.difference, r.low, r.high, r.n_queries
    (0.25, 0.25, 0.25, 3)
    """
    n_resamples = check_resamples(n_resamples)
    confidence = check_fraction(confidence, "confidence")
    if method not in ("percentile", "bca"):
        raise InputError(f"unknown interval method {method!r}; use 'percentile' or 'bca'")
    pair = pair_values(a, b, measure)
    return bootstrap_result(pair, n_resamples, confidence, method, seed)


def bootstrap_result(
    pair: PairedValues, n_resamples: int, confidence: float, method: str, seed: int | None
) -> BootstrapResult:
    """The bootstrap interval of the mean difference ``a - b`` of a checked pair.

    :func:`paired_bootstrap` after its checks; :func:`ragnb.stats.compare` calls it per pair.

    Parameters
    ----------
    pair : PairedValues
        The two systems' per-query values.
    n_resamples : int
        Bootstrap resamples, >= 1.
    confidence : float
        Confidence level in (0, 1).
    method : {"percentile", "bca"}
        The interval.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    BootstrapResult
        The interval at ``confidence``, with both systems' means over the queries kept.

    References
    ----------
    Efron and Tibshirani (1993), *An Introduction to the Bootstrap*, chapters 13 and 14.
    """
    d = pair.a - pair.b
    low, high = _bootstrap_interval(d, n_resamples, confidence, method, seed)
    same = np.all(d == d[0])
    return BootstrapResult(
        **pair.summary(),
        difference=float(d[0]) if same else float(d.mean()),
        low=low,
        high=high,
        confidence=confidence,
        method=method,
        n_resamples=n_resamples,
        seed=seed,
    )
