"""Embedding a corpus on a Ray cluster, into the project's embedding cache.

:func:`embed_corpus_ray` looks every text up in the cache (:class:`ragnb.core.cache.Cache`, the keys
of :class:`ragnb.embed.CachedEmbedder`), sorts the unique misses longest first, and embeds them
with Ray Data: ``map_batches`` over an actor pool (``ray.data.ActorPoolStrategy``), each actor
holding the model once. The batches are the ones :meth:`CachedEmbedder.embed` would send to
the backend (same order, same size: blocks are cut on batch boundaries), so the vectors are
those of the serial path. The driver writes each block of vectors into the cache in one
transaction; afterwards the corpus reads back from the cache, and any later serial run (or
sweep) on any machine that sees the cache folder finds every vector there.

:func:`connect_ray` joins an existing cluster by address or starts a local one bound to
127.0.0.1 (usage statistics off). Ray is the optional extra ``ragnb[ray]``; it is imported only
here and in :mod:`ragnb.studies.clq.ray_executor`.

References
----------
Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications", OSDI 2018.
Ray Data, ``Dataset.map_batches`` with a callable class and ``compute=ActorPoolStrategy(size=n)``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.cache import make_key, text_hash
from ragnb.core.lazylibs import require
from ragnb.embed.base import Kind
from ragnb.embed.cached import NAMESPACE
from ragnb.errors import InputError

__all__ = ["DistributedEmbedding", "connect_ray", "embed_corpus_ray"]

#: Starts of a local Ray instance before giving up: a raylet waits about 15 s for its agents,
#: which a machine busy with other work can miss.
_LOCAL_TRIES = 2


def connect_ray(address: str = "", **init_options: Any) -> bool:
    """Join a Ray cluster, or start a local one; does nothing when Ray is already initialised.

    Parameters
    ----------
    address : str, default ""
        ``host:port`` of a running cluster's GCS (``ray start --head`` prints it), or ``"auto"``.
        Empty: ``$RAY_ADDRESS`` when set, else a new local single-node cluster listening on
        127.0.0.1 only, without the dashboard (started up to twice: on a loaded machine
        Ray's start-up deadline can pass).
    **init_options :
        More keyword arguments of ``ray.init`` (``num_cpus``, ``object_store_memory``...).

    Returns
    -------
    bool
        True when this call initialised Ray in this process: the caller ``ray.shutdown()``s it
        when done (a local instance stops; a joined cluster keeps running).

    Raises
    ------
    InputError
        When Ray is not installed (``pip install 'ragnb[ray]'``).
    """
    address = address or os.environ.get("RAY_ADDRESS", "")
    # no usage report leaves the machine (read by every Ray process started from here)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if not address and "ray" not in sys.modules:
        # Ray's single-machine mode: every node and agent address is 127.0.0.1 (read once,
        # when ray is imported; its name speaks of Windows and macOS, it works on Linux too)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        ray = require("ray")
    except ImportError as exc:  # pragma: no cover - the extra is installed by `make test`
        raise InputError("executor='ray' needs Ray: pip install 'ragnb[ray]'") from exc
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"log_to_driver": False, **init_options}
    if address:
        ray.init(address=address, **options)
        return True
    options.setdefault("include_dashboard", False)
    for attempt in range(_LOCAL_TRIES):
        try:
            ray.init(address="local", _node_ip_address="127.0.0.1", **options)
            return True
        except Exception as exc:  # Ray's start-up deadline, missed on a loaded machine
            ray.shutdown()
            if "timed out during startup" not in str(exc) or attempt == _LOCAL_TRIES - 1:
                raise
    return True  # pragma: no cover - the loop returns or raises


@dataclass
class DistributedEmbedding:
    """What :func:`embed_corpus_ray` produced.

    Attributes
    ----------
    vectors : ndarray of shape (n_texts, dim), float32
        One row per input text, in input order, as :meth:`CachedEmbedder.embed` returns them.
    n_embedded : int
        Unique texts the cluster embedded (cache misses).
    n_cached : int
        Unique texts found in the cache.
    n_batches : int
        Backend batches sent to the actors.
    """

    vectors: np.ndarray
    n_embedded: int
    n_cached: int
    n_batches: int


class _EmbedBatches:
    """Ray Data callable class: one instance per actor holds the model's backend."""

    def __init__(
        self, model: str, dim: int | None, kind: Kind, cache_dir: str | None, options: dict
    ) -> None:
        from ragnb.embed import make_embedder

        self.kind = kind
        self.backend = make_embedder(
            model, dim=dim, cache_dir=cache_dir, progress=False, **options
        ).backend

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) for t in batch["text"]]
        vecs = np.asarray(self.backend.embed(texts, self.kind), dtype=np.float32)
        return {"key": batch["key"], "vector": vecs}


