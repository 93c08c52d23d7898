"""Streaming evaluation of run files (ragnb.evaluation.streaming): equal to the in-memory path."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.evaluation.streaming import evaluate_file
from ragnb.io.columnar import iter_query_blocks
from ragnb.io.readers import read_qrels, read_run

MEASURES = ["nDCG@10", "P@10", "R@100", "MAP", "MRR", "NumRet", "NumRelRet"]


@pytest.fixture(scope="module")
def scifact_files(scifact_path, tmp_path_factory):
    """A real SciFact BM25 top-100 run: sorted TREC, shuffled TREC, shuffled parquet, qrels."""
    folder = tmp_path_factory.mktemp("stream")
    trec = folder / "run.trec"
    code = main(
        ["retrieve", "--dataset", str(scifact_path), "--retriever", "bm25", "-k", "100"]
        + ["--out", str(trec)]
    )
    assert code == 0
    run = read_run(trec)
    # a run query without qrels, and a qrels query left out of the run
    qrels = read_qrels(scifact_path / "qrels" / "test.tsv")
    dropped = run["query_id"].iloc[0]
    run = run[run["query_id"] != dropped]
    extra = pd.DataFrame(
        {"query_id": "zz-no-qrels", "doc_id": ["d1", "d2"], "score": [2.0, 1.0], "rank": [1, 2]}
    )
    run = pd.concat([run, extra.assign(tag="x")], ignore_index=True)
    shuffled = run.sample(frac=1.0, random_state=7).reset_index(drop=True)
    files = {"sorted": folder / "sorted.trec", "shuffled": folder / "shuffled.trec"}
    for name, frame in (("sorted", run), ("shuffled", shuffled)):
        lines = [
            f"{q} Q0 {d} {r} {s!r} {t}"
            for q, d, r, s, t in frame[["query_id", "doc_id", "rank", "score", "tag"]].itertuples(
                index=False
            )
        ]
        files[name].write_text("\n".join(lines) + "\n")
    files["parquet"] = folder / "shuffled.parquet"
    shuffled.drop(columns="tag").to_parquet(files["parquet"])
    files["parquet_sorted"] = folder / "sorted.parquet"
    run.drop(columns="tag").to_parquet(files["parquet_sorted"])
    return qrels, run, files


@pytest.mark.parametrize("kind", ["sorted", "shuffled", "parquet", "parquet_sorted"])
def test_streaming_equals_in_memory_on_scifact_bm25(scifact_files, kind):
    qrels, run, files = scifact_files
    expected = evaluate(qrels, run, MEASURES)
    got = evaluate_file(qrels, files[kind], MEASURES, block_rows=997)
    # per-query values bit-identical, same ids in the same order; aggregate equal
    assert got.per_query["query_id"].tolist() == expected.per_query["query_id"].tolist()
    assert got.per_query["measure"].tolist() == expected.per_query["measure"].tolist()
    np.testing.assert_array_equal(got.per_query["value"], expected.per_query["value"])
    pd.testing.assert_frame_equal(got.aggregate, expected.aggregate)
    assert got.counts == expected.counts
    assert got.counts["queries_missing_from_run"] == 1
    assert got.counts["run_queries_without_qrels"] >= 1


def test_file_order_and_rank_warning_as_in_memory(scifact_files):
    qrels, run, files = scifact_files
    # ranks reversed: order="file" reads them, order="score" warns once as evaluate does
    flipped = run.assign(rank=run.groupby("query_id")["rank"].transform(lambda r: r.max() + 1 - r))
    path = files["parquet"].with_name("flipped.parquet")
    flipped.sample(frac=1.0, random_state=3).drop(columns="tag").to_parquet(path)
    for order in ("file", "score"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            expected = evaluate(qrels, flipped, MEASURES, order=order)
            got = evaluate_file(qrels, path, MEASURES, order=order, block_rows=3000)
        if order == "file":
            assert not caught  # no rank warning under order="file"
        else:
            assert len(caught) == 2 and str(caught[0].message) == str(caught[1].message)
        np.testing.assert_array_equal(got.per_query["value"], expected.per_query["value"])
        assert got.counts == expected.counts


def test_blocks_never_split_a_query(scifact_files):
    _, run, files = scifact_files
    seen: set[str] = set()
    sizes = []
    for block in iter_query_blocks(files["parquet_sorted"], 150):
        qids = set(block["query_id"])
        assert not qids & seen  # a query appears in one block only
        seen |= qids
        sizes.append(len(block))
        assert len(block) < 150 + 100  # at most block_rows plus one query's rows
    assert seen == set(run["query_id"]) and sum(sizes) == len(run)
    assert len(sizes) > 100


def test_bad_trec_line_names_file_and_line(tmp_path, scifact_files):
    qrels, _, files = scifact_files
    lines = files["sorted"].read_text().splitlines()
    lines[41] = lines[41].replace(" Q0 ", " ")  # five columns: trec_eval rejects it too
    bad = tmp_path / "bad.trec"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        evaluate_file(qrels, bad, ["P@10"], block_rows=500)
    assert "bad.trec" in str(err.value) and "line 42" in str(err.value)
    assert "expected 6 columns" in str(err.value)
    lines = files["sorted"].read_text().splitlines()
    lines[7] = lines[7].rsplit(" ", 2)[0] + " nan x"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 8.*NaN|NaN.*line 8"):
        evaluate_file(qrels, bad, ["P@10"])


def test_duplicate_pair_and_ungrouped_parquet_errors(tmp_path, scifact_files):
    qrels, run, files = scifact_files
    lines = files["sorted"].read_text().splitlines()
    bad = tmp_path / "dup.trec"
    bad.write_text("\n".join([*lines, lines[3]]) + "\n")
    with pytest.raises(InputError) as err:
        evaluate_file(qrels, bad, ["P@10"])
    assert f"line {len(lines) + 1}" in str(err.value) and "first on line 4" in str(err.value)
    missing = tmp_path / "noscore.parquet"
    run[["query_id", "doc_id"]].to_parquet(missing)
    with pytest.raises(InputError, match="no 'score' column"):
        evaluate_file(qrels, missing, ["P@10"])


def test_cli_stream_flag_matches_in_memory(scifact_files, capsys):
    _, _, files = scifact_files
    qrels_path = files["sorted"].parent / "qrels.tsv"
    qrels, _, _ = scifact_files
    qrels.to_csv(qrels_path, sep="\t", index=False, header=["query-id", "corpus-id", "score"])
    outs = []
    for extra in ([], ["--stream"]):
        code = main(
            ["evaluate", str(qrels_path), str(files["shuffled"]), "-m", "nDCG@10", "-m", "P@10"]
            + ["--format", "json", *extra]
        )
        assert code == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]


PLAIN_RUN = "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d1 1 0.25 tag\nq2 Q0 d3 2 -1e-3 last\n"

# each variant holds the plain run's rows in a layout the fast parser declines
RUN_LAYOUTS = {
    "plain": PLAIN_RUN,
    "tabs": PLAIN_RUN.replace(" ", "\t"),
    "double spaces": PLAIN_RUN.replace(" Q0 ", "  Q0  "),
    "trailing space": PLAIN_RUN.replace("\n", " \n"),
    "a comment": "# a comment line\n" + PLAIN_RUN,
    "a seventh column": PLAIN_RUN.replace("tag\n", "tag more\n"),
    "blank lines": PLAIN_RUN.replace("\n", "\n\n"),
    "CRLF line ends": PLAIN_RUN.replace("\n", "\r\n"),
    "no final line end": PLAIN_RUN.rstrip("\n"),
    "gzipped": PLAIN_RUN,
}


@pytest.mark.parametrize("layout", list(RUN_LAYOUTS))
def test_columnar_run_reader_reads_every_layout_as_read_run(layout, tmp_path):
    import gzip

    from ragnb.io.columnar import read_run_columnar

    path = tmp_path / ("run.txt.gz" if layout == "gzipped" else "run.txt")
    text = RUN_LAYOUTS[layout]
    if layout == "gzipped":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read_run's note on the seventh column
        expected = read_run(path)
    frame, info = read_run_columnar(path)
    assert frame["query_id"].astype(str).tolist() == ["q1", "q1", "q2", "q2"]
    assert frame["query_id"].astype(str).tolist() == expected["query_id"].astype(str).tolist()
    assert frame["doc_id"].astype(str).tolist() == expected["doc_id"].astype(str).tolist()
    assert frame["score"].tolist() == expected["score"].tolist() == [2.5, 1.5, 0.25, -1e-3]
    assert frame["rank"].tolist() == [1, 2, 1, 2]
    assert info["tag"] == "last"
    assert info["extra_text_lines"] == (3 if layout == "a seventh column" else 0)
    assert pa.types.is_dictionary(frame["query_id"].dtype.pyarrow_dtype)  # a code per row
    # the documents: as pyarrow's CSV reader parsed them (a plain file), else dictionary-coded
    doc_type = frame["doc_id"].dtype.pyarrow_dtype
    plain = layout in ("plain", "CRLF line ends", "no final line end")
    assert pa.types.is_string(doc_type) if plain else pa.types.is_dictionary(doc_type)


@pytest.fixture(scope="module")
def blocks_run(tmp_path_factory):
    """A plain run of several of the streaming reader's 4 MiB blocks (120,000 lines)."""
    lines = [f"q{i // 100:05d} Q0 doc{i:07d} {i % 100 + 1} {1 - (i % 100) / 100} t\n"
             for i in range(120_000)]  # fmt: skip
    path = tmp_path_factory.mktemp("blocks") / "run.txt"
    path.write_text("".join(lines))
    return path, lines


