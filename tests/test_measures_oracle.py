"""Agreement with ir_measures (pytrec_eval, i.e. trec_eval) on real data and real BM25 runs.

Each shared dataset gets a deterministic BM25 run (bm25s, top 100, documents with score 0
dropped, so some runs are shorter than 100 and BM25 scores tie). The run also holds queries
without qrels and lacks a few judged queries, so both policies are exercised. Per-query values
must agree to 1e-9. The same comparisons run on the two runs of each case the repository carries
(``tests/data/oracle``, ``source`` ``carried-bm25`` and ``carried-dense``), so that they run
without ``../shared`` too.

ir_measures routes measures to different backends: P, R, nDCG, RR, Success go to pytrec_eval
(trec_eval's tie order, ``doc_id`` descending, like ragnb); Judged goes to its own provider and
RR@k to MS MARCO's script, which both break ties by ``doc_id`` *ascending*. Those two are compared
on a copy of the run whose scores have been made distinct (same order, no ties).
"""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import oracle_data
import pandas as pd
import pytest

from ragnb.engine import sort_run
from ragnb.evaluate import evaluate
from ragnb.io import read_beir

TOL = 1e-9


def bm25_run(path: Path, *, n_missing: int = 3, n_extra: int = 5, k: int = 100) -> tuple:
    """Qrels and a BM25 run over a BEIR folder: judged queries minus the first ``n_missing``,
    plus ``n_extra`` queries without qrels; and the expected counts (queries of the qrels absent
    from the run, run queries without qrels)."""
    import bm25s

    ds = read_beir(path)
    judged = ds.judged_queries
    unjudged = ds.queries[~ds.queries["query_id"].isin(set(ds.qrels["query_id"]))]
    queries = pd.concat([judged.iloc[n_missing:], unjudged.iloc[:n_extra]], ignore_index=True)
    texts = (ds.corpus["title"] + " " + ds.corpus["text"]).tolist()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(queries["text"].tolist(), stopwords="en", show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    run = pd.DataFrame(
        {
            "query_id": np.repeat(queries["query_id"].to_numpy(dtype=object), k),
            "doc_id": ds.corpus["doc_id"].to_numpy(dtype=object)[docs.ravel()],
            "score": scores.ravel().astype(np.float64),
        }
    )
    run = run[run["score"] > 0].reset_index(drop=True)
    in_run = set(run["query_id"])
    n_without = len(in_run - set(ds.qrels["query_id"]))
    n_absent = len(set(ds.qrels["query_id"]) - in_run)
    assert n_without >= 1 and n_absent >= n_missing
    return ds.qrels, run, (n_absent, n_without)


def untied(run: pd.DataFrame) -> pd.DataFrame:
    """The same ranking (trec_eval order) with distinct scores."""
    ordered = sort_run(run).run
    return ordered.assign(score=-ordered["rank"].astype(np.float64)).drop(columns="rank")


def max_abs_diff(ours: pd.DataFrame, provider, names: list[str], qrels, run) -> dict[str, float]:
    """Max |ragnb - ir_measures| per measure; the query sets must be identical."""
    measures = [ir_measures.parse_measure(n) for n in names]
    theirs: dict[str, dict[str, float]] = {}
    for metric in provider.iter_calc(measures, qrels, run):
        theirs.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
    out = {}
    for name in names:
        col = ours[name]
        assert set(theirs[name]) == set(col.index), name
        out[name] = max(abs(col[q] - v) for q, v in theirs[name].items())
    return out


def check(qrels, run, expected_counts, pytrec_names, own_provider_names):
    res = evaluate(qrels, run, pytrec_names + own_provider_names)
    wide = res.per_query_wide()
    counts = (res.counts["queries_missing_from_run"], res.counts["run_queries_without_qrels"])
    assert counts == expected_counts
    assert (run.duplicated(["query_id", "score"])).any(), "want ties in the raw run"
    diffs = max_abs_diff(wide, ir_measures.pytrec_eval, pytrec_names, qrels, run)
    flat = untied(run)
    flat_wide = evaluate(qrels, flat, own_provider_names).per_query_wide()
    pd.testing.assert_frame_equal(flat_wide, wide[own_provider_names])  # same order, same values
    for name in own_provider_names:
        provider = ir_measures.judged if name.startswith("Judged") else ir_measures.msmarco
        diffs |= max_abs_diff(flat_wide, provider, [name], qrels, flat)
    assert max(diffs.values()) <= TOL, diffs
    return diffs


SOURCES = ("shared", "carried-bm25", "carried-dense")
# (queries of the qrels absent from the run, run queries without qrels) of each carried run
CARRIED_COUNTS = {
    ("scifact-like", "bm25"): (4, 5),
    ("scifact-like", "dense"): (3, 5),
    ("dl-like", "bm25"): (3, 5),
    ("dl-like", "dense"): (2, 5),
    ("dbpedia-like", "bm25"): (3, 5),
    ("dbpedia-like", "dense"): (2, 5),
}


def qrels_run_counts(request, source: str, fixture: str, case: str) -> tuple:
    """The shared dataset's BM25 run (``source`` "shared"), or a run the repository carries."""
    if source == "shared":
        return bm25_run(request.getfixturevalue(fixture))
    system = source.removeprefix("carried-")
    return oracle_data.qrels(case), oracle_data.run(case, system), CARRIED_COUNTS[case, system]


@pytest.mark.parametrize("source", SOURCES)
def test_scifact_agrees_with_ir_measures(request, source):
    qrels, run, expected_counts = qrels_run_counts(request, source, "scifact_path", "scifact-like")
    diffs = check(
        qrels,
        run,
        expected_counts,
        ["P@5", "P@10", "R@100", "nDCG@10", "nDCG", "RR", "Success@10"],
        ["Judged@10", "Judged", "RR@10"],
    )
    assert len(diffs) == 10
    if source == "shared":
        # sanity: the run is a real BM25 run (BEIR reports nDCG@10 = 0.665 for BM25 on SciFact)
        assert 0.6 < evaluate(qrels, run, ["nDCG@10"]).aggregate_to_dict()["nDCG@10"] < 0.7


@pytest.mark.parametrize("source", SOURCES)
def test_msmarco_graded_and_rel2_agree_with_ir_measures(request, source):
    qrels, run, expected_counts = qrels_run_counts(request, source, "msmarco_path", "dl-like")
    check(
        qrels,
        run,
        expected_counts,
        [
            "P(rel=2)@10",
            "R(rel=2)@100",
            "RR(rel=2)",
            "Success(rel=2)@10",
            "P@10",
            "nDCG@10",
            "nDCG@5",
            "nDCG",
        ],
        ["Judged@10", "RR(rel=2)@10"],
    )


@pytest.mark.parametrize("source", SOURCES)
def test_dbpedia_with_zero_grades_agrees_with_ir_measures(request, source):
    qrels, run, expected_counts = qrels_run_counts(request, source, "dbpedia_path", "dbpedia-like")
    assert (qrels["relevance"] == 0).any()
    check(
        qrels,
        run,
        expected_counts,
        ["P(rel=2)@10", "P@10", "R@100", "nDCG@10", "RR", "Success@5"],
        ["Judged@10"],
    )


def test_ir_measures_judged_and_rr_at_k_break_ties_by_doc_id_ascending():
    """Documents an ir_measures behaviour the comparison above works around."""
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0}}  # trec_eval order: b, a
    ours = evaluate(qrels, run, ["Judged@1", "RR@1", "RR"]).aggregate_to_dict()
    assert ours == {"Judged@1": 0.0, "RR@1": 0.0, "RR": 0.5}
    theirs = {
        str(m.measure): m.value
        for m in ir_measures.iter_calc(
            [ir_measures.Judged @ 1, ir_measures.RR @ 1, ir_measures.RR], qrels, run
        )
    }
    assert theirs == {"Judged@1": 1.0, "RR@1": 1.0, "RR": 0.5}  # a first, except pytrec_eval's RR


def test_ir_measures_judged_divides_by_the_run_length():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    theirs = [m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 10], qrels, run)]
    assert theirs == [1.0]  # 2 judged / min(10, 2), not 2 / 10
    assert evaluate(qrels, run, ["Judged@10"]).aggregate_to_dict() == {"Judged@10": 1.0}


@pytest.mark.parametrize("seed", range(3))
def test_random_graded_runs_agree_with_pytrec_eval(seed):
    """Random qrels with negative grades, unjudged documents, ties and missing queries."""
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
            (f"q{q}", d, float(rng.integers(0, 6)))
            for q in range(5, 70)
            for d in rng.choice(docs, int(rng.integers(1, 40)), replace=False)
        ],
        columns=["query_id", "doc_id", "score"],
    )
    names = ["P@5", "P(rel=2)@10", "R@20", "R(rel=3)@5", "nDCG@10", "nDCG", "RR", "RR(rel=2)"]
    names += ["Success@3", "Success(rel=2)@10"]
    wide = evaluate(qrels, run, names).per_query_wide()
    diffs = max_abs_diff(wide, ir_measures.pytrec_eval, names, qrels, run)
    assert max(diffs.values()) <= TOL, diffs
