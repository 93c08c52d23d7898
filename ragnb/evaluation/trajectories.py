"""Trajectories scored against per-question qrels: per question, per call, along the calls and
by conversation turn.

:func:`evaluate_trajectories` is :func:`ragnb.evaluation.evaluate.evaluate` for an agent's
searches: the trajectories of one system (:func:`ragnb.io.trajectories.read_trajectories`) joined
once with the qrels (:func:`ragnb.measures.trajectory.prepare_trajectories`), every measure read
from the same arrays. Any measure of the kit applies (on each trajectory's discovery run), the
trajectory families (:mod:`ragnb.measures.trajectory`) read the calls.

Conventions
-----------
* The evaluated questions are those of the qrels; a question without a trajectory is an empty
  one (no call, nothing found), a trajectory without qrels is left out; both are counted.
* NaN is "undefined": left out of means and counted by ``n_valid``. ``inf`` is "never": a
  trajectory that never finds a relevant document (``CallsToFirstRel``), never reaches the
  evidence share (``CallsToEvidence``) or pays for nothing (``TokensPerRel``,
  ``SecondsPerRel``). Such a trajectory is counted, never dropped: the aggregate gives the mean
  over the trajectories that got there, the share that never did and the median over all
  (``inf`` when more than half never did).
* ``per_query`` holds one value per question, as :func:`ragnb.stats.compare` takes them: systems are
  trace files or the values of a system attribute
  (:meth:`ragnb.io.trajectories.Trajectories.by_system`), compared with intervals on any measure
  whose values are finite: a family that can be ``inf`` is compared in its censored form, a
  stated value for "never" (``CallsToFirstRel(never=5)``, ``TokensPerRel(never=5000)``;
  :func:`ragnb.measures.trajectory.censored`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.io.trajectories import Trajectories
from ragnb.measures import Measure, parse_measures
from ragnb.measures.kernel import as_qrels_frame
from ragnb.measures.trajectory import (
    TRAJECTORY_FAMILIES,
    TrajectoryArrays,
    prepare_trajectories,
    rerank_gains,
    search_lists,
    step_values,
)

__all__ = [
    "DEFAULT_TRAJECTORY_MEASURES",
    "TrajectoryResult",
    "evaluate_trajectories",
    "mean_interval",
    "turn_of",
]

_PER_CALL = ("CallnDCG", "CallnDCGSlope", "RerankGain")
#: What ``ragnb traces evaluate`` reports without ``-m``: every trajectory family, those of one
#: search's ranking at cutoff 10.
DEFAULT_TRAJECTORY_MEASURES = tuple(
    f"{family}@10" if family in _PER_CALL else family for family in TRAJECTORY_FAMILIES
)


def mean_interval(
    values: np.ndarray, confidence: float = 0.95, n_resamples: int = 2000, seed: int | None = 0
) -> tuple[float, float, float]:
    """The mean of the finite ``values`` and its percentile bootstrap interval.

    Parameters
    ----------
    values : ndarray of float
        NaN and ``inf`` are left out.
    confidence : float in (0, 1), default 0.95
    n_resamples : int, default 2000
    seed : int, optional

    Returns
    -------
    (float, float, float)
        Mean, low, high; the interval is NaN with fewer than two values (the mean too with
        none).

    References
    ----------
    B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13
    (percentile interval); ``scipy.stats.bootstrap``.

    Examples
    --------
    >>> mean_interval(np.array([1.0, 1.0, np.inf, np.nan]))
    (1.0, 1.0, 1.0)
    """
    from scipy.stats import bootstrap

    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if len(finite) == 0:
        return np.nan, np.nan, np.nan
    mean = float(finite.mean())
    if len(finite) < 2:
        return mean, np.nan, np.nan
    if np.all(finite == finite[0]):
        return mean, mean, mean
    res = bootstrap(
        (finite,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        vectorized=True,
        batch=max(1, 2_000_000 // len(finite)),  # resamples at a time: bounded memory
        rng=np.random.default_rng(seed),
    )
    return mean, float(res.confidence_interval.low), float(res.confidence_interval.high)


def turn_of(query_id: str) -> tuple[str, int]:
    """The conversation and turn of a TREC CAsT / iKAT query id ``<conversation>_<turn>``
    (``("", 0)`` when the id is not of that form).

    Examples
    --------
    >>> turn_of("31_4"), turn_of("9-1-3_12"), turn_of("q17")
    (('31', 4), ('9-1-3', 12), ('', 0))
    """
    conversation, sep, turn = str(query_id).rpartition("_")
    if not sep or not conversation or not turn.isdigit() or int(turn) < 1:
        return "", 0
    return conversation, int(turn)


def _summary(name: str, values: np.ndarray) -> dict[str, Any]:
    """One aggregate row: mean over the finite values, ``inf`` counted, median over all."""
    valid = values[~np.isnan(values)]
    never = int(np.isinf(valid).sum())
    finite = valid[np.isfinite(valid)]
    return {
        "measure": name,
        "value": float(finite.mean()) if len(finite) else np.nan,
        "n_valid": len(valid),
        "n_queries": len(values),
        "n_never": never,
        "share_never": never / len(valid) if len(valid) else np.nan,
        "median": float(np.median(valid)) if len(valid) else np.nan,
    }


@dataclass(frozen=True, eq=False)
class TrajectoryResult:
    """The outcome of :func:`evaluate_trajectories`.

    Attributes
    ----------
    measures : tuple of Measure
        In the order requested.
    query_ids : ndarray of str (object), shape (n_queries,)
        The questions of the qrels, sorted: the rows of ``values``.
    values : ndarray of float64, shape (n_queries, n_measures)
        Per-question values (read-only); NaN undefined, ``inf`` never reached.
    aggregate : DataFrame
        One row per measure: ``measure``, ``value`` (mean over the finite values), ``n_valid``
        (questions with a value, ``inf`` included), ``n_queries``, ``n_never`` (questions at
        ``inf``), ``share_never`` (``n_never / n_valid``), ``median`` (over the valid values,
        ``inf`` included).
    questions : DataFrame
        One row per question: ``query_id``, ``has_trajectory`` (bool), ``conversation_id``,
        ``turn`` (int; from the trajectory, else from a ``<conversation>_<turn>`` id; 0:
        none), ``trace_id``, ``root_span_id``, ``n_searches``, ``n_reranks`` (int),
        ``n_relevant`` (int: judged with grade >= ``rel``), ``found`` (int: those returned by
        some retrieval call), ``first_query`` (str).
    calls : DataFrame
        One row per call of a question of the qrels, in trajectory and call order:
        ``trajectory_id``, ``call``, ``search_call``, ``kind``, ``span_id``, ``trace_id``,
        ``query``, ``n_documents``, ``new_documents`` (int: not returned by an earlier
        retrieval call; 0 for a rerank), ``relevant`` (int: relevant among its documents),
        ``new_relevant`` (int), ``evidence_recall`` (float: EvidenceRecall after this call),
        ``redundant`` (float: share of its documents an earlier retrieval call returned; NaN
        without documents or for a rerank), ``latency_s``, ``tokens`` (float, NaN when not
        recorded), then per cutoff K: ``nDCG@K`` (the call's list: a search's as read,
        ``lists``, a reranker's output), ``input_nDCG@K`` and ``RerankGain@K`` (rerank rows;
        NaN otherwise). The counts of a search read its list as the measures do.
    curve : DataFrame
        EvidenceRecall after c retrieval calls: ``search_call`` (c = 1 ... the longest
        trajectory), ``value`` (mean over every question; a trajectory of fewer calls keeps
        its last recall), ``ci_low``, ``ci_high`` (bootstrap interval), ``n_queries``,
        ``n_searching`` (trajectories with at least c calls).
    counts : dict
        ``queries_in_qrels``, ``queries_without_trajectory``, ``trajectories_without_qrels``,
        ``retrieval_calls``, ``rerank_calls`` (of the evaluated questions), ``rel``, ``lists``,
        ``path``, ``system``.
    """

    measures: tuple[Measure, ...]
    query_ids: np.ndarray
    values: np.ndarray
    aggregate: pd.DataFrame
    questions: pd.DataFrame
    calls: pd.DataFrame
    curve: pd.DataFrame
    counts: dict[str, Any]

    @property
    def names(self) -> list[str]:
        """The measures' canonical names, in order."""
        return [m.name for m in self.measures]

    @cached_property
    def per_query(self) -> pd.DataFrame:
        """Long form ``query_id``, ``measure``, ``value``, measure after measure, as
        :func:`ragnb.stats.compare` takes it."""
        n_q, n_m = self.values.shape
        return pd.DataFrame(
            {
                "query_id": np.tile(self.query_ids.astype(object), n_m),
                "measure": np.repeat(np.asarray(self.names, dtype=object), n_q),
                "value": self.values.T.reshape(-1),
            }
        )

    def per_query_wide(self) -> pd.DataFrame:
        """Index ``query_id``, one column per measure."""
        index = pd.Index(self.query_ids, dtype=object, name="query_id")
        return pd.DataFrame(self.values, index=index, columns=self.names)

    def aggregate_to_dict(self) -> dict[str, float]:
        """``{measure: value}`` of the aggregate."""
        return dict(zip(self.aggregate["measure"], self.aggregate["value"], strict=True))

    def by_turn(
        self, confidence: float = 0.95, n_resamples: int = 2000, seed: int | None = 0
    ) -> pd.DataFrame:
        """Every measure by conversation turn.

        Parameters
        ----------
        confidence : float in (0, 1), default 0.95
        n_resamples : int, default 2000
            Of the bootstrap interval of each mean (:func:`mean_interval`).
        seed : int, optional

        Returns
        -------
        DataFrame
            One row per measure and turn (turn 1, 2, ... of the questions with a turn,
            :attr:`questions`): ``measure``, ``turn``, ``n_queries``, ``n_valid``, ``value``
            (mean over the finite values), ``ci_low``, ``ci_high``, ``n_never``,
            ``share_never``.

        Raises
        ------
        InputError
            When no question has a turn (no conversation in the traces, ids not
            ``<conversation>_<turn>``).
        """
        turns = self.questions["turn"].to_numpy()
        if not (turns > 0).any():
            raise InputError(
                "no question has a conversation turn: read the traces with conversations "
                "(gen_ai.conversation.id or session.id) or name the questions "
                "<conversation>_<turn> (TREC CAsT / iKAT)"
            )
        rows = []
        for j, name in enumerate(self.names):
            for turn in sorted(set(turns[turns > 0].tolist())):
                values = self.values[turns == turn, j]
                mean, low, high = mean_interval(values, confidence, n_resamples, seed)
                row = _summary(name, values)
                rows.append(
                    {
                        "measure": name,
                        "turn": int(turn),
                        "n_queries": row["n_queries"],
                        "n_valid": row["n_valid"],
                        "value": mean,
                        "ci_low": low,
                        "ci_high": high,
                        "n_never": row["n_never"],
                        "share_never": row["share_never"],
                    }
                )
        return pd.DataFrame(rows)

    def events(self, per_call: bool = True) -> pd.DataFrame:
        """The values as evaluation results on the spans they judge
        (:func:`ragnb.io.events.write_evaluation_events` writes them).

        Parameters
        ----------
        per_call : bool, default True
            Also each call's nDCG@K (on its span) and each reranker's RerankGain@K.

        Returns
        -------
        DataFrame
            :data:`ragnb.io.events.EVENT_COLUMNS` and ``ragnb.query.id``: one row per question
            with a trajectory and measure, on the trajectory's root span (its value, or the
            label ``never`` and no value for ``inf``; an undefined value is left out), then
            one row per call and per-call value.
        """
        rows = self._question_events()
        if per_call:
            rows += self._call_events()
        return pd.DataFrame(
            rows,
            columns=[
                "trace_id",
                "span_id",
                "name",
                "value",
                "label",
                "explanation",
                "ragnb.query.id",
            ],
        )

    def _question_events(self) -> list[tuple[Any, ...]]:
        q = {c: self.questions[c].tolist() for c in self.questions.columns}
        rel = self.counts["rel"]
        values = self.values.tolist()
        rows = []
        for i in np.flatnonzero(self.questions["has_trajectory"].to_numpy()):
            qid = str(q["query_id"][i])
            context = (
                f"question {qid}: {q['n_searches'][i]} retrieval calls found {q['found'][i]} "
                f"of {q['n_relevant'][i]} relevant documents (grade >= {rel})"
            )
            for name, value in zip(self.names, values[i], strict=True):
                if value != value:  # NaN: undefined, nothing to report
                    continue
                never = value in (np.inf, -np.inf)
                shown = "never reached" if never else f"= {value:.4g}"
                rows.append(
                    (
                        q["trace_id"][i],
                        q["root_span_id"][i],
                        name,
                        np.nan if never else value,
                        "never" if never else "",
                        f"{name} {shown}; {context}",
                        qid,
                    )
                )
        return rows

    def _call_events(self) -> list[tuple[Any, ...]]:
        cutoffs = [col.partition("@")[2] for col in self.calls.columns if col.startswith("nDCG@")]
        rows = []
        for row in self.calls.to_dict(orient="records"):
            where = f"call {row['call']} of question {row['trajectory_id']}"
            names = [(f"nDCG@{k}", "of its documents") for k in cutoffs]
            if row["kind"] == "rerank":
                names += [(f"RerankGain@{k}", "of the output minus the input") for k in cutoffs]
            for name, what in names:
                value = float(row[name])
                if np.isnan(value):
                    continue
                text = f"{name} {what} = {value:.4g}; {where}, {row['relevant']} relevant"
                rows.append(
                    (row["trace_id"], row["span_id"], name, value, "", text, row["trajectory_id"])
                )
        return rows


