"""Retrieval measures as PPI units: per-query values or per-pair contributions of each system.

:func:`ppi_system_estimates` applies eq. (1) of :mod:`ragnb.ppi.means` to retrieval measures in two
designs. ``unit="query"``: the humans label whole queries (every pair the measures read); any
per-query measure of :mod:`ragnb.measures` is computed on human and judge qrels by
:func:`ragnb.evaluation.evaluate.evaluate`, and the query is the unit. ``unit="pair"``: the humans
label individual (query, document) pairs; only measures linear in the per-pair labels qualify
(``P@K``, ``Precision4+@K``, and DCG@K over a fixed normaliser: nDCG@K with the judge's ideal DCG,
``ndcg_ideal="judge"``). A system's measure is then ``sum_i a_i g(y_i)``: ``g`` a function of pair
``i``'s grade, ``a_i`` its weight in the mean over queries (0 for pairs the system did not rank in
its top K), and the unit value is ``N a_i g(y_i)`` so that the measure is the mean of the unit
values.

The estimator itself is :func:`ragnb.ppi.means.ppi_mean`'s (population ``"finite"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.index import sort_run
from ragnb.frames.schema import RunOrder, check_qrels
from ragnb.measures import Measure, parse_measures
from ragnb.ppi.means import check_alpha, make_design, ppi_estimate

Unit = Literal["query", "pair"]

#: Measure families linear in the per-pair labels, usable with ``unit="pair"``. ``nDCG`` only
#: with ``ndcg_ideal="judge"`` (a fixed normaliser); its ideal DCG otherwise depends on labels.
LINEAR_FAMILIES = ("P", "Precision4+", "nDCG")


def system_runs(runs: Mapping[str, pd.DataFrame] | pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The runs of the compared systems by name.

    Parameters
    ----------
    runs : dict of str to DataFrame, or DataFrame
        ``{system name: run frame}``, or one run frame: split by its ``tag`` column (one system
        per tag, sorted), else one system named ``"run"``.

    Returns
    -------
    dict of str to DataFrame

    Raises
    ------
    InputError
        When ``runs`` is neither a frame nor a non-empty mapping.
    """
    if isinstance(runs, pd.DataFrame):
        if "tag" in runs.columns:
            return {str(t): g.drop(columns=["tag"]) for t, g in runs.groupby("tag", sort=True)}
        return {"run": runs}
    if not isinstance(runs, Mapping) or not runs:
        raise InputError("runs must be a non-empty mapping {system name: run frame}")
    return {str(k): v for k, v in runs.items()}


