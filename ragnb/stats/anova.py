"""All systems at once: analysis of variance over systems and queries, and Tukey's honestly
significant difference, parametric and randomised.

Designs
-------
Per-query values of k systems on n queries, optionally R runs (seeds) per system:

``"one-way"``
    Systems as independent groups, queries ignored: ``y_is = mu + a_s + e_is``. The F test of
    ``scipy.stats.f_oneway``; Tukey-Kramer HSD on its within-group mean square, as
    ``scipy.stats.tukey_hsd`` and statsmodels' ``pairwise_tukeyhsd`` compute it. It wastes
    the pairing of IR experiments (every system answers the same queries) and is here for
    those equalities and for groups of unequal sizes.
``"repeated-measures"``
    One-way repeated-measures ANOVA: systems within queries, queries as blocks,
    ``y_qs = mu + a_s + b_q + e_qs``, the error being the system x query interaction, on
    ``(k - 1)(n - 1)`` degrees of freedom. Several runs per system are averaged per query first.
    statsmodels' ``AnovaRM(..., within=["system"], aggregate_func="mean")`` gives the same F.
``"two-way"``
    Systems x queries, both as factors. With one value per cell it is what Sakai calls the
    two-way ANOVA without replication: the same sums of squares and the same F for systems as
    ``"repeated-measures"``, plus the F for queries; the Tukey HSD on its residual mean square
    is Sakai's and Carterette's. With R >= 2 runs of every system (the same R), the runs are
    replicates nested in their system: ``y_sqr = mu + a_s + b_q + (ab)_sq + c_(s)r + e_sqr``,
    with queries, the interaction and the runs random. Systems are then tested against the
    variance a difference of system means really has, queries' interaction plus seeds:
    ``MS_sys x query + MS_run(sys) - MS_residual`` (each variance component floored at 0),
    a quasi-F with Satterthwaite's degrees of freedom; Tukey's HSD uses the same error. The
    sums of squares equal those of statsmodels' ``ols("y ~ C(system) * C(query) +
    C(system):C(run)")`` with ``anova_lm``.

References
----------
Carterette, B. (2012). Multiple testing in statistical analysis of systems-based information
retrieval experiments. ACM TOIS 30(1), article 4 (ANOVA over systems and topics, Tukey's HSD on
its residual, the randomised Tukey HSD). Sakai, T. (2014). Statistical reform in information
retrieval? SIGIR Forum 48(1), 3-12; Sakai, T. (2018). *Laboratory Experiments in Information
Retrieval*. Springer, chapters 3-4 (one-way ANOVA, two-way ANOVA without replication, Tukey
HSD). Tukey, J. W. (1953). The problem of multiple comparisons (the studentized range). Kramer,
C. Y. (1956). Biometrics 12(3), 307-310 (unequal group sizes). Satterthwaite, F. E. (1946).
Biometrics Bulletin 2(6), 110-114. Montgomery, D. C. (2017). *Design and Analysis of
Experiments*, 9th ed., sections 13.4-13.6 (approximate F tests, nested factors).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.stats.hierarchical import run_deviations, run_shifts
from ragnb.stats.paired import RESAMPLE_BLOCK, check_fraction, check_resamples

__all__ = [
    "DESIGNS",
    "AnovaResult",
    "Design",
    "anova",
    "randomized_tukey_hsd",
    "tukey_hsd",
]

Design = Literal["one-way", "repeated-measures", "two-way"]
#: The designs :func:`anova` and :func:`tukey_hsd` take.
DESIGNS: tuple[str, ...] = ("one-way", "repeated-measures", "two-way")
_TIE_TOLERANCE = 1e-9
_TABLE_COLUMNS = ["source", "ss", "df", "ms", "f", "p_value", "error"]

SystemValues: TypeAlias = pd.DataFrame | np.ndarray | Mapping[str, Any]


@dataclass(frozen=True, eq=False)
class AnovaResult:
    """An analysis of variance of systems (:func:`anova`).

    Attributes
    ----------
    design : {"one-way", "repeated-measures", "two-way"}
    systems : tuple of str
    table : DataFrame
        One row per source: ``source`` (``system``, ``query``, ``system:query``,
        ``run(system)``, ``residual``, as the design has them), ``ss``, ``df``, ``ms``, ``f``,
        ``p_value`` (NaN where the source is not tested), ``error`` (what its F divides by).
    f, p_value : float
        The test of "all systems have the same mean".
    df_systems, df_error : float
        Its degrees of freedom (``df_error`` is Satterthwaite's, not an integer, for the
        quasi-F of the two-way design with runs).
    error_ms : float
        The error mean square of a system mean: the variance of a difference of two system
        means is ``error_ms * (1/n_obs[a] + 1/n_obs[b])``; Tukey's HSD uses it.
    means : ndarray of shape (k,)
        Each system's mean over its queries (and runs).
    n_obs : ndarray of shape (k,)
        The values behind each mean: n (queries), n * R with runs, n_s per group (one-way).
    n_queries, n_runs, n_dropped : int
        Queries used; runs per system (1 when averaged or single); queries left out because a
        value was NaN.
    """

    design: str
    systems: tuple[str, ...]
    table: pd.DataFrame
    f: float
    p_value: float
    df_systems: float
    df_error: float
    error_ms: float
    means: np.ndarray
    n_obs: np.ndarray
    n_queries: int
    n_runs: int
    n_dropped: int


# --------------------------------------------------------------------------------------------
# input: each system's runs as a (n_runs, n_queries) array


def _as_matrix(name: str, value: Any) -> np.ndarray:
    """One system's values as float (n_runs, n_queries); infinite values are an error."""
    try:
        m = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"system {name!r} holds a value that is not a number") from None
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2 or m.shape[1] == 0:
        raise InputError(f"system {name!r} must have shape (n_queries,) or (n_runs, n_queries)")
    if np.isinf(m).any():
        raise InputError(f"system {name!r} holds an infinite value")
    return m


