"""Embedders against a real local OpenAI-compatible server, the embedding cache, and MiniLM.

The ``openai_server`` fixture (``tests/openai_server.py``) is a real HTTP server on 127.0.0.1;
the ``openai`` client is never mocked. Its vectors are a signed hashed bag of words
(:func:`openai_server.hashed_embedding`), not normalised, so the tests can compute the expected
vectors and check that the embedder normalises them.
"""

from __future__ import annotations

import base64
import math
import time

import numpy as np
import openai
import pytest
from openai_server import Reply, hashed_embedding

from ragnb.core.cache import Cache
from ragnb.embed import CachedEmbedder, OpenAIEmbedder
from ragnb.embed.cached import KEY_PARTS, NAMESPACE
from ragnb.errors import InputError

EMB = "/v1/embeddings"

TEXTS = [
    "the cat sat on the mat",
    "a cat sat on a mat",
    "stock markets fell sharply today",
    "retrieval augmented generation",
    "dense retrieval with embeddings",
    "the mat",
    "cat",
]


def expected(texts, dim):
    vecs = np.stack([hashed_embedding(t, dim) for t in texts])
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def make_backend(server, **kwargs):
    kwargs.setdefault("max_retries", 0)
    return OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="sk-test", **kwargs)


def input_texts(server):
    """Every text the server was asked to embed, in arrival order."""
    out = []
    for body in server.bodies(EMB):
        out.extend([body["input"]] if isinstance(body["input"], str) else body["input"])
    return out


# ----------------------------------------------------------------------------- OpenAIEmbedder


def test_openai_embedder_shape_normalised_and_values(openai_server):
    backend = make_backend(openai_server, dimensions=32)
    vecs = backend.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 32)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(vecs, expected(TEXTS, 32), rtol=1e-6, atol=1e-7)
    # the server's vectors make sense for retrieval: the paraphrase beats the unrelated text
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


def test_openai_embedder_request_shape(openai_server):
    backend = make_backend(openai_server, dimensions=16)
    backend.embed(["one text", "two texts"])
    (request,) = openai_server.requests
    assert request.path == EMB
    assert request.status == 200
    assert request.json["model"] == "test-embed"
    assert request.json["dimensions"] == 16
    assert request.json["input"] == ["one text", "two texts"]
    # openai 3.x asks for base64 by default and decodes it; the server answers little-endian f32
    assert request.json["encoding_format"] == "base64"
    # the key reached the server, but the log holds only its fingerprint
    assert request.headers["authorization"] == "[REDACTED]"
    assert request.api_key_sha256 is not None
    assert "sk-test" not in repr(openai_server.requests)


def test_server_float_and_base64_encodings_agree(openai_server):
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="sk-test", max_retries=0)
    texts = ["hello retrieval world", "x"]
    as_float = client.embeddings.create(
        model="m", input=texts, dimensions=24, encoding_format="float"
    )
    as_b64 = client.embeddings.create(
        model="m", input=texts, dimensions=24, encoding_format="base64"
    )
    decoded = [np.frombuffer(base64.b64decode(d.embedding), dtype="<f4") for d in as_b64.data]
    for f, b, t in zip(as_float.data, decoded, texts, strict=True):
        np.testing.assert_array_equal(np.asarray(f.embedding, dtype=np.float32), b)
        np.testing.assert_array_equal(b, hashed_embedding(t, 24))
    assert as_float.usage.prompt_tokens == 4


def test_openai_embedder_default_dimension_not_sent(openai_server):
    backend = make_backend(openai_server)
    assert backend.embed(["abc"]).shape == (1, openai_server.embedding_dim)
    assert "dimensions" not in openai_server.requests[0].json


@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, 100])
def test_openai_embedder_batches(openai_server, batch_size):
    backend = make_backend(openai_server, batch_size=batch_size, dimensions=8)
    vecs = backend.embed(TEXTS)
    n_batches = math.ceil(len(TEXTS) / batch_size)
    assert openai_server.request_count(EMB) == n_batches
    assert backend.n_calls == n_batches
    assert backend.n_texts == len(TEXTS)
    sizes = [len(b["input"]) for b in openai_server.bodies(EMB)]
    assert all(s <= batch_size for s in sizes) and sum(sizes) == len(TEXTS)
    assert input_texts(openai_server) == TEXTS  # order kept across batches
    np.testing.assert_allclose(vecs, expected(TEXTS, 8), rtol=1e-6, atol=1e-7)


def test_openai_embedder_empty_input_makes_no_request(openai_server):
    backend = make_backend(openai_server)
    assert backend.embed([]).shape[0] == 0
    assert openai_server.request_count() == 0


# ----------------------------------------------------------------------------- faults


