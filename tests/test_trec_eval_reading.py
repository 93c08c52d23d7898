"""``ragnb trec-eval`` reads the lines trec_eval 10.0 reads, with its meaning, and rejects the
others with their file and line.

trec_eval 10.0's ``get_trec_results.c`` reads a run line as six fields separated by C white
space, ignores the rank and what follows the sixth field, reads the score with ``atof`` and skips
blank lines and lines whose first non-blank character is ``#``; ``get_qrels.c`` reads exactly four
fields, the grade with ``atol``, and skips a ``#`` line only in the first column and not right
after another comment. Every expected output below was printed by trec_eval 10.0 (commit
f4253652c8efd0d86ddffd0d163cc0a0f813111a) on the same files.
"""

from __future__ import annotations

import io
import sys
import warnings

import pytest

from ragnb.errors import InputError
from ragnb.evaluation.trec_eval import run_trec_eval
from ragnb.io.columnar import read_qrels_columnar
from ragnb.io.readers import c_atof, c_atol, read_qrels, read_run

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\nq2 Q0 d3 1 0.3 t\n"
MEASURES = ["-q", "-m", "num_ret", "-m", "map"]


def _values(text: str) -> list[tuple[str, str, str]]:
    return [tuple(f.strip() for f in line.split("\t")) for line in text.splitlines()]


def _trec_eval(tmp_path, qrels: str, run: str, *flags: str, stdin: bool = False, monkeypatch=None):
    """ragnb trec-eval on the two texts; the run from a file (DuckDB's reader first when the
    fast extra is installed) or from the standard input (the Python reader)."""
    (tmp_path / "qrels").write_text(qrels, newline="")
    (tmp_path / "run").write_text(run, newline="")
    run_arg = str(tmp_path / "run")
    if stdin:
        monkeypatch.setattr(sys, "stdin", io.StringIO(run, newline=""))
        run_arg = "-"
    return run_trec_eval([*MEASURES, *flags, str(tmp_path / "qrels"), run_arg])


BASE = [("num_ret", "q1", "2"), ("map", "q1", "1.0000"), ("num_ret", "q2", "1")]
BASE += [("map", "q2", "1.0000"), ("num_ret", "all", "3"), ("map", "all", "1.0000")]

