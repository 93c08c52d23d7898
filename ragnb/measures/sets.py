"""trec_eval's set and cutoff measures: the retrieved list read as a set, relative precision,
R-precision multiples, utility and the unjudged fraction.

==================== ========================================================== ===============
name                 definition (R = N_p, ret = documents retrieved, rr =       trec_eval
                     relevant retrieved)
==================== ========================================================== ===============
SetP                 rr / ret (0 when ret = 0)                                  ``set_P``
SetR                 rr / R (0 when R = 0)                                      ``set_recall``
SetRelP              rr / min(ret, R)                                           ``set_relative_P``
SetAP                rr^2 / (ret R): SetP x SetR                                ``set_map``
SetF(beta=1)         (beta + 1) P R / (beta P + R), P = SetP, R = SetR; beta    ``set_F``
                     as trec_eval uses it (the weight of R, not squared)
Utility(a,b,c,d,n)   a rr + b (ret - rr) + c (R - rr) + d (n + rr - ret - R),   ``utility``
                     n the documents of the collection (trec_eval ``-N``)
NumNonrelJudgedRet   judged non-relevant documents retrieved (summed)           ``num_nonrel_``
                                                                                ``judged_ret``
RelativeP@K          relevant in the top K / min(K, R) (0 when R = 0)           ``relative_P_K``
Unjudged@K           documents without a judgement (or judged negative) in the  ``unj_K``
                     top K / K
RprecMult(mult=m)    relevant in the top c / c, c = floor(m R + 0.9)            ``Rprec_mult_m``
==================== ========================================================== ===============

All read the whole run unless a cutoff is given; each is trec_eval 10.0's value per query.

References
----------
.. [1] C. J. van Rijsbergen, *Information Retrieval*, 2nd ed., Butterworths, 1979, ch. 7 (set
   precision, recall and the F measure).
.. [2] D. D. Lewis, "The TREC-4 filtering track", TREC-4, 1995 (linear utility).
.. [3] trec_eval 10.0, ``m_set_P.c``, ``m_set_recall.c``, ``m_set_rel_P.c``, ``m_set_map.c``,
   ``m_set_F.c``, ``m_utility.c``, ``m_num_nonrel_judged_ret.c``, ``m_rel_P.c``,
   ``m_unjudged.c``, ``m_Rprec_mult.c``, https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    TREC_CUTOFFS,
    Measure,
    MeasureFamily,
    ParamSpec,
    TrecEvalName,
    register_family,
)
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, safe_div, top_k

__all__ = ["set_f", "utility"]


def _counts(arrays: RankingArrays, rel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(retrieved, relevant retrieved, N_p) per query, as float64 arrays of shape (n_queries,)."""
    ret = arrays.n_retrieved.astype(np.float64)
    rel_ret = arrays.found(rel).astype(np.float64)
    return ret, rel_ret, arrays.n_relevant(rel).astype(np.float64)


