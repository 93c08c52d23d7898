"""Auditing a judge's grades for bias: passage length, query-term overlap, position.

LLM judges are known to over-grade, to grade long passages and passages that repeat the query's
words higher whatever they say, and, judging lists, to favour some positions. Three functions
measure it on grades already made:

- :func:`passage_features`: each pair's passage length in words and the share of the query's
  terms the passage contains;
- :func:`bias_audit`: the least-squares slope of the grade against each feature, with a
  bootstrap interval over queries, and where human labels exist the slope of the judge's error
  (judge grade - human grade) against the same features: the bias that matters, since a
  relevant passage may well be longer or share more words with the query;
- :func:`position_audit`: the same batches ordered by a listwise judge in their original,
  reversed and shuffled orders: how far each passage's rank moves, and a randomization test of
  whether ranks follow input positions.

References
----------
.. [1] arXiv:2602.17170 (LLM relevance judges over-grade; their grades follow passage length and
   lexical overlap with the query).
.. [2] W. Sun et al., "Is ChatGPT Good at Search? Investigating Large Language Models as
   Re-Ranking Agents", EMNLP 2023 (listwise rankers depend on the input order; evaluated with
   reversed and shuffled inputs).
.. [3] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, Chapter 13
   (percentile interval); resampling whole queries (clusters), Section 8.4.
.. [4] E. J. G. Pitman, "Significance tests which may be applied to samples from any
   populations", 1937 (randomization tests).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.judge.agreement import check_bootstrap, percentile_interval, resampled_sums
from ragnb.judge.base import Judge, rank_requests
from ragnb.measures.kernel import as_qrels_frame

__all__ = [
    "BIAS_COLUMNS",
    "FEATURES",
    "PositionAudit",
    "bias_audit",
    "passage_features",
    "position_audit",
    "position_items",
]

#: Feature column -> the unit of a slope against it.
FEATURES = {
    "words": "grade per 100 words",
    "overlap": "grade per unit of overlap (0 to 1)",
}
#: The columns of :func:`bias_audit`'s table.
BIAS_COLUMNS = (
    "target",
    "feature",
    "unit",
    "slope",
    "low",
    "high",
    "n_pairs",
    "n_queries",
    "ci",
    "n_boot",
)
_SCALE = {"words": 100.0, "overlap": 1.0}
_TERM = re.compile(r"\w+")


def _terms(text: Any) -> set[str]:
    return set(_TERM.findall(text.lower())) if isinstance(text, str) else set()


def passage_features(items: pd.DataFrame) -> pd.DataFrame:
    """Each pair's passage length and its share of the query's terms.

    Parameters
    ----------
    items : DataFrame
        ``query``, ``passage`` (text), and any other columns (kept).

    Returns
    -------
    DataFrame
        ``items`` with ``words`` (int: white-space separated words of the passage) and
        ``overlap`` (float in [0, 1]: the share of the query's distinct terms, lower-cased word
        tokens ``\\w+`` without stemming or stop list, found among the passage's; NaN for a
        query without terms).

    Raises
    ------
    InputError
        Without a ``query`` or ``passage`` column.

    Examples
    --------
    >>> f = passage_features(pd.DataFrame({"query": ["BM25 ranking"],
    ...                                    "passage": ["BM25 is a ranking function."]}))
    >>> f[["words", "overlap"]].values.tolist()
    [[5.0, 1.0]]
    """
    require_columns(items, ("query", "passage"), "items")
    out = items.copy()
    out["words"] = [
        float(len(p.split())) if isinstance(p, str) else math.nan for p in items["passage"]
    ]
    overlap = []
    for q, p in zip(items["query"], items["passage"], strict=True):
        terms = _terms(q)
        overlap.append(len(terms & _terms(p)) / len(terms) if terms else math.nan)
    out["overlap"] = overlap
    return out


# ----------------------------------------------------------------------------- slopes


def _slopes(sums: np.ndarray) -> np.ndarray:
    """Least-squares slope of y on x from sums ``(n, Sx, Sy, Sxx, Sxy)``, shape (..., 5):
    ``(n Sxy - Sx Sy) / (n Sxx - Sx^2)``, NaN when x does not vary."""
    n, sx, sy, sxx, sxy = np.moveaxis(sums, -1, 0)
    den = n * sxx - sx * sx
    out = np.full(np.shape(den), np.nan)
    np.divide(n * sxy - sx * sy, den, out=out, where=den > 1e-12 * np.maximum(n * sxx, 1.0))
    return out


def _slope_row(
    x: np.ndarray, y: np.ndarray, queries: np.ndarray, n_boot: int, ci: float, seed: int | None
) -> dict[str, Any]:
    keep = np.isfinite(x) & np.isfinite(y)
    x, y, queries = x[keep], y[keep], queries[keep]
    codes, uniques = pd.factorize(pd.Series(queries, dtype=object), sort=True)
    tables = np.zeros((len(uniques), 5))
    for col, values in enumerate((np.ones_like(x), x, y, x * x, x * y)):
        np.add.at(tables[:, col], codes, values)
    slope = float(_slopes(tables.sum(axis=0))) if len(x) else math.nan
    low = high = math.nan
    valid = 0
    if n_boot and len(uniques):
        boot = np.concatenate(
            [_slopes(b) for b in resampled_sums(tables, n_boot, np.random.default_rng(seed))]
        )
        lo, hi, va = percentile_interval(boot[:, None], ci)
        low, high, valid = float(lo[0]), float(hi[0]), int(va[0])
    return {
        "slope": slope,
        "low": low,
        "high": high,
        "n_pairs": len(x),
        "n_queries": len(uniques),
        "ci": float(ci),
        "n_boot": valid,
    }


def bias_audit(
    grades: pd.DataFrame,
    *,
    human: Any = None,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Slopes of a judge's grades, and of its errors, against passage length and query overlap.

    For each target and feature: the ordinary least-squares slope ``cov(x, y) / var(x)`` over
    the pairs, and its percentile bootstrap interval resampling whole queries (the pairs of one
    query share its difficulty). Length is counted in white-space separated words and the slope
    given per 100 words; overlap is the share of the query's terms in the passage
    (:func:`passage_features`), its slope per unit (from none to all of the query's terms).

    Parameters
    ----------
    grades : DataFrame
        One row per pair: ``query_id``, ``doc_id``, ``query``, ``passage`` (texts) and
        ``grade`` (rows with a missing grade, or ``valid`` false, are left out), e.g.
        :meth:`ragnb.judge.Judge.grade_many`'s frame joined with its items.
    human : DataFrame or dict, optional
        Human qrels on the judge's scale (``query_id``, ``doc_id``, ``relevance``, or
        ``{query_id: {doc_id: grade}}``): adds the rows of ``grade - human`` on the pairs that
        carry a label.
    n_boot : int >= 0, default 1000
        Bootstrap resamples (0: no interval).
    ci : float in (0, 1), default 0.95
    seed : int or None, default 0

    Returns
    -------
    DataFrame
        Columns :data:`BIAS_COLUMNS`: ``target`` ("grade", or "grade - human"), ``feature``
        ("words", "overlap"), ``unit`` (what a slope of 1 means, :data:`FEATURES`), ``slope``
        (float, grade units per unit; NaN when the feature does not vary), ``low``, ``high``
        (the interval; NaN with ``n_boot=0``), ``n_pairs``, ``n_queries``, ``ci``, ``n_boot``
        (resamples where the slope is defined). An interval that excludes 0 says the grades (or
        errors) follow the feature beyond sampling noise.

    Raises
    ------
    InputError
        Missing columns; ``n_boot``, ``ci`` or ``seed`` out of range.

    References
    ----------
    .. [1] arXiv:2602.17170 (length and lexical-overlap bias of LLM relevance judges).
    .. [2] Efron and Tibshirani 1993, Chapter 13 and Section 8.4.

    Examples
    --------
    A judge that adds one grade per 100 words:

    >>> g = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2"], "doc_id": list("abcd"),
    ...                   "query": "x", "passage": ["w " * 100, "w " * 200, "w " * 100, ""],
    ...                   "grade": [1, 2, 1, 0]})
    >>> round(float(bias_audit(g, n_boot=0).set_index("feature").loc["words", "slope"]), 4)
    1.0
    """
    require_columns(grades, ("query_id", "doc_id", "query", "passage", "grade"), "grades")
    check_bootstrap(n_boot, ci, seed)
    keep = grades["grade"].notna()
    if "valid" in grades.columns:
        keep &= grades["valid"].astype(bool)
    frame = passage_features(grades.loc[keep].reset_index(drop=True))
    frame["query_id"] = frame["query_id"].astype(str)
    frame["doc_id"] = frame["doc_id"].astype(str)
    judge = frame["grade"].to_numpy(dtype=np.float64)
    targets = {"grade": judge}
    if human is not None:
        h = as_qrels_frame(human)
        label = pd.Series(
            h["relevance"].to_numpy(dtype=np.float64),
            index=pd.MultiIndex.from_arrays([h["query_id"].astype(str), h["doc_id"].astype(str)]),
        )
        label = label[~label.index.duplicated()]
        idx = pd.MultiIndex.from_arrays([frame["query_id"], frame["doc_id"]])
        targets["grade - human"] = judge - label.reindex(idx).to_numpy(dtype=np.float64)
    queries = frame["query_id"].to_numpy(dtype=object)
    rows = []
    for target, y in targets.items():
        for feature, unit in FEATURES.items():
            x = frame[feature].to_numpy(dtype=np.float64) / _SCALE[feature]
            row = _slope_row(x, y, queries, n_boot, ci, seed)
            rows.append({"target": target, "feature": feature, "unit": unit, **row})
    return pd.DataFrame(rows, columns=list(BIAS_COLUMNS))


