"""User models of the C/W/L framework, as cwl-eval computes them: INST, INSQ, BPM, SDCG, TBG, ...

A C/W/L measure is a user model: ``C(i)``, the chance that a user who has read rank i reads on,
gives the weights ``W(i) = prod_{j<i} C(j) / sum_{i'<=n} prod_{j<i'} C(j)`` over ``n = 1000``
ranks (cwl-eval's ``--max_depth``), and the measure is the expected utility per document read
(expected rate of gain), ``EU = sum_{i<=n} W(i) g_i``. Gains are grades scaled to [0, 1], as
ir_measures gives them to cwl-eval: ``g = (clip(grade, min_rel, max_rel) - min_rel) / (max_rel -
min_rel)``, a negative grade read as 0, an unjudged document or an empty rank gaining 0
(cwl-eval's lower bound). A grade above ``max_rel`` raises: give the scale's largest grade
(``INST(max_rel=3)`` on TREC DL grades; the default ``max_rel = 1`` reads binary qrels, a gain
file of 0s and 1s to cwl-eval). Every document costs 1 (cwl-eval without a cost file).

=============== ==================================================================================
name            C(i), with G(i) the gain of ranks 1..i
=============== ==================================================================================
INST(T)         ``((i + T + T_i - 1) / (i + T + T_i))^2``, ``T_i = T - G(i)``
INSQ(T)         ``((i + 2T - 1) / (i + 2T))^2``
BPM(T)@K        1 while ``G(i) < T`` and ``i < K``, then 0 (static BPM)
SDCG@K          ``log2(i + 1) / log2(i + 2)`` for i < K: DCG@K over ``sum_{i<=K} 1 / log2(i + 1)``
RBP-CWL(p)      ``p``: RBP of graded gains, normalised over n ranks
TBG(H)          ``W(i)`` proportional to ``2^(-(i - 1)/H)`` (a unit of time per document)
U(L)            ``W(i)`` proportional to ``max(0, 1 - (i - 1)/L)`` for i < n, 0 at n
NERR8@K         ``1 - g_i`` for i < K
NERR9@K         ``i / (i + 1) (1 - g_i)`` for i < K
NERR10(p)       ``p (1 - g_i)``
NERR11(T)       ``((i + 2T - 1) / (i + 2T))^2 (1 - g_i)``
=============== ==================================================================================

cwl-eval prints them ``INST-T=1.0``, ``INSQ-T=1.0``, ``BPM-Static-T=1-K=10``, ``NDCG-k@10``,
``RBP@0.8``, ``TBG-H@224``, ``U-L@1000``, ``NERR-EQ8@k=10``, ``NERR-EQ9@k=10``,
``NERR-EQ10@phi=0.9``, ``NERR-EQ11@T=1.0``: those names are read too (gains in [0, 1], so
``max_rel = 1``), as are ir_measures' (``INST(max_rel=3)``, ``BPM(T=1,max_rel=1)@10``,
``SDCG(max_rel=3)@10``, ``NERR10(p=0.9,max_rel=1)``). The value is cwl-eval's EU column, the one
ir_measures reports. cwl-eval prints four more per measure: ETU, the expected total gain when the
user stops (``sum_i L(i) G(i)``, ``L(i) = W(i) - W(i+1)`` scaled by ``1 / W(1)``); EC and ETC, the
expected cost per document read and in total (EC = 1 with unit costs); ED, the expected depth
``1 / W(1)``. With unit costs ``ETU = EU x ED``: Smucker and Clarke's TBG and Sakai and Dou's U are
totals (cwl-eval's ETU), so multiply ``TBG(H)`` and ``U(L)`` by their ED, a constant of H or L
(``sum_{i<=n} 2^(-(i-1)/H)``, 309.001 for H = 224; ``sum_{i<n} max(0, 1 - (i-1)/L)``, 500.499
for L = 1000). cwl-eval's other measures (its P, RR, AP, NPV, SET, IFT, dynamic BPM) are not here.

Run order is ragnb's (score descending, ties by ``doc_id`` descending); cwl-eval reads a result
file in its line order and ir_measures sorts by score alone (ties stay in input order).

References
----------
.. [1] A. Moffat, P. Bailey, F. Scholer and P. Thomas, "INST: an adaptive metric for information
   retrieval evaluation", ADCS 2015, eq. 4 (INST); A. Moffat, F. Scholer and P. Thomas, "Models
   and metrics: IR evaluation as a user process", ADCS 2012, Section 4 (INSQ).
.. [2] F. Zhang, Y. Liu, X. Li, M. Zhang, Y. Xu and S. Ma, "Evaluating web search with a
   Bejeweled player model", SIGIR 2017, Section 4 (static BPM).
.. [3] M. D. Smucker and C. L. A. Clarke, "Time-based calibration of effectiveness measures",
   SIGIR 2012, eq. 3 (TBG); T. Sakai and Z. Dou, "Summaries, ranked retrieval and sessions: a
   unified framework for information access evaluation", SIGIR 2013, Section 3 (U).
.. [4] L. Azzopardi, J. Mackenzie and A. Moffat, "ERR is not C/W/L: exploring the relationship
   between expected reciprocal rank and other metrics", ICTIR 2021, eqs. 8-11 (NERR).
.. [5] A. Moffat, P. Thomas and F. Scholer, "Users versus models: what observation tells us about
   effectiveness metrics", CIKM 2013 (C/W/L); L. Azzopardi, P. Thomas and A. Moffat, "cwl_eval:
   an evaluation tool for information retrieval", SIGIR 2019 (cwl-eval 1.0.12).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, top_k

__all__ = ["CWL_DEPTH", "CWL_FAMILIES", "cwl_eu", "inst", "scaled_dcg"]

#: Ranks every C/W/L user model reads (cwl-eval's ``--max_depth`` default, ir_measures' too).
CWL_DEPTH = 1000

MIN_REL = ParamSpec("min_rel", int, 0, doc="the grade that gains 0 (lower grades gain 0 too)")
MAX_REL = ParamSpec("max_rel", int, 1, doc="the grade that gains 1, the scale's largest")
_SCALE = (MIN_REL, MAX_REL)
T_GAIN = ParamSpec("T", float, 1.0, 1e-9, None, doc="the gain the user came for (> 0)")


# ----------------------------------------------------------------------------- gains and weights


def _gains(arrays: RankingArrays, width: int, min_rel: int, max_rel: int, name: str):
    """Scaled gains of the top ``width`` ranks, (n_queries, min(width, depth)) float64."""
    if min_rel >= max_rel:
        raise InputError(f"{name}: min_rel={min_rel} must be below max_rel={max_rel}")
    high = int(arrays.grade_levels.max()) if len(arrays.grade_levels) else 0
    if high > max_rel:
        raise InputError(
            f"{name}: the qrels hold grade {high} > max_rel={max_rel}; give the scale's largest "
            f"grade as max_rel (e.g. max_rel={high})",
            column="relevance",
        )

    def build(a: RankingArrays) -> np.ndarray:
        grades = np.clip(np.maximum(top_k(a.grades, CWL_DEPTH), 0), min_rel, max_rel)
        return (grades - min_rel) / float(max_rel - min_rel)

    return top_k(arrays.derived(("cwl-gains", min_rel, max_rel), build), width)


def _fixed(weights: np.ndarray) -> Callable[..., np.ndarray]:
    """EU for a model whose weights do not depend on the gains: ``gains @ W``."""
    w = weights / weights.sum()
    return lambda gains: gains @ w[: gains.shape[1]]


def _chained(gains: np.ndarray, cont: np.ndarray, tail: np.ndarray | float) -> np.ndarray:
    """EU of a model with continuation ``cont`` at ranks 1..d (shape of ``gains``) and ``tail``:
    the sum over the ranks d+1..n of the chance of reaching them, given rank d + 1 is reached."""
    if gains.shape[1] == 0:  # no rank filled: nothing gained
        return np.zeros(gains.shape[0])
    reach = np.cumprod(cont, axis=1)
    first = np.hstack([np.ones((gains.shape[0], 1)), reach[:, :-1]])  # reach rank i: prod_{j<i}
    total = first.sum(axis=1) + reach[:, -1] * tail
    return (first * gains).sum(axis=1) / total


def _ranks(width: int) -> np.ndarray:
    return np.arange(1, width + 1, dtype=np.float64)


def _squared_tail(d: int, a: np.ndarray) -> np.ndarray:
    """``sum_{m=d}^{n-1} ((d + a) / (m + a))^2`` for each a: the tail of INST-like models."""
    if d >= CWL_DEPTH:
        return np.zeros_like(a)
    values, where = np.unique(a, return_inverse=True)
    m = np.arange(d, CWL_DEPTH, dtype=np.float64)
    sums = (((d + values[:, None]) / (m[None, :] + values[:, None])) ** 2).sum(axis=1)
    return sums[where.reshape(a.shape)]


# ----------------------------------------------------------------------------- kernels


def _inst(arrays: RankingArrays, k: None, *, T: float, min_rel: int, max_rel: int):
    """INST's EU; (n_queries,)."""
    g = _gains(arrays, CWL_DEPTH, min_rel, max_rel, "INST")
    d = g.shape[1]
    a = 2.0 * T - np.cumsum(g, axis=1)  # i + T + T_i = i + a_i
    i = _ranks(d)
    cont = ((i + a - 1.0) / (i + a)) ** 2
    last = a[:, -1] if d else np.full(len(g), 2.0 * T)
    return _chained(g, cont, _squared_tail(d, last))


