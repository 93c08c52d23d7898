"""Dictionary-coded runs (ragnb.frames.index.index_coded_run / join_coded) give the string path's
arrays.

A run whose ``doc_id`` is categorical or of an arrow dictionary type (as the columnar TREC reader
gives it) is joined with its qrels as integer codes. Random runs with tied scores, unicode ids,
rows not grouped by query, numeric-looking query ids, a rank column, file order, depth caps and
chunks with dictionaries of their own must give the arrays, counts and errors of the same run with
plain string ids.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from ranking_arrays import assert_same_arrays

from ragnb.errors import InputError
from ragnb.frames.index import index_coded_run, sorted_codes
from ragnb.measures import prepare
from ragnb.measures.kernel import query_rows

IDS = ["a", "b", "ab", "é", "日本", "\U0001f600", "<dbpedia:x", "<dbpedia:xy", "z" * 10]


def _random_case(rng: np.random.Generator, shuffled: bool, numeric_queries: bool):
    rows = []
    for q in range(25):
        qid = str(q) if numeric_queries else f"q{q}"
        docs = rng.choice(IDS, size=int(rng.integers(0, len(IDS))), replace=False)
        scores = rng.integers(0, 4, len(docs)).astype(float)  # many ties
        rows += [(qid, str(d), s, r + 1) for r, (d, s) in enumerate(zip(docs, scores, strict=True))]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    if shuffled:
        run = run.sample(frac=1, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)
    judged = []
    for q in range(28):  # three queries missing from the run
        qid = str(q) if numeric_queries else f"q{q}"
        for d in rng.choice([*IDS, "unretrieved"], size=int(rng.integers(1, 6)), replace=False):
            judged.append((qid, str(d), int(rng.integers(-1, 4))))
    return run, pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])


def _arrow_coded(run: pd.DataFrame, n_chunks: int) -> pd.DataFrame:
    """``run`` with both id columns as arrow dictionaries, ``n_chunks`` chunks of their own."""
    out = run.copy()
    bounds = np.linspace(0, len(run), n_chunks + 1).astype(int)
    for col in ("query_id", "doc_id"):
        values = run[col].to_numpy(dtype=object)
        chunks = [
            pa.array(values[lo:hi], pa.string()).dictionary_encode()
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        coded = pa.chunked_array(chunks, pa.dictionary(pa.int32(), pa.string()))
        out[col] = pd.Series(coded, dtype=pd.ArrowDtype(coded.type))
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", ["score", "file"])
def test_coded_runs_give_the_string_paths_arrays(seed, order):
    rng = np.random.default_rng(seed)
    run, qrels = _random_case(rng, shuffled=seed % 2 == 1, numeric_queries=seed >= 2)
    categorical = run.assign(doc_id=run["doc_id"].astype("category"))
    for depth in (None, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the rank column disagrees with the scores
            expected = prepare(qrels, run, order=order, depth=depth)
            for coded in (categorical, _arrow_coded(run, 1), _arrow_coded(run, 3)):
                assert index_coded_run(coded, order) is not None
                assert_same_arrays(expected, prepare(qrels, coded, order=order, depth=depth))
    assert expected.n_rank_disagreements > 0  # the rank column was compared


def test_ids_equal_as_str_are_one_id_and_a_duplicate_is_named():
    run = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": pd.Categorical([7, "7", "b"]), "score": 1.0}
    )
    with pytest.raises(InputError, match=r"query 'q1'.*duplicate.*'7'"):
        prepare({"q1": {"7": 1}}, run)
    arrow = _arrow_coded(pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "a"]}), 2)
    with pytest.raises(InputError, match=r"duplicate.*'a'"):
        prepare({"q1": {"a": 1}}, arrow.assign(score=[1.0, 2.0]))


def test_sorted_codes_orders_ids_by_code_point_across_chunk_dictionaries():
    chunks = [
        pa.array(["é", "b", "é"]).dictionary_encode(),
        pa.array(["a", "\U0001f600", "b"]).dictionary_encode(),
    ]
    coded = sorted_codes(list(chunks))
    values = [v.decode() for v in coded.dictionary.to_pylist()]
    assert values == sorted({"é", "b", "a", "\U0001f600"})  # Python's str order
    assert [values[i] for i in coded.indices.to_pylist()] == ["é", "b", "é", "a", "\U0001f600", "b"]


def test_a_categorical_with_missing_ids_is_left_to_the_checks():
    run = pd.DataFrame(
        {"query_id": ["q1", "q1"], "doc_id": pd.Categorical(["a", None]), "score": [1.0, 2.0]}
    )
    assert index_coded_run(run, "score") is None
    with pytest.raises(InputError, match="has no doc_id"):
        prepare({"q1": {"a": 1}}, run)


def test_measures_on_blocks_of_queries_equal_the_whole():
    from ragnb.measures import parse_measures

    rng = np.random.default_rng(5)
    run, qrels = _random_case(rng, shuffled=False, numeric_queries=False)
    arrays = prepare(qrels, run)
    blocks = [query_rows(arrays, lo, lo + 4) for lo in range(0, arrays.n_queries, 4)]
    for m in parse_measures(["nDCG@3", "AP", "bpref", "infAP", "RR", "Rprec", "P@5"]):
        whole = m.compute(arrays)
        assert np.array_equal(np.concatenate([m.compute(b) for b in blocks]), whole), m.name
