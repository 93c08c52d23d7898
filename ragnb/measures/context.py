"""Rank-weighted precision of RAG evaluation: ContextPrecision@K, PR-AUC and AP, with the PR curve.

Both average the precision at the ranks of the relevant documents; they differ in the divisor:

=================== ============================================ ===================================
name                definition                                   divisor
=================== ============================================ ===================================
ContextPrecision@K  sum_{k<=K} P@k v_k / sum_{k<=K} v_k          relevant documents **retrieved** in
                    (ragas ``context_precision``)                the top K (0 when there are none)
PR-AUC[@K]          sum_{k<=K} P@k v_k / N_p                     **all** relevant documents N_p of
                    (area under the step-wise PR curve)          the query: trec_eval's ``map``
                                                                 (``map_cut_K`` with @K)
=================== ============================================ ===================================

``v_k = 1`` when the document at rank k is judged with grade >= ``rel``. Hence
``ContextPrecision@K = PR-AUC@K * N_p / n_p(K)``: ContextPrecision ignores the relevant documents
the retriever missed (a top K with one relevant document at rank 1 scores 1 whatever N_p is),
PR-AUC does not. :func:`context_precision_from_verdicts` runs the same arithmetic on one ranked
list of verdicts, for the LLM-judged and similarity-judged context measures of
:mod:`ragnb.context`.

PR-AUC and AP
-------------
SPEAR (Section 2.2) scores retrievers by the area under the precision-recall curve traced over the
ranked list. Computed step-wise (precision at each recall step times the step's width, no
trapezoids, which Davis and Goadrich show overestimate the area), that area is exactly average
precision: recall rises by ``1 / N_p`` at each relevant rank and the precision there is P@k. So
``PR-AUC = AP`` (trec_eval ``map``) and ``PR-AUC@K = AP@K`` (``map_cut_K``), tested against
ir_measures; the two names are two measures of one kernel, each printed under its own name.
What SPEAR changes is the ground truth, not the formula: its N_p is the size of a pseudo ground
truth, the relevant chunks found by **any** of the compared retrievers ("subset sampling",
Section 2.1), so recall is relative to the pool of the systems compared. Build that ground truth
with :func:`pooled_qrels` and evaluate PR-AUC on it.

References
----------
.. [1] "RAG Evaluation Part 1: Retriever Evaluation" (Context Precision@K, worked examples 1-2).
.. [2] Y. Zou et al., "SPEAR: Subset-sampled Performance Evaluation via Automated Ground Truth
   Generation for RAG", arXiv:2507.06554, 2025, Sections 2.1-2.2.
.. [3] J. Davis and M. Goadrich, "The relationship between precision-recall and ROC curves",
   ICML 2006, Section 4 (interpolation in PR space).
.. [4] S. Es et al., "Ragas: automated evaluation of retrieval augmented generation", EACL 2024;
   ``ragas/metrics/_context_precision.py`` (``_calculate_average_precision``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    TREC_CUTOFFS,
    Measure,
    MeasureFamily,
    TrecEvalName,
    register_alias,
    register_family,
)
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import (
    RankingArrays,
    as_qrels_frame,
    as_run_frame,
    prepare,
    safe_div,
    top_k,
)

__all__ = [
    "context_precision_at_k",
    "context_precision_from_verdicts",
    "pooled_qrels",
    "pr_auc",
    "pr_curve",
]


# ----------------------------------------------------------------------------- kernels


def _precision_sums(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sum_k P@k v_k`` and ``sum_k v_k`` of each row of a (n_rows, K) bool mask, (n_rows,) each.

    The one arithmetic of Context Precision: the family kernels below and
    :func:`context_precision_from_verdicts` (one vector as one row) all run it.
    """
    precision = np.cumsum(v, axis=1) / np.arange(1, v.shape[1] + 1)
    return np.where(v, precision, 0.0).sum(axis=1), v.sum(axis=1)


