"""Intent-aware diversity measures of ndeval: ERR-IA, alpha-DCG, NRBP, P-IA, AP-IA, StRecall.

They read subtopic qrels, as ``alpha-nDCG`` (:mod:`ragnb.measures.diversity`): ``J(d, s) = 1`` when
document d has grade >= ``rel`` for subtopic s. ``N`` is the number of subtopics of the query with
at least one relevant document (ndeval's ``actualSubtopics``); a query with ``N = 0`` scores 0.
The novelty gain at rank r is ``g_r = sum_s J(d_r, s) (1 - alpha)^(c_s)``, ``c_s`` the documents
above r relevant to s.

==================== =============================================================================
name                 definition (per query)
==================== =============================================================================
ERR-IA(alpha)@K      ``sum_{r<=K} g_r / r`` over ndeval's "ideal ideal" ``N sum_{r<=K} (1 -
                     alpha)^(r-1) / r`` (ndeval divides nothing at K = 1)
nERR-IA(alpha)@K     ``sum_{r<=K} g_r / r`` over the same sum on the greedy ideal ranking
alpha-DCG(alpha)@K   ERR-IA with the discount ``1 / log2(r + 1)``
NRBP(alpha,beta)     ``(1 - (1 - alpha) beta) / N sum_r g_r beta^(r-1)``, over the whole run
nNRBP(alpha,beta)    NRBP over the NRBP of the greedy ideal ranking
P-IA@K               ``sum_{r<=K} sum_s J(d_r, s) / (K N)``
AP-IA                ``1/N sum_s AP_s``, AP_s the AP of the ranking on subtopic s alone
StRecall@K           subtopics with a relevant document in the top K, over N
==================== =============================================================================

ir_measures' names are read (``ERR_IA@20``, ``nERR_IA@20``, ``alpha_DCG@20``, ``NRBP``,
``nNRBP``, ``P_IA@20``, ``AP_IA`` or ``MAP_IA``, ``StRecall@20``) and ndeval's (``MAP-IA``,
``strec@20``).

Defaults ``alpha = 0.5``, ``beta = 0.5``, ``rel = 1``, as ndeval and ir_measures. The greedy ideal
ranking is ndeval's (:func:`ragnb.measures.diversity.greedy_ideal_gains`: at each rank the judged
document of largest gain, ties to the largest ``doc_id``). ndeval computes the cutoff measures at
K <= 20 only (pyndeval refuses larger K); the same formulas hold for any K here. As ndeval,
ERR-IA@1 and alpha-DCG@1 are the gain at rank 1 undivided (up to N, not 1). nNRBP of a query with
``N = 0`` is 0 here; ndeval divides 0 by 0 (NaN).

Run ties are broken by ``doc_id`` descending (trec_eval's order, :mod:`ragnb.frames.index`);
pyndeval, through ir_measures, breaks them by ``doc_id`` ascending: on tied scores the two differ.

References
----------
.. [1] O. Chapelle, S. Ji, C. Liao, E. Velipasaoglu, L. Lai and S.-L. Wu, "Intent-based diversity
   of search results: metrics and algorithms", Information Retrieval 14(6), 2011 (ERR-IA);
   O. Chapelle, D. Metzler, Y. Zhang and P. Grinspan, "Expected reciprocal rank for graded
   relevance", CIKM 2009, Section 6.
.. [2] C. L. A. Clarke, M. Kolla and O. Vechtomova, "An effectiveness measure for ambiguous and
   underspecified queries", ICTIR 2009, Section 4 (NRBP).
.. [3] C. L. A. Clarke, M. Kolla, G. V. Cormack, O. Vechtomova, A. Ashkan, S. Büttcher and
   I. MacKinnon, "Novelty and diversity in information retrieval evaluation", SIGIR 2008
   (alpha-DCG, the greedy ideal).
.. [4] R. Agrawal, S. Gollapudi, A. Halverson and S. Ieong, "Diversifying search results",
   WSDM 2009, Section 5 (intent-aware precision and MAP).
.. [5] C. Zhai, W. W. Cohen and J. Lafferty, "Beyond independent relevance: methods and
   evaluation metrics for subtopic retrieval", SIGIR 2003, Section 3 (subtopic recall).
.. [6] ndeval 4.5, TREC Web track 2009-2014 (``ndeval.c``), through pyndeval and ir_measures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    Measure,
    MeasureFamily,
    ParamSpec,
    register_alias,
    register_family,
)
from ragnb.measures.diversity import ALPHA_D, SubtopicArrays, greedy_ideal_gains, prepare_subtopics
from ragnb.measures.functions import Run, aggregate_values, fill_doc
from ragnb.measures.kernel import RankingArrays, safe_div, top_k

__all__ = ["INTENT_FAMILIES", "err_ia", "nrbp", "subtopic_recall"]

BETA = ParamSpec("beta", float, 0.5, 0.0, 1.0, doc="patience: the chance of reading on")


# ----------------------------------------------------------------------------- shared arrays


def _subtopics(arrays: RankingArrays, name: str) -> SubtopicArrays:
    if not isinstance(arrays, SubtopicArrays):
        raise InputError(
            f"{name} needs subtopic judgements: give TREC diversity qrels (qid subtopic docid "
            "rel) read as such (ragnb evaluate --qrels-format diversity; in Python evaluate() on "
            "ragnb.io.readers.read_diversity_qrels(path), or any qrels frame with a 'subtopic' "
            "column)"
        )
    return arrays


def _judged(arrays: SubtopicArrays, rel: int) -> np.ndarray:
    """J(d_r, s) at every rank, (n_queries, depth, n_subtopics), shared."""
    return arrays.derived(("intent-judged", rel), lambda _: arrays.subtopic_grades >= rel)


def _n_actual(arrays: SubtopicArrays, rel: int) -> np.ndarray:
    """N: subtopics with a relevant judged document, (n_queries,) float64."""
    return arrays.derived(
        ("intent-N", rel),
        lambda _: (arrays.pool_grades >= rel).any(axis=1).sum(axis=1).astype(np.float64),
    )


def _novelty(arrays: SubtopicArrays, alpha: float, rel: int) -> np.ndarray:
    """The novelty gain g_r of the run at every rank, (n_queries, depth), shared."""

    def build(_: RankingArrays) -> np.ndarray:
        judged = _judged(arrays, rel)
        before = np.cumsum(judged, axis=1) - judged
        return (judged * (1.0 - alpha) ** before).sum(axis=2)

    return arrays.derived(("intent-gain", alpha, rel), build)


def _ideal(arrays: SubtopicArrays, alpha: float, rel: int) -> np.ndarray:
    """Novelty gains of the greedy ideal over the whole pool (its documents with a relevant
    judgement; the rest gain 0), (n_queries, max relevant documents), shared."""

    def build(_: RankingArrays) -> np.ndarray:
        relevant = arrays.pool_grades >= rel
        useful = relevant.any(axis=2)
        # the documents with a relevant judgement first, each group still doc_id descending
        keep = np.argsort(~useful, axis=1, kind="stable")[:, : int(useful.sum(axis=1).max())]
        pooled = np.take_along_axis(relevant, keep[:, :, None], axis=1)
        return greedy_ideal_gains(pooled, pooled.shape[1], alpha)

    return arrays.derived(("intent-ideal", alpha, rel), build)


def _discounted(gains: np.ndarray, k: int, discount: np.ndarray) -> np.ndarray:
    """``sum_{r<=k} gains_r discount_r`` of each row, the gains padded with 0 to k ranks."""
    width = min(k, gains.shape[1])
    return gains[:, :width] @ discount[:width]


def _discount(kind: str, k: int) -> np.ndarray:
    ranks = np.arange(1, k + 1, dtype=np.float64)
    return 1.0 / ranks if kind == "err" else np.log(2.0) / np.log(ranks + 1.0)


def _ideal_ideal(n: np.ndarray, k: int, alpha: float, discount: np.ndarray) -> np.ndarray:
    """ndeval's "ideal ideal" normaliser: N (1 - alpha)^(r-1) at rank r; 1 at K = 1."""
    if k == 1:
        return np.ones_like(n)
    return n * (((1.0 - alpha) ** np.arange(k)) @ discount)