def _insq(arrays: RankingArrays, k: None, *, T: float, min_rel: int, max_rel: int):
    """INSQ's EU; (n_queries,)."""
    i = _ranks(CWL_DEPTH)
    cont = ((i + 2.0 * T - 1.0) / (i + 2.0 * T)) ** 2
    weights = np.concatenate([[1.0], np.cumprod(cont[:-1])])
    return _fixed(weights)(_gains(arrays, CWL_DEPTH, min_rel, max_rel, "INSQ"))


def _rbp_cwl(arrays: RankingArrays, k: None, *, p: float, min_rel: int, max_rel: int):
    """C/W/L RBP's EU; (n_queries,)."""
    weights = p ** np.arange(CWL_DEPTH, dtype=np.float64)
    return _fixed(weights)(_gains(arrays, CWL_DEPTH, min_rel, max_rel, "RBP-CWL"))


def _tbg(arrays: RankingArrays, k: None, *, H: float, min_rel: int, max_rel: int):
    """Time-biased gain's EU, a unit time per document; (n_queries,)."""
    weights = 2.0 ** (-np.arange(CWL_DEPTH, dtype=np.float64) / H)
    return _fixed(weights)(_gains(arrays, CWL_DEPTH, min_rel, max_rel, "TBG"))


def _u(arrays: RankingArrays, k: None, *, L: float, min_rel: int, max_rel: int):
    """U-measure's EU, a unit length per document; (n_queries,)."""
    weights = np.maximum(0.0, 1.0 - np.arange(CWL_DEPTH, dtype=np.float64) / L)
    weights[-1] = 0.0  # cwl-eval gives the last rank no weight
    return _fixed(weights)(_gains(arrays, CWL_DEPTH, min_rel, max_rel, "U"))