@pytest.mark.parametrize(
    "bad", [None, "q01199 Q0 doc9 1 inf t\n", "q01199 Q0 d\x0cx 1 0.5 t\n", "#x Q0 d 1 0.5 t\n"]
)
def test_columnar_run_reader_checks_every_block(blocks_run, bad, tmp_path):
    import threading

    from ragnb.io.columnar import read_run_columnar

    path, lines = blocks_run
    if bad is not None:  # the last block holds a line the general readers must read
        path = tmp_path / "bad.txt"
        path.write_text("".join(lines) + bad)
    threads = threading.active_count()
    read = read_run_columnar(path, duckdb=False)
    assert threading.active_count() == threads  # the reading thread is done
    if bad is not None:
        assert read is None
        return
    assert read is not None
    frame, info = read
    docs = pa.array(frame["doc_id"].array)
    assert isinstance(docs, pa.ChunkedArray) and docs.num_chunks > 1
    assert frame["doc_id"].tolist() == [line.split()[2] for line in lines]
    assert frame["query_id"].astype(str).tolist() == [line.split()[0] for line in lines]
    assert frame["score"].tolist() == [float(line.split()[4]) for line in lines]
    assert info == {"tag": "t", "extra_text_lines": 0}


def test_columnar_qrels_reader_reads_plain_qrels_and_names_a_duplicates_lines(tmp_path):
    from ragnb.io.columnar import read_qrels_columnar

    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\n")
    frame, extra = read_qrels_columnar(path)
    assert extra == 0
    assert frame["doc_id"].astype(str).tolist() == ["d1", "d2", "d1"]
    assert frame["relevance"].tolist() == [2, 0, 1]
    path.write_text("q1 0 d1 2\nq1 0 d2 0\nq1 0 d1 1\n")
    with pytest.raises(InputError, match=r"line 3") as err:
        read_qrels_columnar(path)
    assert "qrels.txt" in str(err.value)


