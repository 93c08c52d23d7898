"""Build gates (``ragnb.stats.gates`` and ``ragnb evaluate --fail-under/--baseline``).

SciFact's BM25 run against a degraded copy (each query's top 10 reversed: the same documents in
the top 100, so R@100 is unchanged while nDCG@10 falls), computed once for the module; Holm
across the gated measures on hand-computed exact randomization p-values; exit statuses through
``main(argv)`` and once through the installed script.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir, write_run
from ragnb.retrievers.retrieve import make_retriever
from ragnb.stats import holm, randomization_test
from ragnb.stats.gates import (
    EXIT_GATE_FAILED,
    GATE_COLUMNS,
    Threshold,
    baseline_gates,
    check_gates,
    parse_threshold,
    threshold_gates,
)

RAGNB = Path(sys.executable).parent / "ragnb"
MEASURES = ["nDCG@10", "R@100", "P@5"]


def degrade(run: pd.DataFrame) -> pd.DataFrame:
    """Each query's top 10 in reverse order (scores rewritten), ranks 11-100 unchanged."""
    out = run.copy()
    top = out["rank"] <= 10
    out.loc[top, "score"] = 1000.0 + out.loc[top, "rank"]
    return out.drop(columns=["rank"])


@pytest.fixture(scope="module")
def scifact(scifact_path, tmp_path_factory):
    data = read_beir(scifact_path)
    retriever = make_retriever("bm25")
    retriever.index(data.corpus)
    run = retriever.retrieve(data.judged_queries, k=100)
    worse = degrade(run)
    folder = tmp_path_factory.mktemp("gates")
    write_run(run, folder / "bm25.trec", tag="bm25")
    write_run(worse, folder / "worse.trec", tag="worse")
    return {
        "qrels": data.qrels,
        "qrels_path": scifact_path / "qrels" / "test.tsv",
        "bm25": evaluate(data.qrels, run, MEASURES),
        "worse": evaluate(data.qrels, worse, MEASURES),
        "bm25_path": folder / "bm25.trec",
        "worse_path": folder / "worse.trec",
    }


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("spec", "measure", "minimum"),
    [
        ("nDCG@10=0.60", "nDCG@10", 0.6),
        (" R@100 >= 0.9 ", "R@100", 0.9),
        ("F(alpha=0.5)@10=0.4", "F(alpha=0.5)@10", 0.4),
        ("id_based_context_recall=1", "id_based_context_recall", 1.0),
    ],
)
def test_parse_threshold(spec, measure, minimum):
    assert parse_threshold(spec) == Threshold(measure, minimum)


@pytest.mark.parametrize("spec", ["nDCG@10", "=0.5", "nDCG@10=high", "nDCG@10=nan", "P@5=inf"])
def test_parse_threshold_refuses(spec):
    with pytest.raises(InputError, match="MEASURE=MIN|not a number"):
        parse_threshold(spec)


# --------------------------------------------------------------------------- fail-under on SciFact


def test_fail_under_on_scifact(scifact):
    bm25 = scifact["bm25"].aggregate_to_dict()
    worse = scifact["worse"].aggregate_to_dict()
    # BM25 on SciFact is near 0.67 nDCG@10; reversing the top 10 sinks it far below 0.6
    assert bm25["nDCG@10"] > 0.6 > worse["nDCG@10"]
    assert worse["R@100"] == bm25["R@100"]

    passed = threshold_gates(scifact["bm25"], ["ndcg_cut_10=0.60", "R@100=0.5"])
    assert list(passed.columns) == GATE_COLUMNS
    assert passed["measure"].tolist() == ["nDCG@10", "R@100"]  # the alias resolved
    assert passed["value"].tolist() == [bm25["nDCG@10"], bm25["R@100"]]
    assert passed["passed"].all()

    report = check_gates(scifact["worse"], ["nDCG@10=0.60", "R@100=0.5", "P@5=1"])
    assert not report.passed and report.exit_status == EXIT_GATE_FAILED == 1
    assert report.failures["measure"].tolist() == ["nDCG@10", "P@5"]
    lines = report.message().splitlines()
    assert lines == [
        f"gate failed: nDCG@10 = {worse['nDCG@10']:.4f} < 0.6000 (fail-under)",
        f"gate failed: P@5 = {worse['P@5']:.4f} < 1.0000 (fail-under)",
    ]


