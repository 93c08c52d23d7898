"""The ``ragnb`` command line, in process (``ragnb.cli.main.main``) and as the installed script."""

from __future__ import annotations

import io as stdio
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from ragnb.cli.main import main
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.readers import read_qrels, read_run

RAGNB = Path(sys.executable).parent / "ragnb"

# Two queries, judged by hand:
#   q1: d1, d2 relevant (grade 1); the run ranks d1, x (unjudged), d2
#   q2: d3 relevant (grade 2); the run ranks d3 alone
# P@5     q1 = 2/5 = 0.4, q2 = 1/5 = 0.2                       mean 0.3
# nDCG@10 q1 = (1/log2 2 + 1/log2 4) / (1/log2 2 + 1/log2 3)
#            = 1.5 / 1.6309298 = 0.9197208;  q2 = 1 / 1 = 1    mean 0.9598604
QRELS_TEXT = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq2\td3\t2\n"
RUN_TEXT = "q1 Q0 d1 1 3.0 t\nq1 Q0 x 2 2.0 t\nq1 Q0 d2 3 1.0 t\nq2 Q0 d3 1 5.0 t\n"
NDCG_Q1 = 1.5 / (1 + 1 / 1.584962500721156)  # log2(3) = 1.5849625


@pytest.fixture
def small(tmp_path):
    qrels = tmp_path / "qrels.tsv"
    run = tmp_path / "run.trec"
    qrels.write_text(QRELS_TEXT)
    run.write_text(RUN_TEXT)
    return str(qrels), str(run)


def table_rows(out):
    """``[(measure, query, value), ...]`` from the table format."""
    rows = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        rows.append((parts[0], parts[1], parts[2]))
    return rows


# --------------------------------------------------------------------------- evaluate, by hand


def test_evaluate_table_hand_computed_with_alias(small, capsys):
    code = main(["evaluate", *small, "-m", "nDCG@10", "-m", "P@5", "-m", "ndcg_cut_10"])
    out, err = capsys.readouterr()
    assert code == 0
    assert err == ""
    # ndcg_cut_10 is trec_eval's name for nDCG@10: listed once, under the canonical name
    assert table_rows(out) == [("nDCG@10", "all", "0.9599"), ("P@5", "all", "0.3000")]
    assert out.splitlines()[0].endswith("(n_valid=2)")
    assert round((NDCG_Q1 + 1) / 2, 4) == 0.9599


