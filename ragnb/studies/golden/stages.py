"""The six stages of a golden set (Dallaire's rag-gs, S1-S6) as functions over DataFrames.

:class:`ragnb.studies.golden.GoldenPipeline` runs them in order, hashes their inputs and keeps their
outputs in a run folder (:mod:`ragnb.studies.golden.pipeline`); each one can also be called alone.

Stages
------
===== ====================== =====================================================================
stage output (``stages/``)   what it does
===== ====================== =====================================================================
S1    ``s1_queries``         Unicode NFC normalisation of each query; optionally a rewrite
                             ("extract and restate the core information need") by a pluggable
                             callable such as :class:`ragnb.rewrite.LLMRewriter`; the original
                             text is kept
S2    ``s2_pools``           each pool system's top ``depth`` for the S1 text, with provenance:
                             which system returned each candidate, at which rank, with which score
S3    ``s3_candidates``      reciprocal rank fusion of the pools (``rrf_k`` = 60, Cormack et al.)
S4    ``s4_grades``          every candidate graded by the judge (:meth:`Judge.grade_many`)
S5    ``s5_pool``            grade-bucketed prune down to a minimum pool size (rule below)
S6    ``s6_order``,          listwise refinement (:func:`~.refine.refine`, Alg. 1) of each
      ``s6_history``,        query's pruned pool to a stable top ``top_n``
      ``s6_summary``
===== ====================== =====================================================================

Which text each stage reads: retrieval (S2) uses the S1 text (rewritten when a rewriter is
given); the judge (S4, S6) reads the normalised *original* query, the user's own words, and each
document as ``title + " " + text`` (:func:`ragnb.retrievers.retrieve.doc_texts`).

The S5 rule
-----------
Per query, every candidate with a valid grade ``>= keep_grade`` is kept, however many there are.
The other candidates then fill the pool bucket by bucket, highest grade first and in RRF order
within a bucket, until it holds ``min_pool`` documents or the candidates run out; candidates with
no valid grade (the judge's answer was invalid or failed) form the last bucket. ``keep_grade``
defaults to the grades above the middle of the judge's scale: 4-5 on 1-5, 1 on 0-1, 2 on 0-2.

The S6 choices
--------------
Initial scores come from the S4 grades
(:func:`ragnb.studies.golden.refine.initial_scores_from_grades`, an ungraded document at the lowest
grade); each query's refinement has its own seed, derived from ``seed`` and the query id; the judge
is called as ``judge.rank(query, passages, query_id=..., doc_ids=...)`` under the ledger stage
``s6_rank``.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (rag-gs, S1-S6) and
   Algorithm 1.
.. [2] G. V. Cormack, C. L. A. Clarke, S. Buettcher, "Reciprocal rank fusion outperforms Condorcet
   and individual rank learning methods", SIGIR 2009.
.. [3] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (pooling,
   Judged@10, calibrating the judge).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int, require_columns
from ragnb.embed import DEFAULT_MODEL
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.judge.base import Judge
from ragnb.retrievers.fusion import rrf
from ragnb.retrievers.retrieve import BM25Retriever, Retriever, doc_texts
from ragnb.studies.golden.config import LEDGER_STAGES, POOL_RETRIEVERS
from ragnb.studies.golden.fingerprints import query_seed
from ragnb.studies.golden.refine import (
    HISTORY_COLUMNS,
    RefineConfig,
    initial_scores_from_grades,
    refine,
)

__all__ = [
    "default_keep_grade",
    "grade_candidates",
    "grading_items",
    "make_pool_retriever",
    "merge_pools",
    "normalise_queries",
    "passages_by_id",
    "pool_candidates",
    "provenance_rows",
    "prune_pool",
    "refine_pools",
    "top_of_run",
]


# ----------------------------------------------------------------------------- S1


def normalise_queries(
    queries: pd.DataFrame, rewrite: Callable[[str], str | None] | None = None
) -> pd.DataFrame:
    """S1: NFC normalisation and an optional rewrite of each query.

    Parameters
    ----------
    queries : DataFrame
        ``query_id``, ``text``.
    rewrite : callable, optional
        ``rewrite(text) -> str or None`` (None or an empty string keeps the normalised text); an
        object with ``many(texts) -> [(text or None, reason), ...]`` is called once for all
        queries (:class:`ragnb.rewrite.LLMRewriter`).

    Returns
    -------
    DataFrame
        ``query_id``, ``original`` (the text as given), ``normalised`` (NFC, outer white space
        stripped), ``text`` (what retrieval uses: the rewrite, else ``normalised``),
        ``rewritten`` (bool), ``rewrite_reason`` (why the rewrite was not used, "" otherwise).

    Examples
    --------
    >>> q = pd.DataFrame({"query_id": ["q1"], "text": ["cafe\\u0301 "]})
    >>> normalise_queries(q, str.upper)[["normalised", "text", "rewritten"]].values.tolist()
    [['café', 'CAFÉ', True]]
    """
    require_columns(queries, ("query_id", "text"), "queries")
    original = queries["text"].astype(str).tolist()
    normalised = [unicodedata.normalize("NFC", t).strip() for t in original]
    results: list[tuple[str | None, str]]
    if rewrite is None:
        results = [(None, "") for _ in normalised]
    elif callable(getattr(rewrite, "many", None)):
        results = list(rewrite.many(normalised))  # type: ignore[attr-defined]
    else:
        results = [(rewrite(t), "") for t in normalised]
    texts, flags, reasons = [], [], []
    for norm, (new, reason) in zip(normalised, results, strict=True):
        new_text = unicodedata.normalize("NFC", new).strip() if isinstance(new, str) else ""
        texts.append(new_text or norm)
        flags.append(bool(new_text))
        if new_text or rewrite is None:
            reasons.append("")
        else:
            reasons.append(reason or "the rewriter returned nothing")
    return pd.DataFrame(
        {
            "query_id": queries["query_id"].astype(str).to_numpy(dtype=object),
            "original": pd.Series(original, dtype=object),
            "normalised": pd.Series(normalised, dtype=object),
            "text": pd.Series(texts, dtype=object),
            "rewritten": pd.Series(flags, dtype=bool),
            "rewrite_reason": pd.Series(reasons, dtype=object),
        }
    )


# ----------------------------------------------------------------------------- S2, S3


def make_pool_retriever(
    name: str,
    *,
    embedder: str = DEFAULT_MODEL,
    rrf_k: int = 60,
    depth: int = 100,
    cache: Any = None,
    progress: bool = False,
) -> Retriever:
    """A pool system by name (see :data:`POOL_RETRIEVERS`); ``"bm25-plain"`` is BM25 without
    stemming or stop words, a second lexical system."""
    from ragnb.retrievers.retrieve import make_retriever

    if name == "bm25-plain":
        return BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain")
    if name not in POOL_RETRIEVERS:
        raise InputError(f"unknown pool system {name!r}; use one of {list(POOL_RETRIEVERS)}")
    return make_retriever(
        name, model=embedder, rrf_k=rrf_k, depth=depth, cache=cache, progress=progress
    )


def top_of_run(run: pd.DataFrame, qids: Sequence[str], depth: int) -> pd.DataFrame:
    """The top ``depth`` of ``run`` for the queries ``qids``, ranked in trec_eval order:
    ``query_id``, ``doc_id``, ``score``, ``rank``."""
    keep = run[run["query_id"].astype(str).isin(set(qids))]
    ranked = sort_run(keep[["query_id", "doc_id", "score"]], warn=False).run
    return ranked[ranked["rank"] <= depth].reset_index(drop=True)


def provenance_rows(top: pd.DataFrame, system: str) -> pd.DataFrame:
    """A system's ranked top as pool rows: ``query_id``, ``doc_id`` (str), ``system``, ``rank``
    (int), ``score`` (float)."""
    return pd.DataFrame(
        {
            "query_id": top["query_id"].astype(str).to_numpy(dtype=object),
            "doc_id": top["doc_id"].astype(str).to_numpy(dtype=object),
            "system": str(system),
            "rank": top["rank"].to_numpy(dtype=np.int64),
            "score": top["score"].to_numpy(dtype=np.float64),
        }
    )


def pool_candidates(
    queries: pd.DataFrame,
    systems: Mapping[str, Retriever | pd.DataFrame],
    depth: int,
) -> pd.DataFrame:
    """S2: each system's top ``depth`` per query, with provenance.

    Parameters
    ----------
    queries : DataFrame
        S1's frame (``query_id``, ``text``).
    systems : mapping of str to Retriever or run
        Indexed retrievers (called with the S1 text) or precomputed run frames (cut to the
        queries and ``depth``).
    depth : int >= 1

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id`` (str), ``system`` (str), ``rank`` (int, 1-based, trec_eval
        order), ``score`` (float, the system's own): one row per (system, retrieved document).
    """
    if not systems:
        raise InputError("the pool needs at least one system")
    qids = queries["query_id"].astype(str).tolist()
    parts = []
    for name, system in systems.items():
        if isinstance(system, pd.DataFrame):
            run = system
        else:
            run = system.retrieve(queries[["query_id", "text"]], k=depth)
        parts.append(provenance_rows(top_of_run(run, qids, depth), name))
    out = pd.concat(parts, ignore_index=True)
    return out.astype({"system": object})


def merge_pools(pools: pd.DataFrame, rrf_k: int = 60) -> pd.DataFrame:
    """S3: reciprocal rank fusion of the pools into one candidate list per query.

    ``rrf_score(d) = sum over systems s returning d of 1 / (rrf_k + rank_s(d))``.

    Parameters
    ----------
    pools : DataFrame
        S2's frame.
    rrf_k : int, default 60

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``rrf_score`` (float), ``rrf_rank`` (int, 1-based, per query),
        ``n_systems`` (int), ``systems`` (comma-separated, best rank first), ``best_rank`` (int);
        sorted by query then ``rrf_rank``.

    Examples
    --------
    >>> pools = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["x", "y", "y"],
    ...                       "system": ["a", "a", "b"], "rank": [1, 2, 1],
    ...                       "score": [2.0, 1.0, 5.0]})
    >>> merge_pools(pools)[["doc_id", "rrf_rank", "systems"]].values.tolist()
    [['y', 1, 'b,a'], ['x', 2, 'a']]
    """
    runs = [
        g[["query_id", "doc_id"]].assign(score=-g["rank"].to_numpy(dtype=np.float64))
        for _, g in pools.groupby("system", sort=False)
    ]
    fused = rrf(runs, rrf_k=rrf_k)
    prov = pools.sort_values(["query_id", "doc_id", "rank", "system"], kind="stable")
    agg = prov.groupby(["query_id", "doc_id"], sort=False).agg(
        n_systems=("system", "size"),
        systems=("system", lambda s: ",".join(s)),
        best_rank=("rank", "min"),
    )
    out = fused.rename(columns={"score": "rrf_score", "rank": "rrf_rank"}).merge(
        agg.reset_index(), on=["query_id", "doc_id"], how="left"
    )
    out = out.astype({"rrf_rank": np.int64, "n_systems": np.int64, "best_rank": np.int64})
    out["query_id"] = out["query_id"].astype(object)
    out["doc_id"] = out["doc_id"].astype(object)
    out["systems"] = out["systems"].astype(object)
    return out.sort_values(["query_id", "rrf_rank"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- S4, S5, S6


def passages_by_id(corpus: pd.DataFrame) -> dict[str, str]:
    """``{doc_id: title + " " + text}``: each document as the judge reads it."""
    return dict(zip(corpus["doc_id"].astype(str), doc_texts(corpus), strict=True))


def grading_items(
    pairs: pd.DataFrame, queries: pd.DataFrame, texts: Mapping[str, str]
) -> pd.DataFrame:
    """The judge's items for ``pairs`` (``query_id``, ``doc_id``): ``query_id``, ``doc_id``,
    ``query`` (S1's ``normalised`` text), ``passage`` (from ``texts``)."""
    qtext = dict(zip(queries["query_id"], queries["normalised"], strict=True))
    missing = sorted(set(pairs["doc_id"]) - set(texts))
    if missing:
        raise InputError(f"{len(missing)} candidates are not in the corpus, e.g. {missing[0]!r}")
    return pd.DataFrame(
        {
            "query_id": pairs["query_id"].to_numpy(dtype=object),
            "doc_id": pairs["doc_id"].to_numpy(dtype=object),
            "query": [qtext[q] for q in pairs["query_id"]],
            "passage": [texts[d] for d in pairs["doc_id"]],
        }
    )


def grade_candidates(
    candidates: pd.DataFrame,
    queries: pd.DataFrame,
    corpus: pd.DataFrame,
    judge: Judge,
    *,
    stage: str = LEDGER_STAGES["s4"],
) -> pd.DataFrame:
    """S4: the judge grades every candidate (normalised original query, ``title + text``).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``rrf_rank``, then the judge's columns from ``grade`` on
        (:meth:`ragnb.judge.Judge.grade_many`: ``grade`` Int64, ``valid``, ``status``, ``reason``,
        ``raw``, ``first_raw``, ``attempts``, ``reminded``, ``input_tokens``, ``output_tokens``,
        ``cached``, ``repeated``, ``judge_id``, ``prompt``); candidate order. A judge ensemble
        (:class:`ragnb.judge.EnsembleJudge`, graded with ``grade_members``) adds each member's
        grade and status, ``member_grade:<name>`` (Int64, <NA> unless valid) and
        ``member_status:<name>``, for the degenerate-judge checks of each member.
    """
    items = grading_items(candidates, queries, passages_by_id(corpus))
    grade_members = getattr(judge, "grade_members", None)
    members: dict[str, pd.DataFrame] = {}
    if callable(grade_members):
        ensemble = grade_members(items, stage=stage)
        graded, members = ensemble.grades, ensemble.members
    else:
        graded = judge.grade_many(items, stage=stage)
    out = graded.drop(columns=["query_id", "doc_id"])
    out.insert(0, "rrf_rank", candidates["rrf_rank"].to_numpy(dtype=np.int64))
    out.insert(0, "doc_id", candidates["doc_id"].to_numpy(dtype=object))
    out.insert(0, "query_id", candidates["query_id"].to_numpy(dtype=object))
    for name, frame in members.items():
        valid = frame["valid"].to_numpy(dtype=bool)
        out[f"member_grade:{name}"] = frame["grade"].astype("Int64").where(valid).array
        out[f"member_status:{name}"] = frame["status"].to_numpy(dtype=object)
    return out


def default_keep_grade(scale: tuple[int, int]) -> int:
    """The lowest grade above the middle of ``scale``: 4 on (1, 5), 1 on (0, 1), 2 on (0, 2).

    Examples
    --------
    >>> [default_keep_grade(s) for s in [(1, 5), (0, 1), (0, 2), (0, 3)]]
    [4, 1, 2, 2]
    """
    lo, hi = scale
    return int(math.floor((lo + hi) / 2)) + 1


def prune_pool(grades: pd.DataFrame, min_pool: int, keep_grade: int) -> pd.DataFrame:
    """S5: a grade-bucketed pool per query (see the module's "S5 rule").

    Parameters
    ----------
    grades : DataFrame
        S4's frame (``query_id``, ``doc_id``, ``rrf_rank``, ``grade``, ``valid``).
    min_pool : int >= 1
    keep_grade : int
        Valid grades ``>= keep_grade`` are all kept.

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id``, ``grade`` (Int64, <NA> when not valid), ``rrf_rank``,
        ``pool_rank`` (int, 1-based: grade bucket first, then RRF order), ``kept`` ("grade" for a
        grade >= keep_grade, "fill" otherwise); only the kept documents.

    Examples
    --------
    >>> g = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": list("abcd"),
    ...                   "rrf_rank": [1, 2, 3, 4], "grade": pd.array([1, 3, 2, 3], "Int64"),
    ...                   "valid": [True] * 4})

    b and d (grade 3) are kept; the third place goes to the next bucket, c (grade 2), not to a,
    although a comes first in RRF order:

    >>> prune_pool(g, min_pool=3, keep_grade=3)[["doc_id", "kept"]].values.tolist()
    [['b', 'grade'], ['d', 'grade'], ['c', 'fill']]
    """
    check_positive_int(min_pool, "min_pool")
    valid = grades["valid"].to_numpy(dtype=bool)
    g = pd.to_numeric(grades["grade"], errors="coerce").to_numpy(dtype=np.float64)
    bucket = np.where(valid & ~np.isnan(g), g, -np.inf)
    work = pd.DataFrame(
        {
            "query_id": grades["query_id"].to_numpy(dtype=object),
            "doc_id": grades["doc_id"].to_numpy(dtype=object),
            "grade": pd.array(np.where(np.isfinite(bucket), bucket, np.nan), dtype="Float64")
            .round()
            .astype("Int64"),
            "rrf_rank": grades["rrf_rank"].to_numpy(dtype=np.int64),
            "_bucket": bucket,
        }
    )
    work = work.sort_values(["query_id", "_bucket", "rrf_rank"], ascending=[True, False, True])
    work["pool_rank"] = work.groupby("query_id", sort=False).cumcount().to_numpy() + 1
    high = work["_bucket"].to_numpy() >= keep_grade
    keep = high | (work["pool_rank"].to_numpy() <= min_pool)
    out = work[keep].copy()
    out["kept"] = np.where(high[keep], "grade", "fill").astype(object)
    out["pool_rank"] = out["pool_rank"].astype(np.int64)
    return out.drop(columns="_bucket").reset_index(drop=True)


def refine_pools(
    pool: pd.DataFrame,
    queries: pd.DataFrame,
    corpus: pd.DataFrame,
    judge: Judge,
    *,
    config: RefineConfig,
    seed: int = 0,
    stage: str = LEDGER_STAGES["s6"],
    progress: Callable[[str], None] | None = None,
) -> dict[str, pd.DataFrame]:
    """S6: listwise refinement of each query's pruned pool
    (:func:`ragnb.studies.golden.refine.refine`).

    Parameters
    ----------
    pool : DataFrame
        S5's frame.
    queries, corpus : DataFrame
        S1's frame (``normalised`` is the query text shown) and the corpus.
    judge : Judge
        Its :meth:`~ragnb.judge.Judge.rank` orders each batch.
    config : RefineConfig
        ``top_n`` is the stable list's length; ``seed`` is replaced per query.
    seed : int
        Each query's refinement seed is derived from it and the query id.

    Returns
    -------
    dict of str to DataFrame
        ``order``: ``query_id``, ``doc_id``, ``rank`` (1-based), ``score``, ``sigma``,
        ``exposures``, ``grade`` (S4), ``in_top`` (rank <= top_n). ``history``: ``query_id`` then
        :data:`ragnb.studies.golden.refine.HISTORY_COLUMNS`. ``summary``: ``query_id``,
        ``pool_size``, ``stop_reason``, ``calls``, ``invalid`` (answers that did not parse or
        failed), ``cached`` (answers from the cache), ``n_locks``, ``tokens`` (reported by the
        judge).
    """
    texts = passages_by_id(corpus)
    qtext = dict(zip(queries["query_id"], queries["normalised"], strict=True))
    orders, histories, summaries = [], [], []
    for qid, g in pool.groupby("query_id", sort=True):
        qid = str(qid)
        cfg = replace(config, seed=query_seed(seed, qid))
        order, history, summary = _refine_query(qid, qtext[qid], g, texts, judge, cfg, stage)
        orders.append(order)
        histories.append(history)
        summaries.append(summary)
        if progress is not None:
            progress(qid)
    return {
        "order": _refined_order(orders, pool, config.top_n),
        "history": _refine_history(histories),
        "summary": pd.DataFrame(summaries, columns=list(SUMMARY_COLUMNS)),
    }


#: Columns of S6's ``summary`` frame, one row per query.
SUMMARY_COLUMNS = (
    "query_id",
    "pool_size",
    "stop_reason",
    "calls",
    "invalid",
    "cached",
    "n_locks",
    "tokens",
)


def _refine_query(
    qid: str,
    query: str,
    group: pd.DataFrame,
    texts: Mapping[str, str],
    judge: Judge,
    config: RefineConfig,
    stage: str,
) -> tuple[pd.DataFrame, pd.DataFrame, tuple[Any, ...]]:
    """One query's refinement: its order frame, its history and its summary row."""
    group = group.sort_values("pool_rank")
    ids = [str(d) for d in group["doc_id"]]
    grades = pd.to_numeric(group["grade"], errors="coerce").astype("Float64")
    floor = float(grades.min()) if grades.notna().any() else 0.0
    initial = initial_scores_from_grades(grades.fillna(floor).to_numpy(dtype=np.float64))
    ranker = _RecordingRanker(judge, stage)
    res = refine(
        query,
        {d: texts[d] for d in ids},
        ranker.rank,
        config=config,
        initial_scores=initial,
        query_id=qid,
    )
    items = res.items_frame()
    order = pd.DataFrame(
        {
            "query_id": qid,
            "doc_id": items["item"].astype(str).to_numpy(dtype=object),
            "rank": items["rank"].to_numpy(dtype=np.int64),
            "score": items["score"].to_numpy(dtype=np.float64),
            "sigma": items["sigma"].to_numpy(dtype=np.float64),
            "exposures": items["exposures"].to_numpy(dtype=np.int64),
        }
    )
    history = res.history.copy()
    history.insert(0, "query_id", qid)
    summary = (
        qid,
        len(ids),
        res.stop_reason,
        res.calls,
        sum(1 for a in ranker.answers if not getattr(a, "valid", True)),
        sum(1 for a in ranker.answers if getattr(a, "cached", False)),
        len(res.locks),
        res.tokens if res.tokens is not None else 0,
    )
    return order, history, summary


def _refined_order(orders: list[pd.DataFrame], pool: pd.DataFrame, top_n: int) -> pd.DataFrame:
    """The queries' orders in one frame, with their S4 grades and ``in_top``."""
    order = pd.concat(orders, ignore_index=True) if orders else _empty_order()
    grade_of = pool.set_index(["query_id", "doc_id"])["grade"]
    order["grade"] = pd.array(
        [
            grade_of.get((q, d), pd.NA)
            for q, d in zip(order["query_id"], order["doc_id"], strict=True)
        ],
        dtype="Int64",
    )
    order["in_top"] = order["rank"].to_numpy() <= top_n
    return order


def _refine_history(histories: list[pd.DataFrame]) -> pd.DataFrame:
    """The queries' histories in one frame (``tokens`` as Int64)."""
    history = (
        pd.concat(histories, ignore_index=True)
        if histories
        else pd.DataFrame(columns=["query_id", *HISTORY_COLUMNS])
    )
    history["tokens"] = pd.to_numeric(history["tokens"]).astype("Int64")
    return history


class _RecordingRanker:
    """``judge.rank`` under a ledger stage, keeping every answer (for the S6 counts)."""

    def __init__(self, judge: Judge, stage: str) -> None:
        self.judge, self.stage = judge, stage
        self.answers: list[Any] = []

    def rank(
        self, query: str, passages: Sequence[str], *, query_id: str, doc_ids: Sequence[str]
    ) -> Any:
        result = self.judge.rank(
            query, list(passages), query_id=query_id, doc_ids=doc_ids, stage=self.stage
        )
        self.answers.append(result)
        return result


def _empty_order() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": pd.Series(dtype=object),
            "doc_id": pd.Series(dtype=object),
            "rank": pd.Series(dtype=np.int64),
            "score": pd.Series(dtype=np.float64),
            "sigma": pd.Series(dtype=np.float64),
            "exposures": pd.Series(dtype=np.int64),
        }
    )
