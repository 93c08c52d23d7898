"""Offline judges: no model, no network, honest names.

They implement the same :class:`~ragnb.judge.Judge` verbs as the LLM judge so a pipeline can be
run and checked end to end before paying for calls. Each reports what it is in ``judge_id``,
which reports print: a golden set graded by ``"qrels-judge"`` repeats the labels it was given.

- :class:`QrelsJudge` (``"qrels-judge"``): grades and orders from existing labels.
- :class:`NoisyJudge` (``"noisy-judge(sd=..,seed=..)"``): labels plus Gaussian noise on a latent
  utility; grades round it onto the scale, orders are Plackett-Luce samples (Gumbel-max).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.provenance import sha256_json
from ragnb.errors import InputError
from ragnb.judge.base import GradeRequest, GradeResult, Judge, RankRequest, RankResult, check_sample

__all__ = ["NoisyJudge", "QrelsJudge"]


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


class _LabelJudge(Judge):
    """Shared by the judges that read grades from qrels."""

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


class QrelsJudge(_LabelJudge):
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


def _rng(seed: int, *parts: Any) -> np.random.Generator:
    blob = json.dumps([seed, *parts], ensure_ascii=False).encode("utf-8")
    return np.random.default_rng(int.from_bytes(hashlib.sha256(blob).digest()[:8], "little"))


class NoisyJudge(_LabelJudge):
    """A simulated judge: existing labels plus Gaussian noise on a latent utility.

    The latent utility of a pair is ``u = label + sd * z``, ``z ~ N(0, 1)``.

    - :meth:`grade` rounds ``u`` half up onto the scale: ``clip(floor(u + 0.5), low, high)``.
      ``z`` is drawn from a generator seeded by (``seed``, query id, doc id), so a pair always
      gets the same grade, whatever batch it comes in.
    - :meth:`rank` draws fresh ``z`` for the batch and a Plackett-Luce sample with worths
      ``exp(u_i / gumbel_scale)`` by the Gumbel-max trick: sort ``u_i + gumbel_scale * g_i``,
      ``g_i ~ Gumbel(0, 1)``, descending. The generator is seeded by (``seed``, query id, the
      batch's doc ids in order): the same batch always gets the same order.
    - :meth:`with_sample` gives a copy whose ``z`` are fresh draws (another answer of the same
      judge, for self-consistency: :class:`~ragnb.judge.SelfConsistentJudge`).

    Parameters
    ----------
    qrels : DataFrame or dict of dict
    sd : float, default 1.0
        Standard deviation of the noise, in grade units (0: the labels themselves).
    seed : int, default 0
    scale : (int, int), optional
        Default: (lowest, highest) label.
    gumbel_scale : float, default 1.0
        Temperature of the Plackett-Luce sampling (0: sort the noisy utilities).
    missing : "invalid" or int, default "invalid"
        As in :class:`QrelsJudge`.

    References
    ----------
    .. [1] R. L. Plackett, "The analysis of permutations", Applied Statistics 24(2), 1975;
       R. D. Luce, "Individual Choice Behavior", 1959.
    .. [2] E. J. Gumbel, 1954; the Gumbel-max trick: W. Kool, H. van Hoof, M. Welling,
       "Stochastic beams and where to find them", ICML 2019, section 2.
    .. [3] Dallaire (arXiv 2511.09545), section 3.4: Plackett-Luce listwise refinement.

    Examples
    --------
    >>> j = NoisyJudge({"q": {"a": 2, "b": 0}}, sd=0.0)
    >>> [r.grade for r in j.grade("query", ["A", "B"], doc_ids=["a", "b"])]
    [2, 0]
    """

    def __init__(
        self,
        qrels: Any,
        *,
        sd: float = 1.0,
        seed: int = 0,
        scale: tuple[int, int] | None = None,
        gumbel_scale: float = 1.0,
        missing: str | int = "invalid",
    ) -> None:
        super().__init__(qrels, scale, missing)
        for name, v in (("sd", sd), ("gumbel_scale", gumbel_scale)):
            if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
                raise InputError(f"{name} must be a number >= 0, got {v!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError(f"seed must be an integer, got {seed!r}")
        self.sd = float(sd)
        self.seed = seed
        self.gumbel_scale = float(gumbel_scale)
        self.sample = 0
        self.judge_id = f"noisy-judge(sd={self.sd:g},seed={seed})"

    def with_sample(self, sample: int, temperature: float | None = None) -> NoisyJudge:
        """A copy drawing the noise of its ``sample``-th answer: fresh ``z`` per pair and batch
        (the generators are seeded by (``seed``, ``sample``, ...) for ``sample > 0``; sample 0
        draws the judge's usual noise). ``temperature`` is checked and not used: ``sd`` is
        this judge's randomness.

        Raises
        ------
        InputError
            ``sample`` not an integer >= 0, ``temperature`` not a number > 0.
        """
        sample, _ = check_sample(sample, temperature)
        other = copy.copy(self)
        other.sample = sample
        return other

    def _draw(self, *parts: Any) -> np.random.Generator:
        return _rng(self.seed, *parts) if not self.sample else _rng(self.seed, self.sample, *parts)

    def utility(self, query_id: str, doc_id: str) -> float | None:
        """The latent utility :meth:`grade` rounds (None when unjudged and invalid)."""
        g = self._label(query_id, doc_id)
        if g is None:
            return None
        z = self._draw("grade", query_id, doc_id).standard_normal()
        return g + self.sd * float(z)

    def _grade_one(self, r: GradeRequest, g: int) -> tuple[int, str]:
        lo, hi = self.scale or (0, 1)
        u = self.utility(r.query_id, r.doc_id) or 0.0  # never None: the pair has label g
        grade = int(min(hi, max(lo, math.floor(u + 0.5))))
        return grade, f"noisy utility {u:.4f} -> {grade}"

    def _order(self, r: RankRequest, labels: list[int]) -> tuple[tuple[int, ...], str]:
        rng = self._draw("rank", r.query_id, list(r.doc_ids))
        u = np.array(labels, dtype=float) + self.sd * rng.standard_normal(len(labels))
        keys = u + self.gumbel_scale * rng.gumbel(size=len(labels))
        perm = tuple(int(i) for i in np.argsort(-keys, kind="stable"))
        raw = (
            f"noisy utilities {np.round(u, 4).tolist()}, Gumbel-max keys "
            f"{np.round(keys, 4).tolist()}"
        )
        return perm, raw

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"sd": self.sd, "seed": self.seed, "gumbel_scale": self.gumbel_scale})
        if self.sample:
            info["sample"] = self.sample
        return info
