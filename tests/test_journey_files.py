"""Journeys on files from another tool: TREC and BEIR qrels, TREC runs, through the installed
``ragnb`` command run from a folder outside the repository, and the Python API on the same files.

Each test makes the user's files in a temporary folder, runs ``ragnb`` there and checks what the
user looks at: the numbers, the exit status and the words on the console.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ragnb
import ragnb.io
from ragnb.errors import InputError
from ragnb.measures import ra_nwg

RAGNB = Path(sys.executable).parent / "ragnb"
N_QUERIES, N_DOCS = 20, 30


def run_ragnb(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ragnb ARGS`` as a user types it in ``folder``."""
    return subprocess.run(
        [str(RAGNB), *args], cwd=folder, capture_output=True, text=True, timeout=600
    )


def _write_run(path: Path, scores: np.ndarray, tag: str, skip: int = 0) -> None:
    """A TREC run of the top 10 of each query but the last ``skip`` queries."""
    lines = []
    for q in range(scores.shape[0] - skip):
        for rank, d in enumerate(np.argsort(-scores[q])[:10], start=1):
            lines.append(f"q{q} Q0 d{d} {rank} {scores[q, d]:.6f} {tag}\n")
    path.write_text("".join(lines))


@pytest.fixture
def user_files(tmp_path: Path) -> Path:
    """The files a user brings from another tool: BEIR qrels (header line, grades 0-2), the
    same qrels in TREC form, two TREC runs (the second lacks two queries)."""
    rng = np.random.default_rng(7)
    grades = np.where(
        rng.random((N_QUERIES, N_DOCS)) < 0.15, rng.integers(1, 3, (N_QUERIES, N_DOCS)), 0
    )
    grades[:, 0] = 2
    rows = [(q, d, int(grades[q, d])) for q in range(N_QUERIES) for d in range(12)]
    (tmp_path / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{q}\td{d}\t{g}\n" for q, d, g in rows)
    )
    (tmp_path / "qrels.trec").write_text("".join(f"q{q} 0 d{d} {g}\n" for q, d, g in rows))
    signal = (grades > 0).astype(float)
    _write_run(tmp_path / "bm25.trec", signal * 0.6 + rng.random((N_QUERIES, N_DOCS)), "bm25")
    dense = signal * 1.5 + rng.random((N_QUERIES, N_DOCS))
    _write_run(tmp_path / "dense.trec", dense, "dense", skip=2)
    return tmp_path


def _table(stdout: str) -> dict[str, float]:
    """``ragnb evaluate``'s lines ``NAME  all  VALUE  (n_valid=N)`` as ``{NAME: VALUE}``."""
    out = {}
    for line in stdout.splitlines():
        name, qid, value, *_ = line.split("\t")
        if qid == "all":
            out[name.strip()] = float(value)
    return out


