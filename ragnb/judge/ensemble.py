"""Judge ensembles: several judges grade the same pairs, one grade comes out.

:class:`EnsembleJudge` holds two judges or more (models, prompts of one model, seeds, or an LLM
and a simulated judge) on one scale. Every pair is graded by every member, each through its own
cache and ledger exactly as alone (an answered call is cached once and never sent again, a
failed call is not cached and is sent again on the next run); the ensemble's grade is the
members' majority vote or their rounded mean grade (:func:`combine_grades`), and the members'
grades stay available (:meth:`EnsembleJudge.grade_members`) so their agreement can be measured
(:func:`ensemble_agreement`).

Bergum's post answers "Why didn't you try more LLMs to have more judges, like an ensemble of
judges?" with "That is certainly an option, to use majority voting for example"; this is that
option, with its tie rule written down.

How well the members and the ensemble agree with human labels, and with each other
(:func:`ensemble_agreement`, two tables from the frames of :meth:`EnsembleJudge.grade_members`):

- against human labels (:attr:`EnsembleAgreement.table`): one row per member and one for the
  ensemble, with the pairs both graded, exact agreement, Cohen's kappa unweighted, linear and
  quadratic, Krippendorff's alpha (ordinal, interval) and Kendall's tau-b between the item
  grades;
- between the members (:attr:`EnsembleAgreement.pairwise`): one row per pair of members, the
  same statistics on the pairs both graded.

Every statistic comes from :mod:`ragnb.judge.agreement`; the tables only align the frames. No
multi-rater coefficient (Fleiss' kappa, Krippendorff's alpha over more than two coders) is
given: the pairwise table holds every pair instead.

References
----------
.. [1] Bergum, "Improving retrieval with LLM-as-a-judge" (Vespa blog): the judge calibrated on
   human labels (confusion matrix, correlation); FAQ: "an ensemble of judges ... majority
   voting".
.. [2] J. Cohen, 1960, 1968 (kappa, weighted kappa); K. Krippendorff, "Computing Krippendorff's
   Alpha-Reliability", 2011; M. G. Kendall, Biometrika 1938, 1945 (tau-b).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.judge.agreement import kendall_tau, krippendorff_alpha, weighted_kappa
from ragnb.judge.base import (
    GradeRequest,
    GradeResult,
    Judge,
    RankRequest,
    RankResult,
    grade_requests,
    grades_frame,
)
from ragnb.judge.calibration import agreement_pairs
from ragnb.judge.degenerate import JudgeFinding, check_grades
from ragnb.llm.calls import Audit
from ragnb.llm.prompts import PromptTemplate
from ragnb.measures.kernel import as_qrels_frame

__all__ = [
    "AGREEMENT_COLUMNS",
    "COMBINES",
    "TIES",
    "EnsembleAgreement",
    "EnsembleGrades",
    "EnsembleJudge",
    "combine_grades",
    "ensemble_agreement",
]

COMBINES = ("majority", "mean")
TIES = ("lower", "higher", "median")
_RESERVED = frozenset({"query_id", "doc_id", "ensemble"})


def combine_grades(grades: Sequence[int], combine: str = "majority", tie: str = "lower") -> int:
    """The ensemble grade of the members' grades of one pair.

    ``"majority"``: the grade most members gave. When several grades are given equally often
    (two members who disagree always tie), ``tie`` picks: ``"lower"`` the lowest of them (a
    conservative ensemble: a pair is as relevant as its sternest tied judge says),
    ``"higher"`` the highest, ``"median"`` the low median of all the grades
    (:func:`statistics.median_low`, always a grade some member gave).

    ``"mean"``: the mean grade rounded to the nearest integer; a mean exactly halfway between
    two grades goes down (``tie="lower"``) or up (``tie="higher"``). The arithmetic is on
    integers (sum and count), so the halfway case is exact.

    Parameters
    ----------
    grades : sequence of int, length >= 1
        The valid grades of the members, one per member that gave one.
    combine : {"majority", "mean"}, default "majority"
    tie : {"lower", "higher", "median"}, default "lower"
        ``"median"`` applies to ``"majority"`` only.

    Returns
    -------
    int
        On the members' scale (between the lowest and highest grade given).

    Raises
    ------
    InputError
        No grades, a grade that is not an integer, an unknown rule, ``"median"`` with
        ``"mean"``.

    References
    ----------
    .. [1] Bergum, "Improving retrieval with LLM-as-a-judge" (Vespa blog), FAQ: "an ensemble
       of judges ... to use majority voting for example".

    Examples
    --------
    >>> combine_grades([3, 3, 5]), combine_grades([2, 4]), combine_grades([2, 4], tie="higher")
    (3, 2, 4)
    >>> combine_grades([1, 1, 3, 5, 5], tie="median")  # 1 and 5 tie; low median of all: 3
    3
    >>> combine_grades([2, 3], "mean"), combine_grades([2, 3], "mean", "higher")  # mean 2.5
    (2, 3)
    >>> combine_grades([2, 3, 3], "mean")  # mean 2.67
    3
    """
    _check_rule(combine, tie)
    if len(grades) == 0:
        raise InputError("combine_grades needs at least one grade")
    values = []
    for g in grades:
        if isinstance(g, bool) or not isinstance(g, int):
            raise InputError(f"grades must be integers, got {g!r}")
        values.append(int(g))
    if combine == "mean":
        n = len(values)
        floor, rest = divmod(sum(values), n)
        if 2 * rest != n:
            return floor + (2 * rest > n)
        return floor + (tie == "higher")
    counts = Counter(values)
    top = max(counts.values())
    modes = sorted(g for g, c in counts.items() if c == top)
    if len(modes) == 1 or tie == "lower":
        return modes[0]
    if tie == "higher":
        return modes[-1]
    return int(statistics.median_low(values))


def _check_rule(combine: Any, tie: Any) -> None:
    if combine not in COMBINES:
        raise InputError(f"combine must be one of {COMBINES}, got {combine!r}")
    if tie not in TIES:
        raise InputError(f"tie must be one of {TIES}, got {tie!r}")
    if combine == "mean" and tie == "median":
        raise InputError("tie='median' applies to combine='majority'; use 'lower' or 'higher'")


@dataclass(frozen=True)
class EnsembleGrades:
    """What :meth:`EnsembleJudge.grade_members` returns.

    Attributes
    ----------
    grades : DataFrame
        The ensemble's results, one row per item in input order, the columns of
        :meth:`ragnb.judge.Judge.grade_many`.
    members : dict of str to DataFrame
        Each member's results by member name, same rows and columns.
    """

    grades: pd.DataFrame
    members: dict[str, pd.DataFrame]

    def wide(self) -> pd.DataFrame:
        """One row per item: ``query_id``, ``doc_id``, one Int64 column per member (its grade,
        <NA> unless valid) and ``ensemble`` (Int64)."""
        out = self.grades[["query_id", "doc_id"]].copy()
        for name, frame in self.members.items():
            out[name] = frame["grade"].array
        out["ensemble"] = self.grades["grade"].array
        return out


class EnsembleJudge(Judge):
    """Several judges grade every pair; the ensemble's grade is their majority or mean grade.

    Parameters
    ----------
    members : sequence of Judge, length >= 2
        On one scale (``scale`` equal and not None), e.g. two prompts of one model
        (:meth:`ragnb.judge.OpenAIJudge.with_prompt`), one prompt at two seeds, or an LLM and a
        :class:`~ragnb.judge.NoisyJudge`. Each keeps its cache and ledger: every call a member
        makes is cached exactly as when it judges alone.
    combine : {"majority", "mean"}, default "majority"
        How the members' valid grades become one (:func:`combine_grades`).
    tie : {"lower", "higher", "median"}, default "lower"
        The tie rule (:func:`combine_grades`); ``"median"`` for ``"majority"`` only.
    quorum : int, optional
        The least number of members with a valid grade for the ensemble to grade a pair
        (default: every member). Fewer: the pair is ``invalid``, with the members' reasons.
    names : sequence of str, optional
        A name per member, for the members' frames and the agreement tables. Default: the
        member's ``judge_id``, followed by ``/<prompt name>.<language>`` for LLM judges, and
        by ``#<position>`` when that still repeats.

    Notes
    -----
    A pair on which any member **failed** (no answer: API errors after every attempt, the
    server down) is ``failed`` in the ensemble too, with no grade, whatever the other members
    said: a grade from fewer members than asked is not recorded as the ensemble's. The answered
    members' calls are cached, so running the same items again sends only the failed ones.
    ``invalid`` member answers (unparsable, final once cached) count against ``quorum``.

    The audit columns sum the members' ``attempts`` and tokens; ``cached`` is true when every
    member's answer came from the cache, ``reminded`` and ``repeated`` when any member's did;
    ``raw`` lists each member's grade and the rule, ``prompt`` the members' prompt ids joined
    by ``";"``, ``expected_grade`` the mean of the members' expected grades when every member
    with a valid grade has one (NaN otherwise).

    :meth:`rank` orders a batch by the members' mean position (Borda count), ties in input
    order, under the same failure and quorum rules.

    References
    ----------
    .. [1] Bergum, "Improving retrieval with LLM-as-a-judge" (Vespa blog), FAQ: "an ensemble of
       judges ... to use majority voting for example".

    Examples
    --------
    Two members who disagree always tie; the default rule takes the lower grade:

    >>> from ragnb.judge import NoisyJudge, QrelsJudge
    >>> qrels = {"q": {"a": 2, "b": 0, "c": 1}}
    >>> judge = EnsembleJudge([QrelsJudge(qrels), NoisyJudge(qrels, sd=3.0, seed=1)])
    >>> out = judge.grade_members([{"query_id": "q", "doc_id": d} for d in "abc"])
    >>> out.wide()[["doc_id", "qrels-judge", "noisy-judge(sd=3,seed=1)", "ensemble"]]
      doc_id  qrels-judge  noisy-judge(sd=3,seed=1)  ensemble
    0      a            2                         1         1
    1      b            0                         0         0
    2      c            1                         0         0
    """

    def __init__(
        self,
        members: Sequence[Judge],
        *,
        combine: str = "majority",
        tie: str = "lower",
        quorum: int | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        if isinstance(members, Judge) or not isinstance(members, Sequence):
            raise InputError("members must be a list of judges")
        members = list(members)
        if len(members) < 2:
            raise InputError(f"an ensemble needs at least 2 judges, got {len(members)}")
        for i, m in enumerate(members):
            if not isinstance(m, Judge):
                raise InputError(f"member {i} is a {type(m).__name__}, not a ragnb Judge")
        _check_rule(combine, tie)
        scales = {tuple(m.scale) if m.scale else None for m in members}
        if len(scales) != 1 or None in scales:
            listed = ", ".join(f"{m.judge_id}: {m.scale}" for m in members)
            raise InputError(f"ensemble members must share one scale, got {listed}")
        if quorum is None:
            quorum = len(members)
        if isinstance(quorum, bool) or not isinstance(quorum, int):
            raise InputError(f"quorum must be an integer, got {quorum!r}")
        if not 1 <= quorum <= len(members):
            raise InputError(f"quorum must lie in [1, {len(members)}], got {quorum}")
        self.members = members
        self.names = _member_names(members, names)
        self.combine = combine
        self.tie = tie
        self.quorum = quorum
        self.scale = members[0].scale
        self.judge_id = f"ensemble-{combine}({', '.join(self.names)})"

    # -- identity

    def describe(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            **self._identity(),
            "members": [
                {"name": n, **m.describe()} for n, m in zip(self.names, self.members, strict=True)
            ],
        }

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the ensemble's grades: the class, scale, ``combine``, ``tie`` and
        ``quorum``, and each member's :meth:`~ragnb.judge.Judge.fingerprint` in order (never a
        cache path, URL or key; the member names are labels and left out)."""
        return {**self._identity(), "members": [m.fingerprint() for m in self.members]}

    def _identity(self) -> dict[str, Any]:
        """The class, the scale, a subclass's own parameters (:meth:`_own_params`) and the rule:
        what :meth:`describe` and :meth:`fingerprint` share."""
        return {
            "class": type(self).__name__,
            "scale": list(self.scale) if self.scale else None,
            **self._own_params(),
            "combine": self.combine,
            "tie": self.tie,
            "quorum": self.quorum,
        }

    def _own_params(self) -> dict[str, Any]:
        """Parameters a subclass adds to the identity (none here)."""
        return {}

    def with_sample(self, sample: int, temperature: float | None = None) -> EnsembleJudge:
        """The ensemble of its members' ``sample``-th draws (:meth:`ragnb.judge.Judge.with_sample`
        of each), with the same rule, quorum and names.

        Raises
        ------
        InputError
            A member that does not draw samples; ``sample`` or ``temperature`` out of range.
        """
        members = [m.with_sample(sample, temperature) for m in self.members]
        return EnsembleJudge(
            members, combine=self.combine, tie=self.tie, quorum=self.quorum, names=self.names
        )

    def plan(self, items: Any, *, kind: str = "grade", stage: str | None = None) -> list[Any]:
        """Every member's planned calls (:func:`ragnb.llm.ledger.estimate`), member by member."""
        return [c for m in self.members for c in m.plan(items, kind=kind, stage=stage)]

    # -- the verbs

    def grade_members(self, items: Any, *, stage: str | None = None) -> EnsembleGrades:
        """Grade ``items`` with every member and combine: the ensemble's frame and each
        member's.

        Parameters
        ----------
        items : DataFrame or list of dict
            As in :meth:`~ragnb.judge.Judge.grade_many`.
        stage : str, optional
            Ledger label of the members' calls.

        Returns
        -------
        EnsembleGrades
            ``grades`` (the ensemble, what :meth:`grade_many` returns) and ``members`` (name ->
            that member's frame), all aligned with ``items``.

        Raises
        ------
        InputError
            On a malformed item, before any call.
        JudgeUnavailable
            When a member's circuit breaker stops the job (its answered calls stay cached).
        """
        requests = grade_requests(items)
        per_member = self._member_grades(requests, stage)
        combined = self._combine_grades(requests, per_member)
        members = {n: grades_frame(rs) for n, rs in zip(self.names, per_member, strict=True)}
        return EnsembleGrades(grades_frame(combined), members)

    def _member_grades(
        self, requests: list[GradeRequest], stage: str | None
    ) -> list[list[GradeResult]]:
        # each member's own batch verb: its cache, ledger and failure handling apply as alone
        return [m._grade_batch(requests, stage) for m in self.members]

    def _grade_batch(self, requests: list[GradeRequest], stage: str | None) -> list[GradeResult]:
        return self._combine_grades(requests, self._member_grades(requests, stage))

    def _combine_grades(
        self, requests: list[GradeRequest], per_member: list[list[GradeResult]]
    ) -> list[GradeResult]:
        out = []
        for i, r in enumerate(requests):
            results = [rs[i] for rs in per_member]
            listing = ", ".join(
                f"{n}={res.grade if res.valid else res.status}"
                for n, res in zip(self.names, results, strict=True)
            )
            status, reason = self._verdict(results)
            audit = _summed_audit(results)
            prompt = ";".join(res.prompt for res in results if res.prompt)
            grade: int | None = None
            expected = math.nan
            raw = f"{self.combine} of {listing}: no grade"
            if status == "ok":
                valid = [res for res in results if res.valid and res.grade is not None]
                grade = combine_grades(
                    [int(res.grade or 0) for res in valid], self.combine, self.tie
                )
                members_expected = [res.expected_grade for res in valid]
                if all(math.isfinite(e) for e in members_expected):
                    expected = math.fsum(members_expected) / len(members_expected)
                raw = f"{self.combine} (tie: {self.tie}) of {listing} -> {grade}"
            out.append(
                self._grade_result(
                    r,
                    grade,
                    prompt=prompt,
                    expected_grade=expected,
                    valid=status == "ok",
                    status=status,
                    reason=reason,
                    raw=raw,
                    **audit,
                )
            )
        return out

    def _verdict(self, results: Sequence[Audit]) -> tuple[str, str]:
        """("ok", "") when the members' results make a grade, else the status and reason."""
        failed = [
            f"{n}: {res.reason}"
            for n, res in zip(self.names, results, strict=True)
            if res.status == "failed"
        ]
        if failed:
            return "failed", "member call failed (not recorded; sent again on the next run): " + (
                "; ".join(failed)
            )
        n_valid = sum(res.valid for res in results)
        if n_valid < self.quorum:
            why = "; ".join(
                f"{n}: {res.reason}"
                for n, res in zip(self.names, results, strict=True)
                if not res.valid
            )
            return "invalid", (
                f"{n_valid} of {len(results)} members gave a valid answer, quorum "
                f"{self.quorum}: {why}"
            )
        return "ok", ""

    def _rank_batch(self, requests: list[RankRequest], stage: str | None) -> list[RankResult]:
        per_member = [m._rank_batch(requests, stage) for m in self.members]
        out = []
        for i, r in enumerate(requests):
            results = [rs[i] for rs in per_member]
            status, reason = self._verdict(results)
            audit = _summed_audit(results)
            prompt = ";".join(res.prompt for res in results if res.prompt)
            if status != "ok":
                out.append(
                    self._rank_result(
                        r, None, prompt=prompt, valid=False, status=status, reason=reason, **audit
                    )
                )
                continue
            perms = [res.permutation for res in results if res.valid and res.permutation]
            k = len(r.doc_ids)
            mean_pos = [sum(p.index(j) for p in perms) / len(perms) for j in range(k)]
            perm = tuple(sorted(range(k), key=lambda j: (mean_pos[j], j)))
            raw = f"Borda: mean positions {[round(x, 4) for x in mean_pos]} over {len(perms)}"
            out.append(
                self._rank_result(r, perm, prompt=prompt, valid=True, status="ok", raw=raw, **audit)
            )
        return out


