"""Qrels and runs in memory: the frames' columns, checks and dict conversions
(:mod:`ragnb.frames.schema`), runs and qrels indexed by query (:mod:`ragnb.frames.index`) and the
compiled kernels behind the index (:mod:`ragnb.frames.groupsort`).
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.frames.schema",
        "ragnb.frames.index",
    ],
)