def _sdcg(arrays: RankingArrays, k: int, *, min_rel: int, max_rel: int):
    """Scaled DCG@k: DCG@k of the gains over sum_{i<=k} 1 / log2(i + 1); (n_queries,)."""
    width = min(k, CWL_DEPTH)
    weights = 1.0 / np.log2(_ranks(width) + 1.0)
    return _fixed(weights)(_gains(arrays, width, min_rel, max_rel, "SDCG"))


def _bpm(arrays: RankingArrays, k: int, *, T: float, min_rel: int, max_rel: int):
    """Static BPM@k: the gain up to the stop over the ranks read; (n_queries,)."""
    width = min(k, CWL_DEPTH)
    g = _gains(arrays, width, min_rel, max_rel, "BPM")
    gained = np.cumsum(g, axis=1)
    met = gained >= T
    stop = np.where(met.any(axis=1), met.argmax(axis=1) + 1, width)  # ranks read
    at = np.minimum(stop, g.shape[1]) - 1
    total = gained[np.arange(len(g)), at] if g.shape[1] else np.zeros(len(g))
    return np.where(at >= 0, total, 0.0) / stop


def _nerr8(arrays: RankingArrays, k: int, *, min_rel: int, max_rel: int):
    """NERR, Azzopardi et al. eq. 8, at k; (n_queries,)."""
    width = min(k, CWL_DEPTH)
    g = _gains(arrays, width, min_rel, max_rel, "NERR8")
    return _chained(g, 1.0 - g, float(width - g.shape[1]))


