"""Notebook 02: golden sets by pooling, LLM judging and Plackett-Luce refinement.

- :mod:`ragnb.golden.study`: the S1-S6 pipeline, the golden set and notebook 02's configuration.
- :mod:`ragnb.golden.refine`: Plackett-Luce listwise refinement (Dallaire, Algorithm 1).
- :mod:`ragnb.golden.calibration`: judge against human labels.
- :mod:`ragnb.golden.simulation`: refinement against one-shot judging at equal budget.
"""

from ragnb.golden.study import (
    JUDGES,
    POOL_RETRIEVERS,
    STAGE_CODE,
    STAGES,
    GoldenPipeline,
    GoldenSet,
    GoldenSetConfig,
    Increment,
    LLMRewriter,
    StageRecord,
    default_keep_grade,
    estimate_markdown,
    grade_candidates,
    grade_distribution,
    human_labels,
    judge_banner,
    judge_fingerprint,
    judged_table,
    make_judge,
    make_pool_retriever,
    merge_pools,
    normalise_queries,
    pool_candidates,
    pool_overlap,
    prune_pool,
    public_judge_info,
    refine_pools,
    simulation_table,
)

__all__ = [
    "GoldenPipeline",
    "GoldenSet",
    "GoldenSetConfig",
    "Increment",
    "JUDGES",
    "LLMRewriter",
    "POOL_RETRIEVERS",
    "STAGES",
    "STAGE_CODE",
    "StageRecord",
    "default_keep_grade",
    "estimate_markdown",
    "grade_candidates",
    "grade_distribution",
    "human_labels",
    "judge_banner",
    "judge_fingerprint",
    "judged_table",
    "make_judge",
    "make_pool_retriever",
    "merge_pools",
    "normalise_queries",
    "pool_candidates",
    "pool_overlap",
    "prune_pool",
    "public_judge_info",
    "refine_pools",
    "simulation_table",
]
