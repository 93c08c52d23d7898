"""evaluate(): the shape of its tables, its counts, NaN handling, purity."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import EvaluationResult, evaluate, wide_values
from ragnb.measures import Measure, MeasureFamily, base, parse_measure

QRELS = {"q1": {"a": 1, "b": 2, "c": 0}, "q2": {"d": 1}, "q3": {"e": 3}}
RUN = {
    "q1": {"a": 0.5, "b": 0.9, "x": 0.7},  # b(2) x a(1)
    "q2": {"y": 0.3, "z": 0.2},  # nothing relevant
    "q9": {"a": 1.0},  # no qrels
}


def test_tables_have_the_documented_columns_and_types():
    res = evaluate(QRELS, RUN, ["P@2", "ndcg_cut_3", parse_measure("RR")])
    assert isinstance(res, EvaluationResult)
    assert [str(m) for m in res.measures] == ["P@2", "nDCG@3", "RR"]

    agg = res.aggregate
    assert list(agg.columns) == ["measure", "value", "n_valid", "n_queries"]
    assert agg["measure"].tolist() == ["P@2", "nDCG@3", "RR"]
    assert agg["value"].dtype == np.float64
    assert agg["n_valid"].dtype == np.int64 and agg["n_queries"].dtype == np.int64
    assert agg["n_queries"].tolist() == [3, 3, 3] and agg["n_valid"].tolist() == [3, 3, 3]

    pq = res.per_query
    assert list(pq.columns) == ["query_id", "measure", "value"]
    assert len(pq) == 9
    assert pq["measure"].tolist() == ["P@2"] * 3 + ["nDCG@3"] * 3 + ["RR"] * 3
    assert pq["query_id"].tolist() == ["q1", "q2", "q3"] * 3
    # P@2: q1 b relevant, x not: 1/2; q2 0; q3 missing: 0
    assert pq.loc[pq["measure"] == "P@2", "value"].tolist() == [0.5, 0.0, 0.0]

    wide = res.per_query_wide()
    assert wide.index.name == "query_id" and wide.index.tolist() == ["q1", "q2", "q3"]
    assert wide.columns.tolist() == ["P@2", "nDCG@3", "RR"]
    assert wide.loc["q1", "RR"] == 1.0  # b (grade 2) first

    # the wide table is the long one pivoted; the long one is built once, then kept
    pd.testing.assert_frame_equal(wide, wide_values(pq, ["P@2", "nDCG@3", "RR"]))
    assert res.per_query is pq
    assert res.values.shape == (3, 3) and not res.values.flags.writeable
    assert res.query_ids.tolist() == ["q1", "q2", "q3"]

    d = res.aggregate_to_dict()
    assert list(d) == ["P@2", "nDCG@3", "RR"]
    assert d["P@2"] == pytest.approx(0.5 / 3)
    assert d["RR"] == pytest.approx(1 / 3)
    for name, value in d.items():
        assert value == pytest.approx(wide[name].mean())


def test_counts():
    res = evaluate(QRELS, RUN, ["P@2", "F_e(alpha=0.5)@1", "F_e(alpha=0.5)@2", "F(alpha=0.5)@2"])
    assert res.counts == {
        "queries_in_qrels": 3,
        "queries_missing_from_run": 1,
        "run_queries_without_qrels": 1,
        "rank_disagreements": 0,
        "order": "score",
        # q1 holds 3 documents, q2 holds 2: short of 2K = 4 both; of 2K = 2 neither
        "fe_short_runs": {"F_e(alpha=0.5)@1": 0, "F_e(alpha=0.5)@2": 2},
    }
    json.dumps(res.counts)  # plain types, ready for a report


def test_duplicate_measures_after_normalisation_are_kept_once():
    res = evaluate(QRELS, RUN, ["P_2", "P@2", "precision@2", "P(rel=1)@2"])
    assert res.aggregate["measure"].tolist() == ["P@2"]
    assert evaluate(QRELS, RUN, "RR").aggregate["measure"].tolist() == ["RR"]


def test_inputs_are_not_modified():
    qrels = pd.DataFrame(
        [("q1", "a", 1), ("q1", "b", 2), ("q2", "d", 1)],
        columns=["query_id", "doc_id", "relevance"],
    )
    run = pd.DataFrame(
        [("q1", "x", 0.7, 1), ("q1", "b", 0.9, 2), ("q2", "y", 0.3, 1)],
        columns=["query_id", "doc_id", "score", "rank"],
    )
    q0, r0 = qrels.copy(), run.copy()
    with pytest.warns(UserWarning):
        evaluate(qrels, run, ["P@2"])
    pd.testing.assert_frame_equal(qrels, q0)
    pd.testing.assert_frame_equal(run, r0)


@pytest.fixture
def nan_family():
    """A test-only family that is undefined (NaN) for queries without relevant documents."""

    def kernel(arrays, k):
        n_rel = arrays.n_relevant(1).astype(float)
        return np.where(n_rel > 0, 1.0 / np.where(n_rel > 0, n_rel, 1), np.nan)

    base.register_family(MeasureFamily("TestInvNp", kernel, cutoff="optional"))
    yield "TestInvNp"
    base._FAMILIES.pop("TestInvNp")


def test_nan_is_excluded_from_the_mean_and_counted(nan_family):
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 0}, "q3": {"d": 1}}
    res = evaluate(qrels, {}, [nan_family, "P@1"])
    row = res.aggregate.set_index("measure").loc[nan_family]
    assert row["n_valid"] == 2 and row["n_queries"] == 3
    assert row["value"] == pytest.approx((1 / 2 + 1) / 2)
    assert np.isnan(res.per_query_wide().loc["q2", nan_family])
    only_nan = evaluate({"q2": {"c": 0}}, {}, [nan_family])
    assert only_nan.aggregate["n_valid"].tolist() == [0]
    assert np.isnan(only_nan.aggregate_to_dict()[nan_family])


def test_registering_a_taken_name_fails():
    with pytest.raises(ValueError, match="already registered"):
        base.register_family(MeasureFamily("P", lambda a, k: a))
    with pytest.raises(ValueError, match="already registered"):
        base.register_alias("ndcg", "P")


def test_measure_objects_and_names_mix():
    m = Measure("T", 3, alpha=0.5)
    res = evaluate(QRELS, RUN, [m, "T(alpha=0.5)@3", "T_u(alpha=0.5)@3"])
    assert res.aggregate["measure"].tolist() == ["T(alpha=0.5)@3", "T_u(alpha=0.5)@3"]


def test_unknown_measure_is_reported_before_any_work():
    with pytest.raises(InputError, match="'nDCG@ten'"):
        evaluate(QRELS, RUN, ["P@2", "nDCG@ten"])


def test_repr_mentions_counts():
    text = repr(evaluate(QRELS, RUN, ["P@2"]))
    assert "3 queries" in text and "1 missing from run" in text and "P@2" in text


def test_many_queries_are_vectorised():
    """10k queries x 50 documents: the padded arrays hold every query, no per-query loop."""
    rng = np.random.default_rng(0)
    n_q, depth = 10_000, 50
    qids = np.array([f"q{i:05d}" for i in range(n_q)], dtype=object)
    run = pd.DataFrame(
        {
            "query_id": np.repeat(qids, depth),
            "doc_id": np.tile(np.array([f"d{i}" for i in range(depth)], dtype=object), n_q),
            "score": rng.random(n_q * depth),
        }
    )
    qrels = pd.DataFrame(
        {
            "query_id": np.repeat(qids, 3),
            "doc_id": np.array([f"d{i}" for i in rng.integers(0, 100, n_q * 3)], dtype=object),
            "relevance": rng.integers(0, 3, n_q * 3),
        }
    ).drop_duplicates(["query_id", "doc_id"])
    res = evaluate(qrels, run, ["P@10", "nDCG@10", "RR", "F_e(alpha=0.5)@10", "nDCG_inK@10"])
    assert res.aggregate["n_queries"].tolist() == [n_q] * 5
    assert len(res.per_query) == 5 * n_q
