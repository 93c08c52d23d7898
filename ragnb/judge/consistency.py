"""Self-consistency: one judge grades every pair several times, and agrees with itself or not.

:class:`SelfConsistentJudge` wraps a judge that samples (an :class:`~ragnb.judge.OpenAIJudge` at
a temperature above 0, a :class:`~ragnb.judge.NoisyJudge`): it draws ``samples`` answers to
every pair (:meth:`ragnb.judge.Judge.with_sample`, each sample its own cache entry) and combines
them by the rules of :class:`~ragnb.judge.EnsembleJudge` (majority or mean, a tie rule, a
quorum), of which it is one: the samples are its members. :func:`self_agreement` measures how
far the samples agree: Cohen's kappa between every two samples (their mean) and
Krippendorff's alpha over all of them. A judge whose samples disagree grades by chance as much
as by the passage; its agreement with people cannot be higher than its agreement with itself.
:func:`consistency_table` puts the samples' agreement with each other beside each sample's and
the majority's agreement with human labels (:func:`ragnb.judge.ensemble.ensemble_agreement`).

References
----------
.. [1] X. Wang, J. Wei, D. Schuurmans et al., "Self-Consistency Improves Chain of Thought
   Reasoning in Language Models", ICLR 2023: answers sampled at a temperature above 0, combined
   by a majority vote.
.. [2] J. Cohen, "A coefficient of agreement for nominal scales", 1960; "Weighted kappa", 1968.
.. [3] K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011, Section C (any
   number of coders, missing values).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge.agreement import STATISTICS, krippendorff_alpha_coders, weighted_kappa
from ragnb.judge.base import Judge
from ragnb.judge.ensemble import (
    AGREEMENT_COLUMNS,
    EnsembleGrades,
    EnsembleJudge,
    ensemble_agreement,
)

__all__ = ["SELF_AGREEMENT", "SelfConsistentJudge", "consistency_table", "self_agreement"]

#: The statistics of :func:`self_agreement`, in row order: the first four are means over every
#: two samples, the alphas are over all samples at once.
SELF_AGREEMENT = tuple(s for s in STATISTICS if s != "within one grade")
_WEIGHTS = {"kappa": "none", "kappa (linear)": "linear", "kappa (quadratic)": "quadratic"}


class SelfConsistentJudge(EnsembleJudge):
    """A judge that grades every pair ``samples`` times and combines the answers.

    Parameters
    ----------
    judge : Judge
        A judge that draws samples (:meth:`~ragnb.judge.Judge.with_sample`): an
        :class:`~ragnb.judge.OpenAIJudge` (each sample at ``temperature``, its own cache entry:
        the call's key holds the sample index from 1 on, so sample 0 answers from the cache of
        the judge at that temperature), a :class:`~ragnb.judge.NoisyJudge` (fresh noise per
        sample), an :class:`~ragnb.judge.EnsembleJudge` of such judges. A
        :class:`~ragnb.judge.QrelsJudge` repeats its labels: its samples agree perfectly.
    samples : int >= 2, default 3
        Answers per pair.
    temperature : float > 0 or None, default 0.7
        Sampling temperature of an LLM judge (None: the judge's own, which should then be above
        0); offline judges do not use it.
    combine : {"majority", "mean"}, default "majority"
    tie : {"lower", "higher", "median"}, default "lower"
    quorum : int, optional
        As in :class:`~ragnb.judge.EnsembleJudge`, counted in samples (default: all of them).

    Attributes
    ----------
    judge : Judge
        The judge sampled.
    members : list of Judge
        ``judge.with_sample(i, temperature)`` for i in 0 .. samples - 1, named ``"sample i"``.
    judge_id : str
        ``"self-consistent-<combine>(<judge id>, samples=<n>, temperature=<t>)"``.

    Notes
    -----
    Every rule of :class:`~ragnb.judge.EnsembleJudge` applies, the samples in the members'
    place: a pair on which a sample **failed** is failed (sent again on the next run, the
    answered samples from the cache), :meth:`grade_members` returns each sample's frame
    beside the combined one (for :func:`self_agreement`), :meth:`rank` orders a batch by the
    samples' mean position. :meth:`plan` lists every sample's calls, so
    :func:`ragnb.llm.ledger.estimate` prices them all.

    References
    ----------
    .. [1] Wang et al., ICLR 2023 (self-consistency).
    .. [2] S. Upadhyay, R. Pradeep, N. Thakur, N. Craswell and J. Lin, "UMBRELA: UMbrela is the
       (Open-Source Reproduction of the) Bing RELevance Assessor", arXiv:2406.06519, 2024: an
       LLM relevance assessor whose users ask for n samples per pair with a vote.

    Examples
    --------
    >>> from ragnb.judge import NoisyJudge
    >>> qrels = {"q": {"a": 2, "b": 0, "c": 1}}
    >>> judge = SelfConsistentJudge(NoisyJudge(qrels, sd=0.8, seed=3), samples=3)
    >>> out = judge.grade_members([{"query_id": "q", "doc_id": d} for d in "abc"])
    >>> out.wide().drop(columns="query_id")
      doc_id  sample 0  sample 1  sample 2  ensemble
    0      a         2         1         2         2
    1      b         2         1         0         0
    2      c         1         2         0         0

    Pair ``b`` got three different grades: the majority rule's tie goes to the lowest.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        samples: int = 3,
        temperature: float | None = 0.7,
        combine: str = "majority",
        tie: str = "lower",
        quorum: int | None = None,
    ) -> None:
        if not isinstance(judge, Judge):
            raise InputError(f"judge must be a ragnb Judge, got {type(judge).__name__}")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
            raise InputError(
                f"samples must be an integer >= 2 (self-consistency compares answers), got "
                f"{samples!r}",
                column="samples",
            )
        members = [judge.with_sample(i, temperature) for i in range(samples)]
        super().__init__(
            members,
            combine=combine,
            tie=tie,
            quorum=quorum,
            names=[f"sample {i}" for i in range(samples)],
        )
        self.judge = judge
        self.samples = samples
        self.temperature = None if temperature is None else float(temperature)
        t = "own" if self.temperature is None else f"{self.temperature:g}"
        self.judge_id = (
            f"self-consistent-{combine}({judge.judge_id}, samples={samples}, temperature={t})"
        )

    def describe(self) -> dict[str, Any]:
        """The judge sampled (its :meth:`~ragnb.judge.Judge.describe`), ``samples``,
        ``temperature`` and the ensemble's rule."""
        return {
            "judge_id": self.judge_id,
            **self._identity(),
            "judge": self.judge.describe(),
        }

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the grades: the class, scale, ``samples``, ``temperature``, the rule
        and the sampled judge's :meth:`~ragnb.judge.Judge.fingerprint`."""
        return {**self._identity(), "judge": self.judge.fingerprint()}

    def _own_params(self) -> dict[str, Any]:
        return {"samples": self.samples, "temperature": self.temperature}


