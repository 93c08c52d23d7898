"""Graded measures against ir_measures where ir_measures defines the same quantity.

Precision4+@K on qrels mapped onto 1-5 is ir_measures' ``P(rel=4)@K`` on the same mapped qrels;
on MS MARCO (TREC DL grades 1-3, mapped 3/2/1 -> 5/4/3) it is also ``P(rel=2)@K`` on the original
grades, the subset's binary convention.
"""

from __future__ import annotations

import ir_measures
import numpy as np
import pytest

from ragnb.evaluate import evaluate
from ragnb.frames import qrels_to_dict, run_to_dict
from ragnb.io import read_beir
from ragnb.measures import map_grades
from ragnb.retrieve import BM25Retriever


def _bm25(path):
    data = read_beir(path)
    return data, BM25Retriever().index(data.corpus).retrieve(data.judged_queries, 100)


def _per_query(qrels, run, measure):
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


@pytest.mark.parametrize(
    ("fixture", "grade_map"), [("msmarco_path", "trec-dl"), ("dbpedia_path", "dbpedia-entity")]
)
def test_precision_4plus_is_p_rel4_on_mapped_grades(fixture, grade_map, request):
    data, run = _bm25(request.getfixturevalue(fixture))
    mapped = map_grades(data.qrels, grade_map)
    ours = evaluate(mapped, run, ["Precision4+@5", "Precision4+@10"]).per_query_wide()
    for k in (5, 10):
        theirs = _per_query(qrels_to_dict(mapped), run_to_dict(run), ir_measures.P(rel=4) @ k)
        got = ours[f"Precision4+@{k}"].reindex(list(theirs))
        np.testing.assert_allclose(got.to_numpy(), list(theirs.values()), rtol=0, atol=1e-12)


def test_msmarco_precision_4plus_is_the_binary_convention(msmarco_path):
    data, run = _bm25(msmarco_path)
    mapped = map_grades(data.qrels, "trec-dl")
    ours = evaluate(mapped, run, ["Precision4+@10"]).per_query_wide()["Precision4+@10"]
    theirs = _per_query(qrels_to_dict(data.qrels), run_to_dict(run), ir_measures.P(rel=2) @ 10)
    np.testing.assert_allclose(
        ours.reindex(list(theirs)).to_numpy(), list(theirs.values()), rtol=0, atol=1e-12
    )
