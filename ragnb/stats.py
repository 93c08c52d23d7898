"""Comparing systems: paired bootstrap intervals, randomization tests, multiple-comparison
corrections, agreement between two runs' top K lists, and a ranx-like comparison table.

Per-query input
---------------
The paired functions take the per-query values of two systems on one measure, each as

* a Series indexed by ``query_id``, or a ``{query_id: value}`` dict;
* a long frame ``query_id, measure, value`` (:attr:`ragnb.evaluate.EvaluationResult.per_query`),
  with ``measure=`` naming the measure when the frame holds several;
* a wide frame with index or column ``query_id`` and one column per measure
  (:meth:`~ragnb.evaluate.EvaluationResult.per_query_wide`), with ``measure=``;
* an :class:`~ragnb.evaluate.EvaluationResult`.

Measure names may be aliases (``ndcg_cut_10`` finds ``nDCG@10``). The two systems are paired by
``query_id`` and must hold the same queries (the error names those that differ). A NaN value means
"undefined": the query is dropped from that pair and the result counts it (``n_dropped``).

Randomness
----------
Resampling uses ``numpy.random.default_rng(seed)``: the same inputs and seed give the same result.
Resamples are drawn as blocks of a ``(B, n)`` matrix (at most about two million entries per
block), so memory stays bounded and no Python loop runs over single resamples.
:func:`compare` gives every comparison the same seed (common random numbers), so the result for
one pair does not depend on which other pairs are in the table.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from ragnb.errors import InputError
from ragnb.evaluate import EvaluationResult, evaluate
from ragnb.frames import RunOrder, sort_run
from ragnb.measures import Measure, parse_measure

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "BootstrapResult",
    "ComparisonResult",
    "KendallTopK",
    "RandomizationResult",
    "TopKAgreement",
    "adjust_p_values",
    "bonferroni",
    "compare",
    "holm",
    "kendall_top_k",
    "paired_bootstrap",
    "randomization_test",
    "top_k_agreement",
]

PerQueryValues: TypeAlias = pd.Series | pd.DataFrame | EvaluationResult | Mapping[str, float]
CIMethod = Literal["percentile", "bca"]
Correction = Literal["holm", "bonferroni", "none"]

_BLOCK = 1 << 21  # entries of a resampling block: 2M float64 = 16 MB
_MAX_EXACT_N = 24  # 2**24 sign vectors: about 17 million, a few seconds
# statistics this close (relative to sum |d_i|) to the observed one count as ties
_TIE_TOLERANCE = 1e-9


# --------------------------------------------------------------------------------------------
# input: per-query values of two systems, aligned by query_id


def _preview(ids: Sequence[str], n: int = 5) -> str:
    shown = ", ".join(repr(x) for x in ids[:n])
    return shown + (", ..." if len(ids) > n else "")


def _pick_measure(names: list[str], measure: str | Measure | None, what: str) -> str:
    if measure is None:
        if len(names) == 1:
            return names[0]
        raise InputError(f"{what} holds several measures {names}; pass measure= to choose one")
    name = measure.name if isinstance(measure, Measure) else str(measure)
    if name in names:
        return name
    try:
        canonical = parse_measure(name).name
    except InputError:
        canonical = None
    if canonical in names:
        return str(canonical)
    raise InputError(f"{what} has no measure {name!r}; it has {names}", column=name)


def _per_query_series(
    values: PerQueryValues, measure: str | Measure | None, what: str
) -> pd.Series:
    """One system's values on one measure: float Series indexed by str query_id."""
    if isinstance(values, EvaluationResult):
        values = values.per_query
    if isinstance(values, pd.Series):
        series = values
    elif isinstance(values, Mapping):
        series = pd.Series(dict(values), dtype=object)
    elif isinstance(values, pd.DataFrame):
        frame = values
        if {"query_id", "measure", "value"} <= set(frame.columns):
            names = [str(m) for m in dict.fromkeys(frame["measure"])]
            name = _pick_measure(names, measure, what)
            rows = frame[frame["measure"].astype(str) == name]
            series = pd.Series(rows["value"].to_numpy(), index=rows["query_id"].to_numpy())
        else:
            if "query_id" in frame.columns:
                frame = frame.set_index("query_id")
            name = _pick_measure([str(c) for c in frame.columns], measure, what)
            series = frame[name]
    else:
        raise InputError(
            f"{what}: expected per-query values as a Series, dict, DataFrame or "
            f"EvaluationResult, got {type(values).__name__}"
        )
    index = pd.Index([str(q) for q in series.index])
    if index.has_duplicates:
        qid = str(index[index.duplicated()][0])
        raise InputError(f"{what} has several values for one query", query_id=qid)
    try:
        data = pd.to_numeric(pd.Series(series.to_numpy(), index=index), errors="raise")
    except (TypeError, ValueError):
        raise InputError(f"{what} holds a value that is not a number") from None
    data = data.astype("float64")
    inf = np.isinf(data.to_numpy())
    if inf.any():
        raise InputError(f"{what} holds an infinite value", query_id=str(index[inf][0]))
    return data


