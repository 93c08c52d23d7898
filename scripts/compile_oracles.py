"""Compile the test oracles' numba code once, into numba's on-disk cache (``make venv`` runs this).

ranx, an oracle of the test suite (``tests/test_measures_breadth.py``,
``tests/test_interop.py``), compiles each of its measures on first use, in parallel variants:
about a minute on two cores in a new venv, paid by whichever test first calls it. Evaluating
the measures the tests ask of ranx on a few rows here fills ranx's own cache (beside its
modules, keyed by their source and the argument types), so that the suite measures ragnb, not
numba's compiler.

Usage::

    .venv/bin/python scripts/compile_oracles.py
"""

from __future__ import annotations

import time
import warnings

#: The ranx measures the tests compare with, on graded and on binary qrels
#: (``tests/test_measures_breadth.py``, then ``tests/test_interop.py``).
RANX_MEASURES = [
    *("ndcg_burges@10", "ndcg_burges", "r-precision", "map@100", "rbp.8", "rbp.95"),
    *("ndcg@10", "precision@10", "recall@100"),
]
#: numba compiles ranx's code for each width of the ids (numpy's fixed-width strings): the tests
#: give ranx ids of these widths (``RANX_QUERY, RANX_DOC`` in ``tests/test_measures_breadth.py``,
#: ``QUERY, DOC`` in ``tests/test_interop.py``).
Q, D = "q{:06d}".format, "d{:08d}".format
QRELS = {Q(1): {D(1): 2, D(2): 0, D(3): 1}, Q(2): {D(1): 1, D(4): 3}}
RUN = {Q(1): {D(1): 0.9, D(5): 0.8, D(2): 0.7, D(3): 0.1}, Q(2): {D(4): 1.0, D(1): 0.5}}


def main() -> None:
    try:
        import ranx
        from numba.core.errors import NumbaTypeSafetyWarning
    except ModuleNotFoundError as exc:
        print(f"{exc.name} is not installed: nothing to compile")
        return
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaTypeSafetyWarning)
        for qrels in (QRELS, {q: {d: int(g >= 1) for d, g in j.items()} for q, j in QRELS.items()}):
            ranx.evaluate(ranx.Qrels(qrels), ranx.Run(RUN), RANX_MEASURES, make_comparable=True)
    print(f"ranx's measures compiled in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
