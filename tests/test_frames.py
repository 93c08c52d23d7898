"""ragnb.frames: trec_eval ordering, the file-order policy, rank disagreements, converters."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import (
    check_qrels,
    check_run,
    qrels_from_dict,
    qrels_to_dict,
    run_from_dict,
    run_to_dict,
)


def run_frame(rows, rank=False):
    cols = ["query_id", "doc_id", "score"] + (["rank"] if rank else [])
    return pd.DataFrame(rows, columns=cols)


def ordered(sorted_run):
    """``{query_id: [doc_id, ...]}`` in evaluation order, checking ranks are 1..n."""
    out = {}
    for qid, group in sorted_run.run.groupby("query_id", sort=False):
        assert group["rank"].tolist() == list(range(1, len(group) + 1))
        out[qid] = group["doc_id"].tolist()
    return out


# --------------------------------------------------------------------------- sort_run


def test_sort_by_score_desc_ties_by_doc_id_desc():
    run = run_frame(
        [
            ("q1", "d10", 0.5),
            ("q1", "d2", 0.9),
            ("q1", "d9", 0.5),
            ("q1", "d1", 0.5),
            ("q1", "d3", 1.5),
        ]
    )
    # 1.5 d3; 0.9 d2; then the 0.5 tie by doc_id descending as strings: "d9" > "d10" > "d1"
    assert ordered(sort_run(run)) == {"q1": ["d3", "d2", "d9", "d10", "d1"]}


def test_sort_groups_queries_in_sorted_order_and_renumbers_ranks():
    run = run_frame([("q2", "a", 1.0), ("q1", "b", 2.0), ("q2", "c", 3.0), ("q1", "a", -1.0)])
    res = sort_run(run)
    assert res.run["query_id"].tolist() == ["q1", "q1", "q2", "q2"]
    assert ordered(res) == {"q1": ["b", "a"], "q2": ["c", "a"]}
    assert res.run["rank"].dtype == np.int64
    assert list(res.run.columns) == ["query_id", "doc_id", "score", "rank"]


def test_negative_zero_ties_with_zero():
    # -0.0 == 0.0, so the tie is broken by doc_id: "b" before "a"
    run = run_frame([("q", "a", 0.0), ("q", "b", -0.0)])
    assert ordered(sort_run(run)) == {"q": ["b", "a"]}


def test_order_file_follows_rank_column():
    run = run_frame(
        [("q", "a", 0.1, 2), ("q", "b", 0.9, 3), ("q", "c", 0.5, 1)],
        rank=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning under order="file"
        res = sort_run(run, order="file")
    assert ordered(res) == {"q": ["c", "a", "b"]}
    assert res.order == "file"
    assert res.n_rank_disagreements == 1  # counted even though not warned


def test_order_file_equal_ranks_keep_row_order():
    run = run_frame([("q", "x", 0.0, 1), ("q", "y", 9.0, 1), ("q", "z", 5.0, 0)], rank=True)
    assert ordered(sort_run(run, order="file", warn=False)) == {"q": ["z", "x", "y"]}


def test_order_file_without_rank_keeps_row_order():
    run = run_frame([("q", "low", 0.1), ("q", "high", 0.9), ("p", "mid", 0.5)])
    res = sort_run(run, order="file")
    assert ordered(res) == {"p": ["mid"], "q": ["low", "high"]}
    assert res.n_rank_disagreements == 0


def test_rank_disagreement_counted_and_warned_under_score_order():
    run = run_frame(
        [
            # q1: ranks agree with scores
            ("q1", "a", 0.9, 1),
            ("q1", "b", 0.1, 2),
            # q2: ranks reversed
            ("q2", "a", 0.1, 1),
            ("q2", "b", 0.9, 2),
            # q3: equal scores; trec_eval puts "b" first, the file puts "a" first
            ("q3", "a", 0.5, 1),
            ("q3", "b", 0.5, 2),
        ],
        rank=True,
    )
    with pytest.warns(UserWarning, match="2 queries have a rank column"):
        res = sort_run(run)
    assert res.n_rank_disagreements == 2
    assert ordered(res) == {"q1": ["a", "b"], "q2": ["b", "a"], "q3": ["b", "a"]}


def test_rank_disagreement_not_warned_with_warn_false_or_when_agreeing():
    disagree = run_frame([("q", "a", 0.1, 1), ("q", "b", 0.9, 2)], rank=True)
    agree = run_frame([("q", "a", 0.9, 1), ("q", "b", 0.1, 2)], rank=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sort_run(disagree, warn=False).n_rank_disagreements == 1
        assert sort_run(agree).n_rank_disagreements == 0


def test_sort_run_validates():
    with pytest.raises(InputError, match="unknown run order 'rank'"):
        sort_run(run_frame([("q", "a", 1.0)]), order="rank")
    with pytest.raises(InputError, match="NaN") as info:
        sort_run(run_frame([("q", "a", 1.0), ("q7", "b", np.nan)]))
    assert info.value.query_id == "q7"


def test_sort_run_empty():
    res = sort_run(run_frame([]).astype({"score": "float64"}))
    assert len(res.run) == 0
    assert res.n_rank_disagreements == 0


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        min_size=1,
        max_size=25,
    )
)
def test_sort_run_matches_naive_reference(rows):
    # doc ids unique per query; scores drawn from a few values, so there are many ties
    frame = run_frame([(q, f"d{i}", s) for i, (q, s) in enumerate(rows)])
    want = {}
    for q in sorted({q for q, _ in rows}):
        docs = [(s, f"d{i}") for i, (qq, s) in enumerate(rows) if qq == q]
        # trec_eval: qsort on (sim, docno) descending, i.e. reverse-sort the pairs
        want[q] = [d for _, d in sorted(docs, reverse=True)]
    shuffled = frame.sample(frac=1.0, random_state=0)
    assert ordered(sort_run(frame)) == want
    assert ordered(sort_run(shuffled)) == want  # invariant to row order


# --------------------------------------------------------------------------- converters


QRELS = {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": -1}}
RUN = {"q1": {"d1": 0.25, "d3": -1.5}, "q2": {"d9": 1e-300}}


def test_qrels_dict_frame_round_trip():
    frame = qrels_from_dict(QRELS)
    assert frame.to_dict("list") == {
        "query_id": ["q1", "q1", "q2"],
        "doc_id": ["d1", "d2", "d1"],
        "relevance": [2, 0, -1],
    }
    assert frame["relevance"].dtype == np.int64
    assert qrels_to_dict(frame) == QRELS


def test_run_dict_frame_round_trip():
    frame = run_from_dict(RUN)
    assert frame["score"].dtype == np.float64
    assert run_to_dict(frame) == RUN
    assert run_to_dict(sort_run(frame).run) == RUN


def test_converters_accept_integral_floats_and_numpy_values():
    assert qrels_from_dict({"q": {"d": 2.0, "e": np.int64(1)}})["relevance"].tolist() == [2, 1]
    assert run_from_dict({"q": {"d": np.float32(0.5)}})["score"].tolist() == [0.5]


@pytest.mark.parametrize("grade", [2.5, float("nan"), float("inf"), True, "x", None])
def test_qrels_from_dict_non_integer_grade_names_query(grade):
    with pytest.raises(InputError, match="not an integer") as info:
        qrels_from_dict({"q1": {"d1": 1}, "q7": {"d2": grade}})
    assert info.value.query_id == "q7"
    assert "'d2'" in str(info.value)


@pytest.mark.parametrize(
    ("score", "words"), [(float("nan"), "is NaN"), ("x", "not a number"), (None, "not a number")]
)
def test_run_from_dict_bad_score_names_query(score, words):
    with pytest.raises(InputError, match=words) as info:
        run_from_dict({"q1": {"d1": 1.0}, "q7": {"d2": score}})
    assert info.value.query_id == "q7"
    assert str(info.value).startswith("query 'q7'")


def test_to_dict_validates_frames():
    with pytest.raises(InputError, match="grades must be integers"):
        qrels_to_dict(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1.5]}))
    with pytest.raises(InputError, match="NaN") as info:
        run_to_dict(run_frame([("q3", "d", np.nan)]))
    assert info.value.query_id == "q3"


def test_check_frames_name_column_or_query():
    with pytest.raises(InputError, match="lacks column") as info:
        check_run(pd.DataFrame({"query_id": ["q"], "docno": ["d"], "score": [1.0]}))
    assert info.value.column == "doc_id"
    with pytest.raises(InputError, match="numeric"):
        check_run(run_frame([("q", "d", "high")]))
    with pytest.raises(InputError, match="duplicate") as info:
        check_run(run_frame([("q", "d", 1.0), ("q2", "d", 1.0), ("q2", "d", 0.5)]))
    assert info.value.query_id == "q2"
    with pytest.raises(InputError, match="duplicate") as info:
        check_qrels(
            pd.DataFrame({"query_id": ["q4", "q4"], "doc_id": ["d", "d"], "relevance": [1, 0]})
        )
    assert info.value.query_id == "q4"
