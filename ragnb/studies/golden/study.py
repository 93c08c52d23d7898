"""Notebook 02 as one call: :func:`run` builds the golden set and its analyses and returns a
:class:`GoldenSetResult` (the study protocol, :class:`ragnb.report.protocol.StudyResult`), plus the
Markdown and tables the notebook shows (cost estimate, calibration, PPI, simulation summary).

The golden set itself is built by :class:`ragnb.studies.golden.GoldenPipeline` (modules:
:mod:`~ragnb.studies.golden.config` for :class:`~ragnb.studies.golden.GoldenSetConfig`,
:mod:`~ragnb.studies.golden.stages` for S1-S6, :mod:`~ragnb.studies.golden.pipeline`,
:mod:`~ragnb.studies.golden.goldenset` for the result); the notebook reaches everything through
``from ragnb import golden``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.report.protocol import StudyResultBase, skipped
from ragnb.studies.golden.config import CHECKS, FORMAT, GoldenSetConfig
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.human import NO_LABELS, HumanLabels

__all__ = [
    "GoldenSetResult",
    "calibration_markdown",
    "checks_off_reason",
    "estimate_markdown",
    "ppi_markdown",
    "ppi_table",
    "run",
    "simulation_table",
]

#: The tables :meth:`GoldenSet.export` writes itself (the rest go through :meth:`export`).
_GOLDEN_TABLES = ("judgements", "refined_top", "pool_provenance", "judged_at_k")
#: The files of :meth:`Calibration.export <ragnb.judge.calibration.Calibration.export>`.
_CALIBRATION_FILES = (
    "pairs.csv",
    "confusion.csv",
    "agreement.csv",
    "systems.csv",
    "calibration.json",
)
_PPI_NEEDS = (
    "there are no human labels (give `human_labels`, or a dataset with qrels and `ppi_labels` >= 2)"
)


def checks_off_reason(config: GoldenSetConfig, local: bool) -> str:
    """Why ``config.checks`` leaves judge checks off, as the end of a sentence that says how to
    run them; ``""`` when it turns every check on.

    Examples
    --------
    >>> checks_off_reason(GoldenSetConfig(checks="auto"), local=True).split(":")[0]
    'the judge is the local stand-in SmolLM2-135M (135M parameters)'
    >>> checks_off_reason(GoldenSetConfig(checks="auto"), local=False)
    ''
    """
    from ragnb.studies.golden.config import CHECKS

    if len(config.checks_on(local)) == len(CHECKS):
        return ""
    how = "set `checks='all'` (`ragnb golden --checks all`) to run them"
    if config.checks.strip() == "auto":
        return (
            "the judge is the local stand-in SmolLM2-135M (135M parameters): their numbers would "
            f"mean nothing and its calls take minutes; {how}"
        )
    return f"`checks={config.checks!r}` leaves them off; {how}"


def simulation_table(summary: pd.DataFrame, metric: str = "overlap") -> pd.DataFrame:
    """One metric of :func:`ragnb.studies.golden.simulation.summarise`, wide, for reading: rows
    (noise sd, budget) written with ``:g``, columns the methods' means, then their 95% intervals as
    ``<method> low`` / ``<method> high``."""
    rows = summary[summary["metric"] == metric]
    mean = rows.pivot_table(index=["noise_sd", "budget"], columns="method", values="mean")
    parts = [mean]
    for bound in ("low", "high"):
        b = rows.pivot_table(index=["noise_sd", "budget"], columns="method", values=bound)
        parts.append(b.rename(columns=lambda c, s=bound: f"{c} {s}"))
    out = pd.concat(parts, axis=1)
    out.columns.name = metric
    out.index = out.index.set_levels([lvl.map("{:g}".format) for lvl in out.index.levels])
    return out


def estimate_markdown(estimate: Any, budget_usd: float | None) -> str:
    """Markdown stating a :class:`~ragnb.llm.ledger.CostEstimate` against the budget."""
    s = estimate.summary()
    if s["calls"] == 0 and s["cached_calls"] == 0:
        return "**Cost estimate:** no LLM call is planned (offline judge, or every stage done)."
    total = "unknown (unpriced model)" if s["total_usd"] is None else f"${s['total_usd']:.4f}"
    lines = [
        f"**Cost estimate:** {s['calls']} calls ({s['cached_calls']} more answered by the cache), "
        f"{s['input_tokens']} input + {s['output_tokens']} assumed output tokens: **{total}**"
        + ("" if budget_usd is None else f" against a budget of ${budget_usd:.2f}")
        + f"; prices as of {s['prices'].get('as_of')}."
    ]
    lines += [f"- {n}" for n in s["notes"]]
    prefix = estimate.prefix_note()
    if prefix:
        lines.append(f"- shared prompt prefix: {prefix}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- first screen


def _first_screen(config: Any, pipeline: Any, golden: Any) -> str:
    """Markdown for the top of notebook 02: the judge, the degenerate-judge findings of the golden
    set's grades (:meth:`~ragnb.studies.golden.GoldenSet.judge_checks`), the sample and what it
    stands for."""
    from ragnb.judge.degenerate import findings_markdown
    from ragnb.studies.golden.judging import LOCAL_MODEL_NAME

    info = pipeline.dataset_info
    lines = [pipeline.banner(), ""]
    checks = findings_markdown(golden.judge_checks(), short=True)
    if checks:
        lines += [checks, ""]
    if getattr(pipeline.judge, "local_server", None) is not None:
        lines += [
            f"The judge is {LOCAL_MODEL_NAME}: it makes the real LLM path run here (HTTP, "
            "constrained output, token log-probabilities, the cache and the ledger), and its "
            "agreement with the labels below is what a 135M-parameter model does, not what LLM "
            "judging can do. Point `judge='openai'` at a capable model for a golden set to rely "
            "on; `judge='noisy'` and `'qrels'` simulate one from the dataset's labels.",
            "",
        ]
    systems = ", ".join(pipeline.systems)
    lines.append(
        f"**Sample:** {info.get('queries_from', '')}; pool systems {systems}, top "
        f"{pipeline.depth} each; at most {pipeline.refine_config.max_iterations} listwise "
        f"call(s) per query for a top {pipeline.top_n}. "
        + (
            "These are the defaults, shrunk so that the report renders in minutes on two CPU "
            "cores with the local model; a full golden set sets `max_queries=0`, `depth=30`, "
            "`min_pool=30`, `top_n=20`, `refine_max_iterations=60`."
            if config.judge == "local"
            else ""
        )
    )
    if not getattr(pipeline.dataset, "has_qrels", True) and not config.human_labels:
        lines += ["", NO_LABELS]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- calibration


def _interval(cal: Any, statistic: str) -> str:
    a = cal.agreement.set_index("statistic")
    row = a.loc[statistic]
    if "low" in a.columns and row["low"] == row["low"]:
        return f"{row['value']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
    return f"{row['value']:.3f}"


def calibration_markdown(cal: Any, human: Any) -> str:
    """Markdown: whose labels, the headline agreement with its intervals, Kendall's tau with its
    interval, the published reference points beside them, and the calibration's notes."""
    from ragnb.studies.golden.human import REFERENCE_POINTS

    n_q = cal.pairs["query_id"].nunique()
    ti = cal.tau_interval
    tau = "n/a (no systems)"
    if cal.tau is not None:
        tau = f"{cal.tau.tau:.3f}" + ("" if ti is None else f" [{ti.low:.3f}, {ti.high:.3f}]")
        tau += f" over {len(cal.systems)} systems ({cal.measure})"
    lines = [
        f"**Human labels:** {human.source}. {len(cal.pairs)} pairs of {n_q} queries carry "
        "both a human label and a judge grade.",
        "",
        f"**This judge:** Cohen's kappa {_interval(cal, 'kappa')}, linear-weighted "
        f"{_interval(cal, 'kappa (linear)')}, quadratic-weighted "
        f"{_interval(cal, 'kappa (quadratic)')}; system-ranking Kendall tau {tau}. "
        f"Intervals: {cal.ci:.0%} percentile bootstrap over queries ({cal.n_boot} resamples).",
        "",
        REFERENCE_POINTS,
    ]
    lines += [f"- {note}" for note in [*human.notes, *cal.notes]]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- PPI


