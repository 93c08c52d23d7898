"""Degenerate-judge checks (ragnb.judge.degenerate): hand-computed findings and their edge
cases; a judge answering one grade to everything flagged on ``ragnb golden``'s console, in the
manifest, beside the qrels and on notebook 02's first screen, a judge whose grades fall down the
pool flagged nowhere (both through the scripted OpenAI-compatible server on 127.0.0.1); an
ensemble member checked on its own; runs and qrels given as dicts validated like files."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer
from test_golden import PYDOCS, small_beir

from ragnb.cli.golden import _golden_config
from ragnb.cli.main import build_parser, main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir
from ragnb.judge import EnsembleJudge, QrelsJudge
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies import golden
from ragnb.studies.golden import (
    CheckThresholds,
    GoldenPipeline,
    build_pipeline,
    check_grades,
    rank_association,
)
from ragnb.studies.golden.stages import passages_by_id

WARNING = "the judge's grades may say nothing"


def frame(grades, queries=None, rank=None, status=None):
    n = len(grades)
    out = pd.DataFrame(
        {
            "query_id": queries if queries is not None else ["q"] * n,
            "doc_id": [f"d{i}" for i in range(n)],
            "grade": pd.array(grades, dtype="Int64"),
        }
    )
    if rank is not None:
        out["rank"] = rank
    if status is not None:
        out["status"] = status
    return out


def names(findings):
    return [f.name for f in findings]


# ----------------------------------------------------------------------------- the checks


def test_empty_and_too_small_sets_say_nothing():
    assert check_grades(frame([])) == []
    assert check_grades(frame([], rank=[]), rank="rank") == []
    # nine equal grades: below min_pairs (10), no evidence either way
    assert check_grades(frame([5] * 9, rank=list(range(1, 10))), rank="rank") == []


def test_one_grade_fires_strictly_above_the_share():
    # 9 of 10 is 90%: not over 90%
    assert check_grades(frame([5] * 9 + [4], queries=list("aabbccddee"))) == []
    # 10 of 11 is 90.9%
    (f,) = check_grades(frame([5] * 10 + [4], queries=list("aabbccddeee")))
    assert f.name == "one_grade" and f.source == "grades"
    assert f.numbers == {
        "grade": 5,
        "count": 10,
        "valid": 11,
        "share": 10 / 11,
        "threshold": 0.9,
    }
    assert f.message == "grade 5 for 10 of 11 valid grades (91%, threshold 90%)"
    assert "calibrate" in f.advice.lower() and "scale" in f.advice
    assert (
        check_grades(
            frame([5] * 10 + [4], queries=list("aabbccddeee")),
            thresholds=CheckThresholds(max_share=0.95),
        )
        == []
    )


def test_one_query_of_one_grade_is_both_one_grade_and_flat():
    found = check_grades(frame([2] * 10), source="S4 grades")
    assert names(found) == ["one_grade", "flat_queries"]
    assert found[1].numbers == {"queries": 1, "pairs": 10, "grades": [2]}
    assert str(found[0]).startswith("S4 grades: grade 2 for 10 of 10 valid grades (100%")


def test_flat_queries_without_one_grade():
    # q1 all 5, q2 all 1: half and half overall, yet no query's grades vary
    found = check_grades(frame([5] * 6 + [1] * 6, queries=["q1"] * 6 + ["q2"] * 6))
    assert names(found) == ["flat_queries"]
    assert found[0].numbers == {"queries": 2, "pairs": 12, "grades": [1, 5]}
    # one query that varies is enough to say nothing
    grades = [5] * 6 + [1] * 5 + [2]
    assert check_grades(frame(grades, queries=["q1"] * 6 + ["q2"] * 6)) == []


def test_all_invalid_and_failed_answers():
    status = ["invalid"] * 5 + ["failed"] * 3
    found = check_grades(frame([None] * 8, status=status), rank=None)
    (f,) = found
    assert f.name == "invalid_share"
    # failed judgements (no answer) are no answers of the judge: 5 of 5, not 5 of 8
    assert (f.numbers["invalid"], f.numbers["answered"], f.numbers["share"]) == (5, 5, 1.0)
    # 1 invalid of 10 answers is 10%: not above it; 2 of 10 is
    ok = [1, 2, 3, 4, 5, 1, 2, 3, 4]
    one = frame([*ok, None], queries=list("aabbccddee"), status=["ok"] * 9 + ["invalid"])
    assert check_grades(one) == []
    two = frame([*ok[:8], None, None], queries=list("aabbccddee"), status=["ok"] * 8 + ["x"] * 2)
    (f,) = check_grades(two)
    assert f.name == "invalid_share" and f.numbers["share"] == pytest.approx(0.2)


def test_rank_association_matches_the_formula_by_hand():
    grade = [3, 3, 2, 2, 1, 1]
    rank = [1, 2, 3, 4, 5, 6]
    # Spearman: Pearson correlation of the mid-ranks of the grades and the ranks
    x = np.array([5.5, 5.5, 3.5, 3.5, 1.5, 1.5]) - 3.5
    y = np.arange(1, 7) - 3.5
    rho = float(x @ y / math.sqrt((x @ x) * (y @ y)))
    assert rho == pytest.approx(-16 / math.sqrt(16 * 17.5))
    half = 1.959963984540054 * math.sqrt((1 + rho**2 / 2) / (6 - 3))
    low, high = math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)
    assert rank_association(grade, rank) == pytest.approx((rho, low, high))
    assert all(math.isnan(v) for v in rank_association([2] * 5, range(5)))
    with pytest.raises(InputError, match="4 pairs"):
        rank_association([1, 2, 3], [1, 2, 3])


def test_grades_that_do_not_move_with_the_rank():
    ranks = list(range(1, 41))
    cyclic = [1 + i % 5 for i in range(40)]  # 1, 2, 3, 4, 5, 1, 2, ... down the pool
    (f,) = check_grades(frame(cyclic, rank=ranks), rank="rank", source="S4 grades")
    rho, low, high = rank_association(cyclic, ranks)
    assert f.name == "no_rank_association" and low < 0 < high
    assert f.numbers == {
        "rho": rho,
        "low": low,
        "high": high,
        "confidence": 0.95,
        "pairs": 40,
        "queries": 1,
    }
    assert "the interval contains 0" in f.message
    # grades that fall down the pool: nothing to say
    falling = [5 - (r - 1) // 8 for r in ranks]
    assert check_grades(frame(falling, rank=ranks), rank="rank") == []
    # grades that rise down the pool: the scale read backwards
    (f,) = check_grades(frame(falling[::-1], rank=ranks), rank="rank")
    assert f.name == "grades_rise_down_pool" and f.numbers["low"] > 0
    assert "backwards" in f.detail and "scale" in f.advice
    # below min_rank_pairs (30) the interval is not computed
    assert check_grades(frame(cyclic[:29], rank=ranks[:29]), rank="rank") == []


def test_bad_input_and_thresholds_raise():
    with pytest.raises(InputError, match="grade"):
        check_grades(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"]}))
    with pytest.raises(InputError, match="rank"):
        check_grades(frame([1, 2]), rank="rank")
    bad = frame([1, 2]).astype({"grade": object})
    bad.loc[1, "grade"] = "five"
    with pytest.raises(InputError, match="'five'"):
        check_grades(bad)
    for kw in ({"max_share": 1.5}, {"min_rank_pairs": 3}, {"confidence": 1.0}, {"min_pairs": 0}):
        with pytest.raises(InputError):
            CheckThresholds(**kw)


# ----------------------------------------------------------------------------- dict inputs


@pytest.mark.parametrize("score", [float("inf"), -math.inf, float("nan"), "x", None])
def test_dict_runs_are_validated_like_files(score):
    qrels = {"q1": {"d1": 1, "d2": 0}}
    run = {"q1": {"d2": 0.5, "d1": score}}
    # the look-up path (dict qrels and run) and the frame path (qrels as a frame)
    for q in (qrels, pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})):
        with pytest.raises(InputError) as info:
            evaluate(q, run, ["nDCG@10"])
        assert info.value.query_id == "q1" and "'d1'" in str(info.value)
    evaluate(qrels, {"q1": {"d1": 2.0, "d2": 1.0}}, ["nDCG@10"])  # finite scores pass


def test_the_issue_example_and_dict_qrels():
    with pytest.raises(InputError, match="not finite"):
        evaluate({"q1": {"d1": 1}}, {"q1": {"d1": float("inf")}}, ["nDCG@10"])
    for grade in (float("inf"), float("nan"), "1", 1.5):
        with pytest.raises(InputError, match="not an integer") as info:
            evaluate({"q1": {"d1": grade}}, {"q1": {"d1": 1.0}}, ["nDCG@10"])
        assert info.value.query_id == "q1" and "'d1'" in str(info.value)


# ----------------------------------------------------------------------------- golden sets


def grader(grade_of):
    """A scripted judge: ``grade_of(query, passage)`` for grade requests, the reverse of the
    order shown for listwise ones."""

    def handler(request):
        messages = request.json["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        user = next(m["content"] for m in messages if m["role"] == "user")
        if "ranking judge" in system:
            n = int(system.split("receive ", 1)[1].split(" passages", 1)[0])
            return ChatAnswer(json.dumps({"order": [chr(65 + i) for i in reversed(range(n))]}))
        query = user.split("Question:\n", 1)[1].split("\n\nText:\n", 1)[0]
        passage = user.split("Text:\n", 1)[1].rsplit("\n\nAnswer with EXACTLY", 1)[0]
        return ChatAnswer(json.dumps({"grade": grade_of(query, passage)}))

    return handler


def golden_argv(data, out, server, tmp_path):
    return [
        "golden",
        "--dataset",
        str(data),
        "--judge",
        "openai",
        "--base-url",
        server.base_url,
        "--retriever",
        "bm25",
        "--depth",
        "8",
        "--top-n",
        "3",
        "--refine-max-iterations",
        "1",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(out),
        "--quiet",
    ]


def test_a_constant_judge_is_flagged_on_the_console_in_the_manifest_and_first_screen(
    openai_server, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-degenerate")
    openai_server.chat.handler = grader(lambda query, passage: 5)
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=4)
    out = tmp_path / "gold"
    argv = golden_argv(data, out, openai_server, tmp_path)
    assert main(argv) == 0
    console = capsys.readouterr()
    assert "golden.qrels: 32 judgements of 4 queries" in console.out
    assert f"ragnb: warning: {WARNING}" in console.err
    assert "S4 grades: grade 5 for 32 of 32 valid grades (100%, threshold 90%)" in console.err
    assert "S4 grades: the grades vary within no query (4 queries" in console.err
    assert "what to do: Calibrate the judge against human labels" in console.err

    manifest = json.loads((out / "manifest.json").read_text())
    checks = manifest["judge_checks"]
    assert checks["thresholds"]["max_share"] == 0.9
    assert checks["checked"][0] == {
        "source": "S4 grades",
        "pairs": 32,
        "valid": 32,
        "invalid": 0,
        "failed": 0,
    }
    assert [(f["source"], f["name"]) for f in checks["findings"]] == [
        ("S4 grades", "one_grade"),
        ("S4 grades", "flat_queries"),
    ]
    assert checks["findings"][0]["numbers"]["share"] == 1.0

    note = (out / "golden.qrels.README").read_text()
    assert "judge:       openai-judge:gpt-4o-mini" in note
    assert f"server:      {openai_server.base_url}" in note
    assert "prompt:      utility-rubric (en)" in note
    assert "degenerate-judge checks: 2 finding(s)" in note and "grade 5 for 32 of 32" in note
    assert "sk-test-degenerate" not in note

    # notebook 02's first screen, as its cells draw it: the run folder is reused, no new call
    # nugget calls this handler cannot answer failed in the first run (not cached): left out
    config = replace(_golden_config(build_parser().parse_args(argv)), nugget_max=0)
    before = openai_server.request_count()
    screen = golden.run(config).banner()
    assert openai_server.request_count() == before
    assert screen.index("Judge: openai-judge:gpt-4o-mini") < screen.index(WARNING)
    assert "`one_grade`: grade 5 for 32 of 32 valid grades (100%" in screen
    assert "**What to do:** Calibrate the judge" in screen
    # ...and the notebook draws its first screen from the result, after the run
    nb = json.loads((PYDOCS.parents[1] / "notebooks" / "02_golden_set.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert "result = golden.run(config)" in cells[1]
    assert "display(Markdown(result.banner()))" in cells[1]


def test_grades_that_fall_down_the_pool_raise_no_warning(
    openai_server, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-degenerate")
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=4)
    out = tmp_path / "gold"
    argv = golden_argv(data, out, openai_server, tmp_path)
    config = _golden_config(build_parser().parse_args(argv))
    # the fused rank of each pair, from S1-S3 (no judge call), makes a judge that reads well
    candidates = build_pipeline(config).candidates()
    queries = build_pipeline(config).queries()
    qtext = dict(zip(queries["query_id"], queries["normalised"], strict=True))
    texts = passages_by_id(read_beir(data).corpus)
    rank = {
        (qtext[q], texts[d]): r
        for q, d, r in candidates[["query_id", "doc_id", "rrf_rank"]].itertuples(index=False)
    }
    openai_server.chat.handler = grader(lambda q, p: max(1, 5 - (rank[q, p] - 1) // 2))
    assert main(argv) == 0
    console = capsys.readouterr()
    assert "golden.qrels: 32 judgements" in console.out and WARNING not in console.err
    checks = json.loads((out / "manifest.json").read_text())["judge_checks"]
    assert checks["findings"] == [] and checks["checked"][0]["valid"] == 32
    assert "degenerate-judge checks: no finding(s)" in (out / "golden.qrels.README").read_text()
    assert WARNING not in golden.run(config).banner()


def test_local_judge_warns_before_it_starts(tmp_path, capsys):
    # a dataset that is not there: the run stops at once, after the warning
    argv = ["golden", "--dataset", str(tmp_path / "none"), "--judge", "local"]
    assert main([*argv, "--out", str(tmp_path / "gold")]) == 2
    err = capsys.readouterr().err
    assert err.index("ragnb: warning: judge 'local' is SmolLM2-135M-Instruct") < err.index(
        "ragnb: error:"
    )
    assert "not a judge to trust" in err


def test_an_ensemble_member_and_increments_are_checked_on_their_own(pydocs_small):
    data, queries = pydocs_small
    real = QrelsJudge(data.qrels, scale=(0, 1), missing=0)
    constant = QrelsJudge({"none": {"none": 1}}, scale=(0, 1), missing=1)
    judge = EnsembleJudge([real, constant], quorum=1, names=["labels", "always-1"])
    gs = GoldenPipeline(
        data.corpus,
        queries,
        judge,
        {"bm25": BM25Retriever()},
        depth=10,
        min_pool=5,
        top_n=3,
        new_systems={"bm25-plain": BM25Retriever(stemmer=None, stopwords=None, name="p")},
        incremental_k=12,
    ).run()
    sources = [s for s, _, _, _ in gs.graded_sets()]
    assert sources == [
        "S4 grades",
        "S4 grades of ensemble member labels",
        "S4 grades of ensemble member always-1",
        "S6 listwise answers",
        "incremental judging of bm25-plain",
    ]
    found = {(f.source, f.name): f for f in gs.judge_checks()}
    member = found["S4 grades of ensemble member always-1", "one_grade"]
    assert member.numbers["grade"] == 1 and member.numbers["share"] == 1.0
    assert gs.grades["member_grade:always-1"].eq(1).all()
    manifest = gs.manifest()["judge_checks"]
    assert [c["source"] for c in manifest["checked"]] == sources
    assert manifest["checked"][3] == {
        "source": "S6 listwise answers",
        "calls": int(gs.refine_summary["calls"].sum()),
        "invalid": 0,
    }


@pytest.fixture(scope="module")
def pydocs_small():
    data = read_beir(PYDOCS)
    return data, data.judged_queries.head(4)


@pytest.mark.slow
def test_notebook_02_shows_the_findings_on_its_first_screen(openai_server, tmp_path, monkeypatch):
    """The one render: the first screen holds the findings in the report."""
    from test_golden_notebook import visible_text

    from ragnb.report.render import render_report

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-degenerate")
    openai_server.chat.handler = grader(lambda query, passage: 5)
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=4)
    params = {
        "dataset": str(data),
        "judge": "openai",
        "base_url": openai_server.base_url,
        "retrievers": "[bm25]",
        "new_systems": "[]",
        "max_queries": 0,
        "depth": 8,
        "min_pool": 8,
        "calibrate": False,
        "ppi_labels": 0,
        "simulate": False,
        "cache_dir": str(tmp_path / "cache"),
        "export_dir": str(tmp_path / "export"),
    }
    report = render_report("02_golden_set", params, reports_dir=tmp_path / "reports")
    text = visible_text(report.html.read_text(encoding="utf-8"))
    first = text[: text.index("Cost before spending")]
    assert first.index("Judge: openai-judge:gpt-4o-mini") < first.index(WARNING)
    assert "one_grade : grade 5 for 32 of 32 valid grades (100%, threshold 90%)" in first
    assert "What to do: Calibrate the judge against human labels" in first
    assert first.index(WARNING) < first.index("Sample: 4 of the 4 queries")
