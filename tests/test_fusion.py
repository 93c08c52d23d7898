"""ragnb.retrievers.fusion: every method and normalisation against ranx, by hand, and the weight
search.

The oracle is ranx's own fusion code (``ranx.fuse``, v0.3.21) run in a subprocess with
``NUMBA_DISABLE_JIT=1``: the same source, interpreted, so the test does not pay numba's
compilation of ranx's parallel kernels (minutes on two cores). Weighted RRF, which ranx does not
name, is ranx's RRF scoring (``ranx.fusion.rrf._rrf_score_parallel``) fed to its ``wsum``.

The runs are three BM25 variants on the first 15 judged queries of each shared dataset, over
their judged documents and 600 more, and the two runs (``bm25``, ``dense``) of each case the
repository carries (``tests/data/oracle``: their query sets differ partly, and scores tie):
every method on each dataset, every normalisation on the first and one in turn on the others.
For the rank methods (RRF, weighted RRF, ISR, Borda) both sides get the runs re-scored by
ragnb's rank (trec_eval order), because ranx orders tied scores in an unspecified way; the score
methods get the runs' own scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import oracle_data
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.retrievers.fusion import (
    METHODS,
    NORMS,
    RANK_METHODS,
    SCORE_METHODS,
    Fusion,
    fuse,
    fused_scores,
    normalize,
    normalize_scores,
    optimize_weights,
    parse_fusion,
)

RANX_NAMES = {
    "rrf": "rrf",
    "isr": "isr",
    "borda": "bordafuse",
    "combsum": "sum",
    "combmnz": "mnz",
    "combmax": "max",
    "combmin": "min",
    "combmed": "med",
    "combanz": "anz",
    "wsum": "wsum",
}
RANX_NORMS = {"none": None, "min-max": "min-max", "z-score": "zmuv", "max": "max", "sum": "sum"}
WEIGHTS = [0.5, 0.2, 0.3]

ORACLE = r"""
import json, sys
from ranx import Run, fuse
from ranx.fusion.rrf import _rrf_score_parallel
cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    runs = [Run.from_dict(r) for r in case["runs"]]
    if case["method"] == "wrrf":
        ranked = []
        for run in runs:
            r = Run()
            r.run = _rrf_score_parallel(run.run, 60)
            ranked.append(r)
        fused = fuse(ranked, norm=None, method="wsum", params={"weights": case["weights"]})
    else:
        params = {"weights": case["weights"]} if case["method"] == "wsum" else {}
        fused = fuse(runs, norm=case["norm"], method=case["method"], params=params)
    out.append(fused.to_dict())
json.dump(out, open(sys.argv[2], "w"))
"""


def _as_dict(run: pd.DataFrame) -> dict[str, dict[str, float]]:
    return {
        str(q): dict(zip(g["doc_id"].astype(str), g["score"].astype(float), strict=True))
        for q, g in run.groupby("query_id", sort=False)
    }


def _as_dicts(runs: list[pd.DataFrame]) -> list[dict[str, dict[str, float]]]:
    """The runs as ranx reads them. ranx.fuse wants the same queries in every run: a query
    absent from a run is an empty ranking there, as in ragnb's fuse."""
    dicts = [_as_dict(r) for r in runs]
    queries = sorted(set().union(*dicts))
    return [{q: {} for q in queries} | d for d in dicts]


def _rank_scored(run: pd.DataFrame) -> pd.DataFrame:
    """The run with each score replaced by minus its trec_eval rank (no ties left)."""
    return normalize(run, "none").assign(score=lambda r: -r["rank"].astype(float))


