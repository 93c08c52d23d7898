"""Incomplete judgements: bpref, condensed-list nDCG' and P', and the Judged@K gap warning.

Hand-computed values, a naive reference written from trec_eval's loops on random inputs, edge
cases, and agreement with ir_measures (pytrec_eval, i.e. trec_eval) on real BM25 runs and on the
runs the repository carries (``tests/data/oracle``).
"""

from __future__ import annotations

import doctest
import math
import warnings
from functools import cache
from pathlib import Path

import ir_measures
import numpy as np
import oracle_data
import pandas as pd
import pytest
from generated import shares_no_query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragnb.measures.incomplete as incomplete_module
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.measures import (
    bpref,
    condensed_ndcg,
    condensed_precision,
    judged_gap_warning,
    ndcg_at_k,
    parse_measure,
    precision_at_k,
)

TOL = 1e-9
L2 = math.log2

# ----------------------------------------------------------------------------- a tiny example
#
# q1 judged: a=2, b=0, c=1, d=0, e=-1 (pool, unjudged), f=1   R(rel 1) = 3, N = 2
#    ranking: b(0) x(unjudged) a(2) e(-1) c(1) d(0) f(1)
# q2 judged: g=1 only (no judged non-relevant)                 R = 1, N = 0
#    ranking: y(unjudged) g(1)
# q3 judged: h=0 only                                          R = 0
#    ranking: h
QRELS = {
    "q1": {"a": 2, "b": 0, "c": 1, "d": 0, "e": -1, "f": 1},
    "q2": {"g": 1},
    "q3": {"h": 0},
}
RUN = {
    "q1": {"b": 7, "x": 6, "a": 5, "e": 4, "c": 3, "d": 2, "f": 1},
    "q2": {"y": 2, "g": 1},
    "q3": {"h": 1},
}

EXPECTED = {
    # q1: a and c have b above (1 non-relevant): 1 - min(1, 3)/min(2, 3) = 1/2 each;
    #     f has b, d above: 1 - 2/2 = 0. (1/2 + 1/2 + 0) / 3 = 1/3.
    # q2: g has no judged non-relevant above: 1 / 1. q3: R = 0 -> 0.
    "Bpref": [1 / 3, 1.0, 0.0],
    # rel 2: R = 1 (a), N = 4 (b, c, d, f); a has b above: 1 - min(1, 1)/min(4, 1) = 0
    "Bpref(rel=2)": [0.0, 0.0, 0.0],
    # cut at 3: q1 ranks b x a -> a: 1/2, over R = 3; q2 g is rank 2 -> 1
    "Bpref@3": [1 / 6, 1.0, 0.0],
    # condensed q1: b(0) a(2) c(1) d(0) f(1); q2: g(1); q3: h(0)
    "P'@2": [1 / 2, 1 / 2, 0.0],
    "P'@5": [3 / 5, 1 / 5, 0.0],
    "P'(rel=2)@2": [1 / 2, 0.0, 0.0],
    # q1 DCG@3 = 0 + 2/log2(3) + 1/2; ideal 2, 1, 1 -> 2 + 1/log2(3) + 1/2
    "nDCG'@3": [(2 / L2(3) + 1 / 2) / (2 + 1 / L2(3) + 1 / 2), 1.0, 0.0],
}


def test_hand_computed_values_per_query():
    res = evaluate(QRELS, RUN, list(EXPECTED))
    wide = res.per_query_wide()
    for name, values in EXPECTED.items():
        np.testing.assert_allclose(wide[name].to_numpy(), values, atol=1e-12, err_msg=name)


def test_public_functions_agree_with_evaluate():
    agg = evaluate(QRELS, RUN, list(EXPECTED)).aggregate_to_dict()
    assert bpref(QRELS, RUN) == pytest.approx(agg["Bpref"])
    assert bpref(QRELS, RUN, 3) == pytest.approx(agg["Bpref@3"])
    assert bpref(QRELS, RUN, rel=2) == pytest.approx(agg["Bpref(rel=2)"])
    assert condensed_precision(QRELS, RUN, 5) == pytest.approx(agg["P'@5"])
    assert condensed_precision(QRELS, RUN, 2, rel=2) == pytest.approx(agg["P'(rel=2)@2"])
    assert condensed_ndcg(QRELS, RUN, 3) == pytest.approx(agg["nDCG'@3"])


