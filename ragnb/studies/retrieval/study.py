"""The analysis behind notebook 01: several retrievers on one dataset, every core measure.

Data flows one way: a BEIR folder -> runs (one per retriever) ->
:func:`ragnb.evaluation.evaluate.evaluate` -> tidy frames -> tables and charts.
:class:`RetrievalEvaluationConfig` mirrors the notebook's ``parameters`` cell field for field (a
test checks it with ``papermill.inspect_notebook``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb import stats
from ragnb.core.lazylibs import MissingExtra
from ragnb.core.provenance import versions
from ragnb.core.validation import check_choice, check_number_in, check_positive_ints
from ragnb.embed import STUDY_MODEL
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.io.files import BeirDataset
from ragnb.measures import (
    GRADED_FAMILIES,
    Measure,
    grade_map_record,
    graded_measures,
    judged_gap_warning,
    map_grades,
    parse_measure,
    resolve_grade_map,
)
from ragnb.measures.proc import proc_table
from ragnb.report.charts import comparison_chart
from ragnb.report.params import SAMPLE_DATASET, NotebookParams, fill_runner_doc
from ragnb.report.protocol import StudyResultBase, export_note, skipped
from ragnb.report.tables import provenance_markdown
from ragnb.retrievers.fusion import Fusion, parse_fusion
from ragnb.retrievers.retrieve import RETRIEVERS, check_retrievers, compute_runs
from ragnb.studies.retrieval.contexts import CONTEXT_SIMILARITIES, context_scores, context_table
from ragnb.studies.retrieval.fusions import FusionComparison, compare_fusions
from ragnb.studies.retrieval.querygen import synthetic_notice
from ragnb.studies.retrieval.sensitivity import (
    GRID_A,
    GRID_CAP3,
    GRID_CAP4,
    check_grid,
    ranwg_sensitivity,
    sensitivity_wide,
)

__all__ = [
    "Comparison",
    "RetrievalEvaluationConfig",
    "core_measures",
    "run",
]


#: The default cutoffs K of notebook 01; with a ``depth`` below 100 they stop at ``depth``.
CUTOFFS = (1, 3, 5, 10, 20, 50, 100)
#: The default PROC candidate pool; with a ``depth`` below it, the pool is the whole run.
PROC_POOL = 100

#: Simulated experiments per search step of the power table's simulation columns (a power
#: estimate's standard error is about 0.013 at 0.8; the t-test columns are exact).
POWER_SIMULATIONS = 1000


@dataclass
class RetrievalEvaluationConfig(NotebookParams):
    """Parameters of notebook 01 (``notebooks/01_retrieval_evaluation.ipynb``).

    ``dataset``, ``split`` and ``cache_dir`` are :class:`~ragnb.report.params.NotebookParams`' own.

    Attributes
    ----------
    retrievers : list of str
        Any of ``"bm25"``, ``"dense"``, ``"hybrid"`` (RRF of BM25 and dense), ``"bm25-plain"``
        (BM25 without stemming or stop words), ``"dense:<model>"`` (a further dense retriever
        with its own embedder, e.g. ``"dense:all-MiniLM-L6-v2"``, the float model).
    runs : list of str
        TREC run files (relative to the project root) evaluated beside the retrievers, each
        named after its file's stem: e.g. the production run a golden set built from traces
        pooled (``<run folder>/runs/traces-<retriever>.trec``, notebook 02), or those
        ``ragnb traces import`` writes. Empty: none.
    qrels : str
        A TREC qrels file (relative to the project root) replacing the labels of ``split``:
        e.g. a golden set's ``golden.qrels`` (notebook 02), to compare systems on it. Its
        queries that the dataset holds are the ones evaluated. Empty: the dataset's labels.
    model : str
        Embedder for dense retrieval: a :func:`ragnb.embed.make_embedder` name (default
        :data:`ragnb.embed.STUDY_MODEL`, all-MiniLM-L6-v2 as int8 ONNX), a sentence-transformers
        name or path, or ``openai:<model>``.
    depth : int
        Documents retrieved per query (the run's length).
    cutoffs : list of int
        Cutoffs K at which each measure is computed; the default list stops at ``depth`` when
        depth is below 100 (depth 20: 1, 3, 5, 10, 20).
    headline_k : int
        The cutoff of the summary table.
    alpha : float in [0, 1]
        Weight of precision in F, F_e, T, T_u (Primer eqs. 1-4).
    rel : int
        Minimum grade counted as relevant by binary measures.
    rrf_k : int
        Constant of reciprocal rank fusion (Cormack et al. 2009).
    fusion : str
        The hybrid retriever's fusion method (:func:`ragnb.retrievers.fusion.parse_fusion`):
        ``"rrf"``, ``"wrrf"``, ``"combsum"``, ``"combmnz/z-score"``, ``"wsum"``, ... (default RRF).
    fusion_weights : list of float
        Weights of ``wsum`` / ``wrrf`` in the order BM25, dense; empty for equal weights.
    context_similarity : str
        Text similarity of the non-LLM context measures: ``"levenshtein"``,
        ``"sequence_matcher"``, ``"embedding"`` (the dense embedder) or ``"none"`` (ID-based
        measures only).
    context_tau : float
        Similarity threshold of the non-LLM context measures.
    export_dir : str
        Folder that receives the runs (TREC), the aggregate and per-query tables and the
        provenance (see :meth:`Comparison.export`); empty to export nothing. Relative paths are
        taken from the project root.
    grade_map : str
        How the qrels' grades map onto Dallaire's 1-5 utility scale for the graded set measures:
        ``"auto"`` (binary qrels: no graded measures; grades within 0-2: ``dbpedia-entity``;
        within 0-3: ``trec-dl``), ``"none"``, a name of :data:`ragnb.measures.GRADE_MAPS`, or a
        mapping written as YAML/JSON, e.g. ``"{2: 5, 1: 4, 0: 1}"``.
    proc_pool : int
        Candidate pool depth for PROC: each retriever's top ``proc_pool`` documents, ideally
        reordered (Dallaire section 2.4); the default 100 becomes ``depth`` when depth is lower.
    significance : list of str
        Measures compared between retrievers with paired bootstrap CIs and randomization tests,
        Holm-corrected; graded measures are dropped when the dataset has no grades.
    n_resamples : int
        Bootstrap and randomization resamples.
    seed : int
        Seed of the resampling.
    target_effect : float > 0
        A difference of the first significance measure to plan for (0.02: two nDCG@10
        points): the queries each pair needs to detect it (:func:`ragnb.stats.power_table`).
    target_power : float in (0, 1)
        The power of the minimum detectable effects and of the queries needed.
    sensitivity_a : list of float
        Rarity exponents of the RA-nWG sensitivity grid (Dallaire Appendix A: 0, 0.5, 1, 2).
    sensitivity_cap4 : list of float in [0, 1]
        Caps on the grade-4 weight w4 of the grid (Appendix A: 0.75, 1.0); the grid is
        computed at the headline K on graded data and always holds Dallaire's setting (a 1,
        cap4 1.0, cap3 0.25) (:func:`ragnb.studies.retrieval.sensitivity.ranwg_sensitivity`).
    sensitivity_cap3 : list of float in [0, 1]
        Caps on the grade-3 weight w3 of the grid (Appendix A: 0.20, 0.25, 0.33).
    """

    dataset: str = SAMPLE_DATASET
    split: str = "test"
    retrievers: list[str] = field(default_factory=lambda: list(RETRIEVERS))
    runs: list[str] = field(default_factory=list)
    qrels: str = ""
    model: str = STUDY_MODEL
    depth: int = 100
    cutoffs: list[int] = field(default_factory=lambda: list(CUTOFFS))
    headline_k: int = 10
    alpha: float = 0.5
    rel: int = 1
    rrf_k: int = 60
    fusion: str = "rrf"
    fusion_weights: list[float] = field(default_factory=list)
    context_similarity: str = "levenshtein"
    context_tau: float = 0.5
    cache_dir: str = ""
    export_dir: str = ""
    grade_map: str = "auto"
    proc_pool: int = PROC_POOL
    significance: list[str] = field(
        default_factory=lambda: ["nDCG@10", "R@100", "RA-nWG@10", "N-Recall4+@10"]
    )
    n_resamples: int = 10_000
    seed: int = 0
    target_effect: float = 0.02
    target_power: float = 0.8
    sensitivity_a: list[float] = field(default_factory=lambda: list(GRID_A))
    sensitivity_cap4: list[float] = field(default_factory=lambda: list(GRID_CAP4))
    sensitivity_cap3: list[float] = field(default_factory=lambda: list(GRID_CAP3))

    def __post_init__(self) -> None:
        check_retrievers(self.retrievers)
        check_positive_ints(self.cutoffs, "cutoffs")
        if list(self.cutoffs) == list(CUTOFFS) and self.depth < max(CUTOFFS):
            # the default cutoffs stop at a shorter depth (depth=20: 1, 3, 5, 10, 20)
            shorter = [k for k in CUTOFFS if k < self.depth]
            self.cutoffs = [*shorter, self.depth]
        if self.proc_pool == PROC_POOL and self.depth < PROC_POOL:
            self.proc_pool = self.depth  # the default pool is the whole run
        if max(self.cutoffs) > self.depth:
            raise InputError(
                f"the largest cutoff ({max(self.cutoffs)}) exceeds depth ({self.depth})",
                column="cutoffs",
            )
        check_number_in(self.alpha, "alpha", 0, 1)
        if not self.target_effect > 0:
            raise InputError(
                f"target_effect must be positive, got {self.target_effect!r}",
                column="target_effect",
            )
        if not 0 < self.target_power < 1:
            raise InputError(
                f"target_power must lie strictly between 0 and 1, got {self.target_power!r}",
                column="target_power",
            )
        try:
            self.fusion_spec.weights_for(2)
        except InputError as e:
            raise InputError(e.message, column="fusion") from None
        check_choice(self.context_similarity, "context_similarity", CONTEXT_SIMILARITIES)
        if not 1 <= self.proc_pool <= self.depth:
            raise InputError(
                f"proc_pool must lie in [1, depth={self.depth}], got {self.proc_pool}",
                column="proc_pool",
            )
        check_grid(self.sensitivity_a, self.sensitivity_cap4, self.sensitivity_cap3)
        names = self.systems
        if len(set(names)) != len(names):
            raise InputError(
                f"runs name the same system twice or a retriever's name: {names}", column="runs"
            )

    @property
    def systems(self) -> list[str]:
        """The systems compared, in order: ``retrievers``, then the stems of ``runs``."""
        return [
            *self.retrievers,
            *(Path(p).name.removesuffix(".gz").split(".")[0] for p in self.runs),
        ]

    @property
    def fusion_spec(self) -> Fusion:
        """The hybrid's :class:`ragnb.retrievers.fusion.Fusion` (``fusion``, ``fusion_weights``,
        ``rrf_k``).

        Raises
        ------
        InputError
            On a bad fusion or weights.
        """
        return parse_fusion(self.fusion, weights=self.fusion_weights, rrf_k=self.rrf_k)


def core_measures(cutoffs: list[int], alpha: float = 0.5, rel: int = 1) -> list[Measure]:
    """The measures of notebook 01 at every cutoff: P, R, nDCG, Success, Judged, F, F_e, T,
    T_u, nDCG_inK, and RR (no cutoff)."""
    out: list[Measure] = [Measure("RR", rel=rel)]
    for k in sorted(set(int(c) for c in cutoffs)):
        out += [
            Measure("P", k, rel=rel),
            Measure("R", k, rel=rel),
            Measure("nDCG", k),
            Measure("Success", k, rel=rel),
            Measure("Judged", k),
            Measure("F", k, alpha=alpha, rel=rel),
            Measure("F_e", k, alpha=alpha, rel=rel),
            Measure("T", k, alpha=alpha, rel=rel),
            Measure("T_u", k, alpha=alpha, rel=rel),
            Measure("nDCG_inK", k, rel=rel),
        ]
    return out


def proc_measures(cutoffs: list[int], pool: int, graded: bool) -> list[Measure]:
    """Measures whose PROC is reported: nDCG, R and (graded data) RA-nWG, N-Recall4+ at the
    cutoffs no deeper than the pool."""
    ks = [k for k in sorted(set(int(c) for c in cutoffs)) if k <= pool and k > 1]
    out = [Measure("nDCG", k) for k in ks] + [Measure("R", k) for k in ks]
    if graded:
        out += [Measure("RA-nWG", k) for k in ks] + [Measure("N-Recall4+", k) for k in ks]
    return out


@dataclass
class Comparison(StudyResultBase):
    """Retrievers compared on one dataset.

    Attributes
    ----------
    config : RetrievalEvaluationConfig
    dataset : BeirDataset
    runs : dict of str to DataFrame
        One run frame per retriever.
    aggregate : DataFrame
        Columns ``retriever``, ``measure``, ``family``, ``k`` (NaN for no cutoff), ``value``,
        ``n_valid``, ``n_queries``.
    per_query : DataFrame
        Columns ``retriever``, ``measure``, ``family``, ``k``, ``query_id``, ``value``.
    counts : dict of str to dict
        Per retriever, the policies' counts from :func:`ragnb.evaluation.evaluate.evaluate`.
    timings : dict of str to float
        Seconds to index and retrieve, per retriever.
    retrievers : dict of str to dict
        Each retriever's configuration (:meth:`Retriever.describe`).
    cache : dict
        Cache location and hit/miss counts.
    grade_map : tuple of (str, dict) or None
        The map onto 1-5 used by the graded measures, None when the data has no grades.
    proc : DataFrame
        Per retriever and measure: ``actual``, ``proc`` (ceiling of the top-``proc_pool`` pool
        ideally reordered) and ``pct_proc`` (= mean actual / mean PROC), ``n_valid``.
    significance : ragnb.stats.ComparisonResult or None
        Pairwise differences with bootstrap CIs and Holm-corrected randomization p-values (None
        with a single retriever).
    notes : list of str
        Warnings worth reading beside the numbers (Judged@K gaps between retrievers, ...).
    fusions : FusionComparison or None
        Every fusion method on the BM25 and dense runs, and the weight search on held-out
        queries (:func:`ragnb.studies.retrieval.fusions.compare_fusions`); None without both runs.
    contexts : DataFrame
        Per retriever and query: ID-based and non-LLM context precision and recall at the
        headline K, the relevant documents as reference contexts
        (:func:`ragnb.studies.retrieval.contexts.context_scores`); empty when no query has one.
    sensitivity : DataFrame
        RA-nWG at the headline K of each retriever over the (a, cap4, cap3) grid, with ranks
        and Kendall's tau against the default setting
        (:func:`ragnb.studies.retrieval.sensitivity.ranwg_sensitivity`); empty without grades.
    ranks : DataFrame
        The retrievers best first on the first significance measure with their bootstrap rank
        intervals and tie groups (:func:`ragnb.stats.ranking_table`); empty without a
        comparison.
    power_analysis : DataFrame
        Per compared pair on that measure: the minimum detectable effect at the queries at hand
        and the queries ``target_effect`` needs at ``target_power``
        (:func:`ragnb.stats.power_table`); empty without a comparison.
    tukey_letters : DataFrame
        The test of all systems at once: index ``retriever``, one column per significance
        measure holding the mean and the compact letter display of Tukey's HSD on the
        repeated-measures ANOVA (retrievers sharing a letter are not separated;
        :func:`ragnb.stats.tukey_hsd`, :meth:`ragnb.stats.ComparisonResult.letters`); the
        ANOVA itself is ``significance.omnibus``. Empty without a comparison.
    """

    config: RetrievalEvaluationConfig
    dataset: BeirDataset
    runs: dict[str, pd.DataFrame]
    aggregate: pd.DataFrame
    per_query: pd.DataFrame
    counts: dict[str, dict[str, Any]]
    timings: dict[str, float]
    retrievers: dict[str, dict[str, Any]]
    cache: dict[str, Any]
    grade_map: tuple[str, dict[int, int]] | None = None
    proc: pd.DataFrame = field(default_factory=pd.DataFrame)
    significance: Any = None
    notes: list[str] = field(default_factory=list)
    fusions: FusionComparison | None = None
    contexts: pd.DataFrame = field(default_factory=pd.DataFrame)
    sensitivity: pd.DataFrame = field(default_factory=pd.DataFrame)
    ranks: pd.DataFrame = field(default_factory=pd.DataFrame)
    power_analysis: pd.DataFrame = field(default_factory=pd.DataFrame)
    tukey_letters: pd.DataFrame = field(default_factory=pd.DataFrame)

    def sensitivity_table(self) -> pd.DataFrame:
        """The RA-nWG sensitivity grid, one row per (a, cap4, cap3) setting
        (:func:`ragnb.studies.retrieval.sensitivity.sensitivity_wide`); empty without grades."""
        return sensitivity_wide(self.sensitivity)

    def context_headline(self) -> pd.DataFrame:
        """Mean context precision and recall per retriever at the headline K (empty without
        reference contexts)."""
        return context_table(self.contexts)

    @property
    def graded(self) -> bool:
        """True when the graded set measures were computed."""
        return self.grade_map is not None

    def graded_headline(self, k: int | None = None) -> pd.DataFrame:
        """The graded set measures at cutoff ``k``, one row per retriever, with Judged@K."""
        k = k or self.config.headline_k
        agg = self.aggregate
        rows = agg[(agg["k"] == k) & agg["family"].isin((*GRADED_FAMILIES, "Judged"))]
        table = rows.pivot(index="retriever", columns="measure", values="value")
        table = table[list(dict.fromkeys(rows["measure"]))]
        valid = rows.pivot(index="retriever", columns="measure", values="n_valid")
        for name in table.columns:
            if name.startswith(("RA-nWG", "N-Recall", "CompleteHit")):
                table.insert(list(table.columns).index(name) + 1, f"n_valid {name}", valid[name])
        return table.loc[[r for r in self.config.systems if r in table.index]]

    def by_k(self, graded: bool = False) -> pd.DataFrame:
        """Aggregate rows with a cutoff, for charts against K: the core measures, or (``graded``)
        the graded set measures."""
        rows = self.aggregate.dropna(subset=["k"])
        is_graded = rows["family"].isin(GRADED_FAMILIES)
        return rows[is_graded if graded else ~is_graded]

    def headline(self, k: int | None = None) -> pd.DataFrame:
        """One row per retriever, one column per core measure at cutoff ``k`` (and RR), with
        ``n_valid``."""
        k = k or self.config.headline_k
        agg = self.aggregate[~self.aggregate["family"].isin(GRADED_FAMILIES)]
        rows = agg[(agg["k"] == k) | agg["k"].isna()]
        table = rows.pivot(index="retriever", columns="measure", values="value")
        order = list(dict.fromkeys(rows["measure"]))
        table = table[order]
        table.insert(0, "n_valid", rows.groupby("retriever")["n_valid"].min())
        table.insert(1, "n_queries", rows.groupby("retriever")["n_queries"].max())
        return table.loc[[r for r in self.config.systems if r in table.index]]

    def drilldown(
        self,
        k: int | None = None,
        families: tuple[str, ...] = ("nDCG", "R", "P"),
    ) -> pd.DataFrame:
        """Per-query table at cutoff ``k``: query text, then one column per (measure, retriever).

        Rows are sorted by the spread of the first family across retrievers (largest first), so
        the queries where the retrievers disagree most come first.
        """
        k = k or self.config.headline_k
        pq = self.per_query[(self.per_query["k"] == k) & self.per_query["family"].isin(families)]
        wide = pq.pivot_table(index="query_id", columns=["measure", "retriever"], values="value")
        first = [c for c in wide.columns if c[0].startswith(families[0])]
        spread = wide[first].max(axis=1) - wide[first].min(axis=1)
        wide = wide.loc[spread.sort_values(ascending=False, kind="stable").index]
        texts = self.dataset.queries.set_index("query_id")["text"]
        wide.insert(0, ("query", ""), texts.reindex(wide.index).to_numpy())
        return wide

    def _ranking_views(self) -> dict[str, Any]:
        """``ranking``, ``ranking_note``, ``power``, ``power_note`` for :meth:`views`."""
        sig, c = self.significance, self.config
        measure = sig.measures[0]
        groups = stats.tie_groups(sig, measure)
        shown = "; ".join("{" + ", ".join(f"`{s}`" for s in g) + "}" for g in groups)
        ranking_note = (
            f"Ranks on {measure} with {sig.settings['confidence']:.0%} bootstrap intervals over "
            f"the queries (Hall and Miller 2009); systems sharing a tie-group letter are not "
            f"separable at alpha {sig.settings['alpha']} ({sig.settings['correction']}). Tie "
            f"groups: {shown}."
        )
        power = self.power_analysis
        note = f"Power on {measure} (two-sided paired t-test at alpha {sig.settings['alpha']}, "
        note += f"power {c.target_power:.0%}; Sakai 2016)"
        if power["mde_t"].notna().any():
            n = int(power["n_queries"].max())
            note += (
                f": with {n} queries the minimum detectable effect is "
                f"{power['mde_t'].min():.4f} to {power['mde_t'].max():.4f} across the pairs "
                f"(simulated: {power['mde_simulated'].min():.4f} to "
                f"{power['mde_simulated'].max():.4f}); detecting a difference of "
                f"{c.target_effect:g} needs {_span(power['queries_needed_t'])} queries "
                f"(simulated: {_span(power['queries_needed_simulated'])})."
            )
        else:
            note += ": no pair has varying per-query differences to estimate it from."
        return {
            "ranking": self.ranks,
            "ranking_note": ranking_note,
            "power": power.set_index("pair"),
            "power_note": note,
        }

    def _all_systems_views(self) -> dict[str, Any]:
        """``anova``, ``tukey_letters`` and ``all_systems_note`` for :meth:`views`."""
        omnibus = self.significance.omnibus
        alpha = self.significance.settings["alpha"]
        parts = [
            f"{row.measure}: F({row.df_systems:g}, {row.df_error:g}) = {row.f:.2f}, "
            f"p = {row.p_value:.3g}"
            for row in omnibus.itertuples()
            if pd.notna(row.f)
        ]
        note = (
            "All retrievers at once: a repeated-measures ANOVA per measure (queries as blocks; "
            "the same F as Sakai's two-way ANOVA without replication), then Tukey's HSD on its "
            f"residual at alpha {alpha}: retrievers sharing a letter are not separated "
            "(Carterette 2012; Sakai 2018). " + "; ".join(parts) + "."
        )
        return {
            "all_systems_note": note,
            "anova": omnibus.set_index("measure"),
            "tukey_letters": self.tukey_letters,
        }

    def counts_table(self) -> pd.DataFrame:
        """The evaluation policies' counts per retriever (missing queries, rank disagreements,
        F_e short runs, ...)."""
        flat = {
            name: {k: (v if not isinstance(v, dict) else sum(v.values())) for k, v in c.items()}
            for name, c in self.counts.items()
        }
        return pd.DataFrame(flat).T

    def export_last(self, out: Path) -> list[Path]:
        """Write the runs as ``runs/<retriever>.trec`` (TREC format,
        :func:`ragnb.io.files.write_run`) under ``out``, after the tables (``aggregate.csv``,
        ``per_query.csv``, ``proc.csv``, ``contexts.csv``, ``fusion.csv`` and ``fusion_heldout.csv``
        with BM25 and dense runs, ``significance.csv`` with several retrievers,
        ``ranwg_sensitivity.csv`` on graded data); the paths written."""
        from ragnb.io.files import write_run

        written = []
        for name, run in self.runs.items():
            path = out / "runs" / f"{name}.trec"
            write_run(run, path, tag=name)
            written.append(path)
        return written

    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by the stem of their exported CSV file; a part that did not run
        has none (see :meth:`skipped_parts`).

        Returns
        -------
        dict of str to DataFrame
            ``aggregate`` and ``per_query`` (columns in the class docstring), ``proc``,
            ``contexts``, and when they ran ``fusion`` (one row per fusion method),
            ``fusion_heldout`` (tuned weights on held-out queries), ``significance``
            (:attr:`ragnb.stats.ComparisonResult.pairs`), ``ranking`` (:attr:`ranks`),
            ``power`` (:attr:`power_analysis`), ``anova``
            (:attr:`ragnb.stats.ComparisonResult.omnibus`), ``tukey_letters``
            (:attr:`tukey_letters`), ``ranwg_sensitivity``.
        """
        out = {
            "aggregate": self.aggregate,
            "per_query": self.per_query,
            "proc": self.proc,
            "contexts": self.contexts,
        }
        if self.fusions is not None:
            out["fusion"] = self.fusions.table.reset_index()
            out["fusion_heldout"] = self.fusions.heldout
        if self.significance is not None:
            out["significance"] = self.significance.pairs
            out["ranking"] = self.ranks
            out["power"] = self.power_analysis
            out["anova"] = self.significance.omnibus
            out["tukey_letters"] = self.tukey_letters.reset_index()
        if not self.sensitivity.empty:
            out["ranwg_sensitivity"] = self.sensitivity
        return out

    def views(self) -> dict[str, Any]:
        """The tables as the report shows them, by name; a part that did not run has none.

        Returns
        -------
        dict of str to DataFrame or str
            ``headline`` (:meth:`headline`), ``graded_headline``, ``sensitivity``
            (:meth:`sensitivity_table`), ``proc`` (at the headline K), ``fusion``,
            ``fusion_heldout``, ``contexts`` (:meth:`context_headline`), ``significance``
            (the pairs) and ``significance_paper`` (Markdown,
            :func:`ragnb.stats.comparison_table`), ``ranking`` (:attr:`ranks`) with
            ``ranking_note`` and ``power`` (:attr:`power_analysis`) with ``power_note``
            (Markdown), ``anova`` and ``tukey_letters`` (:attr:`tukey_letters`) with
            ``all_systems_note`` (Markdown), ``counts`` (:meth:`counts_table`), ``drilldown``
            (:meth:`drilldown`).
        """
        out: dict[str, Any] = {"headline": self.headline()}
        if self.graded:
            out["graded_headline"] = self.graded_headline()
        if not self.sensitivity.empty:
            out["sensitivity"] = self.sensitivity_table()
        if not self.proc.empty:
            at_k = self.proc[self.proc["cutoff"] == self.config.headline_k]
            columns = ["actual", "proc", "pct_proc", "n_valid"]
            out["proc"] = at_k.set_index(["retriever", "measure"])[columns]
        if self.fusions is not None:
            out["fusion"] = self.fusions.table
            out["fusion_heldout"] = self.fusions.heldout.set_index(["search", "system"])
        if not self.contexts.empty:
            out["contexts"] = self.context_headline()
        if self.significance is not None:
            out["significance"] = self.significance.pairs
            out["significance_paper"] = stats.comparison_table(self.significance)
            out.update(self._ranking_views())
            out.update(self._all_systems_views())
        out["counts"] = self.counts_table()
        out["drilldown"] = self.drilldown()
        return out

    def charts(self) -> dict[str, Any]:
        """The charts of :mod:`ragnb.studies.retrieval.charts` by name; a part that did not run has
        none, and without altair (the ``notebooks`` extra) there are none.

        Returns
        -------
        dict of str to altair.Chart
            ``measure_vs_k`` (core measures against K), ``per_query`` (per-query
            distributions at the headline K), ``graded_vs_k``, ``proc_vs_k``, ``significance``
            (:func:`ragnb.report.charts.comparison_chart`).
        """
        try:
            import ragnb.studies.retrieval.charts as charts
        except MissingExtra:
            return {}
        at_k = self.per_query[self.per_query["k"] == self.config.headline_k]
        shown = at_k[at_k["family"].isin(["nDCG", "R", "P", "F", "T", "nDCG_inK"])]
        out: dict[str, Any] = {
            "measure_vs_k": charts.measure_vs_k(self.by_k()),
            "per_query": charts.per_query_distribution(shown),
        }
        if self.graded:
            out["graded_vs_k"] = charts.measure_vs_k(self.by_k(graded=True))
        if not self.proc.empty:
            out["proc_vs_k"] = charts.proc_vs_k(self.proc)
        if self.significance is not None:
            out["significance"] = comparison_chart(self.significance.pairs)
        return out

    def skipped_parts(self) -> dict[str, str]:
        """The banner line of each part that did not run (:func:`ragnb.report.protocol.skipped`).

        Returns
        -------
        dict of str to str
            Keys among ``graded``, ``sensitivity``, ``fusion``, ``contexts``,
            ``significance``.
        """
        c = self.config
        out = {}
        if not self.graded:
            why = "the qrels are binary" if c.grade_map == "auto" else "`grade_map` is `none`"
            out["graded"] = skipped(
                "Graded set measures", f"{why}: set `grade_map` to map other scales onto 1-5"
            )
            out["sensitivity"] = skipped(
                "RA-nWG sensitivity grid", "no graded measure was computed"
            )
        if self.fusions is None:
            out["fusion"] = skipped(
                "Fusion comparison", "it needs both `bm25` and `dense` among the retrievers"
            )
        if self.contexts.empty:
            out["contexts"] = skipped(
                "Context precision and recall",
                "no query has a relevant document: there are no reference contexts",
            )
        if self.significance is None:
            why = (
                "a single system leaves nothing to compare"
                if len(c.systems) < 2
                else "no measure of `significance` was computed"
            )
            out["significance"] = skipped("Significance testing", why)
        return out

    def banner(self) -> str:
        """The first screen, as Markdown: a synthetic-query notice, what produced the numbers
        (:func:`ragnb.report.tables.provenance_markdown`), the grade map, the RA-nWG sensitivity in
        a sentence, every part skipped and why, the notes, and the export folder."""
        c = self.config
        lines = []
        notice = self.synthetic_notice()  # queries written by an LLM say so first
        if notice:
            lines.append(f"**Synthetic queries.** {notice}")
        lines.append(provenance_markdown(self.provenance()))
        if "hybrid" in c.retrievers:
            lines.append(f"The `hybrid` retriever uses `{c.fusion_spec.name}`.")
        if self.grade_map is not None:
            name, mapping = self.grade_map
            pairs = ", ".join(f"{g} -> {u}" for g, u in mapping.items())
            lines.append(f"Grade map `{name}`: {pairs}.")
        if not self.sensitivity.empty:
            grid = self.sensitivity_table()
            unstable = int((grid["rank stable"] == "no").sum())
            lines.append(
                f"RA-nWG@{c.headline_k} over {len(grid)} settings of (a, cap4, cap3): the "
                f"ranking differs from the default's in {unstable} of them."
            )
        lines += list(self.skipped_parts().values())
        lines += [f"**Note:** {note}" for note in self.notes]
        lines += export_note(c.export_dir, "Runs (TREC), tables (CSV) and provenance (JSON)")
        return "\n\n".join(lines)

    def synthetic_notice(self) -> str | None:
        """The first-screen sentence saying the dataset's queries are synthetic, or None.

        See :func:`ragnb.studies.retrieval.querygen.synthetic_notice` (queries written by
        :func:`ragnb.studies.retrieval.querygen.write_synthetic`)."""
        return synthetic_notice(self.dataset)

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers: dataset, retrievers and models, versions, cache."""
        return {
            "dataset": self.dataset.summary(),
            "synthetic_queries": self.synthetic_notice(),
            "dataset_recipe": {
                k: self.dataset.meta[k] for k in ("python_version",) if k in self.dataset.meta
            },
            "config": asdict(self.config),
            "grade_map": grade_map_record(self.grade_map),
            "notes": self.notes,
            "retrievers": self.retrievers,
            "timings_s": self.timings,
            "cache": self.cache,
            "versions": versions(),
        }


def _proc_frame(
    config: RetrievalEvaluationConfig,
    qrels: pd.DataFrame,
    graded_qrels: pd.DataFrame | None,
    runs: dict[str, pd.DataFrame],
) -> pd.DataFrame:
    """PROC and %PROC of each retriever's top-``proc_pool`` pool (Dallaire section 2.4)."""
    measures = proc_measures(config.cutoffs, config.proc_pool, graded_qrels is not None)
    binary = [m for m in measures if m.family not in GRADED_FAMILIES]
    graded = [m for m in measures if m.family in GRADED_FAMILIES]
    parts = []
    for name, run in runs.items():
        for q, ms in ((qrels, binary), (graded_qrels, graded)):
            if q is None or not ms:
                continue
            table = proc_table(q, run, ms, config.proc_pool).table
            parts.append(table.assign(retriever=name, pool=config.proc_pool))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    first = ["retriever", "pool"]
    return out[first + [c for c in out.columns if c not in first]]


