"""Degenerate-judge checks: grades that tell nothing, flagged wherever a golden set is made.

A judge can answer every pair with a grade and still say nothing about it: a tiny model that
answers with its first token, a prompt whose grade scale the model does not follow, a scale the
model reads backwards. What comes out is a valid TREC qrels file. :func:`check_grades` looks at
one set of grades (S4's, an incremental judging's, an ensemble member's) and returns a
:class:`JudgeFinding` for each sign of this:

=========================== =====================================================================
finding                     when (defaults of :class:`CheckThresholds`)
=========================== =====================================================================
``one_grade``               one grade for more than ``max_share`` (90%) of the valid grades, of
                            at least ``min_pairs`` (10)
``flat_queries``            the grades vary within no query: every query with two or more valid
                            grades has a single grade, over at least ``min_pairs`` grades
``no_rank_association``     the ``confidence`` (95%) interval of Spearman's rho between grade and
                            pooled rank contains 0, over at least ``min_rank_pairs`` (30) valid
                            grades of two or more values
``grades_rise_down_pool``   that interval lies above 0: grades rise as the pooled rank worsens
``invalid_share``           more than ``max_invalid_share`` (10%) of the answers gave no grade
``placeholder_nuggets``     more than ``max_invalid_share`` (10%) of a model's nuggets are no facts:
                            empty, a numbered placeholder ("nugget 1", "fact 2", "a", "3.") or
                            the question copied (:func:`check_nuggets`)
=========================== =====================================================================

Why the pooled rank: the pool is the top of several retrieval systems fused by reciprocal rank,
and such systems put relevant documents first more often than not, so the grades of a judge that
reads the passages fall down the pool on average. The rank association is Spearman's rho over
every valid (grade, rank) pair of the set, its interval Fisher's z transform with Bonett and
Wright's variance for Spearman's rho, ``(1 + rho^2 / 2) / (n - 3)``. A pool of a few dozen pairs
can miss a weak association: a finding is a reason to look at the grades, not a verdict. Failed
judgements (no answer at all) are left out of every check: the pipeline reports them itself.

Each finding says what to do: calibrate the judge against human labels (a few dozen labelled pairs,
:func:`ragnb.studies.golden.labelling_view.label_pairs`), use a capable model, check the prompt's
scale.

References
----------
.. [1] D. G. Bonett, T. A. Wright, "Sample size requirements for estimating Pearson, Kendall and
   Spearman correlations", Psychometrika 65(1), 23-28, 2000 (the variance of Fisher's z of
   Spearman's rho).
.. [2] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (calibrating the
   judge on human labels before trusting it).
.. [3] E. M. Voorhees, D. K. Harman (eds.), "TREC: Experiment and Evaluation in Information
   Retrieval", MIT Press, 2005, Chapter 3 (pooling).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from ragnb.core.validation import check_number_in, check_positive_int, require_columns
from ragnb.errors import InputError

__all__ = [
    "ADVICE",
    "FINDINGS",
    "CheckThresholds",
    "GradeSet",
    "JudgeFinding",
    "check_grades",
    "check_invalid",
    "check_nuggets",
    "placeholder_nugget",
    "check_sets",
    "findings_markdown",
    "grade_sets",
    "rank_association",
]

#: The names of the findings, in the order :func:`check_grades` reports them.
FINDINGS = (
    "one_grade",
    "flat_queries",
    "no_rank_association",
    "grades_rise_down_pool",
    "invalid_share",
    "placeholder_nuggets",
)

#: What to do about a judge whose grades say nothing.
ADVICE = (
    "Calibrate the judge against human labels (label a few dozen pairs: "
    "ragnb.studies.golden.labelling_view.label_pairs, then human_labels), use a capable "
    "model, and check that the prompt's grade scale is the one the model answers on."
)
_ADVICE_INVERTED = (
    "Check the prompt's scale first (is the best grade the highest, and does the model read it "
    "so?), then calibrate the judge against human labels."
)
_ADVICE_NUGGETS = (
    "Create the nuggets with a capable model (judge='openai'), or write them yourself in the run "
    "folder's nuggets.csv: the next run reads the corrections back."
)
#: A nugget that says nothing: a label and a number ("nugget 1", "Fact #2", "item 3."), a number
#: or one letter alone ("1", "a)"), or nothing but punctuation.
_PLACEHOLDER = re.compile(
    r"^\W*(?:(?:nugget|fact|item|point|answer|statement)\s*#?\s*\d*|\d+|[a-z])\W*$",
    re.IGNORECASE,
)
_ADVICE_INVALID = (
    "Read the judge's answers (the reason column of the grades) and check that the prompt asks "
    "for the format the model gives; use a capable model; calibrate against human labels."
)


@dataclass(frozen=True)
class CheckThresholds:
    """When :func:`check_grades` reports a finding.

    Attributes
    ----------
    max_share : float in (0, 1], default 0.9
        ``one_grade``: the most common grade's share of the valid grades above which it fires.
    min_pairs : int >= 1, default 10
        ``one_grade``, ``flat_queries``: the fewest valid grades that are evidence.
    min_rank_pairs : int >= 4, default 30
        ``no_rank_association``, ``grades_rise_down_pool``: the fewest valid grades with a rank
        for the interval to be computed.
    confidence : float in (0, 1), default 0.95
        Level of the interval of Spearman's rho.
    max_invalid_share : float in [0, 1], default 0.1
        ``invalid_share``: the share of answers without a grade above which it fires.
    """

    max_share: float = 0.9
    min_pairs: int = 10
    min_rank_pairs: int = 30
    confidence: float = 0.95
    max_invalid_share: float = 0.1

    def __post_init__(self) -> None:
        check_number_in(self.max_share, "max_share", 0.0, 1.0)
        if self.max_share == 0:
            raise InputError("max_share must be above 0, got 0", column="max_share")
        check_positive_int(self.min_pairs, "min_pairs")
        if check_positive_int(self.min_rank_pairs, "min_rank_pairs") < 4:
            raise InputError(
                f"min_rank_pairs must be >= 4 (the interval needs n - 3 > 0), got "
                f"{self.min_rank_pairs}",
                column="min_rank_pairs",
            )
        check_number_in(self.confidence, "confidence", 0.0, 1.0)
        if not 0 < self.confidence < 1:
            raise InputError(
                f"confidence must lie strictly between 0 and 1, got {self.confidence}",
                column="confidence",
            )
        check_number_in(self.max_invalid_share, "max_invalid_share", 0.0, 1.0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JudgeFinding:
    """One sign that a judge's grades say nothing (see the module's table).

    Attributes
    ----------
    name : str
        One of :data:`FINDINGS`.
    source : str
        Which grades: ``"S4 grades"``, ``"incremental judging of <system>"``, ...
    message : str
        What was found, with its numbers.
    detail : str
        What it may mean.
    numbers : dict
        The numbers behind it (counts, shares in [0, 1], rho and its interval, thresholds).
    advice : str
        What to do.
    """

    name: str
    source: str
    message: str
    detail: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)
    advice: str = ADVICE

    def __str__(self) -> str:
        return f"{self.source}: {self.message}" + (f": {self.detail}" if self.detail else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``name``, ``source``, ``message``, ``detail``, ``advice``, ``numbers``."""
        return {
            "name": self.name,
            "source": self.source,
            "message": self.message,
            "detail": self.detail,
            "advice": self.advice,
            "numbers": dict(self.numbers),
        }


