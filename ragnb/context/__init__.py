"""Context precision and recall of RAG samples (ragas field names).

- :mod:`ragnb.context.nonllm`: against reference texts (string or embedding similarity) or ids.
- :mod:`ragnb.context.llm`: judged by an LLM through :class:`ragnb.judge.OpenAIJudge`.

The qrels-based rank measure ``ContextPrecision@K`` is a measure family:
:mod:`ragnb.measures.context`.
"""

from ragnb.context.llm import (
    context_precision_from_verdicts,
    estimate_llm_measure,
    llm_context_precision_with_reference,
    llm_context_precision_without_reference,
    llm_context_recall,
)
from ragnb.context.nonllm import (
    context_matches,
    id_based_context_scores,
    levenshtein_similarity,
    non_llm_context_scores,
    sequence_matcher_similarity,
    similarity_matrix,
)

__all__ = [
    "context_matches",
    "context_precision_from_verdicts",
    "estimate_llm_measure",
    "id_based_context_scores",
    "levenshtein_similarity",
    "llm_context_precision_with_reference",
    "llm_context_precision_without_reference",
    "llm_context_recall",
    "non_llm_context_scores",
    "sequence_matcher_similarity",
    "similarity_matrix",
]