def test_condensing_changes_the_full_list_measures():
    # on q1, the unjudged x at rank 2 costs P@2 and nDCG@3 but not their condensed forms
    q1 = {"q1": QRELS["q1"]}
    run1 = {"q1": RUN["q1"]}
    assert precision_at_k(q1, run1, 2) == 0.0 and condensed_precision(q1, run1, 2) == 0.5
    assert ndcg_at_k(q1, run1, 3) < condensed_ndcg(q1, run1, 3)


def test_doctests():
    result = doctest.testmod(incomplete_module)
    assert result.attempted >= 8 and result.failed == 0


# ----------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "name", ["Bpref", "Bpref(rel=2)", "Bpref@10", "nDCG'", "nDCG'@10", "P'@10", "P'(rel=2)@5"]
)
def test_canonical_names_round_trip(name):
    m = parse_measure(name)
    assert str(m) == name and parse_measure(str(m)) == m


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("bpref", "Bpref"),
        ("bpref(rel=2)", "Bpref(rel=2)"),
        ("nDCG(judged_only=True)@10", "nDCG'@10"),
        ("nDCG(judged_only=True)", "nDCG'"),
        ("nDCG(judged_only=1)@10", "nDCG'@10"),
        ("nDCG( judged_only = True ) @ 10", "nDCG'@10"),
        ("P(judged_only=True)@10", "P'@10"),
        ("P(rel=2,judged_only=True)@10", "P'(rel=2)@10"),
        ("P(rel=1,judged_only=True)@5", "P'@5"),
        ("P'(rel=1)@5", "P'@5"),
    ],
)
def test_aliases_normalise(alias, canonical):
    assert str(parse_measure(alias)) == canonical


def test_ir_measures_prints_the_aliases_we_read():
    for theirs, ours in [
        (ir_measures.nDCG(judged_only=True) @ 10, "nDCG'@10"),
        (ir_measures.P(rel=2, judged_only=True) @ 10, "P'(rel=2)@10"),
        (ir_measures.Bpref(rel=2), "Bpref(rel=2)"),
    ]:
        assert str(parse_measure(str(theirs))) == ours


def test_bad_names_raise():
    with pytest.raises(InputError, match="cutoff is required"):
        parse_measure("P'")
    with pytest.raises(InputError, match="unknown parameter 'rel'"):
        parse_measure("nDCG'(rel=2)@10")


# ----------------------------------------------------------------------------- naive reference


def _ranking(run_q: dict[str, float]) -> list[str]:
    """trec_eval order: score descending, then doc_id descending."""
    return [d for d, _ in sorted(run_q.items(), key=lambda x: (x[1], x[0]), reverse=True)]


def naive(name: str, qrels_q: dict[str, int], run_q: dict[str, float]) -> float:
    """trec_eval's loops (m_bpref.c; -J for the condensed lists), in plain Python."""
    m = parse_measure(name)
    k, rel = m.cutoff, m.params.get("rel", 1)
    ranked = _ranking(run_q)
    if m.family == "Bpref":
        big_r = sum(1 for g in qrels_q.values() if g >= 0 and g >= rel)
        big_n = sum(1 for g in qrels_q.values() if 0 <= g < rel)
        nonrel, total = 0, 0.0
        for d in ranked if k is None else ranked[:k]:
            g = qrels_q.get(d)
            if g is None or g < 0:
                continue
            if g < rel:
                nonrel += 1
            else:
                total += 1 - min(nonrel, big_r) / min(big_n, big_r) if nonrel else 1.0
        return total / big_r if big_r else 0.0
    condensed = [d for d in ranked if qrels_q.get(d, -1) >= 0]
    top = condensed if k is None else condensed[:k]
    if m.family == "P'":
        return sum(qrels_q[d] >= rel for d in top) / k

    def dcg(gains):
        return sum(g / math.log2(i + 2) for i, g in enumerate(gains))

    ideal = sorted((max(g, 0) for g in qrels_q.values()), reverse=True)
    ideal = ideal if k is None else ideal[:k]
    return dcg([qrels_q[d] for d in top]) / dcg(ideal) if dcg(ideal) > 0 else 0.0


