"""Notebook 01: retrievers compared on one dataset, every core measure.

- :mod:`ragnb.retrieval.study`: :class:`RetrievalEvaluationConfig`, :func:`run` and the
  :class:`Comparison` it returns.
"""

from ragnb.retrieval.study import (
    Comparison,
    RetrievalEvaluationConfig,
    core_measures,
    run,
    versions,
)
from ragnb.retrieve import make_retriever

__all__ = [
    "Comparison",
    "RetrievalEvaluationConfig",
    "core_measures",
    "make_retriever",
    "run",
    "versions",
]
