"""Geometric means over queries: trec_eval's ``gm_map`` and ``gm_bpref``.

The per-query value is the query's AP or bpref; the aggregate is the geometric mean of the
values, each floored at 1e-5 (trec_eval's ``MIN_GEO_MEAN``), which rewards improving the hardest
queries more than the arithmetic mean does (Robertson 2006).

========== ============================================================ ============
name       aggregate                                                     trec_eval
========== ============================================================ ============
GMAP[@K]   exp(mean log max(AP, 1e-5))                                   ``gm_map``
GM-bpref   exp(mean log max(bpref, 1e-5))                                ``gm_bpref``
========== ============================================================ ============

References
----------
.. [1] S. Robertson, "On GMAP: and other transformations", CIKM 2006, Section 2.
.. [2] E. M. Voorhees, "Overview of the TREC 2004 Robust Retrieval Track", TREC 2004
   (GMAP as a robustness measure).
.. [3] trec_eval 10.0, ``m_gm_map.c``, ``m_gm_bpref.c``, https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

import numpy as np

from ragnb.measures.base import REL, Measure, MeasureFamily, register_family
from ragnb.measures.kernel import RankingArrays

__all__: list[str] = []


def _ap(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """Per-query AP (``PR-AUC``), aggregated geometrically; shape (n_queries,)."""
    return Measure("PR-AUC", k, rel=rel).compute(arrays)


def _bpref(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """Per-query bpref, aggregated geometrically; shape (n_queries,)."""
    return Measure("Bpref", k, rel=rel).compute(arrays)


register_family(
    MeasureFamily(
        "GMAP",
        _ap,
        params=(REL,),
        cutoff="optional",
        summary="GMAP = exp(mean over queries of log max(AP, 1e-5)) (trec_eval gm_map)",
        aggregate="gmean",
    ),
    trec=(r"gm_map",),
)
register_family(
    MeasureFamily(
        "GM-bpref",
        _bpref,
        params=(REL,),
        cutoff="optional",
        summary="GM-bpref = exp(mean over queries of log max(bpref, 1e-5)) (trec_eval gm_bpref)",
        aggregate="gmean",
    ),
    trec=(r"gm_bpref",),
)
