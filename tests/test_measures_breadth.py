"""The breadth measures: AP under its names, Rprec, infAP, IPrec, NumRet/NumRel, nDCG_exp, ERR,
RBP and its residual, alpha-nDCG, and the novelty-discounted RA-nWG.

Oracles on the three shared datasets with a BM25 run computed once per module, and on the three
cases the repository carries (``tests/data/oracle``, their ``bm25`` runs): ir_measures'
pytrec_eval (trec_eval 9.0), gdeval (ERR, exponential nDCG; it prints 5 decimals), ranx, and
pyndeval (alpha-nDCG); references written here from the papers' formulas (RBP residual,
alpha-nDCG); name round trips; edge cases; hand-worked examples.
"""

from __future__ import annotations

import math
import shutil
import warnings

import numpy as np
import oracle_data
import pandas as pd
import pytest

from ragnb.cli.main import main as cli_main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir, write_qrels, write_run
from ragnb.io.interop import from_ir_measures_qrels, to_ir_measures_qrels
from ragnb.measures import alpha_ndcg, parse_measure, prepare, prepare_subtopics
from ragnb.measures.novelty import default_source, ra_nwg_novelty

DATASETS = ("scifact", "msmarco-dl-subset", "dbpedia-entity-subset")


def _dicts(frame: pd.DataFrame, value: str, kind: type) -> dict[str, dict[str, object]]:
    return {
        str(q): dict(zip(g["doc_id"].astype(str), g[value].map(kind), strict=True))
        for q, g in frame.groupby("query_id", sort=False)
    }


@pytest.fixture(scope="module", params=["shared", "carried"])
def bm25(request):
    """name -> (qrels, BM25 top-100 run with its tied scores, the same run with unique scores
    in trec_eval's order, so that every tool ranks it alike).

    ``shared``: the judged queries of the shared datasets; ``carried``: the ``bm25`` runs of the
    cases the repository carries (under the names of the datasets they mirror), which also hold
    queries missing from the run and run queries without qrels.
    """
    out: dict[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]] = {}
    if request.param == "carried":
        for case, name in oracle_data.MIRRORS.items():
            run = oracle_data.run(case)
            out[name] = (oracle_data.qrels(case), run, oracle_data.untied(run))
        return out
    from ragnb.retrievers.retrieve import BM25Retriever

    fixtures = ("scifact_path", "msmarco_path", "dbpedia_path")
    paths = {n: request.getfixturevalue(f) for n, f in zip(DATASETS, fixtures, strict=True)}
    for name in DATASETS:
        ds = read_beir(paths[name])
        run = BM25Retriever().index(ds.corpus).retrieve(ds.judged_queries, 100)
        unique = run.assign(score=-run["rank"].astype(np.float64))
        out[name] = (ds.qrels, run, unique)
    return out


def _per_query(result_wide: pd.DataFrame, name: str) -> pd.Series:
    return result_wide[str(parse_measure(name))]


def _frame(metrics) -> pd.DataFrame:
    rows = [(m.query_id, str(m.measure), m.value) for m in metrics]
    return pd.DataFrame(rows, columns=["q", "m", "v"]).pivot(index="q", columns="m", values="v")


# ----------------------------------------------------------------------------- oracles


PYTREC = [
    "AP",
    "AP@10",
    "AP@100",
    "Rprec",
    "infAP",
    "NumRet",
    "NumRet(rel=1)",
    "NumRel",
    "IPrec@0.0",
    "IPrec@0.1",
    "IPrec@0.3",
    "IPrec@0.5",
    "IPrec@0.7",
    "IPrec@1.0",
]
PYTREC_GRADED = ["AP(rel=2)@10", "Rprec(rel=2)", "infAP(rel=2)", "IPrec(rel=2)@0.3"]


