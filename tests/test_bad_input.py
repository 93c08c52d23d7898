"""Bad input files end in a clear InputError naming file and line (exit 2 on the command line),
never in a bare Python error, and nothing is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.io.files import atomic_write, write_run
from ragnb.io.readers import read_corpus, read_qrels, read_queries, read_run

RUN_OK = "q1 Q0 d1 1 3.0 t\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 d1 1 inf t\n", "score is not finite: 'inf'"),
        ("q1 Q0 d1 1 -Infinity t\n", "score is not finite: '-Infinity'"),
        ("q1 Q0 d1 1 1e999 t\n", "score 1e999 is not finite"),
        ("q1 Q0 d1 1 1_5 t\n", "score is not a number: '1_5'"),
        ("q1 Q0 d1 1 \uff11.5 t\n", "score is not a number"),
        ("q1 Q0 d1 1 nan t\n", "score is NaN"),
        ("q1 Q0 d1 1_0 1.0 t\n", "rank is not an integer: '1_0'"),
    ],
)
def test_run_scores_take_trec_eval_syntax_only(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(RUN_OK + text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as info:
        read_run(path)
    assert info.value.path is not None and str(path) in str(info.value)
    assert info.value.line == 2


def test_run_reads_plain_numbers_as_before(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 3 t\nq1 Q0 d2 2 -.5 t\nq1 Q0 d3 3 1.5E+2 t\nq1 Q0 d4 4 +2. t\n")
    assert read_run(path)["score"].tolist() == [3.0, -0.5, 150.0, 2.0]


def test_qrels_grade_out_of_int64_range(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 100000000000000000000\n")
    with pytest.raises(InputError, match="outside the 64-bit integer range") as info:
        read_qrels(path)
    assert info.value.line == 2 and info.value.column == "relevance"


@pytest.mark.parametrize("reader", [read_run, read_qrels])
def test_byte_order_mark_is_not_part_of_the_first_query_id(tmp_path, reader):
    path = tmp_path / "file.txt"
    text = RUN_OK if reader is read_run else "q1 0 d1 1\n"
    path.write_bytes("\ufeff".encode() + text.encode())
    frame = reader(path)
    assert frame["query_id"].tolist() == ["q1"]


def test_byte_order_mark_in_jsonl(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_bytes("\ufeff".encode() + json.dumps({"_id": "q1", "text": "x"}).encode() + b"\n")
    assert read_queries(path)["query_id"].tolist() == ["q1"]


def test_empty_corpus_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("")
    with pytest.raises(InputError, match="holds no documents") as info:
        read_corpus(path)
    assert str(path) in str(info.value)


def test_corpus_id_with_a_space_is_refused_where_it_is_read(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        json.dumps({"_id": "d1", "text": "a"}) + "\n" + json.dumps({"_id": "d 2", "text": "b"})
    )
    with pytest.raises(InputError, match="white space") as info:
        read_corpus(path)
    assert info.value.line == 2 and info.value.column == "_id"


def _dataset(tmp_path: Path, corpus: str) -> Path:
    root = tmp_path / "ds"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(corpus)
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "hello"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def test_cli_retrieve_on_empty_corpus_exits_2_and_writes_nothing(tmp_path, capsys):
    root = _dataset(tmp_path, "")
    out = tmp_path / "run.trec"
    code = main(["retrieve", "--dataset", str(root), "--retriever", "bm25", "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "corpus.jsonl" in err and "no documents" in err
    assert not out.exists() and not list(tmp_path.glob(".run.trec.*"))


def test_cli_evaluate_on_empty_qrels_names_the_file(tmp_path, capsys):
    qrels = tmp_path / "empty.qrels"
    qrels.write_text("")
    run = tmp_path / "run.trec"
    run.write_text(RUN_OK)
    assert main(["evaluate", str(qrels), str(run)]) == 2
    err = capsys.readouterr().err
    assert "empty.qrels" in err and "no judgements" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 d1 1 inf t\n", "not finite"),
        ("q1 Q0 d1 1 1e999 t\n", "not finite"),
    ],
)
def test_cli_evaluate_bad_score_exit_2_names_file_and_line(tmp_path, capsys, text, message):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "bad.trec"
    run.write_text(text)
    assert main(["evaluate", str(qrels), str(run)]) == 2
    err = capsys.readouterr().err
    assert "bad.trec, line 1" in err and message in err


def test_interrupted_atomic_write_leaves_a_temporary_file_that_the_next_write_removes(tmp_path):
    target = tmp_path / "run.trec"
    code = (
        "import sys, time\n"
        "from ragnb.io.files import atomic_write\n"
        f"with atomic_write({str(target)!r}) as f:\n"
        "    f.write('partial'); f.flush(); print('ready', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    leftovers = list(tmp_path.glob(".run.trec.*.tmp"))
    assert len(leftovers) == 1 and not target.exists()
    with atomic_write(target) as f:
        f.write("q1 Q0 d1 1 1.0 t\n")
    assert not list(tmp_path.glob(".run.trec.*.tmp"))
    assert read_run(target)["doc_id"].tolist() == ["d1"]


def test_write_run_refuses_a_score_it_could_not_read_back(tmp_path):
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, np.inf]})
    out = tmp_path / "run.trec"
    with pytest.raises(InputError, match="not finite") as info:
        write_run(run, out)
    assert info.value.query_id == "q1" and not out.exists()


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ({"q1": {"d1": "1.0"}}, r"grade of 'd1' is not an integer: '1.0'"),
        ({"q1": {"d1": 10**20}}, "outside the 64-bit integer range"),
    ],
)
def test_api_grades_must_be_integers_in_range(qrels, message):
    from ragnb.evaluation.evaluate import evaluate

    with pytest.raises(InputError, match=message) as info:
        evaluate(qrels, {"q1": {"d1": 1.0}}, ["P@1"])
    assert info.value.query_id == "q1"


@pytest.mark.parametrize(
    ("run", "column"),
    [
        (
            pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", np.nan], "score": [2.0, 1.0]}),
            "doc_id",
        ),
        (
            pd.DataFrame({"query_id": [None, "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]}),
            "query_id",
        ),
    ],
)
def test_api_run_with_a_missing_id_is_not_read_as_the_string_nan(run, column):
    from ragnb.evaluation.evaluate import evaluate

    with pytest.raises(InputError, match=f"has no {column}") as info:
        evaluate({"q1": {"d1": 1}}, run, ["P@2"])
    assert info.value.column == column
