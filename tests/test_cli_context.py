"""``ragnb evaluate-samples SAMPLES``: ragas-style JSONL and CSV files scored on the non-LLM
and ID-based context measures, equal to the Python API's numbers and to hand-computed ones; bad
input named by file, line and column; gates on context measures; ``ragnb evaluate`` given one
file names this command.

The samples are real: SciFact test claims, BM25's top 5 abstracts as ``retrieved_contexts`` (and
their ids), the judged relevant abstracts as ``reference_contexts`` (and ids), written as ragas'
``EvaluationDataset.to_jsonl`` and ``to_csv`` write them (JSON lines; CSV cells holding the
Python ``str`` of each list). Each abstract is cut to its first 300 characters, as chunks are,
which keeps the quadratic Levenshtein similarity within the suite's time budget.
"""

from __future__ import annotations

import csv
import io as stdio
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.cli.main import main
from ragnb.context import id_based_context_scores, non_llm_context_scores
from ragnb.context.ragas import (
    ContextEvaluation,
    evaluate_samples,
    parse_context_measure,
    read_samples,
)
from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.retrievers.retrieve import make_retriever

N_QUERIES = 12
CHUNK = 300  # characters of each abstract
TEXT = ["non_llm_context_precision_with_reference", "non_llm_context_recall"]
IDS = ["id_based_context_precision", "id_based_context_recall"]


@pytest.fixture(scope="module")
def samples(scifact_path, tmp_path_factory):
    data = read_beir(scifact_path)
    queries = data.judged_queries.head(N_QUERIES)
    retriever = make_retriever("bm25")
    retriever.index(data.corpus)
    run = retriever.retrieve(queries, k=5)
    text = {d: t[:CHUNK] for d, t in zip(data.corpus["doc_id"], data.corpus["text"], strict=True)}
    relevant = data.qrels[data.qrels["relevance"] > 0].groupby("query_id")["doc_id"].agg(list)
    records = []
    for qid, query in zip(queries["query_id"], queries["text"], strict=True):
        got = run[run["query_id"] == qid].sort_values("rank")["doc_id"].tolist()
        gold = relevant[qid]
        records.append(
            {
                "user_input": query,
                "retrieved_contexts": [text[d] for d in got],
                "reference_contexts": [text[d] for d in gold],
                "retrieved_context_ids": got,
                "reference_context_ids": gold,
            }
        )
    folder = tmp_path_factory.mktemp("samples")
    jsonl = folder / "samples.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    ragas_csv = folder / "samples.csv"  # as ragas' to_csv: csv.DictWriter, lists as str(list)
    with ragas_csv.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    return {"records": records, "jsonl": jsonl, "csv": ragas_csv, "folder": folder}


