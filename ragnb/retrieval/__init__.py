"""Notebook 01: retrievers compared on one dataset, every core measure.

- :mod:`ragnb.retrieval.study`: :class:`RetrievalEvaluationConfig`, :func:`compare_retrievers`
  and the :class:`Comparison` it returns.
"""

from ragnb.retrieval.study import (
    Comparison,
    RetrievalEvaluationConfig,
    compare_retrievers,
    core_measures,
    versions,
)
from ragnb.retrieve import make_retriever

__all__ = [
    "Comparison",
    "RetrievalEvaluationConfig",
    "compare_retrievers",
    "core_measures",
    "make_retriever",
    "versions",
]
