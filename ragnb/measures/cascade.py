"""User-model measures: expected reciprocal rank (ERR) and rank-biased precision (RBP).

=================== ======================================================= ====================
name                definition                                              aliases
=================== ======================================================= ====================
ERR[(gmax=g)]@K     sum_i R_i / i prod_{j<i} (1 - R_j), R = (2^grade - 1) /  ir_measures ``ERR@K``
                    2^gmax (Chapelle et al. 2009 eq. 3; gdeval's gmax = 4)  (gdeval)
RBP[(p=,rel=)][@K]  (1 - p) sum_{i<=K} v_i p^(i-1), v_i = grade >= rel       ``RBP(p=0.8)``,
                    (Moffat and Zobel 2008 eq. 1)                           ranx ``rbp.8``
RBP-residual        the RBP a run could still gain: (1 - p) sum over the    ``RBP_res``
[(p=,rel=)][@K]     unjudged ranks to depth d of p^(i-1), plus p^d (Moffat
                    and Zobel 2008, Section 4); d = K, or the run's length
=================== ======================================================= ====================

Both read grades as trec_eval does: unjudged documents and unfilled ranks gain 0, negative grades
gain 0. RBP is binary (``v_i`` in {0, 1}), as Moffat and Zobel define it; ranx's ``rbp`` sums the
raw grades instead, which agrees on binary qrels only. ``RBP + RBP-residual`` bounds the RBP any
judging of the unjudged documents (and any continuation of the ranking beyond depth d) could give.

References
----------
.. [1] O. Chapelle, D. Metzler, Y. Zhang and P. Grinspan, "Expected reciprocal rank for graded
   relevance", CIKM 2009, Section 4, eq. 3 (ERR) and eq. 2 (R = (2^g - 1) / 2^gmax).
.. [2] A. Moffat and J. Zobel, "Rank-biased precision for measurement of retrieval
   effectiveness", ACM TOIS 27(1), 2008, Section 4 (eq. 1, residuals).
.. [3] ``gdeval.pl`` (TREC Web track 2010-2014), as shipped with ir_measures.
"""

from __future__ import annotations

import numpy as np

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import REL, Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, top_k

__all__ = ["expected_reciprocal_rank", "rank_biased_precision", "rbp_residual"]

GMAX = ParamSpec("gmax", int, 4, 1, 30, doc="the largest grade of the scale (ERR's g_max)")
PERSISTENCE = ParamSpec("p", float, 0.8, 0.0, 1.0, doc="persistence p in [0, 1)")


# ----------------------------------------------------------------------------- kernels


def _err(arrays: RankingArrays, k: int, *, gmax: int) -> np.ndarray:
    """Expected reciprocal rank at ``k`` (Chapelle et al. 2009, eq. 3); shape (n_queries,)."""
    high = int(arrays.grade_levels.max()) if len(arrays.grade_levels) else 0
    if high > gmax:
        raise InputError(
            f"ERR(gmax={gmax})@{k}: the qrels hold grade {high} > gmax; give the scale's largest "
            f"grade, e.g. ERR(gmax={high})@{k}",
            column="relevance",
        )
    grades = np.maximum(top_k(arrays.grades, k), 0).astype(np.float64)
    stop = (np.exp2(grades) - 1.0) / 2.0**gmax
    reach = np.cumprod(1.0 - stop, axis=1)
    reach = np.hstack([np.ones((stop.shape[0], 1)), reach[:, :-1]])
    return (stop * reach / np.arange(1, stop.shape[1] + 1)).sum(axis=1)


def _rbp(arrays: RankingArrays, k: int | None, *, p: float, rel: int) -> np.ndarray:
    """(1 - p) sum_i v_i p^(i-1) over the top ``k``; shape (n_queries,)."""
    v = arrays.relevant(rel, k)
    return (1.0 - p) * (v @ p ** np.arange(v.shape[1], dtype=np.float64))


def _rbp_residual(arrays: RankingArrays, k: int | None, *, p: float, rel: int) -> np.ndarray:
    """The RBP still open: unjudged ranks to depth d, and p^d beyond it; shape (n_queries,).

    d is ``k`` (ranks the run does not fill count as unjudged) or, without a cutoff, the number of
    documents the run returns for the query.
    """
    width = arrays.depth if k is None else min(k, arrays.depth)
    depth = arrays.n_retrieved if k is None else np.full(arrays.n_queries, k)
    seen = np.minimum(depth, width)
    positions = np.arange(width)
    open_ = (positions < seen[:, None]) & ~arrays.relevant(0, width)  # no judgement >= 0
    weights = p ** positions.astype(np.float64)
    return (1.0 - p) * (open_ @ weights) + p ** seen.astype(np.float64)


