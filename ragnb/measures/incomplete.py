"""Measures for incomplete judgements: bpref, condensed-list nDCG' and P', and a Judged@K check.

A pool built from some systems leaves holes for the others: documents a new system retrieves were
never judged, and trec_eval-family measures (P, nDCG, ...) count them as non-relevant. Two remedies
that use only the judged documents:

========== ============================================================ ==========================
name       definition                                                   aliases
========== ============================================================ ==========================
Bpref[@K]  trec_eval's ``bpref`` (Buckley and Voorhees 2004); with @K,  ``bpref``
           on the run cut at K (trec_eval ``-M K``)
nDCG'[@K]  nDCG@K of the condensed list: unjudged documents removed     ``nDCG(judged_only=True)``
           from the ranking before cutting at K (Sakai 2007)            (ir_measures), trec_eval
                                                                        ``-J ndcg_cut_K``
P'@K       P@K of the condensed list                                    ``P(judged_only=True)@K``
========== ============================================================ ==========================

What "judged" means here is trec_eval's reading of the qrels: a document with a grade >= 0. A
negative grade is trec_eval's "in the pool but not judged" (``form_res_rels.c``), so for these
three measures a document judged -1 is removed from the condensed list and is neither relevant nor
non-relevant in bpref (``Judged@K`` does count it as judged).

:func:`judged_gap_warning` flags comparisons whose systems have very different judgement rates,
the situation where these measures (or more judging) are needed.

References
----------
.. [1] C. Buckley and E. M. Voorhees, "Retrieval evaluation with incomplete information",
   SIGIR 2004, Section 4 (the bpref definition).
.. [2] T. Sakai, "Alternatives to bpref", SIGIR 2007, Section 3 (condensed lists).
.. [3] trec_eval 9.0, ``m_bpref.c``, ``form_res_rels.c`` (``-J``),
   https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from itertools import combinations

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import (
    REL,
    Measure,
    MeasureFamily,
    TrecEvalName,
    register_family,
    register_trec_alias,
)
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, dcg, safe_div, sum_at

__all__ = ["bpref", "condensed_ndcg", "condensed_precision", "judged_gap_warning"]


# ----------------------------------------------------------------------------- kernels


def _level_total(arrays: RankingArrays, keep: np.ndarray) -> np.ndarray:
    """Judged documents per query whose grade level satisfies ``keep``; shape (n_queries,)."""
    return arrays.level_counts[:, keep].sum(axis=1)


def _bpref(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    """trec_eval's bpref, vectorised; shape (n_queries,).

    ``(1/R) sum_{relevant r} (1 - min(n_above(r), R) / min(N, R))`` with ``n_above(r)`` the judged
    non-relevant documents ranked above r, R the relevant and N the judged non-relevant documents
    of the query; a relevant document with none above scores 1, a query with R = 0 scores 0.
    """
    width = arrays.depth if k is None else min(k, arrays.depth)
    top = max(rel, 0)  # relevant and judged (grade >= 0)
    cells = arrays.relevant_cells(top, width)
    levels = arrays.grade_levels
    n_rel = _level_total(arrays, (levels >= 0) & (levels >= rel))
    n_non = _level_total(arrays, (levels >= 0) & (levels < rel))
    # at a relevant rank: the judged non-relevant documents ranked above it
    whole = width == arrays.depth  # every relevant cell: their hits are their ranks in a row
    above = arrays.hits_at(0, *cells) - (
        arrays.cell_hits(top) if whole else arrays.hits_at(top, *cells)
    )
    rows = cells[0]
    penalty = safe_div(np.minimum(above, n_rel[rows]), np.minimum(n_non, n_rel)[rows])
    return safe_div(sum_at(cells, 1.0 - penalty, (arrays.n_queries, width)), n_rel)


def _condensed_cells(
    arrays: RankingArrays, k: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The run with documents not judged (grade >= 0) removed, cut at ``k``.

    Returns the row, the column in the condensed list and the grade of each document kept
    (row-major), and the list's width ``min(k, depth)``. The judged documents keep their order:
    the column of each is the number of judged documents at or above it, minus one.
    """
    width = arrays.depth if k is None else min(k, arrays.depth)
    rows, new_col, grades = arrays.derived("condensed", _condensed)
    if width == arrays.depth:
        return rows, new_col, grades, width
    inside = new_col < width
    return rows[inside], new_col[inside], grades[inside], width


