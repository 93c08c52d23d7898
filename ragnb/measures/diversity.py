"""Diversity: alpha-nDCG@K over subtopic judgements (Clarke et al. 2008).

Subtopic qrels
--------------
A frame with columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance`` (int): one row per
(query, subtopic, document) judgement, as the TREC Web track's diversity qrels ``qid subtopic docid
rel`` (ir_measures reads the subtopic from the TREC ``iteration`` column). A document relevant to
several subtopics has several rows. An optional column ``importance`` (``"vital"`` or ``"okay"``,
one value per query and subtopic) marks the subtopics a good answer must hold: nugget qrels
(:mod:`ragnb.measures.nuggets`) carry it; without the column every subtopic is vital. For the other
measures :func:`ragnb.evaluation.evaluate.evaluate` reads the document-level qrels these imply: each
(query, document) with its largest grade over the subtopics (:func:`document_qrels`).

Measure
-------
``alpha-nDCG(alpha=a,rel=r)@K``: ``J(d, s) = 1`` when document d has grade >= r for subtopic s.
The gain at rank k is ``sum_s J(d_k, s) (1 - alpha)^(c_s)`` with ``c_s`` the documents above k
relevant to s (novelty: each repeat of a subtopic is worth ``1 - alpha`` times the previous one);
``alpha-DCG@K = sum_{k<=K} gain_k / log2(k + 1)``, normalised by the alpha-DCG@K of the greedy
ideal ranking of the query's judged documents (at each rank the document of largest gain; ties to
the largest ``doc_id``), as ndeval computes it (the exact ideal is NP-hard). 0
when the query has no relevant subtopic judgement. Default ``alpha = 0.5``, ``rel = 1``, as
ir_measures' ``alpha_nDCG@K``.

References
----------
.. [1] C. L. A. Clarke, M. Kolla, G. V. Cormack, O. Vechtomova, A. Ashkan, S. Büttcher and
   I. MacKinnon, "Novelty and diversity in information retrieval evaluation", SIGIR 2008,
   Section 3 (eqs. 1-4) and Section 4 (the greedy ideal).
.. [2] ndeval, TREC Web track 2009-2014 (``ndeval.c``); pyndeval, as used by ir_measures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import (
    IMPORTANCE_COLUMN,
    IMPORTANCE_LEVELS,
    SUBTOPIC_COLUMNS,
    RunOrder,
    check_subtopic_qrels,
    document_qrels,
)
from ragnb.measures.base import REL, Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.functions import Run, fill_doc
from ragnb.measures.kernel import RankingArrays, dcg, extend_arrays, prepare, ranked_cells, safe_div

__all__ = [
    "IMPORTANCE_COLUMN",
    "IMPORTANCE_LEVELS",
    "SUBTOPIC_COLUMNS",
    "SubtopicArrays",
    "alpha_ndcg",
    "document_qrels",
    "prepare_subtopics",
]


@dataclass(frozen=True, eq=False)
class SubtopicArrays(RankingArrays):
    """:class:`~ragnb.measures.RankingArrays` with subtopic grades; every measure computes on them.

    Attributes
    ----------
    subtopic_grades : ndarray of int64, shape (n_queries, depth, n_subtopics)
        Grade of the document at each rank for each subtopic of its query (0 where unjudged or
        unfilled); ``n_subtopics`` is the largest number of subtopics of a query.
    pool_grades : ndarray of int64, shape (n_queries, n_pool, n_subtopics)
        The subtopic grades of every judged document of the query (the candidates of the ideal
        ranking), ``doc_id`` descending, padded with 0.
    subtopics : ndarray of bool, shape (n_queries, n_subtopics)
        True where the query has that subtopic (False in the padding).
    vital : ndarray of bool, shape (n_queries, n_subtopics)
        True where the subtopic is vital (every subtopic without an ``importance`` column).
    """

    subtopic_grades: np.ndarray
    pool_grades: np.ndarray
    subtopics: np.ndarray
    vital: np.ndarray


def prepare_subtopics(
    subtopic_qrels: pd.DataFrame,
    run: Run,
    *,
    order: RunOrder = "score",
    depth: int | None = None,
) -> SubtopicArrays:
    """:func:`ragnb.measures.prepare` on :func:`document_qrels`, plus the subtopic grades.

    Parameters
    ----------
    subtopic_qrels : DataFrame
        Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance``.
    run, order, depth
        As for :func:`ragnb.measures.prepare`.

    Returns
    -------
    SubtopicArrays

    Raises
    ------
    InputError
        On malformed subtopic qrels or run.
    """
    frame = check_subtopic_qrels(subtopic_qrels)
    arrays = prepare(document_qrels(frame), run, order=order, depth=depth)
    n_q = arrays.n_queries
    row_of = pd.Index(arrays.query_ids).get_indexer(frame["query_id"]).astype(np.int64)
    sub_code = _within(row_of, pd.factorize(frame["subtopic"])[0])
    n_sub = int(sub_code.max()) + 1
    ranked, rows, cols = ranked_cells(arrays, run, order)
    judged_cells = np.flatnonzero(arrays.judged[rows, cols])  # the others gain nothing
    rows, cols = rows[judged_cells], cols[judged_cells]
    ranked_docs = ranked["doc_id"].iloc[judged_cells].astype(str)
    # (query row, document) pairs as integers: row * n_docs + the document's code
    doc_code, doc_ids = pd.factorize(pd.concat([frame["doc_id"], ranked_docs], ignore_index=True))
    n_docs = max(len(doc_ids), 1)
    judged = row_of * n_docs + doc_code[: len(frame)]
    pool_keys, pool_pos = _pool(judged, n_docs, doc_ids)
    n_pool = int(pool_pos.max()) + 1
    pool = np.zeros((n_q, n_pool, n_sub), dtype=np.int64)
    at = pool_keys.get_indexer(judged)
    pool[row_of, pool_pos[at], sub_code] = frame["relevance"].to_numpy(dtype=np.int64)
    has = np.zeros((n_q, n_sub), dtype=bool)
    has[row_of, sub_code] = True
    vital = np.zeros((n_q, n_sub), dtype=bool)
    vital[row_of, sub_code] = (frame[IMPORTANCE_COLUMN] == IMPORTANCE_LEVELS[0]).to_numpy()

    in_pool = pool_keys.get_indexer(rows.astype(np.int64) * n_docs + doc_code[len(frame) :])
    grades = np.zeros((n_q, arrays.depth, n_sub), dtype=np.int64)
    hit = in_pool >= 0
    grades[rows[hit], cols[hit]] = pool[rows[hit], pool_pos[in_pool[hit]]]
    return extend_arrays(
        arrays, SubtopicArrays, subtopic_grades=grades, pool_grades=pool, subtopics=has, vital=vital
    )


def _within(group: np.ndarray, code: np.ndarray) -> np.ndarray:
    """Each code renumbered 0, 1, ... within its group, in order of first appearance."""
    width = int(code.max()) + 1 if len(code) else 1
    pair, first = pd.factorize(group * width + code)  # pairs in order of first appearance
    owner = first // width
    order = np.argsort(owner, kind="stable")
    start = np.searchsorted(owner[order], owner[order])
    within = np.empty(len(first), dtype=np.int64)
    within[order] = np.arange(len(first)) - start
    return within[pair]


def _pool(keys: np.ndarray, n_docs: int, doc_ids: pd.Index) -> tuple[pd.Index, np.ndarray]:
    """The distinct (row, document) keys of the judgements, by row and then ``doc_id``
    descending (ndeval's tie order), and each one's position within its row."""
    pairs = np.sort(pd.unique(keys))  # (np.unique is slower on many keys)
    rows, docs = pairs // n_docs, pairs % n_docs
    used = pd.unique(docs)
    rank = np.zeros(n_docs, dtype=np.int64)  # string order of the judged documents
    rank[used[np.asarray(doc_ids[used].argsort())]] = np.arange(len(used))
    order = np.lexsort((-rank[docs], rows))
    pairs, rows = pairs[order], rows[order]
    return pd.Index(pairs), np.arange(len(pairs)) - np.searchsorted(rows, rows)


# ----------------------------------------------------------------------------- kernel


def greedy_ideal_gains(relevant: np.ndarray, k: int, alpha: float) -> np.ndarray:
    """Novelty gains of ndeval's greedy ideal ranking of each query's judged documents.

    Parameters
    ----------
    relevant : ndarray of bool, shape (n_queries, n_pool, n_subtopics)
        Which pooled document is relevant to which subtopic, documents in ``doc_id`` descending
        order (:attr:`SubtopicArrays.pool_grades` ``>= rel``).
    k : int
        Ranks of the ideal to build.
    alpha : float in [0, 1]
        Each repeat of a subtopic gains ``1 - alpha`` times the previous one.

    Returns
    -------
    ndarray of float64, shape (n_queries, min(k, n_pool))
        At each rank the largest gain ``sum_s J(d, s) (1 - alpha)^(c_s)`` over the documents not
        yet placed, ties to the first (the largest ``doc_id``), as ndeval's ``idealResult``
        (Clarke et al. 2008, Section 4).
    """
    n_q, n_pool, _ = relevant.shape
    steps = min(k, n_pool)
    seen = np.zeros((n_q, relevant.shape[2]))
    used = np.zeros((n_q, n_pool), dtype=bool)
    rows = np.arange(n_q)
    out = np.zeros((n_q, steps))
    novelty = relevant.astype(np.float64)
    for i in range(steps):
        gain = np.einsum("qds,qs->qd", novelty, (1.0 - alpha) ** seen)
        gain[used] = -1.0
        best = gain.argmax(axis=1)  # the first of the largest: the largest doc_id, as ndeval
        out[:, i] = np.maximum(gain[rows, best], 0.0)
        used[rows, best] = True
        seen += relevant[rows, best]
    return out


def _alpha_ndcg(arrays: RankingArrays, k: int, *, alpha: float, rel: int) -> np.ndarray:
    """alpha-DCG@k over the greedy ideal's; 0 without a relevant judgement; (n_queries,)."""
    if not isinstance(arrays, SubtopicArrays):
        raise InputError(
            f"alpha-nDCG@{k} needs subtopic judgements: give TREC diversity qrels (qid subtopic "
            "docid rel) read as such (ragnb evaluate --qrels-format diversity; in Python "
            "evaluate() on ragnb.io.readers.read_diversity_qrels(path), or any qrels frame with "
            "a 'subtopic' column)"
        )
    judged = arrays.subtopic_grades[:, :k, :] >= rel
    before: np.ndarray = np.cumsum(judged, axis=1) - judged
    gains = (judged * (1.0 - alpha) ** before).sum(axis=2)
    ideal = greedy_ideal_gains(arrays.pool_grades >= rel, k, alpha)
    return safe_div(dcg(gains), dcg(ideal))


ALPHA_D = ParamSpec("alpha", float, 0.5, 0.0, 1.0, doc="redundancy penalty per repeat")

register_family(
    MeasureFamily(
        "alpha-nDCG",
        _alpha_ndcg,
        params=(ALPHA_D, REL),
        summary="alpha-nDCG@K = alpha-DCG@K / greedy ideal alpha-DCG@K, gain sum_s J(d,s) "
        "(1-alpha)^(repeats of s above) (Clarke et al. 2008)",
    ),
    aliases=("alpha_nDCG", "alpha-ndcg", "alpha_ndcg"),
)


# ----------------------------------------------------------------------------- public function


@fill_doc
def alpha_ndcg(
    subtopic_qrels: pd.DataFrame,
    run: Run,
    k: int,
    *,
    alpha: float = 0.5,
    rel: int = 1,
    order: RunOrder = "score",
) -> float:
    """Mean alpha-nDCG@K: nDCG that rewards covering new subtopics and discounts repeats.

    Parameters
    ----------
    subtopic_qrels : DataFrame
        Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance`` (int).
    {{run, k}}
    alpha : float in [0, 1], default 0.5
        Each further document on a subtopic gains ``(1 - alpha)`` times the previous one.
    rel : int, default 1
        A subtopic judgement with grade >= ``rel`` is relevant.
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries of the subtopic qrels.

    Raises
    ------
    InputError
        On malformed subtopic qrels or run, or a bad ``k``, ``alpha`` or ``rel``.

    Notes
    -----
    See the module docstring for the formula and the greedy ideal. With a single subtopic per
    query and ``alpha = 0`` it is nDCG with binary gain.

    References
    ----------
    .. [1] C. L. A. Clarke et al., "Novelty and diversity in information retrieval evaluation",
       SIGIR 2008, Sections 3-4.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q"] * 3, "subtopic": ["s1", "s1", "s2"],
    ...                       "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]})
    >>> run = {"q": {"a": 3, "b": 2, "c": 1}}      # gains 1, 0.5, 1; ideal a, c, b: 1, 1, 0.5
    >>> round(alpha_ndcg(qrels, run, 3), 6)
    0.965195
    """
    m = Measure("alpha-nDCG", k, alpha=alpha, rel=rel)
    values = m.compute(prepare_subtopics(subtopic_qrels, run, order=order, depth=m.depth))
    return float(values.mean())
