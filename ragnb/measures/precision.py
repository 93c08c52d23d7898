"""Precision at K (``P@K``), trec_eval's ``P_K``."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ragnb.frames import RunOrder
from ragnb.measures._kernel import RankingArrays
from ragnb.measures.base import (
    REL,
    Measure,
    MeasureFamily,
    _mean_of,
    register_alias,
    register_family,
    register_trec_alias,
)

__all__ = ["precision_at_k"]


def _precision(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """Relevant documents in the top ``k`` divided by ``k``; shape (n_queries,)."""
    return arrays.relevant(rel, k).sum(axis=1) / k


register_family(
    MeasureFamily(
        "P",
        _precision,
        params=(REL,),
        summary="P@K = (relevant documents in the top K) / K",
    )
)
register_alias("Precision", "P")
register_alias("precision", "P")
register_trec_alias(r"P[._](?P<k>\d+)", "P")


def precision_at_k(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    k: int,
    *,
    rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean precision at ``k`` over the queries of the qrels.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``.
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score``, or ``{query_id: {doc_id: score}}``.
    k : int
        Cutoff K >= 1.
    rel : int, default 1
        A judged document with grade >= ``rel`` is relevant.
    order : {"score", "file"}, default "score"
        Run ordering, see :func:`ragnb.frames.sort_run`.

    Returns
    -------
    float in [0, 1]
        Macro mean of the per-query values (shape (n_queries,) in :func:`ragnb.evaluate`).

    Notes
    -----
    ``P@K = n_p / K`` with ``n_p`` the relevant documents among the top K. Ranks the run does not
    fill count as non-relevant (the divisor is always K), as do unjudged documents; a query
    missing from the run scores 0. This is trec_eval's ``P_K`` (``m_P.c``) with
    ``-l rel``, and ir_measures' ``P(rel=r)@K``.

    References
    ----------
    .. [1] C. J. van Rijsbergen, *Information Retrieval*, 2nd ed., Butterworths, 1979, ch. 7.
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
    return _mean_of(Measure("P", k, rel=rel), qrels, run, order)
