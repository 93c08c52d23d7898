"""Notebook 01: retrievers compared on one dataset, every core measure.

- :mod:`ragnb.studies.retrieval.study`: :class:`RetrievalEvaluationConfig`, :func:`run` and the
  :class:`Comparison` it returns.
"""

from ragnb.retrievers.retrieve import make_retriever
from ragnb.studies.retrieval.study import (
    Comparison,
    RetrievalEvaluationConfig,
    core_measures,
    run,
    versions,
)

__all__ = [
    "Comparison",
    "RetrievalEvaluationConfig",
    "core_measures",
    "make_retriever",
    "run",
    "versions",
]
