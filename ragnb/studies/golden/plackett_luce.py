"""The kernels of S6's listwise refinement (Dallaire's Algorithm 1, steps 2, 4 and 5): the
stage-wise Plackett-Luce gradient and Fisher information of a judged order, the lock rules, the
acyclic lock graph, Kahn's topological order, and starting scores from grades.

:func:`ragnb.studies.golden.refine.refine` runs the loop that uses them; the notes on each step and
the choices made where the paper leaves them open are in :mod:`ragnb.studies.golden.refine`.

The gradient is that of the Plackett-Luce model (Plackett 1975, Luce 1959), the order Kahn's
topological sort (1962), the loop Dallaire's Algorithm 1 (arXiv:2511.09545, Section 3.4); the
full references are in :mod:`ragnb.studies.golden.refine`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ragnb.errors import InputError

__all__ = [
    "LockGraph",
    "initial_scores_from_grades",
    "lock_rule",
    "pl_gradient",
    "topological_order",
]


def pl_gradient(
    scores: np.ndarray, order: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Stage-wise Plackett-Luce gradient and Fisher increments of one judged order.

    Parameters
    ----------
    scores : ndarray of float, shape (n,)
        Current scores ``s`` of all items (log-worths).
    order : sequence of int, length m
        Indices into ``scores`` of the judged items, best first.

    Returns
    -------
    grad : ndarray of float64, shape (n,)
        ``d log P(order) / d s``: over the suffixes ``S_k`` of the order,
        ``grad_j = sum_k ([j = order_k] - p_{k,j})`` with ``p_{k,j} = exp(s_j) / sum_{u in S_k}
        exp(s_u)`` for ``j in S_k``; zero outside the batch. Sums to 0.
    info : ndarray of float64, shape (n,)
        ``sum_k p_{k,j} (1 - p_{k,j})`` over the suffixes holding ``j``; zero outside the batch.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 3.4, "Listwise PL update over a judged order".

    Examples
    --------
    Three items with equal scores judged ``0 > 1 > 2``. Suffix ``{0, 1, 2}``: ``p = 1/3`` each;
    suffix ``{1, 2}``: ``p = 1/2``; suffix ``{2}``: ``p = 1``. So ``grad_0 = 1 - 1/3``,
    ``grad_1 = -1/3 + (1 - 1/2)``, ``grad_2 = -1/3 - 1/2 + (1 - 1)``, and
    ``info_0 = 2/9``, ``info_1 = info_2 = 2/9 + 1/4``:

    >>> grad, info = pl_gradient(np.zeros(3), [0, 1, 2])
    >>> (grad * 36).round(9).tolist(), (info * 36).round(9).tolist()
    ([24.0, 6.0, -30.0], [8.0, 17.0, 17.0])
    """
    idx = np.asarray(order, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)[idx]
    m = idx.size
    grad = np.zeros(len(scores))
    info = np.zeros(len(scores))
    if m == 0:
        return grad, info
    suffix = np.arange(m)[None, :] >= np.arange(m)[:, None]  # (k, i): i in S_k
    logits = np.where(suffix, s[None, :], -np.inf)
    logits = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    p = w / w.sum(axis=1, keepdims=True)  # (m, m): row k is the softmax over S_k
    g = np.eye(m) - p  # [j = order_k] - p_{k,j}; zero outside S_k because p is
    np.add.at(grad, idx, g.sum(axis=0))
    np.add.at(info, idx, (p * (1.0 - p)).sum(axis=0))
    return grad, info