def run_json(capsys, *args):
    code = main(["evaluate-samples", *map(str, args), "--format", "json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out else None), captured.err


# ----------------------------------------------------------------------- equal to the Python API


def test_cli_equals_the_python_api(samples, capsys):
    frame = pd.DataFrame(samples["records"])
    text = non_llm_context_scores(frame)
    ids = id_based_context_scores(frame)

    code, payload, err = run_json(capsys, samples["jsonl"], "--per-query")
    assert code == 0 and err == ""
    aggregate = {r["measure"]: r for r in payload["aggregate"]}
    assert list(aggregate) == TEXT + IDS
    for name in TEXT:
        assert aggregate[name]["value"] == pytest.approx(np.nanmean(text[name]), abs=1e-15)
    for name in IDS:
        assert aggregate[name]["value"] == pytest.approx(np.nanmean(ids[name]), abs=1e-15)
    assert {r["n_queries"] for r in payload["aggregate"]} == {N_QUERIES}

    per_query = pd.DataFrame(payload["per_query"])
    wide = per_query.pivot(index="query_id", columns="measure", values="value")
    lines = [str(i) for i in range(1, N_QUERIES + 1)]  # one sample a line: ids are the lines
    assert wide.loc[lines, TEXT].to_numpy().tolist() == text[TEXT].to_numpy().tolist()
    assert wide.loc[lines, IDS].to_numpy().tolist() == ids[IDS].to_numpy().tolist()

    # distinct abstracts are far apart in Levenshtein similarity: string matching finds exactly
    # the documents the ids say were retrieved
    assert text["non_llm_context_recall"].tolist() == ids["id_based_context_recall"].tolist()
    assert 0 < aggregate["id_based_context_recall"]["value"] < 1


def test_ragas_csv_reads_like_the_jsonl(samples, capsys):
    assert "['" in samples["csv"].read_text(encoding="utf-8")  # Python literals, as ragas
    from_jsonl = evaluate_samples(samples["jsonl"])
    from_csv = evaluate_samples(samples["csv"])
    assert isinstance(from_csv, ContextEvaluation)
    pd.testing.assert_frame_equal(from_csv.aggregate, from_jsonl.aggregate)
    assert from_csv.per_query["value"].tolist() == from_jsonl.per_query["value"].tolist()
    # in the CSV a sample starts on line 2 (after the header) unless a cell spans lines
    assert read_samples(samples["csv"]).index[0] == 2

    assert main(["evaluate-samples", str(samples["csv"]), "--format", "csv"]) == 0
    table = pd.read_csv(stdio.StringIO(capsys.readouterr().out))
    assert table["value"].tolist() == pytest.approx(from_jsonl.aggregate["value"].tolist(), abs=0)


def test_cutoffs_and_options_reach_the_python_api(samples, capsys):
    frame = pd.DataFrame(samples["records"])
    code, payload, _ = run_json(
        capsys,
        samples["jsonl"],
        "-m",
        "IDBasedContextPrecision@3",
        "-m",
        "non_llm_context_recall@2",
        "--similarity",
        "sequence_matcher",
        "--tau",
        "0.8",
        "--compare",
        ">",
    )
    assert code == 0
    got = {r["measure"]: r["value"] for r in payload["aggregate"]}
    want_ids = id_based_context_scores(frame, 3)["id_based_context_precision"]
    want_text = non_llm_context_scores(
        frame, 2, similarity="sequence_matcher", tau=0.8, compare=">"
    )["non_llm_context_recall"]
    assert got == {
        "id_based_context_precision@3": pytest.approx(np.nanmean(want_ids), abs=1e-15),
        "non_llm_context_recall@2": pytest.approx(np.nanmean(want_text), abs=1e-15),
    }
    assert payload["counts"]["similarity"] == "sequence_matcher"


def test_table_format(samples, capsys):
    assert main(["evaluate-samples", str(samples["jsonl"]), "-m", "id_based_context_recall"]) == 0
    out = capsys.readouterr().out.splitlines()
    want = np.nanmean(id_based_context_scores(samples["records"])["id_based_context_recall"])
    assert out == [f"{'id_based_context_recall':<24}\tall\t{want:.4f}\t(n_valid={N_QUERIES})"]


# ------------------------------------------------------------- a small file, computed by hand

# Two samples, by id:
#   q1 retrieved a, b, c; references a, c, d: 2 hits, precision 2/3, recall 2/3
#   q2 retrieved e, f; references f: 1 hit, precision 1/2, recall 1
#   means: precision (2/3 + 1/2) / 2 = 7/12, recall (2/3 + 1) / 2 = 5/6
# @1: q1's a is a hit (precision 1, recall 1/3), q2's e is not (0, 0); means 1/2, 1/6
SMALL = [
    {
        "query_id": "q1",
        "retrieved_context_ids": ["a", "b", "c"],
        "reference_context_ids": ["a", "c", "d"],
    },
    {"query_id": "q2", "retrieved_context_ids": ["e", "f"], "reference_context_ids": ["f"]},
]


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SMALL))
    return str(path)


def test_evaluate_samples_on_a_small_file_by_hand(small, capsys):
    code, payload, err = run_json(capsys, small, "--per-query")
    assert code == 0 and err == ""
    assert {r["measure"]: r["value"] for r in payload["aggregate"]} == {
        "id_based_context_precision": pytest.approx(7 / 12, abs=1e-15),
        "id_based_context_recall": pytest.approx(5 / 6, abs=1e-15),
    }
    assert {(r["query_id"], r["measure"]): r["value"] for r in payload["per_query"]} == {
        ("q1", "id_based_context_precision"): pytest.approx(2 / 3, abs=1e-15),
        ("q2", "id_based_context_precision"): 0.5,
        ("q1", "id_based_context_recall"): pytest.approx(2 / 3, abs=1e-15),
        ("q2", "id_based_context_recall"): 1.0,
    }

    # cutoffs, ragas' class names, and a gate on a measure it also prints
    argv = ["evaluate-samples", small, "-m", "id_based_context_precision@1"]
    argv += ["-m", "IDBasedContextRecall@1", "--fail-under", "id_based_context_recall@1=0.2"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"{'id_based_context_precision@1':<24}\tall\t0.5000\t(n_valid=2)",
        f"{'id_based_context_recall@1':<24}\tall\t0.1667\t(n_valid=2)",
    ]
    assert "gate failed: id_based_context_recall@1 = 0.1667 < 0.2000" in err


def test_evaluate_with_one_file_names_evaluate_samples(small, tmp_path, capsys):
    # before reading anything: the same message for a samples file, a qrels file or none
    for path in (small, str(tmp_path / "absent.tsv")):
        assert main(["evaluate", path]) == 2
        assert capsys.readouterr().err == (
            f"ragnb: error: evaluate needs two files, QRELS and RUN, and got one ({path}); to "
            f"score a ragas-style samples file use: ragnb evaluate-samples {path}\n"
        )
    with pytest.raises(SystemExit) as stop:
        main(["evaluate-samples", "--help"])
    assert stop.value.code == 0
    help_text = capsys.readouterr().out
    assert help_text.startswith("usage: ragnb evaluate-samples ")
    for word in ("retrieved_context_ids", "--fail-under MEASURE=MIN", "2  bad input"):
        assert word in help_text


# --------------------------------------------------------------------------- gates on context


