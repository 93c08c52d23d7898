"""Edge cases: no relevant documents, empty runs, missing queries, ties, short runs, odd grades."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.measures import parse_measure, prepare

ALL = [
    "P@3",
    "R@3",
    "nDCG@3",
    "nDCG",
    "RR",
    "RR@3",
    "Success@3",
    "Judged@3",
    "F(alpha=0.5)@3",
    "F_e(alpha=0.5)@3",
    "T(alpha=0.5)@3",
    "T_u(alpha=0.5)@3",
    "nDCG_inK@3",
]
# The value of a top 3 with no relevant document: 0 except T (-alpha) and T_u (-alpha K).
EMPTY_TOP = {name: 0.0 for name in ALL} | {"T(alpha=0.5)@3": -0.5, "T_u(alpha=0.5)@3": -1.5}


def values(qrels, run, names=ALL, **kw) -> dict[str, list[float]]:
    wide = evaluate(qrels, run, names, **kw).per_query_wide()
    return {c: wide[c].tolist() for c in wide.columns}


def test_no_relevant_documents_gives_zeros_not_nan():
    qrels = {"q": {"a": 0, "b": -1, "c": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    got = values(qrels, run)
    assert got == {name: [EMPTY_TOP[name]] for name in ALL} | {"Judged@3": [1.0]}
    res = evaluate(qrels, run, ALL)
    assert (res.aggregate["n_valid"] == 1).all()


def test_empty_run_frame():
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}}
    run = pd.DataFrame({"query_id": [], "doc_id": [], "score": []}).astype({"score": float})
    res = evaluate(qrels, run, ALL)
    assert res.counts["queries_missing_from_run"] == 2
    assert res.aggregate_to_dict() == EMPTY_TOP
    assert res.counts["fe_short_runs"] == {"F_e(alpha=0.5)@3": 0}  # missing, not short
    assert evaluate(qrels, {}, ["P@3"]).aggregate_to_dict() == {"P@3": 0.0}
    assert evaluate(qrels, {"q1": {}}, ["P@3"]).counts["queries_missing_from_run"] == 2


def test_query_missing_from_run_scores_as_an_empty_ranking():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "zz": {"b": 1.0}}
    got = values(qrels, run)
    for name in ALL:
        assert got[name][1] == EMPTY_TOP[name], name  # q2
    res = evaluate(qrels, run, ALL)
    assert res.counts["queries_missing_from_run"] == 1
    assert res.counts["run_queries_without_qrels"] == 1
    assert (res.aggregate["n_queries"] == 2).all() and (res.aggregate["n_valid"] == 2).all()


def test_ties_are_broken_by_doc_id_descending():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}  # tie a/b: trec_eval ranks b first
    got = values(qrels, run, ["P@1", "RR", "nDCG@1", "nDCG_inK@2"])
    assert got["P@1"] == [0.0]
    assert got["RR"] == [0.5]
    assert got["nDCG@1"] == [0.0]
    assert got["nDCG_inK@2"] == [pytest.approx(1 / math.log2(3))]  # gains (0, 1) vs (1, 0)
    # renaming so the relevant document sorts last flips the tie
    got = values({"q": {"z": 1, "b": 0}}, {"q": {"z": 1.0, "b": 1.0}}, ["P@1", "RR"])
    assert got == {"P@1": [1.0], "RR": [1.0]}


def test_order_file_keeps_the_file_order():
    qrels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    run = pd.DataFrame(
        {
            "query_id": ["q", "q", "q"],
            "doc_id": ["b", "x", "a"],
            "score": [0.1, 0.2, 0.9],
            "rank": [1, 2, 3],
        }
    )
    with pytest.warns(UserWarning, match="disagrees"):
        by_score = evaluate(qrels, run, ["RR", "P@1"])
    assert by_score.aggregate_to_dict() == {"RR": 1.0, "P@1": 1.0}  # a has the top score
    assert by_score.counts["rank_disagreements"] == 1 and by_score.counts["order"] == "score"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_file = evaluate(qrels, run, ["RR", "P@1"], order="file")
    assert by_file.aggregate_to_dict() == {"RR": pytest.approx(1 / 3), "P@1": 0.0}
    assert by_file.counts["order"] == "file"
    # without a rank column, "file" is row order
    no_rank = run.drop(columns="rank")
    assert evaluate(qrels, no_rank, ["RR"], order="file").aggregate_to_dict() == {
        "RR": pytest.approx(1 / 3)
    }
    with pytest.raises(InputError, match="unknown run order"):
        evaluate(qrels, run, ["RR"], order="rank")  # type: ignore[arg-type]


def test_cutoff_larger_than_the_run():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"a": 2.0, "x": 1.0}}  # 2 documents, K = 10
    got = values(
        qrels,
        run,
        ["P@10", "R@10", "Judged@10", "nDCG@10", "T(alpha=0.5)@10", "F_e(alpha=0.5)@10"],
    )
    assert got["P@10"] == [0.1]  # empty ranks are non-relevant: 1/10
    assert got["R@10"] == [pytest.approx(1 / 3)]
    assert got["Judged@10"] == [0.5]  # ir_measures divides by the run length: 1/2
    assert got["nDCG@10"] == [pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))]
    assert got["T(alpha=0.5)@10"] == [pytest.approx(0.5 * 1 - 0.5 * 9 / 10)]
    assert got["F_e(alpha=0.5)@10"] == [pytest.approx(1 / (5 + 0.5))]  # estimate 1 from top 20
    res = evaluate(qrels, run, ["F_e(alpha=0.5)@10", "F_e(alpha=0.5)@1"])
    assert res.counts["fe_short_runs"] == {"F_e(alpha=0.5)@10": 1, "F_e(alpha=0.5)@1": 0}


@pytest.mark.parametrize("seed", range(5))
def test_f_interpolates_between_precision_and_recall(seed):
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(40)]
    docs = [f"d{i}" for i in range(60)]
    qrels = pd.DataFrame(
        [(q, d, int(rng.integers(-1, 4))) for q in qids for d in rng.choice(docs, 8, False)],
        columns=["query_id", "doc_id", "relevance"],
    )
    run = pd.DataFrame(
        [(q, d, float(rng.integers(0, 5))) for q in qids[:35] for d in rng.choice(docs, 25, False)],
        columns=["query_id", "doc_id", "score"],
    )
    for rel in (1, 2):
        for k in (1, 5, 30):
            w = values(
                qrels,
                run,
                [f"P(rel={rel})@{k}", f"R(rel={rel})@{k}", f"F(alpha=1,rel={rel})@{k}"]
                + [f"F(alpha=0,rel={rel})@{k}"],
            )
            sfx = f"(rel={rel})@{k}" if rel != 1 else f"@{k}"
            fsfx = f",rel={rel})@{k}" if rel != 1 else f")@{k}"
            np.testing.assert_allclose(w[f"F(alpha=1{fsfx}"], w[f"P{sfx}"], atol=1e-12)
            np.testing.assert_allclose(w[f"F(alpha=0{fsfx}"], w[f"R{sfx}"], atol=1e-12)


def test_unjudged_documents_are_non_relevant_but_not_judged():
    qrels = {"q": {"a": 1}}
    run = {"q": {"x": 3.0, "y": 2.0, "a": 1.0}}
    got = values(qrels, run, ["P@3", "RR", "Judged@3", "nDCG@3", "P(rel=0)@3"])
    assert got["P@3"] == [pytest.approx(1 / 3)]
    assert got["RR"] == [pytest.approx(1 / 3)]
    assert got["Judged@3"] == [pytest.approx(1 / 3)]
    assert got["nDCG@3"] == [pytest.approx(1 / math.log2(4))]
    assert got["P(rel=0)@3"] == [pytest.approx(1 / 3)]  # rel=0: judged grade 0+, never unjudged


def test_negative_grades():
    qrels = {"q": {"a": -2, "b": 1, "c": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    got = values(qrels, run, ["nDCG@3", "nDCG_inK@3", "P(rel=0)@3", "P(rel=-2)@3", "Judged@3"])
    # a gains 0 (not -2): DCG = 1/log2(3); ideal (1, 0, 0) = 1
    assert got["nDCG@3"] == [pytest.approx(1 / math.log2(3))]
    assert got["nDCG_inK@3"] == [pytest.approx(1 / math.log2(3))]
    assert got["P(rel=0)@3"] == [pytest.approx(2 / 3)]  # b and c
    assert got["P(rel=-2)@3"] == [1.0]
    assert got["Judged@3"] == [1.0]
    assert str(parse_measure("P(rel=-2)@3")) == "P(rel=-2)@3"


def test_query_with_only_negative_and_zero_grades_has_zero_ideal():
    got = values({"q": {"a": -1}}, {"q": {"a": 1.0}}, ["nDCG@5", "nDCG_inK@5", "R@5"])
    assert got == {"nDCG@5": [0.0], "nDCG_inK@5": [0.0], "R@5": [0.0]}


def test_frames_and_dicts_give_the_same_result():
    qrels = {"q1": {"a": 1, "b": 2}, "q2": {"c": 1}}
    run = {"q1": {"b": 0.3, "a": 0.2, "z": 0.1}, "q2": {"c": 1.0}}
    qf = pd.DataFrame(
        [("q1", "a", 1), ("q1", "b", 2), ("q2", "c", 1)],
        columns=["query_id", "doc_id", "relevance"],
    )
    rf = pd.DataFrame(
        [("q2", "c", 1.0), ("q1", "z", 0.1), ("q1", "a", 0.2), ("q1", "b", 0.3)],
        columns=["query_id", "doc_id", "score"],
    )
    a = evaluate(qrels, run, ALL).per_query
    b = evaluate(qf, rf, ALL).per_query
    pd.testing.assert_frame_equal(a, b)


def test_integer_ids_in_frames_are_read_as_strings():
    qrels = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": [10, 11, 10], "relevance": [1, 0, 1]})
    run = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": [11, 10, 10], "score": [2.0, 1.0, 1.0]})
    res = evaluate(qrels, run, ["RR"])
    assert res.per_query["query_id"].tolist() == ["1", "2"]
    assert res.per_query["value"].tolist() == [0.5, 1.0]


def test_queries_sort_as_strings():
    qrels = {"q10": {"a": 1}, "q9": {"a": 1}, "q1": {"a": 1}}
    assert prepare(qrels, {}).query_ids.tolist() == ["q1", "q10", "q9"]


def test_bad_inputs_raise_input_error():
    with pytest.raises(InputError, match="no judgements"):
        evaluate({}, {"q": {"a": 1.0}}, ["P@1"])
    with pytest.raises(InputError, match="not an integer"):
        evaluate({"q": {"a": 1.5}}, {}, ["P@1"])
    with pytest.raises(InputError, match="NaN"):
        evaluate({"q": {"a": 1}}, {"q": {"a": float("nan")}}, ["P@1"])
    with pytest.raises(InputError, match="lacks column"):
        evaluate(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"]}), {}, ["P@1"])
    with pytest.raises(InputError, match="duplicate"):
        qf = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "relevance": [1, 0]})
        evaluate(qf, {}, ["P@1"])
    with pytest.raises(InputError, match="DataFrame or a dict"):
        evaluate([("q", "a", 1)], {}, ["P@1"])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown measure 'P@@1'|cannot parse"):
        evaluate({"q": {"a": 1}}, {}, ["P@@1"])
    with pytest.raises(InputError, match="depth"):
        prepare({"q": {"a": 1}}, {}, depth=0)


def test_single_document_and_single_rank():
    got = values({"q": {"a": 3}}, {"q": {"a": 0.0}}, ALL)
    for name in ALL:
        expected = {
            "T(alpha=0.5)@3": 0.5 * 1 - 0.5 * 2 / 3,
            "T_u(alpha=0.5)@3": 0.5 * 1 - 0.5 * 2,
            "P@3": 1 / 3,
            "F(alpha=0.5)@3": 1 / (1.5 + 0.5),
            "F_e(alpha=0.5)@3": 1 / (1.5 + 0.5),
        }.get(name, 1.0)
        assert got[name] == [pytest.approx(expected)], name
