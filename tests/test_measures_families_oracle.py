"""ndeval's intent-aware measures, Compat and the C/W/L user models against their oracles.

Oracles (per query, to 1e-9):

- ndeval 4.5 through pyndeval and ir_measures' ``pyndeval`` provider: ERR-IA, nERR-IA, alpha-DCG,
  NRBP, nNRBP, P-IA, AP-IA, StRecall, on subtopic qrels;
- ir_measures' ``compat`` provider: Compat;
- cwl-eval 1.0.12 on a gain file and a result file written here (``cwl.gain``, ``cwl.run``): its
  own qrels reader and ranking builder with each metric class, at full precision, and its command
  on the same files with a metrics file (it prints 4 decimals); and ir_measures' ``cwl_eval``
  provider under ir_measures' names (``SDCG(max_rel=3)@10``, ``INST(max_rel=3)``, ...).

Data: the cases the repository carries (``tests/data/oracle/<case>/qrels.txt`` with its
``bm25.run``), the qrels of two shared datasets (``msmarco-dl-subset/qrels/test.tsv``,
``scifact/qrels/test.tsv``, their first 25 queries) with runs of random integer scores, and a
seeded random case (ties, queries missing from the run, a run query without qrels, a 1,010-deep
ranking, a query judged non-relevant only). Subtopics are drawn at random on the judgements.

Ties: ragnb ranks tied scores by ``doc_id`` descending (trec_eval's order). pyndeval ranks them by
``doc_id`` ascending; ir_measures' compat ranks the run by ``doc_id`` ascending and the ideal by
run score, then qrels order; its cwl_eval provider sorts by score alone (input order kept);
cwl-eval reads the result file in line order. So every oracle is given the run in ragnb's order
with untied positive scores (``1 / rank``), and cwl-eval's file lists it in that order.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import ir_measures
import numpy as np
import oracle_data
import pandas as pd
import pytest
from conftest import shared_dataset
from cwl.ruler.measures import (
    cwl_bpm,
    cwl_dcg,
    cwl_insq,
    cwl_inst,
    cwl_nerr,
    cwl_rbp,
    cwl_tbg,
    cwl_umeasure,
)
from cwl.ruler.ranking import RankingMaker
from cwl.seeker.trec_qrel_handler import TrecQrelHandler

from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.interop import to_ir_measures_qrels
from ragnb.io.readers import read_qrels
from ragnb.measures import parse_measure
from ragnb.measures.compat import compatibility
from ragnb.measures.cwl import CWL_FAMILIES, cwl_eu, inst, scaled_dcg
from ragnb.measures.intent import INTENT_FAMILIES, err_ia, nrbp, subtopic_recall

logging.getLogger("cwl").disabled = True
CASES = (*oracle_data.CASES, "shared:msmarco-dl-subset", "shared:scifact", "random")


# ----------------------------------------------------------------------------- data


def _random_run(qrels: pd.DataFrame, rng: np.random.Generator, queries: list[str]) -> pd.DataFrame:
    """Random integer scores (ties) over each query's judged documents and 10 unjudged ones."""
    rows = []
    for q in queries:
        docs = [*qrels.loc[qrels["query_id"] == q, "doc_id"], *(f"u{j}" for j in range(10))]
        picked = rng.permutation(docs)[: max(1, int(len(docs) * 0.8))]
        rows += [
            (q, d, float(s)) for d, s in zip(picked, rng.integers(0, 4, len(picked)), strict=True)
        ]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _random_case(seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(30):
        for j in range(int(rng.integers(1, 16))):
            rows.append((f"q{q}", f"d{j}", int(rng.integers(0, 4)) if q else 0))  # q0: no relevant
    qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    run = _random_run(qrels, rng, [f"q{q}" for q in range(28)] + ["extra"])  # q28, q29 missing
    deep = pd.DataFrame(
        {"query_id": "q5", "doc_id": [f"z{j:04d}" for j in range(1010)], "score": -1.0}
    )
    return qrels, pd.concat([run, deep], ignore_index=True)


@pytest.fixture(scope="module", params=CASES)
def case(request) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(qrels, run with tied scores) of a carried case, a shared dataset or the random case."""
    name = request.param
    if name == "random":
        return _random_case()
    if name.startswith("shared:"):
        qrels = read_qrels(shared_dataset(name[7:]) / "qrels" / "test.tsv")
        qrels = qrels[qrels["query_id"].isin(qrels["query_id"].unique()[:25])]
        queries = list(qrels["query_id"].unique()[2:])  # the first two are missing from the run
        return qrels, _random_run(qrels, np.random.default_rng(3), queries)
    return oracle_data.qrels(name), oracle_data.run(name)


def _subtopic_qrels(qrels: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Each judgement gets one of 3 subtopics, 30% of them a second one of 2 more."""
    rng = np.random.default_rng(seed)
    first = qrels.assign(subtopic=[f"s{x}" for x in rng.integers(0, 3, len(qrels))])
    extra = first[rng.random(len(first)) < 0.3]
    extra = extra.assign(subtopic=[f"s{x}" for x in rng.integers(3, 5, len(extra))])
    return pd.concat([first, extra], ignore_index=True)


def _ragnb_order(run: pd.DataFrame) -> pd.DataFrame:
    """The run in ragnb's order (score descending, ties by doc_id descending), scored 1 / rank."""
    ordered = run.astype({"query_id": str, "doc_id": str}).sort_values(
        ["query_id", "score", "doc_id"], ascending=[True, False, False]
    )
    rank = ordered.groupby("query_id").cumcount() + 1
    return ordered.assign(rank=rank, score=1.0 / rank)


def _run_dict(run: pd.DataFrame) -> dict[str, dict[str, float]]:
    return {q: dict(zip(g["doc_id"], g["score"], strict=True)) for q, g in run.groupby("query_id")}


def _qrels_dict(qrels: pd.DataFrame) -> dict[str, dict[str, int]]:
    return {
        str(q): dict(zip(g["doc_id"], g["relevance"], strict=True))
        for q, g in qrels.groupby("query_id")
    }


def _theirs(provider, name: str, qrels, run: dict) -> pd.Series:
    """One measure of an ir_measures provider, per query (one per call: it mixes several up)."""
    metrics = provider.iter_calc([ir_measures.parse_measure(name)], qrels, run)
    return pd.Series({m.query_id: m.value for m in metrics}, dtype=np.float64)


def _ours(qrels: pd.DataFrame, run: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per query (str index), one column per measure under its canonical name."""
    wide = evaluate(qrels, run, names).per_query_wide()
    wide.index = wide.index.astype(str)
    wide.columns = [str(parse_measure(c)) for c in wide.columns]
    return wide


# ----------------------------------------------------------------------------- ndeval

NDEVAL = {
    "ERR_IA@1": "ERR-IA@1",
    "ERR_IA@5": "ERR-IA@5",
    "ERR_IA@20": "ERR-IA@20",
    "ERR_IA(rel=2)@10": "ERR-IA(rel=2)@10",
    "nERR_IA@1": "nERR-IA@1",
    "nERR_IA@10": "nERR-IA@10",
    "alpha_DCG@1": "alpha-DCG@1",
    "alpha_DCG(alpha=0.3)@20": "alpha-DCG(alpha=0.3)@20",
    "NRBP": "NRBP",
    "NRBP(alpha=0.3,beta=0.8)": "NRBP(alpha=0.3,beta=0.8)",
    "nNRBP": "nNRBP",
    "nNRBP(beta=0.9,rel=2)": "nNRBP(beta=0.9,rel=2)",
    "P_IA@10": "P-IA@10",
    "AP_IA": "AP-IA",
    "StRecall@10": "StRecall@10",
    "StRecall(rel=2)@20": "StRecall(rel=2)@20",
}


def test_ndeval_measures_equal_pyndeval_per_query(case):
    """ragnb on the tied run = pyndeval (ndeval 4.5, through ir_measures) on it in ragnb's order.

    ndeval's nNRBP divides 0 by 0 on a query without a relevant subtopic judgement (NaN); ragnb
    gives 0 there, as for the other measures.
    """
    qrels, run = case
    sub = _subtopic_qrels(qrels)
    ours = _ours(sub, run, list(NDEVAL.values()))
    irq, rd = to_ir_measures_qrels(sub), _run_dict(_ragnb_order(run))
    for theirs_name, name in NDEVAL.items():
        theirs = _theirs(ir_measures.pyndeval, theirs_name, irq, rd).reindex(ours.index)
        got = ours[str(parse_measure(name))]
        missing = theirs.isna()
        if missing.any():  # nNRBP where no subtopic has a relevant document
            rel = parse_measure(name).params["rel"]
            relevant = sub.loc[sub["relevance"] >= rel, "query_id"].astype(str).unique()
            assert name.startswith("nNRBP") and not missing[relevant].any(), name
            assert (got[missing] == 0).all()
        np.testing.assert_allclose(got[~missing], theirs[~missing], rtol=0, atol=1e-9, err_msg=name)


# ----------------------------------------------------------------------------- compat


def test_compat_equals_ir_measures_per_query(case):
    """ir_measures' compat provider, on the run in ragnb's order scored 1 / rank (positive: it
    puts an unretrieved relevant document at score 0 in the ideal)."""
    qrels, run = case
    names = ["Compat", "Compat(p=0.8)", "Compat(p=0.5)"]
    ours = _ours(qrels, run, names)
    qd = _qrels_dict(qrels)
    rd = _run_dict(_ragnb_order(run))
    for name in names:
        theirs = _theirs(ir_measures.compat, name, qd, rd).reindex(ours.index)
        # ir_measures scores the queries of the run only; the others are empty rankings: 0
        np.testing.assert_allclose(ours[name], theirs.fillna(0.0), rtol=0, atol=1e-9, err_msg=name)


# ----------------------------------------------------------------------------- C/W/L

CWL = {  # ragnb's name (max_rel is added) -> cwl-eval's metric
    "INST": cwl_inst.INSTCWLMetric(1.0),
    "INST(T=2.5)": cwl_inst.INSTCWLMetric(2.5),
    "INSQ": cwl_insq.INSQCWLMetric(1.0),
    "INSQ(T=3)": cwl_insq.INSQCWLMetric(3.0),
    "BPM@10": cwl_bpm.BPMCWLMetric(1.0, 10),
    "BPM(T=2)@20": cwl_bpm.BPMCWLMetric(2.0, 20),
    "SDCG@10": cwl_dcg.NDCGCWLMetric(10),
    "SDCG@1000": cwl_dcg.NDCGCWLMetric(1000),
    "RBP-CWL": cwl_rbp.RBPCWLMetric(0.8),
    "RBP-CWL(p=0.99)": cwl_rbp.RBPCWLMetric(0.99),
    "TBG": cwl_tbg.TBGCWLMetric(224),
    "TBG(H=5)": cwl_tbg.TBGCWLMetric(5),
    "U": cwl_umeasure.UMeasureCWLMetric(1000),
    "U(L=20)": cwl_umeasure.UMeasureCWLMetric(20),
    "NERR8@10": cwl_nerr.NERReq8CWLMetric(10),
    "NERR9@10": cwl_nerr.NERReq9CWLMetric(10),
    "NERR10": cwl_nerr.NERReq10CWLMetric(0.9),
    "NERR11(T=2)": cwl_nerr.NERReq11CWLMetric(2.0),
}


def _with_scale(name: str, max_rel: int) -> str:
    """``name`` with ``max_rel`` written out (ir_measures requires it): ``INST(T=2,max_rel=3)``."""
    m = parse_measure(name)
    inner = m.name.partition("(")[2].partition(")")[0]
    params = ",".join(p for p in (inner, f"max_rel={max_rel}") if p)
    return f"{m.family}({params})" + ("" if m.cutoff is None else f"@{m.cutoff}")


def _write_cwl_files(folder: Path, qrels: pd.DataFrame, run: pd.DataFrame, max_rel: int):
    """cwl-eval's gain file (grades scaled as ir_measures scales them) and result file (ragnb's
    order, one line per rank)."""
    gains = qrels["relevance"].clip(lower=0, upper=max_rel) / max_rel
    with open(folder / "cwl.gain", "w") as f:
        for q, d, g in zip(qrels["query_id"], qrels["doc_id"], gains, strict=True):
            f.write(f"{q} 0 {d} {g!r}\n")
    ordered = _ragnb_order(run)
    with open(folder / "cwl.run", "w") as f:
        for q, d, r, s in ordered[["query_id", "doc_id", "rank", "score"]].itertuples(index=False):
            f.write(f"{q} Q0 {d} {r} {s!r} ragnb\n")
    return folder / "cwl.gain", folder / "cwl.run"


def _cwl_eval(gain_file: Path, run_file: Path, metric) -> pd.Series:
    """cwl-eval's main loop (``cwl_eval.main``) on the files, keeping EU at full precision."""
    handler = TrecQrelHandler(str(gain_file))
    out, topic, maker = {}, None, None
    for line in run_file.read_text().splitlines():
        q, kind, doc = line.split()[:3]
        if q != topic:
            if topic is not None:
                out[topic] = metric.measure(maker.get_ranking())
            topic, maker = q, RankingMaker(q, handler, None, max_n=1000)
        maker.add(doc, kind)
    if topic is not None:
        out[topic] = metric.measure(maker.get_ranking())
    return pd.Series(out, dtype=np.float64)


def test_cwl_measures_equal_cwl_eval_per_query(case, tmp_path):
    """cwl-eval's metric classes on ``cwl.gain`` and ``cwl.run``: its EU, per query of the run.

    A query of the qrels missing from the run is not in the result file: ragnb gives it 0, the
    EU of an empty ranking. A query of the run without qrels is scored by cwl-eval, left out by
    ragnb.
    """
    qrels, run = case
    max_rel = int(qrels["relevance"].max())
    names = {str(parse_measure(_with_scale(n, max_rel))): metric for n, metric in CWL.items()}
    ours = _ours(qrels, run, list(names))
    gain_file, run_file = _write_cwl_files(tmp_path, qrels, run, max_rel)
    for name, metric in names.items():
        theirs = _cwl_eval(gain_file, run_file, metric)
        both = ours.index.intersection(theirs.index)
        assert len(both) == ours.index.isin(run["query_id"].astype(str)).sum()
        np.testing.assert_allclose(
            ours.loc[both, name], theirs[both], rtol=0, atol=1e-9, err_msg=name
        )
        assert (ours.loc[ours.index.difference(both), name] == 0).all()


IR_MEASURES_CWL = [
    "SDCG@10",
    "SDCG@5",
    "INST",
    "INST(T=2)",
    "INSQ",
    "BPM@10",
    "NERR8@10",
    "NERR9@5",
    "NERR10(p=0.8)",
    "NERR11",
]


def test_cwl_measures_under_ir_measures_names(case):
    """ir_measures' cwl_eval provider, under ir_measures' names (``SDCG(max_rel=3)@10``): the
    same strings name ragnb's measures."""
    qrels, run = case
    max_rel = int(qrels["relevance"].max())
    names = [_with_scale(n, max_rel) for n in IR_MEASURES_CWL]
    ours = _ours(qrels, run, names)
    qd = _qrels_dict(qrels)
    rd = _run_dict(_ragnb_order(run))
    for name in names:
        theirs = _theirs(ir_measures.cwl_eval, name, qd, rd).reindex(ours.index).fillna(0.0)
        got = ours[str(parse_measure(name))]
        np.testing.assert_allclose(got, theirs, rtol=0, atol=1e-9, err_msg=name)


def test_cwl_eval_command_on_the_files(tmp_path):
    """The ``cwl-eval`` command on ``cwl.gain``, ``cwl.run`` and a metrics file (carried
    ``dl-like`` qrels and ``bm25.run``): its printed EU, 4 decimals, per query and measure."""
    qrels, run = oracle_data.qrels("dl-like"), oracle_data.run("dl-like")
    gain_file, run_file = _write_cwl_files(tmp_path, qrels, run, 3)
    metrics = {
        "INSTCWLMetric(1.0)": "INST(max_rel=3)",
        "TBGCWLMetric(224)": "TBG(max_rel=3)",
        "BPMCWLMetric(1.0,10)": "BPM(max_rel=3)@10",
        "NDCGCWLMetric(10)": "SDCG(max_rel=3)@10",
        "UMeasureCWLMetric(1000)": "U(max_rel=3)",
        "RBPCWLMetric(0.8)": "RBP-CWL(max_rel=3)",
    }
    (tmp_path / "metrics.txt").write_text("\n".join(metrics) + "\n")
    command = Path(sys.executable).with_name("cwl-eval")
    out = subprocess.run(
        [sys.executable, str(command), str(gain_file), str(run_file), "-m", "metrics.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    printed = pd.DataFrame(
        [line.split("\t")[:3] for line in out.splitlines()], columns=["query_id", "metric", "EU"]
    )
    # cwl-eval's printed names parse (gains in [0, 1]: max_rel=1); the file's gains are grade / 3
    printed["measure"] = (
        printed["metric"]
        .str.strip()
        .map(lambda s: str(parse_measure(_with_scale(str(parse_measure(s)), 3))))
    )
    theirs = printed.pivot(index="query_id", columns="measure", values="EU").astype(float)
    ours = _ours(qrels, run, list(metrics.values()))
    both = theirs.index.intersection(ours.index)  # cwl-eval also scores run queries without qrels
    assert sorted(theirs.columns) == sorted(ours.columns) and len(both) > 20
    np.testing.assert_allclose(
        ours.loc[both, theirs.columns], theirs.loc[both], rtol=0, atol=5.1e-5
    )


# ----------------------------------------------------------------------------- hand-computed

SUB = pd.DataFrame(
    {
        "query_id": ["q"] * 5 + ["z"],
        "subtopic": ["s1", "s1", "s2", "s3", "s3", "t"],
        "doc_id": ["a", "b", "c", "a", "d", "x"],
        "relevance": [1, 1, 1, 1, 0, 0],  # z: judged, nothing relevant; s3's d is not relevant
    }
)
RUN = {"q": {"a": 4.0, "b": 3.0, "x": 2.0, "c": 1.0}, "z": {"x": 1.0}}  # g = 2, 0.5, 0, 1


def test_intent_measures_by_hand():
    """N = 3 subtopics (s1, s2, s3); the greedy ideal is a (2), c (1), b (0.5)."""
    got = evaluate(
        SUB,
        RUN,
        [
            "ERR-IA@3",
            "nERR-IA@4",
            "alpha-DCG@2",
            "NRBP",
            "nNRBP",
            "P-IA@2",
            "AP-IA",
            "StRecall@2",
            "StRecall@4",
        ],
    ).per_query_wide()
    q, z = got.loc["q"], got.loc["z"]
    assert q["ERR-IA@3"] == pytest.approx((2 + 0.5 / 2) / (3 * (1 + 0.5 / 2 + 0.25 / 3)))
    assert q["nERR-IA@4"] == pytest.approx((2 + 0.5 / 2 + 1 / 4) / (2 + 1 / 2 + 0.5 / 3))
    assert q["alpha-DCG@2"] == pytest.approx((2 + 0.5 / np.log2(3)) / (3 * (1 + 0.5 / np.log2(3))))
    assert q["NRBP"] == pytest.approx((1 - 0.25) / 3 * (2 + 0.5 * 0.5 + 1 * 0.125))
    assert q["nNRBP"] == pytest.approx((2 + 0.25 + 0.125) / (2 + 0.5 + 0.5 * 0.25))
    assert q["P-IA@2"] == pytest.approx(3 / (2 * 3))
    # AP per subtopic: s1 (a, b at 1, 2) 1; s2 (c at 4) 1/4; s3 (a at 1) 1
    assert q["AP-IA"] == pytest.approx((1 + 0.25 + 1) / 3)
    assert (q["StRecall@2"], q["StRecall@4"]) == (pytest.approx(2 / 3), 1.0)
    assert (z == 0).all()  # no relevant subtopic: 0 everywhere (ndeval: nNRBP NaN)


def test_intent_public_functions_and_edge_cases():
    assert err_ia(SUB, RUN, 1) == pytest.approx((2 + 0) / 2)  # ERR-IA@1 is not normalised
    assert err_ia(SUB, RUN, 4, normalised=True) == pytest.approx(
        (2 + 0.25 + 0.25) / (2 + 0.5 + 0.5 / 3) / 2
    )
    assert nrbp(SUB, {}, normalised=True) == 0.0  # an empty run
    assert subtopic_recall(SUB, {"q": {"c": 1.0}}, 5) == pytest.approx((1 / 3 + 0) / 2)
    plain = SUB.drop(columns="subtopic").drop_duplicates(["query_id", "doc_id"])
    for family in INTENT_FAMILIES:  # without subtopics they say what they need
        name = next(n for n in (family, family + "@5") if _parses(n))
        with pytest.raises(InputError, match="subtopic"):
            evaluate(plain, RUN, [name])


def _parses(name: str) -> bool:
    try:
        parse_measure(name)
    except InputError:
        return False
    return True


def test_compat_by_hand():
    qrels = {"q": {"a": 2, "b": 1, "c": 0}, "n": {"x": 0}}
    assert compatibility({"q": qrels["q"]}, {"q": {"a": 2.0, "b": 1.0}}) == pytest.approx(1.0)
    # ideal a, b (b unretrieved); run c, a: overlaps 0, 1 at depths 1, 2
    p = 0.9
    got = compatibility({"q": qrels["q"]}, {"q": {"c": 2.0, "a": 1.0}}, p=p)
    assert got == pytest.approx((p * 1 / 2) / (1 + p * 2 / 2))
    # equal grades: the ideal follows the run, so any order of them is ideal
    assert compatibility({"q": {"a": 1, "b": 1}}, {"q": {"b": 2.0, "a": 1.0}}) == pytest.approx(1)
    assert compatibility({"n": qrels["n"]}, {"n": {"x": 1.0}}) == 0.0  # nothing relevant
    assert compatibility({"q": qrels["q"]}, {}) == 0.0  # an empty run


def test_cwl_by_hand_and_edge_cases():
    qrels = {"q": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"c": 3.0, "a": 2.0, "b": 1.0}}  # g = 0, 1, 0.5 with max_rel = 2
    # BPM: the gain reaches T = 1 at rank 2: 1 / 2; T = 2 never: 1.5 / K
    assert cwl_eu(qrels, run, "BPM(max_rel=2)@10") == 0.5
    assert cwl_eu(qrels, run, "BPM(T=2,max_rel=2)@10") == pytest.approx(1.5 / 10)
    disc = 1 / np.log2(np.arange(2, 5))
    assert scaled_dcg(qrels, run, 3, max_rel=2) == pytest.approx(
        (disc[1] + 0.5 * disc[2]) / disc[:3].sum()
    )
    assert scaled_dcg({"q": {"a": 1, "b": 1}}, {"q": {"a": 2.0, "b": 1.0}}, 2) == 1.0
    # RBP-CWL: normalised over 1000 ranks
    p = 0.5
    assert cwl_eu(qrels, run, "RBP-CWL(p=0.5,max_rel=2)") == pytest.approx(
        (1 - p) * (p * 1 + p**2 * 0.5) / (1 - p**1000)
    )
    assert inst(qrels, {}, max_rel=2) == 0.0  # an empty run gains nothing
    assert inst({"q": {"a": 0}}, {"q": {"a": 1.0}}) == 0.0  # nothing relevant
    with pytest.raises(InputError, match="max_rel"):
        inst(qrels, run)  # grade 2 > max_rel = 1
    with pytest.raises(InputError, match="below max_rel"):
        cwl_eu(qrels, run, "INSQ(min_rel=2,max_rel=2)")
    with pytest.raises(InputError, match="outside"):
        inst(qrels, run, T=0, max_rel=2)
    with pytest.raises(InputError, match="not a C/W/L measure"):
        cwl_eu(qrels, run, "P@10")


def test_cwl_min_rel_and_negative_grades():
    """Grades below min_rel, and negative ones, gain 0; the rest scale from min_rel."""
    qrels = {"q": {"a": 3, "b": 1, "c": -2}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    got = cwl_eu(qrels, run, "SDCG(min_rel=1,max_rel=3)@3")
    disc = 1 / np.log2(np.arange(2, 5))
    assert got == pytest.approx(disc[0] / disc.sum())


NEW = [*INTENT_FAMILIES, "Compat", *CWL_FAMILIES]
NAMES = {  # other tools' names -> ragnb's
    "ERR_IA@20": "ERR-IA@20",
    "nERR_IA@5": "nERR-IA@5",
    "alpha_DCG@10": "alpha-DCG@10",
    "α_DCG@10": "alpha-DCG@10",
    "α_nDCG@10": "alpha-nDCG@10",
    "NRBP(beta=0.8)": "NRBP(beta=0.8)",
    "P_IA@5": "P-IA@5",
    "MAP_IA": "AP-IA",
    "AP_IA": "AP-IA",
    "strec@20": "StRecall@20",
    "Compat(p=0.9)": "Compat(p=0.9)",
    "INST-T=1.0": "INST",
    "INSQ-T=2.0": "INSQ(T=2)",
    "BPM-Static-T=1-K=10": "BPM@10",
    "NDCG-k@10": "SDCG@10",
    "RBP@0.8": "RBP-CWL",
    "TBG-H@224": "TBG",
    "U-L@1000": "U",
    "NERR-EQ8@k=10": "NERR8@10",
    "NERR-EQ9@k=5": "NERR9@5",
    "NERR-EQ10@phi=0.9": "NERR10",
    "NERR-EQ11@T=1.0": "NERR11",
    "SDCG(max_rel=3)@10": "SDCG(max_rel=3)@10",
    "INST(T=2,max_rel=3)": "INST(T=2,max_rel=3)",
    "RBP@10": "RBP@10",  # a cutoff, not cwl-eval's RBP@0.8
    "RBP(p=0.8)": "RBP",
}


@pytest.mark.parametrize(("alias", "canonical"), NAMES.items())
def test_other_tools_names(alias, canonical):
    m = parse_measure(alias)
    assert str(m) == canonical and parse_measure(str(m)) == m