def _context_precision(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """sum_k P@k v_k / sum_k v_k over the top k; 0 without a relevant document; (n_queries,)."""
    num = arrays.precision_at_relevant(rel, k).sum(axis=1)  # _precision_sums, shared
    return safe_div(num, arrays.found(rel, k))


def _pr_auc(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """sum_k P@k v_k / N_p over the top k (step-wise PR area = AP); 0 when N_p = 0."""
    num = arrays.precision_at_relevant(rel, k).sum(axis=1)
    return safe_div(num, arrays.n_relevant(rel))


register_family(
    MeasureFamily(
        "ContextPrecision",
        _context_precision,
        params=(REL,),
        cutoff="optional",
        summary="ContextPrecision@K = sum_k P@k v_k / sum_k v_k over k <= K; 0 if no v_k = 1",
    )
)
register_family(
    MeasureFamily(
        "PR-AUC",
        _pr_auc,
        params=(REL,),
        cutoff="optional",
        summary="PR-AUC@K = step-wise area under the PR curve to rank K = sum_k P@k v_k / N_p "
        "(SPEAR; the value of AP@K)",
    ),
)
# average precision under its names, one kernel with PR-AUC: ir_measures AP, AP@K; trec_eval
# map, map_cut_K; ranx map, map@K. Each prints as AP, the name of the measure asked for.
register_family(
    MeasureFamily(
        "AP",
        _pr_auc,
        params=(REL,),
        cutoff="optional",
        summary="AP@K = average precision to rank K = sum_k P@k v_k / N_p (trec_eval map / "
        "map_cut_K; the value of PR-AUC@K)",
        trec_eval=(
            TrecEvalName("map"),
            TrecEvalName("map_cut", "list", over="k", defaults=TREC_CUTOFFS),
        ),
    ),
    aliases=("MAP", "map", "mAP"),
)
register_alias("context_precision", "ContextPrecision")


# ----------------------------------------------------------------------------- public functions


@fill_doc
def context_precision_at_k(
    qrels: Qrels, run: Run, k: int | None = None, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean Context Precision@K: precision averaged over the relevant ranks of the top K.

    {{Parameters: qrels, run}}
    k : int, optional
        Cutoff K >= 1; default the whole run (ragas: all ``retrieved_contexts``).
    rel : int, default 1
        A judged document with grade >= ``rel`` is relevant (v_k = 1).
    {{order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``ContextPrecision@K = sum_{k=1..K} (P@k * v_k) / sum_{k=1..K} v_k``; 0 when the top K holds
    no relevant document (ragas divides by ``sum v_k + 1e-10`` and so differs by at most 1e-10
    relative). Unjudged documents and unfilled ranks have v_k = 0. The divisor counts relevant
    documents *retrieved*, unlike AP's N_p (see :func:`pr_auc`).

    References
    ----------
    .. [1] "RAG Evaluation Part 1: Retriever Evaluation", Context Precision@K, examples 1 and 2.
    .. [2] S. Es et al., Ragas, EACL 2024; ragas ``LLMContextPrecisionWithReference``.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "d": 1}}           # v = 1, 1, 0, 1, 0
    >>> run = {"q1": {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1}}
    >>> context_precision_at_k(qrels, run, 5), (1 + 1 + 3 / 4) / 3   # 11/12
    (0.9166666666666666, 0.9166666666666666)
    """
    return mean_of(Measure("ContextPrecision", k, rel=rel), qrels, run, order)


def context_precision_from_verdicts(v: Sequence[int] | np.ndarray) -> float:
    """Context Precision of one ranked list of relevance verdicts (an LLM's or a similarity's).

    Parameters
    ----------
    v : sequence of {0, 1} or of bool, length K, rank order
        ``v[k - 1] = 1`` when the context at rank k is relevant.

    Returns
    -------
    float in [0, 1]
        ``sum_k P@k v_k / sum_k v_k`` with ``P@k = (v_1 + ... + v_k) / k``; 0.0 without a
        relevant item (also for K = 0). The same arithmetic as the ``ContextPrecision`` family
        (:func:`context_precision_at_k`), run on this vector as a single query.

    Raises
    ------
    InputError
        When ``v`` is not a flat sequence, or holds a value other than 0 and 1 (naming its
        rank).

    References
    ----------
    .. [1] "RAG Evaluation Part 1: Retriever Evaluation", Context Precision@K, examples 1 and 2.
    .. [2] S. Es et al., Ragas, EACL 2024; ragas ``_calculate_average_precision`` (which divides
       by ``sum v_k + 1e-10``, a relative difference below 1e-10).

    Examples
    --------
    The two worked examples of "RAG Evaluation Part 1" (which rounds P@3 to 0.33 first and
    prints 0.477):

    >>> round(context_precision_from_verdicts([1, 1, 0, 1, 0]), 3)   # (1 + 1 + 3/4) / 3
    0.917
    >>> round(context_precision_from_verdicts([0, 0, 1, 1, 1]), 3)   # (1/3 + 2/4 + 3/5) / 3
    0.478
    >>> context_precision_from_verdicts([0, 0, 0]), context_precision_from_verdicts([])
    (0.0, 0.0)
    """
    try:
        a = np.asarray(v)
    except ValueError as exc:  # ragged nesting
        raise InputError(f"verdicts must be a flat sequence of 0 and 1: {exc}") from None
    if a.ndim != 1:
        raise InputError(f"verdicts must be a flat sequence of 0 and 1, got shape {a.shape}")
    if a.dtype != bool:
        off = np.flatnonzero(~np.isin(a, (0, 1)))
        if off.size:
            bad = a.tolist()[off[0]]
            raise InputError(f"verdict at rank {off[0] + 1} is {bad!r}; expected 0 or 1")
    num, n_relevant = _precision_sums(a.astype(bool)[None, :])
    return float(safe_div(num, n_relevant)[0])


@fill_doc
def pr_auc(
    qrels: Qrels, run: Run, k: int | None = None, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean area under the step-wise precision-recall curve of the ranking (SPEAR's PR-AUC).

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``. For
        SPEAR's relative recall pass :func:`pooled_qrels` of the compared runs.
    {{run}}
    k : int, optional
        Trace the curve over the top K only (the area up to recall R@K); default the whole run.
    {{rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    Each rank k is a threshold; the curve has the points (R@k, P@k). Summing rectangles of the
    width of each recall step, ``sum_k P@k * (R@k - R@(k-1)) = (1/N_p) sum_k P@k v_k``: average
    precision, trec_eval's ``map`` (``map_cut_K`` with K), 0 when N_p = 0. The recall not reached
    by the run adds no area (precision 0 there). :func:`pr_curve` gives the points.

    References
    ----------
    .. [1] Y. Zou et al., SPEAR, arXiv:2507.06554, 2025, Section 2.2 (PR-AUC).
    .. [2] J. Davis and M. Goadrich, ICML 2006, Section 4.
    .. [3] trec_eval 9.0, ``m_map.c``, ``m_map_cut.c``.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "c": 1, "z": 1}}           # N_p = 3; z never retrieved
    >>> run = {"q1": {"a": 3, "b": 2, "c": 1}}             # v = 1, 0, 1
    >>> round(pr_auc(qrels, run), 6), round((1 + 2 / 3) / 3, 6)   # steps of 1/3 at P 1, 2/3
    (0.555556, 0.555556)
    >>> context_precision_at_k(qrels, run)                  # same sum over n_p = 2 instead
    0.8333333333333333
    """
    return mean_of(Measure("PR-AUC", k, rel=rel), qrels, run, order)


@fill_doc
def pr_curve(
    qrels: Qrels, run: Run, k: int | None = None, *, rel: int = 1, order: RunOrder = "score"
) -> pd.DataFrame:
    """The precision-recall points of each query's ranking, a tidy frame for plotting.

    {{Parameters: qrels, run}}
    k : int, optional
        Points for ranks 1..K only; default every rank of the run.
    {{rel, order}}

    Returns
    -------
    DataFrame
        One row per (query of the qrels, retrieved rank <= K), sorted by query then rank:
        ``query_id`` (str), ``rank`` (int, 1-based), ``precision`` (float in [0, 1], P@rank),
        ``recall`` (float in [0, 1], R@rank; NaN when the query has no relevant document),
        ``relevant`` (bool, v_rank). Queries missing from the run have no rows. The step-wise area
        of a query, ``sum(precision[relevant]) / N_p``, is its :func:`pr_auc`; draw the curve as
        a step line of precision against recall.

    {{Raises: bad_input}}

    References
    ----------
    .. [1] Y. Zou et al., SPEAR, arXiv:2507.06554, 2025, Section 2.2.
    .. [2] J. Davis and M. Goadrich, ICML 2006.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "c": 1}}
    >>> run = {"q1": {"a": 3, "b": 2, "c": 1}}
    >>> print(pr_curve(qrels, run).round(4).to_string(index=False))
    query_id  rank  precision  recall  relevant
          q1     1     1.0000     0.5      True
          q1     2     0.5000     0.5     False
          q1     3     0.6667     1.0      True
    """
    measure = Measure("PR-AUC", k, rel=rel)  # validates k and rel
    arrays = prepare(qrels, run, order=order, depth=measure.cutoff)
    v = arrays.relevant(rel, k)
    filled = top_k(arrays.filled, k)
    hits = np.cumsum(v, axis=1)
    precision = hits / np.arange(1, v.shape[1] + 1)
    n_rel = arrays.n_relevant(rel).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(n_rel[:, None] > 0, hits / n_rel[:, None], np.nan)
    rows, cols = np.nonzero(filled)
    return pd.DataFrame(
        {
            "query_id": pd.Series(arrays.query_ids[rows], dtype=object),
            "rank": (cols + 1).astype(np.int64),
            "precision": precision[rows, cols],
            "recall": recall[rows, cols],
            "relevant": v[rows, cols],
        }
    )


@fill_doc
def pooled_qrels(
    qrels: Qrels,
    runs: Mapping[str, Run] | Sequence[Run],
    k: int | None = None,
    *,
    order: RunOrder = "score",
) -> pd.DataFrame:
    """The judgements of the documents retrieved by at least one compared run (SPEAR's pseudo GT).

    Parameters
    ----------
    {{qrels}}
    runs : mapping of str to run, or sequence of runs
        The runs being compared (frames or dicts, as for
        :func:`ragnb.evaluation.evaluate.evaluate`).
    k : int, optional
        Pool only the top ``k`` of each run (the depth the systems are compared at); default all.
    {{order}}

    Returns
    -------
    DataFrame
        Columns ``query_id`` (str), ``doc_id`` (str), ``relevance`` (int): the rows of ``qrels``
        whose document some run retrieves (in its top ``k``). N_p of a query becomes the relevant
        documents found by any compared system, so recall, R@K and PR-AUC become relative to the
        pool. Queries none of whose judged documents were retrieved drop out.

    Raises
    ------
    InputError
        On malformed qrels or runs, no runs, or a bad ``k``.

    Notes
    -----
    SPEAR pools the chunks recalled by all compared retrievers, labels them with an LLM, and takes
    the relevant ones as ground truth, so that "the number of positive samples predicted by each
    retriever remains unchanged, while negative samples are reduced to the same degree". Here the
    labels come from the given qrels; judged non-relevant pooled documents are kept (they do not
    change P, R or PR-AUC, and bpref needs them).

    References
    ----------
    .. [1] Y. Zou et al., SPEAR, arXiv:2507.06554, 2025, Section 2.1 ("Subset Sampling").

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 1, "d": 0}}
    >>> runs = {"s1": {"q1": {"a": 2, "d": 1}}, "s2": {"q1": {"b": 2, "x": 1}}}
    >>> pooled = pooled_qrels(qrels, runs)          # c was found by nobody: N_p 3 -> 2
    >>> pooled["doc_id"].tolist()
    ['a', 'b', 'd']
    >>> round(pr_auc(qrels, runs["s1"]), 4), pr_auc(pooled, runs["s1"])   # 1/3 -> 1/2
    (0.3333, 0.5)
    """
    if k is not None:
        Measure("PR-AUC", k)  # validates k
    items = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    if not items:
        raise InputError("pooled_qrels needs at least one run")
    q = as_qrels_frame(qrels)
    pooled = []
    for run in items:
        ranked = sort_run(as_run_frame(run), order, warn=False).run
        if k is not None:
            ranked = ranked[ranked["rank"] <= k]
        pooled.append(
            pd.DataFrame(
                {
                    "query_id": ranked["query_id"].astype(str).to_numpy(dtype=object),
                    "doc_id": ranked["doc_id"].astype(str).to_numpy(dtype=object),
                }
            )
        )
    pool = pd.concat(pooled, ignore_index=True).drop_duplicates()
    out = q.merge(pool, on=["query_id", "doc_id"], how="inner")
    return out.sort_values(["query_id", "doc_id"], kind="stable").reset_index(drop=True)
