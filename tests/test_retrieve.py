"""ragnb.retrievers.retrieve: RRF by hand, BM25 by hand and on SciFact, dense retrieval through the
cache.

The dense tests embed about 150 short passages of the embedded sample ``data/pydocs`` once with
the default MiniLM model into a fresh cache folder; every later retriever on that folder must
make zero model calls (counted at the backend) and return the same run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.embed import make_embedder
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.schema import check_run
from ragnb.io.files import read_beir
from ragnb.retrievers.fusion import fuse, rrf
from ragnb.retrievers.retrieve import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    doc_texts,
    make_retriever,
)

PYDOCS = Path(__file__).resolve().parents[1] / "data" / "pydocs"


def run_frame(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def as_lists(run):
    """``{query_id: [(doc_id, score), ...]}`` in rank order, checking ranks are 1..n."""
    out = {}
    for qid, group in run.groupby("query_id", sort=False):
        assert group["rank"].tolist() == list(range(1, len(group) + 1))
        out[qid] = list(zip(group["doc_id"], group["score"], strict=True))
    return out


def check_ranked_run(run, k, n_queries):
    check_run(run)
    sizes = run.groupby("query_id").size()
    assert len(sizes) == n_queries
    assert (sizes <= k).all()
    for _, group in run.groupby("query_id"):
        assert group["rank"].tolist() == list(range(1, len(group) + 1))
        assert group["score"].is_monotonic_decreasing


# --------------------------------------------------------------------------- rrf

RUN_A = run_frame(
    [
        ("q1", "a", 3.0),  # rank 1
        ("q1", "b", 2.0),  # rank 2
        ("q1", "c", 1.0),  # rank 3
        ("q2", "x", 0.5),  # rank 1
    ]
)
RUN_B = run_frame(
    [
        ("q1", "c", 100.0),  # rank 1
        ("q1", "a", -5.0),  # rank 2; "b" is absent from this run
        ("q2", "y", 7.0),  # rank 1
    ]
)


def test_rrf_hand_computed():
    fused = as_lists(rrf([RUN_A, RUN_B], rrf_k=60))
    # q1: a = 1/(60+1) + 1/(60+2) = 0.0163934 + 0.0161290 = 0.0325225
    #     c = 1/(60+3) + 1/(60+1) = 0.0158730 + 0.0163934 = 0.0322664
    #     b = 1/(60+2)            = 0.0161290  (absent from run B: nothing from it)
    # q2: x = 1/61, y = 1/61: a tie, broken by doc_id descending -> y, x
    assert [d for d, _ in fused["q1"]] == ["a", "c", "b"]
    assert [s for _, s in fused["q1"]] == pytest.approx(
        [1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62], rel=1e-12
    )
    assert fused["q2"] == [("y", 1 / 61), ("x", 1 / 61)]


def test_rrf_ignores_score_scale_only_ranks_matter():
    scaled = RUN_B.assign(score=RUN_B["score"] * 1e6 + 3)  # same order, other scores
    pd.testing.assert_frame_equal(rrf([RUN_A, RUN_B]), rrf([RUN_A, scaled]))


def test_rrf_k_changes_the_order():
    # run 1: A 1, C 2, B 3; run 2: C 1, B 2 (A absent)
    one = run_frame([("q", "A", 3.0), ("q", "C", 2.0), ("q", "B", 1.0)])
    two = run_frame([("q", "C", 2.0), ("q", "B", 1.0)])
    # rrf_k = 0:  A = 1/1 = 1;  B = 1/3 + 1/2 = 0.833;  C = 1/2 + 1/1 = 1.5   -> C, A, B
    zero = as_lists(rrf([one, two], rrf_k=0))["q"]
    assert [d for d, _ in zero] == ["C", "A", "B"]
    assert [s for _, s in zero] == pytest.approx([1.5, 1.0, 1 / 3 + 1 / 2])
    # rrf_k = 60: A = 1/61 = 0.01639;  B = 1/63 + 1/62 = 0.03200;  C = 1/62 + 1/61 = 0.03252
    # -> C, B, A: a large constant favours documents that both runs retrieve
    sixty = as_lists(rrf([one, two], rrf_k=60))["q"]
    assert [d for d, _ in sixty] == ["C", "B", "A"]
    assert [s for _, s in sixty] == pytest.approx([1 / 62 + 1 / 61, 1 / 63 + 1 / 62, 1 / 61])


def test_rrf_k_truncates_per_query():
    fused = rrf([RUN_A, RUN_B], rrf_k=60, k=2)
    assert {q: [d for d, _ in v] for q, v in as_lists(fused).items()} == {
        "q1": ["a", "c"],
        "q2": ["y", "x"],
    }
    one = rrf([RUN_A], k=1)  # a single run keeps its own order
    assert one["doc_id"].tolist() == ["a", "x"]
    assert one["score"].tolist() == [1 / 61, 1 / 61]


def test_rrf_query_in_one_run_only():
    only_a = run_frame([("q3", "z", 1.0)])
    fused = as_lists(rrf([only_a, RUN_B], rrf_k=60))
    assert fused["q3"] == [("z", 1 / 61)]
    assert set(fused) == {"q1", "q2", "q3"}


def test_rrf_validates():
    with pytest.raises(InputError, match="at least one run"):
        rrf([])
    with pytest.raises(InputError, match="rrf_k"):
        rrf([RUN_A], rrf_k=-1)
    with pytest.raises(InputError, match="NaN"):
        rrf([run_frame([("q", "a", float("nan"))])])


# --------------------------------------------------------------------------- BM25 by hand

TINY_CORPUS = pd.DataFrame(
    {
        "doc_id": ["d1", "d2", "d3", "d4"],
        "title": ["", "", "", ""],
        "text": [
            "the cat sat on the mat",
            "dogs bark loudly at night",
            "quantum chromodynamics of quarks and gluons",
            "a recipe for banana bread",
        ],
    }
)
TINY_QUERIES = pd.DataFrame(
    {
        "query_id": ["q-cat", "q-quark", "q-banana", "q-tie"],
        "text": ["cats on mats", "Quarks and gluons", "banana", "cat banana"],
    }
)


def lucene_bm25(tf, df, dl, n_docs=4, avgdl=3.5, k1=1.2, b=0.75):
    """Lucene's BM25 term weight: IDF log(1 + (N - n + 0.5)/(n + 0.5)), tf saturation without
    the (k1 + 1) factor (Lucene >= 8)."""
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


def test_bm25_tiny_corpus_hand_computed():
    # After English stop words and Snowball stemming the documents are
    #   d1 cat sat mat (3)   d2 dog bark loud night (4)   d3 quantum chromodynam quark gluon (4)
    #   d4 recip banana bread (3)                          -> avgdl = 14 / 4 = 3.5
    # every query term occurs once in one document: IDF = ln(1 + 3.5/1.5) = 1.20397
    #   dl 3: tf part = 1 / (1 + 1.2 (0.25 + 0.75 * 3/3.5)) = 0.482759
    #   dl 4: tf part = 1 / (1 + 1.2 (0.25 + 0.75 * 4/3.5)) = 0.429448
    # q-cat    "cats on mats" -> cat, mat in d1: 2 * 1.20397 * 0.482759 = 1.16246
    # q-quark  quark, gluon in d3:               2 * 1.20397 * 0.429448 = 1.03409
    # q-banana banana in d4:                         1.20397 * 0.482759 = 0.58123
    # q-tie    cat (d1) and banana (d4): 0.58123 each, tie -> doc_id descending: d4, d1
    retriever = BM25Retriever().index(TINY_CORPUS)
    run = retriever.retrieve(TINY_QUERIES, k=2)
    check_ranked_run(run, k=2, n_queries=4)
    top = as_lists(run)
    # like Lucene, only documents matching a query term are returned (no score-0 padding)
    assert {q: len(v) for q, v in top.items()} == {
        "q-cat": 1,
        "q-quark": 1,
        "q-banana": 1,
        "q-tie": 2,
    }
    assert top["q-cat"][0][0] == "d1"
    assert top["q-quark"][0][0] == "d3"
    assert top["q-banana"][0][0] == "d4"
    assert [d for d, _ in top["q-tie"]] == ["d4", "d1"]
    one, two = lucene_bm25(1, 1, 3), lucene_bm25(1, 1, 4)
    assert one == pytest.approx(0.482759 * 1.20397, rel=1e-5)
    assert top["q-cat"][0][1] == pytest.approx(2 * one, rel=1e-5)  # bm25s scores in float32
    assert top["q-quark"][0][1] == pytest.approx(2 * two, rel=1e-5)
    assert top["q-banana"][0][1] == pytest.approx(one, rel=1e-5)
    assert [s for _, s in top["q-tie"]] == pytest.approx([one, one], rel=1e-5)


def test_bm25_at_most_k_and_at_most_the_corpus():
    retriever = BM25Retriever().index(TINY_CORPUS)
    run1 = retriever.retrieve(TINY_QUERIES, k=1)
    check_ranked_run(run1, k=1, n_queries=4)
    assert len(run1) == 4
    run10 = retriever.retrieve(TINY_QUERIES, k=10)  # only 5 (query, doc) pairs share a term
    check_ranked_run(run10, k=4, n_queries=4)
    assert len(run10) == 5
    assert (run10["score"] > 0).all()
    assert list(run10.columns) == ["query_id", "doc_id", "score", "rank"]


def test_bm25_title_is_indexed():
    corpus = TINY_CORPUS.assign(title=["", "", "", "Zucchini"])
    run = (
        BM25Retriever()
        .index(corpus)
        .retrieve(pd.DataFrame({"query_id": ["q"], "text": ["zucchini"]}), k=1)
    )
    assert run["doc_id"].tolist() == ["d4"]
    assert doc_texts(corpus)[3] == "Zucchini a recipe for banana bread"
    assert doc_texts(corpus)[0] == "the cat sat on the mat"


def test_bm25_standard_configuration_and_errors():
    assert BM25Retriever().describe() == {
        "retriever": "bm25",
        "kind": "bm25",
        "library": "bm25s",
        "k1": 1.2,
        "b": 0.75,
        "method": "lucene",
        "stemmer": "english",
        "stopwords": "en",
    }
    with pytest.raises(RuntimeError, match="index"):
        BM25Retriever().retrieve(TINY_QUERIES, k=1)


@pytest.mark.parametrize("k", [0, -3, 2.5, "10", None])
def test_invalid_k_raises(k):
    bm25 = BM25Retriever().index(TINY_CORPUS)
    with pytest.raises(InputError, match="positive integer"):
        bm25.retrieve(TINY_QUERIES, k=k)
    hybrid = HybridRetriever(bm25, BM25Retriever(name="other"))
    with pytest.raises(InputError, match="positive integer"):
        hybrid.retrieve(TINY_QUERIES, k=k)
    dense = DenseRetriever(embedder=None)  # k is checked before anything else
    with pytest.raises(InputError, match="positive integer"):
        dense.retrieve(TINY_QUERIES, k=k)


# --------------------------------------------------------------------------- BM25 on SciFact


@pytest.fixture(scope="module")
def scifact_bm25(scifact_path):
    ds = read_beir(scifact_path)
    run = BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, k=100)
    return ds, run


def test_bm25_scifact_matches_beir(scifact_bm25):
    ds, run = scifact_bm25
    check_ranked_run(run, k=100, n_queries=300)
    # a few claims share terms with fewer than 100 abstracts: no score-0 padding
    assert 0.99 * 300 * 100 <= len(run) <= 300 * 100
    assert (run["score"] > 0).all()
    ndcg = evaluate(ds.qrels, run, ["nDCG@10"]).aggregate_to_dict()["nDCG@10"]
    # BEIR (Thakur et al. 2021, table 2) reports 0.665 for Elasticsearch BM25 on SciFact;
    # implementations of the same configuration differ by about a point
    assert 0.655 <= ndcg <= 0.695


# --------------------------------------------------------------------------- dense and hybrid


def pydocs_subset(max_docs=150):
    """Queries of data/pydocs with few judgements, and the passages they judge (<= max_docs)."""
    ds = read_beir(PYDOCS)
    sizes = ds.qrels.groupby("query_id").size().reset_index(name="n")
    docs: set[str] = set()
    chosen = []
    for qid in sizes.sort_values(["n", "query_id"])["query_id"]:
        more = docs | set(ds.qrels.loc[ds.qrels["query_id"] == qid, "doc_id"])
        if len(more) <= max_docs:
            docs, chosen = more, [*chosen, qid]
    corpus = ds.corpus[ds.corpus["doc_id"].isin(docs)].reset_index(drop=True)
    queries = ds.queries[ds.queries["query_id"].isin(chosen)].reset_index(drop=True)
    qrels = ds.qrels[ds.qrels["query_id"].isin(chosen)].reset_index(drop=True)
    return corpus, queries, qrels


@pytest.fixture(scope="module")
def dense_cold(tmp_path_factory):
    """A DenseRetriever on a fresh cache folder, indexed and run once (the only model calls)."""
    cache_dir = tmp_path_factory.mktemp("dense-cache")
    corpus, queries, qrels = pydocs_subset()
    # one query that is exactly a passage's indexed text
    self_text = doc_texts(corpus)[7]
    queries = pd.concat(
        [queries, pd.DataFrame({"query_id": ["q-self"], "text": [self_text]})],
        ignore_index=True,
    )
    retriever = DenseRetriever(make_embedder(cache_dir=cache_dir, progress=False))
    retriever.index(corpus)
    run = retriever.retrieve(queries, k=10)
    return {
        "cache_dir": cache_dir,
        "corpus": corpus,
        "queries": queries,
        "qrels": qrels,
        "retriever": retriever,
        "run": run,
        "self_doc": corpus["doc_id"].iloc[7],
    }


def test_dense_cold_run_embeds_each_text_once(dense_cold):
    corpus, queries = dense_cold["corpus"], dense_cold["queries"]
    assert 100 <= len(corpus) <= 150
    backend = dense_cold["retriever"].embedder.backend
    n_passages = len(set(doc_texts(corpus)))
    n_queries = len(set(queries["text"]))
    assert backend.n_texts == n_passages + n_queries
    # batches of 64 texts, passages and queries embedded separately
    assert backend.n_calls == math.ceil(n_passages / 64) + math.ceil(n_queries / 64)


def test_dense_run_shape_and_self_retrieval(dense_cold):
    run, queries = dense_cold["run"], dense_cold["queries"]
    check_ranked_run(run, k=10, n_queries=len(queries))
    assert len(run) == 10 * len(queries)
    assert (run["score"] <= 1 + 1e-5).all() and (run["score"] >= -1 - 1e-5).all()  # cosines
    doc, score = as_lists(run)["q-self"][0]
    assert doc == dense_cold["self_doc"]
    assert score == pytest.approx(1.0, abs=1e-5)  # cosine of a vector with itself


def test_dense_matches_brute_force_cosine(dense_cold):
    # naive reference: embed again (through the warm cache), full cosine matrix, full sort
    embedder = make_embedder(cache_dir=dense_cold["cache_dir"], progress=False)
    corpus, queries = dense_cold["corpus"], dense_cold["queries"]
    d = embedder.embed(doc_texts(corpus), kind="passage")
    q = embedder.embed(queries["text"].tolist(), kind="query")
    assert embedder.backend.n_calls == 0
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    sims = q @ d.T
    got = as_lists(dense_cold["run"])
    ids = corpus["doc_id"].tolist()
    for i, qid in enumerate(queries["query_id"]):
        # trec_eval order: score descending, ties by doc_id descending
        order = sorted(range(len(ids)), key=lambda j: (sims[i, j], ids[j]), reverse=True)[:10]
        assert [doc for doc, _ in got[qid]] == [ids[j] for j in order]
        assert [s for _, s in got[qid]] == pytest.approx([sims[i, j] for j in order], abs=1e-6)


def test_dense_second_retriever_on_same_cache_makes_zero_model_calls(dense_cold):
    again = DenseRetriever(make_embedder(cache_dir=dense_cold["cache_dir"], progress=False))
    again.index(dense_cold["corpus"])
    run = again.retrieve(dense_cold["queries"], k=10)
    assert again.embedder.backend.n_calls == 0
    assert again.embedder.backend.n_texts == 0
    pd.testing.assert_frame_equal(run, dense_cold["run"])
    hits = again.embedder.describe()["cache_hits"]
    n_texts = len(set(doc_texts(dense_cold["corpus"]))) + len(set(dense_cold["queries"]["text"]))
    assert hits == n_texts


def test_dense_finds_relevant_passages(dense_cold):
    # a sanity floor, not a benchmark: module docstrings vs their own functions' docstrings
    res = evaluate(dense_cold["qrels"], dense_cold["run"], ["P@1"])
    assert res.aggregate_to_dict()["P@1"] >= 0.5


def test_hybrid_is_rrf_of_bm25_and_dense(dense_cold):
    corpus, queries = dense_cold["corpus"], dense_cold["queries"]
    dense = DenseRetriever(make_embedder(cache_dir=dense_cold["cache_dir"], progress=False))
    hybrid = HybridRetriever(BM25Retriever(), dense, rrf_k=60, depth=20).index(corpus)
    run = hybrid.retrieve(queries, k=10)
    check_ranked_run(run, k=10, n_queries=len(queries))
    assert len(run) == 10 * len(queries)
    # naive reference: sum 1/(60 + rank) over the two depth-20 runs, sort, cut at 10
    parts = [
        BM25Retriever().index(corpus).retrieve(queries, k=20),
        dense.retrieve(queries, k=20),
    ]
    fused: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for part in parts:
        for qid, did, rank in zip(part["query_id"], part["doc_id"], part["rank"], strict=True):
            fused[qid][did] += 1 / (60 + rank)
    got = as_lists(run)
    for qid, scores in fused.items():
        want = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        assert [d for d, _ in got[qid]] == [d for d, _ in want[:10]]
        assert [s for _, s in got[qid]] == pytest.approx([s for _, s in want[:10]], rel=1e-12)
    # fusion brings in documents from both sides
    bm25_top = set(parts[0].loc[parts[0]["rank"] <= 10, "doc_id"])
    dense_top = set(parts[1].loc[parts[1]["rank"] <= 10, "doc_id"])
    assert set(run["doc_id"]) - bm25_top and set(run["doc_id"]) - dense_top
    assert dense.embedder.backend.n_calls == 0  # everything came from the cache
    assert hybrid.describe()["fuses"] == ["bm25", "dense"]
    assert hybrid.describe()["kind"] == "hybrid-rrf" and "fusion" not in hybrid.describe()


def test_hybrid_takes_a_fusion_method_and_weights(dense_cold):
    """The hybrid run is ragnb.retrievers.fusion.fuse of the two depth-20 runs (BM25, dense)."""
    corpus, queries = dense_cold["corpus"], dense_cold["queries"]
    embedder = make_embedder(cache_dir=dense_cold["cache_dir"], progress=False)
    dense = DenseRetriever(embedder).index(corpus)
    parts = [BM25Retriever().index(corpus).retrieve(queries, k=20), dense.retrieve(queries, 20)]
    hybrid = HybridRetriever(
        BM25Retriever(), dense, depth=20, fusion="wsum/z-score", fusion_weights=[0.2, 0.8]
    ).index(corpus)
    run = hybrid.retrieve(queries, k=10)
    pd.testing.assert_frame_equal(run, fuse(parts, "wsum/z-score(0.2,0.8)", k=10))
    assert hybrid.describe()["fusion"] == "wsum/z-score(0.2,0.8)"
    assert hybrid.describe()["kind"] == "hybrid-wsum"
    # all the weight on dense: dense's own top 10, in its order
    only_dense = HybridRetriever(BM25Retriever(), dense, depth=20, fusion="wsum(0,1)")
    top = only_dense.index(corpus).retrieve(queries, k=10)
    assert top["doc_id"].tolist() == parts[1].loc[parts[1]["rank"] <= 10, "doc_id"].tolist()
    with pytest.raises(InputError, match="3 weights for 2 runs"):
        make_retriever("hybrid", fusion="wrrf", fusion_weights=[1, 2, 3], cache_dir="")
    with pytest.raises(InputError, match="takes no weights"):
        HybridRetriever(BM25Retriever(), dense, fusion="combsum", fusion_weights=[1, 2])
