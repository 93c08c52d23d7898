"""Notebook 03 and the study behind it: several embedders, tables like the paper's, reports."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import check_offline_render
from openai_server import ChatAnswer

from ragnb.errors import InputError
from ragnb.io.files import read_author_table
from ragnb.report.render import render_report
from ragnb.studies import diagnostics
from ragnb.studies.diagnostics import (
    ABLATIONS,
    DiagnosticsConfig,
    add_noise,
    has_diacritics,
    load_author_table,
    sample_author_table,
)

NOTEBOOK = "03_embedder_diagnostics"
FAST = {  # two quick embedders, a few bundles, BM25 impact on a subset
    "embedders": ["wordllama", "paraphrase-minilm-l3-onnx"],
    "max_bundles": 8,
    "runs": 1,
    "noise_queries": 10,
    "impact_retrievers": ["bm25"],
    "impact_queries": 20,
    "impact_max_docs": 300,
    "n_resamples": 300,
}


def test_unknown_parameter_and_bad_values_are_errors(tmp_path):
    with pytest.raises(InputError, match=r"unknown parameter 'embeders' \(did you mean 'embed"):
        render_report(NOTEBOOK, {"embeders": ["wordllama"]}, reports_dir=tmp_path)
    with pytest.raises(InputError, match="unknown parameter"):
        DiagnosticsConfig.from_params(embeders=["wordllama"])
    with pytest.raises(InputError, match="rewrite must be"):
        DiagnosticsConfig(rewrite="gpt")
    with pytest.raises(InputError, match="max_bundles must be >= 0"):
        DiagnosticsConfig(max_bundles=-1)
    with pytest.raises(InputError, match="impact_retrievers is empty"):
        DiagnosticsConfig(impact_retrievers=[])


def test_sample_author_table_keeps_names_with_diacritics():
    table = load_author_table("default")
    marked = sum(has_diacritics(a) for a in table["author"])
    assert marked >= 3
    sample = sample_author_table(table, 12, seed=3)
    assert len(sample) == 12
    assert sum(has_diacritics(a) for a in sample["author"]) == 3
    assert sample.attrs["sampled"] == (12, len(table))
    # table order kept, rows come from the table, deterministic under the seed
    assert sample.merge(table, on=list(table.columns)).shape[0] == 12
    assert sample.equals(sample_author_table(table, 12, seed=3))
    assert not sample.equals(sample_author_table(table, 12, seed=4))
    assert sample_author_table(table, 0).equals(table.reset_index(drop=True))


def test_read_author_table_names_the_file_line_and_column(tmp_path):
    good = tmp_path / "authors.csv"
    good.write_text("author,title,topic\nAnaïs Nin,Delta of Venus,fiction\n", encoding="utf-8")
    assert read_author_table(good).loc[0, "author"] == "Anaïs Nin"
    no_topic = tmp_path / "no_topic.csv"
    no_topic.write_text("author,title\nA,B\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing column 'topic'") as e:
        read_author_table(no_topic)
    assert e.value.path == str(no_topic) and e.value.line == 1 and e.value.column == "topic"
    empty = tmp_path / "empty.csv"
    empty.write_text("author,title,topic\nA,B,C\n ,E,F\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty author") as e:
        read_author_table(empty)
    assert e.value.line == 3
    with pytest.raises(InputError, match="not found"):
        load_author_table(str(tmp_path / "missing.csv"))


def test_embedders_that_do_not_load_or_are_excluded_are_reported(tmp_path):
    config = DiagnosticsConfig(
        **{**FAST, "embedders": ["wordllama", str(tmp_path / "no-such-model")]},
        exclude=[],
        languages=["en"],
        ablations=["hard_name_mask"],
        cache_dir=str(tmp_path / "cache"),
    )
    result = diagnostics.run(config)
    status = result.embedders_frame().set_index("name")
    assert status.loc["wordllama", "used"] and status.loc["wordllama", "texts_embedded"] > 0
    missing = status.loc[str(tmp_path / "no-such-model")]
    assert not missing["used"] and missing["reason"].startswith("did not load")
    assert result.used_models() == ["wordllama-l2-supercat-256"]
    assert "left out" in result.banner()
    excluded = DiagnosticsConfig(**{**FAST, "embedders": ["wordllama"]}, exclude=["wordllama"])
    with pytest.raises(InputError, match="no embedder could be used.*excluded"):
        diagnostics.run(excluded)


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("nb03")
    result = render_report(NOTEBOOK, dict(FAST), reports_dir=out, update_index=False)
    return result, Path(result.parameters["export_dir"])


def test_default_report_says_which_embedders_produced_the_numbers(default_report):
    result, export = default_report
    html = result.html.read_text(encoding="utf-8")
    first_screen = html[: html.index("Proper names: base margins")]
    assert "Embedders that produced these numbers" in first_screen
    for model_id in ("wordllama-l2-supercat-256", "paraphrase-MiniLM-L3-v2-onnx"):
        assert model_id in first_screen
    prov = json.loads((export / "provenance.json").read_text())
    assert [e["model_id"] for e in prov["embedders"] if e["used"]] == [
        "wordllama-l2-supercat-256",
        "paraphrase-MiniLM-L3-v2-onnx",
    ]
    assert prov["author_table"]["rows"] == 8


def test_default_report_tables_have_the_paper_shapes(default_report):
    result, export = default_report
    # the texts of the bundles the margins measured: one per language and author-table row
    assert "Proper names: one bundle per language" in result.html.read_text(encoding="utf-8")
    bundles = pd.read_csv(export / "bundles.csv")
    margins = pd.read_csv(export / "margins.csv")
    key = ["language", "bundle_id", "author", "topic"]
    drawn = {tuple(row) for row in bundles[key].itertuples(index=False)}
    measured = margins.loc[margins["ablation"] == "base", key]
    assert len(bundles) == len(drawn) == 2 * 8
    assert drawn == {tuple(row) for row in measured.itertuples(index=False)}
    assert (bundles["C1"] != bundles["C2a"]).all() and (bundles["C2a"] != bundles["C2b"]).all()
    abl = pd.read_csv(export / "ablations.csv")
    # every (model, language) has base + the ten ablations, and the mask collapses the margin
    assert set(abl.groupby(["model", "language"]).size()) == {len(ABLATIONS) + 1}
    mask = abl[abl["ablation"] == "hard_name_mask"]
    # -100 up to rounding: the percentage is a mean over queries of per-query ratios
    assert len(mask) == 4 and np.allclose(mask["delta_delta_pct"], -100.0, rtol=0, atol=1e-9)
    base = abl[abl["ablation"] == "base"]
    assert (base["delta_name"] > 0).all() and (base["delta_topic"] > 0).all()
    # the sample keeps names with diacritics, so strip_diacritics changes bundles
    strip = abl[abl["ablation"] == "strip_diacritics"]
    assert (strip["n_changed"] > 0).all()
    levels = pd.read_csv(export / "noise_levels.csv")
    assert set(levels["level"]) == {0, 1, 2, 3, 4}
    zero = levels[levels["level"] == 0]
    assert (zero["drop"] == 0).all() and (zero["cos_clean"].round(6) == 1).all()
    assert (zero["cos_reference"] < 1).all()
    impact = pd.read_csv(export / "impact.csv")
    ndcg = impact[(impact["measure"] == "nDCG@10") & (impact["condition"] == "noisy")]
    assert set(ndcg["language"]) == {"en", "fr"} and (ndcg["n_queries"] == 20).all()
    assert (ndcg["ci_low"] <= ndcg["delta"]).all() and (ndcg["delta"] <= ndcg["ci_high"]).all()
    # retrieval impact of the ablations: base + ten per model, language and measure
    retr = pd.read_csv(export / "ablation_retrieval.csv")
    assert set(retr.groupby(["model", "language", "measure"]).size()) == {len(ABLATIONS) + 1}
    assert set(retr["measure"]) == {"nDCG@10", "RA-nWG@10"} and (retr["n_queries"] == 8).all()
    ab = retr[retr["ablation"] != "base"]
    assert (ab["ci_low"] <= ab["delta"] + 1e-12).all() and (
        ab["delta"] <= ab["ci_high"] + 1e-12
    ).all()


def test_default_report_draws_offline_in_chromium(default_report, tmp_path):
    result, _ = default_report
    check_offline_render(result.html, tmp_path)


@pytest.mark.slow
def test_scifact_report_uses_scifact_titles_and_claims(scifact_path, tmp_path):
    params = {
        **FAST,
        "embedders": ["wordllama"],
        "table": "scifact",
        "dataset": str(scifact_path),
        "max_bundles": 12,
        "impact_queries": 30,
        "impact_max_docs": 500,
    }
    result = render_report(NOTEBOOK, params, reports_dir=tmp_path, update_index=False)
    export = Path(result.parameters["export_dir"])
    table = pd.read_csv(export / "author_table.csv", dtype=str)
    assert len(table) == 12 and {"query_id", "doc_id"} <= set(table.columns)
    corpus = pd.read_json(scifact_path / "corpus.jsonl", lines=True, dtype={"_id": str})
    titles = dict(zip(corpus["_id"], corpus["title"].str.split().str.join(" "), strict=True))
    assert all(
        titles[d].rstrip(". ") == t for d, t in zip(table["doc_id"], table["title"], strict=True)
    )
    impact = pd.read_csv(export / "impact.csv")
    assert set(impact["n_queries"]) == {30}
    html = result.html.read_text(encoding="utf-8")
    assert "author table <code>scifact</code>" in html or "author table `scifact`" in html


def test_llm_rewrite_goes_through_the_judge_client_and_cache(openai_server, tmp_path, monkeypatch):
    """The rewrite hook calls the local server; a second run is served by the cache."""
    key = "sk-test-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    queries = {}

    def restore(request):
        user = next(m["content"] for m in request.json["messages"] if m["role"] == "user")
        noisy = user.split("Query:\n", 1)[1].split("\n\n", 1)[0]
        return ChatAnswer(f"1. {queries.get(noisy, noisy)}")

    openai_server.chat.handler = restore
    config = DiagnosticsConfig(
        embedders=["wordllama"],
        languages=["en"],
        ablations=["hard_name_mask"],
        max_bundles=6,
        runs=1,
        noise_queries=5,
        noise_levels=[0, 3],
        impact_retrievers=["bm25"],
        impact_queries=5,
        impact_max_docs=100,
        n_resamples=200,
        rewrite="llm",
        base_url=openai_server.base_url,
        llm_model="test-rewriter",
        cache_dir=str(tmp_path / "cache"),
    )
    from ragnb.io.files import read_beir

    data = read_beir(config.dataset_path())
    for text in data.judged_queries["text"]:
        queries[add_noise(text.strip(), 3, "en", 0)] = text.strip()
    first = diagnostics.run(config)
    calls = openai_server.request_count("/v1/chat/completions")
    assert calls > 0
    rewritten = first.noise[first.noise["level"] == 3]
    assert rewritten["restored"].all()  # the scripted LLM gives back the clean query
    assert "LLM rewrite by `test-rewriter` at 127.0.0.1" in first.banner()
    impact = first.impact_table(["nDCG@10"])
    rec = impact[(impact["condition"] == "rewritten") & (impact["level"] == 3)]
    assert (rec["delta"] == 0).all()
    second = diagnostics.run(config)
    assert openai_server.request_count("/v1/chat/completions") == calls
    pd.testing.assert_frame_equal(first.noise, second.noise)
    first.export(tmp_path / "export")
    for path in [*(tmp_path / "export").rglob("*"), *(tmp_path / "cache").rglob("*")]:
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
