"""Precision at K (``P@K``), trec_eval's ``P_K``."""

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
from ragnb.measures.kernel import RankingArrays

__all__ = ["precision_at_k"]


def _precision(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """Relevant documents in the top ``k`` divided by ``k``; shape (n_queries,)."""
    return arrays.found(rel, k) / k


register_family(
    MeasureFamily(
        "P",
        _precision,
        params=(REL,),
        summary="P@K = (relevant documents in the top K) / K",
        trec_eval=(TrecEvalName("P", "list", over="k", defaults=TREC_CUTOFFS),),
    ),
    aliases=("Precision", "precision"),
)


@fill_doc
def precision_at_k(
    qrels: Qrels, run: Run, k: int, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean precision at ``k`` over the queries of the qrels.

    {{Parameters: qrels, run, k, rel, order}}

    Returns
    -------
    float in [0, 1]
        Macro mean of the per-query values (shape (n_queries,) in
        :func:`ragnb.evaluation.evaluate`).

    Notes
    -----
    ``P@K = n_p / K`` with ``n_p`` the relevant documents among the top K. Ranks the run does not
    fill count as non-relevant (the divisor is always K), as do unjudged documents; a query
    missing from the run scores 0. This is trec_eval's ``P_K`` (``m_P.c``) with
    ``-l rel``, and ir_measures' ``P(rel=r)@K``.

    References
    ----------
    {{ref_van_rijsbergen}}
    .. [2] trec_eval 9.0, ``m_P.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "c": 0.7}}   # ranks: a (2), x (unjudged), c (1)
    >>> precision_at_k(qrels, run, 2)                       # 1 relevant in top 2: 1/2
    0.5
    >>> precision_at_k(qrels, run, 5)                       # 2 relevant, 2 ranks unfilled: 2/5
    0.4
    >>> precision_at_k(qrels, run, 3, rel=2)                # only a has grade >= 2: 1/3
    0.3333333333333333
    """
    return mean_of(Measure("P", k, rel=rel), qrels, run, order)