# ----------------------------------------------------------------------------- position


@dataclass(frozen=True)
class PositionAudit:
    """What :func:`position_audit` returns.

    Attributes
    ----------
    ranks : DataFrame
        One row per passage of every valid answer: ``query_id``, ``batch_id``, ``order``
        ("original", "reversed", "shuffled 1", ...), ``doc_id``, ``position`` (int, 0-based
        place in the input), ``rank`` (int, 0-based place in the judge's answer).
    summary : DataFrame
        One row per order other than "original": ``order``, ``n_batches`` (batches answered
        validly in it and in the original), ``mean_abs_rank_change`` (float, positions: the
        mean over their passages of ``|rank - rank in the original order|``; 0 for a judge that
        reads only the passages).
    correlation : float in [-1, 1]
        Pearson's correlation, pooled over batches, between a passage's input position and its
        rank, both centred on the passage's mean over the orders (what is left once the
        passage's own merit is taken out): 1 when ranks follow positions, 0 when they ignore
        them. NaN without a batch answered in two orders or more.
    p_value : float in (0, 1]
        One-sided randomization test of "ranks follow positions": within each batch the
        answers are exchanged among the orders at random (under the null hypothesis the order
        of the input does not change the answer); the share of ``n_permutations`` exchanges
        whose correlation reaches the observed one, ``(1 + count) / (1 + n_permutations)``.
    n_permutations : int
    n_batches : int
        Batches answered validly in two orders or more.
    n_invalid : int
        Answers that were invalid or failed (left out).
    """

    ranks: pd.DataFrame
    summary: pd.DataFrame
    correlation: float
    p_value: float
    n_permutations: int
    n_batches: int
    n_invalid: int


