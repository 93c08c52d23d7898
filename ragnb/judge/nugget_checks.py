"""Nuggets that carry no content: flagged wherever nuggets are read, as degenerate grades are.

A model can answer every nugget-creation call with valid JSON and still state no fact: a tiny
model lists ``"nugget 1"``, ``"nugget 2"`` or ``"a"``, ``"b"``, or repeats the question. What
comes out is a valid ``nuggets.csv``, and NuggetRecall computed on it counts passages that
"support" nothing. :func:`check_nuggets` returns a
:class:`~ragnb.judge.degenerate.JudgeFinding` for each kind of empty nugget it finds:

======================= ========================================================================
finding                 a nugget whose text, lower-cased with white space and punctuation at
                        either end removed, ...
======================= ========================================================================
``empty_nuggets``       holds no letter or digit, or is a stand-in for nothing (``n/a``,
                        ``none``, ``null``, ``tbd``, ``todo``, ``...``)
``placeholder_nuggets`` is a numbered or lettered placeholder: a number, a single letter, a
                        nugget id (``n01``), or ``nugget``, ``fact``, ``item``, ``point``,
                        ``claim``, ``statement``, ``answer``, ``example``, ``placeholder``,
                        ``text`` alone or followed by a number or letter (``Nugget #2``,
                        ``fact b``)
``question_nuggets``    is its query's text, read the same way (with the query texts only)
======================= ========================================================================

A finding flags; it changes no value. :func:`nugget_warning` words the findings as the console
shows them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.judge.degenerate import JudgeFinding

__all__ = ["NUGGET_FINDINGS", "check_nuggets", "nugget_warning"]

#: The names of the findings, in the order :func:`check_nuggets` reports them.
NUGGET_FINDINGS = ("empty_nuggets", "placeholder_nuggets", "question_nuggets")

_STAND_INS = frozenset({"n/a", "na", "none", "null", "nan", "tbd", "todo", "nothing"})
_WORDS = "nugget|fact|item|point|claim|statement|answer|example|placeholder|text"
_PLACEHOLDER = re.compile(
    rf"(?:(?:{_WORDS})s?(?:\s*(?:no\.?|number|#)?\s*(?:\d+|[a-z]))?|#?\s*\d+|[a-z]|n\d+)"
)
_EDGES = " \t\r\n.,;:!?\"'`()[]{}<>-*_"
_WHAT = {
    "empty_nuggets": (
        "hold no content (no letter or digit, or a stand-in such as n/a)",
        "they state no fact, so a passage cannot support them.",
    ),
    "placeholder_nuggets": (
        "are numbered or lettered placeholders",
        "the model listed slots rather than facts (a tiny local model often does).",
    ),
    "question_nuggets": (
        "repeat their query's question",
        "a question is not a fact an answer must hold; any passage on the topic may support it.",
    ),
}
#: What to do about any of the findings.
NUGGET_ADVICE = (
    "Correct nuggets.csv (reword or delete these nuggets, then delete their rows in "
    "nugget_assignments.csv to have them assigned again), or create the nuggets with a capable "
    "model; NuggetRecall on them measures nothing."
)


def _normalised(text: str) -> str:
    return " ".join(str(text).lower().split()).strip(_EDGES)


def _kind(text: str, question: str | None) -> str | None:
    """The finding a nugget's text belongs to, or None."""
    t = _normalised(text)
    if not any(c.isalnum() for c in t) or t in _STAND_INS:
        return "empty_nuggets"
    if _PLACEHOLDER.fullmatch(t):
        return "placeholder_nuggets"
    if question is not None and t == _normalised(question):
        return "question_nuggets"
    return None


def _questions(queries: Any) -> dict[str, str]:
    if queries is None:
        return {}
    if isinstance(queries, Mapping):
        return {str(k): str(v) for k, v in queries.items()}
    if not isinstance(queries, pd.DataFrame):
        raise InputError(f"queries must be a DataFrame or a mapping, got {type(queries).__name__}")
    require_columns(queries, ("query_id", "text"), "queries")
    return dict(zip(queries["query_id"].astype(str), queries["text"].astype(str), strict=True))


