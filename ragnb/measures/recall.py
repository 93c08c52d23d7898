"""Recall at K (``R@K``), trec_eval's ``recall_K``."""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    TREC_CUTOFFS,
    Measure,
    MeasureFamily,
    TrecEvalName,
    register_family,
)
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, safe_div

__all__ = ["recall_at_k"]


def _recall(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """Relevant documents in the top ``k`` over N_p (0 when N_p = 0); shape (n_queries,)."""
    return safe_div(arrays.found(rel, k), arrays.n_relevant(rel))


register_family(
    MeasureFamily(
        "R",
        _recall,
        params=(REL,),
        summary="R@K = (relevant documents in the top K) / N_p; 0 when N_p = 0",
        trec_eval=(TrecEvalName("recall", "list", over="k", defaults=TREC_CUTOFFS),),
    ),
    aliases=("Recall", "recall"),
)


@fill_doc
def recall_at_k(
    qrels: Qrels, run: Run, k: int, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean recall at ``k`` over the queries of the qrels.

    {{Parameters: qrels, run, k, rel, order}}

    {{Returns: mean}}

    Notes
    -----
    ``R@K = n_p / N_p`` with ``n_p`` the relevant documents among the top K and ``N_p`` all judged
    documents of the query with grade >= ``rel``. A query with ``N_p = 0`` scores 0 (not NaN), as
    in trec_eval's ``recall_K`` (``m_recall.c``); a query missing from the run scores 0.

    References
    ----------
    {{ref_van_rijsbergen}}
    .. [2] trec_eval 9.0, ``m_recall.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 0, "c": 1, "d": 1}}   # N_p = 3 (a, c, d)
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "c": 0.7}}
    >>> recall_at_k(qrels, run, 2)                             # a in top 2: 1/3
    0.3333333333333333
    >>> recall_at_k(qrels, run, 3, rel=2)                      # N_p = 1 (a), found: 1/1
    1.0
    """
    return mean_of(Measure("R", k, rel=rel), qrels, run, order)
