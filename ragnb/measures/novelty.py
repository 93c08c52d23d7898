"""Novelty-discounted RA-nWG (Dallaire, Section 2.3 "Novelty discount"): repeats of a source.

``RA-nWG-nov(beta=b)@K``
    ``G_obs^nov(K) = sum_{d in TopK} delta(d) w_g(d)`` with ``delta(d) = 1`` for the first
    occurrence of a source in the top K and ``delta(d) = beta`` for **every** repeat, over RA-nWG's
    ideal ``G_ideal(K)`` (unchanged: the paper discounts the observed gain only). "First" is in
    rank order, the order in which a reader of the top K meets the documents. NA where RA-nWG is.

Sources
-------
The source of each ranked document comes, in this order of precedence, from ``source_of`` (a
``{doc_id: source}`` dict, a document it lacks being its own source, or a function of the id), from
a ``source`` column of the run frame, or from :func:`default_source` (the id up to the first ``#``,
the ``<document>#<chunk>`` naming of chunked corpora). :func:`ragnb.evaluation.evaluate.evaluate`
computes ``RA-nWG-nov`` when the run frame has a ``source`` column or ``source_of`` is given.

Changed in this version: before, the j-th repeat (by weight) weighed ``beta**j``; the paper's
``delta`` is ``beta`` for every repeat, which is what is computed now.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 2.3 ("Novelty discount").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder
from ragnb.measures.base import Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.functions import Qrels, Run, aggregate_values
from ragnb.measures.graded import (
    CAP3,
    CAP4,
    FB3,
    FB4,
    A,
    over_ideal,
    weights_of,
)
from ragnb.measures.kernel import RankingArrays, extend_arrays, prepare, ranked_cells

__all__ = [
    "SOURCE_COLUMN",
    "SourceOf",
    "SourcedArrays",
    "add_sources",
    "default_source",
    "prepare_sources",
    "ra_nwg_novelty",
]

SourceOf: TypeAlias = Mapping[str, str] | Callable[[str], str] | None

#: The run-frame column that names each document's source.
SOURCE_COLUMN = "source"


def default_source(doc_id: str) -> str:
    """The default source of a document: its id up to the first ``#`` (the whole id if none).

    Chunked corpora often name passages ``<document>#<chunk>``; a corpus whose ids hold no ``#``
    has every document as its own source.

    Examples
    --------
    >>> default_source("paper12#3"), default_source("<dbpedia:Paris>")
    ('paper12', '<dbpedia:Paris>')
    """
    return doc_id.partition("#")[0]


@dataclass(frozen=True, eq=False)
class SourcedArrays(RankingArrays):
    """:class:`~ragnb.measures.RankingArrays` with the source of each ranked document.

    Every measure computes on these as on the plain arrays; ``RA-nWG-nov`` needs them.

    Attributes
    ----------
    source : ndarray of int64, shape (n_queries, depth)
        A code of the source of the document at each rank (equal codes = same source); -1 where
        the run does not fill the position.
    """

    source: np.ndarray


def _source_labels(ranked: pd.DataFrame, source_of: SourceOf) -> pd.Series:
    doc_ids = ranked["doc_id"].astype(str)
    if source_of is None:
        if SOURCE_COLUMN in ranked.columns:
            labels = ranked[SOURCE_COLUMN]
            if labels.isna().any():
                row = int(np.flatnonzero(labels.isna().to_numpy())[0])
                raise InputError(
                    f"the run's {SOURCE_COLUMN!r} column is empty for doc "
                    f"{doc_ids.iloc[row]!r}; give every document a source",
                    query_id=str(ranked["query_id"].iloc[row]),
                    column=SOURCE_COLUMN,
                )
            return labels.astype(str)
        return doc_ids.str.split("#", n=1, regex=False).str[0]
    if isinstance(source_of, Mapping):
        mapped = doc_ids.map(lambda d: source_of.get(d))
        return mapped.where(mapped.notna(), doc_ids).astype(str)
    if callable(source_of):
        return doc_ids.map(lambda d: str(source_of(d)))
    raise InputError(
        f"source_of must be None, a dict or a function, got {type(source_of).__name__}"
    )


def prepare_sources(
    qrels: Qrels,
    run: Run,
    *,
    source_of: SourceOf = None,
    order: RunOrder = "score",
    depth: int | None = None,
) -> SourcedArrays:
    """:func:`ragnb.measures.prepare`, plus the source of every ranked document.

    Parameters
    ----------
    qrels, run, order, depth
        As for :func:`ragnb.measures.prepare`; a run frame may carry a ``source`` column.
    source_of : dict or callable, optional
        ``{doc_id: source id}`` (a document it lacks is its own source) or ``f(doc_id) -> source
        id``; default the run's ``source`` column if it has one, else :func:`default_source`.

    Returns
    -------
    SourcedArrays

    Raises
    ------
    InputError
        As :func:`ragnb.measures.prepare`; a bad ``source_of``; an empty ``source`` cell.
    """
    arrays = prepare(qrels, run, order=order, depth=depth)
    return add_sources(arrays, run, source_of=source_of, order=order)


def add_sources(
    arrays: RankingArrays, run: Run, *, source_of: SourceOf = None, order: RunOrder = "score"
) -> SourcedArrays:
    """Prepared arrays plus the source of every ranked document (no second join with the qrels).

    Parameters
    ----------
    arrays : RankingArrays
        From :func:`ragnb.measures.prepare` on ``run`` with ``order`` (or those arrays with their
        grades mapped, :func:`ragnb.measures.graded.map_arrays`).
    run, source_of, order
        As for :func:`prepare_sources`.

    Returns
    -------
    SourcedArrays
        ``arrays``' fields shared, plus ``source``: shape (n_queries, depth), int64 codes, -1
        where the run fills no rank.

    Raises
    ------
    InputError
        A bad ``source_of``; an empty ``source`` cell.
    """
    ranked, rows, cols = ranked_cells(arrays, run, order)
    codes, _ = pd.factorize(_source_labels(ranked, source_of))
    source = np.full((arrays.n_queries, arrays.depth), -1, dtype=np.int64)
    source[rows, cols] = codes
    return extend_arrays(arrays, SourcedArrays, source=source)


def _first_of_source(source: np.ndarray) -> np.ndarray:
    """True at the first (highest-ranked) position of each source in each row; (n_q, width)."""
    n_q, width = source.shape
    first = np.zeros(source.shape, dtype=bool)
    if width == 0:
        return first
    if width <= 32:  # a short top K: compare each rank with the ranks above it
        first[:, 0] = True
        for j in range(1, width):
            first[:, j] = ~(source[:, :j] == source[:, j : j + 1]).any(axis=1)
        return first
    key = np.arange(n_q, dtype=np.int64)[:, None] * (int(source.max()) + 2) + (source + 1)
    _, at = np.unique(key.ravel(), return_index=True)  # row-major: the first index is the top
    first.ravel()[at] = True
    return first


def _ra_nwg_nov(
    arrays: RankingArrays,
    k: int,
    *,
    a: float,
    beta: float,
    cap3: float,
    cap4: float,
    fb3: float,
    fb4: float,
) -> np.ndarray:
    """RA-nWG with delta = 1 for the first document of a source in the top K, beta for every
    repeat; shape (n_queries,)."""
    if not isinstance(arrays, SourcedArrays):
        raise InputError(
            f"RA-nWG-nov(beta={beta:g})@{k} needs the source of each document, which these "
            "arrays do not carry: give evaluate() a run frame with a 'source' column or "
            "source_of=..., or use ragnb.measures.novelty.ra_nwg_novelty(qrels, run, k, beta=...)"
        )
    counts, w = weights_of(arrays, a, cap3, cap4, fb3, fb4)
    grades = np.clip(arrays.grades[:, :k], 1, 5) - 1
    cell_w = np.where(arrays.judged[:, :k], np.take_along_axis(w, grades, axis=1), 0.0)
    delta = np.where(_first_of_source(arrays.source[:, :k]), 1.0, beta)
    return over_ideal((delta * cell_w).sum(axis=1), w, counts, k)


BETA = ParamSpec("beta", float, None, 0.0, 1.0, doc="delta of every repeat of a source")

register_family(
    MeasureFamily(
        "RA-nWG-nov",
        _ra_nwg_nov,
        params=(A, BETA, CAP3, CAP4, FB3, FB4),
        summary="RA-nWG@K with delta = 1 for a source's first document in the top K and beta for "
        "every repeat (Dallaire 2025, Section 2.3); needs document sources",
    )
)


def ra_nwg_novelty(
    qrels: Qrels,
    run: Run,
    k: int,
    *,
    beta: float,
    source_of: SourceOf = None,
    a: float = 1.0,
    cap3: float = 0.25,
    cap4: float = 1.0,
    fb3: float = 0.2,
    fb4: float = 1.0,
    order: RunOrder = "score",
) -> float:
    """Mean novelty-discounted RA-nWG@K (``RA-nWG-nov(beta=...)@K``).

    Parameters
    ----------
    qrels, run, k, a, cap3, cap4, fb3, fb4, order
        As for :func:`ragnb.measures.graded.ra_nwg`; a run frame may carry a ``source`` column.
    beta : float in [0, 1]
        delta of every repeat of a source; the paper's ``beta in [0, 1)``; 1 gives RA-nWG.
    source_of : dict or callable, optional
        ``{doc_id: source id}`` (a document it lacks is its own source) or ``f(doc_id) -> source
        id``; default the run's ``source`` column, else :func:`default_source`.

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries where RA-nWG is defined.

    Raises
    ------
    InputError
        As :func:`ragnb.measures.graded.ra_nwg`, or on a bad ``beta`` or ``source_of``.

    Notes
    -----
    ``G_obs^nov(K) = sum_{d in TopK} delta(d) w_g(d)``, ``delta = 1`` for the highest-ranked
    document of each source in the top K and ``beta`` for each other one (unjudged documents
    and judged ones of weight 0 count as occurrences too); divided by RA-nWG's ``G_ideal(K)``.
    Never above RA-nWG; equal to it when no source repeats in the top K.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 2.3, "Novelty discount".

    Examples
    --------
    >>> # pool a#1=5, a#2=5, a#3=5, b=5, c=1: w = 1 for grade 5; ideal@3 = 3
    >>> qrels = {"q1": {"a#1": 5, "a#2": 5, "a#3": 5, "b": 5, "c": 1}}
    >>> run = {"q1": {"a#1": 0.9, "a#2": 0.8, "a#3": 0.7}}  # top 3: one source, two repeats
    >>> ra_nwg_novelty(qrels, run, 3, beta=0.5)            # (1 + 0.5 + 0.5) / 3
    0.6666666666666666
    """
    m = Measure("RA-nWG-nov", k, a=a, beta=beta, cap3=cap3, cap4=cap4, fb3=fb3, fb4=fb4)
    arrays = prepare_sources(qrels, run, source_of=source_of, order=order, depth=m.depth)
    return aggregate_values(m, m.compute(arrays))