def _condensed(arrays: RankingArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The whole condensed list: row, column and grade of every judged (grade >= 0) rank."""
    rows, cols = arrays.relevant_cells(0)  # trec_eval's judged: a grade >= 0
    return rows, arrays.cell_hits(0) - 1, arrays.grades[rows, cols]


def _condensed_ndcg(arrays: RankingArrays, k: int | None) -> np.ndarray:
    """nDCG@k of the condensed list; ideal from all judged grades; shape (n_queries,)."""
    rows, cols, grades, width = _condensed_cells(arrays, k)  # already cut at k
    gains = np.zeros((arrays.n_queries, width))  # ndcg_of's max(grade, 0), as float
    gains[rows, cols] = np.maximum(grades, 0)
    return safe_div(dcg(gains), arrays.ideal_dcg(k))


def _condensed_precision(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """Relevant documents in the top k of the condensed list, over k; shape (n_queries,)."""
    rows, _, grades, _ = _condensed_cells(arrays, k)
    return np.bincount(rows[grades >= rel], minlength=arrays.n_queries) / k


register_family(
    MeasureFamily(
        "Bpref",
        _bpref,
        params=(REL,),
        cutoff="optional",
        summary="Bpref = (1/R) sum over retrieved relevant r of "
        "(1 - min(judged non-relevant above r, R) / min(N, R)); unjudged documents ignored",
        trec_eval=(TrecEvalName("bpref"),),
    ),
    aliases=("bpref",),
)
register_family(
    MeasureFamily(
        "nDCG'",
        _condensed_ndcg,
        cutoff="optional",
        depth=lambda k: None,
        summary="nDCG'@K = nDCG@K of the condensed list (unjudged documents removed first)",
    )
)
register_family(
    MeasureFamily(
        "P'",
        _condensed_precision,
        params=(REL,),
        depth=lambda k: None,
        summary="P'@K = P@K of the condensed list (unjudged documents removed first)",
    )
)
# ir_measures' spelling of the condensed lists (its printed form; True or 1, spaces allowed).
_J = r"\s*judged_only\s*=\s*(?:True|true|1)\s*"
_AT = r"(?:\s*@\s*(?P<k>\d+))"
register_trec_alias(rf"nDCG\({_J}\){_AT}?", "nDCG'")
register_trec_alias(rf"P\({_J}\){_AT}", "P'")
# ir_measures prints rel before judged_only: P(rel=2,judged_only=True)@10.
register_trec_alias(rf"P\(\s*rel\s*=\s*(?P<rel>-?\d+)\s*,{_J}\){_AT}", "P'")


# ----------------------------------------------------------------------------- public functions


@fill_doc
def bpref(
    qrels: Qrels, run: Run, k: int | None = None, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean binary preference (bpref) over the queries of the qrels, as trec_eval computes it.

    {{Parameters: qrels, run}}
    k : int, optional
        Evaluate the run cut at rank ``k`` (trec_eval's ``-M k``); default the whole run. This is
        not Buckley and Voorhees' bpref-10, which changes the denominator instead.
    rel : int, default 1
        A judged document with grade >= ``rel`` is relevant; one with ``0 <= grade < rel`` is
        judged non-relevant.
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean of the per-query values (shape (n_queries,) in
        :func:`ragnb.evaluation.evaluate`).

    {{Raises: bad_input}}

    Notes
    -----
    With R the relevant and N the judged non-relevant documents of the query, and ``n(r)`` the
    judged non-relevant documents retrieved above a retrieved relevant document r::

        bpref = (1 / R) * sum_r [1 - min(n(r), R) / min(N, R)]

    where a term with ``n(r) = 0`` is 1 (also when N = 0). Unjudged documents are skipped, as are
    documents with a negative grade (trec_eval: in the pool, not judged). A query with R = 0 scores
    0. This is ``m_bpref.c`` of trec_eval 9.0 and ir_measures' ``Bpref(rel=r)`` (pytrec_eval).

    References
    ----------
    .. [1] C. Buckley and E. M. Voorhees, "Retrieval evaluation with incomplete information",
       SIGIR 2004, Section 4, the bpref equation.
    .. [2] trec_eval 9.0, ``m_bpref.c``, https://github.com/usnistgov/trec_eval

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 0, "d": 0}}       # R = 2, N = 2
    >>> run = {"q1": {"c": 0.9, "a": 0.8, "x": 0.7, "b": 0.6}}  # c(non) a(rel) x(unjudged) b(rel)
    >>> bpref(qrels, run)                   # a: 1 - 1/2, b: 1 - 1/2; (0.5 + 0.5) / 2
    0.5
    >>> bpref(qrels, run, k=2)              # only a counts: 0.5 / 2
    0.25
    """
    return mean_of(Measure("Bpref", k, rel=rel), qrels, run, order)


@fill_doc
def condensed_ndcg(
    qrels: Qrels, run: Run, k: int | None = None, *, order: RunOrder = "score"
) -> float:
    """Mean nDCG@k of the condensed list, ``nDCG'@K`` (Sakai 2007).

    {{Parameters: qrels, run}}
    k : int, optional
        Cutoff K >= 1 on the condensed list; None: the whole condensed list.
    {{order}}

    {{Returns: mean}}

    Raises
    ------
    InputError
        On malformed qrels or run, or a bad ``k`` or ``order``.

    Notes
    -----
    Every retrieved document without a judgement (or with a negative grade) is removed, the
    judged ones keep their order, and :func:`ragnb.measures.ndcg_at_k` (linear gain, ideal from
    all judged documents) is computed on that list cut at K. The measure therefore reads the whole
    run, however small K is. Equal to trec_eval's ``ndcg_cut_K`` with ``-J`` and ir_measures'
    ``nDCG(judged_only=True)@K``.

    References
    ----------
    .. [1] T. Sakai, "Alternatives to bpref", SIGIR 2007, Section 3 (nDCG').
    .. [2] trec_eval 9.0, ``form_res_rels.c`` (``judged_docs_only_flag``).

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 1, "c": 0}}
    >>> run = {"q1": {"x": 0.9, "b": 0.8, "y": 0.7, "a": 0.6}}  # condensed list: b, a
    >>> # DCG@2 = 1 + 2/log2(3) = 2.2619; ideal a, b: 2 + 1/log2(3) = 2.6309
    >>> round(condensed_ndcg(qrels, run, 2), 4)
    0.8597
    >>> from ragnb.measures import ndcg_at_k     # the full list x, b: 0.6309 / 2.6309
    >>> round(ndcg_at_k(qrels, run, 2), 4)
    0.2398
    """
    return mean_of(Measure("nDCG'", k), qrels, run, order)


@fill_doc
def condensed_precision(
    qrels: Qrels, run: Run, k: int, *, rel: int = 1, order: RunOrder = "score"
) -> float:
    """Mean P@k of the condensed list, ``P'@K`` (Sakai 2007).

    {{Parameters: qrels, run}}
    k : int
        Cutoff K >= 1 on the condensed list.
    {{rel, order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    Relevant documents among the first K judged documents of the run, over K (also when fewer
    than K documents are judged). Equal to trec_eval's ``P_K`` with ``-J`` and ir_measures'
    ``P(rel=r,judged_only=True)@K``.

    References
    ----------
    .. [1] T. Sakai, "Alternatives to bpref", SIGIR 2007, Section 3 (condensed lists).
    .. [2] trec_eval 9.0, ``m_P.c`` and ``form_res_rels.c``.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1, "c": 0}}
    >>> run = {"q1": {"x": 0.9, "a": 0.8, "y": 0.7, "c": 0.6, "b": 0.5}}
    >>> condensed_precision(qrels, run, 2)   # condensed a, c, b; top 2 holds 1 relevant: 1/2
    0.5
    >>> condensed_precision(qrels, run, 4)   # 2 relevant among 3 judged, over K = 4
    0.5
    """
    return mean_of(Measure("P'", k, rel=rel), qrels, run, order)


def judged_gap_warning(
    judged_at_k: Mapping[str, float] | pd.Series,
    margin: float = 0.1,
    *,
    measure: str = "Judged@K",
) -> list[tuple[str, str, float]]:
    """Warn when compared systems' judgement rates differ by more than ``margin``.

    A system whose top K holds fewer judged documents is penalised by P, nDCG and the like for
    documents nobody looked at; comparing it with a pool-building system is then biased.

    Parameters
    ----------
    judged_at_k : mapping of str to float, or Series
        ``{system: mean Judged@K}``, each in [0, 1] (e.g. from
        :func:`ragnb.measures.judged_at_k`).
    margin : float in [0, 1], default 0.1
        Largest tolerated absolute difference; pairs differing by more are reported.
    measure : str, default "Judged@K"
        Name used in the warning (e.g. ``"Judged@10"``).

    Returns
    -------
    list of (str, str, float)
        ``(higher system, lower system, difference)`` for every pair whose difference exceeds
        ``margin``, largest difference first; empty when none does.

    Raises
    ------
    InputError
        When a value is not a number in [0, 1] (naming the system) or ``margin`` is outside
        [0, 1].

    Warns
    -----
    UserWarning
        Once, listing the offending pairs, when there is at least one.

    References
    ----------
    .. [1] C. Buckley and E. M. Voorhees, "Retrieval evaluation with incomplete information",
       SIGIR 2004, Section 3 (bias against systems that did not contribute to the pool).
    .. [2] S. MacAvaney et al., ir_measures ``Judged@K``, ECIR 2022.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     pairs = judged_gap_warning({"bm25": 0.92, "dense": 0.61, "hybrid": 0.85})
    >>> [(a, b, round(d, 2)) for a, b, d in pairs]   # 0.92 - 0.61, 0.85 - 0.61; 0.07 is fine
    [('bm25', 'dense', 0.31), ('hybrid', 'dense', 0.24)]
    >>> len(caught), caught[0].category.__name__
    (1, 'UserWarning')
    """
    items = list(judged_at_k.items())
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin <= 1:
        raise InputError(f"margin must be a number in [0, 1], got {margin!r}")
    rates: dict[str, float] = {}
    for system, value in items:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise InputError(f"system {system!r}: {measure} must be a number, got {value!r}")
        v = float(value)
        if not math.isfinite(v) or not 0 <= v <= 1:
            raise InputError(f"system {system!r}: {measure} = {v!r} is not in [0, 1]")
        rates[str(system)] = v
    pairs = []
    for (a, va), (b, vb) in combinations(rates.items(), 2):
        hi, lo = ((a, va), (b, vb)) if va >= vb else ((b, vb), (a, va))
        gap = hi[1] - lo[1]
        if gap > margin:
            pairs.append((hi[0], lo[0], gap))
    pairs.sort(key=lambda p: -p[2])
    if pairs:
        listed = "; ".join(f"{a} {rates[a]:.3f} vs {b} {rates[b]:.3f}" for a, b, _ in pairs[:5])
        more = f" (and {len(pairs) - 5} more pairs)" if len(pairs) > 5 else ""
        warnings.warn(
            f"{measure} differs by more than {margin:g} between compared systems: {listed}{more}. "
            "Unjudged documents count as non-relevant in P, R, nDCG, so the less-judged system is "
            "penalised; compare with Bpref, nDCG' or P' (condensed lists), or judge the missing "
            "documents.",
            UserWarning,
            stacklevel=2,
        )
    return pairs
