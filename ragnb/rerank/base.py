"""The :class:`Reranker` interface, the candidate groups it reorders, and :class:`NoReranker`.

A reranker reads a query's candidates as a :class:`CandidateGroup` (first-stage order, texts,
first-stage scores); subclasses give one score per candidate (:meth:`Reranker._score_groups`)
and this module orders them, cuts them to ``top_n`` and builds the run frames.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError, RerankError
from ragnb.frames.index import sort_run

__all__ = ["USAGE_KEYS", "CandidateGroup", "NoReranker", "RerankError", "Reranker"]

#: The counters of :meth:`Reranker.usage`.
USAGE_KEYS = (
    "queries",
    "candidates",
    "calls",
    "cached_calls",
    "http_requests",
    "input_tokens",
    "output_tokens",
    "estimated_tokens",
    "failures",
)


# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class CandidateGroup:
    """The candidates of one query in first-stage order: ids, texts and first-stage scores."""

    query_id: str
    query: str
    doc_ids: list[str]
    texts: list[str]
    scores: np.ndarray  # first-stage scores, shape (n,), float64


def _group_from_candidates(
    query: str, candidates: Sequence[tuple[str, str]], scores: Sequence[float] | None
) -> CandidateGroup:
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    if isinstance(candidates, str | bytes) or not isinstance(candidates, Sequence):
        raise InputError("candidates must be a list of (doc_id, text) pairs")
    ids: list[str] = []
    texts: list[str] = []
    for i, pair in enumerate(candidates):
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"candidate {i}: expected a (doc_id, text) pair, got {pair!r}")
        doc_id, text = pair
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            raise InputError(f"candidate {i}: doc_id must be a string, got {doc_id!r}")
        if not isinstance(text, str):
            raise InputError(f"candidate {i} ({doc_id!r}): text must be a string")
        ids.append(str(doc_id))
        texts.append(text)
    if len(set(ids)) != len(ids):
        dup = next(d for d in ids if ids.count(d) > 1)
        raise InputError(f"candidate {dup!r} appears twice")
    if scores is None:
        first = np.arange(len(ids), 0, -1, dtype=np.float64)
    else:
        first = np.asarray(scores, dtype=np.float64)
        if first.shape != (len(ids),) or not np.isfinite(first).all():
            raise InputError(f"scores must be {len(ids)} finite numbers, one per candidate")
    return CandidateGroup("q", query, ids, texts, first)


def _query_texts(queries: Any) -> dict[str, str]:
    if isinstance(queries, Mapping):
        return {str(k): v for k, v in queries.items()}
    if not isinstance(queries, pd.DataFrame):
        raise InputError(
            f"queries must be a DataFrame (query_id, text) or a dict, got {type(queries).__name__}"
        )
    for col in ("query_id", "text"):
        if col not in queries.columns:
            raise InputError(f"queries frame has no {col!r} column", column=col)
    out: dict[str, str] = {}
    for qid, text in zip(queries["query_id"].astype(str), queries["text"], strict=True):
        if qid in out and out[qid] != text:
            raise InputError("two different texts for one query", query_id=qid, column="text")
        out[qid] = text
    return out


def _groups(
    queries: Any, run: pd.DataFrame, texts: Mapping[str, str] | None
) -> list[CandidateGroup]:
    """The run's candidates per query, in trec_eval order (score descending, ties by doc_id
    descending), with their texts; queries of ``queries`` absent from the run give nothing."""
    if not isinstance(run, pd.DataFrame):
        raise InputError(f"run must be a DataFrame, got {type(run).__name__}")
    qtexts = _query_texts(queries)
    if run.empty:
        return []
    ordered = sort_run(run).run
    qids = ordered["query_id"].to_numpy(dtype=object)
    dids = ordered["doc_id"].to_numpy(dtype=object)
    scores = ordered["score"].to_numpy(dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    ends = np.r_[starts[1:], len(qids)]
    groups = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        qid = str(qids[s])
        query = qtexts.get(qid)
        if not isinstance(query, str):
            what = "has no text in queries" if query is None else "text is not a string"
            raise InputError(f"the run's query {what}", query_id=qid, column="text")
        ids = [str(d) for d in dids[s:e]]
        if texts is None:
            doc_texts = [""] * len(ids)
        else:
            doc_texts = []
            for d in ids:
                t = texts.get(d)
                if not isinstance(t, str):
                    raise InputError(f"no text for document {d!r}", query_id=qid, column="doc_id")
                doc_texts.append(t)
        groups.append(CandidateGroup(qid, query, ids, doc_texts, scores[s:e]))
    return groups


def _order(scores: np.ndarray, top_n: int | None) -> np.ndarray:
    """Indices best first; ties keep the first-stage order (a stable sort)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return order if top_n is None else order[:top_n]


def _run_frame(
    groups: list[CandidateGroup], scored: list[np.ndarray], top_n: int | None
) -> pd.DataFrame:
    qids: list[str] = []
    dids: list[str] = []
    vals: list[float] = []
    for g, s in zip(groups, scored, strict=True):
        for i in _order(s, top_n).tolist():
            qids.append(g.query_id)
            dids.append(g.doc_ids[i])
            vals.append(float(s[i]))
    frame = pd.DataFrame(
        {
            "query_id": pd.Series(qids, dtype=object),
            "doc_id": pd.Series(dids, dtype=object),
            "score": pd.Series(vals, dtype=np.float64),
        }
    )
    if frame.empty:
        frame["rank"] = pd.Series([], dtype=np.int64)
        return frame
    return sort_run(frame, warn=False).run