# ----------------------------------------------------------------------------- the frames


def _question_frame(
    a: TrajectoryArrays, t: Trajectories, rel: int, found: np.ndarray
) -> pd.DataFrame:
    """:attr:`TrajectoryResult.questions`."""
    qids = pd.Series(a.query_ids, dtype=object)
    by_id = t.trajectories.set_index("trajectory_id")
    known = qids.isin(by_id.index).to_numpy()
    row = by_id.reindex(qids)
    parsed = [turn_of(q) for q in qids]
    turn = row["turn"].fillna(0).to_numpy(dtype=np.int64)
    conversation = row["conversation_id"].fillna("").to_numpy(dtype=object)
    for i, (conv, parsed_turn) in enumerate(parsed):
        if turn[i] == 0 and parsed_turn:
            turn[i], conversation[i] = parsed_turn, conv
    return pd.DataFrame(
        {
            "query_id": qids.to_numpy(),
            "has_trajectory": known,
            "conversation_id": conversation,
            "turn": turn,
            "trace_id": row["trace_id"].fillna("").to_numpy(dtype=object),
            "root_span_id": row["root_span_id"].fillna("").to_numpy(dtype=object),
            "n_searches": a.n_searches.astype(np.int64),
            "n_reranks": row["n_reranks"].fillna(0).to_numpy(dtype=np.int64),
            "n_relevant": a.n_relevant(rel).astype(np.int64),
            "found": found.astype(np.int64),
            "first_query": row["first_query"].fillna("").to_numpy(dtype=object),
        }
    )


