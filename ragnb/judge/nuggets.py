"""Nugget evaluation of retrieved contexts: nuggets from pooled passages, assigned to passages.

The AutoNuggetizer pipeline (Pradeep et al. 2024), pointed at what a retriever puts in the
prompt rather than at a generated answer:

1. :func:`create_nuggets`: for each query, an LLM reads its pooled top passages a window at a
   time (``window`` passages per call) and updates a list of atomic facts, the *nuggets*, capped
   at ``max_nuggets`` (30 in the paper), most important first; then labels each nugget
   ``vital`` (a good answer must hold it) or ``okay`` (``window`` nuggets per call);
2. :func:`assign_nuggets`: for each passage of a run's top K, the LLM labels each nugget of the
   query ``support``, ``partial_support`` or ``not_support`` (``window`` nuggets per call);
3. :func:`nugget_qrels` turns the two frames into nugget qrels (subtopic qrels with an
   ``importance`` column, :mod:`ragnb.measures.nuggets`), which
   :func:`ragnb.evaluation.evaluate.evaluate` reads for ``NuggetRecall@K`` (and its ``vital`` and
   ``partial`` variants).

Every call goes through a :class:`~ragnb.llm.ChatClient`: cached (a second run sends nothing),
priced in its ledger under the stages :data:`CREATE_STAGE`, :data:`IMPORTANCE_STAGE` and
:data:`ASSIGN_STAGE`, with the client's retries and one reminder of the answer format. The
prompts are shipped templates (``nugget-creation``, ``nugget-importance``,
``nugget-assignment``) any of which a file path may replace.

Files a person corrects
-----------------------
:func:`export_nuggets` and :func:`export_assignments` write the frames as UTF-8 CSV files
(atomically; a cell starting with ``=``, ``+``, ``-`` or ``@`` gets a leading ``'`` so a
spreadsheet shows it rather than runs it); exporting again keeps every row already in the file,
so corrections survive a rerun: a query's nuggets in the file are kept whole (a nugget a person
deleted stays deleted), an assignment row of the file is kept. :func:`read_nuggets` and
:func:`read_assignments` (from :mod:`ragnb.io.nuggets`, the readers of these files) read a
corrected file back, naming the file, line and column of anything wrong. A person may reword a
nugget (then delete its assignment rows to have it assigned again), change its importance,
delete it, add one (assigned on the next run), or change a label.

========================= =========================================================================
frame                     columns
========================= =========================================================================
nuggets                   ``query_id``, ``nugget_id`` (``n01``, ``n02``, ... in the order of
                          creation: most important first), ``text``, ``importance`` (``vital``
                          or ``okay``), ``status`` (``ok``, or why the importance is a default)
assignments               ``query_id``, ``nugget_id``, ``doc_id``, ``label`` (``support``,
                          ``partial_support``, ``not_support``; empty where the LLM gave no
                          valid answer, read as ``not_support``), ``status``
========================= =========================================================================

What a small model's nuggets are worth
--------------------------------------
The pipeline needs a capable LLM: Pradeep et al. ran GPT-4o. A 135M-parameter local model
(:class:`~ragnb.llm.server.LocalLLMServer`) runs the same calls, cached and priced, and its
answers parse under constrained output, but its nuggets and labels are close to noise: they
exercise the path, they do not measure a retriever.

References
----------
.. [1] R. Pradeep, N. Thakur, S. Upadhyay, D. Campos, N. Craswell and J. Lin, "Initial Nugget
   Evaluation Results for the TREC 2024 RAG Track with the AutoNuggetizer Framework",
   arXiv:2411.09607, Section 2 (creation, importance, assignment); castorini/nuggetizer,
   ``src/nuggetizer/models/nuggetizer.py`` (windows of 10, the cap of 30) and its prompt
   templates.
.. [2] OWASP, "CSV Injection".
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.io.files import cell_for_spreadsheet, write_table_csv
from ragnb.io.nuggets import (
    ASSIGNMENT_COLUMNS,
    NUGGET_COLUMNS,
    NUGGET_FILES,
    kept_assignments,
    nugget_qrels,
    read_assignments,
    read_nugget_folder,
    read_nugget_qrels,
    read_nuggets,
)
from ragnb.llm.calls import CONSTRAINED, CallResult, LLMCall, response_format
from ragnb.llm.client import ChatClient
from ragnb.llm.prompts import PromptTemplate, load_prompt
from ragnb.measures.diversity import IMPORTANCE_LEVELS
from ragnb.measures.nuggets import SUPPORT_GRADES

__all__ = [
    "ASSIGNMENT_COLUMNS",
    "ASSIGN_STAGE",
    "CREATE_STAGE",
    "IMPORTANCE_STAGE",
    "NUGGET_COLUMNS",
    "NUGGET_FILES",
    "assign_nuggets",
    "create_nuggets",
    "export_assignments",
    "export_nuggets",
    "kept_assignments",
    "nugget_counts",
    "nugget_qrels",
    "read_assignments",
    "read_nugget_folder",
    "read_nugget_qrels",
    "read_nuggets",
]

#: Ledger stages of the three kinds of calls.
CREATE_STAGE = "nugget_create"
IMPORTANCE_STAGE = "nugget_importance"
ASSIGN_STAGE = "nugget_assign"
#: The importance given to a nugget whose importance call gave no valid answer.
DEFAULT_IMPORTANCE = "okay"


# ----------------------------------------------------------------------------- inputs


def _texts(frame: Any, key: str, what: str) -> dict[str, str]:
    """``{id: text}`` from a mapping or a frame with columns ``key`` and ``text``."""
    if isinstance(frame, Mapping):
        return {str(k): str(v) for k, v in frame.items()}
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{what} must be a DataFrame or a mapping, got {type(frame).__name__}")
    for col in (key, "text"):
        if col not in frame.columns:
            raise InputError(f"{what} has no column {col!r}", column=col)
    return dict(zip(frame[key].astype(str), frame["text"].astype(str), strict=True))


def _call(
    client: ChatClient,
    template: PromptTemplate,
    values: Mapping[str, str],
    *,
    item: str,
    query_id: str,
    labels: Sequence[str],
    constrained: str | None,
) -> LLMCall:
    """A call of ``template``, its answer constrained to the template's schema when asked."""
    schema = template.response_schema(labels) if constrained else None
    params, body = {}, {}
    if schema is not None and constrained is not None:
        params["constrained"] = constrained
        body["response_format"] = response_format(constrained, schema, f"ragnb_{template.answer}")
    return client.make_call(
        template, values, item=item, query_id=query_id, labels=labels, params=params, body=body
    )