DOCS = [f"d{i}" for i in range(12)]
QIDS = ["q0", "q1", "q2", "q3"]
grades = st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=9)
scores = st.dictionaries(st.sampled_from(DOCS), st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]))
qrels_st = st.dictionaries(st.sampled_from(QIDS), grades, min_size=1, max_size=4)
run_st = st.dictionaries(st.sampled_from(QIDS), scores, max_size=4)


@st.composite
def measure_names(draw):
    k = draw(st.integers(1, 14))
    rel = draw(st.integers(0, 3))
    binary = f"(rel={rel})" if rel != 1 else ""
    return [f"Bpref{binary}", f"Bpref{binary}@{k}", f"P'{binary}@{k}", f"nDCG'@{k}", "nDCG'"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, names=measure_names())
def test_agrees_with_naive_reference(qrels, run, names):
    if shares_no_query(qrels, run):  # an error, not zeros
        with pytest.raises(InputError, match="share no query id"):
            evaluate(qrels, run, names)
        return
    wide = evaluate(qrels, run, names).per_query_wide()
    for name in names:
        canonical = str(parse_measure(name))
        for qid in qrels:
            expected = naive(name, qrels[qid], run.get(qid, {}))
            assert wide.loc[qid, canonical] == pytest.approx(expected, abs=1e-12), (name, qid)


@settings(max_examples=40, deadline=None)
@given(qrels=qrels_st, run=run_st, k=st.integers(1, 14))
def test_invariances(qrels, run, k):
    if shares_no_query(qrels, run):  # an error, not zeros
        with pytest.raises(InputError, match="share no query id"):
            evaluate(qrels, run, ["Bpref"])
        return
    wide = evaluate(qrels, run, ["Bpref", f"P'@{k}", f"nDCG'@{k}"]).per_query_wide()
    assert ((wide >= 0) & (wide <= 1 + 1e-12)).all().all()
    # adding unjudged documents anywhere changes none of the three
    padded = {
        q: {**docs, **{f"u{i}": s for i, s in enumerate(docs.values())}} for q, docs in run.items()
    }
    again = evaluate(qrels, padded, ["Bpref", f"P'@{k}", f"nDCG'@{k}"]).per_query_wide()
    pd.testing.assert_frame_equal(wide, again)


# ----------------------------------------------------------------------------- edge cases


def test_no_judged_non_relevant_makes_bpref_the_recall():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"x": 3, "a": 2, "y": 1.5, "b": 1}}
    assert bpref(qrels, run) == pytest.approx(2 / 3)
    assert evaluate(qrels, run, ["R@100"]).aggregate_to_dict()["R@100"] == pytest.approx(2 / 3)


def test_empty_run_and_missing_queries_score_zero():
    empty = pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
    res = evaluate(QRELS, empty, ["Bpref", "P'@5", "nDCG'@5", "nDCG'"])
    assert (res.per_query["value"] == 0).all()
    assert res.counts["queries_missing_from_run"] == 3


def test_all_unjudged_documents_score_zero():
    run = {"q1": {"x": 3, "y": 2, "z": 1}}
    res = evaluate({"q1": QRELS["q1"]}, run, ["Bpref", "P'@2", "nDCG'@2", "Judged@3"])
    assert res.aggregate_to_dict() == {"Bpref": 0.0, "P'@2": 0.0, "nDCG'@2": 0.0, "Judged@3": 0.0}


def test_only_non_relevant_judged_gives_zero_not_nan():
    res = evaluate({"q": {"a": 0, "b": 0}}, {"q": {"a": 2, "b": 1}}, ["Bpref", "P'@2", "nDCG'"])
    assert res.aggregate_to_dict() == {"Bpref": 0.0, "P'@2": 0.0, "nDCG'": 0.0}


def test_negative_grades_are_unjudged_for_these_measures_only():
    qrels = {"q": {"a": 1, "n": -1, "b": 0}}
    run = {"q": {"n": 3, "b": 2, "a": 1}}
    got = evaluate(qrels, run, ["P'@1", "Judged@1", "Bpref"]).aggregate_to_dict()
    # condensed list: b, a; n (grade -1) is removed from it but counts for Judged
    assert got == {"P'@1": 0.0, "Judged@1": 1.0, "Bpref": 0.0}