@pytest.fixture(scope="module", params=["shared", "carried"])
def runs_by_dataset(request):
    """``shared``: three BM25 runs (default; no stemming k1 0.9 b 0.4; k1 2 b 1) per shared
    dataset; ``carried``: the two runs of each case the repository carries."""
    if request.param == "carried":
        return {
            case: [oracle_data.run(case, s) for s in oracle_data.SYSTEMS]
            for case in oracle_data.CASES
        }
    from ragnb.retrievers.retrieve import BM25Retriever

    out = {}
    for fixture in ("scifact_path", "dbpedia_path", "msmarco_path"):
        path = request.getfixturevalue(fixture)
        data = read_beir(path)
        qids = sorted(data.judged_queries["query_id"])[:15]
        queries = data.queries[data.queries["query_id"].isin(qids)]
        judged = set(data.qrels.loc[data.qrels["query_id"].isin(qids), "doc_id"])
        keep = data.corpus["doc_id"].isin(judged) | (np.arange(len(data.corpus)) < 600)
        corpus = data.corpus[keep]
        variants = ({}, {"stemmer": None, "k1": 0.9, "b": 0.4}, {"k1": 2.0, "b": 1.0})
        out[path.name] = [
            BM25Retriever(**kw).index(corpus).retrieve(queries, k=30) for kw in variants
        ]
    return out


def _cases(runs_by_dataset):
    """(dataset, ragnb fusion, runs given to both, ranx method, ranx norm, weights): every
    method on every dataset, every normalisation of each score method on the first dataset and
    one (in turn) on the others."""
    cases = []
    for d, (name, runs) in enumerate(runs_by_dataset.items()):
        ranked = [_rank_scored(r) for r in runs]
        weights = WEIGHTS[: len(runs)]
        for method in RANK_METHODS:
            f = Fusion(method, tuple(weights) if method == "wrrf" else None)
            cases.append((name, f, ranked, RANX_NAMES.get(method, method), None, weights))
        for i, method in enumerate(SCORE_METHODS):
            for norm in NORMS if d == 0 else [NORMS[(i + d) % len(NORMS)]]:
                f = Fusion(method, tuple(weights) if method == "wsum" else None, norm)
                cases.append((name, f, runs, RANX_NAMES[method], RANX_NORMS[norm], weights))
    return cases


def test_every_method_and_normalisation_equals_ranx(runs_by_dataset, tmp_path):
    cases = _cases(runs_by_dataset)
    payload = [
        {
            "runs": _as_dicts(runs),
            "method": ranx_method,
            "norm": ranx_norm,
            "weights": weights,
        }
        for _, _, runs, ranx_method, ranx_norm, weights in cases
    ]
    (tmp_path / "in.json").write_text(json.dumps(payload))
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    subprocess.run(
        [sys.executable, "-c", ORACLE, str(tmp_path / "in.json"), str(tmp_path / "out.json")],
        check=True,
        env=env,
        timeout=300,
    )
    expected = json.loads((tmp_path / "out.json").read_text())
    assert {f.method for _, f, *_ in cases} == set(METHODS)
    for (dataset, f, runs, *_), ref in zip(cases, expected, strict=True):
        ours = fuse(runs, f)
        got = _as_dict(ours)
        where = f"{dataset} {f.name}"
        assert set(got) == set(ref), where
        for q, docs in ref.items():
            assert set(got[q]) == set(docs), f"{where} {q}"
            a = np.array([got[q][d] for d in docs])
            b = np.array(list(docs.values()))
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"{where} {q}")
        # our order is the fused score, ties by doc_id descending (trec_eval)
        for _, g in ours.groupby("query_id"):
            rows = list(zip(g["score"], g["doc_id"], strict=True))
            for (s1, d1), (s2, d2) in zip(rows, rows[1:], strict=False):
                assert s1 > s2 or (s1 == s2 and d1 > d2), where


# --------------------------------------------------------------------------- by hand


