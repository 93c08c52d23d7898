"""A run file joined with its qrels as it is read (ragnb.io.runscan): the same arrays as the
general readers and prepare(), and None (the general path) for every file it does not read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragnb.errors import InputError
from ragnb.evaluation.trec_eval import run_trec_eval
from ragnb.frames.index import index_qrels
from ragnb.io.dispatch import read_qrels_file, read_run_file
from ragnb.measures import prepare
from ragnb.measures.kernel import prepare_ranked

runscan = pytest.importorskip("ragnb.io.runscan")  # numba, the fast extra

FIELDS = ("query_ids", "grades", "judged", "filled", "ideal", "n_judged", "n_retrieved")


def write_case(folder: Path, seed: int, n_queries: int = 40, depth: int = 30) -> tuple[Path, Path]:
    """A run with ties (scores on a coarse grid), scores of 17 significant digits and plain
    ones, queries not sorted, some without judgements, and qrels with queries not in the run."""
    rng = np.random.default_rng(seed)
    run_lines, qrels_lines = [], []
    for q in rng.permutation(n_queries):
        qid = f"q{q}"
        n = int(rng.integers(1, depth))
        docs = rng.choice(200, size=n, replace=False)
        for r, d in enumerate(docs):
            kind = rng.integers(3)
            if kind == 0:
                score = f"{rng.integers(5) / 4:.2f}"  # many ties
            elif kind == 1:
                score = repr(float(rng.normal()))  # up to 17 digits: the full parser
            else:
                score = f"{rng.normal() * 1e3:.6e}"
            run_lines.append(f"{qid} Q0 doc-{d} {r + 1} {score} tag{seed}\n")
        if q % 5 != 0:  # a fifth of the run's queries have no judgement
            judged = rng.choice(200, size=int(rng.integers(1, 25)), replace=False)
            qrels_lines += [f"{qid} 0 doc-{d} {rng.integers(-1, 4)}\n" for d in judged]
    qrels_lines += [f"zz{k} 0 doc-1 1\n" for k in range(3)]  # not in the run
    run, qrels = folder / "run.txt", folder / "qrels.txt"
    run.write_text("".join(run_lines))
    qrels.write_text("".join(qrels_lines))
    return qrels, run


def general(qrels: Path, run: Path):  # type: ignore[no-untyped-def]
    frame = read_qrels_file(qrels, as_trec_eval=True).frame
    read = read_run_file(run, as_trec_eval=True, rank=False)
    return prepare(frame, read.frame), read.tag


def scanned(qrels: Path, run: Path, **options: int):  # type: ignore[no-untyped-def]
    index = index_qrels(read_qrels_file(qrels, as_trec_eval=True).frame)
    found = runscan.scan_run(run, index, **options)
    also = runscan.scan_run(run, runscan.scan_qrels(qrels), **options)  # the qrels read so
    assert (found is None) == (also is None)
    if found is not None:
        np.testing.assert_array_equal(found.rank, also.rank)
        np.testing.assert_array_equal(found.n_retrieved, also.n_retrieved)
    if found is None:
        return None, None
    arrays = prepare_ranked(index, found.n_retrieved, found.rank, found.n_run_queries_without_qrels)
    return arrays, found


@pytest.mark.parametrize(
    "seed, options",
    [
        (0, {}),
        (1, {"block_bytes": 256}),  # queries across blocks, the block grown for long ones
        (2, {"block_bytes": 512, "part_bytes": 1024}),  # several parts, read by threads
        (3, {"block_bytes": 64, "part_bytes": 4096}),
    ],
)
def test_same_arrays_as_the_general_readers(tmp_path: Path, seed: int, options: dict) -> None:
    qrels, run = write_case(tmp_path, seed)
    expected, tag = general(qrels, run)
    arrays, found = scanned(qrels, run, **options)
    assert arrays is not None
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(arrays, name), getattr(expected, name), err_msg=name)
    assert (
        arrays.n_run_queries_without_qrels == expected.n_run_queries_without_qrels == 8
    )  # the queries q0, q5, ... q35
    assert found.n_run_queries == 40
    assert found.tag == tag == f"tag{seed}"


def test_scores_parsed_as_c_does(tmp_path: Path) -> None:
    """Scores of every syntax C's strtod reads, each one's rank among the others: exact
    (fast path) and full-parser values ordered as Python's correctly rounded float()."""
    texts = ["1", "-0", "0.1", ".5", "5.", "+2.5e-3", "1E2", "-1e-300", "0.30000000000000004",
             "0.3", "123456789012345678901234", "1e22", "1e23", "9007199254740993",
             "9007199254740992", "4.9e-324", "2.2250738585072014e-308", "-7.0E+0"]  # fmt: skip
    lines = [f"q Q0 d{k} {k} {t} t\n" for k, t in enumerate(texts)]
    (tmp_path / "run.txt").write_text("".join(lines))
    (tmp_path / "qrels.txt").write_text("".join(f"q 0 d{k} 1\n" for k in range(len(texts))))
    arrays, found = scanned(tmp_path / "qrels.txt", tmp_path / "run.txt")
    assert found is not None
    values = [float(t) for t in texts]
    # trec_eval's order: score descending, ties by id descending
    order = sorted(range(len(texts)), key=lambda k: (-values[k], [-ord(c) for c in f"d{k}"]))
    ranks = {k: r for r, k in enumerate(order)}
    index = index_qrels(read_qrels_file(tmp_path / "qrels.txt", as_trec_eval=True).frame)
    docs = [index.sort_docs()[0].get(int(row)) for row in index.queries.rows]
    assert [int(found.rank[p]) for p in range(len(docs))] == [ranks[int(d[1:])] for d in docs]


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5 t\nq2 Q0 a 1 1 t\nq1 Q0 c 3 0.1 t\n",  # q1 apart
        "q9 Q0 a 1 1.0 t\nq2 Q0 a 1 1 t\nq9 Q0 c 3 0.1 t\n",  # an unjudged query apart
        "q1 Q0 a 1 1.0 t\nq1 Q0 a 2 0.5 t\n",  # a pair twice
        "q1 Q0 b 1 1.0 t\nq1 Q0 b 2 0.5 t\n",  # an unjudged pair twice
        "q1 Q0 a 1 1.0 t extra\n",  # a seventh field
        "q1 Q0 a 1 1.0\n",  # five fields
        "q1\tQ0 a 1 1.0 t\n",  # a tab
        "q1 Q0  a 1 1.0 t\n",  # two spaces
        "q1 Q0 a 1 1.0 t\r\n",  # a carriage return
        "# comment\nq1 Q0 a 1 1.0 t\n",  # a comment line
        "q1 Q0 a 1 abc t\n",  # not a number (trec_eval's atof reads 0)
        "q1 Q0 a 1 1e999 t\n",  # not finite
        "q1 Q0 a 1 nan t\n",
        "q1 Q0 é 1 1.0 t\n",  # not ASCII
        "q1 Q0 a-long-document-id\x7fx 1 1.0 t\n",  # DEL, past the first eight bytes
        "q1 Q0 a-long-document-id\x01x 1 1.0 t\n",  # a control character
        "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5 a-long-tag\x0bx\n",  # a vertical tab in the tag
        "q1 Q0 a 1 1.5x t\n",  # a number followed by text
        "q1 Q0 a 1 1e t\n",  # an exponent without digits
        "q1 Q0 a 1 1.0 t\n\nq2 Q0 a 1 1 t\n",  # an empty line
        "",  # nothing
    ],
)
def test_files_left_to_the_general_readers(tmp_path: Path, text: str) -> None:
    (tmp_path / "run.txt").write_text(text)
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq2 0 a 1\n")
    index = index_qrels(read_qrels_file(tmp_path / "qrels.txt", as_trec_eval=True).frame)
    assert runscan.scan_run(tmp_path / "run.txt", index, block_bytes=16) is None


