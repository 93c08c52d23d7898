"""What the name ablations do to retrieval, not only to cosine margins (Dallaire section 4.4).

The margins of :mod:`ragnb.studies.diagnostics.ablations` say how much closer a query sits to its
author's work than to an impostor's; this module asks what that means for a retriever. Each run's
bundles (:func:`ragnb.studies.diagnostics.names.make_bundles`, the same draws as the margins, so a
shared embedding cache embeds nothing new) become one small retrieval task:

* **corpus**: every candidate of every bundle of the run (``5 x rows`` texts: the author's work
  C1, the same work credited to impostors A and B, the author's other work C3, another author's
  work C4), document id ``<bundle_id>:<candidate>``;
* **queries**: each bundle's query ("Which works by <author> on <topic>?"), id ``bundle_id``;
* **relevance** (read from the base bundles, never from ablated texts): grade 2 for a document
  credited to the query's author on the query's topic, 1 for one credited to the author on
  another topic, 0 for every other document of the run. nDCG@K uses the grades as gains;
  RA-nWG@K maps them onto Dallaire's 1-5 scale with ``{2: 5, 1: 4, 0: 1}`` (the
  ``dbpedia-entity`` map of :data:`ragnb.measures.GRADE_MAPS`).

Under each ablation the same queries retrieve among the same documents, rendered with the ablated
texts, by the dense retriever of the embedder (exact cosine search,
:class:`ragnb.retrievers.retrieve.DenseRetriever`); the change of each measure against the base
condition gets a paired bootstrap interval over the queries (:func:`ragnb.stats.paired_bootstrap`).

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, sections 4.2-4.5 (ablations,
   margins and their link to retrieval quality) and 2.4 (RA-nWG@K).
.. [2] B. Efron, R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall, 1993.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.studies.diagnostics.ablations import (
    Ablation,
    ablated_runs,
    changed_bundles,
    fill_draw_doc,
)
from ragnb.studies.diagnostics.names import CANDIDATE_IDS, Bundle, name_key

if TYPE_CHECKING:
    from ragnb.embed import CachedEmbedder

__all__ = ["AblationRetrieval", "GRADE_MAP", "ablation_retrieval", "bundle_task"]

#: The task's grades (0-2) onto Dallaire's 1-5 scale for RA-nWG.
GRADE_MAP: Mapping[int, int] = {2: 5, 1: 4, 0: 1}

_TABLE_COLUMNS = [
    "ablation",
    "measure",
    "base",
    "value",
    "delta",
    "ci_low",
    "ci_high",
    "n_queries",
    "n_changed",
]


@dataclass
class AblationRetrieval:
    """Retrieval quality of one embedder's dense retriever under each ablation.

    Attributes
    ----------
    table : DataFrame
        One row per condition (``"base"`` first, then the ablations) and measure: ``ablation``,
        ``measure`` (``nDCG@K``, ``RA-nWG@K``), ``base`` (mean over the queries without
        ablation), ``value`` (mean with it), ``delta`` (value - base), ``ci_low``, ``ci_high``
        (paired bootstrap interval of ``delta``; NaN on the base row), ``n_queries``,
        ``n_changed`` (bundles whose query or candidates the ablation changed).
    per_query : DataFrame
        ``ablation``, ``query_id``, ``measure``, ``value``.
    """

    table: pd.DataFrame
    per_query: pd.DataFrame


def bundle_task(base: Sequence[Bundle]) -> pd.DataFrame:
    """The graded qrels of one run's retrieval task, from its base bundles.

    Parameters
    ----------
    base : sequence of Bundle
        The run's bundles before any ablation.

    Returns
    -------
    DataFrame
        ``query_id`` (bundle id), ``doc_id`` (``<bundle_id>:<candidate>``), ``relevance``:
        2 when the document is credited to the query's author and its work is on the query's
        topic, 1 for the author on another topic, 0 otherwise; every (query, document) pair
        of the run.
    """
    docs = []
    for b in base:
        topics = (b.topic, b.topic, b.topic, *b.other_topics)
        for cid, name, topic in zip(CANDIDATE_IDS, b.candidate_names, topics, strict=True):
            docs.append((f"{b.bundle_id}:{cid}", name_key(name), topic))
    rows = []
    for q in base:
        author = name_key(q.author)
        for doc_id, doc_author, topic in docs:
            grade = 0 if doc_author != author else (2 if topic == q.topic else 1)
            rows.append((q.bundle_id, doc_id, grade))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def _frames(bundles: Sequence[Bundle]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The corpus (``doc_id``, ``title`` empty, ``text``) and queries of a run's bundles."""
    corpus = pd.DataFrame(
        [
            (f"{b.bundle_id}:{cid}", "", text)
            for b in bundles
            for cid, text in zip(CANDIDATE_IDS, b.candidates, strict=True)
        ],
        columns=["doc_id", "title", "text"],
    )
    queries = pd.DataFrame({"query_id": [b.bundle_id for b in bundles]})
    queries["text"] = [b.query for b in bundles]
    return corpus, queries


