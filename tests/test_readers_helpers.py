"""Small shared helpers: ragnb.readers.iter_run_lines, ragnb.validation.convert_entry,
ragnb.evaluate.wide_values / aggregate_means."""

from __future__ import annotations

import doctest
import gzip

import pandas as pd
import pytest

import ragnb.evaluate
import ragnb.validation
from ragnb.errors import InputError
from ragnb.evaluate import aggregate_means, wide_values
from ragnb.readers import iter_run_lines, read_run
from ragnb.validation import convert_entry


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
    assert doctest.testmod(ragnb.validation).failed == 0


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
    assert doctest.testmod(ragnb.evaluate).failed == 0
