"""Conversions between ragnb's qrels/run frames and ranx's, ir_measures', pyterrier's and
ir_datasets' objects.

ranx and ir_measures import lazily: ranx compiles its kernels with numba (seconds on first use),
and neither is needed by the rest of ragnb.

ranx
----
:func:`to_ranx_qrels` / :func:`to_ranx_run` build ``ranx.Qrels`` / ``ranx.Run``;
:func:`from_ranx_qrels` / :func:`from_ranx_run` go back. Two differences from ragnb matter when
evaluating with ranx:

* **Queries.** ragnb evaluates the queries of the qrels and scores a query missing from the run
  as an empty ranking (trec_eval ``-c``); ``ranx.evaluate`` does the same only with
  ``make_comparable=True`` (otherwise it requires the same query sets).
* **Ties.** ragnb (like trec_eval) orders tied scores by ``doc_id`` descending. ranx sorts each
  query's documents with ``np.argsort`` of the negated scores inside numba (ranx 0.3.21,
  ``data_structures/common.py``), and numba's quicksort is not stable: a list of at most 15
  documents is insertion-sorted, which keeps the insertion order of tied documents, while a longer
  one is partitioned first, which can swap them. So with ties the two can rank differently and
  measures can differ (on a synthetic run with 15-way ties handed to ranx in file order, nDCG@10
  differed on 11 of 30 queries). :func:`to_ranx_run` inserts documents in ragnb's order, which ranx
  kept in our tests but does not promise to keep; pass ``trec_eval_ties=True`` to hand ranx strictly
  decreasing scores in ragnb's order instead (the original scores are then lost). Without ties
  ranx's ``ndcg``, ``precision`` and ``recall`` at a cutoff agree with
  :func:`ragnb.evaluation.evaluate.evaluate` to rounding (``tests/test_interop.py``).

ir_measures
-----------
ir_measures' own forms are ``Qrel(query_id, doc_id, relevance, iteration)`` and
``ScoredDoc(query_id, doc_id, score)`` namedtuples (as yielded by ``ir_measures.read_trec_qrels``
and ``read_trec_run``), ``{query_id: {doc_id: value}}`` dicts, and DataFrames with those columns,
which are ragnb's column names. :func:`to_ir_measures_qrels` / :func:`to_ir_measures_run` give
lists of namedtuples; :func:`from_ir_measures_qrels` / :func:`from_ir_measures_run` accept any of
the three forms.

pyterrier and ir_datasets
-------------------------
pyterrier's frames name the columns ``qid, docno, score, rank`` (a result, ``rank`` from 0) and
``qid, docno, label`` (qrels): :func:`from_pyterrier_run` / :func:`to_pyterrier_run` and
:func:`from_pyterrier_qrels` / :func:`to_pyterrier_qrels` rename and check them (pyterrier need
not be installed). ir_datasets yields ``TrecQrel(query_id, doc_id, relevance, iteration)`` and
``GenericScoredDoc(query_id, doc_id, score)`` namedtuples, ir_measures' field names:
:func:`from_ir_datasets_qrels` and :func:`from_ir_datasets_scoreddocs` take a dataset or its
iterator.

Production traces
-----------------
:func:`read_traces` (from :mod:`ragnb.io.traces`) reads OpenInference retriever spans (OTLP JSON
or Phoenix's span export) into queries with how often each was asked, one run per retriever
and the corpus rows seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.core.docstrings import fill_frame_doc
from ragnb.core.validation import convert_entry
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import (
    QRELS_COLUMNS,
    RUN_COLUMNS,
    SUBTOPIC_COLUMNS,
    check_qrels,
    check_run,
    document_qrels,
    qrels_from_dict,
    qrels_to_dict,
    run_from_dict,
    run_to_dict,
)
from ragnb.io.traces import read_traces

if TYPE_CHECKING:
    import ir_measures
    import ranx

__all__ = [
    "PYTERRIER_QRELS_COLUMNS",
    "PYTERRIER_RUN_COLUMNS",
    "from_ir_datasets_qrels",
    "from_ir_datasets_scoreddocs",
    "from_pyterrier_qrels",
    "from_pyterrier_run",
    "to_pyterrier_qrels",
    "to_pyterrier_run",
    "from_ir_measures_qrels",
    "from_ir_measures_run",
    "from_ranx_qrels",
    "from_ranx_run",
    "read_traces",
    "to_ir_measures_qrels",
    "to_ir_measures_run",
    "to_ranx_qrels",
    "to_ranx_run",
]


def _qrels_frame(qrels: pd.DataFrame | Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    if isinstance(qrels, pd.DataFrame):
        check_qrels(qrels)
        return qrels
    return qrels_from_dict(qrels)


def _run_frame(run: pd.DataFrame | Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    if isinstance(run, pd.DataFrame):
        check_run(run)
        return run
    return run_from_dict(run)


# --------------------------------------------------------------------------------------------
# ranx


def to_ranx_qrels(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]], name: str | None = None
) -> ranx.Qrels:
    """A qrels frame (or dict) as a ``ranx.Qrels``.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance`` (int), or ``{query_id: {doc_id: grade}}``.
    name : str, optional
        The ``Qrels`` name.

    Returns
    -------
    ranx.Qrels
        Every judgement, grade 0 and negative grades included (ranx, like ragnb, counts grades
        below its relevance level 1 as non-relevant). Empty qrels give an empty ``Qrels``.

    Raises
    ------
    InputError
        On a malformed frame (missing column, non-integer grade, duplicate pair).

    Examples
    --------
    >>> q = to_ranx_qrels({"q1": {"a": 1, "b": 0}})
    >>> dict(q.to_dict()["q1"])
    {'a': 1, 'b': 0}
    """
    import ranx

    return _named_ranx(ranx.Qrels, qrels_to_dict(_qrels_frame(qrels)), name)


def to_ranx_run(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    name: str | None = None,
    *,
    trec_eval_ties: bool = False,
) -> ranx.Run:
    """A run frame (or dict) as a ``ranx.Run``.

    Documents are handed to ranx in ragnb's evaluation order (:func:`ragnb.frames.index.sort_run`);
    ranx re-sorts them by score with an unstable sort, so its order of tied scores is its own
    (module docstring).

    Parameters
    ----------
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score`` (optionally ``rank``, ``tag``), or
        ``{query_id: {doc_id: score}}``.
    name : str, optional
        The ``Run`` name; default the frame's ``tag`` if it has exactly one.
    trec_eval_ties : bool, default False
        Replace each query's scores by ``n, n - 1, ..., 1`` in ragnb's (trec_eval's) order, so
        that ranx ranks tied documents as ragnb does. The returned run then no longer holds the
        original scores.

    Returns
    -------
    ranx.Run

    Raises
    ------
    InputError
        On a malformed run (missing column, NaN or non-numeric score, duplicate pair).

    Examples
    --------
    >>> r = to_ranx_run({"q1": {"a": 0.5, "b": 0.9}}, name="bm25")
    >>> r.name, list(r.to_dict()["q1"])
    ('bm25', ['b', 'a'])
    """
    import ranx

    frame = _run_frame(run)
    if name is None and "tag" in frame.columns:
        tags = frame["tag"].dropna().astype(str).unique()
        name = str(tags[0]) if len(tags) == 1 else None
    ordered = sort_run(frame[list(RUN_COLUMNS)], warn=False).run
    if trec_eval_ties and len(ordered):
        size = ordered.groupby("query_id", sort=False)["rank"].transform("max")
        ordered = ordered.assign(score=(size - ordered["rank"] + 1).astype(np.float64))
    return _named_ranx(ranx.Run, run_to_dict(ordered), name)


def _named_ranx(cls: Any, data: dict[str, dict[str, Any]], name: str | None) -> Any:
    """``cls.from_dict(data)`` (``cls()`` for no data, which ``from_dict`` refuses) named
    ``name``; ``cls`` is ``ranx.Qrels`` or ``ranx.Run``."""
    out = cls.from_dict(data) if data else cls()
    out.name = name
    return out


def _ranx_dict(obj: Any, cls: type[Any]) -> dict[str, dict[str, Any]]:
    """``obj.to_dict()`` with str query ids, after checking that ``obj`` is a ``ranx.<cls>``."""
    if not isinstance(obj, cls):
        raise InputError(f"expected a ranx.{cls.__name__}, got {type(obj).__name__}")
    return {str(q): dict(docs) for q, docs in obj.to_dict().items()}


def from_ranx_qrels(qrels: ranx.Qrels) -> pd.DataFrame:
    """A ``ranx.Qrels`` as a qrels frame.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``relevance`` (int64); queries in ranx's order
        (sorted), documents by grade descending.

    Raises
    ------
    InputError
        If ``qrels`` is not a ``ranx.Qrels``.
    """
    import ranx

    return qrels_from_dict(_ranx_dict(qrels, ranx.Qrels))


def from_ranx_run(run: ranx.Run) -> pd.DataFrame:
    """A ``ranx.Run`` as a run frame.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``score`` (float64), and ``tag`` (str) when the
        run has a name; ranx's order (queries sorted, documents by score descending).

    Raises
    ------
    InputError
        If ``run`` is not a ``ranx.Run``.
    """
    import ranx

    frame = run_from_dict(_ranx_dict(run, ranx.Run))
    if run.name is not None:
        frame["tag"] = pd.Series([str(run.name)] * len(frame), dtype=object)
    return frame


# --------------------------------------------------------------------------------------------
# ir_measures


def to_ir_measures_qrels(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
) -> list[ir_measures.Qrel]:
    """A qrels frame (or dict) as a list of ``ir_measures.Qrel`` (iteration ``"0"``).

    Subtopic qrels (a frame with a ``subtopic`` column, see :mod:`ragnb.measures.diversity`)
    carry the subtopic in ``iteration``, where ir_measures' diversity measures read it.

    Raises
    ------
    InputError
        On a malformed frame.

    Examples
    --------
    >>> to_ir_measures_qrels({"q1": {"a": 2}})
    [Qrel(query_id='q1', doc_id='a', relevance=2, iteration='0')]
    """
    from ir_measures import Qrel

    if isinstance(qrels, pd.DataFrame) and "subtopic" in qrels.columns:
        document_qrels(qrels)  # validates
        cols = [qrels[c].astype(str) for c in ("query_id", "doc_id", "subtopic")]
        return [Qrel(q, d, int(r), t) for q, d, t, r in zip(*cols, qrels["relevance"], strict=True)]
    frame = _qrels_frame(qrels)
    return [
        Qrel(str(q), str(d), int(r))
        for q, d, r in zip(frame["query_id"], frame["doc_id"], frame["relevance"], strict=True)
    ]


def to_ir_measures_run(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
) -> list[ir_measures.ScoredDoc]:
    """A run frame (or dict) as a list of ``ir_measures.ScoredDoc``, in the frame's row order.

    Raises
    ------
    InputError
        On a malformed run.

    Examples
    --------
    >>> to_ir_measures_run({"q1": {"a": 0.5}})
    [ScoredDoc(query_id='q1', doc_id='a', score=0.5)]
    """
    from ir_measures import ScoredDoc

    frame = _run_frame(run)
    return [
        ScoredDoc(str(q), str(d), float(s))
        for q, d, s in zip(frame["query_id"], frame["doc_id"], frame["score"], strict=True)
    ]


def _records(obj: Any, fields: tuple[str, ...], what: str) -> list[tuple[Any, ...]]:
    """Rows of ``fields`` from an iterable of namedtuples (or objects with those attributes)."""
    rows = []
    for i, item in enumerate(obj):
        try:
            rows.append(tuple(getattr(item, f) for f in fields))
        except AttributeError:
            raise InputError(
                f"{what} item {i} is a {type(item).__name__}, not a namedtuple with fields "
                f"{list(fields)}"
            ) from None
    return rows


def from_ir_measures_qrels(
    qrels: Iterable[ir_measures.Qrel] | Mapping[str, Mapping[str, int]] | pd.DataFrame,
    *,
    subtopics: bool = False,
) -> pd.DataFrame:
    """ir_measures qrels (namedtuples, dict of dicts, or DataFrame) as a qrels frame.

    The ``iteration`` field is dropped (trec_eval ignores it too), unless ``subtopics``.

    Parameters
    ----------
    qrels : iterable of Qrel, dict or DataFrame
        E.g. ``ir_measures.read_trec_qrels(path)``.
    subtopics : bool, default False
        Read ``iteration`` as the subtopic (TREC diversity qrels ``qid subtopic docid rel``):
        the frame gets a ``subtopic`` column and may judge a document once per subtopic; give
        it to :func:`ragnb.evaluation.evaluate.evaluate` for ``alpha-nDCG``. Only for namedtuples.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``relevance`` (int64), in input order; with
        ``subtopics``, ``query_id``, ``subtopic``, ``doc_id``, ``relevance``.

    Raises
    ------
    InputError
        On an item without the Qrel fields, a non-integer grade, or a duplicate pair (naming
        the query).
    """
    if isinstance(qrels, pd.DataFrame):
        frame = qrels[list(QRELS_COLUMNS)].copy() if set(QRELS_COLUMNS) <= set(qrels) else qrels
    elif isinstance(qrels, Mapping):
        return qrels_from_dict(qrels)
    elif subtopics:
        fields = ("query_id", "iteration", "doc_id", "relevance")
        records = _records(qrels, fields, "qrels")
        frame = pd.DataFrame(records, columns=list(SUBTOPIC_COLUMNS))
        frame["relevance"] = [_checked_grade(q, d, r) for q, _, d, r in records]
        document_qrels(frame)  # validates: columns, grades, a subtopic judged twice
        return frame.astype({"query_id": str, "subtopic": str, "doc_id": str}).astype(
            {c: object for c in ("query_id", "subtopic", "doc_id")}
        )
    else:
        rows = [
            (str(q), str(d), _checked_grade(q, d, r))
            for q, d, r in _records(qrels, QRELS_COLUMNS, "qrels")
        ]
        frame = pd.DataFrame(rows, columns=list(QRELS_COLUMNS))
        frame["relevance"] = frame["relevance"].astype("int64")
    check_qrels(frame)
    return _with_str_ids(frame)


def _with_str_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """A checked frame with a fresh 0-based index and ``query_id``, ``doc_id`` as str objects."""
    frame = frame.reset_index(drop=True)
    frame["query_id"] = frame["query_id"].astype(str).astype(object)
    frame["doc_id"] = frame["doc_id"].astype(str).astype(object)
    return frame


def _checked_grade(query_id: Any, doc_id: Any, grade: Any) -> int:
    """``grade`` as an int, or an InputError naming the query and document."""
    return convert_entry(_as_int, grade, query_id, doc_id, "grade", "an integer")


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not float(value).is_integer():
        raise ValueError(value)
    return int(value)


def from_ir_measures_run(
    run: Iterable[ir_measures.ScoredDoc] | Mapping[str, Mapping[str, float]] | pd.DataFrame,
) -> pd.DataFrame:
    """ir_measures run (namedtuples, dict of dicts, or DataFrame) as a run frame.

    Parameters
    ----------
    run : iterable of ScoredDoc, dict or DataFrame
        E.g. ``ir_measures.read_trec_run(path)`` (its rank and tag columns are not kept).

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``score`` (float64), in input order.

    Raises
    ------
    InputError
        On an item without the ScoredDoc fields, a NaN or non-numeric score, or a duplicate pair.
    """
    if isinstance(run, pd.DataFrame):
        frame = run[list(RUN_COLUMNS)].copy() if set(RUN_COLUMNS) <= set(run) else run
    elif isinstance(run, Mapping):
        return run_from_dict(run)
    else:
        rows = []
        for q, d, score in _records(run, RUN_COLUMNS, "run"):
            rows.append((str(q), str(d), convert_entry(float, score, q, d, "score", "a number")))
        frame = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
        frame["score"] = frame["score"].astype(np.float64)
    check_run(frame)
    return _with_str_ids(frame)


# --------------------------------------------------------------------------------------------
# pyterrier and ir_datasets

#: pyterrier's column for each ragnb run column (the "R" data type of pyterrier's data model,
#: ``docs/datamodel.md``); pyterrier's ``rank`` starts at 0 (``pyterrier.model.FIRST_RANK``).
PYTERRIER_RUN_COLUMNS = {"query_id": "qid", "doc_id": "docno", "score": "score", "rank": "rank"}
#: pyterrier's qrels columns (``Dataset.get_qrels()``).
PYTERRIER_QRELS_COLUMNS = {"query_id": "qid", "doc_id": "docno", "relevance": "label"}


def _require(frame: Any, columns: Iterable[str], what: str) -> pd.DataFrame:
    """``frame`` if it is a DataFrame holding ``columns``; else an InputError naming them."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"{what} has no column {missing[0]!r} (columns: {list(map(str, frame.columns))})",
            column=missing[0],
        )
    return frame


