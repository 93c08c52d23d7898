"""Issue #14: a golden set from queries alone (no qrels; a text, CSV or JSONL query file), through
the pipeline, the CLI and notebook 02, with human labels from a file and PPI intervals."""

from __future__ import annotations

import gzip
import json
import re

import pandas as pd
import pytest
from test_golden import PYDOCS, scripted
from test_golden_notebook import visible_text

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.io.files import read_beir, write_jsonl
from ragnb.io.readers import query_id_of, read_qrels, read_query_file
from ragnb.report.render import render_report
from ragnb.studies import golden
from ragnb.studies.golden import GoldenSetConfig, LabelStore, build_pipeline, calibration_sample
from ragnb.studies.golden.evaluation import (
    calibrate_judge,
    human_labels_for,
    ppi_for,
    ppi_labels_for,
)

# ----------------------------------------------------------------------------- query files


def test_text_csv_and_jsonl_query_files(tmp_path):
    txt = tmp_path / "q.txt"
    txt.write_text("\ufeffwhat is BM25?\n\n  how do I sort a list  \n", encoding="utf-8")
    q = read_query_file(txt)
    assert q["text"].tolist() == ["what is BM25?", "how do I sort a list"]
    # ids: q + 12 hex digits of the text's SHA-256, the same whatever the line order
    assert q["query_id"].tolist() == [
        query_id_of("what is BM25?"),
        query_id_of("how do I sort a list"),
    ]
    assert all(re.fullmatch(r"q[0-9a-f]{12}", i) for i in q["query_id"])
    txt.write_text("how do I sort a list\nwhat is BM25?\n", encoding="utf-8")
    assert set(read_query_file(txt)["query_id"]) == set(q["query_id"])
    csv = tmp_path / "q.csv"
    csv.write_text('query_id,text\nA1,"sort, then search"\nA2,what is BM25?\n', encoding="utf-8")
    assert read_query_file(csv).values.tolist() == [
        ["A1", "sort, then search"],
        ["A2", "what is BM25?"],
    ]
    only = tmp_path / "only.csv"
    only.write_text("text\nwhat is BM25?\n", encoding="utf-8")
    assert read_query_file(only)["query_id"].tolist() == [query_id_of("what is BM25?")]
    gz = tmp_path / "q.txt.gz"
    gz.write_bytes(gzip.compress(b"what is BM25?\n"))
    assert len(read_query_file(gz)) == 1
    jsonl = tmp_path / "q.jsonl"
    write_jsonl([{"_id": "x", "text": "t"}], jsonl)
    assert read_query_file(jsonl).values.tolist() == [["x", "t"]]


@pytest.mark.parametrize(
    ("name", "content", "message", "line"),
    [
        ("bad.csv", "id,query\n1,x\n", "header must be 'query_id,text' or 'text'", 1),
        ("bad.csv", "query_id,text\nA,x\nB,y,z\n", "expected 2 fields", 3),
        ("bad.csv", "query_id,text\nA,x\nB,  \n", "empty query text", 3),
        ("bad.csv", "query_id,text\nA,x\nA,y\n", "duplicate query id 'A' (first on line 2)", 3),
        ("bad.csv", "query_id,text\nA B,x\n", "holds white space", 2),
        ("bad.txt", "one\ntwo\n\none\n", "duplicate query 'one' (first on line 1)", 4),
        ("bad.txt", "\n  \n", "holds no queries", None),
        ("bad.tsv", "a\n", "a query file ends in one of", None),
    ],
)
def test_bad_query_files_name_the_file_and_line(tmp_path, name, content, message, line):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_query_file(path)
    text = str(info.value)
    assert message in text and name in text
    if line is not None:
        assert f"line {line}" in text


