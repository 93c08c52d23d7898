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

import ir_measures
import numpy as np
import oracle_data
import pandas as pd
import pytest
from bm25_runs import bm25_run

from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.index import sort_run
from ragnb.measures import Measure, parse_measure

TOL = 1e-9


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


# ----------------------------------------------------------------------------- pytrec_eval

#: pytrec_eval's parameterised forms it reads (cutoff and level lists); ``set_F.0.5`` names its
#: value ``set_F`` like the default and is evaluated on its own. Not compared: ``relstring``
#: (pytrec_eval returns 0.0 for the string), ``runid`` and ``num_q`` (no per-query value), the
#: ``name=value`` pairs of ``ndcg``/``G``/``ndcg_rel``/``Rndcg`` (pytrec_eval 0.5 stops with
#: "malformed pair parameters"), ``utility``'s coefficients ("improper number of coefficients":
#: it reads none) and ``11pt_avg`` at other levels (no single ragnb measure; ``ragnb trec-eval``
#: prints it and is compared with trec_eval 10.0 by ``benchmarks/trec_eval_equality.py``).
PYTREC_PARAMETERISED = (
    "P.3,7", "recall.3,7", "ndcg_cut.3,7", "map_cut.3,7", "relative_P.3,7", "success.2,3",
    "iprec_at_recall.0.25,0.33", "Rprec_mult.0.35,3",
)  # fmt: skip
PYTREC_CASES = [
    (source, case, level)
    for source in SOURCES
    for case, level in (
        ("scifact-like", 1),
        ("dl-like", 1),
        ("dl-like", 2),
        ("dbpedia-like", 1),
        ("dbpedia-like", 2),
    )
]
FIXTURES = {
    "scifact-like": "scifact_path",
    "dl-like": "msmarco_path",
    "dbpedia-like": "dbpedia_path",
}


def pytrec_eval_values(qrels, run, level: int) -> pd.DataFrame:
    """pytrec_eval's per-query values of every measure it supports (``supported_measures``
    without ``runid``, ``num_q``, ``relstring``) and of :data:`PYTREC_PARAMETERISED`, at
    ``relevance_level`` ``level``: one row per query, one column per pytrec_eval name
    (``set_F.0.5`` as ``set_F.0.5``)."""
    import pytrec_eval

    qd: dict[str, dict[str, int]] = {}
    for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True):
        qd.setdefault(q, {})[d] = int(g)
    rd: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run["query_id"], run["doc_id"], run["score"], strict=True):
        rd.setdefault(q, {})[d] = float(s)
    plain = set(pytrec_eval.supported_measures) - {"runid", "num_q", "relstring"}
    frames = []
    # one evaluator each: pytrec_eval's P.3,7 replaces P's default cutoffs, set_F.0.5's name
    # is set_F's
    for asked in (plain, set(PYTREC_PARAMETERISED), {"set_F.0.5"}):
        values = pytrec_eval.RelevanceEvaluator(qd, asked, relevance_level=level).evaluate(rd)
        frames.append(pd.DataFrame.from_dict(values, orient="index"))
    frames[-1].columns = ["set_F.0.5"]
    frame = pd.concat(frames, axis=1)
    return frame


def ragnb_measure(name: str, level: int) -> Measure:
    """The ragnb measure of a pytrec_eval name, with trec_eval 9.x's convention and ``-l``."""
    m = Measure("SetF", beta=0.5) if name == "set_F.0.5" else parse_measure(name)
    params = dict(m.params)
    if m.spec.param("trec_eval") is not None:
        params["trec_eval"] = 9
    if m.spec.param("rel") is not None:
        params["rel"] = level
    return Measure(m.family, m.cutoff, **params)


@pytest.mark.parametrize(("source", "case", "level"), PYTREC_CASES)
def test_every_pytrec_eval_measure_agrees_per_query(request, source, case, level):
    """Every measure pytrec_eval (trec_eval 9.x) computes, by ragnb's name with the 9.x
    convention (``trec_eval=9``), per query to 1e-9 on the BM25 run of each shared dataset and
    on the carried runs. pytrec_eval's gm_map and gm_bpref per-query values are
    ``log(max(v, 1e-5))``, compared as ``max(v, 1e-5)``."""
    qrels, run, _ = qrels_run_counts(request, source, FIXTURES[case], case)
    theirs = pytrec_eval_values(qrels, run, level)
    names = sorted(theirs.columns)
    assert len(names) == 109  # 92 default values, 16 parameterised, set_F.0.5
    measures = [ragnb_measure(n, level) for n in names]
    wide = evaluate(qrels, run, measures).per_query_wide()
    # pytrec_eval leaves out the queries of the qrels missing from the run; ragnb scores them
    missing = set(qrels["query_id"]) - set(run["query_id"])
    assert set(wide.index) - missing == set(theirs.index)
    ours = wide.loc[theirs.index, [str(m) for m in measures]].to_numpy(dtype=np.float64, copy=True)
    expected = theirs[names].to_numpy(dtype=np.float64, copy=True)
    gm = np.array([n.startswith("gm_") for n in names])
    ours[:, gm], expected[:, gm] = np.maximum(ours[:, gm], 1e-5), np.exp(expected[:, gm])
    diff = np.abs(ours - expected)
    bad = [
        (names[j], theirs.index[i], ours[i, j], expected[i, j])
        for i, j in zip(*np.nonzero(~(diff <= TOL)), strict=True)
    ]
    assert not bad, bad[:10]
    assert expected.size >= 20 * len(names)
