"""Ragas-style sample files: read and check them, then score them with the context measures.

The command ``ragnb evaluate-samples SAMPLES`` reads what ragas users already have, an
``EvaluationDataset`` written with ``to_jsonl`` or ``to_csv`` (or any table with ragas' field
names), and gives the table :func:`ragnb.context.non_llm_context_scores` and
:func:`ragnb.context.id_based_context_scores` give in Python, averaged over the samples.

Files
-----
``.jsonl`` or ``.json`` (JSON Lines: one object a line, as ragas' ``to_jsonl`` writes; blank
lines skipped), ``.csv`` (a header row; list cells as JSON, ``["a", "b"]``, or as the Python literal
ragas' ``to_csv`` writes, ``['a', 'b']``); each may be gzipped (``.jsonl.gz``, ...). The fields,
by ragas' names (``ragas.SingleTurnSample``):

========================= ================================ ====================================
field                     type                             needed by
========================= ================================ ====================================
``user_input``            str, optional                    (kept)
``retrieved_contexts``    list of str, rank order          the two non-LLM measures
``reference_contexts``    list of str                      the two non-LLM measures
``retrieved_context_ids`` list of str or int, rank order   the two ID-based measures
``reference_context_ids`` list of str or int               the two ID-based measures
``query_id``              str or int, optional (ragnb)     names the sample; default its line
========================= ================================ ====================================

Other fields (``response``, ``reference``, ...) are ignored. Every error names the file, the
line and the column.

Measures
--------
ragas' metric names, each optionally with a cutoff ``@K`` (only the first K retrieved contexts):
``non_llm_context_precision_with_reference``, ``non_llm_context_recall`` (string similarity
against the reference texts; :func:`ragnb.context.non_llm_context_scores`),
``id_based_context_precision``, ``id_based_context_recall`` (exact id match;
:func:`ragnb.context.id_based_context_scores`). ragas' class names (``NonLLMContextRecall``,
``IDBasedContextPrecision``, ...) are accepted as aliases.

References
----------
.. [1] "RAG Evaluation Part 1: Retriever Evaluation" (non-LLM relevance and context recall).
.. [2] S. Es et al., "Ragas: automated evaluation of retrieval augmented generation", EACL 2024;
   ``ragas/dataset_schema.py`` (``SingleTurnSample``, ``EvaluationDataset.to_csv``).
"""

from __future__ import annotations

import ast
import csv
import gzip
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from ragnb.context.nonllm import (
    Compare,
    Similarity,
    id_based_context_scores,
    non_llm_context_scores,
)
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import aggregate_means, wide_values
from ragnb.io.readers import ENCODING, iter_json_lines

__all__ = [
    "CONTEXT_MEASURES",
    "ContextEvaluation",
    "default_context_measures",
    "evaluate_samples",
    "parse_context_measure",
    "read_samples",
]

TEXT_COLUMNS = ("retrieved_contexts", "reference_contexts")
ID_COLUMNS = ("retrieved_context_ids", "reference_context_ids")
TEXT_MEASURES = ("non_llm_context_precision_with_reference", "non_llm_context_recall")
ID_MEASURES = ("id_based_context_precision", "id_based_context_recall")
#: The measures of a samples file, by ragas' metric names.
CONTEXT_MEASURES = TEXT_MEASURES + ID_MEASURES

_ALIASES = {
    "nonllmcontextprecisionwithreference": TEXT_MEASURES[0],
    "nonllmcontextrecall": TEXT_MEASURES[1],
    "idbasedcontextprecision": ID_MEASURES[0],
    "idbasedcontextrecall": ID_MEASURES[1],
}
_NAME = re.compile(r"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+))?\s*$")


# ----------------------------------------------------------------------------- reading


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding=ENCODING, newline="")
    return path.open(encoding=ENCODING, newline="")


def _jsonl_records(path: Path) -> Iterator[tuple[int, Any]]:
    with _open(path) as f:
        yield from iter_json_lines(f, path)