def _set_p(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    ret, rel_ret, _ = _counts(arrays, rel)
    return safe_div(rel_ret, ret)


def _set_r(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    _, rel_ret, n_rel = _counts(arrays, rel)
    return safe_div(rel_ret, n_rel)


def _set_rel_p(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    ret, rel_ret, n_rel = _counts(arrays, rel)
    return safe_div(rel_ret, np.minimum(ret, n_rel))


def _set_ap(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    ret, rel_ret, n_rel = _counts(arrays, rel)
    return safe_div(rel_ret * rel_ret, ret * n_rel)


def _set_f(arrays: RankingArrays, k: int | None, *, beta: float, rel: int) -> np.ndarray:
    ret, rel_ret, n_rel = _counts(arrays, rel)
    p, r = safe_div(rel_ret, ret), safe_div(rel_ret, n_rel)
    return np.where(rel_ret > 0, safe_div((beta + 1.0) * p * r, beta * p + r), 0.0)


def _utility(
    arrays: RankingArrays,
    k: int | None,
    *,
    a: float,
    b: float,
    c: float,
    d: float,
    n: int,
    rel: int,
) -> np.ndarray:
    ret, rel_ret, n_rel = _counts(arrays, rel)
    return (
        a * rel_ret + b * (ret - rel_ret) + c * (n_rel - rel_ret) + d * (n + rel_ret - ret - n_rel)
    )


def _nonrel_judged_ret(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    if rel <= 0:  # no grade is both >= 0 and < rel
        return np.zeros(arrays.n_queries)
    # judged with 0 <= grade < rel: the judged ones (grade >= 0) less the relevant ones
    return (arrays.found(0, k) - arrays.found(rel, k)).astype(np.float64)


def _relative_p(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    found = arrays.found(rel, k)
    return safe_div(found, np.minimum(k, arrays.n_relevant(rel)))


def _unjudged(arrays: RankingArrays, k: int) -> np.ndarray:
    unjudged = top_k(arrays.filled, k) & ~arrays.relevant(0, k)  # no judgement >= 0
    return unjudged.sum(axis=1) / k


def _rprec_mult(arrays: RankingArrays, k: int | None, *, mult: float, rel: int) -> np.ndarray:
    # trec_eval: (long) (mult * num_rel + 0.9), the cutoff in documents
    cut = np.floor(mult * arrays.n_relevant(rel) + 0.9).astype(np.int64)
    width = arrays.depth
    found = np.zeros(arrays.n_queries)
    inside = (cut > 0) & (width > 0)
    rows = np.nonzero(inside)[0]
    found[rows] = arrays.hits_at(rel, rows, np.minimum(cut[rows], width) - 1)
    return safe_div(found, cut)


BETA = ParamSpec("beta", float, 1.0, 0.0, None, doc="weight of recall against precision")
MULT = ParamSpec("mult", float, None, 0.0, None, doc="multiple m of R, required")
UTILITY_PARAMS = (
    ParamSpec("a", float, 1.0, doc="worth of a relevant retrieved document"),
    ParamSpec("b", float, -1.0, doc="worth of a non-relevant retrieved document"),
    ParamSpec("c", float, 0.0, doc="worth of a relevant document not retrieved"),
    ParamSpec("d", float, 0.0, doc="worth of a non-relevant document not retrieved"),
    ParamSpec("n", int, 0, 0, None, doc="documents in the collection (trec_eval -N)"),
)
#: trec_eval's default multiples of R for Rprec_mult (``m_Rprec_mult.c``).
_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
for _name, _kernel, _summary, _trec in (
    ("SetP", _set_p, "SetP = relevant retrieved / retrieved", "set_P"),
    ("SetR", _set_r, "SetR = relevant retrieved / N_p", "set_recall"),
    ("SetRelP", _set_rel_p, "SetRelP = relevant retrieved / min(retrieved, N_p)", "set_relative_P"),
    ("SetAP", _set_ap, "SetAP = SetP x SetR", "set_map"),
):
    register_family(
        MeasureFamily(
            _name,
            _kernel,
            params=(REL,),
            cutoff="none",
            summary=_summary,
            trec_eval=(TrecEvalName(_trec),),
        ),
    )
register_family(
    MeasureFamily(
        "SetF",
        _set_f,
        params=(BETA, REL),
        cutoff="none",
        summary="SetF = (beta + 1) P R / (beta P + R) on the retrieved set (trec_eval set_F)",
        trec_eval=(TrecEvalName("set_F", "values", reads=("beta",)),),
    ),
    trec=(r"set_F[._](?P<beta>\d*\.?\d+)",),
)
register_family(
    MeasureFamily(
        "Utility",
        _utility,
        params=(*UTILITY_PARAMS, REL),
        cutoff="none",
        summary="Utility = a rr + b (ret - rr) + c (R - rr) + d (n + rr - ret - R) "
        "(trec_eval utility)",
        trec_eval=(TrecEvalName("utility", "values", reads=("a", "b", "c", "d")),),
    ),
)
register_family(
    MeasureFamily(
        "NumNonrelJudgedRet",
        _nonrel_judged_ret,
        params=(REL,),
        cutoff="optional",
        summary="NumNonrelJudgedRet = judged non-relevant documents retrieved, summed "
        "(trec_eval num_nonrel_judged_ret)",
        aggregate="sum",
        trec_eval=(TrecEvalName("num_nonrel_judged_ret"),),
    ),
)
register_family(
    MeasureFamily(
        "RelativeP",
        _relative_p,
        params=(REL,),
        summary="RelativeP@K = relevant in the top K / min(K, N_p) (trec_eval relative_P)",
        trec_eval=(TrecEvalName("relative_P", "list", over="k", defaults=TREC_CUTOFFS),),
    ),
)
register_family(
    MeasureFamily(
        "Unjudged",
        _unjudged,
        summary="Unjudged@K = retrieved documents without a judgement >= 0 in the top K / K "
        "(trec_eval unj)",
        trec_eval=(TrecEvalName("unj", "list", over="k", defaults=(5, 10, 20)),),
    ),
)
register_family(
    MeasureFamily(
        "RprecMult",
        _rprec_mult,
        params=(MULT, REL),
        cutoff="none",
        summary="RprecMult(mult=m) = relevant in the top c / c, c = floor(m N_p + 0.9) "
        "(trec_eval Rprec_mult)",
        trec_eval=(TrecEvalName("Rprec_mult", "list", over="mult", defaults=_MULTS),),
    ),
)


@fill_doc
def set_f(
    qrels: Qrels, run: Run, *, beta: float = 1.0, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean F measure of the retrieved set, trec_eval's ``set_F``.

    {{Parameters: qrels, run}}
    beta : float >= 0, default 1
        The weight of recall against precision, used unsquared as trec_eval does.
    {{rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``SetF = (beta + 1) P R / (beta P + R)`` with ``P = rr / ret`` and ``R = rr / N_p`` over the
    whole retrieved list; 0 when no relevant document is retrieved. trec_eval's ``set_F``
    (``m_set_F.c``); with ``beta = 1`` the harmonic mean of set precision and recall.

    References
    ----------
    {{ref_van_rijsbergen}}
    .. [2] trec_eval 10.0, ``m_set_F.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1}}
    >>> run = {"q1": {"a": 2.0, "x": 1.0}}             # P = 1/2, R = 1/2
    >>> set_f(qrels, run)
    0.5
    """
    return mean_of(Measure("SetF", beta=beta, rel=rel), qrels, run, order)


@fill_doc
def utility(
    qrels: Qrels,
    run: Run,
    *,
    a: float = 1.0,
    b: float = -1.0,
    c: float = 0.0,
    d: float = 0.0,
    n: int = 0,
    rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean linear utility of the retrieved set, trec_eval's ``utility``.

    {{Parameters: qrels, run}}
    a, b, c, d : float
        Worth of a relevant retrieved, a non-relevant retrieved, a relevant missed and a
        non-relevant missed document (trec_eval's defaults 1, -1, 0, 0).
    n : int >= 0, default 0
        Documents in the collection (trec_eval ``-N``), read only by ``d``.
    {{rel, order}}

    Returns
    -------
    float
        Macro mean of the per-query utilities (unbounded, in units of documents' worth).

    {{Raises: bad_input}}

    Notes
    -----
    ``a rr + b (ret - rr) + c (R - rr) + d (n + rr - ret - R)`` over the contingency table of
    the retrieved set. trec_eval's ``utility`` (``m_utility.c``), the TREC filtering tracks'
    linear utility.

    References
    ----------
    .. [1] D. D. Lewis, "The TREC-4 filtering track", TREC-4, 1995.
    .. [2] trec_eval 10.0, ``m_utility.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1}}
    >>> run = {"q1": {"a": 2.0, "x": 1.0, "y": 0.5}}   # rr = 1, ret = 3: 1 - 2
    >>> utility(qrels, run)
    -1.0
    """
    return mean_of(Measure("Utility", a=a, b=b, c=c, d=d, n=n, rel=rel), qrels, run, order)