class LockGraph:
    """Pairwise locks ``winner -> loser`` over items ``0..n-1``, kept acyclic.

    The graph keeps its transitive closure as a boolean matrix, so "does ``a`` reach ``b``?"
    is one look-up and an insertion costs one ``O(n^2)`` vectorised update; pools hold tens to
    hundreds of items. (The tests check it against a depth-first search on ``edges``.)

    Parameters
    ----------
    n : int
        Number of items.

    Attributes
    ----------
    edges : list of (int, int)
        The locks added, in order; never an edge the others already imply.
    reach : ndarray of bool, shape (n, n)
        ``reach[a, b]``: a path of locks leads from ``a`` to ``b`` (``a != b``).

    Examples
    --------
    >>> g = LockGraph(3)
    >>> g.try_add(0, 1), g.try_add(1, 2), g.try_add(0, 2), g.try_add(2, 0)
    ('added', 'added', 'implied', 'cycle')
    >>> g.edges, bool(g.reaches(0, 2))
    ([(0, 1), (1, 2)], True)
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.edges: list[tuple[int, int]] = []
        self.reach = np.zeros((n, n), dtype=bool)

    def reaches(self, a: int, b: int) -> bool:
        """Whether a path of locks leads from ``a`` to ``b`` (True for ``a == b``)."""
        return a == b or bool(self.reach[a, b])

    def try_add(self, winner: int, loser: int) -> Literal["added", "implied", "cycle"]:
        """Add ``winner -> loser`` unless the graph already implies it or it closes a cycle
        (the loser already reaches the winner)."""
        if self.reaches(winner, loser):
            return "implied"
        if self.reaches(loser, winner):
            return "cycle"
        above = self.reach[:, winner].copy()
        above[winner] = True
        below = self.reach[loser].copy()
        below[loser] = True
        self.reach[np.ix_(above, below)] = True
        self.edges.append((winner, loser))
        return "added"

    def unresolved(self, order: Sequence[int], k: int) -> np.ndarray:
        """Items whose place in the top ``k`` of ``order`` the locks do not yet fix.

        The top ``k`` of ``order`` (a linear extension) is forced when each of its items reaches
        the next and ``order[k-1]`` reaches every item after the top. Returns a boolean mask of
        shape (n,) over the items in a pair that fails; all False when the top is fixed.
        """
        o = np.asarray(order, dtype=np.int64)
        k = min(k, o.size)
        mask = np.zeros(self.n, dtype=bool)
        if k == 0:
            return mask
        chain_gap = ~self.reach[o[: k - 1], o[1:k]]
        mask[o[: k - 1][chain_gap]] = True
        mask[o[1:k][chain_gap]] = True
        rest_gap = ~self.reach[o[k - 1], o[k:]]
        if rest_gap.any():
            mask[o[k:][rest_gap]] = True
            mask[o[k - 1]] = True
        return mask


def lock_rule(
    s_w: float,
    s_l: float,
    sigma_w: float,
    sigma_l: float,
    *,
    z: float,
    net_wins: int,
    confirmations: int | None,
) -> Literal["bounds", "confirmations"] | None:
    """Whether the judge's ``w`` above ``l`` may become a lock, and by which rule.

    Parameters
    ----------
    s_w, s_l : float
        Scores of the winner and the loser after the update.
    sigma_w, sigma_l : float
        Their uncertainties ``1 / sqrt(max(I, eps))``.
    z : float
        Width of the bounds.
    net_wins : int
        Judgements of ``w`` above ``l`` minus those of ``l`` above ``w`` so far.
    confirmations : int or None
        Net wins that lock regardless of the bounds; None disables the rule.

    Returns
    -------
    "bounds", "confirmations" or None
        ``"bounds"`` when ``LCB(w) = s_w - z sigma_w > UCB(l) = s_l + z sigma_l``, else
        ``"confirmations"`` when ``net_wins >= confirmations``, else None (no lock).

    Examples
    --------
    >>> lock_rule(2.0, 0.0, 0.5, 0.5, z=1.0, net_wins=1, confirmations=3)   # 1.5 > 0.5
    'bounds'
    >>> lock_rule(2.0, 0.0, 0.5, 0.5, z=2.5, net_wins=1, confirmations=3)   # 0.75 < 1.25
    >>> lock_rule(2.0, 0.0, 0.5, 0.5, z=2.5, net_wins=3, confirmations=3)
    'confirmations'
    """
    if s_w - z * sigma_w > s_l + z * sigma_l:
        return "bounds"
    if confirmations is not None and net_wins >= confirmations:
        return "confirmations"
    return None


def topological_order(n: int, edges: Sequence[tuple[int, int]], scores: np.ndarray) -> list[int]:
    """Kahn's topological sort of a lock graph, the highest-scored available item first.

    Parameters
    ----------
    n : int
        Items ``0..n-1``.
    edges : sequence of (int, int)
        Locks ``(winner, loser)``; must form a DAG.
    scores : ndarray of float, shape (n,)
        Tie-break among the items whose winners are all placed: highest score first, then
        lowest index.

    Returns
    -------
    list of int
        A linear extension of the locks, length n.

    Raises
    ------
    InputError
        If the edges hold a cycle.

    Examples
    --------
    Scores put 2 first, but the lock ``1 -> 2`` must hold; 0 and 3 tie and go by index:

    >>> topological_order(4, [(1, 2)], np.array([0.0, 1.0, 5.0, 0.0]))
    [1, 2, 0, 3]
    """
    successors: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for w, lo in edges:
        successors[w].append(lo)
        indegree[lo] += 1
    heap = [(-float(scores[i]), i) for i in range(n) if indegree[i] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, i = heapq.heappop(heap)
        out.append(i)
        for j in successors[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(heap, (-float(scores[j]), j))
    if len(out) != n:
        raise InputError("the lock graph holds a cycle; no topological order exists")
    return out


def initial_scores_from_grades(
    grades: Sequence[float] | np.ndarray, spacing: float = 1.0
) -> np.ndarray:
    """Initial scores from judge grades (S4): ``spacing * (g - mean(g))``.

    Parameters
    ----------
    grades : array-like of float, shape (n,)
        One grade per item, e.g. Dallaire's 1-5 utility grades.
    spacing : float > 0, default 1
        Score difference between adjacent grades, in log-worth units: a PL probability of
        ``1 / (1 + exp(-spacing))`` that an item beats one a grade lower.

    Returns
    -------
    ndarray of float64, shape (n,)

    Examples
    --------
    >>> initial_scores_from_grades([5, 4, 3]).tolist()
    [1.0, 0.0, -1.0]
    """
    g = np.asarray(grades, dtype=np.float64)
    if g.ndim != 1 or not np.isfinite(g).all():
        raise InputError("grades must be a 1-d sequence of finite numbers")
    if not (math.isfinite(spacing) and spacing > 0):
        raise InputError(f"spacing must be a finite number > 0, got {spacing!r}")
    return spacing * (g - g.mean()) if g.size else g