def test_hand_computed_scores():
    runs = [["a", "b", "c"], ["c", "a"], ["d"]]
    scores = [[3.0, 2.0, 1.0], [0.9, 0.1], [5.0]]
    # Borda: 4 candidates. run 1: a 4, b 3, c 2, d (4-3+1)/2 = 1; run 2: c 4, a 3, b = d =
    # (4-2+1)/2 = 1.5; run 3: d 4, a = b = c = (4-1+1)/2 = 2
    assert fused_scores(runs, "borda") == {"a": 9.0, "b": 6.5, "c": 8.0, "d": 6.5}
    # ISR: |R(d)| * sum 1/rank^2: a 2 * (1 + 1/4), c 2 * (1/9 + 1), b 1/4, d 1
    assert fused_scores(runs, "isr") == pytest.approx({"a": 2.5, "b": 0.25, "c": 20 / 9, "d": 1})
    # min-max per run: run 1 a 1, b .5, c 0; run 2 c 1, a 0; run 3 d 0 (one score: 0 / 1e-9)
    med = fused_scores(runs, "combmed", scores=scores)
    assert med == {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.0}
    assert fused_scores(runs, "combmnz", scores=scores) == {"a": 2.0, "b": 0.5, "c": 2.0, "d": 0}
    assert fused_scores(runs, "combanz", scores=scores) == {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0}
    assert fused_scores(runs, "combmax/none", scores=scores)["d"] == 5.0
    assert fused_scores(runs, "combmin/none", scores=scores)["a"] == 0.1
    wrrf = fused_scores(runs, "wrrf(1,2,0,k=0)")  # a 1/1 + 2/2, c 1/3 + 2/1, d 0
    assert wrrf == pytest.approx({"a": 2.0, "b": 0.5, "c": 7 / 3, "d": 0.0})
    wsum = fused_scores(runs, "wsum/none(1,10,0.5)", scores=scores)
    assert wsum == pytest.approx({"a": 4.0, "b": 2.0, "c": 10.0, "d": 2.5})


