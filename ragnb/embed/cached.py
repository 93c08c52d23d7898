"""The cache every embedding goes through: :class:`CachedEmbedder` wraps any backend.

Every text is looked up in :class:`ragnb.core.cache.Cache` under the key (model id, model
parameters, kind, SHA-256 of the text), all in one bulk read; only the misses go to the backend,
in batches, with a progress bar, and their vectors are written in bulk (one transaction per call,
or per ``flush_seconds`` of a long call), so the cache adds next to nothing to the backend's time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragnb.core.cache import Cache
from ragnb.core.validation import check_int_at_least
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
        Default: a :class:`~ragnb.core.cache.Cache` at the default location.
    progress : bool, default True
        Show a tqdm progress bar (on stderr) while the backend embeds misses.
    flush_seconds : float, default 60
        During a long call, write the vectors embedded so far at least this often (seconds), so
        a killed process loses at most about this much work; a call shorter than this writes
        once, at its end.
    memo_bytes : int, default 0
        Keep up to this many bytes of the most recently used vectors in process memory (least
        recently used dropped first), keyed by (kind, text), so a text embedded or looked up
        again skips hashing and the cache file. For callers that embed the same texts call
        after call, such as a reranker rescoring candidates query by query. 0 (the default)
        keeps none. The vectors are the cache's, so results do not change.

    Examples
    --------
    >>> from ragnb.embed import SentenceTransformerEmbedder
    >>> emb = CachedEmbedder(SentenceTransformerEmbedder())  # doctest: +SKIP
    >>> emb.embed(["a text"]).shape  # doctest: +SKIP
    (1, 384)
    """

    def __init__(
        self,
        backend: Embedder,
        cache: Cache | None = None,
        *,
        progress: bool = True,
        flush_seconds: float = 60.0,
        memo_bytes: int = 0,
    ) -> None:
        self.backend = backend
        self.cache = cache if cache is not None else Cache()
        self.progress = progress
        self.flush_seconds = float(flush_seconds)
        self.memo_bytes = check_int_at_least(memo_bytes, "memo_bytes", 0)
        self._memo: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._memo_size = 0
        self.memo_hits = 0
        self.cache.register_schema(NAMESPACE, KEY_PARTS)

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def _key(self, text: str, kind: Kind) -> str:
        """The cache key of one text (see :meth:`_keys`)."""
        return self._keys([text], kind)[0]

    def _keys(self, texts: Sequence[str], kind: Kind) -> list[str]:
        """The cache key of every text: :func:`ragnb.core.cache.make_key` of (model, params, kind,
        :func:`ragnb.core.cache.text_hash` of the text), the JSON of the shared parts made once.

        ``text_sha256`` sorts last among the key parts, so the canonical JSON of ``make_key`` is
        that of the other parts with it appended.
        """
        head = json.dumps(
            {"kind": kind, "model": self.backend.model_id, "params": self.backend.params},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        prefix = (head[:-1] + ',"text_sha256":"').encode("utf-8")
        sha = hashlib.sha256
        return [
            sha(prefix + sha(t.encode("utf-8")).hexdigest().encode("ascii") + b'"}').hexdigest()
            for t in texts
        ]

    def embed(self, texts: Sequence[str], kind: Kind = "passage", desc: str = "") -> np.ndarray:
        """Embed ``texts``, from the cache where possible.

        One bulk look-up of all keys; the misses (each unique text once) go to the backend in
        batches of its ``batch_size``, longest first; their vectors are written in one
        transaction at the end, or every ``flush_seconds`` during a long call, and whatever was
        embedded before a backend error is written before it propagates.

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
        if self.memo_bytes:
            rows = self._memo_rows(texts, kind, desc)
        else:
            rows = self._rows(texts, kind, desc)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        if len({len(r) for r in rows}) != 1:  # vectors of different sizes: let numpy say so
            return np.vstack([np.frombuffer(r, dtype=np.float32) for r in rows])
        return np.frombuffer(b"".join(rows), dtype=np.float32).reshape(len(rows), -1).copy()

    def _memo_rows(self, texts: Sequence[str], kind: Kind, desc: str) -> list[bytes]:
        """:meth:`_rows` through the in-memory memo: the texts it holds skip the cache file, the
        others are looked up (or embedded) in one :meth:`_rows` call and memoised."""
        memo = self._memo
        rows: list[bytes | None] = [None] * len(texts)
        rest: list[int] = []
        for i, text in enumerate(texts):
            row = memo.get((kind, text))
            if row is None:
                rest.append(i)
            else:
                rows[i] = row
                # another thread (the CLQ thread executor shares rerankers) may have dropped it
                with contextlib.suppress(KeyError):
                    memo.move_to_end((kind, text))
        self.memo_hits += len(texts) - len(rest)
        if rest:
            for i, row in zip(rest, self._rows([texts[i] for i in rest], kind, desc), strict=True):
                rows[i] = row
                if (kind, texts[i]) not in memo:
                    memo[(kind, texts[i])] = row
                    self._memo_size += len(row)
            while self._memo_size > self.memo_bytes:
                try:
                    self._memo_size -= len(memo.popitem(last=False)[1])
                except KeyError:  # emptied meanwhile by another thread
                    break
        return rows  # type: ignore[return-value]

    def _rows(self, texts: Sequence[str], kind: Kind, desc: str) -> list[bytes]:
        """The float32 bytes of each text's vector, from the cache or the backend (see
        :meth:`embed`)."""
        from tqdm import tqdm

        keys = self._keys(texts, kind)
        found = self.cache.get_many(NAMESPACE, keys)
        # one backend call per unique missing text
        todo: dict[str, int] = {}
        for i, k in enumerate(keys):
            if k not in found:
                todo.setdefault(k, i)
        # longest first: batches of similar length waste less padding in transformer backends
        order = sorted(todo.items(), key=lambda item: -len(texts[item[1]]))
        bs = self.backend.batch_size
        pending: dict[str, bytes] = {}
        last_write = time.monotonic()
        try:
            with tqdm(
                total=len(order),
                desc=desc or f"embedding {kind}s with {self.backend.model_id}",
                disable=not self.progress or not order,
                unit="text",
            ) as bar:
                for start in range(0, len(order), bs):
                    chunk = order[start : start + bs]
                    vecs = np.asarray(
                        self.backend.embed([texts[i] for _, i in chunk], kind), dtype=np.float32
                    )
                    for j, (k, _) in enumerate(chunk):
                        pending[k] = vecs[j].tobytes()
                    bar.update(len(chunk))
                    if time.monotonic() - last_write >= self.flush_seconds:
                        self._write(pending, found)
                        last_write = time.monotonic()
        finally:
            self._write(pending, found)
        return [found[k] for k in keys]

    def _write(self, pending: dict[str, bytes], found: dict[str, bytes]) -> None:
        """Move ``pending`` into the cache (one transaction) and into ``found``."""
        if pending:
            self.cache.put_many(NAMESPACE, pending)
            found.update(pending)
            pending.clear()

    def describe(self) -> dict[str, Any]:
        info = self.backend.describe()
        stats: dict[str, int] = dict(self.cache.stats.get(NAMESPACE, {}))
        info["cache_hits"] = int(stats.get("hits", 0))
        info["cache_misses"] = int(stats.get("misses", 0))
        if self.memo_bytes:
            info["memo_hits"] = self.memo_hits
        return info
