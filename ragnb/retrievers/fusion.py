"""Rank fusion: several runs of one set of queries combined into one run.

One home for every fusion in ragnb: the hybrid retriever (:mod:`ragnb.retrievers.retrieve`), the CLQ
sweep's hybrid mode (:mod:`ragnb.studies.clq.config_run`), the golden-set pooling (S3) and notebook
01's fusion comparison all call :func:`fused_scores` (one query) or :func:`fuse` (run frames).

Methods
-------
For a document d of a query, ``x_r(d)`` is its (normalised) score in run r, ``rank_r(d)`` its
1-based rank, ``R(d)`` the runs that retrieved it and ``w_r`` the run's weight:

=========== ============================================================ =====================
name        fused score                                                  source
=========== ============================================================ =====================
``rrf``     sum_{r in R(d)} 1 / (k + rank_r(d))                          Cormack et al. 2009
``wrrf``    sum_{r in R(d)} w_r / (k + rank_r(d))                        weighted RRF
``combsum`` sum_{r in R(d)} x_r(d)                                       Fox and Shaw 1993
``combmnz`` |R(d)| * sum_{r in R(d)} x_r(d)                              Fox and Shaw 1993
``combmax`` max_{r in R(d)} x_r(d)                                       Fox and Shaw 1993
``combmin`` min_{r in R(d)} x_r(d)                                       Fox and Shaw 1993
``combmed`` median_{r in R(d)} x_r(d)                                    Fox and Shaw 1993
``combanz`` sum_{r in R(d)} x_r(d) / |R(d)|                              Fox and Shaw 1993
``wsum``    sum_{r in R(d)} w_r x_r(d)                                   weighted CombSUM
``isr``     |R(d)| * sum_{r in R(d)} 1 / rank_r(d)^2                     Mourao et al. 2015
``borda``   sum_r p_r(d): p_r(d) = m - rank_r(d) + 1 if r retrieved d,   Aslam and Montague
            else (m - n_r + 1) / 2 (m candidates of the query, n_r       2001
            retrieved by r)
=========== ============================================================ =====================

The definitions, the normalisations and their guards are ranx's (``ranx/fusion/*.py``,
``ranx/normalization/*.py``, v0.3.21), checked against ranx in ``tests/test_fusion.py``. ranx's
names are aliases: ``sum``, ``mnz``, ``max``, ``min``, ``med``, ``anz``, ``bordafuse``.

Normalisations (per query and run, before a score method; the rank methods ignore scores)
-----------------------------------------------------------------------------------------
``none``; ``min-max`` ``(s - min) / max(max - min, 1e-9)`` (the default of the score methods,
as ranx's); ``z-score`` ``(s - mean) / max(std, 1e-9)`` (population std; ranx ``zmuv``);
``max`` ``s / max(max, 1e-9)``; ``sum`` ``(s - min) / max(sum - n min, 1e-9)``.

Order and ties
--------------
Each input run is ranked as trec_eval ranks (score descending, ties by ``doc_id`` descending),
and the fused run likewise. ranx ranks tied input scores in an unspecified order (an unstable
sort), so rank methods agree with ranx wherever no two input scores of a query tie. Sums are
Kahan-compensated in run order, so a score does not depend on how the work is split.

Weights
-------
:func:`optimize_weights` searches the weights of ``wsum`` or ``wrrf`` on a training split of the
queries (a grid on the simplex as ranx's ``optimize_fusion``, or Bayesian search with optuna's
TPE sampler) and returns the evaluation on the held-out queries only.

References
----------
.. [1] G. V. Cormack, C. L. A. Clarke, S. Buettcher, "Reciprocal rank fusion outperforms
   Condorcet and individual rank learning methods", SIGIR 2009, eq. 1.
.. [2] E. A. Fox and J. A. Shaw, "Combination of multiple searches", TREC-2, 1993.
.. [3] J. A. Aslam and M. Montague, "Models for metasearch", SIGIR 2001 (Borda count).
.. [4] A. Mourao, F. Martins, J. Magalhaes, "Multimodal medical information retrieval with
   unsupervised rank fusion", Computerized Medical Imaging and Graphics 39, 2015 (ISR).
.. [5] E. Bassani and L. Romelli, "ranx.fuse: A Python library for metasearch", CIKM 2022.
.. [6] T. Akiba et al., "Optuna: A next-generation hyperparameter optimization framework",
   KDD 2019 (TPE sampler).
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.lazylibs import require
from ragnb.core.validation import check_choice, check_positive_int
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.frames.index import sort_run

__all__ = [
    "METHODS",
    "NORMS",
    "Fusion",
    "WeightSearch",
    "fuse",
    "fused_scores",
    "normalize",
    "normalize_scores",
    "optimize_weights",
    "parse_fusion",
    "rrf",
    "rrf_scores",
]

#: Methods that read only the ranks (their normalisation is always ``"none"``).
RANK_METHODS = ("rrf", "wrrf", "isr", "borda")
#: Methods that read the (normalised) scores.
SCORE_METHODS = ("combsum", "combmnz", "combmax", "combmin", "combmed", "combanz", "wsum")
METHODS = RANK_METHODS + SCORE_METHODS
#: Methods that take one weight per run.
WEIGHTED = ("wrrf", "wsum")
NORMS = ("none", "min-max", "z-score", "max", "sum")

_METHOD_ALIASES = {
    "sum": "combsum",
    "mnz": "combmnz",
    "max": "combmax",
    "min": "combmin",
    "med": "combmed",
    "anz": "combanz",
    "bordafuse": "borda",
    "weighted_sum": "wsum",
    "w_rrf": "wrrf",
}
_NORM_ALIASES = {"min_max": "min-max", "minmax": "min-max", "zmuv": "z-score", "zscore": "z-score"}
_EPS = 1e-9  # ranx's guard on every normalisation denominator
_NAME = re.compile(r"^(\w+)(?:/([\w-]+))?(?:\((.*)\))?$")


# ----------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class Fusion:
    """A fusion method with its parameters; :attr:`name` parses back (:func:`parse_fusion`).

    Attributes
    ----------
    method : str
        One of :data:`METHODS`.
    weights : tuple of float, optional
        One weight >= 0 per run (``wsum``, ``wrrf`` only; default 1 each), in the order of the
        runs fused (the hybrid retrievers: BM25 then dense).
    norm : str
        One of :data:`NORMS`; default ``"min-max"`` for the score methods, ``"none"`` (the only
        value allowed) for the rank methods.
    rrf_k : int
        The constant of ``rrf`` and ``wrrf`` (>= 0; Cormack et al. use 60).

    Examples
    --------
    >>> Fusion("wsum", (0.3, 0.7)).name
    'wsum(0.3,0.7)'
    >>> parse_fusion("combmnz/z-score") == Fusion("combmnz", norm="z-score")
    True
    """

    method: str = "rrf"
    weights: tuple[float, ...] | None = None
    norm: str = ""
    rrf_k: int = 60

    def __post_init__(self) -> None:
        method = _METHOD_ALIASES.get(self.method, self.method)
        check_choice(method, "fusion method", METHODS)
        default = "none" if method in RANK_METHODS else "min-max"
        norm = _NORM_ALIASES.get(self.norm or default, self.norm or default)
        check_choice(norm, "fusion norm", NORMS)
        if method in RANK_METHODS and norm != "none":
            raise InputError(f"{method} reads only ranks: it takes no normalisation, got {norm!r}")
        rrf_k = self.rrf_k
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int | np.integer) or rrf_k < 0:
            raise InputError(f"rrf_k must be an integer >= 0, got {rrf_k!r}")
        weights = self.weights
        if weights is not None:
            if method not in WEIGHTED:
                raise InputError(f"{method} takes no weights (only {list(WEIGHTED)} do)")
            weights = tuple(_weight(w) for w in weights)
            if not weights or not any(weights):
                raise InputError(f"fusion weights need a positive value, got {list(weights)}")
        object.__setattr__(self, "rrf_k", int(rrf_k))
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "norm", norm)
        object.__setattr__(self, "weights", weights)

    @property
    def name(self) -> str:
        """``method[/norm][(w1,...,k=K)]``: the norm when not the method's default, the weights,
        and ``k`` when ``rrf_k`` is not 60 (rrf, wrrf)."""
        out = self.method
        if self.method in SCORE_METHODS and self.norm != "min-max":
            out += f"/{self.norm}"
        args = [_short(w) for w in self.weights or ()]
        if self.method in ("rrf", "wrrf") and self.rrf_k != 60:
            args.append(f"k={self.rrf_k}")
        return out + (f"({','.join(args)})" if args else "")

    def weights_for(self, n_runs: int) -> tuple[float, ...] | None:
        """The weights for ``n_runs`` runs (None for unweighted methods).

        Raises
        ------
        InputError
            When the number of weights is not ``n_runs``.
        """
        if self.method not in WEIGHTED:
            return None
        if self.weights is None:
            return (1.0,) * n_runs
        if len(self.weights) != n_runs:
            raise InputError(
                f"{self.name}: {len(self.weights)} weights for {n_runs} runs; give one per run"
            )
        return self.weights


def _short(w: float) -> str:
    """``w`` as ``%g`` when that reads back exactly, else its shortest exact form."""
    text = f"{w:g}"
    return text if float(text) == w else repr(w)


def _weight(w: Any) -> float:
    number = isinstance(w, int | float | np.integer | np.floating) and not isinstance(w, bool)
    if not number or not math.isfinite(w) or w < 0:
        raise InputError(f"fusion weights must be finite numbers >= 0, got {w!r}")
    return float(w)


def parse_fusion(
    spec: str | Fusion | Mapping[str, Any] | None = None,
    *,
    weights: Sequence[float] | None = None,
    rrf_k: int | None = None,
) -> Fusion:
    """A :class:`Fusion` from its name, a mapping of its fields, or a Fusion.

    Parameters
    ----------
    spec : str, mapping or Fusion, default "rrf"
        ``"rrf"``, ``"wsum(0.3,0.7)"``, ``"combmnz/z-score"``, ``"wrrf(1,2,k=30)"`` (see
        :attr:`Fusion.name`), ranx's names (``"mnz"``, ``"bordafuse"``), or ``{"method": "wsum",
        "weights": [0.3, 0.7], "norm": "max"}``.
    weights : sequence of float, optional
        Weights, when the spec carries none (empty: none).
    rrf_k : int, optional
        ``rrf_k``, when the spec carries none.

    Returns
    -------
    Fusion

    Raises
    ------
    InputError
        On a malformed name, an unknown method, norm or key, weights given twice or where the
        method takes none, a negative weight or ``rrf_k``.
    """
    if isinstance(spec, Fusion):
        fields_: dict[str, Any] = {
            "method": spec.method,
            "weights": spec.weights,
            "norm": spec.norm,
            "rrf_k": spec.rrf_k,
        }
    elif isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"method", "weights", "norm", "rrf_k"})
        if unknown:
            raise InputError(f"unknown fusion key(s) {unknown}; use method, weights, norm, rrf_k")
        fields_ = dict(spec)
    elif spec is None or isinstance(spec, str):
        fields_ = _parse_name((spec or "rrf").strip())
    else:
        raise InputError(f"a fusion is a name or a mapping, got {type(spec).__name__}")
    if weights is not None and len(weights):
        if fields_.get("weights"):
            raise InputError(f"weights given twice: in {spec!r} and as {list(weights)}")
        fields_["weights"] = weights
    if fields_.get("weights") is not None:
        fields_["weights"] = tuple(fields_["weights"]) or None
    if rrf_k is not None and fields_.get("rrf_k") is None:
        fields_["rrf_k"] = rrf_k
    fields_ = {k: v for k, v in fields_.items() if v is not None}
    return Fusion(**fields_)


def _parse_name(text: str) -> dict[str, Any]:
    m = _NAME.match(text)
    if m is None:
        raise InputError(f"malformed fusion {text!r}; e.g. 'rrf', 'wsum(0.3,0.7)', 'combmnz/max'")
    out: dict[str, Any] = {"method": m.group(1), "norm": m.group(2) or ""}
    weights = []
    for arg in filter(None, (a.strip() for a in (m.group(3) or "").split(","))):
        key, _, value = arg.rpartition("=")
        try:
            if key == "k":
                out["rrf_k"] = int(value)
            elif not key:
                weights.append(float(value))
            else:
                raise ValueError(key)
        except ValueError:
            raise InputError(f"malformed fusion argument {arg!r} in {text!r}") from None
    out["weights"] = tuple(weights) or None
    return out


# ----------------------------------------------------------------------------- normalisation


def normalize_scores(scores: Sequence[float], norm: str = "min-max") -> list[float]:
    """One ranking's scores normalised as ranx normalises them (module docstring).

    Parameters
    ----------
    scores : sequence of float, length n
    norm : {"none", "min-max", "z-score", "max", "sum"}

    Returns
    -------
    list of float, length n
        Sums and means run left to right as ranx's compiled loops do.

    Raises
    ------
    InputError
        On an unknown ``norm``.

    Examples
    --------
    >>> normalize_scores([4.0, 2.0, 0.0], "min-max"), normalize_scores([4.0, 2.0, 0.0], "sum")
    ([1.0, 0.5, 0.0], [0.6666666666666666, 0.3333333333333333, 0.0])
    """
    norm = _NORM_ALIASES.get(norm, norm)
    check_choice(norm, "fusion norm", NORMS)
    s = [float(x) for x in scores]
    if norm == "none" or not s:
        return s
    if norm == "z-score":
        mean = sum(s) / len(s)
        std = math.sqrt(sum((x - mean) ** 2 for x in s) / len(s))
        return [(x - mean) / max(std, _EPS) for x in s]
    if norm == "max":
        top = max(max(s), _EPS)
        return [x / top for x in s]
    low = min(s)
    den = max(max(s) - low if norm == "min-max" else sum(s) - low * len(s), _EPS)
    return [(x - low) / den for x in s]


def normalize(run: pd.DataFrame, norm: str = "min-max") -> pd.DataFrame:
    """A run frame with each query's scores normalised (:func:`normalize_scores`).

    Parameters
    ----------
    run : DataFrame
        Columns ``query_id``, ``doc_id``, ``score``.
    norm : {"none", "min-max", "z-score", "max", "sum"}

    Returns
    -------
    DataFrame
        The run in trec_eval order with ``rank``, its ``score`` normalised per query.

    Raises
    ------
    InputError
        On a malformed run or an unknown ``norm``.
    """
    ranked = sort_run(run[["query_id", "doc_id", "score"]], warn=False).run
    scores = ranked["score"].to_numpy(dtype=np.float64)
    out = np.empty_like(scores)
    for a, b in _query_slices(ranked):
        out[a:b] = normalize_scores(scores[a:b].tolist(), norm)
    return ranked.assign(score=out)


# ----------------------------------------------------------------------------- the kernel


def _kahan(per_run: Iterable[Iterable[tuple[Any, float]]]) -> dict[Any, float]:
    """Item -> sum of its values over the runs, Kahan-compensated in run order; an item's first
    value is stored as is (a Kahan step from 0 leaves no carry)."""
    total: dict[Any, float] = {}
    carry: dict[Any, float] = {}
    for pairs in per_run:
        for item, x in pairs:
            old = total.get(item)
            if old is None:
                total[item] = x
                continue
            y = x - carry.get(item, 0.0)
            t = old + y
            carry[item] = (t - old) - y
            total[item] = t
    return total


def rrf_scores(rankings: Iterable[Iterable[Hashable]], rrf_k: int = 60) -> dict[Any, float]:
    """The reciprocal-rank-fusion score of every item of several rankings.

    ``score(d) = sum over rankings r containing d of 1 / (rrf_k + rank_r(d))``, ranks 1-based in
    each ranking's order; an item absent from a ranking gets nothing from it. Summed in ranking
    order with Kahan compensation (as pandas' grouped sum).

    Parameters
    ----------
    rankings : iterable of iterables of hashable
        Each ranking's items, best first.
    rrf_k : int, default 60
        The constant of Cormack et al. (2009), >= 0 (not validated here).

    Returns
    -------
    dict
        Item -> fused score (float), in order of first appearance.

    References
    ----------
    Cormack, Clarke and Buettcher, SIGIR 2009, eq. 1.

    Examples
    --------
    >>> s = rrf_scores([["x", "y"], ["y"]], rrf_k=60)
    >>> round(s["y"], 6), round(s["x"], 6)  # y: 1/62 + 1/61, x: 1/61
    (0.032522, 0.016393)
    """
    return _kahan(
        ((item, 1.0 / (rrf_k + r)) for r, item in enumerate(ranked, start=1)) for ranked in rankings
    )


def _values(
    fusion: Fusion, items: Sequence[Any], scores: Sequence[float] | None, w: float
) -> list[tuple[Any, float]]:
    """One ranking's (item, weighted contribution) pairs for the sum-like methods."""
    if fusion.method in ("rrf", "wrrf"):
        xs = [1.0 / (fusion.rrf_k + r) for r in range(1, len(items) + 1)]
    elif fusion.method == "isr":
        xs = [1.0 / (r * r) for r in range(1, len(items) + 1)]
    else:
        if scores is None or len(scores) != len(items):
            raise InputError(f"{fusion.method} reads scores: give one score per item")
        xs = normalize_scores(scores, fusion.norm)
    if w != 1.0:
        xs = [w * x for x in xs]
    return list(zip(items, xs, strict=True))


def _borda(rankings: Sequence[Sequence[Any]]) -> dict[Any, float]:
    """Borda points summed over the rankings, unranked candidates sharing the points left."""
    candidates = list(dict.fromkeys(itertools.chain.from_iterable(rankings)))
    m = len(candidates)
    per_run = []
    for ranked in rankings:
        points = {item: float(m - i) for i, item in enumerate(ranked)}
        rest = (m - len(points) + 1) / 2
        per_run.append([(d, points.get(d, rest)) for d in candidates])
    return _kahan(per_run)


_REDUCE: dict[str, Callable[[list[float]], float]] = {
    "combmax": max,
    "combmin": min,
    "combmed": statistics.median,
}


def fused_scores(
    rankings: Sequence[Sequence[Hashable]],
    fusion: str | Fusion = "rrf",
    *,
    scores: Sequence[Sequence[float]] | None = None,
) -> dict[Any, float]:
    """The fused score of every item of one query's rankings (the one fusion kernel).

    Parameters
    ----------
    rankings : sequence of sequences of hashable
        Each run's items for the query, best first (no repeats within a run).
    fusion : str or Fusion, default "rrf"
        The method and its parameters (:func:`parse_fusion`).
    scores : sequence of sequences of float, optional
        Each run's scores, parallel to ``rankings``; required by the score methods.

    Returns
    -------
    dict
        Item -> fused score (float), items in order of first appearance (unsorted: each caller
        sorts with its own tie rule).

    Raises
    ------
    InputError
        On a bad fusion, weights not one per ranking, or a score method without scores.

    Examples
    --------
    >>> fused_scores([["a", "b"], ["b", "c"]], "rrf(k=0)")   # a 1/1, b 1/2 + 1/1, c 1/2
    {'a': 1.0, 'b': 1.5, 'c': 0.5}
    >>> fused_scores([["a", "b"], ["b"]], "combmnz/none", scores=[[3.0, 1.0], [2.0]])
    {'a': 3.0, 'b': 6.0}
    """
    f = fusion if isinstance(fusion, Fusion) else parse_fusion(fusion)
    if f.method == "rrf":
        return rrf_scores(rankings, f.rrf_k)
    if f.method == "borda":
        return _borda(rankings)
    if scores is not None and len(scores) != len(rankings):
        raise InputError(f"{len(scores)} score lists for {len(rankings)} rankings")
    weights = f.weights_for(len(rankings)) or (1.0,) * len(rankings)
    per_run = [
        _values(f, items, None if scores is None else scores[i], weights[i])
        for i, items in enumerate(rankings)
    ]
    if f.method in _REDUCE:
        collected: dict[Any, list[float]] = {}
        for pairs in per_run:
            for item, x in pairs:
                collected.setdefault(item, []).append(x)
        reduce = _REDUCE[f.method]
        return {item: float(reduce(xs)) for item, xs in collected.items()}
    total = _kahan(per_run)
    if f.method in ("combmnz", "combanz", "isr"):
        count: dict[Any, int] = {}
        for pairs in per_run:
            for item, _ in pairs:
                count[item] = count.get(item, 0) + 1
        if f.method == "combanz":
            return {item: s / count[item] for item, s in total.items()}
        return {item: s * count[item] for item, s in total.items()}
    return total  # combsum, wsum, wrrf


# ----------------------------------------------------------------------------- run frames


def _query_slices(ranked: pd.DataFrame) -> list[tuple[int, int]]:
    """(start, stop) row slices of each query of a run in evaluation order."""
    starts = np.flatnonzero(ranked["rank"].to_numpy() == 1).tolist() + [len(ranked)]
    return list(itertools.pairwise(starts))


@dataclass(frozen=True)
class _Grouped:
    """Run frames split by query: ``queries[q] = [(doc ids, scores) per run]`` (empty lists
    for a run without the query), and the id columns' common dtypes."""

    queries: dict[Any, list[tuple[list[Any], list[float]]]]
    dtypes: pd.Series


def _grouped(runs: Sequence[pd.DataFrame]) -> _Grouped:
    if not runs:
        raise InputError("fusion needs at least one run")
    ranked_runs = [sort_run(r[["query_id", "doc_id", "score"]], warn=False).run for r in runs]
    queries: dict[Any, list[tuple[list[Any], list[float]]]] = {}
    for i, ranked in enumerate(ranked_runs):
        qids = ranked["query_id"].to_numpy()
        docs = ranked["doc_id"].tolist()
        scores = ranked["score"].tolist()
        for a, b in _query_slices(ranked):
            lists = queries.setdefault(qids[a], [([], []) for _ in runs])
            lists[i] = (docs[a:b], scores[a:b])
    dtypes = pd.concat([r.iloc[:0] for r in ranked_runs]).dtypes  # the columns' common types
    return _Grouped(queries, dtypes)


def _fuse_grouped(
    grouped: _Grouped, fusion: Fusion, k: int | None, keep: Iterable[Any] | None = None
) -> pd.DataFrame:
    qs: list[Any] = []
    ds: list[Any] = []
    ss: list[float] = []
    for qid in grouped.queries if keep is None else keep:
        lists = grouped.queries.get(qid)
        if lists is None:
            continue
        fused = fused_scores([d for d, _ in lists], fusion, scores=[s for _, s in lists])
        qs += [qid] * len(fused)
        ds += list(fused)
        ss += list(fused.values())
    out = pd.DataFrame(
        {
            "query_id": pd.Series(qs, dtype=grouped.dtypes["query_id"]),
            "doc_id": pd.Series(ds, dtype=grouped.dtypes["doc_id"]),
            "score": np.asarray(ss, dtype=np.float64),
        }
    )
    out = sort_run(out, warn=False).run
    if k is not None:
        out = out[out["rank"] <= k].reset_index(drop=True)
    return out


def fuse(
    runs: Sequence[pd.DataFrame] | Mapping[str, pd.DataFrame],
    fusion: str | Fusion | Mapping[str, Any] = "rrf",
    *,
    weights: Sequence[float] | None = None,
    rrf_k: int | None = None,
    k: int | None = None,
) -> pd.DataFrame:
    """Fuse several runs into one (module docstring: methods, normalisations, ties).

    Parameters
    ----------
    runs : sequence of DataFrame, or mapping of name to DataFrame
        Run frames (columns ``query_id``, ``doc_id``, ``score``); a query absent from a run is an
        empty ranking there. A mapping is fused in its order.
    fusion : str, mapping or Fusion, default "rrf"
        :func:`parse_fusion`: ``"rrf"``, ``"wsum(0.3,0.7)"``, ``"combmnz/z-score"``, ...
    weights : sequence of float, optional
        One weight per run for ``wsum`` / ``wrrf`` (when ``fusion`` names none).
    rrf_k : int, optional
        The RRF constant (default 60) when ``fusion`` names none.
    k : int, optional
        Keep the top ``k`` fused documents per query; default all.

    Returns
    -------
    DataFrame
        Run frame (``query_id``, ``doc_id``, ``score`` float, ``rank`` 1-based), queries in sorted
        order, ties in the fused score broken as trec_eval does (``doc_id`` descending).

    Raises
    ------
    InputError
        On no runs, a malformed run (NaN score, missing column), a bad fusion, weights not one
        per run, or a bad ``k``.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["x", "y"], "score": [2.0, 1.0]})
    >>> b = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["y", "z"], "score": [5.0, 1.0]})
    >>> fuse([a, b], "combsum")[["doc_id", "score"]].values.tolist()  # min-max: x 1, y 0 + 1
    [['y', 1.0], ['x', 1.0], ['z', 0.0]]
    >>> fuse([a, b], "wsum", weights=[1, 3])["doc_id"].tolist()       # y 0 + 3, x 1, z 0
    ['y', 'x', 'z']
    """
    f = parse_fusion(fusion, weights=weights, rrf_k=rrf_k)
    check_positive_int(k, "cutoff k", allow_none=True)
    items = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    f.weights_for(len(items))
    return _fuse_grouped(_grouped(items), f, k)


def rrf(runs: list[pd.DataFrame], rrf_k: int = 60, k: int | None = None) -> pd.DataFrame:
    """Reciprocal rank fusion of several runs: :func:`fuse` with ``"rrf"``.

    Parameters
    ----------
    runs : list of DataFrame
        Run frames (columns ``query_id``, ``doc_id``, ``score``).
    rrf_k : int, default 60
        The constant of Cormack et al. (2009), >= 0.
    k : int, optional
        Keep the top ``k`` fused documents per query; default all.

    Returns
    -------
    DataFrame
        As :func:`fuse`.

    Raises
    ------
    InputError
        As :func:`fuse` (``rrf_k`` < 0 included).

    References
    ----------
    Cormack, Clarke and Buettcher, SIGIR 2009, eq. 1.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["x", "y"], "score": [2.0, 1.0]})
    >>> b = pd.DataFrame({"query_id": ["q"], "doc_id": ["y"], "score": [5.0]})
    >>> fused = rrf([a, b], rrf_k=60)
    >>> fused["doc_id"].tolist(), round(float(fused["score"].iloc[0]), 6)  # y: 1/62 + 1/61
    (['y', 'x'], 0.032522)
    """
    if not runs:
        raise InputError("rrf needs at least one run")
    return fuse(runs, Fusion("rrf", rrf_k=rrf_k), k=k)


# ----------------------------------------------------------------------------- weight search


@dataclass(frozen=True)
class WeightSearch:
    """Weights tuned on training queries, evaluated on held-out ones (:func:`optimize_weights`).

    Attributes
    ----------
    fusion : Fusion
        The method with the tuned weights (they sum to 1).
    measure : str
        The measure tuned and reported.
    search : {"grid", "bayes"}
    train_queries, heldout_queries : tuple of str
        The split (disjoint; both non-empty).
    trials : DataFrame
        One row per weight vector tried, in order: ``trial`` (int), ``w_<run>`` (float per run)
        and ``train_value`` (float, the measure on the training queries).
    heldout : DataFrame
        The evaluation on the held-out queries only: ``system`` (the tuned fusion, the same
        method with equal weights, and each input run), ``measure``, ``value`` (float, mean over
        the held-out queries of the qrels), ``n_queries`` (int).
    """

    fusion: Fusion
    measure: str
    search: str
    train_queries: tuple[str, ...]
    heldout_queries: tuple[str, ...]
    trials: pd.DataFrame = field(repr=False)
    heldout: pd.DataFrame = field(repr=False)


def _split(
    qrels: pd.DataFrame, train_queries: Sequence[str] | None, train_fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    qids = sorted(qrels["query_id"].astype(str).unique())
    if train_queries is not None:
        train = sorted({str(q) for q in train_queries})
        unknown = sorted(set(train) - set(qids))
        if unknown:
            raise InputError(f"train queries not in the qrels: {unknown[:5]}", column="query_id")
    else:
        if not 0.0 < train_fraction < 1.0:
            raise InputError(f"train_fraction must lie in (0, 1), got {train_fraction!r}")
        n_train = min(max(round(train_fraction * len(qids)), 1), len(qids) - 1)
        order = np.random.default_rng(seed).permutation(len(qids))
        train = sorted(qids[i] for i in order[:n_train])
    heldout = sorted(set(qids) - set(train))
    if not train or not heldout:
        raise InputError(
            f"the split needs training and held-out queries; the qrels have {len(qids)} "
            f"queries, {len(train)} for training"
        )
    return train, heldout


def _grid_weights(n_runs: int, step: float) -> list[tuple[float, ...]]:
    """Weight vectors with entries in {0, step, ..., 1} summing to 1 (ranx's grid)."""
    n_steps = round(1.0 / step) if step > 0 else 0
    if n_steps < 1 or abs(n_steps * step - 1.0) > 1e-9:
        raise InputError(f"step must divide 1 (0.1, 0.05, 0.25, ...), got {step!r}")
    grid = itertools.product(range(n_steps + 1), repeat=n_runs)
    return [tuple(i / n_steps for i in c) for c in grid if sum(c) == n_steps]


def _bayes(
    objective: Callable[[tuple[float, ...]], float], n_runs: int, n_trials: int, seed: int
) -> None:
    """Call ``objective`` on ``n_trials`` weight vectors from optuna's TPE sampler (each
    ``u / sum(u)`` rounded to 4 decimals, ``u`` in [0, 1]^n), seeded."""
    try:
        optuna = require("optuna")
    except ModuleNotFoundError as e:  # pragma: no cover - depends on the extra
        raise ModuleNotFoundError("search='bayes' needs optuna: pip install 'ragnb[fusion]'") from e
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))

    def trial_value(trial: Any) -> float:
        u = [trial.suggest_float(f"w{i}", 0.0, 1.0) for i in range(n_runs)]
        total = sum(u)
        w = tuple(round(x / total, 4) for x in u) if total > 0 else (1.0 / n_runs,) * n_runs
        return objective(w)

    study.optimize(trial_value, n_trials=n_trials)


