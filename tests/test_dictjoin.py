"""The dict-run join by look-ups (ragnb.frames.index) gives the arrays of the general path.

``prepare(qrels_dict, run_dict)`` takes the look-up path; the same dicts as frames take the
general one (ids converted, sorted and merged). Random runs with many tied scores, unicode ids
(multi-byte, shared prefixes longer than 8 bytes, lone surrogates), empty and missing queries,
run queries without qrels, and depth caps must give equal arrays; inputs the look-up path does
not take (non-str ids, non-dict queries, an empty judged id, file order) must still give the
general path's results and errors.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ragnb.errors import InputError
from ragnb.frames.index import index_qrels, joined_ranks
from ragnb.frames.schema import qrels_from_dict, run_from_dict
from ragnb.measures import prepare

ALPHABETS = [
    list("abc"),
    ["doc-", "é", "日本", "\U0001f600", "a" * 9],
    ["<dbpedia:", "<dbpedia:x", "\ud800", "z"],
]


def _random_dicts(rng: np.random.Generator, alphabet: list[str], n_queries: int):
    def ident() -> str:
        return "".join(rng.choice(alphabet, size=rng.integers(1, 5)))

    qrels: dict = {}
    run: dict = {}
    for i in range(n_queries):
        pool = list(dict.fromkeys(ident() for _ in range(60)))
        qid = f"q{rng.integers(0, 3 * n_queries)}-{i}"
        if rng.random() < 0.85:
            judged = rng.choice(pool, size=min(len(pool), int(rng.integers(1, 25))), replace=False)
            qrels[qid] = {str(d): int(rng.integers(-1, 4)) for d in judged}
        if rng.random() < 0.9:
            k = int(rng.integers(0, len(pool) + 1))
            docs = rng.choice(pool, size=k, replace=False)
            # few distinct scores: many ties, some of them between judged documents
            scores = rng.integers(0, 6, size=k) / 2.0
            run[qid] = {str(d): float(s) for d, s in zip(docs, scores, strict=True)}
    run["only-in-run"] = {"a": 1.0}
    return qrels, run


def _assert_same(got, want) -> None:
    for f in dataclasses.fields(want):
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f.name)
            assert a.dtype == b.dtype, f.name
        else:
            assert a == b, f.name


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("depth", [None, 1, 7])
def test_lookup_join_equals_the_general_path(seed, depth):
    rng = np.random.default_rng(seed)
    qrels, run = _random_dicts(rng, ALPHABETS[seed % 3], n_queries=60)
    q_index = index_qrels(qrels)
    ranks = joined_ranks(run, q_index)
    # the look-up path applies: one rank per judged document the run retrieved
    assert ranks is not None
    retrieved = sum(len(set(docs) & set(qrels.get(q, {}))) for q, docs in run.items())
    assert int((ranks.rank >= 0).sum()) == retrieved > 0
    want = prepare(qrels_from_dict(qrels), run_from_dict(run), depth=depth)
    _assert_same(prepare(qrels, run, depth=depth), want)


def test_ties_with_judged_documents_follow_trec_eval_order():
    # every score ties: the order is doc_id descending (d, c, b, a)
    qrels = {"q": {"a": 3, "c": 1, "e": 2}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, "r": {"x": 1.0}}
    arrays = prepare(qrels, run)
    assert arrays.grades.tolist() == [[0, 1, 0, 3]]
    assert arrays.judged.tolist() == [[False, True, False, True]]
    assert arrays.n_retrieved.tolist() == [4] and arrays.n_run_queries_without_qrels == 1


@pytest.mark.parametrize(
    "qrels, run",
    [
        ({"q": {"7": 1, "b": 1}}, {"q": {7: 0.5, "b": 0.5, "c": 0.9}}),  # an int id: as str
        ({"q": {"": 1, "b": 1}}, {"q": {"": 0.5, "b": 0.2}}),  # an empty judged id
        ({"q": {"a": 1}}, {"q": {"a": 1, "b": True}}),  # int and bool scores
        ({"q": {"a": 1}}, {7: {"a": 0.3}, "q": {"a": 0.1, "z": 0.2}}),  # an int query id
        ({"q": {"a": 1}, "r": {"b": 2}}, {"q": {}, "s": {}}),  # nothing retrieved
    ],
)
def test_inputs_outside_the_lookup_path_give_the_general_results(qrels, run):
    want = prepare(qrels_from_dict(qrels), run_from_dict(run))
    _assert_same(prepare(qrels, run), want)


def test_run_ids_of_a_str_subclass_give_the_general_results():
    qrels = {"q": {"a": 1, "b": 2, "c": 0}}
    run = {"q": {np.str_(d): s for d, s in [("a", 0.5), ("b", 0.5), ("x", 0.7), ("c", 0.1)]}}
    want = prepare(qrels_from_dict(qrels), run_from_dict(run))
    _assert_same(prepare(qrels, run), want)
    assert prepare(qrels, run).grades.tolist() == [[0, 2, 1, 0]]  # ties: b before a


def test_errors_are_the_general_paths():
    qrels = {"q": {"a": 1}}
    with pytest.raises(InputError, match="duplicate"):
        prepare(qrels, {"q": {7: 0.5, "7": 0.4}})
    with pytest.raises(InputError, match="NaN"):
        prepare(qrels, {"q": {"a": float("nan")}})
    with pytest.raises(InputError, match="not a number"):
        prepare(qrels, {"q": {"a": "high"}})


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"q": {"b": float("nan"), "a": 0.1}}, "score of 'b' is NaN"),  # not judged
        ({"q": {"b": float("inf"), "a": 0.1}}, "score of 'b' is not finite: inf"),
        ({"q": {"a": float("-inf")}}, "score of 'a' is not finite: -inf"),  # judged
    ],
)
def test_a_score_not_finite_is_named_as_the_general_path_names_it(run, message):
    with pytest.raises(InputError, match=message):
        prepare({"q": {"a": 1}}, run)


def test_a_run_of_equal_scores_takes_the_general_path_with_its_results():
    """Every judged document tied with every other: comparing each with its whole group would
    be quadratic, so the look-up path declines and the general path sorts the ids."""
    qrels = {f"q{i}": {f"d{j:04d}": j % 3 for j in range(0, 2000, 4)} for i in range(3)}
    run = {f"q{i}": {f"d{j:04d}": 0.0 for j in range(2000)} for i in range(3)}
    assert joined_ranks(run, index_qrels(qrels)) is None
    got = prepare(qrels, run)
    _assert_same(got, prepare(qrels_from_dict(qrels), run_from_dict(run)))
    # trec_eval's order: ids descending, d1999, d1998, d1997 (not judged), then d1996 (grade 1)
    assert got.grades[0, :5].tolist() == [0, 0, 0, 1, 0]
    assert got.judged[0, :5].tolist() == [False, False, False, True, False]
