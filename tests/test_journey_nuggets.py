"""Journey: nugget recall and alpha-nDCG from the command line, on the user's own files.

The installed ``ragnb`` command runs in a temporary folder outside the checkout on a qrels file,
a run, a folder of nugget files (as ``ragnb golden`` and notebook 02 write them) and TREC
diversity qrels that the test writes; every value below is worked out by hand on that data.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

RAGNB = Path(sys.executable).parent / "ragnb"

QRELS = "q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\nq3 0 d5 1\n"
RUN = (
    "q1 Q0 d1 1 3.0 mine\nq1 Q0 d2 2 2.0 mine\nq1 Q0 d9 3 1.0 mine\n"
    "q2 Q0 d4 1 3.0 mine\nq2 Q0 d3 2 2.0 mine\n"
    "q3 Q0 d5 1 1.0 mine\n"
)
NUGGETS = """query_id,nugget_id,text,importance,status
q1,n01,BM25 weighs term frequency against document length,vital,ok
q1,n02,nugget 2,okay,ok
q1,n03,Inverse document frequency discounts common terms,vital,ok
q2,n01,How do I sort a list in Python,vital,ok
q2,n02,sorted() returns a new list,vital,ok
"""
ASSIGNMENTS = """query_id,nugget_id,doc_id,label,status
q1,n01,d1,support,ok
q1,n02,d1,not_support,ok
q1,n03,d1,partial_support,ok
q1,n01,d2,not_support,ok
q1,n02,d2,support,ok
q1,n03,d2,support,ok
q2,n01,d4,support,ok
q2,n02,d4,not_support,ok
q2,n01,d3,not_support,ok
q2,n02,d3,partial_support,ok
"""
QUERIES = "query_id,text\nq1,what does BM25 weigh\nq2,how do I sort a list in Python?\nq3,x\n"

# TREC diversity qrels (qid subtopic docid rel): d1 is relevant to subtopics 1 and 2
DIVERSITY_QRELS = "1 1 d1 1\n1 2 d1 1\n1 1 d2 1\n1 3 d3 1\n1 2 d4 0\n2 1 d7 1\n"
DIVERSITY_RUN = (
    "1 Q0 d2 1 4.0 mine\n1 Q0 d1 2 3.0 mine\n1 Q0 d3 3 2.0 mine\n1 Q0 d4 4 1.0 mine\n"
    "2 Q0 d8 1 2.0 mine\n2 Q0 d7 2 1.0 mine\n"
)


def ragnb(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RAGNB), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def table(stdout: str) -> dict[str, tuple[float, int]]:
    """``{measure: (value, n_valid)}`` of ``ragnb evaluate``'s table."""
    rows = {}
    for line in stdout.splitlines():
        measure, _, value, n_valid = (f.strip() for f in line.split("\t"))
        rows[measure] = (float(value), int(n_valid.removeprefix("(n_valid=").rstrip(")")))
    return rows


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "nuggets.csv").write_text(NUGGETS)
    (tmp_path / "golden" / "nugget_assignments.csv").write_text(ASSIGNMENTS)
    (tmp_path / "queries.csv").write_text(QUERIES)
    return tmp_path


