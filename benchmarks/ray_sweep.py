"""A CLQ sweep on SciFact, serially and as Ray tasks on a local 3-node cluster: same results?

Runs one small grid (BM25 and one dense embedder, two index kinds, two pool sizes K) on the
SciFact test split twice, each into its own sweep folder under ``--out``:

1. ``serial``: :func:`ragnb.studies.clq.sweep.run_sweep` with the default serial executor;
2. ``ray``: the same call with :class:`ragnb.studies.clq.ray_executor.RayExecutor` on a Ray cluster
   of three nodes on 127.0.0.1 started here with ``ray.cluster_utils.Cluster`` (a head without CPUs
   for tasks and two worker nodes of ``--worker-cpus`` CPUs each), as in ``tests/test_ray.py``.

Both share one embedding cache folder (``--cache-dir``); the serial sweep runs first, so the
Ray sweep finds the chunk vectors in the cache (its count of texts embedded on the cluster is
printed). Then the two results tables are compared: every column except the clock-dependent
ones (latencies ``*_ms``, index ``build_seconds``, costs ``cost_*`` that are computed from
latency, ``finished_at``) must be equal exactly (``pandas.testing.assert_frame_equal`` with
``check_exact=True``), rows matched by ``config_id``. Wall times of both sweeps (and of the
cluster's start) are printed, with the machine's load average.

Usage (from the repository root)::

    .venv/bin/python benchmarks/ray_sweep.py                     # full SciFact test split
    .venv/bin/python benchmarks/ray_sweep.py --max-docs 1000     # a sample of the corpus
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from ragnb.io.files import read_beir
from ragnb.studies.clq.grid import SweepGrid
from ragnb.studies.clq.ray_executor import RayExecutor
from ragnb.studies.clq.sweep import cap_dataset, run_sweep

SCIFACT = Path("/work/shared/datasets/scifact")
#: Columns that depend on the clock (latency, cost from latency, build time, timestamps).
TIMED = ("_ms", "seconds", "cost_", "finished_at")
#: Every node: 127.0.0.1 only, no autoscaler monitor, a small object store.
NODE = dict(
    node_ip_address="127.0.0.1",
    object_store_memory=150 * 2**20,
    include_log_monitor=False,
    no_monitor=True,
)


def grid(embedder: str, ks: list[int]) -> SweepGrid:
    """BM25 and one dense embedder (flat and HNSW indexes), at each K, no reranker."""
    return SweepGrid(
        embedders=[embedder],
        dims=[0],
        chunkers=["document"],
        indexes=["flat", "hnsw"],
        pool_ks=ks,
        rerankers=["none"],
        modes=["dense", "bm25"],
        dynamic_k=[],
    )


def start_cluster(worker_cpus: int):  # type: ignore[no-untyped-def]
    """Head (no CPU for tasks) and two worker nodes on 127.0.0.1; up to three tries (a raylet
    gives up when its node's agents start slowly on a loaded machine)."""
    from ray.cluster_utils import Cluster

    for attempt in (1, 2, 3):
        cluster = Cluster(shutdown_at_exit=True)
        try:
            cluster.add_node(num_cpus=0, include_dashboard=False, **NODE)
            for _ in range(2):
                cluster.add_node(num_cpus=worker_cpus, **NODE)
            cluster.wait_for_nodes()
            return cluster
        except Exception:
            cluster.shutdown()
            if attempt == 3:
                raise
    raise AssertionError("unreachable")


def comparable(results: pd.DataFrame) -> pd.DataFrame:
    """The columns that do not depend on the clock, rows by config id."""
    keep = [c for c in results.columns if not any(t in c for t in TIMED)]
    return results[keep].sort_values("config_id").reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default=str(SCIFACT), help="a BEIR folder (SciFact)")
    parser.add_argument("--embedder", default="wordllama", help="the dense embedder")
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 50], help="pool sizes K")
    parser.add_argument("--max-docs", type=int, default=0, help="corpus sample (0: all)")
    parser.add_argument("--max-queries", type=int, default=0, help="query sample (0: all)")
    parser.add_argument("--worker-cpus", type=int, default=1, help="CPUs per worker node")
    parser.add_argument("--cache-dir", default="", help="embedding cache (default: ragnb's)")
    parser.add_argument("--out", default="", help="parent of the two sweep folders (temp dir)")
    args = parser.parse_args(argv)

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    out = Path(args.out or tempfile.mkdtemp(prefix="ragnb-ray-sweep-"))
    cache = args.cache_dir or None
    dataset = read_beir(args.dataset, "test")
    dataset, note = cap_dataset(
        dataset, max_docs=args.max_docs, max_queries=args.max_queries, seed=0
    )
    the_grid = grid(args.embedder, args.ks)
    n_configs = len(the_grid.expand())
    print(f"cores: {os.cpu_count()}; load average at start: {os.getloadavg()}")
    print(
        f"dataset: {args.dataset} (test split), {len(dataset.corpus)} documents, "
        f"{len(dataset.judged_queries)} judged queries. {note}".rstrip()
    )
    print(f"grid: {n_configs} configurations ({args.embedder} flat/hnsw and BM25, K={args.ks})")
    print(f"sweep folders under {out}", flush=True)

    t0 = time.perf_counter()
    serial = run_sweep(the_grid, dataset, out / "serial", cache_dir=cache)
    t_serial = time.perf_counter() - t0
    print(
        f"serial: {serial.n_evaluated} configurations in {t_serial:.1f} s; texts embedded: "
        f"{serial.n_embedded_texts} (0: the embedding cache was warm)",
        flush=True,
    )

    import ray

    t0 = time.perf_counter()
    cluster = start_cluster(args.worker_cpus)
    ray.init(address=cluster.address, log_to_driver=False)
    t_up = time.perf_counter() - t0
    nodes = [n for n in ray.nodes() if n["Alive"]]
    print(f"Ray cluster: {len(nodes)} nodes up in {t_up:.1f} s at {cluster.address}", flush=True)
    try:
        executor = RayExecutor()  # Ray is initialised: joins that cluster
        t0 = time.perf_counter()
        on_ray = run_sweep(the_grid, dataset, out / "ray", cache_dir=cache, executor=executor)
        t_ray = time.perf_counter() - t0
    finally:
        ray.shutdown()
        cluster.shutdown()
    placed = pd.Series(executor.placements).value_counts()
    print(
        f"ray: {on_ray.n_evaluated} configurations in {t_ray:.1f} s on "
        f"{len(placed)} worker nodes ({', '.join(str(c) for c in placed.tolist())} each); "
        f"texts embedded on the cluster: {executor.n_embedded}",
        flush=True,
    )

    got, want = comparable(on_ray.results), comparable(serial.results)
    assert list(got["config_id"]) == list(want["config_id"]) and len(got) == n_configs
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    measures = [c for c in got.columns if "@" in c or c in ("quality", "proc", "pct_proc")]
    print(
        f"results tables equal: {len(got)} rows x {len(got.columns)} columns compared exactly "
        f"(measures: {', '.join(measures)}); clock columns left out: "
        f"{sorted(set(serial.results.columns) - set(got.columns))}"
    )
    show = ["label", *[m for m in ("nDCG@10", "R@100", "quality") if m in got.columns]]
    print(got[show].to_string(index=False))
    print(
        f"wall time: serial {t_serial:.1f} s, ray {t_ray:.1f} s (+ {t_up:.1f} s cluster start); "
        f"load average at end: {os.getloadavg()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