def _relevant_sets(qrels: pd.DataFrame, rel: int) -> dict[str, set[str]]:
    judged = qrels[qrels["relevance"] >= rel]
    out: dict[str, set[str]] = {}
    for q, d in zip(judged["query_id"].tolist(), judged["doc_id"].tolist(), strict=True):
        out.setdefault(str(q), set()).add(str(d))
    return out


def _call_counts(
    calls: pd.DataFrame, documents: pd.DataFrame, relevant: dict[str, set[str]]
) -> pd.DataFrame:
    """Per call: ``relevant``, ``new_documents``, ``new_relevant``, ``evidence_recall`` and
    ``redundant`` (the trajectory's retrieval calls in order)."""
    ordered = documents.sort_values(["trajectory_id", "call", "rank"], kind="stable")
    lists: dict[tuple[Any, Any], list[str]] = {}
    for key in zip(
        ordered["trajectory_id"].tolist(),
        ordered["call"].tolist(),
        ordered["doc_id"].astype(str).tolist(),
        strict=True,
    ):
        lists.setdefault(key[:2], []).append(key[2])
    out = []
    seen: set[str] = set()
    found: set[str] = set()
    current = None
    for tid, call, kind in zip(calls["trajectory_id"], calls["call"], calls["kind"], strict=True):
        if tid != current:
            current, seen, found = tid, set(), set()
        docs = lists.get((tid, call), [])
        wanted = relevant.get(str(tid), set())
        hits = [d for d in docs if d in wanted]
        if kind != "retrieval":
            recall = len(found) / len(wanted) if wanted else 0.0
            out.append((len(hits), 0, 0, recall, np.nan))
            continue
        new = [d for d in docs if d not in seen]
        new_hits = [d for d in hits if d not in found]
        redundant = 1.0 - len(new) / len(docs) if docs else np.nan
        seen.update(docs)
        found.update(hits)
        recall = len(found) / len(wanted) if wanted else 0.0
        out.append((len(hits), len(new), len(new_hits), recall, redundant))
    return pd.DataFrame(
        out, columns=["relevant", "new_documents", "new_relevant", "evidence_recall", "redundant"]
    )