def test_nugget_recall_from_a_nugget_folder(folder: Path) -> None:
    measures = ["NuggetRecall@1", "NuggetRecall@3", "NuggetRecall(partial=0.5)@3"]
    measures += ["NuggetRecall(vital=1)@1", "P@1"]
    args = ["evaluate", "qrels.txt", "run.trec", "--nuggets", "golden", "--queries", "queries.csv"]
    done = ragnb(folder, *args, *(a for m in measures for a in ("-m", m)))
    assert done.returncode == 0, done.stderr
    values = table(done.stdout)
    # q1 (nuggets n01 n02 n03) top 1 = d1: n01 supported, n03 partly: 1/3; q2 top 1 = d4: 1/2
    assert values["NuggetRecall@1"][0] == pytest.approx((1 / 3 + 1 / 2) / 2, abs=5e-5)
    # top 3: q1 d1 d2 support all three: 1; q2 d4 d3: n01 supported, n02 partly: 1/2
    assert values["NuggetRecall@3"][0] == pytest.approx(0.75, abs=5e-5)
    assert values["NuggetRecall(partial=0.5)@3"][0] == pytest.approx((1 + 0.75) / 2, abs=5e-5)
    # vital only: q1 n01 of n01 n03, q2 n01 of n01 n02
    assert values["NuggetRecall(vital=1)@1"][0] == pytest.approx(0.5, abs=5e-5)
    # q3 has no nugget: left out of NuggetRecall's mean, still counted by P@1 (d1, d4, d5)
    assert {values[m][1] for m in measures[:4]} == {2}
    assert values["P@1"] == (pytest.approx(2 / 3, abs=5e-5), 3)
    err = done.stderr
    assert "2 of 3 queries have nuggets; NuggetRecall leaves the other 1 out of its mean" in err
    # the placeholder and the copy of the question are flagged, naming file, query and line
    assert "ragnb: warning: the nuggets may say nothing (2 findings of the nugget checks)" in err
    nuggets_csv = str(Path("golden") / "nuggets.csv")
    assert (
        f"  - {nuggets_csv}: 1 of 5 nuggets (20%, 1 query) are numbered or lettered "
        "placeholders: q1/n02 'nugget 2' (line 3)"
    ) in err
    assert (
        f"  - {nuggets_csv}: 1 of 5 nuggets (20%, 1 query) repeat their query's question: "
        "q2/n01 'How do I sort a list in Python' (line 5)"
    ) in err
    assert "what to do: Correct nuggets.csv" in err

    # the same verdict from Python
    from ragnb import evaluate, read_qrels, read_run
    from ragnb.io.nuggets import read_nugget_qrels

    result = evaluate(
        read_qrels(folder / "qrels.txt"),
        read_run(folder / "run.trec"),
        measures,
        nuggets=read_nugget_qrels(folder / "golden"),
    )
    for row in result.aggregate.itertuples(index=False):
        assert values[row.measure] == (pytest.approx(row.value, abs=5e-5), row.n_valid)
    assert result.counts["queries_with_nuggets"] == 2
    assert result.counts["queries_without_nuggets"] == 1


def test_nugget_recall_without_nuggets_says_which_option(folder: Path) -> None:
    done = ragnb(folder, "evaluate", "qrels.txt", "run.trec", "-m", "NuggetRecall@3")
    assert done.returncode == 2
    assert "NuggetRecall@3 needs nugget judgements" in done.stderr
    assert "ragnb evaluate --nuggets DIR" in done.stderr
    assert done.stdout == ""
    (folder / "golden" / "nugget_assignments.csv").unlink()
    done = ragnb(folder, "evaluate", "qrels.txt", "run.trec", "--nuggets", "golden")
    assert done.returncode == 2
    assert "nugget_assignments.csv: not found" in done.stderr


def test_alpha_ndcg_from_trec_diversity_qrels(tmp_path: Path) -> None:
    (tmp_path / "diversity.qrels").write_text(DIVERSITY_QRELS)
    (tmp_path / "run.trec").write_text(DIVERSITY_RUN)
    args = ["evaluate", "diversity.qrels", "run.trec", "-m", "alpha-nDCG@3", "-m", "P@1"]
    refused = ragnb(tmp_path, *args)
    # read as ordinary TREC qrels (second column: an iteration) d1 is judged twice
    assert refused.returncode == 2
    assert "diversity.qrels, line 2, query '1': duplicate judgement of doc 'd1'" in refused.stderr
    assert "--qrels-format diversity" in refused.stderr

    done = ragnb(tmp_path, *args, "--qrels-format", "diversity")
    assert done.returncode == 0, done.stderr
    values = table(done.stdout)
    # query 1, alpha 0.5: d2 gains 1 (subtopic 1), d1 0.5 + 1 (1 again, 2 new), d3 1 (3);
    # greedy ideal d1 (2), d3 (1), d2 (0.5)
    dcg = 1 + 1.5 / math.log2(3) + 1 / 2
    ideal = 2 + 1 / math.log2(3) + 0.5 / 2
    # query 2: d8 unjudged, d7 (1) at rank 2; ideal d7 first
    expected = (dcg / ideal + 1 / math.log2(3)) / 2
    assert values["alpha-nDCG@3"] == (pytest.approx(expected, abs=5e-5), 2)
    # the other measures read each document's largest grade: d2 relevant, d8 not
    assert values["P@1"] == (pytest.approx(0.5, abs=5e-5), 2)
