"""The RA-nWG sensitivity grid of notebook 01 (Dallaire Appendix A)."""

from __future__ import annotations

import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.measures import map_grades, ra_nwg
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies.retrieval import RetrievalEvaluationConfig
from ragnb.studies.retrieval.sensitivity import ranwg_sensitivity, sensitivity_wide


def _flip_case():
    """One query; pool: a grade 5, four grade 4, one grade 3, two grade 1 (N = 8).

    X's top 2 holds two grade-4 documents, Y's one grade-3 and one grade-1 document.
    a = 0: w4 = min(0.5, cap4) = 0.5, w3 = 0.1; X = 1.0 / 1.5, Y = 0.1 / 1.5: X first.
    a = 1: w4 = 0.5 * (1/8) / (4/8) = 0.125, w3 = 0.1 * (1/8) / (1/8) = 0.1;
           ideal = 1 + 0.125; X = 0.25 / 1.125, Y = 0.1 / 1.125: X first.
    a = 2: w4 = 0.5 * (1/4)**2 = 0.03125, w3 = 0.1; ideal = 1 + 0.1;
           X = 0.0625 / 1.1, Y = 0.1 / 1.1: Y first.
    """
    grades = {"g5": 5, "d1": 4, "d2": 4, "d3": 4, "d4": 4, "t": 3, "n1": 1, "n2": 1}
    qrels = pd.DataFrame(
        [("q", d, g) for d, g in grades.items()], columns=["query_id", "doc_id", "relevance"]
    )
    x = pd.DataFrame({"query_id": "q", "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
    y = pd.DataFrame({"query_id": "q", "doc_id": ["t", "n1"], "score": [2.0, 1.0]})
    return qrels, {"X": x, "Y": y}


def test_ranking_flips_with_the_rarity_exponent_as_computed_by_hand():
    qrels, runs = _flip_case()
    grid = ranwg_sensitivity(qrels, runs, 2, cap4_values=[1.0], cap3_values=[0.25])
    at = grid.set_index(["a", "retriever"])
    assert at.loc[(0.0, "X"), "value"] == pytest.approx(1.0 / 1.5)
    assert at.loc[(0.0, "Y"), "value"] == pytest.approx(0.1 / 1.5)
    assert at.loc[(1.0, "X"), "value"] == pytest.approx(0.25 / 1.125)
    assert at.loc[(2.0, "X"), "value"] == pytest.approx(0.0625 / 1.1)
    assert at.loc[(2.0, "Y"), "value"] == pytest.approx(0.1 / 1.1)
    assert at.loc[(1.0, "X"), "is_default"] and at.loc[(1.0, "X"), "rank"] == 1
    assert at.loc[(2.0, "Y"), "rank"] == 1 and at.loc[(2.0, "X"), "rank"] == 2
    assert not at.loc[(2.0, "X"), "rank_stable"] and at.loc[(2.0, "X"), "kendall_tau"] == -1
    assert at.loc[(0.5, "X"), "rank_stable"] and at.loc[(0.5, "X"), "kendall_tau"] == 1
    assert at.loc[(2.0, "X"), "delta"] == pytest.approx(0.0625 / 1.1 - 0.25 / 1.125)
    wide = sensitivity_wide(grid)
    assert list(wide["rank stable"]) == ["yes", "yes", "default", "no"]
    assert list(wide["rank X"]) == [1, 1, 1, 2]


def test_caps_change_the_weights_and_the_default_is_always_in_the_grid():
    qrels, runs = _flip_case()
    # cap3 = 0.05 < w3 = 0.1 at a = 2; the default (a = 1, cap4 = 1, cap3 = 0.25) is added
    grid = ranwg_sensitivity(qrels, runs, 2, a_values=[2], cap4_values=[1.0], cap3_values=[0.05])
    assert len(grid) == 4 and grid["is_default"].sum() == 2
    y = grid[(grid["a"] == 2.0) & (grid["retriever"] == "Y")]
    assert float(y["value"].iloc[0]) == pytest.approx(0.05 / (1 + 0.05))
    assert y["measure"].iloc[0] == "RA-nWG(a=2,cap3=0.05)@2"


def test_bad_grid_values_name_the_parameter():
    qrels, runs = _flip_case()
    with pytest.raises(InputError, match="sensitivity_cap3"):
        ranwg_sensitivity(qrels, runs, 2, cap3_values=[1.5])
    with pytest.raises(InputError, match="sensitivity_a"):
        RetrievalEvaluationConfig(sensitivity_a=[-1])


def test_default_cell_equals_ra_nwg_on_real_graded_data(dbpedia_path):
    data = read_beir(dbpedia_path)
    queries = data.judged_queries.head(40)
    qrels = map_grades(
        data.qrels[data.qrels["query_id"].isin(queries["query_id"])], "dbpedia-entity"
    )
    bm25 = BM25Retriever().index(data.corpus).retrieve(queries, k=20)
    shallow = bm25.groupby("query_id").head(5)
    grid = ranwg_sensitivity(qrels, {"bm25": bm25, "bm25-top5": shallow}, 10)
    assert len(grid) == 2 * 24
    default = grid[grid["is_default"]].set_index("retriever")["value"]
    assert default["bm25"] == pytest.approx(ra_nwg(qrels, bm25, 10), abs=1e-12)
    assert default["bm25-top5"] == pytest.approx(ra_nwg(qrels, shallow, 10), abs=1e-12)
    no_rarity = grid[(grid["a"] == 0) & (grid["cap4"] == 0.75) & (grid["cap3"] == 0.2)]
    direct = ra_nwg(qrels, bm25, 10, a=0.0, cap4=0.75, cap3=0.2)
    assert no_rarity.set_index("retriever").at["bm25", "value"] == pytest.approx(direct)