def optimize_weights(
    qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame] | Sequence[pd.DataFrame],
    fusion: str | Fusion = "wsum",
    *,
    measure: str = "nDCG@10",
    search: str = "grid",
    step: float = 0.1,
    n_trials: int = 30,
    train_fraction: float = 0.5,
    train_queries: Sequence[str] | None = None,
    seed: int = 0,
) -> WeightSearch:
    """Tune the weights of ``wsum`` or ``wrrf`` on training queries; report held-out values.

    Parameters
    ----------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance``; its queries are split.
    runs : mapping of name to run frame, or sequence of run frames
        The runs fused (names ``run0``, ``run1``, ... for a sequence).
    fusion : str or Fusion, default "wsum"
        A weighted method (``wsum`` with its norm, or ``wrrf`` with its ``k``); weights in it
        are ignored.
    measure : str, default "nDCG@10"
        The measure maximised (any :func:`ragnb.evaluation.evaluate.evaluate` name).
    search : {"grid", "bayes"}
        ``"grid"``: every weight vector of the simplex grid of ``step`` (ranx's
        ``optimize_fusion``); ``"bayes"``: ``n_trials`` vectors from optuna's TPE sampler seeded
        with ``seed`` (the ``fusion`` extra).
    step : float, default 0.1
        Grid spacing, dividing 1.
    n_trials : int, default 30
        Bayesian trials.
    train_fraction : float in (0, 1), default 0.5
        Share of the qrels' queries drawn (seeded) for training, when ``train_queries`` is None.
    train_queries : sequence of str, optional
        The training queries; the other queries of the qrels are held out.
    seed : int, default 0

    Returns
    -------
    WeightSearch
        The tuned fusion, the trials (training values) and the evaluation on the held-out
        queries only. The first best trial wins a tie. Weights are scaled to sum to 1 (Bayesian
        ones rounded to 4 decimals), which leaves the fused order unchanged.

    Raises
    ------
    InputError
        On an unweighted method, fewer than two runs, a split leaving no training or no
        held-out query, a bad ``step``, ``n_trials``, ``search`` or measure.
    """
    base = parse_fusion(fusion)
    if base.method not in WEIGHTED:
        raise InputError(f"weights are tuned for {list(WEIGHTED)}, not {base.method}")
    check_choice(search, "search", ("grid", "bayes"))
    named = dict(runs) if isinstance(runs, Mapping) else {f"run{i}": r for i, r in enumerate(runs)}
    if len(named) < 2:
        raise InputError(f"weight tuning needs at least two runs, got {len(named)}")
    qrels = qrels.assign(query_id=qrels["query_id"].astype(str))
    train, heldout = _split(qrels, train_queries, train_fraction, seed)
    grouped = _grouped(list(named.values()))
    train_qrels = qrels[qrels["query_id"].isin(set(train))]
    train_keep = [q for q in grouped.queries if str(q) in set(train)]
    tried: list[tuple[float, ...]] = []
    values: list[float] = []

    def objective(w: tuple[float, ...]) -> float:
        run = _fuse_grouped(
            grouped, Fusion(base.method, w, base.norm, base.rrf_k), None, train_keep
        )
        tried.append(w)
        values.append(float(evaluate(train_qrels, run, [measure]).aggregate["value"].iloc[0]))
        return values[-1]

    if search == "grid":
        for w in _grid_weights(len(named), step):
            objective(w)
    else:
        _bayes(objective, len(named), check_positive_int(n_trials, "n_trials") or 1, seed)
    tuned = Fusion(base.method, tried[int(np.argmax(values))], base.norm, base.rrf_k)
    trials = pd.DataFrame(tried, columns=[f"w_{n}" for n in named])
    trials.insert(0, "trial", np.arange(len(tried)))
    trials["train_value"] = values
    table = _heldout_table(qrels, heldout, grouped, named, tuned, measure)
    return WeightSearch(
        tuned, str(table["measure"].iloc[0]), search, tuple(train), tuple(heldout), trials, table
    )


def _heldout_table(
    qrels: pd.DataFrame,
    heldout: list[str],
    grouped: _Grouped,
    named: dict[str, pd.DataFrame],
    tuned: Fusion,
    measure: str,
) -> pd.DataFrame:
    """The tuned fusion, equal weights and each input run, on the held-out queries only."""
    keep = [q for q in grouped.queries if str(q) in set(heldout)]
    equal = Fusion(tuned.method, None, tuned.norm, tuned.rrf_k)
    systems = {
        tuned.name: _fuse_grouped(grouped, tuned, None, keep),
        f"{equal.name} (equal weights)": _fuse_grouped(grouped, equal, None, keep),
        **named,
    }
    held_qrels = qrels[qrels["query_id"].isin(set(heldout))]
    rows = []
    for name, run in systems.items():
        agg = evaluate(held_qrels, run, [measure]).aggregate.iloc[0]
        rows.append((name, agg["measure"], float(agg["value"]), int(agg["n_queries"])))
    return pd.DataFrame(rows, columns=["system", "measure", "value", "n_queries"])
