"""Retrieval impact of the name ablations (Dallaire section 4.4) on a tiny author table."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from test_diagnostics import NAMES, BagOfWordsEmbedder, small_table

from ragnb.core.cache import Cache
from ragnb.embed import CachedEmbedder
from ragnb.errors import InputError
from ragnb.studies.diagnostics import ABLATIONS, make_bundles
from ragnb.studies.diagnostics.retrieval_impact import ablation_retrieval, bundle_task

CHOSEN = ["hard_name_mask", "initials_form", "edit_distance_near_miss"]


def test_task_grades_the_author_works_from_the_base_bundles():
    base = make_bundles(small_table(6), names=NAMES, seed=0, run=0)
    qrels = bundle_task(base).set_index(["query_id", "doc_id"])["relevance"]
    assert len(qrels) == 6 * 30  # every query against every candidate of the run
    for b in base:
        q = b.bundle_id
        assert qrels[(q, f"{q}:C1")] == 2  # the author's work on the topic
        assert qrels[(q, f"{q}:C3")] == 1  # the author on another topic
        assert qrels[(q, f"{q}:C2a")] == 0 and qrels[(q, f"{q}:C2b")] == 0  # impostors


def _ndcg(grades: list[int], ideal: list[int], k: int) -> float:
    disc = 1 / np.log2(np.arange(2, k + 2))
    dcg = sum(g * d for g, d in zip(grades[:k], disc, strict=False))
    return dcg / sum(g * d for g, d in zip(sorted(ideal, reverse=True)[:k], disc, strict=False))


def _ra_nwg(grades: list[int], pool: list[int], k: int) -> float:
    """a = 1, cap4 = 1 on grades 2 (-> 5) and 1 (-> 4); no grade 3 in this task."""
    n5, n4 = pool.count(2), pool.count(1)
    w = {2: 1.0, 1: min(0.5 * n5 / n4, 1.0) if n4 else 0.0, 0: 0.0}
    obs = sum(w[g] for g in grades[:k])
    return obs / sum(sorted((w[g] for g in pool), reverse=True)[:k])


def _direct(emb, table, ablation, runs, k):
    """Per-query nDCG@k and RA-nWG@k by hand: cosine, sort (score desc, doc id desc)."""
    out = {}
    for r in range(runs):
        base = make_bundles(table, names=NAMES, seed=0, run=r)
        bundles = base if ablation == "base" else [ABLATIONS[ablation](b) for b in base]
        bundles = [replace(b, ablation=ablation) for b in bundles]
        doc_ids = [f"{b.bundle_id}:{c}" for b in base for c in ("C1", "C2a", "C2b", "C3", "C4")]
        docs = emb.embed([t for b in bundles for t in b.candidates], kind="passage")
        queries = emb.embed([b.query for b in bundles], kind="query")
        docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        sims = queries @ docs.T
        grades = bundle_task(base).pivot(index="query_id", columns="doc_id", values="relevance")
        for i, b in enumerate(base):
            order = sorted(range(len(doc_ids)), key=lambda j: (-sims[i, j], _neg(doc_ids[j])))
            row = grades.loc[b.bundle_id]
            ranked = [int(row[doc_ids[j]]) for j in order]
            pool = [int(g) for g in row]
            out[b.bundle_id] = (_ndcg(ranked, pool, k), _ra_nwg(ranked, pool, k))
    return out


def _neg(doc_id: str) -> list[int]:
    return [-ord(c) for c in doc_id]  # doc id descending, trec_eval's tie order


def test_impact_equals_a_direct_computation_and_intervals_hold_the_point(tmp_path):
    emb, table, runs, k = BagOfWordsEmbedder(), small_table(6), 2, 5
    cached = CachedEmbedder(emb, Cache(tmp_path), progress=False)
    result = ablation_retrieval(
        cached, table, CHOSEN, runs=runs, names=NAMES, k=k, n_resamples=500, seed=0
    )
    pq = result.per_query.pivot_table(
        index=["ablation", "query_id"], columns="measure", values="value"
    )
    for ablation in ["base", *CHOSEN]:
        for qid, (ndcg, ranwg) in _direct(emb, table, ablation, runs, k).items():
            assert pq.loc[(ablation, qid), f"nDCG@{k}"] == pytest.approx(ndcg, abs=1e-9)
            assert pq.loc[(ablation, qid), f"RA-nWG@{k}"] == pytest.approx(ranwg, abs=1e-9)
    t = result.table
    assert list(dict.fromkeys(t["ablation"])) == ["base", *CHOSEN]
    rows = t[t["ablation"] != "base"]
    assert (rows["ci_low"] <= rows["delta"] + 1e-12).all()
    assert (rows["delta"] <= rows["ci_high"] + 1e-12).all()
    assert (rows["n_queries"] == runs * len(table)).all()
    means = pq.groupby(level=0).mean()
    for _, row in rows.iterrows():
        expected = means.at[row["ablation"], row["measure"]] - means.at["base", row["measure"]]
        assert row["delta"] == pytest.approx(expected, abs=1e-12)
    # one mask for every name: C1, C2a and C2b read the same, the author's work loses rank 1
    mask = rows[(rows["ablation"] == "hard_name_mask") & (rows["measure"] == f"nDCG@{k}")]
    assert float(mask["delta"].iloc[0]) < 0 and int(mask["n_changed"].iloc[0]) == runs * 6


def test_bad_arguments_are_named(tmp_path):
    cached = CachedEmbedder(BagOfWordsEmbedder(), Cache(tmp_path), progress=False)
    with pytest.raises(InputError, match="k must be"):
        ablation_retrieval(cached, small_table(6), names=NAMES, k=0)
    with pytest.raises(InputError, match="unknown ablation"):
        ablation_retrieval(cached, small_table(6), ["nope"], names=NAMES)
    assert isinstance(bundle_task([]), pd.DataFrame)