@dataclass(frozen=True)
class _PairPopulation:
    """The (query, doc) pairs the linear measures read, and each row's per-pair weights.

    ``rows`` are (system, measure name) pairs; ``weights`` has shape (n_rows, N) with
    ``N * a_i`` (so that a measure is the mean of ``weights * g(grade)``); ``threshold`` is per
    row: ``g = 1[grade >= threshold]``, or NaN for ``g = max(grade, 0)`` (DCG gain).
    """

    pairs: pd.DataFrame  # query_id, doc_id; N rows, the unit order
    rows: list[tuple[str, str]]
    weights: np.ndarray
    threshold: np.ndarray

    def values(self, grades: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """Unit values (n_rows, n) for ``grades`` of units ``idx`` (all units if None)."""
        w = self.weights if idx is None else self.weights[:, idx]
        g = grades.astype(float)[None, :]
        thr = self.threshold[:, None]
        gain = np.where(np.isnan(thr), np.maximum(g, 0.0), (g >= thr).astype(float))
        return w * gain


def _pair_name(m: Measure, ndcg_ideal: str | None) -> str:
    return f"{m.name}[judge ideal]" if m.family == "nDCG" and ndcg_ideal == "judge" else m.name


def _check_linear(measures: Sequence[Measure], ndcg_ideal: str | None) -> None:
    if ndcg_ideal not in (None, "judge"):
        raise InputError(f"ndcg_ideal must be None or 'judge', got {ndcg_ideal!r}")
    for m in measures:
        if m.family == "nDCG" and m.cutoff is not None and ndcg_ideal == "judge":
            continue
        if m.family in ("P", "Precision4+"):
            continue
        if m.family == "nDCG":
            why = (
                "its ideal DCG sorts the labels of every judged document of the query, so it is "
                "not linear in per-pair labels; use unit='query', or ndcg_ideal='judge' to "
                "estimate DCG@K over the judge's ideal DCG@K (a fixed normaliser; reported as "
                f"'{m.name}[judge ideal]', a different measure)"
            )
            if m.cutoff is None:
                why = "it needs a cutoff K under unit='pair'"
        else:
            why = (
                "it is not a per-query mean of per-pair labels (linear ones: P@K, "
                "Precision4+@K, nDCG@K with ndcg_ideal='judge'); use unit='query'"
            )
        raise InputError(f"measure {m.name} cannot be estimated with unit='pair': {why}")


def _ideal_dcg(qrels: pd.DataFrame, k: int) -> pd.Series:
    """Ideal DCG@k per query of ``qrels`` (linear gain max(grade, 0), as trec_eval)."""
    g = qrels[["query_id", "relevance"]].copy()
    g["gain"] = np.maximum(g["relevance"].to_numpy(dtype=float), 0.0)
    g = g.sort_values(["query_id", "gain"], ascending=[True, False], kind="stable")
    g["pos"] = g.groupby("query_id", sort=False).cumcount() + 1
    g = g[g["pos"] <= k]
    g["dcg"] = g["gain"] / np.log2(g["pos"] + 1.0)
    return g.groupby("query_id", sort=True)["dcg"].sum()


def pair_contributions(
    judge_qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame] | pd.DataFrame,
    measures: Iterable[str | Measure] | str | Measure,
    *,
    ndcg_ideal: Literal["judge"] | None = None,
    order: RunOrder = "score",
) -> pd.DataFrame:
    """Per-pair weights that make each linear measure a sum over (query, document) pairs.

    For a measure linear in the per-pair labels, ``value(system) = sum_i a_i g(grade_i)`` over
    the pairs ``i`` the system ranks in its top K, for the queries of ``judge_qrels``:

    * ``P(rel=r)@K``: ``a_i = 1 / (K Q)``, ``g = 1[grade >= r]``;
    * ``Precision4+@K`` (1-5 grades): ``a_i = 1 / (K Q)``, ``g = 1[grade >= 4]``;
    * ``nDCG@K`` with ``ndcg_ideal="judge"``: ``a_i = 1 / (log2(rank_i + 1) Z_q Q)`` with
      ``Z_q`` the ideal DCG@K of the judge's grades of query q (0 when ``Z_q = 0``, as
      trec_eval scores such a query), ``g = max(grade, 0)``.

    ``Q`` is the number of queries of ``judge_qrels`` (trec_eval ``-c``: a query the run misses
    contributes 0).

    Parameters
    ----------
    judge_qrels : DataFrame
        The judge's grades: ``query_id``, ``doc_id``, ``relevance``.
    runs : mapping of str to DataFrame, or DataFrame
        ``{system: run}``; a single frame with a ``tag`` column is split by tag.
    measures : list of str or Measure
    ndcg_ideal : {None, "judge"}, default None
        None refuses nDCG (not linear in the labels); ``"judge"`` normalises by ``Z_q``.
    order : {"score", "file"}, default "score"
    target_width : float > 0, optional
        Adds ``labels_for_width``: the additional human labels, drawn as these were, that would
        bring the PPI interval's total width (``ppi_ci_high - ppi_ci_low``, in the measure's
        units) down to ``target_width`` at the current per-label variances and ``lam``
        (:func:`ragnb.ppi.means.labels_for_variance`; the t quantile held at its current
        degrees of freedom; 0 when it is already that narrow, ``inf`` when no number of labels
        reaches it).

    Returns
    -------
    DataFrame
        One row per (system, measure, pair with a non-zero weight): ``system``, ``measure``,
        ``query_id``, ``doc_id``, ``rank`` (int, 1-based), ``weight`` (``a_i``, float),
        ``threshold`` (float; NaN for the DCG gain ``max(grade, 0)``).

    Raises
    ------
    InputError
        On a measure that is not linear in per-pair labels (named), malformed frames.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    >>> run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> pair_contributions(qrels, {"s": run}, "P@2")["weight"].tolist()   # 1 / (K Q) = 1/2
    [0.5, 0.5]
    """
    pop = pair_population(judge_qrels, runs, parse_measures(measures), ndcg_ideal, order)
    out = []
    for r, (system, name) in enumerate(pop.rows):
        nz = np.flatnonzero(pop.weights[r])
        part = pop.pairs.iloc[nz][["query_id", "doc_id"]].reset_index(drop=True)
        part.insert(0, "measure", name)
        part.insert(0, "system", system)
        part["weight"] = pop.weights[r, nz] / len(pop.pairs)
        part["threshold"] = pop.threshold[r]
        out.append(part)
    return pd.concat(out, ignore_index=True)


