"""Normalised discounted cumulative gain as trec_eval computes it (``nDCG@K``, ``ndcg_cut_K``).

Linear gain (gain = grade), not the exponential ``2**grade - 1`` of Burges et al. (2005): that is
a different measure and would need its own name.
"""

from __future__ import annotations

import numpy as np

from ragnb.frames import RunOrder
from ragnb.measures._kernel import RankingArrays, _dcg, _safe_div, _top
from ragnb.measures._public import Qrels, Run, fill_doc, mean_of
from ragnb.measures.base import Measure, MeasureFamily, register_family

__all__ = ["ndcg_at_k"]


def _ndcg(arrays: RankingArrays, k: int | None) -> np.ndarray:
    """DCG@k of the run over DCG@k of all judged grades sorted; shape (n_queries,)."""
    gains = np.maximum(_top(arrays.grades, k), 0)
    ideal = np.maximum(_top(arrays.ideal, k), 0)
    return _safe_div(_dcg(gains), _dcg(ideal))


register_family(
    MeasureFamily(
        "nDCG",
        _ndcg,
        cutoff="optional",
        summary="nDCG@K = DCG@K / ideal DCG@K; gain = max(grade, 0), discount 1/log2(rank+1), "
        "ideal from all judged documents",
    ),
    aliases=("NDCG", "ndcg"),
    trec=(r"ndcg_cut[._](?P<k>\d+)",),
)


@fill_doc
def ndcg_at_k(qrels: Qrels, run: Run, k: int | None = None, *, order: RunOrder = "score") -> float:
    """Mean nDCG at ``k`` (trec_eval's ``ndcg_cut_k``; whole run when ``k`` is None).

    Parameters
    ----------
    {{qrels, run}}
    k : int, optional
        Cutoff K >= 1; None evaluates the whole run (trec_eval's ``ndcg``).
    {{order}}

    {{Returns: mean}}

    Notes
    -----
    ``DCG@K = sum_{i=1..K} gain_i / log2(i + 1)`` with linear gain ``gain = max(grade, 0)``:
    negative grades and unjudged documents gain 0. The ideal DCG ranks **all** judged documents
    of the query by grade (not only the retrieved ones) and is cut at K. A query whose ideal DCG is
    0 (no positive grade) scores 0, as in trec_eval's ``m_ndcg_cut.c``; no relevance threshold
    applies (trec_eval's ``-l`` does not change nDCG). For the recall-free within-K variant see
    :func:`ragnb.measures.primer.ndcg_in_k`.

    References
    ----------
    .. [1] K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
       ACM TOIS 20(4), 2002, pp. 422-446.
    .. [2] trec_eval 9.0, ``m_ndcg_cut.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 0, "c": 1, "d": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "c": 0.7}}    # gains 2, 0, 1
    >>> # DCG@3 = 2 + 0 + 1/log2(4) = 2.5; ideal 2, 1, 1: 2 + 1/log2(3) + 1/2 = 3.1309
    >>> round(ndcg_at_k(qrels, run, 3), 6)
    0.798485
    """
    return mean_of(Measure("nDCG", k), qrels, run, order)