def test_evaluate_per_query_table(small, capsys):
    assert main(["evaluate", *small, "-m", "P@5", "--per-query"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows == [("P@5", "q1", "0.4000"), ("P@5", "q2", "0.2000"), ("P@5", "all", "0.3000")]


def test_evaluate_csv_and_json_hand_computed(small, capsys):
    assert main(["evaluate", *small, "-m", "ndcg_cut_10", "-m", "P@5", "--format", "csv"]) == 0
    agg = pd.read_csv(stdio.StringIO(capsys.readouterr().out))
    assert agg["measure"].tolist() == ["ndcg_cut_10", "P@5"]  # under the names asked for
    assert agg["value"].tolist() == pytest.approx([(NDCG_Q1 + 1) / 2, 0.3], rel=1e-12)
    assert agg["n_queries"].tolist() == [2, 2]

    assert main(["evaluate", *small, "-m", "P@5", "--per-query", "--format", "csv"]) == 0
    wide = pd.read_csv(stdio.StringIO(capsys.readouterr().out))
    assert wide["query_id"].tolist() == ["q1", "q2", "all"]
    assert wide["P@5"].tolist() == pytest.approx([0.4, 0.2, 0.3], rel=1e-12)

    assert main(["evaluate", *small, "-m", "P@5", "--per-query", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["aggregate"] == [
        {"measure": "P@5", "value": pytest.approx(0.3), "n_valid": 2, "n_queries": 2}
    ]
    assert payload["per_query"] == [
        {"query_id": "q1", "measure": "P@5", "value": 0.4},
        {"query_id": "q2", "measure": "P@5", "value": 0.2},
    ]
    assert payload["counts"]["queries_in_qrels"] == 2


def test_evaluate_notes_missing_queries_and_rank_disagreement(tmp_path, capsys):
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    # q2 absent from the run; q1's rank column disagrees with its scores; q9 has no qrels
    (tmp_path / "r").write_text("q1 Q0 d1 2 1.0 t\nq1 Q0 d0 1 0.5 t\nq9 Q0 d1 1 1.0 t\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the notice is the note below, not a warning as well
        code = main(["evaluate", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "P@1"])
    out, err = capsys.readouterr()
    assert code == 0
    # by score q1 ranks d1 first: P@1 q1 = 1, q2 = 0 (missing) -> 0.5
    assert table_rows(out) == [("P@1", "all", "0.5000")]
    assert "1 qrels queries absent from the run scored 0" in err
    assert "1 run queries without qrels left out" in err
    assert "1 queries ordered by score, not file rank" in err
    with warnings.catch_warnings():  # the streamed path says it once too
        warnings.simplefilter("error")
        args = ["evaluate", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "P@1", "--stream"]
        assert main(args) == 0
    out, err = capsys.readouterr()
    assert table_rows(out) == [("P@1", "all", "0.5000")]
    assert err.count("ordered by score, not file rank") == 1
    # by the file's ranks q1 ranks d0 first: P@1 q1 = 0 -> 0
    assert (
        main(
            ["evaluate", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "P@1"]
            + ["--order", "file"]
        )
        == 0
    )
    assert table_rows(capsys.readouterr().out) == [("P@1", "all", "0.0000")]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("which", "text", "message"),
    [
        ("qrels", "q1\td1\t1\nq1\td2\t2.5\n", (2, "grade is not an integer: '2.5'")),
        ("qrels", "q1\td1\n", (1, "expected 3 (BEIR) or 4 (TREC) columns, found 2")),
        ("run", "q1 Q0 d1 1 1.0 t\n\nq1 Q0 d2 2 nan t\n", (3, "score is NaN")),
    ],
)
def test_bad_file_exit_2_names_file_and_line(small, tmp_path, capsys, which, text, message):
    bad = tmp_path / f"bad-{which}"
    bad.write_text(text)
    qrels, run = small
    args = [str(bad), run] if which == "qrels" else [qrels, str(bad)]
    assert main(["evaluate", *args, "-m", "P@5"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    line, what = message
    # "ragnb: error: FILE, line N[, column ...]: WHAT"
    assert err.startswith(f"ragnb: error: {bad}, line {line}")
    assert err.endswith(f": {what}\n")
    assert err.count("\n") == 1  # one line, no traceback


def test_missing_file_exit_2(small, tmp_path, capsys):
    assert main(["evaluate", small[0], str(tmp_path / "nope.trec")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragnb: error:") and "nope.trec" in err


def test_unknown_measure_exit_2(small, capsys):
    assert main(["evaluate", *small, "-m", "nDGC@10"]) == 2
    assert "nDGC@10" in capsys.readouterr().err


def test_retrieve_missing_dataset_exit_2_lists_parent(tmp_path, capsys):
    (tmp_path / "scifact").mkdir()
    out = tmp_path / "run.trec"
    args = ["--dataset", str(tmp_path / "scifcat"), "--retriever", "bm25", "--out", str(out)]
    assert main(["retrieve", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragnb: error: no BEIR dataset folder") and "'scifact'" in err
    assert not out.exists()


def test_argparse_rejects_unknown_retriever(capsys):
    with pytest.raises(SystemExit) as info:
        main(["retrieve", "--dataset", "d", "--retriever", "splade", "--out", "x"])
    assert info.value.code == 2
    assert "splade" in capsys.readouterr().err


def test_golden_options_reach_the_config_by_their_field_names(tmp_path, monkeypatch):
    from dataclasses import fields

    from ragnb.cli.golden import _GOLDEN_OPTIONS_NOT_FIELDS, _golden_config
    from ragnb.cli.main import build_parser
    from ragnb.judge import DEFAULT_JUDGE_MODEL
    from ragnb.studies.golden import GoldenSetConfig

    monkeypatch.chdir(tmp_path)
    argv = ["golden", "--dataset", "d", "--out", "o", "--queries", "q.txt", "--judge", "openai"]
    argv += ["--model", "m1", "--prompt", "p.yaml", "--base-url", "http://127.0.0.1:9/v1"]
    argv += ["--split", "dev", "--max-queries", "7", "--retriever", "bm25", "--depth", "9"]
    argv += ["--top-n", "4", "--refine-max-iterations", "3", "--budget-usd", "1.5", "--seed", "11"]
    argv += ["--human-labels", "h.qrels", "--cache-dir", "c"]
    args = build_parser().parse_args(argv)
    # an option named as no field would be dropped silently: each must be translated by hand
    fields_ = {f.name for f in fields(GoldenSetConfig)}
    assert set(vars(args)) - fields_ - {"command", "func"} == set(_GOLDEN_OPTIONS_NOT_FIELDS)
    c = _golden_config(args)
    assert (c.split, c.max_queries, c.depth, c.top_n) == ("dev", 7, 9, 4)
    assert c.refine_max_iterations == 3 and c.min_pool == 9  # min_pool: --depth by default
    assert (c.judge, c.model, c.prompt, c.base_url) == ("openai", "m1", "p.yaml", args.base_url)
    assert (c.budget_usd, c.seed, c.cache_dir, c.retrievers) == (1.5, 11, "c", ["bm25"])
    paths = (c.dataset, c.queries, c.human_labels, c.export_dir)
    assert paths == tuple(str(tmp_path / n) for n in ("d", "q.txt", "h.qrels", "o"))
    assert c.new_systems == [] and not c.simulate  # the command's own settings
    c = _golden_config(build_parser().parse_args(argv[:5] + ["--min-pool", "12"]))
    # the local stand-in judge pools and refines little unless told otherwise (command_sizes)
    assert (c.queries, c.human_labels, c.min_pool, c.depth) == ("", "", 12, 5)
    assert (c.top_n, c.refine_max_iterations) == (3, 1)
    assert c.retrievers == ["bm25", "dense"] and c.judge == "local"
    c = _golden_config(build_parser().parse_args(argv[:5] + ["--judge", "openai"]))
    assert (c.depth, c.min_pool, c.top_n, c.refine_max_iterations) == (10, 10, 5, 5)
    # the parser spells the model default out (importing ragnb.judge would slow every command)
    assert c.model == DEFAULT_JUDGE_MODEL


# --------------------------------------------------------------------------- report


@pytest.fixture
def no_execution(monkeypatch):
    """Fail loudly if a notebook would be executed: these tests check what happens before."""
    import papermill

    def refuse(*args, **kwargs):
        raise AssertionError("the notebook was executed")

    monkeypatch.setattr(papermill, "execute_notebook", refuse)


def test_report_unknown_parameter_exit_2(no_execution, capsys):
    code = main(["report", "01_retrieval_evaluation", "-p", "no_such_knob=3"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("ragnb: error:")
    assert "unknown parameter 'no_such_knob'" in err
    assert "dataset, depth" in err  # and lists the parameters it does take


def test_report_parameter_in_two_words_exit_2_shows_the_one_word_form(no_execution, capsys):
    assert main(["report", "01_retrieval_evaluation", "-p", "depth", "20"]) == 2
    err = capsys.readouterr().err
    assert err == "ragnb: error: -p takes NAME=VALUE: write -p depth=20, not -p depth 20\n"


def test_report_needs_notebook_or_all(no_execution, capsys):
    assert main(["report"]) == 2
    assert capsys.readouterr().err == "ragnb: error: name a NOTEBOOK or use --all\n"
    assert main(["report", "01_retrieval_evaluation", "--all"]) == 2
    assert "not both" in capsys.readouterr().err


def test_report_unknown_notebook_lists_available(no_execution, capsys):
    assert main(["report", "99_nothing"]) == 2
    err = capsys.readouterr().err
    assert "no notebook '99_nothing'" in err and "01_retrieval_evaluation" in err


# --------------------------------------------------------------------------- SciFact end to end


@pytest.fixture(scope="module")
def scifact_run(scifact_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run.trec"
    code = main(
        ["retrieve", "--dataset", str(scifact_path), "--retriever", "bm25", "-k", "100"]
        + ["--out", str(out)]
    )
    assert code == 0
    return scifact_path / "qrels" / "test.tsv", out


def test_retrieve_writes_300_queries_by_100(scifact_run):
    qrels_path, out = scifact_run
    lines = out.read_text().splitlines()
    # at most 100 per query; BM25 returns only abstracts sharing a term with the claim
    assert 0.99 * 300 * 100 <= len(lines) <= 300 * 100
    per_query: dict[str, list[int]] = {}
    for line in lines:
        qid, q0, _, rank, score, tag = line.split()
        assert (q0, tag) == ("Q0", "bm25")
        float(score)
        per_query.setdefault(qid, []).append(int(rank))
    assert set(per_query) == set(read_qrels(qrels_path)["query_id"])
    assert all(
        ranks == list(range(1, len(ranks) + 1)) and len(ranks) <= 100
        for ranks in per_query.values()
    )


def test_evaluate_scifact_equals_library(scifact_run, capsys):
    qrels_path, out = scifact_run
    expected = evaluate(read_qrels(qrels_path), read_run(out), ["nDCG@10", "P@5"])
    want = expected.aggregate_to_dict()

    assert main(["evaluate", str(qrels_path), str(out), "-m", "nDCG@10", "-m", "P@5"]) == 0
    assert table_rows(capsys.readouterr().out) == [
        ("nDCG@10", "all", f"{want['nDCG@10']:.4f}"),
        ("P@5", "all", f"{want['P@5']:.4f}"),
    ]

    args = ["evaluate", str(qrels_path), str(out), "-m", "ndcg_cut_10", "-m", "P@5"]
    assert main([*args, "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    asked = {"ndcg_cut_10": want["nDCG@10"], "P@5": want["P@5"]}  # the names asked for
    assert {r["measure"]: r["value"] for r in payload["aggregate"]} == asked
    assert payload["counts"]["queries_in_qrels"] == 300

    assert main([*args, "--format", "csv", "--per-query"]) == 0
    wide = pd.read_csv(stdio.StringIO(capsys.readouterr().out), dtype={"query_id": str})
    assert len(wide) == 301
    per_query = expected.per_query_wide()
    body = wide[wide["query_id"] != "all"].set_index("query_id").sort_index()
    assert body.index.tolist() == sorted(per_query.index)
    for m, shown in (("nDCG@10", "ndcg_cut_10"), ("P@5", "P@5")):
        assert body[shown].tolist() == pytest.approx(per_query.loc[body.index, m].tolist(), abs=0)
        assert wide.loc[wide["query_id"] == "all", shown].item() == pytest.approx(want[m], abs=0)


# --------------------------------------------------------------------------- installed script


def test_installed_script(small, tmp_path):
    assert RAGNB.exists(), RAGNB
    ok = subprocess.run(
        [str(RAGNB), "evaluate", *small, "-m", "nDCG@10", "-m", "P@5", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    values = {r["measure"]: r["value"] for r in json.loads(ok.stdout)["aggregate"]}
    assert values == pytest.approx({"nDCG@10": (NDCG_Q1 + 1) / 2, "P@5": 0.3}, rel=1e-12)

    bad = tmp_path / "bad.tsv"
    bad.write_text("q1\td1\t1\nq1\td1\t0\n")
    fail = subprocess.run(
        [str(RAGNB), "evaluate", str(bad), small[1]], capture_output=True, text=True, timeout=120
    )
    assert fail.returncode == 2
    assert fail.stdout == ""
    assert fail.stderr.startswith(f"ragnb: error: {bad}, line 2, query 'q1': duplicate judgement")
    assert "Traceback" not in fail.stderr


def test_the_installed_trec_eval_writes_all_its_output_before_it_ends(tmp_path):
    """``ragnb trec-eval`` ends without the interpreter's teardown once its output is flushed:
    a summary (shorter than the stream's buffer) and a long per-query output arrive whole,
    through a pipe and into a file, with status 0; a missing file still ends with status 2."""
    from ragnb.evaluation.trec_eval import run_trec_eval

    qrels = [f"q{q} 0 d{d} {(q + d) % 3}" for q in range(60) for d in range(0, 20, 2)]
    run = [f"q{q} Q0 d{d} {d} {20 - d}.5 sys" for q in range(60) for d in range(20)]
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered stdout
    for argv in (files, ["-q", "-m", "all_trec", *files]):
        want = run_trec_eval(argv)[0]
        piped = subprocess.run(
            [str(RAGNB), "trec-eval", *argv], capture_output=True, timeout=120, env=env
        )
        assert piped.returncode == 0, piped.stderr
        assert piped.stdout.decode() == want
        with open(tmp_path / "out.txt", "wb") as out:
            done = subprocess.run(
                [str(RAGNB), "trec-eval", *argv], stdout=out, timeout=120, env=env
            )
        assert done.returncode == 0
        assert (tmp_path / "out.txt").read_text() == want
    assert len(run_trec_eval(files)[0]) < 8192 < len(want)
    bad = subprocess.run([str(RAGNB), "trec-eval", str(tmp_path / "none"), files[1]], timeout=120)
    assert bad.returncode == 2
