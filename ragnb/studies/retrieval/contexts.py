"""Notebook 01's context measures: each retriever's top K as RAG samples against the qrels.

On a BEIR dataset the reference contexts of a query are its relevant documents (grade >= ``rel``
in the qrels): ID-based context precision and recall compare document ids
(:func:`ragnb.context.id_based_context_scores`), the non-LLM ones compare texts by string
similarity (:func:`ragnb.context.non_llm_context_scores`), the document text being
``title + " " + text`` as indexed. Retrieved documents that are relevant have similarity 1 to
themselves, so the non-LLM measures are at least the ID-based ones; they are higher where a
retrieved document is a near-copy of a relevant one (ragas' premise for reference chunks that
do not share the retriever's ids).

The normalised Levenshtein similarity is computed with rapidfuzz (the library ragas'
``NonLLMStringSimilarity`` uses), which returns the values of
:func:`ragnb.context.levenshtein_similarity` a hundred times faster on 1,500-character abstracts.

References
----------
.. [1] "RAG Evaluation Part 1: Retriever Evaluation": non-LLM relevance ``max_c sim(r_i, c) >=
   tau`` and non-LLM context recall; Context Precision@K.
.. [2] S. Es et al., "Ragas", EACL 2024; ``IDBasedContextPrecision``, ``IDBasedContextRecall``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ragnb.context import id_based_context_scores, non_llm_context_scores
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.io.files import BeirDataset
from ragnb.retrievers.retrieve import doc_texts

__all__ = ["CONTEXT_SIMILARITIES", "context_samples", "context_scores", "context_table"]

#: ``context_similarity`` values of notebook 01 (``"none"``: ID-based measures only).
CONTEXT_SIMILARITIES = ("levenshtein", "sequence_matcher", "embedding", "none")

#: The measures of :func:`context_table`, by column of the per-query scores.
_MEASURES = {
    "id_based_context_precision": "ID-based precision",
    "id_based_context_recall": "ID-based recall",
    "non_llm_precision": "non-LLM precision",
    "non_llm_context_precision_with_reference": "non-LLM CP@K",
    "non_llm_context_recall": "non-LLM recall",
}


def _rapidfuzz_levenshtein() -> Callable[[str, str], float] | str:
    """rapidfuzz's normalised Levenshtein similarity, named ``"levenshtein"`` (or the name, for
    ragnb's numpy implementation, when rapidfuzz is missing)."""
    try:
        from rapidfuzz.distance import Levenshtein
    except ModuleNotFoundError:  # pragma: no cover - rapidfuzz is a dependency
        return "levenshtein"

    def levenshtein(a: str, b: str) -> float:
        return float(Levenshtein.normalized_similarity(a, b))

    return levenshtein


def context_samples(
    dataset: BeirDataset, run: pd.DataFrame, k: int, *, rel: int = 1
) -> pd.DataFrame:
    """The run's top ``k`` per query as ragas-style samples, the relevant documents as reference.

    Parameters
    ----------
    dataset : BeirDataset
        Corpus, queries and qrels.
    run : DataFrame
        Run frame (``query_id``, ``doc_id``, ``score``).
    k : int
        Retrieved contexts per query (trec_eval order).
    rel : int, default 1
        Minimum grade of a reference context.

    Returns
    -------
    DataFrame
        One row per query of the qrels with at least one relevant document, sorted by
        ``query_id``: ``query_id``, ``user_input`` (query text), ``retrieved_contexts`` and
        ``retrieved_context_ids`` (lists, rank order; empty when the run lacks the query),
        ``reference_contexts`` and ``reference_context_ids`` (lists, by doc id).
    """
    texts = dict(zip(dataset.corpus["doc_id"].astype(str), doc_texts(dataset.corpus), strict=True))
    qrels = dataset.qrels[dataset.qrels["relevance"] >= rel]
    refs = qrels.groupby(qrels["query_id"].astype(str))["doc_id"].agg(lambda s: sorted(map(str, s)))
    ranked = sort_run(run[["query_id", "doc_id", "score"]], warn=False).run
    top = ranked[ranked["rank"] <= k].groupby("query_id")["doc_id"].agg(list)
    questions = dataset.queries.set_index(dataset.queries["query_id"].astype(str))["text"]
    rows = []
    for qid, ref_ids in refs.items():
        got = [str(d) for d in top.get(qid, [])]
        rows.append(
            {
                "query_id": qid,
                "user_input": str(questions.get(qid, "")),
                "retrieved_contexts": [texts.get(d, "") for d in got],
                "retrieved_context_ids": got,
                "reference_contexts": [texts.get(d, "") for d in ref_ids],
                "reference_context_ids": ref_ids,
            }
        )
    return pd.DataFrame(rows)


