"""A built golden set (:class:`GoldenSet`), a value: every stage's frame, the judgements with
their provenance, the increments of new systems (:class:`Increment`), how it was built
(:class:`BuildRecord`), its coverage tables and the exports. The pipeline builds and extends it
(:class:`~ragnb.studies.golden.GoldenPipeline`); the analyses over it (calibration, PPI, SPEAR, the
simulation) are functions in :mod:`ragnb.studies.golden.evaluation`.

After S6, :meth:`GoldenSet.export` writes the products beside the stages:

========================= =========================================================================
``golden.qrels``          TREC qrels of every valid grade (pool and increments), on the judge's
                          scale
``golden.qrels.README``   what made ``golden.qrels`` (the qrels format has no comments): the judge
                          (model, server without credentials, prompt), the date, the counts and
                          the degenerate-judge findings
``judgements.csv``        the same with provenance: ``query_id, doc_id, grade, source, systems``
                          (``source`` "pool" or "incremental"; ``systems`` those that brought it)
``refined.trec``          the refined order of each pruned pool (a TREC run, tag golden-refined)
``refined_top.csv``       the top ``top_n`` per query with grades, scores and uncertainties
``pool_provenance.csv``   S2's frame: ``query_id, doc_id, system, rank, score``
``judged_at_k.csv``       Judged@K per system on the golden qrels
``runs/<system>.trec``    each pool system's top ``depth``
``increments/``           incremental judgements per new system (:meth:`GoldenPipeline.extend`)
``ledger.jsonl``          every LLM request (LLM judges only; :class:`ragnb.llm.ledger.Ledger`)
``manifest.json``         config, versions, seeds, stage hashes and counts, cache hits, costs per
                          stage from the ledger, judge identity, the degenerate-judge checks (see
                          :meth:`GoldenSet.manifest`)
========================= =========================================================================

Secrets
-------
The API key is read from ``$OPENAI_API_KEY`` by the client and never passed through this module:
there is no key parameter. The manifest records the judge's ``base_url`` only when it holds no
credentials (no user info, query string or fragment), and every string it writes is scrubbed of
the API keys in the environment as a last guard (:func:`ragnb.core.provenance.scrub`).

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Section 3.4 (rag-gs).
.. [2] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (pooling,
   Judged@10, calibrating the judge).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.provenance import scrub, utc_now, versions
from ragnb.errors import InputError
from ragnb.io.files import write_table_csv
from ragnb.judge.base import Judge
from ragnb.judge.degenerate import (
    CheckThresholds,
    GradeSet,
    JudgeFinding,
    check_sets,
    findings_markdown,
    grade_sets,
)
from ragnb.studies.golden.analysis import grade_distribution, judged_table, pool_overlap
from ragnb.studies.golden.config import FILE_LIST, FORMAT, STAGES, GoldenSetConfig
from ragnb.studies.golden.judging import failure_cause, judge_banner, public_judge_info, qrels_note
from ragnb.studies.golden.refine import RefineConfig
from ragnb.studies.golden.store import StageRecord

__all__ = ["BuildRecord", "GoldenSet", "Increment"]


#: The file beside ``golden.qrels`` saying what made it.
QRELS_NOTE = "golden.qrels.README"


@dataclass
class Increment:
    """One incremental judging of a new system
    (:meth:`GoldenPipeline.extend <ragnb.studies.golden.GoldenPipeline.extend>`).

    Attributes
    ----------
    system : str
    k : int
        Depth judged.
    frame : DataFrame
        The pairs of the system's top ``k`` that had no judgement: ``query_id``, ``doc_id``,
        ``rank``, ``grade`` (Int64), ``valid``, ``status``, ``reason``, ``cached``, ``system``.
    top_pairs : int
        Pairs in the system's top ``k`` (golden queries only).
    judged_before, judged_after : float
        Judged@k of the system on the golden qrels before and after.
    calls : int
        Items sent to the judge (the unjudged pairs; cached answers cost nothing).
    """

    system: str
    k: int
    frame: pd.DataFrame
    top_pairs: int
    judged_before: float
    judged_after: float
    calls: int

    @property
    def new_judgements(self) -> int:
        return int(self.frame["valid"].sum())

    def summary(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "k": self.k,
            "top_pairs": self.top_pairs,
            "judged_now": self.calls,
            "new_judgements": self.new_judgements,
            "invalid": int((~self.frame["valid"]).sum()),
            "judged_before": self.judged_before,
            "judged_after": self.judged_after,
        }


@dataclass(frozen=True, eq=False)
class BuildRecord:
    """How a golden set was built: what its manifest records and its analyses read.

    A value filled by :meth:`GoldenPipeline.run <ragnb.studies.golden.GoldenPipeline.run>`; the
    golden set never calls back into the pipeline.

    Attributes
    ----------
    judge : Judge
        The judge that graded it (its ``scale``, ``judge_id``, cache).
    corpus : DataFrame
        ``doc_id``, ``title``, ``text``: the passages the judge read.
    config : GoldenSetConfig or None
        The notebook parameters, when built from them.
    run_dir : Path or None
        The run folder (None: in memory).
    depth, rrf_k, min_pool, keep_grade, top_n, incremental_k, seed : int
        The stages' settings (S2, S3, S5, S5, S6, incremental judging, S6's random seed).
    refine_config : RefineConfig
        S6's settings.
    cutoffs : list of int
        Judged@K cutoffs.
    budget_usd : float or None
        The spending limit, US dollars.
    ledger : Ledger or None
        The LLM calls (LLM judges only).
    stage_records : mapping of str to StageRecord
        Each stage's hashes, reuse, seconds and counts, in run order.
    check_thresholds : CheckThresholds
        When the degenerate-judge checks report a finding.
    dataset_info : dict
        The dataset's summary and where the queries come from.
    data_sha256 : str
        SHA-256 of the corpus and queries read.
    systems : dict
        Each pool and new system's description with its ``role``.
    rewriter : str or None
        S1's rewriter id.
    labels : DataFrame or None
        The dataset's qrels (``query_id``, ``doc_id``, ``relevance``); None when it has none.
    """

    judge: Judge
    corpus: pd.DataFrame
    config: GoldenSetConfig | None = None
    run_dir: Path | None = None
    depth: int = 30
    rrf_k: int = 60
    min_pool: int = 30
    keep_grade: int = 1
    top_n: int = 20
    refine_config: RefineConfig = field(default_factory=RefineConfig)
    incremental_k: int = 10
    cutoffs: list[int] = field(default_factory=lambda: [5, 10, 20])
    budget_usd: float | None = None
    seed: int = 0
    ledger: Any = None
    stage_records: Mapping[str, StageRecord] = field(default_factory=dict)
    check_thresholds: CheckThresholds = field(default_factory=CheckThresholds)
    dataset_info: dict[str, Any] = field(default_factory=dict)
    data_sha256: str = ""
    systems: dict[str, Any] = field(default_factory=dict)
    rewriter: str | None = None
    labels: pd.DataFrame | None = None


@dataclass(frozen=True, eq=False)
class GoldenSet:
    """A built golden set, a value (frozen): every stage's frame, the judgements with their
    provenance, exports. Extending it (:meth:`GoldenPipeline.extend
    <ragnb.studies.golden.GoldenPipeline.extend>`, :meth:`with_increment`) or folding an audit into
    it (:func:`ragnb.studies.golden.audit.fold_audit`) returns a new one.

    Attributes
    ----------
    build : BuildRecord
        How it was built (judge, settings, stage records, manifest facts).
    queries, pools, candidates, grades, pool : DataFrame
        S1 to S5 (see the stage functions).
    order, history, refine_summary : DataFrame
        S6's frames.
    estimate : CostEstimate
        What the run was priced at before S4.
    judgements : DataFrame
        Every valid grade: ``query_id``, ``doc_id``, ``grade`` (int), ``source`` ("pool" or
        "incremental"), ``systems`` (who brought it: S3's systems for the pool, the new system
        for an increment).
    increments : list of Increment
    new_runs : dict of str to DataFrame
        Each new system's top ``k`` (its increment's run).
    """

    build: BuildRecord
    queries: pd.DataFrame
    pools: pd.DataFrame
    candidates: pd.DataFrame
    grades: pd.DataFrame
    pool: pd.DataFrame
    order: pd.DataFrame
    history: pd.DataFrame
    refine_summary: pd.DataFrame
    estimate: Any = None
    judgements: pd.DataFrame = field(default_factory=pd.DataFrame)
    increments: list[Increment] = field(default_factory=list)
    new_runs: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.judgements.empty:
            valid = self.grades[self.grades["valid"]]
            systems = self.candidates.set_index(["query_id", "doc_id"])["systems"]
            judgements = pd.DataFrame(
                {
                    "query_id": valid["query_id"].to_numpy(dtype=object),
                    "doc_id": valid["doc_id"].to_numpy(dtype=object),
                    "grade": valid["grade"].astype(np.int64).to_numpy(),
                    "source": "pool",
                    "systems": [
                        systems.get((q, d), "")
                        for q, d in zip(valid["query_id"], valid["doc_id"], strict=True)
                    ],
                }
            ).astype({"source": object, "systems": object})
            object.__setattr__(self, "judgements", judgements)  # frozen: set once, here

    # -- views

    @property
    def judge(self) -> Judge:
        """The judge that graded the golden set."""
        return self.build.judge

    @property
    def run_dir(self) -> Path | None:
        """The run folder (None: in memory)."""
        return self.build.run_dir

    @property
    def qrels(self) -> pd.DataFrame:
        """The golden qrels: ``query_id``, ``doc_id``, ``relevance`` (the judge's grades)."""
        q = self.judgements[["query_id", "doc_id", "grade"]].rename(columns={"grade": "relevance"})
        return q.astype({"relevance": np.int64}).reset_index(drop=True)

    @property
    def runs(self) -> dict[str, pd.DataFrame]:
        """Each pool system's top ``depth`` as a run frame."""
        return {
            str(name): g[["query_id", "doc_id", "score", "rank"]].reset_index(drop=True)
            for name, g in self.pools.groupby("system", sort=False)
        }

    @property
    def fused_run(self) -> pd.DataFrame:
        """S3's RRF fusion of the pool systems as a run frame."""
        c = self.candidates
        return pd.DataFrame(
            {"query_id": c["query_id"], "doc_id": c["doc_id"], "score": c["rrf_score"]}
        )

    @property
    def refined_run(self) -> pd.DataFrame:
        """S6's order as a run frame (score = pool size - rank + 1)."""
        o = self.order
        size = o.groupby("query_id")["rank"].transform("max")
        return pd.DataFrame(
            {
                "query_id": o["query_id"],
                "doc_id": o["doc_id"],
                "score": (size - o["rank"] + 1).astype(np.float64),
            }
        )

    def top(self) -> pd.DataFrame:
        """The refined top ``top_n`` per query: ``query_id``, ``rank``, ``doc_id``, ``grade``,
        ``score``, ``sigma``, ``exposures``."""
        t = self.order[self.order["in_top"]]
        return t[
            ["query_id", "rank", "doc_id", "grade", "score", "sigma", "exposures"]
        ].reset_index(drop=True)

    def banner(self) -> str:
        return judge_banner(self.judge)

    def judged_at_k(self, cutoffs: Sequence[int] | None = None) -> pd.DataFrame:
        """Judged@K per system on the golden qrels: pool systems, new systems (after their
        increment, with ``judged_before``).

        Returns
        -------
        DataFrame
            ``system``, ``role`` ("pool" or "new"), ``k``, ``judged``, ``n_queries``,
            ``judged_before`` (new systems at their increment's k: before judging; NaN
            otherwise).
        """
        ks = list(cutoffs) if cutoffs is not None else self.build.cutoffs
        pool = judged_table(self.qrels, self.runs, ks).assign(role="pool")
        parts = [pool]
        if self.new_runs:
            new = judged_table(self.qrels, self.new_runs, ks).assign(role="new")
            parts.append(new)
        out = pd.concat(parts, ignore_index=True)
        out["judged_before"] = np.nan
        for inc in self.increments:
            hit = (out["system"] == inc.system) & (out["k"] == inc.k) & (out["role"] == "new")
            out.loc[hit, "judged_before"] = inc.judged_before
        return out[["system", "role", "k", "judged", "n_queries", "judged_before"]]

    def pool_overlap(self) -> pd.DataFrame:
        """:func:`pool_overlap` of S2."""
        return pool_overlap(self.pools)

    def grade_distribution(self) -> pd.DataFrame:
        """:func:`grade_distribution` of S4, S5 and the refined top."""
        return grade_distribution(self.grades, self.pool, self.order)

    def convergence(self, max_traces: int = 20) -> pd.DataFrame:
        """S6's history, long, for the convergence chart.

        Parameters
        ----------
        max_traces : int, default 20
            Queries whose own traces are kept (the first ones); the mean covers every query.

        Returns
        -------
        DataFrame
            ``query_id`` (a query, or ``"(mean)"``), ``iteration`` (judge calls so far),
            ``metric`` (``n_locks``, ``mean_sigma``, ``stable_for``), ``value`` (float). The mean
            at an iteration is over every query, a query that stopped earlier counting with its
            final state.
        """
        metrics = ["n_locks", "mean_sigma", "stable_for"]
        h = self.history
        if h.empty:
            return pd.DataFrame(columns=["query_id", "iteration", "metric", "value"])
        keep = list(dict.fromkeys(h["query_id"]))[:max_traces]
        traces = h[h["query_id"].isin(keep)].melt(
            id_vars=["query_id", "iteration"], value_vars=metrics, var_name="metric"
        )
        means = []
        for metric in metrics:
            wide = h.pivot(index="iteration", columns="query_id", values=metric).astype(float)
            mean = wide.ffill().mean(axis=1)
            means.append(
                pd.DataFrame(
                    {"query_id": "(mean)", "iteration": mean.index, "metric": metric}
                ).assign(value=mean.to_numpy())
            )
        out = pd.concat([traces, *means], ignore_index=True)
        return out.astype({"query_id": object, "value": np.float64})

    def stop_reasons(self) -> pd.DataFrame:
        """Queries per S6 stop reason, with mean calls: ``stop_reason``, ``queries``,
        ``mean_calls``."""
        s = self.refine_summary
        out = s.groupby("stop_reason").agg(
            queries=("query_id", "size"), mean_calls=("calls", "mean")
        )
        return out.reset_index()

    def increments_table(self) -> pd.DataFrame:
        """One row per increment (:meth:`Increment.summary`): ``system``, ``k``, ``top_pairs``,
        ``judged_now``, ``new_judgements``, ``invalid``, ``judged_before``, ``judged_after``."""
        return pd.DataFrame([inc.summary() for inc in self.increments])

    def ledger_totals(self) -> pd.DataFrame:
        """LLM requests, tokens and US dollars per ledger stage (empty for offline judges)."""
        ledger = self.build.ledger
        if ledger is None:
            return pd.DataFrame(
                columns=["stage", "requests", "answered", "failed", "cached", "cost_usd"]
            )
        return ledger.totals(by="stage")

    def stages(self) -> pd.DataFrame:
        """One row per stage: ``stage``, ``title``, ``reused``, ``seconds``, ``input_hash``
        (first 12 hex digits), ``counts`` (JSON)."""
        rows = []
        for sid, rec in self.build.stage_records.items():
            rows.append(
                (sid, STAGES[sid][0], rec.reused, rec.seconds, rec.input_hash[:12])
                + (json.dumps(rec.counts),)
            )
        return pd.DataFrame(
            rows, columns=["stage", "title", "reused", "seconds", "input_hash", "counts"]
        )

    # -- the degenerate-judge checks

    def graded_sets(self) -> list[GradeSet]:
        """Every set of grades the golden set is made from
        (:func:`ragnb.judge.degenerate.grade_sets`): S4's, each ensemble member's, S6's listwise
        answers, and per increment the new system's
        whole top ``k`` (the pairs it judged and those judged before: the unjudged rest alone
        is the residue the pool missed, mostly irrelevant whatever the judge)."""
        increments = [(inc.system, self._increment_top(inc)) for inc in self.increments]
        return grade_sets(self.grades, self.refine_summary, increments)

    def _increment_top(self, inc: Increment) -> pd.DataFrame:
        """The new system's top ``inc.k`` with its grades now: ``query_id``, ``doc_id``,
        ``rank``, ``grade`` (Int64), ``status`` (the increment's for the pairs it judged, "ok"
        for those judged before)."""
        top = self.new_runs.get(inc.system, inc.frame)
        top = top.loc[top["rank"] <= inc.k, ["query_id", "doc_id", "rank"]]
        judged = self.judgements.set_index(["query_id", "doc_id"])["grade"]
        status = inc.frame.set_index(["query_id", "doc_id"])["status"]
        keys = pd.MultiIndex.from_frame(top[["query_id", "doc_id"]])
        return top.assign(
            grade=judged.reindex(keys).astype("Int64").to_numpy(),
            status=status.reindex(keys).fillna("ok").to_numpy(dtype=object),
        ).reset_index(drop=True)

    def judge_checks(self, thresholds: CheckThresholds | None = None) -> list[JudgeFinding]:
        """The degenerate-judge checks (:mod:`ragnb.judge.degenerate`) on every set of grades
        of :meth:`graded_sets`: S4's grades against the fused rank, each ensemble member's, the
        share of invalid S6 listwise answers, each incremental judging against its system's
        rank; with ``thresholds`` (default: the pipeline's ``check_thresholds``). Empty when no
        set shows a sign of a judge that says nothing."""
        return check_sets(self.graded_sets(), thresholds or self.build.check_thresholds)

    def _checks_record(self) -> dict[str, Any]:
        """The manifest's ``judge_checks``: thresholds, the sets checked, the findings."""
        th = self.build.check_thresholds
        return {
            "thresholds": th.to_dict(),
            "checked": [
                {"source": source, **counts} for source, _, _, counts in self.graded_sets()
            ],
            "findings": [f.to_dict() for f in self.judge_checks(th)],
        }

    # -- incremental judging

    def with_increment(self, inc: Increment, top: pd.DataFrame) -> GoldenSet:
        """A copy with ``inc``'s valid grades added to the judgements (``source``
        "incremental"; a pair judged before keeps its grade), ``inc`` appended to the
        increments and ``top`` (the new system's top ``inc.k``) recorded as its run."""
        from dataclasses import replace

        return replace(
            self,
            judgements=add_judgements(self.judgements, inc.frame),
            increments=[*self.increments, inc],
            new_runs={**self.new_runs, inc.system: top},
        )

    # -- exports

    def manifest(self) -> dict[str, Any]:
        """What produced the golden set, JSON-safe and free of secrets.

        Keys: ``format``, ``written``, ``judge_id``, ``judge`` (describe, ``base_url`` only when
        it holds no credentials), ``config`` (the notebook parameters, when built from them),
        ``parameters`` (the stages'), ``dataset``, ``data_sha256``, ``systems`` (each pool and
        new system's configuration), ``rewriter``, ``seeds``, ``stages`` (per stage: input and
        output hashes, reused, seconds, counts, files), ``counts``, ``cache`` (hits and misses
        of the judge's cache; cached answers per stage), ``costs`` (the ledger's totals per
        stage and overall; None for offline judges), ``estimate``, ``increments``,
        ``judge_checks`` (:meth:`judge_checks`: ``thresholds``, ``checked`` (each set of grades
        with its counts), ``findings``), ``versions``, ``files``.
        """
        p = self.build
        cache = getattr(p.judge, "cache", None)
        g = self.grades
        m = {
            "format": FORMAT,
            "written": utc_now(),
            "judge_id": p.judge.judge_id,
            "judge": public_judge_info(p.judge),
            "config": None if p.config is None else asdict(p.config),
            "parameters": {
                "depth": p.depth,
                "rrf_k": p.rrf_k,
                "min_pool": p.min_pool,
                "keep_grade": p.keep_grade,
                "top_n": p.top_n,
                "refine": asdict(p.refine_config),
                "incremental_k": p.incremental_k,
                "cutoffs": p.cutoffs,
                "budget_usd": p.budget_usd,
            },
            "dataset": p.dataset_info,
            "data_sha256": p.data_sha256,
            "systems": p.systems,
            "rewriter": p.rewriter,
            "seeds": {
                "pipeline": p.seed,
                "refine": "per query: first 8 bytes of sha256('<seed>:<query_id>'), little-endian",
                "judge": getattr(p.judge, "seed", None),
            },
            "stages": {sid: rec.to_dict() for sid, rec in p.stage_records.items()},
            "counts": self._counts(),
            "cache": {
                "judge_cache": None if cache is None else cache.summary(),
                "cached_answers": {
                    "s4": int(g["cached"].sum()),
                    "s6": int(self.refine_summary["cached"].sum()),
                },
            },
            "costs": None if p.ledger is None else p.ledger.summary(),
            "estimate": None if self.estimate is None else self.estimate.summary(),
            "increments": [inc.summary() for inc in self.increments],
            "judge_checks": self._checks_record(),
            "versions": versions(),
            "files": FILE_LIST,
        }
        return scrub(m)

    def _counts(self) -> dict[str, int]:
        """The manifest's counts: queries, pairs, grades, pool, refinement calls, qrels."""
        g = self.grades
        return {
            "queries": len(self.queries),
            "rewritten": int(self.queries["rewritten"].sum()),
            "pool_pairs": len(self.pools),
            "candidates": len(self.candidates),
            "graded": len(g),
            "valid": int(g["valid"].sum()),
            "invalid": int((g["status"] == "invalid").sum()),
            "failed": int((g["status"] == "failed").sum()),
            "pruned_pool": len(self.pool),
            "refined_queries": len(self.refine_summary),
            "refine_calls": int(self.refine_summary["calls"].sum()),
            "qrels": len(self.judgements),
            "qrels_from_increments": int((self.judgements["source"] == "incremental").sum()),
        }

    def export(self, folder: str | os.PathLike[str] | None = None) -> list[Path]:
        """Write the golden set's products (see the module's table) and the manifest.

        Parameters
        ----------
        folder : str or PathLike, optional
            Default: the run folder.

        Returns
        -------
        list of Path
            The files written, ``manifest.json`` last.

        Raises
        ------
        InputError
            With no folder and no run folder.
        """
        from ragnb.core.paths import public_paths
        from ragnb.io.files import atomic_write, write_json, write_qrels, write_run

        out = Path(folder) if folder is not None else self.run_dir
        if out is None:
            raise InputError("no run folder: pass a folder or build with run_dir/export_dir")
        written = [out / "golden.qrels", out / QRELS_NOTE]
        write_qrels(self.qrels, written[0])
        with atomic_write(written[1]) as f:
            f.write(self.qrels_note())
        if len(self.order):
            written.append(out / "refined.trec")
            write_run(self.refined_run, written[-1], tag="golden-refined")
        for name, run in self.runs.items():
            written.append(out / "runs" / f"{name}.trec")
            write_run(run[["query_id", "doc_id", "score"]], written[-1], tag=name)
        for stem, frame in (
            ("judgements", self.judgements),
            ("refined_top", self.top()),
            ("pool_provenance", self.pools),
            ("judged_at_k", self.judged_at_k()),
        ):
            written.append(out / f"{stem}.csv")
            write_table_csv(frame, written[-1])
        written.append(out / "manifest.json")
        write_json(public_paths(self.manifest()), written[-1])
        return written

    def qrels_note(self) -> str:
        """The text of ``golden.qrels.README`` (:func:`~.judging.qrels_note`): which judge made
        the qrels, when, how many judgements, the degenerate-judge findings."""
        c = self._counts()
        return qrels_note(
            self.judge,
            judgements=c["qrels"],
            queries=c["queries"],
            from_increments=c["qrels_from_increments"],
            dataset_info=self.build.dataset_info,
            findings=self.judge_checks(),
        )

    def summary_markdown(self) -> str:
        """A short markdown account of the run: stages computed or reused, counts, costs."""
        m = self.manifest()
        c = m["counts"]
        lines = [self.banner(), ""]
        if c["failed"]:
            g = self.grades
            cause, n = failure_cause(g.loc[g["status"] == "failed", "reason"].tolist())
            lines += [
                f"**{c['failed']} of {c['graded']} judgements failed** (no answer; most common "
                f"cause, {n} of them: {cause}): they count as unjudged. Run again to re-send "
                "only those.",
                "",
            ]
        checks = findings_markdown(self.judge_checks())
        if checks:
            lines += [checks, ""]
        ledger = self.build.ledger
        if ledger is not None and hasattr(ledger, "cost_note"):
            lines += [f"**Cost:** {ledger.cost_note()}", ""]
        lines += [
            f"{c['queries']} queries ({c['rewritten']} rewritten); {c['pool_pairs']} pooled "
            f"(system, document) pairs from {len(self.runs)} systems, {c['candidates']} "
            f"candidates after RRF; {c['valid']} valid grades, {c['invalid']} invalid, "
            f"{c['failed']} failed; pruned pool {c['pruned_pool']}; S6 made {c['refine_calls']} "
            f"listwise calls; {c['qrels']} judgements in the golden qrels "
            f"({c['qrels_from_increments']} from incremental judging).",
            "",
            "| stage | computed or reused | seconds |",
            "|---|---|---|",
        ]
        for rec in m["stages"].values():
            lines.append(
                f"| {rec['title']} | {'reused' if rec['reused'] else 'computed'} | "
                f"{rec['seconds']:.2f} |"
            )
        if self.run_dir is not None:
            lines += ["", f"Run folder: `{self.run_dir}` (manifest.json, golden.qrels, stages/)."]
        return "\n".join(lines)


def add_judgements(judgements: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``judgements`` with the valid grades of an increment's ``frame`` added.

    Parameters
    ----------
    judgements : DataFrame
        :attr:`GoldenSet.judgements`.
    frame : DataFrame
        ``query_id``, ``doc_id``, ``grade``, ``valid``, ``system`` (an :class:`Increment`'s).

    Returns
    -------
    DataFrame
        The same columns; the new rows have ``source`` "incremental" and ``systems`` the new
        system; a pair already judged keeps its first grade.
    """
    valid = frame[frame["valid"].astype(bool)]
    if valid.empty:
        return judgements
    new = pd.DataFrame(
        {
            "query_id": valid["query_id"].to_numpy(dtype=object),
            "doc_id": valid["doc_id"].to_numpy(dtype=object),
            "grade": valid["grade"].astype(np.int64).to_numpy(),
            "source": "incremental",
            "systems": valid["system"].to_numpy(dtype=object),
        }
    ).astype({"source": object})
    both = pd.concat([judgements, new], ignore_index=True)
    return both.drop_duplicates(["query_id", "doc_id"], keep="first").reset_index(drop=True)