@dataclass(frozen=True)
class _Paired:
    query_ids: np.ndarray  # (n,) the queries kept
    a: np.ndarray  # (n,)
    b: np.ndarray  # (n,)
    n_dropped: int


def _align(a: pd.Series, b: pd.Series, name_a: str, name_b: str) -> _Paired:
    ia, ib = set(a.index), set(b.index)
    if ia != ib:
        only_a, only_b = sorted(ia - ib), sorted(ib - ia)
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in {name_a} ({_preview(only_a)})")
        if only_b:
            parts.append(f"{len(only_b)} only in {name_b} ({_preview(only_b)})")
        raise InputError(
            "per-query values do not align by query_id: " + "; ".join(parts),
            query_id=(only_a or only_b)[0],
        )
    ids = np.asarray(sorted(ia), dtype=object)
    va = a.reindex(ids).to_numpy(dtype=np.float64)
    vb = b.reindex(ids).to_numpy(dtype=np.float64)
    keep = ~(np.isnan(va) | np.isnan(vb))
    if not keep.any():
        raise InputError(
            f"no query has a defined (non-NaN) value for both {name_a} and {name_b} "
            f"({len(ids)} queries)"
        )
    return _Paired(ids[keep], va[keep], vb[keep], int((~keep).sum()))


def _paired(a: PerQueryValues, b: PerQueryValues, measure: str | Measure | None) -> _Paired:
    sa = _per_query_series(a, measure, "system a")
    sb = _per_query_series(b, measure, "system b")
    return _align(sa, sb, "system a", "system b")


def _check_resamples(n_resamples: int) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise InputError(f"n_resamples must be an integer, got {n_resamples!r}")
    if n_resamples < 1:
        raise InputError(f"n_resamples must be at least 1, got {n_resamples}")
    return int(n_resamples)


def _check_fraction(value: float, name: str) -> float:
    if not 0.0 < float(value) < 1.0:
        raise InputError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return float(value)


