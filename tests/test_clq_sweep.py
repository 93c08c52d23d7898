"""CLQ sweep on a small grid over a few hundred pydocs passages: every configuration gets a row
with latency, memory, cost and quality; an interrupted sweep resumes with only the missing
configurations; exact search agrees with brute force; dynamic K escalates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragnb.errors import InputError
from ragnb.io.files import read_beir, read_parquet
from ragnb.studies.clq.grid import SweepGrid
from ragnb.studies.clq.sweep import cap_dataset, run_sweep

PYDOCS = Path(__file__).resolve().parents[1] / "data" / "pydocs"
GRID = dict(
    embedders=["wordllama"],
    dims=[0],
    chunkers=["document", "sentences-120-30"],
    indexes=["flat", "hnsw", "flat-sq8"],
    pool_ks=[50, 100],
    rerankers=["none", "rescore:wordllama"],
    modes=["dense", "bm25"],
    dynamic_k=[{"start": 50, "escalate_to": 100, "margin": 0.05}],
)


class Stop(Exception):
    pass


@pytest.fixture(scope="module")
def small():
    ds = read_beir(PYDOCS)
    ds, note = cap_dataset(ds, max_docs=300, max_queries=15, seed=1)
    assert "15 of 95 judged queries" in note
    return ds


@pytest.fixture(scope="module")
def interrupted(small, tmp_path_factory):
    """A sweep stopped after 5 configurations, then resumed."""
    out = tmp_path_factory.mktemp("sweep")
    cache = str(tmp_path_factory.mktemp("cache"))
    grid = SweepGrid(**GRID)
    seen = []

    def stop_after_five(cfg, row):
        seen.append(cfg.config_id)
        if len(seen) == 5:
            raise Stop

    with pytest.raises(Stop):
        run_sweep(grid, small, out, cache_dir=cache, on_config_done=stop_after_five)
    first = read_parquet(out / "results.parquet")
    resumed = run_sweep(grid, small, out, cache_dir=cache)
    return grid, seen, first, resumed


def test_interrupted_sweep_resumes_with_only_the_missing_configurations(interrupted):
    grid, seen, first, resumed = interrupted
    ids = [c.config_id for c in grid.expand()]
    assert sorted(first["config_id"]) == sorted(seen) and len(seen) == 5
    assert resumed.n_skipped == 5
    assert resumed.n_evaluated == len(ids) - 5
    assert not set(resumed.evaluated_ids) & set(seen)
    assert sorted(resumed.results["config_id"]) == sorted(ids)
    # embeddings and indexes were stored by the first call: the resumed one embedded nothing
    # new and loaded every index it needed
    assert resumed.n_embedded_texts == 0
    assert resumed.n_index_builds == 0


def test_third_run_measures_nothing(interrupted, small):
    grid, _, _, resumed = interrupted
    third = run_sweep(grid, small, resumed.out_dir)
    assert third.n_evaluated == 0 and third.n_index_builds == 0
    assert len(third.results) == len(grid.expand())


def test_rows_carry_latency_memory_cost_and_quality(interrupted):
    r = interrupted[3].results
    assert (r["latency_p95_ms"] >= r["latency_p50_ms"]).all()
    assert (r["latency_p50_ms"] > 0).all()
    dense = r[r["mode"] == "dense"]
    assert (dense["embed_p50_ms"] > 0).all() and (dense["mem_vectors"] > 0).all()
    sq8 = dense[dense["index"] == "flat-sq8"]
    flat = dense[dense["index"] == "flat"]
    # int8 stores one byte per component, float32 four
    assert (sq8["mem_vectors"] * 4 <= flat["mem_vectors"].max() * 1.05).all()
    assert (dense.loc[dense["index"] == "hnsw", "mem_graph"] > 0).all()
    assert (r["cost_local_usd"] > 0).all() and (r["cost_generator_usd"] > 0).all()
    assert np.allclose(r["cost_usd"], r["cost_retrieval_usd"] + r["cost_generator_usd"])
    # no rewriting in this grid: the rewrite stage is zero in the totals
    assert (r["rewriter"] == "").all() and (r["rewrite_p95_ms"] == 0).all()
    assert (r["cost_rewrite_usd"] == 0).all()
    assert r["quality"].between(0, 1).all() and (r["quality"] == r["nDCG@10"]).all()
    # the final run lies inside its pool: actual <= PROC
    assert (r["quality"] <= r["proc"] + 1e-9).all()
    # no reranker: the pool's order is the final order, so K does not change nDCG@10
    fixed = r[(r["reranker"] == "none") & (r["dynamic"] == "")]
    by_k = fixed.pivot_table(index="family", columns="pool_k", values="nDCG@10")
    assert np.allclose(by_k[50], by_k[100])
    # rescoring embeds each query with the second embedder at query time: with wordllama as
    # both, the rerank stage of every query costs at least the dense stage's query embedding
    rescored = dense[(dense["reranker"] == "rescore:wordllama") & (dense["dim"] == 0)]
    assert len(rescored)
    assert (rescored["rerank_p50_ms"] >= rescored["embed_p50_ms"]).all()
    assert (rescored["rerank_p95_ms"] >= rescored["embed_p95_ms"]).all()
    # dynamic K escalates some queries and pools between the fixed sizes
    dyn = r[r["dynamic"] != ""]
    assert len(dyn) and dyn["mean_pool"].between(50, 100).all()
    assert (dyn["escalated"] > 0).any()


def test_recall_curve_and_memory_estimates(interrupted):
    res = interrupted[3]
    rec = res.recall
    hnsw = rec[rec["index"] == "hnsw"]
    assert len(hnsw) and set(hnsw["k"]) == {50, 100}
    # recall grows with efSearch and reaches (near) exact at the widest beam
    for _, g in hnsw.groupby(["index_label", "chunker", "k"]):
        g = g.sort_values("ef_search")
        assert g["recall"].iloc[-1] >= 0.99 and g["recall"].iloc[-1] >= g["recall"].iloc[0]
    est = res.memory[res.memory["source"] == "estimate"]
    assert set(est["n_vectors"]) == {1_000_000, 10_000_000}


@pytest.mark.slow
def test_scifact_evidence_sentences_make_chunk_level_relevance(scifact_path, tmp_path):
    """A whole-document chunk holds every evidence sentence, so its chunk-level scores equal the
    document-level ones; sentence windows are judged by where the evidence is."""
    ds, _ = cap_dataset(read_beir(scifact_path), max_docs=200, max_queries=25, seed=0)
    grid = SweepGrid(
        embedders=["wordllama"],
        dims=[0],
        chunkers=["document", "sentences-60-0"],
        indexes=["flat"],
        pool_ks=[50],
        rerankers=["none"],
        modes=["dense"],
    )
    result = run_sweep(
        grid,
        ds,
        tmp_path / "sweep",
        cache_dir=str(tmp_path / "cache"),
        evidence_dir=str(scifact_path / "raw"),
    )
    rows = result.results.set_index("chunker")
    doc = rows.loc["document"]
    assert doc["evidence_nDCG@10"] == pytest.approx(doc["nDCG@10"], abs=1e-12)
    sent = rows.loc["sentences-60-0"]
    assert 0 < sent["evidence_nDCG@10"] <= 1
    assert sent["evidence_nDCG@10"] != pytest.approx(sent["nDCG@10"], abs=1e-6)
    assert any("Evidence sentences from" in n for n in result.notes)


def test_truncated_dimensions_reuse_the_full_vectors(small, tmp_path):
    """One embedding pass per model: the 32-d vectors are the full ones cut and renormalised,
    exactly what make_embedder(..., dim=32) (TruncatedEmbedder) gives."""
    import warnings

    from ragnb.embed import make_embedder
    from ragnb.studies.clq.chunking import Chunker, chunk_corpus

    grid = SweepGrid(
        embedders=["wordllama"],
        dims=[0, 32],
        chunkers=["document"],
        indexes=["flat"],
        pool_ks=[50],
        rerankers=["none"],
        modes=["dense"],
    )
    cache = str(tmp_path / "cache")
    result = run_sweep(grid, small, tmp_path / "sweep", cache_dir=cache)
    texts = chunk_corpus(small.corpus, Chunker.parse("document"))["text"].astype(str).tolist()
    assert result.n_embedded_texts == len(set(texts)) + small.judged_queries["text"].nunique()
    stored = {v.shape[1]: v for v in map(np.load, (tmp_path / "sweep" / "embeddings").glob("*"))}
    assert set(stored) == {256, 32}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = make_embedder("wordllama", dim=32, cache_dir=str(tmp_path / "c2"), progress=False)
    np.testing.assert_allclose(stored[32], direct.embed(texts, kind="passage"), atol=1e-6)


def test_hybrid_fusion_is_a_grid_axis(small, tmp_path):
    """Each fusion of the axis is one hybrid configuration; RRF keeps the id it had before the
    axis existed; wsum(0,1) (weights BM25, dense) ranks the pool in dense order, so its nDCG@10
    is the dense configuration's."""
    base = dict(
        embedders=["wordllama"],
        chunkers=["document"],
        indexes=["flat"],
        pool_ks=[50],
        rerankers=["none"],
    )
    fusions = ["rrf", "wsum(0,1)", {"method": "combmnz", "norm": "z-score"}, "wrrf(2,1,k=10)"]
    grid = SweepGrid(**base, modes=["dense", "hybrid"], fusions=fusions)
    result = run_sweep(grid, small, tmp_path / "sweep", cache_dir=str(tmp_path / "cache"))
    r = result.results.set_index("fusion")
    assert sorted(r.index) == ["", "", "combmnz/z-score", "wrrf(2,1,k=10)", "wsum(0,1)"]
    hybrid = r[r["mode"] == "hybrid"]
    assert "hybrid wsum(0,1) wordllama" in hybrid.loc["wsum(0,1)", "label"]
    rrf_id = SweepGrid(**base, modes=["hybrid"]).expand()[0].config_id
    assert hybrid.loc[""]["config_id"] == rrf_id
    dense = r[r["mode"] == "dense"].iloc[0]
    assert hybrid.loc["wsum(0,1)", "nDCG@10"] == pytest.approx(dense["nDCG@10"], abs=1e-12)
    assert hybrid["quality"].between(0, 1).all() and hybrid["quality"].nunique() > 1
    with pytest.raises(InputError, match="3 weights for 2 runs"):
        SweepGrid(**base, modes=["hybrid"], fusions=["wsum(1,2,3)"])


