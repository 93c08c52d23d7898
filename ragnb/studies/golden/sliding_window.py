"""RankGPT's bottom-up sliding window (:func:`sliding_window_rank`), the one-shot baseline of the
refinement simulation (:mod:`ragnb.studies.golden.simulation`, whose listwise judge is the
simulated :class:`ragnb.judge.NoisyJudge`).

The sliding window is RankGPT's (Sun et al., EMNLP 2023); the full references are in
:mod:`ragnb.studies.golden.simulation`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from ragnb.errors import InputError
from ragnb.studies.golden.refine import (
    ListwiseRanker,
    RankFn,
    answer_permutation,
    is_invalid_answer,
    rank_function,
    reported_tokens,
)

__all__ = ["SlidingWindowResult", "sliding_window_rank", "window_starts"]

# ----------------------------------------------------------------------------- one-shot baseline


@dataclass(frozen=True)
class SlidingWindowResult:
    """Orders after each pass of :func:`sliding_window_rank`.

    Attributes
    ----------
    orders : list of list
        Item ids, best first, after pass 1, 2, ...
    calls, tokens : list of int
        Cumulative calls and tokens after each pass (tokens 0 when none are reported).
    """

    orders: list[list[Hashable]]
    calls: list[int]
    tokens: list[int]

    @property
    def order(self) -> list[Hashable]:
        """The order after the last pass."""
        return self.orders[-1]


def window_starts(n: int, window: int, step: int) -> list[int]:
    """Start positions of RankGPT's bottom-up windows over a list of n."""
    if n <= window:
        return [0]
    starts = []
    start = n - window
    while True:
        starts.append(start)
        if start == 0:
            return starts
        start = max(start - step, 0)


def sliding_window_rank(
    query: str,
    items: Mapping[Hashable, str],
    ranker: ListwiseRanker | RankFn,
    *,
    window: int = 20,
    step: int = 10,
    passes: int = 1,
    query_id: str | None = None,
) -> SlidingWindowResult:
    """RankGPT's sliding-window listwise ranking, bottom-up, over a list in its given order.

    The window covers the last ``window`` items, the judge reorders them, and the window moves
    ``step`` items up, until it covers the first item; a strong item can climb ``window - step``
    places per window, all the way to the top in one pass. ``passes`` repeats it on the output.

    Parameters
    ----------
    query : str
    items : dict of id to str
        The pool in its initial order, ``{id: passage}``.
    ranker : ListwiseRanker or callable
        As for :func:`ragnb.studies.golden.refine.refine`.
    window, step : int, default 20 and 10
        Window size and stride (``1 <= step <= window``).
    passes : int >= 1, default 1
    query_id : str, optional
        As for :func:`ragnb.studies.golden.refine.refine`: also pass ``query_id=`` and ``doc_ids=``.

    Returns
    -------
    SlidingWindowResult
        An invalid answer (``.permutation`` None or ``.valid`` False) leaves its window as it
        was.

    References
    ----------
    .. [1] Sun et al., RankGPT, EMNLP 2023, Section 3.3 (sliding window strategy).

    Examples
    --------
    Five items, window 3, step 2, a perfect judge (longer is better): the window at positions
    2-4 gives ``a b e d c``, the one at 0-2 gives ``e b a d c``. The best item reaches the top
    in one pass; the rest is sorted only within windows. A second pass sorts more:

    >>> by_length = lambda q, ps: sorted(range(len(ps)), key=lambda i: -len(ps[i]))
    >>> items = {"a": "x", "b": "xx", "c": "xxx", "d": "xxxx", "e": "xxxxx"}
    >>> sliding_window_rank("q", items, by_length, window=3, step=2, passes=2).orders
    [['e', 'b', 'a', 'd', 'c'], ['e', 'd', 'b', 'c', 'a']]
    """
    for name, value, low in (("window", window, 2), ("step", step, 1), ("passes", passes, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
    if step > window:
        raise InputError(f"step ({step}) must not exceed window ({window})")
    rank = rank_function(ranker)
    ids = list(items.keys())
    order = list(range(len(ids)))
    starts = window_starts(len(ids), window, step) if len(ids) > 1 else []
    orders, calls, tokens = [], [], []
    n_calls = n_tokens = 0
    for _ in range(passes):
        for start in starts:
            idx = order[start : start + window]
            passages = [items[ids[i]] for i in idx]
            if query_id is None:
                answer = rank(query, passages)
            else:
                answer = rank(
                    query, passages, query_id=query_id, doc_ids=[str(ids[i]) for i in idx]
                )
            n_calls += 1
            n_tokens += reported_tokens(answer) or 0
            if not is_invalid_answer(answer):
                perm = answer_permutation(answer, len(idx), query)
                order[start : start + window] = [idx[j] for j in perm]
        orders.append([ids[i] for i in order])
        calls.append(n_calls)
        tokens.append(n_tokens)
    return SlidingWindowResult(orders, calls, tokens)