def _status(result: CallResult) -> str:
    return "ok" if result.valid else f"{result.status}: {result.reason}"


def _windows(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _check_constrained(constrained: Any) -> None:
    if constrained not in CONSTRAINED:
        raise InputError(f"constrained must be one of {CONSTRAINED}, got {constrained!r}")


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise InputError(f"{name} must be an integer >= 1, got {value!r}", column=name)


# ----------------------------------------------------------------------------- creation


def create_nuggets(
    client: ChatClient,
    queries: pd.DataFrame | Mapping[str, str],
    passages: pd.DataFrame,
    *,
    max_nuggets: int = 30,
    window: int = 10,
    constrained: str | None = None,
    prompt: str | os.PathLike[str] | PromptTemplate = "nugget-creation",
    importance_prompt: str | os.PathLike[str] | PromptTemplate = "nugget-importance",
) -> pd.DataFrame:
    """Nuggets of each query from its pooled passages, each labelled vital or okay.

    Parameters
    ----------
    client : ChatClient
        Sends every call (cache, ledger stages :data:`CREATE_STAGE` and
        :data:`IMPORTANCE_STAGE`, retries).
    queries : DataFrame or mapping
        Columns ``query_id``, ``text``, or ``{query_id: text}``.
    passages : DataFrame
        Columns ``query_id``, ``doc_id``, ``text``: each query's pooled top passages, best
        first (e.g. a golden set's best-graded passages).
    max_nuggets : int, default 30
        The cap on a query's nuggets (AutoNuggetizer's 30).
    window : int, default 10
        Passages read per creation call, and nuggets labelled per importance call.
    constrained : {None, "json_schema", "json_object_schema"}, default None
        Constrain answers to the prompts' JSON schemas (``"json_object_schema"`` for a
        llama.cpp server, see :func:`ragnb.llm.calls.response_format`).
    prompt, importance_prompt : str, PathLike or PromptTemplate
        Shipped names or template files (:func:`ragnb.llm.load_prompt`).

    Returns
    -------
    DataFrame
        :data:`NUGGET_COLUMNS`, queries in the order of ``queries``, nuggets most important
        first. A query whose every creation answer was invalid or failed has no nugget; a
        nugget whose importance answer was invalid gets ``okay`` and a ``status`` saying why.
        ``attrs["creation"]``: ``{query_id: status of its last creation call}``.

    Raises
    ------
    InputError
        On ``passages`` without its columns, a passage of a query not in ``queries``, a
        ``max_nuggets`` or ``window`` below 1, an unknown ``constrained``, a template of the
        wrong kind or choices.
    JudgeUnavailable
        When the client's circuit breaker stops the job.

    Notes
    -----
    Creation is iterative, as AutoNuggetizer's: the list after window ``w`` is part of the
    prompt of window ``w + 1``, so the calls of one query go one after another (those of
    different queries together). An invalid answer leaves the list as it was.
    """
    _check_sizes(max_nuggets=max_nuggets, window=window)
    _check_constrained(constrained)
    creator = _template(prompt, "extract", "nugget creation")
    texts = _texts(queries, "query_id", "queries")
    by_query = _passages_by_query(passages, texts)
    cap = tuple(str(i) for i in range(1, max_nuggets + 1))
    lists: dict[str, list[str]] = {q: [] for q in by_query}
    status: dict[str, str] = {}
    longest = max((len(p) for p in by_query.values()), default=0)
    for start, end in _windows(longest, window):
        calls, owners = [], []
        for q, docs in by_query.items():
            if start >= len(docs):
                continue
            context = "\n".join(f"[{i + 1}] {t}" for i, (_, t) in enumerate(docs[start:end]))
            values = {
                "query": texts[q],
                "context": context,
                "nuggets": json.dumps(lists[q], ensure_ascii=False),
                "nuggets_length": str(len(lists[q])),
                "max_nuggets": str(max_nuggets),
            }
            item = f"{q}/passages {start + 1}-{min(end, len(docs))}"
            calls.append(
                _call(
                    client,
                    creator,
                    values,
                    item=item,
                    query_id=q,
                    labels=cap,
                    constrained=constrained,
                )
            )
            owners.append(q)
        for q, result in zip(
            owners, client.run(calls, stage=CREATE_STAGE, kind="extract"), strict=True
        ):
            status[q] = _status(result)
            if result.valid:
                lists[q] = list(dict.fromkeys(result.value))[:max_nuggets]
    frame = _importance(client, texts, lists, window, constrained, importance_prompt)
    frame.attrs["creation"] = status
    return frame


def _template(prompt: Any, kind: str, what: str) -> PromptTemplate:
    template = load_prompt(prompt)
    if template.kind != kind:
        raise InputError(f"the {what} prompt {template.id} is a {template.kind} prompt, not {kind}")
    return template


def _passages_by_query(
    passages: pd.DataFrame, texts: Mapping[str, str]
) -> dict[str, list[tuple[str, str]]]:
    """``{query_id: [(doc_id, text), ...]}`` in the frame's order, queries as in ``texts``."""
    if not isinstance(passages, pd.DataFrame):
        raise InputError(f"passages must be a DataFrame, got {type(passages).__name__}")
    for col in ("query_id", "doc_id", "text"):
        if col not in passages.columns:
            raise InputError(f"passages have no column {col!r}", column=col)
    out: dict[str, list[tuple[str, str]]] = {q: [] for q in texts}
    for q, d, t in zip(
        passages["query_id"].astype(str),
        passages["doc_id"].astype(str),
        passages["text"].astype(str),
        strict=True,
    ):
        if q not in out:
            raise InputError(f"passage {d!r} belongs to a query not in queries", query_id=q)
        out[q].append((d, t))
    return {q: docs for q, docs in out.items() if docs}


def _importance(
    client: ChatClient,
    texts: Mapping[str, str],
    lists: Mapping[str, list[str]],
    window: int,
    constrained: str | None,
    prompt: Any,
) -> pd.DataFrame:
    """The nuggets frame: each nugget labelled by the importance prompt, ``window`` a call."""
    scorer = _template(prompt, "label", "nugget importance")
    _check_choices(scorer, IMPORTANCE_LEVELS, "nugget importance")
    calls, spans = [], []
    for q, nuggets in lists.items():
        for start, end in _windows(len(nuggets), window):
            chunk = nuggets[start:end]
            values = {
                "query": texts[q],
                "nuggets": json.dumps(chunk, ensure_ascii=False),
                "num_nuggets": str(len(chunk)),
            }
            labels = tuple(_nugget_id(i) for i in range(start, end))
            item = f"{q}/nuggets {start + 1}-{end}"
            calls.append(
                _call(
                    client,
                    scorer,
                    values,
                    item=item,
                    query_id=q,
                    labels=labels,
                    constrained=constrained,
                )
            )
            spans.append((q, start, end))
    rows: list[dict[str, str]] = []
    for (q, start, end), result in zip(
        spans, client.run(calls, stage=IMPORTANCE_STAGE, kind="grade"), strict=True
    ):
        for j, i in enumerate(range(start, end)):
            importance = result.value[j] if result.valid else DEFAULT_IMPORTANCE
            rows.append(
                {
                    "query_id": q,
                    "nugget_id": _nugget_id(i),
                    "text": lists[q][i],
                    "importance": importance,
                    "status": _status(result),
                }
            )
    return pd.DataFrame(rows, columns=list(NUGGET_COLUMNS)).astype(object)


def _nugget_id(i: int) -> str:
    return f"n{i + 1:02d}"


def _check_choices(template: PromptTemplate, needed: Sequence[str], what: str) -> None:
    if tuple(template.choices or ()) != tuple(needed):
        raise InputError(
            f"the {what} prompt {template.id} has choices {list(template.choices or ())}; it "
            f"needs {list(needed)}"
        )


# ----------------------------------------------------------------------------- assignment


def assign_nuggets(
    client: ChatClient,
    nuggets: pd.DataFrame,
    queries: pd.DataFrame | Mapping[str, str],
    run: pd.DataFrame | Mapping[str, pd.DataFrame],
    corpus: pd.DataFrame | Mapping[str, str],
    *,
    k: int = 10,
    window: int = 10,
    constrained: str | None = None,
    prompt: str | os.PathLike[str] | PromptTemplate = "nugget-assignment",
) -> pd.DataFrame:
    """Label how far each passage of a run's top K supports each nugget of its query.

    Parameters
    ----------
    client : ChatClient
        Sends every call (cache, ledger stage :data:`ASSIGN_STAGE`, retries).
    nuggets : DataFrame
        :func:`create_nuggets`' frame or :func:`read_nuggets`' (columns ``query_id``,
        ``nugget_id``, ``text``).
    queries : DataFrame or mapping
        Columns ``query_id``, ``text``, or ``{query_id: text}``.
    run : DataFrame or mapping of str to DataFrame
        Columns ``query_id``, ``doc_id``, ``score``; several runs by name: the union of their
        tops is assessed, each (query, passage) once.
    corpus : DataFrame or mapping
        Columns ``doc_id``, ``text``, or ``{doc_id: text}``.
    k : int, default 10
        The cutoff: each run's top ``k`` by score (ties by ``doc_id`` descending, as trec_eval).
    window : int, default 10
        Nuggets labelled per call (AutoNuggetizer's 10).
    constrained : {None, "json_schema", "json_object_schema"}, default None
        As for :func:`create_nuggets`.
    prompt : str, PathLike or PromptTemplate, default "nugget-assignment"

    Returns
    -------
    DataFrame
        :data:`ASSIGNMENT_COLUMNS`: one row per (query, nugget, assessed passage), queries and
        passages in run order, nuggets in order; ``label`` empty where the answer was invalid
        or failed (``status`` says why).

    Raises
    ------
    InputError
        On a run or nuggets frame without its columns, a retrieved passage not in ``corpus``,
        a nugget of a query not in ``queries``, a ``k`` or ``window`` below 1, an unknown
        ``constrained``, a template of the wrong kind or choices.
    JudgeUnavailable
        When the client's circuit breaker stops the job.
    """
    _check_sizes(k=k, window=window)
    _check_constrained(constrained)
    assigner = _template(prompt, "label", "nugget assignment")
    _check_choices(assigner, tuple(SUPPORT_GRADES), "nugget assignment")
    texts = _texts(queries, "query_id", "queries")
    docs = _texts(corpus, "doc_id", "corpus")
    by_query = _nugget_lists(nuggets, texts)
    calls, spans = [], []
    for q, d in _top_pairs(run, k):
        if q not in by_query:
            continue
        if d not in docs:
            raise InputError(f"retrieved passage {d!r} is not in the corpus", query_id=q)
        ids, items = by_query[q]
        for start, end in _windows(len(items), window):
            values = {
                "query": texts[q],
                "passage": docs[d],
                "nuggets": json.dumps(items[start:end], ensure_ascii=False),
                "num_nuggets": str(end - start),
            }
            labels = tuple(ids[start:end])
            calls.append(
                _call(
                    client,
                    assigner,
                    values,
                    item=f"{q}/{d}",
                    query_id=q,
                    labels=labels,
                    constrained=constrained,
                )
            )
            spans.append((q, d, labels))
    rows: list[dict[str, str]] = []
    for (q, d, labels), result in zip(
        spans, client.run(calls, stage=ASSIGN_STAGE, kind="grade"), strict=True
    ):
        for j, nugget_id in enumerate(labels):
            label = result.value[j] if result.valid else ""
            rows.append(
                {
                    "query_id": q,
                    "nugget_id": nugget_id,
                    "doc_id": d,
                    "label": label,
                    "status": _status(result),
                }
            )
    return pd.DataFrame(rows, columns=list(ASSIGNMENT_COLUMNS)).astype(object)


def _nugget_lists(
    nuggets: pd.DataFrame, texts: Mapping[str, str]
) -> dict[str, tuple[list[str], list[str]]]:
    """``{query_id: ([nugget_id, ...], [text, ...])}`` in the frame's order."""
    if not isinstance(nuggets, pd.DataFrame):
        raise InputError(f"nuggets must be a DataFrame, got {type(nuggets).__name__}")
    for col in ("query_id", "nugget_id", "text"):
        if col not in nuggets.columns:
            raise InputError(f"nuggets have no column {col!r}", column=col)
    out: dict[str, tuple[list[str], list[str]]] = {}
    for q, n, t in zip(
        nuggets["query_id"].astype(str),
        nuggets["nugget_id"].astype(str),
        nuggets["text"].astype(str),
        strict=True,
    ):
        if q not in texts:
            raise InputError(f"nugget {n!r} belongs to a query not in queries", query_id=q)
        ids, items = out.setdefault(q, ([], []))
        ids.append(n)
        items.append(t)
    return out


def _top_pairs(run: pd.DataFrame | Mapping[str, pd.DataFrame], k: int) -> list[tuple[str, str]]:
    """The (query, passage) pairs of each run's top ``k``, each once, in first-seen order."""
    runs = run.values() if isinstance(run, Mapping) else [run]
    pairs: dict[tuple[str, str], None] = {}
    for frame in runs:
        if not isinstance(frame, pd.DataFrame):
            raise InputError(f"a run must be a DataFrame, got {type(frame).__name__}")
        for col in ("query_id", "doc_id", "score"):
            if col not in frame.columns:
                raise InputError(f"the run has no column {col!r}", column=col)
        ranked = frame.assign(
            query_id=frame["query_id"].astype(str), doc_id=frame["doc_id"].astype(str)
        ).sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
        top = ranked.groupby("query_id", sort=False).head(k)
        pairs.update(dict.fromkeys(zip(top["query_id"], top["doc_id"], strict=True)))
    return list(pairs)


# ----------------------------------------------------------------------------- counts


def nugget_counts(nuggets: pd.DataFrame, assignments: pd.DataFrame | None = None) -> dict[str, int]:
    """What a report says about the nuggets: how many, how many vital, how many answers were
    not valid.

    Returns
    -------
    dict of str to int
        ``queries`` (with a nugget), ``nuggets``, ``vital``, ``importance_invalid`` (nuggets
        whose importance is the default), and with ``assignments``: ``assignments``,
        ``assignments_invalid`` (no valid label), ``support``, ``partial_support``.
    """
    out = {
        "queries": int(nuggets["query_id"].nunique()),
        "nuggets": len(nuggets),
        "vital": int((nuggets["importance"] == "vital").sum()),
        "importance_invalid": int((nuggets["status"].astype(str) != "ok").sum())
        if "status" in nuggets
        else 0,
    }
    if assignments is not None:
        labels = assignments["label"].fillna("").astype(str)
        out.update(
            assignments=len(assignments),
            assignments_invalid=int((labels == "").sum()),
            support=int((labels == "support").sum()),
            partial_support=int((labels == "partial_support").sum()),
        )
    return out


# ----------------------------------------------------------------------------- files


def _export(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    columns: Sequence[str],
    key: list[str],
    read: Any,
) -> pd.DataFrame:
    """Write ``frame``'s ``columns``: the rows already in the file as they are, then the rows
    of ``frame`` whose ``key`` the file does not hold."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"cannot export: no column {missing[0]!r}", column=missing[0])
    rows = frame[list(columns)].astype(str).reset_index(drop=True)
    if Path(path).is_file():
        old = read(path)[list(columns)].astype(str)
        held = pd.MultiIndex.from_frame(old[key])
        new = rows[~pd.MultiIndex.from_frame(rows[key]).isin(held)]
        rows = pd.concat([old, new], ignore_index=True)
    write_table_csv(
        rows.assign(text=rows["text"].map(cell_for_spreadsheet)) if "text" in rows else rows, path
    )
    return rows.astype(object)


def export_nuggets(nuggets: pd.DataFrame, path: str | os.PathLike[str]) -> pd.DataFrame:
    """Write the nuggets as a CSV a person corrects; the file's nuggets are kept as they are.

    A query the file already holds keeps the file's nuggets (reworded, relabelled, deleted or
    added by a person); only the nuggets of queries the file does not hold are added.

    Parameters
    ----------
    nuggets : DataFrame
        :data:`NUGGET_COLUMNS`.
    path : str or PathLike

    Returns
    -------
    DataFrame
        The rows written (the file's first, then the new ones), texts as given.

    Raises
    ------
    InputError
        A column missing from ``nuggets``, or an existing file :func:`read_nuggets` rejects
        (the file is left as it is).
    """
    return _export(nuggets, path, NUGGET_COLUMNS, ["query_id"], read_nuggets)


def export_assignments(assignments: pd.DataFrame, path: str | os.PathLike[str]) -> pd.DataFrame:
    """Write the assignments as a CSV a person corrects; rows already in the file are kept as
    they are (same query, nugget and passage), the others added.

    After rewording a nugget, delete its rows from the file to have it assigned again.

    Parameters
    ----------
    assignments : DataFrame
        :data:`ASSIGNMENT_COLUMNS`.
    path : str or PathLike

    Returns
    -------
    DataFrame
        The rows written.

    Raises
    ------
    InputError
        A column missing, or an existing file :func:`read_assignments` rejects.
    """
    key = ["query_id", "nugget_id", "doc_id"]
    return _export(assignments, path, ASSIGNMENT_COLUMNS, key, read_assignments)
