"""Preference measures: trec_eval 10.0's prefs_* on preference judgements.

Preference judgements
---------------------
A frame with columns ``query_id``, ``judgment_group``, ``judgment_subgroup``, ``doc_id``,
``rel_level`` (:data:`ragnb.frames.schema.PREFS_COLUMNS`; trec_eval's ``prefs`` file ``qid jg
jsg docno rel_level``, read by :func:`ragnb.io.prefs.read_prefs`; a TREC qrels file read as
preferences by :func:`ragnb.io.prefs.read_qrels_prefs`). A judgment group (JG) holds one user's
preferences for one information need: within each of its subgroups (JSG) a document of higher
``rel_level`` is preferred to one of lower ``rel_level``; a JG with several subgroups is a
partial order closed under transitivity (``A > B`` in one subgroup and ``B > C`` in another give
``A > C``). A ``rel_level`` of 0 marks a non-relevant document, above 0 a relevant one. Groups may
disagree with each other; within a group a contradiction is an error.

Counts
------
For a preference ``A > B`` of a group and a run: *fulfilled* when A is ranked above B;
*retrieved* (``_ret``) when both are retrieved, *implied* when one is (fulfilled when it is A),
*not occurring* when neither is (never fulfilled). Over a query's groups:

===================================== ========================================================
measure                               per query
===================================== ========================================================
``prefs_num_prefs_poss``              preferences (summed over the queries in the ``all`` line)
``prefs_num_prefs_ful``               fulfilled, retrieved or implied (summed)
``prefs_num_prefs_ful_ret``           fulfilled, retrieved (summed)
``prefs_simp``, ``_ret``, ``_imp``    fulfilled / preferences: every preference; retrieved;
                                      retrieved or implied
``prefs_pair``, ``_ret``, ``_imp``    the mean over document pairs with a preference of the
                                      share of the pair's preferences (over all groups) that the
                                      run fulfils; pairs of any kind, retrieved, retrieved or
                                      implied
``prefs_avgjg``, ``_ret``, ``_imp``   ``prefs_simp`` of each group, averaged over the groups
``prefs_avgjg_Rnonrel``, ``_ret``     ``prefs_avgjg`` with the non-relevant documents of each
                                      group counted as many as its relevant ones, R (more are
                                      added as fulfilled, only the first R in rank order kept):
                                      bpref's idea on preferences
===================================== ========================================================

A ratio whose denominator is 0 is 0, as trec_eval's; ``prefs_avgjg*`` is 0 for a query whose
groups' ratios sum to 0.

Conventions of trec_eval 10.0 kept here
---------------------------------------
* With ``order="score"`` a run is ordered by score descending, ties by ``doc_id`` **ascending**
  (``form_prefs_counts.c``'s order, unlike trec_eval's other measures, whose ties are by
  ``doc_id`` descending); ``order="file"`` keeps the run's order. A document given twice in a
  query's ranking is an error.
* The same document with two ``rel_level`` values in one subgroup of a single-subgroup group, a
  document 0 in one subgroup of a group and above 0 in another, and a cycle of preferences in a
  group are errors (trec_eval stops, or aborts, on each). The same line twice counts twice.
* A document's ``rel_level`` may be negative: in a single-subgroup group it is non-relevant, in a
  group of several subgroups neither relevant nor non-relevant (``num_rel`` and ``num_nonrel`` of
  ``form_prefs_counts.c``).
* trec_eval's own quirks are reproduced, value for value: the counts of ``prefs_pair`` per pair
  wrap at 65536 (``unsigned short``); when ``prefs_avgjg_Rnonrel`` keeps R of a group's
  non-relevant documents, it also counts every pair of a non-relevant document with a kept one
  (itself included) as a preference not fulfilled; ``prefs_avgjg_Rnonrel`` and its ``_ret`` form
  are 0 for a query with a group of non-relevant documents only (0 / 0 there, whatever the
  other groups); ``prefs_avgjg_Rnonrel_ret`` weighs the non-relevant documents it adds by the
  group's relevant documents, retrieved or not. Where trec_eval reads past a group's judgements
  (``prefs_avgjg_Rnonrel`` when the lowest level of a single-subgroup group holds fewer documents
  than the group's relevant ones, possible only with negative ``rel_level`` values) the value is
  undefined there and an error here.

References
----------
.. [1] trec_eval 10.0, ``form_prefs_counts.c`` and ``m_prefs_*.c``,
   https://github.com/usnistgov/trec_eval
.. [2] C. Buckley and E. M. Voorhees, "Retrieval evaluation with incomplete information", SIGIR
   2004 (bpref, whose idea ``prefs_avgjg_Rnonrel`` takes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ragnb.errors import DuplicateEntry, InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import (
    PREFS_COLUMNS,
    RunOrder,
    as_str_ids,
    check_prefs,
    check_qrels,
    qrels_from_dict,
    run_from_dict,
)
from ragnb.measures.base import MeasureFamily, TrecEvalName, register_family
from ragnb.measures.kernel import RankingArrays, extend_arrays, prepare

__all__ = [
    "PREFS_MEASURES",
    "PrefsArrays",
    "prefs_document_qrels",
    "prefs_of_qrels",
    "prepare_prefs",
]

#: The measures, in trec_eval 10.0's order (``measures.c``): the columns of
#: :attr:`PrefsArrays.prefs_values`.
PREFS_MEASURES = (
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp",
    "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
    "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp",
    "prefs_avgjg_imp",
)  # fmt: skip
#: The measures that are counts (summed over queries).
_COUNTS = PREFS_MEASURES[:3]


@dataclass(frozen=True, eq=False)
class PrefsArrays(RankingArrays):
    """:class:`~ragnb.measures.RankingArrays` with every preference measure's value per query.

    Attributes
    ----------
    prefs_values : ndarray of float64, shape (n_queries, 14)
        The value of each of :data:`PREFS_MEASURES` (a column each) for each query of the
        preference judgements; counts are whole numbers.
    """

    prefs_values: np.ndarray


# ----------------------------------------------------------------------------- frames


def prefs_of_qrels(qrels: pd.DataFrame | Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """Qrels as preference judgements: one judgment group and subgroup (``"0"``) per query.

    trec_eval's ``-R qrels_prefs`` reads a qrels file so when its second column is constant
    (:func:`ragnb.io.prefs.read_qrels_prefs` keeps that column as the group).

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id: grade}}``.

    Returns
    -------
    DataFrame
        Columns :data:`ragnb.frames.schema.PREFS_COLUMNS`, ``rel_level`` the grade as float64.

    Raises
    ------
    InputError
        Malformed qrels.

    Examples
    --------
    >>> prefs_of_qrels({"q1": {"d1": 2}}).values.tolist()
    [['q1', '0', '0', 'd1', 2.0]]
    """
    if isinstance(qrels, Mapping):
        frame = qrels_from_dict(qrels)
    else:
        check_qrels(qrels)
        frame = qrels
    return pd.DataFrame(
        {
            "query_id": as_str_ids(frame["query_id"].to_numpy(dtype=object)),
            "judgment_group": "0",
            "judgment_subgroup": "0",
            "doc_id": as_str_ids(frame["doc_id"].to_numpy(dtype=object)),
            "rel_level": frame["relevance"].to_numpy(dtype=np.float64),
        },
        columns=list(PREFS_COLUMNS),
    )


def prefs_document_qrels(prefs: pd.DataFrame) -> pd.DataFrame:
    """The documents preference judgements name, as qrels: each (query, document) once, with
    grade 1 when some ``rel_level`` of it is above 0, else 0.

    :func:`ragnb.evaluation.evaluate.evaluate` reads them for its counts (the queries, those
    missing from the run); no measure reads these grades.

    Parameters
    ----------
    prefs : DataFrame
        Preference judgements (:data:`ragnb.frames.schema.PREFS_COLUMNS`).

    Returns
    -------
    DataFrame
        ``query_id``, ``doc_id`` (str), ``relevance`` (int64), sorted by query and document.

    Raises
    ------
    InputError
        Malformed preference judgements (:func:`ragnb.frames.schema.check_prefs`).
    """
    frame = check_prefs(prefs)
    out = frame.groupby(["query_id", "doc_id"], sort=True, as_index=False)["rel_level"].max()
    return pd.DataFrame(
        {
            "query_id": out["query_id"].to_numpy(dtype=object),
            "doc_id": out["doc_id"].to_numpy(dtype=object),
            "relevance": (out["rel_level"].to_numpy() > 0).astype(np.int64),
        }
    )


def _ranked_docs(
    run: pd.DataFrame, queries: set[str], order: RunOrder, depth: int | None
) -> dict[str, np.ndarray]:
    """Each query's retrieved documents in evaluation order, cut at ``depth``: by score
    descending, ties by ``doc_id`` ascending (trec_eval's prefs order), or the file's order."""
    if order == "file":
        ranked = sort_run(run, "file", warn=False).run
        frame = pd.DataFrame(
            {
                "query_id": as_str_ids(ranked["query_id"].to_numpy(dtype=object)),
                "doc_id": as_str_ids(ranked["doc_id"].to_numpy(dtype=object)),
            }
        )
    else:
        frame = pd.DataFrame(
            {
                "query_id": as_str_ids(run["query_id"].to_numpy(dtype=object)),
                "doc_id": as_str_ids(run["doc_id"].to_numpy(dtype=object)),
                "score": run["score"].to_numpy(dtype=np.float64),
            }
        )
        frame = frame[frame["query_id"].isin(queries)]
        frame = frame.sort_values(
            ["query_id", "score", "doc_id"], ascending=[True, False, True], kind="mergesort"
        )
    frame = frame[frame["query_id"].isin(queries)]
    if depth is not None:
        frame = frame[frame.groupby("query_id", sort=False).cumcount().to_numpy() < depth]
    docs = frame["doc_id"].to_numpy(dtype=object)
    qids = frame["query_id"].to_numpy(dtype=object)
    if not len(qids):
        return {}
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    ends = np.r_[starts[1:], len(qids)]
    return {str(qids[s]): docs[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)}


def prepare_prefs(
    prefs: pd.DataFrame,
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    *,
    order: RunOrder = "score",
    depth: int | None = None,
) -> PrefsArrays:
    """Join a run with preference judgements: every preference measure per query.

    Parameters
    ----------
    prefs : DataFrame
        Preference judgements (module docstring; :func:`ragnb.io.prefs.read_prefs`).
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score`` (optionally ``rank``), or ``{query_id:
        {doc_id: score}}``.
    order : {"score", "file"}, default "score"
        ``"score"``: score descending, ties by ``doc_id`` ascending (trec_eval's order for these
        measures); ``"file"``: the run's ``rank`` column, else its row order.
    depth : int, optional
        Keep the top ``depth`` documents of each query (trec_eval's ``-M``; 0 keeps none);
        default all.

    Returns
    -------
    PrefsArrays
        One row per query of the judgements (sorted), the arrays of
        :func:`ragnb.measures.prepare` on :func:`prefs_document_qrels` and
        :attr:`PrefsArrays.prefs_values`.

    Raises
    ------
    InputError
        Malformed judgements or run, a document twice in a query's ranking, a contradiction in
        a judgment group (module docstring), a negative ``depth``.

    Examples
    --------
    >>> prefs = pd.DataFrame({"query_id": ["q"] * 3, "judgment_group": "u",
    ...                       "judgment_subgroup": "s", "doc_id": ["a", "b", "c"],
    ...                       "rel_level": [2.0, 1.0, 0.0]})
    >>> arrays = prepare_prefs(prefs, {"q": {"b": 2.0, "a": 1.0}})
    >>> dict(zip(PREFS_MEASURES[:4], arrays.prefs_values[0].tolist()))  # b > a fails
    ... # doctest: +NORMALIZE_WHITESPACE
    {'prefs_num_prefs_poss': 3.0, 'prefs_num_prefs_ful': 2.0,
     'prefs_num_prefs_ful_ret': 0.0, 'prefs_simp': 0.6666666666666666}
    """
    frame = check_prefs(prefs)
    if depth is not None and depth < 0:
        raise InputError(f"depth must be >= 0, got {depth}")
    run_frame = run_from_dict(run) if isinstance(run, Mapping) else run
    base = prepare(prefs_document_qrels(frame), run_frame, order=order)
    ranked = _ranked_docs(run_frame, set(base.query_ids.tolist()), order, depth)
    values = np.zeros((base.n_queries, len(PREFS_MEASURES)))
    row_of = {q: i for i, q in enumerate(base.query_ids.tolist())}
    empty = np.array([], dtype=object)
    for qid, lines in _sorted_judgements(frame):
        values[row_of[qid]] = _query_values(qid, lines, ranked.get(qid, empty))
    return extend_arrays(base, PrefsArrays, prefs_values=values)


@dataclass(frozen=True)
class _Lines:
    """Judgement lines as arrays, sorted by group, subgroup and rel_level descending
    (``form_prefs_counts.c``'s order but for the rank, which no count depends on there)."""

    group: np.ndarray  # str
    subgroup: np.ndarray  # str
    doc: np.ndarray  # str
    level: np.ndarray  # float64
    rank: np.ndarray  # int64, the internal rank of each line's document (-1 until known)

    def cut(self, start: int, end: int) -> _Lines:
        """Lines ``start`` to ``end`` (excluded)."""
        return _Lines(
            self.group[start:end],
            self.subgroup[start:end],
            self.doc[start:end],
            self.level[start:end],
            self.rank[start:end],
        )


def _runs(codes: np.ndarray) -> list[tuple[int, int]]:
    """The (start, end) of each run of equal values of ``codes``."""
    cuts = (np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist()
    return list(zip([0, *cuts], [*cuts, len(codes)], strict=True))


def _sorted_judgements(frame: pd.DataFrame) -> list[tuple[str, _Lines]]:
    """Each query's lines (queries sorted), in :class:`_Lines`' order: one sort for all."""
    codes = {
        c: pd.factorize(frame[c].to_numpy(dtype=object), sort=True)[0] for c in PREFS_COLUMNS[:3]
    }
    level = frame["rel_level"].to_numpy(dtype=np.float64)
    at = np.lexsort(
        (-level, codes["judgment_subgroup"], codes["judgment_group"], codes["query_id"])
    )
    group, subgroup, doc = (frame[c].to_numpy(dtype=object)[at] for c in PREFS_COLUMNS[1:4])
    lines = _Lines(group, subgroup, doc, level[at], np.full(len(at), -1, dtype=np.int64))
    qids = frame["query_id"].to_numpy(dtype=object)[at]
    return [(str(qids[s]), lines.cut(s, e)) for s, e in _runs(codes["query_id"][at])]


# ----------------------------------------------------------------------------- one query


@dataclass
class _Group:
    """One judgment group's counts (``JG`` of ``trec_eval.h``), the fulfilled ones included in
    ``poss_*``; ``rnonrel`` and ``rnonrel_ret`` are ``prefs_avgjg_Rnonrel[_ret]``'s
    (fulfilled, possible)."""

    ful_ret: int = 0
    poss_ret: int = 0
    ful_imp: int = 0
    poss_imp: int = 0
    notoccur: int = 0
    num_rel: int = 0
    num_rel_ret: int = 0
    num_nonrel: int = 0
    num_nonrel_ret: int = 0
    rnonrel: tuple[int, int] = (0, 0)
    rnonrel_ret: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class _Query:
    """What a group's counting reads: the query, its judged documents by internal rank, the
    judged retrieved ones (ranks ``0 .. n_ret - 1``) and the pair counts of every group."""

    query_id: str
    docs: np.ndarray  # doc id of each internal rank
    n_ret: int
    pairs: np.ndarray  # uint16 (n_judged, n_judged): preferences of i over j, all groups


def _query_values(query_id: str, lines: _Lines, ranked: np.ndarray) -> np.ndarray:
    """Every preference measure of one query, as trec_eval 10.0's ``form_prefs_counts.c`` and
    ``m_prefs_*.c``: the values of :data:`PREFS_MEASURES`, shape (14,). ``ranked``: the query's
    retrieved documents in rank order."""
    docs, n_ret, rank_of = _internal_ranks(lines.doc, ranked, query_id)
    query = _Query(query_id, docs, n_ret, np.zeros((len(docs), len(docs)), dtype=np.uint16))
    lines = _Lines(lines.group, lines.subgroup, lines.doc, lines.level, rank_of)
    groups = []
    for start, end in _runs(lines.group):
        one = lines.cut(start, end)
        count = _ec_group if (one.subgroup == one.subgroup[0]).all() else _pa_group
        groups.append(count(one, query, str(one.group[0])))
    return _measures(groups, query)


def _internal_ranks(
    judged: np.ndarray, ranked: np.ndarray, query_id: str
) -> tuple[np.ndarray, int, np.ndarray]:
    """trec_eval's docid ranks: the judged retrieved documents 0, 1, ... in rank order, then the
    judged unretrieved ones in ``doc_id`` order. Returns the documents by internal rank, the
    number retrieved and the internal rank of each of ``judged``."""
    in_run = ranked.tolist()
    if len(set(in_run)) < len(in_run):
        doc = next(d for d, n in Counter(in_run).items() if n > 1)
        raise DuplicateEntry("run", doc, query_id=query_id)
    names = set(judged.tolist())
    retrieved = [d for d in in_run if d in names]
    order = retrieved + sorted(names.difference(retrieved))
    rank_of = {d: i for i, d in enumerate(order)}
    ranks = np.fromiter((rank_of[d] for d in judged.tolist()), np.int64, len(judged))
    return np.array(order, dtype=object), len(retrieved), ranks


def _below(a: np.ndarray, b: np.ndarray) -> int:
    """Pairs ``(x, y)`` of ``a`` and ``b`` with ``x < y`` (internal ranks: x ranked above y);
    ``b`` ascending."""
    if not len(a) or not len(b):
        return 0
    return int((len(b) - np.searchsorted(b, a, side="right")).sum())


def _levels(one: _Lines) -> list[tuple[float, np.ndarray]]:
    """A single-subgroup group's equivalence classes: (rel_level, internal ranks ascending),
    levels descending."""
    return [(float(one.level[s]), np.sort(one.rank[s:e])) for s, e in _runs(one.level)]


def _ec_group(one: _Lines, query: _Query, jg: str) -> _Group:
    """A group of one subgroup: every document of a level preferred to every one of a lower
    level (``form_jg_ec``, ``add_ec_pref_to_jg``)."""
    ecs = _levels(one)
    counted = [np.unique(a, return_counts=True) for _, a in ecs]
    docs, times = np.unique(np.concatenate([u for u, _ in counted]), return_counts=True)
    if (times > 1).any():
        raise InputError(
            f"doc {query.docs[docs[times > 1][0]]!r} has two rel_levels in judgment group "
            f"{jg!r}, which has one subgroup (trec_eval 10.0 stops too)",
            query_id=query.query_id,
        )
    n_ret = query.n_ret
    g = _Group()
    for x, (level, a) in enumerate(ecs):
        a_ret = a[a < n_ret]
        if level > 0.0:
            g.num_rel_ret, g.num_rel = g.num_rel_ret + len(a_ret), g.num_rel + len(a)
        else:
            g.num_nonrel_ret, g.num_nonrel = g.num_nonrel_ret + len(a_ret), g.num_nonrel + len(a)
        ua, ca = counted[x]
        for y in range(x + 1, len(ecs)):
            b = ecs[y][1]
            ub, cb = counted[y]
            query.pairs[np.ix_(ua, ub)] += np.outer(ca, cb).astype(np.uint16)
            b_ret = b[b < n_ret]
            a_out, b_out = len(a) - len(a_ret), len(b) - len(b_ret)
            g.ful_ret += _below(a_ret, b_ret)
            g.poss_ret += len(a_ret) * len(b_ret)
            g.ful_imp += len(a_ret) * b_out
            g.poss_imp += len(a_ret) * b_out + a_out * len(b_ret)
            g.notoccur += a_out * b_out
    g.rnonrel = _ec_rnonrel(ecs, g, query)
    g.rnonrel_ret = _ec_rnonrel_ret(ecs, g, query)
    return g


def _ful_above(a: np.ndarray, b: np.ndarray, n_ret: int) -> int:
    """``recalculate``'s fulfilled pairs: x of ``a`` retrieved and ranked above y of ``b``."""
    return _below(a[a < n_ret], b)


def _ec_rnonrel(ecs: list[tuple[float, np.ndarray]], g: _Group, query: _Query) -> tuple[int, int]:
    """``prefs_avgjg_Rnonrel``'s (fulfilled, possible) of a single-subgroup group
    (``m_prefs_avgjg_Rnonrel.c``)."""
    big_r, big_n = g.num_rel, g.num_nonrel
    if big_r >= big_n:
        ful = g.ful_ret + g.ful_imp + g.num_rel_ret * (big_r - big_n)
        return ful, g.poss_ret + g.poss_imp + g.notoccur + g.num_rel * (big_r - big_n)
    last = ecs[-1][1]
    if len(last) < big_r:
        raise _past_the_group(query, "prefs_avgjg_Rnonrel")
    kept = last[:big_r]
    ful = poss = 0
    for x, (_, a) in enumerate(ecs):
        for _, b in ecs[x + 1 : -1]:
            ful, poss = ful + _ful_above(a, b, query.n_ret), poss + len(a) * len(b)
        ful, poss = ful + _ful_above(a, kept, query.n_ret), poss + len(a) * len(kept)
    return ful, poss


def _ec_rnonrel_ret(
    ecs: list[tuple[float, np.ndarray]], g: _Group, query: _Query
) -> tuple[int, int]:
    """``prefs_avgjg_Rnonrel_ret``'s (fulfilled, possible) of a single-subgroup group
    (``m_prefs_avgjg_Rnonrel_ret.c``): retrieved documents only."""
    big_r, big_n = g.num_rel_ret, g.num_nonrel_ret
    if big_r >= big_n:
        return g.ful_ret + g.num_rel_ret * (big_r - big_n), g.poss_ret + g.num_rel * (big_r - big_n)
    n_ret = query.n_ret
    last = ecs[-1][1]
    if len(last) < big_r and (last < n_ret).all():
        raise _past_the_group(query, "prefs_avgjg_Rnonrel_ret")
    kept = last[: min(big_r, int((last < n_ret).sum()))]
    ful = poss = 0
    for x, (_, a) in enumerate(ecs):
        a = a[a < n_ret]
        for _, b in ecs[x + 1 : -1]:
            b = b[b < n_ret]
            ful, poss = ful + _below(a, b), poss + len(a) * len(b)
        ful, poss = ful + _below(a, kept), poss + len(a) * len(kept)
    return ful, poss


def _past_the_group(query: _Query, name: str) -> InputError:
    return InputError(
        f"{name}: a judgment group's lowest rel_level holds fewer documents than the group's "
        "relevant ones (negative rel_levels below 0); trec_eval 10.0 reads past the group's "
        "judgements there and its value is undefined",
        query_id=query.query_id,
    )


def _pa_group(one: _Lines, query: _Query, jg: str) -> _Group:
    """A group of several subgroups: each subgroup's preferences, closed under transitivity
    (``form_jg_pa``, ``add_transitives``, ``add_pa_pref_to_jg``)."""
    levels = one.level
    docs = np.unique(one.rank)  # internal ranks ascending
    local = np.searchsorted(docs, one.rank)
    rel = _pa_levels(local, one, query, jg)
    prefer = np.zeros((len(docs), len(docs)), dtype=bool)
    for start, end in _runs(one.subgroup):
        higher = levels[start:end, None] > levels[None, start:end]
        ii, jj = np.nonzero(higher)
        prefer[local[start:end][ii], local[start:end][jj]] = True
    prefer = _closure(prefer, docs, query, jg)
    query.pairs[np.ix_(docs, docs)] += prefer.astype(np.uint16)
    ret = docs < query.n_ret
    upper = np.triu(prefer, 1)
    g = _Group(
        ful_ret=int(upper[np.ix_(ret, ret)].sum()),
        poss_ret=int(prefer[np.ix_(ret, ret)].sum()),
        ful_imp=int(prefer[np.ix_(ret, ~ret)].sum()),
        notoccur=int(prefer[np.ix_(~ret, ~ret)].sum()),
        num_rel=int((rel > 0).sum()),
        num_rel_ret=int((rel[ret] > 0).sum()),
        num_nonrel=int((rel == 0).sum()),
        num_nonrel_ret=int((rel[ret] == 0).sum()),
    )
    g.poss_imp = g.ful_imp + int(prefer[np.ix_(~ret, ret)].sum())
    g.rnonrel = _pa_rnonrel(prefer, rel, ret, g, retrieved_only=False)
    g.rnonrel_ret = _pa_rnonrel(prefer, rel, ret, g, retrieved_only=True)
    return g


def _pa_levels(local: np.ndarray, one: _Lines, query: _Query, jg: str) -> np.ndarray:
    """Each document's rel_level in the group, the last one given in trec_eval's order
    (``rel_array``: by subgroup, then level descending); a document 0 in one line and above 0
    in the next one of it is an error, as trec_eval's."""
    rel = np.full(int(local.max()) + 1, -1.0)
    for at, level, doc in zip(local.tolist(), one.level.tolist(), one.doc.tolist(), strict=True):
        if (rel[at] > 0.0 and level == 0.0) or (rel[at] == 0.0 and level > 0.0):
            raise InputError(
                f"doc {doc!r} has both 0 and non-0 rel_levels in judgment group {jg!r} "
                "(trec_eval 10.0 stops too)",
                query_id=query.query_id,
            )
        rel[at] = level
    return rel


def _closure(prefer: np.ndarray, docs: np.ndarray, query: _Query, jg: str) -> np.ndarray:
    """The transitive closure of a group's preferences, the diagonal cleared; a pair preferred
    both ways is an error (trec_eval aborts)."""
    n = len(prefer)
    reach = prefer | np.eye(n, dtype=bool)
    while True:
        step = (reach.astype(np.float32) @ reach.astype(np.float32)) > 0
        if (step == reach).all():
            break
        reach = step
    np.fill_diagonal(reach, False)
    both = np.argwhere(reach & reach.T)
    if len(both):
        i, j = both[0]
        raise InputError(
            f"docs {query.docs[docs[i]]!r} and {query.docs[docs[j]]!r} are each preferred to "
            f"the other in judgment group {jg!r} (through its subgroups; trec_eval 10.0 aborts)",
            query_id=query.query_id,
        )
    return reach


def _pa_rnonrel(
    prefer: np.ndarray, rel: np.ndarray, ret: np.ndarray, g: _Group, *, retrieved_only: bool
) -> tuple[int, int]:
    """``prefs_avgjg_Rnonrel[_ret]``'s (fulfilled, possible) of a group of several subgroups:
    the non-relevant documents after the first R (in rank order) left out when there are more
    than R; R the group's relevant documents (retrieved ones with ``retrieved_only``, whose
    cut still counts R of all relevant ones, as trec_eval's)."""
    big_r, big_n = (
        (g.num_rel_ret, g.num_nonrel_ret) if retrieved_only else (g.num_rel, g.num_nonrel)
    )
    if big_r >= big_n:
        if retrieved_only:
            return g.ful_ret + g.num_rel_ret * (big_r - big_n), g.poss_ret + g.num_rel * (
                big_r - big_n
            )
        ful = g.ful_ret + g.ful_imp + g.num_rel_ret * (big_r - big_n)
        return ful, g.poss_ret + g.poss_imp + g.notoccur + g.num_rel * (big_r - big_n)
    zero = rel == 0.0
    seen = np.cumsum(zero & (ret if retrieved_only else True))
    keep = ~(zero & (seen > g.num_rel))
    if retrieved_only:
        keep &= ret
    kept = prefer[np.ix_(keep, keep)]
    above = np.triu(kept, 1)
    if not retrieved_only:
        above = above[ret[keep]]
    return int(above.sum()), int(kept.sum())


def _ratio(num: float, den: float) -> float:
    """``num / den`` as C divides doubles: NaN for 0 / 0."""
    return num / den if den else float("nan")


def _avg_over_groups(ratios: list[float], n_groups: int) -> float:
    """trec_eval's mean over groups: the ratios summed in order, 0 unless the sum is > 0."""
    total = 0.0
    for r in ratios:
        total += r
    return total / n_groups if total > 0.0 else 0.0


def _pair_means(query: _Query) -> tuple[float, float, float]:
    """``prefs_pair``, ``prefs_pair_ret`` and ``prefs_pair_imp``: over the document pairs with
    a preference in some group, the mean of the share of their preferences fulfilled; pairs of
    any kind (both unretrieved count, fulfilling none), both retrieved, one retrieved or both."""
    c, n = query.pairs, query.n_ret
    top = c[:n, :n].astype(np.float64)
    i, j = np.triu_indices(n, 1)
    ahead, behind = top[i, j], top[j, i]
    some = (ahead + behind) > 0
    shares = [ahead[some] / (ahead + behind)[some]]
    ahead, behind = c[:n, n:].astype(np.float64), c[n:, :n].T.astype(np.float64)
    some = (ahead + behind) > 0
    shares.append(ahead[some] / (ahead + behind)[some])
    rest = c[n:, n:] != 0
    rest |= rest.T
    n_ret, n_imp = len(shares[0]), len(shares[0]) + len(shares[1])
    n_all = n_imp + int((rest.sum() - np.trace(rest)) // 2)
    # summed in trec_eval's order: the retrieved pairs, then those of one retrieved document
    sums = np.cumsum(np.concatenate([[0.0], *shares]))
    return (
        float(sums[n_imp]) / n_all if n_all else 0.0,
        float(sums[n_ret]) / n_ret if n_ret else 0.0,
        float(sums[n_imp]) / n_imp if n_imp else 0.0,
    )


def _measures(groups: list[_Group], query: _Query) -> np.ndarray:
    """The 14 values of :data:`PREFS_MEASURES` from a query's groups."""
    ful_ret = sum(g.ful_ret for g in groups)
    ful = ful_ret + sum(g.ful_imp for g in groups)
    poss_ret = sum(g.poss_ret for g in groups)
    poss_imp = poss_ret + sum(g.poss_imp for g in groups)
    poss = poss_imp + sum(g.notoccur for g in groups)
    n = len(groups)
    pair, pair_ret, pair_imp = _pair_means(query)

    def avgjg(f: Callable[[_Group], tuple[int, int]], guard: bool = True) -> float:
        pairs = [f(g) for g in groups]
        return _avg_over_groups([_ratio(a, b) for a, b in pairs if b or not guard], n)

    return np.array(
        [
            poss,
            ful,
            ful_ret,
            ful / poss if poss else 0.0,
            pair,
            avgjg(lambda g: (g.ful_ret + g.ful_imp, g.poss_ret + g.poss_imp + g.notoccur)),
            avgjg(lambda g: g.rnonrel, guard=False),
            ful_ret / poss_ret if poss_ret else 0.0,
            pair_ret,
            avgjg(lambda g: (g.ful_ret, g.poss_ret)),
            avgjg(lambda g: g.rnonrel_ret, guard=False),
            ful / poss_imp if poss_imp else 0.0,
            pair_imp,
            avgjg(lambda g: (g.ful_ret + g.ful_imp, g.poss_ret + g.poss_imp)),
        ],
        dtype=np.float64,
    )


# ----------------------------------------------------------------------------- family


def _kernel(name: str) -> Callable[..., np.ndarray]:
    """The kernel of one preference measure: its column of :attr:`PrefsArrays.prefs_values`."""
    column = PREFS_MEASURES.index(name)

    def kernel(arrays: RankingArrays, k: int | None) -> np.ndarray:
        if not isinstance(arrays, PrefsArrays):
            raise InputError(
                f"{name} reads preference judgements: give a frame of "
                "ragnb.io.prefs.read_prefs or read_qrels_prefs (or qrels, read as one judgment "
                "group per query) to evaluate(), or ragnb trec-eval -R prefs"
            )
        return arrays.prefs_values[:, column].copy()

    kernel.__name__ = f"_{name}"
    kernel.__qualname__ = f"_{name}"
    return kernel


#: Each measure's definition (the catalogue's), from the trec_eval 10.0 help text.
_SUMMARIES = {
    "prefs_num_prefs_poss": "preferences of the judgements, retrieved or not (summed over queries)",
    "prefs_num_prefs_ful": "preferences fulfilled, both or only the preferred document retrieved "
    "(summed)",
    "prefs_num_prefs_ful_ret": "preferences fulfilled, both documents retrieved (summed)",
    "prefs_simp": "fulfilled / all preferences (implied fulfilled: only the preferred doc "
    "retrieved; neither retrieved: failed)",
    "prefs_pair": "mean over doc pairs with a preference of the share of their preferences "
    "fulfilled",
    "prefs_avgjg": "prefs_simp of each judgment group, averaged over the groups",
    "prefs_avgjg_Rnonrel": "prefs_avgjg with each group's non-relevant docs counted as R, its "
    "relevant ones (bpref-like)",
    "prefs_simp_ret": "fulfilled / preferences, both documents retrieved",
    "prefs_pair_ret": "prefs_pair over pairs of retrieved documents",
    "prefs_avgjg_ret": "prefs_simp_ret of each judgment group, averaged over the groups",
    "prefs_avgjg_Rnonrel_ret": "prefs_avgjg_Rnonrel on the retrieved documents",
    "prefs_simp_imp": "fulfilled / preferences with at least one document retrieved",
    "prefs_pair_imp": "prefs_pair over pairs with at least one document retrieved",
    "prefs_avgjg_imp": "prefs_simp_imp of each judgment group, averaged over the groups",
}

for _name in PREFS_MEASURES:
    register_family(
        MeasureFamily(
            _name,
            _kernel(_name),
            cutoff="none",
            depth=lambda k: None,
            summary=_SUMMARIES[_name],
            aggregate="sum" if _name in _COUNTS else "mean",
            trec_eval=(TrecEvalName(_name),),
        )
    )
