"""Offline judges: no model, no network, honest names.

They implement the same :class:`~ragnb.judge.Judge` verbs as the LLM judge so a pipeline can be
run and checked end to end before paying for calls. Each reports what it is in ``judge_id``,
which reports print: a golden set graded by ``"qrels-judge"`` repeats the labels it was given.

- :class:`QrelsJudge` (``"qrels-judge"``): grades and orders from existing labels.
- :class:`~ragnb.judge.simulated.NoisyJudge` (``"noisy-judge(sd=..,seed=..)"``), the simulated
  judge: labels seen through noise (:mod:`ragnb.judge.simulated`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ragnb.core.provenance import sha256_json
from ragnb.errors import InputError
from ragnb.judge.base import GradeRequest, GradeResult, Judge, RankRequest, RankResult, check_sample

__all__ = ["LabelJudge", "QrelsJudge"]


def _labels(qrels: Any) -> dict[tuple[str, str], int]:
    from ragnb.frames.schema import check_qrels, qrels_from_dict

    if isinstance(qrels, Mapping):
        qrels = qrels_from_dict(qrels)
    if not isinstance(qrels, pd.DataFrame):
        raise InputError(f"qrels must be a DataFrame or a dict of dicts, got {type(qrels)}")
    check_qrels(qrels)
    return {
        (str(q), str(d)): int(r)
        for q, d, r in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True)
    }


def _scale(labels: Mapping[Any, int], scale: tuple[int, int] | None) -> tuple[int, int]:
    if scale is not None:
        if len(scale) != 2 or not all(type(x) is int for x in scale) or scale[0] >= scale[1]:
            raise InputError(f"scale must be (low, high) integers, low < high, got {scale!r}")
        return (int(scale[0]), int(scale[1]))
    if not labels:
        raise InputError("qrels are empty: give a scale")
    lo, hi = min(labels.values()), max(labels.values())
    return (lo, hi) if lo < hi else (lo, lo + 1)


def _check_missing(missing: str | int) -> str | int:
    if missing == "invalid" or (type(missing) is int):
        return missing
    raise InputError(f"missing must be 'invalid' or an integer grade, got {missing!r}")


class LabelJudge(Judge):
    """The base of the judges that read their answers from labels (:class:`QrelsJudge`,
    :class:`~ragnb.judge.simulated.NoisyJudge`).

    Parameters
    ----------
    qrels : DataFrame or dict of dict
        Columns ``query_id``, ``doc_id``, ``relevance`` (or ``{qid: {docid: grade}}``).
    scale : (int, int) or None
        Default: (lowest, highest) label.
    missing : "invalid" or int
        What an unjudged pair is: an invalid result, or this grade.
    """

    def __init__(self, qrels: Any, scale: tuple[int, int] | None, missing: str | int) -> None:
        self._qrels = _labels(qrels)
        self.scale = _scale(self._qrels, scale)
        self.missing = _check_missing(missing)

    def _label(self, qid: str, did: str) -> int | None:
        g = self._qrels.get((qid, did))
        if g is None and self.missing != "invalid":
            return int(self.missing)
        return g

    def _grade_one(self, r: GradeRequest, g: int) -> tuple[int, str]:
        """The grade of a pair whose label is ``g``, and how it was made (``raw``)."""
        raise NotImplementedError

    def _order(self, r: RankRequest, labels: list[int]) -> tuple[tuple[int, ...], str]:
        """The permutation of a batch whose labels are ``labels``, and how it was made."""
        raise NotImplementedError

    def _grade_batch(self, requests: list[GradeRequest], stage: str | None) -> list[GradeResult]:
        out = []
        for r in requests:
            g = self._label(r.query_id, r.doc_id)
            if g is None:
                reason = "unjudged: no qrels label for this pair (missing='invalid')"
                out.append(self._invalid_grade(r, reason))
                continue
            grade, raw = self._grade_one(r, g)
            out.append(self._grade_result(r, grade, valid=True, status="ok", raw=raw))
        return out

    def _rank_batch(self, requests: list[RankRequest], stage: str | None) -> list[RankResult]:
        out = []
        for r in requests:
            labels = [self._label(r.query_id, d) for d in r.doc_ids]
            unjudged = [d for d, g in zip(r.doc_ids, labels, strict=True) if g is None]
            if unjudged:
                reason = f"unjudged document(s) {unjudged} (missing='invalid')"
                out.append(self._invalid_rank(r, reason))
                continue
            perm, raw = self._order(r, [int(g or 0) for g in labels])
            out.append(self._rank_result(r, perm, valid=True, status="ok", raw=raw))
        return out

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"labels": len(self._qrels), "missing": self.missing})
        return info

    def fingerprint(self) -> dict[str, Any]:
        """:meth:`Judge.fingerprint` plus ``labels_sha256``: SHA-256 of the sorted
        ``(query_id, doc_id, grade)`` triples of the labels."""
        info = super().fingerprint()
        info["labels_sha256"] = sha256_json(sorted((q, d, g) for (q, d), g in self._qrels.items()))
        return info


class QrelsJudge(LabelJudge):
    """Grades and orders from existing relevance labels (to validate a pipeline).

    Parameters
    ----------
    qrels : DataFrame or dict of dict
        Columns ``query_id``, ``doc_id``, ``relevance`` (or ``{qid: {docid: grade}}``).
    scale : (int, int), optional
        Default: (lowest, highest) label.
    missing : "invalid" or int, default "invalid"
        An unjudged pair is an invalid result (default), or gets this grade (e.g. 0, as
        trec_eval treats unjudged documents).

    Notes
    -----
    :meth:`rank` sorts by label, highest first; ties keep the input order. Results carry
    ``raw`` = ``"qrels label <g>"``.
    """

    def __init__(
        self, qrels: Any, *, scale: tuple[int, int] | None = None, missing: str | int = "invalid"
    ) -> None:
        super().__init__(qrels, scale, missing)
        self.judge_id = "qrels-judge"

    def with_sample(self, sample: int, temperature: float | None = None) -> QrelsJudge:
        """The judge itself: labels are the same at every draw (``temperature`` is checked and
        not used)."""
        check_sample(sample, temperature)
        return self

    def _grade_one(self, r: GradeRequest, g: int) -> tuple[int, str]:
        judged = (r.query_id, r.doc_id) in self._qrels
        return g, f"qrels label {g}" if judged else f"unjudged: default grade {g}"

    def _order(self, r: RankRequest, labels: list[int]) -> tuple[tuple[int, ...], str]:
        perm = tuple(sorted(range(len(labels)), key=lambda i: -labels[i]))
        return perm, f"qrels labels {labels}, sorted highest first, ties in input order"