def pair_population(
    judge_qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame] | pd.DataFrame,
    measures: list[Measure],
    ndcg_ideal: str | None,
    order: RunOrder,
) -> _PairPopulation:
    """The (query, document) pairs the linear measures read and each one's weight per measure.

    Each (system, measure) row is the mean over the pairs of ``weights * g(grade)``, so that a
    PPI estimate per pair (``unit="pair"``) is one of a mean.

    Parameters
    ----------
    judge_qrels : DataFrame
        The judge's qrels (they fix nDCG's ideal DCG with ``ndcg_ideal="judge"``).
    runs : dict of str to DataFrame, or DataFrame
        As :func:`system_runs`.
    measures : list of Measure
        Of :data:`LINEAR_FAMILIES`, each with a cutoff.
    ndcg_ideal : str or None
        ``"judge"`` for nDCG (a fixed normaliser); None without nDCG.
    order : {"score", "file"}
        The runs' ordering policy.

    Returns
    -------
    _PairPopulation
        ``pairs`` (N rows), ``rows`` ((system, measure name) pairs), ``weights`` of shape
        (n_rows, N) and ``threshold`` per row.

    Raises
    ------
    InputError
        On a measure that is not linear in the per-pair labels, malformed qrels, or runs that
        rank no document of a judged query.
    """
    _check_linear(measures, ndcg_ideal)
    check_qrels(judge_qrels)
    systems = system_runs(runs)
    queries = pd.Index(sorted(judge_qrels["query_id"].astype(str).unique()))
    n_q = len(queries)
    k_max = max(int(m.cutoff or 0) for m in measures)
    tops = {}
    for name, run in systems.items():
        r = sort_run(run, order, warn=False).run
        r = r[(r["rank"] <= k_max) & r["query_id"].isin(queries)]
        tops[name] = r[["query_id", "doc_id", "rank"]].reset_index(drop=True)
    pairs = (
        pd.concat(list(tops.values()), ignore_index=True)[["query_id", "doc_id"]]
        .drop_duplicates()
        .sort_values(["query_id", "doc_id"], kind="stable")
        .reset_index(drop=True)
    )
    n_units = len(pairs)
    if n_units == 0:
        raise InputError("no run ranks a document for a query of the qrels")
    key = pd.MultiIndex.from_frame(pairs)
    ideals: dict[int, pd.Series] = {}
    rows: list[tuple[str, str]] = []
    weights = np.zeros((len(systems) * len(measures), n_units))
    threshold = np.full(len(systems) * len(measures), np.nan)
    r_i = 0
    for name, top in tops.items():
        pos = key.get_indexer(pd.MultiIndex.from_frame(top[["query_id", "doc_id"]]))
        rank = top["rank"].to_numpy()
        for m in measures:
            k = int(m.cutoff or 0)
            sel = rank <= k
            if m.family == "nDCG":
                if k not in ideals:
                    ideals[k] = _ideal_dcg(judge_qrels.astype({"query_id": str}), k)
                z_q = ideals[k].reindex(top["query_id"][sel]).fillna(0.0).to_numpy()
                with np.errstate(divide="ignore"):
                    a = np.where(z_q > 0, 1.0 / (np.log2(rank[sel] + 1.0) * z_q * n_q), 0.0)
            else:
                a = np.full(int(sel.sum()), 1.0 / (k * n_q))
                threshold[r_i] = float(m.params["rel"]) if m.family == "P" else 4.0
            weights[r_i, pos[sel]] = a * n_units
            rows.append((name, _pair_name(m, ndcg_ideal)))
            r_i += 1
    return _PairPopulation(pairs, rows, weights, threshold)


