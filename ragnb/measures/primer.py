"""Measures of Schwartz, Vasilyev and Sawaya (Primer): F, F_e, T, T_u and within-K nDCG.

Notation of the paper (Section 2.1): ``n_p`` relevant documents in the top K, ``n_n = K - n_p``
the others, ``N_p`` all relevant documents of the query. Here a document is relevant when it is
judged with grade >= ``rel`` (default 1); unjudged documents and ranks the run does not fill count
as non-relevant, so ``n_n`` includes them. All five are binary (grade-blind) except ``nDCG_inK``.

References
----------
.. [1] S. Schwartz, O. Vasilyev and R. Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer Technologies, Section 2.1, equations 1-4.
.. [2] C. J. van Rijsbergen, *Information Retrieval*, 2nd ed., Butterworths, 1979 (F).
"""

from __future__ import annotations

import numpy as np

from ragnb.core.docstrings import doc_filler
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import ALPHA, REL, Measure, MeasureFamily, register_alias, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, dcg, safe_div

__all__ = [
    "f_measure",
    "f_estimated",
    "t_measure",
    "t_unnormalised",
    "ndcg_in_k",
    "f_per_query",
    "f_e_per_query",
    "t_per_query",
    "t_u_per_query",
    "ndcg_in_k_per_query",
]


# ----------------------------------------------------------------------------- kernels

#: numpydoc entries the kernels share (:func:`ragnb.core.docstrings.doc_filler`).
_KERNEL_ENTRIES = {
    "arrays": "arrays : RankingArrays\n    The arrays of :func:`ragnb.measures.prepare`.",
    "k": "k : int\n    The cutoff K, >= 1.",
    "alpha": "alpha : float\n    The weight alpha in [0, 1].",
    "rel": "rel : int\n    The smallest grade that counts as relevant.",
}
_fill_kernel_doc = doc_filler(_KERNEL_ENTRIES)


def _n_p(arrays: RankingArrays, k: int, rel: int) -> np.ndarray:
    return arrays.found(rel, k).astype(np.float64)


def _f(n_p: np.ndarray, k: int, alpha: float, n_rel: np.ndarray) -> np.ndarray:
    """Eq. 2, ``n_p / (alpha K + (1 - alpha) N_p)`` with ``n_rel`` for N_p; 0 when the
    denominator is 0; shape (n_queries,)."""
    return safe_div(n_p, alpha * k + (1 - alpha) * n_rel)


