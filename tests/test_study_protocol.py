"""Every study answers one protocol: ``run(config)`` -> result with ``banner``, ``tables``,
``charts``, ``export`` and ``provenance``; every notebook's parameters cell is generated from its
config."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ragnb.report.protocol import StudyResult, export_tables, skipped
from ragnb.report.render import notebook_parameters
from ragnb.studies.registry import STUDIES, study, sync_parameters

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_every_parameters_cell_is_the_one_its_config_generates():
    assert sync_parameters(NOTEBOOKS) == []


def test_sync_rewrites_a_drifted_cell_and_keeps_the_rest(tmp_path):
    for s in STUDIES:
        (tmp_path / f"{s.notebook}.ipynb").write_bytes(
            (NOTEBOOKS / f"{s.notebook}.ipynb").read_bytes()
        )
    path = tmp_path / "06_what_if.ipynb"
    nb = json.loads(path.read_text())
    index = next(
        i for i, c in enumerate(nb["cells"]) if "parameters" in c["metadata"].get("tags", [])
    )
    nb["cells"][index]["source"] = ["seed: int = 99  # drifted\n"]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    assert sync_parameters(tmp_path) == ["06_what_if"]
    assert sync_parameters(tmp_path, write=True) == ["06_what_if"]
    assert sync_parameters(tmp_path) == []
    assert path.read_bytes() == (NOTEBOOKS / "06_what_if.ipynb").read_bytes()


@pytest.mark.parametrize("entry", STUDIES, ids=lambda s: s.name)
def test_papermill_reads_each_config_field_back_from_the_notebook(entry):
    declared = notebook_parameters(NOTEBOOKS / f"{entry.notebook}.ipynb")
    config_class = entry.config_class()
    assert list(declared) == [f.name for f in fields(config_class)]
    defaults = config_class()
    for f in fields(config_class):
        assert eval(declared[f.name]["default"]) == getattr(defaults, f.name), f.name
        assert declared[f.name]["help"], f.name


def test_study_names_resolve_and_an_unknown_one_lists_the_known():
    assert study("01").name == "retrieval"
    assert study("whatif").notebook == "06_what_if"
    with pytest.raises(Exception, match="retrieval, golden"):
        study("nope")


def test_skipped_notice_reads_as_a_sentence():
    assert skipped("Calibration", "the dataset has no human labels.") == (
        "**Calibration skipped** because the dataset has no human labels."
    )


def test_export_tables_writes_csv_and_provenance_and_refuses_a_path_as_name(tmp_path):
    paths = export_tables({"aggregate": pd.DataFrame({"a": [1]})}, {"x": 1}, tmp_path / "out")
    assert [p.name for p in paths] == ["aggregate.csv", "provenance.json"]
    assert json.loads(paths[1].read_text()) == {"x": 1}
    with pytest.raises(ValueError, match="file stem"):
        export_tables({"../evil": pd.DataFrame()}, {}, tmp_path)


# ----------------------------------------------------------------------------- the studies
# Each entry: ``make(tmp_path, request) -> (config, run_kwargs)``, a config that runs on the sample
# dataset (``data/pydocs``) in seconds, offline.

TINY: dict[str, Callable[[Path, pytest.FixtureRequest], tuple[Any, dict[str, Any]]]] = {}


def _tiny_retrieval(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    from ragnb.studies.retrieval import RetrievalEvaluationConfig

    config = RetrievalEvaluationConfig(
        retrievers=["bm25"], depth=10, cutoffs=[1, 5, 10], proc_pool=10, n_resamples=100
    )
    return config, {"progress": False}


TINY["retrieval"] = _tiny_retrieval


def _tiny_diagnostics(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    from ragnb.studies.diagnostics import DiagnosticsConfig

    config = DiagnosticsConfig(
        embedders=["wordllama"],
        exclude=[],
        max_bundles=3,
        runs=1,
        languages=["en"],
        ablations=["hard_name_mask"],
        noise_levels=[0, 2],
        noise_queries=5,
        impact_retrievers=["bm25"],
        impact_queries=10,
        impact_max_docs=100,
        n_resamples=50,
        cache_dir=str(tmp_path / "cache"),
    )
    return config, {}


TINY["diagnostics"] = _tiny_diagnostics


def _tiny_whatif(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    from ragnb.studies.whatif import WhatIfConfig

    config = WhatIfConfig(
        retrievers=["bm25"],
        depth=10,
        ks=[1, 5, 10],
        alphas=[0.0, 0.5, 1.0],
        families=["F", "T", "P"],
        rank_families=["F"],
    )
    return config, {"progress": False}


TINY["whatif"] = _tiny_whatif


def _tiny_golden(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    from ragnb.studies.golden import GoldenSetConfig

    sizes = {"max_queries": 3, "depth": 5, "min_pool": 5, "top_n": 3, "sim_queries": 2}
    simulated = {"sim_noise_levels": [1.0], "sim_budgets": [1.0]}
    systems = {"retrievers": ["bm25"], "new_systems": ["bm25-plain"]}
    config = GoldenSetConfig(
        judge="noisy", cache_dir=str(tmp_path / "cache"), **sizes, **simulated, **systems
    )
    return config, {}


TINY["golden"] = _tiny_golden


@pytest.mark.parametrize("entry", STUDIES, ids=lambda s: s.name)
def test_each_study_answers_the_protocol(entry, tmp_path, request):
    if entry.name not in TINY:
        pytest.fail(f"no tiny config for study {entry.name}")
    make = TINY[entry.name]
    config, kwargs = make(tmp_path, request)
    result = entry.run(config, **kwargs)
    assert isinstance(result, StudyResult)
    assert result.config is config
    banner = result.banner()
    assert isinstance(banner, str) and banner.strip()
    tables = result.tables()
    assert tables and all(isinstance(t, pd.DataFrame) for t in tables.values())
    assert isinstance(result.charts(), dict)
    written = result.export(tmp_path / "export")
    names = {p.name for p in written}
    assert "provenance.json" in names
    assert {f"{name}.csv" for name in tables} <= names
    assert all(p.is_file() for p in written)
    provenance = result.provenance()
    assert provenance["config"]
    json.dumps(provenance, default=str)


def _tiny_clq(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    from ragnb.studies.clq import ClqTradeoffsConfig

    config = ClqTradeoffsConfig(
        embedders=["wordllama"],
        dims=[64],
        chunkers=["document"],
        indexes=["flat", "hnsw"],
        pool_ks=[50],
        rerankers=["none"],
        modes=["dense"],
        rewriters=["none"],
        dynamic_margins=[],
        max_docs=200,
        max_queries=10,
        warmup=1,
        export_dir=str(tmp_path / "sweep"),
    )
    return config, {}


def _tiny_correlation(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    from ragnb.studies.correlation import CorrelationConfig

    config = CorrelationConfig(
        embedders=["wordllama"],
        n_negatives=20,
        max_queries=20,
        simulate_grades_alpha=0.6,
        methods=["spearman"],
        n_boot=20,
        min_segment=20,
        export_dir=str(tmp_path / "samples"),
    )
    return config, {}


TINY["clq"] = _tiny_clq
TINY["correlation"] = _tiny_correlation


def _tiny_agentic(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    """The agent asks the scripted server (the protocol, not the model's answers, is the point;
    notebook 07's own test renders it with the local model)."""
    from ragnb.studies.agentic.study import AgenticConfig

    server = request.getfixturevalue("openai_server")
    server.chat.handler = lambda req: '{"action": "stop", "query": ""}'
    request.getfixturevalue("monkeypatch").setenv("OPENAI_API_KEY", "sk-test")
    config = AgenticConfig(
        retrievers=["bm25"],
        reranker="none",
        reranked=[],
        questions=2,
        conversations=1,
        max_calls=2,
        n_resamples=100,
        base_url=server.base_url,
        model="agent-test",
        cache_dir=str(tmp_path / "cache"),
    )
    return config, {}


TINY["agentic"] = _tiny_agentic