def _id_column(frame: pd.DataFrame, column: str, what: str) -> pd.Series:
    """``frame[column]`` as str ids; strings and integers only (a float id such as ``1.0``
    would not match the qrels' ``"1"``), no missing value."""
    values = frame[column]
    bad = values.isna() | ~values.map(lambda v: isinstance(v, str | int | np.integer))
    bad = bad | values.map(lambda v: isinstance(v, bool))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        value = values.iloc[i]
        value = value.item() if isinstance(value, np.generic) else value
        raise InputError(
            f"{what} row {i}: {column} {value!r} is not a string or integer id",
            column=column,
        )
    return values.astype(str).astype(object).reset_index(drop=True)


def from_pyterrier_run(frame: pd.DataFrame) -> pd.DataFrame:
    """A pyterrier result frame (``qid, docno, score[, rank, query]``) as a run frame.

    Parameters
    ----------
    frame : DataFrame
        pyterrier's "R" type: ``qid`` and ``docno`` (str or int), ``score`` (numeric), and
        optionally ``rank`` (int, pyterrier counts from 0); other columns (``query``,
        ``features``...) are not kept.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``score`` (float64), and ``rank`` (int64,
        1-based: pyterrier's + 1, used by ``evaluate(order="file")``) when given; input order.

    Raises
    ------
    InputError
        If ``frame`` is not a DataFrame, lacks ``qid``, ``docno`` or ``score`` (naming it),
        holds an id that is not a string or integer, a non-numeric or NaN score, a non-integer
        rank, or a duplicate (query, document) pair.

    References
    ----------
    PyTerrier data model (``docs/datamodel.md``); Macdonald and Tonellotto, "Declarative
    Experimentation in Information Retrieval using PyTerrier", ICTIR 2020.
    """
    what = "pyterrier run"
    _require(frame, ("qid", "docno", "score"), what)
    if not pd.api.types.is_numeric_dtype(frame["score"]) or pd.api.types.is_bool_dtype(
        frame["score"]
    ):
        raise InputError(
            f"{what}: score must be numeric, got {frame['score'].dtype}", column="score"
        )
    out = pd.DataFrame(
        {
            "query_id": _id_column(frame, "qid", what),
            "doc_id": _id_column(frame, "docno", what),
            "score": frame["score"].to_numpy(dtype=np.float64),
        }
    )
    if "rank" in frame.columns:
        if not pd.api.types.is_integer_dtype(frame["rank"]):
            raise InputError(
                f"{what}: rank must be integers, got {frame['rank'].dtype}", column="rank"
            )
        out["rank"] = frame["rank"].to_numpy(dtype=np.int64) + 1
    check_run(out)
    return out