def test_a_threshold_equal_to_the_mean_passes_and_nan_fails():
    table = threshold_gates({"a": 0.5, "b": float("nan")}, ["a=0.5", "b=0"])
    assert table["passed"].tolist() == [True, False]


def test_a_gate_on_a_measure_not_evaluated_is_refused(scifact):
    with pytest.raises(InputError, match=r"the evaluation has no measure 'nDCG@20'"):
        threshold_gates(scifact["bm25"], ["nDCG@20=0.5"])


# --------------------------------------------------------------------------- no-drop on SciFact


def test_baseline_gate_flags_the_degraded_run_only_where_it_dropped(scifact):
    table = baseline_gates(scifact["worse"], scifact["bm25"], n_resamples=2000)
    assert table["measure"].tolist() == MEASURES
    by = table.set_index("measure")
    assert not by.loc["nDCG@10", "passed"]
    assert by.loc["R@100", "passed"] and by.loc["R@100", "difference"] == 0.0
    assert by.loc["R@100", "p_value"] == 1.0  # every per-query difference is 0

    # the p-values are the randomization test's, adjusted together by Holm
    raw = [
        randomization_test(scifact["worse"], scifact["bm25"], measure=m, n_resamples=2000).p_value
        for m in MEASURES
    ]
    assert by.loc[MEASURES, "p_value"].tolist() == raw
    assert by.loc[MEASURES, "p_adjusted"].tolist() == holm(raw).tolist()
    bm25, worse = scifact["bm25"].aggregate_to_dict(), scifact["worse"].aggregate_to_dict()
    assert by.loc["nDCG@10", "difference"] == pytest.approx(
        worse["nDCG@10"] - bm25["nDCG@10"], abs=1e-12
    )
    assert by.loc["nDCG@10", "ci_high"] < 0

    # the other way round nDCG@10 rises significantly: a gain never fails the gate
    assert baseline_gates(scifact["bm25"], scifact["worse"], n_resamples=2000)["passed"].all()
    # a drop within --max-drop passes although significant
    drop = bm25["nDCG@10"] - worse["nDCG@10"]
    loose = baseline_gates(
        scifact["worse"], scifact["bm25"], ["nDCG@10"], max_drop=drop + 0.01, n_resamples=2000
    )
    assert loose["passed"].all() and loose["p_adjusted"].item() < 0.05


def test_holm_across_the_gated_measures():
    # six queries; on "a" every query drops by 0.1: exact p = 2 / 2**6 = 0.03125; "b" is unchanged
    qids = [f"q{i}" for i in range(6)]
    base = pd.DataFrame({"query_id": qids, "a": 0.5, "b": 0.5})
    cand = pd.DataFrame({"query_id": qids, "a": 0.4, "b": 0.5})

    alone = baseline_gates(cand, base, ["a"])
    assert alone["p_value"].item() == 0.03125 and not alone["passed"].item()

    both = baseline_gates(cand, base, ["a", "b"]).set_index("measure")
    # Holm: the smaller p times 2 = 0.0625 > 0.05, so the drop on "a" no longer fails
    assert both.loc["a", "p_adjusted"] == 0.0625 and both.loc["b", "p_adjusted"] == 1.0
    assert both["passed"].all()

    unadjusted = baseline_gates(cand, base, ["a", "b"], correction="none")
    assert unadjusted["passed"].tolist() == [False, True]
    assert baseline_gates(cand, base, ["a", "b"], alpha=0.07)["passed"].tolist() == [False, True]


