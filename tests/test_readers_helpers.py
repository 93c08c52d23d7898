"""Small shared helpers: ragnb.io.readers.iter_run_lines, ragnb.core.validation (convert_entry, the
positive-integer and required-column checks), ragnb.evaluation.evaluate.wide_values /
aggregate_means."""

from __future__ import annotations

import doctest
import gzip

import numpy as np
import pandas as pd
import pytest

import ragnb.core.validation
import ragnb.evaluation.evaluate
from ragnb.core.validation import check_positive_int, check_positive_ints, convert_entry
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import aggregate_means, wide_values
from ragnb.io.readers import iter_run_lines, read_run


def test_iter_run_lines_yields_checked_lines_and_skips_blanks(tmp_path):
    path = tmp_path / "run.trec.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("q1 Q0 d1 1 2.5 bm25\n\nq1 Q0 d1 2 -1e-3 bm25\n")
    # a duplicate pair is read_run's business, not the line reader's
    assert list(iter_run_lines(path)) == [
        (1, "q1", "d1", 1, 2.5, "bm25"),
        (3, "q1", "d1", 2, -0.001, "bm25"),
    ]
    with pytest.raises(InputError, match="duplicate entry for doc 'd1' \\(first on line 1\\)"):
        read_run(path)


@pytest.mark.parametrize(
    ("line", "message", "column"),
    [
        ("q1 Q0 d1 1 0.5", "expected 6 columns", None),
        ("q1 Q0 d1 1_0 0.5 t", "rank is not an integer", "rank"),
        ("q1 Q0 d1 1 inf t", "score is not finite", "score"),
    ],
)
def test_iter_run_lines_names_the_bad_line(tmp_path, line, message, column):
    path = tmp_path / "run.txt"
    path.write_text(f"q0 Q0 d0 1 1.0 t\n{line}\n", encoding="utf-8")
    lines = iter_run_lines(path)
    assert next(lines)[0] == 1  # lazy: the good first line comes before the error
    with pytest.raises(InputError, match=message) as info:
        next(lines)
    assert info.value.line == 2 and info.value.column == column


def test_convert_entry_names_query_and_document():
    assert convert_entry(float, "1e2", "q", "d", "score", "a number") == 100.0
    with pytest.raises(InputError, match="grade of 'd7' is not an integer: 'x'") as info:
        convert_entry(int, "x", "q3", "d7", "grade", "an integer")
    assert info.value.query_id == "q3"
    assert doctest.testmod(ragnb.core.validation).failed == 0


def test_positive_integer_checks_take_integers_only():
    assert check_positive_int(np.int64(3), "k") == 3 and type(check_positive_int(3)) is int
    assert check_positive_int(None, "depth", allow_none=True) is None
    for bad in (0, -1, 2.0, True, "3", None):
        with pytest.raises(InputError, match="k must be a positive integer, got"):
            check_positive_int(bad, "k")
    with pytest.raises(InputError, match="depth must be a positive integer or None, got 0"):
        check_positive_int(0, "depth", allow_none=True)
    assert check_positive_ints([1, 10.0, np.int32(5)], "ks") == [1, 10, 5]
    assert check_positive_ints((k for k in (3, 1)), "ks") == [3, 1]  # a generator, read once
    for bad in ([], [2.5], [1, 0], [True], ["10"], [float("nan")]):
        with pytest.raises(InputError, match="ks must be positive integers") as info:
            check_positive_ints(bad, "ks")
        assert info.value.column == "ks"


def test_studies_check_columns_and_integers_through_the_validation_module():
    """The checks that used to be written inline now come from ragnb.core.validation: the same
    wording everywhere, naming the first missing column."""
    from ragnb.measures.proc import proc_table
    from ragnb.stats import top_k_agreement
    from ragnb.studies.diagnostics.ablations import summarize_ablations
    from ragnb.studies.golden.labelling import calibration_sample
    from ragnb.studies.whatif.grid import grid_measures

    with pytest.raises(InputError, match="the margins frame lacks column") as info:
        summarize_ablations(pd.DataFrame({"ablation": ["x"], "run": [0]}))
    assert info.value.column == "delta_name"
    pool = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "grade": [1], "system": ["s"]})
    with pytest.raises(InputError, match="n must be a positive integer, got 0"):
        calibration_sample(pool, n=0, seed=0)
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    with pytest.raises(InputError, match="pool_depth must be a positive integer, got 0"):
        proc_table(qrels, run, ["P@1"], pool_depth=0)
    with pytest.raises(InputError, match="k must be a positive integer, got 2.5"):
        top_k_agreement(run, run, k=2.5)
    with pytest.raises(InputError, match=r"ks must be positive integers, got \[2.5\]"):
        grid_measures([2.5], [0.5], ["F"])


def test_config_integers_are_checked_not_truncated():
    """A count given as 2.7 is refused, not truncated to 2: the CLQ pool sizes, the chunks sent
    to the generator and a golden set's Judged@K cutoffs."""
    from ragnb.judge import NoisyJudge
    from ragnb.studies.clq.cost import CostModel
    from ragnb.studies.clq.grid import SweepGrid
    from ragnb.studies.golden import GoldenPipeline

    assert SweepGrid(pool_ks=[50.0, 100]).pool_ks == [50, 100]
    for bad in ([2.7], [0], ["50"]):
        with pytest.raises(InputError, match="pool_ks must be positive integers") as info:
            SweepGrid(pool_ks=bad)
        assert info.value.column == "pool_ks"
    assert CostModel(machine_usd_per_hour=0.0, generator_k=np.int64(3)).generator_k == 3
    for bad, message in (
        (2.7, "must be an integer"),
        (0, "must be >= 1"),
        ("10", "must be an integer"),
    ):
        with pytest.raises(InputError, match=f"generator_k {message}") as info:
            CostModel(machine_usd_per_hour=0.0, generator_k=bad)
        assert info.value.column == "generator_k"
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]})
    corpus = pd.DataFrame({"doc_id": ["d"], "title": [""], "text": ["a passage"]})
    queries = pd.DataFrame({"query_id": ["q"], "text": ["a query"]})
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    judge = NoisyJudge(qrels, sd=0.0, seed=0)
    assert GoldenPipeline(corpus, queries, judge, {"s": run}, cutoffs=(5, 10.0)).cutoffs == [5, 10]
    cutoffs = (k for k in (5, 10))
    assert GoldenPipeline(corpus, queries, judge, {"s": run}, cutoffs=cutoffs).cutoffs == [5, 10]
    for bad in ([2.7], [0, 5], []):
        with pytest.raises(InputError, match="cutoffs must be positive integers"):
            GoldenPipeline(corpus, queries, judge, {"s": run}, cutoffs=bad)


def test_wide_values_orders_rows_and_columns():
    long = pd.DataFrame(
        {
            "query_id": ["b", "a", "b", "a"],
            "measure": ["P@5", "P@5", "R@5", "R@5"],
            "value": [0.2, 0.4, 0.5, 1.0],
        }
    )
    wide = wide_values(long, ["R@5", "P@5"])
    assert list(wide.index) == ["a", "b"] and list(wide.columns) == ["R@5", "P@5"]
    assert wide.columns.name is None and wide.loc["b", "P@5"] == 0.2
    assert list(wide_values(long, ["P@5"], ["b", "a"]).index) == ["b", "a"]
    agg = pd.DataFrame({"measure": ["R@5", "P@5"], "value": [0.75, 0.3]})
    assert aggregate_means(agg) == {"R@5": 0.75, "P@5": 0.3}
    assert doctest.testmod(ragnb.evaluation.evaluate).failed == 0
