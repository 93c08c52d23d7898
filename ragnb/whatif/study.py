"""What-if tuning of K and alpha over precomputed runs: the analysis behind notebook 06.

Runs are computed (or read) once; every measure is then evaluated on a grid of cutoffs K and
trade-off weights alpha, per query, so moving K or alpha afterwards is a table lookup: nothing is
embedded or retrieved again. Data flows one way: runs + qrels -> :func:`precompute` (per-query
values) -> :meth:`WhatIfFrames.grid` (macro means per retriever, family, K, alpha) ->
:func:`slider_table` (the small inline table behind the report's sliders), :func:`rank_table` and
:func:`top_changes` (how stable the system ranking is across alpha and K).

The measures are Primer's F (eq. 2) and T (eq. 3), whose alpha trades precision against recall
(F) or found relevant documents against the share of non-relevant ones (T); Dallaire's RA-nWG@K
(no alpha: constant along alpha); and trec_eval's P, R and nDCG (no alpha either).

Row budget of the report's slider chart
---------------------------------------
The chart inlines one row per (retriever, K, alpha, family), alpha-free families repeated at every
alpha, so ``rows = retrievers x Ks x alphas x families``. Altair refuses more than 5,000 inline
rows by default; the default grid, 3 retrievers x 7 Ks x 21 alphas x 6 families = 2,646 rows,
fits. A grid above :data:`MAX_CHART_ROWS` raises :class:`~ragnb.errors.InputError` (coarsen the
alpha step or drop a K).

References
----------
.. [1] S. Schwartz, O. Vasilyev and R. Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer Technologies, Section 2.1, eqs. 1-4.
.. [2] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Sections 2.3-2.4.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.embed.base import DEFAULT_MODEL
from ragnb.errors import InputError
from ragnb.evaluate import evaluate
from ragnb.io import BeirDataset, read_beir, read_run
from ragnb.measures import GRADED_FAMILIES, Measure, map_grades, resolve_grade_map
from ragnb.measures import families as registered_families
from ragnb.params import NotebookParams, resolve_path
from ragnb.provenance import versions
from ragnb.retrieve import RETRIEVERS, make_retriever

__all__ = [
    "ALPHA_FAMILIES",
    "DEFAULT_ALPHAS",
    "DEFAULT_FAMILIES",
    "MAX_CHART_ROWS",
    "WhatIf",
    "WhatIfConfig",
    "WhatIfFrames",
    "chart_rows",
    "compute_runs",
    "grid_measures",
    "load_runs",
    "precompute",
    "rank_table",
    "run_what_if",
    "slider_table",
    "top_changes",
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
)
#: Families where a lower value is better (the rank table ranks them ascending).
LOWER_IS_BETTER = ("Harm",)
DEFAULT_FAMILIES = ("F", "T", "RA-nWG", "P", "R", "nDCG")
DEFAULT_KS = (1, 3, 5, 10, 20, 30, 50)
#: 0, 0.05, ..., 1 (21 values).
DEFAULT_ALPHAS = tuple(round(0.05 * i, 2) for i in range(21))
#: Altair's default limit on inline rows, which the slider chart must respect.
MAX_CHART_ROWS = 5000
#: Map of binary qrels onto Dallaire's 1-5 scale when RA-nWG is asked for on binary data.
BINARY_GRADE_MAP = {1: 5, 0: 1}


def _alpha_grid(alphas: Iterable[float]) -> tuple[float, ...]:
    """Sorted, de-duplicated alphas rounded to 6 decimals (so 0.1 + 0.2 reads 0.3)."""
    return tuple(sorted({round(float(a), 6) for a in alphas}))


def chart_rows(n_retrievers: int, n_ks: int, n_alphas: int, n_families: int) -> int:
    """Inline rows of the slider chart: ``retrievers x Ks x alphas x families``.

    Examples
    --------
    >>> chart_rows(3, 7, 21, 6)
    2646
    """
    return n_retrievers * n_ks * n_alphas * n_families


def _check_rows(n_retrievers: int, n_ks: int, n_alphas: int, n_families: int, limit: int) -> None:
    rows = chart_rows(n_retrievers, n_ks, n_alphas, n_families)
    if rows > limit:
        raise InputError(
            f"the slider chart would inline {n_retrievers} retrievers x {n_ks} K x {n_alphas} "
            f"alpha x {n_families} families = {rows:,} rows, above the limit of {limit:,} "
            "(altair's default): coarsen the alpha grid, drop cutoffs, retrievers or families",
            column="alphas",
        )


@dataclass
class WhatIfConfig(NotebookParams):
    """Parameters of notebook 06 (``notebooks/06_what_if.ipynb``).

    Attributes
    ----------
    dataset : str
        BEIR folder; relative paths are taken from the project root.
    split : str
        Qrels split to evaluate.
    runs_dir : str
        Folder of TREC run files (``<retriever>.trec``, e.g. notebook 01's
        ``reports/01_retrieval_evaluation/runs``); empty: compute the runs of ``retrievers``.
    retrievers : list of str
        With ``runs_dir``: the run files to read (empty list: every ``*.trec`` of the folder);
        without: any of ``"bm25"``, ``"dense"``, ``"hybrid"``.
    embedder : str
        Embedder of the dense and hybrid retrievers (:func:`ragnb.embed.make_embedder` name).
    depth : int
        Documents retrieved per query when runs are computed; at least ``max(ks)``.
    ks : list of int
        The grid of cutoffs K.
    alphas : list of float
        The grid of alpha, each in [0, 1].
    families : list of str
        Measure families evaluated at every K (and every alpha for F, F_e, T, T_u).
    rank_families : list of str
        Families whose system rankings are compared across the grid.
    headline_k : int
        Initial K of the sliders and widgets; one of ``ks``.
    headline_alpha : float
        Initial alpha; one of ``alphas``.
    rel : int
        Minimum grade counted relevant by the binary measures.
    grade_map : str
        Grades onto Dallaire's 1-5 scale for RA-nWG and the other graded families, as in
        notebook 01 (:func:`ragnb.measures.resolve_grade_map`); with ``"auto"`` on binary qrels
        relevant documents become grade 5 (then RA-nWG@K = n_p / min(K, N_p)).
    rrf_k : int
        Reciprocal rank fusion constant of the hybrid retriever.
    cache_dir : str
        Embedding cache folder; empty for ``$RAGNB_CACHE_DIR`` or ``~/.cache/ragnb``.
    max_chart_rows : int
        Inline row limit of the slider chart (see the module notes).
    widgets : {"auto", "on", "off"}
        The ipywidgets controls (:class:`~.widgets.WhatIfWidget`): ``"auto"`` builds them
        only under an interactive frontend such as JupyterLab
        (:func:`~.widgets.interactive_frontend`), not when papermill renders a report (whose
        sliders are altair's and need no kernel); ``"on"`` always, ``"off"`` never.
    """

    dataset: str = "data/pydocs"
    split: str = "test"
    runs_dir: str = ""
    retrievers: list[str] = field(default_factory=lambda: list(RETRIEVERS))
    embedder: str = DEFAULT_MODEL
    depth: int = 100
    ks: list[int] = field(default_factory=lambda: list(DEFAULT_KS))
    alphas: list[float] = field(default_factory=lambda: list(DEFAULT_ALPHAS))
    families: list[str] = field(default_factory=lambda: list(DEFAULT_FAMILIES))
    rank_families: list[str] = field(default_factory=lambda: ["F", "T", "RA-nWG"])
    headline_k: int = 10
    headline_alpha: float = 0.5
    rel: int = 1
    grade_map: str = "auto"
    rrf_k: int = 60
    cache_dir: str = ""
    max_chart_rows: int = MAX_CHART_ROWS
    widgets: str = "auto"

    def __post_init__(self) -> None:
        if self.widgets not in ("auto", "on", "off"):
            raise InputError(
                f"widgets must be 'auto', 'on' or 'off', got {self.widgets!r}", column="widgets"
            )
        if not self.runs_dir:
            unknown = [r for r in self.retrievers if r not in RETRIEVERS]
            if unknown or not self.retrievers:
                raise InputError(
                    f"without runs_dir, retrievers must be among {list(RETRIEVERS)}, "
                    f"got {self.retrievers}",
                    column="retrievers",
                )
        _check_grid(self.ks, self.alphas, self.families)
        bad = [f for f in self.rank_families if f not in self.families]
        if bad:
            raise InputError(
                f"rank_families {bad} are not in families {self.families}", column="rank_families"
            )
        if int(self.headline_k) not in [int(k) for k in self.ks]:
            raise InputError(
                f"headline_k={self.headline_k} is not in ks {self.ks}", column="headline_k"
            )
        if round(float(self.headline_alpha), 6) not in _alpha_grid(self.alphas):
            raise InputError(
                f"headline_alpha={self.headline_alpha} is not in alphas", column="headline_alpha"
            )
        if not self.runs_dir and max(self.ks) > self.depth:
            raise InputError(
                f"the largest K ({max(self.ks)}) exceeds depth ({self.depth})", column="ks"
            )
        if self.retrievers:
            _check_rows(
                len(self.retrievers),
                len(set(self.ks)),
                len(_alpha_grid(self.alphas)),
                len(set(self.families)),
                self.max_chart_rows,
            )


def _check_grid(ks: Sequence[int], alphas: Sequence[float], fams: Sequence[str]) -> None:
    if not ks or any(isinstance(k, bool) or not float(k).is_integer() or k < 1 for k in ks):
        raise InputError(f"ks must be positive integers, got {list(ks)}", column="ks")
    if not alphas or any(not 0.0 <= float(a) <= 1.0 for a in alphas):
        raise InputError(f"alphas must lie in [0, 1], got {list(alphas)}", column="alphas")
    unknown = [f for f in fams if f not in SUPPORTED_FAMILIES]
    if unknown or not fams:
        raise InputError(
            f"families must be among {list(SUPPORTED_FAMILIES)}, got {list(fams)}",
            column="families",
        )


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
    ks, grid, fams = sorted({int(k) for k in ks}), _alpha_grid(alphas), list(dict.fromkeys(fams))
    _check_grid(ks, grid, fams)
    out: list[Measure] = []
    for k in ks:
        for fam in fams:
            if fam in ALPHA_FAMILIES:
                out += [Measure(fam, k, alpha=a, rel=rel) for a in grid]
            elif fam in GRADED_FAMILIES or fam == "nDCG":
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
        qrels or runs (from :func:`ragnb.evaluate.evaluate`).

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
    grid = _alpha_grid(alphas)
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
    _check_rows(n_ret, len(frames.ks), len(frames.alphas), len(frames.families), max_rows)
    g = frames.grid
    rows = g[g["dataset"] == dataset].copy()
    rows["order"] = rows["family"].map({f: i for i, f in enumerate(frames.families)})
    sign = np.where(rows["family"].isin(LOWER_IS_BETTER), -1.0, 1.0)
    rows["score"] = rows["value"].to_numpy() * sign
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
    sign = np.where(rows["family"].isin(LOWER_IS_BETTER), -1.0, 1.0)
    rows["_score"] = rows["value"].to_numpy() * sign
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


# ----------------------------------------------------------------------------- runs


def load_runs(runs_dir: str | Path, retrievers: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    """Read TREC run files ``<name>.trec`` from a folder (notebook 01 exports ``runs/``).

    Parameters
    ----------
    runs_dir : str or Path
        The folder; relative paths are taken from the project root.
    retrievers : sequence of str
        Names to read (``<name>.trec``); empty: every ``*.trec`` of the folder, sorted by name.

    Returns
    -------
    dict of str to DataFrame
        Name -> run frame (:func:`ragnb.io.read_run`).

    Raises
    ------
    InputError
        When the folder is missing, holds no ``.trec`` file, or lacks a requested one.
    """
    folder = resolve_path(str(runs_dir))
    if not folder.is_dir():
        raise InputError("runs_dir is not a folder", path=folder, column="runs_dir")
    available = sorted(p.stem for p in folder.glob("*.trec"))
    if not available:
        raise InputError("runs_dir holds no .trec run file", path=folder, column="runs_dir")
    names = list(retrievers) or available
    missing = [n for n in names if n not in available]
    if missing:
        raise InputError(
            f"no run file for {missing}; the folder holds {available}",
            path=folder,
            column="retrievers",
        )
    return {n: read_run(folder / f"{n}.trec") for n in names}


def compute_runs(
    dataset: BeirDataset,
    retrievers: Sequence[str],
    *,
    embedder: str = DEFAULT_MODEL,
    depth: int = 100,
    rrf_k: int = 60,
    cache_dir: str = "",
    progress: bool = True,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]], dict[str, Any]]:
    """Run the retrievers once on the judged queries (the dense index is shared with hybrid).

    Parameters
    ----------
    dataset : BeirDataset
    retrievers : sequence of str
        Any of ``"bm25"``, ``"dense"``, ``"hybrid"``.
    embedder : str
        Name for :func:`ragnb.embed.make_embedder`, through the embedding cache.
    depth : int
        Documents per query.
    rrf_k : int
    cache_dir : str
    progress : bool

    Returns
    -------
    runs : dict of str to DataFrame
    described : dict of str to dict
        Each retriever's configuration, with ``seconds`` (index + retrieve, wall clock).
    cache : dict
        Cache location and hit/miss counts.
    """
    from ragnb.cache import Cache
    from ragnb.retrieve import BM25Retriever, DenseRetriever, HybridRetriever

    cache = Cache(cache_dir or None)
    queries = dataset.judged_queries
    runs: dict[str, pd.DataFrame] = {}
    described: dict[str, dict[str, Any]] = {}
    dense: DenseRetriever | None = None
    for name in retrievers:
        start = time.perf_counter()
        if name == "hybrid" and dense is not None:
            retriever: Any = HybridRetriever(BM25Retriever(), dense, rrf_k=rrf_k, depth=depth)
            retriever.first.index(dataset.corpus)
        else:
            retriever = make_retriever(
                name, model=embedder, rrf_k=rrf_k, depth=depth, cache=cache, progress=progress
            )
            retriever.index(dataset.corpus)
        if isinstance(retriever, DenseRetriever):
            dense = retriever
        runs[name] = retriever.retrieve(queries, k=depth)
        described[name] = {**retriever.describe(), "seconds": time.perf_counter() - start}
    return runs, described, cache.summary()


# ----------------------------------------------------------------------------- the analysis


@dataclass
class WhatIf:
    """The outcome of :func:`run_what_if`.

    Attributes
    ----------
    config : WhatIfConfig
    dataset : BeirDataset
    runs : dict of str to DataFrame
    frames : WhatIfFrames
        Per-query values on the grid; ``frames.grid`` holds the aggregates.
    ranks : DataFrame
        :func:`rank_table` over ``config.rank_families``.
    changes : DataFrame
        :func:`top_changes` of ``ranks``.
    source : dict
        Where the runs came from: ``{"runs_dir": ...}`` or the retrievers' configurations.
    cache : dict
        Embedding cache location and counts (none when the runs were read from files).
    grade_map : tuple of (str, dict) or None
        The map onto 1-5 used by the graded families.
    seconds : dict of str to float
        ``runs`` (retrieval or reading) and ``grid`` (evaluation of the whole grid), wall clock.
    """

    config: WhatIfConfig
    dataset: BeirDataset
    runs: dict[str, pd.DataFrame]
    frames: WhatIfFrames
    ranks: pd.DataFrame
    changes: pd.DataFrame
    source: dict[str, Any]
    cache: dict[str, Any]
    grade_map: tuple[str, dict[int, int]] | None
    seconds: dict[str, float]

    def slider_table(self) -> pd.DataFrame:
        """:func:`slider_table` of this dataset, with the configured row limit."""
        return slider_table(self.frames, max_rows=self.config.max_chart_rows)

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers, in the shape of :func:`ragnb.tables.provenance_markdown`."""
        retrievers = {
            name: {k: v for k, v in desc.items() if k != "seconds"}
            for name, desc in self.source.get("retrievers", {}).items()
        }
        if "runs_dir" in self.source:
            retrievers = {n: {"run_file": f"{self.source['runs_dir']}/{n}.trec"} for n in self.runs}
        return {
            "dataset": self.dataset.summary(),
            "config": asdict(self.config),
            "grade_map": None
            if self.grade_map is None
            else {
                "name": self.grade_map[0],
                "map": {str(k): v for k, v in self.grade_map[1].items()},
            },
            "retrievers": retrievers,
            "timings_s": {
                n: d.get("seconds", float("nan"))
                for n, d in self.source.get("retrievers", {}).items()
            },
            "cache": self.cache,
            "versions": versions(),
        }


def _grade_map(config: WhatIfConfig, qrels: pd.DataFrame) -> tuple[str, dict[int, int]] | None:
    if not any(f in GRADED_FAMILIES for f in config.families):
        return None
    resolved = resolve_grade_map(config.grade_map, qrels)
    if resolved is None and config.grade_map == "auto":
        return "binary", dict(BINARY_GRADE_MAP)
    if resolved is None:
        raise InputError(
            "graded families need a grade map; grade_map='none' leaves none", column="grade_map"
        )
    return resolved


def run_what_if(
    config: WhatIfConfig, *, dataset: BeirDataset | None = None, progress: bool = True
) -> WhatIf:
    """Get the runs (read or computed once) and evaluate them on the whole (K, alpha) grid.

    Parameters
    ----------
    config : WhatIfConfig
    dataset : BeirDataset, optional
        Already loaded data (default: read ``config.dataset``).
    progress : bool
        Progress bars while embedding.

    Returns
    -------
    WhatIf

    Raises
    ------
    InputError
        Bad runs folder, grade map, or a grid whose slider chart exceeds ``max_chart_rows``.
    """
    if dataset is None:
        dataset = read_beir(resolve_path(config.dataset), split=config.split)
    start = time.perf_counter()
    cache: dict[str, Any] = {}
    if config.runs_dir:
        runs = load_runs(config.runs_dir, config.retrievers)
        source: dict[str, Any] = {"runs_dir": str(resolve_path(config.runs_dir))}
        cache = {"path": "not used (runs read from files)", "namespaces": {}}
    else:
        runs, described, cache = compute_runs(
            dataset,
            config.retrievers,
            embedder=config.embedder,
            depth=config.depth,
            rrf_k=config.rrf_k,
            cache_dir=config.cache_dir,
            progress=progress,
        )
        source = {"retrievers": described}
    t_runs = time.perf_counter() - start
    _check_rows(
        len(runs),
        len(set(config.ks)),
        len(_alpha_grid(config.alphas)),
        len(set(config.families)),
        config.max_chart_rows,
    )
    grade_map = _grade_map(config, dataset.qrels)
    graded_qrels = None if grade_map is None else map_grades(dataset.qrels, grade_map[1])
    start = time.perf_counter()
    frames = precompute(
        dataset.qrels,
        runs,
        ks=config.ks,
        alphas=config.alphas,
        families=config.families,
        rel=config.rel,
        graded_qrels=graded_qrels,
        dataset=dataset.name,
    )
    ranks = rank_table(frames, config.rank_families)
    changes = top_changes(ranks)
    t_grid = time.perf_counter() - start
    return WhatIf(
        config,
        dataset,
        runs,
        frames,
        ranks,
        changes,
        source,
        cache,
        grade_map,
        {"runs": t_runs, "grid": t_grid},
    )


# the registry must know every supported family (a renamed family fails here, at import)
_unknown = [f for f in SUPPORTED_FAMILIES if f not in registered_families()]
if _unknown:  # pragma: no cover
    raise ImportError(f"ragnb.whatif.study: unknown measure families {_unknown}")
