"""Shared fixtures: the real datasets beside the repository, rendered reports, a test cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The real datasets beside the repository; RAGNB_SHARED_DATASETS points elsewhere (an empty folder
# runs the suite as a clone without ../shared does: the outside-oracle tests then read the data
# the repository carries, tests/data/oracle).
SHARED_DATASETS = Path(
    os.environ.get("RAGNB_SHARED_DATASETS") or REPO.parent / "shared" / "datasets"
).expanduser()

# Tests never fetch models from a hub, and keep their embedding cache inside the work tree (a
# fresh clone starts cold, as CI does).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAGNB_CACHE_DIR", str(REPO / ".cache" / "test-cache"))
# each xdist worker may run a local model server while the other does (its own, a notebook's,
# a journey's): llama.cpp's threads wait for each other spinning, so servers whose threads
# outnumber the cores slow down about tenfold; each worker's servers get its share of the cores
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    os.environ.setdefault("RAGNB_LLM_THREADS", str(max(1, (_CORES or 1) // _WORKERS)))


def cpu_has_vnni() -> bool:
    """True when the CPU multiplies int8 with VNNI (AVX512-VNNI, AVX-VNNI or AMX-INT8).

    onnxruntime's integer matmul (uint8 activations x int8 weights, as ``ragnb.embed.quantise``
    builds) accumulates in int32 there; with AVX2 alone it goes through ``vpmaddubsw``, whose
    int16 pair sums saturate, and the int8 graph loses accuracy (onnxruntime's quantization
    guide: ``reduce_range`` on machines without VNNI). Measured with the int8 MiniLM graph on an
    AVX2-only AMD EPYC: cosine to the float model min 0.983 (the empty string), against 0.990
    with VNNI.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f" {flag}" in flags for flag in ("avx512_vnni", "avx_vnni", "amx_int8"))


def shared_dataset(name: str) -> Path:
    """Path of ``<SHARED_DATASETS>/<name>`` (``../shared/datasets`` unless
    ``RAGNB_SHARED_DATASETS`` says otherwise); skip if absent, but fail under ``CI=true``."""
    path = SHARED_DATASETS / name
    if not (path / "corpus.jsonl").exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(
                f"dataset {path} is missing; CI must run with ../shared beside the repo (or "
                "RAGNB_SHARED_DATASETS naming the folder that holds the datasets)"
            )
        pytest.skip(f"dataset {path} not available")
    return path


@pytest.fixture(scope="session")
def scifact_path() -> Path:
    return shared_dataset("scifact")


@pytest.fixture(scope="session")
def dbpedia_path() -> Path:
    return shared_dataset("dbpedia-entity-subset")


@pytest.fixture(scope="session")
def msmarco_path() -> Path:
    return shared_dataset("msmarco-dl-subset")


@pytest.fixture(scope="session")
def sample_report(tmp_path_factory: pytest.TempPathFactory):
    """Notebook 01 rendered on the embedded sample dataset (``data/pydocs``)."""
    from ragnb.report.render import render_report

    out = tmp_path_factory.mktemp("reports-sample")
    return render_report(
        "01_retrieval_evaluation", {"export_dir": str(out / "export")}, reports_dir=out
    )


@pytest.fixture(scope="session")
def dbpedia_report(tmp_path_factory: pytest.TempPathFactory, dbpedia_path: Path):
    """Notebook 01 rendered on the graded DBpedia-Entity subset (grades 0/1/2).

    Dense retrieval uses WordLlama (static embeddings: 5,000 passages in seconds) to keep the
    suite within its time budget; MiniLM's published reference point on SciFact is checked by
    ``benchmarks/reference_points.py``.
    """
    from ragnb.report.render import render_report

    out = tmp_path_factory.mktemp("reports-dbpedia")
    return render_report(
        "01_retrieval_evaluation",
        {"dataset": str(dbpedia_path), "model": "wordllama", "export_dir": str(out / "export")},
        reports_dir=out,
    )


@pytest.fixture(scope="session")
def scifact_report(tmp_path_factory: pytest.TempPathFactory, scifact_path: Path):
    """Notebook 01 rendered on the 300 SciFact test queries and 5,183 abstracts, dense retrieval
    with WordLlama (static embeddings, seconds; the float all-MiniLM-L6-v2 takes 8 minutes here,
    so its MTEB reference point is held by ``benchmarks/reference_points.py``)."""
    from ragnb.report.render import render_report

    out = tmp_path_factory.mktemp("reports-scifact")
    return render_report(
        "01_retrieval_evaluation",
        {
            "dataset": str(scifact_path),
            "model": "wordllama",
            "export_dir": str(out / "export"),
        },
        reports_dir=out,
    )


@pytest.fixture(scope="session")
def local_server():
    """One real llama.cpp server with SmolLM2-135M-Instruct for the test run (per xdist worker):
    a ``ragnb.llm.server.LocalLLMServer``, for the tests whose point is the model's answers
    rather than the server's start and stop. Skips (fails under ``CI=true``) with the reason
    when the server cannot run here."""
    from test_local_llm import require_local_llm

    from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer

    require_local_llm()
    # threads: the worker's share of the cores ($RAGNB_LLM_THREADS, set above), else one per
    # idle core (ragnb.llm.server._thread_count)
    with LocalLLMServer(DEFAULT_MODEL) as server:
        yield server


@pytest.fixture
def openai_server():
    """A real OpenAI-compatible server on 127.0.0.1 (``tests/openai_server.py``), per test.

    Point the ``openai`` client at ``openai_server.base_url``; script answers and faults with
    ``openai_server.chat.push(...)`` / ``openai_server.embeddings.fail(...)``.
    """
    from openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server
