"""Evaluate a run file as :mod:`ragnb.io.dispatch` opened it: in memory, or in blocks of whole
queries (:func:`ragnb.evaluation.streaming.evaluate_file`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ragnb.evaluation.evaluate import EvaluationResult, evaluate
from ragnb.frames.schema import RunOrder
from ragnb.io.dispatch import RunFile
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
        :func:`ragnb.evaluation.streaming.evaluate_file`.
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

        return evaluate_file(qrels, run.path, measures, **options)
    return evaluate(qrels, run.frame, measures, **options)