def test_429_once_then_success_is_retried_by_the_client(openai_server):
    # Retry-After: 0 is not a positive delay, so the openai 3.x client falls back to its own
    # backoff (about 0.4-0.5 s for the first retry).
    openai_server.embeddings.fail(429, times=1, retry_after=0)
    backend = make_backend(openai_server, max_retries=2, dimensions=16)
    vecs = backend.embed(TEXTS[:3])
    np.testing.assert_allclose(vecs, expected(TEXTS[:3], 16), rtol=1e-6, atol=1e-7)
    statuses = [r.status for r in openai_server.requests]
    assert statuses == [429, 200]
    assert openai_server.requests[1].headers["x-stainless-retry-count"] == "1"
    assert backend.n_calls == 1  # one batch; the retry is the client's, inside that call
    assert openai_server.embeddings.pending == 0


def test_500_beyond_max_retries_raises_internal_server_error(openai_server):
    # Every attempt fails: 1 + max_retries requests, then the client raises
    # openai.InternalServerError (an openai.APIStatusError with status_code 500).
    # retry-after-ms keeps the retries fast.
    openai_server.embeddings.fail(500, times=10, retry_after_ms=1)
    backend = make_backend(openai_server, max_retries=2)
    with pytest.raises(openai.InternalServerError) as info:
        backend.embed(["a text"])
    assert info.value.status_code == 500
    assert openai_server.request_count(EMB) == 3
    assert openai_server.embeddings.pending == 7


def test_503_then_success(openai_server):
    openai_server.embeddings.fail(503, times=2, retry_after_ms=1)
    backend = make_backend(openai_server, max_retries=2)
    assert backend.embed(["a text"]).shape == (1, openai_server.embedding_dim)
    assert [r.status for r in openai_server.requests] == [503, 503, 200]


def test_429_without_retries_raises_rate_limit_error(openai_server):
    openai_server.embeddings.fail(429, retry_after_ms=1)
    with pytest.raises(openai.RateLimitError):
        make_backend(openai_server, max_retries=0).embed(["a text"])


def test_slow_answer_times_out(openai_server):
    # A delayed answer past the client's timeout: openai.APITimeoutError after 1 + max_retries
    # attempts (here none).
    openai_server.embeddings.push(Reply(delay=2.0))
    backend = make_backend(openai_server, timeout=0.2)
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        backend.embed(["a text"])
    assert time.monotonic() - start < 1.5


def test_server_latency_is_added(openai_server):
    openai_server.embeddings.latency = 0.2
    start = time.monotonic()
    make_backend(openai_server).embed(["a text"])
    assert time.monotonic() - start >= 0.2


# ----------------------------------------------------------------------------- CachedEmbedder


def test_cached_embedder_second_run_makes_zero_calls(openai_server, tmp_path):
    texts = [*TEXTS, TEXTS[0], TEXTS[3], TEXTS[0]]  # duplicates
    unique = list(dict.fromkeys(texts))

    first_backend = make_backend(openai_server, dimensions=16, batch_size=3)
    with Cache(tmp_path) as cache:
        first = CachedEmbedder(first_backend, cache, progress=False).embed(texts)
        assert first.shape == (len(texts), 16)
        np.testing.assert_allclose(first, expected(texts, 16), rtol=1e-6, atol=1e-7)
        # duplicates are sent once
        assert first_backend.n_texts == len(unique)
        assert first_backend.n_calls == math.ceil(len(unique) / 3)
        assert sorted(input_texts(openai_server)) == sorted(unique)
        assert openai_server.request_count(EMB) == first_backend.n_calls
        assert cache.stats[NAMESPACE]["misses"] == len(unique)
        assert cache.stats[NAMESPACE]["hits"] == 0
        assert cache.stats[NAMESPACE]["writes"] == len(unique)
        assert cache.key_schema(NAMESPACE) == sorted(KEY_PARTS)
    requests_after_first = openai_server.request_count()

    second_backend = make_backend(openai_server, dimensions=16, batch_size=3)
    with Cache(tmp_path) as cache:  # a new Cache object on the same directory
        embedder = CachedEmbedder(second_backend, cache, progress=False)
        second = embedder.embed(texts)
        assert second_backend.n_calls == 0
        assert second_backend.n_texts == 0
        assert openai_server.request_count() == requests_after_first
        assert cache.stats[NAMESPACE]["hits"] == len(unique)
        assert cache.stats[NAMESPACE]["misses"] == 0
        assert second.dtype == np.float32
        assert second.tobytes() == first.tobytes()  # bit for bit
        info = embedder.describe()
        assert (info["calls"], info["cache_hits"], info["cache_misses"]) == (0, len(unique), 0)
        assert "sk-test" not in repr(info)


def test_cached_embedder_partial_hits_send_only_misses(openai_server, tmp_path):
    with Cache(tmp_path) as cache:
        emb = CachedEmbedder(make_backend(openai_server), cache, progress=False)
        emb.embed(TEXTS[:4])
        before = openai_server.request_count()
        out = emb.embed(TEXTS)
        sent_later = [t for b in openai_server.bodies(EMB)[before:] for t in b["input"]]
        assert sorted(sent_later) == sorted(TEXTS[4:])
        assert cache.stats[NAMESPACE]["hits"] == 4
        np.testing.assert_allclose(
            out, expected(TEXTS, openai_server.embedding_dim), rtol=1e-6, atol=1e-7
        )


