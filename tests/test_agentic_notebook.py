"""Notebook 07 (agentic retrieval): its parameters mirror AgenticConfig; rendered with small
parameters on data/pydocs with the real local model (SmolLM2-135M-Instruct, a tiny stand-in),
its first screen names that model, every chart draws offline in Chromium, and its numbers are
those a naive reading of the exported trace files gives (OTLP JSON parsed here, not by ragnb).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import fields
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from browser import check_offline_render, visible_text

from ragnb.errors import InputError
from ragnb.report.render import notebook_parameters, render_report, resolve_notebook
from ragnb.studies.agentic import AgenticConfig

NOTEBOOK = "07_agentic_retrieval"
CHART = 'class="ragnb-chart"'
# two questions of each of three systems and one conversation, 2 or 3 searches each; WordLlama
# for the dense retriever
SMALL = {
    "questions": 2,
    "conversations": 1,
    "max_calls": 3,
    "embedder": "wordllama",
    "n_resamples": 200,
}


def test_notebook_is_committed_without_outputs_and_mirrors_the_config():
    nb = nbformat.read(str(resolve_notebook(NOTEBOOK)), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert code[0].metadata.get("tags") == ["parameters"]
    declared = notebook_parameters(resolve_notebook(NOTEBOOK))
    assert list(declared) == [f.name for f in fields(AgenticConfig)]
    defaults = AgenticConfig()
    for f in fields(AgenticConfig):
        assert eval(declared[f.name]["default"]) == getattr(defaults, f.name), f.name
        assert declared[f.name]["help"], f"parameter {f.name} has no comment"
    assert not [name for name in declared if "key" in name or "secret" in name]


def test_the_default_render_stays_small():
    """What the default report asks the model: 3 systems x 3 questions and one conversation
    (2 to 4 turns), each at most 4 searches and 3 model calls."""
    c = AgenticConfig()
    assert [s.name for s in c.systems()] == ["bm25", "dense", "bm25+rerank"]
    assert c.questions * len(c.systems()) + 4 * c.conversations <= 13
    assert c.base_url == "" and c.max_calls == 4 and c.never == 5


def test_config_rejects_what_cannot_run():
    with pytest.raises(InputError, match="unknown parameter 'api_key'"):
        AgenticConfig.from_params(api_key="sk-nope")
    with pytest.raises(InputError, match="retrievers must be distinct names"):
        AgenticConfig(retrievers=["bm25", "hybrid"])
    with pytest.raises(InputError, match=r"reranked \['dense'\] are not among retrievers"):
        AgenticConfig(retrievers=["bm25"], reranked=["dense"])
    with pytest.raises(InputError, match="max_calls"):
        AgenticConfig(min_calls=3, max_calls=2)
    with pytest.raises(InputError, match="at least one question or one conversation"):
        AgenticConfig(questions=0, conversations=0)
    with pytest.raises(InputError, match="base_url needs the model's name"):
        AgenticConfig(base_url="http://127.0.0.1:9/v1")
    assert [s.name for s in AgenticConfig(reranker="none").systems()] == ["bm25", "dense"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("agentic-report")
    return render_report(NOTEBOOK, SMALL, reports_dir=out), out


def _searches(path: Path) -> dict[str, list[tuple[int, list[str]]]]:
    """Per question, its retrieval spans' (call, document ids), read from the OTLP JSON lines
    with nothing but json."""
    out: dict[str, list[tuple[int, list[str]]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for span in (s for ss in rs["scopeSpans"] for s in ss["spans"]):
                attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
                if attrs.get("gen_ai.operation.name") != "retrieval":
                    continue
                docs = [d["id"] for d in json.loads(attrs["gen_ai.retrieval.documents"])]
                out[attrs["ragnb.query.id"]].append((int(attrs["ragnb.agent.call"]), docs))
    return {q: sorted(calls) for q, calls in out.items()}


def _naive(traces: Path, qrels_path: Path, never: int) -> pd.DataFrame:
    """EvidenceRecall and the searches to the first relevant document (``never`` when none)
    of each question, worked out from the files."""
    qrels = pd.read_csv(qrels_path, sep=" ", names=["q", "it", "doc", "rel"], dtype=str)
    relevant = qrels[qrels["rel"].astype(int) > 0].groupby("q")["doc"].apply(set)
    rows = {}
    for q, calls in _searches(traces).items():
        found: set[str] = set()
        first = never
        for call, docs in calls:
            if first == never and relevant[q] & set(docs):
                first = call
            found |= relevant[q] & set(docs)
        rows[q] = {"recall": len(found) / len(relevant[q]), "first": first}
    return pd.DataFrame.from_dict(rows, orient="index").sort_index()


@pytest.mark.slow
def test_report_names_the_model_and_draws_every_chart_offline(rendered, tmp_path):
    result, out = rendered
    page = result.html.read_text(encoding="utf-8")
    text = visible_text(page)
    model = "The agent's model: smollm2-135m-instruct (SmolLM2-135M-Instruct"
    assert model in text and text.index(model) < text.index("The systems side by side")
    assert "A tiny stand-in model decided when to stop" in text
    assert "2 questions asked of each system ( bm25 , dense , bm25+rerank )" in text
    assert "skipped" not in text  # every part ran
    # recall by searches, first evidence, redundancy, comparison, reranker, turns
    assert page.count(CHART) == 6
    assert str(out) not in page and str(Path.home()) not in page
    check_offline_render(result.html, tmp_path)


@pytest.mark.slow
def test_report_numbers_are_what_the_trace_files_say(rendered):
    result, out = rendered
    export = out / NOTEBOOK
    summary = pd.read_csv(export / "summary.csv", index_col="system")
    first = pd.read_csv(export / "calls_to_first.csv")
    pairs = pd.read_csv(export / "pairs.csv").set_index(["measure", "pair"])
    naive = {}
    for system in ("bm25", "dense"):  # the agent saw what its retrieval spans returned
        traces = export / "traces" / f"{system}.jsonl"
        naive[system] = _naive(traces, traces.with_suffix(".qrels"), never=4)
        assert len(naive[system]) == 2
        assert summary.loc[system, "EvidenceRecall"] == pytest.approx(
            naive[system]["recall"].mean()
        )
        counts = first[first["system"] == system].set_index("calls")["questions"]
        labels = naive[system]["first"].map(lambda c: "never" if c == 4 else str(c))
        assert counts.to_dict() == {k: int((labels == k).sum()) for k in ["1", "2", "3", "never"]}
    # the never-found questions counted at 4 searches (max_calls + 1), not dropped
    row = pairs.loc[("CallsToFirstRel(never=4)", "bm25 − dense")]
    assert row["n_queries"] == 2
    want = (naive["bm25"]["first"] - naive["dense"]["first"]).mean()
    assert row["difference"] == pytest.approx(want)
    assert np.isfinite([row["ci_low"], row["ci_high"]]).all()
    # the reranked system's reranker spans, the conversation's turns
    rerank = pd.read_csv(export / "rerank.csv")
    assert set(rerank["system"]) == {"bm25+rerank"} and len(rerank) >= 2
    gain = summary.loc["bm25+rerank", "RerankGain@10"]
    assert gain == pytest.approx(rerank.groupby("query_id")["gain"].mean().mean())
    turns = pd.read_csv(export / "turn_curves.csv")
    assert 2 <= turns["turn"].nunique() <= 4
    provenance = json.loads((export / "provenance.json").read_text())
    assert provenance["model"]["name"] == "smollm2-135m-instruct"
    assert set(provenance["traces"]) == {"bm25", "dense", "bm25+rerank", "conversations"}
