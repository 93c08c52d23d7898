"""Evaluate a run against qrels on a list of measures: aggregate and per-query tables.

Pure: no files, no printing. The run is ordered once, joined with the qrels once
(:func:`ragnb.measures.prepare`) and every measure reads the same arrays.

Conventions
-----------
* The evaluated queries are the queries of the qrels (trec_eval ``-c``). A query of the qrels
  absent from the run is evaluated as an empty ranking: 0 on every trec_eval-family measure, and
  on T / T_u the value of a top K with no relevant document (``-alpha`` / ``-alpha K``), so that
  returning nothing never beats returning something. A run query without qrels is left out.
  Both are counted in :attr:`EvaluationResult.counts`.
* A per-query NaN means "undefined" and is excluded from the mean (``n_valid`` counts the rest).
  The trec_eval-family measures never return NaN: like trec_eval they return 0 where a
  denominator is 0 (R with N_p = 0, nDCG with ideal DCG 0, ...); Dallaire's graded measures are
  NA where the paper says so.
* The counts (``NumRet``, ``NumRelRet``, ``NumRel``) aggregate by sum, every other measure by
  the macro mean.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder, check_subtopic_qrels, document_qrels
from ragnb.measures import (
    GRADED_FAMILIES,
    Measure,
    RankingArrays,
    parse_measure,
    parse_measures,
    prepare,
)
from ragnb.measures.diversity import prepare_subtopics
from ragnb.measures.functions import aggregate_values
from ragnb.measures.graded import check_graded_scale, map_arrays
from ragnb.measures.intent import INTENT_FAMILIES
from ragnb.measures.kernel import cut_arrays
from ragnb.measures.novelty import SOURCE_COLUMN, SourceOf, add_sources
from ragnb.measures.prefs import (
    PREFS_MEASURES,
    prefs_document_qrels,
    prefs_of_qrels,
    prepare_prefs,
)

__all__ = [
    "ON_RUBRIC",
    "EvaluationResult",
    "aggregate_means",
    "checked_grade_map",
    "checked_nuggets",
    "drop_self_retrieved",
    "evaluate",
    "measure_labels",
    "no_shared_query",
    "nugget_coverage",
    "nugget_judgements",
    "result_from_values",
    "wide_values",
]

#: ``grade_map`` value stating that the qrels already hold Dallaire's 1-5 grades.
ON_RUBRIC = "1-5"
#: The qrels-frame column that makes them subtopic qrels (alpha-nDCG).
SUBTOPIC_COLUMN = "subtopic"
#: Families that read Dallaire's 1-5 grades (the grade map applies to them).
_GRADED = (*GRADED_FAMILIES, "RA-nWG-nov")
#: Families that read document sources / subtopic judgements (nugget qrels are subtopic qrels).
_SOURCE_FAMILIES = ("RA-nWG-nov",)
_SUBTOPIC_FAMILIES = ("alpha-nDCG", "NuggetRecall", *INTENT_FAMILIES)
#: The family that reads ``nuggets=`` when given.
NUGGETS = "NuggetRecall"
#: The qrels-frame column that makes them preference judgements (the ``prefs_*`` measures).
PREFS_COLUMN = "judgment_subgroup"


def wide_values(
    per_query: pd.DataFrame, measures: list[str], queries: list[Any] | None = None
) -> pd.DataFrame:
    """A long per-query frame with one column per measure (``per_query_wide`` of a result).

    Parameters
    ----------
    per_query : DataFrame
        Long form ``query_id``, ``measure``, ``value`` (one row per query and measure).
    measures : list of str
        The measure names, in the column order wanted.
    queries : list, optional
        The query ids in the row order wanted; default sorted.

    Returns
    -------
    DataFrame
        Index ``query_id``, columns ``measures`` (float values), no columns name.
    """
    wide = per_query.pivot(index="query_id", columns="measure", values="value")
    wide = wide[measures] if queries is None else wide.loc[queries, measures]
    wide.columns.name = None
    return wide


def aggregate_means(aggregate: pd.DataFrame) -> dict[str, float]:
    """``{measure: value}`` of an aggregate frame (columns ``measure``, ``value``), in row order.

    Examples
    --------
    >>> aggregate_means(pd.DataFrame({"measure": ["P@5"], "value": [0.4]}))
    {'P@5': 0.4}
    """
    return {
        str(name): float(value)
        for name, value in zip(aggregate["measure"], aggregate["value"], strict=True)
    }


@dataclass(frozen=True, eq=False)
class EvaluationResult:
    """The outcome of :func:`evaluate`.

    Attributes
    ----------
    measures : tuple of Measure
        In the order requested (duplicates after alias normalisation removed).
    aggregate : DataFrame
        One row per measure: ``measure`` (str, canonical name), ``value`` (float, macro mean over
        the queries with a non-NaN value, the sum for the counts ``NumRet``, ``NumRelRet`` and
        ``NumRel`` as in trec_eval; NaN if there are none), ``n_valid`` (int, those
        queries), ``n_queries`` (int, queries of the qrels).
    counts : dict
        ``queries_in_qrels``, ``queries_missing_from_run`` (scored as empty rankings),
        ``run_queries_without_qrels`` (left out), ``rank_disagreements`` (queries whose file
        ranks disagree with their scores), ``order`` (the ordering policy), and
        ``fe_short_runs``: ``{F_e measure name: queries whose run holds fewer than 2K
        documents}`` (missing queries are not included there).
    query_ids : ndarray of str (object), shape (n_queries,)
        The queries of the qrels, sorted: the rows of ``values``.
    values : ndarray of float64, shape (n_queries, n_measures)
        Per-query values (read-only), a column per measure in requested order; NaN where a
        measure is undefined for a query.
    per_query : DataFrame
        Long form: ``query_id`` (str), ``measure`` (str), ``value`` (float); rows grouped by
        measure (requested order), then query (sorted). Built from ``values`` on first access
        (``n_queries * n_measures`` rows), then kept.
    labels : tuple of str
        The name each measure was requested under (``map``, ``AP`` and ``MAP`` are one measure,
        ``AP`` in the tables; a :class:`~ragnb.measures.Measure` object by its canonical name),
        as ``ragnb evaluate`` prints them; empty: the canonical names (:attr:`names`).
    """

    measures: tuple[Measure, ...]
    aggregate: pd.DataFrame
    counts: dict[str, Any]
    query_ids: np.ndarray
    values: np.ndarray
    labels: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """The names the measures were requested under: :attr:`labels`, else the canonical
        names."""
        return list(self.labels) if self.labels else [m.name for m in self.measures]

    @cached_property
    def per_query(self) -> pd.DataFrame:
        """The per-query values in long form (see the class docstring)."""
        n_q, n_m = self.values.shape
        names = np.asarray([m.name for m in self.measures], dtype=object)
        # the id and name columns are converted once per query / measure, then their bytes
        # repeated (converting n_queries * n_measures Python strings costs more than measuring)
        return pd.DataFrame(
            {
                "query_id": _str_column(self.query_ids, n_m, each=False),
                "measure": _str_column(names, n_q, each=True),
                "value": self.values.T.reshape(-1),
            }
        )

    def per_query_wide(self) -> pd.DataFrame:
        """Per-query values, one column per measure.

        Returns
        -------
        DataFrame
            Index ``query_id`` (sorted), columns the measure names in requested order.
        """
        index = pd.Index(self.query_ids, dtype="str", name="query_id")
        return pd.DataFrame(self.values, index=index, columns=[m.name for m in self.measures])

    def aggregate_to_dict(self) -> dict[str, float]:
        """``{measure name: macro mean}``, in requested order."""
        return aggregate_means(self.aggregate)

    def __repr__(self) -> str:
        c = self.counts
        head = (
            f"EvaluationResult({c['queries_in_qrels']} queries, "
            f"{c['queries_missing_from_run']} missing from run, "
            f"{c['run_queries_without_qrels']} run queries without qrels, order={c['order']!r})"
        )
        return head + "\n" + self.aggregate.to_string(index=False)


def evaluate(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    measures: Iterable[str | Measure] | str | Measure,
    *,
    order: RunOrder = "score",
    grade_map: str | Mapping[int, int] | None = None,
    source_of: SourceOf = None,
    ignore_self: bool = False,
    nuggets: pd.DataFrame | None = None,
) -> EvaluationResult:
    """Evaluate ``run`` against ``qrels`` on ``measures``.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance`` (int), or ``{query_id: {doc_id: grade}}``.
        With a ``subtopic`` column they are subtopic qrels (one row per query, subtopic and
        document, as TREC diversity qrels ``qid subtopic docid rel``): ``alpha-nDCG`` and
        ``NuggetRecall`` (nugget qrels, :mod:`ragnb.measures.nuggets`, with an optional
        ``importance`` column) read them and every other measure the document's largest grade
        over its subtopics (:func:`ragnb.measures.diversity.document_qrels`). With a
        ``judgment_subgroup`` column they are preference judgements (``query_id``,
        ``judgment_group``, ``judgment_subgroup``, ``doc_id``, ``rel_level``;
        :func:`ragnb.io.prefs.read_prefs`, :func:`ragnb.io.prefs.read_qrels_prefs`), which only
        the ``prefs_*`` measures read (:mod:`ragnb.measures.prefs`); those measures read other
        qrels as one judgment group per query (:func:`ragnb.measures.prefs.prefs_of_qrels`).
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score`` (optionally ``rank``, ``tag``, and ``source``:
        the source document of each retrieved chunk, for ``RA-nWG-nov``), or
        ``{query_id: {doc_id: score}}``.
    measures : list of str or Measure
        Names (canonical or aliases, see :func:`ragnb.measures.parse_measure`) or objects.
    order : {"score", "file"}, default "score"
        ``"score"``: trec_eval's order (score descending, ties by ``doc_id`` descending);
        ``"file"``: the run's own order (``rank`` column, else row order). The ``prefs_*``
        measures break ties by ``doc_id`` ascending, as trec_eval orders runs for them.
    grade_map : str or mapping of int to int, optional
        How the qrels' grades map onto Dallaire's 1-5 rubric for the graded families
        (RA-nWG, N-Recall4+, N-Recall5, Precision4+, Harm, CompleteHit; Section 2.4 of
        arXiv 2511.09545): a name of :data:`ragnb.measures.GRADE_MAPS` (``"trec-dl"`` for 0-3,
        ``"dbpedia-entity"`` for 0-2, ``"binary"`` for 0-1), ``{grade: 1-5 grade}``, or ``"1-5"``
        to state that the grades already are on the rubric (a grade <= 0 read as 1). Only the
        graded measures read the mapped grades; the others read the qrels as given. Without a
        map, graded measures on qrels that are not on a 1-5 scale (every grade <= 3 and some
        grade <= 0, such as TREC DL's 0-3 or binary 0-1) raise rather than guess.
        ``RA-nWG-nov`` is graded too.
    source_of : dict or callable, optional
        The source of each document for ``RA-nWG-nov`` (Dallaire's novelty discount):
        ``{doc_id: source}`` or ``f(doc_id) -> source`` (e.g.
        :func:`ragnb.measures.novelty.default_source`, the id up to ``#``). Without it the run's
        ``source`` column is read; with neither, ``RA-nWG-nov`` raises.
    ignore_self : bool, default False
        Drop every retrieved document whose id is the query's id before evaluating (BEIR's
        ArguAna and Quora, whose queries are corpus documents; :func:`drop_self_retrieved`);
        ``counts["self_retrieved_dropped"]`` says how many.
    nuggets : DataFrame, optional
        Nugget qrels (``query_id``, ``subtopic`` the nugget id, ``doc_id``, ``relevance`` 2
        support / 1 partial / 0, ``importance``; :func:`ragnb.io.nuggets.read_nugget_qrels`
        reads a folder's nugget files) for ``NuggetRecall``, while every other measure reads
        ``qrels``. A query of the qrels without nuggets is left out of NuggetRecall's mean (NaN,
        not in ``n_valid``): recall of no nugget is undefined, and AutoNuggetizer scores the
        topics that have nuggets. ``counts`` then hold :func:`nugget_coverage`'s.

    Returns
    -------
    EvaluationResult
        ``aggregate``, ``per_query``, ``per_query_wide()``, ``counts``.

    Raises
    ------
    InputError
        On malformed or empty qrels, a malformed run, an unknown measure or ``order``,
        graded measures on qrels whose scale is not 1-5 and no ``grade_map`` (the message names
        the scale found and the maps available), ``RA-nWG-nov`` without sources,
        ``alpha-nDCG`` without subtopic qrels, ``NuggetRecall`` without nuggets or subtopic
        qrels, malformed ``nuggets``, a measure other than ``prefs_*`` on preference judgements
        or a contradiction in them (:mod:`ragnb.measures.prefs`); a run none of whose queries
        is in the qrels (a run of another collection, or ids written differently: every query
        would score 0).

    Warns
    -----
    UserWarning
        When the run's ``rank`` column disagrees with its scores and ``order="score"``.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8}, "q3": {"c": 1.0}}
    >>> res = evaluate(qrels, run, ["P@2", "recall_2"])
    >>> res.aggregate_to_dict()          # P@2: q1 1/2, q2 0 (missing); R@2: q1 1/2, q2 0
    {'P@2': 0.25, 'R@2': 0.25}
    >>> res.counts["queries_missing_from_run"], res.counts["run_queries_without_qrels"]
    (1, 1)
    """
    parsed, labels = _parsed(measures)
    nuggets = None if nuggets is None else checked_nuggets(nuggets)
    run, n_self = drop_self_retrieved(run) if ignore_self else (run, 0)
    subtopics = None
    if isinstance(qrels, pd.DataFrame) and SUBTOPIC_COLUMN in qrels.columns:
        subtopics, qrels = qrels, document_qrels(qrels)
    prefs, qrels = _preference_inputs(qrels, parsed)
    arrays = _prepared(qrels, run, parsed, order)
    _refuse_if_disjoint(arrays, run)
    graded = [m.family in _GRADED for m in parsed]
    if any(graded) and grade_map is None:  # the scale judged on every grade of the qrels
        _check_graded_scale(arrays.grade_levels, [m for m in parsed if m.family in _GRADED])
    if grade_map == ON_RUBRIC:
        grade_map = None  # stated: the grades are already Dallaire's
    inputs = _Inputs(arrays, run, parsed, order, grade_map, source_of, subtopics, nuggets, prefs)
    # one row per measure, seen as (n_queries, n_measures): the tables read the rows as they are
    values = np.stack([inputs.values(m, g) for m, g in zip(parsed, graded, strict=True)]).T
    extra: dict[str, Any] = {"self_retrieved_dropped": n_self} if ignore_self else {}
    judged = nugget_judgements(subtopics, parsed, nuggets)
    if judged is not None:
        extra.update(nugget_coverage(arrays.query_ids, judged))
    return _result(parsed, arrays, values, extra, labels)


@dataclass
class _Inputs:
    """What :func:`evaluate` measures on, and the arrays each measure reads, built once per
    kind (grade-mapped, sourced, subtopics, nuggets): the run is joined with the qrels once; a
    grade map relabels the grades of those arrays."""

    arrays: RankingArrays
    run: Any
    parsed: list[Measure]
    order: RunOrder
    grade_map: Any
    source_of: SourceOf
    subtopics: pd.DataFrame | None
    nuggets: pd.DataFrame | None
    prefs: pd.DataFrame | None = None
    built: dict[str, RankingArrays] = field(default_factory=dict)
    #: The arrays of the nuggets of the qrels' queries: unset, or None when none has any.
    nugget_arrays: list[RankingArrays | None] = field(default_factory=list)

    def values(self, m: Measure, is_graded: bool) -> np.ndarray:
        """``m``'s value per query of the qrels, shape (n_queries,)."""
        if self.nuggets is not None and m.family == NUGGETS:
            return self._nugget_values(m)
        return m.compute(self._arrays_for(m, is_graded))

    def _arrays_for(self, m: Measure, is_graded: bool) -> RankingArrays:
        built, parsed = self.built, self.parsed
        if m.family in PREFS_MEASURES and self.prefs is not None:
            if "prefs" not in built:
                built["prefs"] = prepare_prefs(self.prefs, self.run, order=self.order)
            return built["prefs"]
        built.setdefault("plain", self.arrays)
        mapped = is_graded and self.grade_map is not None
        sourced = self.source_of is not None or (
            isinstance(self.run, pd.DataFrame) and SOURCE_COLUMN in self.run
        )
        kind = _kind_of(m, mapped, has_subtopics=self.subtopics is not None, sourced=sourced)
        if kind == "subtopics" and kind not in built:
            built[kind] = _prepared(
                self.subtopics, self.run, parsed, self.order, warn=False, build=prepare_subtopics
            )
        elif kind not in built:
            if mapped and "mapped" not in built and self.grade_map is not None:
                built["mapped"] = map_arrays(self.arrays, self.grade_map)
            base = built["mapped" if mapped else "plain"]
            if kind.startswith("sourced"):  # the sources of the ranks those measures read
                depth = _depth([m for m in parsed if m.family in _SOURCE_FAMILIES])
                base = add_sources(
                    cut_arrays(base, depth), self.run, source_of=self.source_of, order=self.order
                )
            built[kind] = base
        return built[kind]

    def _nugget_values(self, m: Measure) -> np.ndarray:
        """NuggetRecall on the nuggets of the qrels' queries; NaN for a query without any."""
        if not self.nugget_arrays and self.nuggets is not None:
            held = self.nuggets[self.nuggets["query_id"].isin(set(self.arrays.query_ids))]
            on = [m for m in self.parsed if m.family == NUGGETS]
            self.nugget_arrays.append(
                _prepared(held, self.run, on, self.order, warn=False, build=prepare_subtopics)
                if len(held)
                else None
            )
        out = np.full(self.arrays.n_queries, np.nan)
        arrays = self.nugget_arrays[0]
        if arrays is not None:
            out[pd.Index(self.arrays.query_ids).get_indexer(arrays.query_ids)] = m.compute(arrays)
        return out


def _preference_inputs(qrels: Any, measures: list[Measure]) -> tuple[pd.DataFrame | None, Any]:
    """The preference judgements the ``prefs_*`` measures read (None when none is asked for),
    and the qrels the other arrays are built from: of preference judgements, the documents they
    name; other qrels as they are, read as one judgment group per query by ``prefs_*``."""
    if isinstance(qrels, pd.DataFrame) and PREFS_COLUMN in qrels.columns:
        other = [m for m in measures if m.family not in PREFS_MEASURES]
        if other:
            raise InputError(
                f"measure {other[0].name!r} reads graded qrels; preference judgements (a frame "
                f"with a {PREFS_COLUMN!r} column) take the prefs_* measures only"
            )
        return qrels, prefs_document_qrels(qrels)
    if any(m.family in PREFS_MEASURES for m in measures):
        return prefs_of_qrels(qrels), qrels
    return None, qrels


def checked_nuggets(nuggets: pd.DataFrame) -> pd.DataFrame:
    """Nugget qrels checked as :func:`evaluate` reads them (``nuggets=``).

    Parameters
    ----------
    nuggets : DataFrame
        ``query_id``, ``subtopic`` (the nugget id), ``doc_id``, ``relevance`` and optionally
        ``importance`` (:func:`ragnb.io.nuggets.nugget_qrels`).

    Returns
    -------
    DataFrame
        The columns with string ids and ``importance`` (``"vital"`` where absent).

    Raises
    ------
    InputError
        Not a frame, or what :func:`ragnb.frames.schema.check_subtopic_qrels` raises.
    """
    if not isinstance(nuggets, pd.DataFrame):
        raise InputError(
            "nuggets must be nugget qrels: a DataFrame with columns query_id, subtopic, doc_id, "
            f"relevance, importance (ragnb.io.nuggets.read_nugget_qrels), got "
            f"{type(nuggets).__name__}"
        )
    return check_subtopic_qrels(nuggets)


def nugget_judgements(
    qrels: Any, measures: list[Measure], nuggets: pd.DataFrame | None
) -> pd.DataFrame | None:
    """The nugget qrels whose coverage :func:`evaluate`'s counts report (:func:`nugget_coverage`):
    ``nuggets`` when given, subtopic ``qrels`` when a NuggetRecall of ``measures`` reads them,
    else None."""
    if nuggets is not None:
        return nuggets
    subtopics = isinstance(qrels, pd.DataFrame) and SUBTOPIC_COLUMN in qrels.columns
    if subtopics and any(m.family == NUGGETS for m in measures):
        return qrels
    return None


def nugget_coverage(query_ids: Iterable[Any], nuggets: pd.DataFrame) -> dict[str, int]:
    """Which evaluated queries have nuggets: the counts :func:`evaluate` adds.

    Parameters
    ----------
    query_ids : iterable of str
        The evaluated queries (those of the qrels).
    nuggets : DataFrame
        Nugget (or subtopic) qrels, column ``query_id``.

    Returns
    -------
    dict of str to int
        ``queries_with_nuggets`` (evaluated queries with a nugget: NuggetRecall's ``n_valid``),
        ``queries_without_nuggets`` (evaluated queries without: left out of NuggetRecall's
        mean), ``nugget_queries_without_qrels`` (queries with nuggets that are not evaluated,
        left out).

    Examples
    --------
    >>> nugget_coverage(["q1", "q2", "q3"], pd.DataFrame({"query_id": ["q1", "q1", "q9"]}))
    ... # doctest: +NORMALIZE_WHITESPACE
    {'queries_with_nuggets': 1, 'queries_without_nuggets': 2,
     'nugget_queries_without_qrels': 1}
    """
    evaluated = {str(q) for q in query_ids}
    held = set(nuggets["query_id"].astype(str))
    return {
        "queries_with_nuggets": len(evaluated & held),
        "queries_without_nuggets": len(evaluated - held),
        "nugget_queries_without_qrels": len(held - evaluated),
    }


def no_shared_query(
    qrels_ids: Iterable[Any], run: Any, *, path: str | None = None, n_run: int | None = None
) -> InputError:
    """The error of a run none of whose queries is in the qrels (a run of another collection,
    or ids written differently), with an id of each side.

    Parameters
    ----------
    qrels_ids : iterable
        The qrels' query ids.
    run : DataFrame, dict or iterable
        The run (its ``query_id`` column or keys), or its query ids.
    path : str, optional
        The run file, named in the error.
    n_run : int, optional
        The run's number of queries when ``run`` holds only some of them.

    Returns
    -------
    InputError
    """
    if isinstance(run, pd.DataFrame):
        run = pd.unique(run["query_id"])
    run_ids = [str(q) for q in run]
    q_ids = sorted(str(q) for q in qrels_ids)
    example = f" (e.g. {run_ids[0]!r})" if run_ids else ""
    return InputError(
        f"the run and the qrels share no query id: the run's {n_run or len(run_ids)} queries"
        f"{example} are none of the qrels' {len(q_ids)} (e.g. {q_ids[0]!r}); is it a run of "
        "another collection, or are its ids written differently?",
        path=path,
    )


def _parsed(measures: Iterable[str | Measure] | str | Measure) -> tuple[list[Measure], list[str]]:
    """The measures parsed, duplicates once, and the name each was asked for."""
    given = [measures] if isinstance(measures, str | Measure) else list(measures)
    parsed = parse_measures(given)
    return parsed, measure_labels(given, parsed)


def _refuse_if_disjoint(arrays: RankingArrays, run: Any) -> None:
    """Refuse a run none of whose queries is in the qrels (it would score every query 0), as
    ``ragnb evaluate`` and ``ragnb compare`` refuse such a run file."""
    if arrays.n_run_queries_without_qrels and arrays.n_missing_from_run == arrays.n_queries:
        raise no_shared_query(arrays.query_ids, run)


def measure_labels(given: Iterable[str | Measure], parsed: list[Measure]) -> list[str]:
    """The name each of ``parsed`` is shown under: the first name given for it, as typed
    (stripped); a Measure object by its canonical name.

    Examples
    --------
    >>> names = ["map", "MAP", "P_10"]
    >>> measure_labels(names, parse_measures(names))
    ['map', 'P_10']
    """
    first: dict[Measure, str] = {}
    for item in given:
        if isinstance(item, Measure):
            first.setdefault(item, item.name)
        else:
            first.setdefault(parse_measure(item), str(item).strip())
    return [first[m] for m in parsed]


def _kind_of(m: Measure, mapped: bool, *, has_subtopics: bool, sourced: bool) -> str:
    """Which arrays ``m`` reads: ``"subtopics"``, ``"sourced"`` or ``"sourced-mapped"``,
    ``"mapped"`` (grade-mapped) or ``"plain"``."""
    if m.family in _SUBTOPIC_FAMILIES and has_subtopics:
        return "subtopics"
    if m.family in _SOURCE_FAMILIES and sourced:
        return "sourced-mapped" if mapped else "sourced"
    return "mapped" if mapped else "plain"


def drop_self_retrieved(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
) -> tuple[pd.DataFrame | dict[str, dict[str, float]], int]:
    """The run without the documents whose id is the query's id, and how many were dropped.

    In BEIR's ArguAna and Quora the queries are documents of the corpus, so a retriever finds
    each query first; the official evaluation ignores that hit (BEIR's ``EvaluateRetrieval``,
    ``ignore_identical_ids=True``).

    Parameters
    ----------
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ... or ``{query_id: {doc_id: score}}``.

    Returns
    -------
    run : DataFrame or dict
        Of the same kind, the rows with ``doc_id == query_id`` (compared as str) removed.
    n_dropped : int

    References
    ----------
    .. [1] N. Thakur et al., "BEIR: A heterogeneous benchmark for zero-shot evaluation of
       information retrieval models", NeurIPS 2021 Datasets and Benchmarks, Section 3
       (ArguAna, Quora); ``beir/retrieval/evaluation.py``.

    Examples
    --------
    >>> drop_self_retrieved({"q1": {"q1": 9.0, "d2": 1.0}})
    ({'q1': {'d2': 1.0}}, 1)
    """
    if isinstance(run, pd.DataFrame):
        same = (run["query_id"].astype(str) == run["doc_id"].astype(str)).to_numpy()
        return run[~same].reset_index(drop=True), int(same.sum())
    kept = {str(q): {d: s for d, s in docs.items() if str(d) != str(q)} for q, docs in run.items()}
    return kept, sum(len(docs) for docs in run.values()) - sum(len(d) for d in kept.values())


def _prepared(
    qrels: Any,
    run: Any,
    measures: list[Measure],
    order: RunOrder,
    *,
    warn: bool = True,
    build: Callable[..., RankingArrays] = prepare,
) -> RankingArrays:
    """``build`` (:func:`ragnb.measures.prepare`, or the sourced / subtopic variant) to the
    deepest cutoff of ``measures``, warning once when the run's ranks disagree with its scores."""
    arrays = build(qrels, run, order=order, depth=_depth(measures))
    if warn and arrays.n_rank_disagreements and arrays.order == "score":
        warnings.warn(
            f"{arrays.n_rank_disagreements} queries have a rank column that disagrees with their "
            "scores; ordering by score as trec_eval does (use order='file' to keep the file's "
            "order)",
            UserWarning,
            stacklevel=3,
        )
    return arrays


def _depth(measures: list[Measure]) -> int | None:
    """The deepest cutoff ``measures`` read (None: the whole run)."""
    depths = [m.depth for m in measures]
    return None if any(d is None for d in depths) else max(d for d in depths if d is not None)


def checked_grade_map(
    qrels: pd.DataFrame, measures: list[Measure], grade_map: str | Mapping[int, int] | None
) -> str | Mapping[int, int] | None:
    """The grade map the graded measures of ``measures`` read, once the qrels' scale is checked.

    Parameters
    ----------
    qrels : DataFrame
        Document qrels (``query_id``, ``doc_id``, ``relevance``): all of them, so that the scale
        is judged on every grade (a subset could look like another scale).
    measures : list of Measure
        The parsed measures; the graded families (Dallaire's, Section 2.4 of arXiv 2511.09545)
        are the ones the map applies to.
    grade_map : str or mapping of int to int, optional
        As :func:`evaluate`.

    Returns
    -------
    str or mapping of int to int or None
        ``grade_map`` when given or when no measure is graded; else :data:`ON_RUBRIC` (the qrels
        hold 1-5 grades), which :func:`evaluate` then reads as stated.

    Raises
    ------
    InputError
        When graded measures meet qrels on a 0-3, 0-2 or 0-1 scale without a ``grade_map`` (the
        message names the scale found and the maps of :data:`ragnb.measures.GRADE_MAPS`).
    """
    graded = [m for m in measures if m.family in _GRADED]
    if graded and grade_map is None:
        _check_graded_scale(qrels["relevance"].to_numpy(), graded)
        return ON_RUBRIC
    return grade_map


def _check_graded_scale(grades: np.ndarray, measures: list[Measure]) -> None:
    """:func:`ragnb.measures.graded.check_graded_scale` with the ways :func:`evaluate` and
    ``ragnb evaluate`` take a map."""
    how = "with grade_map=..., or ragnb evaluate --grade-map NAME|FILE"
    check_graded_scale(grades, [m.name for m in measures], how)


def _str_column(values: np.ndarray, times: int, *, each: bool) -> pd.Series:
    """``values`` ``times`` over (``each``: every value ``times`` in a row, else the whole
    sequence ``times`` over), as a column of pandas' string dtype (what a frame makes of str
    values); with Arrow strings, by pyarrow's ``take``."""
    base = pd.Series(values, dtype="str")
    n = len(base)
    at = np.repeat(np.arange(n), times) if each else np.tile(np.arange(n), times)
    if getattr(base.dtype, "storage", None) != "pyarrow":  # no pyarrow: Python strings
        return base.take(at).reset_index(drop=True)
    import pyarrow as pa

    taken = pa.array(base.array).cast(pa.large_string()).take(pa.array(at))
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([taken])), dtype="str")


