"""Runs whose document ids are arrow strings in chunks (ragnb.frames.index.index_string_run /
join_strings, as the columnar TREC reader gives them) give the arrays of the same run with
Python string ids.

Random runs with tied scores, unicode ids, scores out of order within a query, a rank column,
file order, depth caps, chunk boundaries inside queries and both arrow string types; repeated
documents (within a chunk and across a boundary) named; runs whose queries are not consecutive
handed to the dictionary-coded path. Each case runs on the compiled kernels and on their
plain-Python copy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from ranking_arrays import assert_same_arrays

from ragnb.errors import InputError
from ragnb.frames import groupsort, index
from ragnb.frames.index import index_coded_run, index_string_run, with_coded_docs
from ragnb.measures import prepare

IDS = ["a", "b", "ab", "é", "日本", "\U0001f600", "<dbpedia:x", "<dbpedia:xy", "z" * 10, ""]


@pytest.fixture(params=["compiled", "plain"])
def kernels(request, monkeypatch):
    """Which kernels join the runs: numba's, or the plain-Python copy of the module."""
    module = groupsort if request.param == "compiled" else index.plain_kernels()
    monkeypatch.setattr(index, "kernels", lambda n_rows=None: module)
    return module


def _random_case(rng: np.random.Generator, shuffled: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for q in range(25):
        docs = rng.choice(IDS, size=int(rng.integers(1, len(IDS))), replace=False)
        scores = rng.integers(0, 4, len(docs)).astype(float)  # many ties
        if not shuffled:  # as runs are written: by score descending
            scores = -np.sort(-scores)
        rows += [
            (f"q{q}", str(d), s, r + 1) for r, (d, s) in enumerate(zip(docs, scores, strict=True))
        ]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    judged = []
    for q in range(28):  # three queries missing from the run
        for d in rng.choice([*IDS, "unretrieved"], size=int(rng.integers(1, 6)), replace=False):
            judged.append((f"q{q}", str(d), int(rng.integers(-1, 4))))
    return run, pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])


def _arrow_strings(run: pd.DataFrame, n_chunks: int, large: bool = False) -> pd.DataFrame:
    """``run`` with ``doc_id`` as arrow strings in ``n_chunks`` chunks (a query may straddle)."""
    kind = pa.large_string() if large else pa.string()
    bounds = np.linspace(0, len(run), n_chunks + 1).astype(int)
    values = run["doc_id"].to_numpy(dtype=object)
    chunks = [pa.array(values[lo:hi], kind) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    return run.assign(doc_id=pd.Series(pa.chunked_array(chunks, kind), dtype=pd.ArrowDtype(kind)))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", ["score", "file"])
def test_string_runs_give_the_arrays_of_python_strings(kernels, seed, order):
    rng = np.random.default_rng(seed)
    run, qrels = _random_case(rng, shuffled=seed % 2 == 1)
    for columns in (list(run.columns), ["query_id", "doc_id", "score"]):
        plain = run[columns]
        for depth in (None, 3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the rank column disagrees with the scores
                expected = prepare(qrels, plain, order=order, depth=depth)
                for n_chunks, large in ((1, False), (3, True), (7, False)):
                    strings = _arrow_strings(plain, n_chunks, large)
                    assert index_string_run(strings, order) is not None
                    got = prepare(qrels, strings, order=order, depth=depth)
                    assert_same_arrays(expected, got)
    assert expected.n_rank_disagreements == 0  # no rank column in the last case
    # the run's own ties: the case had some, and they are broken by doc id descending
    assert run.duplicated(["query_id", "score"]).any()


def test_tied_scores_are_ordered_by_doc_id_descending(kernels):
    run = pd.DataFrame(
        {
            "query_id": ["q1"] * 5,
            "doc_id": ["d1", "d3", "d10", "d2", "é"],
            "score": [1.0, 2.0, 2.0, 2.0, 0.5],
        }
    )
    qrels = pd.DataFrame({"query_id": ["q1"] * 5, "doc_id": ["d1", "d3", "d10", "d2", "é"],
                          "relevance": [1, 2, 3, 4, 5]})  # fmt: skip
    arrays = prepare(qrels, _arrow_strings(run, 2))
    # score 2.0: d3 > d2 > d10 (bytes, descending), then d1 (1.0), then é (0.5)
    assert arrays.grades.tolist() == [[2, 4, 3, 1, 5]]


@pytest.mark.parametrize("n_chunks", [1, 2])
def test_a_repeated_document_is_named_within_a_chunk_and_across_chunks(kernels, n_chunks):
    run = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["a", "b", "c", "c"], "score": 1.0}
    )
    with pytest.raises(InputError, match=r"query 'q2'.*duplicate.*'c'"):
        prepare({"q1": {"a": 1}, "q2": {"c": 1}}, _arrow_strings(run, n_chunks))
    straddling = run.assign(doc_id=["a", "c", "b", "a"], query_id="q1")  # rows 0 and 3 repeat
    with pytest.raises(InputError, match=r"query 'q1'.*duplicate.*'a'"):
        prepare({"q1": {"a": 1}}, _arrow_strings(straddling, n_chunks))


