"""Per-query values of two systems on one measure, aligned by ``query_id``, and the
argument checks the tests share (see :mod:`ragnb.stats` for the accepted inputs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import EvaluationResult
from ragnb.measures import Measure, parse_measure

PerQueryValues: TypeAlias = pd.Series | pd.DataFrame | EvaluationResult | Mapping[str, float]

#: Entries of one block of resamples (2M float64 = 16 MB): the bootstrap, randomization and
#: top-K tests draw their resamples block by block, so memory stays bounded.
RESAMPLE_BLOCK = 1 << 21


# --------------------------------------------------------------------------------------------
# input: per-query values of two systems, aligned by query_id


def _preview(ids: Sequence[str], n: int = 5) -> str:
    shown = ", ".join(repr(x) for x in ids[:n])
    return shown + (", ..." if len(ids) > n else "")


def pick_measure(names: list[str], measure: str | Measure | None, what: str) -> str:
    """The name among ``names`` that ``measure`` designates, aliases resolved.

    Parameters
    ----------
    names : list of str
        The measure names a table holds (canonical names, e.g. ``"nDCG@10"``, or the names
        they were requested under, e.g. ``"ndcg_cut_10"``).
    measure : str, Measure or None
        The measure asked for: a name as held, a name that :func:`ragnb.measures.parse_measure`
        canonicalises as one held (``"ndcg_cut_10"`` finds ``"nDCG@10"`` and ``"NDCG@10"``),
        or None to take the only
        name when there is exactly one.
    what : str
        What holds ``names`` (e.g. ``"the evaluation"``, ``"system 'bm25'"``), for the errors.

    Returns
    -------
    str
        An element of ``names``.

    Raises
    ------
    InputError
        When ``measure`` is None and ``names`` holds several names (or none), or when neither the
        name nor its canonical form is in ``names`` (``column`` set to the name asked for).

    Examples
    --------
    >>> pick_measure(["nDCG@10", "R@100"], "ndcg_cut_10", "the evaluation")
    'nDCG@10'
    """
    if measure is None:
        if len(names) == 1:
            return names[0]
        raise InputError(f"{what} holds several measures {names}; pass measure= to choose one")
    name = measure.name if isinstance(measure, Measure) else str(measure)
    if name in names:
        return name
    try:
        canonical = parse_measure(name).name
    except InputError:
        canonical = None
    if canonical in names:
        return str(canonical)
    for held in names:  # a table labelled with the names requested (map for AP)
        try:
            if parse_measure(held).name == canonical:
                return held
        except InputError:
            continue
    raise InputError(f"{what} has no measure {name!r}; it has {names}", column=name)


def per_query_series(values: PerQueryValues, measure: str | Measure | None, what: str) -> pd.Series:
    """One system's values on one measure: float Series indexed by str query_id."""
    if isinstance(values, EvaluationResult):
        values = values.per_query
    if isinstance(values, pd.Series):
        series = values
    elif isinstance(values, Mapping):
        series = pd.Series(dict(values), dtype=object)
    elif isinstance(values, pd.DataFrame):
        frame = values
        if {"query_id", "measure", "value"} <= set(frame.columns):
            names = [str(m) for m in dict.fromkeys(frame["measure"])]
            name = pick_measure(names, measure, what)
            rows = frame[frame["measure"].astype(str) == name]
            series = pd.Series(rows["value"].to_numpy(), index=rows["query_id"].to_numpy())
        else:
            if "query_id" in frame.columns:
                frame = frame.set_index("query_id")
            name = pick_measure([str(c) for c in frame.columns], measure, what)
            series = frame[name]
    else:
        raise InputError(
            f"{what}: expected per-query values as a Series, dict, DataFrame or "
            f"EvaluationResult, got {type(values).__name__}"
        )
    index = pd.Index([str(q) for q in series.index])
    if index.has_duplicates:
        qid = str(index[index.duplicated()][0])
        raise InputError(f"{what} has several values for one query", query_id=qid)
    try:
        data = pd.to_numeric(pd.Series(series.to_numpy(), index=index), errors="raise")
    except (TypeError, ValueError):
        raise InputError(f"{what} holds a value that is not a number") from None
    data = data.astype("float64")
    inf = np.isinf(data.to_numpy())
    if inf.any():
        raise InputError(
            f"{what} holds an infinite value (a trajectory that never got there: compare the "
            "censored form, e.g. CallsToFirstRel(never=5), or CallRR)",
            query_id=str(index[inf][0]),
        )
    return data


