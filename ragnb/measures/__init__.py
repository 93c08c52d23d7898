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
Bpref[@K]  trec_eval bpref: judged non-relevant above relevant  :mod:`.incomplete`
nDCG', P'  condensed lists: unjudged removed before cutting     :mod:`.incomplete`
ContextPr. ContextPrecision@K: sum P@k v_k / sum v_k (ragas)    :mod:`.context`
AP[@K]     average precision (trec_eval map, map_cut_K; MAP)    :mod:`.context`
PR-AUC[@K] step-wise PR area (SPEAR), the value of AP[@K]       :mod:`.context`
Rprec      relevant in the top N_p / N_p                        :mod:`.trec`
infAP      inferred AP (Yilmaz and Aslam 2006), trec_eval's     :mod:`.trec`
IPrec      interpolated precision at recall r (``IPrec@0.5``)   :mod:`.trec`
NumRet,    documents retrieved / relevant retrieved / relevant, :mod:`.trec`
NumRelRet, summed over queries (trec_eval num_ret, num_rel_ret,
NumRel     num_rel)
nDCG_exp   nDCG with gain 2^grade - 1 (Burges; ranx ndcg_burges) :mod:`.ndcg`
ERR@K      expected reciprocal rank (Chapelle et al. 2009)      :mod:`.cascade`
RBP        rank-biased precision and its residual (Moffat and   :mod:`.cascade`
           Zobel 2008): ``RBP(p=0.8)``, ``RBP-residual``
alpha-nDCG alpha-nDCG@K on subtopic qrels (Clarke et al. 2008)  :mod:`.diversity`
ERR-IA, .. ndeval's intent-aware set on subtopic qrels: ERR-IA,    :mod:`.intent`
           nERR-IA, alpha-DCG, NRBP, nNRBP, P-IA, AP-IA,
           StRecall
Compat     RBO with the most compatible ideal ranking (Clarke   :mod:`.compat`
           et al. 2020)
INST, ..   C/W/L user models as cwl-eval: INST, INSQ, BPM,      :mod:`.cwl`
           SDCG, RBP-CWL, TBG, U, NERR8-11 (expected utility)
RA-nWG-nov RA-nWG, each repeat of a source weighted beta        :mod:`.novelty`
NuggetRec. NuggetRecall@K: nuggets supported in the top K /     :mod:`.nuggets`
           nuggets, on nugget qrels (AutoNuggetizer's scores)
Evidence-  an agent's search trajectory: EvidenceRecall@C,      :mod:`.trajectory`
Recall,... SearchCalls, CallsToFirstRel, CallRR, CallsToEvidence,
           Redundancy, CallnDCG@K, CallnDCGSlope@K, RerankGain@K,
           TokensPerRel, SecondsPerRel (BrowseComp-Plus)
prefs_*    trec_eval's preference measures (``prefs_simp``,     :mod:`.prefs`
           ``prefs_pair``, ``prefs_avgjg``, ...), on preference
           judgements
========== ==================================================== =================

Binary measures take ``rel`` (default 1, trec_eval's relevance level): ``P(rel=2)@10``.

Usage: :func:`parse_measure` for names, :func:`prepare` for the shared arrays, and
:func:`ragnb.evaluation.evaluate.evaluate` for tables. trec_eval's names (``P_10``, ``map``,
``-m P.5,10``, the set ``all_trec``) are answered by :mod:`ragnb.measures.trec_names`.
"""

from ragnb.measures import (  # noqa: F401
    cascade,
    compat,
    context,
    cwl,
    diversity,
    gains,
    geometric,
    graded,
    incomplete,
    intent,
    judged,
    ndcg,
    novelty,
    nuggets,
    precision,
    prefs,
    primer,
    recall,
    rr,
    sets,
    success,
    trajectory,
    trec,
    trec_names,
)
from ragnb.measures.base import (
    Measure,
    MeasureFamily,
    ParamSpec,
    TrecEvalName,
    families,
    parse_measure,
    parse_measures,
    register_alias,
    register_family,
    register_trec_alias,
    trec_eval_names,
)
from ragnb.measures.cascade import expected_reciprocal_rank, rank_biased_precision, rbp_residual
from ragnb.measures.compat import compatibility
from ragnb.measures.context import context_precision_at_k, pooled_qrels, pr_auc, pr_curve
from ragnb.measures.cwl import cwl_eu, inst, scaled_dcg
from ragnb.measures.diversity import alpha_ndcg, prepare_subtopics
from ragnb.measures.graded import (
    GRADE_MAPS,
    GRADED_FAMILIES,
    complete_hit,
    grade_map_record,
    graded_measures,
    harm_at_k,
    map_grades,
    n_recall_4plus,
    n_recall_5,
    precision_4plus,
    ra_nwg,
    rarity_weights,
    resolve_grade_map,
)
from ragnb.measures.incomplete import (
    bpref,
    condensed_ndcg,
    condensed_precision,
    judged_gap_warning,
)
from ragnb.measures.intent import err_ia, nrbp, subtopic_recall
from ragnb.measures.judged import judged_at_k
from ragnb.measures.kernel import RankingArrays, prepare
from ragnb.measures.ndcg import ndcg_at_k, ndcg_exp_at_k
from ragnb.measures.novelty import prepare_sources, ra_nwg_novelty
from ragnb.measures.nuggets import nugget_recall
from ragnb.measures.precision import precision_at_k
from ragnb.measures.primer import f_estimated, f_measure, ndcg_in_k, t_measure, t_unnormalised
from ragnb.measures.proc import ideal_reorder, proc_table
from ragnb.measures.recall import recall_at_k
from ragnb.measures.rr import reciprocal_rank
from ragnb.measures.success import success_at_k
from ragnb.measures.trec import inferred_ap, interpolated_precision, r_precision

__all__ = [
    "GRADED_FAMILIES",
    "GRADE_MAPS",
    "Measure",
    "MeasureFamily",
    "ParamSpec",
    "RankingArrays",
    "TrecEvalName",
    "alpha_ndcg",
    "bpref",
    "compatibility",
    "complete_hit",
    "condensed_ndcg",
    "condensed_precision",
    "context_precision_at_k",
    "cwl_eu",
    "err_ia",
    "expected_reciprocal_rank",
    "f_estimated",
    "f_measure",
    "families",
    "harm_at_k",
    "ideal_reorder",
    "inferred_ap",
    "inst",
    "interpolated_precision",
    "judged_at_k",
    "judged_gap_warning",
    "graded_measures",
    "map_grades",
    "grade_map_record",
    "resolve_grade_map",
    "n_recall_4plus",
    "n_recall_5",
    "ndcg_at_k",
    "ndcg_exp_at_k",
    "ndcg_in_k",
    "nrbp",
    "nugget_recall",
    "parse_measure",
    "parse_measures",
    "pooled_qrels",
    "pr_auc",
    "pr_curve",
    "precision_4plus",
    "precision_at_k",
    "prepare",
    "prepare_sources",
    "prepare_subtopics",
    "proc_table",
    "r_precision",
    "ra_nwg",
    "ra_nwg_novelty",
    "rank_biased_precision",
    "rarity_weights",
    "rbp_residual",
    "recall_at_k",
    "reciprocal_rank",
    "register_alias",
    "register_family",
    "register_trec_alias",
    "scaled_dcg",
    "subtopic_recall",
    "success_at_k",
    "t_measure",
    "t_unnormalised",
    "trec_eval_names",
]
