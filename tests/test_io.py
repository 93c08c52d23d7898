"""ragnb.io.files: every malformed input names file and line; writers round-trip and are atomic.

Expected values are written by hand next to each input. Round trips are checked bit for bit,
on awkward hand-picked floats and on random ones (hypothesis).
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragnb.errors import InputError
from ragnb.io import files as io
from ragnb.io import readers


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def raises_at(reader, path: Path, line: int, *words: str) -> InputError:
    """Call ``reader(path)``; check the InputError names the file, the line and ``words``."""
    with pytest.raises(InputError) as info:
        reader(path)
    e = info.value
    assert e.path == str(path)
    assert e.line == line
    assert str(e).startswith(f"{path}, line {line}")
    for word in words:
        assert word in str(e)
    return e


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


# --------------------------------------------------------------------------- corpus and queries

GOOD_DOC = '{"_id": "d1", "title": "T", "text": "first"}\n'
GOOD_QUERY = '{"_id": "q1", "text": "what"}\n'


@pytest.mark.parametrize("reader", [readers.read_corpus, readers.read_queries])
@pytest.mark.parametrize(
    ("bad_line", "words"),
    [
        ('{"_id": "x", "text": "unterminated}', ["malformed JSON"]),
        ('{"_id": "x", "text": "a",}', ["malformed JSON"]),
        ('["not", "an", "object"]', ["JSON object"]),
        ('{"text": "no id"}', ["missing field", "'_id'"]),
        ('{"_id": "x"}', ["missing field", "'text'"]),
        ('{"_id": "x", "text": null}', ["missing field", "'text'"]),
        ('{"_id": "x", "text": 3.5}', ["'text' must be a string", "float"]),
        ('{"_id": "x", "text": ["a", "b"]}', ["'text' must be a string", "list"]),
        ('{"_id": {"a": 1}, "text": "t"}', ["'_id' must be a string", "dict"]),
        ('{"_id": true, "text": "t"}', ["'_id' must be a string", "bool"]),
        ('{"_id": 2.0, "text": "t"}', ["'_id' must be a string", "float"]),
    ],
)
def test_jsonl_bad_line_names_file_and_line(tmp_path, reader, bad_line, words):
    good = GOOD_DOC if reader is readers.read_corpus else GOOD_QUERY
    # line 1 good, line 2 blank (skipped, but counted), line 3 bad
    path = write(tmp_path / "data.jsonl", good + "\n" + bad_line + "\n")
    raises_at(reader, path, 3, *words)


@pytest.mark.parametrize("reader", [readers.read_corpus, readers.read_queries])
def test_jsonl_duplicate_id_names_both_lines(tmp_path, reader):
    path = write(
        tmp_path / "data.jsonl",
        '{"_id": "a", "text": "x"}\n{"_id": "b", "text": "y"}\n{"_id": "a", "text": "z"}\n',
    )
    raises_at(reader, path, 3, "duplicate _id 'a'", "first on line 1")


def test_corpus_title_optional_and_file_order(tmp_path):
    path = write(
        tmp_path / "corpus.jsonl",
        '{"_id": "z", "text": "last letter"}\n'
        '{"_id": "a", "title": "Alpha", "text": "first letter"}\n',
    )
    corpus = readers.read_corpus(path)
    assert corpus.to_dict("list") == {
        "doc_id": ["z", "a"],
        "title": ["", "Alpha"],
        "text": ["last letter", "first letter"],
    }


# --------------------------------------------------------------------------- qrels


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # first data line decides the form; 2 columns fit neither (text after the fourth
        # TREC column is ignored, as trec_eval ignores it: test_qrels_extra_text_is_a_note)
        ("q1\td1\n", 1, ["expected 3 (BEIR) or 4 (TREC) columns, found 2"]),
        # a later line with another column count than the first
        ("q1\td1\t1\nq1\td2\n", 2, ["expected 3 columns like the first line, found 2"]),
        ("q1 0 d1 1\nq1 0 d2\n", 2, ["expected 4 columns", "found 3"]),
        # grades must be integers
        ("q1\td1\t1\nq1\td2\t2.5\n", 2, ["grade is not an integer: '2.5'"]),
        ("q1\td1\tx\n", 1, ["grade is not an integer: 'x'"]),
        ("q1 0 d1 1e0\n", 1, ["grade is not an integer: '1e0'"]),
        ("q1\td1\t1_0\n", 1, ["grade is not an integer: '1_0'"]),
        # a pair judged twice, even with the same grade
        ("q1\td1\t1\nq2\td1\t0\nq1\td1\t1\n", 3, ["duplicate judgement", "'d1'", "line 1"]),
    ],
)
def test_qrels_bad_input_names_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path / "qrels.tsv", text)
    raises_at(readers.read_qrels, path, line, *words)


def test_qrels_duplicate_names_query(tmp_path):
    path = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 0 d1 2\n")
    e = raises_at(readers.read_qrels, path, 2)
    assert e.query_id == "q1"


def test_qrels_blank_lines_skipped_but_counted(tmp_path):
    path = write(tmp_path / "qrels.tsv", "\n\nq1\td1\t1\n\nq1\td1\t1\n")
    raises_at(readers.read_qrels, path, 5, "first on line 3")


EXPECTED_QRELS = pd.DataFrame(
    {
        "query_id": pd.Series(["q1", "q1", "q2"], dtype=object),
        "doc_id": pd.Series(["d1", "d2", "d1"], dtype=object),
        "relevance": pd.Series([2, 0, -1], dtype="int64"),
    }
)


@pytest.mark.parametrize(
    "text",
    [
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t-1\n",  # BEIR with header
        "q1\td1\t2\nq1\td2\t0\nq2\td1\t-1\n",  # BEIR without header
        "q1\td1\t2\r\nq1\td2\t0\r\nq2\td1\t-1\r\n",  # CRLF line ends
        "q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 -1\n",  # TREC, space separated
        "q1\t0\td1\t2\nq1\tQ0\td2\t0\nq2\t7\td1\t-1\n",  # TREC, tabs; iter column ignored
    ],
    ids=["beir-header", "beir-no-header", "crlf", "trec-space", "trec-tab"],
)
def test_qrels_forms_give_identical_frames(tmp_path, text):
    got = readers.read_qrels(write(tmp_path / "qrels", text))
    pd.testing.assert_frame_equal(got, EXPECTED_QRELS)


def test_qrels_empty_file_gives_typed_empty_frame(tmp_path):
    got = readers.read_qrels(write(tmp_path / "qrels.tsv", ""))
    assert list(got.columns) == ["query_id", "doc_id", "relevance"]
    assert len(got) == 0
    assert got["relevance"].dtype == np.int64


@pytest.mark.parametrize(
    ("name", "text", "reader", "words"),
    [
        ("qrels.txt", "q1 0 d1 1 extra\nq1 0 d2 0\n", "qrels", "after the fourth column"),
        ("run.trec", "q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 0.4 my run\n", "run", "after the sixth"),
    ],
)
def test_extra_text_is_read_as_trec_eval_reads_it_and_noted(tmp_path, name, text, reader, words):
    path = write(tmp_path / name, text)
    read = readers.read_qrels if reader == "qrels" else readers.read_run
    with pytest.warns(UserWarning, match=f"1 line\\(s\\) carry text {words}"):
        frame = read(path)
    assert frame["doc_id"].tolist() == ["d1", "d2"]


# --------------------------------------------------------------------------- runs


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("q1 Q0 d1 1 0.5\n", 1, ["expected 6 columns", "found 5"]),
        ("q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 0.4\n", 2, ["found 5"]),
        ("q1 Q0 d1 1.0 0.5 run\n", 1, ["rank is not an integer: '1.0'"]),
        ("q1 Q0 d1 one 0.5 run\n", 1, ["rank is not an integer: 'one'"]),
        ("q1 Q0 d1 1 high run\n", 1, ["score is not a number: 'high'"]),
        ("q1 Q0 d1 1 0,5 run\n", 1, ["score is not a number: '0,5'"]),
        ("q1 Q0 d1 1 0.5 run\nq1 Q0 d2 2 nan run\n", 2, ["score is NaN"]),
        ("q1 Q0 d1 1 NaN run\n", 1, ["score is NaN"]),
        ("q1 Q0 d1 1 -nan run\n", 1, ["score is NaN"]),
        (
            "q1 Q0 d1 1 0.5 run\nq2 Q0 d1 1 0.5 run\nq1 Q0 d1 3 0.1 run\n",
            3,
            ["duplicate entry for doc 'd1'", "first on line 1"],
        ),
    ],
)
def test_run_bad_input_names_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path / "run.trec", text)
    raises_at(readers.read_run, path, line, *words)


def test_run_duplicate_names_query(tmp_path):
    path = write(tmp_path / "run.trec", "q7 Q0 d1 1 0.5 r\nq7 Q0 d1 2 0.4 r\n")
    assert raises_at(readers.read_run, path, 2).query_id == "q7"


def test_read_run_keeps_file_order_and_columns(tmp_path):
    path = write(
        tmp_path / "run.trec",
        "q2 Q0 b 1 3.5 sys\n\nq1 Q0 a 2 -1 sys\nq1 Q0 c 1 1e308 sys\n",
    )
    run = readers.read_run(path)
    assert run.to_dict("list") == {
        "query_id": ["q2", "q1", "q1"],
        "doc_id": ["b", "a", "c"],
        "score": [3.5, -1.0, 1e308],
        "rank": [1, 2, 1],
        "tag": ["sys", "sys", "sys"],
    }
    assert run["score"].dtype == np.float64
    assert run["rank"].dtype == np.int64


# --------------------------------------------------------------------------- round trips

AWKWARD = [
    0.1 + 0.2,  # 0.30000000000000004, not 0.3
    1 / 3,
    1e-300,
    5e-324,  # smallest subnormal
    2.2250738585072014e-308,  # smallest normal
    -0.0,
    0.0,
    1.7976931348623157e308,  # largest finite
    -123456789.12345679,
    2.0**53 + 2,
    math.pi,
]


def test_write_read_run_is_bit_identical_on_awkward_floats(tmp_path):
    ids = [f"d{i:02d}" for i in range(len(AWKWARD))]
    run = pd.DataFrame({"query_id": "q1", "doc_id": ids, "score": AWKWARD})
    path = tmp_path / "run.trec"
    io.write_run(run, path, tag="awk")
    back = readers.read_run(path)
    got = dict(zip(back["doc_id"], back["score"], strict=True))
    assert sorted(got) == ids
    for did, x in zip(ids, AWKWARD, strict=True):
        assert bits(got[did]) == bits(x), did  # -0.0 stays -0.0: compare bits, not values
    assert set(back["tag"]) == {"awk"}


def test_write_run_ranks_in_trec_eval_order(tmp_path):
    # scores: a 1, b 3, c 3, d 2; ties by doc_id descending -> c, b, d, a
    run = pd.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": list("abcd"), "score": [1.0, 3.0, 3.0, 2.0]}
    )
    path = tmp_path / "run.trec"
    io.write_run(run, path)
    assert path.read_text().splitlines() == [
        "q Q0 c 1 3.0 ragnb",
        "q Q0 b 2 3.0 ragnb",
        "q Q0 d 3 2.0 ragnb",
        "q Q0 a 4 1.0 ragnb",
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False, width=64),
        min_size=1,
        max_size=30,
    )
)
def test_write_read_run_round_trips_random_floats(scores):
    ids = [f"doc{i}" for i in range(len(scores))]
    run = pd.DataFrame({"query_id": "q", "doc_id": ids, "score": scores})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.trec"
        io.write_run(run, path)
        back = readers.read_run(path)
    got = dict(zip(back["doc_id"], back["score"], strict=True))
    assert [bits(got[i]) for i in ids] == [bits(x) for x in scores]


@pytest.mark.parametrize("form", ["trec", "beir"])
def test_write_read_qrels_round_trip(tmp_path, form):
    path = tmp_path / f"qrels.{form}"
    io.write_qrels(EXPECTED_QRELS, path, form=form)
    first = path.read_text().splitlines()[0]
    assert first == ("query-id\tcorpus-id\tscore" if form == "beir" else "q1 0 d1 2")
    pd.testing.assert_frame_equal(readers.read_qrels(path), EXPECTED_QRELS)


@pytest.mark.parametrize(
    ("writer", "frame"),
    [
        (io.write_run, pd.DataFrame({"query_id": ["q 1"], "doc_id": ["d1"], "score": [1.0]})),
        (io.write_run, pd.DataFrame({"query_id": ["q1"], "doc_id": ["d\t1"], "score": [1.0]})),
        (io.write_run, pd.DataFrame({"query_id": ["q1"], "doc_id": [""], "score": [1.0]})),
        (
            io.write_qrels,
            pd.DataFrame({"query_id": ["q1"], "doc_id": ["a b"], "relevance": [1]}),
        ),
    ],
)
def test_writers_refuse_ids_that_would_not_read_back(tmp_path, writer, frame):
    path = tmp_path / "out"
    with pytest.raises(InputError, match="cannot be written"):
        writer(frame, path)
    assert not path.exists()


def test_beir_qrels_keep_inner_spaces_but_refuse_tabs(tmp_path):
    ok = pd.DataFrame({"query_id": ["q 1"], "doc_id": ["Some Title"], "relevance": [1]})
    io.write_qrels(ok, tmp_path / "ok.tsv", form="beir")
    back = readers.read_qrels(tmp_path / "ok.tsv")
    assert back.to_dict("records") == [{"query_id": "q 1", "doc_id": "Some Title", "relevance": 1}]
    bad = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a\tb"], "relevance": [1]})
    with pytest.raises(InputError, match="cannot be written"):
        io.write_qrels(bad, tmp_path / "bad.tsv", form="beir")


def test_write_run_refuses_nan_and_bad_tag(tmp_path):
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, np.nan]})
    with pytest.raises(InputError, match="NaN"):
        io.write_run(run, tmp_path / "r")
    with pytest.raises(InputError, match="one word"):
        io.write_run(run.dropna(), tmp_path / "r", tag="my run")
    assert not (tmp_path / "r").exists()


def test_json_round_trip_and_malformed_json_names_line(tmp_path):
    obj = {"name": "scifact", "counts": [1, 2], "ü": "ünïcode"}
    io.write_json(obj, tmp_path / "a.json")
    assert io.read_json(tmp_path / "a.json") == obj
    path = write(tmp_path / "b.json", '{\n  "a": 1,\n  "b": \n}\n')
    raises_at(io.read_json, path, 4, "malformed JSON")


def test_read_yaml_names_file_and_line_and_a_shipped_name(tmp_path):
    path = write(tmp_path / "grid.yaml", "modes: [dense, bm25]\nks: [1, 2\nseed: 3\n")
    raises_at(io.read_yaml, path, 3, "malformed YAML")
    with pytest.raises(InputError) as info:
        io.read_yaml(path, name="ragnb/llm/prices.yaml")
    assert info.value.path == "ragnb/llm/prices.yaml" and str(tmp_path) not in str(info.value)
    ok = write(tmp_path / "ok.yaml", "modes: [dense, bm25]\nseed: 3\n")
    assert io.read_yaml(ok) == {"modes": ["dense", "bm25"], "seed": 3}
    assert io.read_yaml(write(tmp_path / "empty.yaml", "")) is None
    with pytest.raises(FileNotFoundError):
        io.read_yaml(tmp_path / "nope.yaml")


def test_write_jsonl_reads_back_as_corpus(tmp_path):
    recs = [{"_id": "d1", "title": "", "text": "a\nb"}, {"_id": "d2", "title": "T", "text": "c"}]
    io.write_jsonl(recs, tmp_path / "corpus.jsonl")
    corpus = readers.read_corpus(tmp_path / "corpus.jsonl")
    assert corpus.to_dict("records") == [
        {"doc_id": "d1", "title": "", "text": "a\nb"},
        {"doc_id": "d2", "title": "T", "text": "c"},
    ]


# --------------------------------------------------------------------------- atomic writes


def test_atomic_write_failure_keeps_old_content_and_leaves_no_temp(tmp_path):
    path = write(tmp_path / "out.txt", "old content\n")
    with pytest.raises(RuntimeError, match="boom"):
        with io.atomic_write(path) as f:
            f.write("new content, half")
            raise RuntimeError("boom")
    assert path.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.parametrize(
    "write_new",
    [
        lambda p: io.write_run(
            pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]}), p
        ),
        lambda p: io.write_qrels(EXPECTED_QRELS, p, form="beir"),
        lambda p: io.write_json({"new": True}, p),
        lambda p: io.write_jsonl([{"_id": "x", "text": "y"}], p),
    ],
    ids=["run", "qrels", "json", "jsonl"],
)
def test_writers_failing_midway_keep_old_file(tmp_path, monkeypatch, write_new):
    path = write(tmp_path / "target", "old content\n")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    # the data has been written to the temporary file when fsync fails
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        write_new(path)
    assert path.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["target"]
    monkeypatch.undo()
    write_new(path)  # and it works once the disk has room
    assert path.read_text() != "old content\n"
    assert os.listdir(tmp_path) == ["target"]


def test_written_files_have_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        (tmp_path / "plain.txt").write_text("x")  # what open() gives under this umask
        io.write_json({"a": 1}, tmp_path / "a.json")
        io.write_run(
            pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]}),
            tmp_path / "run.trec",
        )
    finally:
        os.umask(old)
    for name in ("plain.txt", "a.json", "run.trec"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name  # 0666 & ~022


def test_atomic_path_serves_a_writer_that_opens_files_by_name(tmp_path):
    from ragnb.io.files import TEMP_SUFFIX, atomic_path

    path = write(tmp_path / "model.bin", "old\n")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(path) as tmp:
            assert tmp.parent == tmp_path and tmp.name.endswith(TEMP_SUFFIX)
            tmp.write_text("half")  # opened and closed by name, as a library's writer does
            raise RuntimeError("boom")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["model.bin"]
    with atomic_path(tmp_path / "new" / "model.bin") as tmp:
        with open(tmp, "wb") as f:
            f.write(b"weights")
    assert (tmp_path / "new" / "model.bin").read_bytes() == b"weights"
    assert os.listdir(tmp_path / "new") == ["model.bin"]


def test_atomic_write_creates_missing_folders(tmp_path):
    io.write_json([1], tmp_path / "a" / "b" / "c.json")
    assert json.loads((tmp_path / "a" / "b" / "c.json").read_text()) == [1]


# --------------------------------------------------------------------------- BEIR folders


def make_beir(root: Path, qrels: str = "query-id\tcorpus-id\tscore\nq1\td2\t1\n") -> Path:
    write(root / "corpus.jsonl", GOOD_DOC + '{"_id": "d2", "text": "second"}\n')
    write(root / "queries.jsonl", GOOD_QUERY + '{"_id": "q2", "text": "unjudged"}\n')
    write(root / "qrels" / "test.tsv", qrels)
    return root


def test_read_beir_small_folder(tmp_path):
    ds = io.read_beir(make_beir(tmp_path / "tiny"))
    assert (ds.name, ds.split, ds.meta) == ("tiny", "test", {})
    assert ds.corpus["doc_id"].tolist() == ["d1", "d2"]
    assert ds.queries["query_id"].tolist() == ["q1", "q2"]
    assert ds.judged_queries["query_id"].tolist() == ["q1"]
    assert ds.summary()["grades"] == {1: 1}


def test_read_beir_missing_folder_lists_parent(tmp_path):
    make_beir(tmp_path / "scifact")
    with pytest.raises(FileNotFoundError) as info:
        io.read_beir(tmp_path / "scifcat")
    msg = str(info.value)
    assert "scifcat" in msg and "'scifact'" in msg


@pytest.mark.parametrize("missing", ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"])
def test_read_beir_missing_file_lists_contents(tmp_path, missing):
    root = make_beir(tmp_path / "ds")
    (root / missing).unlink()
    with pytest.raises(FileNotFoundError) as info:
        io.read_beir(root)
    msg = str(info.value)
    assert missing in msg
    present = {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv"} - {missing}
    for name in present:
        assert name in msg.split("holds")[1]


def test_read_beir_unknown_split_lists_contents(tmp_path):
    root = make_beir(tmp_path / "ds")
    with pytest.raises(FileNotFoundError, match="dev.tsv.*qrels/test.tsv"):
        io.read_beir(root, split="dev")


def test_read_beir_qrels_query_missing_from_queries(tmp_path):
    root = make_beir(tmp_path / "ds", qrels="q1\td1\t1\nq9\td1\t1\n")
    with pytest.raises(InputError) as info:
        io.read_beir(root)
    e = info.value
    assert e.path == str(root / "qrels" / "test.tsv")
    assert e.query_id == "q9"
    assert "not in queries.jsonl" in str(e)


def test_read_beir_propagates_line_errors(tmp_path):
    root = make_beir(tmp_path / "ds")
    write(root / "corpus.jsonl", GOOD_DOC + '{"_id": "d1", "text": "again"}\n')
    raises_at(lambda p: io.read_beir(p.parent), root / "corpus.jsonl", 2, "duplicate _id")


def test_read_beir_recipe_is_meta(tmp_path):
    root = make_beir(tmp_path / "ds")
    io.write_json({"built_by": "hand"}, root / "recipe.json")
    assert io.read_beir(root).meta == {"built_by": "hand"}


def test_a_temporary_file_is_removed_only_when_its_writer_is_gone(tmp_path):
    # a killed write leaves ".<name>.<random>.ragnb.tmp"; a write in progress holds its lock
    with io.atomic_write(tmp_path / "busy.txt") as busy:
        busy.write("in progress")
        stale = tmp_path / ".done.txt.0a1b2c3d.ragnb.tmp"
        stale.write_text("half of a killed write")
        older = tmp_path / ".done.txt.x1y2z3.tmp"  # the form of earlier versions
        older.write_text("half")
        mine = tmp_path / ".notes.tmp"  # not ragnb's: never touched
        mine.write_text("a user's file")
        (tmp_path / "sub").mkdir()
        deep = tmp_path / "sub" / ".run.trec.k9k9k9k9.ragnb.tmp"
        deep.write_text("half")
        in_progress = [p.name for p in tmp_path.glob(".busy.txt.*.ragnb.tmp")]
        assert len(in_progress) == 1

        assert io.remove_stale_temporaries(tmp_path) == [stale]
        assert io.remove_stale_temporaries(tmp_path, recursive=True) == [deep]
        io.write_json({"a": 1}, tmp_path / "done.txt")  # the next write of a target cleans too
        assert not older.exists() and mine.exists()
        assert [p.name for p in tmp_path.glob(".busy.txt.*.ragnb.tmp")] == in_progress
        # another atomic write of the same target in the meantime leaves this one alone
        io.write_json({"b": 2}, tmp_path / "busy.txt")
        assert [p.name for p in tmp_path.glob(".busy.txt.*.ragnb.tmp")] == in_progress
    assert (tmp_path / "busy.txt").read_text() == "in progress"
    assert sorted(os.listdir(tmp_path)) == [".notes.tmp", "busy.txt", "done.txt", "sub"]
