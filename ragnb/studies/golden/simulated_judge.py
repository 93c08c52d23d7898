"""The parts the refinement simulation (:mod:`ragnb.studies.golden.simulation`) is made of: the
token cost of a listwise call (:class:`TokenCost`), a simulated noisy listwise judge
(:class:`NoisyUtilityRanker`) and RankGPT's bottom-up sliding window, the one-shot baseline
(:func:`sliding_window_rank`). The model they implement is described in
:mod:`ragnb.studies.golden.simulation`.

The sliding window is RankGPT's (Sun et al., EMNLP 2023), the Gaussian noise Thurstone's case V
(1927); the full references are in :mod:`ragnb.studies.golden.simulation`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.studies.golden.refine import (
    ListwiseRanker,
    RankFn,
    answer_permutation,
    is_invalid_answer,
    rank_function,
    reported_tokens,
)

__all__ = [
    "Model",
    "NoisyUtilityRanker",
    "SimulatedRanking",
    "SlidingWindowResult",
    "TokenCost",
    "estimate_passage_tokens",
    "sliding_window_rank",
    "window_starts",
]

Model = Literal["thurstone", "plackett-luce"]


# ----------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class TokenCost:
    """Tokens of one listwise call: ``prompt_tokens + k * (passage_tokens + item_overhead)``.

    Attributes
    ----------
    passage_tokens : float > 0, default 100
        Mean tokens of one passage (title and text).
    prompt_tokens : int >= 0, default 300
        Instructions, query and answer framing, once per call.
    item_overhead : int >= 0, default 10
        Per passage: its identifier in the prompt and its share of the output permutation.

    Examples
    --------
    >>> TokenCost(passage_tokens=80)(20), TokenCost(passage_tokens=80)(5)   # 300 + k * 90
    (2100, 750)
    """

    passage_tokens: float = 100.0
    prompt_tokens: int = 300
    item_overhead: int = 10

    def __post_init__(self) -> None:
        if not (math.isfinite(self.passage_tokens) and self.passage_tokens > 0):
            raise InputError(f"passage_tokens must be > 0, got {self.passage_tokens!r}")
        if self.prompt_tokens < 0 or self.item_overhead < 0:
            raise InputError("prompt_tokens and item_overhead must be >= 0")

    def __call__(self, n_items: int) -> int:
        return math.ceil(self.prompt_tokens + n_items * (self.passage_tokens + self.item_overhead))


def estimate_passage_tokens(corpus: pd.DataFrame, chars_per_token: float = 4.0) -> float:
    """Mean tokens of a passage, by the rule of thumb of ``chars_per_token`` characters a token.

    Parameters
    ----------
    corpus : DataFrame
        Columns ``text`` and optionally ``title`` (:func:`ragnb.io.readers.read_corpus`).
    chars_per_token : float > 0, default 4
        About 4 for English with GPT-style tokenisers.

    Returns
    -------
    float
        Mean of ``len(title + " " + text) / chars_per_token`` (``len(text) / ...`` without a
        title).
    """
    if "text" not in corpus.columns or len(corpus) == 0:
        raise InputError("corpus needs a 'text' column and at least one passage")
    chars = corpus["text"].astype(str).str.len()
    if "title" in corpus.columns:
        title = corpus["title"].fillna("").astype(str).str.len()
        chars = chars + np.where(title > 0, title + 1, 0)
    return float(chars.mean() / chars_per_token)


# ----------------------------------------------------------------------------- the judge


@dataclass(frozen=True)
class SimulatedRanking:
    """A simulated judge's answer: ``permutation`` (positions, best first) and ``tokens``."""

    permutation: list[int]
    tokens: int


class NoisyUtilityRanker:
    """A simulated listwise judge: the order of latent utilities seen through noise.

    Parameters
    ----------
    utilities : mapping of str to float
        Latent utility of every item the judge may be shown; the "passages" it is given are
        these keys (the simulation passes doc ids as passages).
    noise_sd : float >= 0
        Standard deviation of the noise added to each utility on each call; 0 is a perfect
        judge.
    model : {"thurstone", "plackett-luce"}, default "thurstone"
        Gaussian noise (Thurstone case V), or Gumbel noise of the same standard deviation
        (a Plackett-Luce sample).
    cost : TokenCost, optional
        Tokens charged per call.
    seed : int, SeedSequence, Generator or None
        The noise stream.

    Attributes
    ----------
    calls, tokens_used : int
        Calls answered and tokens charged so far.

    Examples
    --------
    >>> judge = NoisyUtilityRanker({"a": 0.0, "b": 2.0, "c": 1.0}, noise_sd=0.0)
    >>> judge.rank("q", ["a", "b", "c"])
    SimulatedRanking(permutation=[1, 2, 0], tokens=630)
    """

    def __init__(
        self,
        utilities: Mapping[str, float],
        noise_sd: float,
        *,
        model: Model = "thurstone",
        cost: TokenCost | None = None,
        seed: int | np.random.SeedSequence | np.random.Generator | None = None,
    ) -> None:
        if not (math.isfinite(noise_sd) and noise_sd >= 0):
            raise InputError(f"noise_sd must be a finite number >= 0, got {noise_sd!r}")
        if model not in ("thurstone", "plackett-luce"):
            raise InputError(f"model must be 'thurstone' or 'plackett-luce', got {model!r}")
        self.utilities = utilities
        self.noise_sd = float(noise_sd)
        self.model = model
        self.cost = cost if cost is not None else TokenCost()
        self.rng = np.random.default_rng(seed)
        self.calls = 0
        self.tokens_used = 0

    def rank(self, query: str, items: Sequence[str]) -> SimulatedRanking:
        """Order ``items`` (keys of ``utilities``) by noisy utility, best first."""
        try:
            u = np.array([self.utilities[d] for d in items], dtype=np.float64)
        except KeyError as e:
            raise InputError(f"the simulated judge knows no item {e.args[0]!r}") from None
        n = u.size
        if self.model == "thurstone":
            noise = self.rng.normal(0.0, self.noise_sd, n)
        else:
            noise = self.rng.gumbel(0.0, self.noise_sd * math.sqrt(6.0) / math.pi, n)
        perm = np.lexsort((np.arange(n), -(u + noise)))
        tokens = self.cost(n)
        self.calls += 1
        self.tokens_used += tokens
        return SimulatedRanking([int(i) for i in perm], tokens)


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