# --------------------------------------------------------------------------------------------
# paired bootstrap


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
    rows = max(1, _BLOCK // n)
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
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_fraction(confidence, "confidence")
    if method not in ("percentile", "bca"):
        raise InputError(f"unknown interval method {method!r}; use 'percentile' or 'bca'")
    pair = _paired(a, b, measure)
    return _bootstrap_result(pair, n_resamples, confidence, method, seed)


def _bootstrap_result(
    pair: _Paired, n_resamples: int, confidence: float, method: str, seed: int | None
) -> BootstrapResult:
    d = pair.a - pair.b
    low, high = _bootstrap_interval(d, n_resamples, confidence, method, seed)
    same = np.all(d == d[0])
    return BootstrapResult(
        difference=float(d[0]) if same else float(d.mean()),
        low=low,
        high=high,
        mean_a=float(pair.a.mean()),
        mean_b=float(pair.b.mean()),
        confidence=confidence,
        method=method,
        n_queries=int(d.size),
        n_dropped=pair.n_dropped,
        n_resamples=n_resamples,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# paired randomization test


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
        The seed (unused by the exact test).
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
    rows = max(1, _BLOCK // n)
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
    a, b : Series, dict, DataFrame or EvaluationResult
        Per-query values of the two systems (see the module docstring), paired by ``query_id``.
    measure : str or Measure, optional
        The measure to take from a frame holding several.
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
    n_resamples = _check_resamples(n_resamples)
    if exact not in (None, True, False):
        raise InputError(f"exact must be True, False or None, got {exact!r}")
    pair = _paired(a, b, measure)
    return _randomization_result(pair, n_resamples, exact, seed)


def _randomization_result(
    pair: _Paired, n_resamples: int, exact: bool | None, seed: int | None
) -> RandomizationResult:
    d = pair.a - pair.b
    p, method, n_perm = _randomization_p(d, n_resamples, exact, seed)
    return RandomizationResult(
        difference=float(d.mean()),
        p_value=float(p),
        mean_a=float(pair.a.mean()),
        mean_b=float(pair.b.mean()),
        method=method,
        n_permutations=n_perm,
        n_queries=int(d.size),
        n_dropped=pair.n_dropped,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# multiple comparisons


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

    Parameters
    ----------
    p_values : array-like of shape (m,)
        Raw p-values in [0, 1].

    Returns
    -------
    ndarray of shape (m,)
        Adjusted p-values in [0, 1].

    Raises
    ------
    InputError
        If a p-value is NaN or outside [0, 1].

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


def adjust_p_values(
    p_values: Iterable[float] | np.ndarray, method: Correction = "holm"
) -> np.ndarray:
    """Adjusted p-values by ``method``: ``"holm"``, ``"bonferroni"`` or ``"none"``.

    Raises
    ------
    InputError
        On an unknown method or invalid p-values.
    """
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    if method == "none":
        return _check_p_values(p_values)
    raise InputError(f"unknown correction {method!r}; use 'holm', 'bonferroni' or 'none'")


# --------------------------------------------------------------------------------------------
# top-K agreement: overlap and Fagin, Kumar and Sivakumar's K^(p)


class KendallTopK(NamedTuple):
    """Fagin et al.'s Kendall distance between two top-k lists.

    Attributes
    ----------
    k_p : float
        The raw distance K^(p), in [0, k_a k_b + p (C(k_a, 2) + C(k_b, 2))].
    distance : float in [0, 1]
        ``k_p`` divided by its maximum (reached when the lists are disjoint); NaN if that
        maximum is 0.
    tau : float in [-1, 1]
        ``1 - 2 * distance``.
    """

    k_p: float
    distance: float
    tau: float


def _kendall_kp(pos_a: np.ndarray, pos_b: np.ndarray, valid: np.ndarray, p: float) -> np.ndarray:
    """K^(p) per row: ``pos_*`` int arrays of shape (Q, M), the 1-based rank of each union
    member in each list (k + 1 when absent), ``valid`` (Q, M) marks the real members (the rest
    is padding). Returns shape (Q,).

    A pair is discordant when the two lists order it oppositely, with an absent member ranked
    after every present one: that covers Fagin et al.'s cases 1-3 (penalty 1 or 0). A pair tied
    in one list (both members absent from it, case 4) costs p.
    """
    q, m = pos_a.shape
    out = np.zeros(q)
    if m == 0:
        return out
    rows = max(1, _BLOCK // (m * m))
    for start in range(0, q, rows):
        stop = min(q, start + rows)
        a, b, v = pos_a[start:stop], pos_b[start:stop], valid[start:stop]
        da = np.sign(a[:, :, None] - a[:, None, :])  # (block, M, M)
        db = np.sign(b[:, :, None] - b[:, None, :])
        pair = v[:, :, None] & v[:, None, :]
        discordant = ((da * db) < 0) & pair
        tied_in_one = ((da == 0) != (db == 0)) & pair  # excludes the diagonal
        # each unordered pair appears twice in the (M, M) matrices
        out[start:stop] = (discordant.sum(axis=(1, 2)) + p * tied_in_one.sum(axis=(1, 2))) / 2
    return out


def _kp_maximum(k_a: np.ndarray, k_b: np.ndarray, p: float) -> np.ndarray:
    """max K^(p) for lists of lengths k_a, k_b: disjoint lists, k_a k_b + p (C(k_a,2)+C(k_b,2))."""
    return k_a * k_b + p * (k_a * (k_a - 1) + k_b * (k_b - 1)) / 2


def _check_p(p: float) -> float:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise InputError(f"penalty p must be a number in [0, 1], got {p!r}") from None
    if not 0.0 <= value <= 1.0:
        raise InputError(f"penalty p must lie in [0, 1], got {p!r}")
    return value


def kendall_top_k(list_a: Sequence[str], list_b: Sequence[str], *, p: float = 0.5) -> KendallTopK:
    """Kendall distance with penalty parameter p between two top-k lists (Fagin et al. 2003).

    The lists may hold different members. Over every unordered pair {i, j} of the union D of
    the two lists, the penalty is (Fagin et al., section 3.1, the four cases of K̄^(p)_{i,j}):

    1. i and j in both lists: 1 if the lists order them oppositely, else 0;
    2. i and j in one list, only i in the other: 1 if j is ahead of i in the first list, else 0
       (the other list implicitly puts the present i ahead of the absent j);
    3. i only in one list, j only in the other: 1;
    4. i and j in one list, neither in the other: p (p = 0 optimistic, 1/2 neutral).

    ``K^(p) = sum of the penalties``. ragnb normalises it by its maximum, which disjoint lists
    reach: ``k_a k_b + p (C(k_a, 2) + C(k_b, 2))`` (for k_a = k_b = k, ``k² + p k (k - 1)``),
    giving ``distance`` in [0, 1] (0 for identical lists, 1 for disjoint ones) and
    ``tau = 1 - 2 distance`` in [-1, 1]. Note that a reversed list is not at distance 1: it
    keeps the same members. The normalisation and tau are ragnb's, not the paper's.

    Parameters
    ----------
    list_a, list_b : sequence of str
        Top-k lists, best first, without repeated members; lengths may differ (then the same
        case rules and the maximum above apply).
    p : float in [0, 1], default 0.5
        Penalty for a pair that one list ranks and the other does not hold at all.

    Returns
    -------
    KendallTopK
        ``k_p``, ``distance`` (NaN when the maximum is 0: both lists empty, or p = 0 and one
        list empty), ``tau``.

    Raises
    ------
    InputError
        If a list repeats a member or p is outside [0, 1].

    References
    ----------
    Fagin, R., Kumar, R., Sivakumar, D. (2003). Comparing top k lists. SIAM Journal on
    Discrete Mathematics 17(1), 134-160, section 3.1 (K^(p)).

    Examples
    --------
    A = (a, b, c), B = (b, a, d). Pairs: {a,b} case 1 swapped: 1; {a,c}, {b,c}: case 2, the
    shared member is ahead in A: 0; {a,d}, {b,d}: case 2 in B: 0; {c,d} case 3: 1. K = 2; the
    maximum is 3·3 + ½·(3 + 3) = 12, so distance = 2/12 and tau = 1 - 4/12:

    >>> r = kendall_top_k(["a", "b", "c"], ["b", "a", "d"])
    >>> r.k_p, round(r.distance, 4), round(r.tau, 4)
    (2.0, 0.1667, 0.6667)
    """
    p = _check_p(p)
    la, lb = [str(x) for x in list_a], [str(x) for x in list_b]
    for name, lst in (("list_a", la), ("list_b", lb)):
        if len(set(lst)) != len(lst):
            dup = next(x for i, x in enumerate(lst) if x in lst[:i])
            raise InputError(f"{name} holds {dup!r} more than once")
    union = list(dict.fromkeys(la + lb))
    ra = {d: i + 1 for i, d in enumerate(la)}
    rb = {d: i + 1 for i, d in enumerate(lb)}
    absent = max(len(la), len(lb)) + 1
    pos_a = np.array([[ra.get(d, absent) for d in union]], dtype=np.int64).reshape(1, -1)
    pos_b = np.array([[rb.get(d, absent) for d in union]], dtype=np.int64).reshape(1, -1)
    valid = np.ones_like(pos_a, dtype=bool)
    kp = float(_kendall_kp(pos_a, pos_b, valid, p)[0])
    top = float(_kp_maximum(np.array(len(la)), np.array(len(lb)), p))
    dist = kp / top if top > 0 else float("nan")
    return KendallTopK(kp, dist, 1.0 - 2.0 * dist)


@dataclass(frozen=True, eq=False)
class TopKAgreement:
    """How much two runs agree on their top K, per query and on average.

    Attributes
    ----------
    k : int
    p : float
        The penalty parameter of K^(p).
    order : {"score", "file"}
        How each run was ordered (:func:`ragnb.frames.sort_run`).
    per_query : DataFrame
        One row per query of either run (sorted): ``query_id`` (str), ``k_a``, ``k_b`` (int,
        list lengths, at most K; 0 when the query is absent from that run), ``n_common`` (int),
        ``overlap`` (float in [0, 1], ``n_common / K``), ``k_p`` (float, raw K^(p)),
        ``kendall_distance`` (float in [0, 1], NaN when undefined), ``kendall_tau`` (float in
        [-1, 1], NaN when undefined).
    aggregate : DataFrame
        ``measure`` (``overlap``, ``kendall_distance``, ``kendall_tau``), ``value`` (mean over
        the queries where it is defined), ``n_valid``, ``n_queries``.
    """

    k: int
    p: float
    order: str
    per_query: pd.DataFrame
    aggregate: pd.DataFrame

    def aggregate_to_dict(self) -> dict[str, float]:
        """``{"overlap": ..., "kendall_distance": ..., "kendall_tau": ...}``."""
        return {
            str(m): float(v)
            for m, v in zip(self.aggregate["measure"], self.aggregate["value"], strict=True)
        }


def top_k_agreement(
    run_a: pd.DataFrame,
    run_b: pd.DataFrame,
    k: int = 10,
    *,
    p: float = 0.5,
    order: RunOrder = "score",
) -> TopKAgreement:
    """Overlap@K and Fagin et al.'s top-K Kendall tau between two runs, per query.

    Each run is put in evaluation order (:func:`ragnb.frames.sort_run`: by default score
    descending, ties by ``doc_id`` descending, as trec_eval) and cut at K. Per query:
    ``overlap = |top-K(A) ∩ top-K(B)| / K`` and the normalised K^(p) of :func:`kendall_top_k`.
    A query missing from one run has an empty list there: overlap 0, and a Kendall distance of 1
    when the other list holds two or more documents and p > 0 (NaN otherwise).

    Parameters
    ----------
    run_a, run_b : DataFrame
        Run frames (``query_id``, ``doc_id``, ``score``; optionally ``rank``).
    k : int, default 10
        The cutoff K (>= 1).
    p : float in [0, 1], default 0.5
        Penalty of K^(p) for a pair one list ranks and the other lacks entirely.
    order : {"score", "file"}, default "score"

    Returns
    -------
    TopKAgreement
        ``per_query`` and ``aggregate`` frames (columns documented there).

    Raises
    ------
    InputError
        On a malformed run, k < 1, or p outside [0, 1].

    References
    ----------
    Fagin, R., Kumar, R., Sivakumar, D. (2003). Comparing top k lists. SIAM Journal on
    Discrete Mathematics 17(1), 134-160, section 3.1.

    Examples
    --------
    q1: A = (a, b, c), B = (b, a, d): two shared of K = 3, K^(1/2) = 2 of at most 12.

    >>> a = pd.DataFrame({"query_id": "q1", "doc_id": list("abc"), "score": [3.0, 2.0, 1.0]})
    >>> b = pd.DataFrame({"query_id": "q1", "doc_id": list("bad"), "score": [3.0, 2.0, 1.0]})
    >>> row = top_k_agreement(a, b, k=3).per_query.iloc[0]
    >>> round(float(row["overlap"]), 4), float(row["k_p"]), round(float(row["kendall_tau"]), 4)
    (0.6667, 2.0, 0.6667)
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    p = _check_p(p)
    tops = []
    for run in (run_a, run_b):
        ordered = sort_run(run, order, warn=False).run
        tops.append(ordered.loc[ordered["rank"] <= k, ["query_id", "doc_id", "rank"]])
    merged = tops[0].merge(tops[1], on=["query_id", "doc_id"], how="outer", suffixes=("_a", "_b"))
    merged = merged.sort_values("query_id", kind="stable").reset_index(drop=True)
    codes, qids = pd.factorize(merged["query_id"], sort=True)
    slot = merged.groupby(codes, sort=False).cumcount().to_numpy()
    n_q = len(qids)
    width = int(slot.max()) + 1 if len(slot) else 0
    absent = k + 1
    pos_a = np.full((n_q, width), absent, dtype=np.int64)
    pos_b = np.full((n_q, width), absent, dtype=np.int64)
    valid = np.zeros((n_q, width), dtype=bool)
    rank_a = merged["rank_a"].to_numpy(dtype=np.float64)
    rank_b = merged["rank_b"].to_numpy(dtype=np.float64)
    pos_a[codes, slot] = np.where(np.isnan(rank_a), absent, rank_a).astype(np.int64)
    pos_b[codes, slot] = np.where(np.isnan(rank_b), absent, rank_b).astype(np.int64)
    valid[codes, slot] = True
    in_a = (pos_a <= k) & valid
    in_b = (pos_b <= k) & valid
    k_a = in_a.sum(axis=1)
    k_b = in_b.sum(axis=1)
    common = (in_a & in_b).sum(axis=1)
    kp = _kendall_kp(pos_a, pos_b, valid, p)
    top = _kp_maximum(k_a, k_b, p)
    dist = np.full(n_q, np.nan)
    np.divide(kp, top, out=dist, where=top > 0)
    per_query = pd.DataFrame(
        {
            "query_id": pd.Series(np.asarray(qids, dtype=object), dtype=object),
            "k_a": k_a.astype(np.int64),
            "k_b": k_b.astype(np.int64),
            "n_common": common.astype(np.int64),
            "overlap": common / k,
            "k_p": kp,
            "kendall_distance": dist,
            "kendall_tau": 1.0 - 2.0 * dist,
        }
    )
    rows = []
    for name in ("overlap", "kendall_distance", "kendall_tau"):
        col = per_query[name]
        rows.append((name, float(col.mean()) if col.notna().any() else np.nan, col.notna().sum()))
    aggregate = pd.DataFrame(rows, columns=["measure", "value", "n_valid"])
    aggregate["n_valid"] = aggregate["n_valid"].astype(np.int64)
    aggregate["n_queries"] = np.int64(n_q)
    return TopKAgreement(k=k, p=p, order=order, per_query=per_query, aggregate=aggregate)


# --------------------------------------------------------------------------------------------
# comparison table


# ranx's superscripts (ranx/data_structures/report.py); Unicode has no superscript q
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ۹ʳˢᵗᵘᵛʷˣʸᶻ"


@dataclass(frozen=True, eq=False)
class ComparisonResult:
    """The outcome of :func:`compare`.

    Attributes
    ----------
    systems : tuple of str
        In input order; letters ``a, b, ...`` in :meth:`table` follow it.
    measures : tuple of str
    baseline : str or None
        The system every other one was compared with, or None for all pairs.
    means : DataFrame
        One row per system x measure: ``system``, ``measure``, ``value`` (mean over the queries
        where the system's value is defined), ``n_valid``, ``n_queries``.
    pairs : DataFrame
        One row per compared pair x measure (measure-major): ``measure``, ``system_a``,
        ``system_b``, ``pair`` (``"a − b"``), ``mean_a``, ``mean_b`` (over the queries where
        both are defined), ``difference`` (``mean_a - mean_b``), ``ci_low``, ``ci_high``
        (bootstrap interval of the difference), ``p_value`` (randomization test),
        ``p_adjusted`` (across every row of this frame), ``significant`` (bool,
        ``p_adjusted <= alpha``), ``n_queries``, ``n_dropped`` (int).
    settings : dict
        ``n_resamples``, ``confidence``, ``alpha``, ``correction``, ``ci_method``, ``seed``,
        ``n_comparisons``.
    """

    systems: tuple[str, ...]
    measures: tuple[str, ...]
    baseline: str | None
    means: pd.DataFrame
    pairs: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def means_wide(self) -> pd.DataFrame:
        """Means, index ``system`` (input order), one column per measure."""
        wide = self.means.pivot(index="system", columns="measure", values="value")
        wide = wide.loc[list(self.systems), list(self.measures)]
        wide.columns.name = None
        return wide

    def table(self, digits: int = 4, markers: bool = True) -> pd.DataFrame:
        """A display table like ranx's ``compare`` report.

        Each cell is a system's mean, followed by the superscript letters of the systems it is
        significantly better than (adjusted p <= alpha and a positive difference) among the
        pairs compared.

        Parameters
        ----------
        digits : int, default 4
        markers : bool, default True
            False leaves the superscripts out.

        Returns
        -------
        DataFrame
            Columns ``#`` (letter), ``system``, then one str column per measure.

        Raises
        ------
        InputError
            If ``markers`` is set and there are more than 26 systems.
        """
        if markers and len(self.systems) > len(_LETTERS):
            raise InputError(f"at most {len(_LETTERS)} systems can be lettered")
        letter = {s: i for i, s in enumerate(self.systems)}
        better: dict[tuple[str, str], list[int]] = {}
        sig = self.pairs[self.pairs["significant"]]
        for row in sig.itertuples(index=False):
            winner, loser = (
                (row.system_a, row.system_b) if row.difference > 0 else (row.system_b, row.system_a)
            )
            if row.difference != 0:
                better.setdefault((winner, row.measure), []).append(letter[loser])
        means = self.means_wide()
        out: dict[str, list[str]] = {
            "#": [_LETTERS[i % 26] for i in range(len(self.systems))],
            "system": list(self.systems),
        }
        for m in self.measures:
            cells = []
            for s in self.systems:
                sup = ""
                if markers:
                    sup = "".join(_SUPERSCRIPTS[j] for j in sorted(better.get((s, m), [])))
                cells.append(f"{means.loc[s, m]:.{digits}f}{sup}")
            out[m] = cells
        return pd.DataFrame(out)

    def chart(self, **kwargs: Any) -> alt.Chart:
        """:func:`ragnb.charts.comparison_chart` of :attr:`pairs`."""
        from ragnb.charts import comparison_chart

        return comparison_chart(self.pairs, **kwargs)


def _is_run(frame: pd.DataFrame) -> bool:
    return {"doc_id", "score"} <= set(frame.columns)


def _wide_values(
    name: str,
    values: Any,
    measures: list[str] | None,
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]] | None,
) -> pd.DataFrame:
    """One system's per-query values as a wide frame: index query_id (str), measure columns."""
    what = f"system {name!r}"
    if isinstance(values, pd.DataFrame) and _is_run(values):
        if qrels is None or measures is None:
            raise InputError(f"{what} is a run: pass qrels= and measures= to evaluate it")
        values = evaluate(qrels, values, measures)
    if isinstance(values, EvaluationResult):
        values = values.per_query
    if not isinstance(values, pd.DataFrame):
        raise InputError(
            f"{what}: expected a run, a per-query frame or an EvaluationResult, got "
            f"{type(values).__name__}"
        )
    if {"query_id", "measure", "value"} <= set(values.columns):
        long = values[["query_id", "measure", "value"]].copy()
        long["query_id"] = long["query_id"].astype(str)
        long["measure"] = long["measure"].astype(str)
        dup = long.duplicated(["query_id", "measure"])
        if dup.any():
            row = long[dup].iloc[0]
            raise InputError(
                f"{what} has several values of {row['measure']!r} for one query",
                query_id=row["query_id"],
            )
        wide = long.pivot(index="query_id", columns="measure", values="value")
        wide = wide[list(dict.fromkeys(long["measure"]))]
    else:
        wide = values.set_index("query_id") if "query_id" in values.columns else values.copy()
        wide.index = pd.Index([str(q) for q in wide.index], name="query_id")
        if wide.index.has_duplicates:
            qid = str(wide.index[wide.index.duplicated()][0])
            raise InputError(f"{what} has several rows for one query", query_id=qid)
    wide.columns = [str(c) for c in wide.columns]
    return wide


def compare(
    systems: Mapping[str, Any] | pd.DataFrame,
    measures: Iterable[str | Measure] | str | Measure | None = None,
    *,
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]] | None = None,
    baseline: str | None = None,
    system_column: str = "retriever",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    correction: Correction = "holm",
    ci_method: CIMethod = "percentile",
    seed: int | None = 0,
) -> ComparisonResult:
    """Compare several systems on several measures, like ranx's ``compare``, with intervals.

    For each measure and each compared pair (all pairs in input order, or each system against
    ``baseline``): the mean difference with its paired bootstrap interval
    (:func:`paired_bootstrap`) and the paired randomization p-value
    (:func:`randomization_test`); the p-values of every comparison made (pairs x measures) are
    then adjusted together (Holm by default).

    Parameters
    ----------
    systems : dict of str to (run DataFrame, per-query DataFrame or EvaluationResult), or DataFrame
        Each system's run (then ``qrels`` and ``measures`` are required and the run is evaluated
        with :func:`ragnb.evaluate.evaluate`) or per-query values: a long frame ``query_id,
        measure, value`` or a wide frame (index or column ``query_id``, one column per measure).
        A single DataFrame is a long per-query frame with a ``system_column`` naming the system,
        such as :attr:`ragnb.retrieval.study.Comparison.per_query`.
    measures : list of str or Measure, optional
        The measures to compare (aliases accepted). Default: every measure all systems share.
    qrels : DataFrame or dict, optional
        Needed when a system is given as a run.
    baseline : str, optional
        Compare each other system with this one (difference = system - baseline) instead of all
        pairs (difference = earlier - later in input order).
    system_column : str, default "retriever"
        The system column of a single long frame.
    n_resamples : int, default 10000
        B for the bootstrap and for the Monte Carlo randomization test (exact when
        ``2**n <= B``).
    confidence : float in (0, 1), default 0.95
        Of the bootstrap intervals.
    alpha : float in (0, 1), default 0.05
        Significance level applied to the adjusted p-values.
    correction : {"holm", "bonferroni", "none"}, default "holm"
    ci_method : {"percentile", "bca"}, default "percentile"
    seed : int or None, default 0
        The same seed serves every comparison.

    Returns
    -------
    ComparisonResult
        ``means``, the tidy ``pairs`` frame, ``table()`` (ranx-like display) and ``chart()``.

    Raises
    ------
    InputError
        With fewer than two systems, an unknown baseline or measure, runs without qrels,
        systems whose queries differ on a measure (naming the systems and queries), or a
        parameter out of range.

    References
    ----------
    Bassani, E. (2022). ranx: A blazing-fast Python library for ranking evaluation and
    comparison. ECIR (the comparison report). Holm (1979); Efron and Tibshirani (1993); see
    :func:`holm`, :func:`paired_bootstrap`, :func:`randomization_test`.

    Examples
    --------
    >>> per_query = pd.DataFrame({
    ...     "retriever": ["x"] * 4 + ["y"] * 4,
    ...     "query_id": ["q1", "q2", "q3", "q4"] * 2,
    ...     "measure": "P@1",
    ...     "value": [1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]})
    >>> res = compare(per_query)
    >>> row = res.pairs.iloc[0]     # x - y: differences 1, 0, 1, 0; mean 2/4
    >>> row["pair"], float(row["difference"]), float(row["p_value"])  # exact: 8 of 16 reach 2
    ('x − y', 0.5, 0.5)
    >>> res.table()["P@1"].tolist()
    ['0.7500', '0.2500']
    """
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_fraction(confidence, "confidence")
    alpha = _check_fraction(alpha, "alpha")
    if correction not in ("holm", "bonferroni", "none"):
        raise InputError(f"unknown correction {correction!r}; use 'holm', 'bonferroni' or 'none'")
    if ci_method not in ("percentile", "bca"):
        raise InputError(f"unknown interval method {ci_method!r}; use 'percentile' or 'bca'")

    if isinstance(measures, str | Measure):
        measures = [measures]
    requested = None if measures is None else list(measures)
    eval_measures = (
        None
        if requested is None
        else [m.name if isinstance(m, Measure) else str(m) for m in requested]
    )

    if isinstance(systems, pd.DataFrame):
        if system_column not in systems.columns:
            raise InputError(
                f"the per-query frame has no system column {system_column!r}; it has "
                f"{list(systems.columns)}",
                column=system_column,
            )
        items: list[tuple[str, Any]] = [
            (str(name), group.drop(columns=[system_column]))
            for name, group in systems.groupby(system_column, sort=False)
        ]
    elif isinstance(systems, Mapping):
        items = [(str(name), values) for name, values in systems.items()]
    else:
        raise InputError(f"systems must be a dict or a DataFrame, got {type(systems).__name__}")
    if len(items) < 2:
        raise InputError(f"need at least two systems to compare, got {len(items)}")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise InputError(f"system names repeat: {names}")
    tables = {n: _wide_values(n, v, eval_measures, qrels) for n, v in items}

    if eval_measures is None:
        shared = [m for m in tables[names[0]].columns if all(m in tables[n] for n in names)]
        if not shared:
            raise InputError("the systems share no measure")
        chosen = shared
    else:
        chosen = []
        for m in eval_measures:
            picked = {_pick_measure(list(tables[n].columns), m, f"system {n!r}") for n in names}
            chosen.append(picked.pop())
        chosen = list(dict.fromkeys(chosen))

    if baseline is not None:
        if baseline not in names:
            raise InputError(f"baseline {baseline!r} is not one of the systems {names}")
        pairs = [(n, baseline) for n in names if n != baseline]
    else:
        pairs = list(itertools.combinations(names, 2))

    mean_rows = []
    for m in chosen:
        for n in names:
            col = tables[n][m].astype("float64")
            mean_rows.append(
                (
                    n,
                    m,
                    float(col.mean()) if col.notna().any() else np.nan,
                    int(col.notna().sum()),
                    len(col),
                )
            )
    means = pd.DataFrame(mean_rows, columns=["system", "measure", "value", "n_valid", "n_queries"])

    rows = []
    for m in chosen:
        series = {n: _per_query_series(tables[n][m], None, f"system {n!r}") for n in names}
        for sa, sb in pairs:
            try:
                pair = _align(series[sa], series[sb], f"system {sa!r}", f"system {sb!r}")
            except InputError as err:
                raise InputError(f"{m}: {err.message}", query_id=err.query_id) from None
            boot = _bootstrap_result(pair, n_resamples, confidence, ci_method, seed)
            test = _randomization_result(pair, n_resamples, None, seed)
            rows.append(
                {
                    "measure": m,
                    "system_a": sa,
                    "system_b": sb,
                    "pair": f"{sa} − {sb}",
                    "mean_a": boot.mean_a,
                    "mean_b": boot.mean_b,
                    "difference": boot.difference,
                    "ci_low": boot.low,
                    "ci_high": boot.high,
                    "p_value": test.p_value,
                    "n_queries": boot.n_queries,
                    "n_dropped": boot.n_dropped,
                }
            )
    table = pd.DataFrame(rows)
    table.insert(
        table.columns.get_loc("p_value") + 1,
        "p_adjusted",
        adjust_p_values(table["p_value"].to_numpy(), correction),
    )
    table.insert(
        table.columns.get_loc("p_adjusted") + 1, "significant", table["p_adjusted"] <= alpha
    )
    for col in ("n_queries", "n_dropped"):
        table[col] = table[col].astype(np.int64)
    settings = {
        "n_resamples": n_resamples,
        "confidence": confidence,
        "alpha": alpha,
        "correction": correction,
        "ci_method": ci_method,
        "seed": seed,
        "n_comparisons": len(table),
    }
    return ComparisonResult(
        systems=tuple(names),
        measures=tuple(chosen),
        baseline=baseline,
        means=means,
        pairs=table,
        settings=settings,
    )
