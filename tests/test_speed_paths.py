"""The compiled fast paths of sort_run and prepare against the straightforward pandas versions.

``_reference_sort_run`` and ``_reference_prepare`` are the implementations the fast paths replaced
(pandas ``sort_values`` on string columns, per-group tuples for rank disagreements, a join on
factorized strings), kept here verbatim in spirit as the oracle. Inputs are random runs with ties,
unicode ids (multi-byte, NUL, shared prefixes longer than 8 bytes), duplicated scores, rank columns
that disagree with the scores, queries split over non-adjacent rows, queries missing from either
side, several column dtypes and both ordering policies.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnb.errors import InputError
from ragnb.frames import groupsort  # noqa: F401  imported: inputs of any size take the compiled kernels
from ragnb.frames.index import sort_run
from ragnb.frames.schema import check_qrels, check_run, qrels_from_dict, run_from_dict
from ragnb.measures import prepare
from ragnb.measures.kernel import PER_QUERY_FIELDS

ARRAY_FIELDS = (*PER_QUERY_FIELDS, "grade_levels")

# ----------------------------------------------------------------------------- references


def _reference_sort_run(run: pd.DataFrame, order: str = "score") -> tuple[pd.DataFrame, int]:
    """The pandas sort_run that the compiled path replaced: (sorted frame, disagreements)."""
    check_run(run)
    df = run.reset_index(drop=True).copy()
    df["query_id"] = df["query_id"].astype(str)
    df["doc_id"] = df["doc_id"].astype(str)
    df["_row"] = np.arange(len(df))
    by_score = df.sort_values(
        ["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable"
    )
    n_disagree = 0
    if "rank" in df.columns and len(df):
        by_file = df.sort_values(["query_id", "rank", "_row"], kind="stable")
        a = by_score.groupby("query_id", sort=True)["_row"].apply(tuple)
        b = by_file.groupby("query_id", sort=True)["_row"].apply(tuple)
        n_disagree = int((a != b).sum())
    if order == "score":
        out = by_score
    elif "rank" in df.columns:
        out = df.sort_values(["query_id", "rank", "_row"], kind="stable")
    else:
        out = df.sort_values(["query_id", "_row"], kind="stable")
    out = out.drop(columns=["_row"] + (["rank"] if "rank" in out.columns else []))
    out = out.reset_index(drop=True)
    out["rank"] = out.groupby("query_id", sort=False).cumcount().astype("int64") + 1
    return out, n_disagree


def _reference_prepare(
    qrels: pd.DataFrame, run: pd.DataFrame, order: str = "score", depth: int | None = None
) -> dict:
    """The pandas prepare that the compiled path replaced, as a dict of its arrays."""
    check_qrels(qrels)
    q_qid = qrels["query_id"].astype(str).to_numpy(dtype=object)
    q_doc = qrels["doc_id"].astype(str).to_numpy(dtype=object)
    q_grade = qrels["relevance"].to_numpy(dtype=np.int64)
    ranked, n_disagree = _reference_sort_run(run, order)

    qindex = pd.Index(pd.unique(q_qid)).sort_values()
    n_q = len(qindex)
    q_row = qindex.get_indexer(q_qid).astype(np.int64)
    r_rank = ranked["rank"].to_numpy(dtype=np.int64)
    starts = np.flatnonzero(r_rank == 1)
    lengths = np.diff(np.append(starts, len(r_rank)))
    group_qid = ranked["query_id"].iloc[starts].to_numpy(dtype=object)
    group_row = qindex.get_indexer(group_qid).astype(np.int64)
    n_retrieved = np.zeros(n_q, dtype=np.int64)
    n_retrieved[group_row[group_row >= 0]] = lengths[group_row >= 0]
    full_depth = int(n_retrieved.max()) if n_q else 0
    width = full_depth if depth is None else min(depth, full_depth)

    grades = np.zeros((n_q, width), dtype=np.int64)
    judged = np.zeros((n_q, width), dtype=bool)
    filled = np.zeros((n_q, width), dtype=bool)
    judgements = {(q, d): g for q, d, g in zip(q_qid, q_doc, q_grade, strict=True)}
    r_row = np.repeat(group_row, lengths)
    for row, rank, qid, doc in zip(
        r_row, r_rank, ranked["query_id"], ranked["doc_id"], strict=True
    ):
        if row < 0 or rank > width:
            continue
        filled[row, rank - 1] = True
        if (qid, doc) in judgements:
            judged[row, rank - 1] = True
            grades[row, rank - 1] = judgements[(qid, doc)]

    n_judged = np.bincount(q_row, minlength=n_q).astype(np.int64)
    ideal_width = int(n_judged.max()) if depth is None else min(depth, int(n_judged.max()))
    ideal = np.zeros((n_q, ideal_width), dtype=np.int64)
    for row in range(n_q):
        g = np.sort(q_grade[q_row == row])[::-1][:ideal_width]
        ideal[row, : len(g)] = g
    levels = np.unique(q_grade).astype(np.int64)
    level_counts = np.array(
        [[int(((q_row == r) & (q_grade == lv)).sum()) for lv in levels] for r in range(n_q)],
        dtype=np.int64,
    ).reshape(n_q, len(levels))
    return {
        "query_ids": qindex.to_numpy(dtype=object),
        "grades": grades,
        "judged": judged,
        "filled": filled,
        "ideal": ideal,
        "n_judged": n_judged,
        "n_retrieved": n_retrieved,
        "grade_levels": levels,
        "level_counts": level_counts,
        "n_rank_disagreements": n_disagree,
        "n_run_queries_without_qrels": int((group_row < 0).sum()),
    }


def assert_same_arrays(arrays, want: dict) -> None:
    for name in ARRAY_FIELDS:
        got = getattr(arrays, name)
        assert got.shape == want[name].shape, name
        assert got.tolist() == want[name].tolist(), name
    assert arrays.n_rank_disagreements == want["n_rank_disagreements"]
    assert arrays.n_run_queries_without_qrels == want["n_run_queries_without_qrels"]


def assert_same_sorted(got, want: tuple[pd.DataFrame, int]) -> None:
    frame, n_disagree = want
    assert list(got.run.columns) == list(frame.columns)
    for col in frame.columns:
        assert got.run[col].tolist() == frame[col].tolist(), col
    assert got.n_rank_disagreements == n_disagree


# ----------------------------------------------------------------------------- strategies

# Every document id of an example starts with the same prefix, some longer than the 8 bytes that
# the kernels compare as one integer, so that ties are settled byte by byte.
PREFIXES = ["", "d", "doc-", "<dbpedia:Shared_Long_Prefix_", "é", "😀x"]
TAILS = st.text(alphabet=st.sampled_from(list("ab0Z9\x00é€😀 ~")), max_size=10)
QUERY_IDS = ["q1", "q2", "q10", "q9", "Q", "é", "q1 ", "", "😀"]
SCORES = [0.0, -0.0, 1.0, 1.5, -2.0, 1e300, float("inf"), -float("inf"), 0.1 + 0.2, 0.3]
DTYPES = ["object", "str", "arrow_large", "category"]


def with_dtype(values: list, dtype: str) -> pd.Series:
    if dtype == "object":
        return pd.Series(values, dtype=object)
    if dtype == "str":
        return pd.Series(values, dtype="str")
    if dtype == "arrow_large":
        return pd.Series(values, dtype=pd.ArrowDtype(pa.large_string()))
    return pd.Series(values, dtype="category")


@st.composite
def run_and_qrels(draw, with_rank: bool | None = None):  # noqa: ANN001, ANN201
    prefix = draw(st.sampled_from(PREFIXES))
    pool = draw(st.lists(TAILS, min_size=1, max_size=12, unique=True))
    pool = [prefix + t for t in pool]
    queries = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, max_size=5, unique=True))
    run_rows, qrels_rows = [], []
    for q in queries:
        if draw(st.booleans()) or q == queries[0]:
            docs = draw(st.lists(st.sampled_from(pool), max_size=len(pool), unique=True))
            run_rows += [
                (q, d, draw(st.sampled_from(SCORES)), draw(st.integers(-2, 4))) for d in docs
            ]
        if draw(st.booleans()) or q == queries[-1]:
            docs = draw(
                st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True)
            )
            qrels_rows += [(q, d, draw(st.integers(-1, 3))) for d in docs]
    run_rows = draw(st.permutations(run_rows))  # queries interleave, rows in any order
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.booleans()) if with_rank is None else with_rank
    run = pd.DataFrame(
        {
            "query_id": with_dtype([r[0] for r in run_rows], dtype),
            "doc_id": with_dtype([r[1] for r in run_rows], dtype),
            "score": pd.Series([r[2] for r in run_rows], dtype="float64"),
        }
    )
    if rank:
        run["rank"] = pd.Series([r[3] for r in run_rows], dtype="int64")
    qrels = pd.DataFrame(
        {
            "query_id": with_dtype([r[0] for r in qrels_rows], draw(st.sampled_from(DTYPES))),
            "doc_id": with_dtype([r[1] for r in qrels_rows], draw(st.sampled_from(DTYPES))),
            "relevance": pd.Series([r[2] for r in qrels_rows], dtype="int64"),
        }
    )
    return run, qrels


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ----------------------------------------------------------------------------- properties


@SETTINGS
@given(run_and_qrels(), st.sampled_from(["score", "file"]))
def test_sort_run_matches_reference(data, order):
    run, _ = data
    assert_same_sorted(sort_run(run, order, warn=False), _reference_sort_run(run, order))


@SETTINGS
@given(run_and_qrels(), st.sampled_from(["score", "file"]), st.sampled_from([None, 1, 2, 5]))
def test_prepare_matches_reference(data, order, depth):
    run, qrels = data
    assert_same_arrays(
        prepare(qrels, run, order=order, depth=depth),
        _reference_prepare(qrels, run, order=order, depth=depth),
    )


@SETTINGS
@given(run_and_qrels(with_rank=False), st.sampled_from(["score", "file"]))
def test_prepare_from_dicts_matches_prepare_from_frames(data, order):
    run, qrels = data
    run_dict: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run["query_id"], run["doc_id"], run["score"], strict=True):
        run_dict.setdefault(str(q), {})[str(d)] = float(s)
    qrels_dict: dict[str, dict[str, int]] = {}
    for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True):
        qrels_dict.setdefault(str(q), {})[str(d)] = int(g)
    if not all(math.isfinite(s) for scores in run_dict.values() for s in scores.values()):
        # a dict run is checked as a run file is: an infinite score names its query
        with pytest.raises(InputError, match="not finite"):
            prepare(qrels_dict, run_dict, order=order)
        return
    # the frame built from the dicts keeps the dicts' order, which order="file" follows
    want = _reference_prepare(
        qrels_from_dict(qrels_dict), run_from_dict(run_dict), order=order, depth=None
    )
    assert_same_arrays(prepare(qrels_dict, run_dict, order=order), want)


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.integers(0, 12),  # numeric ids compare as strings: "10" < "9"
            st.integers(0, 12),
            st.sampled_from([0, 1, 2**53, 2**53 + 1, -(2**60)]),  # ints beyond float precision
            st.sampled_from([1.0, 2.0, float("nan")]),  # rank ties and NaN ranks (sorted last)
        ),
        max_size=30,
        unique_by=lambda r: (r[0], r[1]),
    ),
    st.sampled_from(["score", "file"]),
)
def test_sort_run_on_numeric_columns_matches_reference(rows, order):
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    run = run.astype({"query_id": "int64", "doc_id": "int64", "score": "int64"})
    assert_same_sorted(sort_run(run, order, warn=False), _reference_sort_run(run, order))


# ----------------------------------------------------------------------------- examples


def test_many_queries_take_the_threaded_path():
    # enough queries for several threads; runs written query after query, in reverse order
    rng = np.random.default_rng(7)
    n_q, per = 6000, 4
    qids = np.repeat([f"q{i}" for i in range(n_q)][::-1], per)
    docs = [f"doc{x}" for x in rng.integers(0, 20, n_q * per)]
    run = pd.DataFrame(
        {"query_id": qids, "doc_id": docs, "score": rng.integers(0, 3, n_q * per) / 2}
    ).drop_duplicates(["query_id", "doc_id"])
    qrels = run.sample(frac=0.3, random_state=1)[["query_id", "doc_id"]].assign(
        relevance=lambda f: rng.integers(0, 4, len(f))
    )
    qrels = pd.concat(
        [qrels, pd.DataFrame({"query_id": ["zz"], "doc_id": ["doc1"], "relevance": [1]})]
    )
    assert_same_arrays(prepare(qrels, run, depth=3), _reference_prepare(qrels, run, depth=3))
    assert_same_sorted(sort_run(run), _reference_sort_run(run))


def test_lone_surrogates_sort_by_code_point():
    # not valid UTF-8 (and not storable in a pandas str column, so sort_run cannot return them);
    # prepare encodes them with surrogatepass, which keeps code point order
    docs = ["\ud800", "\ue000", "\ud7ff", "a\udfff", "a", "\U0001f600"]
    want = sorted(docs, reverse=True)  # all scores tie: doc_id descending
    qrels = {"q": {d: want.index(d) for d in docs}}
    for run in (
        {"q": dict.fromkeys(docs, 1.0)},
        pd.DataFrame({"query_id": "q", "doc_id": pd.Series(docs, dtype=object), "score": 1.0}),
    ):
        assert prepare(qrels, run).grades.tolist() == [list(range(len(docs)))]


def test_ids_equal_only_as_strings_are_one_query():
    run = {1: {"a": 1.0}, "1": {"b": 2.0}}
    arrays = prepare({"1": {"a": 1, "b": 0}}, run)
    assert arrays.query_ids.tolist() == ["1"]
    assert arrays.grades.tolist() == [[0, 1]] and arrays.judged.tolist() == [[True, True]]
    with pytest.raises(InputError, match="duplicate"):
        prepare({"1": {"a": 1}}, {1: {"a": 1.0}, "1": {"a": 2.0}})


def test_duplicates_are_named_as_check_run_names_them():
    run = pd.DataFrame(
        {"query_id": ["q", "q2", "q", "q2"], "doc_id": ["a", "b", "c", "b"], "score": 1.0}
    )
    with pytest.raises(InputError) as fast:
        prepare({"q": {"a": 1}}, run)
    with pytest.raises(InputError) as slow:
        check_run(run)
    assert str(fast.value) == str(slow.value)
    qrels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "relevance": [1, 2]})
    with pytest.raises(InputError) as fast:
        prepare(qrels, run.iloc[:1])
    with pytest.raises(InputError) as slow:
        check_qrels(qrels)
    assert str(fast.value) == str(slow.value)


def test_empty_inner_dicts_are_no_queries():
    arrays = prepare({"q": {"a": 1}}, {"q": {"a": 1.0}, "x": {}})
    assert arrays.n_run_queries_without_qrels == 0
    assert prepare({"q": {"a": 1}}, {"q": {}}).n_missing_from_run == 1


def test_bad_dict_values_raise_as_the_converters_do():
    with pytest.raises(InputError, match="not a number"):
        prepare({"q": {"a": 1}}, {"q": {"a": None}})
    with pytest.raises(InputError, match="NaN"):
        prepare({"q": {"a": 1}}, {"q": {"a": float("nan")}})
    with pytest.raises(InputError, match="not an integer"):
        prepare({"q": {"a": True}}, {"q": {"a": 1.0}})
    with pytest.raises(InputError, match="not an integer"):
        prepare({"q": {"a": 1.5}}, {"q": {"a": 1.0}})
    assert prepare({"q": {"a": 2.0}}, {"q": {"a": "0.5"}}).grades.tolist() == [[2]]