def _variants(
    requests: Sequence[Any], shuffles: int, rng: np.random.Generator
) -> tuple[list[dict[str, Any]], list[tuple[int, str, list[int]]]]:
    rows, index = [], []
    for i, r in enumerate(requests):
        k = len(r.doc_ids)
        orders = {"original": list(range(k)), "reversed": list(range(k))[::-1]}
        for s in range(1, shuffles + 1):
            orders[f"shuffled {s}"] = [int(j) for j in rng.permutation(k)]
        for name, perm in orders.items():
            rows.append(
                {
                    "query_id": r.query_id,
                    "batch_id": f"{r.batch_id}/{name}",
                    "doc_ids": [r.doc_ids[j] for j in perm],
                    "query": r.query,
                    "passages": None if r.passages is None else [r.passages[j] for j in perm],
                    **dict(r.fields),
                }
            )
            index.append((i, name, perm))
    return rows, index


def position_items(items: Any, *, shuffles: int = 1, seed: int | None = 0) -> list[dict[str, Any]]:
    """The batches :func:`position_audit` sends for ``items`` with the same ``shuffles`` and
    ``seed``: each batch in its original, reversed and shuffled orders (what a cost estimate
    prices before the audit runs)."""
    rows, _ = _variants(rank_requests(items), shuffles, np.random.default_rng(seed))
    return rows


def _position_test(
    ranks: pd.DataFrame, n_permutations: int, rng: np.random.Generator
) -> tuple[float, float, int]:
    """(correlation, p-value, batches) of :class:`PositionAudit`."""
    centred = []
    for _, batch in ranks.groupby(["query_id", "batch_id"], sort=True):
        pos = batch.pivot(index="order", columns="doc_id", values="position")
        rank = batch.pivot(index="order", columns="doc_id", values="rank")
        if len(pos) < 2 or pos.isna().any().any():
            continue
        p = pos.to_numpy(dtype=np.float64)
        r = rank[pos.columns].to_numpy(dtype=np.float64)
        centred.append((p - p.mean(axis=0), r - r.mean(axis=0)))
    if not centred:
        return math.nan, math.nan, 0
    den = math.sqrt(
        sum(float((p * p).sum()) for p, _ in centred)
        * sum(float((r * r).sum()) for _, r in centred)
    )
    if den == 0:  # no rank moved: nothing follows positions
        return 0.0, 1.0, len(centred)
    observed = sum(float((p * r).sum()) for p, r in centred) / den
    total = np.zeros(n_permutations)
    for p, r in centred:
        perms = np.argsort(rng.random((n_permutations, len(r))), axis=1)
        total += np.einsum("od,bod->b", p, r[perms])
    count = int((total / den >= observed - 1e-12).sum())
    return observed, (1 + count) / (1 + n_permutations), len(centred)


