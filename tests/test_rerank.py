"""Rerankers (ragnb.rerank): identity, embedder rescoring, a tiny random cross-encoder, a hosted
reranker and an LLM listwise reranker against the real local server, near-duplicate suppression.

The ``openai_server`` fixture is a real HTTP server on 127.0.0.1 (tests/openai_server.py): its
``/v1/rerank`` route scores by word overlap, its chat route answers what a test scripts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer, error, malformed, rerank_answer, rerank_score

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.judge import OpenAIJudge
from ragnb.llm.ledger import Ledger, PriceTable
from ragnb.rerank import (
    CrossEncoderReranker,
    EmbedderRescorer,
    HTTPReranker,
    LLMListwiseReranker,
    NoReranker,
    RerankError,
    make_reranker,
    sliding_windows,
    suppress_near_duplicates,
)

RERANK = "/v1/rerank"
CHAT = "/v1/chat/completions"
KEY = "sk-rerank-secret-123"

PASSAGES = {
    "d0": "sorted returns a new sorted list from the items of an iterable",
    "d1": "open a file and read its text",
    "d2": "the list sort method sorts the list in place",
    "d3": "dict keys values and items views",
    "d4": "sort a list of tuples by the second item with a key function",
    "d5": "string methods split and join",
    "d6": "reverse a list in place or with slicing",
    "d7": "write bytes to a binary file",
    "d8": "heapq merges sorted inputs",
    "d9": "the bisect module keeps a list sorted",
}
QUERIES = {"q1": "how to sort a list", "q2": "read a file", "q3": "not in the run"}


def first_stage() -> pd.DataFrame:
    """A run whose first-stage order is d0..d9 for q1 and d9..d0 for q2."""
    ids = list(PASSAGES)
    rows = [("q1", d, 10.0 - i) for i, d in enumerate(ids)]
    rows += [("q2", d, float(i)) for i, d in enumerate(ids)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def queries_frame() -> pd.DataFrame:
    return pd.DataFrame({"query_id": list(QUERIES), "text": list(QUERIES.values())})


# ----------------------------------------------------------------------------- identity


def test_no_reranker_keeps_first_stage_order_and_scores():
    rr = NoReranker()
    cands = [(d, t) for d, t in PASSAGES.items()][:4]
    assert rr.rerank("q", cands, scores=[4.0, 3.0, 2.0, 1.0]) == [
        ("d0", 4.0),
        ("d1", 3.0),
        ("d2", 2.0),
        ("d3", 1.0),
    ]
    assert rr.rerank("q", cands, top_n=2) == [("d0", 4.0), ("d1", 3.0)]  # n, n-1, ...
    run = first_stage()
    out = rr.rerank_run(queries_frame(), run, None, top_n=3)
    expected = sort_run(run).run.groupby("query_id").head(3).reset_index(drop=True)
    pd.testing.assert_frame_equal(out.reset_index(drop=True), expected)
    assert set(out["query_id"]) == {"q1", "q2"}  # q3 is not in the run: no rows
    assert out.attrs["reranker"] == "none"
    assert rr.usage()["queries"] == 4 and rr.usage()["candidates"] == 4 + 4 + 20
    assert rr.cost_usd() == 0.0


def test_input_errors_name_the_problem():
    rr = NoReranker()
    with pytest.raises(InputError, match="'d1' appears twice"):
        rr.rerank("q", [("d1", "a"), ("d1", "b")])
    with pytest.raises(InputError, match="top_n"):
        rr.rerank("q", [("d1", "a")], top_n=0)
    with pytest.raises(InputError, match="query 'q1'.*no text in queries"):
        rr.rerank_run({"q2": "x"}, first_stage(), None)
    rescorer = EmbedderRescorer(_FakeEmbedder())
    with pytest.raises(InputError, match="query 'q1'.*no text for document 'd0'"):
        rescorer.rerank_run(QUERIES, first_stage(), {"d1": "x"})
    assert rr.rerank("q", []) == []


class _FakeEmbedder:
    """Never called: the texts are checked before any embedding."""

    model_id = "fake"

    def embed(self, texts, kind="passage"):  # pragma: no cover - must not be reached
        raise AssertionError("embedded before validating")


# ----------------------------------------------------------------------------- embedder


def test_embedder_rescorer_gives_the_cosine_order(tmp_path):
    from ragnb.embed import make_embedder

    emb = make_embedder("wordllama", cache=Cache(tmp_path), progress=False)
    rr = EmbedderRescorer(emb)
    assert rr.name == f"rescore:{emb.model_id}"
    cands = list(PASSAGES.items())
    got = rr.rerank(QUERIES["q1"], cands)
    q = emb.embed([QUERIES["q1"]], kind="query")[0].astype(np.float64)
    p = emb.embed(list(PASSAGES.values()), kind="passage").astype(np.float64)
    cos = p @ q / np.linalg.norm(p, axis=1) / np.linalg.norm(q)
    expected = [list(PASSAGES)[i] for i in np.argsort(-cos, kind="stable")]
    assert [d for d, _ in got] == expected
    np.testing.assert_allclose([s for _, s in got], np.sort(cos)[::-1], rtol=1e-5)
    assert got[0][0] in ("d0", "d2", "d4", "d6", "d9")  # a passage about lists, not files
    # the run form agrees with the per-query form, and embeds in two batched calls
    out = rr.rerank_run(queries_frame(), first_stage(), PASSAGES, top_n=5)
    assert out["doc_id"][out["query_id"] == "q1"].tolist() == expected[:5]
    q2 = rr.rerank(QUERIES["q2"], cands[::-1], top_n=5)
    assert out["doc_id"][out["query_id"] == "q2"].tolist() == [d for d, _ in q2]
    assert rr.describe()["model"] == emb.model_id


# ----------------------------------------------------------------------------- cross-encoder


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A randomly initialised one-layer BERT cross-encoder with a 40-word vocabulary."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-ce")
    words = sorted({w for t in [*PASSAGES.values(), *QUERIES.values()] for w in t.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)})
    assert "[UNK]" not in tokenizer.tokenize(PASSAGES["d1"])
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.2,  # spread the random scores
    )
    BertForSequenceClassification(config).save_pretrained(path / "model")
    tokenizer.save_pretrained(path / "model")
    return str(path / "model")


def test_cross_encoder_scores_are_the_models_predictions(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    rr = CrossEncoderReranker(tiny_cross_encoder, batch_size=4)
    assert rr.name == f"cross-encoder:{tiny_cross_encoder}"
    cands = list(PASSAGES.items())
    got = rr.rerank(QUERIES["q1"], cands, top_n=6)
    ref = CrossEncoder(tiny_cross_encoder, device="cpu").predict(
        [(QUERIES["q1"], t) for t in PASSAGES.values()], show_progress_bar=False
    )
    assert len(set(np.round(ref, 6))) == len(ref)  # distinct scores: the order is determined
    order = np.argsort(-ref, kind="stable")[:6]
    assert [d for d, _ in got] == [cands[i][0] for i in order]
    np.testing.assert_allclose([s for _, s in got], ref[order], rtol=1e-5)
    assert rr.usage()["calls"] == 3  # 10 pairs in batches of 4
    out = rr.rerank_run(queries_frame(), first_stage(), PASSAGES)
    assert out["doc_id"][out["query_id"] == "q1"].tolist() == [
        cands[i][0] for i in np.argsort(-ref)
    ]
    assert len(out) == 20 and rr.usage()["calls"] == 3 + 5  # 20 pairs in one predict


# ----------------------------------------------------------------------------- hosted reranker


def http_reranker(server, tmp_path, **kwargs) -> HTTPReranker:
    kwargs.setdefault("cache", Cache(tmp_path / "cache"))
    kwargs.setdefault("backoff_base", 0.001)
    return HTTPReranker(kwargs.pop("model", "rerank-2.5"), base_url=server.base_url, **kwargs)


def overlap_order(query: str, ids: list[str]) -> list[str]:
    scores = [rerank_score(query, PASSAGES[d]) for d in ids]
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-scores[i], i))]


def test_http_reranker_order_top_n_key_and_cache(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RERANK_API_KEY", KEY)
    rr = http_reranker(openai_server, tmp_path)
    cands = list(PASSAGES.items())
    got = rr.rerank(QUERIES["q1"], cands, top_n=3)
    assert [d for d, _ in got] == overlap_order(QUERIES["q1"], list(PASSAGES))[:3]
    assert got[0] == ("d4", 0.6)  # "sort", "a", "list": 3 of the query's 5 words
    (req,) = openai_server.requests
    assert req.json["top_n"] == 3 and req.json["model"] == "rerank-2.5"
    assert req.json["documents"] == list(PASSAGES.values())
    assert req.api_key_sha256 == hashlib.sha256(KEY.encode()).hexdigest()
    words = len(QUERIES["q1"].split()) * 10 + sum(len(t.split()) for t in PASSAGES.values())
    assert rr.usage()["input_tokens"] == words and rr.usage()["estimated_tokens"] == 0
    assert rr.cost_usd() == pytest.approx(words * 0.05 / 1e6)
    assert KEY not in json.dumps(rr.describe()) and rr.describe()["api_key_env"] == "RERANK_API_KEY"
    # a second reranker on the same cache sends nothing and reports the same tokens
    again = http_reranker(openai_server, tmp_path)
    assert again.rerank(QUERIES["q1"], cands, top_n=3) == got
    assert openai_server.request_count(RERANK) == 1
    assert again.usage()["cached_calls"] == 1 and again.usage()["input_tokens"] == words
    assert KEY.encode() not in (tmp_path / "cache" / "cache.sqlite").read_bytes()
    # the run form: one request per query, the server's order, trec order per query
    out = again.rerank_run(queries_frame(), first_stage(), PASSAGES, top_n=4)
    assert (
        out["doc_id"][out["query_id"] == "q2"].tolist()
        == overlap_order(QUERIES["q2"], list(PASSAGES)[::-1])[:4]
    )
    assert openai_server.request_count(RERANK) == 3  # q1 at top_n=4 is a new request


def test_http_reranker_voyage_shape_no_key_and_local_cut(openai_server, tmp_path, monkeypatch):
    monkeypatch.delenv("RERANK_API_KEY", raising=False)
    openai_server.rerank.handler = functools.partial(rerank_answer, key="data")
    rr = http_reranker(openai_server, tmp_path, top_n_field=None, cache=False)
    got = rr.rerank(QUERIES["q2"], list(PASSAGES.items()), top_n=2)
    assert [d for d, _ in got] == overlap_order(QUERIES["q2"], list(PASSAGES))[:2]
    (req,) = openai_server.requests
    assert "top_n" not in req.json and req.api_key_sha256 is None  # no key: no header
    assert rr.rerank(QUERIES["q2"], list(PASSAGES.items()), top_n=2) == got
    assert openai_server.request_count(RERANK) == 2  # cache=False: sent again
    # more documents than a request may hold: split into requests of 4, 4 and 2, top_n unsent
    openai_server.reset()
    split = http_reranker(openai_server, tmp_path, max_documents=4, cache=False)
    got = split.rerank(QUERIES["q1"], list(PASSAGES.items()), top_n=3)
    assert [d for d, _ in got] == overlap_order(QUERIES["q1"], list(PASSAGES))[:3]
    bodies = openai_server.bodies(RERANK)
    assert [len(b["documents"]) for b in bodies] == [4, 4, 2]
    assert all("top_n" not in b for b in bodies) and split.usage()["calls"] == 3


def test_http_reranker_retries_429_then_succeeds(openai_server, tmp_path):
    openai_server.rerank.fail(429, times=2, retry_after_ms=1)
    rr = http_reranker(openai_server, tmp_path)
    got = rr.rerank(QUERIES["q1"], list(PASSAGES.items()))
    assert [d for d, _ in got] == overlap_order(QUERIES["q1"], list(PASSAGES))
    assert openai_server.request_count(RERANK) == 3
    assert rr.usage()["http_requests"] == 3 and rr.usage()["calls"] == 1


def test_http_reranker_errors_are_clear(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RERANK_API_KEY", KEY)
    cands = list(PASSAGES.items())
    openai_server.rerank.fail(500, times=10)
    rr = http_reranker(openai_server, tmp_path, max_attempts=3)
    with pytest.raises(
        RerankError, match=r"HTTP 500: scripted error 500 \(request 3 of at most 3\)"
    ):
        rr.rerank(QUERIES["q1"], cands)
    assert openai_server.request_count(RERANK) == 3 and rr.usage()["failures"] == 1
    openai_server.reset()
    openai_server.rerank.push(malformed(), times=3)
    with pytest.raises(RerankError, match="malformed response body") as exc:
        rr.rerank(QUERIES["q1"], cands)
    assert "query 'q'" in str(exc.value) and KEY not in str(exc.value)
    assert openai_server.request_count(RERANK) == 3  # a truncated body is retried
    openai_server.reset()
    openai_server.rerank.push({"object": "list", "items": []})  # JSON, but no results
    with pytest.raises(RerankError, match="not a rerank answer"):
        rr.rerank(QUERIES["q1"], cands)
    openai_server.rerank.push({"results": [{"index": 10, "relevance_score": 1.0}]})
    with pytest.raises(RerankError, match=r"index 10 is not in \[0, 10\)"):
        rr.rerank(QUERIES["q1"], cands)
    openai_server.rerank.push(error(400, "bad model"))
    with pytest.raises(RerankError, match="HTTP 400: bad model"):
        rr.rerank(QUERIES["q1"], cands)
    assert openai_server.request_count(RERANK) == 3  # wrong shapes and a 400 are not retried
    assert (
        not (tmp_path / "cache").exists()
        or KEY.encode() not in (tmp_path / "cache" / "cache.sqlite").read_bytes()
    )


# ----------------------------------------------------------------------------- LLM listwise

LABELLED = re.compile(r"^([A-Z])\. ", re.MULTILINE)


def reverse_window(request):
    """The listwise judge's answer: the window's labels in reverse order."""
    labels = LABELLED.findall(request.json["messages"][-1]["content"])
    return ChatAnswer(json.dumps({"order": labels[::-1]}))


def llm_reranker(server, tmp_path, **kwargs) -> LLMListwiseReranker:
    prices = PriceTable.from_dict({"models": {"judge-test": {"input": 1.0, "output": 4.0}}})
    judge = OpenAIJudge(
        "judge-test",
        base_url=server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(prices=prices),
        progress=False,
    )
    return LLMListwiseReranker(judge, **kwargs)


def candidates(n: int) -> list[tuple[str, str]]:
    return [(f"c{i:02d}", f"candidate number {i}") for i in range(n)]


def test_sliding_windows_cover_the_list_bottom_up():
    assert sliding_windows(50) == [(30, 50), (20, 40), (10, 30), (0, 20)]  # SPEAR: 4 calls
    assert sliding_windows(45) == [(25, 45), (15, 35), (5, 25), (0, 15)]
    assert sliding_windows(20) == [(0, 20)] and sliding_windows(1) == [] == sliding_windows(0)
    assert sliding_windows(7, window=3, overlap=1) == [(4, 7), (2, 5), (0, 3)]
    with pytest.raises(InputError, match="overlap"):
        sliding_windows(10, window=5, overlap=5)


def test_llm_reranker_windows_of_20_overlap_10(openai_server, tmp_path):
    openai_server.chat.handler = reverse_window
    rr = llm_reranker(openai_server, tmp_path)
    got = rr.rerank("which candidate?", candidates(45))
    # the same windows by hand: each reversed, bottom of the list first
    order = list(range(45))
    for s, e in [(25, 45), (15, 35), (5, 25), (0, 15)]:
        order[s:e] = order[s:e][::-1]
    assert [d for d, _ in got] == [f"c{i:02d}" for i in order]
    assert [s for _, s in got] == list(range(45, 0, -1))
    # by hand: the bottom window's reversal lifts c44..c35 to positions 25-34, the next puts
    # them at 15-24 (c35 first), the next at 5-14 (c44 first), the top one at 0-9 (c35 first)
    assert got[:3] == [("c35", 45.0), ("c36", 44.0), ("c37", 43.0)]
    assert openai_server.request_count(CHAT) == 4
    sizes = [
        len(LABELLED.findall(b["messages"][-1]["content"])) for b in openai_server.bodies(CHAT)
    ]
    assert sizes == [20, 20, 20, 15]
    u = rr.usage()
    assert (u["calls"], u["failures"], u["cached_calls"]) == (4, 0, 0)
    assert (
        u["input_tokens"] > 0 and u["output_tokens"] == 3 * 21 + 16
    )  # the server counts words: "order" + labels
    assert rr.cost_usd() == pytest.approx((u["input_tokens"] + 4 * u["output_tokens"]) / 1e6)
    # the run form in lock-step over two queries (first stage: c00 best), from the cache
    run = pd.DataFrame(
        [(q, d, 100.0 - i) for q in ("qa", "qb") for i, (d, _) in enumerate(candidates(45))],
        columns=["query_id", "doc_id", "score"],
    )
    texts = dict(candidates(45))
    again = llm_reranker(openai_server, tmp_path)
    out = again.rerank_run({"qa": "which candidate?", "qb": "another query"}, run, texts, top_n=10)
    assert out["doc_id"][out["query_id"] == "qa"].tolist() == [d for d, _ in got[:10]]
    assert out["doc_id"][out["query_id"] == "qb"].tolist() == [d for d, _ in got[:10]]
    assert again.usage()["calls"] == 8 and again.usage()["cached_calls"] == 4
    assert openai_server.request_count(CHAT) == 8


def test_llm_reranker_keeps_a_window_whose_answer_is_invalid(openai_server, tmp_path):
    def handler(request):
        text = request.json["messages"][1]["content"]
        if "candidate number 44" in text:  # the first (bottom) window
            return ChatAnswer("I think B is best")
        return reverse_window(request)

    openai_server.chat.handler = handler
    rr = llm_reranker(openai_server, tmp_path)
    got = rr.rerank("which candidate?", candidates(45))
    order = list(range(45))
    for s, e in [(15, 35), (5, 25), (0, 15)]:  # the bottom window kept its order
        order[s:e] = order[s:e][::-1]
    assert [d for d, _ in got] == [f"c{i:02d}" for i in order]
    assert rr.usage()["failures"] == 1 and rr.usage()["calls"] == 4
    assert openai_server.request_count(CHAT) == 5  # the invalid answer got one reminder


# ----------------------------------------------------------------------------- near duplicates


def test_suppress_near_duplicates_greedy_against_kept_candidates():
    run = pd.DataFrame(
        {
            "query_id": ["q1"] * 5 + ["q2"] * 2,
            "doc_id": ["a", "b", "c", "d", "e", "a", "b"],
            "score": [5.0, 4.0, 3.0, 2.0, 1.0, 1.0, 2.0],
            "rank": [1, 2, 3, 4, 5, 2, 1],
        }
    )
    angle = np.deg2rad([0.0, 10.0, 20.0, 90.0, 5.0])
    vecs = {d: 3.0 * np.array([np.cos(t), np.sin(t)]) for d, t in zip("abcde", angle, strict=True)}
    # cos(10 deg) = 0.985, cos(20 deg) = 0.940: b repeats a; c is 20 deg from a (kept, since b
    # was dropped); e is 5 deg from a and 15 deg from c
    out = suppress_near_duplicates(run, vecs, threshold=0.97)
    assert out["doc_id"].tolist() == ["a", "c", "d", "b"]  # q2 ranks b above a
    assert out["query_id"].tolist() == ["q1", "q1", "q1", "q2"]
    assert out["rank"].tolist() == [1, 2, 3, 1]  # renumbered in score order
    assert out.attrs["dropped"] == 3
    dropped = {(q, d): (k, round(c, 3)) for q, d, k, c in out.attrs["near_duplicates"]}
    assert dropped[("q1", "b")] == ("a", round(np.cos(np.deg2rad(10)), 3))
    assert dropped[("q1", "e")][0] == "a" and dropped[("q2", "a")][0] == "b"
    # the callable form gives the same result; threshold 1 keeps all but exact repeats
    ids_seen = []

    def lookup(ids):
        ids_seen.append(list(ids))
        return np.vstack([vecs[i] for i in ids])

    assert suppress_near_duplicates(run, lookup, 0.97)["doc_id"].tolist() == out["doc_id"].tolist()
    assert len(ids_seen) == 1 and sorted(ids_seen[0]) == list("abcde")
    assert suppress_near_duplicates(run, vecs, 1.0).attrs["dropped"] == 0
    with pytest.raises(InputError, match="no vector for document 'e'"):
        suppress_near_duplicates(run, {k: v for k, v in vecs.items() if k != "e"})
    with pytest.raises(InputError, match="threshold"):
        suppress_near_duplicates(run, vecs, 1.5)


# ----------------------------------------------------------------------------- the factory


def test_make_reranker_specs(openai_server, tmp_path):
    assert isinstance(make_reranker("none"), NoReranker)
    http = make_reranker("http:rerank-2.5-lite", base_url=openai_server.base_url, cache=False)
    assert isinstance(http, HTTPReranker) and http.describe()["price_usd_per_1m_tokens"] == 0.02
    ce = make_reranker("cross-encoder:/some/path", batch_size=8)
    assert isinstance(ce, CrossEncoderReranker) and ce.describe()["params"]["batch_size"] == 8
    llm = make_reranker("llm:judge-test", base_url=openai_server.base_url, api_key="sk-x")
    assert isinstance(llm, LLMListwiseReranker) and llm.name == "llm:judge-test"
    assert "sk-x" not in json.dumps(llm.describe(), default=str)
    for bad in ("bm25", "rescore:", "magic:x"):
        with pytest.raises(InputError, match="reranker"):
            make_reranker(bad)


def test_doctests():
    import doctest
    import importlib
    import pkgutil

    import ragnb.rerank

    modules = [ragnb.rerank] + [
        importlib.import_module(f"ragnb.rerank.{m.name}")
        for m in pkgutil.iter_modules(ragnb.rerank.__path__)
    ]
    results = [doctest.testmod(m) for m in modules]
    attempted = sum(r.attempted for r in results)
    assert attempted >= 10 and sum(r.failed for r in results) == 0
