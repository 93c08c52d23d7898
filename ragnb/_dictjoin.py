"""The rank of each judgement in a ``{query_id: {doc_id: score}}`` run, by look-ups.

Private to :func:`ragnb.measures.prepare`. A run held as dicts is already a hash table per
query: its judged documents are found by looking each judged id up in its query's dict (as many
look-ups as judgements), and each one's rank follows from the scores alone, ``1 +`` (scores
above it) ``+`` (equal scores whose id is greater, trec_eval's tie order), so the run's ten
million ids are never converted to strings or sorted; only the few documents whose score ties
with a judged one are compared, as ``str``. The run is read in one pass, query by query (its
ids' types, its scores, then its judged documents' scores while its dict is still in the CPU
cache): reading ten million scattered Python objects is what costs.

The result, :class:`JoinedRanks`, is what ``ragnb.measures._kernel`` needs to fill its padded
arrays directly (no join): each judgement's 0-based rank and each query's run size.

Applies when every document id of the run and of the qrels is a ``str``, every query of the run
is a ``dict``, no judged id is empty and the order is by score; otherwise (and on any input the
general path rejects) :func:`joined_ranks` returns None and the caller takes the general path,
which raises its errors. The arrays are identical to the general path's
(tests/test_dictjoin.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from ragnb.frames import _Groups, _groupsort, _QrelsIndex

__all__ = ["JoinedRanks", "joined_ranks"]


@dataclass(frozen=True, eq=False)
class _Read:
    """The run read query by query (its non-empty queries, in dict order).

    Attributes
    ----------
    ids : ndarray of str (object), shape (n_groups,)
    dicts : list of dict
        Each query's documents.
    values : ndarray of float64
        Query after query, the query's scores in dict order, then the scores looked up for its
        judgements (NaN: not retrieved).
    first, size : ndarray of int64, shape (n_groups,)
        Query ``g``'s scores are ``values[first[g]:first[g] + size[g]]``.
    starts : ndarray of int64, shape (n_groups + 1,)
        Cumulated sizes: the queries' bounds in the joined layout.
    """

    ids: np.ndarray
    dicts: list[dict]
    values: np.ndarray
    first: np.ndarray
    size: np.ndarray
    starts: np.ndarray


@dataclass(frozen=True, eq=False)
class JoinedRanks:
    """Where each judgement of the qrels stands in a dict run (:func:`joined_ranks`).

    Attributes
    ----------
    run : _Read
        The run's non-empty queries (dict order), their sizes and scores.
    group_of : ndarray of int64, shape (n_qrels_groups,)
        The run group of each qrels query (-1: missing from the run).
    rank : ndarray of int64, shape (n_qrels_rows,)
        0-based rank of each judgement in its query's evaluation order (score descending, ties
        by id descending), -1 when not retrieved; in the layout of ``qrels.queries.rows``.
    """

    run: _Read
    group_of: np.ndarray
    rank: np.ndarray


def joined_ranks(run: Mapping[str, Mapping[str, float]], qrels: _QrelsIndex) -> JoinedRanks | None:
    """The rank of each judgement of ``qrels`` in a dict run, or None where it does not apply.

    Parameters
    ----------
    run : dict of dict
        ``{query_id: {doc_id: score}}``, scores convertible to float64 (finite).
    qrels : _QrelsIndex
        From a dict of dicts (``qrels.keys`` set).

    Returns
    -------
    JoinedRanks or None
        None when the run or the qrels do not qualify or a score is not a number (the general
        path then raises, naming it).
    """
    keys = qrels.keys
    inner: list[Any] = list(run.values())
    if keys is None or not all(map(isinstance, inner, repeat(dict))):
        return None
    if not _all_str(keys) or bool((np.diff(qrels.docs.offsets) == 0).any()):
        return None
    qids = [str(q) for q in run.keys()]
    if len(set(qids)) != len(qids):
        return None
    q = qrels.queries
    grouped = np.asarray(keys, dtype=object)  # judged ids, qrels group after group
    if not bool((np.diff(q.rows) > 0).all()):
        grouped = grouped[q.rows]
    where = dict(zip(q.ids.tolist(), range(len(q.ids)), strict=True))
    group = np.fromiter(map(where.get, qids, repeat(-1)), np.int64, len(qids))
    read = _read(inner, qids, group, grouped, q.starts)
    if read is None:
        return None
    (read_run, j_score), group_of = read
    return _ranked(read_run, j_score, group_of, grouped, qrels.queries)


def _all_str(values: Iterable[object]) -> bool:
    """Every value is exactly a ``str`` (so distinct dict keys are distinct ids)."""
    return set(map(type, values)) <= {str}


def _read(
    inner: list[dict],
    qids: list[str],
    group: np.ndarray,
    grouped: np.ndarray,
    q_starts: np.ndarray,
) -> tuple[tuple[_Read, np.ndarray], np.ndarray] | None:
    """One pass over the run: ``(read run, judged scores in qrels layout), group_of`` (the run
    group of each qrels group, -1: none); None on an id that is not a str or a bad score."""
    sizes = np.fromiter(map(len, inner), np.int64, len(inner))
    n_judged = np.where(group >= 0, np.diff(q_starts)[group], 0)
    block = sizes + n_judged
    offset = np.cumsum(block) - block
    lists = grouped.tolist()
    bounds = q_starts.tolist()
    types: set[type] = set()
    nans = repeat(float("nan"))  # one endless supply for every look-up

    def entries() -> Iterator[Iterable[object]]:
        for d, i in zip(inner, group.tolist(), strict=True):
            types.update(map(type, d))
            yield d.values()
            if i >= 0:
                yield map(d.get, lists[bounds[i] : bounds[i + 1]], nans)

    try:
        values = np.fromiter(chain.from_iterable(entries()), np.float64, int(block.sum()))
    except (TypeError, ValueError, OverflowError):
        return None
    if not types <= {str}:
        return None
    # the judged documents' scores, back in the qrels' layout
    hit = np.flatnonzero(group >= 0)
    m = n_judged[hit]
    src = np.repeat(offset[hit] + sizes[hit] - (np.cumsum(m) - m), m) + np.arange(int(m.sum()))
    dst = np.repeat(q_starts[group[hit]] - (np.cumsum(m) - m), m) + np.arange(int(m.sum()))
    j_score = np.full(int(q_starts[-1]), np.nan)
    j_score[dst] = values[src]
    if int(np.isnan(values).sum()) != int(np.isnan(values[src]).sum()):
        return None  # a NaN score
    if bool(np.isinf(values).any()):
        return None  # an infinite score
    keep = np.flatnonzero(sizes)  # a query with no entries has no rows
    read = _Read(
        np.array([qids[k] for k in keep.tolist()], dtype=object),
        [inner[k] for k in keep.tolist()],
        values,
        offset[keep],
        sizes[keep],
        np.concatenate(([0], np.cumsum(sizes[keep]))).astype(np.int64),
    )
    group_of = np.full(len(q_starts) - 1, -1, dtype=np.int64)
    kept = group[keep]
    group_of[kept[kept >= 0]] = np.flatnonzero(kept >= 0)
    return (read, j_score), group_of


def _ranked(
    run: _Read, j_score: np.ndarray, group_of: np.ndarray, grouped: np.ndarray, q: _Groups
) -> JoinedRanks:
    """Rank each judgement found in the run: scores above it, plus tied ones with greater ids."""
    above = np.full(len(j_score), -1, dtype=np.int64)
    tied = np.zeros(len(j_score), dtype=np.int64)
    kernels = _groupsort()
    args = (run.first, run.size, run.values, group_of, q.starts, j_score, above, tied)
    kernels.run_chunks(kernels.count_above, len(q.ids), *args)
    _break_ties(run, grouped, j_score, above, tied, q.starts, group_of)
    return JoinedRanks(run, group_of, above)


def _break_ties(
    run: _Read,
    grouped: np.ndarray,
    j_score: np.ndarray,
    above: np.ndarray,
    tied: np.ndarray,
    q_starts: np.ndarray,
    group_of: np.ndarray,
) -> None:
    """Add to ``above`` the documents that tie with a judged one and have a greater id."""
    cases = np.flatnonzero(tied > 1)
    if not len(cases):
        return
    groups = group_of[np.searchsorted(q_starts, cases, side="right") - 1]
    # the ids of the run groups concerned, in dict order
    affected, slot = np.unique(groups, return_inverse=True)
    m = run.size[affected]
    base = np.cumsum(m) - m
    ids = chain.from_iterable(run.dicts[g] for g in affected.tolist())
    flat = np.fromiter(ids, dtype=object, count=int(m.sum()))
    # every score of those groups against each case's score
    m = run.size[groups]
    case = np.repeat(np.arange(len(cases)), m)
    local = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
    hit = run.values[np.repeat(run.first[groups], m) + local] == j_score[cases][case]
    case, local = case[hit], local[hit]
    found = flat[base[slot.reshape(-1)[case]] + local]
    greater = np.greater(found, grouped[cases][case]).astype(bool)
    above[cases] += np.bincount(case[greater], minlength=len(cases))
