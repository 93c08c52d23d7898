"""Comparing the arrays two paths of ``prepare`` give (tests' helper)."""

from __future__ import annotations

import numpy as np

from ragnb.measures import RankingArrays
from ragnb.measures.kernel import PER_QUERY_FIELDS


def assert_same_arrays(a: RankingArrays, b: RankingArrays) -> None:
    """The per-query arrays, the grade levels and the two counts of skipped rows are equal."""
    for f in (*PER_QUERY_FIELDS, "grade_levels"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert a.n_rank_disagreements == b.n_rank_disagreements
    assert a.n_run_queries_without_qrels == b.n_run_queries_without_qrels
