"""The reader dispatcher (ragnb.io.dispatch): which reader reads a run or qrels file."""

from __future__ import annotations

import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.io import dispatch
from ragnb.io.dispatch import (
    file_format,
    iter_run_blocks,
    open_run,
    read_in_blocks,
    read_qrels_file,
    read_run_file,
)
from ragnb.io.files import write_parquet, write_ranx_run
from ragnb.io.readers import read_qrels, read_run

RUN = "q1 Q0 d2 1 3.0 sys\nq1 Q0 d1 2 2.0 sys\nq2 Q0 d4 1 0.9 last\n"
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq2 0 d4 1\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "qrels").write_text(QRELS)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("-", "stdin"),
        ("run.trec", "trec"),
        ("run.trec.gz", "trec"),
        ("run.json", "json"),
        ("run.json.gz", "json"),
        ("run.lz4", "lz4"),
        ("run.parquet", "parquet"),
        ("RUN.PQ", "parquet"),
    ],
)
def test_file_format_by_name(name, kind):
    assert file_format(name) == kind


def test_blocks_for_stream_parquet_and_size(files, monkeypatch):
    run = files / "run.trec"
    assert not read_in_blocks(run)
    assert read_in_blocks(run, stream=True)
    assert read_in_blocks(files / "run.parquet")
    monkeypatch.setattr(dispatch, "STREAM_ABOVE_BYTES", len(RUN) - 1)
    assert read_in_blocks(run)
    assert open_run(run).streamed and open_run(run).frame is None


def test_trec_run_in_memory_with_its_last_tag(files):
    run = read_run_file(files / "run.trec")
    assert run.tag == "last" and run.notes == ()
    expected = read_run(files / "run.trec")
    for col in ("query_id", "doc_id"):
        assert run.frame[col].astype(str).tolist() == expected[col].tolist()
    assert run.frame["score"].tolist() == expected["score"].tolist()


def test_extra_text_is_a_note(files, monkeypatch):
    path = files / "extra.trec"
    path.write_text(RUN.replace("3.0 sys", "3.0 sys more"))
    pytest.importorskip("pyarrow")
    # a small file: the Python reader, which names the first line
    assert read_run_file(path).notes == (
        f"{path}: 1 line(s) carry text after the sixth column (first on line 1); it is ignored, "
        "as trec_eval ignores it",
    )
    pytest.importorskip("duckdb")
    monkeypatch.setattr(dispatch, "PYTHON_READS_BYTES", 0)  # DuckDB's count
    assert read_run_file(path).notes == (
        f"{path}: 1 line(s) carry text after the sixth column; it is ignored, as trec_eval "
        "ignores it",
    )


def test_a_small_file_that_pyarrow_does_not_take_is_read_without_duckdb(files, monkeypatch):
    path = files / "tabs.trec"
    path.write_text(RUN.replace(" ", "\t"))
    qrels = files / "qrels.tabs"
    qrels.write_text("# judged\n" + QRELS)
    columnar = pytest.importorskip("ragnb.io.columnar")

    def no_duckdb(module: str) -> None:
        raise AssertionError(f"{module} started")

    monkeypatch.setattr(columnar, "require", no_duckdb)
    run = read_run_file(path)
    assert run.tag == "last" and run.frame["doc_id"].tolist() == ["d2", "d1", "d4"]
    assert read_qrels_file(qrels).frame["relevance"].tolist() == [2, 1, 1]
    monkeypatch.setattr(dispatch, "PYTHON_READS_BYTES", 0)  # a large file: DuckDB reads it
    with pytest.raises(AssertionError, match="duckdb started"):
        read_run_file(path)


def test_qrels_in_memory(files):
    qrels = read_qrels_file(files / "qrels")
    pd.testing.assert_frame_equal(
        qrels.frame.astype({"query_id": object, "doc_id": object}),
        read_qrels(files / "qrels"),
    )


def test_ranx_and_parquet_runs_in_memory(files):
    pytest.importorskip("pyarrow")
    frame = read_run(files / "run.trec")
    write_ranx_run(frame, files / "run.json")
    write_parquet(frame[["query_id", "doc_id", "score"]], files / "run.parquet")
    assert read_run_file(files / "run.json").frame["score"].tolist() == [3.0, 2.0, 0.9]
    parquet = read_run_file(files / "run.parquet")
    assert parquet.tag is None
    assert parquet.frame["doc_id"].tolist() == ["d2", "d1", "d4"]


def test_trec_eval_reads_trec_runs_only(files):
    write_ranx_run(read_run(files / "run.trec"), files / "run.json")
    with pytest.raises(InputError, match="trec_eval 10.0 reads TREC runs"):
        read_run_file(files / "run.json", as_trec_eval=True)


def test_an_ungrouped_parquet_run_is_read_again_grouped(files):
    pytest.importorskip("duckdb")
    frame = read_run(files / "run.trec").iloc[[0, 2, 1]]  # q1, q2, q1: not grouped
    write_parquet(frame[["query_id", "doc_id", "score"]], files / "mixed.parquet")
    items = list(iter_run_blocks(files / "mixed.parquet", 1))
    restart = items.index(None)
    after = [b.query_ids for b in items[restart + 1 :]]
    assert sorted(q for ids in after for q in ids) == ["q1", "q2"]
