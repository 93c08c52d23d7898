"""PROC and %PROC: the ideal reordering of a candidate pool, hand-computed ceilings, a naive
reference on random pools, ceiling invariances, and BM25 runs on the graded subsets."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_measures_graded import naive, naive_weights, ranked_lists, scale

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.measures import parse_measure
from ragnb.measures.graded import map_grades
from ragnb.measures.proc import ideal_reorder, proc_table
from ragnb.retrievers.retrieve import BM25Retriever

NA = math.nan

# ----------------------------------------------------------------------------- ideal_reorder


def test_ideal_reorder_sorts_the_pool_by_grade():
    # pool (top 6): a(1) x(unjudged) c(4) d(-1) y(unjudged) e(3); b(5) is ranked 7th, left out.
    # Grade descending, unjudged as grade 0, ties (x, y) in the original order: c e a x y d
    qrels = {"q1": {"a": 1, "b": 5, "c": 4, "d": -1, "e": 3}}
    run = pd.DataFrame(
        {
            "query_id": ["q1"] * 7 + ["q9"] * 2,
            "doc_id": ["a", "x", "c", "d", "y", "e", "b", "m", "n"],
            "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 2.0, 1.0],
            "tag": ["bm25"] * 9,
        }
    )
    before = run.copy()
    out = ideal_reorder(run, qrels, 6)
    pd.testing.assert_frame_equal(run, before)  # pure
    q1 = out[out["query_id"] == "q1"]
    assert q1["doc_id"].tolist() == ["c", "e", "a", "x", "y", "d"]
    assert q1["rank"].tolist() == [1, 2, 3, 4, 5, 6]
    assert q1["score"].tolist() == [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]  # pool_depth + 1 - rank
    assert out[out["query_id"] == "q9"]["doc_id"].tolist() == ["m", "n"]  # no qrels: unchanged
    assert set(out.columns) == {"query_id", "doc_id", "score", "tag", "rank"}
    assert out["rank"].dtype == np.int64 and out["score"].dtype == np.float64
    # both ordering policies read the new order back
    for order in ("score", "file"):
        res = evaluate(qrels, out, ["P(rel=3)@2"], order=order)
        assert res.aggregate_to_dict() == {"P(rel=3)@2": 1.0}
    # ties among judged grades keep the original order too
    tied = ideal_reorder({"q": {"p": 0.9, "r": 0.8, "s": 0.7}}, {"q": {"p": 2, "r": 4, "s": 4}}, 3)
    assert tied["doc_id"].tolist() == ["r", "s", "p"]


def test_ideal_reorder_by_ra_nwg_weights():
    # pool a=5, b0..b9=4, c=3 (N = 12): w5 = 1, w4 = 0.05 < w3 = 0.1 (see test_measures_graded),
    # so RA-nWG's ideal takes c before the grade-4 documents
    qrels = {"q": {"a": 5, "c": 3} | {f"b{i}": 4 for i in range(10)}}
    run = {"q": {"b0": 0.9, "b1": 0.8, "c": 0.7, "a": 0.6, "b2": 0.5}}
    assert ideal_reorder(run, qrels, 4)["doc_id"].tolist() == ["a", "b0", "b1", "c"]
    by_w = ideal_reorder(run, qrels, 4, measure="RA-nWG@2")
    assert by_w["doc_id"].tolist() == ["a", "c", "b0", "b1"]
    # a = 0: w4 = 0.5 > w3 = 0.1, the grade order again
    flat = ideal_reorder(run, qrels, 4, measure=parse_measure("RA-nWG(a=0)@2"))
    assert flat["doc_id"].tolist() == ["a", "b0", "b1", "c"]
    # on this pool the grade order is not RA-nWG's ceiling, the weight order is
    res = proc_table(qrels, run, ["RA-nWG@2"], 4)
    assert res.table["proc"].tolist() == [1.0]  # (a + c) / (a + c)
    graded = evaluate(qrels, ideal_reorder(run, qrels, 4), ["RA-nWG@2"]).aggregate_to_dict()
    assert graded["RA-nWG@2"] == pytest.approx(1.05 / 1.1)  # (a + b0) / (a + c)


def test_ideal_reorder_errors():
    with pytest.raises(InputError, match="pool_depth must be a positive integer"):
        ideal_reorder({"q": {"a": 1.0}}, {"q": {"a": 1}}, 0)
    with pytest.raises(InputError, match="pool_depth"):
        ideal_reorder({"q": {"a": 1.0}}, {"q": {"a": 1}}, 5.0)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"query 'q'.*grade 7"):
        ideal_reorder({"q": {"a": 1.0}}, {"q": {"a": 7}}, 5, measure="RA-nWG@5")


# ----------------------------------------------------------------------------- proc_table

# q1 pool of judgements a=5 b=4 c=1 d=5 (d never retrieved): N = 4, r5 = 1/(2/4) = 2,
#    r4 = 0.5/(1/4) = 2 -> w4 = min(1, 1) = 1; weights a = b = d = 1, c = 0
#    run c a b x -> candidate pool (depth 3) c a b, ideally a b c
# q2 pool e=3 f=2: no grade 5 (fallback w3 = 0.2), no grade >= 4 (N-Recall, CompleteHit NA)
#    run f e -> ideally e f
QRELS = {"q1": {"a": 5, "b": 4, "c": 1, "d": 5}, "q2": {"e": 3, "f": 2}}
RUN = {"q1": {"c": 0.9, "a": 0.8, "b": 0.7, "x": 0.6}, "q2": {"f": 0.9, "e": 0.8}}
EXPECTED = {  # (actual q1, q2), (PROC q1, q2)
    # q1: c + a = 1 over a + b = 2 -> 0.5, ideal a + b = 2 -> 1; q2: f + e = 0.2 over 0.2
    "RA-nWG@2": ((0.5, 1.0), (1.0, 1.0)),
    # q1: 1 of 3 at K=1 -> (a) 1/1 ideally; q2: e = 0.2 over 0.2 ideally, f = 0 actually
    "RA-nWG@1": ((0.0, 0.0), (1.0, 1.0)),
    # q1: a / min(2, 3) -> a, b / 2
    "N-Recall4+@2": ((0.5, NA), (1.0, NA)),
    # q1: a, b / min(3, 3) both: d is not in the pool, so the ceiling is 2/3
    "N-Recall4+@3": ((2 / 3, NA), (2 / 3, NA)),
    # q1: a / min(3, 2) both
    "N-Recall5@3": ((0.5, NA), (0.5, NA)),
    # q1: E = {a, b, d}, d never in the pool: 0 even ideally
    "CompleteHit@3": ((0.0, NA), (0.0, NA)),
    # P(rel=4): q1 a / 2 -> a, b / 2; q2 none
    "P(rel=4)@2": ((0.5, 0.0), (1.0, 0.0)),
}


def test_proc_table_hand_computed():
    res = proc_table(QRELS, RUN, list(EXPECTED), 3)
    assert res.pool_depth == 3
    t = res.table.set_index("measure")
    assert list(t.index) == list(EXPECTED)
    assert list(res.table.columns) == [
        "measure",
        "family",
        "cutoff",
        "actual",
        "proc",
        "pct_proc",
        "n_valid",
        "n_queries",
    ]
    pq = res.per_query.set_index(["measure", "query_id"])
    for name, (actual, proc) in EXPECTED.items():
        np.testing.assert_allclose(pq.loc[name]["actual"], actual, atol=1e-15, err_msg=name)
        np.testing.assert_allclose(pq.loc[name]["proc"], proc, atol=1e-15, err_msg=name)
        valid = [i for i in range(2) if not math.isnan(actual[i])]
        mean_a = np.mean([actual[i] for i in valid])
        mean_p = np.mean([proc[i] for i in valid])
        assert t.loc[name, "n_valid"] == len(valid) and t.loc[name, "n_queries"] == 2
        assert t.loc[name, "actual"] == pytest.approx(mean_a, abs=1e-15)
        assert t.loc[name, "proc"] == pytest.approx(mean_p, abs=1e-15)
        if mean_p > 0:
            assert t.loc[name, "pct_proc"] == pytest.approx(mean_a / mean_p, abs=1e-15)
        else:
            assert math.isnan(t.loc[name, "pct_proc"])  # CompleteHit@3: a ceiling of 0
    # %PROC is the ratio of the means (Table 4), not the mean of the per-query ratios
    assert t.loc["RA-nWG@2", "pct_proc"] == pytest.approx(0.75)  # (0.5 + 1)/2 over (1 + 1)/2
    assert t.loc["RA-nWG@2", "cutoff"] == 2 and t.loc["RA-nWG@2", "family"] == "RA-nWG"
    assert pq.loc[("RA-nWG@2", "q1"), "pct_proc"] == 0.5
    assert math.isnan(pq.loc[("CompleteHit@3", "q1"), "pct_proc"])  # PROC 0
    assert math.isnan(pq.loc[("N-Recall4+@2", "q2"), "pct_proc"])  # NA


def test_proc_table_with_a_first_stage_pool():
    # the pool is the first stage's top 3 (a c x); the evaluated run (a reranking that also
    # pulled in b from elsewhere) has a better top 2 than that pool allows
    pool_run = {"q1": {"a": 0.9, "c": 0.8, "x": 0.7, "b": 0.6}}
    run = {"q1": {"b": 0.9, "a": 0.8, "c": 0.7}}
    qrels = {"q1": QRELS["q1"]}
    own = proc_table(qrels, run, ["N-Recall4+@2"], 3).table
    first = proc_table(qrels, run, ["N-Recall4+@2"], 3, pool_run=pool_run).table
    assert own["proc"].tolist() == [1.0]  # b, a
    assert first["proc"].tolist() == [0.5]  # only a of the pool
    assert first["actual"].tolist() == [1.0] and first["pct_proc"].tolist() == [2.0]


def test_proc_table_refusals():
    for name, msg in [
        ("Harm@2", "lower is better"),
        ("Judged@2", "not a utility"),
        ("F_e(alpha=0.5)@1", "N_p estimate"),
        ("RA-nWG-nov(beta=0.5)@2", "sources"),
        ("nDCG", "reads the whole run"),
        ("RA-nWG@4", "reads 4 ranks, more than the candidate pool of 3"),
    ]:
        with pytest.raises(InputError, match=msg):
            proc_table(QRELS, RUN, [name], 3)
    with pytest.raises(InputError, match="pool_depth"):
        proc_table(QRELS, RUN, ["RA-nWG@2"], -1)
    with pytest.raises(InputError, match="no measures"):
        proc_table(QRELS, RUN, [], 3)


# ----------------------------------------------------------------------------- naive reference

DOCS = [f"d{i}" for i in range(12)]
QIDS = ["q0", "q1", "q2"]
pool_st = st.dictionaries(st.sampled_from(DOCS[:9]), st.integers(-1, 5), min_size=1, max_size=9)
run_q_st = st.lists(st.sampled_from(DOCS), unique=True, max_size=12).map(
    lambda docs: {d: float(len(docs) - i) for i, d in enumerate(docs)}
)
qrels_st = st.dictionaries(st.sampled_from(QIDS), pool_st, min_size=1, max_size=3)
run_st = st.dictionaries(st.sampled_from(QIDS), run_q_st, max_size=3)


def naive_ideal(qrels_q: dict[str, int], ranked: list[str], depth: int, params=None) -> list[str]:
    """The top ``depth`` of ``ranked`` by weight (RA-nWG) or grade, descending; stable."""
    pool = ranked[:depth]
    if params is None:
        return sorted(pool, key=lambda d: -qrels_q.get(d, 0))
    w = naive_weights(list(qrels_q.values()), *params)

    def key(d):
        return (-w[scale(qrels_q[d])], -qrels_q[d]) if d in qrels_q else (0.0, 0)

    return sorted(pool, key=key)


@st.composite
def proc_case(draw):
    depth = draw(st.integers(1, 12))
    k = draw(st.integers(1, depth))
    params = (
        draw(st.sampled_from([0.0, 1.0, 2.0])),
        draw(st.sampled_from([0.25, 1.0])),
        draw(st.sampled_from([0.05, 1.0])),
        0.2,
        1.0,
    )
    return depth, k, params


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, case=proc_case())
def test_proc_agrees_with_naive_reference_and_bounds_actual(qrels, run, case):
    depth, k, params = case
    a, cap3, cap4, fb3, fb4 = params
    weighted = f"RA-nWG(a={a},cap3={cap3},cap4={cap4},fb3={fb3},fb4={fb4})@{k}"
    graded = [f"N-Recall4+@{k}", f"N-Recall5@{k}", f"CompleteHit@{k}", f"Precision4+@{k}"]
    others = [f"P(rel=2)@{k}", f"R@{k}", f"nDCG@{k}", f"RR@{k}", f"Success(rel=3)@{k}"]
    res = proc_table(qrels, run, [weighted, *graded, *others], depth)
    pq = res.per_query.set_index(["measure", "query_id"])
    ranked = ranked_lists(run)
    for name in [weighted, *graded]:
        canonical = str(parse_measure(name))
        p = params if name == weighted else None
        for q in qrels:
            ideal = naive_ideal(qrels[q], ranked.get(q, []), depth, p)
            want = naive(canonical, qrels[q], ideal)
            got = pq.loc[(canonical, q), "proc"]
            assert got == pytest.approx(want, abs=1e-12, nan_ok=True), (name, q)
    # a ceiling: never below the run's own value, and the normalised ones never above 1
    actual, proc = pq["actual"].to_numpy(), pq["proc"].to_numpy()
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(proc))
    ok = ~np.isnan(actual)
    assert (proc[ok] >= actual[ok] - 1e-12).all()
    assert (proc[ok] <= 1 + 1e-12).all()
    pct = res.table["pct_proc"].to_numpy()
    assert ((pct[~np.isnan(pct)] >= 0) & (pct[~np.isnan(pct)] <= 1 + 1e-12)).all()


@settings(max_examples=30, deadline=None)
@given(qrels=qrels_st, run=run_st, k=st.integers(1, 4), a=st.sampled_from([0.0, 1.0, 2.0]))
def test_ra_nwg_proc_is_the_best_subset_of_the_pool(qrels, run, k, a):
    # brute force over every K-subset of the candidate pool (depth 6)
    name = f"RA-nWG(a={a},cap4=0.5)@{k}"
    got = proc_table(qrels, run, [name], 6).per_query.set_index("query_id")["proc"]
    ranked = ranked_lists(run)
    for q, pool in qrels.items():
        cands = ranked.get(q, [])[:6]
        best = max(
            (naive(name, pool, list(s)) for s in itertools.combinations(cands, min(k, len(cands)))),
            default=naive(name, pool, []),
        )
        assert got[q] == pytest.approx(best, abs=1e-12, nan_ok=True)


# ----------------------------------------------------------------------------- real data


@pytest.fixture(scope="module", params=["dbpedia", "msmarco"])
def graded_bm25(request, dbpedia_path: Path, msmarco_path: Path):
    path, grade_map = {
        "dbpedia": (dbpedia_path, "dbpedia-entity"),
        "msmarco": (msmarco_path, "trec-dl"),
    }[request.param]
    ds = read_beir(path)
    run = BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, 100)
    return map_grades(ds.qrels, grade_map), run


def test_real_data_ceilings(graded_bm25):
    qrels, run = graded_bm25
    names = [
        f"{m}@{k}"
        for k in (10, 30)
        for m in ("RA-nWG", "N-Recall4+", "N-Recall5", "CompleteHit", "Precision4+", "nDCG")
    ]
    res50 = proc_table(qrels, run, names, 50)
    res100 = proc_table(qrels, run, names, 100)
    t50 = res50.table.set_index("measure")
    # the actual side is evaluate()'s, NA counts included
    agg = evaluate(qrels, run, names).aggregate.set_index("measure")
    np.testing.assert_allclose(t50["actual"], agg.loc[names, "value"], atol=1e-15)
    np.testing.assert_array_equal(t50["n_valid"], agg.loc[names, "n_valid"])
    for res in (res50, res100):
        pq = res.per_query
        ok = pq["actual"].notna()
        assert (ok == pq["proc"].notna()).all()
        assert (pq.loc[ok, "proc"] >= pq.loc[ok, "actual"] - 1e-12).all()
        assert (pq.loc[ok, "proc"] <= 1 + 1e-12).all()
        assert res.table["pct_proc"].between(0, 1).all()
    # the BM25 top 50 misses good documents: RA-nWG@10's ceiling is below 1, and a deeper pool
    # raises every ceiling, per query (it holds the shallower one)
    assert t50.loc["RA-nWG@10", "proc"] < 1
    deeper = res100.per_query["proc"].to_numpy() - res50.per_query["proc"].to_numpy()
    assert (np.nan_to_num(deeper) >= -1e-12).all()
    assert (res100.table["proc"] >= res50.table["proc"] - 1e-12).all()