def grades_of(pairs: pd.DataFrame, qrels: pd.DataFrame, missing: float) -> np.ndarray:
    """The grade of each (query, document) pair in ``qrels``.

    Parameters
    ----------
    pairs : DataFrame
        Columns ``query_id``, ``doc_id``; n rows.
    qrels : DataFrame
        A qrels frame.
    missing : float
        The value of a pair the qrels do not judge (e.g. NaN or 0).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    q = qrels.astype({"query_id": str, "doc_id": str})
    idx = pd.MultiIndex.from_frame(q[["query_id", "doc_id"]])
    pos = idx.get_indexer(pd.MultiIndex.from_frame(pairs[["query_id", "doc_id"]]))
    rel = q["relevance"].to_numpy(dtype=float)
    return np.where(pos >= 0, rel[np.maximum(pos, 0)], missing)


def query_values(
    qrels: pd.DataFrame,
    systems: Mapping[str, pd.DataFrame],
    measures: list[Measure],
    queries: pd.Index,
    order: RunOrder,
) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Per-query values of every (system, measure), by :func:`ragnb.evaluation.evaluate.evaluate`.

    Parameters
    ----------
    qrels : DataFrame
        The qrels the measures read.
    systems : dict of str to DataFrame
        Runs by system name (:func:`system_runs`).
    measures : list of Measure
    queries : Index
        The queries, in the columns' order.
    order : {"score", "file"}
        The runs' ordering policy.

    Returns
    -------
    rows : list of (str, str)
        (system, measure name) of each row.
    values : ndarray of float64, shape (n_rows, len(queries))
        NaN where a measure is undefined.
    """
    rows, blocks = [], []
    for name, run in systems.items():
        wide = evaluate(qrels, run, measures, order=order).per_query_wide()
        wide = wide.reindex(queries)
        for m in measures:
            rows.append((name, m.name))
            blocks.append(wide[m.name].to_numpy(dtype=float))
    return rows, np.vstack(blocks)