def make_emb(server, spec):
    return OpenAIEmbedder(
        spec["model"],
        base_url=server.base_url,
        api_key="sk-test",
        dimensions=spec["dimensions"],
        normalize=spec["normalize"],
        max_retries=0,
    )


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other-embed"},
        {"dimensions": 32},
        {"normalize": False},
        {"kind": "query"},
    ],
    ids=lambda c: next(iter(c)),
)
def test_cache_key_depends_on_model_params_and_kind(openai_server, tmp_path, change):
    base = {"model": "test-embed", "dimensions": 16, "normalize": True, "kind": "passage"}
    texts = TEXTS[:3]
    with Cache(tmp_path) as cache:
        CachedEmbedder(make_emb(openai_server, base), cache, progress=False).embed(
            texts, kind=base["kind"]
        )
        again = make_emb(openai_server, base)
        CachedEmbedder(again, cache, progress=False).embed(texts, kind=base["kind"])
        assert again.n_calls == 0  # unchanged: all hits

        changed = {**base, **change}
        backend = make_emb(openai_server, changed)
        CachedEmbedder(backend, cache, progress=False).embed(texts, kind=changed["kind"])
        assert backend.n_texts == len(texts)  # any change: all misses
        assert openai_server.bodies(EMB)[-1]["model"] == changed["model"]


def test_cached_embedder_fault_stores_nothing_then_recovers(openai_server, tmp_path):
    openai_server.embeddings.fail(500, retry_after_ms=1)
    with Cache(tmp_path) as cache:
        emb = CachedEmbedder(make_backend(openai_server), cache, progress=False)
        with pytest.raises(openai.InternalServerError):
            emb.embed(TEXTS[:2])
        assert len(cache) == 0
        assert emb.embed(TEXTS[:2]).shape == (2, openai_server.embedding_dim)
        assert len(cache) == 2


def test_cached_embedder_empty(openai_server, tmp_path):
    with Cache(tmp_path) as cache:
        emb = CachedEmbedder(make_backend(openai_server), cache, progress=False)
        assert emb.embed([]).shape[0] == 0
    assert openai_server.request_count() == 0


# ----------------------------------------------------------------------------- MiniLM, offline


def test_sentence_transformer_default_model_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from ragnb.embed import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    assert emb.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    vecs = emb.embed(["a cat sits on the mat", "a kitten is sitting on a rug", "bond yields rose"])
    assert vecs.shape == (3, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2]
    assert sims[0, 1] > sims[1, 2]
    assert emb.n_calls == 1
    assert emb.describe()["dim"] == 384


def test_memo_returns_the_cache_vectors_and_stays_within_its_bytes(openai_server, tmp_path):
    texts = ["alpha", "beta", "gamma", "delta", "beta"]
    with Cache(tmp_path) as cache:
        plain = CachedEmbedder(make_backend(openai_server, dimensions=16), cache, progress=False)
        reference = plain.embed(texts)
        # room for two 16-dimension float32 vectors (64 bytes each)
        memo = CachedEmbedder(
            make_backend(openai_server, dimensions=16), cache, progress=False, memo_bytes=128
        )
        hits_before = cache.stats[NAMESPACE]["hits"]
        first = memo.embed(texts)
        assert first.tobytes() == reference.tobytes()
        assert cache.stats[NAMESPACE]["hits"] - hits_before == 4  # unique texts, from the file
        again = memo.embed(["delta", "gamma", "alpha"])
        assert again.tobytes() == reference[[3, 2, 0]].tobytes()
        # the memo kept the two most recent (gamma, delta); alpha came from the file again
        assert memo.memo_hits == 2
        assert cache.stats[NAMESPACE]["hits"] - hits_before == 5
        assert len(memo._memo) == 2 and memo._memo_size <= 128
        assert memo.describe()["memo_hits"] == 2
        assert memo.backend.n_calls == 0  # everything was in the cache already
    with pytest.raises(InputError, match="memo_bytes"):
        CachedEmbedder(make_backend(openai_server), Cache(tmp_path), memo_bytes=-1)


def test_memo_shared_by_threads_returns_the_right_vectors(openai_server, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"text {i}" for i in range(40)]
    with Cache(tmp_path) as cache:
        reference = dict(
            zip(
                texts,
                CachedEmbedder(
                    make_backend(openai_server, dimensions=8), cache, progress=False
                ).embed(texts),
                strict=True,
            )
        )
        # room for 10 of the 40 vectors: look-ups, reorders and evictions interleave
        memo = CachedEmbedder(
            make_backend(openai_server, dimensions=8), cache, progress=False, memo_bytes=320
        )

        def work(seed: int) -> bool:
            rng = np.random.default_rng(seed)
            for _ in range(60):
                chosen = [texts[j] for j in rng.integers(0, len(texts), 7)]
                got = memo.embed(chosen)
                if not all(
                    np.array_equal(g, reference[t]) for g, t in zip(got, chosen, strict=True)
                ):
                    return False
            return True

        with ThreadPoolExecutor(4) as pool:
            assert all(pool.map(work, range(4)))
        assert memo.memo_hits > 0 and memo.backend.n_calls == 0
        assert len(memo._memo) <= 10
