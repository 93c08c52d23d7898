"""``ragnb trec-eval`` against trec_eval 10.0's own test suite, and the measures it added.

The quicktest lines are trec_eval's ``make quicktest`` (its ``Makefile``), run on the files of
its ``test/`` folder carried in ``tests/data/trec_eval/`` with the expected output; the output
must be equal byte for byte.
"""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.cli.main import main as cli_main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.evaluation.trec_eval import parse_options, run_trec_eval
from ragnb.io.readers import read_qrels, read_run
from ragnb.measures import Measure, parse_measure
from ragnb.measures.trec_names import (
    MEASURE_SETS,
    expand_measure_names,
    print_kind,
    trec_eval_measure,
    trec_eval_measures,
    trec_eval_printed,
)

DATA = Path(__file__).parent / "data" / "trec_eval"
MEAS_PARAMS = (
    "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 "
    "-m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 "
    "-mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20"
)
#: trec_eval's quicktest lines (files relative to tests/data/trec_eval) and expected output;
#: the -R prefs and -R qrels_prefs lines are tests/test_trec_eval_prefs.py's.
QUICKTEST = [
    ("qrels.test results.test", "out.test"),
    ("qrels.test.with-comments results.test", "out.test"),
    ("qrels.comment.test.gz results.comment.test.gz", "out.comment.test"),
    ("-m all_trec qrels.test results.test", "out.test.a"),
    ("-m all_trec -q qrels.test results.test", "out.test.aq"),
    ("-m all_trec -q -c qrels.test results.trunc", "out.test.aqc"),
    ("-m all_trec -q -c -M100 qrels.test results.trunc", "out.test.aqcM"),
    ("-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test", "out.test.aql"),
    (f"{MEAS_PARAMS} qrels.test results.test", "out.test.meas_params"),
    ("-q -m all_trec -Z zscores_file qrels.test results.test", "out.test.aqZ"),
    ("-m qrels_jg -q -R qrels_jg qrels.123.gz results.test", "out.test.qrels_jg"),
    ("-m qrels_jg -q -R qrels_jg qrels.comments.123.gz results.test", "out.test.qrels_jg"),
]


#: trec_eval 10.0's -q -c -m all_trec output on the carried runs of tests/data/oracle/dl-like
#: (written by tests/data/trec_eval/make_oracle_outputs.py)
ORACLE_OUTPUTS = [("bm25.run", "out.dl-like.bm25.aqc"), ("dense.run", "out.dl-like.dense.aqc")]


def _argv(line: str) -> list[str]:
    return [str(DATA / a) if (DATA / a).exists() else a for a in line.split()]


@pytest.mark.parametrize(("line", "expected"), QUICKTEST, ids=[e for _, e in QUICKTEST])
def test_quicktest_line_gives_trec_evals_output_byte_for_byte(line, expected, capsys):
    assert cli_main(["trec-eval", *_argv(line)]) == 0
    out = capsys.readouterr().out
    assert out == (DATA / expected).read_text()


@pytest.mark.parametrize(("run", "expected"), ORACLE_OUTPUTS)
def test_all_trec_on_the_carried_runs_gives_trec_evals_output_byte_for_byte(run, expected, capsys):
    case = DATA.parent / "oracle" / "dl-like"
    argv = ["trec-eval", "-q", "-c", "-m", "all_trec", str(case / "qrels.txt"), str(case / run)]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) > 2500
    assert out == (DATA / expected).read_text()


@pytest.mark.parametrize(("run", "expected"), ORACLE_OUTPUTS)
def test_evaluate_equals_trec_eval_10_to_1e_9_on_the_carried_runs(run, expected):
    """Every per-query value of ``-q -c -m all_trec`` (``relstring`` aside), printed with every
    digit, equals ``ragnb evaluate``'s on the same names; the queries of the qrels missing from
    the run included (ragnb scores them as trec_eval's -c does)."""
    rows = [line.split("\t") for line in (DATA / expected.replace("out.", "out17.")).open()]
    frame = pd.DataFrame(rows, columns=["name", "query_id", "value"])
    frame["name"] = frame["name"].str.strip()
    frame = frame[(frame["query_id"] != "all") & (frame["name"] != "relstring")]
    case = DATA.parent / "oracle" / "dl-like"
    names = list(dict.fromkeys(frame["name"]))
    wide = evaluate(read_qrels(case / "qrels.txt"), read_run(case / run), names).per_query_wide()
    columns = [str(parse_measure(n)) for n in frame["name"]]
    rows_at, columns_at = (
        wide.index.get_indexer(frame["query_id"]),
        wide.columns.get_indexer(columns),
    )
    assert (rows_at >= 0).all() and (columns_at >= 0).all()
    got = wide.to_numpy()[rows_at, columns_at]
    expected_values = frame["value"].astype(float).to_numpy()
    assert np.abs(got - expected_values).max() <= 1e-9
    assert len(got) > 2500 and len(names) == 95


