"""Several runs per system (seeds, folds): a two-level bootstrap over queries and runs."""

from __future__ import annotations

import numpy as np

from ragnb.errors import InputError
from ragnb.stats.paired import RESAMPLE_BLOCK, check_fraction, check_resamples

__all__ = ["two_level_bootstrap"]


def _run_matrix(values: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(values, dtype=np.float64)
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2 or m.shape[1] == 0:
        raise InputError(f"{name} must have shape (n_runs, n_queries), got {m.shape}")
    if not np.isfinite(m).all():
        raise InputError(f"{name} holds a value that is NaN or infinite")
    return m


def two_level_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> tuple[float, float]:
    """Percentile interval of ``mean(a) - mean(b)`` resampling queries, then runs per system.

    Each resample draws the n queries with replacement (the same queries for both systems, so
    the pairing is kept), then, independently for each system, its R runs with replacement;
    a system's resampled mean is the mean over the drawn runs of each drawn run's mean over the
    drawn queries. The query draws are those of :func:`ragnb.stats.paired_bootstrap` with the
    same seed (common random numbers); the run draws come from a second stream.

    Why the interval is at least as wide as the one-level one: given the drawn queries, the
    run draws average to the mean over all runs, which is the one-level resample; by the law of
    total variance the two-level spread is the one-level spread plus the variance the run
    draws add (the spread between seeds), which is never negative. With one run per system the
    two intervals are the same.

    Parameters
    ----------
    a, b : ndarray of shape (n_runs, n_queries) or (n_queries,)
        Per-query values of each run of system a and of system b, the same queries in the same
        column order (the number of runs may differ between a and b); finite.
    n_resamples : int, default 10000
        B.
    confidence : float in (0, 1), default 0.95
    seed : int or None, default 0

    Returns
    -------
    low, high : float
        The interval's ends, same unit as the measure.

    Raises
    ------
    InputError
        On a shape that is not (n_runs, n_queries), queries that differ in number, a value
        that is NaN or infinite, or a parameter out of range.

    References
    ----------
    Davison, A. C., Hinkley, D. V. (1997). *Bootstrap Methods and their Application*.
    Cambridge University Press, section 3.8 (hierarchical data: resampling at both stages).

    Examples
    --------
    Three seeds of system a that differ only by a constant per seed:

    >>> a = np.array([[0.5, 0.7, 0.2], [0.6, 0.8, 0.3], [0.4, 0.6, 0.1]])
    >>> b = np.array([0.4, 0.5, 0.2])
    >>> low, high = two_level_bootstrap(a, b, n_resamples=2000)
    >>> bool(low < 0.1 < high)
    True
    """
    ma, mb = _run_matrix(a, "a"), _run_matrix(b, "b")
    if ma.shape[1] != mb.shape[1]:
        raise InputError(f"a holds {ma.shape[1]} queries and b {mb.shape[1]}; pair them first")
    n_resamples = check_resamples(n_resamples)
    confidence = check_fraction(confidence, "confidence")
    n = ma.shape[1]
    rng = np.random.default_rng(seed)
    run_rng = np.random.default_rng(None if seed is None else [seed, 1])
    rows = max(1, RESAMPLE_BLOCK // n)  # the blocks of paired_bootstrap: the same query draws
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = _resampled_mean(ma, idx, run_rng) - _resampled_mean(mb, idx, run_rng)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(out, [tail, 1 - tail])
    return float(low), float(high)


def _resampled_mean(m: np.ndarray, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mean over resampled runs of each run's mean over the resampled queries: (block,)."""
    per_run = m[:, idx].mean(axis=2).T  # (block, n_runs)
    if m.shape[0] == 1:
        return per_run[:, 0]
    runs = rng.integers(0, m.shape[0], size=per_run.shape)
    return np.take_along_axis(per_run, runs, axis=1).mean(axis=1)