def test_context_gates(samples, capsys):
    ids = evaluate_samples(samples["jsonl"], IDS).aggregate_to_dict()
    recall = ids["id_based_context_recall"]
    path = str(samples["jsonl"])
    gate = f"id_based_context_recall={recall + 0.01:.4f}"
    assert main(["evaluate-samples", path, "-m", IDS[0], "--fail-under", gate]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2  # the measures, printed anyway
    assert f"gate failed: id_based_context_recall = {recall:.4f} < {recall + 0.01:.4f}" in err
    gate = f"id_based_context_recall={recall:.4f}"
    assert main(["evaluate-samples", path, "-m", IDS[0], "--fail-under", gate]) == 0
    capsys.readouterr()

    # against a baseline that retrieved nothing relevant: precision and recall dropped
    worse = samples["folder"] / "worse.jsonl"
    rows = [
        {**r, "retrieved_context_ids": ["none"], "retrieved_contexts": ["nothing"]}
        for r in samples["records"]
    ]
    worse.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["evaluate-samples", str(worse), "-m", "id_based_context_recall", "--baseline", path]
    assert main(args) == 1
    assert "id_based_context_recall" in capsys.readouterr().err
    assert (
        main(["evaluate-samples", path, "-m", "id_based_context_recall", "--baseline", str(worse)])
        == 0
    )


# --------------------------------------------------------------------------- bad input


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = {"user_input": "q", "retrieved_context_ids": ["a"], "reference_context_ids": ["a"]}


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("bad.jsonl", json.dumps(GOOD) + "\n\n{oops\n", "line 3: malformed JSON"),
        (
            "str.jsonl",
            json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "retrieved_contexts": "one"}) + "\n",
            "line 2, column 'retrieved_contexts': expected a list of strings, got str",
        ),
        (
            "float.jsonl",
            json.dumps({**GOOD, "reference_context_ids": ["a", 1.5]}) + "\n",
            "line 1, column 'reference_context_ids': item 1 is float 1.5",
        ),
        ("list.jsonl", "[1, 2]\n", "line 1: expected a JSON object, got list"),
        (
            "cell.csv",
            'user_input,retrieved_context_ids,reference_context_ids\nq,"[""a""]",[a b\n',
            "line 2, column 'reference_context_ids': cell is not a list",
        ),
        (
            "ragged.csv",
            'user_input,retrieved_context_ids\n"multi\nline",[]\nq,[],extra\n',
            "line 4: 3 cells where the header has 2",
        ),
        (
            "missing.jsonl",
            json.dumps(GOOD) + "\n" + json.dumps({"user_input": "q", **{"x": 1}}) + "\n",
            "line 2, column 'retrieved_context_ids': the sample lacks",
        ),
        (
            "dup.jsonl",
            json.dumps({**GOOD, "query_id": "x"}) + "\n" + json.dumps({**GOOD, "query_id": "x"}),
            "line 2, column 'query_id': query_id 'x' repeats",
        ),
        ("empty.jsonl", "\n", "the samples file holds no samples"),
        ("nothing.jsonl", json.dumps({"user_input": "q"}) + "\n", "neither retrieved_contexts"),
        ("samples.parquet", "", "unknown samples file type '.parquet'"),
    ],
)
def test_bad_input_names_file_line_and_column(tmp_path, capsys, name, text, where):
    path = write(tmp_path, name, text)
    assert main(["evaluate-samples", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ragnb: error: {path}") and where in err, err
    assert "Traceback" not in err
    with pytest.raises(InputError):
        evaluate_samples(path)


def test_cli_refusals(samples, tmp_path, capsys):
    path = str(samples["jsonl"])
    assert main(["evaluate-samples", path, "-m", "nDCG@10"]) == 2
    assert "unknown context measure 'nDCG@10'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # a QRELS RUN option: argparse refuses it
        main(["evaluate-samples", path, "--grade-map", "binary"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --grade-map binary" in capsys.readouterr().err
    assert main(["evaluate-samples", str(tmp_path / "absent.jsonl")]) == 2
    assert "absent.jsonl not found" in capsys.readouterr().err


def test_parse_context_measure():
    assert parse_context_measure("non_llm_context_recall") == ("non_llm_context_recall", None)
    assert parse_context_measure("NonLLMContextPrecisionWithReference @ 5") == (TEXT[0], 5)
    for bad in ("context_recall", "id_based_context_recall@0", "recall@x"):
        with pytest.raises(InputError):
            parse_context_measure(bad)


def test_a_csv_cell_spanning_lines_keeps_line_numbers(tmp_path):
    path = write(
        tmp_path,
        "multi.csv",
        "user_input,retrieved_context_ids,reference_context_ids\n"
        '"two\nlines","[1]","[1]"\nq,"[2, 3]",\'oops\'\n',
    )
    with pytest.raises(InputError) as err:
        read_samples(path)
    assert (err.value.line, err.value.column) == (4, "reference_context_ids")


def test_docstring_examples():
    import doctest

    import ragnb.context.ragas

    result = doctest.testmod(ragnb.context.ragas)
    assert result.attempted >= 5 and result.failed == 0
