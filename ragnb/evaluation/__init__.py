"""Runs scored against qrels: :func:`evaluate` in memory (:mod:`ragnb.evaluation.evaluate`),
files larger than memory (:mod:`ragnb.evaluation.streaming`), run files as the reader opened them
(:mod:`ragnb.evaluation.runfiles`), the drop-in for trec_eval 10.0's
command (:mod:`ragnb.evaluation.trec_eval`) and an agent's search trajectories
(:func:`ragnb.evaluation.trajectories.evaluate_trajectories`).
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.evaluation.evaluate",
        "ragnb.evaluation.streaming",
        "ragnb.evaluation.runfiles",
        "ragnb.evaluation.trec_eval",
        "ragnb.evaluation.trajectories",
    ],
)