#: (what, run text, trec_eval 10.0's output)
RUNS_READ = [
    (
        "blank, white-space and comment lines, text after the tag",
        "\n   \n# c\n  # indented\nq1 Q0 d1 1 0.5 t more text\n#\n#\nq1 Q0 d2 2 0.4 t\n"
        "q2 Q0 d3 1 0.3 t",
        BASE,
    ),
    (
        "tabs, CRLF and a last line without newline",
        RUN.replace(" ", "\t").replace("\n", "\r\n"),
        BASE,
    ),
    (
        "a rank that is no integer, a score read by atof ('abc' 0, '1e-1x' 0.1, '0x10' 16)",
        "q1 Q0 d1 x abc t\nq1 Q0 d2 2.5 1e-1x t\nq2 Q0 d3 1 0x10 t\n",
        [("num_ret", "q1", "2"), ("map", "q1", "0.5000"), ("num_ret", "q2", "1")]
        + [("map", "q2", "1.0000"), ("num_ret", "all", "3"), ("map", "all", "0.7500")],
    ),
    (
        "'1_5' is 1 (below 1.4); '-inf' and an underflowing '-1e400' tie, doc id descending",
        "q1 Q0 d1 1 1_5 t\nq1 Q0 d2 1 1.4 t\nq2 Q0 d3 1 -inf t\nq2 Q0 d4 1 -1e400 t\n",
        [("num_ret", "q1", "2"), ("map", "q1", "0.5000"), ("num_ret", "q2", "2")]
        + [("map", "q2", "0.5000"), ("num_ret", "all", "4"), ("map", "all", "0.5000")],
    ),
]


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize(("what", "run", "expected"), RUNS_READ, ids=[c[0][:30] for c in RUNS_READ])
def test_run_lines_trec_eval_reads_are_read_with_its_meaning(
    tmp_path, monkeypatch, stdin, what, run, expected
):
    text, _ = _trec_eval(tmp_path, QRELS, run, stdin=stdin, monkeypatch=monkeypatch)
    assert _values(text) == expected


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize(
    ("run", "line", "message"),
    [
        ("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4\n", 3, "expected 6 columns"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", 2, "is NaN"),
    ],
)
def test_run_lines_trec_eval_rejects_name_file_and_line(
    tmp_path, monkeypatch, stdin, run, line, message
):
    with pytest.raises(InputError, match=message) as err:
        _trec_eval(tmp_path, QRELS, run, stdin=stdin, monkeypatch=monkeypatch)
    assert err.value.line == line and "line" in str(err.value)


def test_odd_ranks_and_scores_are_counted_in_a_note(tmp_path):
    _, notes = _trec_eval(tmp_path, QRELS, "q1 Q0 d1 x abc t\nq1 Q0 d2 2 0.4 t\nq2 Q0 d3 1 1 t\n")
    assert any("1 line(s) hold a rank or score that is not a plain number" in n for n in notes)


def test_read_run_as_trec_eval_keeps_atol_ranks_and_atof_scores(tmp_path):
    path = tmp_path / "run"
    path.write_text("q1 Q0 d1 7x 0x1p-1 t\nq1 Q0 d2 - inf t\n")
    with pytest.warns(UserWarning, match="2 line"):
        run = read_run(path, as_trec_eval=True)
    assert run["rank"].tolist() == [7, 0] and run["score"].tolist() == [0.5, float("inf")]
    with pytest.raises(InputError, match="rank is not an integer"):
        read_run(path)  # ragnb evaluate keeps its own strictness


#: (what, qrels text, rows read, a note expected or None)
QRELS_READ = [
    (
        "tabs, CRLF, leading blanks, a grade read by atol ('1.9' is 1)",
        "q1\t0\td1\t1\r\n  q1 0 d2 0\nq2 0 d3 1.9\n",
        [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 1)],
        "1 grade(s) are not integers",
    ),
    (
        "a comment between judgements, a '#' inside an id",
        "# first\nq1 0 d1 1\n# middle\nq1 0 d#2 0\nq2 0 d3 1\n",
        [("q1", "d1", 1), ("q1", "d#2", 0), ("q2", "d3", 1)],
        None,
    ),
    (
        "a '#' line right after a comment is a judgement of query '#'",
        "# c1\n# c2 x y\nq1 0 d1 1\n",
        [("#", "x", 0), ("q1", "d1", 1)],
        "right after a comment line",
    ),
    (
        "'abc' and '+2' grades",
        "q1 0 d1 abc\nq1 0 d2 +2\n",
        [("q1", "d1", 0), ("q1", "d2", 2)],
        "1 grade(s) are not integers",
    ),
]


@pytest.mark.parametrize("reader", ["python", "columnar"])
@pytest.mark.parametrize(
    ("what", "qrels", "rows", "note"), QRELS_READ, ids=[c[0][:30] for c in QRELS_READ]
)
def test_qrels_lines_trec_eval_reads_are_read_with_its_meaning(
    tmp_path, reader, what, qrels, rows, note
):
    path = tmp_path / "qrels"
    path.write_text(qrels, newline="")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if reader == "python":
            frame = read_qrels(path, as_trec_eval=True)
        else:
            frame = read_qrels_columnar(path, as_trec_eval=True)[0]
    got = list(zip(frame["query_id"], frame["doc_id"], frame["relevance"], strict=True))
    assert got == rows
    messages = [str(w.message) for w in caught]
    assert any(note in m for m in messages) if note else not messages


def test_a_comment_after_a_comment_is_evaluated_as_query_hash_with_c(tmp_path):
    text, notes = _trec_eval(tmp_path, "# c1\n# c2 x y\n" + QRELS, RUN, "-c")
    assert _values(text)[:2] == [("num_ret", "#", "0"), ("map", "#", "0.0000")]
    assert _values(text)[-1] == ("map", "all", "0.6667")
    assert any("right after a comment line" in n for n in notes)


def test_a_comment_after_a_comment_without_c_names_the_cause(tmp_path):
    with pytest.raises(
        InputError,
        match="'#' of the qrels is not in the run .a .#. line right after a comment line",
    ):
        _trec_eval(tmp_path, "# c1\n# c2 x y\n" + QRELS, RUN)