def system_runs(
    values: SystemValues, systems: Sequence[str] | None = None
) -> tuple[list[str], list[np.ndarray]]:
    """Names and per-system run matrices of what :func:`anova` accepts.

    Parameters
    ----------
    values : DataFrame, ndarray or dict
        A wide DataFrame (index queries, one column per system); an ndarray of shape
        (n_queries, n_systems), or (n_runs, n_queries, n_systems) for R runs of each; a dict
        ``{system: array of shape (n_queries,) or (n_runs, n_queries)}`` (the runs may differ
        in number between systems; for ``"one-way"`` the 1-D arrays may differ in length).
    systems : list of str, optional
        Names for an ndarray's systems (default ``s1, s2, ...``).

    Returns
    -------
    names : list of str
    runs : list of ndarray of shape (n_runs, n_queries)
        NaN kept (undefined values).

    Raises
    ------
    InputError
        On fewer than two systems, repeated names, a shape that is not one of the above, or a
        value that is not a finite number or NaN.
    """
    if isinstance(values, pd.DataFrame):
        names = [str(c) for c in values.columns]
        runs = [
            _as_matrix(n, values[c].to_numpy()) for n, c in zip(names, values.columns, strict=True)
        ]
    elif isinstance(values, Mapping):
        names = [str(k) for k in values]
        runs = [_as_matrix(n, v) for n, v in zip(names, values.values(), strict=True)]
    else:
        array = np.asarray(values, dtype=np.float64)
        if array.ndim not in (2, 3):
            raise InputError(
                "values must have shape (n_queries, n_systems) or (n_runs, n_queries, "
                f"n_systems), got {array.shape}"
            )
        cube = array if array.ndim == 3 else array[None]
        names = (
            list(systems) if systems is not None else [f"s{i + 1}" for i in range(cube.shape[2])]
        )
        if len(names) != cube.shape[2]:
            raise InputError(f"{len(names)} names for {cube.shape[2]} systems")
        runs = [_as_matrix(n, cube[:, :, i]) for i, n in enumerate(names)]
    if len(runs) < 2:
        raise InputError(f"need at least two systems, got {len(runs)}")
    if len(set(names)) != len(names):
        raise InputError(f"system names repeat: {names}")
    return names, runs