def test_text_after_the_sixth_column_is_counted_in_a_note(capsys):
    cli_main(["trec-eval", *_argv("-c qrels.test results.trunc")])
    err = capsys.readouterr().err
    assert "results.trunc: 5 line(s) carry text after the sixth column" in err


def test_run_from_standard_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO((DATA / "results.test").read_text()))
    assert cli_main(["trec-eval", str(DATA / "qrels.test"), "-"]) == 0
    assert capsys.readouterr().out == (DATA / "out.test").read_text()


def test_a_bad_line_still_names_its_file_and_line(tmp_path, capsys):
    run = tmp_path / "run.txt"
    run.write_text("# a comment\n301 Q0 d1 1 0.5 tag\n301 Q0 d2 2 0.4\n")
    assert cli_main(["trec-eval", str(DATA / "qrels.test"), str(run)]) == 2
    err = capsys.readouterr().err
    assert "run.txt" in err and "line 3" in err and "found 5" in err


def test_qrels_comments_and_extra_columns_are_read(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# judged by A\nq1 0 d1 1 note\n  # indented comment\nq1 0 d2 0\n")
    with pytest.warns(UserWarning, match="1 line\\(s\\) carry text after the fourth column"):
        frame = read_qrels(qrels)
    assert frame["doc_id"].tolist() == ["d1", "d2"] and frame["relevance"].tolist() == [1, 0]


def test_query_of_the_qrels_missing_from_the_run_stops_without_c(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("301 Q0 d1 1 0.5 tag\n")
    with pytest.raises(InputError, match="'302' of the qrels is not in the run"):
        run_trec_eval([str(DATA / "qrels.test"), str(run)])


def test_options_follow_getopt():
    opts = parse_options(["-qc", "-M100", "-mrelstring.20", "-m", "all_trec", "q", "r"])
    assert opts.query and opts.complete and opts.max_docs == 100
    assert opts.params == {"relstring": "20"}
    assert opts.measures[:2] == ("runid", "num_q") and "relstring" in opts.measures
    for bad in (["-m", "nonsense", "q", "r"], ["-R", "prefs", "q", "r"], ["q"]):
        with pytest.raises(InputError):
            parse_options(bad)


def _aq_values() -> pd.DataFrame:
    rows = [line.split("\t") for line in (DATA / "out.test.aq").read_text().splitlines()]
    frame = pd.DataFrame(rows, columns=["name", "query_id", "value"])
    frame["name"] = frame["name"].str.strip()
    return frame[(frame["query_id"] != "all") & (frame["name"] != "relstring")]


def test_evaluate_reads_every_all_trec_name_and_equals_trec_eval_per_query():
    expected = _aq_values()
    names = list(dict.fromkeys(expected["name"]))
    assert len(names) >= 90
    qrels, run = read_qrels(DATA / "qrels.test"), read_run(DATA / "results.test")
    result = evaluate(qrels, run, names)
    wide = result.per_query_wide()
    for name, qid, value in expected.itertuples(index=False):
        got = wide.loc[qid, str(parse_measure(name))]
        assert f"{got:.4f}" == value.strip() or float(value) == int(got), (name, qid, got, value)


def test_geometric_mean_aggregate_is_trec_evals_gm_map():
    qrels, run = read_qrels(DATA / "qrels.test"), read_run(DATA / "results.test")
    result = evaluate(qrels, run, ["gm_map", "map"])
    per_query = result.per_query_wide()["GMAP"].to_numpy()
    assert np.allclose(per_query, result.per_query_wide()["AP"].to_numpy())
    expected = math.exp(np.log(np.maximum(per_query, 1e-5)).mean())
    assert result.aggregate_to_dict()["GMAP"] == pytest.approx(expected)
    assert f"{expected:.4f}" == "0.1051"  # out.test.a


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("set_F", "SetF"),
        ("utility", "Utility"),
        ("Rprec_mult_0.20", "RprecMult(mult=0.2)"),
        ("relative_P_5", "RelativeP@5"),
        ("unj_10", "Unjudged@10"),
        ("iprec_at_recall_0.10", "IPrec(recall=0.1,trec_eval=10)"),
        ("IPrec@0.1", "IPrec(recall=0.1)"),
        ("11pt_avg", "IPrec-11pt(trec_eval=10)"),
        ("rbp", "RBP-graded"),
        ("rbp_resid", "RBP-graded-residual"),
        ("RBP(p=0.9)", "RBP(p=0.9)"),
        ("gm_bpref", "GM-bpref"),
        ("ndcg_rel", "nDCG-rel"),
        ("Rndcg", "RnDCG"),
        ("num_nonrel_judged_ret", "NumNonrelJudgedRet"),
        ("dcg", "DCG"),
        ("ncg@10", "NCG@10"),
        ("Utility(a=2,c=-1)", "Utility(a=2,c=-1)"),
    ],
)
def test_trec_eval_names_round_trip(name, canonical):
    m = parse_measure(name)
    assert str(m) == canonical and parse_measure(str(m)) == m