def _nerr9(arrays: RankingArrays, k: int, *, min_rel: int, max_rel: int):
    """NERR, Azzopardi et al. eq. 9, at k; (n_queries,)."""
    width = min(k, CWL_DEPTH)
    g = _gains(arrays, width, min_rel, max_rel, "NERR9")
    d = g.shape[1]
    i = _ranks(d)
    tail = float(((d + 1.0) / np.arange(d + 1, width + 1, dtype=np.float64)).sum())
    return _chained(g, i / (i + 1.0) * (1.0 - g), tail)


def _nerr10(arrays: RankingArrays, k: None, *, p: float, min_rel: int, max_rel: int):
    """NERR, Azzopardi et al. eq. 10; (n_queries,)."""
    g = _gains(arrays, CWL_DEPTH, min_rel, max_rel, "NERR10")
    tail = float((p ** np.arange(CWL_DEPTH - g.shape[1], dtype=np.float64)).sum())
    return _chained(g, p * (1.0 - g), tail)


def _nerr11(arrays: RankingArrays, k: None, *, T: float, min_rel: int, max_rel: int):
    """NERR, Azzopardi et al. eq. 11; (n_queries,)."""
    g = _gains(arrays, CWL_DEPTH, min_rel, max_rel, "NERR11")
    d = g.shape[1]
    i = _ranks(d)
    cont = ((i + 2.0 * T - 1.0) / (i + 2.0 * T)) ** 2 * (1.0 - g)
    tail = _squared_tail(d, np.array([2.0 * T]))[0]
    return _chained(g, cont, tail)


# ----------------------------------------------------------------------------- registry

_NUMBER = r"(?:\d+\.?\d*|\.\d+)"


def _whole(k: int | None) -> int:
    return CWL_DEPTH


def _to_k(k: int | None) -> int | None:
    return None if k is None else min(k, CWL_DEPTH)


_P = ParamSpec("p", float, 0.8, 0.0, 1.0, doc="persistence: the chance of reading on")
_PHI = ParamSpec("p", float, 0.9, 0.0, 1.0, doc="NERR10's phi: the patience of RBP")
_H = ParamSpec("H", float, 224.0, 1e-9, None, doc="half-life, in documents read (seconds in TBG)")
_L = ParamSpec("L", float, 1000.0, 1e-9, None, doc="the length read after which the user stops")