def _summed_audit(results: Sequence[Audit]) -> dict[str, Any]:
    """The ensemble's audit fields from its members' (besides status, reason and raw)."""
    return {
        "attempts": sum(r.attempts for r in results),
        "reminded": any(r.reminded for r in results),
        "input_tokens": sum(r.input_tokens for r in results),
        "output_tokens": sum(r.output_tokens for r in results),
        "cached": all(r.cached for r in results),
        "repeated": any(r.repeated for r in results),
    }


def _member_names(members: Sequence[Judge], names: Sequence[str] | None) -> list[str]:
    if names is not None:
        if isinstance(names, str) or len(names) != len(members):
            raise InputError(f"names must be a list of {len(members)} strings, got {names!r}")
        out = [str(n) for n in names]
        if len(set(out)) != len(out) or any(not n for n in out):
            raise InputError(f"member names must be distinct and non-empty, got {out}")
    else:
        out = []
        for m in members:
            prompt = getattr(m, "prompt", None)
            tag = f"/{prompt.name}.{prompt.language}" if isinstance(prompt, PromptTemplate) else ""
            out.append(f"{m.judge_id}{tag}")
        if len(set(out)) != len(out):
            out = [f"{n}#{i}" for i, n in enumerate(out)]
    clash = sorted(set(out) & _RESERVED)
    if clash:
        raise InputError(f"member names {clash} are reserved (columns of the tables)")
    return out


