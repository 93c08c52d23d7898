"""Graded measures refuse to guess a scale: RA-nWG, N-Recall4+ and Harm read
Dallaire's 1-5 rubric; on 0-3, 0-2 or 0-1 qrels they need a grade map, in the API and on the
command line, and with one the command prints what the API gives."""

from __future__ import annotations

import json
import re

import pytest

from ragnb.cli.main import main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import read_beir, write_run
from ragnb.measures import map_grades
from ragnb.retrievers.retrieve import BM25Retriever


@pytest.fixture(scope="module")
def msmarco(msmarco_path, tmp_path_factory):
    data = read_beir(msmarco_path, split="test")
    run = BM25Retriever().index(data.corpus).retrieve(data.judged_queries, k=100)
    path = tmp_path_factory.mktemp("msmarco") / "bm25.trec"
    write_run(run, path, tag="bm25")
    return data, run, path


def test_api_refuses_graded_measures_on_a_0_3_scale(msmarco):
    data, run, _ = msmarco
    with pytest.raises(InputError, match=r"0-3 \(TREC DL\) scale") as info:
        evaluate(data.qrels, run, ["RA-nWG@10"])
    assert "'trec-dl'" in str(info.value) and "'binary'" in str(info.value)
    # measures that read any grade are unaffected
    evaluate(data.qrels, run, ["nDCG@10", "P@10"])


def test_api_grade_map_applies_to_graded_measures_only(msmarco):
    data, run, _ = msmarco
    both = evaluate(data.qrels, run, ["RA-nWG@10", "nDCG@10"], grade_map="trec-dl")
    graded = evaluate(map_grades(data.qrels, "trec-dl"), run, ["RA-nWG@10"])
    plain = evaluate(data.qrels, run, ["nDCG@10"])
    # per query exactly (the means of a one- and a two-column matrix may differ in the last bit:
    # numpy sums a strided column in another order)
    wide = both.per_query_wide()
    assert wide["RA-nWG@10"].equals(graded.per_query_wide()["RA-nWG@10"])
    assert wide["nDCG@10"].equals(plain.per_query_wide()["nDCG@10"])


@pytest.mark.parametrize(
    ("qrels", "scale"),
    [({"q": {"a": 1, "b": 0}}, "0-1 (binary)"), ({"q": {"a": 2, "b": 0}}, "0-2 (DBpedia")],
)
def test_binary_and_two_level_scales_are_named(qrels, scale):
    with pytest.raises(InputError, match=re.escape(scale)):
        evaluate(qrels, {"q": {"a": 1.0}}, ["Harm@5"])
    assert (
        evaluate(
            qrels,
            {"q": {"a": 1.0}},
            ["Harm@5"],
            grade_map="binary" if "binary" in scale else "dbpedia-entity",
        ).aggregate_to_dict()["Harm@5"]
        == 0.0
    )


def test_cli_without_map_exits_2_naming_the_scale(msmarco_path, msmarco, capsys):
    _, _, run_path = msmarco
    qrels = str(msmarco_path / "qrels" / "test.tsv")
    assert main(["evaluate", qrels, str(run_path), "-m", "RA-nWG@10"]) == 2
    err = capsys.readouterr().err
    assert "0-3 (TREC DL)" in err and "--grade-map" in err


def test_cli_with_map_prints_what_the_api_gives(msmarco_path, msmarco, capsys, tmp_path):
    data, run, run_path = msmarco
    qrels = str(msmarco_path / "qrels" / "test.tsv")
    expected = evaluate(data.qrels, run, ["RA-nWG@10"], grade_map="trec-dl").aggregate_to_dict()
    assert (
        main(
            [
                "evaluate",
                qrels,
                str(run_path),
                "-m",
                "RA-nWG@10",
                "--grade-map",
                "trec-dl",
                "--format",
                "json",
            ]
        )
        == 0
    )
    value = json.loads(capsys.readouterr().out)["aggregate"][0]["value"]
    assert value == pytest.approx(expected["RA-nWG@10"], abs=0)
    # a map from a file gives the same
    mapping = tmp_path / "map.yaml"
    mapping.write_text("{3: 5, 2: 4, 1: 3, 0: 1}\n")
    assert (
        main(
            [
                "evaluate",
                qrels,
                str(run_path),
                "-m",
                "RA-nWG@10",
                "--grade-map",
                str(mapping),
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["aggregate"][0]["value"] == value


def test_cli_unknown_map_is_an_error(msmarco_path, msmarco, capsys):
    _, _, run_path = msmarco
    qrels = str(msmarco_path / "qrels" / "test.tsv")
    assert main(["evaluate", qrels, str(run_path), "-m", "RA-nWG@10", "--grade-map", "nope"]) == 2
    assert "binary" in capsys.readouterr().err