def test_query_file_that_is_not_utf8_or_missing(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_query_file(path)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_query_file(tmp_path / "nope.txt")


# ----------------------------------------------------------------------------- queries alone


def queries_alone(dst, n_queries: int = 2):
    """pydocs' corpus and its first ``n_queries`` queries, without qrels."""
    data = read_beir(PYDOCS)
    write_jsonl(
        [{"_id": d, "title": t, "text": x} for d, t, x in data.corpus.itertuples(index=False)],
        dst / "corpus.jsonl",
    )
    q = data.judged_queries.head(n_queries)
    write_jsonl(
        [{"_id": i, "text": t} for i, t in q.itertuples(index=False)], dst / "queries.jsonl"
    )
    return dst, data


def small(tmp_path, server, **kw) -> GoldenSetConfig:
    params = dict(
        retrievers=["bm25"],
        new_systems=[],
        depth=4,
        min_pool=4,
        top_n=2,
        refine_max_iterations=2,
        judge="openai",
        base_url=server.base_url,
        simulate=False,
        cache_dir=str(tmp_path / "cache"),
        export_dir=str(tmp_path / "run"),
    )
    params.update(kw)
    return GoldenSetConfig(**params)


def test_queries_alone_build_and_export_a_golden_set(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.chat.handler = scripted({})
    data, _ = queries_alone(tmp_path / "d")
    assert not read_beir(data, qrels="optional").has_qrels
    with pytest.raises(FileNotFoundError, match="test.tsv"):
        read_beir(data)
    # an offline judge reads labels: it refuses, saying what to use instead
    result = golden.run(small(tmp_path, openai_server, dataset=str(data), judge="noisy"))
    needs = result.banner()
    assert result.golden is None and result.tables() == {}
    assert "has none (no qrels/test.tsv)" in needs and "judge='local'" in needs
    assert "No human labels" in needs and openai_server.request_count() == 0
    # a query file overrides the dataset's queries
    qfile = tmp_path / "mine.txt"
    qfile.write_text("Abstract Base Classes\nCommand-line parsing library\n", encoding="utf-8")
    config = small(tmp_path, openai_server, dataset=str(data), queries=str(qfile))
    gs = build_pipeline(config).run()
    run = tmp_path / "run"
    qrels = read_qrels(run / "golden.qrels")
    assert set(qrels["query_id"]) == {
        query_id_of("Abstract Base Classes"),
        query_id_of("Command-line parsing library"),
    }
    assert qrels["relevance"].between(1, 5).all() and len(qrels) == gs.manifest()["counts"]["valid"]
    prov = pd.read_csv(run / "judgements.csv")
    assert {"source", "systems"} <= set(prov.columns) and (prov["systems"] == "bm25").all()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["dataset"]["qrels_pairs"] == 0
    assert manifest["dataset"]["queries_from"].startswith("2 of the 2 queries of the query file")
    assert human_labels_for(gs) is None and ppi_labels_for(gs) is None
    with pytest.raises(InputError, match="no human labels"):
        calibrate_judge(gs)


def test_human_label_file_gives_calibration_and_ppi(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.chat.handler = scripted({})
    data, full = queries_alone(tmp_path / "d", n_queries=4)
    # three queries (the notebook default was 3 when this test was written): more judged pairs
    # than the 12 of the calibration sample
    config = small(tmp_path, openai_server, dataset=str(data), depth=6, min_pool=6, max_queries=3)
    gs = build_pipeline(config).run()
    # a person (here pydocs' labels) labels a calibration sample through the label store
    sample = calibration_sample(gs.judgements, n=12, seed=0, min_per_stratum=1)
    store = LabelStore(tmp_path / "human.qrels")
    store.write_sample(sample)
    truth = full.qrels.set_index(["query_id", "doc_id"])["relevance"]
    for q, d in zip(sample["query_id"], sample["doc_id"], strict=True):
        store.label(q, d, int(truth.get((q, d), 0)))
    gs.build.config.human_labels = str(tmp_path / "human.qrels")
    human = human_labels_for(gs)
    assert len(human) == 12 and human.grade_map[0] == "binary"  # 0/1 onto the 1-5 judge
    assert set(human.qrels["relevance"]) <= {1, 5} and human.sample is not None
    cal = calibrate_judge(gs, human)
    assert len(cal.pairs) == 12 and {"low", "high"} <= set(cal.agreement.columns)
    assert set(cal.bias["human_grade"]) <= {1, 5}
    table, notes = ppi_for(gs, human)
    assert set(table["measure"]) == {"nDCG@10[judge ideal]", "P(rel=4)@10"}
    assert any("RA-nWG@10: not estimated" in n for n in notes)
    assert (table["n_labelled"] <= 12).all() and (table["n_labelled"] < table["n_total"]).all()
    assert (table["ppi_ci_low"] <= table["ppi"]).all() and (
        table["ppi"] <= table["ppi_ci_high"]
    ).all()
    assert (table["labels_to_halve"] > 0).all()
    # the default ppi_target_width (0.1): labels per system for a PPI interval that wide
    wide = table["ppi_ci_high"] - table["ppi_ci_low"]
    need = table["labels_for_width"]
    assert ((need > 0) == (wide > 0.1)).all()
    result = golden.run(config)
    text = result.section("ppi")
    assert "**Labels for a PPI interval 0.1 wide**" in text and "rrf" in text
    assert "labels for width" in golden.ppi_table(result.ppi).columns
    written = result.export(tmp_path / "run")
    assert tmp_path / "run" / "ppi.csv" in written and (tmp_path / "run" / "ppi.csv").exists()


def test_cli_golden_builds_from_queries_alone(openai_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.chat.handler = scripted({})
    data, _ = queries_alone(tmp_path / "d")
    qfile = tmp_path / "q.csv"
    qfile.write_text("text\nAbstract Base Classes\n", encoding="utf-8")
    out = tmp_path / "out"
    base = ["golden", "--dataset", str(data), "--out", str(out), "--quiet"]
    common = ["--retriever", "bm25", "--depth", "3", "--top-n", "2", "--refine-max-iterations", "1"]
    common += ["--cache-dir", str(tmp_path / "cache")]
    assert main([*base, "--judge", "qrels", *common]) == 2
    assert "has none (no qrels/test.tsv)" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,text\nA,x\nA,y\n", encoding="utf-8")
    assert (
        main(
            [
                *base,
                "--queries",
                str(bad),
                "--judge",
                "openai",
                "--base-url",
                openai_server.base_url,
                *common,
            ]
        )
        == 2
    )
    assert "bad.csv" in capsys.readouterr().err
    args = [
        *base,
        "--queries",
        str(qfile),
        "--judge",
        "openai",
        "--base-url",
        openai_server.base_url,
    ]
    assert main([*args, *common]) == 0
    printed = capsys.readouterr().out
    assert "golden.qrels" in printed and "1 queries" in printed
    qrels = read_qrels(out / "golden.qrels")
    assert set(qrels["query_id"]) == {query_id_of("Abstract Base Classes")} and len(qrels) == 3


def test_notebook_without_qrels_with_a_human_label_file(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.chat.handler = scripted({})
    data, full = queries_alone(tmp_path / "d", n_queries=3)
    qrels = full.qrels[full.qrels["query_id"].isin(full.judged_queries["query_id"].head(3))]
    labels = tmp_path / "human.qrels"
    labels.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.head(8).itertuples(index=False))
    )
    params = {
        "dataset": str(data),
        "retrievers": "[bm25]",
        "new_systems": "[]",
        "judge": "openai",
        "base_url": openai_server.base_url,
        "depth": 4,
        "min_pool": 4,
        "top_n": 2,
        "refine_max_iterations": 1,
        "simulate": False,
        "cache_dir": str(tmp_path / "cache"),
    }
    reports = tmp_path / "reports"
    report = render_report(
        "02_golden_set", {**params, "human_labels": str(labels)}, reports_dir=reports
    )
    text = visible_text(report.html.read_text(encoding="utf-8"))
    assert "queries.jsonl (no qrels/test.tsv: queries alone)" in text
    assert "Human labels: the file" in text and "Thomas et al." in text and "UMBRELA" in text
    assert "Prediction-powered estimates" in text and "labels to halve" in text
    assert "How many more human labels would halve the interval" in text
    # no labels and an offline judge: the first screen says what is needed, nothing crashes
    report = render_report("02_golden_set", {**params, "judge": "noisy"}, reports_dir=reports)
    text = visible_text(report.html.read_text(encoding="utf-8"))
    assert text.index("No judge, so no golden set") < text.index("Cost before spending") < 3000
    assert "No human labels" in text and "The sections below are skipped" in text
    assert "Human labels: the file" not in text  # a part that did not run shows nothing
