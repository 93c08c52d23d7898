"""The K x alpha grid behind notebook 06: per-query values, aggregates and rank stability.

Runs + qrels -> :func:`precompute` (per-query values on every measure of the grid) ->
:meth:`WhatIfFrames.grid` (macro means per retriever, family, K, alpha) -> :func:`slider_table`
(the small inline table behind the report's sliders), :func:`rank_table` and :func:`top_changes`
(how stable the system ranking is across alpha and K). See :mod:`ragnb.studies.whatif.study` for the
row budget of the slider chart and the references.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_ints
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.measures import GRADED_FAMILIES, Measure
from ragnb.measures import families as registered_families

__all__ = [
    "ALPHA_FAMILIES",
    "DEFAULT_ALPHAS",
    "DEFAULT_FAMILIES",
    "DEFAULT_KS",
    "LOWER_IS_BETTER",
    "MAX_CHART_ROWS",
    "SUPPORTED_FAMILIES",
    "WhatIfFrames",
    "chart_rows",
    "combine",
    "grid_measures",
    "precompute",
    "rank_table",
    "slider_table",
    "top_changes",
    "alpha_grid",
    "check_grid",
    "check_rows",
]

#: Families whose measures take ``alpha`` (Primer eqs. 1-4).
ALPHA_FAMILIES = ("F", "F_e", "T", "T_u")
#: Families a grid may hold: cutoff measures without extra inputs (no sources, no judge).
SUPPORTED_FAMILIES = (
    *ALPHA_FAMILIES,
    "P",
    "R",
    "nDCG",
    "nDCG_inK",
    "Success",
    *GRADED_FAMILIES,
    "NuggetRecall",
)
#: Families where a lower value is better (the rank table ranks them ascending).
LOWER_IS_BETTER = ("Harm",)
DEFAULT_FAMILIES = ("F", "T", "RA-nWG", "P", "R", "nDCG")
DEFAULT_KS = (1, 3, 5, 10, 20, 30, 50)
#: 0, 0.05, ..., 1 (21 values).
DEFAULT_ALPHAS = tuple(round(0.05 * i, 2) for i in range(21))
#: Altair's default limit on inline rows, which the slider chart must respect.
MAX_CHART_ROWS = 5000


def alpha_grid(alphas: Iterable[float]) -> tuple[float, ...]:
    """Sorted, de-duplicated alphas rounded to 6 decimals (so 0.1 + 0.2 reads 0.3).

    Parameters
    ----------
    alphas : iterable of float

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> alpha_grid([0.5, 0.1 + 0.2, 0.3])
    (0.3, 0.5)
    """
    return tuple(sorted({round(float(a), 6) for a in alphas}))


def chart_rows(n_retrievers: int, n_ks: int, n_alphas: int, n_families: int) -> int:
    """Inline rows of the slider chart: ``retrievers x Ks x alphas x families``.

    Examples
    --------
    >>> chart_rows(3, 7, 21, 6)
    2646
    """
    return n_retrievers * n_ks * n_alphas * n_families


def check_rows(n_retrievers: int, n_ks: int, n_alphas: int, n_families: int, limit: int) -> None:
    """Refuse a slider chart of more than ``limit`` inline rows (:func:`chart_rows`).

    Parameters
    ----------
    n_retrievers, n_ks, n_alphas, n_families : int
        The grid's sizes.
    limit : int
        The most rows a chart may inline (altair's default: :data:`MAX_CHART_ROWS`).

    Raises
    ------
    InputError
        Naming the sizes, the rows and what to coarsen.
    """
    rows = chart_rows(n_retrievers, n_ks, n_alphas, n_families)
    if rows > limit:
        raise InputError(
            f"the slider chart would inline {n_retrievers} retrievers x {n_ks} K x {n_alphas} "
            f"alpha x {n_families} families = {rows:,} rows, above the limit of {limit:,} "
            "(altair's default): coarsen the alpha grid, drop cutoffs, retrievers or families",
            column="alphas",
        )


def check_grid(ks: Iterable[int], alphas: Sequence[float], fams: Sequence[str]) -> list[int]:
    """The cutoffs as ints, once ``ks``, ``alphas`` and ``fams`` are checked.

    Parameters
    ----------
    ks : iterable of int
        Cutoffs K, each >= 1.
    alphas : sequence of float
        Weights in [0, 1], at least one.
    fams : sequence of str
        Measure families, among :data:`SUPPORTED_FAMILIES`, at least one.

    Returns
    -------
    list of int

    Raises
    ------
    InputError
        Naming the column (``ks``, ``alphas``, ``families``) at fault.
    """
    cutoffs = check_positive_ints(ks, "ks")
    if not alphas or any(not 0.0 <= float(a) <= 1.0 for a in alphas):
        raise InputError(f"alphas must lie in [0, 1], got {list(alphas)}", column="alphas")
    unknown = [f for f in fams if f not in SUPPORTED_FAMILIES]
    if unknown or not fams:
        raise InputError(
            f"families must be among {list(SUPPORTED_FAMILIES)}, got {list(fams)}",
            column="families",
        )
    return cutoffs


def grid_measures(
    ks: Iterable[int], alphas: Iterable[float], fams: Iterable[str], rel: int = 1
) -> list[Measure]:
    """Every measure of the grid: each family at each K, and at each alpha if it takes one.

    Parameters
    ----------
    ks : iterable of int
        Cutoffs K >= 1.
    alphas : iterable of float in [0, 1]
    fams : iterable of str
        Family names of :data:`SUPPORTED_FAMILIES`.
    rel : int, default 1
        ``rel`` of the binary families (graded families read 1-5 grades and take no ``rel``).

    Returns
    -------
    list of Measure
        ``len(ks) * (n_alpha_families * len(alphas) + n_other_families)`` measures.

    Examples
    --------
    >>> [m.name for m in grid_measures([5], [0, 0.5], ["F", "P"])]
    ['F(alpha=0)@5', 'F(alpha=0.5)@5', 'P@5']
    """
    grid, fams = alpha_grid(alphas), list(dict.fromkeys(fams))
    cutoffs = check_grid(ks, grid, fams)  # 2.5 is refused, not cut to 2
    out: list[Measure] = []
    for k in sorted(set(cutoffs)):
        for fam in fams:
            if fam in ALPHA_FAMILIES:
                out += [Measure(fam, k, alpha=a, rel=rel) for a in grid]
            elif fam in GRADED_FAMILIES or fam in ("nDCG", "NuggetRecall"):
                out.append(Measure(fam, k))
            else:
                out.append(Measure(fam, k, rel=rel))
    return out


@dataclass(frozen=True, eq=False)
class WhatIfFrames:
    """Per-query measure values on a grid of K and alpha, for one or several datasets.

    Attributes
    ----------
    per_query : DataFrame
        Columns ``dataset`` (str), ``retriever`` (str), ``family`` (str), ``k`` (int), ``alpha``
        (float in [0, 1]; NaN for families without alpha), ``measure`` (str, canonical name),
        ``query_id`` (str), ``value`` (float; NaN = undefined, e.g. RA-nWG without useful
        evidence).
    ks : tuple of int
        The cutoff grid, ascending.
    alphas : tuple of float
        The alpha grid, ascending.
    families : tuple of str
        In the requested order.
    """

    per_query: pd.DataFrame
    ks: tuple[int, ...]
    alphas: tuple[float, ...]
    families: tuple[str, ...]

    @property
    def datasets(self) -> list[str]:
        """Dataset names, in order of appearance."""
        return list(dict.fromkeys(self.per_query["dataset"]))

    def retrievers(self, dataset: str | None = None) -> list[str]:
        """Retriever names (of one dataset), in order of appearance."""
        pq = self.per_query
        if dataset is not None:
            pq = pq[pq["dataset"] == dataset]
        return list(dict.fromkeys(pq["retriever"]))

    @cached_property
    def grid(self) -> pd.DataFrame:
        """Macro means per (dataset, retriever, family, K, alpha).

        Families without alpha are repeated at every alpha of the grid, so every (K, alpha)
        setting holds a full table.

        Returns
        -------
        DataFrame
            Columns ``dataset``, ``retriever``, ``family``, ``k`` (int), ``alpha`` (float),
            ``measure`` (str: the measure's name at that setting), ``has_alpha`` (bool),
            ``value`` (float, mean over queries with a defined value), ``n_valid``,
            ``n_queries`` (int). Rows: datasets x retrievers x Ks x alphas x families.
        """
        pq = self.per_query
        keys = ["dataset", "retriever", "family", "k", "measure"]
        agg = (
            pq.assign(valid=pq["value"].notna())
            .groupby(keys + ["alpha"], sort=False, dropna=False)
            .agg(value=("value", "mean"), n_valid=("valid", "sum"), n_queries=("value", "size"))
            .reset_index()
        )
        agg["has_alpha"] = agg["alpha"].notna()
        fixed = agg[~agg["has_alpha"]].drop(columns="alpha")
        alphas = pd.DataFrame({"alpha": list(self.alphas)})
        spread = fixed.merge(alphas, how="cross")
        out = pd.concat([agg[agg["has_alpha"]], spread], ignore_index=True)
        order = {f: i for i, f in enumerate(self.families)}
        out["_f"] = out["family"].map(order)
        out["_d"] = out["dataset"].map({d: i for i, d in enumerate(self.datasets)})
        out["_r"] = out.groupby("dataset")["retriever"].transform(
            lambda s: s.map({r: i for i, r in enumerate(dict.fromkeys(s))})
        )
        out = out.sort_values(["_d", "_r", "k", "alpha", "_f"], kind="stable")
        cols = ["dataset", "retriever", "family", "k", "alpha", "measure", "has_alpha"]
        out = out[cols + ["value", "n_valid", "n_queries"]].reset_index(drop=True)
        out["k"] = out["k"].astype(np.int64)
        out["n_valid"] = out["n_valid"].astype(np.int64)
        out["n_queries"] = out["n_queries"].astype(np.int64)
        return out

    def at(
        self, k: int, alpha: float, dataset: str | None = None, retriever: str | None = None
    ) -> pd.DataFrame:
        """The grid rows of one setting (K, alpha), of one dataset (default: the first).

        Raises
        ------
        InputError
            When ``k``, ``alpha``, ``dataset`` or ``retriever`` is not in the grid.
        """
        dataset = self._check_setting(k, alpha, dataset, retriever)
        g = self.grid
        rows = g[(g["dataset"] == dataset) & (g["k"] == int(k))]
        rows = rows[np.isclose(rows["alpha"], float(alpha), atol=1e-9)]
        if retriever is not None:
            rows = rows[rows["retriever"] == retriever]
        return rows.reset_index(drop=True)

    def _check_setting(
        self, k: int, alpha: float, dataset: str | None, retriever: str | None
    ) -> str:
        if dataset is None:
            dataset = self.datasets[0]
        if dataset not in self.datasets:
            raise InputError(f"dataset {dataset!r} is not among {self.datasets}", column="dataset")
        if int(k) not in self.ks:
            raise InputError(f"K={k} is not in the grid {list(self.ks)}", column="k")
        if not any(abs(float(alpha) - a) < 1e-9 for a in self.alphas):
            raise InputError(
                f"alpha={alpha} is not in the grid {list(self.alphas)}", column="alpha"
            )
        if retriever is not None and retriever not in self.retrievers(dataset):
            raise InputError(
                f"retriever {retriever!r} is not among {self.retrievers(dataset)}",
                column="retriever",
            )
        return dataset


def combine(frames: Sequence[WhatIfFrames]) -> WhatIfFrames:
    """Frames of several datasets as one (same K, alpha and family grid required).

    Raises
    ------
    InputError
        On an empty list, differing grids, or a dataset name given twice.
    """
    if not frames:
        raise InputError("no frames to combine")
    first = frames[0]
    for other in frames[1:]:
        if (other.ks, other.alphas, other.families) != (first.ks, first.alphas, first.families):
            raise InputError("frames to combine must share their K, alpha and family grids")
    names = [d for f in frames for d in f.datasets]
    if len(names) != len(set(names)):
        raise InputError(f"a dataset appears twice among {names}", column="dataset")
    pq = pd.concat([f.per_query for f in frames], ignore_index=True)
    return WhatIfFrames(pq, first.ks, first.alphas, first.families)


def precompute(
    qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    families: Sequence[str] = DEFAULT_FAMILIES,
    rel: int = 1,
    graded_qrels: pd.DataFrame | None = None,
    dataset: str = "dataset",
) -> WhatIfFrames:
    """Evaluate every run on every measure of the (K, alpha) grid, per query.

    Parameters
    ----------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance`` (int); read by the binary families.
        ``NuggetRecall`` needs nugget qrels (:func:`ragnb.judge.nuggets.nugget_qrels`: a
        ``subtopic`` and an ``importance`` column), of which the binary families read each
        passage's best support grade.
    runs : mapping of str to DataFrame
        Retriever name -> run frame (``query_id``, ``doc_id``, ``score``), e.g. from
        :func:`load_runs` or :func:`compute_runs`. Ordered by score as trec_eval does.
    ks : sequence of int
        Cutoffs K >= 1.
    alphas : sequence of float in [0, 1]
    families : sequence of str
        Families of :data:`SUPPORTED_FAMILIES`.
    rel : int, default 1
        Minimum grade counted relevant by the binary families.
    graded_qrels : DataFrame, optional
        Qrels on Dallaire's 1-5 scale (:func:`ragnb.measures.map_grades`), required by the graded
        families (RA-nWG, ...).
    dataset : str, default "dataset"
        Name written in the ``dataset`` column.

    Returns
    -------
    WhatIfFrames
        ``per_query`` holds ``len(runs) x n_queries x len(measures)`` rows, see
        :func:`grid_measures`.

    Raises
    ------
    InputError
        On an empty ``runs``, a bad grid, graded families without ``graded_qrels``, or malformed
        qrels or runs (from :func:`ragnb.evaluation.evaluate.evaluate`).

    Notes
    -----
    Each run is joined with the qrels once per qrels kind; all measures read the same arrays. F is
    Primer eq. 2, ``n_p / (alpha K + (1 - alpha) N_p)``; T is eq. 3, ``(1 - alpha) n_p - alpha
    n_n / K``; RA-nWG@K is Dallaire's Section 2.4 ratio of observed to ideal rarity-weighted gain.

    Examples
    --------
    >>> qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    >>> run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["x", "a"], "score": [2.0, 1.0]})
    >>> fr = precompute(qrels, {"r": run}, ks=[2], alphas=[0, 1], families=["F"])
    >>> fr.grid[["alpha", "value"]].to_dict("list")   # F(0)@2 = R@2 = 1, F(1)@2 = P@2 = 0.5
    {'alpha': [0.0, 1.0], 'value': [1.0, 0.5]}
    """
    if not runs:
        raise InputError("no runs to evaluate", column="retrievers")
    grid = alpha_grid(alphas)
    fams = tuple(dict.fromkeys(families))
    measures = grid_measures(ks, grid, fams, rel)
    graded = [m for m in measures if m.family in GRADED_FAMILIES]
    binary = [m for m in measures if m.family not in GRADED_FAMILIES]
    if graded and graded_qrels is None:
        raise InputError(
            f"families {sorted({m.family for m in graded})} need graded_qrels (grades 1-5)",
            column="families",
        )
    parts = []
    for name, run in runs.items():
        for q, ms in ((qrels, binary), (graded_qrels, graded)):
            if not ms:
                continue
            res = evaluate(q, run, ms)
            parts.append(res.per_query.assign(retriever=name))
    per_query = pd.concat(parts, ignore_index=True)
    by_name = {m.name: m for m in measures}
    meta = pd.DataFrame(
        {
            "measure": list(by_name),
            "family": [m.family for m in by_name.values()],
            "k": [m.cutoff for m in by_name.values()],
            "alpha": [m.params.get("alpha", np.nan) for m in by_name.values()],
        }
    )
    per_query = per_query.merge(meta, on="measure", how="left", validate="many_to_one")
    per_query["dataset"] = dataset
    per_query["k"] = per_query["k"].astype(np.int64)
    per_query["alpha"] = per_query["alpha"].astype(np.float64)
    cols = ["dataset", "retriever", "family", "k", "alpha", "measure", "query_id", "value"]
    return WhatIfFrames(per_query[cols], tuple(sorted({int(k) for k in ks})), grid, fams)


def _score(rows: pd.DataFrame) -> np.ndarray:
    """``value`` oriented so that higher is better: negated for :data:`LOWER_IS_BETTER`."""
    sign = np.where(rows["family"].isin(LOWER_IS_BETTER), -1.0, 1.0)
    return np.asarray(rows["value"].to_numpy() * sign)


def slider_table(
    frames: WhatIfFrames, dataset: str | None = None, *, max_rows: int = MAX_CHART_ROWS
) -> pd.DataFrame:
    """The inline table behind the report's K and alpha sliders: aggregates, not per-query rows.

    Parameters
    ----------
    frames : WhatIfFrames
    dataset : str, optional
        Default: the first dataset.
    max_rows : int, default 5000
        Altair's inline-row limit.

    Returns
    -------
    DataFrame
        Columns ``retriever``, ``family``, ``order`` (int, the family's position), ``k``,
        ``alpha``, ``has_alpha``, ``value``, ``score`` (``value``, negated where lower is
        better), ``n_valid``; ``retrievers x Ks x alphas x families`` rows.

    Raises
    ------
    InputError
        When that product exceeds ``max_rows`` (the message shows the arithmetic), or on an
        unknown dataset.
    """
    dataset = dataset or frames.datasets[0]
    if dataset not in frames.datasets:
        raise InputError(f"dataset {dataset!r} is not among {frames.datasets}", column="dataset")
    n_ret = len(frames.retrievers(dataset))
    check_rows(n_ret, len(frames.ks), len(frames.alphas), len(frames.families), max_rows)
    g = frames.grid
    rows = g[g["dataset"] == dataset].copy()
    rows["order"] = rows["family"].map({f: i for i, f in enumerate(frames.families)})
    rows["score"] = _score(rows)
    cols = ["retriever", "family", "order", "k", "alpha", "has_alpha", "value", "score", "n_valid"]
    return rows[cols].reset_index(drop=True)


def rank_table(
    frames: WhatIfFrames, rank_families: Sequence[str] = ("F", "T", "RA-nWG")
) -> pd.DataFrame:
    """The rank of each retriever at every (K, alpha), by each family.

    Parameters
    ----------
    frames : WhatIfFrames
    rank_families : sequence of str
        Families of ``frames.families``; RA-nWG and the other alpha-free families give the same
        ranking at every alpha.

    Returns
    -------
    DataFrame
        Columns ``dataset``, ``family``, ``k``, ``alpha``, ``retriever``, ``value``, ``rank``
        (int, 1 = best; ties share the smallest rank; a NaN value ranks last), ``top`` (str: the
        rank-1 retrievers joined by ``" = "``, sorted by name).

    Raises
    ------
    InputError
        On a family not in the frames.
    """
    missing = [f for f in rank_families if f not in frames.families]
    if missing:
        raise InputError(
            f"rank_families {missing} are not among {list(frames.families)}",
            column="rank_families",
        )
    g = frames.grid
    rows = g[g["family"].isin(list(rank_families))].copy()
    keys = ["dataset", "family", "k", "alpha"]
    rows["_score"] = _score(rows)
    rows["rank"] = (
        rows.groupby(keys)["_score"]
        .rank(method="min", ascending=False, na_option="bottom")
        .astype(np.int64)
    )
    tops = (
        rows[rows["rank"] == 1]
        .groupby(keys)["retriever"]
        .agg(lambda s: " = ".join(sorted(s)))
        .rename("top")
    )
    rows = rows.merge(tops, left_on=keys, right_index=True, how="left")
    cols = [*keys, "retriever", "value", "rank", "top"]
    return rows[cols].reset_index(drop=True)


def top_changes(ranks: pd.DataFrame) -> pd.DataFrame:
    """How often the top system changes across the grid, per dataset and family.

    Parameters
    ----------
    ranks : DataFrame
        From :func:`rank_table`.

    Returns
    -------
    DataFrame
        One row per (``dataset``, ``family``): ``settings`` (int, K x alpha settings),
        ``distinct_tops`` (int, different rank-1 outcomes, a tie counting as its own outcome),
        ``most_common_top`` (str), ``share_most_common`` (float in [0, 1], share of the settings
        it holds), ``alpha_steps`` and ``alpha_changes`` (int: neighbouring alphas at a fixed K,
        and how many of them change the top), ``k_steps`` and ``k_changes`` (the same along K at
        a fixed alpha), ``distinct_rankings`` (int, different full orders of the retrievers).

    Examples
    --------
    >>> ranks = pd.DataFrame({"dataset": "d", "family": "F", "k": [1, 1, 1, 1],
    ...     "alpha": [0.0, 0.0, 1.0, 1.0], "retriever": ["a", "b", "a", "b"],
    ...     "value": [1.0, 0.0, 0.0, 1.0], "rank": [1, 2, 2, 1], "top": ["a", "a", "b", "b"]})
    >>> top_changes(ranks)[["distinct_tops", "alpha_changes", "k_steps"]].to_dict("records")
    [{'distinct_tops': 2, 'alpha_changes': 1, 'k_steps': 0}]
    """
    keys = ["dataset", "family", "k", "alpha"]
    settings = ranks.drop_duplicates(keys)[keys + ["top"]].sort_values(keys, kind="stable")
    order = (
        ranks.sort_values([*keys, "rank", "retriever"], kind="stable")
        .groupby(keys, sort=True)["retriever"]
        .agg(lambda s: " > ".join(s))
        .rename("ranking")
        .reset_index()
    )
    out = []
    for (dataset, family), s in settings.groupby(["dataset", "family"], sort=False):
        counts = s["top"].value_counts()
        by_alpha = s.sort_values(["k", "alpha"]).groupby("k")["top"]
        alpha_steps = int((by_alpha.size() - 1).clip(lower=0).sum())
        alpha_changes = int(
            by_alpha.agg(lambda t: int((t.to_numpy()[1:] != t.to_numpy()[:-1]).sum())).sum()
        )
        by_k = s.sort_values(["alpha", "k"]).groupby("alpha")["top"]
        k_steps = int((by_k.size() - 1).clip(lower=0).sum())
        k_changes = int(
            by_k.agg(lambda t: int((t.to_numpy()[1:] != t.to_numpy()[:-1]).sum())).sum()
        )
        ro = order[(order["dataset"] == dataset) & (order["family"] == family)]
        out.append(
            {
                "dataset": dataset,
                "family": family,
                "settings": len(s),
                "distinct_tops": int(counts.size),
                "most_common_top": str(counts.index[0]),
                "share_most_common": float(counts.iloc[0] / len(s)),
                "alpha_steps": alpha_steps,
                "alpha_changes": alpha_changes,
                "k_steps": k_steps,
                "k_changes": k_changes,
                "distinct_rankings": int(ro["ranking"].nunique()),
            }
        )
    return pd.DataFrame(out)


# the registry must know every supported family (a renamed family fails here, at import)
_unknown = [f for f in SUPPORTED_FAMILIES if f not in registered_families()]
if _unknown:  # pragma: no cover
    raise ImportError(f"ragnb.studies.whatif.grid: unknown measure families {_unknown}")
