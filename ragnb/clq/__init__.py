"""Cost-latency-quality (CLQ) sweeps: grid -> sweep -> results table -> Pareto decisions.

- :mod:`ragnb.clq.grid`: :class:`~ragnb.clq.grid.SweepGrid` and its configurations.
- :mod:`ragnb.clq.sweep`: :func:`~ragnb.clq.sweep.run_sweep` (resumable, cached), the staged
  search, and notebook 04's :class:`~ragnb.clq.sweep.ClqTradeoffsConfig`.
- :mod:`ragnb.clq.cost`: prices (``prices.yaml``) and cost per 1,000 queries.
- :mod:`ragnb.clq.pareto`: frontier, operator rules, leaderboard, scenario matrix.
- :mod:`ragnb.clq.charts`: the report's charts.
- :mod:`ragnb.clq.indexes`, :mod:`ragnb.clq.chunking`: vector indexes and chunkers.

Reference: Dallaire, arXiv:2511.09545, sections 3.1-3.3 and 5.
"""