def _inclusion_arrays(
    inclusion: pd.DataFrame | None, keys: pd.DataFrame, unit: Unit
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Weights (1/pi) and strata of the labelled units ``keys`` from the sampler's table."""
    if inclusion is None:
        return None, None
    cols = ["query_id"] if unit == "query" else ["query_id", "doc_id"]
    require_columns(inclusion, [*cols, "inclusion_probability"], "inclusion table")
    tab = inclusion.astype({c: str for c in cols})
    idx = pd.MultiIndex.from_frame(tab[cols]) if unit == "pair" else pd.Index(tab["query_id"])
    want = pd.MultiIndex.from_frame(keys[cols]) if unit == "pair" else pd.Index(keys["query_id"])
    pos = idx.get_indexer(want)
    if np.any(pos < 0):
        miss = keys.iloc[int(np.flatnonzero(pos < 0)[0])]
        raise InputError(
            f"labelled unit {tuple(miss[cols])} has no inclusion probability",
            query_id=str(miss["query_id"]),
            column="inclusion_probability",
        )
    pi = tab["inclusion_probability"].to_numpy(dtype=float)[pos]
    if not np.all((pi > 0) & (pi <= 1)):
        raise InputError(
            "inclusion probabilities must be in (0, 1]", column="inclusion_probability"
        )
    strata = tab["stratum"].to_numpy()[pos] if "stratum" in tab.columns else None
    return 1.0 / pi, strata


def ppi_system_estimates(
    judge_qrels: pd.DataFrame,
    human_qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame] | pd.DataFrame,
    measures: Iterable[str | Measure] | str | Measure,
    *,
    unit: Unit = "query",
    inclusion: pd.DataFrame | None = None,
    alpha: float = 0.05,
    power_tuning: bool = True,
    crossfit: bool = True,
    ndcg_ideal: Literal["judge"] | None = None,
    order: RunOrder = "score",
    target_width: float | None = None,
) -> pd.DataFrame:
    """Judge-only, human-only and prediction-powered estimates of every system's measures.

    The population is every unit the judge labelled: the queries of ``judge_qrels``
    (``unit="query"``) or the (query, document) pairs the systems rank in their top K for those
    queries (``unit="pair"``; a pair the judge did not grade counts as grade 0, unjudged). The
    labelled units are those of ``human_qrels``. The estimand is the measure computed with human
    labels on the whole population, as :func:`ragnb.evaluation.evaluate.evaluate` would with
    complete human qrels.

    Parameters
    ----------
    judge_qrels : DataFrame
        The judge's grades of every unit: ``query_id``, ``doc_id``, ``relevance``.
    human_qrels : DataFrame
        The human grades of the labelled sample. ``unit="query"``: every pair the measures read
        for each sampled query (an unlabelled pair of a sampled query is unjudged, as in
        trec_eval); ``unit="pair"``: the sampled pairs.
    runs : mapping of str to DataFrame, or DataFrame
        ``{system: run}``; a single frame with a ``tag`` column is split by tag.
    measures : list of str or Measure
        ``unit="query"``: any measure (graded ones need grades on their scale, see
        :func:`ragnb.measures.map_grades`, applied to both qrels). ``unit="pair"``: measures
        linear in the per-pair labels (:data:`LINEAR_FAMILIES`, :func:`pair_contributions`).
    unit : {"query", "pair"}, default "query"
    inclusion : DataFrame, optional
        The sampler's table: ``query_id`` (and ``doc_id`` for pairs), ``inclusion_probability``
        in (0, 1] for every labelled unit, optionally ``stratum`` (stratified simple random
        samples, one probability per stratum). None: a simple random sample of the population.
    alpha : float in (0, 1), default 0.05
    power_tuning : bool, default True
        PPI++ (tuned ``lam``) or PPI (``lam = 1``).
    crossfit : bool, default True
        Cross-fitted ``lam``, see :func:`ppi_mean`.
    ndcg_ideal : {None, "judge"}, default None
        ``unit="pair"`` only: see :func:`pair_contributions`.
    order : {"score", "file"}, default "score"

    Returns
    -------
    DataFrame
        One row per (system, measure): ``system``, ``measure``, ``unit``, ``n_labelled`` (int),
        ``n_total`` (int, units of the population), ``judge_only`` (float), ``human_only``,
        ``human_se``, ``human_ci_low``, ``human_ci_high``, ``ppi``, ``ppi_se``, ``ppi_ci_low``,
        ``ppi_ci_high``, ``lam`` (float in [0, 1]), ``width_ratio`` (PPI width / human-only
        width), ``labels_to_halve`` (float, see :attr:`PPIEstimate.labels_to_halve`), and
        ``labels_for_width`` (float) when ``target_width`` is given.
        ``unit="query"`` with an undefined (NaN) per-query value: the query is left out of the
        population for that row (judge NaN) or of the sample (human NaN).

    Raises
    ------
    InputError
        Unknown ``unit``, a measure not linear in the labels under ``unit="pair"`` (named), a
        labelled unit outside the population or without an inclusion probability, fewer than
        2 labelled units, malformed frames.

    Notes
    -----
    The estimates use ``population="finite"`` of :func:`ppi_mean`: the judge labelled every
    unit, so its mean is known exactly and the interval carries the finite population
    correction. Under ``unit="query"`` with the default ``order``, the human values of a query
    come from evaluating the run against that query's human grades only.
    """
    if unit not in ("query", "pair"):
        raise InputError(f"unit must be 'query' or 'pair', got {unit!r}")
    alpha = check_alpha(alpha)
    if target_width is not None and not (
        isinstance(target_width, int | float) and 0 < target_width < float("inf")
    ):
        raise InputError(f"target_width must be a number > 0, got {target_width!r}")
    parsed = parse_measures(measures)
    check_qrels(judge_qrels)
    check_qrels(human_qrels)
    systems = system_runs(runs)
    keys, rows, judge_v, human_v, lab = _unit_values(
        judge_qrels, human_qrels, systems, parsed, unit, ndcg_ideal, order
    )
    weights, strata = _inclusion_arrays(inclusion, keys.iloc[lab], unit)
    out = [
        _system_row(
            system,
            name,
            unit,
            judge_v[r],
            human_v[r],
            lab,
            weights,
            strata,
            alpha=alpha,
            power_tuning=power_tuning,
            crossfit=crossfit,
            target_width=target_width,
        )
        for r, (system, name) in enumerate(rows)
    ]
    return pd.DataFrame(out)


