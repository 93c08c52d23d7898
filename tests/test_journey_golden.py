"""Journey: a golden set from questions alone, with the installed ``ragnb`` command.

A user has a folder with only a ``corpus.jsonl`` and a text file of questions (no
``queries.jsonl``, no qrels) and runs ``ragnb golden`` from their own working folder. The
first journey uses the default judge, the real local model (SmolLM2-135M through llama.cpp);
the second the scripted OpenAI-compatible server, whose judge gives one grade to everything and
whose nuggets are numbered placeholders: both are flagged on the console.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from openai_server import ChatAnswer

from ragnb.llm.server import DEFAULT_MODEL, local_llm_unavailable

RAGNB = Path(sys.executable).parent / "ragnb"
PYDOCS = Path(__file__).resolve().parents[1] / "data" / "pydocs" / "corpus.jsonl"
QUESTIONS = [
    "How do I parse command-line arguments?",
    "How can I define an abstract base class?",
    "How do I encode bytes as base64?",
    "How do I count items with a dictionary subclass?",
    "How can I run code concurrently with threads?",
]
#: The real model's journey asks two of them: each question costs it about ten grading calls and
#: a listwise call of seconds each on two cores; two keep every stage and check meaningful.
LOCAL_QUESTIONS = QUESTIONS[:2]
SKIP_LINE = (
    "skipped: self-consistency, bias audit, judge drift, nuggets: the judge is the local "
    "stand-in SmolLM2-135M (135M parameters)"
)


def user_folder(tmp_path: Path, n_passages: int = 300, questions: list[str] = QUESTIONS) -> Path:
    """The user's files: ``mydocs/corpus.jsonl`` (the first passages of the shipped pydocs
    corpus) and ``questions.txt``, nothing else."""
    (tmp_path / "mydocs").mkdir()
    lines = PYDOCS.read_text(encoding="utf-8").splitlines()[:n_passages]
    (tmp_path / "mydocs" / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "questions.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")
    return tmp_path


def ragnb(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    """The installed command, run from ``tmp_path`` with the user's cache under it."""
    environ = {**os.environ, "RAGNB_CACHE_DIR": str(tmp_path / "user-cache"), **(env or {})}
    return subprocess.run(
        [str(RAGNB), *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def ledger_rows(folder: Path) -> list[dict]:
    path = folder / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_golden_set_from_questions_alone_with_the_local_model(tmp_path):
    reason = local_llm_unavailable(DEFAULT_MODEL)
    if reason is not None:
        raise AssertionError(f"the local model server cannot run here: {reason}")
    user_folder(tmp_path, n_passages=150, questions=LOCAL_QUESTIONS)
    # the command as a user types it: the default judge (local) and its default sizes
    argv = ["golden", "--dataset", "mydocs", "--queries", "questions.txt", "--out", "gs/"]
    first = ragnb(tmp_path, *argv)
    assert first.returncode == 0, first.stderr
    out, err = first.stdout, first.stderr
    gs = tmp_path / "gs"
    for name in ("golden.qrels", "golden.qrels.README", "judgements.csv", "manifest.json"):
        assert (gs / name).is_file(), name
    # which judge: the tiny local model, called what it is
    assert "ragnb: warning: judge 'local' is SmolLM2-135M-Instruct" in err
    assert "not a judge to trust" in (gs / "golden.qrels.README").read_text()
    # every stage says where it is: a line per stage, a tqdm bar for the judge's calls
    for stage in ("S1 queries", "S2 pools", "S3 merge (RRF)", "S4 grades", "S5 prune"):
        assert f"{stage}: computed in" in out
    assert "s4_grade: smollm2-135m-instruct: 100%" in err
    assert "S6 refine: 100%" in err and "S6 refine: computed in" in out
    # the checks that would mean nothing for a 135M model are skipped, and it says how to run them
    assert SKIP_LINE in out and "set checks='all' (ragnb golden --checks all)" in out
    qrels = pd.read_csv(gs / "golden.qrels", sep=" ", names=["q", "it", "doc", "grade"])
    assert qrels["q"].nunique() == len(LOCAL_QUESTIONS)
    assert f"{len(qrels)} judgements of {len(LOCAL_QUESTIONS)} queries" in out
    assert not (gs / "nugget_recall.csv").exists() and not (gs / "self_consistency.csv").exists()
    # a judge that gives one grade to (nearly) every pair is flagged on the console
    share = qrels["grade"].value_counts(normalize=True).iloc[0]
    if share > 0.9 and len(qrels) >= 10:
        assert "ragnb: warning: the judge's grades may say nothing" in err
        assert f"S4 grades: grade {qrels['grade'].mode()[0]} for " in err
    rows = ledger_rows(gs)
    assert len([r for r in rows if r["status"] == "ok"]) >= len(qrels)
    written = (gs / "golden.qrels").read_text()

    second = ragnb(tmp_path, *argv)
    assert second.returncode == 0, second.stderr
    for stage in ("S1 queries", "S4 grades", "S6 refine"):
        assert f"{stage}: loaded from {gs}" in second.stdout
    assert ledger_rows(gs) == rows  # no request: the ledger gained no row
    assert (gs / "golden.qrels").read_text() == written


def placeholder_llm(request) -> ChatAnswer:
    """A judge that says nothing: grade 5 for every pair, the shown order for listwise calls,
    numbered placeholders for nuggets, every nugget okay and unsupported."""
    messages = request.json["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = next(m["content"] for m in messages if m["role"] == "user")
    if "NuggetizeLLM" in system:
        return ChatAnswer(json.dumps({"items": ["nugget 1", "nugget 2", "nugget 3"]}))
    if "NuggetizeScoreLLM" in system or "Nugget List:" in user:
        n = len(json.loads(user.split("Nugget List: ", 1)[1].splitlines()[0]))
        label = "okay" if "NuggetizeScoreLLM" in system else "not_support"
        return ChatAnswer(json.dumps({"labels": [label] * n}))
    if "ranking judge" in system:
        n = int(system.split("receive ", 1)[1].split(" passages", 1)[0])
        return ChatAnswer(json.dumps({"order": [chr(65 + i) for i in range(n)]}))
    return ChatAnswer(json.dumps({"grade": 5}))


def test_placeholder_nuggets_and_a_one_grade_judge_are_flagged(openai_server, tmp_path):
    openai_server.chat.handler = placeholder_llm
    user_folder(tmp_path, n_passages=120)
    argv = ["golden", "--dataset", "mydocs", "--queries", "questions.txt", "--out", "gs"]
    argv += ["--judge", "openai", "--base-url", openai_server.base_url, "--retriever", "bm25"]
    argv += ["--depth", "4", "--refine-max-iterations", "1", "--checks", "nuggets"]
    env = {"OPENAI_API_KEY": "sk-test-journey"}
    first = ragnb(tmp_path, *argv, env=env)
    assert first.returncode == 0, first.stderr
    out, err = first.stdout, first.stderr
    # the extra is named with its calls before it starts; the others are skipped, with the switch
    assert "nuggets: at most " in out and " calls to gpt-4o-mini" in out
    skipped = "skipped: self-consistency, bias audit, judge drift: checks='nuggets' leaves them"
    assert skipped in out and "set checks='all' (ragnb golden --checks all)" in out
    assert "S4 grades: grade 5 for 20 of 20 valid grades (100%, threshold 90%)" in err
    assert "ragnb: warning: the nuggets state no facts" in err
    assert "15 of 15 nuggets (100%) state no fact (15 placeholder; e.g. 'nugget 1'" in err
    # nugget averages say how many queries they cover
    assert "nuggets: 15 for 5 of 5 queries; NuggetRecall@3 averages over those 5" in out
    recall = pd.read_csv(tmp_path / "gs" / "nugget_recall.csv")
    assert recall["queries"].tolist() == [5] and recall["of_queries"].tolist() == [5]
    assert (recall.filter(like="NuggetRecall") == 0).all().all()

    before = openai_server.request_count()
    second = ragnb(tmp_path, *argv, env=env)
    assert second.returncode == 0, second.stderr
    assert openai_server.request_count() == before  # every answer from the cache
    assert "ragnb: warning: the nuggets state no facts" in second.stderr


def test_golden_audit_resolves_its_paths_from_the_working_folder(tmp_path):
    user_folder(tmp_path, n_passages=20)
    (tmp_path / "gs").mkdir()
    manifest = {"config": {"dataset": "mydocs", "judge": "noisy", "queries": "questions.txt"}}
    (tmp_path / "gs" / "manifest.json").write_text(json.dumps(manifest))
    done = ragnb(tmp_path, "golden", "audit", "gs", "--dataset", "nowhere")
    assert done.returncode == 2
    assert f"dataset '{tmp_path / 'nowhere'}' is not found from the working folder" in done.stderr
