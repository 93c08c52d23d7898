"""Does iterative refinement beat one-shot listwise ranking, and what does a token budget buy?

A simulation on graded qrels. Every pooled document gets a latent utility consistent with its
label; a simulated listwise judge sees the utilities of a window through Gaussian noise and
answers with their order. The same judge (same noise model, same noise level) serves two arms:

* **one-shot**: RankGPT's bottom-up sliding window (window 20, step 10) over the pool, once;
* **refine**: :func:`ragnb.studies.golden.refine.refine` (S6, Algorithm 1) with batches of 5, capped
  at the budget;

plus **multi-pass**, the sliding window repeated as many whole times as the budget pays for (a
fairer baseline at budgets above one pass). Each arm's top 20 is compared with the true top 20
by latent utility.

The model
---------
Latent utility
    ``u(d) = level(d) + jitter * (h(d) - 1/2)`` with ``level`` the label (after an optional
    grade map) and ``h(d)`` in [0, 1) a hash of (seed, query id, doc id): deterministic,
    independent of row order, and with ``jitter < 1`` the labels stay in order. The true order
    is total (ties, which have probability ~0, go by doc id).
Judge (:meth:`ragnb.judge.NoisyJudge.from_utilities`)
    Each call draws fresh noise for every item of the window and returns the argsort of
    ``u + noise``, highest first. ``model="thurstone"`` (default): ``noise ~ N(0, sd^2)``
    (Thurstone's case V). ``model="plackett-luce"``: Gumbel noise of the same standard deviation
    (scale ``sd * sqrt(6) / pi``), which samples a Plackett-Luce order with worths
    ``exp(u / scale)``. ``sd`` is in label units: sd 1 blurs adjacent labels.
Tokens (:class:`ragnb.judge.simulated.TokenCost`)
    A call over ``k`` passages costs ``prompt_tokens + k * (passage_tokens + item_overhead)``:
    the instructions and query, then each passage with its identifier and its share of the
    answer (the output permutation). ``passage_tokens`` defaults to the corpus mean estimated by
    :func:`~ragnb.judge.simulated.estimate_passage_tokens` when a corpus is given, else 100.

Equal budget
------------
Budgets are multiples ``r`` of the cost ``C1(q)`` of one sliding-window pass over the pool of
query ``q`` (``budget_tokens = r * C1(q)``, reported per row). At budget ``r``:

* refine makes no call that would take its tokens above ``r * C1(q)`` (it may stop earlier on
  its own stability rule; ``tokens`` shows what it used);
* multi-pass makes ``floor(r)`` passes (``floor(r) * C1(q) <= r * C1(q)`` tokens), only for
  ``r >= 2``;
* one-shot makes its single pass whatever the budget: its rows at every ``r >= 1`` repeat the
  same run (it has no use for more tokens); it has no rows below ``r = 1``.

So "refine vs one-shot at equal budget" is the comparison at ``r = 1``: refine gets exactly
the tokens of one sliding pass. Runs at different budgets share their random numbers: a
refinement capped at ``r`` is the prefix of the one capped at the largest ``r`` (that is how it
is computed), so curves over the budget are not blurred by independent noise.

Pools and priors
----------------
The pool of a query is its judged documents, cut to ``pool_size``: ``pool="graded"`` keeps the
highest labels first (ties at random), like the paper's grade-bucketed prune (S5);
``pool="uniform"`` draws a uniform sample. With ``prior="none"`` both arms start from a random order
of the pool (refine from zero scores); with ``prior="grades"`` both start from the labels (the
sliding window from the label order, refine from
:func:`~ragnb.studies.golden.refine.initial_scores_from_grades`), and only the within-label order is
left to find.

Output frame (:func:`simulate`)
-------------------------------
One row per (dataset, query, noise sd, budget, method, replicate):
``dataset, query_id, pool_size, noise_sd, budget, budget_tokens, method, passes, replicate,
calls, tokens, stop_reason, overlap, grade_overlap, exact_set, exact_order, kendall_tau``
where ``overlap = |found top n & true top n| / n`` (n = ``min(top_n, pool_size)``),
``grade_overlap = sum_g min(found_g, true_g) / n`` with ``found_g``, ``true_g`` the documents
of label g in each top n (1 when the found top n has the best labels it could, whichever
documents of a label it took), ``exact_set``
is 1 when the two top-n sets are equal, ``exact_order`` when the lists are, and ``kendall_tau``
is Fagin et al.'s top-k Kendall tau (p = 0.5) between the two lists
(:func:`ragnb.stats.kendall_top_k`).

References
----------
.. [1] E. Dallaire, arXiv:2511.09545, 2025, Sections 3.4 and 3.4.1 (the claim tested here).
.. [2] W. Sun et al., "Is ChatGPT Good at Search? Investigating Large Language Models as
   Re-Ranking Agents" (RankGPT), EMNLP 2023: the sliding window, 20 wide, step 10, bottom-up.
.. [3] L. L. Thurstone, "A law of comparative judgment", Psychological Review 34, 1927.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.judge.simulated import Model, NoisyJudge, TokenCost, estimate_passage_tokens
from ragnb.measures.graded import map_grades
from ragnb.measures.kernel import as_qrels_frame
from ragnb.stats import kendall_top_k, paired_bootstrap, randomization_test
from ragnb.studies.golden.refine import RankFn, RefineConfig, initial_scores_from_grades, refine
from ragnb.studies.golden.sliding_window import (
    SlidingWindowResult,
    sliding_window_rank,
    window_starts,
)

__all__ = [
    "FRAME_COLUMNS",
    "METRICS",
    "SlidingWindowResult",
    "compare_methods",
    "latent_utilities",
    "simulate",
    "sliding_window_rank",
    "summarise",
]

#: Columns of :func:`simulate`'s frame.
FRAME_COLUMNS = (
    "dataset",
    "query_id",
    "pool_size",
    "noise_sd",
    "budget",
    "budget_tokens",
    "method",
    "passes",
    "replicate",
    "calls",
    "tokens",
    "stop_reason",
    "overlap",
    "grade_overlap",
    "exact_set",
    "exact_order",
    "kendall_tau",
)
#: Metrics of the frame, each in [0, 1] except ``kendall_tau`` in [-1, 1].
METRICS = ("overlap", "grade_overlap", "exact_set", "exact_order", "kendall_tau")

# ----------------------------------------------------------------------------- utilities, pools


def _unit_hash(seed: int, query_id: str, doc_id: str) -> float:
    digest = hashlib.blake2b(f"{seed}\x00{query_id}\x00{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64


def latent_utilities(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
    *,
    grade_map: str | Mapping[int, int] | None = None,
    jitter: float = 0.8,
    seed: int = 0,
) -> pd.DataFrame:
    """Latent utilities consistent with the labels: ``level + jitter * (h - 1/2)``.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``.
    grade_map : str or mapping, optional
        Applied first with :func:`ragnb.measures.graded.map_grades` (e.g. ``"dbpedia-entity"``);
        default: the labels as they are.
    jitter : float in [0, 1), default 0.8
        Width of the spread within a label; below 1 keeps every label above the one below it.
    seed : int, default 0
        Seed of the hash ``h(seed, query_id, doc_id)`` in [0, 1).

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance`` (the level, int64), ``utility``
        (float64), in the qrels order.

    Examples
    --------
    >>> u = latent_utilities({"q": {"a": 2, "b": 0, "c": 1}})
    >>> u["utility"].round(0).tolist(), bool(u["utility"].is_unique)
    ([2.0, 0.0, 1.0], True)
    """
    if not (math.isfinite(jitter) and 0 <= jitter < 1):
        raise InputError(f"jitter must lie in [0, 1), got {jitter!r}")
    frame = as_qrels_frame(qrels) if grade_map is None else map_grades(qrels, grade_map)
    frame = frame[["query_id", "doc_id", "relevance"]].copy()
    frame["query_id"] = frame["query_id"].astype(str)
    frame["doc_id"] = frame["doc_id"].astype(str)
    h = np.fromiter(
        (_unit_hash(seed, q, d) for q, d in zip(frame["query_id"], frame["doc_id"], strict=True)),
        dtype=np.float64,
        count=len(frame),
    )
    frame["utility"] = frame["relevance"].to_numpy(dtype=np.float64) + jitter * (h - 0.5)
    return frame.reset_index(drop=True)


def _query_seed(seed: int, query_id: str, *more: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed, zlib.crc32(query_id.encode()), *more])


def _pool(
    group: pd.DataFrame, pool_size: int | None, how: str, rng: np.random.Generator
) -> pd.DataFrame:
    if pool_size is None or len(group) <= pool_size:
        return group
    if how == "uniform":
        pick = rng.choice(len(group), size=pool_size, replace=False)
    else:  # highest labels first, ties at random
        pick = np.lexsort((rng.random(len(group)), -group["relevance"].to_numpy()))[:pool_size]
    return group.iloc[np.sort(pick)]


# ----------------------------------------------------------------------------- metrics


def _top_metrics(
    found: Sequence[Hashable], true: Sequence[Hashable], level: Mapping[Hashable, int]
) -> tuple[float, ...]:
    n = len(true)
    overlap = len(set(found) & set(true)) / n
    have = Counter(level[d] for d in found)
    grade_overlap = sum(min(c, have[g]) for g, c in Counter(level[d] for d in true).items()) / n
    exact_set = float(set(found) == set(true))
    exact_order = float(list(found) == list(true))
    tau = kendall_top_k([str(d) for d in found], [str(d) for d in true]).tau if n > 1 else 1.0
    return overlap, grade_overlap, exact_set, exact_order, tau


# ----------------------------------------------------------------------------- simulate


def _check_list(values: Sequence[float], name: str, low: float, strict: bool) -> list[float]:
    out = []
    for v in values:
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        if not ok or v < low or (strict and v == low):
            what = ">" if strict else ">="
            raise InputError(f"{name} must hold finite numbers {what} {low}, got {v!r}")
        out.append(float(v))
    if not out:
        raise InputError(f"{name} is empty")
    return sorted(set(out))


def simulate(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
    *,
    pool_size: int | None = 40,
    noise_levels: Sequence[float] = (0.1, 0.25, 0.5, 1.0, 2.0),
    budgets: Sequence[float] = (0.5, 1.0, 2.0, 4.0, 8.0),
    replicates: int = 3,
    seed: int = 0,
    top_n: int = 20,
    window: int = 20,
    step: int = 10,
    cost: TokenCost | None = None,
    config: RefineConfig | None = None,
    model: Model = "thurstone",
    prior: Literal["none", "grades"] = "none",
    pool: Literal["graded", "uniform"] = "graded",
    grade_map: str | Mapping[int, int] | None = None,
    jitter: float = 0.8,
    dataset: str = "",
    queries: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Refinement vs one-shot listwise ranking on simulated noisy judges (see the module notes).

    Parameters
    ----------
    qrels : DataFrame or dict
        Graded qrels; every judged document of a query is in its pool (cut to ``pool_size``).
    pool_size : int or None, default 40
        Largest pool per query (None: all judged documents). Queries with fewer than two
        documents are skipped.
    noise_levels : sequence of float >= 0, default (0.1, 0.25, 0.5, 1, 2)
        Noise standard deviations of the judge, in label units.
    budgets : sequence of float > 0, default (0.5, 1, 2, 4, 8)
        Token budgets as multiples of one sliding-window pass over the query's pool.
    replicates : int >= 1, default 3
        Independent runs (pool order and judge noise) per query, noise level and method.
    seed : int, default 0
        Everything random derives from it, the query id, the noise level and the replicate:
        the same arguments give the same frame, and a (query, noise, replicate) cell does not
        depend on the other noise levels or budgets asked for.
    top_n : int, default 20
        The top list compared with the truth (``min(top_n, pool size)`` per query).
    window, step : int, default 20 and 10
        The sliding window of the one-shot and multi-pass arms.
    cost : TokenCost, optional
        Default ``TokenCost()`` (100 tokens a passage); see :func:`estimate_passage_tokens`.
    config : RefineConfig, optional
        The refinement's parameters (default ``RefineConfig()``); ``top_n`` and ``seed`` are set
        here, and ``max_iterations`` is raised if the largest budget could pay for more calls.
    model : {"thurstone", "plackett-luce"}, default "thurstone"
        Noise model of the judge (:meth:`ragnb.judge.NoisyJudge.from_utilities`), the same for
        every arm.
    prior : {"none", "grades"}, default "none"
        Starting point of both arms: a random order, or the labels.
    pool : {"graded", "uniform"}, default "graded"
        How pools above ``pool_size`` are cut.
    grade_map, jitter
        See :func:`latent_utilities`.
    dataset : str, default ""
        Written in the ``dataset`` column.
    queries : sequence of str, optional
        Only these query ids (default: all, in qrels order).

    Returns
    -------
    DataFrame
        Columns :data:`FRAME_COLUMNS`, one row per (query, noise sd, budget, method, replicate);
        ``method`` in {"one-shot", "multi-pass", "refine"}; ``passes`` is the sliding-window
        passes (0 for refine); ``stop_reason`` is the refinement's ("budget", "stable",
        "resolved", "max_iterations") or "passes".
    """
    noise_levels = _check_list(noise_levels, "noise_levels", 0.0, strict=False)
    budgets = _check_list(budgets, "budgets", 0.0, strict=True)
    _check_options(replicates, top_n, pool_size, prior, pool)
    setup = _Setup(
        seed=seed,
        top_n=top_n,
        window=window,
        step=step,
        cost=cost if cost is not None else TokenCost(),
        base=replace(config if config is not None else RefineConfig(), top_n=top_n),
        model=model,
        prior=prior,
        budgets=tuple(budgets),
    )
    utilities = latent_utilities(qrels, grade_map=grade_map, jitter=jitter, seed=seed)
    rows: list[tuple[Any, ...]] = []
    for qid, group in _query_groups(utilities, queries).items():
        if len(group) < 2:
            continue
        picked = _pool(group, pool_size, pool, np.random.default_rng(_query_seed(seed, qid)))
        case = _QueryCase.build(setup, qid, picked)
        for sd in noise_levels:
            for rep in range(replicates):
                rows += _replicate(setup, case, sd, rep)
    return _as_frame(rows, dataset)