def _unit_values(
    judge_qrels: pd.DataFrame,
    human_qrels: pd.DataFrame,
    systems: Mapping[str, pd.DataFrame],
    parsed: list[Measure],
    unit: Unit,
    ndcg_ideal: str | None,
    order: RunOrder,
) -> tuple[pd.DataFrame, list[tuple[str, str]], np.ndarray, np.ndarray, np.ndarray]:
    """The population's units and their values for :func:`ppi_system_estimates`.

    Returns ``keys`` (the units: ``query_id``, and ``doc_id`` for pairs), ``rows`` (system,
    measure name), the judge's values (n_rows, N) on every unit, the human values
    (n_rows, n) on the labelled units, and ``lab`` (n,), the labelled units' positions.
    """
    if unit == "pair":
        pop = pair_population(judge_qrels, systems, parsed, ndcg_ideal, order)
        keys = pop.pairs
        judge_v = pop.values(grades_of(keys, judge_qrels, 0.0))
        human_g = grades_of(keys, human_qrels, np.nan)
        lab = np.flatnonzero(~np.isnan(human_g))
        human_v = pop.values(human_g[lab], lab)
        rows = pop.rows
    else:
        queries = pd.Index(sorted(judge_qrels["query_id"].astype(str).unique()))
        keys = pd.DataFrame({"query_id": queries})
        rows, judge_v = query_values(judge_qrels, systems, parsed, queries, order)
        hq = pd.Index(sorted(human_qrels["query_id"].astype(str).unique()))
        outside = hq.difference(queries)
        if len(outside):
            raise InputError(
                "a query of the human qrels has no judge labels: the judge must label every "
                "unit of the population",
                query_id=str(outside[0]),
            )
        lab = queries.get_indexer(hq)
        _, human_v = query_values(human_qrels, systems, parsed, hq, order)
    return keys, rows, judge_v, human_v, lab


def _system_row(
    system: str,
    name: str,
    unit: Unit,
    yhat_all: np.ndarray,
    y: np.ndarray,
    lab: np.ndarray,
    weights: np.ndarray | None,
    strata: np.ndarray | None,
    *,
    alpha: float,
    power_tuning: bool,
    crossfit: bool,
    target_width: float | None = None,
) -> dict[str, object]:
    """One row of :func:`ppi_system_estimates`: judge-only, human-only and PPI of one measure.

    ``yhat_all`` (N,) are the judge's values on every unit, ``y`` (n,) the human values on the
    labelled units ``lab``; units with an undefined (NaN) value are left out.
    """
    keep_pop = ~np.isnan(yhat_all)
    keep_lab = keep_pop[lab] & ~np.isnan(y)
    lab_r = lab[keep_lab]
    unl = np.ones(yhat_all.size, dtype=bool)
    unl[lab_r] = False
    unl &= keep_pop
    w_r = None if weights is None else weights[keep_lab]
    s_r = None if strata is None else strata[keep_lab]
    n_pop = int(keep_pop.sum())
    design = make_design(lab_r.size, n_pop - lab_r.size, w_r, s_r, "finite")
    y_r, yh_r = y[keep_lab][None], yhat_all[lab_r][None]
    imputed = np.array([yhat_all[keep_pop].mean()])
    zero = np.zeros(1)
    lam = None if power_tuning else 1.0
    ppi = ppi_estimate(y_r, yh_r, imputed, zero, design, lam, crossfit=crossfit)
    hum = ppi_estimate(y_r, np.zeros_like(y_r), zero, zero, design, 0.0)
    hw = 2 * float(hum.half_width(alpha)[0])
    pw = float(ppi.half_width(alpha)[0])
    row: dict[str, object] = {
        "system": system,
        "measure": name,
        "unit": unit,
        "n_labelled": int(lab_r.size),
        "n_total": n_pop,
        "judge_only": float(imputed[0]),
        "human_only": float(hum.point[0]),
        "human_se": float(hum.se[0]),
        "human_ci_low": float(hum.point[0]) - hw / 2,
        "human_ci_high": float(hum.point[0]) + hw / 2,
        "ppi": float(ppi.point[0]),
        "ppi_se": float(ppi.se[0]),
        "ppi_ci_low": float(ppi.point[0]) - pw,
        "ppi_ci_high": float(ppi.point[0]) + pw,
        "lam": float(ppi.lam[0]),
        "width_ratio": 2 * pw / hw if hw > 0 else np.nan,
        "labels_to_halve": float(ppi.labels_to_halve[0]),
    }
    if target_width is not None:
        row["labels_for_width"] = float(ppi.labels_for_width(target_width, alpha)[0])
    return row
