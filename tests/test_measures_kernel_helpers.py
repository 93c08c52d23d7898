"""The shared kernel helpers of ragnb.measures.kernel: the cells of a run that arrays hold, arrays
extended with more per-cell fields, and the nDCG ratio (hand-computed values)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from ragnb.measures import RankingArrays, prepare
from ragnb.measures.kernel import extend_arrays, ndcg_of, ranked_cells

QRELS = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
# q3 has no qrels; within q1 the score order is b, x, a (ties by doc_id descending: x before a)
RUN = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q3"],
        "doc_id": ["a", "x", "b", "c", "z"],
        "score": [1.0, 1.0, 3.0, 0.5, 9.0],
    }
)


def test_ranked_cells_keeps_queries_of_the_qrels_within_the_depth():
    arrays = prepare(QRELS, RUN, depth=2)
    ranked, rows, cols = ranked_cells(arrays, RUN, "score")
    assert list(zip(ranked["query_id"], ranked["doc_id"], strict=True)) == [
        ("q1", "b"),
        ("q1", "x"),
        ("q2", "c"),
    ]
    assert rows.tolist() == [0, 0, 1] and cols.tolist() == [0, 1, 0]
    # order="file" keeps the frame's row order within each query
    ranked_f, _, cols_f = ranked_cells(prepare(QRELS, RUN, order="file"), RUN, "file")
    assert ranked_f["doc_id"].tolist() == ["a", "x", "b", "c"] and cols_f.tolist() == [0, 1, 2, 0]


@dataclass(frozen=True, eq=False)
class _Tagged(RankingArrays):
    tag: np.ndarray


def test_extend_keeps_every_field_and_freezes_the_extra_ones():
    arrays = prepare(QRELS, RUN)
    tag = np.arange(arrays.n_queries * arrays.depth).reshape(arrays.n_queries, arrays.depth)
    out = extend_arrays(arrays, _Tagged, tag=tag)
    assert isinstance(out, _Tagged) and out.tag is tag and not tag.flags.writeable
    assert out.grades is arrays.grades and out.query_ids is arrays.query_ids
    assert (out.order, out.depth, out.n_run_queries_without_qrels) == ("score", 3, 1)


def test_ndcg_of_linear_and_exponential_gain():
    grades = np.array([[0, 2, -1], [0, 0, 0]])
    ideal = np.array([[2, 1, 0], [0, 0, 0]])
    d = 1 / math.log2(3)
    linear = ndcg_of(grades, ideal, None)
    assert linear[0] == pytest.approx(2 * d / (2 + d)) and linear[1] == 0.0
    expo = ndcg_of(grades, ideal, 2, exp=True)
    assert expo[0] == pytest.approx(3 * d / (3 + d)) and expo[1] == 0.0
