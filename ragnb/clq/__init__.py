"""Cost-latency-quality (CLQ) sweeps: grid -> sweep -> results table -> Pareto decisions.

- :mod:`ragnb.clq.study`: notebook 04's :class:`~ragnb.clq.study.ClqTradeoffsConfig`,
  :func:`~ragnb.clq.study.run` and its :class:`~ragnb.clq.study.ClqReport` (a
  :class:`ragnb.protocol.StudyResult`); all three exported here.
- :mod:`ragnb.clq.grid`: :class:`~ragnb.clq.grid.SweepGrid` and its configurations.
- :mod:`ragnb.clq.sweep`: :func:`~ragnb.clq.sweep.run_sweep` (resumable, cached) and
  :func:`~ragnb.clq.sweep.cap_dataset`; its machinery in :mod:`ragnb.clq.engine` (executors,
  the state a sweep shares) and :mod:`ragnb.clq.measure` (one timed configuration).
- :mod:`ragnb.clq.cost`: prices and cost per 1,000 queries.
- :mod:`ragnb.clq.pareto`: frontier, operator rules, leaderboard, scenario matrix.
- :mod:`ragnb.clq.charts`: the report's charts.
- :mod:`ragnb.clq.indexes`, :mod:`ragnb.clq.index_measures`: vector indexes; exact top K,
  recall against efSearch and memory.
- :mod:`ragnb.clq.chunking`, :mod:`ragnb.clq.evidence`: chunkers and chunk runs; chunk-level
  qrels from SciFact's evidence sentences.

Reference: Dallaire, arXiv:2511.09545, sections 3.1-3.3 and 5.
"""

from ragnb.clq.study import ClqReport, ClqTradeoffsConfig, run

__all__ = ["ClqReport", "ClqTradeoffsConfig", "run"]
