"""Rerankers that run on this machine: a second embedder's cosine, a cross-encoder."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ragnb.core.lazylibs import require
from ragnb.core.validation import check_positive_int, l2_normalise
from ragnb.errors import InputError
from ragnb.rerank.base import CandidateGroup, Reranker

if TYPE_CHECKING:
    from ragnb.embed import CachedEmbedder, Embedder

__all__ = ["CrossEncoderReranker", "EmbedderRescorer"]


class EmbedderRescorer(Reranker):
    """Rescore candidates by cosine similarity under a second embedder.

    Parameters
    ----------
    embedder : CachedEmbedder or Embedder
        Queries are embedded with ``kind="query"``, passages with ``kind="passage"``; a
        :class:`~ragnb.embed.CachedEmbedder` (what :func:`ragnb.embed.make_embedder` returns)
        serves repeated texts from the cache. Vectors are L2-normalised here.

    Notes
    -----
    :meth:`rerank_run` embeds every distinct query and passage text of the run once, in two
    batched calls. Scores are cosines in [-1, 1].
    """

    def __init__(self, embedder: CachedEmbedder | Embedder) -> None:
        super().__init__()
        if not hasattr(embedder, "embed") or not hasattr(embedder, "model_id"):
            raise InputError(f"embedder must be a ragnb embedder, got {type(embedder).__name__}")
        self.embedder = embedder
        self.name = f"rescore:{embedder.model_id}"

    def _score_groups(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        qtexts = list(dict.fromkeys(g.query for g in groups))
        ptexts = list(dict.fromkeys(t for g in groups for t in g.texts))
        q = l2_normalise(self.embedder.embed(qtexts, kind="query"), np.float64)
        p = l2_normalise(self.embedder.embed(ptexts, kind="passage"), np.float64)
        qi = {t: i for i, t in enumerate(qtexts)}
        pi = {t: i for i, t in enumerate(ptexts)}
        self._add(calls=2)
        return [p[[pi[t] for t in g.texts]] @ q[qi[g.query]] for g in groups]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "rescore",
            "model": self.embedder.model_id,
            "params": {"embedder": self.embedder.describe()},
        }


class CrossEncoderReranker(Reranker):
    """A sentence-transformers ``CrossEncoder`` scores each (query, passage) pair.

    Parameters
    ----------
    model_name_or_path : str
        A local folder or a model name (loaded offline when ``HF_HUB_OFFLINE=1``: the weights
        must already be on disk; ragnb never downloads them).
    batch_size : int, default 32
        Pairs per forward pass.
    device : str, default "cpu"
    max_length : int, optional
        Truncation length of a pair in word pieces; default the model's.
    **kwargs
        Passed to ``sentence_transformers.CrossEncoder`` (e.g. ``local_files_only=True``).

    Notes
    -----
    The model loads at the first call (sentence-transformers and torch are imported then).
    :meth:`rerank_run` sends every pair of the run through one ``predict`` call, in batches of
    ``batch_size``. Scores are the model's (after its activation: a sigmoid for one-label
    models, so in (0, 1)).

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 5.1: cross-encoder reranking of the candidate
       pool (Nogueira and Cho, 2019).
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        batch_size: int = 32,
        device: str = "cpu",
        max_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(model_name_or_path, str | os.PathLike) or not str(model_name_or_path):
            raise InputError(
                f"model_name_or_path must be a path or name, got {model_name_or_path!r}"
            )
        batch_size = check_positive_int(batch_size, "batch_size")
        self.model_name = str(model_name_or_path)
        self.batch_size = batch_size
        self.device = device
        self.max_length = max_length
        self.kwargs = dict(kwargs)
        self.name = f"cross-encoder:{self.model_name}"
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            CrossEncoder = require("sentence_transformers").CrossEncoder

            kw = dict(self.kwargs)
            if self.max_length is not None:
                kw["max_length"] = self.max_length
            self._model = CrossEncoder(self.model_name, device=self.device, **kw)
        return self._model

    def _score_groups(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        pairs = [(g.query, t) for g in groups for t in g.texts]
        if not pairs:
            return [np.zeros(0) for _ in groups]
        model = self._load()
        raw = model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        scores = np.asarray(raw, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.shape != (len(pairs),):
            raise InputError(
                f"{self.model_name} gives {scores.shape[1:]} scores per pair; a reranker needs "
                "a one-label cross-encoder"
            )
        self._add(calls=math.ceil(len(pairs) / self.batch_size))
        out = []
        start = 0
        for g in groups:
            out.append(scores[start : start + len(g.texts)])
            start += len(g.texts)
        return out

    def describe(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "batch_size": self.batch_size,
            "device": self.device,
            "max_length": self.max_length,
        }
        if self._model is not None:
            params["max_length"] = getattr(self._model, "max_seq_length", self.max_length)
        return {
            "name": self.name,
            "kind": "cross-encoder",
            "model": self.model_name,
            "params": params,
        }