def _add_run_files(
    config: RetrievalEvaluationConfig,
    runs: dict[str, pd.DataFrame],
    described: dict[str, dict[str, Any]],
) -> None:
    """Read ``config.runs`` into ``runs`` under their names
    (:attr:`RetrievalEvaluationConfig.systems`); ``described`` says where each came from (no
    seconds spent retrieving: ``NaN``)."""
    from ragnb.core.paths import display_path, resolve_path
    from ragnb.io.readers import read_run

    for name, file in zip(config.systems[len(config.retrievers) :], config.runs, strict=True):
        path = resolve_path(file)
        runs[name] = read_run(path)
        described[name] = {"kind": "run file", "path": display_path(path), "seconds": float("nan")}


def _significance(config: RetrievalEvaluationConfig, per_query: pd.DataFrame, graded: bool) -> Any:
    """Pairwise comparison of the retrievers on ``config.significance`` (or None)."""
    if len(config.systems) < 2:
        return None
    available = set(per_query["measure"])
    wanted = [str(parse_measure(m)) for m in config.significance]
    chosen = [m for m in wanted if m in available]
    if not chosen:
        return None
    return stats.compare(
        per_query,
        measures=chosen,
        system_column="retriever",
        n_resamples=config.n_resamples,
        seed=config.seed,
    )