def _list_cell(text: str, path: Path, line: int, column: str) -> Any:
    """A CSV cell of a list column: JSON, else a Python literal (ragas' ``to_csv``)."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError(
            f"cell is not a list (JSON or Python literal): {text[:60]!r}",
            path=path,
            line=line,
            column=column,
        ) from None


def _csv_records(path: Path) -> Iterator[tuple[int, Any]]:
    with _open(path) as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(
                    f"{len(row)} cells where the header has {len(header)}", path=path, line=line
                )
            record: dict[str, Any] = dict(zip(header, row, strict=True))
            for column in (*TEXT_COLUMNS, *ID_COLUMNS):
                if column in record:
                    record[column] = _list_cell(record[column], path, line, column)
            yield line, record


def _check_record(obj: Any, path: Path, line: int) -> dict[str, Any]:
    """One sample's fields checked (lists of str, lists of str or int ids), or InputError."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=line)
    for column in (*TEXT_COLUMNS, *ID_COLUMNS):
        value = obj.get(column)
        if value is None:
            continue
        ids = column in ID_COLUMNS
        what = "ids (str or int)" if ids else "strings"
        if not isinstance(value, list):
            raise InputError(
                f"expected a list of {what}, got {type(value).__name__} {str(value)[:40]!r}",
                path=path,
                line=line,
                column=column,
            )
        for i, item in enumerate(value):
            ok = isinstance(item, str) or (ids and isinstance(item, int))
            if isinstance(item, bool) or not ok:
                raise InputError(
                    f"item {i} is {type(item).__name__} {item!r}; expected a list of {what}",
                    path=path,
                    line=line,
                    column=column,
                )
    qid = obj.get("query_id")
    if qid is not None and (isinstance(qid, bool) or not isinstance(qid, str | int)):
        raise InputError(
            f"query_id must be a string or an integer, got {qid!r}",
            path=path,
            line=line,
            column="query_id",
        )
    return obj