@pytest.mark.parametrize("name", DATASETS)
def test_pytrec_eval_oracle_per_query(bm25, name):
    """ir_measures' pytrec_eval on the BM25 run with its tied scores (trec_eval's tie order).

    A query of the qrels missing from the run is given to pytrec_eval as an empty ranking, as
    ragnb evaluates it: 0 on every measure but NumRel, its relevant count. (On an empty ranking
    trec_eval's iprec_at_recall divides 0 relevant retrieved by 0 retrieved: NaN at a recall
    level that rounds to 0 relevant documents, where ragnb gives 0.)
    """
    import ir_measures

    qrels, run, _ = bm25[name]
    names = PYTREC + (PYTREC_GRADED if qrels["relevance"].max() > 1 else [])
    irm = [ir_measures.parse_measure(n) for n in names]
    qd = _dicts(qrels, "relevance", int)
    rd = {q: {} for q in qd} | _dicts(run, "score", float)
    theirs = _frame(ir_measures.pytrec_eval.iter_calc(irm, qd, rd))
    empty = sorted(set(qd) - set(run["query_id"]))
    nan = theirs.loc[empty].isna()
    assert all(c.startswith("IPrec") for c in nan.columns[nan.any()])
    theirs.loc[empty] = theirs.loc[empty].fillna(0.0)
    result = evaluate(qrels, run, names)
    ours = result.per_query_wide()
    assert set(theirs.index) == set(ours.index)
    for n, m in zip(names, irm, strict=True):
        want = theirs[str(m)].reindex(ours.index).to_numpy()
        np.testing.assert_allclose(_per_query(ours, n), want, rtol=0, atol=1e-9, err_msg=n)
    # the counts aggregate by sum, as trec_eval's "all" line
    agg = ir_measures.pytrec_eval.calc_aggregate(
        [ir_measures.NumRet, ir_measures.NumRel, ir_measures.NumRet(rel=1)], qd, rd
    )
    got = result.aggregate_to_dict()
    evaluated = run[run["query_id"].isin(set(qrels["query_id"]))]  # trec_eval skips the others
    assert got["NumRet"] == agg[ir_measures.NumRet] == len(evaluated)
    assert got["NumRel"] == agg[ir_measures.NumRel]
    assert got["NumRelRet"] == agg[ir_measures.NumRet(rel=1)]
    assert 0 < got["AP"] < 1 and 0 < got["infAP"] < 1


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval.pl needs perl")
@pytest.mark.parametrize("name", DATASETS[1:])
def test_gdeval_oracle_err_and_exponential_ndcg(bm25, name):
    """ERR@K and nDCG_exp@K against gdeval (5 printed decimals, hence 5e-6). gdeval compares
    topics as numbers and divides by a zero ideal: integer query ids, queries with a positive
    grade only."""
    import ir_measures

    qrels, _, run = bm25[name]
    positive = qrels.groupby("query_id")["relevance"].max() > 0
    keep = set(positive[positive].index)
    code = {q: str(i + 1) for i, q in enumerate(sorted(keep))}
    qrels = qrels[qrels["query_id"].isin(keep)].assign(query_id=lambda f: f["query_id"].map(code))
    run = run[run["query_id"].isin(keep)].assign(query_id=lambda f: f["query_id"].map(code))
    pairs = {"ERR@10": "ERR@10", "ERR@20": "ERR@20", "nDCG(dcg='exp-log2')@10": "nDCG_exp@10"}
    irm = [ir_measures.parse_measure(n) for n in pairs]
    theirs = _frame(
        ir_measures.gdeval.iter_calc(
            irm, _dicts(qrels, "relevance", int), _dicts(run, "score", float)
        )
    )
    ours = evaluate(qrels, run, list(pairs.values())).per_query_wide()
    for m, n in zip(irm, pairs.values(), strict=True):
        want = theirs[str(m)].reindex(ours.index).to_numpy()
        np.testing.assert_allclose(ours[n], want, rtol=0, atol=5e-6, err_msg=n)
    assert ours["ERR@10"].mean() > 0.1


#: The ids given to ranx (scripts/compile_oracles.py compiles ranx for these widths).
RANX_QUERY, RANX_DOC = "q{:06d}", "d{:08d}"