#: (family, cwl-eval's printed name as a pattern, aliases)
_TABLE: tuple[tuple[MeasureFamily, str, tuple[str, ...]], ...] = (
    (
        MeasureFamily(
            "INST",
            _inst,
            (T_GAIN, *_SCALE),
            "none",
            _whole,
            summary="INST = sum_i W(i) g_i, C(i) = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T "
            "- gain to i, over 1000 ranks (Moffat et al. 2015; cwl-eval's EU)",
        ),
        rf"INST-T=(?P<T>{_NUMBER})",
        ("inst",),
    ),
    (
        MeasureFamily(
            "INSQ",
            _insq,
            (T_GAIN, *_SCALE),
            "none",
            _whole,
            summary="INSQ = sum_i W(i) g_i, C(i) = ((i + 2T - 1) / (i + 2T))^2, over 1000 ranks "
            "(Moffat et al. 2012; cwl-eval's EU)",
        ),
        rf"INSQ-T=(?P<T>{_NUMBER})",
        ("insq",),
    ),
    (
        MeasureFamily(
            "BPM",
            _bpm,
            (T_GAIN, *_SCALE),
            "required",
            _to_k,
            summary="static BPM@K = gain to the stop / ranks read; the user stops once the gain "
            "reaches T or at rank K (Zhang et al. 2017; cwl-eval's EU)",
        ),
        rf"BPM-Static-T=(?P<T>{_NUMBER})-K=(?P<k>\d+)",
        ("bpm",),
    ),
    (
        MeasureFamily(
            "SDCG",
            _sdcg,
            _SCALE,
            "required",
            _to_k,
            summary="SDCG@K = sum_{i<=K} g_i / log2(i + 1) over sum_{i<=K} 1 / log2(i + 1), scaled "
            "gains (ir_measures' SDCG; cwl-eval's NDCG-k)",
        ),
        r"NDCG-k@(?P<k>\d+)",
        ("sdcg",),
    ),
    (
        MeasureFamily(
            "RBP-CWL",
            _rbp_cwl,
            (_P, *_SCALE),
            "none",
            _whole,
            summary="RBP-CWL = sum_{i<=1000} p^(i-1) g_i / sum_{i<=1000} p^(i-1), scaled graded "
            "gains (cwl-eval's RBP)",
        ),
        r"RBP@(?P<p>\d*\.\d+)",  # a decimal point: RBP@10 is RBP cut at 10
        ("rbp_cwl",),
    ),
    (
        MeasureFamily(
            "TBG",
            _tbg,
            (_H, *_SCALE),
            "none",
            _whole,
            summary="TBG = sum_i W(i) g_i, W(i) proportional to 2^(-(i-1)/H), one time unit per "
            "document, over 1000 ranks (Smucker and Clarke 2012; cwl-eval's EU)",
        ),
        rf"TBG-H@(?P<H>{_NUMBER})",
        ("tbg",),
    ),
    (
        MeasureFamily(
            "U",
            _u,
            (_L, *_SCALE),
            "none",
            _whole,
            summary="U = sum_i W(i) g_i, W(i) proportional to max(0, 1 - (i-1)/L), one length "
            "unit per document (Sakai and Dou 2013; cwl-eval's EU)",
        ),
        rf"U-L@(?P<L>{_NUMBER})",
        ("U-measure", "UMeasure"),
    ),
    (
        MeasureFamily(
            "NERR8",
            _nerr8,
            _SCALE,
            "required",
            _to_k,
            summary="NERR8@K: C(i) = 1 - g_i for i < K (Azzopardi et al. 2021, eq. 8)",
        ),
        r"NERR-EQ8@k=(?P<k>\d+)",
        (),
    ),
    (
        MeasureFamily(
            "NERR9",
            _nerr9,
            _SCALE,
            "required",
            _to_k,
            summary="NERR9@K: C(i) = i / (i + 1) (1 - g_i) for i < K (Azzopardi et al. 2021, "
            "eq. 9)",
        ),
        r"NERR-EQ9@k=(?P<k>\d+)",
        (),
    ),
    (
        MeasureFamily(
            "NERR10",
            _nerr10,
            (_PHI, *_SCALE),
            "none",
            _whole,
            summary="NERR10: C(i) = p (1 - g_i) (Azzopardi et al. 2021, eq. 10)",
        ),
        rf"NERR-EQ10@phi=(?P<p>{_NUMBER})",
        (),
    ),
    (
        MeasureFamily(
            "NERR11",
            _nerr11,
            (T_GAIN, *_SCALE),
            "none",
            _whole,
            summary="NERR11: C(i) = ((i + 2T - 1) / (i + 2T))^2 (1 - g_i) (Azzopardi et al. "
            "2021, eq. 11)",
        ),
        rf"NERR-EQ11@T=(?P<T>{_NUMBER})",
        (),
    ),
)
for _family, _printed, _aliases in _TABLE:
    register_family(_family, aliases=_aliases, trec=(_printed,))

#: The C/W/L families, in the order of the table above.
CWL_FAMILIES = tuple(family.name for family, _, _ in _TABLE)


# ----------------------------------------------------------------------------- public functions


@fill_doc
def cwl_eu(qrels: Qrels, run: Run, measure: str | Measure, *, order: RunOrder = "score") -> float:
    """Mean expected utility (cwl-eval's EU) of any C/W/L measure of this module.

    {{Parameters: qrels, run}}
    measure : str or Measure
        A C/W/L measure by any of its names: ``"INST(T=2,max_rel=3)"``, ``"TBG-H@224"``,
        ``"BPM(T=1)@10"``, ``"NERR10(p=0.9)"``, ``"U(L=1000)"``.
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the qrels of the expected gain per document read.

    Raises
    ------
    InputError
        On malformed qrels or run, a measure of another family, a grade above ``max_rel`` or
        ``min_rel >= max_rel``.

    References
    ----------
    .. [1] A. Moffat, P. Thomas and F. Scholer, "Users versus models: what observation tells us
       about effectiveness metrics", CIKM 2013; L. Azzopardi, P. Thomas and A. Moffat, "cwl_eval:
       an evaluation tool for information retrieval", SIGIR 2019.

    Examples
    --------
    >>> qrels = {"q": {"a": 1, "b": 1}}
    >>> run = {"q": {"a": 3, "x": 2, "b": 1}}        # g = 1, 0, 1: the user stops at a
    >>> cwl_eu(qrels, run, "BPM(T=1)@10")
    1.0
    >>> round(cwl_eu(qrels, run, "TBG(H=1)"), 6), round((1 + 0.25) / 2, 6)   # W(i) ~ 2^-(i-1)
    (0.625, 0.625)
    """
    from ragnb.measures.base import parse_measure

    m = parse_measure(measure)
    if m.family not in CWL_FAMILIES:
        raise InputError(f"{m} is not a C/W/L measure; these are: {', '.join(CWL_FAMILIES)}")
    return mean_of(m, qrels, run, order)