# ----------------------------------------------------------------------------- kernels


def _cascade(arrays: RankingArrays, k: int, alpha: float, rel: int, kind: str) -> np.ndarray:
    sub = _subtopics(arrays, "ERR-IA" if kind == "err" else "alpha-DCG")
    discount = _discount(kind, k)
    run = _discounted(_novelty(sub, alpha, rel), k, discount)
    n = _n_actual(sub, rel)
    return np.where(n > 0, safe_div(run, _ideal_ideal(n, k, alpha, discount)), 0.0)


def _err_ia(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """ERR-IA@k with ndeval's collection-independent normalisation; (n_queries,)."""
    return _cascade(arrays, k, alpha, rel, "err")


def _alpha_dcg(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """alpha-DCG@k with ndeval's collection-independent normalisation; (n_queries,)."""
    return _cascade(arrays, k, alpha, rel, "dcg")


def _n_err_ia(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """ERR-IA@k of the run over that of the greedy ideal; (n_queries,)."""
    sub = _subtopics(arrays, "nERR-IA")
    discount = _discount("err", k)
    run = _discounted(_novelty(sub, alpha, rel), k, discount)
    return safe_div(run, _discounted(_ideal(sub, alpha, rel), k, discount))


def _nrbp_sum(gains: np.ndarray, beta: float) -> np.ndarray:
    return gains @ beta ** np.arange(gains.shape[1], dtype=np.float64)


def _nrbp(arrays: RankingArrays, k: None, *, alpha: float, beta: float, rel: int) -> np.ndarray:
    """Novelty- and rank-biased precision over the whole run; (n_queries,)."""
    sub = _subtopics(arrays, "NRBP")
    scale = safe_div(1.0 - (1.0 - alpha) * beta, _n_actual(sub, rel))
    return _nrbp_sum(_novelty(sub, alpha, rel), beta) * scale


def _n_nrbp(arrays: RankingArrays, k: None, *, alpha: float, beta: float, rel: int) -> np.ndarray:
    """NRBP of the run over that of the greedy ideal (0 without a relevant judgement)."""
    sub = _subtopics(arrays, "nNRBP")
    run = _nrbp_sum(_novelty(sub, alpha, rel), beta)
    return safe_div(run, _nrbp_sum(_ideal(sub, alpha, rel), beta))


def _p_ia(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """Relevant (document, subtopic) pairs in the top k over k N; (n_queries,)."""
    sub = _subtopics(arrays, "P-IA")
    pairs = top_k(_judged(sub, rel), k).sum(axis=(1, 2))
    return safe_div(pairs, k * _n_actual(sub, rel))


def _st_recall(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """Subtopics covered in the top k over N; (n_queries,)."""
    sub = _subtopics(arrays, "StRecall")
    covered = top_k(_judged(sub, rel), k).any(axis=1).sum(axis=1)
    return safe_div(covered, _n_actual(sub, rel))


def _ap_ia(arrays: RankingArrays, k: None, *, rel: int) -> np.ndarray:
    """Mean over the N subtopics of the AP of the run on each; (n_queries,)."""
    sub = _subtopics(arrays, "AP-IA")
    judged = _judged(sub, rel)
    ranks = np.arange(1, judged.shape[1] + 1, dtype=np.float64)[None, :, None]
    precision_sum = (judged * (np.cumsum(judged, axis=1) / ranks)).sum(axis=1)
    per_subtopic = safe_div(precision_sum, (sub.pool_grades >= rel).sum(axis=1))
    return safe_div(per_subtopic.sum(axis=1), _n_actual(sub, rel))


_FAMILIES = (
    (
        MeasureFamily(
            "ERR-IA",
            _err_ia,
            params=(ALPHA_D, REL),
            summary="ERR-IA@K = sum_{r<=K} g_r / r over N sum_{r<=K} (1-alpha)^(r-1) / r, g_r the "
            "novelty gain sum_s J(d_r,s) (1-alpha)^(repeats of s above) (ndeval; Chapelle et al. "
            "2011)",
        ),
        ("ERR_IA",),
    ),
    (
        MeasureFamily(
            "nERR-IA",
            _n_err_ia,
            params=(ALPHA_D, REL),
            summary="nERR-IA@K = sum_{r<=K} g_r / r over the same on ndeval's greedy ideal ranking",
        ),
        ("nERR_IA",),
    ),
    (
        MeasureFamily(
            "alpha-DCG",
            _alpha_dcg,
            params=(ALPHA_D, REL),
            summary="alpha-DCG@K = sum_{r<=K} g_r / log2(r+1) over N sum_{r<=K} (1-alpha)^(r-1) / "
            "log2(r+1) (ndeval; Clarke et al. 2008)",
        ),
        ("alpha_DCG", "α_DCG", "alpha-dcg"),
    ),
    (
        MeasureFamily(
            "NRBP",
            _nrbp,
            params=(ALPHA_D, BETA, REL),
            cutoff="none",
            summary="NRBP = (1 - (1-alpha) beta) / N sum_r g_r beta^(r-1), the whole run (Clarke "
            "et al. 2009)",
        ),
        ("nrbp",),
    ),
    (
        MeasureFamily(
            "nNRBP",
            _n_nrbp,
            params=(ALPHA_D, BETA, REL),
            cutoff="none",
            summary="nNRBP = NRBP over the NRBP of ndeval's greedy ideal ranking",
        ),
        ("nnrbp",),
    ),
    (
        MeasureFamily(
            "P-IA",
            _p_ia,
            params=(REL,),
            summary="P-IA@K = relevant (document, subtopic) pairs in the top K / (K N) (Agrawal "
            "et al. 2009)",
        ),
        ("P_IA",),
    ),
    (
        MeasureFamily(
            "AP-IA",
            _ap_ia,
            params=(REL,),
            cutoff="none",
            summary="AP-IA = 1/N sum_s AP of the run on subtopic s (ndeval's MAP-IA; Agrawal et "
            "al. 2009)",
        ),
        ("AP_IA", "MAP_IA", "MAP-IA"),
    ),
    (
        MeasureFamily(
            "StRecall",
            _st_recall,
            params=(REL,),
            summary="StRecall@K = subtopics with a relevant document in the top K / N (Zhai et "
            "al. 2003; ndeval's strec)",
        ),
        ("strec", "S-recall"),
    ),
)
for _family, _aliases in _FAMILIES:
    register_family(_family, aliases=_aliases)
register_alias("α_nDCG", "alpha-nDCG")  # ir_measures' other spelling

#: The families that read subtopic judgements (``evaluate`` builds their arrays from them).
INTENT_FAMILIES = tuple(family.name for family, _ in _FAMILIES)


# ----------------------------------------------------------------------------- public functions


def _mean_on_subtopics(m: Measure, subtopic_qrels: pd.DataFrame, run: Run, order: RunOrder):
    values = m.compute(prepare_subtopics(subtopic_qrels, run, order=order, depth=m.depth))
    return aggregate_values(m, values)


@fill_doc
def err_ia(
    subtopic_qrels: pd.DataFrame,
    run: Run,
    k: int,
    *,
    alpha: float = 0.5,
    rel: int = 1,
    normalised: bool = False,
    order: RunOrder = "score",
) -> float:
    """Mean intent-aware expected reciprocal rank at ``k``, as ndeval computes it.

    Parameters
    ----------
    subtopic_qrels : DataFrame
        Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance`` (int).
    {{run, k}}
    alpha : float in [0, 1], default 0.5
        The chance that a document relevant to a subtopic satisfies a user after it; each
        further document on the subtopic gains ``1 - alpha`` times the previous one.
    rel : int, default 1
        A subtopic judgement with grade >= ``rel`` is relevant.
    normalised : bool, default False
        False: ``ERR-IA@K``, over ndeval's collection-independent "ideal ideal"; True:
        ``nERR-IA@K``, over the ERR-IA of the greedy ideal ranking.
    {{order}}

    Returns
    -------
    float
        Macro mean over the queries of the subtopic qrels; in [0, 1] but for ``k = 1`` without
        normalisation (ndeval's ERR-IA@1 is the novelty gain at rank 1, up to N).

    Raises
    ------
    InputError
        On malformed subtopic qrels or run, or a bad ``k``, ``alpha`` or ``rel``.

    Notes
    -----
    ``ERR-IA@K = sum_{r<=K} g_r / r / (N sum_{r<=K} (1 - alpha)^(r-1) / r)``, with
    ``g_r = sum_s J(d_r, s) (1 - alpha)^(c_s)``. Up to the constant ``alpha / N`` the numerator is
    the mean over the N subtopics of ERR with a stopping chance ``alpha`` at every relevant
    document (Chapelle et al. 2011, eq. 7).

    References
    ----------
    .. [1] O. Chapelle, S. Ji, C. Liao, E. Velipasaoglu, L. Lai and S.-L. Wu, "Intent-based
       diversity of search results: metrics and algorithms", Information Retrieval 14(6), 2011.
    .. [2] ndeval 4.5 (``computeERR``), TREC Web track 2009-2014.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q"] * 3, "subtopic": ["s1", "s1", "s2"],
    ...                       "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]})
    >>> run = {"q": {"a": 3, "b": 2, "c": 1}}      # gains 1, 0.5, 1
    >>> ours = err_ia(qrels, run, 3)
    >>> round(ours, 6), round((1 + 0.5 / 2 + 1 / 3) / (2 * (1 + 0.5 / 2 + 0.25 / 3)), 6)
    (0.59375, 0.59375)
    """
    m = Measure("nERR-IA" if normalised else "ERR-IA", k, alpha=alpha, rel=rel)
    return _mean_on_subtopics(m, subtopic_qrels, run, order)


@fill_doc
def nrbp(
    subtopic_qrels: pd.DataFrame,
    run: Run,
    *,
    alpha: float = 0.5,
    beta: float = 0.5,
    rel: int = 1,
    normalised: bool = False,
    order: RunOrder = "score",
) -> float:
    """Mean novelty- and rank-biased precision (NRBP) over the whole run.

    Parameters
    ----------
    subtopic_qrels : DataFrame
        Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance`` (int).
    {{run}}
    alpha : float in [0, 1], default 0.5
        Redundancy: each further document on a subtopic gains ``1 - alpha`` times the previous.
    beta : float in [0, 1], default 0.5
        Patience: the chance of reading on after each document (RBP's ``p``).
    rel : int, default 1
        A subtopic judgement with grade >= ``rel`` is relevant.
    normalised : bool, default False
        True: ``nNRBP``, over the NRBP of the greedy ideal ranking.
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the subtopic qrels.

    Raises
    ------
    InputError
        On malformed subtopic qrels or run, or a bad ``alpha``, ``beta`` or ``rel``.

    Notes
    -----
    ``NRBP = (1 - (1 - alpha) beta) / N sum_r g_r beta^(r-1)``: 1 for a ranking whose every
    document is relevant to every subtopic; with one subtopic and ``alpha = 0`` it is RBP with
    ``p = beta``.

    References
    ----------
    .. [1] C. L. A. Clarke, M. Kolla and O. Vechtomova, "An effectiveness measure for ambiguous
       and underspecified queries", ICTIR 2009, Section 4, eq. 8.
    .. [2] ndeval 4.5 (``computeNRBP``), TREC Web track 2009-2014.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q"] * 2, "subtopic": ["s1", "s2"],
    ...                       "doc_id": ["a", "b"], "relevance": [1, 1]})
    >>> run = {"q": {"x": 2, "a": 1}}        # g = 0, 1
    >>> nrbp(qrels, run), (1 - 0.5 * 0.5) / 2 * (1 * 0.5)
    (0.1875, 0.1875)
    """
    m = Measure("nNRBP" if normalised else "NRBP", alpha=alpha, beta=beta, rel=rel)
    return _mean_on_subtopics(m, subtopic_qrels, run, order)


@fill_doc
def subtopic_recall(
    subtopic_qrels: pd.DataFrame, run: Run, k: int, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean subtopic recall at ``k``: the share of a query's subtopics its top ``k`` covers.

    Parameters
    ----------
    subtopic_qrels : DataFrame
        Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance`` (int).
    {{run, k}}
    rel : int, default 1
        A subtopic judgement with grade >= ``rel`` is relevant.
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the subtopic qrels.

    Raises
    ------
    InputError
        On malformed subtopic qrels or run, or a bad ``k`` or ``rel``.

    References
    ----------
    .. [1] C. Zhai, W. W. Cohen and J. Lafferty, "Beyond independent relevance: methods and
       evaluation metrics for subtopic retrieval", SIGIR 2003, Section 3.
    .. [2] ndeval 4.5 (``computeSTRecall``), TREC Web track 2009-2014.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q"] * 3, "subtopic": ["s1", "s2", "s3"],
    ...                       "doc_id": ["a", "a", "b"], "relevance": [1, 1, 1]})
    >>> subtopic_recall(qrels, {"q": {"a": 2, "b": 1}}, 1)       # a covers 2 of 3
    0.6666666666666666
    """
    m = Measure("StRecall", k, rel=rel)
    return _mean_on_subtopics(m, subtopic_qrels, run, order)
