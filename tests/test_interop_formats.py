"""What users bring from other tools: ranx JSON/LZ4 runs and qrels (both ways, exact, on a real
SciFact BM25 run), pyterrier and ir_datasets frames and namedtuples, ``ragnb evaluate`` on
ranx files, and the Markdown/LaTeX comparison table checked against ranx's report.

Every test on the SciFact run also runs on the SciFact-like case the repository carries
(``tests/data/oracle/scifact-like``, its ``bm25`` run), so that it runs without ``../shared``.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import oracle_data
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import qrels_to_dict, run_to_dict
from ragnb.io import interop
from ragnb.io.files import read_beir, write_qrels, write_ranx_qrels, write_ranx_run, write_run
from ragnb.io.readers import read_qrels, read_run
from ragnb.retrievers.retrieve import make_retriever
from ragnb.stats import compare, comparison_table, significance_markers

ranx = pytest.importorskip("ranx")

RAGNB = Path(sys.executable).parent / "ragnb"
MEASURES = {"nDCG@10": "ndcg@10", "P@5": "precision@5", "RR": "mrr"}


def reverse_top(run: pd.DataFrame, k: int, every: int = 1) -> pd.DataFrame:
    """Each ``every``-th query's top ``k`` in reverse order (scores rewritten)."""
    out = run.copy()
    queries = sorted(out["query_id"].unique())[::every]
    top = (out["rank"] <= k) & out["query_id"].isin(queries)
    out.loc[top, "score"] = 1000.0 + out.loc[top, "rank"]
    return out.drop(columns=["rank"])


# What each source's data make of the tests below: more queries than ``untied`` without tied
# scores; the system ``rev_2_some`` (the top 2 of every ``every``-th query reversed: p between 0.1
# and 0.5 against bm25); at least ``clear`` cells of the comparison whose p-values are clear of
# alpha; the letters of bm25's nDCG@10; the Markdown and LaTeX rows of bm25 and of its top 10
# reversed.
EXPECTED = {
    "shared": {
        "untied": 200,
        "every": 30,
        "clear": 10,
        "letters": "cd",
        "md": ("| a | bm25\\_a | **0.6791**<sup>b</sup> |", "| b | rev 10% & more | 0.2588 |"),
        "tex": (
            r"a & bm25\_a & \textbf{0.679}$^{b}$ &",
            r"b & rev 10\% \& more & 0.259\hphantom{$^{a}$} &",
        ),
    },
    "carried": {  # 51 queries, 1 to 4 relevant documents each, mostly 1
        "untied": 10,
        "every": 2,
        "clear": 8,
        "letters": "d",  # reversing the top 2 of every query is not significant here
        "md": ("| a | bm25\\_a | **0.5870**<sup>b</sup> |", "| b | rev 10% & more | 0.2879 |"),
        "tex": (
            r"a & bm25\_a & \textbf{0.587}$^{b}$ &",
            r"b & rev 10\% \& more & 0.288\hphantom{$^{a}$} &",
        ),
    },
}


@pytest.fixture(scope="module", params=["shared", "carried"])
def scifact(request):
    """The qrels, a BM25 top-100 run and the qrels file (TREC or BEIR) of SciFact (``shared``)
    or of the SciFact-like case the repository carries (``carried``)."""
    if request.param == "carried":
        return {
            "qrels": oracle_data.qrels("scifact-like"),
            "run": oracle_data.run("scifact-like"),
            "qrels_file": oracle_data.qrels_path("scifact-like"),
            "expected": EXPECTED["carried"],
        }
    path = request.getfixturevalue("scifact_path")
    data = read_beir(path)
    retriever = make_retriever("bm25")
    retriever.index(data.corpus)
    run = retriever.retrieve(data.judged_queries, k=100)
    return {
        "qrels": data.qrels,
        "run": run,
        "qrels_file": path / "qrels" / "test.tsv",
        "expected": EXPECTED["shared"],
    }


def _ranx_order(path: Path) -> dict[str, list[str]]:
    """Each query's documents in a JSON file's order."""
    return {q: list(docs) for q, docs in json.loads(path.read_text()).items()}


# --------------------------------------------------------------------------------- ranx files


def test_ranx_writes_ragnb_reads_exactly(scifact, tmp_path):
    run, qrels = scifact["run"], scifact["qrels"]
    expected_run, expected_qrels = run_to_dict(run), qrels_to_dict(qrels)
    ranx.Run.from_dict(expected_run, name="bm25").save(str(tmp_path / "run.json"))
    ranx.Run.from_dict(expected_run).save(str(tmp_path / "run.lz4"))
    ranx.Qrels.from_dict(expected_qrels).save(str(tmp_path / "qrels.json"))
    for name in ("run.json", "run.lz4"):
        got = read_run(tmp_path / name)
        assert list(got.columns) == ["query_id", "doc_id", "score"]
        assert got["score"].dtype == np.float64
        assert run_to_dict(got) == expected_run  # float equality: bit-exact scores
    got_qrels = read_qrels(tmp_path / "qrels.json")
    assert got_qrels["relevance"].dtype == np.int64
    assert qrels_to_dict(got_qrels) == expected_qrels
    assert len(got_qrels) == len(qrels)


