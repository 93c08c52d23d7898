"""Compatibility: rank-biased overlap with an ideal ranking (Clarke, Vtyurina and Smucker 2020).

``Compat(p=P)`` compares the run with the ideal ranking that agrees with it most: the relevant
documents (grade >= 1) by grade descending, those of one grade in the run's order, the unretrieved
ones after them. Their rank-biased overlap (RBO) to depth ``D = max(retrieved, relevant)``,

``RBO(run, ideal) = sum_{i<D} p^i |run_{<=i} & ideal_{<=i}| / (i + 1) / sum_{i<D} p^i``,

is divided by ``RBO(ideal, ideal)`` (the ideal is finite: N relevant documents), so a run that
ranks every relevant document in ideal order on top scores 1. 0 when the query has no relevant
document. Default ``p = 0.95``, as ir_measures' ``Compat``.

Ties in the run are broken by ``doc_id`` descending (trec_eval's order). ir_measures breaks them
by ``doc_id`` ascending, and orders the ideal within a grade by the run's scores, an unretrieved
document counting as score 0 (so a retrieved document with a negative score comes after it) and
equal scores in qrels order; on positive untied scores the two agree. ir_measures'
``normalize=False`` (the RBO alone) is not offered.

References
----------
.. [1] C. L. A. Clarke, A. Vtyurina and M. D. Smucker, "Assessing top-k preferences", ACM TOIS
   39(3), 2021 (arXiv:2007.11682, 2020), Section 4, eqs. 3-5.
.. [2] W. Webber, A. Moffat and J. Zobel, "A similarity measure for indefinite rankings", ACM
   TOIS 28(4), 2010 (RBO).
.. [3] ir_measures' ``compat`` provider (MacAvaney et al., ECIR 2022).
"""

from __future__ import annotations

import numpy as np

from ragnb.frames.schema import RunOrder
from ragnb.measures.base import Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.functions import Qrels, Run, fill_doc, mean_of
from ragnb.measures.kernel import RankingArrays, safe_div

__all__ = ["compatibility"]

COMPAT_P = ParamSpec("p", float, 0.95, 0.0, 1.0, doc="persistence of the RBO weights p^i")


def _ideal_positions(arrays: RankingArrays, relevant: np.ndarray) -> np.ndarray:
    """0-based position in the ideal ranking of each retrieved relevant document (n_q, depth):
    the relevant documents of a larger grade, plus those of its grade ranked above it."""
    grades = np.where(relevant, arrays.grades, 0)
    levels = arrays.grade_levels
    counts = np.where(levels >= 1, arrays.level_counts, 0)  # relevant documents per level
    above = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1] - counts  # of a larger grade
    level_of = np.searchsorted(levels, grades)
    level_of = np.minimum(level_of, len(levels) - 1) if len(levels) else level_of
    rows = np.arange(arrays.n_queries)[:, None]
    out = above[rows, level_of] if len(levels) else np.zeros_like(grades)
    for level in levels[levels >= 1]:
        same = relevant & (grades == level)
        out = out + np.where(same, np.cumsum(same, axis=1) - 1, 0)
    return out


def _compat(arrays: RankingArrays, k: None, *, p: float) -> np.ndarray:
    """RBO of the run with its most compatible ideal over the ideal's own RBO; (n_queries,)."""
    relevant = arrays.relevant(1)
    n_rel = arrays.n_relevant(1)
    depth = np.maximum(arrays.n_retrieved, n_rel)
    width = int(depth.max()) if arrays.n_queries else 0
    i = np.arange(width, dtype=np.float64)
    # prefix[j] = sum_{i<j} p^i / (i + 1); ones[j] = sum_{i<j} p^i
    prefix = np.concatenate([[0.0], np.cumsum(p**i / (i + 1.0))])
    ones = np.concatenate([[0.0], np.cumsum(p**i)])
    seen = np.maximum(np.arange(relevant.shape[1])[None, :], _ideal_positions(arrays, relevant))
    tails = prefix[depth][:, None] - prefix[np.minimum(seen, width)]
    overlap = np.where(relevant, tails, 0.0).sum(axis=1)
    best = ones[n_rel] + n_rel * (prefix[depth] - prefix[n_rel])
    return safe_div(overlap, best)


register_family(
    MeasureFamily(
        "Compat",
        _compat,
        params=(COMPAT_P,),
        cutoff="none",
        summary="Compat = RBO(run, ideal) / RBO(ideal, ideal) to depth max(retrieved, relevant), "
        "the ideal by grade and within a grade in run order (Clarke, Vtyurina and Smucker 2020)",
    ),
    aliases=("compat",),
)


@fill_doc
def compatibility(qrels: Qrels, run: Run, *, p: float = 0.95, order: RunOrder = "score") -> float:
    """Mean compatibility of the run with the ideal ranking (normalised rank-biased overlap).

    {{Parameters: qrels, run}}
    p : float in [0, 1], default 0.95
        RBO's persistence: rank i (from 0) weighs ``p^i``.
    {{order}}

    {{Returns: mean}}

    {{Raises: bad_input}}

    Notes
    -----
    The ideal ranking holds the documents of grade >= 1, by grade descending, those of one grade
    in the run's order and the unretrieved ones after them; the value is
    ``RBO(run, ideal) / RBO(ideal, ideal)`` to depth ``max(retrieved, relevant)``, 0 without a
    relevant document. It rewards the run's order where the grades say nothing, and counts the
    non-relevant documents only by the places they take.

    References
    ----------
    .. [1] C. L. A. Clarke, A. Vtyurina and M. D. Smucker, "Assessing top-k preferences", ACM
       TOIS 39(3), 2021, Section 4, eqs. 3-5.

    Examples
    --------
    >>> qrels = {"q": {"a": 2, "b": 1}}
    >>> run = {"q": {"b": 2.0, "a": 1.0}}        # ideal a, b; overlaps 0, 2 at depths 1, 2
    >>> p = 0.5
    >>> compatibility(qrels, run, p=p), (0 + p * 2 / 2) / (1 + p * 2 / 2)
    (0.3333333333333333, 0.3333333333333333)
    """
    return mean_of(Measure("Compat", p=p), qrels, run, order)
