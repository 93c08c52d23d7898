"""trec_eval's further measures: R-precision, inferred AP, interpolated precision and the counts.

======================= ================================================ =========================
name                    definition                                       aliases
======================= ================================================ =========================
Rprec[@K]               relevant in the top R / R, R = N_p (0 if R = 0)  trec_eval ``Rprec``, ranx
                                                                         ``r-precision``
infAP[@K]               inferred AP (Yilmaz and Aslam 2006), trec_eval's ``infAP``
                        reading: grade -1 = pooled but not judged
IPrec(recall=r)         interpolated precision at recall r: max P@i over ``IPrec@0.5``,
                        ranks i at or after the ``floor(r N_p + 0.9)``-  ``iprec_at_recall_0.50``
                        th relevant document (trec_eval 9.0)
NumRet[@K]              documents retrieved (summed over queries)        ``num_ret``
NumRelRet[@K]           relevant documents retrieved (summed)            ``NumRet(rel=1)``,
                                                                         ``num_rel_ret``
NumRel                  relevant documents judged, N_p (summed)          ``num_rel``
======================= ================================================ =========================

The three counts aggregate by **sum** over the queries, as trec_eval's ``all`` line and ir_measures
do; :func:`ragnb.evaluation.evaluate.evaluate` reports the sum for them and the macro mean for every
other measure. Average precision (trec_eval ``map``, ``map_cut_K``; ir_measures ``AP``, ``AP@K``) is
:mod:`ragnb.measures.context`'s ``AP``, one kernel with its ``PR-AUC``.

References
----------
.. [1] E. M. Voorhees and D. K. Harman (eds.), *TREC: Experiment and Evaluation in Information
   Retrieval*, MIT Press, 2005, ch. 3 (R-precision, interpolated precision).
.. [2] E. Yilmaz and J. A. Aslam, "Estimating average precision with incomplete and imperfect
   judgments", CIKM 2006, Section 3 (inferred AP).
.. [3] trec_eval 9.0, ``m_Rprec.c``, ``m_infap.c``, ``m_iprec_at_recall.c``, ``m_num_ret.c``,
   ``m_num_rel.c``, ``m_num_rel_ret.c``, https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    Measure,
    MeasureFamily,
    ParamSpec,
    TrecEvalName,
    register_family,
)
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, row_steps, safe_div, sum_at

__all__ = [
    "inferred_ap",
    "interpolated_precision",
    "iprec_values",
    "mean_of_levels",
    "r_precision",
]

#: trec_eval's ``INFAP_EPSILON`` (``trec_eval.h``).
INFAP_EPSILON = 1e-5
_RECALL = r"(?P<recall>\d*\.?\d+)"


# ----------------------------------------------------------------------------- kernels


def _rprec(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """Relevant in the top min(R, K) / R with R = N_p; 0 when R = 0; shape (n_queries,)."""
    v = arrays.relevant(rel, k)
    n_rel = arrays.n_relevant(rel)
    if v.shape[1] == 0:
        return np.zeros(arrays.n_queries)
    last = np.clip(n_rel, 1, v.shape[1]) - 1
    found = np.where(n_rel > 0, arrays.hits_at(rel, np.arange(arrays.n_queries), last), 0)
    return safe_div(found, n_rel)


def _infap(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """trec_eval's infAP, vectorised; shape (n_queries,).

    At each relevant rank i (0-based) with ``x`` relevant, ``n`` judged non-relevant and ``u``
    pooled-but-unjudged (grade -1) documents above it: ``1/(i+1) + i/(i+1) * (x + n + u)/i *
    (x + eps)/(x + n + 2 eps)`` (1 at i = 0); the sum over N_p. Documents absent from the qrels
    (or graded below -1) are outside the pool and skipped.
    """
    width = arrays.depth if k is None else min(k, arrays.depth)
    rows, cols = cells = arrays.relevant_cells(rel, width)
    # the running counts above (and at) each relevant rank, read at those ranks only
    whole = width == arrays.depth  # every relevant cell: their hits are their ranks in a row
    hits = arrays.cell_hits(rel) if whole else arrays.hits_at(rel, *cells)
    x = hits - 1.0
    n = (arrays.hits_at(0, *cells) - hits).astype(np.float64) if rel > 0 else 0.0
    u = 0.0
    if (arrays.grade_levels == -1).any():  # grade -1: pooled, unjudged
        u = (arrays.hits_at(-1, *cells) - arrays.hits_at(0, *cells)).astype(np.float64)
    fj = cols.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((x + n + u) / fj) * (
            (x + INFAP_EPSILON) / (x + n + 2 * INFAP_EPSILON)
        )
    term[cols == 0] = 1.0
    total = sum_at(cells, term, (arrays.n_queries, width))
    return safe_div(total, arrays.n_relevant(rel))


def iprec_values(
    arrays: RankingArrays, recalls: Sequence[float], *, rel: int = 1, trec_eval: int = 9
) -> np.ndarray:
    """Interpolated precision of every query at several recall levels, in one pass.

    Parameters
    ----------
    arrays : RankingArrays
        From :func:`ragnb.measures.prepare`.
    recalls : sequence of float in [0, 1], length n_recalls
        The recall levels r.
    rel : int, default 1
        Minimum grade of a relevant document.
    trec_eval : {9, 10}, default 9
        The cut point ``c`` of a level: ``floor(r N_p + 0.9)`` (trec_eval 9.0, inside
        pytrec_eval and ir_measures) or ``round(r N_p)``, halves away from zero (trec_eval 10.0).

    Returns
    -------
    ndarray of float64, shape (n_queries, n_recalls)
        ``max P@i`` over the ranks i at or after the ``c``-th relevant document (the first when
        ``c`` is 0); 0 when the run holds fewer relevant documents.

    Notes
    -----
    trec_eval's ``m_iprec_at_recall.c`` and ``m_11pt_avg.c``: precision at each relevant rank,
    its running maximum from the deepest rank up, read at the ``c``-th relevant rank.
    """
    v = arrays.relevant(rel, None)
    n_q, depth = v.shape
    levels = np.asarray(recalls, dtype=np.float64)
    if depth == 0:
        return np.zeros((n_q, len(levels)))
    # trec_eval 9.0: (long) (recall * num_rel + 0.9); 10.0: lround(recall * num_rel)
    shift = 0.9 if trec_eval == 9 else 0.5
    need = np.maximum(np.floor(levels[None, :] * arrays.n_relevant(rel)[:, None] + shift), 1)
    # the c-th relevant document of a row is its (c-1)-th relevant cell after the row's first
    start, best = arrays.derived(("iprec", rel), partial(_best_precision, rel=rel))
    found = arrays.found(rel)[:, None]
    inside = need <= found
    at = np.where(inside, start[:, None] + need.astype(np.int64) - 1, 0)
    return np.where(inside, best[at] if len(best) else 0.0, 0.0)


def _best_precision(arrays: RankingArrays, *, rel: int) -> tuple[np.ndarray, np.ndarray]:
    """The first relevant cell of each row (an index into :meth:`RankingArrays.relevant_cells`)
    and, at each relevant cell, the largest precision at it or at a deeper relevant rank of its
    row (``np.maximum.accumulate`` from the deepest rank up; the other ranks hold 0)."""
    rows, cols = arrays.relevant_cells(rel)
    best = arrays.cell_hits(rel) / (cols + 1)
    for at in row_steps(rows, from_end=True)[1:]:  # a running maximum, from each row's end
        best[at] = np.maximum(best[at], best[at + 1])
    start = np.r_[0, np.cumsum(arrays.found(rel))[:-1]]
    return start, best


def _iprec(
    arrays: RankingArrays, k: int | None, *, recall: float, rel: int, trec_eval: int = 9
) -> np.ndarray:
    """:func:`iprec_values` at one recall level; shape (n_queries,)."""
    return iprec_values(arrays, [recall], rel=rel, trec_eval=trec_eval)[:, 0]


def _num_ret(arrays: RankingArrays, k: int | None) -> np.ndarray:
    """Documents retrieved (within the top K); shape (n_queries,)."""
    n = arrays.n_retrieved
    return (n if k is None else np.minimum(n, k)).astype(np.float64)


def _num_rel_ret(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """Relevant documents retrieved (within the top K); shape (n_queries,)."""
    return arrays.found(rel, k).astype(np.float64)


def _num_rel(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """Judged documents with grade >= rel, N_p; shape (n_queries,)."""
    return arrays.n_relevant(rel).astype(np.float64)


def _iprec_11pt(arrays: RankingArrays, k: int | None, *, rel: int, trec_eval: int) -> np.ndarray:
    """Mean of IPrec at recall 0, 0.1, ..., 1 (trec_eval's 11pt_avg); shape (n_queries,)."""
    # the levels as trec_eval's default array holds them: 0.1 * 3 is not 0.3
    levels = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    return mean_of_levels(iprec_values(arrays, levels, rel=rel, trec_eval=trec_eval))


def mean_of_levels(values: np.ndarray) -> np.ndarray:
    """The mean of each row of ``values`` (n_queries, n_levels), summed left to right as
    trec_eval's ``m_11pt_avg.c`` sums its levels; shape (n_queries,)."""
    total = np.zeros(values.shape[0])
    for column in values.T:
        total = total + column
    return total / values.shape[1]


RECALL = ParamSpec("recall", float, None, 0.0, 1.0, doc="recall level r in [0, 1], required")
TREC_EVAL = ParamSpec(
    "trec_eval",
    int,
    9,
    9,
    10,
    doc="trec_eval version whose cut point is used: 9 (floor(r N_p + 0.9), pytrec_eval and "
    "ir_measures) or 10 (round(r N_p))",
)

register_family(
    MeasureFamily(
        "Rprec",
        _rprec,
        params=(REL,),
        cutoff="optional",
        summary="Rprec = relevant in the top R / R, R = N_p (trec_eval Rprec)",
        trec_eval=(TrecEvalName("Rprec"),),
    ),
    aliases=("R-Prec", "RPrec", "r-precision", "r_precision"),
)
register_family(
    MeasureFamily(
        "infAP",
        _infap,
        params=(REL,),
        cutoff="optional",
        summary="infAP = inferred AP (Yilmaz and Aslam 2006; trec_eval infAP, grade -1 = pooled "
        "but unjudged)",
        trec_eval=(TrecEvalName("infAP"),),
    ),
    aliases=("infap",),
)
register_family(
    MeasureFamily(
        "IPrec",
        _iprec,
        params=(RECALL, REL, TREC_EVAL),
        cutoff="none",
        summary="IPrec(recall=r) = max P@i over ranks at or after the c-th relevant document, "
        "c = floor(r N_p + 0.9) (trec_eval 9, ir_measures IPrec@r) or round(r N_p) (trec_eval "
        "10 iprec_at_recall_r, IPrec(trec_eval=10))",
        trec_eval=(
            TrecEvalName(
                "iprec_at_recall",
                "list",
                over="recall",
                defaults=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                params={"trec_eval": 10},
            ),
        ),
    ),
    trec=(
        rf"IPrec@{_RECALL}",
        rf"IPrec\(rel=(?P<rel>\d+)\)@{_RECALL}",
    ),
)
register_family(
    MeasureFamily(
        "IPrec-11pt",
        _iprec_11pt,
        params=(REL, TREC_EVAL),
        cutoff="none",
        summary="IPrec-11pt = mean of IPrec at recall 0, 0.1, ..., 1 (trec_eval 11pt_avg)",
        # 11pt_avg.r1,r2,... averages other recall levels: no one ragnb measure then
        trec_eval=(TrecEvalName("11pt_avg", "numbers", params={"trec_eval": 10}),),
    ),
)
register_family(
    MeasureFamily(
        "NumRet",
        _num_ret,
        cutoff="optional",
        depth=lambda k: k or 1,
        summary="NumRet = documents retrieved, summed over queries (trec_eval num_ret)",
        aggregate="sum",
        trec_eval=(TrecEvalName("num_ret"),),
    ),
)
register_family(
    MeasureFamily(
        "NumRelRet",
        _num_rel_ret,
        params=(REL,),
        cutoff="optional",
        summary="NumRelRet = relevant documents retrieved, summed (trec_eval num_rel_ret, "
        "ir_measures NumRet(rel=1))",
        aggregate="sum",
        trec_eval=(TrecEvalName("num_rel_ret"),),
    ),
    trec=(r"NumRet\(rel=(?P<rel>\d+)\)",),
)
register_family(
    MeasureFamily(
        "NumRel",
        _num_rel,
        params=(REL,),
        cutoff="none",
        depth=lambda k: 1,
        summary="NumRel = judged documents with grade >= rel, summed (trec_eval num_rel)",
        aggregate="sum",
        trec_eval=(TrecEvalName("num_rel"),),
    ),
)


# ----------------------------------------------------------------------------- public functions


@fill_doc
def r_precision(qrels: Qrels, run: Run, *, rel: int = 1, order: RunOrder = "score") -> float:
    """Mean R-precision: precision at rank R, R the number of relevant documents of the query.

    {{Parameters: qrels, run, rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``Rprec = n_p(R) / R`` with ``n_p(R)`` the relevant documents among the top R; a run shorter
    than R counts the missing ranks as non-relevant; 0 when R = 0. trec_eval's ``Rprec``
    (``m_Rprec.c``), ir_measures' ``Rprec``, ranx's ``r-precision``.

    {{References: ref_trec_book}}

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 1}}          # R = 3
    >>> run = {"q1": {"a": 4, "x": 3, "b": 2, "c": 1}}    # top 3: a, x, b
    >>> round(r_precision(qrels, run), 6)
    0.666667
    """
    return mean_of(Measure("Rprec", rel=rel), qrels, run, order)


@fill_doc
def inferred_ap(qrels: Qrels, run: Run, *, rel: int = 1, order: RunOrder = "score") -> float:
    """Mean inferred average precision (infAP) for a judged random sample of the pool.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``;
        grade -1 marks a pooled document that was not sampled for judging (trec_eval's reading).
    {{run, rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    At the i-th rank (1-based) holding a relevant document, with ``x`` relevant, ``n`` judged
    non-relevant and ``u`` pooled-unjudged documents above it, the expected precision is
    ``1/i + (i-1)/i * (x + n + u)/(i-1) * (x + eps)/(x + n + 2 eps)`` (1 at i = 1; eps = 1e-5):
    the documents above outside the pool count as non-relevant, the pooled-unjudged ones as
    relevant in the proportion of the judged ones. infAP is their sum over N_p. With complete
    judgements (no -1) it is AP up to the eps smoothing. trec_eval's ``infAP``
    (``m_infap.c``), ir_measures' ``infAP``.

    References
    ----------
    .. [1] E. Yilmaz and J. A. Aslam, "Estimating average precision with incomplete and imperfect
       judgments", CIKM 2006, Section 3.
    .. [2] trec_eval 9.0, ``m_infap.c``.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": -1, "c": 1}}         # b pooled but not judged
    >>> run = {"q1": {"a": 3, "b": 2, "c": 1}}
    >>> # a: 1; c (i = 3, x = 1, n = 0, u = 1): 1/3 + 2/3 * 2/2 * (1 + eps)/(1 + 2 eps)
    >>> round(inferred_ap(qrels, run), 6)
    0.999997
    """
    return mean_of(Measure("infAP", rel=rel), qrels, run, order)


@fill_doc
def interpolated_precision(
    qrels: Qrels, run: Run, recall: float, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean interpolated precision at a recall level (a point of the 11-point PR curve).

    {{Parameters: qrels, run}}
    recall : float in [0, 1]
        The recall level r.
    {{rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``IPrec(r) = max P@i`` over the ranks i at or after the rank of the ``c``-th relevant document,
    ``c = floor(r * N_p + 0.9)`` as trec_eval 9.0 computes it (the version inside pytrec_eval and
    so ir_measures; later trec_eval rounds to nearest instead, which differs when the fraction of
    ``r * N_p`` lies in [0.1, 0.5)); the first relevant document when ``c = 0``. 0 when the run
    retrieves fewer than ``c`` relevant documents or none. trec_eval's ``iprec_at_recall_r``
    (``m_iprec_at_recall.c``), ir_measures' ``IPrec@r``.

    {{References: ref_trec_book}}

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "c": 1}}
    >>> run = {"q1": {"x": 3, "a": 2, "c": 1}}             # P at the relevant ranks: 1/2, 2/3
    >>> round(interpolated_precision(qrels, run, 0.5), 6)   # c = 1 (1.9): max(1/2, 2/3)
    0.666667
    """
    return mean_of(Measure("IPrec", recall=recall, rel=rel), qrels, run, order)