def ppi_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`ragnb.studies.golden.human.ppi_estimates`' table as the notebook shows it: per system
    and measure, judge-only, human-only and PPI++ with their 95% intervals, ``lam``, the width
    ratio, the labels that would halve the PPI interval and, when the table has them, the labels
    that would narrow it to the target width (``ppi_target_width``)."""
    if table.empty:
        return table
    cols = {
        "system": "system",
        "measure": "measure",
        "n_labelled": "labels",
        "n_total": "pairs",
        "judge_only": "judge only",
        "human_only": "human only",
        "human_ci_low": "human low",
        "human_ci_high": "human high",
        "ppi": "PPI++",
        "ppi_ci_low": "PPI low",
        "ppi_ci_high": "PPI high",
        "lam": "lambda",
        "width_ratio": "width PPI / human",
        "labels_to_halve": "labels to halve",
        "labels_for_width": "labels for width",
    }
    return table[[c for c in cols if c in table.columns]].rename(columns=cols)


def ppi_markdown(
    human: Any, table: pd.DataFrame, notes: list[str], target_width: float = 0.0
) -> str:
    """Markdown above the PPI table: whose labels, the design, the halving estimate and the
    labels each system needs for a PPI interval of ``target_width`` (0: not said)."""
    from ragnb.studies.golden.human import halving_markdown, width_markdown

    lines = [
        f"**Human labels:** {human.source}. Population: every (query, document) pair a system "
        "ranks in its top K, all graded by the judge; the estimand is the measure under human "
        "labels on all of them.",
        "",
    ]
    lines += [f"- {n}" for n in [*human.notes, *notes]]
    if not table.empty:
        lines += ["", halving_markdown(table)]
        if target_width and "labels_for_width" in table.columns:
            lines += ["", width_markdown(table, target_width)]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the study


@dataclass(frozen=True, eq=False)
class GoldenSetResult(StudyResultBase):
    """Notebook 02's result (:func:`run`): the golden set, its analyses, what was skipped.

    Attributes
    ----------
    config : GoldenSetConfig
        The parameters it ran with.
    golden : GoldenSet or None
        The golden set; None when there is no judge (``needs`` says why).
    needs : str
        Markdown: why there is no golden set (empty when there is one).
    screen : str
        The first screen without the skipped parts (:meth:`banner` adds them).
    estimate : CostEstimate or None
        The LLM calls priced before S4 (:meth:`GoldenPipeline.estimate`).
    keep_grade, min_pool : int
        S5's settings, for the grade section.
    human : HumanLabels or None
        The labels the judge is calibrated against (None: no calibration).
    calibration : Calibration or None
        :func:`~ragnb.studies.golden.evaluation.calibrate_judge`.
    ppi_labels : HumanLabels or None
        The labels of the prediction-powered estimates (None: none).
    ppi : DataFrame
        :func:`~ragnb.studies.golden.evaluation.ppi_for`'s table (empty when not estimated).
    ppi_notes : list of str
    spear : SpearResult or None
    simulation, simulation_summary : DataFrame or None
        :func:`~ragnb.studies.golden.evaluation.simulate_refinement` (None when ``simulate=False``
        or no golden set).
    consistency : SelfConsistency or None
        :func:`~ragnb.studies.golden.judge_checks.self_consistency_for` (None when
        ``consistency_samples=0``).
    judge_audit : JudgeAudit or None
        :func:`~ragnb.studies.golden.judge_checks.judge_audit_for` (None when
        ``judge_audit=False``).
    drift : DriftCheck or None
        :func:`~ragnb.studies.golden.judge_checks.drift_for` (None when skipped: ``drift_skipped``
        says why).
    drift_skipped : str
        Why there is no drift check (empty when there is one).
    nuggets : NuggetCheck or None
        :func:`~ragnb.studies.golden.nugget_stage.nuggets_for` (None when skipped:
        ``nuggets_skipped`` says why).
    nuggets_skipped : str
        Why there are no nuggets (empty when there are).
    """

    config: GoldenSetConfig
    golden: GoldenSet | None
    needs: str = ""
    screen: str = ""
    estimate: Any = None
    keep_grade: int = 0
    min_pool: int = 0
    human: HumanLabels | None = None
    calibration: Any = None
    ppi_labels: HumanLabels | None = None
    ppi: pd.DataFrame = field(default_factory=pd.DataFrame)
    ppi_notes: list[str] = field(default_factory=list)
    spear: Any = None
    simulation: pd.DataFrame | None = None
    simulation_summary: pd.DataFrame | None = None
    consistency: Any = None
    judge_audit: Any = None
    drift: Any = None
    drift_skipped: str = ""
    nuggets: Any = None
    nuggets_skipped: str = ""

    def skipped_parts(self) -> list[str]:
        """A :func:`ragnb.report.protocol.skipped` line per part that did not run."""
        if self.golden is None:
            return []
        cfg, lines = self.config, []
        if not cfg.calibrate:
            lines.append(skipped("Calibration", "`calibrate=False`"))
        elif self.human is None:
            lines.append(skipped("Calibration", "there are no human labels"))
        if self.ppi_labels is None:
            lines.append(skipped("Prediction-powered estimates", _PPI_NEEDS))
        off = self.checks_off()
        if off:
            names = ", ".join(CHECKS[n] for n in CHECKS if n not in self._checks_on())
            lines.append(skipped(f"Judge checks ({names})", off))
        if self.consistency is None and "consistency" in self._checks_on():
            lines.append(skipped("Self-consistency", self._no_consistency()))
        if self.judge_audit is None and "audit" in self._checks_on():
            lines.append(skipped("Judge bias audit", "`judge_audit=False`"))
        if self.drift is None and "drift" in self._checks_on():
            lines.append(skipped("Judge drift", self.drift_skipped))
        if self.nuggets is None and "nuggets" in self._checks_on():
            lines.append(skipped("Nugget recall", self.nuggets_skipped))
        if not cfg.simulate:
            lines.append(skipped("Simulation", "`simulate=False`"))
        return lines

    def banner(self) -> str:
        """The first screen: the judge, the degenerate-judge findings, the sample, and every
        part that did not run (no judge, no human labels, calibration or simulation off)."""
        if self.golden is None:
            return self.needs
        return "\n\n".join([self.screen, *self.skipped_parts()])

    def section(self, name: str) -> str:
        """The Markdown of one section of notebook 02, or its "skipped" notice, or ``""``.

        Parameters
        ----------
        name : {"estimate", "traces", "summary", "ledger", "grades", "audit", "calibration", \
"consistency", "judge_audit", "ppi", "drift", "nuggets", "simulation"}

        Raises
        ------
        InputError
            On an unknown section (the message lists them).
        """
        from ragnb.errors import InputError

        texts = {
            "estimate": self._estimate_text,
            "traces": self._traces_text,
            "summary": self._summary_text,
            "ledger": self._ledger_text,
            "grades": self._grades_text,
            "audit": self._audit_text,
            "calibration": self._calibration_text,
            "consistency": self._consistency_text,
            "judge_audit": self._judge_audit_text,
            "ppi": self._ppi_text,
            "drift": self._drift_text,
            "nuggets": self._nuggets_text,
            "simulation": self._simulation_text,
        }
        if name not in texts:
            raise InputError(f"no section {name!r}; known: {', '.join(texts)}")
        return "" if self.golden is None else texts[name]()

    def _estimate_text(self) -> str:
        return estimate_markdown(self.estimate, self.config.budget_usd)

    def _traces_text(self) -> str:
        from ragnb.studies.golden.from_traces import traces_markdown

        assert self.golden is not None  # section() answers "" before a golden set exists
        info = self.golden.build.dataset_info.get("traces")
        if info is None:
            return (
                "No trace file: the queries come from the dataset. Set `traces` to a file of "
                "OpenInference retriever spans (OTLP JSON or Phoenix's export; write an example "
                "with `ragnb traces example traces.jsonl`) to build the golden set from the "
                "queries users asked and pool the production retriever."
            )
        return traces_markdown(info)

    def _summary_text(self) -> str:
        assert self.golden is not None  # section() answers "" before a golden set exists
        return self.golden.summary_markdown()

    def _ledger_text(self) -> str:
        return "" if "ledger" in self.tables() else "No LLM call: the judge is offline."

    def _grades_text(self) -> str:
        return (
            f"S5 keeps every grade >= {self.keep_grade}; pools hold at least {self.min_pool} "
            "documents."
        )

    def _audit_text(self) -> str:
        from ragnb.studies.golden.audit import AUDIT_FILE, audit_markdown, audit_rows

        assert self.golden is not None  # section() answers "" before a golden set exists
        if not self.config.export_dir:
            return audit_markdown(self.golden, None)
        path = self._folder() / AUDIT_FILE
        return audit_markdown(self.golden, path, audit_rows(self.golden, path))

    def _calibration_text(self) -> str:
        if not self.config.calibrate:
            return skipped("Calibration", "`calibrate=False`")
        if self.calibration is None:
            return NO_LABELS
        return calibration_markdown(self.calibration, self.human)

    def _local(self) -> bool:
        return getattr(self.golden.judge if self.golden else None, "local_server", None) is not None

    def _checks_on(self) -> tuple[str, ...]:
        return self.config.checks_on(self._local())

    def checks_off(self) -> str:
        """Why ``checks`` left judge checks off (:func:`checks_off_reason`), ``""`` when it did
        not."""
        return "" if self.golden is None else checks_off_reason(self.config, self._local())

    def _consistency_text(self) -> str:
        from ragnb.studies.golden.judge_checks import consistency_markdown

        if self.consistency is None:
            return skipped("Self-consistency", self._no_consistency())
        return consistency_markdown(self.consistency, self._local())

    def _no_consistency(self) -> str:
        if "consistency" not in self._checks_on():
            return self.checks_off()
        if not self.config.consistency_samples:
            return "`consistency_samples=0`"
        return "the judge does not draw samples (`Judge.with_sample`)"

    def _judge_audit_text(self) -> str:
        from ragnb.studies.golden.judge_checks import audit_markdown

        if self.judge_audit is None:
            why = "`judge_audit=False`" if "audit" in self._checks_on() else self.checks_off()
            return skipped("Judge bias audit", why)
        return audit_markdown(self.judge_audit, self._local())

    def _ppi_text(self) -> str:
        if self.ppi_labels is None:
            return skipped("Prediction-powered estimates", _PPI_NEEDS)
        return ppi_markdown(self.ppi_labels, self.ppi, self.ppi_notes, self.config.ppi_target_width)

    def _drift_text(self) -> str:
        from ragnb.studies.golden.judge_checks import drift_markdown

        if self.drift is None:
            return skipped("Judge drift", self.drift_skipped)
        return drift_markdown(self.drift, self._local())

    def _nuggets_text(self) -> str:
        from ragnb.studies.golden.nugget_stage import nuggets_markdown

        if self.nuggets is None:
            return skipped("Nugget recall", self.nuggets_skipped)
        return nuggets_markdown(self.nuggets)

    def _simulation_text(self) -> str:
        return "" if self.config.simulate else skipped("Simulation", "`simulate=False`")

    def _folder(self) -> Path:
        from ragnb.core.paths import resolve_path

        return resolve_path(self.config.export_dir)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the study by the stem of its exported CSV; a part that did not run
        has none (no golden set: an empty dict).

        ``judgements``, ``refined_top``, ``pool_provenance``, ``judged_at_k``, ``increments``
        (new systems only), ``trace_queries`` (queries from traces: how often each was
        asked), ``grade_distribution``, ``pool_overlap``, ``stop_reasons``,
        ``convergence``, ``stages``, ``ledger`` (LLM judges only), ``spear``, ``spear_pr``,
        ``calibration_agreement``, ``calibration_confusion``, ``calibration_bias``,
        ``calibration_systems``, ``self_consistency`` and ``self_consistency_grades`` (when
        ``consistency_samples`` > 0), ``bias_slopes``, ``position_changes`` and
        ``position_ranks`` (when ``judge_audit``), ``ppi`` (when estimated), ``drift_kappa``,
        ``drift_bias``, ``drift_ppi``, ``drift_regraded`` and ``drift_gates`` (when the drift
        check ran), ``nugget_recall`` and ``nugget_texts`` (when nuggets were created),
        ``simulation`` and ``simulation_summary``.
        """
        gs = self.golden
        if gs is None:
            return {}
        out = {
            "judgements": gs.judgements,
            "refined_top": gs.top(),
            "pool_provenance": gs.pools,
            "judged_at_k": gs.judged_at_k(),
        }
        if gs.increments:
            out["increments"] = gs.increments_table()
        if "traces" in gs.build.dataset_info:
            from ragnb.studies.golden.from_traces import trace_queries_table

            out["trace_queries"] = trace_queries_table(gs.build.dataset_info["traces"], gs.queries)
        out.update(
            grade_distribution=gs.grade_distribution(),
            pool_overlap=gs.pool_overlap(),
            stop_reasons=gs.stop_reasons(),
            convergence=gs.convergence(),
            stages=gs.stages(),
        )
        totals = gs.ledger_totals()
        if not totals.empty:
            out["ledger"] = totals
        if self.spear is not None:
            out.update(spear=self.spear.summary, spear_pr=self.spear.interpolated)
        cal = self.calibration
        if cal is not None:
            out.update(
                calibration_agreement=cal.intervals(),
                calibration_confusion=cal.confusion,
                calibration_bias=cal.bias,
                calibration_systems=cal.systems,
            )
        if self.consistency is not None:
            out.update(
                self_consistency=self.consistency.table,
                self_consistency_grades=self.consistency.grades,
            )
        if self.judge_audit is not None:
            out["bias_slopes"] = self.judge_audit.slopes
            if self.judge_audit.position is not None:
                out.update(
                    position_changes=self.judge_audit.position.summary,
                    position_ranks=self.judge_audit.position.ranks,
                )
        if not self.ppi.empty:
            out["ppi"] = self.ppi
        if self.drift is not None:
            d = self.drift.drift.tables()
            out.update(
                drift_kappa=d["kappa"],
                drift_bias=d["bias"],
                drift_regraded=d["regraded"],
                drift_gates=self.drift.gates.table,
            )
            if not d["ppi"].empty:
                out["drift_ppi"] = d["ppi"]
        if self.nuggets is not None:
            out.update(
                nugget_recall=self.nuggets.recall,
                nugget_texts=self.nuggets.nuggets[["query_id", "nugget_id", "text", "importance"]],
            )
        if self.simulation is not None and self.simulation_summary is not None:
            out.update(simulation=self.simulation, simulation_summary=self.simulation_summary)
        return out

    def charts(self) -> dict[str, Any]:
        """The altair charts of :mod:`ragnb.studies.golden.charts` by name (``<table>_chart``);
        empty when altair is not installed or there is no golden set."""
        try:
            import ragnb.studies.golden.charts as gc
        except ImportError:  # MissingExtra: the notebooks extra
            return {}
        t = self.tables()
        if not t:
            return {}
        out = {
            "grade_distribution_chart": gc.grade_distribution_chart(t["grade_distribution"]),
            "pool_overlap_chart": gc.pool_overlap_chart(t["pool_overlap"]),
            "judged_at_k_chart": gc.judged_at_k_chart(t["judged_at_k"]),
            "convergence_chart": gc.refinement_convergence_chart(t["convergence"]),
        }
        if "spear_pr" in t:
            out["spear_pr_chart"] = gc.pr_curve_chart(t["spear_pr"])
        cal = self.calibration
        if cal is not None:
            tau = "n/a" if cal.tau is None else f"{cal.tau.tau:.3f}"
            out["calibration_confusion_chart"] = gc.confusion_matrix_chart(cal.confusion)
            out["calibration_systems_chart"] = gc.system_agreement_chart(
                cal.systems, title=f"Kendall tau {tau}"
            )
        if "bias_slopes" in t:
            out["bias_slopes_chart"] = gc.bias_slopes_chart(t["bias_slopes"])
        if "simulation_summary" in t:
            out["simulation_chart"] = gc.simulation_chart(t["simulation_summary"], metric="overlap")
        return out

    def provenance(self) -> dict[str, Any]:
        """The golden set's manifest (:meth:`GoldenSet.manifest`); without a golden set, the
        config, why there is none and the versions."""
        if self.golden is not None:
            return self.golden.manifest()
        from ragnb.core.provenance import scrub, utc_now, versions

        return scrub(
            {
                "format": FORMAT,
                "written": utc_now(),
                "config": asdict(self.config),
                "golden_set": None,
                "skipped": self.needs,
                "versions": versions(),
            }
        )

    def export_first(self, out: Path) -> list[Path]:
        """Write the golden set's products under ``out`` before the other tables
        (:meth:`GoldenSet.export`: ``golden.qrels``, its README, ``refined.trec``, ``runs/``,
        ``manifest.json``), the audit file (``audit_top.csv``, keeping grades already given)
        and ``calibration/``; the paths written."""
        from ragnb.studies.golden.audit import export_audit

        written: list[Path] = []
        if self.golden is not None:
            written += self.golden.export(out)
            written.append(export_audit(self.golden, out / "audit_top.csv"))
        if self.calibration is not None:
            self.calibration.export(out / "calibration")
            written += [out / "calibration" / name for name in _CALIBRATION_FILES]
        return written

    def exported_tables(self) -> dict[str, pd.DataFrame]:
        """The tables written as ``<name>.csv``: those :meth:`export_first` does not write."""
        return {name: t for name, t in self.tables().items() if name not in _GOLDEN_TABLES}