def test_ragnb_writes_ranx_reads_exactly(scifact, tmp_path):
    run, qrels = scifact["run"], scifact["qrels"]
    write_run(run, tmp_path / "run.json")  # dispatch on the name
    write_ranx_run(run, tmp_path / "run.json.gz")
    write_ranx_run(run, tmp_path / "run.lz4")
    write_qrels(qrels, tmp_path / "qrels.json")
    expected = run_to_dict(run)
    for name in ("run.json", "run.lz4"):
        assert ranx.Run.from_file(str(tmp_path / name)).to_dict() == expected
    assert json.loads(gzip.decompress((tmp_path / "run.json.gz").read_bytes())) == expected
    assert run_to_dict(read_run(tmp_path / "run.json.gz")) == expected
    assert ranx.Qrels.from_file(str(tmp_path / "qrels.json")).to_dict() == qrels_to_dict(qrels)

    # the same bytes as ranx's own save, up to the order of tied scores (ranx's sort is unstable)
    ranx.Run.from_dict(expected).save(str(tmp_path / "ranx.json"))
    ours, theirs = tmp_path / "run.json", tmp_path / "ranx.json"
    assert ours.stat().st_size == theirs.stat().st_size
    ordered = sort_run(run, warn=False).run
    tied = set(ordered.loc[ordered.duplicated(["query_id", "score"]), "query_id"])
    ours_order, theirs_order = _ranx_order(ours), _ranx_order(theirs)
    assert list(ours_order) == list(theirs_order)
    untied = [q for q in ours_order if q not in tied]
    assert len(untied) > scifact["expected"]["untied"]
    assert all(ours_order[q] == theirs_order[q] for q in untied)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('["q1"]', "expected a JSON object"),
        ('{"q1": [1, 2]}', "expected an object"),
        ('{"q1": {"d1": "high"}}', "not a number"),
        ('{"q1": {"d1": NaN}}', "not finite"),
        ('{"q1": {"d1": 1e999}}', "not finite"),
        ('{"q1": {"d1": 1.0, "d1": 2.0}}', "appears twice"),
        ('{"q1": {"d 1": 1.0}}', "white space"),
        ('{"q1": {"d1": 1.0}', "malformed JSON"),
    ],
)
def test_bad_ranx_run(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match=match) as err:
        read_run(path)
    assert "bad.json" in str(err.value)


def test_bad_ranx_qrels_and_writes(tmp_path):
    path = tmp_path / "qrels.json"
    path.write_text('{"q1": {"d1": 1.0, "d2": 0}, "q2": {"d3": 1.5}}')
    with pytest.raises(InputError, match="not an integer") as err:
        read_qrels(path)
    assert err.value.query_id == "q2"
    path.write_text('{"q1": {"d1": 1.0, "d2": 0}}')
    assert read_qrels(path)["relevance"].tolist() == [1, 0]
    inf = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [np.inf]})
    with pytest.raises(InputError, match="not finite"):
        write_ranx_run(inf, tmp_path / "inf.json")
    assert not (tmp_path / "inf.json").exists()
    with pytest.raises(InputError, match="unknown qrels form"):
        write_qrels(read_qrels(path), tmp_path / "q.txt", form="csv")