def test_baseline_gate_refuses_bad_input():
    a = pd.DataFrame({"query_id": ["q1", "q2"], "m": [0.1, 0.2]})
    b = pd.DataFrame({"query_id": ["q1", "q3"], "m": [0.1, 0.2]})
    with pytest.raises(InputError, match="do not align by query_id") as err:
        baseline_gates(a, b)
    assert err.value.query_id == "q2"
    with pytest.raises(InputError, match="max_drop must be a number >= 0"):
        baseline_gates(a, a, max_drop=-0.1)
    with pytest.raises(InputError, match="alpha"):
        baseline_gates(a, a, alpha=1.5)
    with pytest.raises(InputError, match="has no measure 'x'"):
        baseline_gates(a, a, ["x"])


# --------------------------------------------------------------------------- the command line


def test_cli_exit_statuses(scifact, capsys):
    q, bm25, worse = (str(scifact[k]) for k in ("qrels_path", "bm25_path", "worse_path"))
    values = scifact["worse"].aggregate_to_dict()

    code = main(["evaluate", q, worse, "-m", "nDCG@10", "--fail-under", "nDCG@10=0.60"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out.startswith(
        f"nDCG@10                 \tall\t{values['nDCG@10']:.4f}"
    )  # printed anyway
    assert f"gate failed: nDCG@10 = {values['nDCG@10']:.4f} < 0.6000 (fail-under)" in err

    # a gate measure not in -m is evaluated too; R@100 passes
    assert main(["evaluate", q, worse, "-m", "P@5", "--fail-under", "R@100=0.9"]) == 0
    out, err = capsys.readouterr()
    assert [line.split("\t")[0].strip() for line in out.splitlines()] == ["P@5", "R@100"]
    assert err.strip().endswith("gates: all 1 passed")

    args = ["evaluate", q, worse, "-m", "nDCG@10", "-m", "R@100", "--baseline", bm25]
    assert main([*args, "--resamples", "2000", "--format", "json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    gates = pd.DataFrame(payload["gates"]["table"]).set_index("measure")
    assert payload["gates"]["exit_status"] == 1 and payload["gates"]["settings"]["alpha"] == 0.05
    assert gates["passed"].to_dict() == {"nDCG@10": False, "R@100": True}
    assert gates.loc["nDCG@10", "baseline"] == pytest.approx(
        scifact["bm25"].aggregate_to_dict()["nDCG@10"], abs=1e-12
    )

    assert main(["evaluate", q, bm25, "--fail-under", "nDCG@10"]) == 2
    assert "a gate is MEASURE=MIN" in capsys.readouterr().err
    assert main(["evaluate", q, bm25, "--baseline", str(Path(bm25).with_name("none.trec"))]) == 2
    assert "none.trec" in capsys.readouterr().err


def test_installed_script_fails_the_build(scifact):
    q, worse = str(scifact["qrels_path"]), str(scifact["worse_path"])
    proc = subprocess.run(
        [str(RAGNB), "evaluate", q, worse, "-m", "nDCG@10", "--fail-under", "nDCG@10=0.60"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("nDCG@10")
    assert "gate failed: nDCG@10" in proc.stderr and "Traceback" not in proc.stderr


def test_help_documents_the_exit_statuses(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["evaluate", "--help"])
    assert stop.value.code == 0
    help_text = capsys.readouterr().out
    assert "exit status:" in help_text and "1  a gate failed" in help_text
    assert "2  bad input" in help_text and "--fail-under MEASURE=MIN" in help_text


def test_report_with_no_gate_passes():
    report = check_gates({"nDCG@10": 0.1})
    assert report.passed and report.exit_status == 0 and report.table.empty
    assert list(report.table.columns) == GATE_COLUMNS
    assert report.message() == "gates: all 0 passed"


def test_docstring_examples():
    import doctest

    import ragnb.stats.gates

    result = doctest.testmod(ragnb.stats.gates)
    assert result.attempted >= 5 and result.failed == 0