@pytest.mark.parametrize("name", DATASETS)
def test_ranx_oracle(bm25, name):
    """nDCG_exp (ranx ndcg_burges), Rprec, AP@100 (map@100), and RBP on binary qrels (ranx's
    rbp sums raw grades) against ranx, per query."""
    import ranx
    from numba.core.errors import NumbaTypeSafetyWarning

    qrels, _, run = bm25[name]
    binary = qrels.assign(relevance=(qrels["relevance"] >= 1).astype(np.int64))
    cases = {
        "graded": (
            qrels,
            {
                "nDCG_exp@10": "ndcg_burges@10",
                "ndcg_burges": "ndcg_burges",
                "r-precision": "r-precision",
                "map@100": "map@100",
            },
        ),
        "binary": (binary, {"RBP(p=0.8)": "rbp.8", "rbp.95": "rbp.95"}),
    }
    # ids of one width for ranx (the run's scores are unique: ids decide no order), so that
    # numba compiles ranx's code for one string type, the one scripts/compile_oracles.py caches
    qcode = {q: RANX_QUERY.format(i) for i, q in enumerate(pd.unique(qrels["query_id"]))}
    docs = pd.unique(pd.concat([qrels["doc_id"], run["doc_id"]]))
    dcode = {d: RANX_DOC.format(i) for i, d in enumerate(docs)}
    coded = run.assign(query_id=run["query_id"].map(qcode), doc_id=run["doc_id"].map(dcode))
    run_dict = _dicts(coded.dropna(subset=["query_id"]), "score", float)
    for q, pairs in cases.values():
        q_coded = q.assign(query_id=q["query_id"].map(qcode), doc_id=q["doc_id"].map(dcode))
        rq, rr = ranx.Qrels(_dicts(q_coded, "relevance", int)), ranx.Run(run_dict)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaTypeSafetyWarning)
            ranx.evaluate(rq, rr, list(pairs.values()), make_comparable=True)
        ours = evaluate(q, run, list(pairs)).per_query_wide()
        for ours_name, ranx_name in pairs.items():
            values = {q: rr.scores[ranx_name].get(c) for q, c in qcode.items()}
            theirs = pd.Series(values, dtype=float).reindex(ours.index).fillna(0.0)
            np.testing.assert_allclose(
                _per_query(ours, ours_name), theirs, rtol=0, atol=1e-9, err_msg=ours_name
            )


