"""Notebook 02: golden sets by pooling, LLM judging and Plackett-Luce refinement.

- :mod:`ragnb.studies.golden.config`: :class:`GoldenSetConfig` (notebook 02's parameters) and the
  names the stages share (pool systems, judges, stage files, stage code).
- :mod:`ragnb.studies.golden.stages`: the six stages S1-S6 as functions over DataFrames.
- :mod:`ragnb.studies.golden.pipeline`: :class:`GoldenPipeline`, S1-S6 resumable from a run folder
  (:mod:`ragnb.studies.golden.store`), their input hashes
  (:mod:`ragnb.studies.golden.fingerprints`).
- :mod:`ragnb.studies.golden.goldenset`: :class:`GoldenSet`, the built golden set (a value: frames,
  judgements, increments, how it was built) and its exports; :mod:`ragnb.studies.golden.analysis`:
  its coverage tables; :mod:`ragnb.studies.golden.evaluation`: the analyses over it (human labels,
  calibration, PPI, SPEAR, the simulation).
- :mod:`ragnb.studies.golden.judging`: the judge built from the parameters, described without
  secrets.
- :mod:`ragnb.judge.degenerate`: the degenerate-judge checks (one grade for nearly every pair,
  no variation within queries, no association with the pooled rank, invalid answers) run on
  every set of grades a golden set is made from.
- :mod:`ragnb.studies.golden.study`: :func:`run` (notebook 02 as one call) and its
  :class:`GoldenSetResult` (banner, tables, charts, export, provenance), the notebook's own
  Markdown and tables (cost estimate, calibration, PPI, simulation summary).
- :mod:`ragnb.studies.golden.refine`: Plackett-Luce listwise refinement (Dallaire, Algorithm 1),
  with its update and lock rules in :mod:`ragnb.studies.golden.plackett_luce`.
- :mod:`ragnb.studies.golden.spear`: SPEAR's relative evaluation of the pool systems (the judge
  against human labels is :mod:`ragnb.judge.calibration`);
  :mod:`ragnb.studies.golden.human`: where the human labels come from (a file, the dataset, a
  calibration sample) and the PPI estimates; :mod:`ragnb.studies.golden.labelling`: the sample and
  label store for collecting them (the JupyterLab view: :mod:`ragnb.studies.golden.labelling_view`).
- :mod:`ragnb.studies.golden.audit`: the refined top exported for a human audit (CSV and the
  labelling view) and folded back as human labels.
- :mod:`ragnb.studies.golden.simulation`: refinement against one-shot judging at equal budget
  (the one-shot baseline: :mod:`ragnb.studies.golden.sliding_window`; the simulated listwise
  judge: :class:`ragnb.judge.NoisyJudge`).
- :mod:`ragnb.studies.golden.judge_checks`: the checks of :mod:`ragnb.judge` run on a golden
  set: self-consistency, the bias audit, and drift (another judge or prompt re-grades the
  human-labelled sample and is compared with the golden set's judge: kappa, bias per grade, PPI
  estimates; the kappa gate of ``ragnb golden audit``).

Query rewriting (S1) is :class:`ragnb.rewrite.LLMRewriter` (also importable from here).
"""

from ragnb.judge.degenerate import (
    CheckThresholds,
    JudgeFinding,
    check_grades,
    findings_markdown,
    rank_association,
)
from ragnb.judge.drift import JudgeDrift, drift_gates
from ragnb.judge.ensemble import EnsembleAgreement, ensemble_agreement
from ragnb.rewrite import LLMRewriter
from ragnb.studies.golden.analysis import grade_distribution, judged_table, pool_overlap
from ragnb.studies.golden.audit import (
    audit_markdown,
    audit_rows,
    audit_sample,
    export_audit,
    fold_audit,
    read_audit,
)
from ragnb.studies.golden.config import (
    JUDGES,
    POOL_RETRIEVERS,
    STAGE_CODE,
    STAGES,
    GoldenSetConfig,
)
from ragnb.studies.golden.evaluation import (
    calibrate_judge,
    human_labels_for,
    ppi_for,
    ppi_labels_for,
    simulate_refinement,
    spear_for,
)
from ragnb.studies.golden.fingerprints import judge_fingerprint
from ragnb.studies.golden.goldenset import BuildRecord, GoldenSet, Increment
from ragnb.studies.golden.human import NO_LABELS, HumanLabels, read_human_labels
from ragnb.studies.golden.judge_checks import accepted_calibration, judge_drift
from ragnb.studies.golden.judging import human_labels, judge_banner, make_judge, public_judge_info
from ragnb.studies.golden.labelling import LabelStore, calibration_sample
from ragnb.studies.golden.pipeline import GoldenPipeline, build_pipeline
from ragnb.studies.golden.stages import (
    default_keep_grade,
    grade_candidates,
    make_pool_retriever,
    merge_pools,
    normalise_queries,
    pool_candidates,
    prune_pool,
    refine_pools,
)
from ragnb.studies.golden.store import StageRecord
from ragnb.studies.golden.study import (
    GoldenSetResult,
    calibration_markdown,
    estimate_markdown,
    ppi_markdown,
    ppi_table,
    run,
    simulation_table,
)

__all__ = [
    "BuildRecord",
    "CheckThresholds",
    "EnsembleAgreement",
    "GoldenPipeline",
    "GoldenSet",
    "GoldenSetConfig",
    "GoldenSetResult",
    "HumanLabels",
    "Increment",
    "JUDGES",
    "JudgeDrift",
    "JudgeFinding",
    "LLMRewriter",
    "LabelStore",
    "NO_LABELS",
    "POOL_RETRIEVERS",
    "STAGES",
    "STAGE_CODE",
    "StageRecord",
    "accepted_calibration",
    "audit_markdown",
    "audit_rows",
    "audit_sample",
    "calibration_markdown",
    "build_pipeline",
    "calibrate_judge",
    "calibration_sample",
    "check_grades",
    "default_keep_grade",
    "drift_gates",
    "ensemble_agreement",
    "estimate_markdown",
    "export_audit",
    "findings_markdown",
    "fold_audit",
    "grade_candidates",
    "grade_distribution",
    "human_labels",
    "human_labels_for",
    "judge_banner",
    "judge_drift",
    "judge_fingerprint",
    "judged_table",
    "make_judge",
    "make_pool_retriever",
    "merge_pools",
    "normalise_queries",
    "pool_candidates",
    "pool_overlap",
    "ppi_for",
    "ppi_labels_for",
    "ppi_markdown",
    "ppi_table",
    "prune_pool",
    "public_judge_info",
    "rank_association",
    "read_audit",
    "read_human_labels",
    "refine_pools",
    "run",
    "simulate_refinement",
    "simulation_table",
    "spear_for",
]
