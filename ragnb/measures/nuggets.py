"""Nugget recall of the top K: does the context at cutoff K hold the facts an answer needs?

Nugget qrels
------------
Subtopic qrels (:mod:`ragnb.measures.diversity`) whose subtopics are nuggets: columns
``query_id``, ``subtopic`` (the nugget id), ``doc_id``, ``relevance`` and ``importance``. One row
per (query, nugget, assessed passage); the grade says how far the passage supports the nugget,
as AutoNuggetizer's assignment labels:

====================== ===== ==================================================
label                  grade meaning
====================== ===== ==================================================
``support``            2     the passage states the nugget fully
``partial_support``    1     the passage states part of it
``not_support``        0     the passage does not state it
====================== ===== ==================================================

``importance`` is ``"vital"`` (a good answer must hold it) or ``"okay"`` (worthwhile, not
essential); without the column every nugget is vital. A nugget assessed against no passage
still needs one row (grade 0) to count in the denominator: :func:`ragnb.judge.nuggets.nugget_qrels`
writes them. Every other measure reads the document-level qrels these imply (each passage's
best support grade over the nuggets), as for any subtopic qrels.

Measure
-------
``NuggetRecall(vital=v,partial=c)@K``: for each nugget of the query the credit of its best
support among the top K passages, 1 for ``support``, ``c`` for ``partial_support``, 0 otherwise;
NuggetRecall@K is the sum of credits over the number of nuggets (only vital nuggets when
``vital=1``); 0 for a query without such nuggets. The four scores of AutoNuggetizer are

=============================== ================================================
name                            AutoNuggetizer score
=============================== ================================================
``NuggetRecall@K``              All strict (A_strict)
``NuggetRecall(vital=1)@K``     Vital strict (V_strict)
``NuggetRecall(partial=0.5)@K`` All (partial support worth 0.5)
``NuggetRecall(vital=1,         Vital (partial support worth 0.5)
partial=0.5)@K``
=============================== ================================================

computed here over the retrieved passages at cutoff K instead of a generated answer. With
binary nugget grades ``NuggetRecall@K`` with every grade doubled is subtopic recall (S-recall,
Zhai et al. 2003).

References
----------
.. [1] R. Pradeep, N. Thakur, S. Upadhyay, D. Campos, N. Craswell and J. Lin, "Initial Nugget
   Evaluation Results for the TREC 2024 RAG Track with the AutoNuggetizer Framework",
   arXiv:2411.09607, Section 2 (nugget creation, importance, assignment) and Section 2.3
   (the scores); castorini/nuggetizer, ``src/nuggetizer/core/metrics.py``.
.. [2] C. X. Zhai, W. W. Cohen and J. Lafferty, "Beyond independent relevance: methods and
   evaluation metrics for subtopic retrieval", SIGIR 2003, Section 3 (S-recall).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import SUPPORT_GRADES, RunOrder
from ragnb.measures.base import Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.diversity import SubtopicArrays, prepare_subtopics
from ragnb.measures.functions import Run, fill_doc
from ragnb.measures.kernel import RankingArrays, safe_div

__all__ = ["SUPPORT_GRADES", "nugget_measures", "nugget_recall"]


def nugget_measures(k: int) -> list[str]:
    """AutoNuggetizer's four scores at cutoff ``k``: all and vital, strict and with partial
    support worth 0.5.

    Examples
    --------
    >>> nugget_measures(3)[:2]
    ['NuggetRecall@3', 'NuggetRecall(vital=1)@3']
    """
    return [
        f"NuggetRecall@{k}",
        f"NuggetRecall(vital=1)@{k}",
        f"NuggetRecall(partial=0.5)@{k}",
        f"NuggetRecall(vital=1,partial=0.5)@{k}",
    ]


def _nugget_recall(arrays: RankingArrays, k: int, *, vital: int, partial: float) -> np.ndarray:
    """Credited nuggets in the top k over the query's nuggets; 0 without any; (n_queries,)."""
    if not isinstance(arrays, SubtopicArrays):
        raise InputError(
            f"NuggetRecall@{k} needs nugget judgements: give the folder of nuggets.csv and "
            "nugget_assignments.csv (ragnb evaluate --nuggets DIR; in Python evaluate(..., "
            "nuggets=ragnb.io.nuggets.read_nugget_qrels(DIR)))"
        )
    top = arrays.subtopic_grades[:, :k, :]
    best = top.max(axis=1) if top.shape[1] else np.zeros(arrays.subtopics.shape, np.int64)
    credit = np.where(
        best >= SUPPORT_GRADES["support"],
        1.0,
        np.where(best == SUPPORT_GRADES["partial_support"], partial, 0.0),
    )
    counted = arrays.subtopics & arrays.vital if vital else arrays.subtopics
    return safe_div((credit * counted).sum(axis=1), counted.sum(axis=1))


VITAL = ParamSpec("vital", int, 0, 0, 1, doc="1: only the vital nuggets count")
PARTIAL = ParamSpec("partial", float, 0.0, 0.0, 1.0, doc="credit of a partly supported nugget")

register_family(
    MeasureFamily(
        "NuggetRecall",
        _nugget_recall,
        params=(VITAL, PARTIAL),
        summary="NuggetRecall@K = nuggets supported in the top K (partial support worth "
        "partial) / nuggets (vital only when vital=1) (Pradeep et al. 2024, AutoNuggetizer)",
    ),
    aliases=("nugget_recall",),
)


@fill_doc
def nugget_recall(
    nugget_qrels: pd.DataFrame,
    run: Run,
    k: int,
    *,
    vital: bool = False,
    partial: float = 0.0,
    order: RunOrder = "score",
) -> float:
    """Mean NuggetRecall@K: the share of each query's nuggets its top K passages support.

    Parameters
    ----------
    nugget_qrels : DataFrame
        Columns ``query_id``, ``subtopic`` (the nugget id), ``doc_id``, ``relevance`` (2
        support, 1 partial support, 0 none) and optionally ``importance`` (``"vital"`` or
        ``"okay"``; absent: every nugget vital).
    {{run, k}}
    vital : bool, default False
        Count only the vital nuggets (AutoNuggetizer's V scores).
    partial : float in [0, 1], default 0.0
        Credit of a nugget only partly supported (0: strict; 0.5: AutoNuggetizer's non-strict
        scores).
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the nugget qrels.

    Raises
    ------
    InputError
        On malformed nugget qrels or run, a bad ``k`` or ``partial``, an importance other than
        vital or okay.

    References
    ----------
    .. [1] R. Pradeep et al., "Initial Nugget Evaluation Results for the TREC 2024 RAG Track
       with the AutoNuggetizer Framework", arXiv:2411.09607, Section 2.3.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q"] * 4, "subtopic": ["n1", "n1", "n2", "n3"],
    ...                       "doc_id": ["a", "b", "b", "c"], "relevance": [1, 2, 1, 0],
    ...                       "importance": ["vital", "vital", "vital", "okay"]})
    >>> run = {"q": {"a": 3, "b": 2, "c": 1}}
    >>> nugget_recall(qrels, run, 1)       # n1 only partly supported by a: 0 / 3
    0.0
    >>> nugget_recall(qrels, run, 2)       # n1 supported by b: 1 / 3
    0.3333333333333333
    >>> nugget_recall(qrels, run, 2, vital=True, partial=0.5)  # (1 + 0.5) / 2 vital
    0.75
    """
    m = Measure("NuggetRecall", k, vital=int(bool(vital)), partial=partial)
    values = m.compute(prepare_subtopics(nugget_qrels, run, order=order, depth=m.depth))
    return float(values.mean())
