"""Agentic retrieval: notebook 07's configuration and pipeline.

The search agent (:mod:`ragnb.studies.agentic.agent`) answers the same questions once per
system, each system a retriever (BM25, dense), optionally followed by a reranker; every run is
what ``ragnb traces example --agent`` writes
(:func:`~ragnb.studies.agentic.example.write_agent_example`), with one model server for all of
them. A conversation or two, asked the
same way, give the turns. The trace files are then read back as any agent's would be
(:func:`ragnb.io.trajectories.read_trajectories`) and scored
(:func:`ragnb.evaluation.trajectories.evaluate_trajectories`): evidence recall after each search,
the searches up to the first relevant document (a trajectory that never finds one counted, at
``max_calls + 1``), redundancy, what the reranker changed, and every measure per turn. The
systems are compared question by question with paired intervals (:func:`ragnb.stats.compare`).

Data flows one way: questions -> trace files (OTLP JSON lines, qrels beside them) ->
trajectories -> per-question values -> tables -> charts.

References
----------
.. [1] Z. Chen, X. Ma, S. Zhuang et al., "BrowseComp-Plus: A More Fair and Transparent Evaluation
   Benchmark of Deep-Research Agent", arXiv:2508.06600, 2025 (evidence recall over a
   trajectory's searches, search calls).
.. [2] J. Dalton, C. Xiong and J. Callan, "TREC CAsT 2019: The Conversational Assistance Track
   Overview", TREC 2019 (per-turn qrels ``<conversation>_<turn>``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.core.lazylibs import MissingExtra
from ragnb.core.provenance import versions
from ragnb.core.validation import check_int_at_least
from ragnb.embed import STUDY_MODEL
from ragnb.errors import InputError
from ragnb.evaluation.trajectories import TrajectoryResult
from ragnb.io.files import BeirDataset
from ragnb.report.params import SAMPLE_DATASET, NotebookParams, fill_runner_doc
from ragnb.report.protocol import StudyResultBase, export_note, skipped
from ragnb.report.tables import provenance_markdown

__all__ = [
    "AGENT_RETRIEVERS",
    "AgenticConfig",
    "AgenticRetrieval",
    "System",
    "calls_to_first",
    "compared_measures",
    "redundancy_by_call",
    "rerank_calls",
    "run",
    "study_measures",
    "summary_table",
    "turn_curves",
]

#: The retrievers a system of the study may use.
AGENT_RETRIEVERS = ("bm25", "dense")


@dataclass
class AgenticConfig(NotebookParams):
    """Parameters of notebook 07 (``notebooks/07_agentic_retrieval.ipynb``).

    ``dataset`` and ``cache_dir`` are :class:`~ragnb.report.params.NotebookParams`' own.

    Attributes
    ----------
    dataset : str
        BEIR folder with qrels; relative paths are taken from the project root.
    retrievers : list of str
        The agent's retrievers, each a system: ``"bm25"``, ``"dense"``.
    embedder : str
        Embedder of the dense retriever (:func:`ragnb.embed.make_embedder` name).
    reranker : str
        Reranker spec (:func:`ragnb.rerank.make_reranker`) of the reranked systems; "" or
        ``"none"``: no reranked system.
    reranked : list of str
        Retrievers of ``retrievers`` that also run with the reranker, as the system
        ``<retriever>+rerank``.
    questions : int
        Questions asked, the same ones of every system (0: none, only the conversations).
    conversations : int
        Conversations of 2 to 4 turns asked with the first system (0: no turns).
    min_calls : int
        Searches per question at least.
    max_calls : int
        Searches per question at most; a trajectory that never finds a relevant document counts
        as ``max_calls + 1`` searches where systems are compared.
    top_k : int
        Documents each search returns.
    k : int
        Cutoff of the per-search nDCG and of the reranker's gain.
    n_resamples : int
        Bootstrap resamples of the intervals.
    seed : int
        Seed of the questions, the conversations and the trace ids.
    base_url : str
        An OpenAI-compatible server of the model (key from ``$OPENAI_API_KEY``); "" starts the
        local model server (SmolLM2-135M-Instruct, a tiny stand-in).
    model : str
        The model's name on ``base_url`` (required there); "" for the local default.
    cache_dir : str
        Cache folder of embeddings and model answers; empty for ``$RAGNB_CACHE_DIR`` or
        ``~/.cache/ragnb``.
    export_dir : str
        Folder for the trace files, tables and provenance; empty: traces in a temporary folder,
        nothing exported.
    """

    dataset: str = SAMPLE_DATASET
    retrievers: list[str] = field(default_factory=lambda: list(AGENT_RETRIEVERS))
    embedder: str = STUDY_MODEL
    reranker: str = "rescore:wordllama"
    reranked: list[str] = field(default_factory=lambda: ["bm25"])
    questions: int = 3
    conversations: int = 1
    min_calls: int = 2
    max_calls: int = 4
    top_k: int = 10
    k: int = 10
    n_resamples: int = 1000
    seed: int = 0
    base_url: str = ""
    model: str = ""
    cache_dir: str = ""
    export_dir: str = ""

    def __post_init__(self) -> None:
        if not self.retrievers:
            raise InputError("retrievers must name at least one retriever", column="retrievers")
        bad = [r for r in self.retrievers if r not in AGENT_RETRIEVERS]
        if bad or len(set(self.retrievers)) != len(self.retrievers):
            raise InputError(
                f"retrievers must be distinct names of {list(AGENT_RETRIEVERS)}, got "
                f"{self.retrievers}",
                column="retrievers",
            )
        stray = [r for r in self.reranked if r not in self.retrievers]
        if stray:
            raise InputError(
                f"reranked {stray} are not among retrievers {self.retrievers}", column="reranked"
            )
        self._check_ints_at_least(0, "questions", "conversations", "seed")
        self._check_ints_at_least(1, "min_calls", "top_k", "k")
        check_int_at_least(self.max_calls, "max_calls", self.min_calls, column="max_calls")
        check_int_at_least(self.n_resamples, "n_resamples", 100, column="n_resamples")
        if not self.questions and not self.conversations:
            raise InputError("ask at least one question or one conversation", column="questions")
        if self.base_url and not self.model:
            raise InputError("a base_url needs the model's name there", column="model")

    @property
    def rerank(self) -> bool:
        """Whether some system reranks."""
        return bool(self.reranked) and self.reranker.strip().lower() not in ("", "none")

    @property
    def never(self) -> int:
        """The searches a never-found trajectory counts as in comparisons: ``max_calls + 1``."""
        return self.max_calls + 1

    def systems(self) -> list[System]:
        """The systems, in order: each retriever, then each reranked one."""
        out = [System(r, r, "none") for r in self.retrievers]
        if self.rerank:
            out += [System(f"{r}+rerank", r, self.reranker) for r in self.reranked]
        return out

    def retriever_spec(self, retriever: str) -> str:
        """The :func:`ragnb.retrievers.retrieve.make_retriever` name of a retriever."""
        return f"dense:{self.embedder}" if retriever == "dense" else retriever


@dataclass(frozen=True)
class System:
    """One system of the study.

    Attributes
    ----------
    name : str
        ``bm25``, ``dense``, ``bm25+rerank``, ...
    retriever : str
        One of :data:`AGENT_RETRIEVERS`.
    reranker : str
        A reranker spec, ``"none"`` for none.
    """

    name: str
    retriever: str
    reranker: str


# ----------------------------------------------------------------------------- measures


def study_measures(config: AgenticConfig) -> list[str]:
    """The measures evaluated for every system: evidence recall overall and after each search,
    the searches, the calls to the first relevant document (as they are and counted at
    :attr:`AgenticConfig.never` when never), CallRR, the calls to half the evidence, redundancy,
    per-search nDCG@k, the reranker's gain and the tokens per relevant document.

    Examples
    --------
    >>> study_measures(AgenticConfig(max_calls=2, k=5))[:4]
    ['EvidenceRecall', 'EvidenceRecall@1', 'EvidenceRecall@2', 'SearchCalls']
    """
    never, k = config.never, config.k
    by_call = [f"EvidenceRecall@{c}" for c in range(1, config.max_calls + 1)]
    return [
        "EvidenceRecall",
        *by_call,
        "SearchCalls",
        "CallsToFirstRel",
        f"CallsToFirstRel(never={never})",
        "CallRR",
        f"CallsToEvidence(share=0.5,never={never})",
        "Redundancy",
        f"CallnDCG@{k}",
        f"RerankGain@{k}",
        "TokensPerRel",
    ]


def compared_measures(config: AgenticConfig) -> list[str]:
    """The measures the systems are compared on, each finite for every question (the calls
    measures counted at :attr:`AgenticConfig.never` when never reached).

    Examples
    --------
    >>> compared_measures(AgenticConfig())[:3]
    ['EvidenceRecall', 'CallsToFirstRel(never=5)', 'CallRR']
    """
    never = config.never
    return [
        "EvidenceRecall",
        f"CallsToFirstRel(never={never})",
        "CallRR",
        f"CallsToEvidence(share=0.5,never={never})",
        "SearchCalls",
        "Redundancy",
        f"CallnDCG@{config.k}",
    ]


# ----------------------------------------------------------------------------- tables


def summary_table(results: dict[str, TrajectoryResult], config: AgenticConfig) -> pd.DataFrame:
    """One row per system: its questions, the mean of each measure of :func:`study_measures`
    but the per-search recalls, and ``never_found`` (share of questions whose searches never
    returned a relevant document).

    Returns
    -------
    DataFrame
        ``system`` (str), ``questions`` (int), ``never_found`` (float in [0, 1]), then one
        column per measure (``CallsToFirstRel``: mean over the questions that found one).
    """
    shown = [m for m in study_measures(config) if not m.startswith("EvidenceRecall@")]
    rows = {}
    for name, res in results.items():
        agg = res.aggregate.set_index("measure")
        row: dict[str, Any] = {"questions": len(res.query_ids)}
        row["never_found"] = float(agg.loc["CallsToFirstRel", "share_never"])
        row.update({m: float(agg.loc[m, "value"]) for m in shown})
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("system").reset_index()


def calls_to_first(results: dict[str, TrajectoryResult], max_calls: int) -> pd.DataFrame:
    """How many questions found their first relevant document at each search, and how many
    never did, per system.

    Returns
    -------
    DataFrame
        ``system``, ``calls`` (str: ``"1"`` ... ``str(max_calls)``, ``"never"``), ``questions``
        (int), ``share`` (float in [0, 1] of the system's questions with relevant documents).
    """
    labels = [str(c) for c in range(1, max_calls + 1)] + ["never"]
    rows = []
    for name, res in results.items():
        values = res.per_query_wide()["CallsToFirstRel"].dropna()
        label = values.map(lambda v: "never" if v == float("inf") else str(int(v)))
        counts = label.value_counts()
        for lab in labels:
            n = int(counts.get(lab, 0))
            rows.append({"system": name, "calls": lab, "questions": n, "share": n / len(values)})
    return pd.DataFrame(rows, columns=["system", "calls", "questions", "share"])


def redundancy_by_call(results: dict[str, TrajectoryResult]) -> pd.DataFrame:
    """Share of each search's documents that an earlier search of the question had already
    returned, by the search's place in the trajectory.

    Returns
    -------
    DataFrame
        ``system``, ``search_call`` (int, from 1), ``redundancy`` (float in [0, 1], mean over
        the questions that made that search), ``new_relevant`` (float, mean relevant documents
        first found by it), ``searches`` (int).
    """
    frames = []
    for name, res in results.items():
        calls = res.calls[res.calls["kind"] == "retrieval"]
        grouped = calls.groupby("search_call").agg(
            redundancy=("redundant", "mean"),
            new_relevant=("new_relevant", "mean"),
            searches=("call", "size"),
        )
        frames.append(grouped.reset_index().assign(system=name))
    columns = ["system", "search_call", "redundancy", "new_relevant", "searches"]
    return (
        pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    )


def rerank_calls(results: dict[str, TrajectoryResult], k: int) -> pd.DataFrame:
    """Every reranking of the reranked systems: nDCG@k of the reranker's input and output.

    Returns
    -------
    DataFrame
        ``system``, ``query_id``, ``search_call`` (int), ``query``, ``input_nDCG``,
        ``output_nDCG``, ``gain`` (float, output minus input; NaN for a question without
        relevant documents).
    """
    frames = []
    for name, res in results.items():
        calls = res.calls[res.calls["kind"] == "rerank"]
        if calls.empty:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "system": name,
                    "query_id": calls["trajectory_id"].to_numpy(),
                    "search_call": calls["search_call"].to_numpy(),
                    "query": calls["query"].to_numpy(),
                    "input_nDCG": calls[f"input_nDCG@{k}"].to_numpy(),
                    "output_nDCG": calls[f"nDCG@{k}"].to_numpy(),
                    "gain": calls[f"RerankGain@{k}"].to_numpy(),
                }
            )
        )
    columns = ["system", "query_id", "search_call", "query", "input_nDCG", "output_nDCG", "gain"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def turn_curves(by_turn: pd.DataFrame) -> pd.DataFrame:
    """EvidenceRecall after c searches, per conversation turn, from
    :meth:`ragnb.evaluation.trajectories.TrajectoryResult.by_turn`.

    Returns
    -------
    DataFrame
        ``turn`` (int), ``search_call`` (int c), ``value`` (mean EvidenceRecall@c over the
        turn's questions), ``ci_low``, ``ci_high`` (NaN with one question), ``n_queries``.
    """
    rows = by_turn[by_turn["measure"].str.startswith("EvidenceRecall@")].copy()
    rows["search_call"] = rows["measure"].str.split("@").str[1].astype(int)
    columns = ["turn", "search_call", "value", "ci_low", "ci_high", "n_queries"]
    return rows[columns].sort_values(["turn", "search_call"]).reset_index(drop=True)


# ----------------------------------------------------------------------------- the result


@dataclass
class AgenticRetrieval(StudyResultBase):
    """The outcome of :func:`run`.

    Attributes
    ----------
    config : AgenticConfig
    dataset : BeirDataset
    results : dict of str to TrajectoryResult
        Per system, its trajectories scored (:func:`study_measures`).
    comparison : ComparisonResult or None
        The systems compared on :func:`compared_measures` (None with one system or no
        questions).
    turns : TrajectoryResult or None
        The conversations' trajectories scored (None without conversations).
    per_turn : DataFrame or None
        Every measure by turn, with intervals
        (:meth:`~ragnb.evaluation.trajectories.TrajectoryResult.by_turn` of ``turns``).
    traces : dict of str to Path
        Each system's trace file (``conversations`` for the conversations') under
        ``export_dir``; empty without it (the files were written to a temporary folder).
    model : str
        The model that decided (its name on the server).
    model_description : str
    local_model : bool
        Whether the model was the local model server (a stand-in).
    described : dict
        Per system (and ``conversations``): ``searches_with`` (the retriever's name),
        ``reranker``, ``searches``, ``model_calls``, ``seconds`` (asking and tracing).
    cache : dict
        :meth:`ragnb.core.cache.Cache.summary`.
    """

    config: AgenticConfig
    dataset: BeirDataset
    results: dict[str, TrajectoryResult]
    comparison: Any
    turns: TrajectoryResult | None
    per_turn: pd.DataFrame | None
    traces: dict[str, Path]
    model: str
    model_description: str
    local_model: bool
    described: dict[str, dict[str, Any]]
    cache: dict[str, Any]

    def curves(self) -> pd.DataFrame:
        """EvidenceRecall after c searches per system, with intervals: ``system``,
        ``search_call``, ``value``, ``ci_low``, ``ci_high``, ``n_queries``, ``n_searching``."""
        frames = [r.curve.assign(system=n) for n, r in self.results.items()]
        if not frames:
            return pd.DataFrame(columns=["system", "search_call", "value", "ci_low", "ci_high"])
        frame = pd.concat(frames, ignore_index=True)
        return frame[["system", *[c for c in frame.columns if c != "system"]]]

    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by the stem of their exported CSV file.

        Returns
        -------
        dict of str to DataFrame
            ``summary`` (:func:`summary_table`), ``curves`` (:meth:`curves`),
            ``calls_to_first`` (:func:`calls_to_first`), ``redundancy``
            (:func:`redundancy_by_call`), ``pairs`` (the comparison,
            :attr:`ragnb.stats.ComparisonResult.pairs`), ``rerank`` (:func:`rerank_calls`,
            with a reranked system), ``per_turn`` and ``turn_curves`` (with conversations).
        """
        out: dict[str, pd.DataFrame] = {}
        if self.results:
            out["summary"] = summary_table(self.results, self.config)
            out["curves"] = self.curves()
            out["calls_to_first"] = calls_to_first(self.results, self.config.max_calls)
            out["redundancy"] = redundancy_by_call(self.results)
        if self.comparison is not None:
            out["pairs"] = self.comparison.pairs
        reranked = rerank_calls(self.results, self.config.k)
        if not reranked.empty:
            out["rerank"] = reranked
        if self.per_turn is not None:
            out["per_turn"] = self.per_turn
            out["turn_curves"] = turn_curves(self.per_turn)
        return out

    def views(self) -> dict[str, pd.DataFrame]:
        """The tables as the report shows them, by name; a part that did not run has none.

        Returns
        -------
        dict of str to DataFrame
            ``summary`` (:func:`summary_table`, one column per system), ``calls_to_first``
            (questions per system and search, ``never`` last), ``pairs`` (measure, pair,
            difference and interval, adjusted p-value, questions), ``rerank``
            (:func:`rerank_calls`) and ``per_turn`` (each measure's mean per turn).
        """
        t = self.tables()
        out: dict[str, pd.DataFrame] = {}
        if "summary" in t:
            out["summary"] = t["summary"].set_index("system").T.rename_axis("measure")
            first = t["calls_to_first"]
            order = list(dict.fromkeys(first["calls"]))
            wide = first.pivot(index="system", columns="calls", values="questions")
            out["calls_to_first"] = wide.loc[list(self.results), order]
        if "pairs" in t:
            shown = ["measure", "pair", "difference", "ci_low", "ci_high", "p_adjusted"]
            out["pairs"] = t["pairs"][[*shown, "n_queries"]].set_index(["measure", "pair"])
        if "rerank" in t:
            out["rerank"] = t["rerank"]
        if "per_turn" in t:
            turns = t["per_turn"].pivot(index="measure", columns="turn", values="value")
            out["per_turn"] = turns.loc[list(dict.fromkeys(t["per_turn"]["measure"]))]
        return out

    def charts(self) -> dict[str, Any]:
        """The charts of :mod:`ragnb.studies.agentic.charts` by name, one per table drawn;
        none without altair (the ``notebooks`` extra).

        Returns
        -------
        dict of str to altair chart
            ``recall_by_calls``, ``calls_to_first``, ``redundancy``, ``comparison``,
            ``rerank_gain`` and ``turns``, each when its table exists.
        """
        try:
            import ragnb.studies.agentic.charts as charts
            from ragnb.report.charts import comparison_chart
        except MissingExtra:
            return {}
        t = self.tables()
        drawn: dict[str, tuple[str, Callable[[pd.DataFrame], Any]]] = {
            "recall_by_calls": ("curves", charts.recall_by_calls_chart),
            "calls_to_first": ("calls_to_first", charts.calls_to_first_chart),
            "redundancy": ("redundancy", charts.redundancy_chart),
            "comparison": ("pairs", comparison_chart),
            "rerank_gain": ("rerank", charts.rerank_gain_chart),
            "turns": ("turn_curves", charts.turn_curves_chart),
        }
        return {name: draw(t[table]) for name, (table, draw) in drawn.items() if table in t}

    def model_line(self) -> str:
        """The sentence naming the model that made the trajectories."""
        line = f"**The agent's model: {self.model}** ({self.model_description})."
        if self.local_model:
            line += (
                " A tiny stand-in model decided when to stop and wrote the follow-up queries: "
                "the report shows how the measures read its trajectories, not how good an "
                "agent is. Point `base_url` and `model` at a capable model to measure one."
            )
        return line

    def banner(self) -> str:
        """The first screen, as Markdown: the model, what was asked of which systems, the parts
        skipped, then what produced the numbers
        (:func:`ragnb.report.tables.provenance_markdown`)."""
        c = self.config
        systems = ", ".join(f"`{s.name}`" for s in c.systems())
        asked = (
            f"{c.questions} questions asked of each system ({systems}), {c.min_calls} to "
            f"{c.max_calls} searches each, {c.top_k} documents a search; a question whose "
            f"searches never return a relevant document counts as {c.never} searches where the "
            "systems are compared."
        )
        lines = [self.model_line(), "", asked]
        if self.turns is not None:
            n = len(self.turns.query_ids)
            lines.append(
                f"{c.conversations} conversation(s), {n} turns, asked of `{c.systems()[0].name}`."
            )
        lines += ["", *self._skipped(), *export_note(c.export_dir, "Traces, tables")]
        return "\n".join(lines) + "\n\n" + provenance_markdown(self.provenance())

    def _skipped(self) -> list[str]:
        c = self.config
        out = []
        if not c.questions:
            out.append(skipped("The systems' comparison", "questions=0"))
        elif self.comparison is None:
            out.append(skipped("The systems' comparison", "there is a single system"))
        if not c.rerank:
            out.append(skipped("The reranker's gain", "no system reranks (reranker, reranked)"))
        if self.turns is None:
            out.append(skipped("The per-turn curves", "conversations=0"))
        return out

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers, shaped for
        :func:`ragnb.report.tables.provenance_markdown`."""
        from ragnb.core.paths import display_path

        return {
            "dataset": self.dataset.summary(),
            "config": asdict(self.config),
            "model": {"name": self.model, "description": self.model_description},
            "retrievers": {
                n: {k: v for k, v in d.items() if k != "seconds"} for n, d in self.described.items()
            },
            "timings_s": {n: d["seconds"] for n, d in self.described.items()},
            "traces": {n: display_path(p) for n, p in self.traces.items()} or "not kept",
            "cache": self.cache,
            "versions": versions(),
        }


# ----------------------------------------------------------------------------- running


def _agent_config(config: AgenticConfig) -> Any:
    from ragnb.studies.agentic.agent import AgentConfig

    return AgentConfig(
        top_k=config.top_k,
        rerank_depth=max(30, config.top_k),
        min_calls=config.min_calls,
        max_calls=config.max_calls,
        seed=config.seed,
    )


def _ask(
    config: AgenticConfig, folder: Path, chat: Any, progress: bool
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Each system's run (and the conversations', under ``conversations``) written under
    ``folder``: the examples and their descriptions."""
    from ragnb.studies.agentic.example import write_agent_example

    jobs = []
    if config.questions:
        jobs += [(s, config.questions, False, s.name) for s in config.systems()]
    if config.conversations:
        jobs.append((config.systems()[0], config.conversations, True, "conversations"))
    examples, described = {}, {}
    for system, n, conversations, name in jobs:
        start = time.perf_counter()
        ex = write_agent_example(
            folder / f"{name.replace('+', '_')}.jsonl",
            dataset=config.dataset_path(),
            retriever=config.retriever_spec(system.retriever),
            reranker=system.reranker,
            questions=n,
            conversations=conversations,
            config=_agent_config(config),
            progress=progress,
            chat=chat,
        )
        examples[name] = ex
        described[name] = {
            "searches_with": ex.retriever,
            "reranker": ex.reranker,
            "searches": sum(t.calls for t in ex.run.trajectories),
            "model_calls": sum(t.model_calls for t in ex.run.trajectories),
            "seconds": time.perf_counter() - start,
        }
    return examples, described


def _score(example: Any, config: AgenticConfig) -> TrajectoryResult:
    """The trace file read back and scored against the qrels written beside it."""
    from ragnb.evaluation.trajectories import evaluate_trajectories
    from ragnb.io.dispatch import read_qrels_file
    from ragnb.io.trajectories import read_trajectories

    trajectories = read_trajectories(example.run.path)
    qrels = read_qrels_file(example.qrels_path).frame
    return evaluate_trajectories(
        trajectories,
        qrels,
        study_measures(config),
        n_resamples=config.n_resamples,
        seed=config.seed,
    )


def _compare(results: dict[str, TrajectoryResult], config: AgenticConfig) -> Any:
    from ragnb.stats import compare

    if len(results) < 2:
        return None
    return compare(
        {n: r.per_query for n, r in results.items()},
        compared_measures(config),
        n_resamples=config.n_resamples,
        seed=config.seed,
    )


@fill_runner_doc
def run(
    config: AgenticConfig, *, dataset: BeirDataset | None = None, progress: bool = True
) -> AgenticRetrieval:
    """Ask the questions of every system, read the traces back, score and compare them.

    Parameters
    ----------
    config : AgenticConfig
    {{dataset}}
    progress : bool
        Progress bars over the questions and while embedding.

    Returns
    -------
    AgenticRetrieval
        Exported to ``config.export_dir`` when set (:meth:`AgenticRetrieval.export`), beside
        the trace files.

    Raises
    ------
    InputError
        A dataset without qrels, an unknown retriever or reranker.
    ImportError, RuntimeError
        When the local model server cannot start (the message says what to install).
    """
    from ragnb.core.cache import Cache
    from ragnb.core.paths import resolve_path
    from ragnb.io.files import read_beir
    from ragnb.studies.agentic.example import agent_model

    if dataset is None:
        dataset = read_beir(config.dataset_path())
    cache = Cache(config.cache_dir or None)
    with tempfile.TemporaryDirectory(prefix="ragnb-agent-") as scratch:
        folder = resolve_path(config.export_dir) / "traces" if config.export_dir else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        with agent_model(config.base_url, config.model, cache) as chat:
            examples, described = _ask(config, folder, chat, progress)
        scored = {n: _score(ex, config) for n, ex in examples.items()}
    turns = scored.pop("conversations", None)
    first = next(iter(examples.values()))
    result = AgenticRetrieval(
        config,
        dataset,
        scored,
        _compare(scored, config),
        turns,
        None if turns is None else turns.by_turn(n_resamples=config.n_resamples, seed=config.seed),
        {n: ex.run.path for n, ex in examples.items()} if config.export_dir else {},
        first.model,
        first.model_description,
        not config.base_url,
        described,
        cache.summary(),
    )
    if config.export_dir:
        result.export(config.export_dir)
    return result
