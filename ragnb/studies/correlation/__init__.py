"""The Primer correlation study: retrieval measures against the LLM grade of RAG responses.

- :mod:`ragnb.studies.correlation.data`: the retrieval-response dataset (query-texts, ranked and
  graded samples), loaders, the consistency checks of the paper's Figures 22 and 30, query-texts
  from a BEIR dataset, ranking with an embedder.
- :mod:`ragnb.studies.correlation.generate`: answers (A.2) and grades (A.3) through the LLM judge.
- :mod:`ragnb.studies.correlation.analysis`: measures per sample, correlations maximised over alpha,
  segments by K/Np, differences with bootstrap intervals, Acc|Hit.
- :mod:`ragnb.studies.correlation.study`: the notebook's configuration, ``run`` and its result
  (:class:`~ragnb.studies.correlation.study.CorrelationStudy`, a
  :class:`ragnb.report.protocol.StudyResult`).
- :mod:`ragnb.studies.correlation.charts`: heatmaps like the paper's figures.

References
----------
.. [1] S. Schwartz, O. Vasilyev and R. Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer.
.. [2] Dallaire, "Practical RAG Evaluation" (arXiv 2511.09545), Section 2.3.1 (Acc|Hit).
"""

from ragnb.studies.correlation.analysis import (
    SampleSet,
    acc_given_hit,
    alpha_grid,
    best_over_alpha,
    correlate,
    correlation_table,
    difference_table,
    grade_distribution,
    measure_matrix,
    sample_set,
    simulate_grades,
)
from ragnb.studies.correlation.data import (
    GRADED_COLUMNS,
    QUERY_TEXTS_COLUMNS,
    RANKED_COLUMNS,
    beir_query_texts,
    check_graded,
    check_ranked,
    graded_labels,
    rank_samples,
    read_graded,
    read_query_texts,
    read_ranked,
    validate_graded,
    validate_ranked,
    write_samples,
)
from ragnb.studies.correlation.generate import generate_graded, load_answer_prompt
from ragnb.studies.correlation.study import CorrelationConfig, CorrelationStudy, run

__all__ = [
    "GRADED_COLUMNS",
    "QUERY_TEXTS_COLUMNS",
    "RANKED_COLUMNS",
    "CorrelationConfig",
    "CorrelationStudy",
    "SampleSet",
    "acc_given_hit",
    "alpha_grid",
    "beir_query_texts",
    "best_over_alpha",
    "check_graded",
    "check_ranked",
    "correlate",
    "correlation_table",
    "difference_table",
    "generate_graded",
    "grade_distribution",
    "graded_labels",
    "load_answer_prompt",
    "measure_matrix",
    "rank_samples",
    "read_graded",
    "read_query_texts",
    "read_ranked",
    "run",
    "sample_set",
    "simulate_grades",
    "validate_graded",
    "validate_ranked",
    "write_samples",
]