# ----------------------------------------------------------------------------- agreement

#: The statistics of both tables, in column order.
AGREEMENT_COLUMNS = (
    "exact agreement",
    "kappa",
    "kappa (linear)",
    "kappa (quadratic)",
    "alpha (ordinal)",
    "alpha (interval)",
    "kendall tau-b",
)


@dataclass(frozen=True)
class EnsembleAgreement:
    """What :func:`ensemble_agreement` returns.

    Attributes
    ----------
    table : DataFrame
        Against human labels, one row per member then ``ensemble``: ``judge`` (name), ``role``
        ("member" or "ensemble"), ``n_pairs`` (pairs with a human label and a valid grade),
        ``n_queries``, then :data:`AGREEMENT_COLUMNS` (floats; NaN where undefined).
    pairwise : DataFrame
        Between members, one row per pair: ``judge_a``, ``judge_b``, ``n_pairs`` (pairs both
        graded validly), ``n_queries``, then :data:`AGREEMENT_COLUMNS`.
    labels : tuple of int
        The grade scale the kappas were computed on.
    findings : tuple of JudgeFinding
        The degenerate-judge checks (:func:`ragnb.judge.degenerate.check_grades`) of each
        member's and the ensemble's grades, in the table's order; empty when none says
        anything suspicious.
    """

    table: pd.DataFrame
    pairwise: pd.DataFrame
    labels: tuple[int, ...]
    findings: tuple[JudgeFinding, ...] = ()


