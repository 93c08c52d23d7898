"""Measures: hand-computed values, names and aliases, and a naive reference on random inputs."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from generated import shares_no_query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.measures import (
    Measure,
    f_estimated,
    f_measure,
    judged_at_k,
    ndcg_at_k,
    ndcg_in_k,
    parse_measure,
    parse_measures,
    precision_at_k,
    prepare,
    recall_at_k,
    reciprocal_rank,
    success_at_k,
    t_measure,
    t_unnormalised,
)

L2 = math.log2

# ----------------------------------------------------------------------------- a tiny example
#
# q1 judged: a=2, b=0, c=1, d=1, e=-1      N_p(rel>=1) = 3 (a, c, d), N_p(rel>=2) = 1 (a)
#    run:    a .9, x .8, c .7, b .6, e .5  -> ranking a(2) x(unjudged) c(1) b(0) e(-1)
# q2 judged: f=1, g=3                      N_p(rel>=1) = 2, N_p(rel>=2) = 1 (g)
#    run:    y .9, g .5                    -> ranking y(unjudged) g(3); only 2 documents
# q3 judged: h=1                           missing from the run
# q4 in the run only                       left out
QRELS = {
    "q1": {"a": 2, "b": 0, "c": 1, "d": 1, "e": -1},
    "q2": {"f": 1, "g": 3},
    "q3": {"h": 1},
}
RUN = {
    "q1": {"a": 0.9, "x": 0.8, "c": 0.7, "b": 0.6, "e": 0.5},
    "q2": {"y": 0.9, "g": 0.5},
    "q4": {"z": 1.0},
}

# expected per-query values, in query order q1, q2, q3
EXPECTED = {
    # relevant in top K / K
    "P@2": [1 / 2, 1 / 2, 0],
    "P@5": [2 / 5, 1 / 5, 0],
    "P(rel=2)@2": [1 / 2, 1 / 2, 0],
    # relevant in top K / N_p
    "R@2": [1 / 3, 1 / 2, 0],
    "R@5": [2 / 3, 1 / 2, 0],
    "R(rel=2)@5": [1 / 1, 1 / 1, 0],
    # 1 / rank of the first relevant
    "RR": [1, 1 / 2, 0],
    "RR@1": [1, 0, 0],
    "RR(rel=2)": [1, 1 / 2, 0],
    "Success@1": [1, 0, 0],
    "Success@2": [1, 1, 0],
    # judged in top K / min(K, run length): q1 a,c,b,e judged of 5; q2 g of 2
    "Judged@2": [1 / 2, 1 / 2, 0],
    "Judged@10": [4 / 5, 1 / 2, 0],
    "Judged": [4 / 5, 1 / 2, 0],
    # q1: DCG@3 = 2 + 0 + 1/log2(4); ideal (2, 1, 1) = 2 + 1/log2(3) + 1/log2(4)
    # q2: DCG@3 = 0 + 3/log2(3);     ideal (3, 1)    = 3 + 1/log2(3)
    "nDCG@3": [2.5 / (2 + 1 / L2(3) + 0.5), (3 / L2(3)) / (3 + 1 / L2(3)), 0],
    # whole run: q1 gains (2, 0, 1, 0, 0) (e's -1 gains 0); ideal (2, 1, 1, 0, 0)
    "nDCG": [2.5 / (2 + 1 / L2(3) + 0.5), (3 / L2(3)) / (3 + 1 / L2(3)), 0],
    # n_p / (alpha K + (1 - alpha) N_p), K = 2: q1 1/(1 + 1.5), q2 1/(1 + 1)
    "F(alpha=0.5)@2": [1 / 2.5, 1 / 2, 0],
    # N_p estimated in the top 2K = 4: q1 a, c -> 2; q2 g -> 1 (its run is short)
    "F_e(alpha=0.5)@2": [1 / (1 + 1), 1 / (1 + 0.5), 0],
    # (1 - alpha) n_p - alpha n_n / K: q1, q2 n_p = 1, n_n = 1; q3 n_p = 0, n_n = 2
    "T(alpha=0.5)@2": [0.5 - 0.5 * 1 / 2, 0.5 - 0.5 * 1 / 2, -0.5 * 2 / 2],
    # K = 4, alpha = 0.25: q1 n_p = 2, n_n = 2; q2 n_p = 1, n_n = 3 (y and two empty ranks)
    "T(alpha=0.25)@4": [0.75 * 2 - 0.25 * 2 / 4, 0.75 * 1 - 0.25 * 3 / 4, -0.25],
    # (1 - alpha) n_p - alpha n_n
    "T_u(alpha=0.5)@2": [0.5 - 0.5, 0.5 - 0.5, -0.5 * 2],
    # q1 gains (2, 0, 1) re-sorted (2, 1, 0); q2 gains (0, 3) re-sorted (3, 0)
    "nDCG_inK@3": [2.5 / (2 + 1 / L2(3)), (3 / L2(3)) / 3, 0],
    # rel=2: q1 gains (2, 0, 0) already ideal; q2 (0, 3)
    "nDCG_inK(rel=2)@3": [1, (3 / L2(3)) / 3, 0],
}


def test_hand_computed_values_per_query():
    res = evaluate(QRELS, RUN, list(EXPECTED))
    wide = res.per_query_wide()
    assert wide.index.tolist() == ["q1", "q2", "q3"]
    for name, values in EXPECTED.items():
        np.testing.assert_allclose(wide[name].to_numpy(), values, rtol=0, atol=1e-12, err_msg=name)
    agg = res.aggregate_to_dict()
    for name, values in EXPECTED.items():
        assert agg[name] == pytest.approx(np.mean(values), abs=1e-12), name
    assert res.counts["queries_missing_from_run"] == 1
    assert res.counts["run_queries_without_qrels"] == 1
    assert res.counts["fe_short_runs"] == {"F_e(alpha=0.5)@2": 1}  # q2 holds 2 < 4 documents


def test_public_functions_agree_with_evaluate():
    m = lambda name: float(np.mean(EXPECTED[name]))  # noqa: E731
    assert precision_at_k(QRELS, RUN, 5) == pytest.approx(m("P@5"))
    assert precision_at_k(QRELS, RUN, 2, rel=2) == pytest.approx(m("P(rel=2)@2"))
    assert recall_at_k(QRELS, RUN, 5, rel=2) == pytest.approx(m("R(rel=2)@5"))
    assert ndcg_at_k(QRELS, RUN, 3) == pytest.approx(m("nDCG@3"))
    assert ndcg_at_k(QRELS, RUN) == pytest.approx(m("nDCG"))
    assert reciprocal_rank(QRELS, RUN, 1) == pytest.approx(m("RR@1"))
    assert success_at_k(QRELS, RUN, 2) == pytest.approx(m("Success@2"))
    assert judged_at_k(QRELS, RUN, 10) == pytest.approx(m("Judged@10"))
    assert f_measure(QRELS, RUN, 2, alpha=0.5) == pytest.approx(m("F(alpha=0.5)@2"))
    assert f_estimated(QRELS, RUN, 2, alpha=0.5) == pytest.approx(m("F_e(alpha=0.5)@2"))
    assert t_measure(QRELS, RUN, 4, alpha=0.25) == pytest.approx(m("T(alpha=0.25)@4"))
    assert t_unnormalised(QRELS, RUN, 2, alpha=0.5) == pytest.approx(m("T_u(alpha=0.5)@2"))
    assert ndcg_in_k(QRELS, RUN, 3, rel=2) == pytest.approx(m("nDCG_inK(rel=2)@3"))


def test_prepared_arrays_layout():
    arrays = prepare(QRELS, RUN)
    assert arrays.query_ids.tolist() == ["q1", "q2", "q3"]
    assert arrays.grades.tolist() == [[2, 0, 1, 0, -1], [0, 3, 0, 0, 0], [0, 0, 0, 0, 0]]
    assert arrays.judged.tolist()[:2] == [
        [True, False, True, True, True],
        [False, True, False, False, False],
    ]
    assert arrays.filled.sum(axis=1).tolist() == [5, 2, 0]
    assert arrays.n_retrieved.tolist() == [5, 2, 0]
    assert arrays.ideal[0].tolist() == [2, 1, 1, 0, -1]
    assert arrays.n_judged.tolist() == [5, 2, 1]
    assert arrays.n_relevant(1).tolist() == [3, 2, 1]
    assert arrays.n_relevant(2).tolist() == [1, 1, 0]
    assert arrays.n_missing_from_run == 1 and arrays.n_run_queries_without_qrels == 1
    capped = prepare(QRELS, RUN, depth=2)
    assert capped.grades.shape == (3, 2) and capped.n_retrieved.tolist() == [5, 2, 0]
    assert not arrays.grades.flags.writeable


def test_compute_refuses_arrays_prepared_too_shallow():
    arrays = prepare(QRELS, RUN, depth=2)
    assert parse_measure("P@2").compute(arrays).shape == (3,)
    with pytest.raises(InputError, match="depth=2"):
        parse_measure("P@3").compute(arrays)
    with pytest.raises(InputError, match="whole run"):
        parse_measure("RR").compute(arrays)
    with pytest.raises(InputError, match="4 ranks"):
        parse_measure("F_e(alpha=0.5)@2").compute(arrays)  # reads the top 2K


# ----------------------------------------------------------------------------- names

CANONICAL = [
    "P@5",
    "P(rel=2)@10",
    "R@100",
    "R(rel=2)@100",
    "RR",
    "RR@10",
    "RR(rel=2)@10",
    "Success@10",
    "Judged",
    "Judged@10",
    "nDCG",
    "nDCG@10",
    "F(alpha=0.5)@10",
    "F(alpha=0.5,rel=2)@10",
    "F(alpha=1)@10",
    "F(alpha=0)@10",
    "F(alpha=0.25)@3",
    "F_e(alpha=0.5)@10",
    "T(alpha=0.5)@10",
    "T_u(alpha=0.5)@10",
    "nDCG_inK@10",
    "nDCG_inK(rel=2)@10",
]


@pytest.mark.parametrize("name", CANONICAL)
def test_canonical_names_round_trip(name):
    m = parse_measure(name)
    assert str(m) == name == m.name
    assert parse_measure(str(m)) == m
    assert eval(repr(m), {"parse_measure": parse_measure}) == m
    assert pickle.loads(pickle.dumps(m)) == m
    rebuilt = Measure(m.family, m.cutoff, **m.params)
    assert rebuilt == m and hash(rebuilt) == hash(m)


ALIASES = {
    # trec_eval
    "ndcg_cut_10": "nDCG@10",
    "ndcg_cut.10": "nDCG@10",
    "ndcg": "nDCG",
    "P_10": "P@10",
    "P.5": "P@5",
    "recall_100": "R@100",
    "recip_rank": "RR",
    "success_10": "Success@10",
    # ranx
    "ndcg@10": "nDCG@10",
    "precision@10": "P@10",
    "recall@100": "R@100",
    "mrr": "RR",
    "mrr@10": "RR@10",
    "hit_rate@10": "Success@10",
    "f1@10": "F(alpha=0.5)@10",
    # ir_measures
    "nDCG@10": "nDCG@10",
    "NDCG@10": "nDCG@10",
    "P(rel=2)@10": "P(rel=2)@10",
    "Precision@5": "P@5",
    "Recall@100": "R@100",
    "MRR": "RR",
    "MRR@10": "RR@10",
    "Success@10": "Success@10",
    "Judged@10": "Judged@10",
    "HitRate@10": "Success@10",
    # non-canonical spellings
    "P(rel=1)@10": "P@10",
    " P @ 10 ": "P@10",
    "F(rel=2, alpha=0.50)@10": "F(alpha=0.5,rel=2)@10",
    "F(alpha=1.0)@10": "F(alpha=1)@10",
    "T(alpha=.5)@10": "T(alpha=0.5)@10",
}


@pytest.mark.parametrize(("alias", "canonical"), ALIASES.items())
def test_aliases_normalise(alias, canonical):
    assert str(parse_measure(alias)) == canonical
    assert parse_measure(alias) == parse_measure(canonical)


def test_measures_are_values():
    a, b = parse_measure("ndcg_cut_10"), parse_measure("nDCG@10")
    assert a == b and hash(a) == hash(b) and a is not b
    assert {a: 1}[b] == 1
    assert len({parse_measure(n) for n in ["P@10", "P_10", "precision@10", "P(rel=1)@10"]}) == 1
    assert parse_measure("P@10") != parse_measure("P(rel=2)@10")
    assert parse_measure("F(alpha=0.5)@10").params == {"alpha": 0.5, "rel": 1}
    with pytest.raises(AttributeError):
        a.cutoff = 5  # type: ignore[misc]
    assert parse_measure(a) is a


def test_parse_measures_dedupes_in_order():
    got = parse_measures(["P_10", "nDCG@10", "P@10", "ndcg_cut_10", "RR"])
    assert [str(m) for m in got] == ["P@10", "nDCG@10", "RR"]
    assert [str(m) for m in parse_measures("RR")] == ["RR"]
    with pytest.raises(InputError, match="no measures"):
        parse_measures([])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("foo@10", "unknown measure 'foo@10'"),
        ("dcg_burges@10", "unknown measure 'dcg_burges@10'"),
        ("NumRel@10", "takes no cutoff"),
        ("P", "cutoff is required"),
        ("P@0", "positive integer"),
        ("P@ten", "'ten' is not a positive integer"),
        ("P@10.5", "not a positive integer"),
        ("P(rel=x)@3", "rel='x' is not an integer"),
        ("P(rel=1.5)@3", "not an integer"),
        ("P(alpha=0.5)@3", "unknown parameter 'alpha'"),
        ("nDCG(rel=2)@10", "unknown parameter 'rel'"),
        ("F@10", "'alpha' is required"),
        ("F(alpha=2)@10", "outside"),
        ("F(alpha=nan)@10", "not finite"),
        ("F(alpha=0.5,alpha=0.5)@10", "given twice"),
        ("P(rel)@10", "expected param=value"),
        ("f1(alpha=0.3)@10", "given twice"),
        ("", "cannot parse"),
    ],
)
def test_bad_names_raise_input_error_naming_the_string(name, message):
    with pytest.raises(InputError, match=message) as err:
        parse_measure(name)
    assert repr(name.strip()) in str(err.value) or name == ""


def test_measure_constructor_validates():
    assert str(Measure("P", 10, rel=2)) == "P(rel=2)@10"
    assert str(Measure("RR")) == "RR"
    with pytest.raises(InputError, match="unknown measure family"):
        Measure("ndcg", 10)  # aliases are for parse_measure
    with pytest.raises(InputError, match="positive integer"):
        Measure("P", True)
    assert Measure("P", 10, rel="2") == Measure("P", 10, rel=2.0) == parse_measure("P(rel=2)@10")
    with pytest.raises(InputError, match="not an integer"):
        Measure("P", 10, rel=2.5)
    with pytest.raises(InputError, match="not an integer"):
        Measure("P", 10, rel=None)
    with pytest.raises(InputError, match="a measure must be a name"):
        parse_measure(10)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- naive reference


def _ranking(run_q: dict[str, float]) -> list[str]:
    """trec_eval order: score descending, then doc_id descending."""
    return [d for d, _ in sorted(run_q.items(), key=lambda x: (x[1], x[0]), reverse=True)]


def naive(name: str, qrels_q: dict[str, int], run_q: dict[str, float]) -> float:
    """One measure on one query, written from the definitions with plain Python."""
    m = parse_measure(name)
    k, rel = m.cutoff, m.params.get("rel", 1)
    ranked = _ranking(run_q)
    top = ranked if k is None else ranked[:k]
    is_rel = [d in qrels_q and qrels_q[d] >= rel for d in top]
    n_p = sum(is_rel)
    big_n = sum(1 for g in qrels_q.values() if g >= rel)
    if m.family == "P":
        return n_p / k
    if m.family == "R":
        return n_p / big_n if big_n else 0.0
    if m.family == "Success":
        return float(n_p > 0)
    if m.family == "RR":
        return next((1 / (i + 1) for i, r in enumerate(is_rel) if r), 0.0)
    if m.family == "Judged":
        return sum(d in qrels_q for d in top) / len(top) if top else 0.0

    def dcg(gains):
        return sum(g / math.log2(i + 2) for i, g in enumerate(gains))

    if m.family == "nDCG":
        gains = [max(qrels_q.get(d, 0), 0) for d in top]
        ideal = sorted((max(g, 0) for g in qrels_q.values()), reverse=True)
        ideal = ideal if k is None else ideal[:k]
        return dcg(gains) / dcg(ideal) if dcg(ideal) > 0 else 0.0
    if m.family == "nDCG_inK":
        gains = [max(qrels_q[d], 0) if r else 0 for d, r in zip(top, is_rel, strict=True)]
        best = dcg(sorted(gains, reverse=True))
        return dcg(gains) / best if best > 0 else 0.0
    a = m.params["alpha"]
    n_n = k - n_p
    if m.family == "F":
        den = a * k + (1 - a) * big_n
        return n_p / den if den else 0.0
    if m.family == "F_e":
        est = sum(1 for d in ranked[: 2 * k] if d in qrels_q and qrels_q[d] >= rel)
        den = a * k + (1 - a) * est
        return n_p / den if den else 0.0
    if m.family == "T":
        return (1 - a) * n_p - a * n_n / k
    if m.family == "T_u":
        return (1 - a) * n_p - a * n_n
    raise AssertionError(name)


DOCS = [f"d{i}" for i in range(12)]
QIDS = ["q0", "q1", "q2", "q3"]
grades = st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8)
scores = st.dictionaries(
    st.sampled_from(DOCS), st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, -1.0]), min_size=1
)
qrels_st = st.dictionaries(st.sampled_from(QIDS), grades, min_size=1, max_size=4)
run_st = st.dictionaries(st.sampled_from(QIDS), scores, max_size=4)


@st.composite
def measure_names(draw):
    k = draw(st.integers(1, 14))
    rel = draw(st.integers(0, 3))
    alpha = draw(st.sampled_from([0.0, 0.25, 0.5, 0.8, 1.0]))
    binary = f"(rel={rel})" if rel != 1 else ""
    both = f"(alpha={alpha},rel={rel})"
    return [
        f"P{binary}@{k}",
        f"R{binary}@{k}",
        f"Success{binary}@{k}",
        f"RR{binary}",
        f"RR{binary}@{k}",
        f"Judged@{k}",
        "Judged",
        f"nDCG@{k}",
        "nDCG",
        f"nDCG_inK{binary}@{k}",
        f"F{both}@{k}",
        f"F_e{both}@{k}",
        f"T{both}@{k}",
        f"T_u{both}@{k}",
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, names=measure_names())
def test_agrees_with_naive_reference(qrels, run, names):
    if shares_no_query(qrels, run):  # an error, not zeros
        with pytest.raises(InputError, match="share no query id"):
            evaluate(qrels, run, names)
        return
    res = evaluate(qrels, run, names)
    wide = res.per_query_wide()
    assert wide.index.tolist() == sorted(qrels)
    for name in names:
        canonical = str(parse_measure(name))
        for qid in qrels:
            expected = naive(name, qrels[qid], run.get(qid, {}))
            got = wide.loc[qid, canonical]
            assert got == pytest.approx(expected, abs=1e-12), (name, qid)
    # the depth cap evaluate picks for cutoff measures does not change their values
    cut = [n for n in names if "@" in n]
    capped = evaluate(qrels, run, cut).per_query_wide()
    arrays = prepare(qrels, run)
    for name in cut:
        np.testing.assert_allclose(
            capped[str(parse_measure(name))], parse_measure(name).compute(arrays), atol=1e-12
        )