def position_audit(
    judge: Judge,
    items: Any,
    *,
    shuffles: int = 1,
    seed: int | None = 0,
    n_permutations: int = 2000,
    stage: str | None = None,
) -> PositionAudit:
    """Order the same batches in their original, reversed and shuffled orders, and compare.

    Parameters
    ----------
    judge : Judge
        A listwise judge (:meth:`~ragnb.judge.Judge.rank_many`).
    items : DataFrame or list of dict
        Batches as :meth:`~ragnb.judge.Judge.rank_many` takes them (``query_id``, ``doc_ids``,
        ``query``, ``passages``, optionally ``batch_id``), in their original order.
    shuffles : int >= 0, default 1
        Shuffled orders per batch besides the reversed one.
    seed : int or None, default 0
        Seed of the shuffles and of the randomization test.
    n_permutations : int >= 1, default 2000
        Random exchanges of the randomization test.
    stage : str, optional
        Ledger label of the judge's calls.

    Returns
    -------
    PositionAudit
        ``ranks``, ``summary`` (mean absolute rank change per order), ``correlation`` and
        ``p_value`` of the test of whether ranks follow positions.

    Raises
    ------
    InputError
        A malformed batch (naming its row), ``shuffles`` or ``n_permutations`` out of range.
    JudgeUnavailable
        When the judge's server cannot answer (answers received before stay cached).

    References
    ----------
    .. [1] Sun et al., EMNLP 2023 (listwise rankers and the order of their input).
    .. [2] Pitman 1937 (randomization tests).

    Examples
    --------
    A judge ordering by its labels ignores positions entirely:

    >>> from ragnb.judge import QrelsJudge
    >>> judge = QrelsJudge({"q": {"a": 2, "b": 1, "c": 0}})
    >>> out = position_audit(judge, [{"query_id": "q", "doc_ids": ["a", "b", "c"]}])
    >>> out.summary["mean_abs_rank_change"].tolist(), out.correlation, out.p_value
    ([0.0, 0.0], 0.0, 1.0)
    """
    for name, v, least in (("shuffles", shuffles, 0), ("n_permutations", n_permutations, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise InputError(f"{name} must be an integer >= {least}, got {v!r}", column=name)
    requests = rank_requests(items)
    rng = np.random.default_rng(seed)
    rows, index = _variants(requests, shuffles, rng)
    answers = judge.rank_many(rows, stage=stage) if rows else pd.DataFrame()
    records, n_invalid = [], 0
    for (i, order, perm), (_, ans) in zip(index, answers.iterrows(), strict=True):
        if not ans["valid"]:
            n_invalid += 1
            continue
        r = requests[i]
        answer = list(ans["order"])
        for position, j in enumerate(perm):
            doc = r.doc_ids[j]
            records.append((r.query_id, r.batch_id, order, doc, position, answer.index(doc)))
    cols = ["query_id", "batch_id", "order", "doc_id", "position", "rank"]
    ranks = pd.DataFrame(records, columns=cols).astype({"position": np.int64, "rank": np.int64})
    correlation, p_value, n_batches = _position_test(ranks, n_permutations, rng)
    return PositionAudit(
        ranks=ranks,
        summary=_rank_changes(ranks, shuffles),
        correlation=correlation,
        p_value=p_value,
        n_permutations=n_permutations,
        n_batches=n_batches,
        n_invalid=n_invalid,
    )


def _rank_changes(ranks: pd.DataFrame, shuffles: int) -> pd.DataFrame:
    orders = ["reversed", *(f"shuffled {s}" for s in range(1, shuffles + 1))]
    base = ranks[ranks["order"] == "original"].set_index(["query_id", "batch_id", "doc_id"])
    rows = []
    for order in orders:
        these = ranks[ranks["order"] == order].set_index(["query_id", "batch_id", "doc_id"])
        both = these.join(base["rank"].rename("original"), how="inner")
        change = (both["rank"] - both["original"]).abs()
        n = both.reset_index()[["query_id", "batch_id"]].drop_duplicates().shape[0]
        rows.append((order, n, float(change.mean()) if len(change) else math.nan))
    out = pd.DataFrame(rows, columns=["order", "n_batches", "mean_abs_rank_change"])
    return out.astype({"n_batches": np.int64})
