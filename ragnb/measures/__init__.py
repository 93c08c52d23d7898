"""Retrieval measures: value objects with round-trip names, and their vectorised kernels.

Families
--------
========== ==================================================== =================
name       definition                                           module
========== ==================================================== =================
P@K        relevant in top K / K                                :mod:`.precision`
R@K        relevant in top K / N_p (0 when N_p = 0)             :mod:`.recall`
nDCG[@K]   trec_eval ndcg_cut: linear gain, ideal of all judged :mod:`.ndcg`
RR[@K]     1 / rank of the first relevant                       :mod:`.rr`
Success@K  1 if a relevant document is in the top K             :mod:`.success`
Judged[@K] judged in top K / min(K, retrieved), as ir_measures  :mod:`.judged`
F, F_e     Primer eq. 2; F_e estimates N_p from the top 2K      :mod:`.primer`
T, T_u     Primer eqs. 3-4                                      :mod:`.primer`
nDCG_inK@K recall-free nDCG, ideal = the top K re-sorted        :mod:`.primer`
========== ==================================================== =================

Binary measures take ``rel`` (default 1, trec_eval's relevance level): ``P(rel=2)@10``.

Usage: :func:`parse_measure` for names, :func:`prepare` for the shared arrays, and
:func:`ragnb.evaluate.evaluate` for tables.
"""

from ragnb.measures import judged, ndcg, precision, primer, recall, rr, success  # noqa: F401
from ragnb.measures._kernel import RankingArrays, prepare
from ragnb.measures.base import (
    Measure,
    MeasureFamily,
    ParamSpec,
    families,
    parse_measure,
    parse_measures,
    register_alias,
    register_family,
    register_trec_alias,
)
from ragnb.measures.judged import judged_at_k
from ragnb.measures.ndcg import ndcg_at_k
from ragnb.measures.precision import precision_at_k
from ragnb.measures.primer import f_estimated, f_measure, ndcg_in_k, t_measure, t_unnormalised
from ragnb.measures.recall import recall_at_k
from ragnb.measures.rr import reciprocal_rank
from ragnb.measures.success import success_at_k

__all__ = [
    "Measure",
    "MeasureFamily",
    "ParamSpec",
    "RankingArrays",
    "f_estimated",
    "f_measure",
    "families",
    "judged_at_k",
    "ndcg_at_k",
    "ndcg_in_k",
    "parse_measure",
    "parse_measures",
    "precision_at_k",
    "prepare",
    "recall_at_k",
    "reciprocal_rank",
    "register_alias",
    "register_family",
    "register_trec_alias",
    "success_at_k",
    "t_measure",
    "t_unnormalised",
]