@fill_draw_doc
def ablation_retrieval(
    embedder: CachedEmbedder,
    table: pd.DataFrame,
    ablations: Sequence[str | Ablation] | Mapping[str, Ablation] | None = None,
    *,
    runs: int = 15,
    language: str = "en",
    seed: int = 0,
    names: Sequence[str] | None = None,
    jitter: bool = True,
    k: int = 10,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> AblationRetrieval:
    """nDCG@K and RA-nWG@K of the embedder's dense retriever on the author-table queries,
    without and with each ablation, with paired bootstrap intervals of the change.

    Parameters
    ----------
    embedder : CachedEmbedder
        The embedder of :class:`~ragnb.retrievers.retrieve.DenseRetriever` (exact cosine search);
        with the cache :func:`~ragnb.studies.diagnostics.ablation_margins` used, nothing is embedded
        again.
    {{table, ablations}}
    runs : int, default 15
        Runs of bundles (fresh impostors each); each run is its own corpus and the queries of
        every run are pooled (``runs x rows`` queries).
    {{language, seed, names, jitter}}
    k : int, default 10
        Cutoff K of nDCG and RA-nWG. With ``5 x rows <= K`` every document is in the top K and
        RA-nWG@K is 1 for every query.
    n_resamples : int, default 2000
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    AblationRetrieval

    Raises
    ------
    InputError
        On a bad ``runs`` or ``k``, an unknown ablation, or a malformed author table.
    """
    from ragnb.evaluation.evaluate import evaluate
    from ragnb.retrievers.retrieve import DenseRetriever

    check_positive_int(runs, "runs")
    check_positive_int(k, "k")
    measures = [f"nDCG@{k}", f"RA-nWG@{k}"]
    retriever = DenseRetriever(embedder)
    qrels: list[pd.DataFrame] = []
    per_condition: dict[str, list[Bundle]] = {}
    changed: dict[str, int] = {}
    drawn = ablated_runs(
        table, ablations, runs, names=names, language=language, seed=seed, jitter=jitter
    )
    for conditions in drawn:
        base = conditions["base"]
        qrels.append(bundle_task(base))
        for name, bundles in conditions.items():
            per_condition.setdefault(name, []).extend(bundles)
            changed[name] = changed.get(name, 0) + sum(changed_bundles(bundles, base))
    all_qrels = pd.concat(qrels, ignore_index=True)
    per_query = []
    for name, bundles in per_condition.items():
        result = evaluate(
            all_qrels, _own_run_search(retriever, bundles), measures, grade_map=GRADE_MAP
        )
        per_query.append(result.per_query[["query_id", "measure", "value"]].assign(ablation=name))
    pq = pd.concat(per_query, ignore_index=True)[["ablation", "query_id", "measure", "value"]]
    table_ = _impact_rows(pq, measures, changed, n_resamples, confidence, seed)
    return AblationRetrieval(table_, pq)


def _own_run_search(retriever: Any, bundles: Sequence[Bundle]) -> pd.DataFrame:
    """Every query's ranking of its own run's corpus, in one index and one search.

    The corpora of all runs are indexed together and each query ranks every document; the
    documents of other runs are then dropped. A cosine does not depend on the other documents,
    so this is each run's search on its own corpus; the full ranking leaves ties at the cutoff
    to :func:`ragnb.evaluation.evaluate.evaluate` (doc id order), not to the search.
    """
    corpus, queries = _frames(bundles)
    run = retriever.index(corpus).retrieve(queries, k=len(corpus))
    doc_run = {f"{b.bundle_id}:{c}": b.run for b in bundles for c in CANDIDATE_IDS}
    query_run = {b.bundle_id: b.run for b in bundles}
    own = run["doc_id"].map(doc_run).to_numpy() == run["query_id"].map(query_run).to_numpy()
    return run[own].reset_index(drop=True)


def _impact_rows(
    pq: pd.DataFrame,
    measures: list[str],
    changed: dict[str, int],
    n_resamples: int,
    confidence: float,
    seed: int,
) -> pd.DataFrame:
    """:attr:`AblationRetrieval.table` from the per-query values."""
    from ragnb.stats import paired_bootstrap

    nan = float("nan")
    wide = pq.pivot_table(index="query_id", columns=["measure", "ablation"], values="value")
    rows = []
    for name in dict.fromkeys(pq["ablation"]):
        for m in measures:
            a, b = wide[(m, name)], wide[(m, "base")]
            row = {"ablation": name, "measure": m, "n_changed": changed[name]}
            if name == "base":
                mean = float(b.mean())
                interval = {"delta": nan, "ci_low": nan, "ci_high": nan}
                n = int(b.notna().sum())
                rows.append({**row, "base": mean, "value": mean, **interval, "n_queries": n})
                continue
            boot = paired_bootstrap(a, b, n_resamples=n_resamples, confidence=confidence, seed=seed)
            rows.append(
                {
                    **row,
                    "base": boot.mean_b,
                    "value": boot.mean_a,
                    "delta": boot.difference,
                    "ci_low": boot.low,
                    "ci_high": boot.high,
                    "n_queries": boot.n_queries,
                }
            )
    return pd.DataFrame(rows)[_TABLE_COLUMNS]