def test_set_and_cutoff_measures_by_hand():
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "n": 0, "u": -1}}
    run = {"q": {"a": 6.0, "n": 5.0, "x": 4.0, "b": 3.0, "u": 2.0}}  # ret 5, rr 2, R 3
    values = evaluate(qrels, run, [
        "SetP", "SetR", "SetRelP", "SetAP", "SetF", "Utility", "NumNonrelJudgedRet",
        "RelativeP@2", "Unjudged@5", "Unjudged@10", "RprecMult(mult=1)", "binG",
    ]).aggregate_to_dict()  # fmt: skip
    assert values["SetP"] == pytest.approx(2 / 5)
    assert values["SetR"] == pytest.approx(2 / 3)
    assert values["SetRelP"] == pytest.approx(2 / 3)
    assert values["SetAP"] == pytest.approx(4 / 15)
    assert values["SetF"] == pytest.approx(2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3))
    assert values["Utility"] == 2 - 3  # rr - (ret - rr)
    assert values["NumNonrelJudgedRet"] == 1
    assert values["RelativeP@2"] == pytest.approx(1 / 2)
    assert values["Unjudged@5"] == pytest.approx(2 / 5)  # x, u
    assert values["Unjudged@10"] == pytest.approx(2 / 10)
    assert values["RprecMult(mult=1)"] == pytest.approx(1 / 3)  # top 3: a, n, x
    # binG: a (i=0, r=1): 1/log2(2); b (i=3, r=2): 1/log2(4); over R = 3
    assert values["binG"] == pytest.approx((1 + 1 / 2) / 3)


def test_dcg_and_ncg_by_hand():
    qrels = {"q": {"a": 2, "b": 1, "c": 3}}
    run = {"q": {"b": 3.0, "x": 2.0, "a": 1.0}}
    values = evaluate(qrels, run, ["DCG@3", "NCG@2", "NCG@3"]).aggregate_to_dict()
    assert values["DCG@3"] == pytest.approx(1 + 2 / 2)  # b at 1, a at 3 (log2 4 = 2)
    assert values["NCG@2"] == pytest.approx(1 / (3 + 2))
    assert values["NCG@3"] == pytest.approx((1 + 2) / (3 + 2 + 1))


def test_trec_eval_rbp_and_residual_by_hand():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"b": 3.0, "a": 2.0, "x": 1.0}}
    values = evaluate(qrels, run, ["rbp", "rbp_resid"]).aggregate_to_dict()
    assert values["RBP-graded"] == pytest.approx(0.1 * 0.9)
    assert values["RBP-graded-residual"] == pytest.approx(0.9**3 + 0.1 * 0.9**2)
    judged = evaluate(qrels, {"q": {"b": 2.0, "a": 1.0}}, ["rbp_resid"]).aggregate_to_dict()
    assert judged["RBP-graded-residual"] == 0.0  # trec_eval: 0 when every document is judged