@fill_doc
def inst(
    qrels: Qrels,
    run: Run,
    *,
    T: float = 1.0,
    min_rel: int = 0,
    max_rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean INST: the expected rate of gain of a user who wants ``T`` units of gain.

    {{Parameters: qrels, run}}
    T : float > 0, default 1
        The gain the user came for: the more is still wanted, the more likely to read on.
    {{gain_range}}
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the qrels (cwl-eval's EU of ``INST-T=``).

    Raises
    ------
    InputError
        On malformed qrels or run, ``T <= 0``, a grade above ``max_rel`` or
        ``min_rel >= max_rel``.

    Notes
    -----
    ``C(i) = ((i + T + T_i - 1) / (i + T + T_i))^2`` with ``T_i = T - sum_{j<=i} g_j``, the gain
    still wanted after rank i; ``W(i)`` is the normalised product of the C before i over
    ``n = 1000`` ranks, and ``INST = sum_i W(i) g_i``.

    References
    ----------
    .. [1] A. Moffat, P. Bailey, F. Scholer and P. Thomas, "INST: an adaptive metric for
       information retrieval evaluation", ADCS 2015, eq. 4.

    Examples
    --------
    >>> qrels = {"q": {"a": 1}}       # C(1) = (1/2)^2, then C(i) = (i / (i + 1))^2: W(i) ~ 1/i^2
    >>> ours = inst(qrels, {"q": {"a": 1.0}})
    >>> round(ours, 6), round(1 / sum(1 / i**2 for i in range(1, 1001)), 6)
    (0.608297, 0.608297)
    """
    return mean_of(Measure("INST", T=T, min_rel=min_rel, max_rel=max_rel), qrels, run, order)


@fill_doc
def scaled_dcg(
    qrels: Qrels,
    run: Run,
    k: int,
    *,
    min_rel: int = 0,
    max_rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean scaled DCG at ``k`` (ir_measures' ``SDCG@k``): DCG over that of ``k`` top grades.

    {{Parameters: qrels, run, k}}
    {{gain_range}}
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the qrels.

    Raises
    ------
    InputError
        On malformed qrels or run, a bad ``k``, a grade above ``max_rel`` or
        ``min_rel >= max_rel``.

    Notes
    -----
    ``SDCG@K = sum_{i<=K} g_i / log2(i + 1) / sum_{i<=K} 1 / log2(i + 1)``: nDCG normalised as if
    the collection held at least K documents of the top grade, so it needs no judgement of the
    whole collection. It is cwl-eval's ``NDCG-k@K`` (DCG's discount as a C/W/L user model); K is
    capped at 1000 ranks.

    References
    ----------
    .. [1] K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM
       TOIS 20(4), 2002 (DCG); A. Moffat, P. Thomas and F. Scholer, CIKM 2013 (as a C/W/L model).
    .. [2] ir_measures' ``SDCG``, computed by cwl-eval (MacAvaney et al., ECIR 2022).

    Examples
    --------
    >>> qrels = {"q": {"a": 2, "b": 1}}
    >>> run = {"q": {"b": 2.0, "a": 1.0}}           # g = 0.5, 1
    >>> import math
    >>> round(scaled_dcg(qrels, run, 2, max_rel=2), 6)
    0.693426
    >>> round((0.5 + 1 / math.log2(3)) / (1 + 1 / math.log2(3)), 6)
    0.693426
    """
    return mean_of(Measure("SDCG", k, min_rel=min_rel, max_rel=max_rel), qrels, run, order)
