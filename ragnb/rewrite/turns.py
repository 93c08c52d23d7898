"""Conversational noise turn by turn: how much of each search query of a conversation is noise,
and what it costs the retrieval.

Notebook 03's conversational-noise diagnostic (Dallaire, section 4.4) adds greetings, fillers,
apologies, asides and emoji to clean queries and measures the drop. A conversation's traces hold
real queries instead: here each retrieval call's query text (the span's
``gen_ai.retrieval.query.text`` or ``input.value``) goes through the same rule-based denoiser
(:func:`ragnb.rewrite.denoise_query` with ``rules="trim"``); a query it shortens carries noise.
Per turn position: the share of noisy queries, the share of characters the denoiser strips, with
an embedder the cosine between each query and its denoised form (notebook 03's ``cos_clean``),
and with a trajectory measure its mean on the questions whose first search is noisy and on those
whose first search is clean.

References
----------
E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv:2511.09545, section 4.4 (conversational noise) and Appendix A.4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.core.validation import l2_normalise
from ragnb.errors import InputError
from ragnb.rewrite.rules import denoise_query

if TYPE_CHECKING:
    from ragnb.evaluation.trajectories import TrajectoryResult
    from ragnb.io.trajectories import Trajectories

__all__ = ["noise_by_turn", "query_noise"]


def query_noise(queries: pd.Series, language: str = "en") -> pd.DataFrame:
    """What the denoiser strips from each query.

    Parameters
    ----------
    queries : Series of str
    language : {"en", "fr"}, default "en"

    Returns
    -------
    DataFrame
        Index of ``queries``; ``denoised`` (str), ``noisy`` (bool: the denoiser shortened
        it), ``removed`` (float in [0, 1]: share of the query's characters removed, white
        space collapsed first).

    Examples
    --------
    >>> query_noise(pd.Series(["Hi! Quick question: what is BM25? Thanks!", "what is BM25?"]))
    ...     # doctest: +NORMALIZE_WHITESPACE
            denoised  noisy   removed
    0  what is BM25?   True  0.682927
    1  what is BM25?  False  0.000000
    """
    texts = [" ".join(str(q).split()) for q in queries]
    denoised = [denoise_query(t, language, rules="trim") if t else t for t in texts]
    removed = [1.0 - len(d) / len(t) if t else 0.0 for t, d in zip(texts, denoised, strict=True)]
    return pd.DataFrame(
        {
            "denoised": denoised,
            "noisy": [d != t for t, d in zip(texts, denoised, strict=True)],
            "removed": removed,
        },
        index=queries.index,
    )


def _cosines(embedder: Any, texts: list[str], denoised: list[str]) -> np.ndarray:
    """Cosine of each text with its denoised form, one embedding call."""
    vectors = l2_normalise(embedder.embed(texts + denoised, kind="query"), np.float64)
    n = len(texts)
    return np.einsum("nd,nd->n", vectors[:n], vectors[n:])


def _turn_calls(trajectories: Trajectories, result: TrajectoryResult | None) -> pd.DataFrame:
    """The retrieval calls of the trajectories in a conversation, with their turn (the
    evaluation's, which also reads ``<conversation>_<turn>`` ids, when given)."""
    calls = trajectories.calls[trajectories.calls["kind"] == "retrieval"]
    if result is not None:
        turns = result.questions.set_index("query_id")["turn"]
        calls = calls[calls["trajectory_id"].isin(turns.index)]
        calls = calls.assign(turn=calls["trajectory_id"].map(turns).to_numpy(dtype=np.int64))
    calls = calls[calls["turn"] > 0]
    if calls.empty:
        raise InputError(
            "no retrieval call belongs to a conversation turn: read traces whose spans carry "
            "gen_ai.conversation.id or session.id, or name the questions <conversation>_<turn>",
            path=trajectories.path,
        )
    return calls.reset_index(drop=True)


def _split(result: TrajectoryResult, measure: str, firsts: pd.DataFrame) -> dict[str, Any]:
    """The measure's mean on the questions of one turn whose first search is noisy / clean."""
    j = result.names.index(measure)
    values = pd.Series(result.values[:, j], index=result.query_ids)
    out: dict[str, Any] = {}
    for label, mask in (("clean", ~firsts["noisy"]), ("noisy", firsts["noisy"])):
        v = values.reindex(firsts.loc[mask, "trajectory_id"]).to_numpy(dtype=np.float64)
        v = v[np.isfinite(v)]
        out[f"n_{label}"] = len(v)
        out[f"value_{label}"] = float(v.mean()) if len(v) else np.nan
    out["difference"] = out["value_noisy"] - out["value_clean"]
    return out


def noise_by_turn(
    trajectories: Trajectories,
    result: TrajectoryResult | None = None,
    measure: str | None = None,
    *,
    language: str = "en",
    embedder: Any = None,
) -> pd.DataFrame:
    """Conversational noise in the search queries of each turn position.

    Parameters
    ----------
    trajectories : Trajectories
        Read with conversations (:func:`ragnb.io.trajectories.read_trajectories`): the calls'
        ``turn`` and ``query``.
    result : TrajectoryResult, optional
        Its evaluation: only its questions are read, each at its turn there
        (:attr:`~ragnb.evaluation.trajectories.TrajectoryResult.questions`, which also reads
        ``<conversation>_<turn>`` ids), and with ``measure`` the measure is split by noise.
    measure : str, optional
        A measure of ``result`` (canonical name), e.g. ``"EvidenceRecall"``.
    language : {"en", "fr"}, default "en"
        Of the denoiser's rules.
    embedder : Embedder, optional
        Anything with ``embed(texts, kind="query")``: adds ``cos_denoised``.

    Returns
    -------
    DataFrame
        One row per turn: ``turn``, ``n_questions``, ``n_queries`` (retrieval calls),
        ``noisy_share`` (share of the queries the denoiser shortens), ``removed`` (mean share
        of characters removed); with ``embedder`` ``cos_denoised`` (mean cosine of a query with
        its denoised form, 1 for a clean one); with ``measure`` ``n_clean``, ``value_clean``,
        ``n_noisy``, ``value_noisy`` (the measure's mean over the questions whose first search
        query is clean / noisy, finite values only) and ``difference`` (noisy - clean).

    Raises
    ------
    InputError
        No call in a conversation, a ``measure`` without ``result`` or not in it, a language
        other than ``"en"`` and ``"fr"``.
    """
    if measure is not None and (result is None or measure not in result.names):
        known = [] if result is None else result.names
        raise InputError(f"measure {measure!r} is not among the evaluation's measures {known}")
    calls = _turn_calls(trajectories, result)
    noise = query_noise(calls["query"], language)
    calls = pd.concat([calls, noise], axis=1)
    if embedder is not None:
        calls["cos_denoised"] = _cosines(
            embedder, calls["query"].astype(str).tolist(), noise["denoised"].tolist()
        )
    firsts = calls.drop_duplicates("trajectory_id", keep="first")
    rows = []
    for turn, group in calls.groupby("turn", sort=True):
        row: dict[str, Any] = {
            "turn": int(turn),
            "n_questions": int(group["trajectory_id"].nunique()),
            "n_queries": len(group),
            "noisy_share": float(group["noisy"].mean()),
            "removed": float(group["removed"].mean()),
        }
        if embedder is not None:
            row["cos_denoised"] = float(group["cos_denoised"].mean())
        if measure is not None and result is not None:
            row.update(_split(result, measure, firsts[firsts["turn"] == turn]))
        rows.append(row)
    return pd.DataFrame(rows)
