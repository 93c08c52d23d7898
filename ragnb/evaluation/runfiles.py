"""Evaluate a run file as :mod:`ragnb.io.dispatch` opened it: in memory, or in blocks of whole
queries (:func:`ragnb.evaluation.streaming.evaluate_file`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ragnb.errors import DuplicateEntry
from ragnb.evaluation.evaluate import EvaluationResult, evaluate, no_shared_query
from ragnb.frames.schema import RunOrder
from ragnb.io.dispatch import RunFile, locate_duplicate
from ragnb.measures import Measure

__all__ = ["evaluate_run_file"]


def evaluate_run_file(
    qrels: pd.DataFrame,
    run: RunFile,
    measures: Iterable[str | Measure],
    *,
    order: RunOrder = "score",
    grade_map: str | Mapping[int, int] | None = None,
    ignore_self: bool = False,
    nuggets: pd.DataFrame | None = None,
) -> EvaluationResult:
    """Evaluate the run file ``run`` against ``qrels``, in memory or in blocks as it was opened.

    Parameters
    ----------
    qrels : DataFrame
        As :func:`ragnb.evaluation.evaluate.evaluate`.
    run : RunFile
        From :func:`ragnb.io.dispatch.open_run`: a run in memory, or a file to read in blocks
        (``run.streamed``).
    measures, order, grade_map, ignore_self, nuggets
        As :func:`ragnb.evaluation.evaluate.evaluate`.

    Returns
    -------
    EvaluationResult
        The same values either way (:func:`ragnb.evaluation.streaming.evaluate_file`).

    Raises
    ------
    InputError
        As :func:`ragnb.evaluation.evaluate.evaluate` and
        :func:`ragnb.evaluation.streaming.evaluate_file`; a pair given twice in the run names
        the file and line (:func:`ragnb.io.dispatch.locate_duplicate`); so does a run none of
        whose queries is in the qrels.
    MissingExtra
        A run to read in blocks without the ``fast`` extra.
    """
    options: dict[str, Any] = {
        "order": order,
        "grade_map": grade_map,
        "ignore_self": ignore_self,
        "nuggets": nuggets,
    }
    if run.frame is None:
        from ragnb.evaluation.streaming import evaluate_file

        result = evaluate_file(qrels, run.path, measures, **options)
        counts = result.counts
        if counts["run_queries_without_qrels"] and (
            counts["queries_missing_from_run"] == counts["queries_in_qrels"]
        ):
            n_run = counts["run_queries_without_qrels"]
            raise no_shared_query(result.query_ids, [], path=run.path, n_run=n_run)
        return result
    run_ids = pd.unique(run.frame["query_id"])
    if not pd.Index(run_ids).isin(pd.unique(qrels["query_id"])).any():
        raise no_shared_query(pd.unique(qrels["query_id"]), run_ids, path=run.path)
    try:
        return evaluate(qrels, run.frame, measures, **options)
    except DuplicateEntry as e:
        if e.what != "run":
            raise
        raise locate_duplicate(run.path, e) from None
