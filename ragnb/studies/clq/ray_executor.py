"""A CLQ sweep past one machine: configurations as Ray tasks, corpora embedded with Ray Data.

:class:`RayExecutor` is the ``executor`` of :func:`ragnb.studies.clq.sweep.run_sweep` that spreads a
sweep over a Ray cluster (``executor="ray"`` builds one). The driver (the process that calls
``run_sweep``) still owns the sweep folder; the cluster computes:

1. **Embeddings** (:meth:`RayExecutor.embed_corpora`): every chunker's chunks of every dense
   embedder not yet stored in the sweep folder are embedded by
   :func:`ragnb.embed.distributed.embed_corpus_ray` (Ray Data, an actor pool per model) into
   the embedding cache, so the driver's build stage then reads them from the cache.
2. **Indexes** are built and stored by the driver (:meth:`RayExecutor.map` runs the build
   stages in order, in this process), once per sweep folder.
3. **Configurations** (:meth:`RayExecutor.measure_all`): one Ray task per configuration. The task
   gets the sweep's shared state without its indexes and models (chunks, query vectors and their
   measured embedding times), loads the configuration's vectors and index from the sweep folder,
   measures it with :func:`ragnb.studies.clq.config_run.measure_config` and returns the row; the
   driver appends each row to ``results.parquet`` as it arrives. A task whose node dies is run again
   by Ray (``max_retries``); only returned rows are written, so no configuration is recorded twice,
   and an interrupted sweep resumes from the folder on any machine (with or without Ray) with only
   the missing configurations.

The sweep folder and the embedding cache folder must be visible at the same path on every node
(one machine, or a shared file system). Latency columns are measured inside the tasks: with
several tasks per machine they contend for its cores, so compare latencies within one executor;
quality, PROC, pool and token columns equal the serial executor's.

References
----------
Dallaire, arXiv:2511.09545, section 3.5 (the sweep). Moritz et al., "Ray: A Distributed
Framework for Emerging AI Applications", OSDI 2018 (tasks, lineage-based retries).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from ragnb.core.lazylibs import require
from ragnb.embed.distributed import connect_ray, embed_corpus_ray
from ragnb.errors import InputError
from ragnb.studies.clq.grid import SweepConfig
from ragnb.studies.clq.state import (
    Executor,
    SerialExecutor,
    SweepState,
    ThreadExecutor,
    fingerprint,
)

__all__ = ["RayExecutor", "make_executor"]

Save = Callable[[SweepConfig, dict[str, Any], pd.DataFrame], None]
"""Writes one measured configuration (row, per-query frame) into the sweep folder."""


class RayExecutor:
    """Run a sweep's configurations as Ray tasks on a cluster (or a local Ray instance).

    Parameters
    ----------
    address : str, default ""
        ``host:port`` of an existing cluster (or ``"auto"``); empty starts a local one on
        127.0.0.1 (see :func:`ragnb.embed.distributed.connect_ray`). Ignored when Ray is already
        initialised in this process.
    num_cpus : float, default 1.0
        CPUs each configuration task and each embedding actor reserves.
    max_retries : int, default 3
        Times Ray runs a configuration again after its worker or node died.
    embed_concurrency : int, default 2
        Embedding actors per model (Ray Data actor pool size).
    init_options : dict, optional
        More ``ray.init`` arguments for a local cluster (``num_cpus``, ``object_store_memory``).

    Attributes
    ----------
    placements : dict of str to str
        Config id -> id of the Ray node whose task returned its row (last sweep).
    n_embedded : int
        Texts embedded on the cluster by the last :meth:`embed_corpora`.
    """

    def __init__(
        self,
        address: str = "",
        *,
        num_cpus: float = 1.0,
        max_retries: int = 3,
        embed_concurrency: int = 2,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        if num_cpus <= 0 or max_retries < 0 or embed_concurrency < 1:
            raise InputError(
                "RayExecutor needs num_cpus > 0, max_retries >= 0 and embed_concurrency >= 1",
                column="executor",
            )
        self.address = address
        self.num_cpus = float(num_cpus)
        self.max_retries = int(max_retries)
        self.embed_concurrency = int(embed_concurrency)
        self.init_options = dict(init_options or {})
        self.placements: dict[str, str] = {}
        self.n_embedded = 0
        self._started = False

    # ------------------------------------------------------------------ cluster

    def connect(self) -> None:
        """Join the cluster (or start the local one) unless Ray is already initialised."""
        self._started = connect_ray(self.address, **self.init_options) or self._started

    def shutdown(self) -> None:
        """Leave Ray if this executor initialised it: a local instance stops, a joined cluster
        keeps running."""
        if self._started:
            ray = require("ray")

            ray.shutdown()
            self._started = False

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """The build stages (embeddings, indexes) run here, in order, in the driver: they write
        the sweep folder that every task then reads (see :meth:`embed_corpora`)."""
        return [fn(x) for x in items]

    # ------------------------------------------------------------------ embeddings

    def embed_corpora(self, sw: SweepState, configs: list[SweepConfig]) -> None:
        """Embed, on the cluster, the chunks of each dense (embedder, chunker) of ``configs``
        whose vectors are not yet in the sweep folder, into the embedding cache.

        Truncated dimensions are cut from the full vectors (as the serial path does), so one
        full embedding per (embedder, chunker) serves them all.
        """
        self.n_embedded = 0
        pairs = dict.fromkeys((c.embedder, c.chunker) for c in configs if c.dense)
        for name, chunker in pairs:
            key = (name, 0, chunker)
            stored = sw.out_dir / "embeddings" / f"{fingerprint(key, sw.dataset_key)}.npy"
            if stored.exists():
                continue
            self.connect()
            texts = sw.chunk(chunker)["text"].astype(str).tolist()
            done = embed_corpus_ray(
                texts,
                name,
                cache_dir=sw.cache_dir,
                concurrency=self.embed_concurrency,
                num_cpus=self.num_cpus,
            )
            self.n_embedded += done.n_embedded
        sw.n_embedded += self.n_embedded

    # ------------------------------------------------------------------ configurations

    def measure_all(self, sw: SweepState, todo: list[SweepConfig], save: Save) -> list[str]:
        """Measure ``todo`` as Ray tasks; ``save`` each row as it arrives, in the driver.

        Returns
        -------
        list of str
            The config ids measured, in the order their rows were saved.

        Raises
        ------
        ray.exceptions.RayError
            When a configuration fails (its error) or exhausts its retries; the rows saved
            before stay in the sweep folder and a resumed sweep measures only the rest.
        """
        self.placements = {}
        if not todo:
            return []
        ray = require("ray")

        self.connect()
        _prewarm(sw, todo)
        shared = ray.put(_portable(sw))
        token = uuid.uuid4().hex  # names this sweep call's state in the workers
        task = ray.remote(_measure_task).options(
            num_cpus=self.num_cpus, max_retries=self.max_retries, retry_exceptions=False
        )
        pending = {task.remote(shared, token, cfg): cfg for cfg in todo}
        evaluated: list[str] = []
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                cfg = pending.pop(ready[0])
                row, per_query, node = ray.get(ready[0])
                self.placements[cfg.config_id] = node
                save(cfg, row, per_query)
                evaluated.append(cfg.config_id)
        finally:
            for ref in pending:
                ray.cancel(ref)
            self.shutdown()  # a local instance this executor started; a cluster keeps running
        return evaluated


def make_executor(executor: Executor | str | None) -> Executor:
    """The executor a name stands for: ``"serial"`` (or None), ``"thread"``, ``"ray"``; an
    executor object is returned as it is.

    Raises
    ------
    InputError
        On another name.
    """
    if executor is None or executor == "serial":
        return SerialExecutor()
    if executor == "thread":
        return ThreadExecutor()
    if executor == "ray":
        return RayExecutor()
    if isinstance(executor, str):
        raise InputError(
            f"executor must be 'serial', 'thread' or 'ray', got {executor!r}", column="executor"
        )
    return executor


# ----------------------------------------------------------------------------- the tasks


def _prewarm(sw: SweepState, todo: list[SweepConfig]) -> None:
    """In the driver, before the tasks start: query vectors and per-query embedding times of
    every dense embedder and rescoring reranker (measured once per sweep, as the serial path
    does), and the rescoring embedders' chunk vectors in the cache (the tasks only read it)."""
    for cfg in todo:
        if cfg.dense:
            sw.query_vectors(cfg.embedder, cfg.dim, cfg.rewriter)
        if cfg.reranker.startswith("rescore:"):
            second = cfg.reranker.removeprefix("rescore:")
            sw.query_vectors(second, 0, cfg.rewriter)
            key = (cfg.reranker, cfg.chunker) + ((cfg.rewriter,) if cfg.rewriter else ())
            if key not in sw.prewarmed:
                reranker = sw.reranker(cfg.reranker)
                reranker.embedder.embed(sw.chunk(cfg.chunker)["text"].astype(str).tolist())
                reranker.embedder.embed(sw.texts(cfg.rewriter), kind="query")
                sw.prewarmed.add(key)