def _lists_read(calls: pd.DataFrame, documents: pd.DataFrame, lists: str) -> pd.DataFrame:
    """The documents each call is read with: a search's list (:func:`search_lists`), a
    reranker's output."""
    keys = ["trajectory_id", "call"]
    columns = [*keys, "rank", "doc_id"]
    searched = search_lists(calls, documents, lists)[columns]
    reranked = documents[columns].merge(calls.loc[calls["kind"] == "rerank", keys], on=keys)
    return pd.concat([searched, reranked], ignore_index=True)


def _calls_frame(
    a: TrajectoryArrays,
    t: Trajectories,
    qrels: pd.DataFrame,
    rel: int,
    cutoffs: list[int],
    lists: str,
) -> pd.DataFrame:
    """:attr:`TrajectoryResult.calls`."""
    calls = t.calls[t.calls["trajectory_id"].isin(set(a.query_ids))].reset_index(drop=True)
    base = calls[
        [
            "trajectory_id",
            "call",
            "search_call",
            "kind",
            "span_id",
            "trace_id",
            "query",
            "n_documents",
        ]
    ]
    counts = _call_counts(calls, _lists_read(calls, t.documents, lists), _relevant_sets(qrels, rel))
    tokens = calls[["input_tokens", "output_tokens"]].sum(axis=1, min_count=1)
    frame = pd.concat([base, counts], axis=1).assign(
        latency_s=calls["latency_s"].to_numpy(), tokens=tokens.to_numpy()
    )
    searches = (calls["kind"] == "retrieval").to_numpy()
    reranks = ~searches
    for k in cutoffs:
        ndcg = np.full(len(calls), np.nan)
        ndcg[searches] = step_values(a.searches, k)
        ndcg[reranks] = step_values(a.rerank_output, k)
        given = np.full(len(calls), np.nan)
        gain = np.full(len(calls), np.nan)
        gain[reranks] = rerank_gains(a, k)
        given[reranks] = np.where(np.isnan(gain[reranks]), np.nan, ndcg[reranks] - gain[reranks])
        frame[f"nDCG@{k}"] = ndcg
        frame[f"input_nDCG@{k}"] = given
        frame[f"RerankGain@{k}"] = gain
    return frame