@_fill_kernel_doc
def f_per_query(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """F(alpha)@K, one value per query: ``n_p / (alpha K + (1 - alpha) N_p)``.

    {{Parameters: arrays, k, alpha, rel}}

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [0, 1]; 0 when the denominator is 0.

    References
    ----------
    Schwartz, Vasilyev and Sawaya (Primer), Section 2.1, eqs. 1-2.
    """
    return _f(_n_p(arrays, k, rel), k, alpha, arrays.n_relevant(rel))


@_fill_kernel_doc
def f_e_per_query(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """F_e(alpha)@K, one value per query: F with N_p replaced by the relevant documents in the
    top 2K of the run (a recall estimate that needs no complete judgements).

    The arrays must reach rank 2K.

    {{Parameters: arrays, k, alpha, rel}}

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [0, 1]; 0 when the denominator is 0.

    References
    ----------
    Schwartz, Vasilyev and Sawaya (Primer), Section 2.1 (F_e) and Section 3.3.
    """
    return _f(_n_p(arrays, k, rel), k, alpha, _n_p(arrays, 2 * k, rel))


def _f_e_flags(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> dict[str, np.ndarray]:
    """Queries whose run holds fewer than 2K documents (but is not empty)."""
    return {"short_run": (arrays.n_retrieved > 0) & (arrays.n_retrieved < 2 * k)}


@_fill_kernel_doc
def t_per_query(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """T(alpha)@K, one value per query: ``(1 - alpha) n_p - alpha n_n / K``.

    {{Parameters: arrays, k, alpha, rel}}

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [-alpha, (1 - alpha) K].

    References
    ----------
    Schwartz, Vasilyev and Sawaya (Primer), Section 2.1, eq. 3.
    """
    n_p = _n_p(arrays, k, rel)
    return (1 - alpha) * n_p - alpha * (k - n_p) / k


@_fill_kernel_doc
def t_u_per_query(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """T_u(alpha)@K, one value per query: ``(1 - alpha) n_p - alpha n_n``.

    {{Parameters: arrays, k, alpha, rel}}

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [-alpha K, (1 - alpha) K].

    References
    ----------
    Schwartz, Vasilyev and Sawaya (Primer), Section 2.1, eq. 4.
    """
    n_p = _n_p(arrays, k, rel)
    return (1 - alpha) * n_p - alpha * (k - n_p)


@_fill_kernel_doc
def ndcg_in_k_per_query(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """nDCG within K, one value per query: DCG@K over the DCG of the same top-K gains sorted
    descending (no N_p, so no complete judgements needed); 0 if no gain.

    {{Parameters: arrays, k, rel}}

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [0, 1].

    References
    ----------
    Schwartz, Vasilyev and Sawaya (Primer), Sections 1 and 2.1.
    """
    gains = np.where(arrays.relevant(rel, k), np.maximum(arrays.grades[:, :k], 0), 0)
    best = -np.sort(-gains, axis=1)
    return safe_div(dcg(gains), dcg(best))


_BINARY = (ALPHA, REL)
register_family(
    MeasureFamily(
        "F", f_per_query, params=_BINARY, summary="F(alpha)@K = n_p / (alpha K + (1 - alpha) N_p)"
    )
)
register_family(
    MeasureFamily(
        "F_e",
        f_e_per_query,
        params=_BINARY,
        depth=lambda k: None if k is None else 2 * k,
        flags=_f_e_flags,
        summary="F_e(alpha)@K = F with N_p estimated as the relevant documents in the top 2K",
    )
)
register_family(
    MeasureFamily(
        "T", t_per_query, params=_BINARY, summary="T(alpha)@K = (1 - alpha) n_p - alpha n_n / K"
    )
)
register_family(
    MeasureFamily(
        "T_u", t_u_per_query, params=_BINARY, summary="T_u(alpha)@K = (1 - alpha) n_p - alpha n_n"
    )
)
register_family(
    MeasureFamily(
        "nDCG_inK",
        ndcg_in_k_per_query,
        params=(REL,),
        summary="nDCG_inK@K = DCG@K / DCG of the same top-K gains sorted (recall-free)",
    )
)
register_alias("f1", "F", alpha=0.5)


# ----------------------------------------------------------------------------- public functions


@fill_doc
def f_measure(
    qrels: Qrels, run: Run, k: int, *, alpha: float, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean F measure at ``k``: ``F(alpha)@K = n_p / (alpha K + (1 - alpha) N_p)``.

    {{Parameters: qrels, run, k}}
    alpha : float in [0, 1]
        Weight of precision: ``F = 1 / (alpha / P + (1 - alpha) / R)`` (eq. 1), so
        ``F(alpha=1)@K = P@K`` and ``F(alpha=0)@K = R@K``; ``alpha=0.5`` is F1.
    rel : int, default 1
        A judged document with grade >= ``rel`` is relevant (binary; grades above do not add).
    {{order}}

    {{Returns: mean}}

    Notes
    -----
    Eq. 2 of [1]. When the denominator is 0 (``alpha = 0`` and ``N_p = 0``) the value is 0, as for
    R@K. Unfilled ranks and unjudged documents are non-relevant.

    References
    ----------
    .. [1] Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval
       Quality?", Primer, Section 2.1, eqs. 1-2.
    .. [2] C. J. van Rijsbergen, *Information Retrieval*, 2nd ed., 1979, ch. 7.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 1}}            # N_p = 3
    >>> run = {"q1": {"a": 0.9, "x": 0.8}}                  # n_p = 1 in the top 2
    >>> f_measure(qrels, run, 2, alpha=0.5)                 # 1 / (0.5*2 + 0.5*3) = 0.4
    0.4
    """
    return mean_of(Measure("F", k, alpha=alpha, rel=rel), qrels, run, order)


@fill_doc
def f_estimated(
    qrels: Qrels, run: Run, k: int, *, alpha: float, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean F_e at ``k``: F with N_p replaced by the relevant documents in the top 2K.

    Parameters
    ----------
    qrels, run, k, alpha, rel, order
        As for :func:`f_measure`.

    {{Returns: mean}}

    Notes
    -----
    ``F_e(alpha)@K = n_p / (alpha K + (1 - alpha) n_p(2K))`` with ``n_p(2K)`` the relevant documents
    in the top 2K of the run, a crude estimate of ``N_p`` from the run alone [1]. Needs 2K ranks: a
    query whose run holds fewer than 2K documents gets a smaller estimate;
    :func:`ragnb.evaluation.evaluate` counts these queries (``counts["fe_short_runs"]``). A
    denominator of 0 gives 0.

    References
    ----------
    .. [1] Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval
       Quality?", Primer, Section 2.1 (F_e) and Section 3.3.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6}}   # n_p(2) = 1, n_p(4) = 2
    >>> round(f_estimated(qrels, run, 2, alpha=0.5), 6)          # 1 / (0.5*2 + 0.5*2)
    0.5
    """
    return mean_of(Measure("F_e", k, alpha=alpha, rel=rel), qrels, run, order)


def t_measure(
    qrels: Qrels, run: Run, k: int, *, alpha: float, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean T at ``k``: ``T(alpha)@K = (1 - alpha) n_p - alpha n_n / K`` (no N_p needed).

    Parameters
    ----------
    qrels, run, k, rel, order
        As for :func:`f_measure`.
    alpha : float in [0, 1]
        Trade-off between found relevant documents and the share of non-relevant ones.

    Returns
    -------
    float in [-alpha, (1 - alpha) K]
        Macro mean of the per-query values; not bounded by 1 (``n_p`` is a count).

    Notes
    -----
    Eq. 3 of [1], ``n_n = K - n_p``. Unfilled ranks count in ``n_n``, so an empty or missing run
    scores ``-alpha`` (the value of a top K with no relevant document), not 0: a system gains
    nothing by returning nothing.

    References
    ----------
    .. [1] Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval
       Quality?", Primer, Section 2.1, eq. 3.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6}}   # n_p = 2, n_n = 2 at K = 4
    >>> t_measure(qrels, run, 4, alpha=0.5)                      # 0.5*2 - 0.5*2/4 = 0.75
    0.75
    """
    return mean_of(Measure("T", k, alpha=alpha, rel=rel), qrels, run, order)


def t_unnormalised(
    qrels: Qrels, run: Run, k: int, *, alpha: float, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean T_u at ``k``: ``T_u(alpha)@K = (1 - alpha) n_p - alpha n_n``.

    Parameters
    ----------
    qrels, run, k, alpha, rel, order
        As for :func:`t_measure`.

    Returns
    -------
    float in [-alpha K, (1 - alpha) K]
        Macro mean of the per-query values.

    Notes
    -----
    Eq. 4 of [1]: T without the 1/K on ``n_n``. A missing or empty run scores ``-alpha K``.

    References
    ----------
    .. [1] Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval
       Quality?", Primer, Section 2.1, eq. 4.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6}}   # n_p = 2, n_n = 2 at K = 4
    >>> t_unnormalised(qrels, run, 4, alpha=0.5)                 # 0.5*2 - 0.5*2 = 0
    0.0
    """
    return mean_of(Measure("T_u", k, alpha=alpha, rel=rel), qrels, run, order)


@fill_doc
def ndcg_in_k(qrels: Qrels, run: Run, k: int, *, rel: int = 1, order: RunOrder = "score") -> float:
    """Mean within-K nDCG: DCG@K over the DCG of the same top-K documents ideally ordered.

    Parameters
    ----------
    qrels, run, k, order
        As for :func:`f_measure`.
    rel : int, default 1
        Documents with grade >= ``rel`` are relevant and gain their grade; the others gain 0.

    {{Returns: mean}}

    Notes
    -----
    Recall-free nDCG, the "nDCG without N_p" of [1]: the ideal is the top K of the run itself,
    re-sorted by gain, so it rewards ordering the retrieved relevant documents first and ignores
    relevant documents the run missed. Gain is linear, ``gain = grade`` for a relevant document
    (grade >= ``rel``) and 0 otherwise (unjudged, unfilled, or below ``rel``); discount
    ``1/log2(rank + 1)`` as trec_eval. With binary qrels this is the paper's DCG over its ``inK``
    0/1 list. A top K without a positive gain (no relevant document when ``rel >= 1``) scores 0.
    Not trec_eval's nDCG (:func:`ragnb.measures.ndcg.ndcg_at_k`), whose ideal uses all judged
    documents.

    References
    ----------
    .. [1] Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval
       Quality?", Primer, Sections 1 and 2.1.
    .. [2] K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
       ACM TOIS 20(4), 2002.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 1}}
    >>> run = {"q1": {"x": 0.9, "a": 0.8}}                  # gains 0, 1; ideal order 1, 0
    >>> round(ndcg_in_k(qrels, run, 2), 6)                  # (1/log2(3)) / 1
    0.63093
    """
    return mean_of(Measure("nDCG_inK", k, rel=rel), qrels, run, order)