def test_map_prints_as_average_precision_not_pr_auc(capsys):
    """trec_eval's map and map_cut are AP; ragnb evaluate prints map under the name asked for,
    map_cut.10 (a set of cutoffs) as AP@10; PR-AUC keeps its own name (SPEAR's), with the same
    values."""
    argv = ["evaluate", str(DATA / "qrels.test"), str(DATA / "results.test")]
    assert cli_main([*argv, "-m", "map", "-m", "map_cut.10", "-m", "PR-AUC@10"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    got = {name.strip(): value for name, qid, value, *_ in lines if qid == "all"}
    assert list(got) == ["map", "AP@10", "PR-AUC@10"]
    assert got["map"] == "0.1785" and got["AP@10"] == got["PR-AUC@10"]  # out.test: map 0.1785
    assert str(parse_measure("map")) == str(trec_eval_measure("map")) == "AP"
    assert [str(m) for m in expand_measure_names(["map", "map_cut.5"])] == ["map", "AP@5"]


def test_registry_names_each_measure_as_trec_eval_prints_it():
    """trec_eval name -> measures -> trec_eval name, for every value of all_trec."""
    named = [(shown, m) for name in MEASURE_SETS["all_trec"][2:] for shown, m in
             trec_eval_measures(name, level=2, n_docs=100) if m is not None]  # fmt: skip
    assert len(named) == 97
    assert all(trec_eval_printed(m) == shown for shown, m in named)
    assert all(parse_measure(shown) == m for shown, m in named if m.spec.param("rel") is None)
    assert trec_eval_printed("Utility(a=2)") == "utility_2,-1,0,0"
    assert trec_eval_printed("PR-AUC") is None and trec_eval_printed("nDCG'@10") is None
    assert print_kind("num_ret") == "long" and print_kind("gm_bpref") == "gm"


def test_every_measure_set_name_is_a_trec_eval_measure():
    for name in MEASURE_SETS["all_trec"]:
        if name not in ("runid", "num_q", "relstring", "iprec_at_recall", "P", "recall", "unj",
                        "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut"):  # fmt: skip
            assert trec_eval_measure(name).name


@pytest.mark.parametrize(
    ("qrels", "expected", "level"),
    [("qrels.test", "out17.test.aq", 1), ("qrels.rel_level", "out17.test.aql", 2)],
)
def test_evaluate_equals_trec_eval_10_to_1e_9_per_query(qrels, expected, level):
    rows = [line.split("\t") for line in (DATA / expected).read_text().splitlines()]
    frame = pd.DataFrame(rows, columns=["name", "query_id", "value"])
    frame["name"] = frame["name"].str.strip()
    frame = frame[(frame["query_id"] != "all") & (frame["name"] != "relstring")]
    measures = []
    for name in dict.fromkeys(frame["name"]):
        m = parse_measure(name)
        if m.spec.param("rel") is not None:
            m = Measure(m.family, m.cutoff, **{**m.params, "rel": level})
        measures.append((name, m))
    qrels_frame, run = read_qrels(DATA / qrels), read_run(DATA / "results.test")
    wide = evaluate(qrels_frame, run, [m for _, m in measures]).per_query_wide()
    by_name = dict(measures)
    pairs = zip(frame["name"], frame["query_id"], strict=True)
    got = [wide.loc[q, str(by_name[n])] for n, q in pairs]
    assert np.allclose(got, frame["value"].astype(float), rtol=0, atol=1e-9)
    assert len(got) == 285


def test_ignore_self_drops_the_query_document_and_counts_it(tmp_path, capsys):
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    run = {"q1": {"q1": 9.0, "d1": 5.0}, "q2": {"x": 3.0, "d2": 1.0, "q2": 0.5}}
    plain = evaluate(qrels, run, ["P@1", "RR"])
    assert plain.aggregate_to_dict() == {"P@1": 0.0, "RR": pytest.approx((1 / 2 + 1 / 2) / 2)}
    assert "self_retrieved_dropped" not in plain.counts
    kept = evaluate(qrels, run, ["P@1", "RR"], ignore_self=True)
    assert kept.aggregate_to_dict() == {"P@1": 0.5, "RR": pytest.approx((1 + 1 / 2) / 2)}
    assert kept.counts["self_retrieved_dropped"] == 2
    frame = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    assert evaluate(qrels, frame, ["RR"], ignore_self=True).counts["self_retrieved_dropped"] == 2
    qrels_file, run_file = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_file.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    run_file.write_text(
        "".join(f"{q} Q0 {d} 1 {s} t\n" for q, d, s in frame.itertuples(index=False))
    )
    assert cli_main(["evaluate", str(qrels_file), str(run_file), "-m", "P@1", "--ignore-self"]) == 0
    assert "2 retrieved documents with the query's own id dropped" in capsys.readouterr().err
    args = ["evaluate", str(qrels_file), str(run_file), "-m", "P@1", "--ignore-self", "--stream"]
    assert cli_main(args) == 0
    captured = capsys.readouterr()
    assert "2 retrieved documents with the query's own id dropped" in captured.err
    assert "P@1" in captured.out and "0.5000" in captured.out


def test_evaluate_reads_the_parameter_syntax_of_meas_params(capsys):
    argv = ["evaluate", str(DATA / "qrels.test"), str(DATA / "results.test")]
    for arg in ("P.5,7,3", "utility.2,-1,0,0", "Rprec_mult.5.0,0.2,0.35", "ndcg_cut.10,20,23.4"):
        argv += ["-m", arg]
    assert cli_main(argv) == 0
    got = {
        line.split("\t")[0].strip(): line.split("\t")[2]
        for line in capsys.readouterr().out.splitlines()
        if "\tall\t" in line
    }
    expected = {  # out.test.meas_params
        "P@3": "0.2222",
        "P@7": "0.3333",
        "Utility(a=2)": "-369.0000",
        "RprecMult(mult=0.35)": "0.3192",
        "RprecMult(mult=5)": "0.0849",
        "nDCG@23": "0.3429",
    }
    assert {k: got[k] for k in expected} == expected
    with pytest.raises(InputError, match="not one ragnb measure"):
        expand_measure_names(["ndcg.1=3,2=9"])
    for name in ("relstring", "relstring.5", "runid", "num_q"):
        with pytest.raises(InputError, match="ragnb trec-eval prints it"):
            expand_measure_names([name])
    assert [str(m) for m in expand_measure_names(["rbp.95", "P.10"])] == ["rbp.95", "P@10"]


PYTREC_MEASURES = {
    "map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "recall", "infAP",
    "gm_bpref", "utility", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut",
    "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
    "set_F", "num_rel", "num_ret", "num_rel_ret", "num_nonrel_judged_ret",
}  # fmt: skip


@pytest.mark.parametrize("qrels_name", ["qrels.test", "qrels.rel_level"])
def test_trec_eval_9_convention_equals_pytrec_eval_per_query(qrels_name):
    """pytrec_eval embeds trec_eval 9.x: with ``trec_eval=9`` for the interpolated precision,
    every measure it shares with ``all_trec`` is equal per query (its gm_* values are logs)."""
    import pytrec_eval

    qrels, run = read_qrels(DATA / qrels_name), read_run(DATA / "results.test")
    qd: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.itertuples(index=False):
        qd.setdefault(q, {})[d] = int(g)
    rd: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run["query_id"], run["doc_id"], run["score"], strict=True):
        rd.setdefault(q, {})[d] = float(s)
    theirs = pytrec_eval.RelevanceEvaluator(qd, PYTREC_MEASURES).evaluate(rd)
    names = sorted(next(iter(theirs.values())))
    measures = []
    for name in names:
        m = parse_measure(name)
        if m.family == "IPrec":
            m = Measure("IPrec", recall=m.params["recall"], trec_eval=9)
        measures.append(m)
    wide = evaluate(qrels, run, measures).per_query_wide()
    compared = 0
    for name, m in zip(names, measures, strict=True):
        for qid, values in theirs.items():
            expected = values[name]
            if name.startswith("gm_"):
                expected = math.exp(expected)
                got = max(wide.loc[qid, str(m)], 1e-5)
            else:
                got = wide.loc[qid, str(m)]
            assert got == pytest.approx(expected, abs=1e-9), (name, qid)
            compared += 1
    assert compared == 3 * len(names) and len(names) >= 89


def test_rbp_rescales_from_level_0_when_no_qrels_line_has_grade_0():
    """setup_gains lists levels 0 .. the query's highest grade; with grades 1 and 3 only, the
    gains are rescaled by (g - 0) / 3, not (g - 1) / 2 (trec_eval 10.0 prints 0.1143333...)."""
    qrels = {"q": {"a": 3, "b": 1}}
    run = {"q": {"b": 3.0, "x": 2.0, "a": 1.0}}
    value = evaluate(qrels, run, ["rbp"]).aggregate_to_dict()["RBP-graded"]
    assert value == pytest.approx(0.1 * (1 / 3 + 0.9**2 * 3 / 3), abs=1e-15)


def test_num_rel_all_line_with_c_counts_grades_above_0_whatever_l(tmp_path):
    """m_num_rel.c: with -c the all line counts the qrels lines of grade > 0, not the sum of the
    per-query values at -l (trec_eval 10.0 prints 1, 0, 1 and all 4 here)."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 2\nq1 0 b 1\nq2 0 c 1\nq2 0 d 0\nq3 0 e 2\n")
    run.write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq2 Q0 c 1 1 t\n")
    out, _ = run_trec_eval(["-c", "-l2", "-q", "-m", "num_rel", str(qrels), str(run)])
    assert [line.split("\t")[2] for line in out.splitlines()] == ["1", "0", "1", "4"]


def test_zscores_missing_pairs_zero_deviations_and_malformed_lines(tmp_path, capsys):
    zscores = tmp_path / "z.txt"
    # 301: P_5 has a mean and a deviation; num_ret a zero deviation at another value (missing);
    # 302 has no line (every value missing); 303: P_5 a zero deviation at its own value (0)
    zscores.write_text("301 P_5 0.2 0.1\n301 num_ret 5 0\n303 P_5 0.0 0\n")
    argv = ["trec-eval", "-q", "-m", "P.5", "-m", "num_ret", "-Z", str(zscores)]
    assert cli_main([*argv, str(DATA / "qrels.test"), str(DATA / "results.test")]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in out}
    assert lines[("Znum_ret               ", "301")] == "-1000000.0000"
    assert lines[("ZP_5                   ", "302")] == "-1000000.0000"
    assert lines[("ZP_5                   ", "303")] == "0.0000"
    raw = run_trec_eval(["-q", "-m", "P.5", str(DATA / "qrels.test"), str(DATA / "results.test")])
    p5_301 = float(raw[0].splitlines()[0].split("\t")[2])
    assert lines[("ZP_5                   ", "301")] == f"{(p5_301 - 0.2) / 0.1:6.4f}"
    zscores.write_text("301 P_5 0.2 0.1\n301 P_10 0.2\n")
    with pytest.raises(InputError, match=r"z.txt, line 2: trec-eval: malformed zscores line"):
        run_trec_eval(["-Z", str(zscores), str(DATA / "qrels.test"), str(DATA / "results.test")])


def test_judgment_group_measures_need_qrels_jg_and_only_they_read_it(tmp_path):
    qrels, run = str(DATA / "qrels.123.gz"), str(DATA / "results.test")
    with pytest.raises(InputError, match=r"map reads qrels, not qrels_jg"):
        run_trec_eval(["-R", "qrels_jg", "-m", "map", qrels, run])
    with pytest.raises(InputError, match=r"map_avgjg reads qrels with judgment groups"):
        run_trec_eval(["-m", "map_avgjg", str(DATA / "qrels.test"), run])
    with pytest.raises(InputError, match=r"judgment groups of qrels_jg files"):
        expand_measure_names(["P_avgjg.5"])  # ragnb evaluate's names
    # one group: the measure itself; a duplicate within a group names its line
    single = tmp_path / "one-group.qrels"
    single.write_text((DATA / "qrels.test").read_text())
    text, _ = run_trec_eval(["-R", "qrels_jg", "-m", "map_avgjg", str(single), run])
    plain, _ = run_trec_eval(["-m", "map", str(DATA / "qrels.test"), run])
    assert text.split("\t")[-1] == plain.split("\t")[-1]
    single.write_text("301 0 d1 1\n301 1 d1 0\n301 0 d1 1\n")
    with pytest.raises(InputError, match=r"line 3.*judgment group '0' \(first on line 1\)"):
        run_trec_eval(["-R", "qrels_jg", "-m", "qrels_jg", str(single), run])
