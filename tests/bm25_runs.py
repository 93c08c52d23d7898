"""Deterministic BM25 runs over the shared datasets, for the outside-oracle comparisons.

The runs are built with bm25s (top 100 per query, documents with score 0 dropped, so some
rankings are shorter than 100 and BM25 scores tie). Each run lacks the first judged queries
and holds a few queries without qrels, so both query policies are exercised. Read by
``tests/test_measures_oracle.py`` (against ir_measures and pytrec_eval) and by
``benchmarks/trec_eval_equality.py`` (against trec_eval 10.0's C binary).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from ragnb.io.files import read_beir

#: The shared datasets (``../shared/datasets/<name>``) the oracle comparisons run on.
SHARED_DATASETS = ("scifact", "msmarco-dl-subset", "dbpedia-entity-subset")


@functools.cache
def _built(path: str, n_missing: int, n_extra: int, k: int) -> tuple:
    import bm25s

    ds = read_beir(Path(path))
    judged = ds.judged_queries
    unjudged = ds.queries[~ds.queries["query_id"].isin(set(ds.qrels["query_id"]))]
    queries = pd.concat([judged.iloc[n_missing:], unjudged.iloc[:n_extra]], ignore_index=True)
    texts = (ds.corpus["title"] + " " + ds.corpus["text"]).tolist()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(queries["text"].tolist(), stopwords="en", show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    run = pd.DataFrame(
        {
            "query_id": np.repeat(queries["query_id"].to_numpy(dtype=object), k),
            "doc_id": ds.corpus["doc_id"].to_numpy(dtype=object)[docs.ravel()],
            "score": scores.ravel().astype(np.float64),
        }
    )
    run = run[run["score"] > 0].reset_index(drop=True)
    in_run = set(run["query_id"])
    n_without = len(in_run - set(ds.qrels["query_id"]))
    n_absent = len(set(ds.qrels["query_id"]) - in_run)
    if n_without < 1 or n_absent < n_missing:
        raise ValueError(f"{path}: the BM25 run does not exercise both query policies")
    return ds.qrels, run, (n_absent, n_without)


def bm25_run(
    path: str | Path, *, n_missing: int = 3, n_extra: int = 5, k: int = 100
) -> tuple[pd.DataFrame, pd.DataFrame, tuple[int, int]]:
    """Qrels and a BM25 run over a BEIR folder, built once per process.

    Parameters
    ----------
    path : str or Path
        A BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``).
    n_missing : int, default 3
        Judged queries left out of the run (the first ones of the qrels).
    n_extra : int, default 5
        Queries without qrels added to the run.
    k : int, default 100
        Documents retrieved per query (before the documents of score 0 are dropped).

    Returns
    -------
    qrels : DataFrame
        ``query_id``, ``doc_id``, ``relevance``.
    run : DataFrame
        ``query_id``, ``doc_id``, ``score`` (float64, BM25 with bm25s' defaults k1 = 1.5,
        b = 0.75; Robertson and Zaragoza 2009), in retrieval order.
    counts : (int, int)
        Queries of the qrels absent from the run, run queries without qrels.

    Raises
    ------
    ValueError
        When the run does not exercise both policies (no query without qrels, or fewer than
        ``n_missing`` judged queries absent).
    """
    qrels, run, counts = _built(str(path), n_missing, n_extra, k)
    return qrels.copy(), run.copy(), counts