def _subtopic_qrels(qrels: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Synthetic subtopics on real judgements: each judgement gets one of 3 subtopics, 30% of
    them a second one of 2 more."""
    rng = np.random.default_rng(seed)
    first = qrels.assign(subtopic=[f"s{x}" for x in rng.integers(0, 3, len(qrels))])
    extra = first[rng.random(len(first)) < 0.3]
    extra = extra.assign(subtopic=[f"s{x}" for x in rng.integers(3, 5, len(extra))])
    return pd.concat([first, extra], ignore_index=True)


def naive_alpha_ndcg(judgements: dict[str, set[str]], ranking: list[str], k: int, alpha: float):
    """Clarke et al. 2008, eqs. 1-4, greedy ideal (ties to the largest doc_id, as ndeval)."""

    def adcg(docs: list[str]) -> float:
        seen: dict[str, int] = {}
        total = 0.0
        for i, d in enumerate(docs[:k]):
            gain = 0.0
            for s in judgements.get(d, ()):
                gain += (1 - alpha) ** seen.get(s, 0)
                seen[s] = seen.get(s, 0) + 1
            total += gain / math.log2(i + 2)
        return total

    pool, ideal, seen = sorted(judgements, reverse=True), [], {}
    for _ in range(min(k, len(pool))):
        gains = [sum((1 - alpha) ** seen.get(s, 0) for s in judgements[d]) for d in pool]
        best = pool.pop(int(np.argmax(gains)))
        ideal.append(best)
        for s in judgements[best]:
            seen[s] = seen.get(s, 0) + 1
    den = adcg(ideal)
    return adcg(ranking) / den if den else 0.0


@pytest.mark.parametrize("name", DATASETS[1:])
def test_alpha_ndcg_reference_and_ndeval(bm25, name):
    qrels, _, run = bm25[name]
    sub = _subtopic_qrels(qrels)
    names = ["alpha-nDCG@5", "alpha-nDCG(alpha=0.3)@20", "alpha-nDCG(rel=2)@10"]
    ours = evaluate(sub, run, [*names, "nDCG@10"]).per_query_wide()
    # the other measures read the document-level qrels (largest grade over the subtopics)
    plain = evaluate(qrels, run, ["nDCG@10"]).per_query_wide()
    np.testing.assert_array_equal(ours["nDCG@10"], plain["nDCG@10"])
    ranked = {q: g["doc_id"].tolist() for q, g in run.sort_values("rank").groupby("query_id")}
    for n in names:
        m = parse_measure(n)
        want = []
        for q in ours.index:
            rows = sub[(sub["query_id"] == q) & (sub["relevance"] >= m.params["rel"])]
            judgements = rows.groupby("doc_id")["subtopic"].agg(set).to_dict()
            want.append(
                naive_alpha_ndcg(judgements, ranked.get(q, []), m.cutoff, m.params["alpha"])
            )
        np.testing.assert_allclose(ours[n], want, rtol=0, atol=1e-12, err_msg=n)
    irq = to_ir_measures_qrels(sub)  # the subtopic in ir_measures' iteration field
    back = from_ir_measures_qrels(irq, subtopics=True)
    pd.testing.assert_frame_equal(
        back, sub[list(back.columns)].reset_index(drop=True), check_dtype=False
    )
    # ndeval (pyndeval, through ir_measures) as the oracle, where installed
    pytest.importorskip("pyndeval")
    import ir_measures

    rd = _dicts(run, "score", float)
    pairs = {"alpha_nDCG@5": names[0], "alpha_nDCG(alpha=0.3)@20": names[1]}
    for theirs_name, n in pairs.items():  # one measure per call: ir_measures mixes several up
        theirs = _frame(ir_measures.iter_calc([ir_measures.parse_measure(theirs_name)], irq, rd))
        np.testing.assert_allclose(
            ours[n], theirs.iloc[:, 0].reindex(ours.index), rtol=0, atol=1e-12, err_msg=n
        )


def naive_rbp_residual(judged: set[str], ranking: list[str], k: int | None, p: float) -> float:
    """Moffat and Zobel 2008, Section 4: unjudged ranks to depth d, plus p^d beyond."""
    d = len(ranking) if k is None else k
    padded = ranking[:d] + [None] * (d - len(ranking[:d]))
    return sum((1 - p) * p**i for i, doc in enumerate(padded) if doc not in judged) + p**d


def test_rbp_residual_against_reference(bm25):
    qrels, _, run = bm25["dbpedia-entity-subset"]
    partial = qrels.iloc[::2]  # half the judgements dropped: unjudged documents in the run
    names = ["RBP-residual", "RBP-residual@10", "RBP-residual(p=0.95)@200", "RBP(p=0.95)@200"]
    ours = evaluate(partial, run, names).per_query_wide()
    ranked = {q: g["doc_id"].tolist() for q, g in run.sort_values("rank").groupby("query_id")}
    for n in names[:3]:
        m = parse_measure(n)
        want = [
            naive_rbp_residual(
                set(partial.loc[partial["query_id"] == q, "doc_id"]),
                ranked.get(q, []),
                m.cutoff,
                m.params["p"],
            )
            for q in ours.index
        ]
        np.testing.assert_allclose(ours[n], want, rtol=0, atol=1e-12, err_msg=n)
    # RBP + residual bounds RBP on the complete judgements
    full = evaluate(qrels, run, ["RBP(p=0.95)@200"]).per_query_wide().iloc[:, 0]
    full = full.reindex(ours.index)
    upper = ours["RBP(p=0.95)@200"] + ours["RBP-residual(p=0.95)@200"]
    assert (ours["RBP(p=0.95)@200"] <= full + 1e-12).all() and (full <= upper + 1e-12).all()


# ----------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("map", "AP"),
        ("MAP", "AP"),
        ("AP", "AP"),
        ("AP@10", "AP@10"),
        ("map_cut_10", "AP@10"),
        ("map@10", "AP@10"),
        ("AP(rel=2)@10", "AP(rel=2)@10"),
        ("PR-AUC(rel=2)@10", "PR-AUC(rel=2)@10"),
        ("Rprec", "Rprec"),
        ("R-Prec", "Rprec"),
        ("r-precision", "Rprec"),
        ("Rprec(rel=2)", "Rprec(rel=2)"),
        ("ndcg_cut_10", "nDCG@10"),
        ("P_10", "P@10"),
        ("recip_rank", "RR"),
        ("ERR@10", "ERR@10"),
        ("ERR(gmax=3)@20", "ERR(gmax=3)@20"),
        ("RBP(p=0.8)", "RBP"),
        ("RBP(p=0.5,rel=2)@100", "RBP(p=0.5,rel=2)@100"),
        ("rbp.95", "RBP(p=0.95)"),
        ("RBP_res(p=0.8)", "RBP-residual"),
        ("infAP", "infAP"),
        ("NumRet", "NumRet"),
        ("num_ret", "NumRet"),
        ("NumRet(rel=1)", "NumRelRet"),
        ("num_rel_ret", "NumRelRet"),
        ("NumRel", "NumRel"),
        ("num_rel", "NumRel"),
        ("IPrec@0.5", "IPrec(recall=0.5)"),
        ("iprec_at_recall_0.50", "IPrec(recall=0.5,trec_eval=10)"),
        ("IPrec(rel=2)@0.3", "IPrec(recall=0.3,rel=2)"),
        ("nDCG_exp@10", "nDCG_exp@10"),
        ("ndcg_burges@10", "nDCG_exp@10"),
        ("nDCG(dcg='exp-log2')@10", "nDCG_exp@10"),
        ("alpha_nDCG@20", "alpha-nDCG@20"),
        ("alpha_nDCG(alpha=0.3)@20", "alpha-nDCG(alpha=0.3)@20"),
        ("RA-nWG-nov(beta=0.5)@10", "RA-nWG-nov(beta=0.5)@10"),
    ],
)
def test_names_round_trip(alias, canonical):
    m = parse_measure(alias)
    assert str(m) == canonical
    assert parse_measure(str(m)) == m and str(parse_measure(canonical)) == canonical


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("NumRel@10", "takes no cutoff"),
        ("IPrec", "'recall' is required"),
        ("IPrec@1.5", "outside"),
        ("ERR", "cutoff is required"),
        ("RBP(p=1.5)", "outside"),
        ("alpha-nDCG(alpha=2)@10", "outside"),
    ],
)
def test_bad_names(name, message):
    with pytest.raises(InputError, match=message):
        parse_measure(name)


# ----------------------------------------------------------------------------- edge cases

NEW = [
    "AP",
    "Rprec",
    "infAP",
    "IPrec@0.5",
    "NumRet",
    "NumRelRet",
    "NumRel",
    "nDCG_exp@10",
    "ERR@10",
    "RBP",
    "RBP-residual@5",
]


def test_edge_cases_no_relevant_missing_query_ties():
    # q0: only a judged non-relevant document; q1: missing from the run; q2: tied scores
    qrels = {"q0": {"a": 0}, "q1": {"b": 1}, "q2": {"c": 1, "d": 2}}
    run = {"q0": {"a": 1.0, "x": 0.5}, "q2": {"c": 1.0, "d": 1.0, "e": 1.0}}
    wide = evaluate(qrels, run, NEW).per_query_wide().set_axis(NEW, axis=1)
    zero = ["AP", "Rprec", "infAP", "IPrec@0.5", "NumRelRet", "nDCG_exp@10", "ERR@10"]
    assert (wide.loc[["q0", "q1"], zero] == 0).all().all()
    assert wide.loc["q0", "RBP"] == 0 and wide.loc["q1", "NumRet"] == 0
    assert wide.loc[["q0", "q1", "q2"], "NumRel"].tolist() == [0, 1, 2]
    # q1 returns nothing: the whole of RBP is still open at depth 5
    assert wide.loc["q1", "RBP-residual@5"] == pytest.approx(1.0)
    # q0 ranks a (judged), x (unjudged) then nothing: (1 - p) p + p^2 ... to depth 5
    assert wide.loc["q0", "RBP-residual@5"] == pytest.approx(
        0.2 * (0.8 + 0.8**2 + 0.8**3 + 0.8**4) + 0.8**5
    )
    # ties: doc_id descending (trec_eval): e (unjudged), d (2), c (1)
    assert wide.loc["q2", "Rprec"] == 0.5  # top 2: e, d
    assert wide.loc["q2", "AP"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    r_d, r_c = 3 / 16, 1 / 16
    assert wide.loc["q2", "ERR@10"] == pytest.approx(r_d / 2 + (1 - r_d) * r_c / 3)
    agg = evaluate(qrels, run, NEW).aggregate.set_index("measure")["value"]
    assert agg["NumRet"] == 5 and agg["NumRel"] == 3 and agg["NumRelRet"] == 2
    assert agg["Rprec"] == pytest.approx(0.5 / 3)  # mean, not sum


def test_empty_run_and_measures_needing_more_input():
    qrels = {"q": {"a": 1}}
    wide = evaluate(qrels, {}, NEW).per_query_wide().set_axis(NEW, axis=1)
    assert wide.loc["q", "NumRet"] == 0 and wide.loc["q", "AP"] == 0
    with pytest.raises(InputError, match="subtopic"):
        evaluate(qrels, {"q": {"a": 1.0}}, ["alpha-nDCG@10"])
    with pytest.raises(InputError, match="source"):
        evaluate(qrels, {"q": {"a": 1.0}}, ["RA-nWG-nov(beta=0.5)@10"], grade_map="1-5")
    with pytest.raises(InputError, match="grade 5 > gmax"):
        evaluate({"q": {"a": 5}}, {"q": {"a": 1.0}}, ["ERR@10"])
    bad = pd.DataFrame({"query_id": ["q", "q"], "subtopic": ["s", "s"], "doc_id": ["a", "a"]})
    with pytest.raises(InputError, match="twice"):
        prepare_subtopics(bad.assign(relevance=[1, 1]), {"q": {"a": 1.0}})


def test_alpha_ndcg_hand_example():
    # Clarke et al.'s setting: a covers s1, b repeats s1, c covers s2. Run a, b, c: gains 1,
    # 0.5, 1; the greedy ideal a, c, b: 1, 1, 0.5.
    sub = pd.DataFrame(
        {
            "query_id": ["q"] * 3,
            "subtopic": ["s1", "s1", "s2"],
            "doc_id": ["a", "b", "c"],
            "relevance": [1, 1, 1],
        }
    )
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    dcg = 1 + 0.5 / math.log2(3) + 1 / 2
    ideal = 1 + 1 / math.log2(3) + 0.5 / 2
    assert alpha_ndcg(sub, run, 3) == pytest.approx(dcg / ideal)
    assert alpha_ndcg(sub, run, 3, alpha=0.0) == pytest.approx(
        (1 + 1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3) + 0.5)
    )
    arrays = prepare_subtopics(sub, run)
    assert arrays.subtopic_grades.shape == (1, 3, 2)
    # every measure computes on the subtopic arrays as on the plain ones
    plain = prepare({"q": {"a": 1, "b": 1, "c": 1}}, run)
    for n in ("nDCG@3", "AP", "ERR@3"):
        np.testing.assert_array_equal(
            parse_measure(n).compute(arrays), parse_measure(n).compute(plain)
        )


# ----------------------------------------------------------------------------- novelty RA-nWG


def test_novelty_ra_nwg_seed_formula_through_evaluate():
    """Dallaire 2.3: G_obs^nov(K) = sum_{d in TopK} delta(d) w_g(d), delta = 1 at the first
    occurrence of a source, beta at every repeat; over RA-nWG's ideal G_ideal(K).

    Pool (all grade 5, w_5 = 1; one grade 1, w = 0): d1 d2 d3 from source A, e from B.
    Run d1 d2 d3 e, K = 4: deltas 1, b, b, 1 -> (2 + 2b) / 4. beta^j would give (2 + b + b^2) / 4.
    """
    qrels = {"q": {"d1": 5, "d2": 5, "d3": 5, "e": 5, "n": 1}}
    run = pd.DataFrame(
        {
            "query_id": ["q"] * 4,
            "doc_id": ["d1", "d2", "d3", "e"],
            "score": [4.0, 3.0, 2.0, 1.0],
            "source": ["A", "A", "A", "B"],
        }
    )
    beta = 0.5
    res = evaluate(qrels, run, ["RA-nWG-nov(beta=0.5)@4", "RA-nWG@4", "P@4"], grade_map="1-5")
    got = res.aggregate_to_dict()
    assert got["RA-nWG-nov(beta=0.5)@4"] == pytest.approx((2 + 2 * beta) / 4)  # 0.75, not 0.6875
    assert got["RA-nWG@4"] == 1.0 and got["P@4"] == 1.0
    # the same sources from a mapping, a function, or the ids (default_source)
    mapping = {"d1": "A", "d2": "A", "d3": "A"}
    plain_run = run.drop(columns="source")
    via_map = evaluate(qrels, plain_run, ["RA-nWG-nov(beta=0.5)@4"], source_of=mapping)
    assert via_map.aggregate_to_dict()["RA-nWG-nov(beta=0.5)@4"] == pytest.approx(0.75)
    chunked = {"q": {f"A#{i}": 5 for i in (1, 2, 3)} | {"e": 5, "n": 1}}
    chunk_run = {"q": {"A#1": 4.0, "A#2": 3.0, "A#3": 2.0, "e": 1.0}}
    assert ra_nwg_novelty(chunked, chunk_run, 4, beta=beta) == pytest.approx(0.75)
    via_fn = evaluate(chunked, chunk_run, ["RA-nWG-nov(beta=0.5)@4"], source_of=default_source)
    assert via_fn.aggregate_to_dict()["RA-nWG-nov(beta=0.5)@4"] == pytest.approx(0.75)
    # the first occurrence is by rank: a source whose top document weighs 0 (grade 1)
    # discounts its better repeat
    qrels2 = {"q": {"a1": 1, "a2": 5, "b": 5}}
    run2 = pd.DataFrame(
        {
            "query_id": "q",
            "doc_id": ["a1", "a2", "b"],
            "score": [3.0, 2.0, 1.0],
            "source": list("AAB"),
        }
    )
    got2 = evaluate(qrels2, run2, ["RA-nWG-nov(beta=0.5)@3"], grade_map="1-5").aggregate_to_dict()
    assert got2["RA-nWG-nov(beta=0.5)@3"] == pytest.approx((0 + 0.5 + 1) / 2)
    # the grade map applies to the novelty variant as to RA-nWG
    dl = {"q": {"d1": 3, "d2": 3, "d3": 3, "e": 3, "n": 0}}
    mapped = evaluate(dl, run, ["RA-nWG-nov(beta=0.5)@4"], grade_map="trec-dl")
    assert mapped.aggregate_to_dict()["RA-nWG-nov(beta=0.5)@4"] == pytest.approx(0.75)
    with pytest.raises(InputError, match="source"):
        evaluate(
            qrels,
            run.assign(source=[None, "A", "A", "B"]),
            ["RA-nWG-nov(beta=0.5)@4"],
            grade_map="1-5",
        )


# ----------------------------------------------------------------------------- the command


def test_cli_evaluate_takes_trec_names(tmp_path, capsys):
    qrels = pd.DataFrame(
        {"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]}
    )
    run = pd.DataFrame(
        {"query_id": ["1", "1", "2"], "doc_id": ["a", "x", "y"], "score": [2.0, 1.0, 1.0]}
    )
    write_qrels(qrels, tmp_path / "qrels.txt")
    write_run(run, tmp_path / "run.txt", tag="t")
    argv = ["evaluate", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")]
    code = cli_main([*argv, "-m", "map", "-m", "Rprec", "-m", "num_ret", "-m", "IPrec@0.5"])
    out = capsys.readouterr().out
    assert code == 0
    lines = {line.split("\t")[0].strip(): line for line in out.splitlines() if "\tall\t" in line}
    # each measure prints under the name asked for
    assert set(lines) == {"map", "Rprec", "num_ret", "IPrec@0.5"}
    assert "\t0.2500\t" in lines["map"] and "\t0.2500\t" in lines["Rprec"]  # q1 1/2, q2 0
    assert "\t0.5000\t" in lines["IPrec@0.5"]  # q1 1, q2 0
    assert "\t3.0000\t" in lines["num_ret"]  # summed, not averaged


def test_docstring_examples():
    import doctest

    from ragnb.evaluation import evaluate as evaluate_module
    from ragnb.measures import base, cascade, diversity, ndcg, novelty, trec

    # ragnb.io.interop's examples run in tests/test_interop.py, with the other calls of ranx's
    # conversions (numba compiles them in each process that calls them, about 8 s)
    for module in (trec, cascade, diversity, ndcg, novelty, base, evaluate_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__
