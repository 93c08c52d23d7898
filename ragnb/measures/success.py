"""Success at K (``Success@K``, also called hit rate), trec_eval's ``success_K``."""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import REL, Measure, MeasureFamily, TrecEvalName, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays

__all__ = ["success_at_k"]


def _success(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """1.0 if any relevant document is in the top ``k``, else 0.0; shape (n_queries,)."""
    return np.asarray(arrays.relevant(rel, k).any(axis=1), dtype=np.float64)


register_family(
    MeasureFamily(
        "Success",
        _success,
        params=(REL,),
        summary="Success@K = 1 if a relevant document is in the top K, else 0",
        trec_eval=(TrecEvalName("success", "list", over="k", defaults=(1, 5, 10)),),
    ),
    aliases=("success", "HitRate", "hit_rate"),
)


@fill_doc
def success_at_k(
    qrels: Qrels, run: Run, k: int, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Fraction of queries with a relevant document in the top ``k`` (hit rate).

    {{Parameters: qrels, run, k, rel, order}}

    Returns
    -------
    float in [0, 1]
        Macro mean of the per-query values, each 0 or 1.

    Notes
    -----
    trec_eval's ``success_K`` (``m_success.c``) and ir_measures' ``Success@K``. Some papers call
    this "Recall@K"; here R@K is the TREC recall (:func:`ragnb.measures.recall.recall_at_k`).

    References
    ----------
    .. [1] trec_eval 9.0, ``m_success.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"c": 1}, "q2": {"z": 1}}
    >>> run = {"q1": {"a": 0.9, "c": 0.7}, "q2": {"y": 0.5}}   # q1 hits at rank 2, q2 misses
    >>> success_at_k(qrels, run, 2), success_at_k(qrels, run, 1)
    (0.5, 0.0)
    """
    return mean_of(Measure("Success", k, rel=rel), qrels, run, order)