def test_http_reranker_is_priced_from_the_tokens_it_used(small, tmp_path, openai_server):
    """A /rerank API in a sweep: the cost per 1,000 queries is the tokens the server counted in
    the timed requests (query + candidate per candidate) times the price table's rate."""
    from openai_server import _n_words

    from ragnb.studies.clq.cost import CostModel, load_prices

    prices, machine = load_prices(None)
    rate = prices.price("rerank-2.5").input_usd_per_1m  # from ragnb/studies/clq/prices.yaml
    grid = SweepGrid(
        embedders=["wordllama"],
        chunkers=["document"],
        pool_ks=[20],
        rerankers=["http:rerank-2.5"],
        modes=["bm25"],
    )
    options = {"http:rerank-2.5": {"base_url": openai_server.base_url, "cache": False}}
    result = run_sweep(
        grid,
        small,
        tmp_path / "sweep",
        cache_dir=str(tmp_path / "cache"),
        reranker_options=options,
        cost=CostModel(prices, machine_usd_per_hour=machine),
        warmup=2,
    )
    row = result.results.iloc[0]
    bodies = [r.json for r in openai_server.requests if r.path == "/v1/rerank"]
    n_q = len(small.judged_queries)
    assert len(bodies) == 2 + n_q  # warm-up, then one request per query
    timed = bodies[2:]
    tokens = [
        _n_words(b["query"]) * len(b["documents"]) + sum(map(_n_words, b["documents"]))
        for b in timed
    ]
    expected = sum(tokens) / n_q * rate / 1e6 * 1000
    assert row["cost_rerank_usd"] == pytest.approx(expected, rel=1e-9)
    assert row["cost_rerank_usd"] > 0 and row["rerank_p50_ms"] > 0
    assert row["cost_usd"] == pytest.approx(row["cost_retrieval_usd"] + row["cost_generator_usd"])