def test_files_from_another_tool_evaluate_trec_eval_compare(user_files: Path) -> None:
    folder = user_files
    got = run_ragnb(folder, "evaluate", "qrels.tsv", "bm25.trec", "-m", "nDCG@10", "-m", "P@5")
    assert got.returncode == 0, got.stderr
    table = _table(got.stdout)
    assert list(table) == ["nDCG@10", "P@5"]
    # the Python API on the same files gives the same numbers
    qrels, run = ragnb.read_qrels(folder / "qrels.tsv"), ragnb.read_run(folder / "bm25.trec")
    api = ragnb.evaluate(qrels, run, ["nDCG@10", "P@5"]).aggregate_to_dict()
    assert table == pytest.approx({k: round(v, 4) for k, v in api.items()}, abs=1e-9)
    assert table == {"nDCG@10": 0.6302, "P@5": 0.31}  # the numbers docs/journeys.md shows
    # trec_eval's names and format on the TREC form of the same qrels: the same nDCG@10
    te = run_ragnb(folder, "trec-eval", "-m", "ndcg_cut.10", "-m", "P.5", "qrels.trec", "bm25.trec")
    assert te.returncode == 0, te.stderr
    lines = dict(line.split("\t")[0::2] for line in te.stdout.splitlines())
    assert float(lines["ndcg_cut_10           "]) == table["nDCG@10"]
    assert float(lines["P_5                   "]) == table["P@5"]
    # a run that lacks queries: a note under evaluate's table, and above compare's
    short = run_ragnb(folder, "evaluate", "qrels.tsv", "dense.trec", "-m", "nDCG@10")
    assert short.returncode == 0
    assert "note: 2 qrels queries absent from the run scored 0" in short.stderr
    cmp = run_ragnb(
        folder, "compare", "qrels.tsv", "--run", "bm25=bm25.trec", "--run", "dense=dense.trec",
        "-m", "nDCG@10", "--resamples", "500",
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    assert "dense (dense.trec): 2 of the qrels' 20 queries absent from the run, scored 0" in (
        cmp.stderr
    )
    assert "bm25 (bm25.trec)" not in cmp.stderr  # it has every query
    api_cmp = ragnb.compare(
        {"bm25": run, "dense": ragnb.read_run(folder / "dense.trec")},
        ["nDCG@10"],
        qrels=qrels,
        n_resamples=500,
    )
    row = api_cmp.pairs.iloc[0]
    assert f"{row['difference']:.4f}" in cmp.stdout and f"{row['p_value']:.4f}" in cmp.stdout


def _bad_files(folder: Path) -> None:
    """The bad inputs a user meets, beside good ones."""
    (folder / "runs").mkdir()
    (folder / "empty.trec").write_text("")
    (folder / "dup.trec").write_text(
        "q0 Q0 d0 1 3.0 t\nq0 Q0 d1 2 2.0 t\nq0 Q0 d0 3 1.0 t\nq1 Q0 d0 1 1.0 t\n"
    )
    (folder / "header.tsv").write_text("query-id\tcorpus-id\tscore\n")
    (folder / "other.trec").write_text("x1 Q0 d0 1 1.0 t\nx2 Q0 d0 1 1.0 t\n")
    (folder / "grades13.trec").write_text("q0 0 d0 1\nq0 0 d1 3\nq1 0 d0 2\n")


# (case, command line, exit status, words in stderr)
BAD = [
    ("folder run", ["evaluate", "qrels.tsv", "runs"], ["runs: a folder, not a file"]),
    ("folder run", ["trec-eval", "qrels.trec", "runs"], ["runs: a folder, not a file"]),
    (
        "folder run",
        ["compare", "qrels.tsv", "--run", "a=runs", "--run", "b=bm25.trec"],
        ["runs: a folder, not a file"],
    ),
    ("folder qrels", ["evaluate", "runs", "bm25.trec"], ["runs: a folder, not a file"]),
    ("folder qrels", ["trec-eval", "runs", "bm25.trec"], ["runs: a folder, not a file"]),
    ("empty run", ["evaluate", "qrels.tsv", "empty.trec"], ["empty.trec: the file holds no"]),
    ("empty run", ["trec-eval", "qrels.trec", "empty.trec"], ["empty.trec: the file holds no"]),
    (
        "empty run",
        ["compare", "qrels.tsv", "--run", "a=empty.trec", "--run", "b=bm25.trec"],
        ["empty.trec: the file holds no"],
    ),
    ("duplicate", ["evaluate", "qrels.tsv", "dup.trec"], ["dup.trec, line 3", "'d0'"]),
    ("duplicate", ["trec-eval", "qrels.trec", "dup.trec"], ["dup.trec, line 3", "'d0'"]),
    (
        "duplicate",
        ["compare", "qrels.tsv", "--run", "a=dup.trec", "--run", "b=bm25.trec"],
        ["dup.trec, line 3", "(first on line 1)"],
    ),
    ("header only", ["evaluate", "header.tsv", "bm25.trec"], ["header.tsv, line 1", "header"]),
    ("empty qrels", ["trec-eval", "empty.trec", "bm25.trec"], ["empty.trec: the file holds no"]),
    ("no shared query", ["evaluate", "qrels.tsv", "other.trec"], ["other.trec", "share no query"]),
    ("no shared query", ["trec-eval", "qrels.trec", "other.trec"], ["other.trec", "share no"]),
    (
        "no shared query",
        ["compare", "qrels.tsv", "--run", "a=other.trec", "--run", "b=bm25.trec"],
        ["other.trec", "share no query id"],
    ),
    ("1-3 grades", ["evaluate", "grades13.trec", "bm25.trec", "-m", "RA-nWG@10"], ["not 1-5"]),
    ("empty -Z", ["trec-eval", "-Z", "/dev/null", "qrels.trec", "bm25.trec"], ["zscores file"]),
]


@pytest.mark.parametrize(("case", "argv", "words"), BAD, ids=[f"{c}-{a[0]}" for c, a, _ in BAD])
def test_bad_input_is_an_error_naming_the_file(
    user_files: Path, case: str, argv: list[str], words: list[str]
) -> None:
    _bad_files(user_files)
    got = run_ragnb(user_files, *argv)
    assert got.returncode == 2, (got.stdout, got.stderr)
    assert got.stderr.startswith("ragnb: error: ")
    assert "Traceback" not in got.stderr
    for word in words:
        assert word in got.stderr
    assert got.stdout == ""


def test_the_python_api_gives_the_same_verdicts(user_files: Path) -> None:
    folder = user_files
    _bad_files(folder)
    qrels = ragnb.read_qrels(folder / "qrels.tsv")
    with pytest.raises(InputError, match="a folder, not a file") as info:
        ragnb.read_run(folder / "runs")
    assert info.value.path == str(folder / "runs")
    with pytest.raises(InputError, match="holds no rankings") as info:
        ragnb.read_run(folder / "empty.trec")
    with pytest.raises(InputError, match="duplicate entry for doc 'd0'") as info:
        ragnb.read_run(folder / "dup.trec")
    assert info.value.line == 3
    with pytest.raises(InputError, match="no judgements"):
        ragnb.evaluate(ragnb.read_qrels(folder / "header.tsv"), qrels, ["P@5"])
    grades13 = ragnb.read_qrels(folder / "grades13.trec")
    run = ragnb.read_run(folder / "bm25.trec")
    for call in (
        lambda: ragnb.evaluate(grades13, run, ["RA-nWG@10"]),
        lambda: ra_nwg(grades13, run, 10),
    ):
        with pytest.raises(InputError, match="not 1-5"):
            call()
    # frames sharing no query id: the same error as the command's, not a table of zeros
    with pytest.raises(InputError, match="share no query id"):
        ragnb.evaluate(qrels, ragnb.read_run(folder / "other.trec"), ["P@5"])


def test_trec_eval_help_and_judged_only_nan(user_files: Path) -> None:
    folder = user_files
    got = run_ragnb(folder, "trec-eval", "-h")
    assert got.returncode == 0
    assert got.stdout.startswith("Usage: ragnb trec-eval [-h]")
    assert "-J, --Judged_docs_only" in got.stdout
    # q1 retrieves only unjudged documents: with -J its ranking is empty, and trec_eval 10.0
    # reads precision 0/0 at recall 0
    (folder / "unjudged.trec").write_text("q0 Q0 d0 1 2.0 t\nq0 Q0 d1 2 1.0 t\nq1 Q0 zz 1 1.0 t\n")
    (folder / "two.trec").write_text("q0 0 d0 1\nq0 0 d1 0\nq1 0 d0 1\n")
    te = run_ragnb(folder, "trec-eval", "-q", "-J", "-m", "iprec_at_recall.0,1", "two.trec",
                   "unjudged.trec")  # fmt: skip
    assert te.returncode == 0, te.stderr
    assert te.stdout == (
        "iprec_at_recall_0.00  \tq0\t1.0000\n"
        "iprec_at_recall_1.00  \tq0\t1.0000\n"
        "iprec_at_recall_0.00  \tq1\t  -nan\n"
        "iprec_at_recall_1.00  \tq1\t0.0000\n"
        "iprec_at_recall_0.00  \tall\t  -nan\n"
        "iprec_at_recall_1.00  \tall\t0.5000\n"
    )


def test_compare_says_what_runs_lack_and_explains_its_table(user_files: Path) -> None:
    folder = user_files
    got = run_ragnb(
        folder, "compare", "qrels.tsv", "--run", "bm25=bm25.trec", "--run", "dense=dense.trec",
        "-m", "nDCG@10", "-m", "R@100", "--resamples", "500", "--target-effect", "0.05",
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    out = got.stdout
    # the comparison table: letters, rank intervals, tie groups, the means with superscripts
    header = out.splitlines()[0].split()
    assert header == ["#", "system", "rank", "tie_group", "nDCG@10", "R@100"]
    assert "dense (dense.trec): 2 of the qrels' 20 queries absent from the run, scored 0" in (
        got.stderr
    )
    legend = out[out.index("legend:") :]
    for word in ("#", "superscript", "rank", "tie_group", "tied_with", "difference", "ci_low",
                 "p_adjusted", "holm", "n_dropped", "mde_t", "mde_simulated",
                 "queries_needed_t", "--target-effect 0.05"):  # fmt: skip
        assert word in legend, word
    assert "mde_t" in out[: out.index("legend:")]  # the power table is printed


@pytest.mark.parametrize("name", ["map", "AP", "MAP"])
def test_measures_print_under_the_name_asked_for(user_files: Path, name: str) -> None:
    got = run_ragnb(user_files, "evaluate", "qrels.tsv", "bm25.trec", "-m", name, "--per-query")
    assert got.returncode == 0, got.stderr
    names = {line.split("\t")[0].strip() for line in got.stdout.splitlines()}
    assert names == {name}
    qrels = ragnb.read_qrels(user_files / "qrels.tsv")
    run = ragnb.read_run(user_files / "bm25.trec")
    result = ragnb.evaluate(qrels, run, [name])
    assert result.labels == (name,)  # the name asked for; the tables say AP
    assert result.aggregate["measure"].tolist() == ["AP"]
    assert _table(got.stdout)[name] == round(result.aggregate_to_dict()["AP"], 4)


def test_the_readers_are_reachable_from_ragnb_io() -> None:
    assert ragnb.io.read_run is ragnb.read_run
    assert ragnb.io.read_qrels is ragnb.read_qrels
    assert ragnb.io.read_beir is ragnb.read_beir
    assert ragnb.io.write_run is ragnb.write_run
    assert ragnb.io.write_qrels is ragnb.write_qrels