def test_condensed_measures_read_the_whole_run_in_evaluate():
    # the first judged document is at rank 60; P@1 would let evaluate cap the depth at 1
    run = {"q": {**{f"u{i:02d}": 100 - i for i in range(59)}, "a": 1.0}}
    got = evaluate({"q": {"a": 1}}, run, ["P@1", "P'@1", "nDCG'@1"]).aggregate_to_dict()
    assert got == {"P@1": 0.0, "P'@1": 1.0, "nDCG'@1": 1.0}
    assert parse_measure("P'@1").depth is None and parse_measure("Bpref@5").depth == 5


def test_bpref_at_k_is_bpref_of_the_cut_run():
    cut = {q: dict(list(sorted(d.items(), key=lambda x: -x[1]))[:3]) for q, d in RUN.items()}
    assert bpref(QRELS, RUN, 3) == pytest.approx(bpref(QRELS, cut))


# ----------------------------------------------------------------------------- judged gap


def test_judged_gap_warning_reports_pairs_beyond_the_margin():
    with pytest.warns(UserWarning, match=r"Judged@10 differs by more than 0.1.*bm25 0.900"):
        pairs = judged_gap_warning({"bm25": 0.9, "dense": 0.6, "hybrid": 0.85}, measure="Judged@10")
    assert [(a, b) for a, b, _ in pairs] == [("bm25", "dense"), ("hybrid", "dense")]
    assert [round(d, 10) for _, _, d in pairs] == [0.3, 0.25]


def test_judged_gap_warning_is_silent_within_the_margin():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert judged_gap_warning({"a": 0.5, "b": 0.75}, margin=0.25) == []  # equal: tolerated
        assert judged_gap_warning(pd.Series({"a": 0.5, "b": 0.55})) == []
        assert judged_gap_warning({"only": 0.3}) == []


def test_judged_gap_warning_on_real_rates():
    qrels = {"q": {"a": 1, "b": 0, "c": 1}}
    runs = {"pool": {"q": {"a": 3, "b": 2, "c": 1}}, "new": {"q": {"x": 3, "y": 2, "a": 1}}}
    rates = {
        s: evaluate(qrels, r, ["Judged@3"]).aggregate_to_dict()["Judged@3"] for s, r in runs.items()
    }
    with pytest.warns(UserWarning):
        assert judged_gap_warning(rates)[0][:2] == ("pool", "new")


@pytest.mark.parametrize(
    ("rates", "margin", "message"),
    [
        ({"a": 1.5}, 0.1, "system 'a'.*not in \\[0, 1\\]"),
        ({"a": float("nan")}, 0.1, "system 'a'"),
        ({"a": "0.5"}, 0.1, "must be a number"),
        ({"a": 0.5}, -0.1, "margin"),
        ({"a": 0.5}, True, "margin"),
    ],
)
def test_judged_gap_warning_validates(rates, margin, message):
    with pytest.raises(InputError, match=message):
        judged_gap_warning(rates, margin)


# ----------------------------------------------------------------------------- oracle