def _curve(a: TrajectoryArrays, rel: int, confidence: float, n_resamples: int, seed: int | None):
    """:attr:`TrajectoryResult.curve`."""
    longest = int(a.n_searches.max()) if a.n_queries else 0
    n_rel = a.n_relevant(rel)
    relevant = a.relevant(rel)
    rows = []
    for c in range(1, longest + 1):
        found = (relevant & (a.found_at <= c)).sum(axis=1)
        values = np.divide(found, n_rel, out=np.zeros(a.n_queries), where=n_rel > 0)
        mean, low, high = mean_interval(values, confidence, n_resamples, seed)
        rows.append(
            {
                "search_call": c,
                "value": mean,
                "ci_low": low,
                "ci_high": high,
                "n_queries": a.n_queries,
                "n_searching": int((a.n_searches >= c).sum()),
            }
        )
    return pd.DataFrame(
        rows, columns=["search_call", "value", "ci_low", "ci_high", "n_queries", "n_searching"]
    )


def _one_system(trajectories: Trajectories) -> Trajectories:
    if not isinstance(trajectories, Trajectories):
        raise InputError(
            "expected Trajectories (ragnb.io.trajectories.read_trajectories), got "
            f"{type(trajectories).__name__}"
        )
    systems = trajectories.systems
    if len(systems) > 1:
        raise InputError(
            f"the trajectories hold {len(systems)} systems ({', '.join(systems)}): evaluate "
            "each of trajectories.by_system() and compare them",
            path=trajectories.path,
        )
    return trajectories


