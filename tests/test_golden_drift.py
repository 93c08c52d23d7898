"""Judge drift: re-grading a golden set's human-labelled sample, comparing two judges with the
humans, and the kappa gate (function and ``ragnb golden audit`` exit codes)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.io.files import read_json
from ragnb.judge import NoisyJudge, QrelsJudge
from ragnb.judge.drift import drift_gates
from ragnb.stats.gates import judge_kappa_gates
from ragnb.studies.golden import GoldenSetConfig, calibrate_judge
from ragnb.studies.golden.judge_checks import accepted_calibration, judge_drift
from ragnb.studies.golden.pipeline import build_pipeline


@pytest.fixture(scope="module")
def accepted(tmp_path_factory):
    """A golden set of 8 pydocs queries graded by a noisy judge (sd 0.5), its calibration
    exported where ``ragnb golden`` writes it."""
    folder = tmp_path_factory.mktemp("golden")
    config = GoldenSetConfig(
        judge="noisy",
        judge_sd=0.5,
        retrievers=["bm25"],
        max_queries=8,
        new_systems=[],
        depth=10,
        min_pool=10,
        export_dir=str(folder),
    )
    golden = build_pipeline(config).run()
    calibrate_judge(golden).export(folder / "calibration")
    return folder, golden


def candidate(golden, sd: float, seed: int = 3):
    return NoisyJudge(golden.build.labels, sd=sd, seed=seed, scale=golden.judge.scale, missing=0)


def test_reference_kappa_is_the_calibration_it_was_accepted_with(accepted):
    folder, golden = accepted
    drift = judge_drift(golden, candidate(golden, 2.0), ppi=False)
    stored = accepted_calibration(folder)
    value, low, high = drift.kappa("reference")
    assert stored is not None and stored["pairs"] == len(drift.pairs)
    assert value == pytest.approx(stored["value"]) and low == pytest.approx(stored["low"])
    assert high == pytest.approx(stored["high"])
    assert drift.regraded["set"].tolist() == ["human-labelled sample"]
    assert int(drift.regraded["called"].iloc[0]) == len(drift.pairs)


def test_a_perfect_candidate_agrees_and_a_noisy_one_drifts(accepted):
    _, golden = accepted
    perfect = QrelsJudge(golden.build.labels, scale=golden.judge.scale, missing=0)
    good = judge_drift(golden, perfect, n_boot=200)
    assert good.kappa("candidate")[0] == pytest.approx(1.0)
    cand_bias = good.bias[good.bias["judge"] == "candidate"]
    assert np.allclose(cand_bias["bias"].to_numpy(), 0.0)
    bad = judge_drift(golden, candidate(golden, 3.0), n_boot=200)
    k, lo, hi = bad.kappa("candidate")
    assert k < good.kappa("reference")[0] and lo <= k <= hi
    table = bad.kappa_table().set_index("statistic")
    assert table.loc["kappa", "difference"] == pytest.approx(k - bad.kappa("reference")[0])
    assert set(bad.tables()) == {"kappa", "agreement", "bias", "ppi", "regraded", "pairs"}
    assert "Judge drift" in bad.banner() and bad.candidate_id in bad.banner()
    # the whole golden set re-graded for the PPI estimates under each judge
    assert bad.regraded["pairs"].tolist() == [len(bad.pairs), len(golden.judgements)]
    ppi = bad.ppi_table()
    assert len(ppi) and set(bad.ppi["judge"]) == {"reference", "candidate"}


def test_bias_per_human_grade_is_mean_judge_grade_minus_human_grade(accepted):
    _, golden = accepted
    drift = judge_drift(golden, candidate(golden, 1.5), ppi=False, n_boot=0)
    p = drift.pairs
    for row in drift.bias[drift.bias["judge"] == "candidate"].itertuples():
        on = p[p["human"] == row.human_grade]
        expected = on["candidate"].astype(float).mean() - row.human_grade
        assert row.n == len(on) and row.bias == pytest.approx(expected)
    assert math.isnan(drift.kappa("candidate")[1])  # n_boot=0: no interval


def test_a_candidate_on_another_scale_is_refused(accepted):
    _, golden = accepted
    other = NoisyJudge(golden.build.labels, sd=1.0, scale=(0, 3), missing=0)
    with pytest.raises(InputError, match="kappa compares grades on one scale"):
        judge_drift(golden, other)


def test_drift_gates_fail_below_the_minimum_and_below_the_accepted_calibration(accepted):
    folder, golden = accepted
    stored = accepted_calibration(folder)
    bad = judge_drift(golden, candidate(golden, 3.0), ppi=False, n_boot=200)
    report = drift_gates(bad, minimum=0.4, accepted=stored)
    assert report.exit_status == 1
    k = bad.kappa("candidate")[0]
    rows = report.table.set_index("gate")
    assert not rows.loc["judge-kappa-min", "passed"]
    # the accepted interval of 8 queries is wide: the rule is kappa >= its low end
    assert rows.loc["judge-calibration", "passed"] == (k >= stored["low"])
    tight = {**stored, "low": stored["value"]}
    assert "judge-calibration" in set(drift_gates(bad, accepted=tight).failures["gate"])
    text = drift_gates(bad, minimum=0.4, accepted=tight).message()
    assert bad.candidate_id in text and "95% CI" in text and str(stored["source"]) in text
    same = judge_drift(golden, candidate(golden, 0.5, seed=0), ppi=False, n_boot=200)
    ok = drift_gates(same, minimum=0.4, accepted=stored)
    assert ok.exit_status == 0 and ok.passed


def test_judge_kappa_gates_rules():
    r = judge_kappa_gates(0.5, 0.3, 0.6, judge="j", accepted={"value": 0.55, "low": 0.45})
    assert r.passed  # inside the accepted interval: sampling noise
    r = judge_kappa_gates(0.4, 0.3, 0.5, judge="j", accepted={"value": 0.55, "low": 0.45})
    assert not r.passed and r.table["baseline"].iloc[0] == 0.55
    assert not judge_kappa_gates(math.nan, math.nan, math.nan, judge="j", minimum=0.0).passed
    assert judge_kappa_gates(0.4, 0.3, 0.5, judge="j", minimum=0.4).passed
    with pytest.raises(InputError, match="minimum kappa or an accepted"):
        judge_kappa_gates(0.4, 0.3, 0.5, judge="j")
    with pytest.raises(InputError, match=r"in \[-1, 1\]"):
        judge_kappa_gates(0.4, 0.3, 0.5, judge="j", minimum=2.0)


def test_cli_golden_audit_exit_status_both_ways(accepted, capsys):
    folder, golden = accepted
    args = ["golden", "audit", str(folder), "--judge-kappa-min", "0.4", "--n-boot", "200"]
    assert main([*args, "--no-ppi"]) == 0
    out = capsys.readouterr().out
    assert golden.judge.judge_id in out and "passed" in out
    out_dir = folder.parent / "drift-tables"
    assert main([*args, "--judge-sd", "3", "--seed", "3", "--out", str(out_dir)]) == 1
    out = capsys.readouterr().out
    summary = read_json(out_dir / "drift.json")
    assert summary["candidate"] == "noisy-judge(sd=3,seed=3)"
    assert (
        summary["kappa"]["reference"]["none"]["value"]
        > summary["kappa"]["candidate"]["none"]["value"]
    )
    assert {"kappa.csv", "bias.csv", "ppi.csv", "regraded.csv"} <= {
        p.name for p in out_dir.iterdir()
    }
    assert "gate failed: kappa of noisy-judge(sd=3,seed=3)" in out
    assert "(judge-kappa-min)" in out


def test_cli_golden_audit_bad_folder_is_exit_2(tmp_path, capsys):
    assert main(["golden", "audit", str(tmp_path), "--judge-kappa-min", "0.4"]) == 2
    assert "manifest.json: not found" in capsys.readouterr().err


# ----------------------------------------------------------------------------- through the cache


def grade_request_answer(request):
    """The scripted server's answers: listwise orders reversed; grades by a hash of the passage
    and the model, so another model grades differently."""
    import hashlib
    import json
    import re

    from openai_server import ChatAnswer

    messages = request.json["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if "ranking judge" in system:
        n = int(re.search(r"receive (\d+) passages", system).group(1))
        return ChatAnswer(json.dumps({"order": [chr(65 + i) for i in reversed(range(n))]}))
    user = next(m["content"] for m in messages if m["role"] == "user")
    digest = hashlib.sha256((request.json["model"] + user).encode()).hexdigest()
    return ChatAnswer(json.dumps({"grade": int(digest, 16) % 5 + 1}))


def test_regrading_goes_through_the_judge_cache(openai_server, tmp_path, monkeypatch, capsys):
    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-drift")
    openai_server.chat.handler = grade_request_answer
    config = GoldenSetConfig(
        judge="openai",
        model="gpt-4o-mini",
        base_url=openai_server.base_url,
        retrievers=["bm25"],
        max_queries=3,
        new_systems=[],
        depth=4,
        min_pool=4,
        top_n=3,
        cache_dir=str(tmp_path / "cache"),
        export_dir=str(tmp_path / "run"),
    )
    golden = build_pipeline(config).run()
    chat = "/v1/chat/completions"

    def judge(model):
        return OpenAIJudge(
            model, base_url=openai_server.base_url, cache=Cache(tmp_path / "cache"), progress=False
        )

    before = openai_server.request_count(chat)
    same = judge_drift(golden, judge("gpt-4o-mini"), n_boot=50)
    assert openai_server.request_count(chat) == before  # every answer from the cache
    r = same.regraded.set_index("set")
    assert r.loc["golden pairs", "from_cache"] == len(golden.judgements)
    assert r.loc["golden pairs", "called"] == 0
    assert same.kappa("candidate") == same.kappa("reference")
    assert "0 sent to the judge" in same.banner()

    other = judge_drift(golden, judge("gpt-4o"), ppi=False, n_boot=50)
    called = int(other.regraded["called"].iloc[0])
    assert called == len(other.pairs) > 0
    assert openai_server.request_count(chat) == before + called
    again = judge_drift(golden, judge("gpt-4o"), ppi=False, n_boot=50)
    assert int(again.regraded["from_cache"].iloc[0]) == called  # now cached: free
    assert openai_server.request_count(chat) == before + called
    assert again.pairs["candidate"].tolist() == other.pairs["candidate"].tolist()

    # the command: another model's calls are billed to the run folder's ledger, stage "drift"
    from ragnb.llm.ledger import Ledger

    args = ["golden", "audit", str(tmp_path / "run"), "--judge-kappa-min", "-1", "--no-ppi"]
    # manifest.json shows a folder outside the project by its name only: the command takes it
    args += ["--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--queries", str(tmp_path / "missing.txt")]) == 2
    assert "not found from the working folder or the project root: pass --queries" in (
        capsys.readouterr().err
    )
    assert main([*args, "--model", "gpt-4.1-mini", "--n-boot", "50"]) == 0
    ledger = Ledger.read(tmp_path / "run" / "ledger.jsonl")
    drift_rows = ledger[ledger["stage"] == "drift"]
    assert (~drift_rows["cached"]).sum() == len(other.pairs)
    assert all(
        "sk-test-drift" not in p.read_text(errors="ignore")
        for p in (tmp_path / "run").rglob("*")
        if p.is_file() and p.suffix in {".json", ".jsonl", ".csv", ".README", ".qrels"}
    )


# ----------------------------------------------------------------------------- in notebook 02


def prompt_request_answer(request):
    """Like :func:`grade_request_answer`, the grade also hashing the system prompt, so another
    prompt of the same model grades differently."""
    import hashlib
    import json

    from openai_server import ChatAnswer

    messages = request.json["messages"]
    if "ranking judge" in messages[0]["content"]:
        return grade_request_answer(request)
    text = request.json["model"] + "".join(m["content"] for m in messages)
    return ChatAnswer(
        json.dumps({"grade": int(hashlib.sha256(text.encode()).hexdigest(), 16) % 5 + 1})
    )


def test_notebook_02_drift_regrades_with_another_prompt_and_gates_it(
    openai_server, tmp_path, monkeypatch
):
    from sklearn.metrics import cohen_kappa_score

    from ragnb.llm.ledger import Ledger
    from ragnb.studies import golden as golden_study

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-drift")
    openai_server.chat.handler = prompt_request_answer
    config = GoldenSetConfig(
        judge="openai",
        model="gpt-4o-mini",
        base_url=openai_server.base_url,
        retrievers=["bm25"],
        max_queries=4,
        new_systems=[],
        depth=4,
        min_pool=4,
        top_n=2,
        simulate=False,
        consistency_samples=0,
        judge_audit=False,
        ppi_labels=6,
        drift_kappa_min=0.4,
        cache_dir=str(tmp_path / "cache"),
        export_dir=str(tmp_path / "run"),
    )
    chat = "/v1/chat/completions"
    result = golden_study.run(config)
    check = result.drift
    assert check is not None and check.prompt.startswith("utility-terse/en#")
    terse = [
        b for b in openai_server.bodies(chat) if "from 1 (not relevant) to 5" in str(b["messages"])
    ]
    # PPI labels exist, so every judged pair is re-graded under the other prompt, once each
    assert len(terse) == len(result.golden.judgements) == check.drift.regraded["called"].iloc[-1]
    pairs = check.drift.pairs
    expected = cohen_kappa_score(
        pairs["human"], pairs["candidate"].astype(int), labels=[1, 2, 3, 4, 5]
    )
    assert check.drift.kappa("candidate")[0] == pytest.approx(expected)
    k_ref = cohen_kappa_score(pairs["human"], pairs["reference"], labels=[1, 2, 3, 4, 5])
    assert check.drift.kappa("reference")[0] == pytest.approx(k_ref)
    # the gate: the minimum, and the reference's interval (the calibration on the same pairs)
    gates = check.gates.table.set_index("gate")
    assert gates.loc["judge-kappa-min", "passed"] == (expected >= 0.4)
    assert gates.loc["judge-calibration", "threshold"] == pytest.approx(
        check.drift.kappa("reference")[1]
    )
    text = result.section("drift")
    verdict = "passes" if check.gates.passed else "fails"
    assert f"**Gate:** the candidate (prompt `{check.prompt}`) {verdict}." in text
    tables = result.tables()
    assert {"drift_kappa", "drift_bias", "drift_ppi", "drift_regraded", "drift_gates"} <= set(
        tables
    )
    ledger = Ledger.read(tmp_path / "run" / "ledger.jsonl")
    assert (~ledger[ledger["stage"] == "drift"]["cached"]).sum() == len(terse)

    # a second run answers the drift check from the cache
    before = openai_server.request_count(chat)
    again = golden_study.run(config)
    assert openai_server.request_count(chat) == before
    assert again.drift.drift.regraded["from_cache"].iloc[-1] == len(terse)
    assert again.drift.drift.kappa("candidate") == check.drift.kappa("candidate")


def test_notebook_02_drift_is_skipped_with_its_reason(accepted, tmp_path):
    _, golden = accepted
    from ragnb.studies import golden as golden_study
    from ragnb.studies.golden.judge_checks import drift_for

    config = dataclasses.replace(golden.build.config, export_dir="", ppi_labels=0)
    offline = golden_study.run(config)
    assert offline.drift is None and "drift_kappa" not in offline.tables()
    assert "**Judge drift skipped** because the judge noisy-judge" in offline.banner()
    assert "has no prompt to change" in offline.section("drift")
    with pytest.raises(InputError, match="no drift check"):
        drift_for(golden, None)
    off = golden_study.run(dataclasses.replace(config, drift_prompt=""))
    assert "**Judge drift skipped** because `drift_prompt` is empty." in off.banner()
    with pytest.raises(InputError, match="drift_kappa_min"):
        GoldenSetConfig(drift_kappa_min=1.5)
