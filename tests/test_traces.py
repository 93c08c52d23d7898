"""Production traces in: OpenInference retriever spans -> queries, runs and corpus rows.

A generated OTLP JSON file of 200 retriever spans (the sample dataset's queries answered by two
retrievers) round-trips into queries with counts, runs and corpus; malformed spans are counted by
cause; Phoenix's span export (JSON lines and parquet) reads the same; ``ragnb traces import``
writes a BEIR folder and TREC runs.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.io.interop import read_traces as interop_read_traces
from ragnb.io.readers import read_run
from ragnb.io.traces import (
    BAD_SPAN_CAUSES,
    otlp_request,
    query_key,
    read_traces,
    retriever_span,
    write_example_traces,
)
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies.golden.from_traces import TRACE_SYSTEM_PREFIX, trace_source

PYDOCS = Path(__file__).resolve().parents[1] / "data" / "pydocs"
DEPTH = 5


@pytest.fixture(scope="module")
def pydocs():
    return read_beir(PYDOCS)


@pytest.fixture(scope="module")
def source_runs(pydocs):
    """Two retrievers' runs over the judged queries: BM25 and BM25 with its order reversed
    within the top 10 (a second, different system, without a second index)."""
    queries = pydocs.judged_queries
    bm25 = BM25Retriever().index(pydocs.corpus).retrieve(queries, k=10)
    reverse = bm25.assign(score=-bm25["score"])
    return {"bm25": bm25, "reverse": reverse}


@pytest.fixture(scope="module")
def example(tmp_path_factory, pydocs, source_runs):
    path = tmp_path_factory.mktemp("traces") / "spans.jsonl"
    write_example_traces(path, pydocs.judged_queries, source_runs, pydocs.corpus, n_spans=200)
    return path


def _raw_retriever_spans(path: Path) -> list[dict]:
    """Reference reader: every RETRIEVER span of an OTLP file as a plain dict of attributes."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
                    if attrs.get("openinference.span.kind") == "RETRIEVER":
                        out.append({"name": span["name"], "trace": span["traceId"], **attrs})
    return out


def test_example_has_200_retriever_spans_of_two_retrievers(example):
    spans = _raw_retriever_spans(example)
    assert len(spans) == 200
    assert Counter(s["name"] for s in spans) == {"bm25": 100, "reverse": 100}
    traces = read_traces(example)
    assert traces.retriever_spans == 200
    assert traces.spans == 300  # one CHAIN root per request, read and skipped
    assert traces.bad.empty


def test_queries_are_deduplicated_by_normalised_text_with_request_counts(example, pydocs):
    traces = read_traces(example)
    spans = [s for s in _raw_retriever_spans(example) if s["name"] == "bm25"]
    expected = Counter(query_key(s["input.value"]) for s in spans)
    got = {
        query_key(t): n
        for t, n in zip(traces.queries["text"], traces.queries["count"], strict=True)
    }
    assert got == dict(expected)
    assert traces.queries["count"].sum() == 100  # requests, not spans (two retrievers each)
    assert traces.queries["query_id"].is_unique
    variants = {s["input.value"] for s in spans}
    assert len(variants) > len(traces.queries)  # lower-cased and padded wordings were merged
    dataset_keys = {query_key(t) for t in pydocs.queries["text"]}
    assert set(got) <= dataset_keys


def test_runs_are_the_retrievers_top_depth_with_their_scores(example, pydocs, source_runs):
    traces = read_traces(example)
    assert sorted(traces.runs) == ["bm25", "reverse"]
    by_key = {
        query_key(t): q
        for q, t in zip(pydocs.queries["query_id"], pydocs.queries["text"], strict=True)
    }
    to_trace_id = {
        by_key[query_key(t)]: q
        for q, t in zip(traces.queries["query_id"], traces.queries["text"], strict=True)
    }
    for name, source in source_runs.items():
        run = traces.runs[name]
        assert set(run["query_id"]) == set(traces.queries["query_id"])
        for dataset_qid, trace_qid in to_trace_id.items():
            want = (
                source[source["query_id"] == dataset_qid]
                .sort_values(["score", "doc_id"], ascending=False)
                .head(DEPTH)
            )
            got = run[run["query_id"] == trace_qid]
            assert got["doc_id"].tolist() == want["doc_id"].tolist()
            np.testing.assert_array_equal(got["score"].to_numpy(), want["score"].to_numpy())