def _tukey_letters(
    config: RetrievalEvaluationConfig, per_query: pd.DataFrame, sig: Any
) -> pd.DataFrame:
    """Each retriever's mean and Tukey letters per significance measure ("0.4123 A")."""
    tukey = stats.compare(
        per_query,
        measures=list(sig.measures),
        system_column="retriever",
        test="tukey",
        correction="none",
        n_resamples=1000,  # the letters read no bootstrap; the pairs' intervals are sig's
        seed=config.seed,
    )
    letters = tukey.letters()
    means = tukey.means_wide()
    table = pd.DataFrame(
        {m: [f"{means.loc[s, m]:.4f} {letters.loc[s, m]}" for s in letters.index] for m in letters},
        index=pd.Index(letters.index, name="retriever"),
    )
    return table


def _span(values: pd.Series) -> str:
    """``"120 to 480"`` of the defined values (one value alone; "more than can be searched"
    when none is defined)."""
    known = values.dropna()
    if known.empty:
        return "more than can be searched"
    low, high = int(known.min()), int(known.max())
    text = f"{low}" if low == high else f"{low} to {high}"
    return text + (" (some pairs: more)" if len(known) < len(values) else "")


def _judged_notes(aggregate: pd.DataFrame, k: int, margin: float = 0.1) -> list[str]:
    """A note when retrievers' Judged@K differ by more than ``margin`` (incomplete pools)."""
    import warnings

    judged = aggregate[aggregate["measure"] == f"Judged@{k}"].set_index("retriever")["value"]
    if len(judged) < 2:
        return []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        judged_gap_warning(judged, margin=margin, measure=f"Judged@{k}")
    return [str(w.message) for w in caught]


