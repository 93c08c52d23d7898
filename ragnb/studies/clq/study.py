"""Notebook 04's study: parameters, the sweep and the decisions drawn from it.

:class:`ClqTradeoffsConfig` mirrors the notebook's ``parameters`` cell; :func:`run` caps the
dataset, prices the sweep, runs :func:`ragnb.studies.clq.sweep.run_sweep` and applies the operator
rules of :mod:`ragnb.studies.clq.pareto`; :class:`ClqReport` holds the result and answers
:class:`ragnb.report.protocol.StudyResult`: ``banner()``, ``tables()``, ``charts()``,
``export(folder)``, ``provenance()``.

References
----------
Dallaire, arXiv:2511.09545, sections 3.1-3.3, 3.5 and 5 (Table 8: the scenario matrix), and 4.1
(retrieval with and without query rewriting).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.paths import display_path, resolve_path
from ragnb.core.validation import check_choice, check_number_in
from ragnb.errors import InputError
from ragnb.io.files import BeirDataset
from ragnb.measures.nuggets import nugget_measures
from ragnb.report.params import SAMPLE_DATASET, NotebookParams, fill_runner_doc
from ragnb.report.protocol import StudyResultBase
from ragnb.studies.clq.cost import CostModel, count_texts, load_prices
from ragnb.studies.clq.grid import SCOPE_FIELDS, SweepGrid
from ragnb.studies.clq.ray_executor import RayExecutor, make_executor
from ragnb.studies.clq.sweep import SweepResult, cap_dataset, run_sweep

__all__ = ["ClqReport", "ClqTradeoffsConfig", "run"]

#: The columns every configuration table shows after its quality measures.
_HEADLINE = ("proc", "pct_proc", "latency_p50_ms", "latency_p95_ms", "cost_usd")
#: The columns of a chosen configuration in :meth:`ClqReport.recommendations`.
_CHOICE_COLUMNS = ("label", "quality", "latency_p95_ms", "cost_usd")


@dataclass
class ClqTradeoffsConfig(NotebookParams):
    """Parameters of notebook 04 (``notebooks/04_clq_tradeoffs.ipynb``).

    ``dataset``, ``split`` and ``cache_dir`` are :class:`~ragnb.report.params.NotebookParams`' own.

    Attributes
    ----------
    embedders : list of str
        Embedder names (offline, sentence-transformers or ``openai:<model>``).
    dims : list of int
        Truncation dimensions, 0 for the full dimension.
    chunkers : list of str
        :class:`ragnb.studies.clq.chunking.Chunker` names.
    indexes : list of str
        Index kinds (``flat``, ``hnsw``, ``flat-sq8``, ``hnsw-sq8``).
    backends : list of str
        ``faiss`` and/or ``hnswlib``.
    pool_ks : list of int
        Candidate pool sizes K.
    rerankers : list of str
        :func:`ragnb.rerank.make_reranker` specs.
    modes : list of str
        ``dense``, ``bm25``, ``hybrid``.
    fusions : list of str
        The hybrid mode's fusion methods, a grid axis (:func:`ragnb.retrievers.fusion.parse_fusion`:
        ``"rrf"``, ``"wrrf(0.3,0.7)"``, ``"combmnz/z-score"``; weights in the order BM25, dense).
    rewriters : list of str
        Query rewriters, a grid axis (Dallaire section 4.1, with and without rewriting):
        ``"none"``, ``"denoise"`` (:func:`ragnb.rewrite.denoise_query`), ``"llm"``
        (:class:`ragnb.rewrite.LLMRewriter`; left out, with a note, when no LLM is configured).
    rewrite_scope : dict
        Where the rewriters other than none apply
        (:attr:`ragnb.studies.clq.grid.SweepGrid.rewrite_scope`): a config field to its allowed
        values, or to ``"first"`` for the first value of that knob here. The default rewrites one
        embedder, dimension, index and chunker at fixed K (every mode, reranker and K), so the axis
        adds a few configurations, not a multiple.
    rewrite_model : str
        The LLM rewriter's model: ``"local"`` for the packaged SmolLM2-135M-Instruct behind
        :class:`ragnb.llm.server.LocalLLMServer`, a model name for ``rewrite_base_url`` (or
        OpenAI), empty for none.
    rewrite_base_url : str
        OpenAI-compatible endpoint of the LLM rewriter (``$OPENAI_API_KEY`` is its key);
        with an empty ``rewrite_model`` the model is ``gpt-4o-mini``.
    dedup : list of float
        Near-duplicate suppression cosine thresholds before reranking, 0 for off.
    dynamic_margins : list of float
        One dynamic-K policy (50, escalate to 100) per cosine margin; empty for none.
    ef_search : int
        HNSW efSearch of the timed configurations.
    max_docs : int
        Document cap, 0 for all: every judged document of the kept queries is kept, the rest
        sampled with ``seed`` (:func:`ragnb.studies.clq.sweep.cap_dataset`).
    max_queries : int
        Judged-query cap, 0 for all (a sample drawn with ``seed``).
    quality : str
        Headline measure (``auto``: RA-nWG@10 on graded data, else nDCG@10; with ``nuggets``
        also ``NuggetRecall@10`` and its vital and partial-credit forms).
    grade_map : str
        Map of the qrels' grades onto 1-5 (as notebook 01).
    sla_ms : float
        Latency SLA (p95, milliseconds, rewrite + embed + search + rerank).
    budget_usd_per_1k : float
        Budget, US dollars per 1,000 queries (retrieval + generator input).
    quality_target : float
        Quality target; 0 for 95% of the best measured quality.
    machine_usd_per_hour : float
        Price of the machine for local compute (negative: the price file's).
    generator : str
        Generator model priced for the final context.
    generator_k : int
        Chunks sent to the generator per query.
    prices_file : str
        Price table YAML; empty for the shipped ``ragnb/llm/prices.yaml``.
    evidence : str
        Evidence sentences for chunk-level relevance: ``"auto"`` (the dataset's ``raw/`` folder
        when it holds SciFact's release), ``"none"``, or a path.
    nuggets : str
        A folder holding ``nuggets.csv`` and ``nugget_assignments.csv`` (a golden set's run
        folder, notebook 02, perhaps corrected by a person): every configuration is also scored
        by AutoNuggetizer's four ``NuggetRecall`` scores at 10
        (:func:`ragnb.judge.nuggets.read_nugget_qrels`); empty for none.
    export_dir : str
        Sweep folder (results.parquet, ...; resumable); empty for a temporary folder.
    resume : bool
        Skip configurations already in the sweep folder.
    warmup : int
        Untimed warm-up queries before each timed loop.
    seed : int
        Seed of the caps' sampling.
    executor : str
        ``"serial"`` (default), ``"thread"`` or ``"ray"``: configurations as Ray tasks and corpora
        embedded with Ray Data (:mod:`ragnb.studies.clq.ray_executor`; needs ``ragnb[ray]``).
    ray_address : str
        Address of a running Ray cluster for the ``ray`` executor; empty: ``$RAY_ADDRESS`` or a
        local Ray on 127.0.0.1.
    """

    dataset: str = SAMPLE_DATASET
    split: str = "test"
    embedders: list[str] = field(default_factory=lambda: ["wordllama"])
    dims: list[int] = field(default_factory=lambda: [64, 0])
    chunkers: list[str] = field(default_factory=lambda: ["document", "sentences-200-70"])
    indexes: list[str] = field(default_factory=lambda: ["flat", "hnsw", "flat-sq8"])
    backends: list[str] = field(default_factory=lambda: ["faiss"])
    pool_ks: list[int] = field(default_factory=lambda: [50, 100])
    rerankers: list[str] = field(default_factory=lambda: ["none", "rescore:wordllama"])
    modes: list[str] = field(default_factory=lambda: ["dense", "bm25", "hybrid"])
    fusions: list[str] = field(default_factory=lambda: ["rrf"])
    rewriters: list[str] = field(default_factory=lambda: ["none", "denoise", "llm"])
    rewrite_scope: dict[str, Any] = field(
        default_factory=lambda: {
            "embedder": "first",
            "dim": "first",
            "index": "first",
            "chunker": "first",
            "dynamic": [""],
        }
    )
    rewrite_model: str = ""
    rewrite_base_url: str = ""
    dedup: list[float] = field(default_factory=lambda: [0.0])
    dynamic_margins: list[float] = field(default_factory=lambda: [0.02])
    ef_search: int = 64
    max_docs: int = 0
    max_queries: int = 0
    quality: str = "auto"
    grade_map: str = "auto"
    sla_ms: float = 20.0
    budget_usd_per_1k: float = 1.0
    quality_target: float = 0.0
    machine_usd_per_hour: float = -1.0
    generator: str = "gpt-5"
    generator_k: int = 10
    prices_file: str = ""
    evidence: str = "auto"
    nuggets: str = ""
    cache_dir: str = ""
    export_dir: str = ""
    resume: bool = True
    warmup: int = 3
    seed: int = 0
    executor: str = "serial"
    ray_address: str = ""

    def __post_init__(self) -> None:
        self.grid()  # validates the knobs
        check_choice(self.executor, "executor", ("serial", "thread", "ray"))
        for name in ("sla_ms", "budget_usd_per_1k", "quality_target"):
            check_number_in(getattr(self, name), name, 0)

    @property
    def llm_configured(self) -> bool:
        """Whether an LLM rewriter is configured (``rewrite_model`` or ``rewrite_base_url``)."""
        return bool(self.rewrite_model or self.rewrite_base_url)

    def _rewrite_scope(self) -> dict[str, Any]:
        """``rewrite_scope`` with each ``"first"`` replaced by the knob's first value."""
        if not isinstance(self.rewrite_scope, dict):
            raise InputError("rewrite_scope must be a mapping", column="rewrite_scope")
        out = {}
        for name, values in self.rewrite_scope.items():
            # "first": the first value of the grid list (dynamic K has margins here, no list)
            if values == "first" and name in SCOPE_FIELDS and name != "dynamic":
                values = list(getattr(self, SCOPE_FIELDS[name]))[:1]
            out[name] = values
        return out

    def grid(self, llm_model: str | None = None) -> SweepGrid:
        """The sweep grid these parameters describe.

        Parameters
        ----------
        llm_model : str, optional
            The LLM rewriter's model: ``"llm"`` becomes ``"llm:<model>"`` (so the model is part
            of the configuration's id). None keeps ``"llm"`` as it is.
        """
        rewriters = [
            f"llm:{llm_model}" if (r == "llm" and llm_model) else r for r in self.rewriters
        ]
        return SweepGrid(
            embedders=list(self.embedders),
            dims=list(self.dims),
            chunkers=list(self.chunkers),
            indexes=list(self.indexes),
            backends=list(self.backends),
            pool_ks=list(self.pool_ks),
            rerankers=list(self.rerankers),
            modes=list(self.modes),
            fusions=list(self.fusions),
            rewriters=rewriters,
            rewrite_scope=self._rewrite_scope(),
            dedup=list(self.dedup),
            dynamic_k=[
                {"start": 50, "escalate_to": 100, "margin": float(m)} for m in self.dynamic_margins
            ],
            ef_search=self.ef_search,
        )


@dataclass
class ClqReport(StudyResultBase):
    """Notebook 04's analysis: the sweep and the decisions drawn from it.

    A :class:`ragnb.report.protocol.StudyResult`: :meth:`banner`, :meth:`tables`, :meth:`charts`,
    :meth:`export`, :meth:`provenance`.

    Attributes
    ----------
    config : ClqTradeoffsConfig
    sweep : SweepResult
    results : DataFrame
        ``sweep.results`` with ``pareto`` (bool) and ``efficiency`` columns.
    choices : dict of str to Choice
        The operator rules (:func:`ragnb.studies.clq.pareto.recommend`).
    quality_target : float
        The target used (the parameter, or 95% of the best quality).
    notes : list of str
    seconds : float
        Wall-clock time of the sweep call.
    """

    config: ClqTradeoffsConfig
    sweep: SweepResult
    results: pd.DataFrame
    choices: dict[str, Any]
    quality_target: float
    notes: list[str]
    seconds: float

    @property
    def quality(self) -> str:
        """The headline measure's name."""
        return self.sweep.quality

    def leaderboard(self, top: int = 10) -> pd.DataFrame:
        """Top configurations by quality (:func:`ragnb.studies.clq.pareto.leaderboard`)."""
        from ragnb.studies.clq.pareto import leaderboard

        extra = [
            c
            for c in (
                "RA-nWG@10",
                "RA-nWG@30",
                "N-Recall4+@10",
                "N-Recall4+@30",
                "nDCG@10",
                "R@100",
                *nugget_measures(10),
            )
            if c in self.results.columns
        ]
        return leaderboard(self.results, columns=["quality", *extra, *_HEADLINE], top=top)

    def scenarios(self) -> pd.DataFrame:
        """The scenario matrix (Table 8 shape)."""
        from ragnb.studies.clq.pareto import scenario_matrix

        return scenario_matrix(
            self.results,
            sla_ms=self.config.sla_ms,
            budget_usd_per_1k=self.config.budget_usd_per_1k,
            quality_target=self.quality_target,
        )

    def frontier(self) -> pd.DataFrame:
        """The Pareto-optimal rows, cheapest first."""
        cols = ["label", "quality", *_HEADLINE, "cost_retrieval_usd", "cost_generator_usd"]
        front = self.results[self.results["pareto"]]
        return front.sort_values(["cost_usd", "latency_p95_ms"])[cols].reset_index(drop=True)

    def marginal(self) -> pd.DataFrame:
        """Delta-quality per Delta-ms of raising K (:func:`.pareto.marginal_gains`)."""
        from ragnb.studies.clq.pareto import marginal_gains

        return marginal_gains(self.results)

    def dynamic_k(self) -> pd.DataFrame:
        """Dynamic-K rows beside their fixed-K siblings (same family), for comparison."""
        r = self.results
        dyn = r[r["dynamic"].fillna("") != ""]
        if not len(dyn):
            return pd.DataFrame()
        fam = r[r["family"].isin(dyn["family"])]
        cols = [
            "family",
            "label",
            "pool_k",
            "dynamic",
            "mean_pool",
            "escalated",
            "quality",
            "latency_p50_ms",
            "latency_p95_ms",
            "cost_usd",
        ]
        return fam.sort_values(["family", "mean_pool"])[cols].reset_index(drop=True)

    def rewriting(self) -> pd.DataFrame:
        """Each rewritten configuration beside its twin without rewriting (Dallaire section
        4.1: the same stack with and without query rewriting).

        Returns
        -------
        DataFrame
            ``stack`` (the label without the rewriter), ``rewriter`` (``none``, ``denoise``,
            ``llm:<model>``), ``quality``, ``delta_quality`` (minus the twin without
            rewriting), ``rewritten_share`` (queries whose text changed), ``rewrite_p50_ms``,
            ``latency_p95_ms``, ``cost_rewrite_usd``, ``cost_usd``; empty without rewriting.
        """
        r = self.results
        if "rewriter" not in r.columns or not (r["rewriter"].fillna("") != "").any():
            return pd.DataFrame()
        r = r.assign(
            rewriter=r["rewriter"].fillna("").replace("", "none"),
            stack=r["label"].str.replace(r" \| rewrite=\S+$", "", regex=True),
        )
        rewritten = set(r.loc[r["rewriter"] != "none", "stack"])
        r = r[r["stack"].isin(rewritten)]
        base = r[r["rewriter"] == "none"].set_index("stack")["quality"]
        r = r.assign(delta_quality=r["quality"] - r["stack"].map(base))
        cols = [
            "stack",
            "rewriter",
            "quality",
            "delta_quality",
            "rewritten_share",
            "rewrite_p50_ms",
            "latency_p95_ms",
            "cost_rewrite_usd",
            "cost_usd",
        ]
        cols = [c for c in cols if c in r.columns]
        return r.sort_values(["stack", "rewriter"])[cols].reset_index(drop=True)

    def cost_tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The paper's rerank and generator cost tables at the measured mean chunk length."""
        from ragnb.studies.clq.cost import generator_cost_table, rerank_cost_table

        prices = load_prices(self.config.prices_file or None)[0]
        chunk = float(self.results["chunk_tokens"].mean())
        q = float(np.mean(count_texts(self.sweep.provenance.get("query_texts", [""]))))
        return (
            rerank_cost_table(tokens_per_candidate=round(chunk + q, 1), prices=prices),
            generator_cost_table(
                ks=(5, 10, 20, 30),
                tokens_per_chunk=round(chunk, 1),
                models=(self.config.generator, "gpt-5-mini", "gpt-5-nano"),
                prices=prices,
            ),
        )

    def recommendations(self) -> pd.DataFrame:
        """The operator rules' choices (Dallaire section 3.3), one row per rule.

        Returns
        -------
        DataFrame
            ``rule`` (``sla``, ``budget``, ``target``), ``label`` (None when no configuration
            qualifies), ``quality``, ``latency_p95_ms`` (milliseconds), ``cost_usd`` (US dollars
            per 1,000 queries), ``n_feasible`` and ``sentence`` (the recommendation in words).
        """
        rows = []
        for choice in self.choices.values():
            row = choice.get("row")
            picked = {c: (None if row is None else row.get(c)) for c in _CHOICE_COLUMNS}
            rows.append(
                {
                    "rule": choice["rule"],
                    **picked,
                    "n_feasible": choice["n_feasible"],
                    "sentence": choice["sentence"],
                }
            )
        return pd.DataFrame(rows)

    def memory(self) -> pd.DataFrame:
        """Per index: measured bytes of this corpus's index and the estimate at 1M and 10M
        vectors beside the measured index scaled per vector (GiB); empty when no index was
        built."""
        mem = self.sweep.memory
        if not len(mem):
            return pd.DataFrame()
        cols = [
            c
            for c in (
                "index_label",
                "kind",
                "dim",
                "n_vectors",
                "source",
                "vectors_gib",
                "graph_gib",
                "total_gib",
                "bytes_per_vector",
            )
            if c in mem.columns
        ]
        return mem[cols].reset_index(drop=True)

    def configurations(self) -> pd.DataFrame:
        """Every configuration with its main numbers, best quality first."""
        r = self.results
        cols = [
            "label",
            "pareto",
            "quality",
            "nDCG@10",
            "R@100",
            "RA-nWG@10",
            "RA-nWG@30",
            "N-Recall4+@10",
            "N-Recall4+@30",
            *nugget_measures(10),
            "proc",
            "pct_proc",
            "rewrite_p50_ms",
            "embed_p50_ms",
            "search_p50_ms",
            "rerank_p50_ms",
            "latency_p50_ms",
            "latency_p95_ms",
            "cost_rewrite_usd",
            "cost_retrieval_usd",
            "cost_generator_usd",
            "cost_usd",
            "build_seconds",
            "mem_total",
            "mean_pool",
            "escalated",
            "efficiency",
        ]
        cols = [c for c in cols if c in r.columns]
        return r.sort_values("quality", ascending=False)[cols].reset_index(drop=True)

    # -- the protocol (ragnb.report.protocol.StudyResult)

    def _skipped(self) -> list[str]:
        """The banner lines of the parts of the report that did not run, with the reason."""
        from ragnb.report.protocol import skipped
        from ragnb.studies.clq.pareto import quality_by_dim

        lines = []
        if self.rewriting().empty:
            lines.append(skipped("Query rewriting", "the grid has no rewriter besides `none`"))
        if self.marginal().empty:
            lines.append(skipped("Marginal gains of K", "no two configurations differ in K alone"))
        if self.dynamic_k().empty:
            lines.append(skipped("Dynamic K", "the grid has no dynamic-K policy"))
        if quality_by_dim(self.results, quality="quality").empty:
            lines.append(
                skipped("Quality against dimension", "the grid has no dense or hybrid mode")
            )
        if not len(self.sweep.recall):
            lines.append(skipped("Approximate-search recall", "the grid has no approximate index"))
        if self.memory().empty:
            lines.append(skipped("Memory", "the sweep built no vector index"))
        return lines

    def banner(self) -> str:
        """The first screen as Markdown: dataset, caps, grid, prices, what was skipped, notes.

        Returns
        -------
        str
            A "What produced these numbers" section: the dataset and its size, the headline
            measure, the sweep (configurations measured and found finished, indexes built,
            texts embedded, seconds), embedders left out, prices, one
            :func:`ragnb.report.protocol.skipped` line per part that did not run, the notes and the
            library versions.
        """
        from ragnb.embed.offline import OFFLINE_MODELS

        prov = self.provenance()
        ds = prov["dataset"]
        sw = self.sweep
        cost = prov["cost"]
        gm = prov.get("grade_map")
        lines = ["## What produced these numbers", ""]
        lines.append(
            f"**Dataset** `{ds['dataset']}` (split `{ds['split']}`): {ds['documents']} documents, "
            f"{ds['judged_queries']} judged queries, {ds['qrels_pairs']} judgements. "
            f"Folder: `{display_path(ds['path'])}`."
        )
        lines.append(
            f"**Headline quality** `{self.quality}` at document level (each document scores its "
            "best chunk); "
            + (
                "binary qrels: no graded measures (set `grade_map` to map them onto 1-5)."
                if gm is None
                else f"grades mapped onto 1-5 with `{gm[0]}` {dict(gm[1])}."
            )
        )
        lines.append(
            f"**Sweep** {len(self.results)} configurations of the grid: {sw.n_evaluated} "
            f"measured now, {sw.n_skipped} found finished in `{sw.out_dir}`; "
            f"{sw.n_index_builds} indexes built, {sw.n_embedded_texts} texts embedded (cache "
            f"misses), {self.seconds:.1f} s."
        )
        left = [m for m in OFFLINE_MODELS if m not in self.config.embedders]
        if left:
            lines.append(
                f"**Embedders left out for time** (available offline, add them to `embedders`): "
                f"{', '.join(left)}; `multilingual-e5-small-4bit` embeds about one passage per "
                "second, so use it with `max_docs`."
            )
        lines.append(
            f"**Prices** `{cost['prices_file']}` as of {cost['as_of']}; local compute at "
            f"${cost['machine_usd_per_hour']:g} per hour; generator `{cost['generator']}` with "
            f"{cost['generator_k']} chunks per query. Latency is measured one configuration at a "
            "time after warm-up on a shared machine: sub-millisecond differences are jitter. "
            "Rescoring rerankers read the candidates' second vectors from the index-time cache; "
            "the second embedding of each query is timed in the rerank stage."
        )
        lines += [f"- {line}" for line in self._skipped()]
        lines += [f"- {note}" for note in self.notes]
        lines += ["", "**Versions** " + ", ".join(f"{k} {v}" for k, v in prov["versions"].items())]
        return "\n".join(lines)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The report's tables by the stem of their exported CSV file, in the report's order.

        Returns
        -------
        dict of str to DataFrame
            ``recommendations``, ``frontier``, ``scenarios``, ``rewriting``, ``leaderboard``,
            ``marginal``, ``dynamic_k``, ``memory``, ``rerank_costs``, ``generator_costs``,
            ``configurations`` (see the methods of the same names and :meth:`cost_tables`); a
            part that did not run (an empty table, named in :meth:`banner`) is left out.
        """
        rerank_costs, generator_costs = self.cost_tables()
        out = {
            "recommendations": self.recommendations(),
            "frontier": self.frontier(),
            "scenarios": self.scenarios(),
            "rewriting": self.rewriting(),
            "leaderboard": self.leaderboard(),
            "marginal": self.marginal(),
            "dynamic_k": self.dynamic_k(),
            "memory": self.memory(),
            "rerank_costs": rerank_costs,
            "generator_costs": generator_costs,
            "configurations": self.configurations(),
        }
        return {name: table for name, table in out.items() if not table.empty}

    def charts(self) -> dict[str, Any]:
        """The report's altair charts by name (:mod:`ragnb.studies.clq.charts`).

        Returns
        -------
        dict of str to altair.Chart
            ``frontier``, ``latency_vs_k``, ``quality_vs_dim`` (without a dense or hybrid
            configuration: absent), ``proc_vs_actual``, ``recall_vs_ef`` (without an
            approximate index: absent); empty when altair is not installed.
        """
        from ragnb.core.lazylibs import MissingExtra
        from ragnb.studies.clq.pareto import latency_by_k, quality_by_dim

        try:
            import ragnb.studies.clq.charts as clq_charts
        except MissingExtra:
            return {}
        by_dim = quality_by_dim(self.results)
        out = {
            "frontier": clq_charts.frontier_chart(self.results, quality_title=self.quality),
            "latency_vs_k": clq_charts.latency_vs_k_chart(latency_by_k(self.results)),
            "quality_vs_dim": None
            if by_dim.empty
            else clq_charts.quality_vs_dim_chart(by_dim, quality_title=self.quality),
            "proc_vs_actual": clq_charts.proc_vs_actual_chart(
                self.results, quality_title=self.quality
            ),
            "recall_vs_ef": clq_charts.recall_vs_ef_chart(self.sweep.recall)
            if len(self.sweep.recall)
            else None,
        }
        return {name: chart for name, chart in out.items() if chart is not None}

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers : the sweep's provenance, the config, notes, versions."""
        from ragnb.core.provenance import versions

        prov = {k: v for k, v in self.sweep.provenance.items() if k != "query_texts"}
        return {
            **prov,
            "config": asdict(self.config),
            "notes": self.notes,
            "sweep_seconds": self.seconds,
            "out_dir": str(self.sweep.out_dir),
            "versions": versions(),
        }


def _evidence_dir(spec: str, dataset_path: Path) -> str | None:
    """The evidence folder named by ``ClqTradeoffsConfig.evidence``, or None."""
    if spec in ("", "none"):
        return None
    if spec == "auto":
        raw = dataset_path / "raw"
        found = (raw / "scifact.zip").is_file() or any(raw.glob("claims_*"))
        return str(raw) if found else None
    path = resolve_path(spec)
    if not path.exists():
        raise InputError("evidence folder not found", path=path, column="evidence")
    return str(path)


def _local_price(prices: Any, model: str) -> Any:
    """A copy of ``prices`` where the local ``model`` costs 0 US dollars per token."""
    import copy

    from ragnb.llm.prices import ModelPrice

    out = copy.copy(prices)
    out.prices = {
        **prices.prices,
        model: ModelPrice(
            model, 0.0, 0.0, prices.as_of, "a local model run on this machine: no per-token charge"
        ),
    }
    return out


def _rewrite_judge(
    config: ClqTradeoffsConfig, out_dir: Path, cost: CostModel, notes: list[str]
) -> Any:
    """The :class:`~ragnb.llm.ChatClient` of the LLM rewriter ``config`` describes, or None.

    ``rewrite_model="local"`` starts a :class:`~ragnb.llm.server.LocalLLMServer` (the client
    holds it as ``local_server``; the caller stops it) and prices its model at 0 per token
    (its time is priced as local compute). Calls go through the project cache and a ledger in
    ``<out_dir>/ledger.jsonl``.

    Raises
    ------
    InputError
        ``rewrite_model="local"`` without the local model installed.
    """
    from ragnb.judge import DEFAULT_JUDGE_MODEL
    from ragnb.llm import ChatClient
    from ragnb.llm.ledger import LEDGER_FILE, Ledger

    if not config.llm_configured:
        if any(r == "llm" or str(r).startswith("llm:") for r in config.rewriters):
            notes.append(
                "The `llm` rewriter was left out: no LLM is configured (set `rewrite_model` to "
                "`local` for the packaged SmolLM2-135M-Instruct, or to a model with "
                "`rewrite_base_url`)."
            )
        return None
    options: dict[str, Any] = {
        "cache_dir": config.cache_dir or None,
        "progress": False,
        "concurrency": 1,
        "request_params": {"max_tokens": 64},
    }
    if config.rewrite_model == "local":
        from ragnb.llm.server import DEFAULT_MODEL, LocalLLMServer, local_llm_unavailable

        why = local_llm_unavailable(DEFAULT_MODEL)
        if why:
            raise InputError(f"rewrite_model='local': {why}", column="rewrite_model")
        cost.prices = _local_price(cost.prices, DEFAULT_MODEL)
        server = LocalLLMServer(DEFAULT_MODEL, n_threads=1).start()
        try:
            judge = ChatClient(
                **{**options, **server.client_options()},
                ledger=Ledger(out_dir / LEDGER_FILE, prices=cost.prices),
            )
        except BaseException:
            server.stop()
            raise
        judge.local_server = server  # type: ignore[attr-defined]
        notes.append(
            f"LLM rewriter: the packaged `{DEFAULT_MODEL}` (SmolLM2-135M-Instruct, a small local "
            "stand-in for a hosted model) behind a local llama.cpp server; priced at $0 per "
            "token, its time is in the local-compute cost."
        )
        return judge
    model = config.rewrite_model or DEFAULT_JUDGE_MODEL
    judge = ChatClient(
        model,
        base_url=config.rewrite_base_url or None,
        ledger=Ledger(out_dir / LEDGER_FILE, prices=cost.prices),
        **options,
    )
    notes.append(f"LLM rewriter: `{model}` through the OpenAI-compatible endpoint configured.")
    return judge


def _executor(config: ClqTradeoffsConfig) -> Any:
    """The sweep executor the parameters name (a Ray one bound to ``ray_address``)."""
    if config.executor == "ray":
        return RayExecutor(config.ray_address)
    return make_executor(config.executor)


@fill_runner_doc
def run(
    config: ClqTradeoffsConfig,
    *,
    dataset: BeirDataset | None = None,
    rewrite_judge: Any = None,
) -> ClqReport:
    """Run notebook 04's study: cap the dataset, price and run the sweep, apply the rules.

    The sweep (:func:`ragnb.studies.clq.sweep.run_sweep`) writes its resumable tables to
    ``config.export_dir`` (a temporary folder when empty); the Pareto frontier, the efficiency
    scalar and the operator rules (:func:`ragnb.studies.clq.pareto.recommend`) follow Dallaire,
    arXiv:2511.09545, sections 3.1-3.3.

    Parameters
    ----------
    config : ClqTradeoffsConfig
    {{dataset}}
    rewrite_judge : ChatClient, optional
        The LLM of the ``"llm"`` rewriter (default: the one ``rewrite_model`` and
        ``rewrite_base_url`` describe, if any).

    Returns
    -------
    ClqReport

    Raises
    ------
    InputError
        As :func:`ragnb.studies.clq.sweep.run_sweep`; ``rewrite_model="local"`` without the model.
    """
    import tempfile

    from ragnb.studies.clq.pareto import efficiency, pareto_front, recommend

    notes: list[str] = []
    if dataset is None:
        dataset = config.read_dataset()
    dataset, cap_note = cap_dataset(
        dataset, max_docs=config.max_docs, max_queries=config.max_queries, seed=config.seed
    )
    if cap_note:
        notes.append(cap_note)
    prices, machine = load_prices(config.prices_file or None)
    if config.machine_usd_per_hour >= 0:
        machine = config.machine_usd_per_hour
    cost = CostModel(
        prices,
        machine_usd_per_hour=machine,
        generator=config.generator,
        generator_k=config.generator_k,
    )
    if config.export_dir:
        out_dir = resolve_path(config.export_dir)
    else:
        out_dir = Path(tempfile.mkdtemp(prefix="ragnb-clq-"))
        notes.append(f"no export_dir: the sweep ran in the temporary folder {out_dir}")
    evidence_dir = _evidence_dir(config.evidence, resolve_path(config.dataset))
    nugget_qrels = None
    if config.nuggets:
        from ragnb.io.nuggets import read_nugget_qrels

        nugget_qrels = read_nugget_qrels(resolve_path(config.nuggets))
    judge = rewrite_judge or _rewrite_judge(config, out_dir, cost, notes)
    rewriters = [r for r in config.rewriters if judge is not None or r != "llm"] or ["none"]
    t0 = time.perf_counter()
    try:
        sweep = run_sweep(
            replace(config, rewriters=rewriters).grid(None if judge is None else judge.model),
            dataset,
            out_dir,
            evidence_dir=evidence_dir,
            nugget_qrels=nugget_qrels,
            cost=cost,
            cache_dir=config.cache_dir or None,
            grade_map=config.grade_map,
            quality=config.quality,
            warmup=config.warmup,
            resume=config.resume,
            seed=config.seed,
            rewrite_judge=judge,
            executor=_executor(config),
        )
    finally:
        if judge is not rewrite_judge and getattr(judge, "local_server", None) is not None:
            judge.local_server.stop()
    seconds = time.perf_counter() - t0
    sweep.provenance["query_texts"] = dataset.judged_queries["text"].astype(str).tolist()
    notes += sweep.notes
    results = sweep.results.copy()
    results["pareto"] = pareto_front(results)
    results["efficiency"] = efficiency(results)
    target = config.quality_target or round(0.95 * float(results["quality"].max()), 4)
    if not config.quality_target:
        notes.append(f"quality target: 95% of the best {sweep.quality} measured = {target}")
    choices = recommend(
        results,
        sla_ms=config.sla_ms,
        budget_usd_per_1k=config.budget_usd_per_1k,
        quality_target=target,
    )
    return ClqReport(config, sweep, results, choices, target, notes, seconds)
