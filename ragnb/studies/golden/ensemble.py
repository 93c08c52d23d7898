"""How well a judge ensemble and each of its members agree with human labels, and with each other.

Two tables from the frames of :meth:`ragnb.judge.EnsembleJudge.grade_members`:

- against human labels (:attr:`EnsembleAgreement.table`): one row per member and one for the
  ensemble, with the pairs both graded, exact agreement, Cohen's kappa unweighted, linear and
  quadratic, Krippendorff's alpha (ordinal, interval) and Kendall's tau-b between the item
  grades;
- between the members (:attr:`EnsembleAgreement.pairwise`): one row per pair of members, the
  same statistics on the pairs both graded.

Every statistic comes from :mod:`ragnb.judge.agreement`; this module only aligns the frames.
No multi-rater coefficient (Fleiss' kappa, Krippendorff's alpha over more than two coders) is
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.judge.agreement import kendall_tau, krippendorff_alpha, weighted_kappa
from ragnb.judge.degenerate import JudgeFinding, check_grades
from ragnb.judge.ensemble import EnsembleGrades
from ragnb.measures.kernel import as_qrels_frame
from ragnb.studies.golden.calibration import agreement_pairs

__all__ = ["AGREEMENT_COLUMNS", "EnsembleAgreement", "ensemble_agreement"]

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