def test_nugget_recall_is_a_sweep_measure_and_can_be_its_quality(small, tmp_path):
    """Nugget files of a run folder (notebook 02's, corrected by hand here) score every
    configuration: query 1's vital nugget is supported by every passage (recall 1), query 2's
    nuggets by a passage outside the corpus (0) and partly by every passage (half credit)."""
    import pandas as pd

    from ragnb.judge.nuggets import NUGGET_FILES, read_nugget_qrels

    q1, q2 = small.judged_queries["query_id"].astype(str).tolist()[:2]
    docs = small.corpus["doc_id"].astype(str).tolist()
    pd.DataFrame(
        {
            "query_id": [q1, q2, q2],
            "nugget_id": ["n1", "n2", "n3"],
            "text": ["a fact", "another", "a third"],
            "importance": ["vital", "okay", "okay"],
        }
    ).to_csv(tmp_path / NUGGET_FILES["nuggets"], index=False)
    rows = [(q1, "n1", d, "support") for d in docs] + [(q2, "n2", "not-in-corpus", "support")]
    rows += [(q2, "n3", d, "partial_support") for d in docs]
    pd.DataFrame(rows, columns=["query_id", "nugget_id", "doc_id", "label"]).to_csv(
        tmp_path / NUGGET_FILES["assignments"], index=False
    )
    qrels = read_nugget_qrels(tmp_path)
    grid = SweepGrid(
        embedders=["wordllama"],
        chunkers=["document"],
        indexes=["flat"],
        pool_ks=[50],
        rerankers=["none"],
        modes=["bm25"],
    )
    result = run_sweep(
        grid,
        small,
        tmp_path / "sweep",
        cache_dir=str(tmp_path / "cache"),
        nugget_qrels=qrels,
        quality="NuggetRecall(partial=0.5)@10",
    )
    row = result.results.iloc[0]
    assert row["NuggetRecall@10"] == pytest.approx((1 + 0) / 2)
    assert row["NuggetRecall(partial=0.5)@10"] == pytest.approx((1 + 0.25) / 2)
    assert row["NuggetRecall(vital=1)@10"] == pytest.approx((1 + 0) / 2)  # q2: no vital nugget
    assert row["quality"] == row["NuggetRecall(partial=0.5)@10"]
    with pytest.raises(InputError, match="NuggetRecall@10"):
        run_sweep(grid, small, tmp_path / "s2", nugget_qrels=qrels, quality="x")
    (tmp_path / NUGGET_FILES["nuggets"]).unlink()
    with pytest.raises(InputError, match="nuggets.csv: not found"):
        read_nugget_qrels(tmp_path)