def _complete(names: list[str], runs: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """The runs on the queries where every run of every system has a value; queries dropped."""
    n = runs[0].shape[1]
    odd = [name for name, r in zip(names, runs, strict=True) if r.shape[1] != n]
    if odd:
        raise InputError(
            f"systems {odd} hold a number of queries other than {names[0]!r}'s {n}; pair the "
            "queries first (the one-way design takes groups of different sizes)"
        )
    keep = np.all([~np.isnan(r).any(axis=0) for r in runs], axis=0)
    if keep.sum() < 2:
        raise InputError(f"fewer than two queries have a value for every system ({n} queries)")
    return [r[:, keep] for r in runs], int((~keep).sum())


# --------------------------------------------------------------------------------------------
# the designs


def _f_p(f: float, df1: float, df2: float) -> float:
    from scipy import stats

    return float(stats.f.sf(f, df1, df2)) if np.isfinite(f) else float("nan")


def _row(source: str, ss: float, df: float, error: tuple[float, float, str] | None) -> dict:
    """A table row; ``error`` = (its mean square, its df, its name) when the source is tested."""
    ms = ss / df if df > 0 else float("nan")
    if error is None:
        return dict(zip(_TABLE_COLUMNS, [source, ss, df, ms, np.nan, np.nan, ""], strict=True))
    ems, edf, name = error
    f = ms / ems if ems > 0 else (np.inf if ms > 0 else np.nan)
    return dict(zip(_TABLE_COLUMNS, [source, ss, df, ms, f, _f_p(f, df, edf), name], strict=True))


def _one_way(names: list[str], runs: list[np.ndarray]) -> AnovaResult:
    """Independent groups: the run-averaged values of each system, NaN left out."""
    groups = [r.mean(axis=0) for r in runs]
    groups = [g[~np.isnan(g)] for g in groups]
    sizes = np.array([g.size for g in groups])
    if (sizes == 0).any() or sizes.sum() <= len(groups):
        raise InputError(
            "the one-way design needs a value in every group and more values than groups"
        )
    means = np.array([g.mean() for g in groups])
    grand = np.concatenate(groups).mean()
    ss_b = float((sizes * (means - grand) ** 2).sum())
    ss_w = float(sum(((g - g.mean()) ** 2).sum() for g in groups))
    k, total = len(groups), int(sizes.sum())
    ms_w = ss_w / (total - k)
    rows = [
        _row("system", ss_b, k - 1, (ms_w, total - k, "residual")),
        _row("residual", ss_w, total - k, None),
    ]
    return _result("one-way", names, rows, ms_w, total - k, means, sizes, int(sizes.max()), 1, 0)


def _blocked(names: list[str], runs: list[np.ndarray], design: str, dropped: int) -> AnovaResult:
    """Systems x queries, one value per cell (runs averaged): repeated measures or two-way."""
    y = np.stack([r.mean(axis=0) for r in runs], axis=1)  # (n, k)
    n, k = y.shape
    grand = y.mean()
    ss_s = n * float(((y.mean(axis=0) - grand) ** 2).sum())
    ss_q = k * float(((y.mean(axis=1) - grand) ** 2).sum())
    ss_e = max(0.0, float(((y - grand) ** 2).sum()) - ss_s - ss_q)
    df_e = (k - 1) * (n - 1)
    ms_e = ss_e / df_e
    error = (ms_e, df_e, "residual")
    rows = [
        _row("system", ss_s, k - 1, error),
        _row("query", ss_q, n - 1, error if design == "two-way" else None),
        _row("residual", ss_e, df_e, None),
    ]
    return _result(design, names, rows, ms_e, df_e, y.mean(axis=0), np.full(k, n), n, 1, dropped)


def _satterthwaite(terms: list[tuple[float, float, float]]) -> tuple[float, float]:
    """``sum(c * ms)`` and its Satterthwaite degrees of freedom, terms ``(c, ms, df)``."""
    value = sum(c * ms for c, ms, _ in terms)
    denominator = sum((c * ms) ** 2 / df for c, ms, df in terms)
    return value, (value**2 / denominator if denominator > 0 else float("inf"))


def _replicated(names: list[str], runs: list[np.ndarray], dropped: int) -> AnovaResult:
    """Systems x queries with R runs nested in each system (random queries and runs)."""
    y = np.stack(runs)  # (k, R, n)
    k, r, n = y.shape
    grand = y.mean()
    m_s = y.mean(axis=(1, 2))
    cell = y.mean(axis=1)  # (k, n)
    run = y.mean(axis=2)  # (k, R)
    q = y.mean(axis=(0, 1))  # (n,)
    ss_s = n * r * float(((m_s - grand) ** 2).sum())
    ss_q = k * r * float(((q - grand) ** 2).sum())
    ss_sq = r * float(((cell - m_s[:, None] - q[None, :] + grand) ** 2).sum())
    ss_run = n * float(((run - m_s[:, None]) ** 2).sum())
    resid = y - cell[:, None, :] - run[:, :, None] + m_s[:, None, None]
    ss_e = float((resid**2).sum())
    df_s, df_q, df_sq = k - 1, n - 1, (k - 1) * (n - 1)
    df_run, df_e = k * (r - 1), k * (r - 1) * (n - 1)
    ms_sq, ms_run, ms_e = ss_sq / df_sq, ss_run / df_run, ss_e / df_e
    # variance of a system mean x nR: the residual plus each component estimated above 0
    kept = [(1.0, ms, df) for ms, df in ((ms_sq, df_sq), (ms_run, df_run)) if ms > ms_e]
    c_e = 1.0 - len(kept)
    terms = kept + ([(c_e, ms_e, float(df_e))] if c_e else [])
    error_ms, error_df = _satterthwaite(terms)
    quasi = (error_ms, error_df, "system:query + run(system) - residual")
    rows = [
        _row("system", ss_s, df_s, quasi),
        _row("query", ss_q, df_q, (ms_sq, df_sq, "system:query")),
        _row("system:query", ss_sq, df_sq, (ms_e, df_e, "residual")),
        _row("run(system)", ss_run, df_run, (ms_e, df_e, "residual")),
        _row("residual", ss_e, df_e, None),
    ]
    return _result(
        "two-way", names, rows, error_ms, error_df, m_s, np.full(k, n * r), n, r, dropped
    )


def _result(
    design: str,
    names: list[str],
    rows: list[dict],
    error_ms: float,
    error_df: float,
    means: np.ndarray,
    n_obs: np.ndarray,
    n_queries: int,
    n_runs: int,
    dropped: int,
) -> AnovaResult:
    table = pd.DataFrame(rows, columns=_TABLE_COLUMNS)
    first = table.iloc[0]
    return AnovaResult(
        design=design,
        systems=tuple(names),
        table=table,
        f=float(first["f"]),
        p_value=float(first["p_value"]),
        df_systems=float(first["df"]),
        df_error=float(error_df),
        error_ms=float(error_ms),
        means=np.asarray(means, dtype=np.float64),
        n_obs=np.asarray(n_obs, dtype=np.float64),
        n_queries=int(n_queries),
        n_runs=int(n_runs),
        n_dropped=int(dropped),
    )


# --------------------------------------------------------------------------------------------
# public functions


def anova(
    values: SystemValues,
    *,
    design: Design = "repeated-measures",
    systems: Sequence[str] | None = None,
) -> AnovaResult:
    """Analysis of variance of k systems: is any system's mean different from the others'?

    Parameters
    ----------
    values : DataFrame, ndarray or dict
        Per-query values (unit of the measure) of each system, as :func:`system_runs` reads
        them: a wide frame (index queries, a column per system), an array (n_queries,
        n_systems) or (n_runs, n_queries, n_systems), or ``{system: (n_queries,) or (n_runs,
        n_queries)}``. NaN means undefined: ``"one-way"`` leaves the value out of its group, the
        other designs leave the query out for every system (``n_dropped``).
    design : {"repeated-measures", "two-way", "one-way"}, default "repeated-measures"
        See :mod:`ragnb.stats.anova`. ``"two-way"`` with several runs needs the same number of
        runs for every system; ``"repeated-measures"`` and ``"one-way"`` average the runs.
    systems : list of str, optional
        Names of an ndarray's systems.

    Returns
    -------
    AnovaResult
        ``f``, ``p_value``, the degrees of freedom, the ANOVA ``table`` and the error term
        Tukey's HSD uses.

    Raises
    ------
    InputError
        On an unknown design, fewer than two systems or two queries with a value for every
        system, systems whose queries differ in number (except ``"one-way"``), a
        ``"two-way"`` design with different numbers of runs, or a value that is not a number.

    References
    ----------
    See :mod:`ragnb.stats.anova`: Sakai (2018), chapter 3; Carterette (2012), section 3;
    Montgomery (2017), sections 13.4-13.6; Satterthwaite (1946).

    Examples
    --------
    Three systems on four queries; c is a plus 0.2 on every query, b differs from a by -+0.1.
    Means 0.35, 0.35, 0.55: SS_system = 4 (2 (0.0667)**2 + 0.1333**2) = 0.1067 on 2 df; the
    system x query residual holds only b's -+0.1 swings: SS = 0.0267 on 6 df. F = 0.0533 /
    0.00444 = 12:

    >>> y = np.array([[0.2, 0.3, 0.4], [0.5, 0.4, 0.7], [0.1, 0.2, 0.3], [0.6, 0.5, 0.8]])
    >>> res = anova(y, systems=["a", "b", "c"])
    >>> round(res.f, 4), res.df_systems, res.df_error
    (12.0, 2.0, 6.0)
    """
    if design not in DESIGNS:
        raise InputError(f"unknown design {design!r}; use one of {', '.join(DESIGNS)}")
    names, runs = system_runs(values, systems)
    if design == "one-way":
        return _one_way(names, runs)
    complete, dropped = _complete(names, runs)
    counts = {r.shape[0] for r in complete}
    if design == "two-way" and max(counts) > 1:
        if len(counts) > 1:
            shown = {name: r.shape[0] for name, r in zip(names, complete, strict=True)}
            raise InputError(
                f"the two-way design with runs needs the same number of runs for every system, "
                f"got {shown}; design='repeated-measures' averages them"
            )
        return _replicated(names, complete, dropped)
    return _blocked(names, complete, design, dropped)


def tukey_table(result: AnovaResult, confidence: float = 0.95) -> pd.DataFrame:
    """Tukey's HSD of every pair of an ANOVA's systems, on its error term.

    ``q = |mean_a - mean_b| / sqrt(error_ms / 2 * (1/n_a + 1/n_b))`` against the studentized
    range of k means on the error's degrees of freedom; the interval is ``difference -+ q_crit
    * se``. :func:`tukey_hsd` after its checks.

    Parameters
    ----------
    result : AnovaResult
    confidence : float in (0, 1), default 0.95
        Of the simultaneous intervals.

    Returns
    -------
    DataFrame
        One row per pair in input order (a before b): ``system_a``, ``system_b``, ``mean_a``,
        ``mean_b``, ``difference`` (``mean_a - mean_b``), ``ci_low``, ``ci_high``
        (simultaneous), ``q`` (studentized range statistic), ``p_value`` (adjusted for all
        k (k - 1) / 2 pairs).
    """
    from scipy import stats

    k = len(result.systems)
    q_crit = float(stats.studentized_range.ppf(confidence, k, result.df_error))
    rows = []
    for i, j in itertools.combinations(range(k), 2):
        diff = float(result.means[i] - result.means[j])
        se = np.sqrt(result.error_ms / 2 * (1 / result.n_obs[i] + 1 / result.n_obs[j]))
        q = abs(diff) / se if se > 0 else (np.inf if diff else 0.0)
        p = float(stats.studentized_range.sf(q, k, result.df_error)) if np.isfinite(q) else 0.0
        rows.append(
            {
                "system_a": result.systems[i],
                "system_b": result.systems[j],
                "mean_a": float(result.means[i]),
                "mean_b": float(result.means[j]),
                "difference": diff,
                "ci_low": diff - q_crit * se,
                "ci_high": diff + q_crit * se,
                "q": float(q),
                "p_value": min(1.0, p),
            }
        )
    return pd.DataFrame(rows)


def tukey_hsd(
    values: SystemValues,
    *,
    design: Design = "repeated-measures",
    confidence: float = 0.95,
    systems: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Tukey's honestly significant difference: every pair of systems, family-wise error
    controlled over all pairs.

    The variance of a difference of two system means comes from the error term of the
    ``design``'s ANOVA (:func:`anova`): the system x query residual for ``"repeated-measures"``
    and ``"two-way"`` (as Carterette 2012 and Sakai 2018 do; with runs, the quasi-F's error
    that adds the spread between seeds), the within-group mean square for ``"one-way"``
    (Tukey-Kramer: equal to ``scipy.stats.tukey_hsd`` and statsmodels' ``pairwise_tukeyhsd``).

    Parameters
    ----------
    values, design, systems
        As :func:`anova`.
    confidence : float in (0, 1), default 0.95
        Of the simultaneous intervals.

    Returns
    -------
    DataFrame
        As :func:`tukey_table`: one row per pair, ``difference`` ``mean_a - mean_b`` in the
        measure's unit, ``ci_low``, ``ci_high``, ``q``, ``p_value`` in [0, 1].

    Raises
    ------
    InputError
        As :func:`anova`, and on ``confidence`` outside (0, 1).

    References
    ----------
    Tukey (1953); Kramer (1956); Carterette (2012), section 3.2; Sakai (2018), section 4.

    Examples
    --------
    >>> y = np.array([[0.2, 0.3, 0.4], [0.5, 0.4, 0.7], [0.1, 0.2, 0.3], [0.6, 0.5, 0.8]])
    >>> t = tukey_hsd(y, systems=["a", "b", "c"])
    >>> t[["system_a", "system_b", "difference"]].round(4).values.tolist()
    [['a', 'b', 0.0], ['a', 'c', -0.2], ['b', 'c', -0.2]]
    """
    confidence = check_fraction(confidence, "confidence")
    return tukey_table(anova(values, design=design, systems=systems), confidence)


def randomized_tukey_hsd(
    values: SystemValues,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    systems: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The randomised Tukey HSD: every pair of systems against the permutation distribution of
    the largest difference between any two systems.

    Under the null hypothesis that the systems are the same, their values on a query are
    exchangeable: each resample permutes every query's values across the systems
    independently, takes the systems' means and keeps their range ``max - min``. A pair's
    p-value is the share of resamples whose range reaches the pair's observed ``|mean_a -
    mean_b|``, as ``(1 + count) / (1 + B)``: one distribution for every pair, so the family-wise
    error is controlled over all of them (Carterette 2012, section 4.2). With several runs per
    system, each resample also shifts each system's mean by its own run effects with random
    signs (the second level of :func:`ragnb.stats.two_level_randomization_test`).

    Parameters
    ----------
    values, systems
        As :func:`anova`; queries with a NaN for some system or run are left out; several runs
        are averaged per query for the query level.
    n_resamples : int, default 10000
        B.
    seed : int or None, default 0

    Returns
    -------
    DataFrame
        One row per pair in input order: ``system_a``, ``system_b``, ``mean_a``, ``mean_b``,
        ``difference`` (``mean_a - mean_b``), ``p_value`` in (0, 1].

    Raises
    ------
    InputError
        As :func:`anova` (repeated-measures), and on ``n_resamples`` below 1.

    References
    ----------
    Carterette (2012), section 4.2 (Algorithm 1: the randomised Tukey HSD). Sakai, T. (2018),
    section 4.5. Phipson and Smyth (2010) for ``(1 + count) / (1 + B)``.

    Examples
    --------
    >>> y = np.array([[0.2, 0.3, 0.4], [0.5, 0.4, 0.7], [0.1, 0.2, 0.3], [0.6, 0.5, 0.8]])
    >>> t = randomized_tukey_hsd(y, systems=["a", "b", "c"], n_resamples=999)
    >>> float(t["p_value"].iloc[0])   # a and b: equal means, every range reaches 0
    1.0
    """
    n_resamples = check_resamples(n_resamples)
    names, runs = system_runs(values, systems)
    complete, _ = _complete(names, runs)
    return randomized_tukey_table(names, complete, n_resamples, seed)


def randomized_tukey_table(
    names: list[str], runs: list[np.ndarray], n_resamples: int, seed: int | None
) -> pd.DataFrame:
    """:func:`randomized_tukey_hsd` on checked runs (each (n_runs, n_queries), no NaN)."""
    y = np.stack([r.mean(axis=0) for r in runs], axis=1)  # (n, k)
    n, k = y.shape
    deviations = [run_deviations(r) for r in runs]
    means = np.array([r.mean() for r in runs])
    pairs = list(itertools.combinations(range(k), 2))
    observed = np.array([abs(means[i] - means[j]) for i, j in pairs])
    threshold = observed - _TIE_TOLERANCE * (np.abs(y).mean() + 1e-300)
    rng = np.random.default_rng(seed)
    rows = max(1, RESAMPLE_BLOCK // (n * k))
    counts = np.zeros(len(pairs), dtype=np.int64)
    for start in range(0, n_resamples, rows):
        size = min(n_resamples, start + rows) - start
        order = np.argsort(rng.random((size, n, k)), axis=2)
        resampled = np.take_along_axis(np.broadcast_to(y, (size, n, k)), order, axis=2)
        sampled = resampled.mean(axis=1) + run_shifts(deviations, size, rng)
        spread = sampled.max(axis=1) - sampled.min(axis=1)
        counts += (spread[:, None] >= threshold[None, :]).sum(axis=0)
    return pd.DataFrame(
        {
            "system_a": [names[i] for i, _ in pairs],
            "system_b": [names[j] for _, j in pairs],
            "mean_a": [float(means[i]) for i, _ in pairs],
            "mean_b": [float(means[j]) for _, j in pairs],
            "difference": [float(means[i] - means[j]) for i, j in pairs],
            "p_value": (counts + 1) / (n_resamples + 1),
        }
    )
