"""Coverage of human-only, PPI and PPI++ intervals by simulation, with a simulated judge.

:func:`confusion_grades` is the noise model of a noisy, biased but correlated judge (a Toeplitz
confusion over grade offsets; the simulated judge itself is :class:`ragnb.judge.NoisyJudge`,
``noise="confusion"``); :func:`coverage_simulation` hides most true labels, reveals a sample and
checks the intervals of :mod:`ragnb.ppi.means` against the truth, unit by unit as in
:mod:`ragnb.ppi.systems`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder, check_qrels
from ragnb.measures import Measure, parse_measures
from ragnb.ppi.means import check_alpha, ppi_estimate, srs_design, stratified_design
from ragnb.ppi.systems import (
    Unit,
    grades_of,
    pair_population,
    query_values,
    system_runs,
)

#: The default simulated judge: P(judge grade = true grade + offset), clipped to the scale. A
#: lenient, noisy labeller: right 55% of the time, one grade too high 25%, two too high 5%, one
#: too low 15%; its mean shift (+0.25 grade) biases every judge-only estimate upwards.
DEFAULT_CONFUSION: Mapping[int, float] = {-1: 0.15, 0: 0.55, 1: 0.25, 2: 0.05}


def check_confusion(confusion: Mapping[int, float] | None) -> dict[int, float]:
    """A confusion over grade offsets, checked (``None``: :data:`DEFAULT_CONFUSION`).

    Raises
    ------
    InputError
        Probabilities that are negative or do not sum to 1.
    """
    conf = dict(DEFAULT_CONFUSION if confusion is None else confusion)
    probs = np.array([conf[o] for o in sorted(conf)], dtype=float)
    if np.any(probs < 0) or abs(probs.sum() - 1) > 1e-9:
        raise InputError(f"confusion probabilities must be >= 0 and sum to 1, got {conf}")
    return {int(o): float(conf[o]) for o in sorted(conf)}


def confusion_grades(
    grades: np.ndarray,
    confusion: Mapping[int, float] | None = None,
    *,
    rng: np.random.Generator,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """The noise model of a noisy, biased but correlated judge: each grade shifted by a random
    offset.

    The judge's grade is ``true + offset``, ``offset`` drawn from ``confusion`` (a Toeplitz
    confusion matrix whose mean offset is the judge's systematic bias), clipped to
    ``[low, high]``. The simulated judge :class:`ragnb.judge.NoisyJudge` (``noise="confusion"``)
    and :func:`coverage_simulation` draw their noise here.

    Parameters
    ----------
    grades : ndarray of shape (n,)
        The true grades.
    confusion : mapping of int to float, optional
        ``{offset: probability}`` (summing to 1); default :data:`DEFAULT_CONFUSION` (lenient:
        mean offset +0.25).
    rng : Generator
        The offsets are ``rng.choice`` over the sorted offsets, ``n`` at once.
    low, high : float, optional
        Bounds of the scale (None: no bound).

    Returns
    -------
    ndarray of shape (n,)
        The judge's grades, the dtype of ``grades + offset`` (int64 for integer grades).

    Raises
    ------
    InputError
        As :func:`check_confusion`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> confusion_grades(np.array([0, 1, 2]), {0: 1.0}, rng=rng).tolist()   # a perfect judge
    [0, 1, 2]
    >>> confusion_grades(np.array([0, 1, 2]), {1: 1.0}, rng=rng, high=2).tolist()
    [1, 2, 2]
    """
    conf = check_confusion(confusion)
    offsets = np.array(list(conf), dtype=np.int64)
    probs = np.array(list(conf.values()), dtype=float)
    grades = np.asarray(grades)
    shift = offsets[rng.choice(offsets.size, size=grades.size, p=probs)]
    out = grades + shift.reshape(grades.shape)
    if low is not None or high is not None:
        out = np.clip(out, low, high)
    return out


def _simulated_qrels(
    qrels: pd.DataFrame, confusion: Mapping[int, float] | None, seed: int
) -> pd.DataFrame:
    """The default judge of :func:`coverage_simulation`: :func:`confusion_grades` of every pair
    of ``qrels``, on the scale ``min(0, lowest grade)`` to the highest grade."""
    check_qrels(qrels)
    rel = qrels["relevance"].to_numpy(dtype=np.int64)
    lo, hi = min(0, int(rel.min())), int(rel.max())
    out = qrels[["query_id", "doc_id"]].copy()
    noisy = confusion_grades(rel, confusion, rng=np.random.default_rng(seed), low=lo, high=hi)
    out["relevance"] = noisy.astype(np.int64)
    return out.reset_index(drop=True)


def _allocate(n: int, strata_sizes: np.ndarray) -> np.ndarray:
    """Equal allocation of ``n`` labels over strata, capped by their sizes, at least 2 each."""
    alloc = np.zeros(strata_sizes.size, dtype=np.int64)
    left = n
    open_ = strata_sizes > 0
    while left > 0 and open_.any():
        share = max(left // int(open_.sum()), 1)
        for h in np.flatnonzero(open_):
            take = min(share, int(strata_sizes[h] - alloc[h]), left)
            alloc[h] += take
            left -= take
            if alloc[h] >= strata_sizes[h]:
                open_[h] = False
            if left == 0:
                break
    return alloc


def coverage_simulation(
    qrels_full: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame] | pd.DataFrame,
    measures: Iterable[str | Measure] | str | Measure,
    *,
    unit: Unit = "pair",
    judge: pd.DataFrame | None = None,
    confusion: Mapping[int, float] | None = None,
    n_labels: Sequence[int] = (50, 100, 200, 400),
    n_draws: int = 500,
    seed: int = 0,
    alpha: float = 0.05,
    sampling: Literal["srs", "stratified"] = "srs",
    crossfit: bool = True,
    ndcg_ideal: Literal["judge"] | None = None,
    order: RunOrder = "score",
) -> pd.DataFrame:
    """Coverage and width of human-only, PPI and PPI++ intervals when most labels are hidden.

    The full qrels are the truth. A judge labels every unit (by default
    :func:`confusion_grades` with ``confusion`` and ``seed``: biased, so judge-only estimates
    miss the truth). In each of ``n_draws`` draws, ``n`` units are sampled to reveal their true
    labels, the three intervals are computed (population ``"finite"``), and each is checked
    against the true value of every (system, measure).

    Parameters
    ----------
    qrels_full : DataFrame
        Complete true grades.
    runs : mapping of str to DataFrame, or DataFrame
    measures : list of str or Measure
        As :func:`ppi_system_estimates` for ``unit``.
    unit : {"pair", "query"}, default "pair"
        ``"pair"``: the population is the pairs the systems rank in their top K (unjudged ones
        true grade 0); ``n`` pairs revealed. ``"query"``: the queries of the qrels (those with a
        defined value for every row); ``n`` whole queries revealed.
    judge : DataFrame, optional
        The judge's qrels; default simulated on ``qrels_full`` (plus the unjudged pairs of the
        population, true grade 0, for ``unit="pair"``).
    confusion : mapping of int to float, optional
        For the simulated judge, see :func:`confusion_grades`.
    n_labels : sequence of int, default (50, 100, 200, 400)
        Sample sizes, each at least 2 and below the population size.
    n_draws : int, default 500
    seed : int, default 0
        Seeds the judge (``seed``) and the draws (``seed + 1``).
    alpha : float in (0, 1), default 0.05
    sampling : {"srs", "stratified"}, default "srs"
        ``"stratified"`` (``unit="pair"`` only): strata are the judge's grades, with equal
        allocation (unequal inclusion probabilities), estimated with the stratified estimator.
    crossfit : bool, default True
        For ``"ppi++"``, see :func:`ppi_mean`.
    ndcg_ideal : {None, "judge"}, default None
    order : {"score", "file"}, default "score"

    Returns
    -------
    DataFrame
        One row per (system, measure, n, method): ``system``, ``measure``, ``n`` (int),
        ``method`` (``"human"``, ``"ppi"``, ``"ppi++"``), ``coverage`` (float in [0, 1]: share
        of draws whose interval holds the truth), ``mean_width`` (float), ``bias`` (mean point
        minus truth), ``rmse``, ``truth``, ``judge_only``, ``n_total`` (population units),
        ``n_draws``, ``alpha``, ``sampling``.

    Raises
    ------
    InputError
        A sample size outside [2, population size), ``sampling="stratified"`` with
        ``unit="query"``, and everything :func:`ppi_system_estimates` raises.
    """
    if unit not in ("query", "pair"):
        raise InputError(f"unit must be 'query' or 'pair', got {unit!r}")
    if sampling not in ("srs", "stratified"):
        raise InputError(f"sampling must be 'srs' or 'stratified', got {sampling!r}")
    if sampling == "stratified" and unit == "query":
        raise InputError("sampling='stratified' needs unit='pair'")
    n_draws = int(check_positive_int(n_draws, "n_draws") or 1)
    alpha = check_alpha(alpha)
    parsed = parse_measures(measures)
    check_qrels(qrels_full)
    systems = system_runs(runs)
    rows, y_all, yhat_all, judge_grades = _true_and_judged_values(
        qrels_full, systems, parsed, unit, judge, confusion, seed, ndcg_ideal, order
    )
    n_units = y_all.shape[1]
    sizes = [int(check_positive_int(n, "n_labels") or 0) for n in n_labels]
    for n in sizes:
        if not 2 <= n < n_units:
            raise InputError(f"n_labels {n} is outside [2, {n_units}) (population units)")
    rng = np.random.default_rng(seed + 1)
    members: list[np.ndarray] = []
    if sampling == "stratified" and judge_grades is not None:
        labels, strata_of = np.unique(judge_grades, return_inverse=True)
        members = [np.flatnonzero(strata_of == h) for h in range(labels.size)]
    out = []
    for n in sizes:
        out += _coverage_at(
            n,
            rows,
            y_all,
            yhat_all,
            members,
            rng,
            n_draws=n_draws,
            alpha=alpha,
            sampling=sampling,
            crossfit=crossfit,
        )
    return pd.DataFrame(out)


def _true_and_judged_values(
    qrels_full: pd.DataFrame,
    systems: Mapping[str, pd.DataFrame],
    parsed: list[Measure],
    unit: Unit,
    judge: pd.DataFrame | None,
    confusion: Mapping[int, float] | None,
    seed: int,
    ndcg_ideal: Literal["judge"] | None,
    order: RunOrder,
) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray, np.ndarray | None]:
    """The population of :func:`coverage_simulation`: true and judge values of every unit.

    Returns ``rows`` (system, measure name), the true values and the judge's values, both
    (n_rows, N), and the judge's grade of each unit (``unit="pair"``; None for queries). The
    judge is simulated when ``judge`` is None.
    """
    if unit == "pair":
        pop = pair_population(qrels_full, systems, parsed, ndcg_ideal, order)
        extra = pop.pairs.copy()
        extra["relevance"] = grades_of(extra, qrels_full, 0.0).astype(np.int64)
        truth_q = pd.concat([qrels_full, extra], ignore_index=True).drop_duplicates(
            ["query_id", "doc_id"]
        )
        if judge is None:
            judge = _simulated_qrels(truth_q, confusion, seed)
        # The normaliser of nDCG[judge ideal] comes from the judge's grades.
        pop = pair_population(judge, systems, parsed, ndcg_ideal, order)
        truth_grades = grades_of(pop.pairs, truth_q, 0.0)
        judge_grades = grades_of(pop.pairs, judge, 0.0)
        y_all = pop.values(truth_grades)
        yhat_all = pop.values(judge_grades)
        return pop.rows, y_all, yhat_all, judge_grades
    if judge is None:
        judge = _simulated_qrels(qrels_full, confusion, seed)
    queries = pd.Index(sorted(qrels_full["query_id"].astype(str).unique()))
    rows, y_all = query_values(qrels_full, systems, parsed, queries, order)
    _, yhat_all = query_values(judge, systems, parsed, queries, order)
    ok = ~(np.isnan(y_all).any(axis=0) | np.isnan(yhat_all).any(axis=0))
    return rows, y_all[:, ok], yhat_all[:, ok], None


def _coverage_at(
    n: int,
    rows: list[tuple[str, str]],
    y_all: np.ndarray,
    yhat_all: np.ndarray,
    members: list[np.ndarray],
    rng: np.random.Generator,
    *,
    n_draws: int,
    alpha: float,
    sampling: str,
    crossfit: bool,
) -> list[dict[str, object]]:
    """The rows of :func:`coverage_simulation` for ``n`` labels: ``n_draws`` draws from ``rng``.

    ``members`` are the units of each stratum (the judge's grades) for ``sampling="stratified"``.
    """
    n_units = y_all.shape[1]
    truth = y_all.mean(axis=1)
    judge_only = yhat_all.mean(axis=1)
    zero = np.zeros(len(rows))
    methods = (("human", 0.0), ("ppi", 1.0), ("ppi++", None))
    if sampling == "stratified":
        strata_sizes = np.array([m.size for m in members])
        alloc = _allocate(n, strata_sizes)
        group = np.repeat(np.arange(len(members)), alloc)
        w = (strata_sizes / np.maximum(alloc, 1))[group]
        design = stratified_design(group, w.astype(float), float(n_units))
    else:
        design = srs_design(n, n_units)
    cover = {m: np.zeros(len(rows)) for m, _ in methods}
    width = {m: np.zeros(len(rows)) for m, _ in methods}
    err = {m: np.zeros(len(rows)) for m, _ in methods}
    err2 = {m: np.zeros(len(rows)) for m, _ in methods}
    for _ in range(n_draws):
        if sampling == "stratified":
            idx = np.concatenate(
                [rng.choice(members[h], size=a, replace=False) for h, a in enumerate(alloc)]
            )
        else:
            idx = rng.choice(n_units, size=n, replace=False)
        y, yh = y_all[:, idx], yhat_all[:, idx]
        for method, lam in methods:
            yh_m = np.zeros_like(yh) if lam == 0.0 else yh
            imp = zero if lam == 0.0 else judge_only
            mo = ppi_estimate(y, yh_m, imp, zero, design, lam, crossfit=crossfit)
            half = mo.half_width(alpha)
            cover[method] += np.abs(mo.point - truth) <= half
            width[method] += 2 * half
            err[method] += mo.point - truth
            err2[method] += (mo.point - truth) ** 2
    out: list[dict[str, object]] = []
    for method, _ in methods:
        for r, (system, name) in enumerate(rows):
            out.append(
                {
                    "system": system,
                    "measure": name,
                    "n": n,
                    "method": method,
                    "coverage": cover[method][r] / n_draws,
                    "mean_width": width[method][r] / n_draws,
                    "bias": err[method][r] / n_draws,
                    "rmse": math.sqrt(err2[method][r] / n_draws),
                    "truth": float(truth[r]),
                    "judge_only": float(judge_only[r]),
                    "n_total": n_units,
                    "n_draws": n_draws,
                    "alpha": alpha,
                    "sampling": sampling,
                }
            )
    return out
