"""Cost-latency-quality (CLQ) sweeps: grid -> sweep -> results table -> Pareto decisions.

- :mod:`ragnb.studies.clq.study`: notebook 04's
  :class:`~ragnb.studies.clq.study.ClqTradeoffsConfig`, :func:`~ragnb.studies.clq.study.run` and its
  :class:`~ragnb.studies.clq.study.ClqReport` (a :class:`ragnb.report.protocol.StudyResult`); all
  three exported here.
- :mod:`ragnb.studies.clq.grid`: :class:`~ragnb.studies.clq.grid.SweepGrid` and its configurations.
- :mod:`ragnb.studies.clq.sweep`: :func:`~ragnb.studies.clq.sweep.run_sweep` (resumable, cached) and
  :func:`~ragnb.studies.clq.sweep.cap_dataset`; its machinery in :mod:`ragnb.studies.clq.state`
  (executors, the state a sweep shares) and :mod:`ragnb.studies.clq.config_run` (one timed
  configuration).
- :mod:`ragnb.studies.clq.cost`: prices and cost per 1,000 queries.
- :mod:`ragnb.studies.clq.pareto`: frontier, operator rules, leaderboard, scenario matrix.
- :mod:`ragnb.studies.clq.charts`: the report's charts.
- :mod:`ragnb.studies.clq.indexes`, :mod:`ragnb.studies.clq.index_measures`: vector indexes; exact
  top K, recall against efSearch and memory.
- :mod:`ragnb.studies.clq.chunking`, :mod:`ragnb.studies.clq.evidence`: chunkers and chunk runs;
  chunk-level qrels from SciFact's evidence sentences.

Reference: Dallaire, arXiv:2511.09545, sections 3.1-3.3 and 5.
"""

from ragnb.studies.clq.study import ClqReport, ClqTradeoffsConfig, run

__all__ = ["ClqReport", "ClqTradeoffsConfig", "run"]