def _valid_qrels(frame: Any, name: str) -> pd.DataFrame:
    """A judge's valid grades as qrels (``query_id``, ``doc_id``, ``relevance``)."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"grades of {name!r} must be a DataFrame, got {type(frame).__name__}")
    require_columns(frame, ("query_id", "doc_id", "grade"), f"grades of {name!r}")
    keep = frame["grade"].notna()
    if "valid" in frame.columns:
        keep &= frame["valid"].astype(bool)
    ok = frame.loc[keep]
    return pd.DataFrame(
        {
            "query_id": ok["query_id"].astype(str).to_numpy(),
            "doc_id": ok["doc_id"].astype(str).to_numpy(),
            "relevance": ok["grade"].astype(np.int64).to_numpy(),
        }
    ).drop_duplicates(["query_id", "doc_id"])


def _statistics(a: np.ndarray, b: np.ndarray, labels: Sequence[int]) -> dict[str, float]:
    if a.size == 0:
        return dict.fromkeys(AGREEMENT_COLUMNS, float("nan"))
    return {
        "exact agreement": float(np.mean(a == b)),
        "kappa": weighted_kappa(a, b, weights="none", labels=labels),
        "kappa (linear)": weighted_kappa(a, b, weights="linear", labels=labels),
        "kappa (quadratic)": weighted_kappa(a, b, weights="quadratic", labels=labels),
        "alpha (ordinal)": krippendorff_alpha(a, b, level="ordinal"),
        "alpha (interval)": krippendorff_alpha(a, b, level="interval"),
        "kendall tau-b": kendall_tau(a, b).tau,
    }


def _raters(grades: Any) -> dict[str, pd.DataFrame]:
    if isinstance(grades, EnsembleGrades):
        return {**grades.members, "ensemble": grades.grades}
    if isinstance(grades, Mapping):
        return {str(k): v for k, v in grades.items()}
    raise InputError(
        f"grades must be EnsembleGrades or a dict of name to frame, got {type(grades).__name__}"
    )


def ensemble_agreement(
    human: Any, grades: Any, *, labels: Sequence[int] | None = None
) -> EnsembleAgreement:
    """Agreement of each member and of the ensemble with human labels, and between members.

    Parameters
    ----------
    human : DataFrame or dict
        Human qrels (``query_id``, ``doc_id``, ``relevance``, or ``{query_id: {doc_id:
        grade}}``) on the judges' scale (map them first, e.g.
        :func:`ragnb.measures.map_grades`).
    grades : EnsembleGrades or dict of str to DataFrame
        :meth:`ragnb.judge.EnsembleJudge.grade_members`' result, or frames by judge name with
        ``query_id``, ``doc_id``, ``grade`` (and ``valid``: invalid rows are left out); the
        name ``"ensemble"`` marks the ensemble's row, every other name is a member.
    labels : sequence of int, optional
        The grade scale, in order, for the kappas (pass the full scale so that a grade nobody
        used still counts in the distances). Default: every grade that occurs in ``human`` or
        in any judge's grades, so all rows share one scale.

    Returns
    -------
    EnsembleAgreement
        ``table`` (members then ensemble, against humans) and ``pairwise`` (between members).
        Each row uses the pairs its raters both graded; a member's invalid or failed grades
        leave its pairs out of its rows only (``n_pairs`` says how many remain). ``findings``:
        the degenerate-judge checks of each rater's grades (no rank association: the items
        carry no pooled rank).

    Raises
    ------
    InputError
        Frames without ``query_id``, ``doc_id``, ``grade``; fewer than one member; grades
        outside ``labels``.

    References
    ----------
    .. [1] Bergum, "Improving retrieval with LLM-as-a-judge" (Vespa blog).
    .. [2] Cohen 1960, 1968; Krippendorff 2011; Kendall 1938, 1945 (see
       :mod:`ragnb.judge.agreement`).

    Examples
    --------
    Two members and their ensemble (majority, ties to the lower grade) on four pairs:

    >>> import pandas as pd
    >>> human = {"q": {"a": 1, "b": 2, "c": 3, "d": 3}}
    >>> def frame(grades):
    ...     return pd.DataFrame({"query_id": "q", "doc_id": list("abcd"), "grade": grades})
    >>> out = ensemble_agreement(human, {"j1": frame([1, 2, 3, 2]), "j2": frame([1, 3, 3, 3]),
    ...                                  "ensemble": frame([1, 2, 3, 2])})
    >>> out.table[["judge", "n_pairs", "exact agreement"]].values.tolist()
    [['j1', 4, 0.75], ['j2', 4, 0.75], ['ensemble', 4, 0.75]]
    >>> out.pairwise[["judge_a", "judge_b", "exact agreement"]].values.tolist()
    [['j1', 'j2', 0.5]]
    """
    raters = _raters(grades)
    members = [n for n in raters if n != "ensemble"]
    if not members:
        raise InputError("ensemble_agreement needs the grades of at least one member")
    humans = as_qrels_frame(human)
    judged = {n: _valid_qrels(f, n) for n, f in raters.items()}
    if labels is None:
        seen = set(humans["relevance"].astype(np.int64).tolist())
        for q in judged.values():
            seen |= set(q["relevance"].tolist())
        labels = sorted(seen)
    labels = tuple(int(g) for g in labels)
    rows = []
    for name in [*members, *(["ensemble"] if "ensemble" in raters else [])]:
        pairs = agreement_pairs(humans, judged[name])
        h, j = pairs["human"].to_numpy(), pairs["judge"].to_numpy()
        rows.append(
            {
                "judge": name,
                "role": "ensemble" if name == "ensemble" else "member",
                "n_pairs": len(pairs),
                "n_queries": int(pairs["query_id"].nunique()),
                **_statistics(h, j, labels),
            }
        )
    pair_rows = []
    for a, b in itertools.combinations(members, 2):
        both = agreement_pairs(judged[a], judged[b])
        x, y = both["human"].to_numpy(), both["judge"].to_numpy()
        pair_rows.append(
            {
                "judge_a": a,
                "judge_b": b,
                "n_pairs": len(both),
                "n_queries": int(both["query_id"].nunique()),
                **_statistics(x, y, labels),
            }
        )
    pair_columns = ["judge_a", "judge_b", "n_pairs", "n_queries", *AGREEMENT_COLUMNS]
    order = [*members, *(["ensemble"] if "ensemble" in raters else [])]
    findings = tuple(
        f for name in order for f in check_grades(raters[name], source=f"grades of {name}")
    )
    return EnsembleAgreement(
        table=pd.DataFrame(
            rows, columns=["judge", "role", "n_pairs", "n_queries", *AGREEMENT_COLUMNS]
        ),
        pairwise=pd.DataFrame(pair_rows, columns=pair_columns),
        labels=labels,
        findings=findings,
    )
