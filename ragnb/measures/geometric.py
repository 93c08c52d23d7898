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

from ragnb.measures.base import REL, Kernel, Measure, MeasureFamily, TrecEvalName, register_family
from ragnb.measures.kernel import RankingArrays

__all__: list[str] = []


def _values_of(family: str) -> Kernel:
    """The kernel of a geometric mean: the per-query values of ``family`` (``AP``,
    ``Bpref``) at the same cutoff and ``rel``, shape (n_queries,)."""

    def kernel(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
        return Measure(family, k, rel=rel).compute(arrays)

    return kernel


# name, the family averaged (as the summary writes it) and trec_eval's name
for _name, _family, _shown, _trec in (
    ("GMAP", "AP", "AP", "gm_map"),
    ("GM-bpref", "Bpref", "bpref", "gm_bpref"),
):
    register_family(
        MeasureFamily(
            _name,
            _values_of(_family),
            params=(REL,),
            cutoff="optional",
            summary=f"{_name} = exp(mean over queries of log max({_shown}, 1e-5)) "
            f"(trec_eval {_trec})",
            aggregate="gmean",
            trec_eval=(TrecEvalName(_trec),),
        ),
    )
