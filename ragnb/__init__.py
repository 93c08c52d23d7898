"""ragnb: a Jupyter-first kit for evaluating the retrieval step of RAG systems.

The entry points a user starts from, importable from ``ragnb`` directly (loaded on first use,
so ``import ragnb`` stays cheap); the first of all is
``from ragnb.evaluate import evaluate`` (a run against qrels on any measure; the module of the same
name shadows it as an attribute of the package, so it is not repeated here):

==========================  =====================================================================
``read_beir``               a BEIR folder (corpus, queries, qrels) as frames (:mod:`ragnb.io`)
``read_qrels``, ``read_run``  TREC qrels and run files as frames (:mod:`ragnb.readers`)
``parse_measure``           a measure name (``"nDCG@10"``, ``"ndcg_cut_10"``) as a ``Measure``
``compare``                 systems compared with significance tests (:mod:`ragnb.stats`)
``make_retriever``          ``"bm25"``, ``"dense"`` or ``"hybrid"`` (:mod:`ragnb.retrieve`)
``make_embedder``           an embedder by name, cached (:mod:`ragnb.embed`)
``OpenAIJudge``             an LLM judge behind any OpenAI-compatible endpoint (:mod:`ragnb.judge`)
``render_report``           a notebook rendered into an HTML report (:mod:`ragnb.report`)
==========================  =====================================================================

Layers (each imports only from the ones above it; no study imports another):
foundations (errors, validation, provenance, io, readers, frames, engine, cache, transport,
prices, ledger, params, paths, tables, charts) -> measures, evaluate, stats -> backends (llm,
embed, retrieve, rerank, judge, context, rewrite) -> studies (retrieval, golden, diagnostics,
clq, correlation, whatif) -> delivery (report, cli).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

_ENTRY_POINTS = {
    "read_beir": "ragnb.io",
    "read_qrels": "ragnb.readers",
    "read_run": "ragnb.readers",
    "parse_measure": "ragnb.measures",
    "compare": "ragnb.stats",
    "make_retriever": "ragnb.retrieve",
    "make_embedder": "ragnb.embed",
    "OpenAIJudge": "ragnb.judge",
    "render_report": "ragnb.report",
}

__all__ = ["__version__", *sorted(_ENTRY_POINTS)]


def __getattr__(name: str) -> Any:
    """Load an entry point on first access (PEP 562); submodules import as usual."""
    module = _ENTRY_POINTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragnb' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ENTRY_POINTS))
