"""Every file ragnb reads or writes: TREC runs, qrels and z-scores, trec_eval's preference
judgements (:mod:`ragnb.io.prefs`), BEIR folders, query files, JSON, parquet and CSV tables
(:mod:`ragnb.io.readers`, :mod:`ragnb.io.files`), the columnar and streamed readers of large runs
(:mod:`ragnb.io.columnar`, the ``fast`` extra) and the dispatcher that chooses among them
(:mod:`ragnb.io.dispatch`), production traces (:mod:`ragnb.io.traces`), agents' search
trajectories (:mod:`ragnb.io.trajectories`), evaluation results written back as OpenTelemetry
events (:mod:`ragnb.io.events`), OpenTelemetry spans written as OTLP JSON lines
(:mod:`ragnb.io.otlp`, the ``agents`` extra), objects of ranx, ir_measures, PyTerrier and
ir_datasets (:mod:`ragnb.io.interop`) and the shipped sample dataset (:mod:`ragnb.io.sample_data`).
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.io.readers",
        "ragnb.io.prefs",
        "ragnb.io.files",
        "ragnb.io.dispatch",
        "ragnb.io.columnar",
        "ragnb.io.traces",
        "ragnb.io.trajectories",
        "ragnb.io.events",
        "ragnb.io.otlp",
        "ragnb.io.interop",
    ],
)
