"""Agreement between two raters' grades of the same items, with bootstrap confidence intervals.

Inter-rater statistics on aligned arrays (e.g. human labels and an LLM judge's grades of the same
(query, document) pairs, as :func:`ragnb.judge.calibration.calibrate` compares them):

- the confusion matrix (:func:`confusion_matrix`);
- Cohen's kappa, unweighted and weighted (linear, quadratic) [1]_ (:func:`weighted_kappa`);
- Krippendorff's alpha for two coders without missing values, nominal, ordinal or interval [2]_
  (:func:`krippendorff_alpha`), and among any number of coders with missing values
  (:func:`krippendorff_alpha_coders`);
- percentile bootstrap intervals [3]_ of all of them, resampling pairs or whole queries
  (:func:`agreement_intervals`);
- the judge's bias per human grade (:func:`judge_bias`);
- Kendall's tau-b between two rankings of systems [4]_ (:func:`kendall_tau`) and its bootstrap
  interval over queries (:func:`tau_interval`).

Each statistic is computed from a count table (human grade by judge grade), so a bootstrap
resample is a table of counts too: ``n_boot`` resamples cost one matrix product.

References
----------
.. [1] J. Cohen, "A coefficient of agreement for nominal scales", Educational and Psychological
   Measurement 20(1), 1960; "Weighted kappa: nominal scale agreement with provision for scaled
   disagreement or partial credit", Psychological Bulletin 70(4), 1968.
.. [2] K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", University of Pennsylvania,
   2011 (https://repository.upenn.edu/asc_papers/43): the coincidence matrix, ``alpha = 1 -
   D_o / D_e`` and the nominal, ordinal and interval difference functions.
.. [3] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", Chapman & Hall, 1993,
   Chapter 13 (the percentile interval).
.. [4] M. G. Kendall, "A new measure of rank correlation", Biometrika 30, 1938; tau-b for ties:
   Kendall, "The treatment of ties in ranking problems", Biometrika 33, 1945.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ragnb.core.docstrings import doc_filler
from ragnb.core.validation import check_int_at_least, check_number_in
from ragnb.errors import InputError

__all__ = [
    "STATISTICS",
    "KendallTau",
    "TauInterval",
    "agreement_intervals",
    "check_bootstrap",
    "confusion_matrix",
    "grade_categories",
    "judge_bias",
    "kendall_tau",
    "krippendorff_alpha",
    "krippendorff_alpha_coders",
    "percentile_interval",
    "resampled_sums",
    "tau_interval",
    "weighted_kappa",
]

#: numpydoc entries of the percentile bootstrap over queries of Kendall's tau, shared word for word
#: by :func:`tau_interval` and :func:`ragnb.judge.calibration.system_tau_interval` (which
#: passes them on); :func:`fill_tau_doc` expands them (:func:`ragnb.core.docstrings.doc_filler`).
TAU_BOOTSTRAP_ENTRIES: dict[str, str] = {
    "n_boot": "n_boot : int >= 0, default 1000",
    "seed": "seed : int or None, default 0",
    "ci": "ci : float in (0, 1), default 0.95",
}
fill_tau_doc = doc_filler(TAU_BOOTSTRAP_ENTRIES)

Weights = Literal["none", "linear", "quadratic"]
Level = Literal["nominal", "ordinal", "interval"]

#: The statistics of :func:`agreement_intervals`, in its row order.
STATISTICS = (
    "exact agreement",
    "within one grade",
    "kappa",
    "kappa (linear)",
    "kappa (quadratic)",
    "alpha (nominal)",
    "alpha (ordinal)",
    "alpha (interval)",
)
_LEVELS = ("nominal", "ordinal", "interval")
# resampled count tables held at once: block rows x units (bounds the multiplicity matrix)
_BLOCK = 2_000_000


def _labels(values: Sequence[Any] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{what} must be a 1-d sequence of grades")
    try:
        out = arr.astype(np.int64)
    except (TypeError, ValueError):
        raise InputError(f"{what} holds a value that is not an integer grade") from None
    if not np.array_equal(out, arr.astype(np.float64)):
        raise InputError(f"{what} holds a value that is not an integer grade")
    return out


def grade_categories(a: np.ndarray, b: np.ndarray, labels: Sequence[int] | None) -> list[int]:
    """The grades two raters' labels are counted over: ``labels`` when given (checked to hold
    every grade of ``a`` and ``b``), else the grades that occur, sorted.

    Raises
    ------
    InputError
        When ``labels`` repeats a grade or misses one of ``a`` or ``b``.
    """
    if labels is None:
        return sorted(set(a.tolist()) | set(b.tolist()))
    cats = [int(x) for x in labels]
    if len(set(cats)) != len(cats):
        raise InputError(f"labels repeat a grade: {cats}")
    missing = sorted((set(a.tolist()) | set(b.tolist())) - set(cats))
    if missing:
        raise InputError(f"grades {missing} are not among labels {cats}")
    return cats


def _counts(a: np.ndarray, b: np.ndarray, cats: list[int]) -> np.ndarray:
    index = {c: i for i, c in enumerate(cats)}
    counts = np.zeros((len(cats), len(cats)), dtype=np.int64)
    np.add.at(counts, ([index[x] for x in a.tolist()], [index[x] for x in b.tolist()]), 1)
    return counts


def weighted_kappa(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    weights: Weights = "linear",
    labels: Sequence[int] | None = None,
) -> float:
    """Cohen's kappa between two raters' grades of the same items, optionally weighted.

    ``kappa_w = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij`` where ``O`` is the table of observed
    proportions (rater a's grade by rater b's), ``E_ij = O_i. O_.j`` the table expected by chance
    from the marginals, and the disagreement weights ``w_ij`` are, with ``i, j`` the positions of
    the grades in ``labels`` and ``k`` their number: ``1 - [i == j]`` (``"none"``: Cohen 1960),
    ``|i - j| / (k - 1)`` (``"linear"``) or ``(i - j)**2 / (k - 1)**2`` (``"quadratic"``).

    Parameters
    ----------
    a, b : sequence of int, length n
        The two raters' grades, aligned (e.g. human labels and judge grades of the same pairs).
    weights : {"none", "linear", "quadratic"}, default "linear"
    labels : sequence of int, optional
        The grade scale, in order. Default: the grades that occur. Pass the full scale (e.g.
        ``range(1, 6)``) so that a grade nobody used still counts in the distances, as
        scikit-learn's ``cohen_kappa_score(labels=...)``.

    Returns
    -------
    float in [-1, 1]
        1: perfect agreement; 0: what chance gives; NaN when chance alone explains everything
        (``sum w E = 0``: both raters used a single grade) or there are no items.

    Raises
    ------
    InputError
        Different lengths, grades that are not integers or not in ``labels``, unknown weights.

    References
    ----------
    .. [1] J. Cohen, "A coefficient of agreement for nominal scales", 1960; "Weighted kappa",
       Psychological Bulletin 70(4), 1968.

    Examples
    --------
    Six pairs on a 0-2 scale; observed (human, judge): (0,0) (0,1) (1,1) (1,1) (2,2) (2,0). Human
    marginals 2/2/2, judge 2/3/1 (sixths). Linear: disagreement observed ``(0.5 + 1) / 6`` against
    ``15/36`` by chance, kappa = 1 - 9/15 = 0.4; quadratic: ``(0.25 + 1) / 6`` against ``10.5/36``,
    kappa = 2/7; unweighted: (4/6 - 1/3) / (1 - 1/3) = 0.5.

    >>> h, j = [0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]
    >>> [round(weighted_kappa(h, j, weights=w), 4) for w in ("linear", "quadratic", "none")]
    [0.4, 0.2857, 0.5]
    """
    if weights not in ("none", "linear", "quadratic"):
        raise InputError(f"weights must be 'none', 'linear' or 'quadratic', got {weights!r}")
    x, y = _labels(a, "a"), _labels(b, "b")
    if x.size != y.size:
        raise InputError(f"a has {x.size} grades, b has {y.size}: they must be aligned")
    if x.size == 0:
        return math.nan
    cats = grade_categories(x, y, labels)
    k = len(cats)
    observed = _counts(x, y, cats) / x.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    if weights == "none" or k < 2:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j) / (k - 1)
    else:
        w = ((i - j) / (k - 1)) ** 2
    chance = float((w * expected).sum())
    if chance <= 0:
        return math.nan
    return 1.0 - float((w * observed).sum()) / chance


def confusion_matrix(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    labels: Sequence[int] | None = None,
    names: tuple[str, str] = ("human", "judge"),
) -> pd.DataFrame:
    """The confusion matrix of two raters' grades, as a tidy frame.

    Parameters
    ----------
    a, b : sequence of int, length n
        Aligned grades (rows: ``a``, columns: ``b``).
    labels : sequence of int, optional
        The grades to list (default: those that occur); every combination gets a row.
    names : (str, str), default ("human", "judge")
        Column names of the two raters.

    Returns
    -------
    DataFrame
        One row per (a grade, b grade) combination: ``<names[0]>``, ``<names[1]>`` (int),
        ``count`` (int), ``share`` (float in [0, 1], count / n; NaN when n = 0). Pivot it for the
        square form: ``frame.pivot(index="human", columns="judge", values="count")``.

    Examples
    --------
    >>> m = confusion_matrix([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0])
    >>> m.pivot(index="human", columns="judge", values="count").to_numpy().tolist()
    [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    """
    x, y = _labels(a, "a"), _labels(b, "b")
    if x.size != y.size:
        raise InputError(f"a has {x.size} grades, b has {y.size}: they must be aligned")
    cats = grade_categories(x, y, labels)
    counts = _counts(x, y, cats)
    ia, ib = np.indices(counts.shape)
    n = counts.sum()
    return pd.DataFrame(
        {
            names[0]: np.asarray(cats, dtype=np.int64)[ia.ravel()],
            names[1]: np.asarray(cats, dtype=np.int64)[ib.ravel()],
            "count": counts.ravel(),
            "share": counts.ravel() / n if n else np.full(counts.size, np.nan),
        }
    )


@dataclass(frozen=True)
class KendallTau:
    """Kendall's tau-b between two rankings of the same systems.

    Attributes
    ----------
    tau : float in [-1, 1]
        NaN with fewer than two systems or when one ranking is all ties.
    p_value : float
        Two-sided, scipy's (exact for small samples without ties).
    n : int
        Systems compared.
    """

    tau: float
    p_value: float
    n: int


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> KendallTau:
    """Kendall's tau-b between two score vectors of the same systems (scipy.stats.kendalltau).

    ``tau_b = (C - D) / sqrt((C + D + T_x) (C + D + T_y))`` with ``C``, ``D`` the concordant and
    discordant pairs and ``T_x``, ``T_y`` the pairs tied only in x or only in y.

    Examples
    --------
    Four systems; only the pair (3rd, 4th) is ordered differently: (5 - 1) / 6.

    >>> round(kendall_tau([0.5, 0.4, 0.3, 0.2], [0.45, 0.42, 0.1, 0.3]).tau, 4)
    0.6667
    """
    from scipy.stats import kendalltau

    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"x and y must be aligned 1-d vectors, got shapes {a.shape}, {b.shape}")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return KendallTau(math.nan, math.nan, int(a.size))
    res = kendalltau(a, b)
    return KendallTau(float(res.statistic), float(res.pvalue), int(a.size))


# ----------------------------------------------------------------------------- count-table kernels
# Every kernel takes count tables of shape (..., k, k) (rows: rater a's grade, columns: rater b's,
# in the order of the categories) and returns one value per table, shape (...).


def _kappa_weights(k: int, weights: str) -> np.ndarray:
    i, j = np.indices((k, k))
    if weights == "none" or k < 2:
        return (i != j).astype(np.float64)
    if weights == "linear":
        return np.abs(i - j) / (k - 1)
    return ((i - j) / (k - 1)) ** 2


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(den), np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _kappa_counts(counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cohen's weighted kappa of each table: ``1 - sum w O / sum w E``, NaN when ``sum w E = 0``."""
    n = counts.sum(axis=(-2, -1))
    observed = (w * counts).sum(axis=(-2, -1))
    chance = np.einsum("...i,ij,...j->...", counts.sum(axis=-1), w, counts.sum(axis=-2))
    # observed / n over chance / n**2
    return 1.0 - _ratio(observed * n, chance)


def _delta(marginals: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's squared difference ``delta^2_ck`` between categories, shape (..., k, k).

    nominal: ``[c != k]``; interval: ``(c - k)**2``; ordinal: ``(sum_{g=c}^{k} n_g - (n_c +
    n_k) / 2)**2`` with ``n_g`` the coincidence marginals (Krippendorff 2011, Section E).
    """
    k = values.size
    i, j = np.indices((k, k))
    if level == "nominal":
        return np.broadcast_to((i != j).astype(np.float64), (*marginals.shape[:-1], k, k))
    if level == "interval":
        d = (values[:, None] - values[None, :]) ** 2
        return np.broadcast_to(d, (*marginals.shape[:-1], k, k))
    cum = np.cumsum(marginals, axis=-1)
    # sum of n_g for g from c to k (c <= k), mirrored below the diagonal
    upper = cum[..., None, :] - cum[..., :, None] + marginals[..., :, None]
    between = np.where(i <= j, upper, np.swapaxes(upper, -1, -2))
    half = (marginals[..., :, None] + marginals[..., None, :]) / 2
    return (between - half) ** 2


def _alpha_counts(counts: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's alpha of each table of two coders: ``1 - (n - 1) sum o delta / sum n_c
    n_k delta`` with the coincidences ``o = counts + counts.T`` (each unit holds two values, so
    it adds one to ``o_ck`` and one to ``o_kc``) and ``n = 2 N``."""
    return _alpha_coincidences(counts + np.swapaxes(counts, -1, -2), values, level)


def _alpha_coincidences(o: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's alpha of each coincidence matrix ``o`` (shape (..., k, k)): ``1 - (n - 1)
    sum o delta / sum n_c n_k delta``, ``n_c`` its marginals, ``n`` their sum (Krippendorff 2011,
    Section C)."""
    marg = o.sum(axis=-1)
    n = marg.sum(axis=-1)
    d = _delta(marg, values, level)
    observed = (o * d).sum(axis=(-2, -1))
    expected = np.einsum("...i,...ij,...j->...", marg, d, marg)
    return 1.0 - _ratio((n - 1) * observed, expected)


def _all_statistics(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The :data:`STATISTICS` of each table, shape (..., len(STATISTICS))."""
    k = values.size
    n = counts.sum(axis=(-2, -1))
    near = (np.abs(values[:, None] - values[None, :]) <= 1).astype(np.float64)
    out = [
        _ratio(np.trace(counts, axis1=-2, axis2=-1), n),
        _ratio((near * counts).sum(axis=(-2, -1)), n),
        *(_kappa_counts(counts, _kappa_weights(k, w)) for w in ("none", "linear", "quadratic")),
        *(_alpha_counts(counts, values, level) for level in _LEVELS),
    ]
    return np.stack(out, axis=-1)


def resampled_sums(
    tables: np.ndarray, n_boot: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Sums of ``tables`` over ``n_boot`` bootstrap resamples of its rows, block by block.

    A resample draws G rows of ``tables`` with replacement; its sum is its multiplicities times
    the tables, so a block of resamples costs one matrix product (the cluster bootstrap of
    statistics that are functions of per-unit sums: count tables, moments).

    Parameters
    ----------
    tables : ndarray of shape (G, m)
        One row of sums per resampling unit (query).
    n_boot : int >= 0
        Resamples.
    rng : numpy.random.Generator

    Yields
    ------
    ndarray of shape (b, m)
        The summed rows of ``b`` resamples; the blocks' ``b`` add up to ``n_boot`` (at most
        about two million multiplicities are held at once).

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 6
       (the bootstrap of a statistic) and Section 8.4 (resampling whole clusters).
    """
    g = tables.shape[0]
    rows = max(1, _BLOCK // g)
    for start in range(0, n_boot, rows):
        b = min(n_boot, start + rows) - start
        draws = rng.integers(0, g, size=(b, g)) + (np.arange(b) * g)[:, None]
        mult = np.bincount(draws.ravel(), minlength=b * g).reshape(b, g)
        yield mult @ tables


def percentile_interval(boot: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The percentile bootstrap interval of each column of ``boot``, NaN resamples left out.

    Parameters
    ----------
    boot : ndarray of shape (B, s)
        ``B`` resampled values of ``s`` statistics (NaN: undefined on that resample).
    ci : float in (0, 1)
        Nominal coverage.

    Returns
    -------
    low, high : ndarray of shape (s,)
        The ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles (NaN when no resample defines it).
    valid : ndarray of shape (s,)
        Resamples that define each statistic.

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13.
    """
    tail = (1.0 - ci) / 2
    valid = (~np.isnan(boot)).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        low, high = np.nanquantile(boot, [tail, 1.0 - tail], axis=0)
    return np.atleast_1d(low), np.atleast_1d(high), np.atleast_1d(valid)


def check_bootstrap(n_boot: Any, ci: Any, seed: Any) -> None:
    """Check a percentile bootstrap's settings: ``n_boot`` an int >= 0, ``ci`` strictly in
    (0, 1), ``seed`` an int or None.

    Raises
    ------
    InputError
        Naming the setting that is wrong.
    """
    check_int_at_least(n_boot, "n_boot", 0)
    check_number_in(ci, "ci", 0.0, 1.0)
    if not 0 < ci < 1:
        raise InputError(f"ci must lie strictly between 0 and 1, got {ci!r}", column="ci")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise InputError(f"seed must be an integer or None, got {seed!r}", column="seed")


def _aligned(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = _labels(a, "a"), _labels(b, "b")
    if x.size != y.size:
        raise InputError(f"a has {x.size} grades, b has {y.size}: they must be aligned")
    return x, y


# ----------------------------------------------------------------------------- Krippendorff's alpha


def krippendorff_alpha(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    level: Level = "interval",
) -> float:
    """Krippendorff's alpha between two coders who both graded every item (no missing values).

    Each item (unit) holds two values, one per coder; it adds one to the coincidences ``o_ck``
    and ``o_kc`` of its pair of grades (``o_cc`` twice when they agree). With ``n_c`` the
    coincidence marginals and ``n = 2 N`` the values paired::

        alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck

    where the squared difference ``delta_ck`` is ``[c != k]`` (``"nominal"``), ``(c - k)**2``
    (``"interval"``, on the grades' values) or ``(sum_{g=c}^{k} n_g - (n_c + n_k) / 2)**2``
    (``"ordinal"``: only the order of the grades and how often each is used count). Unlike
    Cohen's kappa, chance comes from the pooled values of both coders, not from each coder's own
    marginals, so a judge's systematic bias lowers alpha more than kappa.

    Parameters
    ----------
    a, b : sequence of int, length N
        The two coders' grades of the same items, aligned (e.g. human labels, judge grades).
    level : {"interval", "ordinal", "nominal"}, default "interval"
        The level of measurement, which picks the difference function.

    Returns
    -------
    float, at most 1
        1: perfect agreement; 0: agreement at chance; negative: systematic disagreement. NaN
        when there are no items or only one grade occurs at all (``D_e = 0``). Grades of the
        scale nobody used change nothing.

    Raises
    ------
    InputError
        Different lengths, grades that are not integers, unknown level.

    References
    ----------
    .. [1] K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011: Section A (two
       observers, binary data, no missing values), Section C (coincidences), Section E (the
       difference functions).

    Examples
    --------
    Krippendorff's (2011, Section A) ten units and two observers: ``o_00 = 10``, ``o_01 = o_10 =
    4``, ``o_11 = 2``, so ``n_0 = 14``, ``n_1 = 6`` and alpha = 1 - 19 * 4 / (14 * 6) = 0.095.

    >>> a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    >>> b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    >>> round(krippendorff_alpha(a, b, level="nominal"), 3)
    0.095

    Two items graded (1, 2) and (3, 3): ``n_1 = n_2 = 1``, ``n_3 = 2``, ``n = 4``; interval:
    observed ``2 * 1``, expected ``2 * (1*1*1 + 1*2*4 + 1*2*1) = 22``, alpha = 1 - 3 * 2 / 22.

    >>> round(krippendorff_alpha([1, 3], [2, 3]), 4), round(1 - 6 / 22, 4)
    (0.7273, 0.7273)
    """
    if level not in _LEVELS:
        raise InputError(f"level must be 'interval', 'ordinal' or 'nominal', got {level!r}")
    x, y = _aligned(a, b)
    if x.size == 0:
        return math.nan
    cats = grade_categories(x, y, None)
    counts = _counts(x, y, cats).astype(np.float64)
    return float(_alpha_counts(counts, np.asarray(cats, dtype=np.float64), level))


def krippendorff_alpha_coders(
    ratings: Sequence[Sequence[float]] | np.ndarray, *, level: Level = "interval"
) -> float:
    """Krippendorff's alpha among any number of coders, with missing values.

    Each item (unit) ``u`` holds the ``m_u`` values its coders gave (NaN: no value). A unit with
    ``m_u >= 2`` adds ``(number of ordered pairs of its values graded c, k) / (m_u - 1)`` to the
    coincidence ``o_ck``; units with fewer values are not pairable and left out. Then, as for
    two coders (:func:`krippendorff_alpha`, to which this reduces when every unit has exactly
    two values)::

        alpha = 1 - (n - 1) sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck

    with ``n_c`` the coincidence marginals and ``n`` the pairable values.

    Parameters
    ----------
    ratings : array-like of shape (n_items, n_coders)
        Integer grades, NaN where a coder gave none (e.g. the grades of one judge sampled
        ``n_coders`` times, an invalid answer as NaN).
    level : {"interval", "ordinal", "nominal"}, default "interval"

    Returns
    -------
    float, at most 1
        1: the coders always agree; 0: agreement at chance. NaN when no unit is pairable or one
        grade alone occurs.

    Raises
    ------
    InputError
        Not a 2-d array, a value that is neither an integer nor NaN, an unknown level.

    References
    ----------
    .. [1] K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011, Section C (any
       number of observers, missing values: the coincidences ``o_ck = sum_u (pairs c-k in u) /
       (m_u - 1)``) and Section E (the difference functions).

    Examples
    --------
    Three coders, four items, two values missing; the item graded by one coder alone is not
    pairable. The coincidences are ``o_11 = 6 / 2``, ``o_22 = o_23 = o_32 = 2 / 2``, ``o_33 =
    6 / 2``, so ``n_1 = 3``, ``n_2 = 2``, ``n_3 = 4``, ``n = 9`` and (nominal) alpha = 1 - 8 *
    2 / (81 - 9 - 4 - 16):

    >>> import numpy as np
    >>> r = [[1, 1, 1], [2, 2, 3], [3, 3, 3], [1, np.nan, np.nan]]
    >>> round(krippendorff_alpha_coders(r, level="nominal"), 4), round(1 - 16 / 52, 4)
    (0.6923, 0.6923)

    Two coders without missing values: the two-coder alpha.

    >>> round(krippendorff_alpha_coders([[1, 2], [3, 3]]), 4)
    0.7273
    """
    if level not in _LEVELS:
        raise InputError(f"level must be 'interval', 'ordinal' or 'nominal', got {level!r}")
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2:
        raise InputError(f"ratings must be a 2-d array (items, coders), got {r.ndim} dimensions")
    seen = r[~np.isnan(r)]
    if not np.array_equal(seen, np.round(seen)):
        raise InputError("ratings hold a value that is neither an integer grade nor NaN")
    cats = np.unique(seen)
    if cats.size == 0:
        return math.nan
    # per unit: how many of its values are each grade, shape (n_items, k)
    per_unit = (r[:, :, None] == cats[None, None, :]).sum(axis=1).astype(np.float64)
    m = per_unit.sum(axis=1)
    keep = m >= 2
    if not keep.any():
        return math.nan
    n_u, m = per_unit[keep], m[keep]
    pairs = n_u[:, :, None] * n_u[:, None, :] - np.einsum("uc,ck->uck", n_u, np.eye(cats.size))
    o = (pairs / (m - 1)[:, None, None]).sum(axis=0)
    return float(_alpha_coincidences(o, cats, level))


# ----------------------------------------------------------------------------- bootstrap intervals


def agreement_intervals(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    labels: Sequence[int] | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Agreement statistics with percentile bootstrap confidence intervals.

    Each of ``n_boot`` resamples draws, with replacement, as many units as there are: the pairs
    themselves (``groups=None``) or, when ``groups`` gives each pair's query, whole queries with
    all their pairs (a cluster bootstrap: the pairs of one query share its difficulty and are not
    independent, so resampling them one by one makes intervals too narrow). Every statistic is
    recomputed on each resample; the interval is the ``(1 - ci) / 2`` and ``(1 + ci) / 2``
    quantiles of the resampled values (the percentile method, Efron and Tibshirani 1993, Chapter
    13), resamples where a statistic is undefined (NaN) left out.

    Parameters
    ----------
    a, b : sequence of int, length n
        Aligned grades (e.g. human labels and judge grades of the same pairs).
    groups : sequence, length n, optional
        The unit each pair belongs to (query ids): resample these instead of pairs.
    labels : sequence of int, optional
        The grade scale for the kappas' distances (see :func:`weighted_kappa`).
    n_boot : int >= 0, default 1000
        Resamples; 0 gives the point estimates with NaN intervals.
    seed : int or None, default 0
        Seed of ``numpy.random.default_rng``: the same inputs and seed give the same intervals.
    ci : float in (0, 1), default 0.95
        Nominal coverage.

    Returns
    -------
    DataFrame
        One row per statistic of :data:`STATISTICS` (``exact agreement``, ``within one grade``,
        ``kappa``, ``kappa (linear)``, ``kappa (quadratic)``, ``alpha (nominal)``, ``alpha
        (ordinal)``, ``alpha (interval)``): ``statistic``, ``value`` (the point estimate, as
        :func:`weighted_kappa` and :func:`krippendorff_alpha` give it), ``low``, ``high`` (float,
        the interval; NaN with ``n_boot=0`` or when no resample defines it), ``ci``, ``n_boot``
        (int, the resamples where the statistic is defined), ``resampled`` (``"pairs"`` or
        ``"queries"``), ``n_units`` (int, pairs or queries).

    Raises
    ------
    InputError
        No pairs, misaligned inputs or groups, grades that are not integers or not in ``labels``,
        ``n_boot < 0``, ``ci`` not in (0, 1).

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13.
    .. [2] J. Cohen, Psychological Bulletin 70(4), 1968; K. Krippendorff, "Computing
       Krippendorff's Alpha-Reliability", 2011.

    Examples
    --------
    >>> iv = agreement_intervals([0, 0, 1, 1, 2, 2] * 5, [0, 1, 1, 1, 2, 0] * 5, n_boot=200)
    >>> row = iv.set_index("statistic").loc["kappa (linear)"]
    >>> round(float(row["value"]), 4), bool(row["low"] <= row["value"] <= row["high"])
    (0.4, True)
    """
    x, y = _aligned(a, b)
    if x.size == 0:
        raise InputError("agreement_intervals needs at least one pair")
    check_bootstrap(n_boot, ci, seed)
    cats = grade_categories(x, y, labels)
    k = len(cats)
    pos = {c: i for i, c in enumerate(cats)}
    cell = np.fromiter((pos[v] for v in x.tolist()), np.int64, x.size) * k + np.fromiter(
        (pos[v] for v in y.tolist()), np.int64, y.size
    )
    if groups is None:
        codes, unit = np.arange(x.size), "pairs"
    else:
        g = np.asarray(groups, dtype=object)
        if g.shape != x.shape:
            raise InputError(f"groups has {g.size} entries for {x.size} pairs: they must align")
        codes, unit = pd.factorize(pd.Series(g).astype(str), sort=True)[0], "queries"
    tables = np.zeros((int(codes.max()) + 1, k * k))
    np.add.at(tables, (codes, cell), 1.0)
    values = np.asarray(cats, dtype=np.float64)
    point = _all_statistics(tables.sum(axis=0).reshape(k, k), values)
    s = len(STATISTICS)
    low = high = np.full(s, np.nan)
    valid = np.zeros(s, dtype=np.int64)
    if n_boot:
        rng = np.random.default_rng(seed)
        boot = np.concatenate(
            [
                _all_statistics(block.reshape(-1, k, k), values)
                for block in resampled_sums(tables, n_boot, rng)
            ]
        )
        low, high, valid = percentile_interval(boot, ci)
    return pd.DataFrame(
        {
            "statistic": list(STATISTICS),
            "value": point,
            "low": low,
            "high": high,
            "ci": float(ci),
            "n_boot": valid.astype(np.int64),
            "resampled": unit,
            "n_units": len(tables),
        }
    )


# ----------------------------------------------------------------------------- bias per grade


def judge_bias(
    human: Sequence[int] | np.ndarray,
    judge: Sequence[int] | np.ndarray,
    *,
    labels: Sequence[int] | None = None,
) -> pd.DataFrame:
    """The judge's bias per human grade: how far, and how often, it grades above or below.

    Parameters
    ----------
    human, judge : sequence of int, length n
        Aligned grades of the same pairs.
    labels : sequence of int, optional
        Human grades to list (default: those that occur); a grade nobody gave gets ``n = 0`` and
        NaN.

    Returns
    -------
    DataFrame
        One row per human grade ``g``, ascending: ``human_grade`` (int), ``n`` (int, pairs the
        human graded ``g``), ``mean_judge`` (float, the judge's mean grade on them), ``bias``
        (``mean_judge - g``, grade units: > 0 the judge is lenient, < 0 strict),
        ``share_higher``, ``share_lower`` (float in [0, 1], pairs the judge graded above, below
        ``g``).

    Raises
    ------
    InputError
        Misaligned inputs, grades that are not integers or not in ``labels``.

    Examples
    --------
    A judge one grade too lenient except at the top of the scale:

    >>> judge_bias([0, 0, 1, 2], [1, 1, 2, 2])[["human_grade", "n", "bias", "share_higher"]]
       human_grade  n  bias  share_higher
    0            0  2   1.0           1.0
    1            1  1   1.0           1.0
    2            2  1   0.0           0.0
    """
    x, y = _aligned(human, judge)
    grades = sorted(set(x.tolist())) if labels is None else grade_categories(x, y, labels)
    rows = []
    for g in grades:
        on = y[x == g]
        if on.size:
            mean = float(on.mean())
            rows.append((g, on.size, mean, mean - g, np.mean(on > g), np.mean(on < g)))
        else:
            rows.append((g, 0, math.nan, math.nan, math.nan, math.nan))
    cols = ["human_grade", "n", "mean_judge", "bias", "share_higher", "share_lower"]
    frame = pd.DataFrame(rows, columns=cols)
    return frame.astype({"human_grade": np.int64, "n": np.int64})


# ---------------------------------------------------------------------- Kendall's tau interval


def _tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair of ``x``, ``y`` (shape (B, S)): ``sum sx sy / sqrt(#(sx
    != 0) #(sy != 0))`` over the system pairs, ``sx``, ``sy`` the signs of the differences. A
    system with a NaN in a row drops out of that row, as in :func:`kendall_tau`."""
    i, j = np.triu_indices(x.shape[-1], 1)
    dx, dy = x[..., j] - x[..., i], y[..., j] - y[..., i]
    keep = ~(np.isnan(dx) | np.isnan(dy))
    sx, sy = np.where(keep, np.sign(dx), 0.0), np.where(keep, np.sign(dy), 0.0)
    den = np.sqrt((sx != 0).sum(axis=-1) * (sy != 0).sum(axis=-1)).astype(np.float64)
    return _ratio((sx * sy).sum(axis=-1), den)


@dataclass(frozen=True)
class TauInterval:
    """Kendall's tau-b between two rankings of systems, with a bootstrap interval over queries.

    Attributes
    ----------
    tau : float in [-1, 1]
        On all queries (NaN as :func:`kendall_tau`).
    low, high : float in [-1, 1]
        Percentile interval (NaN with ``n_boot = 0`` or when no resample defines tau).
    ci : float in (0, 1)
    n_boot : int
        Resamples where tau is defined.
    n_queries, n_systems : int
    seed : int or None
    """

    tau: float
    low: float
    high: float
    ci: float
    n_boot: int
    n_queries: int
    n_systems: int
    seed: int | None


@fill_tau_doc
def tau_interval(
    human_values: np.ndarray | pd.DataFrame,
    judge_values: np.ndarray | pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> TauInterval:
    """Kendall's tau-b between the systems' mean scores under two label sets, with a percentile
    bootstrap interval that resamples queries.

    Each resample draws the queries with replacement, recomputes every system's mean under both
    label sets over the drawn queries (NaN values left out, as
    :func:`ragnb.evaluation.evaluate.evaluate`'s macro mean) and Kendall's tau-b between the two
    vectors of means.

    Parameters
    ----------
    human_values, judge_values : array or DataFrame of shape (n_queries, n_systems)
        Per-query values of a measure for each system under human labels and under judge
        grades, the same queries and systems in the same order (NaN: undefined for that query).
    {{n_boot, seed, ci}}

    Returns
    -------
    TauInterval

    Raises
    ------
    InputError
        Shapes differ or are not 2-d, no query, ``n_boot < 0``, ``ci`` not in (0, 1).

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13.
    .. [2] M. G. Kendall, Biometrika 33, 1945 (tau-b).

    Examples
    --------
    Three systems on two queries. On query 1 the judge ranks them as the human does; on query 2
    it swaps the first two, so a resample of query 2 twice gives tau = (2 - 1) / 3:

    >>> h = [[0.9, 0.5, 0.1], [0.8, 0.6, 0.2]]
    >>> j = [[0.8, 0.6, 0.2], [0.4, 0.5, 0.3]]
    >>> t = tau_interval(h, j, n_boot=200)
    >>> round(t.tau, 4), round(t.low, 4), round(t.high, 4), t.n_systems
    (1.0, 0.3333, 1.0, 3)
    """
    vh = np.asarray(human_values, dtype=np.float64)
    vj = np.asarray(judge_values, dtype=np.float64)
    if vh.ndim != 2 or vh.shape != vj.shape:
        raise InputError(
            f"human and judge values must be aligned (queries, systems) arrays, got shapes "
            f"{vh.shape} and {vj.shape}"
        )
    if vh.shape[0] == 0:
        raise InputError("tau_interval needs at least one query")
    check_bootstrap(n_boot, ci, seed)
    with np.errstate(invalid="ignore"):
        means_h, means_j = np.nanmean(vh, axis=0), np.nanmean(vj, axis=0)
    tau = kendall_tau(means_h, means_j).tau
    low = high = math.nan
    valid = 0
    if n_boot:
        # one table per query: [values under human, defined, values under judge, defined]
        tables = np.concatenate(
            [np.nan_to_num(vh), ~np.isnan(vh), np.nan_to_num(vj), ~np.isnan(vj)], axis=1
        )
        s = vh.shape[1]
        boot = []
        for block in resampled_sums(tables, n_boot, np.random.default_rng(seed)):
            h = _ratio(block[:, :s], block[:, s : 2 * s])
            j = _ratio(block[:, 2 * s : 3 * s], block[:, 3 * s :])
            boot.append(_tau_b_rows(h, j))
        lo, hi, va = percentile_interval(np.concatenate(boot)[:, None], ci)
        low, high, valid = float(lo[0]), float(hi[0]), int(va[0])
    return TauInterval(float(tau), low, high, float(ci), valid, vh.shape[0], vh.shape[1], seed)
