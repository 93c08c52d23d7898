"""S6 listwise ranking refinement: Plackett-Luce updates from small judged batches, pairwise
locks kept acyclic, a global order by topological sort, and a stability stop (Dallaire's
Algorithm 1).

The refinement does not know which judge it talks to. A judge is anything with
``rank(query, passages) -> permutation`` (:class:`ListwiseRanker`) or a plain function of the
same shape; the permutation is a list of ``range(len(passages))`` positions, best first, or an
object carrying it as ``.permutation`` (ragnb's ``Judge.rank`` result). If the answer also
carries a token count (``.tokens``, ``.total_tokens`` or ``.usage.total_tokens``), the
refinement adds it up, so budgets can be compared and capped.

One iteration
-------------
1. Pick a batch ``B`` of ``m`` items, favouring low Fisher information ``I_j`` among the items
   whose place in the top ``top_n`` is not yet fixed by locks (see
   :attr:`RefineConfig.selection`), show the judge their passages in random order (so a
   position bias of the judge cannot reinforce the current order), read back a total order
   ``pi`` of the batch.
2. For every suffix ``S_k = (pi_k, ..., pi_{m-1})``, with the scores ``s`` before this batch:
   ``p_j = exp(s_j) / sum_{u in S_k} exp(s_u)``; ``grad[pi_k] += 1 - p_{pi_k}``,
   ``grad[j] -= p_j`` for ``j in S_k \\ {pi_k}``; ``I_j += p_j (1 - p_j)`` for ``j in S_k``
   (:func:`pl_gradient`). This is the gradient of the Plackett-Luce log-likelihood of ``pi``
   and the diagonal of its Fisher information.
3. ``ds_j = clip(eta_j * grad_j, -clip, clip)``, ``s += ds``, exposures of ``B`` ``+= 1``;
   every ``recentre_every`` iterations ``s -= mean(s)``.
4. For every pair ``w`` above ``l`` in ``pi``, with ``sigma = 1 / sqrt(max(I, eps))``: lock
   ``w -> l`` when ``s_w - z sigma_w > s_l + z sigma_l`` (LCB > UCB) or when ``w`` has beaten
   ``l`` ``confirmations`` more times than it lost to it. A lock already implied by the lock
   graph is not added; a lock that would close a cycle is rejected and recorded.
5. Global order: Kahn's topological sort of the lock graph, the highest score first among the
   available items (:func:`topological_order`). Snapshot its top ``top_n``.

The loop stops when the top ``top_n`` (as an ordered list) is unchanged for ``patience``
consecutive rounds of ``ceil(n / m)`` iterations, counted once every item has been judged
``min_exposures`` times ("stable"); when the locks alone fix the top ``top_n`` ("resolved");
at ``max_iterations`` ("max_iterations"); or when the next call would exceed ``max_tokens``
("budget").

Choices the paper leaves open, made here
----------------------------------------
* ``eta`` decays per item, ``eta_j = eta0 / sqrt(n_j)`` with ``n_j`` the item's exposures
  including this one (``decay="exposure"``); ``"iteration"`` uses ``eta0 / sqrt(t)``.
* A "confirmation" counts net wins: judgements of ``w`` above ``l`` minus those of ``l``
  above ``w`` (a noisy judge's contradictions cancel).
* The paper's third lock rule, "strong transitive evidence", is not implemented: a pair the
  lock graph already orders is simply implied.
* Batches are drawn among the items the locks leave unresolved (``selection="unresolved"``),
  the paper's "uncertain pairs get re-sampled" (Section 3.4.1, point 3). With the paper's
  literal rule (``"weighted"``: favour low information over the whole pool) a noiseless judge
  misses an adjacent pair that never shares a batch, and the stability rule stops many runs
  with a wrong top (see ``tests/test_refine.py``).
* Patience counts rounds of ``ceil(n / m)`` iterations, not single iterations
  (``patience_unit``): three batches of five that miss the top twenty of a pool of a hundred
  leave it unchanged without saying anything about it. The clock starts only once every item
  has ``min_exposures`` judgements (default 1).

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (S6) and Algorithm 1.
.. [2] R. L. Plackett, "The analysis of permutations", Applied Statistics 24(2), 1975;
   R. D. Luce, "Individual Choice Behavior", 1959.
.. [3] A. B. Kahn, "Topological sorting of large networks", CACM 5(11), 1962.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.studies.golden.plackett_luce import (
    LockGraph,
    initial_scores_from_grades,
    lock_rule,
    pl_gradient,
    topological_order,
)

__all__ = [
    "HISTORY_COLUMNS",
    "ListwiseRanker",
    "LockGraph",
    "RefineConfig",
    "RefinementResult",
    "answer_permutation",
    "initial_scores_from_grades",
    "is_invalid_answer",
    "lock_rule",
    "pl_gradient",
    "rank_function",
    "refine",
    "reported_tokens",
    "topological_order",
]


class ListwiseRanker(Protocol):
    """A judge that orders a few passages for a query.

    ``rank(query, items)`` returns a permutation of ``range(len(items))``, best first, as a
    sequence of ints or as an object with a ``.permutation`` attribute (and, optionally,
    ``.tokens`` / ``.total_tokens`` / ``.usage.total_tokens`` for the tokens the call used).
    An object whose ``.permutation`` is None or whose ``.valid`` is False is an invalid answer:
    the call counts, the batch teaches nothing. :func:`refine` given a ``query_id`` also passes
    ``query_id=`` and ``doc_ids=`` (the batch's item ids, as str), the keywords of
    ``ragnb.judge.Judge.rank``.
    """

    def rank(self, query: str, items: Sequence[str]) -> Any: ...


RankFn: TypeAlias = Callable[..., Any]  # (query, passages, **ids) -> answer
TokenCost: TypeAlias = Callable[[str, Sequence[str]], int]
Decay = Literal["exposure", "iteration", "none"]
Selection = Literal["weighted", "lowest", "unresolved"]

#: Columns of :attr:`RefinementResult.history`, one row per iteration (judge call).
HISTORY_COLUMNS = (
    "iteration",
    "calls",
    "tokens",
    "top_changed",
    "stable_for",
    "n_locks",
    "n_rejected",
    "n_invalid",
    "mean_sigma",
)


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class RefineConfig:
    """Parameters of the S6 refinement (Algorithm 1); the defaults follow the paper where it
    gives one.

    Attributes
    ----------
    m : int >= 2, default 5
        Batch size: items per judge call (the paper's 5).
    eta0 : float > 0, default 0.5
        Initial step size of the Plackett-Luce update.
    decay : {"exposure", "iteration", "none"}, default "exposure"
        Inverse-square-root decay of the step: per item ``eta0 / sqrt(exposures)``, per
        iteration ``eta0 / sqrt(t)``, or none.
    clip : float > 0, default 1.0
        Largest ``|ds_j|`` of one update.
    recentre_every : int >= 0, default 10
        Subtract the mean score every this many iterations (0: never). Orders do not change.
    z : float >= 0, default 1.96
        Width of the confidence bounds ``s -+ z sigma``.
    confirmations : int >= 1 or None, default 3
        Lock ``w -> l`` once ``w`` has beaten ``l`` this many more times than it lost to it;
        None disables the rule.
    top_n : int >= 1, default 20
        Length of the top list whose stability stops the run.
    patience : int >= 1, default 3
        Consecutive rounds (or iterations, see ``patience_unit``) with an unchanged top
        ``top_n`` that stop the run (the paper's T).
    patience_unit : {"round", "iteration"}, default "round"
        A round is ``ceil(n / m)`` iterations, enough batches to show the judge every item once
        on average; ``"iteration"`` is one batch, the paper's wording. Three unchanged
        iterations are weak evidence on a large pool (a batch that misses the top cannot change
        it): with a noiseless judge they stop most runs before the top is right.
    min_exposures : int >= 0, default 1
        Judgements every item needs before the stability clock runs.
    stop_when_resolved : bool, default True
        Stop as soon as the locks alone fix the top ``top_n`` (further calls cannot change it).
    max_iterations : int >= 1, default 500
        Iteration cap (one judge call per iteration).
    eps : float > 0, default 0.01
        Initial information and floor: ``sigma = 1 / sqrt(max(I, eps))``.
    selection : {"unresolved", "weighted", "lowest"}, default "unresolved"
        How the batch favours low information. ``"weighted"``: sample ``m`` items without
        replacement with probability proportional to ``sigma_j**2 = 1 / max(I_j, eps)``.
        ``"lowest"``: the ``m`` items of lowest ``I_j`` (ties at random). ``"unresolved"``: as
        "weighted", but among the items whose place in the top ``top_n`` the locks do not fix
        yet (:meth:`LockGraph.unresolved`), filled up from the others; the paper's "uncertain
        pairs get re-sampled" (Section 3.4.1) made the sampling rule.
    seed : int or None, default 0
        Seed of the batch selection and presentation order (the judge has its own randomness).
    """

    m: int = 5
    eta0: float = 0.5
    decay: Decay = "exposure"
    clip: float = 1.0
    recentre_every: int = 10
    z: float = 1.96
    confirmations: int | None = 3
    top_n: int = 20
    patience: int = 3
    patience_unit: Literal["round", "iteration"] = "round"
    min_exposures: int = 1
    stop_when_resolved: bool = True
    max_iterations: int = 500
    eps: float = 0.01
    selection: Selection = "unresolved"
    seed: int | None = 0

    def __post_init__(self) -> None:
        def _int(name: str, low: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
                raise InputError(f"RefineConfig.{name} must be an integer >= {low}, got {v!r}")

        def _pos(name: str, allow_zero: bool = False) -> None:
            v = getattr(self, name)
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or v < 0 or (v == 0 and not allow_zero):
                what = ">= 0" if allow_zero else "> 0"
                raise InputError(f"RefineConfig.{name} must be a finite number {what}, got {v!r}")

        _int("m", 2)
        _int("recentre_every", 0)
        _int("top_n", 1)
        _int("patience", 1)
        _int("min_exposures", 0)
        _int("max_iterations", 1)
        if self.confirmations is not None:
            _int("confirmations", 1)
        _pos("eta0")
        _pos("clip")
        _pos("eps")
        _pos("z", allow_zero=True)
        if not isinstance(self.stop_when_resolved, bool):
            raise InputError(
                f"RefineConfig.stop_when_resolved must be a bool, got {self.stop_when_resolved!r}"
            )
        if self.decay not in ("exposure", "iteration", "none"):
            raise InputError(
                f"RefineConfig.decay must be 'exposure', 'iteration' or 'none', got {self.decay!r}"
            )
        if self.patience_unit not in ("round", "iteration"):
            raise InputError(
                "RefineConfig.patience_unit must be 'round' or 'iteration', got "
                f"{self.patience_unit!r}"
            )
        if self.selection not in ("weighted", "lowest", "unresolved"):
            raise InputError(
                "RefineConfig.selection must be 'weighted', 'lowest' or 'unresolved', got "
                f"{self.selection!r}"
            )


# ----------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class RefinementResult:
    """The outcome of :func:`refine` for one query.

    Attributes
    ----------
    ids : tuple
        Item ids in input order (keys of a mapping, else positions ``0..n-1``).
    order : list
        Final global order of the item ids, best first (a linear extension of ``locks``).
    scores, sigmas, information : ndarray of float64, shape (n,)
        Final PL scores (log-worth, recentred), ``1 / sqrt(max(I, eps))`` and Fisher
        information, aligned with ``ids``.
    exposures : ndarray of int64, shape (n,)
        Times each item was in a judged batch.
    locks : list of (id, id)
        Lock edges ``(winner, loser)`` in the order they were added.
    rejected : DataFrame
        Locks that passed the test but would have closed a cycle: ``iteration``, ``winner``,
        ``loser``, ``rule`` ("bounds" or "confirmations").
    history : DataFrame
        One row per iteration, columns :data:`HISTORY_COLUMNS`: ``iteration`` (1-based),
        ``calls`` and ``tokens`` so far (tokens NA when the judge does not report them),
        ``top_changed`` (the top ``top_n`` list differs from the previous iteration's),
        ``stable_for`` (iterations it has been unchanged and counted), ``n_locks``,
        ``n_rejected``, ``n_invalid`` (invalid answers so far), ``mean_sigma``.
    tops : tuple of tuple
        The top ``top_n`` ids before the first call (``tops[0]``, from the initial scores) and
        after each iteration.
    stop_reason : {"stable", "resolved", "max_iterations", "budget", "trivial"}
        Why the loop ended ("trivial": fewer than two items, no call made).
    calls : int
        Judge calls made.
    tokens : int or None
        Tokens reported over all calls (None when no call reported them).
    config : RefineConfig
    """

    ids: tuple[Hashable, ...]
    order: list[Hashable]
    scores: np.ndarray
    sigmas: np.ndarray
    information: np.ndarray
    exposures: np.ndarray
    locks: list[tuple[Hashable, Hashable]]
    rejected: pd.DataFrame
    history: pd.DataFrame
    tops: tuple[tuple[Hashable, ...], ...]
    stop_reason: str
    calls: int
    tokens: int | None
    config: RefineConfig = field(repr=False)

    @property
    def top(self) -> list[Hashable]:
        """The final top ``top_n`` ids, best first."""
        return self.order[: self.config.top_n]

    def items_frame(self) -> pd.DataFrame:
        """One row per item in final order: ``item``, ``rank`` (1-based), ``score``, ``sigma``,
        ``information``, ``exposures``."""
        pos = {d: i for i, d in enumerate(self.ids)}
        idx = np.array([pos[d] for d in self.order], dtype=np.int64)
        return pd.DataFrame(
            {
                "item": pd.Series(list(self.order), dtype=object),
                "rank": np.arange(1, len(idx) + 1, dtype=np.int64),
                "score": self.scores[idx],
                "sigma": self.sigmas[idx],
                "information": self.information[idx],
                "exposures": self.exposures[idx],
            }
        )


# ----------------------------------------------------------------------------- judge answers


def rank_function(ranker: ListwiseRanker | RankFn) -> RankFn:
    """The ``rank(query, items)`` function of a listwise ranker (its ``rank`` method, or the
    ranker itself when it is a function).

    Raises
    ------
    InputError
        When ``ranker`` is neither.
    """
    method = getattr(ranker, "rank", None)
    if callable(method):
        return method
    if callable(ranker):
        return ranker
    raise InputError(
        f"ranker must have a rank(query, items) method or be a function, got "
        f"{type(ranker).__name__}"
    )


def reported_tokens(answer: Any) -> int | None:
    """The tokens a ranker's answer says it used (``tokens``, ``total_tokens`` or
    ``usage.total_tokens``), or None when it says nothing."""
    for name in ("tokens", "total_tokens"):
        value = getattr(answer, name, None)
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            return int(value)
    usage = getattr(answer, "usage", None)
    if isinstance(usage, Mapping):
        value = usage.get("total_tokens")
    else:
        value = getattr(usage, "total_tokens", None)
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return int(value)
    return None


def is_invalid_answer(answer: Any) -> bool:
    """A judge's result object that says it holds no usable order."""
    if getattr(answer, "valid", True) is False:
        return True
    return hasattr(answer, "permutation") and answer.permutation is None


def answer_permutation(answer: Any, m: int, query: str) -> list[int]:
    """The order a ranker's answer gives to ``m`` passages: a permutation of ``range(m)``
    (the answer itself or its ``permutation``).

    Raises
    ------
    InputError
        When it is no permutation of ``range(m)``; the message names the query.
    """
    perm = getattr(answer, "permutation", answer)
    try:
        values = [int(x) for x in perm]
        ok = all(float(x) == v for x, v in zip(perm, values, strict=True))
    except (TypeError, ValueError):
        raise InputError(
            f"the ranker returned {type(answer).__name__}, not a permutation (a list of ints or "
            "an object with .permutation)",
            query_id=query,
        ) from None
    if not ok or sorted(values) != list(range(m)):
        raise InputError(
            f"the ranker returned {values!r}, not a permutation of range({m})", query_id=query
        )
    return values


# ----------------------------------------------------------------------------- the loop


def _as_items(
    items: Mapping[Hashable, str] | Sequence[str],
) -> tuple[tuple[Hashable, ...], list[str]]:
    if isinstance(items, Mapping):
        ids = tuple(items.keys())
        texts = [items[k] for k in ids]
    elif isinstance(items, Sequence) and not isinstance(items, str):
        ids = tuple(range(len(items)))
        texts = list(items)
    else:
        raise InputError(
            f"items must be a dict {{id: passage}} or a list of passages, got "
            f"{type(items).__name__}"
        )
    bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
    if bad is not None:
        raise InputError(f"item {ids[bad]!r} is {type(texts[bad]).__name__}, not a str passage")
    return ids, texts


def _as_scores(
    initial: Mapping[Hashable, float] | Sequence[float] | np.ndarray | None,
    ids: tuple[Hashable, ...],
) -> np.ndarray:
    n = len(ids)
    if initial is None:
        return np.zeros(n)
    if isinstance(initial, Mapping):
        missing = [d for d in ids if d not in initial]
        if missing:
            raise InputError(f"initial_scores lacks {len(missing)} items, e.g. {missing[0]!r}")
        s = np.array([float(initial[d]) for d in ids])
    else:
        s = np.asarray(initial, dtype=np.float64).ravel()
        if s.size != n:
            raise InputError(f"initial_scores has {s.size} values for {n} items")
    if not np.isfinite(s).all():
        raise InputError("initial_scores must be finite")
    return s.astype(np.float64)


def _select(
    info: np.ndarray, cfg: RefineConfig, rng: np.random.Generator, focus: np.ndarray | None
) -> np.ndarray:
    """Indices of the next batch; ``focus`` (selection "unresolved") marks the items to take
    first."""
    n = info.size
    m = min(cfg.m, n)
    if m == n:
        return np.arange(n)
    if cfg.selection == "lowest":
        return np.lexsort((rng.random(n), info))[:m]
    weight = 1.0 / np.maximum(info, cfg.eps)
    if focus is None or not focus.any():
        return rng.choice(n, size=m, replace=False, p=weight / weight.sum())
    inside = np.flatnonzero(focus)
    if inside.size >= m:
        w = weight[inside]
        return rng.choice(inside, size=m, replace=False, p=w / w.sum())
    outside = np.flatnonzero(~focus)
    w = weight[outside]
    extra = rng.choice(outside, size=m - inside.size, replace=False, p=w / w.sum())
    return np.concatenate([inside, extra])


def refine(
    query: str,
    items: Mapping[Hashable, str] | Sequence[str],
    ranker: ListwiseRanker | RankFn,
    *,
    config: RefineConfig | None = None,
    initial_scores: Mapping[Hashable, float] | Sequence[float] | np.ndarray | None = None,
    max_tokens: int | None = None,
    token_cost: TokenCost | None = None,
    query_id: str | None = None,
    **params: Any,
) -> RefinementResult:
    """Refine the order of a candidate pool with a listwise judge (S6, Algorithm 1).

    Parameters
    ----------
    query : str
        The query text, passed to the judge.
    items : dict of id to str, or sequence of str
        The pool: ``{item id: passage}``, or passages (ids are then positions ``0..n-1``).
    ranker : ListwiseRanker or callable
        ``ranker.rank(query, passages)`` or ``ranker(query, passages)``; returns a permutation
        of ``range(len(passages))``, best first, or an object with ``.permutation`` (and
        optionally a token count, see the module notes).
    config : RefineConfig, optional
        The parameters; ``**params`` override single fields, e.g. ``m=4, seed=1``.
    initial_scores : dict of id to float, or array-like of shape (n,), optional
        Starting scores (e.g. :func:`initial_scores_from_grades`); zeros by default, which
        leaves the initial order to the input order.
    max_tokens : int, optional
        Token budget: no call is made once the tokens used plus the previous call's tokens
        would exceed it (exact when every call costs the same). Needs reported tokens or
        ``token_cost``.
    token_cost : callable, optional
        ``token_cost(query, passages) -> int``: the tokens of a call, counted instead of what
        the judge reports (for judges that report none, or an estimate to budget by).
    query_id : str, optional
        When given, the judge is called as ``rank(query, passages, query_id=query_id,
        doc_ids=[str(id) of each passage])``, the keywords of ``ragnb.judge.Judge.rank``, so
        that a judge can look up, cache and audit by id.

    Returns
    -------
    RefinementResult

    Raises
    ------
    InputError
        Bad items, scores or parameters; a judge answer that is not a permutation of the batch;
        ``max_tokens`` with a judge that reports no tokens and no ``token_cost``. An invalid
        answer (``.permutation`` None or ``.valid`` False) is not an error: it is counted in
        the history's ``n_invalid`` and the batch is skipped.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 3.4 (S6) and Algorithm 1.

    Examples
    --------
    A noiseless judge (longer passages are better) and a pool of six; the locks alone end up
    fixing the whole order:

    >>> passages = {"a": "x", "b": "xxxx", "c": "xx", "d": "xxxxxx", "e": "xxx", "f": "xxxxx"}
    >>> by_length = lambda q, ps: sorted(range(len(ps)), key=lambda i: -len(ps[i]))
    >>> res = refine("q", passages, by_length, top_n=6, patience=50, confirmations=1)
    >>> res.order, res.stop_reason
    (['d', 'f', 'b', 'e', 'c', 'a'], 'resolved')
    """
    cfg = _resolve_config(config, params)
    max_tokens = check_positive_int(max_tokens, "max_tokens", allow_none=True)
    ids, texts = _as_items(items)
    if len(set(ids)) != len(ids):
        raise InputError("item ids must be unique")
    rank = rank_function(ranker)
    run = _Refinement(cfg, ids, _as_scores(initial_scores, ids))
    n = len(ids)
    reason = "trivial" if n < 2 else "max_iterations"
    for t in range(1, cfg.max_iterations + 1 if n >= 2 else 1):
        if run.over_budget(max_tokens):
            reason = "budget"
            break
        # 1) batch, favouring low information; shown to the judge in random order
        batch = run.next_batch()
        passages = [texts[i] for i in batch]
        if query_id is None:
            answer = rank(query, passages)
        else:
            answer = rank(query, passages, query_id=query_id, doc_ids=[str(ids[i]) for i in batch])
        run.count_call(answer, query, passages, token_cost, max_tokens)
        if is_invalid_answer(answer):
            run.skip(t)
            continue
        judged = batch[answer_permutation(answer, len(batch), query)]
        run.update(judged, t)  # 2) the PL step
        added = run.lock(judged, t)  # 3) locks
        stop = run.advance(t, added)  # 4) global order and the stopping rules
        if stop is not None:
            reason = stop
            break
    return run.result(reason)


def _resolve_config(config: RefineConfig | None, params: Mapping[str, Any]) -> RefineConfig:
    """``config`` (default ``RefineConfig()``) with the single fields of ``params`` replaced."""
    cfg = config if config is not None else RefineConfig()
    if params:
        names = {f.name for f in fields(RefineConfig)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise InputError(f"unknown refine parameters {unknown}; known: {sorted(names)}")
        cfg = replace(cfg, **params)
    return cfg


class _Refinement:
    """The state of one refinement (scores, information, locks, history) and its steps."""

    def __init__(self, cfg: RefineConfig, ids: tuple[Hashable, ...], scores: np.ndarray) -> None:
        n = len(ids)
        self.cfg, self.ids, self.n = cfg, ids, n
        self.s = scores
        self.info = np.full(n, cfg.eps)
        self.exposures = np.zeros(n, dtype=np.int64)
        self.wins = np.zeros((n, n), dtype=np.int64)  # wins[w, l]: judgements of w above l
        self.graph = LockGraph(n)
        self.rng = np.random.default_rng(cfg.seed)
        self.k_top = min(cfg.top_n, n)
        round_length = math.ceil(n / cfg.m) if cfg.patience_unit == "round" else 1
        self.needed = cfg.patience * round_length  # unchanged iterations that stop the run
        self.order = topological_order(n, self.graph.edges, self.s)
        self.tops = [tuple(ids[i] for i in self.order[: self.k_top])]
        self.rows: list[tuple[Any, ...]] = []
        self.rejected: list[tuple[int, Hashable, Hashable, str]] = []
        self.calls = 0
        self.tokens: int | None = None
        self.last_cost: int | None = None
        self.stable_for = 0
        self.invalid = 0

    def sigma(self) -> np.ndarray:
        return 1.0 / np.sqrt(np.maximum(self.info, self.cfg.eps))

    def over_budget(self, max_tokens: int | None) -> bool:
        """The next call, costing what the last one did, would exceed ``max_tokens``."""
        if max_tokens is None or self.tokens is None or self.last_cost is None:
            return False
        return self.tokens + self.last_cost > max_tokens

    def next_batch(self) -> np.ndarray:
        """Step 1: the next batch's indices, in the random order the judge sees them."""
        cfg = self.cfg
        focus = (
            self.graph.unresolved(self.order, self.k_top) if cfg.selection == "unresolved" else None
        )
        return self.rng.permutation(_select(self.info, cfg, self.rng, focus))

    def count_call(
        self,
        answer: Any,
        query: str,
        passages: list[str],
        token_cost: TokenCost | None,
        max_tokens: int | None,
    ) -> None:
        """Count a judge call and its tokens (``token_cost``, else what the answer reports)."""
        self.calls += 1
        if token_cost is not None:
            cost: int | None = int(token_cost(query, passages))
        else:
            cost = reported_tokens(answer)
        if cost is None and max_tokens is not None:
            raise InputError(
                "max_tokens needs token counts: the ranker reported none; pass token_cost",
                query_id=query,
            )
        if cost is not None:
            self.tokens = (self.tokens or 0) + cost
            self.last_cost = cost

    def _row(self, t: int, changed: bool, mean_sigma: float) -> None:
        self.rows.append(
            (t, self.calls, self.tokens, changed, self.stable_for, len(self.graph.edges))
            + (len(self.rejected), self.invalid, mean_sigma)
        )

    def skip(self, t: int) -> None:
        """An invalid answer: counted, the batch teaches nothing."""
        self.invalid += 1
        self._row(t, False, self.sigma().mean())
        self.tops.append(self.tops[-1])

    def update(self, judged: np.ndarray, t: int) -> None:
        """Step 2: stage-wise PL update over the suffixes, with the scores before this batch."""
        cfg, n = self.cfg, self.n
        grad, fisher = pl_gradient(self.s, judged)
        self.info += fisher
        self.exposures[judged] += 1
        if cfg.decay == "exposure":
            eta = cfg.eta0 / np.sqrt(np.maximum(self.exposures, 1))
        elif cfg.decay == "iteration":
            eta = np.full(n, cfg.eta0 / math.sqrt(t))
        else:
            eta = np.full(n, cfg.eta0)
        self.s += np.clip(eta * grad, -cfg.clip, cfg.clip)
        if cfg.recentre_every and t % cfg.recentre_every == 0:
            self.s -= self.s.mean()

    def lock(self, judged: np.ndarray, t: int) -> bool:
        """Step 3: locks for the pairs the judge ordered; whether a lock was added."""
        s, sig, cfg = self.s, self.sigma(), self.cfg
        added = False
        for a in range(len(judged)):
            for b in range(a + 1, len(judged)):
                w, lo = int(judged[a]), int(judged[b])
                self.wins[w, lo] += 1
                rule = lock_rule(
                    s[w],
                    s[lo],
                    sig[w],
                    sig[lo],
                    z=cfg.z,
                    net_wins=int(self.wins[w, lo] - self.wins[lo, w]),
                    confirmations=cfg.confirmations,
                )
                if rule is None:
                    continue
                outcome = self.graph.try_add(w, lo)
                if outcome == "added":
                    added = True
                elif outcome == "cycle":
                    self.rejected.append((t, self.ids[w], self.ids[lo], rule))
        return added

    def advance(self, t: int, added: bool) -> str | None:
        """Step 4: the global order and its top; the stop reason, or None to go on."""
        cfg = self.cfg
        self.order = topological_order(self.n, self.graph.edges, self.s)
        top = tuple(self.ids[i] for i in self.order[: self.k_top])
        changed = top != self.tops[-1]
        self.tops.append(top)
        counting = not changed and bool(self.exposures.min() >= cfg.min_exposures)
        self.stable_for = self.stable_for + 1 if counting else 0
        self._row(t, changed, self.sigma().mean())
        if (
            cfg.stop_when_resolved
            and added
            and not self.graph.unresolved(self.order, self.k_top).any()
        ):
            return "resolved"
        if self.stable_for >= self.needed:
            return "stable"
        return None

    def result(self, reason: str) -> RefinementResult:
        ids = self.ids
        history = pd.DataFrame(self.rows, columns=list(HISTORY_COLUMNS))
        history["tokens"] = history["tokens"].astype("Int64")
        history["top_changed"] = history["top_changed"].astype(bool)
        history["mean_sigma"] = history["mean_sigma"].astype(np.float64)
        return RefinementResult(
            ids=ids,
            order=[ids[i] for i in self.order],
            scores=self.s,
            sigmas=self.sigma(),
            information=self.info,
            exposures=self.exposures,
            locks=[(ids[w], ids[lo]) for w, lo in self.graph.edges],
            rejected=pd.DataFrame(self.rejected, columns=["iteration", "winner", "loser", "rule"]),
            history=history,
            tops=tuple(self.tops),
            stop_reason=reason,
            calls=self.calls,
            tokens=self.tokens,
            config=self.cfg,
        )