def to_pyterrier_run(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    queries: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """A run frame (or dict) as a pyterrier result frame ``qid, docno, score, rank[, query]``.

    Parameters
    ----------
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score``, or ``{query_id: {doc_id: score}}``.
    queries : DataFrame, optional
        Columns ``query_id``, ``text`` (:func:`ragnb.io.readers.read_queries`): adds pyterrier's
        ``query`` column (empty string for a query not listed).

    Returns
    -------
    DataFrame
        Rows in ragnb's (trec_eval's) order: queries sorted, score descending, ties by
        ``docno`` descending; ``rank`` counts from 0 in that order, as pyterrier's
        ``add_ranks`` does.

    Raises
    ------
    InputError
        On a malformed run, or ``queries`` without ``query_id`` and ``text``.
    """
    ordered = sort_run(_run_frame(run)[list(RUN_COLUMNS)], warn=False).run
    out = pd.DataFrame(
        {
            "qid": ordered["query_id"].astype(str).astype(object).to_numpy(),
            "docno": ordered["doc_id"].astype(str).astype(object).to_numpy(),
            "score": ordered["score"].to_numpy(dtype=np.float64),
            "rank": ordered["rank"].to_numpy(dtype=np.int64) - 1,
        }
    )
    if queries is not None:
        _require(queries, ("query_id", "text"), "queries")
        text = dict(zip(queries["query_id"].astype(str), queries["text"], strict=True))
        out["query"] = [str(text.get(q, "")) for q in out["qid"]]
    return out


@fill_frame_doc
def from_pyterrier_qrels(frame: pd.DataFrame) -> pd.DataFrame:
    """pyterrier qrels (``qid, docno, label``) as a qrels frame.

    {{Returns: qrels_frame}}

    Raises
    ------
    InputError
        If ``frame`` is not a DataFrame, lacks ``qid``, ``docno`` or ``label`` (naming it),
        holds an id that is not a string or integer, a label that is not an integer (``1.0``
        is accepted), or a duplicate pair.
    """
    what = "pyterrier qrels"
    _require(frame, ("qid", "docno", "label"), what)
    labels = frame["label"]
    if pd.api.types.is_bool_dtype(labels) or not pd.api.types.is_numeric_dtype(labels):
        raise InputError(f"{what}: label must be integers, got {labels.dtype}", column="label")
    values = labels.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{what} row {i}: label {labels.iloc[i]!r} is not an integer",
            query_id=str(frame["qid"].iloc[i]),
            column="label",
        )
    out = pd.DataFrame(
        {
            "query_id": _id_column(frame, "qid", what),
            "doc_id": _id_column(frame, "docno", what),
            "relevance": labels.to_numpy().astype(np.int64),
        }
    )
    check_qrels(out)
    return out


