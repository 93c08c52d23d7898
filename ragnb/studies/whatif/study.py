"""What-if tuning of K and alpha over precomputed runs: notebook 06's configuration and pipeline.

The grid itself (per-query values, aggregates, ranks) lives in :mod:`ragnb.studies.whatif.grid`;
this module reads or computes the runs and runs the pipeline.

Runs are computed (or read) once; every measure is then evaluated on a grid of cutoffs K and
trade-off weights alpha, per query, so moving K or alpha afterwards is a table lookup: nothing is
embedded or retrieved again. Data flows one way: runs + qrels ->
:func:`~ragnb.studies.whatif.grid.precompute` (per-query values) ->
:meth:`~ragnb.studies.whatif.grid.WhatIfFrames.grid` (macro means per retriever, family, K, alpha)
-> :func:`~ragnb.studies.whatif.grid.slider_table` (the small inline table behind the report's
sliders), :func:`~ragnb.studies.whatif.grid.rank_table` and
:func:`~ragnb.studies.whatif.grid.top_changes` (how stable the system ranking is across alpha and
K).

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
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.core.lazylibs import MissingExtra
from ragnb.core.paths import resolve_path
from ragnb.core.provenance import versions
from ragnb.core.validation import check_among, check_choice
from ragnb.embed import STUDY_MODEL
from ragnb.errors import InputError
from ragnb.io.files import BeirDataset
from ragnb.io.readers import read_run
from ragnb.measures import GRADED_FAMILIES, grade_map_record, map_grades, resolve_grade_map
from ragnb.report.params import SAMPLE_DATASET, NotebookParams, fill_runner_doc
from ragnb.report.protocol import StudyResultBase
from ragnb.report.tables import provenance_markdown
from ragnb.retrievers.retrieve import RETRIEVERS, compute_runs
from ragnb.studies.whatif.grid import (
    DEFAULT_ALPHAS,
    DEFAULT_FAMILIES,
    DEFAULT_KS,
    MAX_CHART_ROWS,
    WhatIfFrames,
    alpha_grid,
    check_grid,
    check_rows,
    precompute,
    rank_table,
    slider_table,
    top_changes,
)

__all__ = ["BINARY_GRADE_MAP", "WhatIf", "WhatIfConfig", "compute_runs", "load_runs", "run"]

#: Map of binary qrels onto Dallaire's 1-5 scale when RA-nWG is asked for on binary data.
BINARY_GRADE_MAP = {1: 5, 0: 1}


@dataclass
class WhatIfConfig(NotebookParams):
    """Parameters of notebook 06 (``notebooks/06_what_if.ipynb``).

    ``dataset``, ``split`` and ``cache_dir`` are :class:`~ragnb.report.params.NotebookParams`' own.

    Attributes
    ----------
    runs_dir : str
        Folder of TREC run files (``<retriever>.trec``, e.g. notebook 01's
        ``reports/01_retrieval_evaluation/runs``); empty: compute the runs of ``retrievers``.
    retrievers : list of str
        With ``runs_dir``: the run files to read (empty list: every ``*.trec`` of the folder);
        without: any of ``"bm25"``, ``"dense"``, ``"hybrid"``.
    embedder : str
        Embedder of the dense and hybrid retrievers (:func:`ragnb.embed.make_embedder` name;
        default :data:`ragnb.embed.STUDY_MODEL`).
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
        relevant documents become grade 5 (then RA-nWG@K is n_p / min(K, N_p)).
    rrf_k : int
        Reciprocal rank fusion constant of the hybrid retriever.
    max_chart_rows : int
        Inline row limit of the slider chart (see the module notes).
    widgets : {"auto", "on", "off"}
        The ipywidgets controls (:class:`ragnb.studies.whatif.widgets.WhatIfWidget`): ``"auto"``
        builds them only under an interactive frontend such as JupyterLab
        (:func:`ragnb.studies.whatif.widgets.interactive_frontend`), not when papermill renders a
        report (whose sliders are altair's and need no kernel); ``"on"`` always, ``"off"``
        never.
    """

    dataset: str = SAMPLE_DATASET
    split: str = "test"
    runs_dir: str = ""
    retrievers: list[str] = field(default_factory=lambda: list(RETRIEVERS))
    embedder: str = STUDY_MODEL
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
        check_choice(self.widgets, "widgets", ("auto", "on", "off"))
        if not self.runs_dir:  # else the names of run files
            check_among(self.retrievers, "retrievers", RETRIEVERS)
        check_grid(self.ks, self.alphas, self.families)
        bad = [f for f in self.rank_families if f not in self.families]
        if bad:
            raise InputError(
                f"rank_families {bad} are not in families {self.families}", column="rank_families"
            )
        if int(self.headline_k) not in [int(k) for k in self.ks]:
            raise InputError(
                f"headline_k={self.headline_k} is not in ks {self.ks}", column="headline_k"
            )
        if round(float(self.headline_alpha), 6) not in alpha_grid(self.alphas):
            raise InputError(
                f"headline_alpha={self.headline_alpha} is not in alphas", column="headline_alpha"
            )
        if not self.runs_dir and max(self.ks) > self.depth:
            raise InputError(
                f"the largest K ({max(self.ks)}) exceeds depth ({self.depth})", column="ks"
            )
        if self.retrievers:
            check_rows(
                len(self.retrievers),
                len(set(self.ks)),
                len(alpha_grid(self.alphas)),
                len(set(self.families)),
                self.max_chart_rows,
            )


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
        Name -> run frame (:func:`ragnb.io.readers.read_run`).

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


# ----------------------------------------------------------------------------- the analysis


@dataclass
class WhatIf(StudyResultBase):
    """The outcome of :func:`run`.

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

    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by the stem of their exported CSV file.

        Returns
        -------
        dict of str to DataFrame
            ``grid`` (macro means per retriever, family, K and alpha:
            :attr:`~ragnb.studies.whatif.grid.WhatIfFrames.grid`), ``slider`` (the table behind the
            report's sliders, :func:`~ragnb.studies.whatif.grid.slider_table`), ``ranks``
            (:func:`~ragnb.studies.whatif.grid.rank_table`), ``changes``
            (:func:`~ragnb.studies.whatif.grid.top_changes`).
        """
        return {
            "grid": self.frames.grid,
            "slider": self.slider_table(),
            "ranks": self.ranks,
            "changes": self.changes,
        }

    def charts(self) -> dict[str, Any]:
        """The charts of :mod:`ragnb.studies.whatif.charts` by name, with sliders at the headline K
        and alpha; none without altair (the ``notebooks`` extra).

        Returns
        -------
        dict of str to altair chart
            ``what_if`` (:func:`~ragnb.studies.whatif.charts.what_if_chart`) and ``rank_bump``
            (:func:`~ragnb.studies.whatif.charts.rank_bump_chart`).
        """
        try:
            import ragnb.studies.whatif.charts as charts
        except MissingExtra:
            return {}
        c = self.config
        k, alpha, rows = c.headline_k, c.headline_alpha, c.max_chart_rows
        return {
            "what_if": charts.what_if_chart(self.slider_table(), k=k, alpha=alpha, max_rows=rows),
            "rank_bump": charts.rank_bump_chart(self.ranks, k=k, alpha=alpha, max_rows=rows),
        }

    def banner(self) -> str:
        """The first screen, as Markdown: what produced the numbers
        (:func:`ragnb.report.tables.provenance_markdown`), where the runs came from, the grid and
        its inline rows, the grade map of RA-nWG and the time the grid took."""
        c = self.config
        source = self.source.get("runs_dir") or "computed in this notebook"
        ks, alphas, families = self.frames.ks, self.frames.alphas, self.frames.families
        if self.grade_map is None:
            grade = "no graded family"
        else:
            pairs = ", ".join(f"{g} -> {u}" for g, u in self.grade_map[1].items())
            grade = f"grade map `{self.grade_map[0]}` ({pairs})"
        facts = (
            f"Runs: {source}. Grid: {len(ks)} K x {len(alphas)} alpha; "
            f"{len(self.runs)} retrievers x {len(ks)} K x {len(alphas)} alpha x "
            f"{len(families)} families = {len(self.slider_table()):,} inline rows "
            f"(limit {c.max_chart_rows:,}). RA-nWG: {grade}. Evaluating the whole grid took "
            f"{self.seconds['grid']:.1f} s."
        )
        return provenance_markdown(self.provenance()) + "\n\n" + facts

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers, shaped for :func:`ragnb.report.tables.provenance_markdown`."""
        retrievers = {
            name: {k: v for k, v in desc.items() if k != "seconds"}
            for name, desc in self.source.get("retrievers", {}).items()
        }
        if "runs_dir" in self.source:
            retrievers = {n: {"run_file": f"{self.source['runs_dir']}/{n}.trec"} for n in self.runs}
        return {
            "dataset": self.dataset.summary(),
            "config": asdict(self.config),
            "grade_map": grade_map_record(self.grade_map),
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


@fill_runner_doc
def run(
    config: WhatIfConfig, *, dataset: BeirDataset | None = None, progress: bool = True
) -> WhatIf:
    """Get the runs (read or computed once) and evaluate them on the whole (K, alpha) grid.

    Parameters
    ----------
    config : WhatIfConfig
    {{dataset}}
    progress : bool
        Progress bars while embedding (when the runs are computed).

    Returns
    -------
    WhatIf

    Raises
    ------
    InputError
        Bad runs folder, grade map, or a grid whose slider chart exceeds ``max_chart_rows``.
    """
    if dataset is None:
        dataset = config.read_dataset()
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
    check_rows(
        len(runs),
        len(set(config.ks)),
        len(alpha_grid(config.alphas)),
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
