"""ragnb.io.interop: round trips with ranx and ir_measures, and evaluation through ranx."""

from __future__ import annotations

import doctest

import ir_measures
import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.schema import run_to_dict
from ragnb.io import interop
from ragnb.io.files import write_qrels, write_run
from ragnb.io.readers import read_qrels, read_run

ranx = pytest.importorskip("ranx")

QRELS = pd.DataFrame(
    {
        "query_id": pd.Series(["q1", "q1", "q1", "q2", "q10"], dtype=object),
        "doc_id": pd.Series(["a", "b", "c", "a", "d"], dtype=object),
        "relevance": pd.Series([2, 0, -1, 1, 3], dtype="int64"),
    }
)
RUN = pd.DataFrame(
    {
        "query_id": pd.Series(["q1", "q1", "q1", "q2", "q3"], dtype=object),
        "doc_id": pd.Series(["a", "x", "c", "a", "z"], dtype=object),
        "score": pd.Series([0.5, 1.5, -2.0, 3.0, 1e-300], dtype="float64"),
        "tag": pd.Series(["bm25"] * 5, dtype=object),
    }
)


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["query_id", "doc_id"]).reset_index(drop=True)


def test_ranx_qrels_round_trip():
    q = interop.to_ranx_qrels(QRELS, name="judged")
    assert isinstance(q, ranx.Qrels) and q.name == "judged"
    back = interop.from_ranx_qrels(q)
    assert list(back.columns) == ["query_id", "doc_id", "relevance"]
    assert back["relevance"].dtype == np.int64
    pd.testing.assert_frame_equal(canonical(back), canonical(QRELS))
    # dict input, and empty qrels
    from_dict = interop.to_ranx_qrels({"q1": {"a": 1}})
    assert interop.from_ranx_qrels(from_dict).values.tolist() == [["q1", "a", 1]]
    empty = interop.to_ranx_qrels(QRELS.iloc[:0])
    assert len(empty) == 0 and len(interop.from_ranx_qrels(empty)) == 0


def test_ranx_run_round_trip_keeps_scores_and_tag():
    r = interop.to_ranx_run(RUN)
    assert isinstance(r, ranx.Run) and r.name == "bm25"  # the frame's single tag
    back = interop.from_ranx_run(r)
    assert list(back.columns) == ["query_id", "doc_id", "score", "tag"]
    pd.testing.assert_frame_equal(canonical(back), canonical(RUN))  # bit-identical scores
    untagged = interop.from_ranx_run(interop.to_ranx_run(RUN.drop(columns="tag")))
    assert list(untagged.columns) == ["query_id", "doc_id", "score"]
    assert interop.to_ranx_run(RUN, name="other").name == "other"
    empty = interop.to_ranx_run(RUN.iloc[:0])
    assert len(empty) == 0 and len(interop.from_ranx_run(empty)) == 0


def test_ranx_conversion_errors():
    with pytest.raises(InputError, match="duplicate"):
        interop.to_ranx_run(pd.concat([RUN, RUN.iloc[:1]]))
    with pytest.raises(InputError, match="grades must be integers"):
        interop.to_ranx_qrels(QRELS.assign(relevance=QRELS["relevance"] + 0.5))
    with pytest.raises(InputError, match="expected a ranx.Run"):
        interop.from_ranx_run({"q1": {"a": 1.0}})
    with pytest.raises(InputError, match="expected a ranx.Qrels"):
        interop.from_ranx_qrels(QRELS)


def test_ir_measures_round_trip_through_trec_files(tmp_path):
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    write_qrels(QRELS, qrels_path)
    write_run(RUN, run_path)
    qrels = interop.from_ir_measures_qrels(ir_measures.read_trec_qrels(str(qrels_path)))
    pd.testing.assert_frame_equal(qrels, read_qrels(qrels_path))
    run = interop.from_ir_measures_run(ir_measures.read_trec_run(str(run_path)))
    pd.testing.assert_frame_equal(run, read_run(run_path)[["query_id", "doc_id", "score"]])

    as_tuples = interop.to_ir_measures_qrels(QRELS)
    assert as_tuples[0] == ir_measures.Qrel("q1", "a", 2, "0")
    pd.testing.assert_frame_equal(interop.from_ir_measures_qrels(as_tuples), QRELS)
    scored = interop.to_ir_measures_run(RUN)
    assert scored[1] == ir_measures.ScoredDoc("q1", "x", 1.5)
    pd.testing.assert_frame_equal(interop.from_ir_measures_run(scored), RUN.drop(columns="tag"))


def test_ir_measures_dict_and_frame_forms():
    qrels_dict = {"q1": {"a": 2, "b": 0}}
    assert interop.from_ir_measures_qrels(qrels_dict).values.tolist() == [
        ["q1", "a", 2],
        ["q1", "b", 0],
    ]
    # ir_measures' DataFrame form has an iteration column; it is dropped
    frame = pd.DataFrame(interop.to_ir_measures_qrels(QRELS))
    assert "iteration" in frame.columns
    pd.testing.assert_frame_equal(interop.from_ir_measures_qrels(frame), QRELS)
    run_frame = pd.DataFrame(interop.to_ir_measures_run(RUN))
    pd.testing.assert_frame_equal(interop.from_ir_measures_run(run_frame), RUN.drop(columns="tag"))
    assert interop.from_ir_measures_run({"q1": {"a": 1}}).values.tolist() == [["q1", "a", 1.0]]
    assert len(interop.from_ir_measures_run([])) == 0
    assert len(interop.from_ir_measures_qrels([])) == 0