@cache
def bm25_run(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Qrels and a BM25 top-100 run of the judged queries of a BEIR folder (shared, cached)."""
    from ragnb.retrievers.retrieve import BM25Retriever

    ds = read_beir(path)
    return ds.qrels, BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, 100)


def max_abs_diff(qrels, run, pairs: dict[str, str], provider=ir_measures.pytrec_eval) -> dict:
    """Max |ragnb - ir_measures| per-query difference for each {ragnb name: ir_measures name}."""
    wide = evaluate(qrels, run, list(pairs)).per_query_wide()
    out = {}
    for ours, theirs in pairs.items():
        values = {
            m.query_id: m.value
            for m in provider.iter_calc([ir_measures.parse_measure(theirs)], qrels, run)
        }
        assert set(values) == set(wide.index), ours
        out[ours] = max(abs(wide.loc[q, ours] - v) for q, v in values.items())
    return out


PAIRS = {
    "Bpref": "Bpref",
    "Bpref(rel=2)": "Bpref(rel=2)",
    "nDCG'@10": "nDCG(judged_only=True)@10",
    "nDCG'": "nDCG(judged_only=True)",
    "P'@10": "P(judged_only=True)@10",
    "P'(rel=2)@5": "P(rel=2,judged_only=True)@5",
}


SOURCES = ("shared", "carried-bm25", "carried-dense")


def qrels_and_run(request, source: str, fixture: str, case: str) -> tuple:
    """The shared dataset's BM25 run (``source`` "shared"), or a run the repository carries."""
    if source == "shared":
        return bm25_run(request.getfixturevalue(fixture))
    return oracle_data.qrels(case), oracle_data.run(case, source.removeprefix("carried-"))


@pytest.mark.parametrize("source", SOURCES)
def test_dbpedia_with_zero_grades_agrees_with_ir_measures(request, source):
    qrels, run = qrels_and_run(request, source, "dbpedia_path", "dbpedia-like")
    assert (qrels["relevance"] == 0).any()
    wide = evaluate(qrels, run, ["Judged", "nDCG@10", "nDCG'@10"]).per_query_wide()
    assert wide["Judged"].mean() < 0.8  # holes below the top 10: condensing matters somewhere
    assert (wide["nDCG@10"] != wide["nDCG'@10"]).any()
    diffs = max_abs_diff(qrels, run, PAIRS)
    assert max(diffs.values()) <= TOL, diffs
    # the judged non-relevant documents make bpref differ from recall here
    agg = evaluate(qrels, run, ["Bpref", "R@100"]).aggregate_to_dict()
    assert abs(agg["Bpref"] - agg["R@100"]) > 0.05


@pytest.mark.parametrize("source", SOURCES)
def test_dbpedia_bpref_at_k_is_trec_eval_on_the_cut_run(request, source):
    qrels, run = qrels_and_run(request, source, "dbpedia_path", "dbpedia-like")
    ours = evaluate(qrels, run, ["Bpref@10"]).per_query_wide()["Bpref@10"]
    cut = run[run["rank"] <= 10]
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Bpref], qrels, cut)}
    assert set(theirs) <= set(ours.index) and len(theirs) >= 20
    assert max(abs(ours[q] - v) for q, v in theirs.items()) <= TOL


# queries whose nDCG'@10 the condensed list lifts above nDCG@10: SciFact 300, the carried case 50
LIFTED = {"shared": 50, "carried-bm25": 15, "carried-dense": 15}


@pytest.mark.parametrize("source", SOURCES)
def test_scifact_agrees_with_ir_measures(request, source):
    qrels, run = qrels_and_run(request, source, "scifact_path", "scifact-like")
    wide = evaluate(qrels, run, ["Judged@10", "nDCG@10", "nDCG'@10"]).per_query_wide()
    assert wide["Judged@10"].mean() < 0.2  # sparse qrels: most of the top 10 is unjudged
    assert (wide["nDCG'@10"] > wide["nDCG@10"] + 1e-9).sum() > LIFTED[source]
    diffs = max_abs_diff(qrels, run, PAIRS)
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.parametrize("system", oracle_data.SYSTEMS)
def test_carried_graded_dl_case_agrees_with_ir_measures(system):
    """The TREC DL-like case (grades 1-3, no judged 0): rel=2 is its binary convention."""
    qrels, run = oracle_data.qrels("dl-like"), oracle_data.run("dl-like", system)
    pairs = PAIRS | {"Bpref(rel=3)": "Bpref(rel=3)", "nDCG'@5": "nDCG(judged_only=True)@5"}
    diffs = max_abs_diff(qrels, run, pairs)
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.parametrize("seed", range(2))
def test_random_graded_runs_with_negative_grades_agree_with_pytrec_eval(seed):
    rng = np.random.default_rng(seed)
    docs = [f"d{i:03d}" for i in range(80)]
    qrels = pd.DataFrame(
        [
            (f"q{q}", d, int(rng.integers(-1, 4)))
            for q in range(60)
            for d in rng.choice(docs, int(rng.integers(1, 20)), replace=False)
        ],
        columns=["query_id", "doc_id", "relevance"],
    )
    run = pd.DataFrame(
        [
            (f"q{q}", d, float(rng.integers(0, 6)))  # many ties
            for q in range(5, 70)
            for d in rng.choice(docs, int(rng.integers(1, 40)), replace=False)
        ],
        columns=["query_id", "doc_id", "score"],
    )
    pairs = PAIRS | {"Bpref(rel=3)": "Bpref(rel=3)", "nDCG'@5": "nDCG(judged_only=True)@5"}
    diffs = max_abs_diff(qrels, run, pairs)
    assert max(diffs.values()) <= TOL, diffs
