"""The shared kernel helpers of ragnb.measures.kernel: the cells of a run that arrays hold, arrays
extended with more per-cell fields, and the nDCG ratio (hand-computed values)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from ragnb.measures import RankingArrays, parse_measure, prepare
from ragnb.measures.kernel import (
    cut_arrays,
    extend_arrays,
    ndcg_of,
    ranked_cells,
    row_steps,
    sum_at,
)

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


def _random_arrays(seed: int) -> RankingArrays:
    return prepare(*_random_case(seed))


def _random_case(seed: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    qrels = {
        f"q{q}": {f"d{d}": int(rng.integers(-1, 4)) for d in rng.choice(40, 10, replace=False)}
        for q in range(20)
    }
    run = {
        f"q{q}": {f"d{d}": float(rng.integers(0, 9)) for d in rng.choice(40, rng.integers(0, 25))}
        for q in range(20)
        if q % 7
    }
    return qrels, run


@pytest.mark.parametrize("seed", range(4))
def test_shared_counts_equal_their_dense_definitions(seed):
    arrays = _random_arrays(seed)
    for rel in (-1, 0, 1, 2, 3):
        mask = arrays.judged & (arrays.grades >= rel)
        dense = np.cumsum(mask, axis=1)
        rows, cols = arrays.relevant_cells(rel)
        np.testing.assert_array_equal(arrays.relevant(rel), mask)
        np.testing.assert_array_equal(np.stack([rows, cols]), np.stack(np.nonzero(mask)))
        np.testing.assert_array_equal(arrays.cell_hits(rel), dense[rows, cols])
        every = np.nonzero(np.ones(mask.shape, dtype=bool))
        np.testing.assert_array_equal(arrays.hits_at(rel, *every), dense[every])
        np.testing.assert_array_equal(arrays.found(rel), mask.sum(axis=1))
        np.testing.assert_array_equal(arrays.found(rel, 3), mask[:, :3].sum(axis=1))
        np.testing.assert_array_equal(arrays.hits(rel), dense)
        precision = np.where(mask, dense / np.arange(1, arrays.depth + 1), 0.0)
        np.testing.assert_array_equal(arrays.precision_at_relevant(rel), precision)
    assert not arrays.hits(1).flags.writeable and not arrays.relevant(1).flags.writeable
    np.testing.assert_array_equal(arrays.n_filled(), arrays.filled.sum(axis=1))
    for k, exp in [(None, False), (3, False), (None, True), (2, True)]:
        want = ndcg_of(arrays.grades, arrays.ideal, k, exp=exp)
        got = np.divide(arrays.run_dcg(k, exp=exp), arrays.ideal_dcg(k, exp=exp))
        np.testing.assert_array_equal(np.nan_to_num(got, nan=0.0), want)


def test_sum_at_sums_rows_as_numpy_sums_the_dense_array():
    rng = np.random.default_rng(0)
    # magnitudes 1e-8 .. 1e8: a sum in another order or grouping differs in its last bits
    for width in (0, 1, 7, 8, 9, 15, 16, 17, 100, 127, 128, 129, 130, 257, 300, 1000):
        for density in (0.05, 0.3, 1.0):
            mask = rng.random((60, width)) < density
            values = rng.normal(size=(60, width)) * 10.0 ** rng.integers(-8, 8, size=(60, width))
            values[:, ::7] = -0.0 if density == 1.0 else values[:, ::7]  # signed zeros
            cells = np.nonzero(mask)
            want = np.where(mask, values, 0.0).sum(axis=1)
            got = sum_at(cells, values[cells], (60, width))
            assert got.tobytes() == want.tobytes(), (width, density)
    assert sum_at((np.array([1]), np.array([2])), 2.5, (2, 4)).tolist() == [0.0, 2.5]


def test_row_steps_orders_cells_by_their_place_in_their_row():
    rows = np.array([0, 0, 0, 2, 5, 5])
    assert [s.tolist() for s in row_steps(rows)] == [[0, 3, 4], [1, 5], [2]]
    assert [s.tolist() for s in row_steps(rows, from_end=True)] == [[2, 3, 5], [1, 4], [0]]
    assert row_steps(np.array([], dtype=np.int64)) == []


def test_derived_values_are_built_once_and_read_only():
    arrays = prepare(QRELS, RUN)
    calls = []

    def build(a: RankingArrays) -> np.ndarray:
        calls.append(1)
        return a.filled.sum(axis=1)

    first, again = arrays.derived("n", build), arrays.derived("n", build)
    assert first is again and len(calls) == 1 and not first.flags.writeable
    # a measure's values are shared too, and each caller gets its own copy
    m = parse_measure("P@2")
    values = m.compute(arrays)
    values[:] = -1.0
    assert m.compute(arrays).tolist() == [0.0, 0.5]  # q1: b (grade 0), x; q2: c


@pytest.mark.parametrize("seed", range(3))
def test_cut_arrays_equal_arrays_prepared_to_that_depth(seed):
    arrays = _random_arrays(seed)
    for depth in (1, 3, 8, 500):
        cut = cut_arrays(arrays, depth)
        want = prepare(*_random_case(seed), depth=depth)
        for name in ("grades", "judged", "filled", "ideal", "n_judged", "n_retrieved"):
            np.testing.assert_array_equal(getattr(cut, name), getattr(want, name), name)
        np.testing.assert_array_equal(cut.level_counts, want.level_counts)
        assert cut.depth_cap == want.depth_cap == depth
    assert cut_arrays(arrays, None) is arrays