# ----------------------------------------------------------------------------- the interface


class Reranker(ABC):
    """Reorders a query's first-stage candidates.

    Subclasses implement :meth:`_score_groups` (one score per candidate, higher is better);
    ordering, truncation to ``top_n`` and the run frames are done here.

    Attributes
    ----------
    name : str
        ``"none"``, ``"rescore:<model_id>"``, ``"cross-encoder:<name>"``, ``"http:<model>"``,
        ``"llm:<model>"``: the reranker's label in sweep tables.
    """

    name: str = "reranker"
    _needs_text = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = dict.fromkeys(USAGE_KEYS, 0.0)

    # -- the verbs

    def rerank(
        self,
        query: str,
        candidates: Sequence[tuple[str, str]],
        top_n: int | None = None,
        *,
        scores: Sequence[float] | None = None,
    ) -> list[tuple[str, float]]:
        """Reorder one query's candidates.

        Parameters
        ----------
        query : str
        candidates : sequence of (doc_id, text), length n
            In first-stage order (best first); doc ids unique.
        top_n : int, optional
            Keep the best ``top_n``; default all.
        scores : sequence of float, length n, optional
            The first-stage scores (kept by :class:`NoReranker`; default ``n, n-1, ..., 1``).

        Returns
        -------
        list of (doc_id, score), length ``min(top_n, n)``
            Best first; the score is the reranker's (higher is better; its scale depends on the
            reranker). Equal scores keep the first-stage order.

        Raises
        ------
        InputError
            On a malformed candidate list or ``top_n``.
        """
        top_n = check_positive_int(top_n, "top_n", allow_none=True)
        group = _group_from_candidates(query, candidates, scores)
        if not group.doc_ids:
            return []
        s = self._scored([group], top_n)[0]
        return [(group.doc_ids[i], float(s[i])) for i in _order(s, top_n).tolist()]

    def rerank_run(
        self,
        queries: pd.DataFrame | Mapping[str, str],
        run: pd.DataFrame,
        texts: Mapping[str, str] | None,
        top_n: int | None = None,
    ) -> pd.DataFrame:
        """Rerank every query of a run.

        Parameters
        ----------
        queries : DataFrame or dict
            ``query_id`` (str), ``text`` (str) (or ``{query_id: text}``). Queries absent from the
            run give no rows.
        run : DataFrame
            The first stage: ``query_id``, ``doc_id``, ``score`` (``rank`` is ignored: the
            candidates are taken in trec_eval order, score descending, ties by doc_id
            descending).
        texts : mapping of doc_id to str
            The passages' texts (may be None for :class:`NoReranker`).
        top_n : int, optional
            Rows kept per query; default all candidates.

        Returns
        -------
        DataFrame
            ``query_id`` (str), ``doc_id`` (str), ``score`` (float64, the reranker's),
            ``rank`` (int64, 1-based), grouped by query in trec_eval order (ties between equal
            scores broken by doc_id descending, as trec_eval does). ``attrs["reranker"]`` holds
            :attr:`name`.

        Raises
        ------
        InputError
            On a malformed run, a query of the run with no text, or a document with no text
            (naming the query and document).
        """
        top_n = check_positive_int(top_n, "top_n", allow_none=True)
        groups = _groups(queries, run, texts if self._needs_text else None)
        scored = self._scored(groups, top_n) if groups else []
        out = _run_frame(groups, scored, top_n)
        out.attrs["reranker"] = self.name
        return out

    def usage(self) -> dict[str, float]:
        """Cumulative counters since construction.

        Returns
        -------
        dict of str to float
            ``queries`` and ``candidates`` reranked; ``calls``: model calls (batches of a local
            model, rerank requests of a hosted one, listwise windows of an LLM), including
            ``cached_calls`` served from the cache; ``http_requests`` actually sent (retries
            included); ``input_tokens``, ``output_tokens``: the tokens the calls cost, cached
            ones included (what the configuration costs when nothing is cached; 0 for local
            models); ``estimated_tokens``: calls whose tokens were counted offline because the
            server reported none; ``failures``: calls with no usable answer (the LLM window
            kept its order).
        """
        with self._lock:
            return dict(self._usage)

    def cost_usd(self) -> float:
        """US dollars of :meth:`usage`'s tokens: 0 for local models, NaN when unpriced."""
        return 0.0

    def describe(self) -> dict[str, Any]:
        """What the reranker is, for manifests and sweep tables (never an API key)."""
        return {"name": self.name, "kind": type(self).__name__, "params": {}}

    # -- what subclasses implement

    @abstractmethod
    def _score_groups(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        """One float64 array of shape (n_candidates,) per group, higher is better; ``top_n``
        is a hint (the caller cuts the list): a hosted reranker may send it."""

    # -- helpers

    def _scored(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        scored = self._score_groups(groups, top_n)
        self._add(queries=len(groups), candidates=sum(len(g.doc_ids) for g in groups))
        return scored

    def _add(self, **counts: float) -> None:
        with self._lock:
            for k, v in counts.items():
                self._usage[k] += float(v)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class NoReranker(Reranker):
    """The identity: first-stage order and scores kept (the no-rerank baseline of a sweep).

    Examples
    --------
    >>> NoReranker().rerank("q", [("a", "..."), ("b", "...")], scores=[0.9, 0.4])
    [('a', 0.9), ('b', 0.4)]
    """

    name = "none"
    _needs_text = False

    def _score_groups(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        return [g.scores for g in groups]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "none", "params": {}}
