"""Standardised effect sizes of a paired comparison: Cohen's d_z and Hedges' g_z with exact
noncentral-t confidence intervals."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ragnb.errors import InputError
from ragnb.stats.paired import check_fraction

__all__ = ["PairedEffectSize", "hedges_correction", "paired_effect_size"]


@dataclass(frozen=True)
class PairedEffectSize:
    """Cohen's d_z and Hedges' g_z of paired differences, with their intervals.

    Attributes
    ----------
    cohens_dz : float
        ``mean(d) / sd(d)``, ``d = a - b`` per query, ``sd`` with ``n - 1`` in the denominator;
        unitless. NaN with fewer than two queries or differences that are all equal.
    dz_low, dz_high : float
        Confidence interval of the population d_z (noncentral t, exact under normal
        differences).
    hedges_gz : float
        ``J(n - 1) * cohens_dz``: d_z with its small-sample bias removed.
    gz_low, gz_high : float
        The d_z interval's ends times ``J(n - 1)``.
    n_queries : int
    """

    cohens_dz: float
    dz_low: float
    dz_high: float
    hedges_gz: float
    gz_low: float
    gz_high: float
    n_queries: int

    def as_dict(self) -> dict[str, float]:
        """The fields by name, as a row of :attr:`ragnb.stats.ComparisonResult.pairs` holds them
        (without ``n_queries``)."""
        out = asdict(self)
        del out["n_queries"]
        return out


def hedges_correction(df: float) -> float:
    """Hedges' exact small-sample correction ``J(df) = Γ(df/2) / (sqrt(df/2) Γ((df-1)/2))``.

    Parameters
    ----------
    df : float > 1
        Degrees of freedom of the standard deviation (``n - 1`` for d_z).

    Returns
    -------
    float in (0, 1)
        Close to ``1 - 3 / (4 df - 1)``; tends to 1 as df grows. NaN for ``df <= 1``.

    References
    ----------
    Hedges, L. V. (1981). Distribution theory for Glass's estimator of effect size and related
    estimators. Journal of Educational Statistics 6(2), 107-128, eq. 6e.

    Examples
    --------
    >>> round(hedges_correction(9), 4), round(1 - 3 / (4 * 9 - 1), 4)
    (0.9139, 0.9143)
    """
    from scipy.special import gammaln

    if not df > 1:
        return float("nan")
    return float(np.exp(gammaln(df / 2) - 0.5 * np.log(df / 2) - gammaln((df - 1) / 2)))


def _noncentrality(t: float, df: float, target: float) -> float:
    """The noncentrality ``λ`` with ``P(T <= t) = target`` for T noncentral t (df, λ), t >= 0.

    The cdf falls as λ grows, so a bracket of a few standard deviations of t around t holds
    the root; where scipy cannot evaluate the cdf (NaN, far in a tail), the normal
    approximation ``t -+ z sqrt(1 + t**2 / (2 df))`` stands in."""
    from scipy import stats
    from scipy.optimize import brentq

    def gap(lam: float) -> float:
        return float(stats.nct.cdf(t, df, lam)) - target

    spread = float(np.sqrt(1 + t * t / (2 * df)))
    width = 8 * spread + 1
    for _ in range(8):
        low, high = t - width, t + width
        g_low, g_high = gap(low), gap(high)
        if np.isnan(g_low) or np.isnan(g_high):
            break
        if g_low > 0 > g_high:
            try:
                return float(brentq(gap, low, high, xtol=1e-12, rtol=1e-12))
            except ValueError:  # a NaN inside the bracket
                break
        width *= 2
    return t - float(stats.norm.ppf(target)) * spread


def paired_effect_size(
    a: np.ndarray, b: np.ndarray, *, confidence: float = 0.95
) -> PairedEffectSize:
    """Cohen's d_z and Hedges' g_z of ``a - b`` with noncentral-t confidence intervals.

    ``d_z = mean(d) / sd(d)`` is the standardised mean of the per-query differences (Lakens
    2013, eq. 6), the effect size of a paired (within-query) design; it is not ``d_av``, which
    divides by the average of the two systems' standard deviations (Lakens eq. 10) and is not
    what the paired tests see. Its interval inverts the noncentral t distribution: ``t = d_z
    sqrt(n)`` follows a noncentral t with ``n - 1`` degrees of freedom and noncentrality
    ``δ_z sqrt(n)``; the bounds are the noncentralities that put t at the ``(1 + confidence) /
    2`` and ``(1 - confidence) / 2`` quantiles, divided by ``sqrt(n)`` (exact when the
    differences are normal; Goulet-Pelletier and Cousineau 2018, section on d_z; Steiger and
    Fouladi 1997). Hedges' g_z multiplies d_z, and both ends of its interval, by the exact
    correction ``J(n - 1)`` (:func:`hedges_correction`; Goulet-Pelletier and Cousineau 2018).

    Parameters
    ----------
    a, b : ndarray of shape (n,)
        The two systems' values on the same n queries (paired, finite).
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    PairedEffectSize
        Unitless (standard deviations of the differences). NaN everywhere but ``n_queries``
        when n < 2 or the differences are all equal (no spread to standardise by).

    Raises
    ------
    InputError
        On arrays of different shapes, values that are not finite, or ``confidence`` outside
        (0, 1).

    References
    ----------
    Lakens, D. (2013). Calculating and reporting effect sizes to facilitate cumulative science:
    a practical primer for t-tests and ANOVAs. Frontiers in Psychology 4, 863 (eq. 6, d_z).
    Goulet-Pelletier, J.-C., Cousineau, D. (2018). A review of effect sizes and their
    confidence intervals, Part I: The Cohen's d family. The Quantitative Methods for Psychology
    14(4), 242-265. Steiger, J. H., Fouladi, R. T. (1997). Noncentrality interval estimation
    and the evaluation of statistical models. In *What if there were no significance tests?*,
    221-257. Hedges (1981) for J.

    Examples
    --------
    Differences 0.1, 0.2, 0.3: mean 0.2, sd 0.1, so d_z = 2:

    >>> e = paired_effect_size(np.array([0.6, 0.7, 0.8]), np.array([0.5, 0.5, 0.5]))
    >>> round(e.cohens_dz, 6), round(e.hedges_gz, 4)   # J(2) = 0.5642
    (2.0, 1.1284)
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise InputError(f"a and b must be paired 1-D arrays, got shapes {x.shape}, {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("a or b holds a value that is NaN or infinite")
    confidence = check_fraction(confidence, "confidence")
    d, n = x - y, x.size
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2 or sd <= 1e-12 * max(1.0, float(np.abs(d).max())):
        nan = float("nan")
        return PairedEffectSize(nan, nan, nan, nan, nan, nan, n_queries=n)
    dz = float(d.mean()) / sd
    t = abs(dz) * np.sqrt(n)  # the interval of -d_z is minus that of d_z
    tail = (1 - confidence) / 2
    low = float(_noncentrality(t, n - 1, 1 - tail) / np.sqrt(n))
    high = float(_noncentrality(t, n - 1, tail) / np.sqrt(n))
    if dz < 0:
        low, high = -high, -low
    j = hedges_correction(n - 1)
    return PairedEffectSize(dz, low, high, j * dz, j * low, j * high, n)
