"""Several runs per system (seeds, folds): a two-level bootstrap interval and a two-level
randomization test, over queries and over runs."""

from __future__ import annotations

import numpy as np

from ragnb.errors import InputError
from ragnb.stats.paired import RESAMPLE_BLOCK, check_fraction, check_resamples
from ragnb.stats.randomization import RandomizationResult

__all__ = ["run_deviations", "run_shifts", "two_level_bootstrap", "two_level_randomization_test"]

# statistics this close (relative to the data's scale) to the observed one count as ties
_TIE_TOLERANCE = 1e-9


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


def run_deviations(runs: np.ndarray) -> np.ndarray:
    """A system's run effects as the two-level randomization flips them.

    A run's mean over the queries is the system's mean plus its run effect (from its seed) plus
    the run's per-query noise averaged over the n queries; the query level of the test already
    carries that noise. So the deviations are shrunk to the variance of the run effects alone,
    estimated by moments as in the ANOVA with runs nested in systems:
    ``s2_run = max(0, (MS_run - MS_residual) / n)``, with ``MS_run = n * var(run means)`` and
    ``MS_residual`` the run x query residual's mean square (:func:`ragnb.stats.anova`, design
    ``"two-way"``).

    Parameters
    ----------
    runs : ndarray of shape (n_runs, n_queries)
        Per-query values of each run of one system, on the queries compared.

    Returns
    -------
    ndarray of shape (n_runs,)
        The runs' means minus their mean, scaled so that the variance of their mean with random
        signs, ``sum(u**2) / R**2``, equals ``s2_run / R`` (the variance a system's mean over R
        runs owes to its seeds); empty with a single run, zeros when the runs differ no more
        than their noise explains.
    """
    r, n = runs.shape
    if r < 2:
        return np.empty(0)
    means = runs.mean(axis=1)
    centred = means - means.mean()
    spread = float(centred @ centred) / (r - 1)  # var of run means
    if spread <= 0:
        return np.zeros(r)
    residual = runs - runs.mean(axis=0) - centred[:, None]
    ms_residual = float((residual**2).sum()) / ((r - 1) * (n - 1)) if n > 1 else 0.0
    s2_run = max(0.0, spread - ms_residual / n)
    return centred * np.sqrt(s2_run * r / ((r - 1) * spread))


def run_shifts(deviations: list[np.ndarray], size: int, rng: np.random.Generator) -> np.ndarray:
    """Random shifts of each system's mean by its run effects with random signs.

    Parameters
    ----------
    deviations : list of ndarray
        Per system, :func:`run_deviations` (empty for a system with one run).
    size : int
        Resamples.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (size, n_systems)
        ``mean_r(t_r u_r)`` with independent signs ``t_r`` per resample and system; 0 for a
        system with one run.
    """
    out = np.zeros((size, len(deviations)))
    for i, u in enumerate(deviations):
        if u.size:
            signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, u.size))
            out[:, i] = signs @ u / u.size
    return out


def two_level_randomization_test(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> RandomizationResult:
    """Two-sided randomization test of ``mean(a) = mean(b)`` over queries and over runs.

    The statistic is the difference of the two systems' means over runs and queries,
    ``T = mean(a) - mean(b)``. Each resample (1) swaps the two systems within each query with
    probability 1/2 (the paired randomization test on the run-averaged values: the sign of
    each query's difference flipped), and (2) shifts each system's mean by its own run effects
    with random signs: ``mean_r(t_r u_r)``, ``u_r`` a run's mean minus the system's mean,
    scaled to the estimated variance of the run effects (:func:`run_deviations`). Step 2
    carries the spread between seeds, which step 1 alone averages over the queries and so all
    but removes: with several runs per
    system, the one-level test on run-averaged values rejects too often when seeds move a
    system's mean. The p-value is ``(1 + #{|T*| >= |T|}) / (1 + B)``.

    The test is approximate: the run level rests on each system's R - 1 degrees of freedom of
    spread between runs, and queries and runs are not jointly exchangeable (no permutation
    group leaves both random effects invariant). Its size was measured by simulation
    (``benchmarks/stats_size.py``; the results in ``benchmarks/README.md``). With one run per
    system it is the paired randomization test (Monte Carlo).

    Parameters
    ----------
    a, b : ndarray of shape (n_runs, n_queries) or (n_queries,)
        Per-query values of each run of system a and of system b, the same queries in the same
        column order (the number of runs may differ); finite.
    n_resamples : int, default 10000
        B.
    seed : int or None, default 0

    Returns
    -------
    RandomizationResult
        ``method`` ``"two_level"``; ``mean_a``, ``mean_b`` over runs and queries; ``p_value`` in
        (0, 1].

    Raises
    ------
    InputError
        On a shape that is not (n_runs, n_queries), queries that differ in number, a value
        that is NaN or infinite, or ``n_resamples`` below 1.

    References
    ----------
    Davison and Hinkley (1997), section 3.8 (two-stage resampling of hierarchical data);
    Smucker, Allan and Carterette (2007) (the paired randomization test of IR); Phipson and
    Smyth (2010) (the ``(b + 1) / (m + 1)`` p-value).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> a = rng.normal(0.5, 0.1, (3, 30))
    >>> r = two_level_randomization_test(a, a[::-1] + 0.0, n_resamples=999)
    >>> abs(r.difference) < 1e-12, r.p_value   # the same runs in another order
    (True, 1.0)
    """
    ma, mb = _run_matrix(a, "a"), _run_matrix(b, "b")
    if ma.shape[1] != mb.shape[1]:
        raise InputError(f"a holds {ma.shape[1]} queries and b {mb.shape[1]}; pair them first")
    n_resamples = check_resamples(n_resamples)
    d = ma.mean(axis=0) - mb.mean(axis=0)  # (n,) run-averaged differences
    deviations = [run_deviations(ma), run_deviations(mb)]
    observed = float(d.mean())
    scale = float(np.abs(ma).mean() + np.abs(mb).mean())
    threshold = abs(observed) - _TIE_TOLERANCE * scale
    rng = np.random.default_rng(seed)
    n = d.size
    rows = max(1, RESAMPLE_BLOCK // n)
    count = 0
    for start in range(0, n_resamples, rows):
        size = min(n_resamples, start + rows) - start
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n))
        shifts = run_shifts(deviations, size, rng)
        stat = signs @ d / n + shifts[:, 0] - shifts[:, 1]
        count += int((np.abs(stat) >= threshold).sum())
    return RandomizationResult(
        difference=observed,
        p_value=(count + 1) / (n_resamples + 1),
        mean_a=float(ma.mean()),
        mean_b=float(mb.mean()),
        method="two_level",
        n_permutations=n_resamples,
        n_queries=n,
        n_dropped=0,
        seed=seed,
    )