@dataclass(frozen=True)
class PairedValues:
    """Per-query values of two systems on the same queries (:func:`pair_values`).

    Attributes
    ----------
    query_ids : ndarray of str (object), shape (n,)
        The queries kept, sorted.
    a, b : ndarray of float64, shape (n,)
        The values of system a and system b on each query.
    n_dropped : int
        Queries left out because one of the two values is NaN (undefined).
    """

    query_ids: np.ndarray  # (n,) the queries kept
    a: np.ndarray  # (n,)
    b: np.ndarray  # (n,)
    n_dropped: int

    def summary(self) -> dict[str, Any]:
        """``mean_a``, ``mean_b``, ``n_queries`` (kept) and ``n_dropped``, as every result holds."""
        return {
            "mean_a": float(self.a.mean()),
            "mean_b": float(self.b.mean()),
            "n_queries": int(self.a.size),
            "n_dropped": self.n_dropped,
        }


def align_pair(a: pd.Series, b: pd.Series, name_a: str, name_b: str) -> PairedValues:
    """Two systems' per-query values aligned by query id, queries with a NaN left out.

    Parameters
    ----------
    a, b : Series of float
        Values indexed by ``query_id``.
    name_a, name_b : str
        The systems' names, for the errors.

    Returns
    -------
    PairedValues
        The queries with a value in both, sorted by id; ``n_dropped`` counts those left out.

    Raises
    ------
    InputError
        When the two do not hold the same queries (naming a query only one of them holds), or
        no query has a defined value in both.
    """
    ia, ib = set(a.index), set(b.index)
    if ia != ib:
        only_a, only_b = sorted(ia - ib), sorted(ib - ia)
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in {name_a} ({_preview(only_a)})")
        if only_b:
            parts.append(f"{len(only_b)} only in {name_b} ({_preview(only_b)})")
        raise InputError(
            "per-query values do not align by query_id: " + "; ".join(parts),
            query_id=(only_a or only_b)[0],
        )
    ids = np.asarray(sorted(ia), dtype=object)
    va = a.reindex(ids).to_numpy(dtype=np.float64)
    vb = b.reindex(ids).to_numpy(dtype=np.float64)
    keep = ~(np.isnan(va) | np.isnan(vb))
    if not keep.any():
        raise InputError(
            f"no query has a defined (non-NaN) value for both {name_a} and {name_b} "
            f"({len(ids)} queries)"
        )
    return PairedValues(ids[keep], va[keep], vb[keep], int((~keep).sum()))


def pair_values(
    a: PerQueryValues, b: PerQueryValues, measure: str | Measure | None
) -> PairedValues:
    """The per-query values of two systems on one measure, aligned by query id.

    Parameters
    ----------
    a, b : Series, DataFrame, EvaluationResult or dict
        Per-query values of system a and system b, as :func:`per_query_series` reads them.
    measure : str or Measure, optional
        The measure to read from a long table or a result (None when there is only one).

    Returns
    -------
    PairedValues
        As :func:`align_pair` returns it.

    Raises
    ------
    InputError
        As :func:`per_query_series` and :func:`align_pair`.
    """
    sa = per_query_series(a, measure, "system a")
    sb = per_query_series(b, measure, "system b")
    return align_pair(sa, sb, "system a", "system b")


def check_resamples(n_resamples: int) -> int:
    """``n_resamples`` as an int.

    Parameters
    ----------
    n_resamples : int
        Resamples of a bootstrap or randomization test.

    Returns
    -------
    int
        >= 1.

    Raises
    ------
    InputError
        When ``n_resamples`` is not a positive integer.
    """
    return int(check_positive_int(n_resamples, "n_resamples"))  # type: ignore[arg-type]


def check_fraction(value: float, name: str) -> float:
    """``value`` as a float strictly between 0 and 1 (a confidence level, a share).

    Parameters
    ----------
    value : float
    name : str
        The parameter's name, for the error.

    Returns
    -------
    float
        In (0, 1).

    Raises
    ------
    InputError
        When ``value`` is not strictly between 0 and 1, naming ``name``.
    """
    if not 0.0 < float(value) < 1.0:
        raise InputError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return float(value)