def to_pyterrier_qrels(qrels: pd.DataFrame | Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """A qrels frame (or dict) as pyterrier qrels ``qid, docno, label`` (str, str, int64).

    Raises
    ------
    InputError
        On a malformed qrels frame.
    """
    frame = _qrels_frame(qrels)
    return pd.DataFrame(
        {
            "qid": frame["query_id"].astype(str).astype(object).to_numpy(),
            "docno": frame["doc_id"].astype(str).astype(object).to_numpy(),
            "label": frame["relevance"].to_numpy(dtype=np.int64),
        }
    )


def _ir_datasets_items(obj: Any, method: str, what: str) -> Any:
    """``obj.<method>()`` for an ir_datasets dataset, else ``obj`` itself, which must be an
    iterable of namedtuples (a DataFrame, a dict or a str is an InputError naming ``what``)."""
    if hasattr(obj, method):
        obj = getattr(obj, method)()
    if isinstance(obj, pd.DataFrame | Mapping | str):
        raise InputError(
            f"expected an ir_datasets dataset or an iterable of {what}, got {type(obj).__name__}"
        )
    return obj


@fill_frame_doc
def from_ir_datasets_qrels(qrels: Any) -> pd.DataFrame:
    """ir_datasets qrels as a qrels frame.

    Parameters
    ----------
    qrels : ir_datasets dataset or iterable of namedtuples
        A dataset (its ``qrels_iter()`` is read) or the iterable itself, whose items have
        ``query_id``, ``doc_id``, ``relevance`` (``TrecQrel`` also has ``iteration``, dropped
        as trec_eval does).

    {{Returns: qrels_frame}}

    Raises
    ------
    InputError
        On an item without those fields (naming the item), a non-integer grade or a
        duplicate pair (naming the query).
    """
    return from_ir_measures_qrels(_ir_datasets_items(qrels, "qrels_iter", "qrels"))


def from_ir_datasets_scoreddocs(scoreddocs: Any) -> pd.DataFrame:
    """ir_datasets scored documents (a first-stage run) as a run frame.

    Parameters
    ----------
    scoreddocs : ir_datasets dataset or iterable of namedtuples
        A dataset (its ``scoreddocs_iter()`` is read) or the iterable itself, whose items have
        ``query_id``, ``doc_id``, ``score`` (``GenericScoredDoc``).

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``score`` (float64), input order.

    Raises
    ------
    InputError
        On an item without those fields, a NaN or non-numeric score, or a duplicate pair.
    """
    items = _ir_datasets_items(scoreddocs, "scoreddocs_iter", "scored documents")
    return from_ir_measures_run(items)