register_family(
    MeasureFamily(
        "ERR",
        _err,
        params=(GMAX,),
        summary="ERR@K = sum_i R_i / i prod_{j<i}(1 - R_j), R = (2^grade - 1) / 2^gmax "
        "(Chapelle et al. 2009; gdeval, gmax = 4)",
    ),
    aliases=("err",),
    trec=(r"err[._@](?P<k>\d+)",),
)
register_family(
    MeasureFamily(
        "RBP",
        _rbp,
        params=(PERSISTENCE, REL),
        cutoff="optional",
        summary="RBP@K = (1 - p) sum_{i<=K} v_i p^(i-1), binary v (Moffat and Zobel 2008)",
    ),
    trec=(r"rbp(?P<p>\.\d+)",),  # ranx writes p = 0.95 as rbp.95 (the decimals of p)
)
register_family(
    MeasureFamily(
        "RBP-residual",
        _rbp_residual,
        params=(PERSISTENCE, REL),
        cutoff="optional",
        summary="RBP-residual@K = (1 - p) sum over unjudged ranks i <= d of p^(i-1) + p^d, d = K "
        "or the run's length (Moffat and Zobel 2008, Section 4)",
    ),
    aliases=("RBP_res", "rbp_residual"),
)

# ----------------------------------------------------------------------------- public functions


@fill_doc
def expected_reciprocal_rank(
    qrels: Qrels, run: Run, k: int, *, gmax: int = 4, order: RunOrder = "score"
) -> float:
    """Mean expected reciprocal rank at ``k`` (a cascade user who stops at a satisfying document).

    {{Parameters: qrels, run, k}}
    gmax : int, default 4
        The largest grade of the scale; a grade g satisfies with probability
        ``(2^g - 1) / 2^gmax``. 4 is gdeval's (TREC Web track) and Chapelle et al.'s 0-4 scale.
    {{order}}

    {{Returns: mean}}

    Raises
    ------
    InputError
        On malformed qrels or run, a bad ``k``, or a grade above ``gmax``.

    Notes
    -----
    ``ERR@K = sum_{i<=K} (1/i) R_i prod_{j<i} (1 - R_j)``; unjudged documents, unfilled ranks and
    negative grades have R = 0. Equals ir_measures' ``ERR@K`` (gdeval, which prints 5 decimals).

    References
    ----------
    .. [1] O. Chapelle, D. Metzler, Y. Zhang and P. Grinspan, "Expected reciprocal rank for graded
       relevance", CIKM 2009, Section 4, eqs. 2-3.

    Examples
    --------
    >>> qrels = {"q1": {"a": 4, "b": 2}}
    >>> run = {"q1": {"b": 2, "a": 1}}           # R_b = 3/16, R_a = 15/16
    >>> expected_reciprocal_rank(qrels, run, 2), 3 / 16 + (1 - 3 / 16) * (15 / 16) / 2
    (0.568359375, 0.568359375)
    """
    return mean_of(Measure("ERR", k, gmax=gmax), qrels, run, order)


@fill_doc
def rank_biased_precision(
    qrels: Qrels,
    run: Run,
    k: int | None = None,
    *,
    p: float = 0.8,
    rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean rank-biased precision: the rate of relevant documents a persistent user sees.

    {{Parameters: qrels, run, k_optional}}
    p : float in [0, 1], default 0.8
        Persistence: the probability of reading on after each document.
    {{rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``RBP = (1 - p) sum_i v_i p^(i-1)``, ``v_i = 1`` for a judged document of grade >= ``rel``.
    Unjudged documents count 0; :func:`rbp_residual` says how much they and the unread tail
    could add.

    References
    ----------
    .. [1] A. Moffat and J. Zobel, "Rank-biased precision for measurement of retrieval
       effectiveness", ACM TOIS 27(1), 2008, eq. 1.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "c": 1}}
    >>> run = {"q1": {"a": 3, "b": 2, "c": 1}}   # v = 1, 0, 1
    >>> round(rank_biased_precision(qrels, run, p=0.5), 6)    # 0.5 * (1 + 0.25)
    0.625
    """
    return mean_of(Measure("RBP", k, p=p, rel=rel), qrels, run, order)


@fill_doc
def rbp_residual(
    qrels: Qrels,
    run: Run,
    k: int | None = None,
    *,
    p: float = 0.8,
    rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean RBP residual: how much RBP the unjudged and unread documents could still add.

    {{Parameters: qrels, run}}
    k : int, optional
        Evaluation depth d; default each query's run length.
    p : float in [0, 1], default 0.8
        Persistence.
    {{rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``residual = (1 - p) sum_{i<=d, unjudged} p^(i-1) + p^d``: every unjudged document in the top
    d (ranks the run does not fill, when d = K exceeds its length) and everything past d is taken
    as relevant. The true RBP lies in ``[RBP, RBP + residual]``; "judged" means a grade >= 0 in
    the qrels.

    References
    ----------
    .. [1] A. Moffat and J. Zobel, ACM TOIS 27(1), 2008, Section 4 ("residuals").

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "c": 0}}
    >>> run = {"q1": {"a": 3, "b": 2, "c": 1}}   # b unjudged at rank 2; d = 3
    >>> rbp_residual(qrels, run, p=0.5), 0.5 * 0.5 + 0.5**3
    (0.375, 0.375)
    """
    return mean_of(Measure("RBP-residual", k, p=p, rel=rel), qrels, run, order)
