"""Nugget judgements beside qrels (``evaluate(..., nuggets=...)``), the checks of empty nuggets,
the nugget folder's reader, and TREC diversity qrels: hand-computed values and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.dispatch import read_qrels_file
from ragnb.io.nuggets import read_nugget_folder, read_nugget_qrels
from ragnb.io.readers import read_diversity_qrels, read_qrels
from ragnb.judge import check_nuggets
from ragnb.judge.nugget_checks import NUGGET_FINDINGS, nugget_warning

QRELS = {"q1": {"d1": 1}, "q2": {"d3": 1}, "q3": {"d5": 1}}
RUN = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 2.0, "d4": 1.0}}
NUGGETS = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q2", "q2", "q9"],
        "subtopic": ["n1", "n2", "n1", "n1", "n1"],
        "doc_id": ["d1", "d2", "d3", "d4", "d1"],
        "relevance": [2, 1, 0, 2, 2],
        "importance": ["vital", "okay", "vital", "vital", "vital"],
    }
)


def test_nuggets_beside_qrels_hand_computed():
    measures = ["NuggetRecall@1", "NuggetRecall(partial=0.5)@2", "P@1"]
    res = evaluate(QRELS, RUN, measures, nuggets=NUGGETS)
    wide = res.per_query_wide()
    # q1: n1 supported by d1, n2 partly by d2; q2: n1 supported by d4 only (rank 2)
    assert wide.loc["q1"].tolist()[:2] == [0.5, 0.75]
    assert wide.loc["q2"].tolist()[:2] == [0.0, 1.0]
    assert np.isnan(wide.loc["q3", "NuggetRecall@1"])  # no nuggets: left out
    assert wide.loc["q3", "P@1"] == 0.0  # missing from the run: 0, as ever
    agg = res.aggregate.set_index("measure")
    assert agg.loc["NuggetRecall@1", "value"] == 0.25
    assert agg.loc["NuggetRecall@1", "n_valid"] == 2
    assert agg.loc["P@1", "n_valid"] == 3
    assert res.counts["queries_with_nuggets"] == 2
    assert res.counts["queries_without_nuggets"] == 1
    assert res.counts["nugget_queries_without_qrels"] == 1  # q9


def test_nuggets_of_no_evaluated_query_give_nan_and_bad_nuggets_raise():
    res = evaluate(
        {"q7": {"d1": 1}}, {"q7": {"d1": 1.0}}, ["NuggetRecall@3", "P@1"], nuggets=NUGGETS
    )
    assert np.isnan(res.aggregate_to_dict()["NuggetRecall@3"])
    assert res.counts["queries_with_nuggets"] == 0
    with pytest.raises(InputError, match="nuggets must be nugget qrels"):
        evaluate(QRELS, RUN, ["NuggetRecall@3"], nuggets={"q1": {"d1": 2}})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="subtopic"):
        evaluate(QRELS, RUN, ["NuggetRecall@3"], nuggets=NUGGETS.drop(columns="subtopic"))


def test_nugget_qrels_as_qrels_count_their_queries_too():
    res = evaluate(NUGGETS, RUN, ["NuggetRecall@1"])
    assert res.counts["queries_with_nuggets"] == 3  # q1, q2, q9: every query has nuggets
    assert "queries_with_nuggets" not in evaluate(QRELS, RUN, ["P@1"]).counts


def test_check_nuggets_kinds_lines_and_examples():
    nuggets = pd.DataFrame(
        {
            "query_id": ["q1"] * 6 + ["q2"],
            "nugget_id": [f"n0{i}" for i in range(1, 7)] + ["n01"],
            "text": ["nugget 1", "Nugget #2", "b", "...", "N/A", "BM25 weighs tf", "Sort a list?"],
            "line": [2, 3, 4, 5, 6, 7, 8],
        }
    )
    found = check_nuggets(nuggets, {"q2": "sort a list"}, source="n.csv", examples=2)
    assert [f.name for f in found] == list(NUGGET_FINDINGS)
    placeholder = found[1]
    assert placeholder.numbers["count"] == 3 and placeholder.numbers["queries"] == 1
    assert str(placeholder).startswith(
        "n.csv: 3 of 7 nuggets (43%, 1 query) are numbered or lettered placeholders: "
        "q1/n01 'nugget 1' (line 2), q1/n02 'Nugget #2' (line 3) and 1 more"
    )
    assert found[0].numbers["flagged"] == [["q1", "n04", "..."], ["q1", "n05", "N/A"]]
    assert nugget_warning(found).splitlines()[0] == (
        "ragnb: warning: the nuggets may say nothing (3 findings of the nugget checks):"
    )
    assert check_nuggets(nuggets.iloc[5:6]) == [] and nugget_warning([]) == ""
    # without the query texts, a copy of the question is not flagged
    assert [f.name for f in check_nuggets(nuggets.iloc[5:])] == []


def test_nugget_folder_names_what_is_wrong(tmp_path):
    with pytest.raises(InputError, match="not a folder"):
        read_nugget_folder(tmp_path / "none")
    (tmp_path / "nuggets.csv").write_text(
        "query_id,nugget_id,text,importance\nq1,n01,a fact,vital\nq1,n02,another,okay\n"
    )
    (tmp_path / "nugget_assignments.csv").write_text(
        "query_id,nugget_id,doc_id,label\nq1,n01,d1,support\nq1,n03,d1,support\n"
    )
    nuggets, assignments = read_nugget_folder(tmp_path)
    assert len(nuggets) == 2 and assignments["nugget_id"].tolist() == ["n01"]  # n03 deleted
    with pytest.raises(InputError) as err:
        read_nugget_qrels(tmp_path)
    assert err.value.path == str(tmp_path / "nuggets.csv") and err.value.line == 3
    assert "nugget 'n02' has no assignment row" in str(err.value)


def test_diversity_qrels_reader_and_alpha_ndcg(tmp_path):
    path = tmp_path / "div.qrels"
    path.write_text("# a comment\n1 1 d1 1\n1 2 d1 1\n\n1 1 d2 1\n")
    frame = read_diversity_qrels(path)
    assert frame.values.tolist() == [
        ["1", "1", "d1", 1],
        ["1", "2", "d1", 1],
        ["1", "1", "d2", 1],
    ]
    assert read_qrels_file(path, diversity=True).frame.equals(frame)
    res = evaluate(frame, {"1": {"d2": 2.0, "d1": 1.0}}, ["alpha-nDCG@2"])
    # d2: 1, d1: 0.5 + 1; ideal d1 (2), d2 (0.5)
    expected = (1 + 1.5 / math.log2(3)) / (2 + 0.5 / math.log2(3))
    assert res.aggregate_to_dict()["alpha-nDCG@2"] == pytest.approx(expected)
    with pytest.raises(InputError, match="--qrels-format diversity") as err:
        read_qrels(path)
    assert err.value.line == 3
    for text, message, line in [
        ("1 1 d1\n", "expected 4 columns", 1),
        ("1 1 d1 1\n1 1 d1 0\n", "judged twice for subtopic '1' \\(first on line 1\\)", 2),
        ("1 1 d1 x\n", "grade", 1),
        ("# nothing\n", "no judgements", None),
    ]:
        path.write_text(text)
        with pytest.raises(InputError, match=message) as err:
            read_diversity_qrels(path)
        assert err.value.line == line and err.value.path == str(path)


def test_ordinary_duplicates_do_not_mention_diversity(tmp_path):
    path = tmp_path / "q.qrels"
    path.write_text("q 0 d 1\nq 0 d 0\n")
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert "duplicate judgement of doc 'd'" in str(err.value)
    assert "diversity" not in str(err.value)
    with pytest.raises(InputError, match="TREC text"):
        read_qrels_file(tmp_path / "q.json", diversity=True)
