"""Every exception ragnb raises, under one base: :class:`RagnbError`.

``except ragnb.RagnbError`` catches anything ragnb raised on purpose. Each class also keeps the
built-in base callers relied on before (``InputError`` is a ``ValueError``, ``MissingExtra`` an
``ImportError``, the judge and budget errors ``RuntimeError``).

Every error names where the problem is (file and line, query, column) so a user can fix the
input without reading ragnb's code. Validation never uses ``assert``, which ``python -O`` strips.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

__all__ = [
    "BudgetExceededError",
    "DuplicateEntry",
    "GaveUp",
    "InputError",
    "JudgeFailures",
    "JudgeUnavailable",
    "MissingExtra",
    "MissingProgram",
    "RagnbError",
    "RerankError",
    "install_hint",
]


class RagnbError(Exception):
    """The base of every exception ragnb raises."""


class InputError(RagnbError, ValueError):
    """Bad input data: a malformed file, a missing field, an impossible value.

    Parameters
    ----------
    message : str
        What is wrong, in words a user can act on.
    path : str or PathLike, optional
        The file the problem is in.
    line : int, optional
        1-based line number in ``path``.
    query_id : str, optional
        The query the problem concerns.
    column : str, optional
        The column or field the problem concerns.

    Examples
    --------
    >>> str(InputError("grade is not an integer: '2.5'", path="qrels.tsv", line=7))
    "qrels.tsv, line 7: grade is not an integer: '2.5'"
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        query_id: str | None = None,
        column: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.query_id = query_id
        self.column = column
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"line {line}")
        if query_id is not None:
            where.append(f"query {query_id!r}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class DuplicateEntry(InputError):
    """A (query, document) pair given twice in a run or qrels frame.

    Found where the frame is checked or joined with the qrels, after its file was read: the
    readers of files (:mod:`ragnb.io.dispatch`) turn it into an error naming the file and line.

    Attributes
    ----------
    doc_id : str
        The document given twice.
    what : str
        ``"run"`` or ``"qrels"``.

    Examples
    --------
    >>> str(DuplicateEntry("run", "d1", query_id="q1"))
    "query 'q1': duplicate (run) entry for doc_id 'd1'"
    """

    def __init__(self, what: str, doc_id: str, *, query_id: str | None = None) -> None:
        super().__init__(f"duplicate ({what}) entry for doc_id {doc_id!r}", query_id=query_id)
        self.what = what
        self.doc_id = doc_id


class JudgeFailures(RagnbError, RuntimeError):
    """Too many judgements got no answer: the pipeline stops before the next stage.

    The message names how many failed, the most common cause (the HTTP status and the
    server's own message) and how to resume (answered judgements are cached: running the same
    notebook or command again re-sends only the failed ones).

    Attributes
    ----------
    failed, total : int
        Judgements without an answer, and judgements made.
    cause : str
        The most common reason of the failures.
    """

    def __init__(self, message: str, *, failed: int = 0, total: int = 0, cause: str = "") -> None:
        super().__init__(message)
        self.failed = failed
        self.total = total
        self.cause = cause


class JudgeUnavailable(JudgeFailures):
    """The judge's server cannot answer at all: a circuit breaker stopped the whole job.

    Raised after consecutive connection failures or one fatal HTTP status (401, 403, 404: the
    key, the URL or the model is wrong). What was answered before is kept (cache and ledger).

    Attributes
    ----------
    results : list
        One result per call of the job (answered, or ``failed`` with the reason).
    """

    def __init__(
        self,
        message: str,
        *,
        failed: int = 0,
        total: int = 0,
        cause: str = "",
        results: list[object] | None = None,
    ) -> None:
        super().__init__(message, failed=failed, total=total, cause=cause)
        self.results = list(results or [])


def install_hint(extra: str) -> str:
    """The command that installs ``extra``.

    Examples
    --------
    >>> install_hint("embed")
    'pip install "ragnb[embed]"'
    """
    return f'pip install "ragnb[{extra}]"'


class MissingExtra(RagnbError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it.

    Attributes
    ----------
    module : str
        The module that could not be imported.
    extra : str
        The ragnb extra that installs it (``pip install "ragnb[<extra>]"``).
    """

    def __init__(self, module: str, extra: str, cause: BaseException | None = None) -> None:
        self.module = module
        self.extra = extra
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        super().__init__(
            f"{module} is not installed{detail}: {install_hint(extra)}",
            name=module,
        )


class MissingProgram(RagnbError, ImportError):
    """A program ragnb runs (not a Python package, so no extra brings it) is not found; the
    message says how to get it.

    Attributes
    ----------
    program : str
        The program's name, e.g. ``"llama-server"``.
    """

    def __init__(self, program: str, message: str) -> None:
        self.program = program
        super().__init__(message, name=program)


class GaveUp(RagnbError):
    """A call to a server ended without an answer: the last fault and why no retry follows.

    Attributes
    ----------
    reason : str
        Why no retry follows.
    fault : ragnb.llm.transport.Fault
        The last fault (its HTTP status, if any, and the error).
    """

    def __init__(self, reason: str, fault: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fault = fault


class BudgetExceededError(RagnbError, RuntimeError):
    """A cost estimate is over budget, or cannot be priced."""


class RerankError(RagnbError, RuntimeError):
    """A hosted reranker gave no usable answer (after retries where they make sense)."""