@pytest.mark.parametrize("reader", ["python", "columnar"])
@pytest.mark.parametrize(
    ("qrels", "line", "message"),
    [
        ("q1 0 d1 1 extra\nq1 0 d2 0\n", 1, "found 5"),
        ("q1 0 d1 1\n\nq1 0 d2 0\n", 2, "found 0"),
        ("q1 0 d1 1\nq1 0 d2 0\n   \n", 3, "found 0"),
        ("q1 0 d1 1\n  # indented\nq1 0 d2 0\n", 2, "found 2"),
        ("# c1\n# c2 x\nq1 0 d1 1\n", 2, "found 3"),
        ("q1\td1\t1\nq1\td2\t0\n", 1, "found 3"),  # BEIR's form
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "duplicate judgement"),
        ("q1 0 d1 1\n# the end\n", 2, "comment as the last line"),
    ],
)
def test_qrels_lines_trec_eval_rejects_name_file_and_line(tmp_path, reader, qrels, line, message):
    path = tmp_path / "qrels"
    path.write_text(qrels)
    with pytest.raises(InputError, match=message) as err:
        if reader == "python":
            read_qrels(path, as_trec_eval=True)
        else:
            read_qrels_columnar(path, as_trec_eval=True)
    assert err.value.line == line and str(path) in str(err.value)


def test_ragnb_evaluate_keeps_reading_qrels_its_own_way(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 0 d1 1 note\n\nq1 0 d2 0\n")
    with pytest.warns(UserWarning, match="trec_eval 10.0 rejects it"):
        assert len(read_qrels(path)) == 2
    path.write_text("q1 0 d1 1.5\n")
    with pytest.raises(InputError, match="grade is not an integer"):
        read_qrels(path)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e-1x", 0.1), ("0x1.8p1", 3.0), ("1_5", 1.0), ("-.5", -0.5), ("abc", 0.0), ("0x", 0.0)]
    + [("1.5e+", 1.5), ("infinit", float("inf")), ("1e999", float("inf")), ("1e-400", 0.0)]
    + [("0X1A", 26.0), ("+.e5", 0.0), ("0x1.000000000000081p0", 1.0000000000000002)],
)
def test_c_atof_reads_as_glibc_strtod(text, value):
    assert c_atof(text) == value


def test_c_atol_reads_as_glibc_strtol():
    assert [c_atol(t) for t in ("23.4", "-2x", "high", "+7", "-", "9" * 25)] == [
        23, -2, 0, 7, 0, 2**63 - 1,
    ]  # fmt: skip


@pytest.mark.parametrize("as_trec_eval", [False, True])
def test_a_byte_that_is_not_utf8_names_its_file_and_line(tmp_path, as_trec_eval):
    """trec_eval reads any bytes; ragnb reads UTF-8 text and names the line that is not."""
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_bytes(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d\xe9 2 0.4 t\n")
    qrels.write_bytes(b"q1 0 d1 1\nq1 0 d2 0\nq1 0 d\xe93 1\n")
    with pytest.raises(InputError, match=r"line 2: not UTF-8 text \(byte 0xe9\)"):
        read_run(run, as_trec_eval=as_trec_eval)
    with pytest.raises(InputError, match=r"line 3: not UTF-8 text \(byte 0xe9\)"):
        read_qrels(qrels, as_trec_eval=as_trec_eval)
    if as_trec_eval:
        with pytest.raises(InputError, match="line 3: not UTF-8"):
            read_qrels_columnar(qrels, as_trec_eval=True)
        qrels.write_text(QRELS)
        with pytest.raises(InputError, match="run, line 2: not UTF-8"):
            run_trec_eval([str(qrels), str(run)])  # DuckDB's reader fails, then Python's


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_a_line_starting_with_a_tab_keeps_its_fields(tmp_path, monkeypatch, stdin):
    """The query is the first field after the tab (a reader that kept an empty first field
    would read query '' and document 'Q0' here)."""
    run = "\tq1 Q0 6 1 0.5 t\n\tq1 Q0 5 2 0.4 t\n"
    text, _ = _trec_eval(
        tmp_path, "q1 0 5 1\nq1 0 6 0\n", run, stdin=stdin, monkeypatch=monkeypatch
    )
    assert _values(text) == [
        ("num_ret", "q1", "2"), ("map", "q1", "0.5000"), ("num_ret", "all", "2"),
        ("map", "all", "0.5000"),
    ]  # fmt: skip
