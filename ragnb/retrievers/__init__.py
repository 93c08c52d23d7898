"""Retrievers to compare: BM25, exact dense search, hybrid fusion, with a factory
(:mod:`ragnb.retrievers.retrieve`), and run fusion: reciprocal rank fusion, score fusion and
weight search (:mod:`ragnb.retrievers.fusion`).
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.retrievers.retrieve",
        "ragnb.retrievers.fusion",
    ],
)
