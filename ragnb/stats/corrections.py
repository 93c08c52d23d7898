"""Multiple-comparison corrections of p-values: Holm and Bonferroni (family-wise error rate) and
Benjamini-Hochberg (false discovery rate)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np

from ragnb.errors import InputError

Correction = Literal["holm", "bonferroni", "bh", "none"]

#: The names :func:`adjust_p_values` takes.
CORRECTIONS = ("holm", "bonferroni", "bh", "none")


def _check_p_values(p_values: Iterable[float] | np.ndarray) -> np.ndarray:
    p = np.asarray(list(p_values) if not isinstance(p_values, np.ndarray) else p_values)
    try:
        p = p.astype(np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("p-values must be numbers") from None
    bad = np.isnan(p) | (p < 0) | (p > 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"p-value {i} is {p[i]!r}; p-values must lie in [0, 1]")
    return p


def holm(p_values: Iterable[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate).

    With the m p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value of the
    i-th smallest is ``min(1, max_{j <= i} (m - j + 1) p_(j))``. Rejecting the hypotheses whose
    adjusted p-value is at most alpha is exactly Holm's procedure: reject ``H_(1), H_(2), ...``
    while ``p_(i) <= alpha / (m - i + 1)``, stop at the first that fails. The values equal
    ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]``.

    Parameters
    ----------
    p_values : array-like of shape (m,)
        Raw p-values in [0, 1].

    Returns
    -------
    ndarray of shape (m,)
        Adjusted p-values in [0, 1], in the input order; never below the raw value.

    Raises
    ------
    InputError
        If a p-value is NaN or outside [0, 1].

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2), 65-70. Wright, S. P. (1992). Adjusted p-values for simultaneous
    inference. Biometrics 48(4), 1005-1013 (the adjusted form).

    Examples
    --------
    Sorted: 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 gives 0.02, 0.03, 0.06, 0.04; the running
    maximum makes the last 0.06:

    >>> holm([0.01, 0.04, 0.03, 0.005]).round(4).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = _check_p_values(p_values)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    stepped = (m - np.arange(m)) * p[order]
    adjusted = np.minimum(1.0, np.maximum.accumulate(stepped))
    out = np.empty(m)
    out[order] = adjusted
    return out


def bonferroni(p_values: Iterable[float] | np.ndarray) -> np.ndarray:
    """Bonferroni adjusted p-values: ``min(1, m * p_i)``.

    The input, output and errors are those of :func:`holm`: raw ``p_values`` (array-like of shape
    (m,) in [0, 1]) in, adjusted values (ndarray of shape (m,) in [0, 1], input order) out, and
    InputError on a NaN or a value outside [0, 1].

    References
    ----------
    Dunn, O. J. (1961). Multiple comparisons among means. JASA 56(293), 52-64.

    Examples
    --------
    >>> bonferroni([0.01, 0.04, 0.3]).round(4).tolist()
    [0.03, 0.12, 0.9]
    """
    p = _check_p_values(p_values)
    return np.minimum(1.0, p * p.size)


def benjamini_hochberg(p_values: Iterable[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate).

    With the m p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value of the
    i-th smallest is ``min(1, min_{j >= i} m p_(j) / j)``. Rejecting the hypotheses whose adjusted
    p-value is at most q is the step-up procedure of Benjamini and Hochberg: find the largest i
    with ``p_(i) <= i q / m`` and reject ``H_(1), ..., H_(i)``. Among the rejections, the
    expected share of true null hypotheses is at most q when the tests are independent or
    positively dependent (Benjamini and Yekutieli 2001), which paired comparisons of systems on
    shared queries usually are. It rejects at least as much as Holm. The values equal
    ``statsmodels.stats.multitest.multipletests(p, method="fdr_bh")[1]``.

    The input, output and errors are those of :func:`holm`: raw ``p_values`` (array-like of shape
    (m,) in [0, 1]) in, adjusted values (ndarray of shape (m,) in [0, 1], input order, never below
    the raw value) out, and InputError on a NaN or a value outside [0, 1].

    References
    ----------
    Benjamini, Y., Hochberg, Y. (1995). Controlling the false discovery rate: a practical and
    powerful approach to multiple testing. JRSS B 57(1), 289-300. Benjamini, Y., Yekutieli, D.
    (2001). The control of the false discovery rate in multiple testing under dependency.
    Annals of Statistics 29(4), 1165-1188. Wright (1992) for the adjusted form.

    Examples
    --------
    Sorted: 0.005, 0.01, 0.03, 0.04 times 4/1, 4/2, 4/3, 4/4 gives 0.02, 0.02, 0.04, 0.04; the
    running minimum from the top keeps them:

    >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.005]).round(4).tolist()
    [0.02, 0.04, 0.04, 0.02]
    """
    p = _check_p_values(p_values)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    stepped = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(stepped[::-1])[::-1])
    out = np.empty(m)
    out[order] = adjusted
    return out


def adjust_p_values(
    p_values: Iterable[float] | np.ndarray, method: Correction = "holm"
) -> np.ndarray:
    """Adjusted p-values by ``method``: ``"holm"`` (:func:`holm`), ``"bonferroni"``
    (:func:`bonferroni`), ``"bh"`` (:func:`benjamini_hochberg`) or ``"none"``.

    Raises
    ------
    InputError
        On an unknown method or invalid p-values.
    """
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    if method == "bh":
        return benjamini_hochberg(p_values)
    if method == "none":
        return _check_p_values(p_values)
    raise InputError(f"unknown correction {method!r}; use one of {', '.join(CORRECTIONS)}")
