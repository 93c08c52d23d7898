"""Trajectory measures: how an agent's sequence of searches finds the evidence of a question.

A *trajectory* is the retrieval calls an agent made for one question, in order, and the rerank
steps between them (:mod:`ragnb.io.trajectories`). Each search's list is what the agent received
(a reranked search: the reranker's output), or with ``lists="retrieved"`` the retrieval span's
own (:func:`search_lists`). Evaluated like a run, a trajectory is the documents its searches
returned, each kept at its first appearance, in the order they were found: the *discovery run*
(:func:`discovery_run`). Every measure of the kit reads that run
(``nDCG@10`` of a trajectory is nDCG@10 of its first ten distinct documents found); the
families below read the calls themselves. The qrels are per question: the evidence documents
are the judged ones with grade >= ``rel``.

========================== =======================================================================
name                       definition, per question
========================== =======================================================================
``EvidenceRecall[@C]``     share of the relevant documents returned by the first C retrieval calls
                           (all calls without C): BrowseComp-Plus's "Recall", over every search
``SearchCalls``            retrieval calls made (BrowseComp-Plus's "Search Calls")
``CallsToFirstRel``        retrieval calls up to the first that returns a relevant document;
                           ``inf`` when none does (the trajectory is counted, never dropped)
``CallRR``                 1 / CallsToFirstRel; 0 when no call finds a relevant document
``CallsToEvidence``        calls until EvidenceRecall reaches ``share`` (default 1: full
                           evidence); ``inf`` when it never does
``Redundancy``             share of the documents returned (each call's list, repeats across
                           calls counted) that an earlier call already returned
``CallnDCG@K``             mean over the retrieval calls of each call's own nDCG@K
``CallnDCGSlope@K``        least-squares slope of a call's nDCG@K over its position 1, 2, ...:
                           positive when later searches rank better; NaN with fewer than 2 calls
``RerankGain@K``           mean over the trajectory's reranker spans of nDCG@K of the output
                           minus nDCG@K of the input; NaN without a reranker (or its input)
``TokensPerRel``           the trajectory's tokens / relevant documents found; ``inf`` when it
                           found none at a cost
``SecondsPerRel``          its seconds (first span's start to last span's end) / relevant found
========================== =======================================================================

Undefined values are NaN (excluded from means and counted): ``CallsToFirstRel`` and
``CallsToEvidence`` of a question without any relevant document, ``Redundancy`` of a trajectory
that returned nothing, the cost measures when no span recorded tokens or times. A question of
the qrels without a trajectory is an empty one: no call, nothing found. The per-call values
(each call's nDCG@K, the reranker's input and output) are in
:attr:`ragnb.evaluation.trajectories.TrajectoryResult.calls`.

References
----------
.. [1] Z. Chen, X. Ma, S. Zhuang et al., "BrowseComp-Plus: A More Fair and Transparent
   Evaluation Benchmark of Deep-Research Agent", ACL 2026 (arXiv:2508.06600): Recall (the
   evidence documents among all documents the agent's searches returned in the trajectory)
   and Search Calls; ``texttron/BrowseComp-Plus``, ``scripts_evaluation/evaluate_run.py``.
.. [2] K. Järvelin and J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
   ACM TOIS 20(4), 2002 (nDCG, here per call and of a reranker's input and output).
.. [3] E. M. Voorhees, "The TREC-8 Question Answering Track Report", TREC 1999 (reciprocal
   rank, here over calls instead of ranks).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.measures.base import REL, Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.kernel import RankingArrays, as_qrels_frame, prepare, safe_div

__all__ = [
    "CENSORED_FAMILIES",
    "LISTS",
    "TRAJECTORY_FAMILIES",
    "TrajectoryArrays",
    "discovery_run",
    "is_trajectory_measure",
    "prepare_trajectories",
    "rerank_gains",
    "search_lists",
    "step_values",
]

#: Families whose value is ``inf`` when the event never happens in the trajectory.
CENSORED_FAMILIES = ("CallsToFirstRel", "CallsToEvidence", "TokensPerRel", "SecondsPerRel")


@dataclass(frozen=True, eq=False)
class TrajectoryArrays(RankingArrays):
    """:class:`~ragnb.measures.RankingArrays` of the discovery runs, with the calls behind them.

    The ranked arrays (one row per question of the qrels, sorted) hold each trajectory's
    discovery run (:func:`discovery_run`), whole (no depth cap); every measure reads them.

    Attributes
    ----------
    found_at : ndarray of int64, shape (n_queries, depth)
        The retrieval call (1-based) that first returned the document at each discovery rank;
        0 where the position is unfilled.
    n_searches : ndarray of int64, shape (n_queries,)
        Retrieval calls of the trajectory (0: no trajectory).
    n_returned : ndarray of int64, shape (n_queries,)
        Documents the retrieval calls returned, repeats across calls counted.
    searches : RankingArrays
        One row per (question, retrieval call): that call's ranking against the question's
        qrels.
    search_row, search_index : ndarray of int64, shape (n_search_rows,)
        The question (row of these arrays) and the call (1-based among its retrieval calls)
        of each row of ``searches``.
    rerank_input, rerank_output : RankingArrays
        One row per reranker span: the documents it was given and those it returned.
    rerank_row : ndarray of int64, shape (n_rerank_rows,)
        The question of each reranker row.
    tokens, seconds : ndarray of float64, shape (n_queries,)
        The trajectory's cost (NaN: not recorded, or no trajectory).
    """

    found_at: np.ndarray
    n_searches: np.ndarray
    n_returned: np.ndarray
    searches: RankingArrays
    search_row: np.ndarray
    search_index: np.ndarray
    rerank_input: RankingArrays
    rerank_output: RankingArrays
    rerank_row: np.ndarray
    tokens: np.ndarray
    seconds: np.ndarray


#: Which list of a search the measures read: ``"seen"``, the documents the agent received (a
#: reranked search's reranker output), or ``"retrieved"``, the retrieval span's own list.
LISTS = ("seen", "retrieved")
_KEYS = ["trajectory_id", "call"]


def search_lists(calls: pd.DataFrame, documents: pd.DataFrame, lists: str = "seen") -> pd.DataFrame:
    """The documents of each search (retrieval call), as the measures read them.

    Parameters
    ----------
    calls : DataFrame
        ``trajectory_id``, ``call``, ``search_call``, ``kind``
        (:attr:`ragnb.io.trajectories.Trajectories.calls`).
    documents : DataFrame
        ``trajectory_id``, ``call``, ``rank``, ``doc_id``
        (:attr:`ragnb.io.trajectories.Trajectories.documents`).
    lists : {"seen", "retrieved"}, default "seen"
        ``"seen"``: a search followed by reranker spans (before the next search) is read as the
        last reranker's output, what the agent received; ``"retrieved"``: the retrieval span's
        list.

    Returns
    -------
    DataFrame
        ``trajectory_id``, ``call`` (the retrieval call), ``search_call``, ``rank``, ``doc_id``,
        sorted by trajectory, search and rank.

    Raises
    ------
    InputError
        On ``lists`` other than :data:`LISTS`.

    Examples
    --------
    >>> calls = pd.DataFrame({"trajectory_id": ["t", "t"], "call": [1, 2],
    ...                       "search_call": [1, 1], "kind": ["retrieval", "rerank"]})
    >>> docs = pd.DataFrame({"trajectory_id": ["t"] * 3, "call": [1, 1, 2], "rank": [1, 2, 1],
    ...                      "doc_id": ["a", "b", "b"]})
    >>> search_lists(calls, docs)["doc_id"].tolist(), search_lists(calls, docs, "retrieved")[
    ...     "doc_id"].tolist()
    (['b'], ['a', 'b'])
    """
    if lists not in LISTS:
        raise InputError(f"lists must be one of {LISTS}, got {lists!r}")
    searches = calls.loc[calls["kind"] == "retrieval", [*_KEYS, "search_call"]]
    found = documents[[*_KEYS, "rank", "doc_id"]].merge(searches, on=_KEYS, how="inner")
    if lists == "seen":
        reranks = calls.loc[(calls["kind"] == "rerank") & (calls["search_call"] > 0)]
        last = reranks.sort_values("call", kind="stable").drop_duplicates(
            ["trajectory_id", "search_call"], keep="last"
        )[[*_KEYS, "search_call"]]
        output = documents[[*_KEYS, "rank", "doc_id"]].merge(last, on=_KEYS, how="inner")
        output = output.drop(columns="call").merge(
            searches, on=["trajectory_id", "search_call"], how="inner"
        )
        reranked = pd.MultiIndex.from_frame(last[["trajectory_id", "search_call"]])
        kept = ~pd.MultiIndex.from_frame(found[["trajectory_id", "search_call"]]).isin(reranked)
        found = pd.concat([found[kept], output[found.columns]], ignore_index=True)
    return found.sort_values(["trajectory_id", "search_call", "rank"], kind="stable").reset_index(
        drop=True
    )


def discovery_run(
    calls: pd.DataFrame, documents: pd.DataFrame, lists: str = "seen"
) -> pd.DataFrame:
    """Each trajectory as a run: the documents its searches returned, each at its first
    appearance, in the order found (search, then rank within the search's list).

    Parameters
    ----------
    calls, documents : DataFrame
        As :func:`search_lists`.
    lists : {"seen", "retrieved"}, default "seen"
        The list each search is read as (:func:`search_lists`).

    Returns
    -------
    DataFrame
        ``query_id`` (the trajectory), ``doc_id``, ``score`` (float: ``n - position + 1`` of
        the n documents found, so that score order is discovery order), ``rank`` (1-based
        discovery position) and ``search_call`` (the retrieval call that first returned it).

    Examples
    --------
    >>> calls = pd.DataFrame({"trajectory_id": ["t", "t"], "call": [1, 2],
    ...                       "search_call": [1, 2], "kind": ["retrieval"] * 2})
    >>> docs = pd.DataFrame({"trajectory_id": ["t"] * 3, "call": [1, 2, 2], "rank": [1, 1, 2],
    ...                      "doc_id": ["a", "b", "a"]})
    >>> discovery_run(calls, docs)[["doc_id", "rank", "search_call"]].values.tolist()
    [['a', 1, 1], ['b', 2, 2]]
    """
    return _discovery(search_lists(calls, documents, lists))


def _discovery(found: pd.DataFrame) -> pd.DataFrame:
    """:func:`discovery_run` of the searches' lists (:func:`search_lists`)."""
    found = found.drop_duplicates(["trajectory_id", "doc_id"], keep="first")
    position = found.groupby("trajectory_id", sort=False).cumcount().to_numpy() + 1
    size = found.groupby("trajectory_id", sort=False)["doc_id"].transform("size").to_numpy()
    return pd.DataFrame(
        {
            "query_id": found["trajectory_id"].astype(str).to_numpy(dtype=object),
            "doc_id": found["doc_id"].astype(str).to_numpy(dtype=object),
            "score": (size - position + 1).astype(np.float64),
            "rank": position.astype(np.int64),
            "search_call": found["search_call"].to_numpy(dtype=np.int64),
        }
    )


def _row_of(arrays: RankingArrays, query_ids: pd.Series) -> np.ndarray:
    """The row of each query id among ``arrays.query_ids`` (-1 when absent)."""
    return pd.Index(arrays.query_ids).get_indexer(query_ids.astype(str)).astype(np.int64)


def _per_step(
    qrels: pd.DataFrame, steps: pd.DataFrame, lists: pd.DataFrame, rows: np.ndarray
) -> RankingArrays:
    """Arrays with one row per step (a call, a reranker span) of a question of the qrels.

    ``steps``: ``trajectory_id``, ``call`` of each step, ``rows`` the question row of each;
    ``lists``: the documents of the steps (``trajectory_id``, ``call``, ``rank``, ``doc_id``).
    Each step is named ``<question row>:<step>`` so the qrels are copied onto it.
    """
    keys = pd.Series([f"{r:09d}:{i:09d}" for i, r in enumerate(rows)], dtype=object)
    named = steps[["trajectory_id", "call"]].assign(step=keys.to_numpy())
    run = lists.merge(named, on=["trajectory_id", "call"], how="inner")
    run = pd.DataFrame(
        {
            "query_id": run["step"].to_numpy(dtype=object),
            "doc_id": run["doc_id"].astype(str).to_numpy(dtype=object),
            "score": -run["rank"].to_numpy(dtype=np.float64),
            "rank": run["rank"].to_numpy(dtype=np.int64),
        }
    )
    copies = named.assign(query_id=steps["trajectory_id"].astype(str).to_numpy())
    step_qrels = qrels.merge(copies[["query_id", "step"]], on="query_id", how="inner")
    step_qrels = step_qrels.assign(query_id=step_qrels["step"]).drop(columns="step")
    if step_qrels.empty:  # no step: one placeholder judgement keeps prepare's checks happy
        step_qrels = pd.DataFrame({"query_id": ["~"], "doc_id": ["~"], "relevance": [0]})
    return prepare(step_qrels, run, order="file")


def _steps(
    arrays: RankingArrays, calls: pd.DataFrame, kind: str
) -> tuple[pd.DataFrame, np.ndarray]:
    """The calls of ``kind`` whose question is in the qrels, and the row of each."""
    steps = calls[calls["kind"] == kind].reset_index(drop=True)
    rows = _row_of(arrays, steps["trajectory_id"])
    keep = rows >= 0
    return steps[keep].reset_index(drop=True), rows[keep]


def _per_question(
    arrays: RankingArrays, trajectories: pd.DataFrame | None, column: str
) -> np.ndarray:
    """A column of the trajectories frame on the rows of the arrays (NaN for no trajectory)."""
    out = np.full(arrays.n_queries, np.nan)
    if trajectories is not None and len(trajectories):
        rows = _row_of(arrays, trajectories["trajectory_id"])
        keep = rows >= 0
        out[rows[keep]] = trajectories[column].to_numpy(dtype=np.float64)[keep]
    return out


def prepare_trajectories(
    qrels: pd.DataFrame,
    calls: pd.DataFrame,
    documents: pd.DataFrame,
    rerank_inputs: pd.DataFrame | None = None,
    trajectories: pd.DataFrame | None = None,
    lists: str = "seen",
) -> TrajectoryArrays:
    """Join trajectories with per-question qrels into the arrays every measure reads.

    Parameters
    ----------
    qrels : DataFrame or dict
        Per question: ``query_id`` (the trajectory id), ``doc_id``, ``relevance``.
    calls, documents, rerank_inputs, trajectories : DataFrame
        The frames of :class:`ragnb.io.trajectories.Trajectories` of one system
        (``rerank_inputs`` and ``trajectories`` optional: no reranker input, no cost).
    lists : {"seen", "retrieved"}, default "seen"
        The list each search is read as (:func:`search_lists`): what the agent received (a
        reranked search's reranker output) or the retrieval span's own.

    Returns
    -------
    TrajectoryArrays
        One row per question of the qrels (sorted); a question without a trajectory is an
        empty one.

    Raises
    ------
    InputError
        On malformed or empty qrels.
    """
    qrels = as_qrels_frame(qrels)
    lists_frame = search_lists(calls, documents, lists)
    found = _discovery(lists_frame)
    base = prepare(qrels, found.drop(columns="search_call"), order="file")
    found_at = np.zeros(base.grades.shape, dtype=np.int64)
    rows = _row_of(base, found["query_id"])
    keep = rows >= 0
    found_at[rows[keep], found["rank"].to_numpy()[keep] - 1] = found["search_call"].to_numpy()[keep]
    search_steps, search_rows = _steps(base, calls, "retrieval")
    rerank_steps, rerank_rows = _steps(base, calls, "rerank")
    inputs = documents.iloc[:0] if rerank_inputs is None else rerank_inputs
    returned = lists_frame.merge(search_steps[_KEYS], on=_KEYS)
    extra = {
        "found_at": found_at,
        "n_searches": np.bincount(search_rows, minlength=base.n_queries).astype(np.int64),
        "n_returned": np.bincount(
            _row_of(base, returned["trajectory_id"]), minlength=base.n_queries
        ).astype(np.int64),
        "searches": _per_step(qrels, search_steps, lists_frame, search_rows),
        "search_row": search_rows,
        "search_index": search_steps["search_call"].to_numpy(dtype=np.int64),
        "rerank_input": _per_step(qrels, rerank_steps, inputs, rerank_rows),
        "rerank_output": _per_step(qrels, rerank_steps, documents, rerank_rows),
        "rerank_row": rerank_rows,
        "tokens": _per_question(base, trajectories, "tokens"),
        "seconds": _per_question(base, trajectories, "seconds"),
    }
    for value in extra.values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    shared = {f.name: getattr(base, f.name) for f in fields(RankingArrays)}
    return TrajectoryArrays(**shared, **extra)


def step_values(steps: RankingArrays, k: int) -> np.ndarray:
    """nDCG@k of each step of per-step arrays, in the order the steps were given.

    Parameters
    ----------
    steps : RankingArrays
        :attr:`TrajectoryArrays.searches`, ``rerank_input`` or ``rerank_output`` (rows sorted
        by their ``<question row>:<step>`` names).
    k : int >= 1
        The cutoff.

    Returns
    -------
    ndarray of float64, shape (n_steps,)
        trec_eval's nDCG@k (linear gain, the ideal of all the question's judgements) of each
        step's list; 0 for an empty list.
    """
    values = Measure("nDCG", k).compute(steps)
    order = np.array([int(q.split(":")[1]) for q in steps.query_ids if q != "~"], dtype=np.int64)
    out = np.empty(len(order))
    out[order] = values[: len(order)] if len(order) < len(values) else values
    return out


# ----------------------------------------------------------------------------- kernels


def _trajectory(arrays: RankingArrays, family: str) -> TrajectoryArrays:
    if not isinstance(arrays, TrajectoryArrays):
        raise InputError(
            f"{family} is a trajectory measure: it reads an agent's search calls. Evaluate "
            "trajectories with ragnb.evaluation.trajectories.evaluate_trajectories, or on the "
            "command line with `ragnb traces evaluate TRACES --qrels QRELS`"
        )
    return arrays


def _found(a: TrajectoryArrays, rel: int, calls: int | None = None) -> np.ndarray:
    """Relevant documents found by the first ``calls`` retrieval calls (all when None)."""
    mask = a.relevant(rel)
    if calls is not None:
        mask = mask & (a.found_at <= calls)
    return mask.sum(axis=1)


def _evidence_recall(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    a = _trajectory(arrays, "EvidenceRecall")
    return safe_div(_found(a, rel, k), a.n_relevant(rel))


def _search_calls(arrays: RankingArrays, k: int | None) -> np.ndarray:
    return _trajectory(arrays, "SearchCalls").n_searches.astype(np.float64)


def _calls_to(a: TrajectoryArrays, need: np.ndarray, rel: int) -> np.ndarray:
    """The retrieval call by which ``need`` relevant documents were found (inf: never; NaN
    where the question has no relevant document)."""
    big = np.iinfo(np.int64).max
    when = np.sort(np.where(a.relevant(rel), a.found_at, big), axis=1)
    out = np.full(a.n_queries, np.inf)
    if when.shape[1]:
        at = np.clip(need - 1, 0, when.shape[1] - 1)
        picked = when[np.arange(a.n_queries), at]
        reached = (picked != big) & (need <= when.shape[1])
        out[reached] = picked[reached]
    out[a.n_relevant(rel) == 0] = np.nan
    return out


def _calls_to_first_rel(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    a = _trajectory(arrays, "CallsToFirstRel")
    return _calls_to(a, np.ones(a.n_queries, dtype=np.int64), rel)


def _call_rr(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    a = _trajectory(arrays, "CallRR")
    calls = _calls_to(a, np.ones(a.n_queries, dtype=np.int64), rel)
    return np.where(np.isfinite(calls), 1.0 / np.where(np.isfinite(calls), calls, 1.0), 0.0)


def _calls_to_evidence(
    arrays: RankingArrays, k: int | None, *, share: float, rel: int
) -> np.ndarray:
    a = _trajectory(arrays, "CallsToEvidence")
    need = np.ceil(share * a.n_relevant(rel) - 1e-9).astype(np.int64)
    return _calls_to(a, np.maximum(need, 1), rel)


def _redundancy(arrays: RankingArrays, k: int | None) -> np.ndarray:
    a = _trajectory(arrays, "Redundancy")
    out = np.full(a.n_queries, np.nan)
    some = a.n_returned > 0
    out[some] = 1.0 - a.n_retrieved[some] / a.n_returned[some]
    return out


def _by_question(values: np.ndarray, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums and counts of per-step ``values`` (NaN left out) per question row."""
    valid = ~np.isnan(values)
    sums = np.bincount(rows[valid], weights=values[valid], minlength=n)
    counts = np.bincount(rows[valid], minlength=n)
    return sums, counts


def _call_ndcg(arrays: RankingArrays, k: int) -> np.ndarray:
    a = _trajectory(arrays, "CallnDCG")
    sums, counts = _by_question(step_values(a.searches, k), a.search_row, a.n_queries)
    out = np.full(a.n_queries, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def _call_ndcg_slope(arrays: RankingArrays, k: int) -> np.ndarray:
    a = _trajectory(arrays, "CallnDCGSlope")
    y = step_values(a.searches, k)
    x = a.search_index.astype(np.float64)
    n = np.bincount(a.search_row, minlength=a.n_queries).astype(np.float64)
    sx, sy = (np.bincount(a.search_row, weights=v, minlength=a.n_queries) for v in (x, y))
    sxy = np.bincount(a.search_row, weights=x * y, minlength=a.n_queries)
    sxx = np.bincount(a.search_row, weights=x * x, minlength=a.n_queries)
    spread = n * sxx - sx * sx
    out = np.full(a.n_queries, np.nan)
    ok = (n >= 2) & (spread > 0)
    out[ok] = (n[ok] * sxy[ok] - sx[ok] * sy[ok]) / spread[ok]
    return out


def rerank_gains(a: TrajectoryArrays, k: int) -> np.ndarray:
    """The gain of each reranker span: nDCG@k of its output minus nDCG@k of its input.

    Parameters
    ----------
    a : TrajectoryArrays
    k : int >= 1

    Returns
    -------
    ndarray of float64, shape (n_rerank_rows,)
        In [-1, 1], in the order of :attr:`TrajectoryArrays.rerank_row`; NaN where the span
        lists no input document.
    """
    gain = step_values(a.rerank_output, k) - step_values(a.rerank_input, k)
    given = np.zeros(len(a.rerank_row), dtype=bool)
    order = [int(q.split(":")[1]) for q in a.rerank_input.query_ids if q != "~"]
    given[order] = a.rerank_input.n_retrieved[: len(order)] > 0
    return np.where(given, gain, np.nan)


def _rerank_gain(arrays: RankingArrays, k: int) -> np.ndarray:
    a = _trajectory(arrays, "RerankGain")
    sums, counts = _by_question(rerank_gains(a, k), a.rerank_row, a.n_queries)
    out = np.full(a.n_queries, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def _per_rel(cost: np.ndarray, found: np.ndarray) -> np.ndarray:
    """``cost / found``: inf when nothing was found at a cost, NaN when the cost is unknown or
    nothing was found for free."""
    out = np.full(cost.shape, np.nan)
    some = found > 0
    out[some] = cost[some] / found[some]
    out[~some & (cost > 0)] = np.inf
    return out


def _tokens_per_rel(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    a = _trajectory(arrays, "TokensPerRel")
    return _per_rel(a.tokens, _found(a, rel))


def _seconds_per_rel(arrays: RankingArrays, k: int | None, *, rel: int) -> np.ndarray:
    a = _trajectory(arrays, "SecondsPerRel")
    return _per_rel(a.seconds, _found(a, rel))


def _whole(k: int | None) -> None:
    return None


SHARE = ParamSpec(
    "share", float, 1.0, 0.0, 1.0, doc="evidence recall to reach (0: one relevant document)"
)

#: The trajectory families, in the order of the table above.
TRAJECTORY_FAMILIES = (
    "EvidenceRecall",
    "SearchCalls",
    "CallsToFirstRel",
    "CallRR",
    "CallsToEvidence",
    "Redundancy",
    "CallnDCG",
    "CallnDCGSlope",
    "RerankGain",
    "TokensPerRel",
    "SecondsPerRel",
)

for _family, _aliases in (
    (
        MeasureFamily(
            "EvidenceRecall",
            _evidence_recall,
            params=(REL,),
            cutoff="optional",
            depth=_whole,
            summary="EvidenceRecall@C = relevant documents returned by the first C retrieval "
            "calls (all calls without C) / relevant documents (BrowseComp-Plus Recall)",
        ),
        ("evidence_recall",),
    ),
    (
        MeasureFamily(
            "SearchCalls",
            _search_calls,
            cutoff="none",
            depth=_whole,
            summary="SearchCalls = retrieval calls in the trajectory (BrowseComp-Plus Search "
            "Calls)",
        ),
        ("search_calls",),
    ),
    (
        MeasureFamily(
            "CallsToFirstRel",
            _calls_to_first_rel,
            params=(REL,),
            cutoff="none",
            depth=_whole,
            summary="CallsToFirstRel = retrieval calls up to the first returning a relevant "
            "document; inf when none does",
        ),
        (),
    ),
    (
        MeasureFamily(
            "CallRR",
            _call_rr,
            params=(REL,),
            cutoff="none",
            depth=_whole,
            summary="CallRR = 1 / CallsToFirstRel; 0 when no call returns a relevant document",
        ),
        (),
    ),
    (
        MeasureFamily(
            "CallsToEvidence",
            _calls_to_evidence,
            params=(SHARE, REL),
            cutoff="none",
            depth=_whole,
            summary="CallsToEvidence(share=s) = retrieval calls until EvidenceRecall >= s "
            "(default 1: all the evidence); inf when never",
        ),
        (),
    ),
    (
        MeasureFamily(
            "Redundancy",
            _redundancy,
            cutoff="none",
            depth=_whole,
            summary="Redundancy = documents returned that an earlier call already returned / "
            "documents returned, over the retrieval calls",
        ),
        (),
    ),
    (
        MeasureFamily(
            "CallnDCG",
            _call_ndcg,
            depth=_whole,
            summary="CallnDCG@K = mean over the retrieval calls of each call's nDCG@K",
        ),
        (),
    ),
    (
        MeasureFamily(
            "CallnDCGSlope",
            _call_ndcg_slope,
            depth=_whole,
            summary="CallnDCGSlope@K = least-squares slope of each call's nDCG@K over the call "
            "position (per call); NaN with fewer than 2 calls",
        ),
        (),
    ),
    (
        MeasureFamily(
            "RerankGain",
            _rerank_gain,
            depth=_whole,
            summary="RerankGain@K = mean over the reranker spans of nDCG@K(output) - nDCG@K(input)",
        ),
        (),
    ),
    (
        MeasureFamily(
            "TokensPerRel",
            _tokens_per_rel,
            params=(REL,),
            cutoff="none",
            depth=_whole,
            summary="TokensPerRel = tokens of the trajectory's spans / relevant documents "
            "found; inf when none found",
        ),
        (),
    ),
    (
        MeasureFamily(
            "SecondsPerRel",
            _seconds_per_rel,
            params=(REL,),
            cutoff="none",
            depth=_whole,
            summary="SecondsPerRel = seconds from the trajectory's first span to its last / "
            "relevant documents found; inf when none found",
        ),
        (),
    ),
):
    register_family(_family, aliases=_aliases)


def is_trajectory_measure(measure: Measure) -> bool:
    """Whether ``measure`` reads the calls (a family of this module) rather than the
    discovery run alone."""
    return measure.family in TRAJECTORY_FAMILIES
