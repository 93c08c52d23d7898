"""Reciprocal rank (``RR``, ``RR@K``), trec_eval's ``recip_rank``."""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import REL, Measure, MeasureFamily, TrecEvalName, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, first_true, safe_div

__all__ = ["reciprocal_rank"]


def _rr(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """1 / rank of the first relevant document within ``k`` (0 if none); shape (n_queries,)."""
    return safe_div(1.0, first_true(arrays.relevant(rel, k)))


register_family(
    MeasureFamily(
        "RR",
        _rr,
        params=(REL,),
        cutoff="optional",
        summary="RR@K = 1 / rank of the first relevant document in the top K; 0 if none",
        trec_eval=(TrecEvalName("recip_rank"),),
    ),
    aliases=("MRR", "mrr"),
)


@fill_doc
def reciprocal_rank(
    qrels: Qrels, run: Run, k: int | None = None, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean reciprocal rank (MRR), optionally cut at ``k``.

    Parameters
    ----------
    {{qrels, run}}
    k : int, optional
        Only the top ``k`` ranks count; default the whole run.
    {{rel, order}}

    {{Returns: mean}}

    Notes
    -----
    ``RR = 1 / r`` with ``r`` the rank of the first relevant document, 0 when none is retrieved
    (within ``k``). Ties are ordered as trec_eval orders them (``doc_id`` descending), which is
    trec_eval's ``recip_rank`` (``m_recip_rank.c``). ir_measures computes ``RR@k`` with MS MARCO's
    script, which breaks ties by ``doc_id`` *ascending*; on tied scores the two can differ.

    References
    ----------
    .. [1] P. B. Kantor and E. M. Voorhees, "The TREC-5 confusion track", Information Retrieval
       2(2-3), 2000, pp. 165-176.
    .. [2] trec_eval 9.0, ``m_recip_rank.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 0, "c": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "c": 0.7}}   # first relevant (c) at rank 3
    >>> reciprocal_rank(qrels, run)
    0.3333333333333333
    >>> reciprocal_rank(qrels, run, 2)
    0.0
    """
    return mean_of(Measure("RR", k, rel=rel), qrels, run, order)