def test_corpus_rows_carry_the_documents_content(example, pydocs):
    traces = read_traces(example)
    seen = set().union(*(set(r["doc_id"]) for r in traces.runs.values()))
    assert set(traces.corpus["doc_id"]) == seen
    texts = dict(zip(pydocs.corpus["doc_id"], pydocs.corpus["text"], strict=True))
    assert all(
        texts[d] == t for d, t in zip(traces.corpus["doc_id"], traces.corpus["text"], strict=True)
    )
    assert (traces.corpus["title"] == "").all()


def test_interop_reexports_read_traces():
    assert interop_read_traces is read_traces


def _write(path: Path, *requests: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    return path


def _span(query, docs, sid, **kw):
    return retriever_span(query, docs, span_id=sid, trace_id="t" + sid, **kw)


def test_malformed_spans_are_counted_by_cause_and_named(tmp_path, example):
    good = _span("what is bm25", [{"id": "d1", "score": 1.0}], "01", name="r")
    no_query = _span("   ", [{"id": "d1", "score": 1.0}], "02", name="r")
    no_docs = _span("a query", [], "03", name="r")
    bad_id = _span("a query", [{"id": "has space", "score": 1.0}], "04", name="r")
    text_score = _span("a query", [{"id": "d1", "score": 1.0}], "05", name="r")
    text_score["attributes"][3]["value"] = {"stringValue": "high"}
    nan_score = _span("a query", [{"id": "d1", "score": float("nan")}], "06", name="r")
    nan_score["attributes"][3]["value"] = {"doubleValue": "NaN"}
    partial = _span("a query", [{"id": "d1", "score": 1.0}, {"id": "d2"}], "07", name="r")
    path = _write(
        tmp_path / "bad.jsonl",
        otlp_request([good, no_query]),
        otlp_request([no_docs, bad_id]),
        otlp_request([text_score, nan_score, partial]),
    )
    traces = read_traces(path)
    assert traces.bad_by_cause() == {
        "no query": 1,
        "no documents": 1,
        "bad document id": 1,
        "score not a number": 3,
    }
    assert list(traces.bad_by_cause()) == list(BAD_SPAN_CAUSES)
    assert traces.bad[["line", "span_id"]].values.tolist() == [
        [1, "02"],
        [2, "03"],
        [2, "04"],
        [3, "05"],
        [3, "06"],
        [3, "07"],
    ]
    assert traces.queries["text"].tolist() == ["what is bm25"]
    assert "score not a number: 3" in traces.describe()


def test_a_file_without_a_usable_span_is_an_error_naming_the_causes(tmp_path):
    path = _write(tmp_path / "t.jsonl", otlp_request([_span("q", [], "01")]))
    with pytest.raises(InputError, match=r"no usable retriever span.*no documents: 1"):
        read_traces(path)


def test_a_line_that_is_not_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    good = json.dumps(otlp_request([_span("q", [{"id": "d"}], "01")]))
    path.write_text(good + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t\.jsonl, line 2: not JSON"):
        read_traces(path)


def test_spans_without_scores_rank_by_position_and_the_latest_span_wins(tmp_path):
    old = _span("q one", [{"id": "a"}, {"id": "b"}], "01", name="r", start_ns=10)
    new = _span("Q  one", [{"id": "c"}, {"id": "a"}, {"id": "c"}], "02", name="r", start_ns=20)
    path = _write(tmp_path / "t.jsonl", otlp_request([new]), otlp_request([old]))
    traces = read_traces(path)
    run = traces.runs["r"]
    assert run["doc_id"].tolist() == ["c", "a"]  # the later span; the repeated "c" kept once
    assert run["score"].tolist() == [3.0, 2.0]  # n - rank, n = 3 documents returned
    assert traces.queries["count"].tolist() == [2]


def test_runs_can_be_named_by_a_resource_attribute(tmp_path):
    a = otlp_request([_span("q", [{"id": "d", "score": 1.0}], "01")], service_name="prod")
    b = otlp_request([_span("q", [{"id": "e", "score": 1.0}], "02")], service_name="canary")
    traces = read_traces(_write(tmp_path / "t.jsonl", a, b), retriever_attribute="service.name")
    assert sorted(traces.runs) == ["canary", "prod"]
    assert traces.runs["canary"]["doc_id"].tolist() == ["e"]


def _phoenix_frame(traces_file: Path) -> pd.DataFrame:
    """The example's spans as Phoenix's get_spans_dataframe() lays them out."""
    rows = []
    for s in _raw_retriever_spans(traces_file):
        docs, i = [], 0
        while f"retrieval.documents.{i}.document.id" in s:
            p = f"retrieval.documents.{i}.document."
            docs.append(
                {
                    "document.id": s[p + "id"],
                    "document.score": s[p + "score"],
                    "document.content": s[p + "content"],
                }
            )
            i += 1
        rows.append(
            {
                "name": s["name"],
                "span_kind": "RETRIEVER",
                "context.span_id": f"{len(rows):016x}",
                "context.trace_id": s["trace"],
                "start_time": pd.Timestamp("2026-01-01", tz="UTC")
                + pd.Timedelta(seconds=len(rows)),
                "attributes.input.value": s["input.value"],
                "attributes.retrieval.documents": docs,
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_phoenix_exports_read_as_the_otlp_file(tmp_path, example, form):
    frame = _phoenix_frame(example)
    path = tmp_path / f"spans.{form}"
    if form == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True, date_format="iso")
    got, want = read_traces(path), read_traces(example)
    pd.testing.assert_frame_equal(got.queries, want.queries)
    pd.testing.assert_frame_equal(got.corpus, want.corpus)
    assert sorted(got.runs) == sorted(want.runs)
    for name in want.runs:
        pd.testing.assert_frame_equal(got.runs[name], want.runs[name])


def test_cli_import_writes_a_beir_folder_and_one_run_per_retriever(tmp_path, example, capsys):
    out = tmp_path / "beir"
    assert main(["traces", "import", str(example), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "200 retriever spans" in printed and "bad spans: 0" in printed
    traces = read_traces(example)
    lines = [json.loads(x) for x in (out / "queries.jsonl").read_text().splitlines()]
    assert [q["_id"] for q in lines] == traces.queries["query_id"].tolist()
    assert [q["count"] for q in lines] == traces.queries["count"].tolist()
    data = read_beir(out, qrels="optional")
    assert len(data.corpus) == len(traces.corpus)
    for name, run in traces.runs.items():
        back = read_run(out / "runs" / f"{name}.trec")
        merged = back.merge(run, on=["query_id", "doc_id"], suffixes=("", "_t"))
        assert len(merged) == len(run)
        np.testing.assert_array_equal(merged["score"], merged["score_t"])
    assert json.loads((out / "traces.json").read_text())["retriever_spans"] == 200


def test_cli_import_with_a_dataset_names_queries_as_a_golden_set_does(
    tmp_path, example, pydocs, capsys
):
    out = tmp_path / "prod"
    assert main(["traces", "import", str(example), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "query ids: q + 12 hex digits" in printed and "import with --dataset DIR" in printed
    argv = ["traces", "import", str(example), "--out", str(out), "--dataset", str(PYDOCS)]
    assert main(argv) == 0
    traces = read_traces(example)
    n = len(traces.queries)
    assert f"query ids: {n} of {n} taken from {PYDOCS / 'queries.jsonl'}" in capsys.readouterr().out
    golden = trace_source(example, pydocs).queries
    lines = [json.loads(x) for x in (out / "queries.jsonl").read_text().splitlines()]
    assert {q["_id"] for q in lines} == set(golden["query_id"])
    for name in traces.runs:
        run = read_run(out / "runs" / f"{name}.trec")
        assert set(run["query_id"]) == set(golden["query_id"])
    summary = json.loads((out / "traces.json").read_text())
    assert summary["dataset_ids"] == n and summary["ids_from"].endswith("queries.jsonl")
    assert main([*argv[:-1], str(tmp_path)]) == 2
    assert "--dataset: no queries.jsonl in this folder" in capsys.readouterr().err


def test_a_query_the_dataset_lacks_keeps_its_trace_id(example, pydocs):
    traces = read_traces(example)
    first = traces.queries.iloc[0]
    held = pydocs.queries[pydocs.queries["text"].map(query_key) != query_key(first["text"])]
    renamed = traces.with_dataset_ids(held, "q.jsonl")
    assert renamed.queries["query_id"].iloc[0] == first["query_id"]  # q + hash of its text
    assert renamed.queries["query_id"].iloc[1] in set(held["query_id"])
    n = len(traces.queries)
    assert renamed.dataset_ids == n - 1
    assert set(renamed.runs["bm25"]["query_id"]) == set(renamed.queries["query_id"])
    assert f"query ids: {n - 1} of {n} taken from q.jsonl" in renamed.describe()


def test_cli_import_of_a_bad_file_says_where(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text("[1, 2]\n", encoding="utf-8")
    assert main(["traces", "import", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "t.jsonl, line 1: expected a JSON object" in capsys.readouterr().err


def test_golden_trace_source_keeps_dataset_ids_and_most_asked_first(example, pydocs):
    source = trace_source(example, pydocs, max_queries=3)
    counts = source.queries["count"].tolist()
    assert counts == sorted(counts, reverse=True) and len(counts) == 3
    assert set(source.queries["query_id"]) <= set(pydocs.queries["query_id"])
    assert sorted(source.runs) == [TRACE_SYSTEM_PREFIX + "bm25", TRACE_SYSTEM_PREFIX + "reverse"]
    for run in source.runs.values():
        assert set(run["query_id"]) == set(source.queries["query_id"])
    assert source.corpus.empty  # every document is in the dataset's corpus
    assert source.info["asked"] == dict(zip(source.queries["query_id"], counts, strict=True))
    assert f"asked {counts[0]}, {counts[1]}, {counts[2]} times" in source.source


def test_notebook_01_compares_the_production_run_with_the_retrievers_on_the_golden_set(
    tmp_path, example
):
    """Notebook 02 from traces exports the golden qrels and the production runs; notebook 01
    evaluates those runs beside its own retrievers on the golden qrels."""
    from ragnb.io.readers import read_qrels
    from ragnb.studies import golden, retrieval

    export = tmp_path / "golden"
    config = golden.GoldenSetConfig(
        traces=str(example),
        judge="noisy",
        retrievers=["bm25"],
        new_systems=[],
        max_queries=6,
        simulate=False,
        consistency_samples=0,
        judge_audit=False,
        drift_prompt="",
        ppi_labels=0,
        export_dir=str(export),
    )
    golden.run(config).export(str(export))
    runs = [str(export / "runs" / f"traces-{name}.trec") for name in ("bm25", "reverse")]
    comparison = retrieval.run(
        retrieval.RetrievalEvaluationConfig(
            retrievers=["bm25"],
            runs=runs,
            qrels=str(export / "golden.qrels"),
            depth=10,
            cutoffs=[5, 10],
            proc_pool=10,
            significance=["nDCG@10"],
            n_resamples=200,
        )
    )
    qrels = read_qrels(export / "golden.qrels")
    headline = comparison.headline(5)
    assert headline.index.tolist() == ["bm25", "traces-bm25", "traces-reverse"]
    assert (headline["n_queries"] == qrels["query_id"].nunique()).all()
    # the kit's BM25 and the production BM25 spans rank the same top 5: equal nDCG@5
    assert headline.loc["bm25", "nDCG@5"] == pytest.approx(headline.loc["traces-bm25", "nDCG@5"])
    assert comparison.significance is not None
    with pytest.raises(InputError, match="runs name the same system twice"):
        retrieval.RetrievalEvaluationConfig(retrievers=["bm25"], runs=["x/bm25.trec"])


def test_ragnb_golden_takes_traces_as_its_query_source(tmp_path, example, capsys):
    out = tmp_path / "golden"
    argv = ["golden", "--dataset", str(PYDOCS), "--traces", str(example), "--judge", "noisy"]
    argv += ["--retriever", "bm25", "--max-queries", "3", "--depth", "5", "--top-n", "3"]
    argv += ["--refine-max-iterations", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    assert "judgements of 3 queries" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["dataset"]["traces"]["selected"] == 3
    assert (out / "runs" / "traces-bm25.trec").exists()


def test_cli_example_writes_spans_of_the_datasets_queries(tmp_path, pydocs, capsys):
    out = tmp_path / "spans.jsonl"
    argv = ["traces", "example", str(out), "--dataset", str(PYDOCS), "--retrievers", "bm25"]
    assert main([*argv, "--spans", "20", "--depth", "3"]) == 0
    assert "20 retriever spans of ['bm25']" in capsys.readouterr().out
    traces = read_traces(out)
    assert traces.retriever_spans == 20 and list(traces.runs) == ["bm25"]
    assert traces.runs["bm25"].groupby("query_id").size().max() == 3
    dataset_keys = {query_key(t) for t in pydocs.queries["text"]}
    assert {query_key(t) for t in traces.queries["text"]} <= dataset_keys