def _result(
    measures: list[Measure],
    arrays: RankingArrays,
    values: np.ndarray,
    extra_counts: dict[str, Any] | None = None,
    labels: list[str] | None = None,
) -> EvaluationResult:
    """Assemble tables from a (n_queries, n_measures) value matrix; ``extra_counts`` are added
    to the counts, ``labels`` name the measures in the tables."""
    fe_short = {
        m.name: int(m.flags(arrays)["short_run"].sum()) for m in measures if m.family == "F_e"
    }
    counts: dict[str, Any] = {
        "queries_in_qrels": len(arrays.query_ids),
        "queries_missing_from_run": arrays.n_missing_from_run,
        "run_queries_without_qrels": arrays.n_run_queries_without_qrels,
        "rank_disagreements": arrays.n_rank_disagreements,
        "order": arrays.order,
        "fe_short_runs": fe_short,
        **(extra_counts or {}),
    }
    return result_from_values(measures, arrays.query_ids, values, counts, labels)


def result_from_values(
    measures: list[Measure],
    query_ids: np.ndarray,
    values: np.ndarray,
    counts: dict[str, Any],
    labels: list[str] | None = None,
) -> EvaluationResult:
    """The :class:`EvaluationResult` of per-query values: aggregate and per-query tables.

    :func:`evaluate` builds its result here, and :func:`ragnb.evaluation.streaming.evaluate_file` on
    the values it gathers block by block, so both aggregate alike.

    Parameters
    ----------
    measures : list of Measure
        The measures, one per column of ``values``.
    query_ids : ndarray of str (object), shape (n_queries,)
        The query of each row of ``values``; the tables keep this order.
    values : ndarray of float64, shape (n_queries, n_measures)
        Per-query values; NaN is "undefined" and left out of the aggregate.
    counts : dict
        :attr:`EvaluationResult.counts`, kept as given.
    labels : list of str, optional
        The name each measure was requested under (:func:`measure_labels`), kept as
        :attr:`EvaluationResult.labels`.

    Returns
    -------
    EvaluationResult
        ``aggregate``: one row per measure (``measure``, ``value``: the macro mean, or the sum
        for the counts, see :func:`ragnb.measures.functions.aggregate_values`; ``n_valid``,
        ``n_queries``); ``per_query``: ``query_id``, ``measure``, ``value``, measure after
        measure.
    """
    n_q, n_m = values.shape
    names = [m.name for m in measures]
    by_measure = values.T.reshape(n_m, n_q)  # one contiguous row per measure (copied if not)
    n_valid = (~np.isnan(by_measure)).sum(axis=1)
    means = np.array([aggregate_values(m, by_measure[j]) for j, m in enumerate(measures)])
    aggregate = pd.DataFrame(
        {
            "measure": pd.Series(names, dtype=object),
            "value": means,
            "n_valid": n_valid.astype(np.int64),
            "n_queries": np.full(n_m, n_q, dtype=np.int64),
        }
    )
    values = np.array(values, dtype=np.float64)  # the result's own, read-only
    values.setflags(write=False)
    return EvaluationResult(
        tuple(measures), aggregate, counts, query_ids, values, tuple(labels or ())
    )