def _portable(sw: SweepState) -> SweepState:
    """A copy of the sweep state to ship to the tasks: without indexes, chunk vectors (loaded
    from the sweep folder on the node), rerankers (built on the node) and BM25 runs."""
    out = copy.copy(sw)
    out.executor = SerialExecutor()
    out.indexes = {}
    out.vectors = {}
    out.rerankers = {}
    out.bm25 = {}
    out.notes = []
    return out


#: Per worker process: the last sweep state it measured with (reused by the next task).
_STATE: dict[str, SweepState] = {}


def _measure_task(
    shared: SweepState, token: str, cfg: SweepConfig
) -> tuple[dict[str, Any], pd.DataFrame, str]:
    """One configuration on a Ray worker: its vectors and index from the sweep folder, then
    :func:`ragnb.studies.clq.config_run.measure_config`. The state of ``token`` (one sweep call) is
    kept for the worker's next task, with the indexes and vectors it loaded. Returns (row, per-query
    frame, node id)."""
    ray = require("ray")

    from ragnb.studies.clq.config_run import measure_config

    sw = _STATE.get(token)
    if sw is None:
        _STATE.clear()
        sw = _STATE[token] = shared
    if cfg.dense:
        sw.prepare_embeddings([cfg.embedding_key])
        sw.prepare_indexes([cfg.index_key])
    row, per_query = measure_config(sw, cfg)
    return row, per_query, ray.get_runtime_context().get_node_id()
