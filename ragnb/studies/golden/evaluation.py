"""What notebook 02 computes from a built golden set, as functions over it: the human labels it
is compared with, the judge's calibration against them, prediction-powered estimates, SPEAR's
relative evaluation and the refinement-vs-one-shot simulation.

Each reads the golden set (:class:`~ragnb.studies.golden.GoldenSet`: its frames and
:class:`~ragnb.studies.golden.goldenset.BuildRecord`) and returns a value; none writes a file
(:meth:`ragnb.studies.golden.GoldenSetResult.export` does).

References
----------
.. [1] J. Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog, 2024 (calibrating the
   judge against human labels).
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient Prediction-Powered
   Inference", arXiv:2311.01453, 2023.
.. [3] J. Zou et al., "SPEAR: subset-sampled performance evaluation via automated ground truth
   generation for RAG", 2025, Appendix A (relative recall).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragnb.errors import InputError
from ragnb.studies.golden.config import GoldenSetConfig
from ragnb.studies.golden.goldenset import GoldenSet
from ragnb.studies.golden.human import (
    HumanLabels,
    on_judge_scale,
    ppi_estimates,
    read_human_labels,
    sampled_labels,
)
from ragnb.studies.golden.refine import RefineConfig

__all__ = [
    "calibrate_judge",
    "human_labels_for",
    "ppi_for",
    "ppi_labels_for",
    "simulate_refinement",
    "spear_for",
]


def _config(golden: GoldenSet) -> GoldenSetConfig:
    cfg = golden.build.config
    return cfg if cfg is not None else GoldenSetConfig()


def human_labels_for(golden: GoldenSet) -> HumanLabels | None:
    """The human labels calibration compares the judge with (:mod:`ragnb.studies.golden.human`).

    The config's ``human_labels`` file, else the dataset's labels (offline judges: the labels
    they were simulated from), on the judge's scale.

    Returns
    -------
    HumanLabels or None
        None when there is neither (or the golden set was built without a config).

    Raises
    ------
    InputError
        A malformed ``human_labels`` file (named, with the line).
    """
    cfg = golden.build.config
    if cfg is None:
        return None
    scale = golden.judge.scale
    if cfg.human_labels:
        from ragnb.core.paths import resolve_path

        return read_human_labels(resolve_path(cfg.human_labels), scale, cfg.grade_map)
    qrels = golden.build.labels
    if qrels is None:
        return None
    labels, gm = on_judge_scale(qrels, scale, cfg.grade_map)
    notes = [] if gm is None else [f"labels mapped by the {gm[0]!r} map {gm[1]}"]
    source = (
        f"the dataset's labels (qrels/{cfg.split}.tsv, {len(labels)} pairs) standing in for people"
    )
    return HumanLabels(labels, source, None, gm, notes)


def ppi_labels_for(golden: GoldenSet) -> HumanLabels | None:
    """The human labels of the prediction-powered estimates.

    The ``human_labels`` file (with its sample's inclusion probabilities), else a calibration
    sample of ``ppi_labels`` judged pairs whose dataset labels stand in for a person's
    (:func:`~ragnb.studies.golden.human.sampled_labels`).

    Returns
    -------
    HumanLabels or None
        None when there is neither, or ``ppi_labels`` < 2 without a file.
    """
    cfg = golden.build.config
    if cfg is None:
        return None
    if cfg.human_labels:
        return human_labels_for(golden)
    full = human_labels_for(golden)
    if full is None or cfg.ppi_labels < 2:
        return None
    scale = golden.judge.scale
    gm = full.grade_map
    unjudged = int(gm[1].get(0, min(gm[1].values()))) if gm else (scale[0] if scale else 0)
    return sampled_labels(golden, full.qrels, n=cfg.ppi_labels, seed=cfg.seed, unjudged=unjudged)


def ppi_for(golden: GoldenSet, human: HumanLabels | None = None) -> tuple[pd.DataFrame, list[str]]:
    """PPI++ estimates of each system's ``ppi_measures`` beside human-only and judge-only
    (:func:`~ragnb.studies.golden.human.ppi_estimates`).

    Parameters
    ----------
    golden : GoldenSet
    human : HumanLabels, optional
        Default :func:`ppi_labels_for`.

    Returns
    -------
    table : DataFrame
        One row per (system, measure); empty when nothing could be estimated.
    notes : list of str

    Raises
    ------
    InputError
        When there is no human label.
    """
    human = human if human is not None else ppi_labels_for(golden)
    if human is None:
        raise InputError(
            "no human labels: give a human_labels file (see ragnb.studies.golden.human)"
        )
    cfg = _config(golden)
    width = cfg.ppi_target_width or None
    return ppi_estimates(golden, human, list(cfg.ppi_measures), target_width=width)


def calibrate_judge(
    golden: GoldenSet,
    human: pd.DataFrame | HumanLabels | None = None,
    *,
    measure: str | None = None,
) -> Any:
    """The judge against human labels (:func:`ragnb.judge.calibration.calibrate`).

    Parameters
    ----------
    golden : GoldenSet
    human : DataFrame or HumanLabels, optional
        Human labels as qrels on the judge's scale; default :func:`human_labels_for`.
    measure : str, optional
        Default the config's ``calibration_measure`` (``nDCG@10``).

    Returns
    -------
    Calibration
        Systems: the pool systems, their RRF fusion and the new systems.

    Raises
    ------
    InputError
        When there is no human label.
    """
    from ragnb.judge.calibration import calibrate

    if human is None:
        human = human_labels_for(golden)
        if human is None:
            raise InputError(
                "no human labels: pass them, or give a human_labels file or a dataset with qrels"
            )
    if isinstance(human, HumanLabels):
        human = human.qrels
    if measure is None:
        measure = _config(golden).calibration_measure
    runs: dict[str, pd.DataFrame] = {**golden.runs, "rrf": golden.fused_run, **golden.new_runs}
    scale = golden.judge.scale
    labels = None if scale is None else list(range(scale[0], scale[1] + 1))
    return calibrate(human, golden.qrels, runs, measure=measure, labels=labels)


def spear_for(golden: GoldenSet, k: int | None = None) -> Any:
    """SPEAR's relative evaluation of the pool systems on the golden grades
    (:func:`~ragnb.studies.golden.spear.spear_evaluate`), at ``k`` (default ``depth``);
    relevant means a grade >= ``keep_grade``.

    Returns
    -------
    SpearResult
    """
    from ragnb.studies.golden.spear import spear_evaluate

    build = golden.build
    return spear_evaluate(golden.qrels, golden.runs, k or build.depth, rel=build.keep_grade)


def simulate_refinement(golden: GoldenSet) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The refinement vs one-shot simulation (:mod:`ragnb.studies.golden.simulation`) on the golden
    grades, with the config's ``sim_*`` settings.

    Returns
    -------
    frame, summary : DataFrame
        :func:`~ragnb.studies.golden.simulation.simulate` and
        :func:`~ragnb.studies.golden.simulation.summarise`.
    """
    from ragnb.studies.golden.simulation import simulate, summarise

    build, cfg = golden.build, _config(golden)
    qids = list(dict.fromkeys(golden.qrels["query_id"]))
    if cfg.sim_queries:
        qids = qids[: cfg.sim_queries]
    frame = simulate(
        golden.qrels,
        pool_size=cfg.sim_pool_size,
        noise_levels=cfg.sim_noise_levels,
        budgets=cfg.sim_budgets,
        replicates=cfg.sim_replicates,
        seed=cfg.seed,
        top_n=build.top_n,
        config=RefineConfig(m=build.refine_config.m),
        dataset=str(build.dataset_info.get("dataset", "")),
        queries=qids,
    )
    return frame, summarise(frame, n_resamples=1000, seed=cfg.seed)