def test_qrels_index_as_index_qrels_builds_it(tmp_path: Path) -> None:
    qrels, _ = write_case(tmp_path, 5)
    expected = index_qrels(read_qrels_file(qrels, as_trec_eval=True).frame)
    found = runscan.scan_qrels(qrels)
    assert found is not None
    index = found.index
    assert index.queries.ids.tolist() == expected.queries.ids.tolist()
    for name in ("rows", "starts"):
        np.testing.assert_array_equal(getattr(index.queries, name), getattr(expected.queries, name))
    np.testing.assert_array_equal(index.grades, expected.grades)
    np.testing.assert_array_equal(found.offsets, expected.docs.offsets)
    np.testing.assert_array_equal(found.data, expected.docs.data)
    np.testing.assert_array_equal(index.by_doc, expected.by_doc)


@pytest.mark.parametrize(
    "text",
    [
        "q1 0 a 1\nq1 0 a 2\n",  # a pair twice
        "q1 0 a 1\nq2 0 b 1\nq1 0 a 0\n",  # a pair twice, lines apart
        "# comment\nq1 0 a 1\n",
        "q1\t0 a 1\n",
        "q1 0 a 1 extra\n",
        "q1 0 a +1\n",  # the general readers read the grade
        "q1 0 a 1.5\n",
        "q1 0 a 1234567890123456789\n",  # past int64's digits
        "q1 0 a 1\n\n",
        "",
    ],
)
def test_qrels_left_to_the_general_readers(tmp_path: Path, text: str) -> None:
    (tmp_path / "qrels.txt").write_text(text)
    assert runscan.scan_qrels(tmp_path / "qrels.txt") is None