def check_nuggets(
    nuggets: pd.DataFrame,
    queries: pd.DataFrame | Mapping[str, str] | None = None,
    *,
    source: str = "nuggets",
    examples: int = 3,
) -> list[JudgeFinding]:
    """Flag the nuggets that carry no content (see the module's table).

    Parameters
    ----------
    nuggets : DataFrame
        ``query_id``, ``nugget_id``, ``text`` (:func:`ragnb.io.nuggets.read_nuggets`'s frame,
        whose ``line`` column, when present, is quoted in the examples).
    queries : DataFrame or mapping, optional
        ``query_id``, ``text`` or ``{query_id: text}``: with them, nuggets that repeat their
        question are flagged too.
    source : str, default "nuggets"
        Names the nuggets in the findings (the file, for one read from a file).
    examples : int, default 3
        Nuggets quoted in each finding's message.

    Returns
    -------
    list of JudgeFinding
        One per kind found, in the order of :data:`NUGGET_FINDINGS`; ``numbers`` hold
        ``count``, ``nuggets`` (all), ``queries`` (with a flagged nugget) and ``flagged``
        (``[query_id, nugget_id, text]`` of every flagged nugget).

    Raises
    ------
    InputError
        A frame without ``query_id``, ``nugget_id``, ``text``; ``queries`` of the wrong kind.

    Examples
    --------
    >>> nuggets = pd.DataFrame({"query_id": ["q1", "q1", "q2"],
    ...                         "nugget_id": ["n01", "n02", "n01"],
    ...                         "text": ["Nugget 1", "BM25 weighs term frequency",
    ...                                  "What is BM25?"]})
    >>> for f in check_nuggets(nuggets, {"q2": "what is BM25"}):
    ...     print(f.name, f.numbers["count"])
    placeholder_nuggets 1
    question_nuggets 1
    """
    if not isinstance(nuggets, pd.DataFrame):
        raise InputError(f"nuggets must be a DataFrame, got {type(nuggets).__name__}")
    require_columns(nuggets, ("query_id", "nugget_id", "text"), source)
    questions = _questions(queries)
    flagged: dict[str, list[tuple[str, str, str, Any]]] = {k: [] for k in NUGGET_FINDINGS}
    lines = nuggets["line"] if "line" in nuggets.columns else [None] * len(nuggets)
    for q, n, text, line in zip(
        nuggets["query_id"].astype(str),
        nuggets["nugget_id"].astype(str),
        nuggets["text"].fillna("").astype(str),
        lines,
        strict=True,
    ):
        kind = _kind(text, questions.get(q))
        if kind is not None:
            flagged[kind].append((q, n, text, line))
    return [
        _finding(kind, rows, len(nuggets), source, examples)
        for kind, rows in flagged.items()
        if rows
    ]


def _finding(
    kind: str, rows: Sequence[tuple[str, str, str, Any]], total: int, source: str, examples: int
) -> JudgeFinding:
    what, detail = _WHAT[kind]
    quoted = ", ".join(
        f"{q}/{n} {text!r}" + (f" (line {line})" if line is not None else "")
        for q, n, text, line in rows[:examples]
    )
    more = f" and {len(rows) - examples} more" if len(rows) > examples else ""
    n_queries = len({q for q, *_ in rows})
    return JudgeFinding(
        kind,
        source,
        f"{len(rows)} of {total} nuggets ({len(rows) / total:.0%}, {n_queries} "
        f"{'query' if n_queries == 1 else 'queries'}) {what}: {quoted}{more}",
        detail,
        {
            "count": len(rows),
            "nuggets": total,
            "queries": n_queries,
            "flagged": [[q, n, text] for q, n, text, _ in rows],
        },
        NUGGET_ADVICE,
    )


def nugget_warning(findings: Sequence[JudgeFinding]) -> str:
    """The findings as the console shows them: a warning line, one line per finding, what to
    do; ``""`` when there is none.

    Examples
    --------
    >>> nuggets = pd.DataFrame({"query_id": ["q1"], "nugget_id": ["n01"], "text": ["a"]})
    >>> print(nugget_warning(check_nuggets(nuggets, source="nuggets.csv")).splitlines()[0])
    ragnb: warning: the nuggets may say nothing (1 finding of the nugget checks):
    """
    if not findings:
        return ""
    n = len(findings)
    lines = [
        f"ragnb: warning: the nuggets may say nothing ({n} finding{'s' if n > 1 else ''} of the "
        "nugget checks):",
        *(f"  - {f}" for f in findings),
        "  what to do: " + " ".join(dict.fromkeys(f.advice for f in findings)),
    ]
    return "\n".join(lines)
