"""Graded set measures of Dallaire (RA-nWG, N-Recall4+/5, CompleteHit, Precision4+, Harm, novelty).

Hand-computed values, a naive per-query reference in plain Python on random pools and runs,
invariances, grade maps, and the two graded real datasets with BM25 runs.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from generated import shares_no_query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.measures import parse_measure, prepare
from ragnb.measures.graded import (
    GRADE_MAPS,
    complete_hit,
    harm_at_k,
    map_arrays,
    map_grades,
    n_recall_4plus,
    n_recall_5,
    precision_4plus,
    ra_nwg,
    rarity_weights,
)
from ragnb.measures.novelty import default_source, prepare_sources, ra_nwg_novelty
from ragnb.retrievers.retrieve import BM25Retriever

NA = math.nan

# ----------------------------------------------------------------------------- a hand example
#
# q1 pool (N = 8): a=5 b=5 c=4 d=4 e=4 f=3 g=2 h=1
#    p5 = 2/8, r5 = 1/(2/8) = 4;  p4 = 3/8, r4 = 0.5/(3/8) = 4/3;  p3 = 1/8, r3 = 0.1/(1/8) = 0.8
#    w5 = 1, w4 = min((4/3)/4, 1) = 1/3 (cap not binding), w3 = min(0.8/4, 0.25) = 0.2 (not binding)
#    run: c x a f g h  (x unjudged, 6 documents)
# q2 pool without grade 5: a=4 b=3 c=3 d=1 -> fallback w4 = 1, w3 = 0.2;  run: b c a
# q3 pool (N = 6): a=b=c=d=5, e=4, f=3
#    r5 = 1/(4/6) = 1.5, r4 = 0.5/(1/6) = 3 -> r4/r5 = 2 -> w4 = cap4 = 1 (binding)
#    r3 = 0.1/(1/6) = 0.6 -> r3/r5 = 0.4 -> w3 = cap3 = 0.25 (binding);  run: f e
# q4 pool (N = 12): a=5, b0..b9=4, c=3: r5 = 12, r4 = 0.5/(10/12) = 0.6, r3 = 0.1/(1/12) = 1.2
#    w4 = 0.6/12 = 0.05 < w3 = 1.2/12 = 0.1: the best 2-set is {a, c}, not {a, b0}; run: a b0
# q5 pool a=2 b=1 c=0: no weight > 0, no grade >= 3 -> RA-nWG, N-Recall, CompleteHit are NA
#    run: a x
# q6 pool a=5, missing from the run
QRELS = {
    "q1": {"a": 5, "b": 5, "c": 4, "d": 4, "e": 4, "f": 3, "g": 2, "h": 1},
    "q2": {"a": 4, "b": 3, "c": 3, "d": 1},
    "q3": {"a": 5, "b": 5, "c": 5, "d": 5, "e": 4, "f": 3},
    "q4": {"a": 5, "c": 3} | {f"b{i}": 4 for i in range(10)},
    "q5": {"a": 2, "b": 1, "c": 0},
    "q6": {"a": 5},
}
RUN = {
    "q1": {"c": 0.9, "x": 0.8, "a": 0.7, "f": 0.6, "g": 0.5, "h": 0.4},
    "q2": {"b": 0.9, "c": 0.8, "a": 0.7},
    "q3": {"f": 0.9, "e": 0.8},
    "q4": {"a": 0.9, "b0": 0.8},
    "q5": {"a": 0.9, "x": 0.8},
}

EXPECTED = {  # per query q1..q6
    # q1: c = 1/3 over the best single document 1; q2: b = 0.2 over a = 1; q3: f = 0.25 over 1;
    # q4: a = 1 over 1; q6: nothing retrieved, 0 over 1
    "RA-nWG@1": [1 / 3, 0.2, 0.25, 1.0, NA, 0.0],
    # q1: c + x + a = 1/3 + 0 + 1 over a + b + c = 7/3 -> 4/7; q2: b + c = 0.4 over a + b = 1.2;
    # q3: f + e = 0.25 + 1 over two grade 5 = 2; q4: a + b0 = 1.05 over a + c = 1.1
    "RA-nWG@2": [(1 / 3) / 2, 0.4 / 1.2, 1.25 / 2, 1.05 / 1.1, NA, 0.0],
    "RA-nWG@3": [(4 / 3) / (7 / 3), 1.0, 1.25 / 3, 1.05 / 1.15, NA, 0.0],
    # K beyond the run: q1 = c + a + f = 1/3 + 1 + 0.2 over the whole pool 2 + 1 + 0.2 = 3.2;
    # q3 over 4 + 1 + 0.25 = 5.25; q4 over a + c + eight b = 1 + 0.1 + 8 * 0.05 = 1.5
    "RA-nWG@10": [(23 / 15) / 3.2, 1.0, 1.25 / 5.25, 1.05 / 1.5, NA, 0.0],
    # caps 0.3 / 0.8: q1 w3 = 0.2, w4 = 1/3 unchanged; q3 now w4 = 0.8, w3 = 0.3 -> 1.1 / 2;
    # q4 w3 = 0.1, w4 = 0.05 unchanged; q2 fallback unchanged
    "RA-nWG(cap3=0.3,cap4=0.8)@2": [(1 / 3) / 2, 0.4 / 1.2, 1.1 / 2, 1.05 / 1.1, NA, 0.0],
    # a = 0, no rarity: w4 = min(0.5, 1) = 0.5, w3 = min(0.1, 0.25) = 0.1 wherever grade 5 exists
    # q1: (0.5 + 0 + 1) / (1 + 1 + 0.5); q3: (0.1 + 0.5) / 3; q4: now w4 > w3, so
    # (1 + 0.5) / (1 + 0.5 + 0.5); q2 keeps the fallback
    "RA-nWG(a=0)@3": [1.5 / 2.5, 1.0, 0.6 / 3, 1.5 / 2, NA, 0.0],
    # grade >= 4 in the top K / min(K, R4+); R4+: q1 5, q2 1, q3 5, q4 11, q5 0, q6 1
    "N-Recall4+@3": [2 / 3, 1.0, 1 / 3, 2 / 3, NA, 0.0],
    "N-Recall4+@10": [2 / 5, 1.0, 1 / 5, 2 / 10, NA, 0.0],
    # grade 5 in the top K / min(K, R5); R5: q1 2, q2 0, q3 4, q4 1, q5 0, q6 1
    "N-Recall5@3": [1 / 2, NA, 0.0, 1.0, NA, 0.0],
    # every grade >= 4 document in the top K: q2 needs a (rank 3); q4 R4+ = 11 > K
    "CompleteHit@2": [0.0, 0.0, 0.0, 0.0, NA, 0.0],
    "CompleteHit@3": [0.0, 1.0, 0.0, 0.0, NA, 0.0],
    # rel = 5: q1 needs a and b (b never retrieved); q4 needs a only
    "CompleteHit(rel=5)@3": [0.0, NA, 0.0, 1.0, NA, 0.0],
    "Precision4+@3": [2 / 3, 1 / 3, 1 / 3, 2 / 3, 0.0, 0.0],
    # judged grade <= 2 in the top K / K: q1 g, h at ranks 5-6; q5 a (2); x is unjudged
    "Harm@3": [0.0, 0.0, 0.0, 0.0, 1 / 3, 0.0],
    "Harm@10": [2 / 10, 0.0, 0.0, 0.0, 1 / 10, 0.0],
}


def per_query(qrels, run, names) -> dict[str, np.ndarray]:
    wide = evaluate(qrels, run, names).per_query_wide()
    return {c: wide[c].to_numpy() for c in wide.columns}


def test_hand_computed_values():
    got = per_query(QRELS, RUN, list(EXPECTED))
    for name, expected in EXPECTED.items():
        np.testing.assert_allclose(got[name], expected, rtol=0, atol=1e-15, err_msg=name)


def test_na_is_excluded_and_counted():
    res = evaluate(QRELS, RUN, list(EXPECTED))
    agg = res.aggregate.set_index("measure")
    for name, expected in EXPECTED.items():
        valid = [v for v in expected if not math.isnan(v)]
        assert agg.loc[name, "n_valid"] == len(valid), name
        assert agg.loc[name, "value"] == pytest.approx(sum(valid) / len(valid), abs=1e-15)
    assert agg.loc["N-Recall5@3", "n_valid"] == 4  # q2 and q5 have no grade 5
    assert (agg["n_queries"] == 6).all()


def test_public_functions_are_the_macro_means():
    def mean(name):
        return float(np.nanmean(EXPECTED[name]))

    assert ra_nwg(QRELS, RUN, 2) == pytest.approx(mean("RA-nWG@2"), abs=1e-15)
    assert ra_nwg(QRELS, RUN, 2, cap3=0.3, cap4=0.8) == pytest.approx(
        mean("RA-nWG(cap3=0.3,cap4=0.8)@2"), abs=1e-15
    )
    assert ra_nwg(QRELS, RUN, 3, a=0) == pytest.approx(mean("RA-nWG(a=0)@3"), abs=1e-15)
    assert n_recall_4plus(QRELS, RUN, 3) == pytest.approx(mean("N-Recall4+@3"), abs=1e-15)
    assert n_recall_5(QRELS, RUN, 3) == pytest.approx(mean("N-Recall5@3"), abs=1e-15)
    assert complete_hit(QRELS, RUN, 3) == pytest.approx(mean("CompleteHit@3"), abs=1e-15)
    assert complete_hit(QRELS, RUN, 3, rel=5) == pytest.approx(
        mean("CompleteHit(rel=5)@3"), abs=1e-15
    )
    assert precision_4plus(QRELS, RUN, 3) == pytest.approx(mean("Precision4+@3"), abs=1e-15)
    assert harm_at_k(QRELS, RUN, 10) == pytest.approx(mean("Harm@10"), abs=1e-15)
    # a query set where RA-nWG is never defined gives NaN, not an error, once the grades are
    # stated to be on the 1-5 rubric; unstated, a scale without a 4 or 5 is refused, as
    # evaluate refuses it
    stated = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["RA-nWG@5"], grade_map="1-5")
    assert math.isnan(stated.aggregate_to_dict()["RA-nWG@5"])
    with pytest.raises(InputError, match="not 1-5"):
        ra_nwg({"q": {"a": 1}}, {"q": {"a": 1.0}}, 5)


def test_weights_hand_computed():
    # p_g = 0 -> r_g = 0, also with a = 0 (where p**0 would otherwise be 1)
    assert rarity_weights([3, 0, 0, 0, 1]).tolist() == [0, 0, 0, 0, 1]
    assert rarity_weights([3, 0, 0, 0, 1], a=0).tolist() == [0, 0, 0, 0, 1]
    # q1 of the hand example, and its caps binding when lowered: w4 = min(1/3, 0.3)
    np.testing.assert_allclose(rarity_weights([1, 1, 1, 3, 2]), [0, 0, 0.2, 1 / 3, 1], atol=1e-15)
    np.testing.assert_allclose(
        rarity_weights([1, 1, 1, 3, 2], cap3=0.1, cap4=0.3), [0, 0, 0.1, 0.3, 1], atol=1e-15
    )
    # the fallback is exposed: no grade 5 -> w4 = fb4, w3 = fb3
    assert rarity_weights([5, 0, 2, 1, 0], fb3=0.1, fb4=0.7).tolist() == [0, 0, 0.1, 0.7, 1]
    # a = 0: no rarity, w4 = min(b4/b5, cap4) = 0.5, w3 = min(b3/b5, cap3) = 0.1, any counts
    for counts in ([0, 0, 1, 1, 1], [50, 0, 1, 90, 3], [0, 0, 7, 2, 40]):
        np.testing.assert_allclose(rarity_weights(counts, a=0), [0, 0, 0.1, 0.5, 1], atol=1e-15)
    # a = 2 squares the prevalence ratio: n5 = 1, n4 = 2 -> w4 = 0.5 * (1/2)**2 = 0.125
    np.testing.assert_allclose(rarity_weights([0, 0, 0, 2, 1], a=2)[3], 0.125, atol=1e-15)
    # vectorised over leading axes; a huge a does not warn: r3/r5 = 0.1 * 2**500 overflows to
    # inf and is capped at 0.25, r4/r5 = 0.5 * (2/1000)**500 underflows to 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = rarity_weights(np.array([[[0, 0, 1, 1000, 2]]]), a=500)
    assert w.shape == (1, 1, 5) and w[0, 0].tolist() == [0, 0, 0.25, 0, 1]
    with pytest.raises(InputError, match="last axis of 5"):
        rarity_weights([1, 2, 3])


def test_grades_at_or_below_zero_count_as_grade_one():
    # q: a=5 b=0 c=-1 d=4 has the pool of a=5 b=1 c=1 d=4 (N = 4, n1 = 2): same weights, same NA,
    # and b, c are harm in both
    names = ["RA-nWG@2", "N-Recall4+@2", "CompleteHit@3", "Precision4+@4", "Harm@4"]
    run = {"q": {"b": 0.9, "d": 0.8, "c": 0.7, "x": 0.6}}
    low = per_query({"q": {"a": 5, "b": 0, "c": -1, "d": 4}}, run, names)
    one = per_query({"q": {"a": 5, "b": 1, "c": 1, "d": 4}}, run, names)
    for name in names:
        np.testing.assert_array_equal(low[name], one[name])
    # N = 4: r5 = 4, r4 = 2 -> w4 = 0.5; RA-nWG@2 = (0 + 0.5) / (1 + 0.5); Harm@4 = b, c / 4
    assert low["RA-nWG@2"][0] == pytest.approx(1 / 3) and low["Harm@4"][0] == 0.5


def test_grade_above_five_is_an_error_naming_grade_and_query():
    qrels = {"q1": {"a": 5}, "q2": {"b": 3, "c": 7}}
    for name in ["RA-nWG@5", "N-Recall4+@5", "CompleteHit@5", "Precision4+@5", "Harm@5"]:
        with pytest.raises(InputError, match=r"query 'q2'.*grade 7 is outside the 1-5") as err:
            evaluate(qrels, {"q1": {"a": 1.0}}, [name])
        assert err.value.query_id == "q2" and "map_grades" in str(err.value)
    # other measures still read any grade
    evaluate(qrels, {"q1": {"a": 1.0}}, ["nDCG@5"])


def test_names_round_trip_and_parameters():
    for name in [
        "RA-nWG@10",
        "RA-nWG(a=0.5)@10",
        "RA-nWG(cap3=0.3,cap4=0.8)@10",
        "RA-nWG(a=2,cap3=0.2,cap4=0.75,fb3=0.1,fb4=0.9)@30",
        "N-Recall4+@10",
        "N-Recall5@10",
        "CompleteHit@10",
        "CompleteHit(rel=3)@10",
        "Precision4+@10",
        "Harm@10",
        "RA-nWG-nov(beta=0.5)@10",
        "RA-nWG-nov(a=0,beta=0)@5",
    ]:
        m = parse_measure(name)
        assert str(m) == name and parse_measure(str(m)) == m
    assert str(parse_measure("RA-nWG(cap4=0.80, cap3=0.30, a=1.0)@10")) == (
        "RA-nWG(cap3=0.3,cap4=0.8)@10"
    )
    assert str(parse_measure("CompleteHit(rel=4)@10")) == "CompleteHit@10"
    m = parse_measure("RA-nWG@10")
    assert dict(m.params) == {"a": 1.0, "cap3": 0.25, "cap4": 1.0, "fb3": 0.2, "fb4": 1.0}
    for bad, msg in [
        ("RA-nWG", "cutoff is required"),
        ("RA-nWG(cap4=1.5)@10", "outside"),
        ("RA-nWG(a=-1)@10", "outside"),
        ("CompleteHit(rel=6)@10", "outside"),
        ("RA-nWG-nov@10", "'beta' is required"),
        ("N-Recall4+(rel=2)@10", "unknown parameter"),
    ]:
        with pytest.raises(InputError, match=msg):
            parse_measure(bad)


# ----------------------------------------------------------------------------- grade maps


def test_grade_maps_defaults_and_override():
    assert dict(GRADE_MAPS["trec-dl"]) == {3: 5, 2: 4, 1: 3, 0: 1}
    assert dict(GRADE_MAPS["dbpedia-entity"]) == {2: 5, 1: 4, 0: 1}
    frame = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q2"],
            "doc_id": ["a", "b", "c", "d"],
            "relevance": [2, 0, 1, 2],
            "note": ["x", "y", "z", "w"],
        },
        index=[10, 11, 12, 13],
    )
    before = frame.copy()
    mapped = map_grades(frame, "dbpedia-entity")
    assert mapped["relevance"].tolist() == [5, 1, 4, 5]
    assert mapped["relevance"].dtype == np.int64
    assert mapped["note"].tolist() == ["x", "y", "z", "w"] and list(mapped.index) == [
        10,
        11,
        12,
        13,
    ]
    pd.testing.assert_frame_equal(frame, before)  # pure
    # a user's own map, e.g. DBpedia's 1 as grade 3; a target <= 0 is allowed (utility 0)
    assert map_grades(frame, {2: 5, 1: 3, 0: 0})["relevance"].tolist() == [5, 0, 3, 5]
    assert map_grades({"q": {"a": 3, "b": 1}}, "trec-dl")["relevance"].tolist() == [5, 3]
    with pytest.raises(TypeError):
        GRADE_MAPS["trec-dl"][3] = 4  # type: ignore[index]


def test_grade_map_errors():
    frame = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": [1, 4]})
    with pytest.raises(InputError, match=r"query 'q2'.*grade 4 has no entry in trec-dl") as err:
        map_grades(frame, "trec-dl")
    assert err.value.query_id == "q2" and err.value.column == "relevance"
    with pytest.raises(InputError, match="unknown grade map 'trec'"):
        map_grades(frame, "trec")
    with pytest.raises(InputError, match="maps 4 to 6"):
        map_grades(frame, {1: 3, 4: 6})
    with pytest.raises(InputError, match="maps 4 to 4.5"):
        map_grades(frame, {1: 3, 4: 4.5})  # type: ignore[dict-item]
    with pytest.raises(InputError, match="column"):
        map_grades(frame.drop(columns="relevance"), "trec-dl")


# ----------------------------------------------------------------------------- novelty


def test_novelty_hand_computed():
    # pool a#1=5 a#2=4 b#1=5 c=3 (N = 4): r5 = 2, r4 = 2, r3 = 0.4; with cap4 = 0.5: w4 = 0.5,
    # w3 = min(0.2, 0.25) = 0.2. Run a#2 a#1 c: source a holds a#2 (0.5) and a#1 (1) in the top 2.
    # Dallaire 2.3: delta = 1 for the first occurrence of a source (a#2, rank 1), beta for repeats.
    qrels = {"q": {"a#1": 5, "a#2": 4, "b#1": 5, "c": 3}}
    run = {"q": {"a#2": 0.9, "a#1": 0.8, "c": 0.7}}
    nov = "RA-nWG-nov(beta=0.5,cap4=0.5)@{}"
    arrays = prepare_sources(qrels, run)
    # K=2: a#2 first (0.5), a#1 a repeat (0.5 * 1): (0.5 + 0.5) / (1 + 1)
    assert parse_measure(nov.format(2)).compute(arrays).tolist() == [1.0 / 2]
    # K=3: + c (own source) 0.2; ideal 1 + 1 + 0.5: 1.2 / 2.5; RA-nWG would be 1.7 / 2.5
    assert parse_measure(nov.format(3)).compute(arrays)[0] == pytest.approx(1.2 / 2.5)
    assert ra_nwg(qrels, run, 3, cap4=0.5) == pytest.approx(1.7 / 2.5)
    assert ra_nwg_novelty(qrels, run, 3, beta=0.5, cap4=0.5) == pytest.approx(1.2 / 2.5)
    # beta = 0: only the first document of a source counts: (0.5 + 0.2) / 2.5
    assert ra_nwg_novelty(qrels, run, 3, beta=0, cap4=0.5) == pytest.approx(0.7 / 2.5)
    # sources from a mapping (unmapped documents are their own source) or a function
    distinct = {"a#1": "x", "a#2": "y"}
    assert ra_nwg_novelty(qrels, run, 3, beta=0.5, cap4=0.5, source_of=distinct) == pytest.approx(
        1.7 / 2.5
    )
    # one source: 0.5 first, then every repeat times beta (not beta**j): 0.5 * 1, 0.5 * 0.2
    one = ra_nwg_novelty(qrels, run, 3, beta=0.5, cap4=0.5, source_of=lambda d: "s")
    assert one == pytest.approx((0.5 + 0.5 * 1 + 0.5 * 0.2) / 2.5)
    assert default_source("doc#1#2") == "doc" and default_source("plain") == "plain"


def test_novelty_needs_sources_in_evaluate():
    with pytest.raises(InputError, match="source"):
        evaluate(QRELS, RUN, ["RA-nWG-nov(beta=0.5)@10"])
    with pytest.raises(InputError, match="source_of must be"):
        ra_nwg_novelty(QRELS, RUN, 3, beta=0.5, source_of=3)  # type: ignore[arg-type]


def test_sourced_arrays_serve_every_measure():
    names = ["RA-nWG@3", "nDCG@3", "P@2", "Harm@10", "RR"]
    plain, sourced = prepare(QRELS, RUN), prepare_sources(QRELS, RUN)
    for name in names:
        m = parse_measure(name)
        np.testing.assert_array_equal(m.compute(plain), m.compute(sourced))
    # plain ids hold no '#': every document is its own source, the variant is RA-nWG
    for k in (1, 3, 10):
        np.testing.assert_array_equal(
            parse_measure(f"RA-nWG-nov(beta=0.3)@{k}").compute(sourced),
            parse_measure(f"RA-nWG@{k}").compute(plain),
        )
    assert sourced.source.shape == sourced.grades.shape
    assert (sourced.source[~sourced.filled] == -1).all()


# ----------------------------------------------------------------------------- naive reference

B = {1: 0.0, 2: 0.0, 3: 0.1, 4: 0.5, 5: 1.0}


def scale(g: int) -> int:
    return min(max(g, 1), 5)


def naive_weights(pool: list[int], a, cap3, cap4, fb3, fb4) -> dict[int, float]:
    """Section 2.4 literally: p_g = n_g / N, r_g = b_g / p_g**a (0 if p_g = 0), caps, fallback."""
    n = {g: sum(scale(x) == g for x in pool) for g in range(1, 6)}
    if n[5] == 0:
        return {1: 0.0, 2: 0.0, 3: fb3, 4: fb4, 5: 1.0}
    p = {g: n[g] / len(pool) for g in n}
    r = {g: B[g] / p[g] ** a if p[g] > 0 else 0.0 for g in n}
    return {1: 0.0, 2: 0.0, 3: min(r[3] / r[5], cap3), 4: min(r[4] / r[5], cap4), 5: 1.0}


def naive(name: str, qrels_q: dict[str, int], ranked: list[str]) -> float:
    """One graded measure on one query, from the definitions, in plain Python."""
    m = parse_measure(name)
    k = m.cutoff
    top = ranked[:k]
    grade = {d: scale(g) for d, g in qrels_q.items()}
    if m.family in ("RA-nWG", "RA-nWG-nov"):
        p = m.params
        w = naive_weights(list(qrels_q.values()), p["a"], p["cap3"], p["cap4"], p["fb3"], p["fb4"])
        ideal = sum(sorted((w[g] for g in grade.values()), reverse=True)[:k])
        if ideal == 0:
            return NA
        weight = {d: w[grade[d]] if d in grade else 0.0 for d in top}
        if m.family == "RA-nWG":
            return sum(weight.values()) / ideal
        seen: set[str] = set()
        obs = 0.0
        for d in top:  # Dallaire 2.3: delta 1 at a source's first occurrence, beta at repeats
            obs += weight[d] * (p["beta"] if default_source(d) in seen else 1.0)
            seen.add(default_source(d))
        return obs / ideal
    if m.family in ("N-Recall4+", "N-Recall5", "CompleteHit"):
        t = {"N-Recall4+": 4, "N-Recall5": 5}.get(m.family) or m.params["rel"]
        big_r = sum(g >= t for g in grade.values())
        found = sum(d in grade and grade[d] >= t for d in top)
        if big_r == 0:
            return NA
        return found / min(k, big_r) if m.family != "CompleteHit" else float(found == big_r)
    if m.family == "Precision4+":
        return sum(d in grade and grade[d] >= 4 for d in top) / k
    if m.family == "Harm":
        return sum(d in grade and grade[d] <= 2 for d in top) / k
    raise AssertionError(name)


def ranked_lists(run: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    """trec_eval order: score descending, then doc_id descending."""
    return {
        q: [d for d, _ in sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)]
        for q, docs in run.items()
    }


def assert_agrees(qrels, run, names, *, sourced=False, tol=1e-12):
    arrays = prepare_sources(qrels, run) if sourced else prepare(qrels, run)
    ranked = ranked_lists(run)
    for name in names:
        got = parse_measure(name).compute(arrays)
        want = [naive(name, qrels[q], ranked.get(q, [])) for q in arrays.query_ids]
        np.testing.assert_allclose(got, want, rtol=0, atol=tol, err_msg=name)


DOCS = [f"s{i % 4}#{i}" for i in range(14)]  # four sources; documents beyond the pool unjudged
QIDS = ["q0", "q1", "q2"]
pool_st = st.dictionaries(st.sampled_from(DOCS[:11]), st.integers(-1, 5), min_size=1, max_size=11)
run_q_st = st.lists(st.sampled_from(DOCS), unique=True, max_size=14).map(
    lambda docs: {d: float(len(docs) - i) for i, d in enumerate(docs)}
)
qrels_st = st.dictionaries(st.sampled_from(QIDS), pool_st, min_size=1, max_size=3)
run_st = st.dictionaries(st.sampled_from(QIDS), run_q_st, max_size=3)


@st.composite
def graded_names(draw):
    k = draw(st.integers(1, 15))
    a = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    cap3 = draw(st.sampled_from([0.0, 0.2, 0.25, 0.33, 1.0]))
    cap4 = draw(st.sampled_from([0.05, 0.75, 1.0]))
    fb3, fb4 = draw(st.sampled_from([(0.2, 1.0), (0.5, 0.1), (0.0, 0.0)]))
    beta = draw(st.sampled_from([0.0, 0.3, 0.5, 0.9]))
    rel = draw(st.integers(1, 5))
    w = f"a={a},cap3={cap3},cap4={cap4},fb3={fb3},fb4={fb4}"
    return [
        f"RA-nWG({w})@{k}",
        f"RA-nWG@{k}",
        f"RA-nWG-nov({w},beta={beta})@{k}",
        f"N-Recall4+@{k}",
        f"N-Recall5@{k}",
        f"CompleteHit(rel={rel})@{k}",
        f"Precision4+@{k}",
        f"Harm@{k}",
    ]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, names=graded_names())
def test_agrees_with_naive_reference(qrels, run, names):
    assert_agrees(qrels, run, names, sourced=True)
    if shares_no_query(qrels, run):  # an error, not zeros
        with pytest.raises(InputError, match="share no query id"):
            evaluate(
                qrels, run, [n for n in names if not n.startswith("RA-nWG-nov")], grade_map="1-5"
            )
        return

    # evaluate() reads the same values (the novelty variant aside, it needs sources)
    plain = [n for n in names if not n.startswith("RA-nWG-nov")]
    wide = evaluate(qrels, run, plain, grade_map="1-5").per_query_wide()  # any grades <= 5
    arrays = prepare(qrels, run)
    for name in plain:
        np.testing.assert_array_equal(
            wide[str(parse_measure(name))].to_numpy(), parse_measure(name).compute(arrays)
        )


@settings(max_examples=40, deadline=None)
@given(qrels=qrels_st, run=run_st, k=st.integers(1, 15), beta=st.sampled_from([0.0, 0.5, 1.0]))
def test_invariances(qrels, run, k, beta):
    arrays = prepare_sources(qrels, run)
    ra = parse_measure(f"RA-nWG@{k}").compute(arrays)
    nov = parse_measure(f"RA-nWG-nov(beta={beta})@{k}").compute(arrays)
    defined = ~np.isnan(ra)
    # in [0, 1]; NA exactly where the pool has no positive weight, for both
    assert ((ra[defined] >= 0) & (ra[defined] <= 1)).all()
    np.testing.assert_array_equal(np.isnan(nov), ~defined)
    # the discount only lowers the gain, and beta = 1 is no discount
    assert (nov[defined] <= ra[defined] + 1e-15).all()
    if beta == 1.0:
        np.testing.assert_allclose(nov, ra, atol=1e-15)
    # order inside the top K does not matter (RA-nWG-nov aside: its first occurrences are by
    # rank): reverse each query's top K
    ranked = ranked_lists(run)
    flipped = {}
    for q, docs in ranked.items():
        order = docs[:k][::-1] + docs[k:]
        flipped[q] = {d: float(len(order) - i) for i, d in enumerate(order)}
    arrays_f = prepare_sources(qrels, flipped)
    for name in (f"RA-nWG@{k}", f"N-Recall4+@{k}", f"Harm@{k}"):
        np.testing.assert_allclose(
            parse_measure(name).compute(arrays_f), parse_measure(name).compute(arrays), atol=1e-14
        )
    # the ideal run (the pool by weight, descending) scores exactly 1 at every cutoff
    ideal_run = {}
    for q, pool in qrels.items():
        w = naive_weights(list(pool.values()), 1.0, 0.25, 1.0, 0.2, 1.0)
        docs = sorted(pool, key=lambda d: w[scale(pool[d])], reverse=True)
        ideal_run[q] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
    best = parse_measure(f"RA-nWG@{k}").compute(prepare(qrels, ideal_run))
    assert (best[defined] == 1.0).all()


# ----------------------------------------------------------------------------- real data


@pytest.fixture(scope="module", params=["dbpedia", "msmarco"])
def graded_bm25(request, dbpedia_path: Path, msmarco_path: Path):
    """(qrels mapped to 1-5 with the default map, BM25 top-100 run) of a graded subset."""
    path, grade_map = {
        "dbpedia": (dbpedia_path, "dbpedia-entity"),
        "msmarco": (msmarco_path, "trec-dl"),
    }[request.param]
    ds = read_beir(path)
    run = BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, 100)
    return request.param, map_grades(ds.qrels, grade_map), run


def test_real_data_agrees_with_naive_reference(graded_bm25):
    name, qrels, run = graded_bm25
    names = [
        f"{m}@{k}"
        for k in (5, 10, 30)
        for m in ("RA-nWG", "N-Recall4+", "N-Recall5", "CompleteHit", "Precision4+", "Harm")
    ] + ["RA-nWG(a=0.5)@10", "RA-nWG(cap3=0.33,cap4=0.75)@10", "CompleteHit(rel=5)@10"]
    qrels_d = {
        q: dict(zip(g["doc_id"], g["relevance"], strict=True)) for q, g in qrels.groupby("query_id")
    }
    run_d = {q: dict(zip(g["doc_id"], g["score"], strict=True)) for q, g in run.groupby("query_id")}
    assert_agrees(qrels_d, run_d, names)

    res = evaluate(qrels, run, names + ["Judged@10"])
    agg = res.aggregate.set_index("measure")
    n_q = qrels["query_id"].nunique()
    per_q = qrels.groupby("query_id")["relevance"]
    r5 = int((per_q.max() == 5).sum())
    r4 = int((per_q.max() >= 4).sum())
    # NA exactly where the evidence is missing: RA-nWG needs a grade >= 3 (always true here)
    assert agg.loc["N-Recall5@10", "n_valid"] == agg.loc["CompleteHit(rel=5)@10", "n_valid"] == r5
    assert agg.loc["N-Recall4+@10", "n_valid"] == agg.loc["CompleteHit@10", "n_valid"] == r4
    assert agg.loc["RA-nWG@10", "n_valid"] == int((per_q.max() >= 3).sum())
    assert agg.loc["Precision4+@10", "n_valid"] == agg.loc["Harm@10", "n_valid"] == n_q
    assert 0 < r5 < n_q  # some queries lack grade 5 (NA on N-Recall5, the fallback on RA-nWG)
    assert 0.1 < agg.loc["RA-nWG@10", "value"] < 0.9
    if name == "msmarco":  # TREC DL 1 -> 3: no judged document of grade <= 2 in this subset
        assert agg.loc["Harm@10", "value"] == 0.0
    else:
        assert agg.loc["Harm@10", "value"] > 0.1
    # no '#' in these ids: the novelty variant equals RA-nWG
    arrays = prepare_sources(qrels, run)
    np.testing.assert_allclose(
        parse_measure("RA-nWG-nov(beta=0.5)@10").compute(arrays),
        res.per_query_wide()["RA-nWG@10"].to_numpy(),
        rtol=0,
        atol=1e-15,
    )


@pytest.mark.parametrize("seed", range(6))
def test_map_arrays_equals_preparing_the_mapped_qrels(seed):
    """Relabelling the prepared arrays gives, array for array, what a second join of the mapped
    qrels gives: negative grades, a map that is not monotone, two grades sent to one, a cap."""
    rng = np.random.default_rng(seed)
    grades = [-1, 0, 1, 2, 3]
    qrels = {
        f"q{q}": {f"d{d}": int(rng.choice(grades)) for d in rng.choice(30, 8, replace=False)}
        for q in range(12)
    }
    run = {
        f"q{q}": {f"d{d}": float(rng.integers(0, 5)) for d in rng.choice(30, 12, replace=False)}
        for q in range(0, 14, 1 + seed % 2)
    }
    maps = ["trec-dl", {-1: 2, 0: 5, 1: 1, 2: 4, 3: 3}, {-1: 1, 0: 1, 1: 3, 2: 3, 3: 5}]
    for mapping in maps:
        for depth in (None, 4):
            arrays = prepare(qrels, run, depth=depth)
            if mapping == "trec-dl":  # this map has no -1: the error names a query holding it
                with pytest.raises(InputError, match=r"grade -1 has no entry") as err:
                    map_arrays(arrays, mapping)
                assert err.value.query_id in qrels
                continue
            got = map_arrays(arrays, mapping)
            want = prepare(map_grades(qrels, mapping), run, depth=depth)
            for name in ("grades", "judged", "filled", "ideal", "n_judged", "grade_levels"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name), name)
            np.testing.assert_array_equal(got.level_counts, want.level_counts)
            assert not got.grades.flags.writeable and not got.ideal.flags.writeable
