"""Gain-based measures: G, binG, nDCG-rel, RnDCG, graded RBP and its residual, DCG and NCG.

trec_eval's gain-based measures beside raw DCG and normalised cumulative gain.

============================ ==================================================== ============
name                         definition (g = gain of a level: its value, or as    trec_eval
                             given; ideal = judged gains sorted descending)
============================ ==================================================== ============
G                            sum_i g_i / log2(2 + cost_i - gained_i) over ideal   ``G``
                             gains: cost_i sums max(ideal_j, 1), gained_i sums g_j
                             for j <= i (Kekalainen and Jarvelin's cumulated gain
                             with a gain-aware discount, as ``m_G.c``)
binG                         sum over relevant ranks i (r-th relevant) of         ``binG``
                             1 / log2(2 + i - r), divided by N_p
nDCG-rel                     nDCG averaged at each relevant rank, the missing      ``ndcg_rel``
                             relevant at the run's final nDCG
RnDCG                        nDCG averaged at the ranks where the ideal gain       ``Rndcg``
                             changes level (and at the run's end)
RBP-graded(p=0.9)            (1 - p) sum_i g_i p^(i-1), gains rescaled into [0, 1] ``rbp``
                             when the query's levels leave it
RBP-graded-residual(p=0.9)   p^ret + (1 - p) sum of p^(i-1) over retrieved ranks   ``rbp_resid``
                             without a judgement >= 0; 0 when there is none
DCG[@K]                      sum_{i<=K} g_i / log2(i + 1), raw                     ``dcg``
NCG@K                        sum_{i<=K} g_i / sum of the top K ideal gains         (none)
============================ ==================================================== ============

The linear gain is the grade (negative grades and documents without a judgement gain 0), as in
trec_eval's ``gain_init.c``; :func:`gain_values` evaluates these measures with other gains per
level (trec_eval's ``-m ndcg.1=3,2=9``). RBP-graded rescales over the levels ``setup_gains``
lists for the query: 0 up to its highest grade, whether a qrels line holds each or not (qrels
without grade-0 lines, such as BEIR's, rescale from gain 0 too).

References
----------
.. [1] K. Jarvelin and J. Kekalainen, "Cumulated gain-based evaluation of IR techniques", ACM
   TOIS 20(4), 2002 (DCG, nDCG, cumulated gain CG and its normalised form NCG).
.. [2] A. Moffat and J. Zobel, "Rank-biased precision for measurement of retrieval
   effectiveness", ACM TOIS 27(1), 2008, eq. 1 and Section 4 (RBP and its residual).
.. [3] trec_eval 10.0, ``m_G.c``, ``m_binG.c``, ``m_ndcg_rel.c``, ``m_Rndcg.c``, ``m_rbp.c``,
   ``m_rbp_resid.c``, ``m_ndcg.c`` (``dcg``), ``gain_init.c``,
   https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    Measure,
    MeasureFamily,
    ParamSpec,
    TrecEvalName,
    register_family,
)
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, row_steps, safe_div, sum_at, top_k
from ragnb.measures.reslists import gain_levels, level_counts, level_index

__all__ = ["gain_values", "normalised_cumulative_gain"]


def _discount(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def _gains(
    arrays: RankingArrays, gains: Mapping[int, float] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ideal gains, levels, level gains x per-query counts) of the arrays; read-only, built
    once per arrays for the linear gain."""
    if not gains:
        return arrays.derived("linear gains", partial(_gains_of, gains=None))
    return _gains_of(arrays, gains)


