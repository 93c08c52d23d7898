"""Ray past one machine, tested as a cluster on one machine: a head and two worker nodes on
127.0.0.1 (``ray.cluster_utils.Cluster``). A small CLQ sweep run as Ray tasks and a corpus
embedded with Ray Data equal the serial executor's results exactly; a sweep whose worker node is
killed in the middle completes with every configuration recorded once; the serial path resumes
from what the cluster wrote."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.embed import make_embedder
from ragnb.embed.distributed import embed_corpus_ray
from ragnb.io.files import read_beir, read_parquet
from ragnb.studies.clq.chunking import Chunker, chunk_corpus
from ragnb.studies.clq.grid import SweepGrid
from ragnb.studies.clq.ray_executor import RayExecutor
from ragnb.studies.clq.sweep import cap_dataset, run_sweep

PYDOCS = Path(__file__).resolve().parents[1] / "data" / "pydocs"
GRID = dict(
    embedders=["wordllama"],
    dims=[0, 64],
    chunkers=["document"],
    indexes=["flat", "hnsw"],
    pool_ks=[20, 50],
    rerankers=["none", "rescore:wordllama"],
    modes=["dense", "bm25"],
    dynamic_k=[],
)
#: Every node of the test cluster: 127.0.0.1 only, no autoscaler monitor, small object store.
NODE = dict(
    node_ip_address="127.0.0.1",
    object_store_memory=100 * 2**20,
    include_log_monitor=False,
    no_monitor=True,
)
#: Columns that depend on the clock (latency, cost from latency, build time, timestamps).
TIMED = ("_ms", "seconds", "cost_", "finished_at")


def _start_cluster():
    """Head (no CPU for tasks) and two 1-CPU worker nodes. A raylet waits about 15 s for its
    node's agents to start; on a machine loaded by other jobs they can take longer (the raylet
    then exits and the node fails to start): up to three tries."""
    from ray.cluster_utils import Cluster

    for attempt in (1, 2, 3):
        cluster = Cluster(shutdown_at_exit=True)
        try:
            # a node killed without notice is declared dead after ~5 missed 1 s health checks
            system = {"health_check_period_ms": 1000, "health_check_failure_threshold": 5}
            cluster.add_node(num_cpus=0, include_dashboard=False, _system_config=system, **NODE)
            workers = [cluster.add_node(num_cpus=1, **NODE) for _ in range(2)]
            cluster.wait_for_nodes()
            return cluster, workers
        except Exception:
            cluster.shutdown()
            if attempt == 3:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def cluster():
    # every Ray process started from here: no usage report, every address on the loopback
    saved = {
        k: os.environ.get(k)
        for k in ("RAY_USAGE_STATS_ENABLED", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    }
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray

    t0 = time.perf_counter()
    cluster, workers = _start_cluster()
    ray.init(address=cluster.address, log_to_driver=False)
    print(f"3-node Ray cluster up in {time.perf_counter() - t0:.1f} s at {cluster.address}")
    try:
        yield cluster, workers
    finally:
        ray.shutdown()
        cluster.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def small():
    ds, _ = cap_dataset(read_beir(PYDOCS), max_docs=150, max_queries=10, seed=3)
    return ds


@pytest.fixture(scope="module")
def embedded(cluster, small, tmp_path_factory):
    """The embedding job: the sweep's chunks (and a few repeated) embedded with Ray Data into a
    fresh cache, which the Ray sweeps below then use. Returns (texts, result, cache folder)."""
    texts = chunk_corpus(small.corpus, Chunker.parse("document"))["text"].astype(str).tolist()
    texts = texts + texts[:5]  # repeated texts are embedded once
    cache = str(tmp_path_factory.mktemp("ray-cache"))
    done = embed_corpus_ray(texts, "wordllama", cache_dir=cache, concurrency=2, batch_size=16)
    return texts, done, cache


@pytest.fixture(scope="module")
def serial(small, tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    cache = str(tmp_path_factory.mktemp("serial-cache"))
    return run_sweep(SweepGrid(**GRID), small, out, cache_dir=cache)


def _comparable(results: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in results.columns if not any(t in c for t in TIMED)]
    return results[keep].sort_values("config_id").reset_index(drop=True)


def test_corpus_embedded_with_ray_data_equals_the_serial_embedder(embedded, tmp_path):
    texts, done, cache = embedded
    want = make_embedder("wordllama", cache_dir=str(tmp_path / "serial"), progress=False)
    assert done.n_embedded == len(set(texts)) > 0 and done.n_cached == 0
    assert done.n_batches == -(-len(set(texts)) // 16)
    assert done.vectors.dtype == np.float32 and done.vectors.shape[0] == len(texts)
    np.testing.assert_array_equal(done.vectors, want.embed(texts, kind="passage"))
    # the cluster wrote the cache the serial embedder reads: nothing left to embed
    cached = make_embedder("wordllama", cache_dir=cache, progress=False)
    np.testing.assert_array_equal(cached.embed(texts), done.vectors)
    assert cached.backend.n_texts == 0
    again = embed_corpus_ray(texts, "wordllama", cache_dir=cache)
    assert again.n_embedded == 0 and again.n_cached == len(set(texts))
    np.testing.assert_array_equal(again.vectors, done.vectors)


def test_sweep_as_ray_tasks_equals_the_serial_sweep_and_resumes_serially(
    cluster, embedded, small, serial, tmp_path_factory
):
    _, workers = cluster
    out = tmp_path_factory.mktemp("ray")
    executor = RayExecutor(embed_concurrency=2)  # Ray is initialised: joins that cluster
    cache = embedded[2]
    result = run_sweep(SweepGrid(**GRID), small, out, cache_dir=cache, executor=executor)
    ids = [c.config_id for c in SweepGrid(**GRID).expand()]
    assert result.n_evaluated == len(ids) == 20
    # the chunks were in the cache the cluster wrote: the sweep embedded no passage again
    assert executor.n_embedded == 0
    # every configuration ran on a worker node (the head has no CPU for tasks)
    worker_ids = {w.node_id for w in workers}
    assert set(executor.placements) == set(ids)
    assert set(executor.placements.values()) <= worker_ids
    got, want = _comparable(result.results), _comparable(serial.results)
    assert list(got.columns) == list(want.columns)
    assert "nDCG@10" in got.columns and "quality" in got.columns
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # the same folder resumed on this machine without Ray: nothing left to measure or build
    again = run_sweep(SweepGrid(**GRID), small, out, cache_dir=cache)
    assert again.n_evaluated == 0 and again.n_index_builds == 0 and again.n_embedded_texts == 0


def test_a_worker_node_killed_mid_sweep_loses_and_repeats_no_configuration(
    cluster, embedded, small, serial, tmp_path_factory
):
    ray_cluster, workers = cluster
    out = tmp_path_factory.mktemp("killed")
    cache = embedded[2]
    executor = RayExecutor(max_retries=3)
    killed: list[str] = []

    def kill_the_other_worker(cfg, row):
        if killed:
            return
        # the first row came back from one worker; the other is busy with a configuration
        # (or still starting its worker process): kill its node, processes and all
        finished_on = executor.placements[cfg.config_id]
        victim = next(w for w in workers if w.node_id != finished_on)
        killed.append(victim.node_id)
        ray_cluster.remove_node(victim, allow_graceful=False)

    result = run_sweep(
        SweepGrid(**GRID),
        small,
        out,
        cache_dir=cache,
        executor=executor,
        on_config_done=kill_the_other_worker,
    )
    assert killed
    ids = [c.config_id for c in SweepGrid(**GRID).expand()]
    stored = read_parquet(out / "results.parquet")
    # every configuration exactly once in the folder, none lost, none measured twice
    assert sorted(stored["config_id"]) == sorted(ids)
    per_query = read_parquet(out / "per_query.parquet")
    assert len(per_query) == len(ids) * len(small.judged_queries)
    assert not per_query.duplicated(["config_id", "query_id"]).any()
    # and the values are the serial ones
    pd.testing.assert_frame_equal(
        _comparable(result.results), _comparable(serial.results), check_exact=True
    )
