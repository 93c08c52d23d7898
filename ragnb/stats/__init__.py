"""Comparing systems: paired bootstrap intervals, randomization tests, multiple-comparison
corrections, agreement between two runs' top K lists, and a ranx-like comparison table
(:func:`comparison_table`: Markdown or LaTeX with significance markers); which systems are tied
and how firmly each is ranked (:func:`tie_groups`, :func:`rank_intervals`); the power of a
comparison (:func:`minimum_detectable_effect`, :func:`queries_needed` and their simulated
versions); several runs per system (:func:`two_level_bootstrap`,
:func:`two_level_randomization_test`); all systems at once (:func:`anova`, :func:`tukey_hsd`,
:func:`randomized_tukey_hsd`, :func:`letter_display`); false discovery control
(:func:`benjamini_hochberg`); effect sizes (:func:`paired_effect_size`).

Per-query input
---------------
The paired functions take the per-query values of two systems on one measure, each as

* a Series indexed by ``query_id``, or a ``{query_id: value}`` dict;
* a long frame ``query_id, measure, value``
  (:attr:`ragnb.evaluation.evaluate.EvaluationResult.per_query`), with ``measure=`` naming the
  measure when the frame holds several;
* a wide frame with index or column ``query_id`` and one column per measure
  (:meth:`~ragnb.evaluation.evaluate.EvaluationResult.per_query_wide`), with ``measure=``;
* an :class:`~ragnb.evaluation.evaluate.EvaluationResult`.

Measure names may be aliases (``ndcg_cut_10`` finds ``nDCG@10``; :func:`pick_measure`). The two
systems are paired by ``query_id`` and must hold the same queries (the error names those that
differ). A NaN value means "undefined": the query is dropped from that pair and the result counts
it (``n_dropped``).

Randomness
----------
Resampling uses ``numpy.random.default_rng(seed)``: the same inputs and seed give the same result.
Resamples are drawn as blocks of a ``(B, n)`` matrix (at most about two million entries per
block), so memory stays bounded and no Python loop runs over single resamples.
:func:`compare` gives every comparison the same seed (common random numbers), so the result for
one pair does not depend on which other pairs are in the table.
"""

from ragnb.stats.anova import AnovaResult, anova, randomized_tukey_hsd, tukey_hsd
from ragnb.stats.bootstrap import BootstrapResult, CIMethod, paired_bootstrap
from ragnb.stats.comparison import TESTS, ComparisonResult, Test, compare
from ragnb.stats.corrections import (
    Correction,
    adjust_p_values,
    benjamini_hochberg,
    bonferroni,
    holm,
)
from ragnb.stats.effects import PairedEffectSize, paired_effect_size
from ragnb.stats.hierarchical import two_level_bootstrap, two_level_randomization_test
from ragnb.stats.paired import PerQueryValues, pick_measure
from ragnb.stats.power import (
    minimum_detectable_effect,
    paired_t_power,
    queries_needed,
    simulated_minimum_detectable_effect,
    simulated_power,
    simulated_queries_needed,
)
from ragnb.stats.randomization import RandomizationResult, randomization_test
from ragnb.stats.ranking import (
    letter_display,
    power_table,
    rank_intervals,
    ranking_table,
    tie_groups,
)
from ragnb.stats.report import comparison_table, significance_markers
from ragnb.stats.topk import KendallTopK, TopKAgreement, kendall_top_k, top_k_agreement

__all__ = [
    "TESTS",
    "AnovaResult",
    "BootstrapResult",
    "CIMethod",
    "ComparisonResult",
    "Correction",
    "KendallTopK",
    "PairedEffectSize",
    "PerQueryValues",
    "RandomizationResult",
    "Test",
    "TopKAgreement",
    "adjust_p_values",
    "anova",
    "benjamini_hochberg",
    "bonferroni",
    "compare",
    "comparison_table",
    "holm",
    "kendall_top_k",
    "letter_display",
    "minimum_detectable_effect",
    "paired_bootstrap",
    "paired_effect_size",
    "paired_t_power",
    "pick_measure",
    "power_table",
    "queries_needed",
    "randomization_test",
    "randomized_tukey_hsd",
    "rank_intervals",
    "ranking_table",
    "significance_markers",
    "simulated_minimum_detectable_effect",
    "simulated_power",
    "simulated_queries_needed",
    "tie_groups",
    "top_k_agreement",
    "tukey_hsd",
    "two_level_bootstrap",
    "two_level_randomization_test",
]