def _blocks(todo: list[tuple[str, str]], batch_size: int, n_blocks: int) -> list[pd.DataFrame]:
    """``(key, text)`` rows cut into about ``n_blocks`` frames of whole batches."""
    n_batches = -(-len(todo) // batch_size)
    per_block = max(1, -(-n_batches // max(1, n_blocks))) * batch_size
    return [
        pd.DataFrame(todo[i : i + per_block], columns=["key", "text"])
        for i in range(0, len(todo), per_block)
    ]


def embed_corpus_ray(
    texts: Sequence[str],
    model: str,
    *,
    kind: Kind = "passage",
    dim: int | None = None,
    cache_dir: str | None = None,
    concurrency: int = 2,
    num_cpus: float = 1.0,
    batch_size: int | None = None,
    address: str = "",
    model_options: dict[str, Any] | None = None,
) -> DistributedEmbedding:
    """Embed ``texts`` on a Ray cluster into the embedding cache; return their vectors.

    Parameters
    ----------
    texts : sequence of str, length n
    model : str
        A :func:`ragnb.embed.make_embedder` name (offline model, sentence-transformers name or
        path, ``openai:<model>``); every node must be able to load it.
    kind : {"passage", "query"}
    dim : int, optional
        Truncation dimension (part of the cache key, as ``make_embedder(dim=...)``).
    cache_dir : str, optional
        Embedding cache folder (default ``$RAGNB_CACHE_DIR`` or ``~/.cache/ragnb``). Only this
        process writes it; the actors only compute.
    concurrency : int, default 2
        Actors in the pool, each loading the model once (typically one per node).
    num_cpus : float, default 1.0
        CPUs each actor reserves.
    batch_size : int, optional
        Texts per backend call; default the backend's own ``batch_size`` (the serial path's).
    address : str
        Cluster to join (see :func:`connect_ray`); ignored when Ray is already initialised. A
        local cluster started here is shut down on return.
    model_options : dict, optional
        Keyword arguments of the backend (``base_url``...).

    Returns
    -------
    DistributedEmbedding
        ``vectors`` of shape (n, dim), float32, equal to what ``make_embedder(model,
        dim=dim).embed(texts, kind)`` returns.

    Raises
    ------
    InputError
        Ray missing, ``concurrency`` < 1, ``batch_size`` < 1, or ``kind`` not passage/query.
    """
    from ragnb.embed import make_embedder

    if kind not in ("passage", "query"):
        raise InputError(f"kind must be 'passage' or 'query', got {kind!r}", column="kind")
    if concurrency < 1 or (batch_size is not None and batch_size < 1):
        raise InputError("concurrency and batch_size must be at least 1", column="concurrency")
    options = dict(model_options or {})
    emb = make_embedder(model, dim=dim, cache_dir=cache_dir, progress=False, **options)
    backend = emb.backend
    bs = int(batch_size or backend.batch_size)
    texts = [str(t) for t in texts]
    keys = [
        make_key(
            {
                "model": backend.model_id,
                "params": backend.params,
                "kind": kind,
                "text_sha256": text_hash(t),
            }
        )
        for t in texts
    ]
    unique = dict(zip(keys, texts, strict=True))
    found = emb.cache.get_many(NAMESPACE, unique)
    # longest first, as CachedEmbedder.embed: batches of similar length waste less padding
    todo = sorted(((k, t) for k, t in unique.items() if k not in found), key=lambda r: -len(r[1]))
    if todo:
        started = connect_ray(address)
        try:
            _embed_on_ray(
                emb, todo, model, dim, kind, cache_dir, options, bs, concurrency, num_cpus
            )
        finally:
            if started:
                ray = require("ray")

                ray.shutdown()
    vectors = emb.embed(texts, kind=kind)  # every text is in the cache now
    return DistributedEmbedding(
        vectors=vectors,
        n_embedded=len(todo),
        n_cached=len(found),
        n_batches=-(-len(todo) // bs),
    )


def _embed_on_ray(
    emb: Any,
    todo: list[tuple[str, str]],
    model: str,
    dim: int | None,
    kind: Kind,
    cache_dir: str | None,
    options: dict[str, Any],
    batch_size: int,
    concurrency: int,
    num_cpus: float,
) -> None:
    """Run the actor pool over ``todo`` and write each finished block into the cache."""
    require("ray.data")
    ray = require("ray")

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    source = ray.data.from_pandas(_blocks(todo, batch_size, 4 * concurrency))
    ds = source.map_batches(
        _EmbedBatches,
        fn_constructor_kwargs={
            "model": model,
            "dim": dim,
            "kind": kind,
            "cache_dir": cache_dir,
            "options": options,
        },
        batch_size=batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=concurrency),
        num_cpus=num_cpus,
    )
    for block in ds.iter_batches(batch_size=None, batch_format="numpy"):
        vecs = np.asarray(block["vector"], dtype=np.float32)
        emb.cache.put_many(
            NAMESPACE, {str(k): vecs[i].tobytes() for i, k in enumerate(block["key"])}
        )
