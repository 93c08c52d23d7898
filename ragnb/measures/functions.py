"""The public tier of the measure functions: their input types, the numpydoc entries their
docstrings share (:func:`fill_doc`) and the macro mean they return (:func:`mean_of`).

Each measure module defines a private kernel (one value per query) and a public function such as
:func:`ragnb.measures.precision.precision_at_k`, which validates its input through
:func:`ragnb.measures.prepare` and aggregates here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import numpy as np
import pandas as pd

from ragnb.core.docstrings import doc_filler
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import Measure
from ragnb.measures.kernel import prepare

__all__ = [
    "DOC_ENTRIES",
    "MIN_GEO_MEAN",
    "Qrels",
    "Run",
    "aggregate_values",
    "fill_doc",
    "mean_of",
]

#: Floor of a per-query value in a geometric mean (trec_eval's ``MIN_GEO_MEAN``, ``trec_eval.h``).
MIN_GEO_MEAN = 1e-5

Qrels: TypeAlias = pd.DataFrame | Mapping[str, Mapping[str, int]]
Run: TypeAlias = pd.DataFrame | Mapping[str, Mapping[str, float]]

#: numpydoc entries the measure functions share; :func:`fill_doc` substitutes them.
DOC_ENTRIES: dict[str, str] = {
    "qrels": "qrels : DataFrame or dict\n"
    "    Columns ``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``.",
    "run": "run : DataFrame or dict\n"
    "    Columns ``query_id``, ``doc_id``, ``score``, or ``{query_id: {doc_id: score}}``.",
    "k": "k : int\n    Cutoff K >= 1.",
    "k_optional": "k : int, optional\n    Cutoff K >= 1; default (None) the whole run.",
    "rel": "rel : int, default 1\n    A judged document with grade >= ``rel`` is relevant.",
    "order": 'order : {"score", "file"}, default "score"\n'
    "    Run ordering, see :func:`ragnb.frames.index.sort_run`.",
    "mean": "float in [0, 1]\n    Macro mean of the per-query values.",
    "bad_input": "InputError\n    On malformed qrels or run, or a bad ``k``, ``rel`` or ``order``.",
    "gain_range": "min_rel, max_rel : int, default 0 and 1\n"
    "    The grade that gains 0 and the grade that gains 1; grades between gain in proportion.",
    # the diversity measures, on subtopic qrels
    "subtopic_qrels": "subtopic_qrels : DataFrame\n"
    "    Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance`` (int).",
    "subtopic_rel": "rel : int, default 1\n"
    "    A subtopic judgement with grade >= ``rel`` is relevant.",
    "subtopic_mean": "float in [0, 1]\n    Macro mean over the queries of the subtopic qrels.",
    # references cited word for word by several measures
    "ref_van_rijsbergen": ".. [1] C. J. van Rijsbergen, *Information Retrieval*, 2nd ed., "
    "Butterworths, 1979, ch. 7.",
    "ref_trec_book": ".. [1] E. M. Voorhees and D. K. Harman (eds.), *TREC: Experiment and "
    "Evaluation in\n   Information Retrieval*, MIT Press, 2005, ch. 3.",
    "ref_dallaire_2_4": ".. [1] Dallaire, arXiv:2511.09545, Section 2.4.",
}
#: Expands the ``{{name, ...}}`` lines of a measure's docstring from :data:`DOC_ENTRIES`
#: (:func:`ragnb.core.docstrings.doc_filler`); an unknown name raises KeyError at import time.
fill_doc = doc_filler(DOC_ENTRIES)


def mean_of(measure: Measure, qrels: Qrels, run: Run, order: RunOrder) -> float:
    """Macro mean of ``measure`` over the queries of the qrels (NaN values excluded); the sum
    for the families that aggregate by sum (``NumRet``, ``NumRel``, ...)."""
    values = measure.compute(prepare(qrels, run, order=order, depth=measure.depth))
    return aggregate_values(measure, values)


def aggregate_values(measure: Measure, values: np.ndarray) -> float:
    """The family's aggregate of per-query ``values``: macro mean, sum or geometric mean (each
    value floored at :data:`MIN_GEO_MEAN`), NaN values excluded (NaN when every value is NaN)."""
    valid = ~np.isnan(values)
    if not valid.any():
        return float("nan")
    if measure.spec.aggregate == "gmean":  # trec_eval's gm_map: log of max(v, MIN_GEO_MEAN)
        return float(np.exp(np.log(np.maximum(values[valid], MIN_GEO_MEAN)).mean()))
    return float(values[valid].sum() if measure.spec.aggregate == "sum" else values[valid].mean())
