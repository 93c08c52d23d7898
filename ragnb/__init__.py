"""ragnb: a Jupyter-first kit for evaluating the retrieval step of RAG systems.

The entry points a user starts from, importable from ``ragnb`` directly (each loaded on first
use, so ``import ragnb`` stays cheap):

==============================  =================================================================
``evaluate``                    a run scored against qrels on any measure
                                (:mod:`ragnb.evaluation`)
``compare``                     systems compared with significance tests (:mod:`ragnb.stats`)
``read_run``, ``read_qrels``    TREC run and qrels files as frames (:mod:`ragnb.io`)
``write_run``, ``write_qrels``  frames written as TREC files (:mod:`ragnb.io`)
``read_beir``                   a BEIR folder (corpus, queries, qrels) as frames (:mod:`ragnb.io`)
``read_trajectories``           an agent's retrieval and rerank spans as search trajectories
                                (:mod:`ragnb.io.trajectories`)
``evaluate_trajectories``       trajectories scored against per-question qrels
                                (:mod:`ragnb.evaluation.trajectories`)
``parse_measure``               a measure name (``"nDCG@10"``, ``"ndcg_cut_10"``) as a ``Measure``
``make_retriever``              ``"bm25"``, ``"dense"`` or ``"hybrid"`` (:mod:`ragnb.retrievers`)
``make_embedder``               an embedder by name, cached (:mod:`ragnb.embed`)
``OpenAIJudge``                 an LLM judge behind any OpenAI-compatible endpoint
                                (:mod:`ragnb.judge`)
``render_report``               a notebook rendered into an HTML report (:mod:`ragnb.report`)
``RagnbError``                  the base of every exception ragnb raises (:mod:`ragnb.errors`)
==============================  =================================================================

The package's folders are its layers, each importing only from those below it (the contracts
are in ``pyproject.toml``, checked by import-linter): ``core``, ``frames``, ``io``, ``measures``,
``evaluation``, ``stats`` and ``ppi``, the backends (``llm``, ``embed``, ``retrievers``,
``rewrite``, ``judge``, ``rerank``, ``context``), ``report``, ``studies`` (one package per
notebook, none importing another) and ``cli``.
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__version__ = "0.3.0"

_EXPORTS = {
    "evaluate": "ragnb.evaluation.evaluate",
    "evaluate_trajectories": "ragnb.evaluation.trajectories",
    "read_trajectories": "ragnb.io.trajectories",
    "compare": "ragnb.stats.comparison",
    "read_run": "ragnb.io.readers",
    "read_qrels": "ragnb.io.readers",
    "write_run": "ragnb.io.files",
    "write_qrels": "ragnb.io.files",
    "read_beir": "ragnb.io.files",
    "parse_measure": "ragnb.measures.base",
    "make_retriever": "ragnb.retrievers.retrieve",
    "make_embedder": "ragnb.embed",
    "OpenAIJudge": "ragnb.judge.llm",
    "render_report": "ragnb.report.render",
    "RagnbError": "ragnb.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
