"""The :class:`Judge` interface, its requests and results, and the frames of its batch verbs."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from ragnb.errors import InputError
from ragnb.llm.calls import AUDIT_FIELDS, Audit

__all__ = [
    "GRADE_COLUMNS",
    "RANK_COLUMNS",
    "GradeRequest",
    "GradeResult",
    "Judge",
    "RankRequest",
    "RankResult",
    "check_sample",
]

T = TypeVar("T")

# Status of a result: an answer on the scale / a permutation; an answer that does not parse
# (kept in ``raw``); no answer at all (the API failed after every attempt, or was not reached).
STATUSES = ("ok", "invalid", "failed")
# describe() keys that do not change a judge's answers: left out of its fingerprint
_NOT_IDENTITY = frozenset(
    {"cache", "ledger", "base_url", "concurrency", "timeout_s", "max_attempts"}
)


@dataclass(frozen=True)
class GradeRequest:
    """One (query, passage) pair to grade.

    ``query`` and ``passage`` are None when the items carry no text (offline judges need none);
    ``fields`` holds the other text columns (``answer``, ``reference``, ...), for templates.
    """

    query_id: str
    doc_id: str
    query: str | None = None
    passage: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)

    @property
    def item(self) -> str:
        return f"{self.query_id}/{self.doc_id}"


@dataclass(frozen=True)
class RankRequest:
    """One batch of passages of one query to order, best first."""

    query_id: str
    batch_id: str
    doc_ids: tuple[str, ...]
    query: str | None = None
    passages: tuple[str, ...] | None = None
    fields: Mapping[str, str] = field(default_factory=dict)

    @property
    def item(self) -> str:
        return f"{self.query_id}/{self.batch_id}"


@dataclass(frozen=True, repr=False)
class GradeResult(Audit):
    """The judgement of one (query, passage) pair, with everything needed to audit it.

    Attributes
    ----------
    query_id, doc_id : str
    grade : int or None
        On the judge's scale; None unless ``valid``.
    expected_grade : float
        The probability-weighted grade, in the scale's range, of an LLM judge asked for token
        log-probabilities (``OpenAIJudge(logprobs=k)``, see
        :func:`ragnb.llm.calls.expected_grade`); NaN otherwise (offline judges, invalid
        answers, servers that return no log-probabilities).
    valid, status, reason, raw, first_raw, attempts, reminded, input_tokens, output_tokens,
    cached, repeated
        The audit trail, see :class:`Audit`.
    judge_id : str
        Which judge (reports print it).
    prompt : str
        The prompt template id, ``name/language#hash8`` ("" for offline judges).
    """

    query_id: str
    doc_id: str
    grade: int | None
    judge_id: str = ""
    prompt: str = ""
    expected_grade: float = math.nan


@dataclass(frozen=True, repr=False)
class RankResult(Audit):
    """The listwise judgement of one batch.

    Attributes
    ----------
    query_id, batch_id : str
    doc_ids : tuple of str
        The batch in input order (labelled A, B, C, ... in the prompt).
    permutation : tuple of int or None
        Indices into ``doc_ids``, best first; None unless ``valid``.
    order : tuple of str or None
        ``doc_ids`` best first; None unless ``valid``.
    valid, status, reason, raw, first_raw, attempts, reminded, input_tokens, output_tokens,
    cached, repeated, judge_id, prompt
        As in :class:`GradeResult`.
    """

    query_id: str
    batch_id: str
    doc_ids: tuple[str, ...]
    permutation: tuple[int, ...] | None
    judge_id: str = ""
    prompt: str = ""

    @property
    def order(self) -> tuple[str, ...] | None:
        if self.permutation is None:
            return None
        return tuple(self.doc_ids[i] for i in self.permutation)


_AUDIT = (*AUDIT_FIELDS, "judge_id", "prompt")
GRADE_COLUMNS = ("query_id", "doc_id", "grade", "expected_grade", *_AUDIT)
RANK_COLUMNS = ("query_id", "batch_id", "doc_ids", "permutation", "order", *_AUDIT)

_DTYPES = {
    "expected_grade": "float64",
    "valid": bool,
    "attempts": "int64",
    "reminded": bool,
    "input_tokens": "int64",
    "output_tokens": "int64",
    "cached": bool,
    "repeated": bool,
}


def _frame(
    results: Sequence[Any], columns: tuple[str, ...], objects: tuple[str, ...]
) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for col in columns:
        values = [getattr(r, col) for r in results]
        if col in objects:
            data[col] = pd.Series(values, dtype=object)  # None stays None, tuples stay tuples
        elif col == "grade":
            data[col] = pd.array(values, dtype="Int64")
        elif col in _DTYPES:
            data[col] = pd.Series(values, dtype=_DTYPES[col])
        else:
            data[col] = pd.Series(values, dtype=object)
    return pd.DataFrame(data, columns=list(columns))


def grades_frame(results: Sequence[GradeResult]) -> pd.DataFrame:
    return _frame(results, GRADE_COLUMNS, ("query_id", "doc_id", "raw", "first_raw"))


def ranks_frame(results: Sequence[RankResult]) -> pd.DataFrame:
    objects = ("query_id", "batch_id", "doc_ids", "permutation", "order", "raw", "first_raw")
    return _frame(results, RANK_COLUMNS, objects)


# ----------------------------------------------------------------------------- items


def _records(items: Any, what: str) -> list[dict[str, Any]]:
    if isinstance(items, pd.DataFrame):
        return items.to_dict(orient="records")
    if isinstance(items, Sequence) and not isinstance(items, str | bytes):
        out = []
        for i, row in enumerate(items):
            if not isinstance(row, Mapping):
                raise InputError(f"{what} row {i}: expected a dict, got {type(row).__name__}")
            out.append(dict(row))
        return out
    raise InputError(f"{what} must be a DataFrame or a list of dicts, got {type(items).__name__}")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _id(row: dict[str, Any], col: str, i: int, what: str) -> str:
    if col not in row or _missing(row[col]):
        raise InputError(f"{what} row {i}: missing {col!r}", column=col)
    v = row[col]
    if isinstance(v, bool) or not isinstance(v, str | int):
        raise InputError(f"{what} row {i}: {col} must be a string, got {v!r}", column=col)
    return str(v)


def _text_fields(row: dict[str, Any], skip: set[str]) -> dict[str, str]:
    return {k: v for k, v in row.items() if k not in skip and isinstance(v, str)}


def grade_requests(items: Any) -> list[GradeRequest]:
    """Validate grading items: rows with ``query_id``, ``doc_id``, and optionally ``query``,
    ``passage`` and other text fields a prompt uses."""
    out = []
    for i, row in enumerate(_records(items, "items")):
        qid = _id(row, "query_id", i, "items")
        did = _id(row, "doc_id", i, "items")
        q = row.get("query")
        p = row.get("passage")
        for name, v in (("query", q), ("passage", p)):
            if not _missing(v) and not isinstance(v, str):
                raise InputError(
                    f"items row {i}: {name} must be text, got {type(v).__name__}",
                    query_id=qid,
                    column=name,
                )
        out.append(
            GradeRequest(
                qid,
                did,
                None if _missing(q) else q,
                None if _missing(p) else p,
                _text_fields(row, {"query_id", "doc_id", "query", "passage"}),
            )
        )
    return out


def _str_list(v: Any, col: str, i: int, qid: str) -> tuple[str, ...]:
    if isinstance(v, str | bytes) or not hasattr(v, "__iter__"):
        raise InputError(f"items row {i}: {col} must be a list", query_id=qid, column=col)
    vals = list(v)
    for x in vals:
        if isinstance(x, bool) or not isinstance(x, str | int):
            raise InputError(
                f"items row {i}: {col} holds {x!r}, not text", query_id=qid, column=col
            )
    return tuple(str(x) for x in vals)


def rank_requests(items: Any) -> list[RankRequest]:
    """Validate ranking items: one row per batch with ``query_id``, ``doc_ids`` (list), and
    optionally ``batch_id`` (default: the batch's number within its query), ``query`` and
    ``passages`` (list, same length as ``doc_ids``)."""
    out = []
    counter: dict[str, int] = {}
    for i, row in enumerate(_records(items, "items")):
        qid = _id(row, "query_id", i, "items")
        if "doc_ids" not in row:
            raise InputError(f"items row {i}: missing 'doc_ids'", query_id=qid, column="doc_ids")
        doc_ids = _str_list(row["doc_ids"], "doc_ids", i, qid)
        if len(set(doc_ids)) != len(doc_ids):
            raise InputError(f"items row {i}: doc_ids repeat a document", query_id=qid)
        if len(doc_ids) < 2:
            raise InputError(f"items row {i}: a batch needs 2 documents or more", query_id=qid)
        n = counter.get(qid, 0)
        counter[qid] = n + 1
        bid = str(n) if _missing(row.get("batch_id")) else _id(row, "batch_id", i, "items")
        passages = row.get("passages")
        ptuple = None
        if passages is not None and not (isinstance(passages, float) and math.isnan(passages)):
            ptuple = _str_list(passages, "passages", i, qid)
            if len(ptuple) != len(doc_ids):
                raise InputError(
                    f"items row {i}: {len(ptuple)} passages for {len(doc_ids)} doc_ids",
                    query_id=qid,
                )
        q = row.get("query")
        out.append(
            RankRequest(
                qid,
                bid,
                doc_ids,
                None if _missing(q) else str(q),
                ptuple,
                _text_fields(row, {"query_id", "batch_id", "doc_ids", "query", "passages"}),
            )
        )
    return out


def check_sample(sample: Any, temperature: Any) -> tuple[int, float | None]:
    """``(sample, temperature)`` of :meth:`Judge.with_sample`, checked.

    Raises
    ------
    InputError
        ``sample`` not an integer >= 0, ``temperature`` neither None nor a number > 0.
    """
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise InputError(f"sample must be an integer >= 0, got {sample!r}", column="sample")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature <= 0
    ):
        raise InputError(
            f"temperature must be a number > 0 (samples of a judge at temperature 0 repeat "
            f"one answer), got {temperature!r}",
            column="temperature",
        )
    return sample, None if temperature is None else float(temperature)


# ----------------------------------------------------------------------------- the interface


class Judge(ABC):
    """Grades passages and orders batches of passages for a query.

    Two verbs, each with a batch form for pipelines:

    - :meth:`grade` / :meth:`grade_many`: a grade per (query, passage) on the judge's ``scale``;
    - :meth:`rank` / :meth:`rank_many`: a permutation of a small batch, best first (listwise
      judging for Plackett-Luce refinement and reranking).

    Results never lose an item: every input has a result, valid or not, with the raw answer,
    the reason it is invalid, attempts, token usage and whether it came from the cache.

    Attributes
    ----------
    judge_id : str
        What judged, printed by reports: ``"openai-judge:gpt-4o-mini"``, ``"qrels-judge"``,
        ``"noisy-judge(sd=1,seed=0)"``.
    scale : (int, int) or None
        Inclusive range of :meth:`grade`'s grades.
    """

    judge_id: str = "judge"
    scale: tuple[int, int] | None = None

    # -- the verbs

    def grade(
        self,
        query: str,
        passages: Sequence[str],
        *,
        query_id: str = "q",
        doc_ids: Sequence[str] | None = None,
        fields: Mapping[str, str] | None = None,
        stage: str | None = None,
    ) -> list[GradeResult]:
        """Grade each passage for ``query``.

        Parameters
        ----------
        query : str
        passages : sequence of str, length n
        query_id : str, default "q"
        doc_ids : sequence of str, length n, optional
            Default ``"0"``, ``"1"``, ... (offline judges look grades up by these ids).
        fields : dict of str to str, optional
            Other fields the prompt uses (``answer``, ``reference``, ...).
        stage : str, optional
            Ledger label of the calls.

        Returns
        -------
        list of GradeResult, length n, in input order
        """
        items = self._pairs(query, passages, query_id, doc_ids, fields)
        return self._grade_batch(grade_requests(items), stage)

    def rank(
        self,
        query: str,
        passages: Sequence[str],
        *,
        query_id: str = "q",
        doc_ids: Sequence[str] | None = None,
        batch_id: str = "0",
        fields: Mapping[str, str] | None = None,
        stage: str | None = None,
    ) -> RankResult:
        """Order ``passages`` for ``query``, best first.

        Parameters
        ----------
        query : str
        passages : sequence of str, length n (2 to 26: labelled A, B, ...)
        query_id, doc_ids, fields, stage
            As in :meth:`grade`.
        batch_id : str, default "0"

        Returns
        -------
        RankResult
            ``permutation`` indexes ``passages``.
        """
        ids = [str(i) for i in range(len(passages))] if doc_ids is None else list(doc_ids)
        row = {
            "query_id": query_id,
            "batch_id": batch_id,
            "query": query,
            "doc_ids": ids,
            "passages": list(passages),
            **dict(fields or {}),
        }
        return self._rank_batch(rank_requests([row]), stage)[0]

    def grade_many(self, items: Any, *, stage: str | None = None) -> pd.DataFrame:
        """Grade many (query, passage) pairs.

        Parameters
        ----------
        items : DataFrame or list of dict
            One row per pair: ``query_id``, ``doc_id``, and the texts the judge reads:
            ``query``, ``passage`` and any other field the prompt uses (e.g. ``answer``).
        stage : str, optional
            Ledger label of the calls.

        Returns
        -------
        DataFrame
            One row per item, input order. Columns: ``query_id``, ``doc_id``, ``grade``
            (Int64, <NA> unless valid), ``expected_grade`` (float, NaN unless an LLM judge
            returned token log-probabilities), ``valid`` (bool), ``status`` ("ok", "invalid",
            "failed"), ``reason`` (str), ``raw`` (last answer or None), ``first_raw`` (the
            answer that triggered the reminder, or None), ``attempts`` (int, HTTP requests in
            this run), ``reminded`` (bool), ``input_tokens``, ``output_tokens`` (int),
            ``cached`` (bool), ``repeated`` (bool), ``judge_id``, ``prompt`` (template id).

        Raises
        ------
        InputError
            On a malformed item (naming the row), before any call.
        """
        return grades_frame(self._grade_batch(grade_requests(items), stage))

    def rank_many(self, items: Any, *, stage: str | None = None) -> pd.DataFrame:
        """Order many batches.

        Parameters
        ----------
        items : DataFrame or list of dict
            One row per batch: ``query_id``, ``doc_ids`` (list of 2 to 26 ids), optionally
            ``batch_id`` (default: running number within the query), ``query``, ``passages``
            (list of texts aligned with ``doc_ids``).
        stage : str, optional

        Returns
        -------
        DataFrame
            One row per batch, input order. Columns: ``query_id``, ``batch_id``, ``doc_ids``
            (tuple, input order), ``permutation`` (tuple of indices into ``doc_ids``, best
            first, or None), ``order`` (tuple of doc ids best first, or None), then the audit
            columns of :meth:`grade_many` from ``valid`` on.
        """
        return ranks_frame(self._rank_batch(rank_requests(items), stage))

    # -- what subclasses implement

    @abstractmethod
    def _grade_batch(self, requests: list[GradeRequest], stage: str | None) -> list[GradeResult]:
        """One result per request, same order."""

    @abstractmethod
    def _rank_batch(self, requests: list[RankRequest], stage: str | None) -> list[RankResult]:
        """One result per request, same order."""

    def plan(self, items: Any, *, kind: str = "grade", stage: str | None = None) -> list[Any]:
        """The LLM calls a job would make (see :func:`ragnb.llm.ledger.estimate`): none offline."""
        (grade_requests if kind == "grade" else rank_requests)(items)
        return []

    def with_sample(self, sample: int, temperature: float | None = None) -> Judge:
        """The judge drawing its ``sample``-th answer to every pair (self-consistency).

        Judges that sample (an LLM at a temperature above 0, a noisy judge) give each sample
        its own answers; sample 0 is the judge's usual answer, so its cached answers serve it.

        Parameters
        ----------
        sample : int >= 0
            Which draw.
        temperature : float > 0, optional
            The sampling temperature of an LLM judge (None: its own).

        Returns
        -------
        Judge

        Raises
        ------
        InputError
            From this base class: the judge does not draw samples.
        """
        raise InputError(f"{self.judge_id} ({type(self).__name__}) does not draw samples")

    def describe(self) -> dict[str, Any]:
        """What the judge is, for reports and manifests (never secrets)."""
        return {"judge_id": self.judge_id, "class": type(self).__name__, "scale": self.scale}

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the judge's answers, for stage hashes (never secrets or local paths).

        Returns
        -------
        dict
            :meth:`describe` without the cache and ledger paths, the base URL and the client
            settings that do not change answers (``concurrency``, ``timeout_s``,
            ``max_attempts``). Judges that read labels add ``labels_sha256``, so other labels
            mean other grades.
        """
        return {k: v for k, v in self.describe().items() if k not in _NOT_IDENTITY}

    # -- helpers

    def _grade_result(self, r: GradeRequest, grade: int | None, **audit: Any) -> GradeResult:
        """``r``'s result by this judge: ``grade`` (None unless valid) and the audit fields."""
        return GradeResult(r.query_id, r.doc_id, grade, judge_id=self.judge_id, **audit)

    def _rank_result(
        self, r: RankRequest, permutation: tuple[int, ...] | None, **audit: Any
    ) -> RankResult:
        """``r``'s result by this judge: ``permutation`` (None unless valid), the audit fields."""
        return RankResult(
            r.query_id, r.batch_id, r.doc_ids, permutation, judge_id=self.judge_id, **audit
        )

    def _invalid_grade(self, r: GradeRequest, reason: str) -> GradeResult:
        """The result of a pair this judge cannot grade, with the reason."""
        return self._grade_result(r, None, valid=False, status="invalid", reason=reason)

    def _invalid_rank(self, r: RankRequest, reason: str) -> RankResult:
        """The result of a batch this judge cannot order, with the reason."""
        return self._rank_result(r, None, valid=False, status="invalid", reason=reason)

    @staticmethod
    def _pairs(
        query: str,
        passages: Sequence[str],
        query_id: str,
        doc_ids: Sequence[str] | None,
        fields: Mapping[str, str] | None,
    ) -> list[dict[str, Any]]:
        if isinstance(passages, str):
            raise InputError("passages must be a list of texts, got one string")
        ids = [str(i) for i in range(len(passages))] if doc_ids is None else list(doc_ids)
        if len(ids) != len(passages):
            raise InputError(f"{len(ids)} doc_ids for {len(passages)} passages")
        extra = dict(fields or {})
        return [
            {"query_id": query_id, "doc_id": d, "query": query, "passage": p, **extra}
            for d, p in zip(ids, passages, strict=True)
        ]