def read_samples(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a ragas-style samples file (``.jsonl`` or ``.csv``, optionally gzipped).

    Parameters
    ----------
    path : str or PathLike
        The file; its fields are described in the module docstring.

    Returns
    -------
    DataFrame
        One row per sample in file order, indexed by ``line`` (int: the 1-based line where the
        sample starts), with the file's fields
        (list fields as lists; a field a sample lacks is None) and ``query_id`` (str: the
        file's ``query_id`` if present, else the line). ``attrs["path"]`` is the file.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    InputError
        Naming the file, line and column: malformed JSON or CSV, a CSV cell of a list field
        that is not a list, a list field holding something other than strings (ids: strings
        or integers), a single string where a list belongs, a repeated ``query_id``, an empty
        file, or an unknown suffix.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> p = Path(d) / "s.csv"
    >>> _ = p.write_text('user_input,retrieved_context_ids\\nWho?,"[1, 2]"\\n', encoding="utf-8")
    >>> frame = read_samples(p)                     # the sample starts on line 2
    >>> frame["query_id"].to_dict(), frame["retrieved_context_ids"].to_dict()
    ({2: '2'}, {2: [1, 2]})
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    readers = {".jsonl": _jsonl_records, ".json": _jsonl_records, ".csv": _csv_records}
    reader = readers.get(suffix.removesuffix(".gz"))
    if reader is None:
        raise InputError(
            f"unknown samples file type {suffix!r}: a samples file is .jsonl, .json or .csv "
            "(on the command line a qrels file needs a RUN after it)",
            path=path,
        )
    lines, records = [], []
    for line, obj in reader(path):
        records.append(_check_record(obj, path, line))
        lines.append(line)
    if not records:
        raise InputError("the samples file holds no samples", path=path)
    frame = pd.DataFrame(records, index=pd.Index(lines, name="line"))
    frame = frame.astype(object).where(frame.notna(), None)
    if "query_id" in frame.columns:
        for line, qid in frame["query_id"].items():
            if qid is None or (isinstance(qid, str) and not qid.strip()):
                raise InputError("query_id is empty", path=path, line=line, column="query_id")
        ids = frame["query_id"].astype(str)
        repeated = ids[ids.duplicated()]
        if len(repeated):
            raise InputError(
                f"query_id {repeated.iloc[0]!r} repeats an earlier sample",
                path=path,
                line=int(repeated.index[0]),
                column="query_id",
            )
        frame["query_id"] = ids
    else:
        frame["query_id"] = [str(line) for line in lines]
    frame.attrs["path"] = str(path)
    return frame


# ----------------------------------------------------------------------------- measures


def parse_context_measure(name: str) -> tuple[str, int | None]:
    """A context measure name as ``(ragas metric name, cutoff K or None)``.

    Parameters
    ----------
    name : str
        ``"non_llm_context_recall"``, ``"id_based_context_precision@5"``, or a ragas class name
        (``"IDBasedContextRecall@10"``); case and spaces around ``@`` do not matter.

    Returns
    -------
    tuple of (str, int or None)

    Raises
    ------
    InputError
        If the name is not one of :data:`CONTEXT_MEASURES` or K is not an integer >= 1.

    Examples
    --------
    >>> parse_context_measure("IDBasedContextPrecision@5")
    ('id_based_context_precision', 5)
    """
    match = _NAME.match(str(name))
    base = match.group(1).lower() if match else ""
    base = _ALIASES.get(base.replace("_", ""), base)
    if not match or base not in CONTEXT_MEASURES:
        raise InputError(f"unknown context measure {name!r}; use one of {list(CONTEXT_MEASURES)}")
    k = None if match.group(2) is None else int(match.group(2))
    if k is not None and k < 1:
        raise InputError(f"context measure {name!r}: the cutoff must be an integer >= 1")
    return base, k


def _measure_name(base: str, k: int | None) -> str:
    return base if k is None else f"{base}@{k}"


@dataclass(frozen=True, eq=False)
class ContextEvaluation:
    """The outcome of :func:`evaluate_samples`, shaped like
    :class:`ragnb.evaluation.evaluate.EvaluationResult` (the command line prints both the same way).

    Attributes
    ----------
    measures : tuple of str
        Canonical names, in requested order.
    aggregate : DataFrame
        One row per measure: ``measure`` (str), ``value`` (float in [0, 1], mean over the
        samples where the measure is defined; NaN if none), ``n_valid`` (int, those samples),
        ``n_queries`` (int, samples).
    per_query : DataFrame
        Long form: ``query_id`` (str, the sample), ``measure`` (str), ``value`` (float; NaN when
        undefined: nothing retrieved for precision, no reference for recall); grouped by
        measure, samples in file order.
    counts : dict
        ``samples`` (int) and the settings: ``similarity``, ``tau``, ``compare``; ``path`` when
        read from a file.
    """

    measures: tuple[str, ...]
    aggregate: pd.DataFrame
    per_query: pd.DataFrame
    counts: dict[str, Any]

    def per_query_wide(self) -> pd.DataFrame:
        """Per-sample values: index ``query_id`` (file order), one column per measure."""
        order = list(dict.fromkeys(self.per_query["query_id"]))
        return wide_values(self.per_query, list(self.measures), order)

    def aggregate_to_dict(self) -> dict[str, float]:
        """``{measure: mean}`` in requested order."""
        return aggregate_means(self.aggregate)


def default_context_measures(frame: pd.DataFrame) -> list[str]:
    """The measures the samples' fields allow: the two non-LLM measures when both text fields
    are present, the two ID-based measures when both id fields are.

    Raises
    ------
    InputError
        Naming the file, when neither pair of fields is present.
    """
    out: list[str] = []
    if set(TEXT_COLUMNS) <= set(frame.columns):
        out += TEXT_MEASURES
    if set(ID_COLUMNS) <= set(frame.columns):
        out += ID_MEASURES
    if not out:
        raise InputError(
            f"the samples hold neither {' + '.join(TEXT_COLUMNS)} nor {' + '.join(ID_COLUMNS)} "
            f"(ragas' field names); their fields are {[str(c) for c in frame.columns]}",
            path=frame.attrs.get("path"),
        )
    return list(out)


def _check_present(frame: pd.DataFrame, columns: tuple[str, ...], measure: str) -> None:
    """Every sample holds ``columns``, or InputError naming the file, line and column."""
    path = frame.attrs.get("path")
    for column in columns:
        if column not in frame.columns:
            raise InputError(
                f"{measure} needs the field {column!r}; the samples have "
                f"{[str(c) for c in frame.columns]}",
                path=path,
                column=column,
            )
        values = frame[column]
        missing = [i for i, v in values.items() if v is None or isinstance(v, float)]
        if missing:
            where = {"path": path, "line": int(missing[0])} if path else {}
            raise InputError(
                f"the sample lacks {column!r}, which {measure} needs ({len(missing)} samples "
                "lack it)",
                column=column,
                **where,
            )


def evaluate_samples(
    samples: pd.DataFrame | str | os.PathLike[str],
    measures: Iterable[str] | str | None = None,
    *,
    similarity: Similarity = "levenshtein",
    tau: float = 0.5,
    compare: Compare = ">=",
) -> ContextEvaluation:
    """Score ragas-style samples on the non-LLM and ID-based context measures, and average.

    Parameters
    ----------
    samples : DataFrame or path
        A frame from :func:`read_samples` (or any frame with ragas' field names; a
        ``query_id`` column names the samples, else the index does), or a file to read.
    measures : list of str, optional
        Names from :data:`CONTEXT_MEASURES`, optionally with ``@K``
        (:func:`parse_context_measure`). Default: the two non-LLM measures when the samples
        hold both text fields, the two ID-based measures when they hold both id fields.
    similarity : {"levenshtein", "sequence_matcher", "embedding"} or callable, default
        "levenshtein"
        String similarity of the non-LLM measures (:func:`non_llm_context_scores`;
        ``"embedding"`` needs an embedder there and is refused here).
    tau : float, default 0.5
        A retrieved context is relevant (a reference recalled) when its best similarity is
        ``>= tau`` (or ``> tau``, see ``compare``).
    compare : {">=", ">"}, default ">="
        ragas uses ``>=`` for precision and ``>`` for recall.

    Returns
    -------
    ContextEvaluation
        ``aggregate`` (mean over samples where defined), ``per_query`` (per sample), ``counts``.
        The per-sample values are exactly those of :func:`non_llm_context_scores`
        (``non_llm_context_precision_with_reference``, ``non_llm_context_recall``) and
        :func:`id_based_context_scores` on the same samples and K.

    Raises
    ------
    InputError
        On an unknown measure, no usable fields, a sample that lacks a field a requested
        measure needs (naming the file, line and column), or what the two scoring functions
        refuse.

    References
    ----------
    .. [1] "RAG Evaluation Part 1: Retriever Evaluation"; ragas ``NonLLMContextPrecisionWith
       Reference``, ``NonLLMContextRecall``, ``IDBasedContextPrecision``, ``IDBasedContextRecall``.

    Examples
    --------
    >>> frame = pd.DataFrame({"retrieved_context_ids": [["a", "b"], ["c"]],
    ...                       "reference_context_ids": [["a"], ["d", "e"]]})
    >>> res = evaluate_samples(frame)          # precision 1/2 and 0; recall 1 and 0
    >>> res.aggregate_to_dict()
    {'id_based_context_precision': 0.25, 'id_based_context_recall': 0.5}
    """
    frame = samples if isinstance(samples, pd.DataFrame) else read_samples(samples)
    if isinstance(similarity, str) and similarity == "embedding":
        raise InputError("similarity 'embedding' needs an embedder: call non_llm_context_scores")
    if measures is None:
        names = default_context_measures(frame)
    else:
        names = [measures] if isinstance(measures, str) else list(measures)
    parsed = list(dict.fromkeys(parse_context_measure(n) for n in names))
    if not parsed:
        raise InputError("no context measure requested")
    qids = (
        frame["query_id"].astype(str).to_numpy()
        if "query_id" in frame.columns
        else frame.index.astype(str).to_numpy()
    )
    tables: dict[tuple[bool, int | None], pd.DataFrame] = {}
    long = []
    for base, k in parsed:
        text = base in TEXT_MEASURES
        if (text, k) not in tables:
            _check_present(frame, TEXT_COLUMNS if text else ID_COLUMNS, base)
            tables[(text, k)] = (
                non_llm_context_scores(frame, k, similarity=similarity, tau=tau, compare=compare)
                if text
                else id_based_context_scores(frame, k)
            )
        values = tables[(text, k)][base].to_numpy(dtype=np.float64)
        long.append(
            pd.DataFrame({"query_id": qids, "measure": _measure_name(base, k), "value": values})
        )
    per_query = pd.concat(long, ignore_index=True).astype({"query_id": object, "measure": object})
    return ContextEvaluation(
        measures=tuple(_measure_name(b, k) for b, k in parsed),
        aggregate=_aggregate(per_query, len(frame)),
        per_query=per_query,
        counts=_counts(frame, similarity, tau, compare),
    )


def _aggregate(per_query: pd.DataFrame, n: int) -> pd.DataFrame:
    rows = []
    for name, group in per_query.groupby("measure", sort=False):
        v = group["value"].to_numpy(dtype=np.float64)
        valid = ~np.isnan(v)
        rows.append(
            (name, float(v[valid].mean()) if valid.any() else math.nan, int(valid.sum()), n)
        )
    return pd.DataFrame(rows, columns=["measure", "value", "n_valid", "n_queries"])


def _counts(frame: pd.DataFrame, similarity: Any, tau: float, compare: str) -> dict[str, Any]:
    name = similarity if isinstance(similarity, str) else getattr(similarity, "__name__", "")
    out = {"samples": len(frame), "similarity": name, "tau": float(tau), "compare": compare}
    if frame.attrs.get("path"):
        out["path"] = frame.attrs["path"]
    return out
