"""Graded measures against ir_measures where ir_measures defines the same quantity.

Precision4+@K on qrels mapped onto 1-5 is ir_measures' ``P(rel=4)@K`` on the same mapped qrels;
on MS MARCO (TREC DL grades 1-3, mapped 3/2/1 -> 5/4/3) it is also ``P(rel=2)@K`` on the original
grades, the subset's binary convention. On the shared datasets' BM25 runs, and on the runs of
the graded cases the repository carries (``tests/data/oracle``).
"""

from __future__ import annotations

import ir_measures
import numpy as np
import oracle_data
import pytest

from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.schema import qrels_to_dict, run_to_dict
from ragnb.io.files import read_beir
from ragnb.measures import map_grades


def _bm25(path):
    from ragnb.retrievers.retrieve import BM25Retriever

    data = read_beir(path)
    return data.qrels, BM25Retriever().index(data.corpus).retrieve(data.judged_queries, 100)


def _qrels_run(request, source: str):
    """``source``: a fixture of a shared dataset, or ``carried:<case>:<system>``."""
    if source.startswith("carried:"):
        _, case, system = source.split(":")
        return oracle_data.qrels(case), oracle_data.run(case, system)
    return _bm25(request.getfixturevalue(source))


def _per_query(qrels, run, measure):
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


@pytest.mark.parametrize(
    ("source", "grade_map"),
    [
        ("msmarco_path", "trec-dl"),
        ("dbpedia_path", "dbpedia-entity"),
        *(
            (f"carried:{case}:{system}", oracle_data.GRADE_MAPS[case])
            for case in ("dl-like", "dbpedia-like")
            for system in oracle_data.SYSTEMS
        ),
    ],
)
def test_precision_4plus_is_p_rel4_on_mapped_grades(source, grade_map, request):
    qrels, run = _qrels_run(request, source)
    mapped = map_grades(qrels, grade_map)
    ours = evaluate(mapped, run, ["Precision4+@5", "Precision4+@10"]).per_query_wide()
    for k in (5, 10):
        theirs = _per_query(qrels_to_dict(mapped), run_to_dict(run), ir_measures.P(rel=4) @ k)
        assert set(theirs) == set(ours.index)
        got = ours[f"Precision4+@{k}"].reindex(list(theirs))
        np.testing.assert_allclose(got.to_numpy(), list(theirs.values()), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "source", ["msmarco_path", *(f"carried:dl-like:{s}" for s in oracle_data.SYSTEMS)]
)
def test_msmarco_precision_4plus_is_the_binary_convention(source, request):
    qrels, run = _qrels_run(request, source)
    mapped = map_grades(qrels, "trec-dl")
    ours = evaluate(mapped, run, ["Precision4+@10"]).per_query_wide()["Precision4+@10"]
    theirs = _per_query(qrels_to_dict(qrels), run_to_dict(run), ir_measures.P(rel=2) @ 10)
    assert set(theirs) == set(ours.index)
    np.testing.assert_allclose(
        ours.reindex(list(theirs)).to_numpy(), list(theirs.values()), rtol=0, atol=1e-12
    )
