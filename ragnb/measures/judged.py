"""Judgement rate at K (``Judged@K``), as ir_measures computes it."""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import Measure, MeasureFamily, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, safe_div, top_k

__all__ = ["judged_at_k"]


def _judged(arrays: RankingArrays, k: int | None) -> np.ndarray:
    """Judged documents in the top ``k`` over min(k, run length); shape (n_queries,)."""
    retrieved = arrays.n_retrieved if k is None else np.minimum(arrays.n_retrieved, k)
    return safe_div(top_k(arrays.judged, k).sum(axis=1), retrieved)


register_family(
    MeasureFamily(
        "Judged",
        _judged,
        cutoff="optional",
        summary="Judged@K = (judged documents in the top K) / min(K, documents retrieved)",
    )
)


@fill_doc
def judged_at_k(
    qrels: Qrels, run: Run, k: int | None = None, *, order: RunOrder = "score"
) -> float:
    """Mean share of the top ``k`` documents that have a judgement (any grade).

    {{Parameters: qrels, run, k_optional, order}}

    {{Returns: mean}}

    Notes
    -----
    Matches ir_measures' ``Judged`` provider (adapted from OpenNIR): the divisor is
    ``min(K, n_retrieved)``, so a run shorter than K is **not** penalised for its empty ranks
    (unlike P@K). A query missing from the run scores 0 (ir_measures' default value). A judged
    document of grade 0 or below counts as judged. One difference remains: ir_measures' Judged
    orders tied scores by ``doc_id`` ascending, ragnb by the run ordering policy (trec_eval's
    ``doc_id`` descending by default), so on ties straddling the cutoff the two can differ.

    References
    ----------
    .. [1] S. MacAvaney, A. Yates, N. Goharian and O. Frieder, "Streamlining evaluation with
       ir-measures", ECIR 2022; ``ir_measures/providers/judged_provider.py``.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 0}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7}}   # judged, unjudged, judged
    >>> judged_at_k(qrels, run, 2)                         # 1 judged in top 2: 1/2
    0.5
    >>> judged_at_k(qrels, run, 10)                        # run has 3: 2/min(10, 3)
    0.6666666666666666
    """
    return mean_of(Measure("Judged", k), qrels, run, order)