def test_ir_measures_conversion_errors():
    with pytest.raises(InputError, match="not an integer") as err:
        interop.from_ir_measures_qrels([ir_measures.Qrel("q7", "a", 1.5)])
    assert err.value.query_id == "q7"
    with pytest.raises(InputError, match="not a number"):
        interop.from_ir_measures_run([ir_measures.ScoredDoc("q1", "a", "high")])
    with pytest.raises(InputError, match="NaN"):
        interop.from_ir_measures_run([ir_measures.ScoredDoc("q1", "a", float("nan"))])
    with pytest.raises(InputError, match="duplicate"):
        interop.from_ir_measures_qrels([ir_measures.Qrel("q1", "a", 1)] * 2)
    with pytest.raises(InputError, match="not a namedtuple"):
        interop.from_ir_measures_run([("q1", "a", 1.0)])


#: The ids' layout: numba compiles ranx's code for each width of the ids, and
#: ``scripts/compile_oracles.py`` (run by ``make venv``) compiles these widths ahead.
QUERY, DOC = "q{:06d}".format, "d{:08d}".format


def synthetic(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """30 queries, graded qrels (0-3, some judged non-relevant), runs of 150 distinct scores;
    query 29 is missing from the run and query 99 has no qrels."""
    rng = np.random.default_rng(seed)
    docs = np.array([DOC(i) for i in range(300)])
    qrels_rows, run_rows = [], []
    for q in range(30):
        qid = QUERY(q)
        judged = rng.choice(docs, size=int(rng.integers(1, 40)), replace=False)
        grades = rng.integers(0, 4, judged.size)
        qrels_rows += [(qid, d, int(g)) for d, g in zip(judged, grades, strict=True)]
        if q == 29:
            continue
        retrieved = rng.choice(docs, size=150, replace=False)
        scores = rng.permutation(150).astype(float) + rng.random(150) * 0.5  # no ties
        run_rows += [(qid, d, s) for d, s in zip(retrieved, scores, strict=True)]
    run_rows.append((QUERY(99), DOC(0), 1.0))
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    return qrels, run


MEASURES = {"nDCG@10": "ndcg@10", "P@10": "precision@10", "R@100": "recall@100"}


def ranx_per_query(qrels: pd.DataFrame, run: pd.DataFrame, **kwargs) -> pd.DataFrame:
    rq, rr = interop.to_ranx_qrels(qrels), interop.to_ranx_run(run, **kwargs)
    # make_comparable: ragnb's convention (the qrels' queries; a missing one is empty)
    scores = ranx.evaluate(rq, rr, list(MEASURES.values()), return_mean=False, make_comparable=True)
    ids = sorted(rq.keys())
    return pd.DataFrame({ours: scores[theirs] for ours, theirs in MEASURES.items()}, index=ids)


def test_ranx_on_converted_data_matches_evaluate_without_ties():
    qrels, run = synthetic()
    ours = evaluate(qrels, run, list(MEASURES)).per_query_wide()
    theirs = ranx_per_query(qrels, run)
    assert theirs.index.tolist() == ours.index.tolist() and len(ours) == 30
    assert ours.loc[QUERY(29)].tolist() == [0.0, 0.0, 0.0]  # missing from the run
    np.testing.assert_allclose(theirs.to_numpy(), ours.to_numpy(), rtol=1e-12, atol=1e-15)


def test_ties_ranx_order_differs_from_trec_eval_unless_ties_are_broken_first():
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    # a and b tie; trec_eval (and ragnb) put b first (doc_id descending): P@1 = 0
    tied = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    assert evaluate(qrels, tied, ["P@1"]).aggregate_to_dict() == {"P@1": 0.0}
    # ranx keeps the insertion order of a short tied list; handed a first, it ranks a first
    a_first = ranx.Run.from_dict({"q1": {"a": 1.0, "b": 1.0}})
    assert ranx.evaluate(interop.to_ranx_qrels(qrels), a_first, "precision@1") == 1.0
    # trec_eval_ties=True hands ranx ragnb's order as strictly decreasing scores
    broken = interop.to_ranx_run(tied, trec_eval_ties=True)
    assert dict(broken.to_dict()["q1"]) == {"b": 2.0, "a": 1.0}
    assert ranx.evaluate(interop.to_ranx_qrels(qrels), broken, "precision@1") == 0.0

    # on a synthetic run with many ties handed over in file order, ranx's order of tied
    # documents disagrees with trec_eval's on some queries; breaking the ties first agrees
    qrels, run = synthetic(1)
    run = run.assign(score=np.floor(run["score"] / 10))  # 15 documents per score value
    ours = evaluate(qrels, run, list(MEASURES)).per_query_wide()
    file_order = ranx.Run.from_dict(run_to_dict(run))
    plain = ranx.evaluate(
        interop.to_ranx_qrels(qrels),
        file_order,
        list(MEASURES.values()),
        return_mean=False,
        make_comparable=True,
    )
    differs = ~np.isclose(plain["ndcg@10"], ours["nDCG@10"].to_numpy())
    assert differs.sum() >= 5
    fixed = ranx_per_query(qrels, run, trec_eval_ties=True)
    np.testing.assert_allclose(fixed.to_numpy(), ours.to_numpy(), rtol=1e-12, atol=1e-15)


def test_docstring_examples():
    result = doctest.testmod(interop, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0