def context_scores(
    dataset: BeirDataset,
    runs: Mapping[str, pd.DataFrame],
    k: int,
    *,
    rel: int = 1,
    similarity: str = "levenshtein",
    tau: float = 0.5,
    embedder: Any = None,
) -> pd.DataFrame:
    """Per query and retriever: ID-based and non-LLM context precision and recall at ``k``.

    Parameters
    ----------
    dataset : BeirDataset
    runs : mapping of str to DataFrame
        Run per retriever.
    k : int
        Retrieved contexts per query.
    rel : int, default 1
        Minimum grade of a reference context.
    similarity : {"levenshtein", "sequence_matcher", "embedding", "none"}
        Text similarity of the non-LLM measures (``"none"``: ID-based only).
    tau : float, default 0.5
        A retrieved text is relevant when its best similarity to a reference is >= ``tau``.
    embedder : CachedEmbedder, optional
        For ``"embedding"``.

    Returns
    -------
    DataFrame
        ``retriever``, ``query_id``, ``k``, then the score columns of
        :func:`ragnb.context.id_based_context_scores` and (unless ``"none"``)
        :func:`ragnb.context.non_llm_context_scores`; NaN where undefined (nothing retrieved).
        Each retriever's samples are scored in one call, so a (retrieved, reference) pair is
        compared once per retriever.

    Raises
    ------
    InputError
        On an unknown similarity, or ``"embedding"`` without an embedder.
    """
    if similarity not in CONTEXT_SIMILARITIES:
        raise InputError(
            f"context_similarity must be one of {list(CONTEXT_SIMILARITIES)}, got {similarity!r}",
            column="context_similarity",
        )
    sim: Any = _rapidfuzz_levenshtein() if similarity == "levenshtein" else similarity
    parts = []
    for name, run in runs.items():
        samples = context_samples(dataset, run, k, rel=rel)
        if samples.empty:
            continue
        ids = id_based_context_scores(samples, k)
        out = pd.DataFrame({"retriever": name, "query_id": samples["query_id"], "k": k})
        out = out.join(ids.drop(columns=["sample", "user_input"], errors="ignore"))
        if similarity != "none":
            text = non_llm_context_scores(samples, k, similarity=sim, tau=tau, embedder=embedder)
            text = text.rename(columns={"precision": "non_llm_precision"})
            keep = ["n_relevant", "n_recalled", *[c for c in _MEASURES if c in text.columns]]
            out = out.join(text[keep])
        parts.append(out)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def context_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean of each context measure per retriever, with the queries it is defined on.

    Parameters
    ----------
    scores : DataFrame
        :func:`context_scores`.

    Returns
    -------
    DataFrame
        Index ``retriever`` (input order); per measure its mean over the queries where it is
        defined (float in [0, 1]), then ``n_valid`` (queries with a defined precision).
    """
    if scores.empty:
        return pd.DataFrame()
    present = [c for c in _MEASURES if c in scores.columns]
    order = list(dict.fromkeys(scores["retriever"]))
    grouped = scores.groupby("retriever", sort=False)
    table = grouped[present].mean().rename(columns=_MEASURES)
    table["n_valid"] = grouped["id_based_context_precision"].count().astype(np.int64)
    return table.loc[order]
