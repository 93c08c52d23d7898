"""The cache every embedding goes through: :class:`CachedEmbedder` wraps any backend.

Every text is looked up in :class:`ragnb.cache.Cache` under the key (model id, model
parameters, kind, SHA-256 of the text); only the misses go to the backend, in batches, with a
progress bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragnb.cache import Cache, make_key, text_hash
from ragnb.embed.base import Embedder, Kind

__all__ = ["KEY_PARTS", "NAMESPACE", "CachedEmbedder"]

#: Cache namespace of embeddings, and the parts of its keys.
NAMESPACE = "embeddings"
KEY_PARTS = ("model", "params", "kind", "text_sha256")


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
    >>> from ragnb.embed import SentenceTransformerEmbedder
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