def test_normalisations_by_hand_and_their_guards():
    s = [4.0, 2.0, 0.0]
    assert normalize_scores(s, "min-max") == [1.0, 0.5, 0.0]
    assert normalize_scores(s, "max") == [1.0, 0.5, 0.0]
    assert normalize_scores(s, "sum") == pytest.approx([2 / 3, 1 / 3, 0.0])
    std = np.std(s)
    assert normalize_scores(s, "z-score") == pytest.approx([2 / std, 0.0, -2 / std])
    assert normalize_scores(s, "none") == s
    # ranx's guards: a constant ranking min-max / z-scores to 0; a negative max divides by 1e-9
    assert normalize_scores([3.0, 3.0], "min-max") == [0.0, 0.0]
    assert normalize_scores([3.0, 3.0], "z-score") == [0.0, 0.0]
    assert normalize_scores([-1.0], "max") == [pytest.approx(-1e9)]
    assert normalize_scores([], "sum") == []
    run = pd.DataFrame({"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "c"], "score": s})
    assert normalize(run, "min-max")["score"].tolist() == [1.0, 0.0, 0.0]


def test_names_round_trip_and_ranx_aliases():
    for method in METHODS:
        weights = (0.25, 0.75) if method in ("wsum", "wrrf") else None
        norms = NORMS if method in SCORE_METHODS else ("none",)
        for norm in norms:
            f = Fusion(method, weights, norm, 30)
            assert parse_fusion(f.name) == (
                f if method in ("rrf", "wrrf") else Fusion(method, weights, norm)
            )
            assert parse_fusion(f) == f
    assert Fusion("wrrf", (1.0, 2.0), rrf_k=30).name == "wrrf(1,2,k=30)"
    exact = Fusion("wsum", (1 / 3, 2 / 3))  # weights that %g would round still read back
    assert parse_fusion(exact.name) == exact
    assert parse_fusion("mnz/zmuv") == Fusion("combmnz", norm="z-score")
    assert parse_fusion("bordafuse").method == "borda"
    assert parse_fusion({"method": "wsum", "weights": [1, 2], "norm": "max"}).name == (
        "wsum/max(1,2)"
    )
    assert parse_fusion("wsum", weights=[0.5, 0.5]).weights == (0.5, 0.5)
    assert parse_fusion("rrf", rrf_k=10).rrf_k == 10 and parse_fusion(None).name == "rrf"


@pytest.mark.parametrize(
    "spec, match",
    [
        ("condorcet", "fusion method"),
        ("combsum/l2", "fusion norm"),
        ("rrf/min-max", "reads only ranks"),
        ("combsum(1,2)", "takes no weights"),
        ("wsum(-1,2)", ">= 0"),
        ("wsum(0,0)", "positive value"),
        ("wsum(1,x)", "malformed fusion argument"),
        ("rrf(k=-1)", "rrf_k"),
        ("wsum(1,2", "malformed fusion"),
        ({"method": "wsum", "weight": [1]}, "unknown fusion key"),
    ],
)
def test_bad_specs_are_refused(spec, match):
    with pytest.raises(InputError, match=match):
        parse_fusion(spec)


def test_bad_runs_and_weights_are_refused():
    a = pd.DataFrame({"query_id": ["q"], "doc_id": ["x"], "score": [1.0]})
    with pytest.raises(InputError, match="at least one run"):
        fuse([], "combsum")
    with pytest.raises(InputError, match="2 weights for 3 runs"):
        fuse([a, a, a], "wsum", weights=[1, 2])
    with pytest.raises(InputError, match="weights given twice"):
        fuse([a, a], "wsum(1,2)", weights=[1, 2])
    with pytest.raises(InputError, match="NaN"):
        fuse([a, a.assign(score=np.nan)], "combsum")
    with pytest.raises(InputError, match="reads scores"):
        fused_scores([["x"]], "combsum")
    with pytest.raises(InputError, match="cutoff k"):
        fuse([a], "rrf", k=0)


# --------------------------------------------------------------------------- weight search


def _tuning_data(n_queries: int = 40):
    """run ``good`` ranks each query's relevant document first; ``noise`` ranks it last."""
    rng = np.random.default_rng(3)
    qrels, good, noise = [], [], []
    for i in range(n_queries):
        q = f"q{i:02d}"
        docs = [f"{q}d{j}" for j in range(10)]
        qrels.append((q, docs[0], 1))
        scores = np.sort(rng.random(10))[::-1]
        good += [(q, d, s) for d, s in zip(docs, scores, strict=True)]
        noise += [(q, d, s) for d, s in zip(docs[::-1], scores, strict=True)]
    cols = ["query_id", "doc_id", "score"]
    return (
        pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
        {"good": pd.DataFrame(good, columns=cols), "noise": pd.DataFrame(noise, columns=cols)},
    )


def test_grid_search_tunes_on_train_and_reports_held_out_only():
    qrels, runs = _tuning_data()
    res = optimize_weights(qrels, runs, "wsum", measure="nDCG@10", step=0.1, seed=1)
    assert len(res.trials) == 11  # (0, 1), (0.1, 0.9), ..., (1, 0)
    assert not set(res.train_queries) & set(res.heldout_queries)
    assert len(res.train_queries) == len(res.heldout_queries) == 20
    best = res.trials.loc[res.trials["train_value"].idxmax()]
    assert res.fusion.weights == (best["w_good"], best["w_noise"])
    assert res.fusion.weights[0] > res.fusion.weights[1]
    table = res.heldout.set_index("system")
    assert (table["n_queries"] == 20).all()  # the held-out queries, never the training ones
    assert table.loc[res.fusion.name, "value"] == pytest.approx(table.loc["good", "value"])
    assert table.loc["noise", "value"] < table.loc[res.fusion.name, "value"]
    assert "wsum (equal weights)" in table.index


def test_bayesian_search_is_seeded_and_explicit_split_is_kept():
    qrels, runs = _tuning_data(20)
    train = [f"q{i:02d}" for i in range(5)]
    kw = dict(search="bayes", n_trials=6, train_queries=train, seed=7, measure="RR")
    one = optimize_weights(qrels, runs, "wrrf", **kw)
    two = optimize_weights(qrels, runs, "wrrf", **kw)
    assert one.fusion == two.fusion and len(one.trials) == 6
    assert one.train_queries == tuple(train) and len(one.heldout_queries) == 15
    assert (one.heldout["n_queries"] == 15).all()


def test_weight_search_refuses_bad_input():
    qrels, runs = _tuning_data(4)
    with pytest.raises(InputError, match="weights are tuned"):
        optimize_weights(qrels, runs, "rrf")
    with pytest.raises(InputError, match="at least two runs"):
        optimize_weights(qrels, {"good": runs["good"]})
    with pytest.raises(InputError, match="held-out"):
        optimize_weights(qrels, runs, train_queries=["q00", "q01", "q02", "q03"])
    with pytest.raises(InputError, match="not in the qrels"):
        optimize_weights(qrels, runs, train_queries=["nope"])
    with pytest.raises(InputError, match="step must divide 1"):
        optimize_weights(qrels, runs, step=0.3)
    with pytest.raises(InputError, match="search"):
        optimize_weights(qrels, runs, search="random")