def _gains_of(
    arrays: RankingArrays, gains: Mapping[int, float] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    levels, counts = level_counts(arrays)
    level_gain, ideal = gain_levels(levels, counts, gains)
    return ideal, levels, np.c_[level_gain, counts.T]


def _run_gains(arrays: RankingArrays, gains: Mapping[int, float] | None) -> np.ndarray:
    """The gain at each rank, shape (n_queries, depth), as :func:`~.reslists.gains_of`."""
    _, _, table = _gains(arrays, gains)
    return np.r_[table[:, 0], 0.0, 0.0][level_index(arrays)]


def _gain_cells(
    arrays: RankingArrays, gains: Mapping[int, float] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The run's cells with a nonzero gain (row-major): rows, columns, gains, and the run's DCG
    up to each of them (``np.cumsum(got * discount, axis=1)`` there); read-only, built once per
    arrays for the linear gain."""
    if not gains:
        return arrays.derived("linear gain cells", partial(_cells_of_gains, gains=None))
    return _cells_of_gains(arrays, gains)


def _cells_of_gains(
    arrays: RankingArrays, gains: Mapping[int, float] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if gains:
        got = _run_gains(arrays, gains)
        rows, cols = np.nonzero(got)
        values = got[rows, cols]
    else:  # the linear gain: judged grades >= 1 gain their grade, the other ranks 0
        rows, cols = arrays.relevant_cells(1)
        values = arrays.grades[rows, cols].astype(np.float64)
    return rows, cols, values, _row_prefix(rows, values * _discount(arrays.depth)[cols])


def _head_gains(arrays: RankingArrays, gains: Mapping[int, float] | None, width: int) -> np.ndarray:
    """The gains of the top ``width`` ranks, shape (n_queries, min(width, depth))."""
    rows, cols, values, _ = _gain_cells(arrays, gains)
    head = np.zeros((arrays.n_queries, min(width, arrays.depth)))
    inside = cols < head.shape[1]
    head[rows[inside], cols[inside]] = values[inside]
    return head


def _row_prefix(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sums of ``values`` within each row, cells in row-major order (``rows`` sorted).

    One cell after the other, as ``np.cumsum`` along the rows of the dense array adds them: the
    zeros it adds between the cells change nothing, so the sums are the same to the bit.
    """
    out = values.copy()
    for at in row_steps(rows)[1:]:  # the t-th cell of every row, after the (t-1)-th
        out[at] = out[at - 1] + values[at]
    return out


def _row_last(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """The value at each row's last cell (cells in row-major order), 0 for a row without one."""
    out = np.zeros(n_rows)
    if len(rows):
        last = np.flatnonzero(np.r_[rows[1:] != rows[:-1], True])
        out[rows[last]] = values[last]
    return out


def _cost_at(ideal: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``np.cumsum(np.maximum(best, 1.0), axis=1)`` at the cells, ``best`` the ideal gains
    zero-padded to the right: past the ideal's width it adds 1.0 rank after rank, as here."""
    n_q, width = ideal.shape
    small = np.cumsum(np.maximum(ideal, 1.0), axis=1)
    out = np.empty(len(cols))
    inside = cols < width
    out[inside] = small[rows[inside], cols[inside]]
    outside = np.flatnonzero(~inside)
    if len(outside):
        order = outside[np.argsort(cols[outside], kind="stable")]
        bounds = np.searchsorted(cols[order], np.arange(width, int(cols[order[-1]]) + 2))
        cost = small[:, -1] if width else np.zeros(n_q)
        for i in range(len(bounds) - 1):
            cost = cost + 1.0
            at = order[bounds[i] : bounds[i + 1]]
            out[at] = cost[rows[at]]
    return out


def _g(
    arrays: RankingArrays, k: int | None, *, gains: Mapping[int, float] | None = None
) -> np.ndarray:
    ideal, _, _ = _gains(arrays, gains)
    rows, cols, values, _ = _gain_cells(arrays, gains)
    cost = _cost_at(ideal, rows, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = values / np.log2(2.0 + cost - _row_prefix(rows, values))
    width = max(arrays.depth, ideal.shape[1])
    return safe_div(sum_at((rows, cols), terms, (arrays.n_queries, width)), ideal.sum(axis=1))


def _bin_g(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    cells = arrays.relevant_cells(rel)
    r = arrays.cell_hits(rel)
    with np.errstate(divide="ignore"):
        terms = 1.0 / np.log2(3.0 + cells[1] - r)
    return safe_div(sum_at(cells, terms, arrays.relevant(rel).shape), arrays.n_relevant(rel))


def _ndcg_rel(
    arrays: RankingArrays, k: int | None, *, gains: Mapping[int, float] | None = None
) -> np.ndarray:
    ideal, _, _ = _gains(arrays, gains)
    rows, cols, values, run_dcg = _gain_cells(arrays, gains)
    n_q, n_ideal = ideal.shape
    width = max(arrays.depth, n_ideal)
    # the ideal DCG stays at its total past the ideal's width (its gains are 0 there)
    ideal_dcg = np.cumsum(ideal * _discount(n_ideal), axis=1)
    if n_ideal:
        ideal_at, ideal_last = ideal_dcg[rows, np.minimum(cols, n_ideal - 1)], ideal_dcg[:, -1]
    else:
        ideal_at, ideal_last = np.zeros(len(rows)), np.zeros(n_q)
    positive = values > 0
    cells = rows[positive], cols[positive]
    with np.errstate(divide="ignore", invalid="ignore"):
        at = sum_at(cells, run_dcg[positive] / ideal_at[positive], (n_q, width))
        n_rel = (ideal > 0).sum(axis=1)
        n_found = np.bincount(cells[0], minlength=n_q)
        tail = (n_rel - n_found) * _row_last(rows, run_dcg, n_q) / ideal_last
        total = at + tail if width else np.zeros(n_q)
        return np.where(total > 0, total / np.maximum(n_rel, 1), 0.0)


def _rndcg(
    arrays: RankingArrays, k: int | None, *, rel: int, gains: Mapping[int, float] | None = None
) -> np.ndarray:
    """trec_eval's ``m_Rndcg.c``: the mean of run DCG / ideal DCG, each summed up to the rank
    before each rank where the ideal gain changes (its last change: where it reaches 0), plus
    the whole run's DCG over the whole ideal DCG when the run goes on more than one rank past
    the last positive ideal gain; 0 without a change."""
    ideal, _, _ = _gains(arrays, gains)
    cell_rows, _, _, run_cells = _gain_cells(arrays, gains)
    n_q = arrays.n_queries
    width = ideal.shape[1] + 1  # a zero after the ideal gains: the change where they end
    best = np.zeros((n_q, width))
    best[:, : ideal.shape[1]] = ideal
    disc = _discount(max(width, arrays.depth))
    ideal_dcg = np.cumsum(best * disc[:width], axis=1)
    head = min(width, arrays.depth)  # the run's DCG at the ranks of the ideal
    run_dcg = np.cumsum(_head_gains(arrays, gains, head) * disc[:head], axis=1)
    if not arrays.depth:
        run_dcg = np.zeros((n_q, width))
    elif head < width:  # the run's DCG stays at its total past its last rank
        run_dcg = np.pad(run_dcg, ((0, 0), (0, width - head)), mode="edge")
    change = best[:, 1:] != best[:, :-1]  # at rank i + 1: the ratio up to rank i
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(change, run_dcg[:, : width - 1] / ideal_dcg[:, : width - 1], 0.0)
    total, n_changes = ratios.sum(axis=1), change.sum(axis=1)
    n_ret = arrays.n_filled()
    n_ideal = (best > 0).sum(axis=1)
    past = (n_ret > n_ideal + 1) & (n_ideal > 0)
    rows = np.nonzero(past)[0]
    # the run's DCG at its last rank: its whole DCG (no gain past the run's end)
    run_total = _row_last(cell_rows, run_cells, n_q)
    total[rows] += run_total[rows] / ideal_dcg[rows, n_ideal[rows] - 1]
    n_changes += past
    out = np.where(n_changes > 0, total / np.maximum(n_changes, 1), 0.0)
    return np.where(arrays.n_relevant(rel) > 0, out, 0.0)


def _rbp_graded(
    arrays: RankingArrays, k: int | None, *, p: float, gains: Mapping[int, float] | None = None
) -> np.ndarray:
    """trec_eval's ``m_rbp.c``: gains of the levels its ``setup_gains`` lists for the query (0 up
    to its highest judged level, and every level named in ``gains``), rescaled into [0, 1] when
    they leave it."""
    _, levels, table = _gains(arrays, gains)
    level_gain, counts = table[:, 0], table[:, 1:].T
    top = np.where(counts > 0, levels[None, :], -1).max(axis=1, initial=-1)
    listed = (levels[None, :] <= top[:, None]) | np.isin(levels, list(gains or {}))[None, :]
    # the rescaling spans every level 0 .. top setup_gains lists, those no qrels line holds too
    # (level 0 of qrels without a grade-0 line gains 0 and sets the low end), and every level
    # named in the gains
    named = [float(g) for lv, g in (gains or {}).items() if isinstance(lv, int)]
    spread = np.array(
        [float((gains or {}).get(lv, lv)) for lv in range(int(top.max(initial=0)) + 1)]
    )
    low_named, high_named = min(named, default=np.inf), max(named, default=-np.inf)
    at_top = np.clip(top, 0, None)
    has_top = top >= 0
    low = np.minimum(np.where(has_top, np.minimum.accumulate(spread)[at_top], np.inf), low_named)
    high = np.maximum(np.where(has_top, np.maximum.accumulate(spread)[at_top], -np.inf), high_named)
    low, high = np.where(np.isfinite(low), low, 0.0), np.where(np.isfinite(high), high, 0.0)
    # the gain of each (query, level): one row of a table per query, its columns the levels,
    # then a value >= 0 that is no level, then the negative values (-1, -2, -3: gain 0)
    n_levels = len(levels)
    row = np.zeros((arrays.n_queries, n_levels + 2))
    row[:, :n_levels] = np.where(listed, level_gain[None, :], 0.0)
    rescale = ((low < 0) | (high > 1))[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = (row - low[:, None]) / (high - low)[:, None]
    scaled[:, -1] = 0.0
    table = np.where(rescale, scaled, row)
    # the table's value at every judged rank with a grade >= 0 (a level); 0 at the others
    rows, cols = arrays.relevant_cells(0)
    column = np.searchsorted(levels, arrays.grades[rows, cols])
    per_rank = np.zeros((arrays.n_queries, arrays.depth))
    per_rank[rows, cols] = table[rows, column]
    return (1.0 - p) * (per_rank @ p ** np.arange(arrays.depth, dtype=np.float64))


def _rbp_graded_residual(arrays: RankingArrays, k: int | None, *, p: float) -> np.ndarray:
    # trec_eval's relevance list below 0 but not padding: retrieved, no judgement >= 0
    open_ = arrays.filled & ~arrays.relevant(0)
    n_ret = arrays.n_filled()
    weights = p ** np.arange(arrays.depth, dtype=np.float64)
    value = p ** n_ret.astype(np.float64) + (1.0 - p) * (open_ @ weights)
    return np.where(open_.any(axis=1), value, 0.0)


def _dcg(arrays: RankingArrays, k: int | None) -> np.ndarray:
    # sum_i max(grade_i, 0) / log2(i + 1): the run's DCG of nDCG (unjudged grades are 0)
    return arrays.run_dcg(k)


def _ncg(arrays: RankingArrays, k: int) -> np.ndarray:
    got = (np.maximum(top_k(arrays.grades, k), 0) * top_k(arrays.judged, k)).sum(axis=1)
    best = np.maximum(top_k(arrays.ideal, k), 0).sum(axis=1)
    return safe_div(got, best)


def _ndcg_gains(arrays: RankingArrays, gains: Mapping[int, float] | None) -> np.ndarray:
    ideal, _, _ = _gains(arrays, gains)
    got = _run_gains(arrays, gains)
    return safe_div(got @ _discount(got.shape[1]), ideal @ _discount(ideal.shape[1]))


def gain_values(
    arrays: RankingArrays,
    family: str,
    gains: Mapping[int, float] | None = None,
    *,
    p: float = 0.9,
    rel: int = 1,
) -> np.ndarray:
    """A gain-based trec_eval measure with the gain of each level given.

    Parameters
    ----------
    arrays : RankingArrays
        From :func:`ragnb.measures.prepare`, whole runs (no depth cap).
    family : {"nDCG", "G", "nDCG-rel", "RnDCG", "RBP-graded"}
        The measure: trec_eval's ``ndcg``, ``G``, ``ndcg_rel``, ``Rndcg`` or ``rbp``.
    gains : mapping of int to float, optional
        Gain of a qrels level; the others gain their value (trec_eval ``-m ndcg.1=3,2=9``).
    p : float in (0, 1), default 0.9
        RBP's persistence.
    rel : int, default 1
        Relevance level (``Rndcg`` returns 0 for a query without a relevant document).

    Returns
    -------
    ndarray of float64, shape (n_queries,)

    Raises
    ------
    InputError
        Another ``family``.

    References
    ----------
    .. [1] trec_eval 10.0, ``gain_init.c`` and the ``m_*.c`` file of each measure.

    Examples
    --------
    >>> from ragnb.measures import prepare
    >>> arrays = prepare({"q": {"a": 1, "b": 2}}, {"q": {"a": 2.0, "b": 1.0}})
    >>> round(float(gain_values(arrays, "nDCG", {2: 1.0, 1: 3.0})[0]), 4)
    1.0
    """
    if family == "nDCG":
        return _ndcg_gains(arrays, gains)
    if family == "G":
        return _g(arrays, None, gains=gains)
    if family == "nDCG-rel":
        return _ndcg_rel(arrays, None, gains=gains)
    if family == "RnDCG":
        return _rndcg(arrays, None, rel=rel, gains=gains)
    if family == "RBP-graded":
        return _rbp_graded(arrays, None, p=p, gains=gains)
    known = "nDCG, G, nDCG-rel, RnDCG, RBP-graded"
    raise InputError(f"no gain-based measure {family!r} with gains per level; known: {known}")


RBP_P = ParamSpec("p", float, 0.9, 0.0, 1.0, doc="persistence p in [0, 1), trec_eval's 0.9")

# trec_eval's gain measures of the whole run (no cutoff): name, kernel, parameters, trec_eval's
# name (its name=value pairs: a gain per level, as ndcg.1=3,2=9, and rbp's p), the pattern of
# rbp.p=0.8 and the summary
for _name, _kernel, _params, _trec_eval, _trec, _summary in (
    (
        "G",
        _g,
        (),
        TrecEvalName("G"),
        (),
        "G = gain-aware cumulated gain over the ideal gains (trec_eval G)",
    ),
    (
        "binG",
        _bin_g,
        (REL,),
        TrecEvalName("binG"),
        (),
        "binG = sum over relevant ranks i of 1 / log2(2 + i - r) / N_p (trec_eval binG)",
    ),
    (
        "nDCG-rel",
        _ndcg_rel,
        (),
        TrecEvalName("ndcg_rel"),
        (),
        "nDCG-rel = nDCG averaged at the relevant ranks (trec_eval ndcg_rel)",
    ),
    (
        "RnDCG",
        _rndcg,
        (REL,),
        TrecEvalName("Rndcg"),
        (),
        "RnDCG = nDCG averaged where the ideal gain changes level (trec_eval Rndcg)",
    ),
    (
        "RBP-graded",
        _rbp_graded,
        (RBP_P,),
        TrecEvalName("rbp", reads=("p",)),
        (r"rbp[._]p=(?P<p>\d*\.?\d+)",),
        "RBP-graded = (1 - p) sum_i g_i p^(i-1), gains rescaled into [0, 1] (trec_eval rbp)",
    ),
    (
        "RBP-graded-residual",
        _rbp_graded_residual,
        (RBP_P,),
        TrecEvalName("rbp_resid", reads=("p",)),
        (r"rbp_resid[._]p=(?P<p>\d*\.?\d+)",),
        "RBP-graded-residual = p^ret + (1 - p) sum of p^(i-1) over unjudged ranks, 0 without one "
        "(trec_eval rbp_resid)",
    ),
):
    register_family(
        MeasureFamily(
            _name,
            _kernel,
            params=_params,
            cutoff="none",
            summary=_summary,
            trec_eval=(_trec_eval,),
        ),
        trec=_trec,
    )
register_family(
    MeasureFamily(
        "DCG",
        _dcg,
        cutoff="optional",
        summary="DCG@K = sum_{i<=K} max(grade, 0) / log2(i + 1), unnormalised (trec_eval dcg)",
        trec_eval=(TrecEvalName("dcg"),),
    ),
    trec=(r"dcg_cut[._](?P<k>\d+)",),
)
register_family(
    MeasureFamily(
        "NCG",
        _ncg,
        summary="NCG@K = sum_{i<=K} gain / sum of the top K ideal gains (Jarvelin and "
        "Kekalainen 2002)",
    ),
    aliases=("ncg",),
    trec=(r"ncg[._@](?P<k>\d+)", r"ncg_cut[._](?P<k>\d+)"),
)


@fill_doc
def normalised_cumulative_gain(
    qrels: Qrels, run: Run, k: int, *, order: RunOrder = "score"
) -> float:
    """Mean normalised cumulative gain at ``k`` (NCG@K): gain found over gain findable.

    {{Parameters: qrels, run, k, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    ``NCG@K = sum_{i<=K} g_i / sum_{j<=K} g*_j`` with ``g`` the linear gain (the grade, 0 for a
    negative grade or an unjudged document) and ``g*`` the judged gains sorted descending: nDCG
    without the discount, so the order within the top K does not matter. 0 when no judged
    document has a positive grade. Neither trec_eval nor ir_measures computes it.

    References
    ----------
    .. [1] K. Jarvelin and J. Kekalainen, "Cumulated gain-based evaluation of IR techniques",
       ACM TOIS 20(4), 2002, Section 2.2 (cumulated gain and its normalised form).

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 1, "c": 1}}
    >>> run = {"q1": {"b": 3.0, "x": 2.0, "a": 1.0}}   # top 2 gains 1 + 0; ideal 2 + 1
    >>> round(normalised_cumulative_gain(qrels, run, 2), 6)
    0.333333
    """
    return mean_of(Measure("NCG", k), qrels, run, order)
