"""Normalised discounted cumulative gain: trec_eval's linear gain and Burges' exponential gain.

========== ============================================================ ========================
name       gain of a document of grade g (negative and unjudged: 0)     aliases
========== ============================================================ ========================
nDCG[@K]   g (Järvelin and Kekäläinen 2002; trec_eval ``ndcg_cut_K``)   ``ndcg_cut_10``,
                                                                        ranx ``ndcg@10``
nDCG_exp   2^g - 1 (Burges et al. 2005; gdeval, ranx ``ndcg_burges``)   ``ndcg_burges@10``,
[@K]                                                                    ``nDCG(dcg=exp-log2)@10``
========== ============================================================ ========================

Both discount by ``1 / log2(rank + 1)`` and take the ideal from all judged documents of the query.
On binary qrels they coincide.
"""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import TREC_CUTOFFS, Measure, MeasureFamily, TrecEvalName, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, safe_div

__all__ = ["ndcg_at_k", "ndcg_exp_at_k"]


def _ndcg(arrays: RankingArrays, k: int | None) -> np.ndarray:
    """DCG@k of the run over DCG@k of all judged grades sorted; shape (n_queries,)."""
    return safe_div(arrays.run_dcg(k), arrays.ideal_dcg(k))  # ndcg_of, shared DCGs


register_family(
    MeasureFamily(
        "nDCG",
        _ndcg,
        cutoff="optional",
        summary="nDCG@K = DCG@K / ideal DCG@K; gain = max(grade, 0), discount 1/log2(rank+1), "
        "ideal from all judged documents",
        # ndcg takes trec_eval's gains per level (ndcg.1=3,2=9): no one ragnb measure then
        trec_eval=(
            TrecEvalName("ndcg"),
            TrecEvalName("ndcg_cut", "list", over="k", defaults=TREC_CUTOFFS),
        ),
    ),
    aliases=("NDCG", "ndcg"),
)


def _ndcg_exp(arrays: RankingArrays, k: int | None) -> np.ndarray:
    """nDCG with gain 2^grade - 1 (negative grades 0); shape (n_queries,)."""
    return safe_div(arrays.run_dcg(k, exp=True), arrays.ideal_dcg(k, exp=True))


register_family(
    MeasureFamily(
        "nDCG_exp",
        _ndcg_exp,
        cutoff="optional",
        summary="nDCG_exp@K = DCG@K / ideal DCG@K with gain 2^grade - 1 (Burges et al. 2005)",
    ),
    aliases=("ndcg_burges", "NDCG_exp"),
    trec=(r"nDCG\(dcg=['\"]?exp-log2['\"]?\)(?:@(?P<k>\d+))?",),
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


@fill_doc
def ndcg_exp_at_k(
    qrels: Qrels, run: Run, k: int | None = None, *, order: RunOrder = "score"
) -> float:
    """Mean nDCG at ``k`` with exponential gain ``2^grade - 1`` (Burges et al.).

    {{Parameters: qrels, run, k_optional, order}}

    {{Returns: mean}}

    Notes
    -----
    As :func:`ndcg_at_k` with gain ``2^g - 1`` instead of ``g`` (negative grades and unjudged
    documents gain 0): a grade-3 document weighs 7 grade-1 documents, not 3. ir_measures'
    ``nDCG(dcg='exp-log2')@K``, ranx's ``ndcg_burges@K``, gdeval's nDCG; equal to ``nDCG`` on
    binary qrels.

    References
    ----------
    .. [1] C. Burges et al., "Learning to rank using gradient descent", ICML 2005, Section 6.
    .. [2] ranx, ``ranx/metrics/ndcg.py`` (``ndcg_burges``).

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "c": 1}}
    >>> run = {"q1": {"c": 2, "a": 1}}          # DCG = 1 + 3/log2(3); ideal 3 + 1/log2(3)
    >>> round(ndcg_exp_at_k(qrels, run), 6)
    0.796708
    """
    return mean_of(Measure("nDCG_exp", k), qrels, run, order)