def test_columnar_run_reader_rejects_a_bad_line_with_its_file_and_line(tmp_path):
    from ragnb.io.columnar import read_run_columnar

    path = tmp_path / "run.txt"
    path.write_text(PLAIN_RUN + "q3 Q0 d1 1\n")
    with pytest.raises(InputError, match=r"line 5") as err:
        read_run_columnar(path)
    assert "run.txt" in str(err.value)


def test_the_reader_thread_stops_when_its_caller_stops_with_the_queue_full():
    """A caller that leaves after the first block (a block failing its checks) while the
    reader thread waits on a full queue: the thread is let go, the reader closed, nothing
    read to the end."""
    import threading

    from ragnb.io import columnar

    class Reader:
        def __init__(self) -> None:
            self.read, self.closed = 0, False

        def __iter__(self):
            for i in range(1000):
                self.read += 1
                yield i

        def close(self) -> None:
            self.closed = True

    reader = Reader()
    blocks = columnar._in_thread(reader)
    assert next(blocks) == 0
    for thread in threading.enumerate():  # the reader fills the queue, then waits
        if thread.name == "ragnb-csv":
            while reader.read < columnar._BLOCKS_AHEAD + 1:
                pass
    blocks.close()
    assert reader.closed
    assert reader.read <= columnar._BLOCKS_AHEAD + 3
    assert not [t for t in threading.enumerate() if t.name == "ragnb-csv"]