def run(
    config: GoldenSetConfig,
    *,
    dataset: Any = None,
    judge: Any = None,
    cache: Any = None,
    progress: bool = False,
) -> GoldenSetResult:
    """Notebook 02: build the golden set (S1-S6, incremental judging; resumed from and exported
    to the run folder ``config.export_dir`` when set) and run its analyses: Judged@K, SPEAR,
    calibration against human labels, the judge's self-consistency, bias audit and drift under
    another prompt, prediction-powered estimates, nugget recall of the pool systems, the
    simulation.

    No judge is not an error: an offline judge on a dataset without labels, or a ``local``
    judge whose server cannot start, gives a result without a golden set whose banner says
    what is needed.

    Parameters
    ----------
    config : GoldenSetConfig
    dataset, judge, cache : optional
        Already built backends: the dataset (read), the judge (``config.judge`` is then only
        recorded), the cache; default built from ``config``
        (:func:`~ragnb.studies.golden.pipeline.build_pipeline`).
    progress : bool, default False
        Print a line per stage.

    Returns
    -------
    GoldenSetResult

    Raises
    ------
    InputError
        A malformed file or parameter.
    BudgetExceededError
        When the priced LLM calls exceed ``budget_usd`` (before any S4 call).
    JudgeFailures, JudgeUnavailable
        When the judge does not answer (see :mod:`ragnb.studies.golden.pipeline`).
    """
    import ragnb.studies.golden.evaluation as ev
    from ragnb.studies.golden.judge_checks import (
        drift_for,
        drift_skipped,
        judge_audit_for,
        self_consistency_for,
    )
    from ragnb.studies.golden.judging import missing_labels
    from ragnb.studies.golden.nugget_stage import nuggets_for, nuggets_skipped
    from ragnb.studies.golden.pipeline import build_pipeline, read_dataset

    data = dataset if dataset is not None else read_dataset(config)
    needs = "" if judge is not None else missing_labels(config, data.qrels)
    pipeline = None
    if not needs:
        try:
            pipeline = build_pipeline(
                config, dataset=data, judge=judge, cache=cache, progress=progress
            )
        except (ImportError, RuntimeError) as e:
            if config.judge != "local":
                raise
            needs = f"judge='local' could not start its model server: {e}"
    if pipeline is None:
        text = f"**No judge, so no golden set:** {needs}. The sections below are skipped." + (
            "" if data.has_qrels or config.human_labels else "\n\n" + NO_LABELS
        )
        return GoldenSetResult(config, None, needs=text)
    gs = pipeline.run()
    say = pipeline.say
    spear = ev.spear_for(gs)
    human = ev.human_labels_for(gs) if config.calibrate else None
    calibration = None if human is None else ev.calibrate_judge(gs, human)
    labels = ev.ppi_labels_for(gs)
    ppi, notes = ev.ppi_for(gs, labels) if labels is not None else (pd.DataFrame(), [])
    sim, summary = ev.simulate_refinement(gs) if config.simulate else (None, None)
    local = getattr(gs.judge, "local_server", None) is not None
    on = config.checks_on(local)
    off = checks_off_reason(config, local)
    if off:
        names = ", ".join(CHECKS[n] for n in CHECKS if n not in on)
        say(f"skipped: {names}: {off.replace('`', '')}")
    consistency = None
    if "consistency" in on and config.consistency_samples:
        consistency = self_consistency_for(gs, human, say=say)
    audit = judge_audit_for(gs, human, say=say) if "audit" in on and config.judge_audit else None
    no_drift = drift_skipped(gs, human) if "drift" in on else off
    if no_drift and "drift" in on:
        say(f"skipped: judge drift: {no_drift.replace('`', '')}")
    drift = None if no_drift else drift_for(gs, human, say=say)
    no_nuggets = nuggets_skipped(gs) if "nuggets" in on else off
    if no_nuggets and "nuggets" in on:
        say(f"skipped: nuggets: {no_nuggets.replace('`', '')}")
    nuggets = None if no_nuggets else nuggets_for(gs, say=say)
    return GoldenSetResult(
        config,
        gs,
        screen=_first_screen(config, pipeline, gs),
        estimate=gs.estimate,
        keep_grade=pipeline.keep_grade,
        min_pool=pipeline.min_pool,
        human=human,
        calibration=calibration,
        ppi_labels=labels,
        ppi=ppi,
        ppi_notes=list(notes),
        spear=spear,
        simulation=sim,
        simulation_summary=summary,
        consistency=consistency,
        judge_audit=audit,
        drift=drift,
        drift_skipped=no_drift,
        nuggets=nuggets,
        nuggets_skipped=no_nuggets,
    )