def rank_association(grade: Any, rank: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Spearman's rho between grades and ranks, with its interval.

    Parameters
    ----------
    grade, rank : array-like of shape (n,)
        Numbers; ``n >= 4`` (the variance divides by ``n - 3``).
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    rho, low, high : float in [-1, 1]
        Spearman's rho (ties at their mean rank, :func:`scipy.stats.spearmanr`) and the
        interval ``tanh(atanh(rho) -+ q * sqrt((1 + rho^2 / 2) / (n - 3)))``, ``q`` the normal
        quantile of ``(1 + confidence) / 2``. NaN when either input is constant.

    Raises
    ------
    InputError
        Inputs of different lengths or with fewer than 4 values.

    References
    ----------
    .. [1] Bonett and Wright, Psychometrika 65(1), 2000, the variance of Fisher's z of
       Spearman's rho.

    Examples
    --------
    Grades that fall down the pool:

    >>> rho, low, high = rank_association([3, 3, 2, 2, 1, 1], [1, 2, 3, 4, 5, 6])
    >>> round(rho, 3), round(low, 3), round(high, 3)
    (-0.956, -0.997, -0.488)
    """
    from scipy.stats import norm, spearmanr

    g = np.asarray(grade, dtype=np.float64)
    r = np.asarray(rank, dtype=np.float64)
    if g.shape != r.shape or g.ndim != 1:
        raise InputError(
            f"grade and rank must be two 1-d arrays of one length: {g.shape}, {r.shape}"
        )
    n = g.size
    if n < 4:
        raise InputError(f"the interval of Spearman's rho needs 4 pairs or more, got {n}")
    if np.ptp(g) == 0 or np.ptp(r) == 0:
        return math.nan, math.nan, math.nan
    rho = float(spearmanr(g, r).statistic)
    z = math.atanh(min(max(rho, -1 + 1e-12), 1 - 1e-12))
    half = float(norm.ppf((1 + confidence) / 2)) * math.sqrt((1 + rho**2 / 2) / (n - 3))
    return rho, math.tanh(z - half), math.tanh(z + half)


def check_invalid(
    invalid: int,
    answered: int,
    *,
    source: str,
    thresholds: CheckThresholds | None = None,
    reason: str = "",
    what: str = "answers",
) -> list[JudgeFinding]:
    """The ``invalid_share`` finding of ``invalid`` answers out of ``answered``, if any.

    For sets that carry counts only, such as S6's listwise answers (per query: calls and
    invalid answers).

    Parameters
    ----------
    invalid, answered : int >= 0
        Answers without a grade (or order), and every answer (invalid included).
    source : str
    thresholds : CheckThresholds, optional
    reason : str, optional
        The most common reason of the invalid answers, quoted in the message.
    what : str, default "answers"
        What was answered, for the message.

    Returns
    -------
    list of JudgeFinding
        Empty or ``[invalid_share]``.

    Examples
    --------
    >>> [str(f) for f in check_invalid(3, 20, source="S6 listwise answers")]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['S6 listwise answers: 3 of 20 answers (15%) gave no usable answer, above the 10% threshold:
      the judge often answers outside the format the prompt asks for.']
    """
    th = thresholds or CheckThresholds()
    if answered <= 0 or invalid <= 0:
        return []
    share = invalid / answered
    if share <= th.max_invalid_share:
        return []
    because = f" (most common reason: {reason[:120]})" if reason else ""
    return [
        JudgeFinding(
            "invalid_share",
            source,
            f"{invalid} of {answered} {what} ({share:.0%}) gave no usable answer{because}, above "
            f"the {th.max_invalid_share:.0%} threshold",
            "the judge often answers outside the format the prompt asks for.",
            {
                "invalid": int(invalid),
                "answered": int(answered),
                "share": share,
                "threshold": th.max_invalid_share,
                "reason": reason[:120],
            },
            _ADVICE_INVALID,
        )
    ]


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def placeholder_nugget(text: Any, query: str = "") -> str:
    """Why ``text`` is no nugget (``"empty"``, ``"placeholder"``, ``"the question"``), or ``""``.

    Examples
    --------
    >>> [placeholder_nugget(t, "What is BM25?") for t in ["nugget 1", "", "what is bm25",
    ...  "BM25 ranks documents by term frequency"]]
    ['placeholder', 'empty', 'the question', '']
    """
    value = "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text)
    if not value.strip():
        return "empty"
    if _PLACEHOLDER.match(value.strip()):
        return "placeholder"
    if query and _words(value) == _words(query):
        return "the question"
    return ""


def check_nuggets(
    nuggets: pd.DataFrame,
    queries: Mapping[str, str],
    *,
    source: str = "nuggets",
    thresholds: CheckThresholds | None = None,
) -> list[JudgeFinding]:
    """The ``placeholder_nuggets`` finding of a model's nuggets, if any.

    Parameters
    ----------
    nuggets : DataFrame
        ``query_id``, ``text`` (:data:`ragnb.judge.nuggets.NUGGET_COLUMNS`).
    queries : mapping of str to str
        Each query's text, to find nuggets that copy it.
    source : str, default "nuggets"
    thresholds : CheckThresholds, optional
        ``max_invalid_share``: the share of placeholders above which it fires.

    Returns
    -------
    list of JudgeFinding
        Empty or ``[placeholder_nuggets]``, whose numbers count each kind (``empty``,
        ``placeholder``, ``the question``) and give up to three examples.

    Examples
    --------
    >>> frame = pd.DataFrame({"query_id": ["q1", "q1"], "text": ["nugget 1", "nugget 2"]})
    >>> [f.name for f in check_nuggets(frame, {"q1": "What is BM25?"})]
    ['placeholder_nuggets']
    """
    th = thresholds or CheckThresholds()
    require_columns(nuggets, ("query_id", "text"), "nuggets")
    if nuggets.empty:
        return []
    why = [
        placeholder_nugget(t, queries.get(str(q), ""))
        for q, t in zip(nuggets["query_id"], nuggets["text"], strict=True)
    ]
    bad = [w for w in why if w]
    share = len(bad) / len(why)
    if share <= th.max_invalid_share:
        return []
    kinds = {k: bad.count(k) for k in ("empty", "placeholder", "the question") if k in bad}
    examples = [str(t) for t, w in zip(nuggets["text"], why, strict=True) if w][:3]
    what = ", ".join(f"{n} {k}" for k, n in kinds.items())
    return [
        JudgeFinding(
            "placeholder_nuggets",
            source,
            f"{len(bad)} of {len(why)} nuggets ({share:.0%}) state no fact ({what}; e.g. "
            f"{', '.join(repr(e) for e in examples)}), above the {th.max_invalid_share:.0%} "
            "threshold",
            "the model fills the answer's slots without reading the passages: nugget recall "
            "over these nuggets measures nothing.",
            {
                "nuggets": len(why),
                "placeholders": len(bad),
                "share": share,
                "kinds": kinds,
                "examples": examples,
                "threshold": th.max_invalid_share,
            },
            _ADVICE_NUGGETS,
        )
    ]


def check_grades(
    grades: pd.DataFrame,
    *,
    source: str = "grades",
    rank: str | None = None,
    thresholds: CheckThresholds | None = None,
) -> list[JudgeFinding]:
    """Degenerate-judge checks on one set of grades (see the module's table).

    Parameters
    ----------
    grades : DataFrame
        One row per judged pair: ``query_id``, ``doc_id``, ``grade`` (integers, missing when the
        answer gave none); optionally ``valid`` (bool; default: a grade is present), ``status``
        (``"failed"``: no answer, left out of every check; any other value of an invalid row:
        an invalid answer), ``reason`` (why an answer is invalid) and the ``rank`` column.
    source : str, default "grades"
        Names the set in the findings.
    rank : str, optional
        The column of the pooled rank (1 = the top; S4: ``rrf_rank``). None: the rank
        association is not checked.
    thresholds : CheckThresholds, optional
        Default :class:`CheckThresholds()`.

    Returns
    -------
    list of JudgeFinding
        In the order of :data:`FINDINGS`; empty when nothing is found, for an empty set, and
        where there is too little to judge by (fewer than ``min_pairs`` or ``min_rank_pairs``
        valid grades).

    Raises
    ------
    InputError
        A frame without ``query_id``, ``doc_id``, ``grade`` (or the ``rank`` column), or a grade
        or rank that is not a number.

    References
    ----------
    .. [1] Bonett and Wright, Psychometrika 65(1), 2000 (the rank association's interval).
    .. [2] Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (calibration).

    Examples
    --------
    Twelve pairs of three queries, every one graded 5:

    >>> g = pd.DataFrame({"query_id": [f"q{i // 4}" for i in range(12)],
    ...                   "doc_id": [f"d{i}" for i in range(12)], "grade": [5] * 12})
    >>> for f in check_grades(g, source="S4 grades"):
    ...     print(f.name, f.numbers["share"] if f.name == "one_grade" else f.numbers["queries"])
    one_grade 1.0
    flat_queries 3
    """
    th = thresholds or CheckThresholds()
    if not isinstance(grades, pd.DataFrame):
        raise InputError(f"grades must be a DataFrame, got {type(grades).__name__}")
    require_columns(grades, ("query_id", "doc_id", "grade", *([rank] if rank else [])), source)
    status = (
        grades["status"].astype(str).to_numpy()
        if "status" in grades.columns
        else np.full(len(grades), "ok", dtype=object)
    )
    failed = status == "failed"
    g = _numbers(grades["grade"], "grade", source)
    valid = ~np.isnan(g)
    if "valid" in grades.columns:
        valid &= grades["valid"].fillna(False).to_numpy(dtype=bool)
    valid &= ~failed
    invalid = ~valid & ~failed
    findings: list[JudgeFinding] = []
    frame = pd.DataFrame({"query_id": grades["query_id"].to_numpy(dtype=object), "grade": g})[valid]
    findings += _one_grade(frame, source, th)
    findings += _flat_queries(frame, source, th)
    if rank:
        ranks = _numbers(grades[rank], rank, source)[valid]
        findings += _rank_finding(frame.assign(rank=ranks), source, th)
    reason = ""
    if invalid.any() and "reason" in grades.columns:
        counts = grades.loc[invalid, "reason"].astype(str).value_counts()
        reason = str(counts.index[0]) if len(counts) else ""
    findings += check_invalid(
        int(invalid.sum()),
        int((valid | invalid).sum()),
        source=source,
        thresholds=th,
        reason=reason,
    )
    return findings


def _numbers(column: pd.Series, name: str, source: str) -> np.ndarray:
    """A grade or rank column as float64, NaN where missing; a value that is no number raises."""
    values = pd.to_numeric(column, errors="coerce").astype("Float64")
    bad = values.isna().to_numpy() & column.notna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"{source}: {name} {column.iloc[row]!r} of row {row} is not a number")
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def _one_grade(frame: pd.DataFrame, source: str, th: CheckThresholds) -> list[JudgeFinding]:
    n = len(frame)
    if n < th.min_pairs:
        return []
    counts = frame["grade"].value_counts()
    grade, count = float(counts.index[0]), int(counts.iloc[0])
    share = count / n
    if share <= th.max_share:
        return []
    return [
        JudgeFinding(
            "one_grade",
            source,
            f"grade {grade:g} for {count} of {n} valid grades ({share:.0%}, threshold "
            f"{th.max_share:.0%})",
            f"either nearly every pair really is a {grade:g}, or the judge does not tell the "
            "pairs apart.",
            {
                "grade": int(grade) if grade.is_integer() else grade,
                "count": count,
                "valid": n,
                "share": share,
                "threshold": th.max_share,
            },
        )
    ]


def _flat_queries(frame: pd.DataFrame, source: str, th: CheckThresholds) -> list[JudgeFinding]:
    per_query = frame.groupby("query_id", sort=False)["grade"].agg(["size", "nunique"])
    several = per_query[per_query["size"] >= 2]
    pairs = int(several["size"].sum())
    if several.empty or pairs < th.min_pairs or (several["nunique"] > 1).any():
        return []
    values = sorted(frame["grade"].unique().tolist())
    return [
        JudgeFinding(
            "flat_queries",
            source,
            f"the grades vary within no query ({len(several)} queries with two or more valid "
            f"grades, {pairs} grades; grades used: {', '.join(f'{v:g}' for v in values)})",
            "each query has a single grade throughout, so the judge orders no query's documents.",
            {
                "queries": len(several),
                "pairs": pairs,
                "grades": [int(v) if float(v).is_integer() else v for v in values],
            },
        )
    ]


def _rank_finding(frame: pd.DataFrame, source: str, th: CheckThresholds) -> list[JudgeFinding]:
    frame = frame[~np.isnan(frame["rank"].to_numpy(dtype=np.float64))]
    n = len(frame)
    if n < th.min_rank_pairs or frame["grade"].nunique() < 2 or frame["rank"].nunique() < 2:
        return []
    rho, low, high = rank_association(frame["grade"], frame["rank"], th.confidence)
    if high < 0:  # the grades fall down the pool, as they should
        return []
    numbers = {
        "rho": rho,
        "low": low,
        "high": high,
        "confidence": th.confidence,
        "pairs": n,
        "queries": int(frame["query_id"].nunique()),
    }
    stats = (
        f"Spearman's rho between grade and pooled rank {rho:.2f}, {th.confidence:.0%} interval "
        f"[{low:.2f}, {high:.2f}], over {n} valid grades of {numbers['queries']} queries"
    )
    if low > 0:
        return [
            JudgeFinding(
                "grades_rise_down_pool",
                source,
                f"the grades rise as the pooled rank worsens ({stats})",
                "the judge may read the grade scale backwards.",
                numbers,
                _ADVICE_INVERTED,
            )
        ]
    return [
        JudgeFinding(
            "no_rank_association",
            source,
            f"the grades do not move with the pooled rank ({stats}; the interval contains 0)",
            "a judge that reads the passages grades the top of the pool higher on average.",
            numbers,
        )
    ]


#: One set of grades: its source, its frame (None: counts only), the frame's rank column (None:
#: no rank) and its counts.
GradeSet: TypeAlias = tuple[str, pd.DataFrame | None, str | None, dict[str, int]]


def _status_counts(status: pd.Series) -> dict[str, int]:
    """``pairs``, ``valid``, ``invalid``, ``failed`` of a judge's ``status`` column."""
    st = status.astype(str)
    return {
        "pairs": len(st),
        "valid": int((st == "ok").sum()),
        "invalid": int((st == "invalid").sum()),
        "failed": int((st == "failed").sum()),
    }


def grade_sets(
    grades: pd.DataFrame,
    refine_summary: pd.DataFrame,
    increments: Sequence[tuple[str, pd.DataFrame]] = (),
) -> list[GradeSet]:
    """Every set of grades a golden set is made from, as :func:`check_sets` checks them.

    Parameters
    ----------
    grades : DataFrame
        S4's frame (:func:`ragnb.studies.golden.grade_candidates`): ``query_id``, ``doc_id``,
        ``rrf_rank``, ``grade``, ``status``, and a judge ensemble's ``member_grade:<name>`` and
        ``member_status:<name>``.
    refine_summary : DataFrame
        S6's summary: ``calls`` and ``invalid`` per query.
    increments : sequence of (str, DataFrame)
        Each new system's name and the grades of its top ``k`` after incremental judging
        (``query_id``, ``doc_id``, ``rank``, ``grade``, ``status``).

    Returns
    -------
    list of GradeSet
        ``"S4 grades"`` (ranked by ``rrf_rank``, the fused rank); ``"S4 grades of ensemble
        member <name>"`` per member; ``"S6 listwise answers"`` (no frame: counts ``calls`` and
        ``invalid``), when S6 made calls; ``"incremental judging of <system>"`` per increment
        (ranked by the new system's ``rank``). Frame counts: ``pairs``, ``valid``, ``invalid``,
        ``failed``.
    """
    g = grades
    sets: list[GradeSet] = [("S4 grades", g, "rrf_rank", _status_counts(g["status"]))]
    for column in [str(c) for c in g.columns if str(c).startswith("member_grade:")]:
        name = column.split(":", 1)[1]
        status = g[f"member_status:{name}"]
        member = g[["query_id", "doc_id", "rrf_rank"]].assign(grade=g[column], status=status)
        sets.append(
            (f"S4 grades of ensemble member {name}", member, "rrf_rank", _status_counts(status))
        )
    if len(refine_summary):
        calls, invalid = refine_summary["calls"].sum(), refine_summary["invalid"].sum()
        sets.append(
            ("S6 listwise answers", None, None, {"calls": int(calls), "invalid": int(invalid)})
        )
    for system, frame in increments:
        counts = _status_counts(frame["status"])
        sets.append((f"incremental judging of {system}", frame, "rank", counts))
    return sets


def check_sets(
    sets: Sequence[GradeSet], thresholds: CheckThresholds | None = None
) -> list[JudgeFinding]:
    """:func:`check_grades` on each set with a frame, :func:`check_invalid` on each set of
    counts (``calls``, ``invalid``: listwise answers); the findings in the sets' order."""
    findings: list[JudgeFinding] = []
    for source, frame, rank, counts in sets:
        if frame is None:
            findings += check_invalid(
                counts["invalid"],
                counts["calls"],
                source=source,
                thresholds=thresholds,
                what="listwise answers",
            )
        else:
            findings += check_grades(frame, source=source, rank=rank, thresholds=thresholds)
    return findings


def findings_markdown(findings: Sequence[JudgeFinding], *, short: bool = False) -> str:
    """Markdown of the findings: a bold headline, one bullet per finding, what to do; ``""``
    when there is none.

    Parameters
    ----------
    findings : sequence of JudgeFinding
    short : bool, default False
        Without each finding's detail (for a first screen).
    """
    if not findings:
        return ""
    n = len(findings)
    lines = [
        f"**Warning: the judge's grades may say nothing** ({n} finding{'s' if n > 1 else ''} of "
        "the degenerate-judge checks): do not rely on this golden set before the judge is "
        "calibrated.",
        "",
    ]
    for f in findings:
        detail = "" if short or not f.detail else f": {f.detail}"
        lines.append(f"- {f.source}, `{f.name}`: {f.message}{detail}")
    advice = " ".join(dict.fromkeys(f.advice for f in findings))
    lines += ["", f"**What to do:** {advice}"]
    return "\n".join(lines)