def _add_fusions_and_contexts(comparison: Comparison, progress: bool) -> None:
    """The fusion comparison (BM25 + dense) and the context measures at the headline K."""
    config, dataset, k = comparison.config, comparison.dataset, comparison.config.headline_k
    comparison.fusions = compare_fusions(
        dataset.qrels,
        comparison.runs,
        [f"nDCG@{k}", f"R@{k}", "RR"],
        configured=config.fusion_spec,
        seed=config.seed,
    )
    embedder = None
    if config.context_similarity == "embedding":
        from ragnb.embed import make_embedder

        embedder = make_embedder(
            config.model, cache_dir=config.cache_dir or None, progress=progress
        )
    comparison.contexts = context_scores(
        dataset,
        comparison.runs,
        k,
        rel=config.rel,
        similarity=config.context_similarity,
        tau=config.context_tau,
        embedder=embedder,
    )


@fill_runner_doc
def run(
    config: RetrievalEvaluationConfig,
    *,
    dataset: BeirDataset | None = None,
    progress: bool = True,
) -> Comparison:
    """Run every retriever of ``config`` on its dataset and evaluate the runs.

    With ``config.export_dir`` set, the result is exported there (:meth:`Comparison.export`).

    Parameters
    ----------
    config : RetrievalEvaluationConfig
    {{dataset}}
    progress : bool
        Progress bars while embedding.

    Returns
    -------
    Comparison

    Raises
    ------
    InputError
        On a malformed dataset or a fusion that cannot take the runs.
    """
    if dataset is None:
        dataset = config.read_dataset()
    if config.qrels:
        from dataclasses import replace

        from ragnb.core.paths import resolve_path
        from ragnb.io.readers import read_qrels

        dataset = replace(dataset, qrels=read_qrels(resolve_path(config.qrels)))
    runs, described, cache = compute_runs(
        dataset,
        config.retrievers,
        embedder=config.model,
        depth=config.depth,
        cache_dir=config.cache_dir,
        progress=progress,
        fusion=config.fusion_spec,
    )
    _add_run_files(config, runs, described)
    timings = {name: info.pop("seconds") for name, info in described.items()}
    measures = core_measures(config.cutoffs, config.alpha, config.rel)
    aggregates, per_queries, counts = [], [], {}
    grade_map = resolve_grade_map(config.grade_map, dataset.qrels)
    graded_qrels = None if grade_map is None else map_grades(dataset.qrels, grade_map[1])
    graded = [] if grade_map is None else graded_measures(config.cutoffs)
    for name, run in runs.items():
        result = evaluate(dataset.qrels, run, measures)
        counts[name] = result.counts
        aggregates.append(result.aggregate.assign(retriever=name))
        per_queries.append(result.per_query.assign(retriever=name))
        if graded_qrels is not None:
            extra = evaluate(graded_qrels, run, graded)
            aggregates.append(extra.aggregate.assign(retriever=name))
            per_queries.append(extra.per_query.assign(retriever=name))
    by_name = {str(m): m for m in (*measures, *graded)}
    aggregate = pd.concat(aggregates, ignore_index=True)
    per_query = pd.concat(per_queries, ignore_index=True)
    for frame in (aggregate, per_query):
        frame["family"] = frame["measure"].map(lambda n: by_name[n].family)
        frame["k"] = frame["measure"].map(lambda n: by_name[n].cutoff).astype("Float64")
    aggregate = aggregate[["retriever", "measure", "family", "k", "value", "n_valid", "n_queries"]]
    per_query = per_query[["retriever", "measure", "family", "k", "query_id", "value"]]
    comparison = Comparison(
        config,
        dataset,
        runs,
        aggregate,
        per_query,
        counts,
        timings,
        described,
        cache,
        grade_map=grade_map,
    )
    comparison.proc = _proc_frame(config, dataset.qrels, graded_qrels, runs)
    comparison.significance = _significance(config, per_query, grade_map is not None)
    if comparison.significance is not None:
        comparison.ranks = comparison.significance.ranking(comparison.significance.measures[0])
        comparison.power_analysis = comparison.significance.power(
            comparison.significance.measures[0],
            target_effect=config.target_effect,
            power=config.target_power,
            n_simulations=POWER_SIMULATIONS,
        )
        comparison.tukey_letters = _tukey_letters(config, per_query, comparison.significance)
    comparison.notes = _judged_notes(aggregate, config.headline_k)
    if graded_qrels is not None:
        comparison.sensitivity = ranwg_sensitivity(
            graded_qrels,
            runs,
            config.headline_k,
            a_values=config.sensitivity_a,
            cap4_values=config.sensitivity_cap4,
            cap3_values=config.sensitivity_cap3,
        )
    _add_fusions_and_contexts(comparison, progress)
    if config.export_dir:
        comparison.export(config.export_dir)
    return comparison