def _cutoffs(measures: list[Measure]) -> list[int]:
    ks = {int(m.cutoff) for m in measures if m.family in _PER_CALL and m.cutoff is not None}
    return sorted(ks) or [10]


def evaluate_trajectories(
    trajectories: Trajectories,
    qrels: pd.DataFrame | dict[str, dict[str, int]],
    measures: Iterable[str | Measure] | str | Measure = DEFAULT_TRAJECTORY_MEASURES,
    *,
    rel: int = 1,
    lists: str = "seen",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> TrajectoryResult:
    """Score an agent's search trajectories against per-question qrels.

    Parameters
    ----------
    trajectories : Trajectories
        One system's (:func:`ragnb.io.trajectories.read_trajectories`; several systems: each
        of :meth:`~ragnb.io.trajectories.Trajectories.by_system`).
    qrels : DataFrame or dict
        Per question, keyed by trajectory id: ``query_id``, ``doc_id``, ``relevance``, or
        ``{query_id: {doc_id: grade}}``. Per-turn qrels of a conversation use the ids
        ``<conversation>_<turn>`` (read the traces with ``turn_ids=True``).
    measures : list of str or Measure, default :data:`DEFAULT_TRAJECTORY_MEASURES`
        Trajectory families (:mod:`ragnb.measures.trajectory`) and any other measure, read on
        each trajectory's discovery run.
    rel : int, default 1
        The grade from which a document is evidence in :attr:`TrajectoryResult.calls`,
        ``questions``, ``curve`` and the explanations (each measure has its own ``rel``).
    lists : {"seen", "retrieved"}, default "seen"
        The list each search is read as (:func:`ragnb.measures.trajectory.search_lists`): what
        the agent received (a reranked search: the last reranker's output before the next
        search), or the retrieval span's own list. ``RerankGain`` reads both either way.
    confidence, n_resamples, seed
        Of the curve's bootstrap intervals (:func:`mean_interval`).

    Returns
    -------
    TrajectoryResult
        ``aggregate``, ``per_query`` (for :func:`ragnb.stats.compare`), ``calls``, ``curve``,
        ``questions``, ``by_turn()`` and ``events()``.

    Raises
    ------
    InputError
        Malformed or empty qrels, an unknown measure, several systems, or qrels sharing no
        question with the trajectories (ids written differently: every question would count as
        never searched).

    References
    ----------
    Z. Chen, X. Ma, S. Zhuang et al., "BrowseComp-Plus: A More Fair and Transparent Evaluation
    Benchmark of Deep-Research Agent", ACL 2026 (arXiv:2508.06600): evidence recall over a
    trajectory's searches and the number of search calls.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from ragnb.io.traces import otlp_request
    >>> from ragnb.io.trajectories import genai_retrieval_span, read_trajectories
    >>> spans = [genai_retrieval_span("bm25", [{"id": "d9", "score": 1.0}], span_id="01",
    ...                               trace_id="aa", start_ns=1),
    ...          genai_retrieval_span("bm25 idf", [{"id": "d1", "score": 1.0}], span_id="02",
    ...                               trace_id="aa", start_ns=2)]
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "spans.jsonl"
    >>> _ = p.write_text(json.dumps(otlp_request(spans)) + "\\n")
    >>> res = evaluate_trajectories(read_trajectories(p), {"aa": {"d1": 1, "d2": 1}},
    ...                             ["EvidenceRecall", "EvidenceRecall@1", "CallsToFirstRel"])
    >>> res.aggregate_to_dict()   # d1 of {d1, d2} found by the second call
    {'EvidenceRecall': 0.5, 'EvidenceRecall@1': 0.0, 'CallsToFirstRel': 2.0}
    """
    t = _one_system(trajectories)
    parsed = parse_measures(measures)
    qrels_frame = as_qrels_frame(qrels)
    a = prepare_trajectories(
        qrels_frame, t.calls, t.documents, t.rerank_inputs, t.trajectories, lists=lists
    )
    with_trajectory = set(t.trajectories["trajectory_id"])
    shared = with_trajectory & set(a.query_ids)
    if not shared:
        raise InputError(
            f"the qrels share no question with the {len(with_trajectory)} trajectories of "
            f"{t.path} (qrels ids e.g. {a.query_ids[0]!r}, trajectory ids e.g. "
            f"{sorted(with_trajectory)[0] if with_trajectory else '-'!r}): name the questions "
            "with id_attribute, turn_ids or Trajectories.with_dataset_ids"
        )
    values = np.stack([m.compute(a) for m in parsed]).T.copy()
    values.setflags(write=False)
    found = (a.relevant(rel)).sum(axis=1)
    questions = _question_frame(a, t, rel, found)
    calls = _calls_frame(a, t, qrels_frame, rel, _cutoffs(parsed), lists)
    counts = {
        "queries_in_qrels": a.n_queries,
        "queries_without_trajectory": a.n_queries - len(shared),
        "trajectories_without_qrels": len(with_trajectory - shared),
        "retrieval_calls": int((calls["kind"] == "retrieval").sum()),
        "rerank_calls": int((calls["kind"] == "rerank").sum()),
        "rel": rel,
        "lists": lists,
        "path": t.path,
        "system": t.systems[0],
    }
    return TrajectoryResult(
        measures=tuple(parsed),
        query_ids=a.query_ids,
        values=values,
        aggregate=pd.DataFrame([_summary(m.name, values[:, j]) for j, m in enumerate(parsed)]),
        questions=questions,
        calls=calls,
        curve=_curve(a, rel, confidence, n_resamples, seed),
        counts=counts,
    )