def test_cli_evaluate_on_ranx_json(scifact, tmp_path):
    run = scifact["run"]
    write_run(run, tmp_path / "run.trec", tag="bm25")
    write_ranx_run(run, tmp_path / "run.json")
    write_ranx_qrels(scifact["qrels"], tmp_path / "qrels.json.gz")
    trec_qrels = str(scifact["qrels_file"])

    def ragnb_evaluate(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(RAGNB), "evaluate", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    trec = ragnb_evaluate(trec_qrels, str(tmp_path / "run.trec"), "-m", "nDCG@10", "-m", "R@100")
    assert trec.returncode == 0, trec.stderr
    assert "nDCG@10" in trec.stdout
    ranx_files = [str(tmp_path / "qrels.json.gz"), str(tmp_path / "run.json")]
    got = ragnb_evaluate(*ranx_files, "-m", "nDCG@10", "-m", "R@100")
    assert got.returncode == 0, got.stderr
    assert got.stdout == trec.stdout
    (tmp_path / "broken.json").write_text('{"q1": {"d1": "x"}}')
    proc = ragnb_evaluate(trec_qrels, str(tmp_path / "broken.json"))
    assert proc.returncode != 0
    assert "broken.json" in proc.stderr and "not a number" in proc.stderr


# ------------------------------------------------------------------ pyterrier and ir_datasets


def test_pyterrier_round_trip(scifact):
    run, qrels = scifact["run"], scifact["qrels"]
    queries = pd.DataFrame({"query_id": ["1", "3"], "text": ["first", "third"]})
    pt_run = interop.to_pyterrier_run(run, queries=queries)
    assert list(pt_run.columns) == ["qid", "docno", "score", "rank", "query"]
    first = pt_run[pt_run["qid"] == pt_run["qid"].iloc[0]]
    assert first["rank"].tolist() == list(range(len(first)))  # pyterrier ranks from 0
    assert first["score"].is_monotonic_decreasing
    assert set(pt_run.loc[pt_run["qid"] == "1", "query"]) == {"first"}
    back = interop.from_pyterrier_run(pt_run)
    assert run_to_dict(back) == run_to_dict(run)
    assert back["rank"].min() == 1

    pt_qrels = interop.to_pyterrier_qrels(qrels)
    assert list(pt_qrels.columns) == ["qid", "docno", "label"]
    assert qrels_to_dict(interop.from_pyterrier_qrels(pt_qrels)) == qrels_to_dict(qrels)
    ints = pd.DataFrame({"qid": [1, 2], "docno": [10, 20], "label": [1.0, 0.0]})
    assert interop.from_pyterrier_qrels(ints)["query_id"].tolist() == ["1", "2"]


@pytest.mark.parametrize(
    ("frame", "kind", "match"),
    [
        (pd.DataFrame({"qid": ["q"], "score": [1.0]}), "run", "no column 'docno'"),
        (pd.DataFrame({"qid": ["q"], "docno": ["d"]}), "run", "no column 'score'"),
        (pd.DataFrame({"qid": ["q"], "docno": ["d"], "score": ["x"]}), "run", "numeric"),
        (pd.DataFrame({"qid": [1.5], "docno": ["d"], "score": [1.0]}), "run", "qid 1.5"),
        (
            pd.DataFrame({"qid": ["q"], "docno": ["d"], "score": [1.0], "rank": [0.5]}),
            "run",
            "rank",
        ),
        (pd.DataFrame({"qid": ["q", "q"], "docno": ["d", "d"], "score": [1.0, 2.0]}), "run", "dup"),
        (pd.DataFrame({"qid": ["q"], "docno": ["d"], "relevance": [1]}), "qrels", "'label'"),
        (pd.DataFrame({"qid": ["q"], "docno": ["d"], "label": [1.5]}), "qrels", "not an integer"),
        (pd.DataFrame({"qid": [None], "docno": ["d"], "label": [1]}), "qrels", "qid None"),
        ({"qid": ["q"]}, "qrels", "expected a pandas DataFrame"),
    ],
)
def test_pyterrier_bad_input(frame, kind, match):
    convert = interop.from_pyterrier_run if kind == "run" else interop.from_pyterrier_qrels
    with pytest.raises(InputError, match=match):
        convert(frame)


def test_ir_datasets(scifact, tmp_path):
    """A real ir_datasets Dataset over local TREC files (no download)."""
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import GenericScoredDoc, TrecQrel, TrecQrels, TrecScoredDocs
    from ir_datasets.util import LocalDownload

    run, qrels = scifact["run"], scifact["qrels"]
    write_qrels(qrels, tmp_path / "qrels.trec")
    write_run(run, tmp_path / "run.trec", tag="bm25")
    dataset = Dataset(
        TrecQrels(LocalDownload(tmp_path / "qrels.trec"), {}),
        TrecScoredDocs(LocalDownload(tmp_path / "run.trec")),
    )
    got = interop.from_ir_datasets_qrels(dataset)
    assert qrels_to_dict(got) == qrels_to_dict(qrels)
    assert run_to_dict(interop.from_ir_datasets_scoreddocs(dataset)) == run_to_dict(run)
    items = [TrecQrel("q1", "d1", 2, "0"), TrecQrel("q1", "d2", 0, "0")]
    assert interop.from_ir_datasets_qrels(iter(items))["relevance"].tolist() == [2, 0]
    scored = [GenericScoredDoc("q1", "d1", 1.5)]
    assert interop.from_ir_datasets_scoreddocs(scored)["score"].tolist() == [1.5]
    with pytest.raises(InputError, match="not a namedtuple"):
        interop.from_ir_datasets_qrels([("q1", "d1", 1)])
    with pytest.raises(InputError, match="not an integer"):
        interop.from_ir_datasets_qrels([TrecQrel("q1", "d1", 0.5, "0")])
    with pytest.raises(InputError, match="expected an ir_datasets dataset"):
        interop.from_ir_datasets_scoreddocs(pd.DataFrame({"qid": []}))


# ------------------------------------------------------------------------ comparison table


@pytest.fixture(scope="module")
def systems(scifact):
    run = scifact["run"]
    return {
        "bm25": run.drop(columns=["rank"]),
        "rev_2_some": reverse_top(run, 2, every=scifact["expected"]["every"]),
        "rev_2": reverse_top(run, 2),
        "rev_10": reverse_top(run, 10),
    }


def test_markers_match_ranx_report(scifact, systems):
    """Same test (two-sided paired randomization), no correction, alpha = ranx's max_p: the
    letters of every cell whose p-values are clear of alpha agree with ranx's report."""
    alpha = 0.05
    ours = compare(systems, list(MEASURES), qrels=scifact["qrels"], correction="none", alpha=alpha)
    runs = [interop.to_ranx_run(r, name=n, trec_eval_ties=True) for n, r in systems.items()]
    report = ranx.compare(
        interop.to_ranx_qrels(scifact["qrels"]),
        runs,
        list(MEASURES.values()),
        stat_test="fisher",
        n_permutations=2000,
        max_p=alpha,
        rounding_digits=4,
        # a query of the qrels missing from a run is an empty ranking, a run query without
        # qrels is left out: as ragnb evaluates (the carried run has both)
        make_comparable=True,
    )
    means = ours.means_wide()
    letters = significance_markers(ours)
    names = list(systems)
    clear = 0
    for m, rm in MEASURES.items():
        for s in names:
            assert means.loc[s, m] == pytest.approx(report.results[s][rm], abs=1e-12)
        for row in ours.pairs[ours.pairs["measure"] == m].itertuples():
            theirs = report.comparisons[row.system_a, row.system_b][rm]["p_value"]
            # ranx's permutations run in numba, whose generator np.random.seed does not seed:
            # its p-value moves between runs (0.148 against ragnb's 0.219 seen once in CI;
            # on the carried data a gap of 0.101 in two full runs of the suite, 0.008 to 0.017
            # when this file runs alone: more than 2000 draws' Monte Carlo error explains; cause
            # not established). The markers below are the comparison that matters.
            assert abs(row.p_value - theirs) < 0.12
        for s in names:
            ps = [
                report.comparisons[s, o][rm]["p_value"] for o in names if o != s
            ] + ours.pairs.loc[
                (ours.pairs["measure"] == m)
                & ((ours.pairs["system_a"] == s) | (ours.pairs["system_b"] == s)),
                "p_value",
            ].tolist()
            if all(p < alpha / 3 or p > 3 * alpha for p in ps):
                clear += 1
                assert letters.loc[s, m] == report.get_superscript_for_latex(s, rm), (s, m)
    assert clear >= scifact["expected"]["clear"]
    # not b: rev_2_some is not significantly worse
    assert letters.loc["bm25", "nDCG@10"] == scifact["expected"]["letters"]
    some = ours.pairs[(ours.pairs["system_b"] == "rev_2_some") & (ours.pairs["measure"] == "RR")]
    assert 0.1 < float(some["p_value"].iloc[0]) < 0.5


def test_markdown_and_latex_tables(scifact, systems):
    res = compare(
        {"bm25_a": systems["bm25"], "rev 10% & more": systems["rev_10"]},
        ["nDCG@10", "P@5"],
        qrels=scifact["qrels"],
        n_resamples=2000,
    )
    md = comparison_table(res)
    lines = md.splitlines()
    assert lines[0] == "| # | System | nDCG@10 | P@5 |"
    md_a, md_b = scifact["expected"]["md"]
    assert lines[2].startswith(md_a)
    assert lines[3].startswith(md_b)
    assert "<sup>" not in comparison_table(res, markers=False)
    tex = comparison_table(res, "latex", digits=3, caption="BM25_x at 50% & more")
    assert r"\caption{BM25\_x at 50\% \& more}" in tex
    tex_a, tex_b = scifact["expected"]["tex"]
    assert tex_a in tex and tex_b in tex
    assert tex.startswith(r"\begin{table}") and tex.endswith(r"\end{table}")
    assert r"\toprule" in tex and r"\bottomrule" in tex
    # ties at the shown precision: both bold
    same = compare({"x": systems["bm25"], "y": systems["bm25"]}, ["P@5"], qrels=scifact["qrels"])
    assert comparison_table(same).count("**") == 4
    with pytest.raises(InputError, match="unknown table format"):
        comparison_table(res, "html")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="ComparisonResult"):
        comparison_table(res.pairs)  # type: ignore[arg-type]