def test_a_query_apart_across_parts(tmp_path: Path) -> None:
    """Each part alone is well formed; together they hold a query twice."""
    half = "".join(f"q1 Q0 d{k} {k} 1.0 t\n" for k in range(200))
    other = "".join(f"q2 Q0 d{k} {k} 1.0 t\n" for k in range(200))
    (tmp_path / "run.txt").write_text(half + other + half.replace(" d", " e"))
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    index = index_qrels(read_qrels_file(tmp_path / "qrels.txt", as_trec_eval=True).frame)
    size = len(half + other) + len(half)
    # two parts of 4096 bytes or more, cut where a query starts: each part well formed
    assert runscan._parts(tmp_path / "run.txt", 3, 4096) == [
        (0, len(half + other)),
        (len(half + other), size),
    ]
    assert runscan.scan_run(tmp_path / "run.txt", index, part_bytes=4096) is None


def test_trec_eval_output_equals_the_general_path(tmp_path: Path) -> None:
    """``ragnb trec-eval`` on a run file of more than a megabyte (the scanned path) prints
    what it prints with ``-M`` above every query's length (the general readers and join)."""
    rng = np.random.default_rng(7)
    lines, qlines = [], []
    for q in range(1200):
        scores = np.round(rng.random(100), 3)  # ties
        lines += [f"topic{q} Q0 D{(q * 31 + d) % 997} {d + 1} {s} run7\n" for d, s in
                  enumerate(scores)]  # fmt: skip
        qlines += [f"topic{q} 0 D{(q * 31 + d) % 997} {int(rng.integers(0, 3))}\n"
                   for d in range(0, 100, 7)]  # fmt: skip
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("".join(lines))
    qrels.write_text("".join(qlines))
    assert run.stat().st_size > 1 << 20  # past the size the Python readers take
    for args in (["-m", "all_trec"], ["-q", "-m", "ndcg_cut.10", "-m", "map"]):
        fast, _ = run_trec_eval([*args, str(qrels), str(run)])
        slow, _ = run_trec_eval([*args, "-M", "1000", str(qrels), str(run)])
        assert fast == slow
    with qrels.open("a") as f:
        f.write("missing 0 D1 1\n")
    fast, _ = run_trec_eval(["-c", "-q", "-m", "num_q", "-m", "map", str(qrels), str(run)])
    slow, _ = run_trec_eval(
        ["-c", "-q", "-m", "num_q", "-m", "map", "-M", "1000", str(qrels), str(run)]
    )
    assert fast == slow
    assert "map                   \tmissing\t0.0000" in fast
    with pytest.raises(InputError, match="query 'missing' of the qrels is not in the run"):
        run_trec_eval(["-m", "map", str(qrels), str(run)])