def test_queries_not_consecutive_take_the_other_paths(kernels):
    run = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q1", "q2"],
            "doc_id": ["a", "b", "c", "a"],
            "score": [1.0, 2.0, 3.0, 2.0],
        }
    )
    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "a"], "relevance": [1, 2]})
    strings = _arrow_strings(run, 2)
    assert index_string_run(strings, "score") is None
    assert index_coded_run(with_coded_docs(strings), "score") is not None  # the ids coded
    assert_same_arrays(prepare(qrels, run), prepare(qrels, strings))


def test_the_columnar_readers_run_gives_read_runs_arrays(tmp_path):
    from ragnb.io.columnar import read_run_columnar
    from ragnb.io.readers import read_run

    rng = np.random.default_rng(7)
    run, qrels = _random_case(rng, shuffled=True)
    run = run[run["doc_id"] != ""]  # an empty field is not a TREC line
    path = tmp_path / "run.txt"
    path.write_text(
        "".join(f"{q} Q0 {d} {r} {s} tag\n" for q, d, s, r in run.itertuples(index=False))
    )
    read = read_run_columnar(path, duckdb=False)
    assert read is not None
    frame = read[0]
    assert index_string_run(frame, "score") is not None  # the documents as parsed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rank column disagrees with the scores
        assert_same_arrays(prepare(qrels, read_run(path)), prepare(qrels, frame))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_plain_byte_string_kernels_give_the_compiled_outputs(seed):
    """Without numba, common_prefix, prefixes and doc_order are numpy and ``sorted`` on bytes:
    the same outputs as the compiled loops (shared prefixes, empty and repeated strings)."""
    plain = index.plain_kernels()
    rng = np.random.default_rng(seed)
    pool = [s.encode() for s in IDS]
    pool += [b"<dbpedia:" + bytes([c]) * k for c in b"ab" for k in (1, 9)]
    for shared in (b"", b"<dbpedia:"):
        strings = [shared + pool[i] for i in rng.integers(0, len(pool), 300)]
        data = np.frombuffer(b"".join(strings), dtype=np.uint8)
        offsets = np.concatenate(([0], np.cumsum([len(s) for s in strings]))).astype(np.int64)
        skip = groupsort.common_prefix(data, offsets)
        assert plain.common_prefix(data, offsets) == skip
        prefix = groupsort.prefixes(data, offsets, skip)
        assert np.array_equal(plain.prefixes(data, offsets, skip), prefix)
        rows = np.arange(len(strings), dtype=np.int64)
        starts = np.array([0, 1, 40, 41, 200, 300], dtype=np.int64)
        outputs = []
        for module in (groupsort, plain):
            out, dup = np.empty_like(rows), np.empty(len(starts) - 1, dtype=np.int64)
            n_groups = len(starts) - 1
            module.doc_order(rows, starts, data, offsets, prefix, skip, out, dup, 0, n_groups)
            outputs.append((out, dup))
        assert np.array_equal(outputs[0][0], outputs[1][0])
        assert np.array_equal(outputs[0][1], outputs[1][1])
        assert (outputs[0][1][[1, 3, 4]] >= 0).all()  # the larger groups hold a string twice
