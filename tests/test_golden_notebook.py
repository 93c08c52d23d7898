"""Notebook 02 (golden set) end to end: its parameters mirror the config dataclass, it renders
offline on data/pydocs saying that its judge is simulated, it renders with an LLM judge against
the local server without writing the API key anywhere, and (slow) on DBpedia with the
simulation's chart and table."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pytest
from browser import visible_text
from test_golden import PYDOCS, scan_for, scripted, small_beir

from ragnb.errors import InputError
from ragnb.report.render import notebook_parameters, render_report, resolve_notebook
from ragnb.studies.golden import GoldenSetConfig

NOTEBOOK = "02_golden_set"
CHART = 'class="ragnb-chart"'
BANNER = "Judge: noisy-judge(sd=1,seed=0) — simulated from the dataset's labels, not an LLM"
FAST = {
    "retrievers": "[bm25]",
    "new_systems": "[bm25-plain]",
}
#: The simulated judge at the sizes the defaults had before the local model became the default.
OFFLINE = {
    **FAST,
    "judge": "noisy",
    "max_queries": 0,
    "depth": 30,
    "min_pool": 30,
    "top_n": 20,
    "refine_max_iterations": 60,
    "incremental_k": 10,
    "cutoffs": "[5, 10, 20]",
    "ppi_labels": 30,
}


def test_parameters_cell_mirrors_config_dataclass_and_takes_no_key():
    declared = notebook_parameters(resolve_notebook(NOTEBOOK))
    assert list(declared) == [f.name for f in fields(GoldenSetConfig)]
    defaults = GoldenSetConfig()
    for f in fields(GoldenSetConfig):
        # papermill reports defaults as source text
        assert eval(declared[f.name]["default"]) == getattr(defaults, f.name), f.name
        assert declared[f.name]["help"], f"parameter {f.name} has no comment"
        expected = type(getattr(defaults, f.name)).__name__
        assert declared[f.name]["inferred_type_name"] == expected, f.name
    assert not [name for name in declared if "key" in name or "secret" in name]
    assert defaults.dataset == "data/pydocs" and defaults.judge == "local"
    assert defaults.max_queries == 2 and defaults.refine_max_iterations == 1  # renders in minutes


def test_unknown_and_secret_parameters_are_rejected(tmp_path):
    with pytest.raises(InputError, match="unknown parameter 'api_key'"):
        render_report(NOTEBOOK, {"api_key": "sk-nope"}, reports_dir=tmp_path)
    with pytest.raises(InputError, match="takes a int"):
        render_report(NOTEBOOK, {"depth": "deep"}, reports_dir=tmp_path)
    assert not list(tmp_path.rglob("*.html"))


@pytest.fixture(scope="module")
def pydocs_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("golden-pydocs")
    return render_report(NOTEBOOK, {**OFFLINE, "export_dir": str(out / "export")}, reports_dir=out)


def test_offline_report_says_on_its_first_screen_that_the_judge_is_simulated(pydocs_report):
    page = pydocs_report.html.read_text(encoding="utf-8")
    text = visible_text(page)
    # the banner comes right after the title paragraph, before any section
    assert BANNER in text
    assert text.index(BANNER) < text.index("Cost before spending") < 1500
    assert "compute(" not in page and "GoldenPipeline" not in text  # code cells hidden
    # grades, overlap, Judged@K, convergence, confusion matrix, system scatter, PR, bias
    # slopes, simulation
    assert page.count(CHART) == 9
    for heading in (
        "Grade distributions",
        "Pool overlap between systems",
        "Judged@K",
        "Refinement convergence (S6)",
        "SPEAR: precision exact, recall relative",
        "Calibration against human labels",
        "Self-consistency: does the judge agree with itself?",
        "samples with each other",
        "majority of 3",
        "Judge bias audit: passage length, query overlap, position",
        "grade - human against words",
        "Position: the same 95 batch(es)",
        "Prediction-powered estimates",
        "How many more human labels would halve the interval",
        "Simulation: refinement vs one-shot",
        "No LLM call: the judge is offline.",
        "Cost estimate: no LLM call is planned",
    ):
        assert heading in text, heading


def test_offline_report_exports_the_run_folder(pydocs_report):
    export = Path(pydocs_report.parameters["export_dir"])
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["judge_id"] == "noisy-judge(sd=1,seed=0)"
    assert manifest["config"]["dataset"] == "data/pydocs"
    assert manifest["counts"]["queries"] == 95
    assert manifest["increments"][0]["system"] == "bm25-plain"
    assert sorted(manifest["stages"]) == ["s1", "s2", "s3", "s4", "s5", "s6"]
    for name in (
        "golden.qrels",
        "refined.trec",
        "judged_at_k.csv",
        "simulation.csv",
        "self_consistency.csv",
        "bias_slopes.csv",
        "position_changes.csv",
    ):
        assert (export / name).exists(), name
    assert (export / "stages" / "s6.done.json").exists()
    assert (export / "calibration" / "calibration.json").exists()
    ppi = pd.read_csv(export / "ppi.csv")
    assert set(ppi["system"]) == {"bm25", "rrf", "bm25-plain"} and (ppi["n_labelled"] <= 30).all()
    judged = pd.read_csv(export / "judged_at_k.csv")
    assert set(judged["system"]) == {"bm25", "bm25-plain"}


def test_offline_report_draws_offline_in_chromium(pydocs_report, tmp_path):
    from browser import check_offline_render

    check_offline_render(pydocs_report.html, tmp_path)


def test_llm_report_never_writes_the_api_key(openai_server, tmp_path, monkeypatch):
    canary = "sk-canary-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    openai_server.chat.handler = scripted({})
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=3)
    reports = tmp_path / "reports"
    params = {
        "dataset": str(data),
        "judge": "openai",
        "model": "gpt-4o-mini",
        "base_url": openai_server.base_url,
        "rewrite": True,
        "depth": 4,
        "min_pool": 4,
        "top_n": 3,
        "refine_max_iterations": 6,
        "incremental_k": 4,
        "sim_queries": 3,
        "cache_dir": str(tmp_path / "cache"),
        "export_dir": str(reports / "export"),
        **FAST,
    }
    # the key is no parameter: passing it is an error before anything runs
    with pytest.raises(InputError, match="unknown parameter 'api_key'"):
        render_report(NOTEBOOK, {**params, "api_key": canary}, reports_dir=reports)
    assert openai_server.request_count() == 0
    report = render_report(NOTEBOOK, params, reports_dir=reports)
    # the kernel read the key from the environment and sent it to the server
    fingerprint = hashlib.sha256(canary.encode()).hexdigest()
    assert openai_server.request_count() > 0
    assert all(r.api_key_sha256 == fingerprint for r in openai_server.requests)
    text = visible_text(report.html.read_text(encoding="utf-8"))
    assert f"Judge: openai-judge:gpt-4o-mini — an LLM, at {openai_server.base_url}" in text
    assert "s4_grade" in text and "s6_rank" in text  # the ledger table
    manifest = json.loads((reports / "export" / "manifest.json").read_text())
    assert manifest["costs"]["total"]["requests"] == openai_server.request_count()
    assert (reports / "export" / "ledger.jsonl").exists()
    # executed notebook, HTML, manifest, ledger, stages, cache: no trace of the key
    assert report.executed.exists()
    assert not scan_for(canary, tmp_path)


@pytest.mark.slow
def test_dbpedia_report_with_graded_judge_calibration_and_simulation(dbpedia_path, tmp_path):
    report = render_report(
        NOTEBOOK,
        {
            **OFFLINE,
            "dataset": str(dbpedia_path),
            "retrievers": "[bm25, bm25-plain]",
            "new_systems": "[]",
            "depth": 20,
            "export_dir": str(tmp_path / "export"),
            "sim_queries": 10,
        },
        reports_dir=tmp_path,
    )
    page = report.html.read_text(encoding="utf-8")
    text = visible_text(page)
    assert BANNER in text
    assert page.count(CHART) == 9  # the offline report's nine, from graded dbpedia qrels
    assert "Judge bias audit: passage length, query overlap, position" in text
    assert "Simulation: refinement vs one-shot" in text and "one-shot low" in text
    export = tmp_path / "export"
    summary = pd.read_csv(export / "simulation_summary.csv")
    assert set(summary["method"]) == {"one-shot", "multi-pass", "refine"}
    assert set(summary["noise_sd"]) == {0.5, 1.0, 2.0} and (summary["n_queries"] == 10).all()
    # DBpedia's 0/1/2 labels go onto the 1-5 scale (dbpedia-entity map); so do the judge's grades
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["judge"]["scale"] == [1, 5]
    cal = json.loads((export / "calibration" / "calibration.json").read_text())
    assert cal["labels"] == [1, 2, 3, 4, 5] and cal["pairs"] > 100
    assert 0 < cal["agreement"]["kappa (quadratic)"] < 1
    grades = pd.read_csv(export / "judgements.csv")
    assert grades["grade"].between(1, 5).all()


def test_report_from_traces_says_how_many_queries_came_from_them_and_how_often(tmp_path):
    """Notebook 02 with ``traces``: an OTLP file of the sample's queries answered by BM25 and a
    second ranking; the queries come from the traces, the production runs join the pool."""
    from ragnb.io.files import read_beir
    from ragnb.io.traces import read_traces, write_example_traces
    from ragnb.retrievers.retrieve import BM25Retriever

    data = read_beir(PYDOCS)
    bm25 = BM25Retriever().index(data.corpus).retrieve(data.judged_queries, k=10)
    runs = {"prod": bm25, "canary": bm25.assign(score=-bm25["score"])}
    spans = write_example_traces(
        tmp_path / "spans.jsonl", data.judged_queries, runs, data.corpus, n_spans=200
    )
    asked = read_traces(spans).queries.sort_values("count", ascending=False, kind="stable")
    params = {
        **FAST,
        "judge": "noisy",
        "new_systems": "[]",
        "traces": str(spans),
        "max_queries": 4,
        "consistency_samples": 0,
        "simulate": False,
        "export_dir": str(tmp_path / "export"),
    }
    report = render_report(NOTEBOOK, params, reports_dir=tmp_path)
    text = visible_text(report.html.read_text(encoding="utf-8"))
    counts = asked["count"].head(4).tolist()
    sample = f"4 queries from traces: the most asked of the {len(asked)} distinct queries"
    assert sample in text and text.index(sample) < text.index("Cost before spending")
    assert "asked " + ", ".join(map(str, counts)) + " times" in text
    assert "Queries from production traces" in text and "4 queries came from traces" in text
    assert "200 retriever spans of 300 spans" in text
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text())
    info = manifest["dataset"]["traces"]
    assert list(info["asked"].values()) == counts
    assert info["systems"] == ["traces-canary", "traces-prod"]
    table = pd.read_csv(tmp_path / "export" / "trace_queries.csv")
    assert table["asked"].tolist() == counts
    pools = pd.read_csv(tmp_path / "export" / "pool_provenance.csv")
    assert {"traces-prod", "traces-canary", "bm25"} <= set(pools["system"])


def test_default_report_uses_the_local_model_and_says_so(tmp_path):
    """The real default: judge='local' (SmolLM2-135M through llama.cpp), on a very small sample."""
    params = {
        "max_queries": 1,
        "depth": 2,
        "min_pool": 2,
        "top_n": 2,
        "refine_batch": 2,
        "new_systems": "[]",
        "retrievers": "[bm25]",
        "ppi_labels": 0,
        "simulate": False,
        "checks": "all",  # off by default with the local model: asked for here
        "cache_dir": str(tmp_path / "cache"),
        "export_dir": str(tmp_path / "export"),
    }
    report = render_report(NOTEBOOK, params, reports_dir=tmp_path)
    page = report.html.read_text(encoding="utf-8")
    # the GGUF file and the server live under the project's venv: no absolute path leaks
    assert str(Path(__file__).resolve().parents[1]) not in page
    text = visible_text(page)
    first = text[: text.index("Cost before spending")]
    assert "Judge: openai-judge:smollm2-135m-instruct" in first and "not a judge to trust" in first
    assert "Sample: 1 of the 95 queries" in first and "shrunk so that the report renders" in first
    assert "Cohen's kappa" in text and "Thomas et al." in text and "Kendall tau" in text
    assert "With the tiny local model (SmolLM2-135M) expect kappa with people near 0" in text
    assert "Bias audit" in text and "Position:" in text
    assert "Judge drift on" in text and "(prompt utility-terse/en#" in text
    assert "Both judges here are the tiny local model (SmolLM2-135M)" in text
    assert "NuggetRecall(vital=1,partial=0.5)@3" in text  # nugget recall of the pool systems
    assert "What these nuggets are worth: close to nothing" in text
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text())
    assert manifest["judge"]["model"] == "smollm2-135m-instruct"
    assert manifest["costs"]["total"]["requests"] >= manifest["counts"]["graded"] > 0
