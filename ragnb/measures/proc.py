"""Pool-restricted oracle ceilings: PROC@K and %PROC (Dallaire 2025).

A candidate pool is each query's top ``pool_depth`` documents of a run (for example a dense
top 50 that a reranker reorders). PROC@K is the value a measure takes on the ideal reordering of
that pool, with the measure's normaliser unchanged (still the whole judged pool), so PROC < 1 when
the pool misses good documents: low PROC calls for a better pool (retrieval), high PROC with a low
``%PROC = mean(actual) / mean(PROC)`` for better ordering (reranking).

The ideal reordering sorts the pool by grade descending (unjudged documents as grade 0, ties in
the original order), which is the best order at every K for the measures that grow with the
grades of the top K (N-Recall, CompleteHit, Precision4+, P, R, nDCG, RR, Success, ...). RA-nWG
sorts by its rarity weights instead, since they need not grow with the grade.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Sections 1, 5.1-5.2 (Tables 3-4) and
   Appendix A.9.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import Measure, parse_measure, parse_measures
from ragnb.measures.functions import fill_doc
from ragnb.measures.graded import Qrels, Run, rarity_weights
from ragnb.measures.kernel import as_qrels_frame, as_run_frame, prepare

__all__ = ["ProcResult", "ideal_reorder", "proc_table"]

# Families for which the ideal reordering of a pool is not a ceiling.
_NOT_A_CEILING = {
    "Harm": "lower is better; report Harm@K of the run itself",
    "Judged": "the judgement rate is not a utility",
    "F_e": "its N_p estimate from the top 2K can fall when the pool is reordered",
    "RA-nWG-nov": "its ideal set depends on document sources; compare with RA-nWG's PROC",
}
_WEIGHT_FAMILIES = ("RA-nWG",)


def _grade_weights(qrels: pd.DataFrame, measure: Measure) -> pd.Series:
    """RA-nWG weight of each judgement of the qrels, indexed like ``qrels``."""
    grades = qrels["relevance"].to_numpy(dtype=np.int64)
    if (grades > 5).any():
        bad = int(np.flatnonzero(grades > 5)[0])
        raise InputError(
            f"grade {int(grades[bad])} is outside the 1-5 scale of {measure}; map the qrels "
            "first with ragnb.measures.graded.map_grades",
            query_id=str(qrels["query_id"].iloc[bad]),
            column="relevance",
        )
    col = np.clip(grades, 1, 5) - 1
    qrow, _ = pd.factorize(qrels["query_id"])
    counts = np.zeros((int(qrow.max()) + 1, 5), dtype=np.int64)
    np.add.at(counts, (qrow, col), 1)
    w = rarity_weights(counts, **measure.params)
    return pd.Series(w[qrow, col], index=qrels.index)


@fill_doc
def ideal_reorder(
    run: Run,
    qrels: Qrels,
    pool_depth: int,
    *,
    measure: str | Measure | None = None,
    order: RunOrder = "score",
) -> pd.DataFrame:
    """The ideal reordering of each query's top ``pool_depth`` documents (a run transform).

    Parameters
    ----------
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score`` (optionally ``rank``, ``tag``), or
        ``{query_id: {doc_id: score}}``.
    {{qrels}}
    pool_depth : int
        Documents kept per query (the candidate pool), e.g. 50 or 100.
    measure : str or Measure, optional
        An ``RA-nWG`` measure orders the pool by its rarity weights (ties by grade); any other
        measure, or None, by grade.
    order : {"score", "file"}, default "score"
        How ``run`` is ordered before its top ``pool_depth`` are taken
        (:func:`ragnb.frames.index.sort_run`).

    Returns
    -------
    DataFrame
        The pool in its new order, grouped by query (sorted): the run's columns, with ``rank``
        (int64, 1-based, the new order) and ``score`` rewritten to ``pool_depth + 1 - rank``
        (float64, distinct, so both ordering policies reproduce the new order). Unjudged
        documents sort as grade 0 (weight 0); ties keep the original order. The input is not
        modified.

    Raises
    ------
    InputError
        On a malformed run or qrels, a bad ``pool_depth``, or (for RA-nWG) a grade above 5.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 5, "c": 4}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "c": 0.7, "b": 0.6}}
    >>> ideal_reorder(run, qrels, 3)["doc_id"].tolist()     # pool a, x, c; b is left out
    ['c', 'a', 'x']
    """
    depth = check_positive_int(pool_depth, "pool_depth")
    qrels_df = as_qrels_frame(qrels)
    ranked = sort_run(as_run_frame(run), order, warn=False).run
    pool = ranked[ranked["rank"] <= depth].reset_index(drop=True)
    m = None if measure is None else parse_measure(measure)
    by_weight = m is not None and m.family in _WEIGHT_FAMILIES
    weights = _grade_weights(qrels_df, m) if by_weight and m is not None else 0.0
    keys = pool[["query_id", "doc_id"]].merge(
        qrels_df.assign(_w=weights), on=["query_id", "doc_id"], how="left"
    )
    judged = keys["relevance"].notna().to_numpy()
    grade = np.where(judged, keys["relevance"].fillna(0).to_numpy(), 0).astype(np.float64)
    weight = keys["_w"].fillna(0.0).to_numpy(dtype=np.float64)
    qcode, _ = pd.factorize(pool["query_id"])
    by = np.lexsort((pool["rank"].to_numpy(), -grade, -weight, qcode))
    out = pool.iloc[by].reset_index(drop=True)
    out["rank"] = out.groupby("query_id", sort=False).cumcount().astype(np.int64) + 1
    out["score"] = (depth + 1 - out["rank"]).astype(np.float64)
    return out


@dataclass(frozen=True, eq=False)
class ProcResult:
    """The outcome of :func:`proc_table`.

    Attributes
    ----------
    table : DataFrame
        One row per measure: ``measure`` (str), ``family`` (str), ``cutoff`` (int, K),
        ``actual`` (float, macro mean of the run's values), ``proc`` (float, macro mean of the
        ceilings), ``pct_proc`` (float, ``actual / proc``, NaN when ``proc`` is 0), ``n_valid``
        (int, queries where both are defined; the means are over these), ``n_queries`` (int).
    per_query : DataFrame
        ``query_id`` (str), ``measure`` (str), ``actual``, ``proc`` (float, NaN = undefined) and
        ``pct_proc`` (float, ``actual / proc``, NaN when undefined or ``proc`` is 0).
    pool_depth : int
    """

    table: pd.DataFrame
    per_query: pd.DataFrame
    pool_depth: int


def proc_table(
    qrels: Qrels,
    run: Run,
    measures: Iterable[str | Measure] | str | Measure,
    pool_depth: int,
    *,
    pool_run: Run | None = None,
    order: RunOrder = "score",
) -> ProcResult:
    """Actual value, pool-restricted oracle ceiling (PROC) and %PROC of each measure.

    Parameters
    ----------
    qrels : DataFrame or dict
        Judgements (1-5 grades for the graded measures, see
        :func:`ragnb.measures.graded.map_grades`).
    run : DataFrame or dict
        The evaluated run (e.g. the reranked list).
    measures : list of str or Measure
        Measures with a cutoff K <= ``pool_depth`` (e.g. ``RA-nWG@10``, ``N-Recall4+@30``);
        Harm, Judged, F_e and RA-nWG-nov are refused (their reordered value is no ceiling).
    pool_depth : int
        Candidate pool size per query, typically 50 or 100.
    pool_run : DataFrame or dict, optional
        The run whose top ``pool_depth`` is the pool (e.g. the first-stage dense run the
        reranker reorders); default ``run`` itself.
    order : {"score", "file"}, default "score"
        Ordering policy of ``run`` and ``pool_run``.

    Returns
    -------
    ProcResult
        ``table`` (per measure: actual, proc, pct_proc, n_valid) and ``per_query``.

    Raises
    ------
    InputError
        On malformed inputs, a measure without a cutoff or with K > ``pool_depth``, or a refused
        family.

    Notes
    -----
    PROC@K is the measure on :func:`ideal_reorder` of the pool, normalised as usual (RA-nWG,
    N-Recall and CompleteHit still divide by the whole judged pool), so it falls below 1 when the
    pool lacks good documents. ``%PROC = mean(actual) / mean(PROC)`` over the queries where both
    are defined, as in Table 4 of [1]. When the run's top K lies inside the pool (``pool_run``
    omitted, or a reranking of it), ``actual <= PROC`` per query and ``%PROC`` is in [0, 1].
    Compare ceilings across runs at one K only (Appendix A.9 of [1]).

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Sections 5.1-5.2 (Tables 3-4) and Appendix A.9.

    Examples
    --------
    >>> qrels = {"q1": {"a": 5, "b": 4, "c": 1, "d": 5}}                  # d is never retrieved
    >>> run = {"q1": {"c": 0.9, "a": 0.8, "b": 0.7, "x": 0.6}}
    >>> res = proc_table(qrels, run, ["N-Recall4+@2"], 3)
    >>> res.table[["measure", "actual", "proc", "pct_proc"]].to_dict("records")
    [{'measure': 'N-Recall4+@2', 'actual': 0.5, 'proc': 1.0, 'pct_proc': 0.5}]
    """
    depth = check_positive_int(pool_depth, "pool_depth")
    parsed = parse_measures(measures)
    for m in parsed:
        reason = _NOT_A_CEILING.get(m.family)
        if reason is not None:
            raise InputError(f"{m}: PROC is not defined here: {reason}")
        if m.depth is None or m.depth > depth:
            need = "the whole run" if m.depth is None else f"{m.depth} ranks"
            raise InputError(
                f"{m} reads {need}, more than the candidate pool of {depth}; PROC needs a "
                "cutoff K <= pool_depth"
            )
    max_depth = max(int(m.depth) for m in parsed if m.depth is not None)
    qrels_df = as_qrels_frame(qrels)
    actual_arrays = prepare(qrels_df, run, order=order, depth=max_depth)
    actual = np.column_stack([m.compute(actual_arrays) for m in parsed])

    proc = np.full_like(actual, np.nan)
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(parsed):
        key = (m.family, *m.params.values()) if m.family in _WEIGHT_FAMILIES else ("grade",)
        groups.setdefault(key, []).append(i)
    base = run if pool_run is None else pool_run
    for members in groups.values():
        reordered = ideal_reorder(base, qrels_df, depth, measure=parsed[members[0]], order=order)
        arrays = prepare(qrels_df, reordered, order="file", depth=max_depth)
        for i in members:
            proc[:, i] = parsed[i].compute(arrays)
    return _proc_result(parsed, actual_arrays.query_ids, actual, proc, depth)


def _proc_result(
    measures: list[Measure], query_ids: np.ndarray, actual: np.ndarray, proc: np.ndarray, depth: int
) -> ProcResult:
    n_q, n_m = actual.shape
    valid = ~np.isnan(actual) & ~np.isnan(proc)
    n_valid = valid.sum(axis=0)
    mean_actual = np.full(n_m, np.nan)
    mean_proc = np.full(n_m, np.nan)
    np.divide(np.where(valid, actual, 0).sum(axis=0), n_valid, out=mean_actual, where=n_valid > 0)
    np.divide(np.where(valid, proc, 0).sum(axis=0), n_valid, out=mean_proc, where=n_valid > 0)
    pct = np.full(n_m, np.nan)
    np.divide(mean_actual, mean_proc, out=pct, where=mean_proc > 0)
    names = np.asarray([m.name for m in measures], dtype=object)
    table = pd.DataFrame(
        {
            "measure": pd.Series(names, dtype=object),
            "family": pd.Series([m.family for m in measures], dtype=object),
            "cutoff": np.asarray([m.cutoff for m in measures], dtype=np.int64),
            "actual": mean_actual,
            "proc": mean_proc,
            "pct_proc": pct,
            "n_valid": n_valid.astype(np.int64),
            "n_queries": np.full(n_m, n_q, dtype=np.int64),
        }
    )
    pct_q = np.full_like(actual, np.nan)
    np.divide(actual, proc, out=pct_q, where=valid & (np.nan_to_num(proc) > 0))
    per_query = pd.DataFrame(
        {
            "query_id": np.tile(query_ids, n_m),
            "measure": np.repeat(names, n_q),
            "actual": actual.T.reshape(-1),
            "proc": proc.T.reshape(-1),
            "pct_proc": pct_q.T.reshape(-1),
        }
    )
    return ProcResult(table=table, per_query=per_query, pool_depth=depth)
