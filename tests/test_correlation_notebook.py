"""Notebook 05 (measure correlation): its parameters mirror CorrelationConfig; on data/pydocs
without grades it says on its first screen that graded samples are needed and how many queries
qualify; in SIMULATED mode it says the grades are simulated, runs the study, and renders offline
in Chromium."""

from __future__ import annotations

from dataclasses import fields

import pytest
from browser import check_offline_render, visible_text

from ragnb.errors import InputError
from ragnb.report.render import notebook_parameters, render_report, resolve_notebook
from ragnb.studies.correlation import CorrelationConfig

NOTEBOOK = "05_measure_correlation"
CHART = 'class="ragnb-chart"'
FAST = {
    "embedders": "[wordllama]",
    "configs": "[[20, 2], [20, 4]]",
    "n_negatives": 20,
    "llm": "none",
}


def test_parameters_cell_mirrors_config_dataclass_and_takes_no_key():
    declared = notebook_parameters(resolve_notebook(NOTEBOOK))
    assert list(declared) == [f.name for f in fields(CorrelationConfig)]
    defaults = CorrelationConfig()
    for f in fields(CorrelationConfig):
        assert eval(declared[f.name]["default"]) == getattr(defaults, f.name), f.name
        assert declared[f.name]["help"], f"parameter {f.name} has no comment"
        expected = type(getattr(defaults, f.name)).__name__
        assert declared[f.name]["inferred_type_name"] == expected, f.name
    assert not [name for name in declared if "key" in name or "secret" in name]
    assert defaults.graded_path == "" and defaults.simulate_grades_alpha == 0.0
    # the default render: the local stand-in model's grades are skipped unless llm_grades is set
    assert defaults.llm == "local" and not defaults.llm_grades
    assert defaults.mode == "ranked-only" and defaults.local_grades_skipped
    assert CorrelationConfig(llm_grades=True).mode == "llm"


def test_config_rejects_unknown_names_and_two_grade_sources():
    with pytest.raises(InputError, match="unknown parameter 'api_key'"):
        CorrelationConfig.from_params(api_key="sk-nope")
    with pytest.raises(InputError, match="choose one source of grades"):
        CorrelationConfig(graded_path="g.jsonl", simulate_grades_alpha=0.5)
    with pytest.raises(InputError, match="choose one source of grades"):
        CorrelationConfig(graded_path="g.jsonl", llm="openai")
    with pytest.raises(InputError, match="must not hold credentials"):
        CorrelationConfig(llm="openai", base_url="http://user:pw@localhost:8000/v1")
    with pytest.raises(InputError, match=r"base_url is the endpoint of llm='openai'"):
        CorrelationConfig(base_url="http://127.0.0.1:8000/v1")  # llm stays "local"
    with pytest.raises(InputError, match="llm"):
        CorrelationConfig(llm="gpt")
    # a file or a simulation comes before the default local model; llm="none" turns it off
    assert CorrelationConfig(graded_path="g.jsonl").mode == "file"
    assert CorrelationConfig(simulate_grades_alpha=0.5).mode == "simulated"
    assert CorrelationConfig(llm="none").mode == "ranked-only"
    assert not CorrelationConfig(llm="none").local_grades_skipped
    with pytest.raises(InputError, match="llm_grades has the local model grade"):
        CorrelationConfig(llm="none", llm_grades=True)
    with pytest.raises(InputError, match=r"\[Nc, Np\] with 2 <= Np < Nc"):
        CorrelationConfig(configs=[[5, 5]])


def test_default_data_report_says_graded_samples_are_needed(tmp_path):
    result = render_report(NOTEBOOK, {**FAST, "max_queries": 20}, reports_dir=tmp_path)
    text = visible_text(result.html.read_text(encoding="utf-8"))
    statement = "No graded samples: the correlation study is not run."
    assert statement in text and text.index(statement) < text.index("Samples") < 2500
    assert "95 of 95 judged queries qualify" in text  # data/pydocs: every query has >= 2
    assert "graded_path" in text and "base_url" in text and "answer_topK" in text
    skipped = (
        "The score distribution, the correlations, their differences and Acc|Hit skipped "
        "because the data has no graded samples."
    )
    assert skipped in text and text.index(skipped) < text.index("Samples")
    assert "Not run: the first screen says why." in text
    assert "SIMULATED" not in text
    assert result.html.read_text(encoding="utf-8").count(CHART) == 1  # ranked measures only


def test_simulated_report_says_so_first_and_renders_offline(tmp_path):
    params = {
        **FAST,
        "max_queries": 30,
        "simulate_grades_alpha": 0.6,
        "methods": "[spearman, pearson]",
        "n_boot": 50,
        "min_segment": 50,
    }
    result = render_report(NOTEBOOK, params, reports_dir=tmp_path)
    page = result.html.read_text(encoding="utf-8")
    text = visible_text(page)
    banner = "SIMULATED GRADES. The grades in this report are simulated from F(alpha=0.6)"
    assert banner in text and text.index(banner) < text.index("Samples") < 2500
    # ranked measures, score distribution, correlations by K/Np, differences
    assert page.count(CHART) == 4
    assert "Not run" not in text and "skipped because" not in text
    # the samples, every table and the provenance beside the report
    exported = {p.name for p in (tmp_path / NOTEBOOK).iterdir()}
    assert {"query_texts.jsonl", "ranked.jsonl", "graded.jsonl", "correlations.csv"} <= exported
    assert {"differences_spearman.csv", "acc_given_hit.csv", "provenance.json"} <= exported
    check_offline_render(result.html, tmp_path)


def test_without_grades_the_banner_names_the_skipped_parts_and_their_tables_are_absent(tmp_path):
    from ragnb.studies.correlation import run

    config = CorrelationConfig(
        embedders=["wordllama"], n_negatives=20, max_queries=10, llm="none", configs=[[20, 2]]
    )
    result = run(config)
    assert "**The score distribution, the correlations" in result.banner()
    assert set(result.tables()) == {"sample_counts", "ranked_measures"}
    assert set(result.charts()) == {"ranked_measures"}
    written = [p.name for p in result.export(tmp_path / "out")]
    assert written == [
        "query_texts.jsonl",
        "ranked.jsonl",
        "sample_counts.csv",
        "ranked_measures.csv",
        "provenance.json",
    ]
    with pytest.raises(InputError, match="no graded samples"):
        result.correlations()


def test_by_default_the_local_stand_in_model_does_not_grade_and_the_banner_says_how_to():
    from ragnb.studies.correlation import run

    config = CorrelationConfig(
        embedders=["wordllama"], n_negatives=20, max_queries=10, configs=[[20, 2]]
    )
    assert config.llm == "local" and config.mode == "ranked-only"
    result = run(config)
    banner = result.banner()
    assert banner.startswith("**Skipped: the LLM-graded answers, and with them the correlation")
    assert "SmolLM2-135M-Instruct" in banner  # the stand-in is named for what it is
    assert banner.count("set `llm_grades=True` to run them") == 2  # the lead and the parts
    assert "No graded samples" not in banner
    assert result.ledger is None and result.generation == {}  # no server, no request
    assert set(result.tables()) == {"sample_counts", "ranked_measures"}
    assert result.provenance()["config"]["llm_grades"] is False