def _check_options(
    replicates: int, top_n: int, pool_size: int | None, prior: str, pool: str
) -> None:
    for name, value, low in (("replicates", replicates, 1), ("top_n", top_n, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
    if pool_size is not None and (not isinstance(pool_size, int) or pool_size < 2):
        raise InputError(f"pool_size must be an integer >= 2 or None, got {pool_size!r}")
    if prior not in ("none", "grades"):
        raise InputError(f"prior must be 'none' or 'grades', got {prior!r}")
    if pool not in ("graded", "uniform"):
        raise InputError(f"pool must be 'graded' or 'uniform', got {pool!r}")


def _query_groups(
    utilities: pd.DataFrame, queries: Sequence[str] | None
) -> dict[str, pd.DataFrame]:
    """Each query's rows of :func:`latent_utilities`, in qrels order or ``queries``' order."""
    groups = dict(tuple(utilities.groupby("query_id", sort=False)))
    if queries is not None:
        missing = [q for q in queries if q not in groups]
        if missing:
            raise InputError(f"{len(missing)} queries have no qrels", query_id=str(missing[0]))
        groups = {q: groups[q] for q in queries}
    return groups


@dataclass(frozen=True)
class _Setup:
    """The settings of :func:`simulate` shared by every query and replicate."""

    seed: int
    top_n: int
    window: int
    step: int
    cost: TokenCost
    base: RefineConfig
    model: Model
    prior: str
    budgets: tuple[float, ...]


@dataclass(frozen=True)
class _QueryCase:
    """One query's pool: utilities, labels, the true top, the tokens of one sliding pass and the
    refinement's configuration (``max_iterations`` raised to what the largest budget pays)."""

    qid: str
    n: int
    k: int
    utility: dict[str, float]
    level: dict[Hashable, int]
    true_top: list[str]
    one_pass: int
    config: RefineConfig

    @classmethod
    def build(cls, setup: _Setup, qid: str, picked: pd.DataFrame) -> _QueryCase:
        n = len(picked)
        k = min(setup.top_n, n)
        utility = dict(zip(picked["doc_id"], picked["utility"], strict=True))
        level = dict(zip(picked["doc_id"], picked["relevance"], strict=True))
        true_top = sorted(utility, key=lambda d: (-utility[d], d))[:k]
        cost = setup.cost
        one_pass = sum(
            cost(min(setup.window, n)) for _ in window_starts(n, setup.window, setup.step)
        )
        calls_per_budget = max(setup.budgets) * one_pass / cost(min(setup.base.m, n))
        base = setup.base
        config = replace(base, max_iterations=max(base.max_iterations, math.ceil(calls_per_budget)))
        return cls(qid, n, k, utility, level, true_top, one_pass, config)


def _start(
    case: _QueryCase, prior: str, rng: np.random.Generator
) -> tuple[list[str], np.ndarray | None]:
    """The starting order of both arms and the refinement's initial scores: a random order, or
    the labels (ties at random) with scores from them."""
    docs = list(case.utility)
    if prior == "none":
        return [docs[i] for i in rng.permutation(case.n)], None
    tie = rng.random(case.n)
    labels = np.array([-case.level[d] for d in docs])
    docs = [docs[i] for i in np.lexsort((tie, labels))]
    return docs, initial_scores_from_grades([case.level[d] for d in docs])


def _judge(case: _QueryCase, sd: float, setup: _Setup, seed: np.random.SeedSequence) -> RankFn:
    """The simulated listwise judge of one arm: its own noise stream over the pool's utilities."""
    judge = NoisyJudge.from_utilities(
        case.utility, sd, model=setup.model, cost=setup.cost, seed=seed, query_id=case.qid
    )
    return judge.rank_items


def _replicate(setup: _Setup, case: _QueryCase, sd: float, rep: int) -> list[tuple[Any, ...]]:
    """The rows of one (query, noise sd, replicate): every budget, every method."""
    qid, max_passes = case.qid, math.floor(max(setup.budgets))
    ss = _query_seed(setup.seed, qid, round(sd * 1e6), rep).spawn(4)
    docs, init = _start(case, setup.prior, np.random.default_rng(ss[0]))
    pool_items: dict[Hashable, str] = {d: d for d in docs}
    # arms: one sliding run with snapshots per pass; one refinement to the largest budget with
    # snapshots per iteration
    slide = sliding_window_rank(
        qid,
        pool_items,
        _judge(case, sd, setup, ss[1]),
        window=setup.window,
        step=setup.step,
        passes=max(1, max_passes),
    )
    seed_refine = int(ss[3].generate_state(1)[0])
    res = refine(
        qid,
        pool_items,
        _judge(case, sd, setup, ss[2]),
        config=replace(case.config, seed=seed_refine),
        initial_scores=init,
        max_tokens=math.floor(max(setup.budgets) * case.one_pass),
    )
    spent = res.history["tokens"].to_numpy(dtype=np.int64)
    common = (qid, case.n, sd)
    rows: list[tuple[Any, ...]] = []
    for r in setup.budgets:
        b_tokens = math.floor(r * case.one_pass)
        # the run capped at b_tokens is the prefix whose tokens fit (the first call is always
        # made)
        it = max(1, int(np.searchsorted(spent, b_tokens, side="right")))
        it = min(it, len(spent))
        found = res.tops[it]
        stop = res.stop_reason if it == len(spent) else "budget"
        rows.append(
            (*common, r, b_tokens, "refine", 0, rep, it, int(spent[it - 1]), stop)
            + _top_metrics(found, case.true_top, case.level)
        )
        if r < 1:
            continue
        passes = math.floor(r)
        arms = [("one-shot", 1)] + ([("multi-pass", passes)] if passes >= 2 else [])
        for method, p in arms:
            rows.append(
                (*common, r, b_tokens, method, p, rep)
                + (slide.calls[p - 1], slide.tokens[p - 1], "passes")
                + _top_metrics(slide.orders[p - 1][: case.k], case.true_top, case.level)
            )
    return rows


def _as_frame(rows: list[tuple[Any, ...]], dataset: str) -> pd.DataFrame:
    """The rows as :func:`simulate`'s frame, with its column types."""
    frame = pd.DataFrame(
        [(dataset, *row) for row in rows],
        columns=list(FRAME_COLUMNS),
    )
    return frame.astype(
        {
            "dataset": object,
            "query_id": object,
            "pool_size": np.int64,
            "noise_sd": np.float64,
            "budget": np.float64,
            "budget_tokens": np.int64,
            "method": object,
            "passes": np.int64,
            "replicate": np.int64,
            "calls": np.int64,
            "tokens": np.int64,
            "stop_reason": object,
            "overlap": np.float64,
            "grade_overlap": np.float64,
            "exact_set": np.float64,
            "exact_order": np.float64,
            "kendall_tau": np.float64,
        }
    )


# ----------------------------------------------------------------------------- summaries

_KEYS = ["dataset", "noise_sd", "budget", "method"]


def _per_query(frame: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Means over replicates: one row per (dataset, noise, budget, method, query)."""
    require_columns(
        frame, [*_KEYS, "query_id", "tokens", "calls", *metrics], "the simulation frame"
    )
    cols = [*metrics, "tokens", "calls", "budget_tokens"]
    cols = [c for c in cols if c in frame]
    return frame.groupby([*_KEYS, "query_id"], sort=True)[cols].mean().reset_index()


def _bootstrap_ci(
    values: np.ndarray, n_resamples: int, confidence: float, rng: np.random.Generator
) -> tuple[float, float]:
    if values.size == 0:
        return float("nan"), float("nan")
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    means = values[rng.integers(0, values.size, size=(n_resamples, values.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def summarise(
    frame: pd.DataFrame,
    *,
    metrics: Sequence[str] = ("overlap", "grade_overlap", "exact_set", "kendall_tau"),
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Means over queries with percentile bootstrap intervals, per (dataset, noise, budget,
    method, metric).

    Replicates are averaged within a query first; the bootstrap resamples queries.

    Parameters
    ----------
    frame : DataFrame
        :func:`simulate`'s output.
    metrics : sequence of str, default ("overlap", "grade_overlap", "exact_set", "kendall_tau")
    confidence : float in (0, 1), default 0.95
    n_resamples : int, default 2000
    seed : int, default 0

    Returns
    -------
    DataFrame
        Columns ``dataset, noise_sd, budget, method, metric, mean, low, high, n_queries,
        mean_tokens, mean_budget_tokens, mean_calls``; tokens and calls are means per query.
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must lie in (0, 1), got {confidence!r}")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise InputError(f"unknown metrics {unknown}; known: {list(METRICS)}")
    per_query = _per_query(frame, metrics)
    out = []
    for key, g in per_query.groupby(_KEYS, sort=True):
        for metric in metrics:
            rng = np.random.default_rng(seed)  # the same resamples for every group
            v = g[metric].to_numpy(dtype=np.float64)
            low, high = _bootstrap_ci(v, n_resamples, confidence, rng)
            out.append(
                (*key, metric, float(v.mean()), low, high, len(v))
                + (float(g["tokens"].mean()), float(g["budget_tokens"].mean()))
                + (float(g["calls"].mean()),)
            )
    columns = [*_KEYS, "metric", "mean", "low", "high", "n_queries"]
    columns += ["mean_tokens", "mean_budget_tokens", "mean_calls"]
    return pd.DataFrame(out, columns=columns)


def compare_methods(
    frame: pd.DataFrame,
    *,
    a: str = "refine",
    b: str = "one-shot",
    metric: str = "overlap",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Paired comparison of two methods per (dataset, noise sd, budget), queries as the unit.

    Parameters
    ----------
    frame : DataFrame
        :func:`simulate`'s output.
    a, b : str, default "refine" and "one-shot"
        Methods; the difference is ``a - b``.
    metric : str, default "overlap"
    n_resamples : int, default 10000
    seed : int, default 0

    Returns
    -------
    DataFrame
        Columns ``dataset, noise_sd, budget, metric, a, b, mean_a, mean_b, difference, low,
        high, p_value, n_queries``: the mean over queries of the per-query difference (each
        query's replicates averaged first), its 95 % paired bootstrap interval
        (:func:`ragnb.stats.paired_bootstrap`) and a two-sided paired randomization test
        (:func:`ragnb.stats.randomization_test`). Only budgets where both methods have rows.
    """
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}; known: {list(METRICS)}")
    per_query = _per_query(frame, [metric])
    out = []
    for key, g in per_query.groupby(["dataset", "noise_sd", "budget"], sort=True):
        va = g[g["method"] == a].set_index("query_id")[metric]
        vb = g[g["method"] == b].set_index("query_id")[metric]
        if va.empty or vb.empty:
            continue
        boot = paired_bootstrap(va, vb, n_resamples=n_resamples, seed=seed)
        test = randomization_test(va, vb, n_resamples=n_resamples, seed=seed)
        out.append(
            (*key, metric, a, b, boot.mean_a, boot.mean_b, boot.difference, boot.low, boot.high)
            + (test.p_value, boot.n_queries)
        )
    columns = ["dataset", "noise_sd", "budget", "metric", "a", "b", "mean_a", "mean_b"]
    columns += ["difference", "low", "high", "p_value", "n_queries"]
    return pd.DataFrame(out, columns=columns)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m ragnb.studies.golden.simulation <BEIR folder> [--pool-size N] [--replicates R]``:
    run the default simulation on a dataset and print the summary and the refine vs one-shot
    table."""
    import argparse
    import time

    from ragnb.io.files import read_beir

    parser = argparse.ArgumentParser(
        prog="python -m ragnb.studies.golden.simulation", description=main.__doc__
    )
    parser.add_argument("dataset")
    parser.add_argument("--pool-size", type=int, default=40)
    parser.add_argument("--replicates", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prior", choices=["none", "grades"], default="none")
    parser.add_argument("--selection", choices=["weighted", "lowest"], default="weighted")
    args = parser.parse_args(argv)
    data = read_beir(args.dataset)
    cost = TokenCost(passage_tokens=estimate_passage_tokens(data.corpus))
    t0 = time.perf_counter()
    frame = simulate(
        data.qrels,
        pool_size=args.pool_size,
        replicates=args.replicates,
        seed=args.seed,
        cost=cost,
        prior=args.prior,
        config=RefineConfig(selection=args.selection),
        dataset=data.name,
    )
    elapsed = time.perf_counter() - t0
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(f"{len(frame)} rows in {elapsed:.1f} s; passage tokens {cost.passage_tokens:.0f}")
        summary = summarise(frame)
        wide = summary.pivot_table(
            index=["noise_sd", "budget"], columns=["metric", "method"], values="mean"
        )
        print(wide.round(3).to_string())
        for vs in ("one-shot", "multi-pass"):
            print(f"\nrefine - {vs}, overlap:")
            print(compare_methods(frame, b=vs).round(4).to_string(index=False))
        stops = frame[frame["method"] == "refine"].groupby(["noise_sd", "budget"])
        print("\nrefine stop reasons:")
        print(stops["stop_reason"].value_counts().unstack(fill_value=0).to_string())


if __name__ == "__main__":  # pragma: no cover
    main()