def _sample_matrix(grades: Any) -> tuple[np.ndarray, list[str]]:
    """The samples' valid grades, aligned by row: shape (n_items, n_samples), NaN unless valid."""
    if isinstance(grades, EnsembleGrades):
        frames = dict(grades.members)
    elif isinstance(grades, Mapping):
        frames = {str(k): v for k, v in grades.items()}
    else:
        raise InputError(
            f"grades must be EnsembleGrades or a dict of name to frame, got {type(grades).__name__}"
        )
    if len(frames) < 2:
        raise InputError(f"self-agreement needs at least 2 samples, got {len(frames)}")
    cols, keys = [], None
    for name, frame in frames.items():
        if not isinstance(frame, pd.DataFrame) or not {"query_id", "doc_id", "grade"} <= set(
            frame.columns
        ):
            raise InputError(f"grades of {name!r} must be a frame with query_id, doc_id, grade")
        these = list(zip(frame["query_id"].astype(str), frame["doc_id"].astype(str), strict=True))
        if keys is None:
            keys = these
        elif these != keys:
            raise InputError(f"grades of {name!r} are not aligned with the first sample's rows")
        g = frame["grade"].astype("Float64")
        if "valid" in frame.columns:
            g = g.where(frame["valid"].astype(bool))
        cols.append(g.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.column_stack(cols), list(frames)


def self_agreement(grades: Any, *, labels: Sequence[int] | None = None) -> pd.DataFrame:
    """How far a judge's samples of the same pairs agree with each other.

    Parameters
    ----------
    grades : EnsembleGrades or dict of str to DataFrame
        :meth:`SelfConsistentJudge.grade_members`' result, or one frame per sample with
        ``query_id``, ``doc_id``, ``grade`` (and ``valid``), rows aligned. An invalid or failed
        grade is missing: it leaves its pair out of that sample's comparisons only.
    labels : sequence of int, optional
        The grade scale for the kappas' distances (default: the grades that occur).

    Returns
    -------
    DataFrame
        One row per statistic of :data:`SELF_AGREEMENT`: ``statistic``, ``value`` (float; NaN
        where undefined), ``over`` ("mean over sample pairs": exact agreement and Cohen's
        kappa, unweighted, linear and quadratic, averaged over every two samples on the pairs
        both graded; "all samples": Krippendorff's alpha among all samples, missing values
        allowed), ``n_pairs`` (int, pairs with at least two valid samples), ``n_samples``.

    Raises
    ------
    InputError
        Fewer than two samples, frames without the columns or not aligned, grades outside
        ``labels``.

    References
    ----------
    .. [1] Cohen 1960, 1968 (kappa, weighted kappa); Krippendorff 2011, Section C.

    Examples
    --------
    Three samples of four pairs; samples 0 and 1 agree on all, sample 2 on half:

    >>> import pandas as pd
    >>> def frame(g):
    ...     return pd.DataFrame({"query_id": "q", "doc_id": list("abcd"), "grade": g})
    >>> out = self_agreement({"s0": frame([0, 1, 2, 2]), "s1": frame([0, 1, 2, 2]),
    ...                       "s2": frame([0, 1, 0, 0])}).set_index("statistic")
    >>> round(float(out.loc["exact agreement", "value"]), 4), (1 + 0.5 + 0.5) / 3
    (0.6667, 0.6666666666666666)
    """
    matrix, names = _sample_matrix(grades)
    valid = ~np.isnan(matrix)
    rows: list[dict[str, Any]] = []
    per_pair: dict[str, list[float]] = {s: [] for s in ("exact agreement", *_WEIGHTS)}
    for i, j in itertools.combinations(range(len(names)), 2):
        both = valid[:, i] & valid[:, j]
        a, b = matrix[both, i].astype(np.int64), matrix[both, j].astype(np.int64)
        if a.size == 0:
            continue
        per_pair["exact agreement"].append(float(np.mean(a == b)))
        for stat, w in _WEIGHTS.items():
            per_pair[stat].append(weighted_kappa(a, b, weights=w, labels=labels))  # type: ignore[arg-type]
    n_pairs = int((valid.sum(axis=1) >= 2).sum())
    for stat, values in per_pair.items():
        finite = [v for v in values if not math.isnan(v)]
        value = math.fsum(finite) / len(finite) if finite else math.nan
        rows.append({"statistic": stat, "value": value, "over": "mean over sample pairs"})
    for level in ("nominal", "ordinal", "interval"):
        alpha = krippendorff_alpha_coders(matrix, level=level)  # type: ignore[arg-type]
        rows.append({"statistic": f"alpha ({level})", "value": alpha, "over": "all samples"})
    out = pd.DataFrame(rows, columns=["statistic", "value", "over"])
    out["n_pairs"] = n_pairs
    out["n_samples"] = len(names)
    return out


def consistency_table(
    grades: EnsembleGrades,
    *,
    human: Any = None,
    labels: Sequence[int] | None = None,
    combined: str = "ensemble",
) -> pd.DataFrame:
    """The samples' agreement with each other, and each sample's and their combination's
    agreement with human labels, in one table.

    Parameters
    ----------
    grades : EnsembleGrades
        :meth:`SelfConsistentJudge.grade_members`' result.
    human : DataFrame or dict, optional
        Human qrels on the judge's scale; adds one row per sample and one for the combination.
    labels : sequence of int, optional
        The grade scale (pass the judge's full scale).
    combined : str, default "ensemble"
        The name of the combination's row (e.g. ``"majority of 3"``).

    Returns
    -------
    DataFrame
        One row per comparison: ``rater`` ("samples with each other", each sample's name,
        ``combined``), ``against`` ("itself" or "human labels"), ``n_pairs``, then
        :data:`ragnb.judge.ensemble.AGREEMENT_COLUMNS` (the self row: exact agreement and the
        kappas averaged over every two samples (:func:`self_agreement`), the alphas among all
        samples; Kendall's tau-b NaN).
    """
    own = self_agreement(grades, labels=labels)
    values = own.set_index("statistic")["value"]
    rows = [
        {
            "rater": "samples with each other",
            "against": "itself",
            "n_pairs": int(own["n_pairs"].iloc[0]),
            **{c: float(values.get(c, np.nan)) for c in AGREEMENT_COLUMNS},
        }
    ]
    if human is not None:
        agree = ensemble_agreement(human, grades, labels=labels).table
        for _, r in agree.iterrows():
            rows.append(
                {
                    "rater": combined if r["judge"] == "ensemble" else r["judge"],
                    "against": "human labels",
                    "n_pairs": int(r["n_pairs"]),
                    **{c: float(r[c]) for c in AGREEMENT_COLUMNS},
                }
            )
    return pd.DataFrame(rows, columns=["rater", "against", "n_pairs", *AGREEMENT_COLUMNS])
