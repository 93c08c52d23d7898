"""Notebook 01's fusion comparison: every :mod:`ragnb.retrievers.fusion` method on the BM25 and
dense runs.

The unweighted methods are compared on every judged query. The weighted ones (``wsum``, ``wrrf``)
have their two weights tuned on a seeded half of the queries by grid search
(:func:`ragnb.retrievers.fusion.optimize_weights`) and are reported on the other half only, beside
RRF, equal weights and the two input runs on the same held-out queries.

References
----------
Cormack et al., SIGIR 2009 (RRF); Fox and Shaw, TREC-2 1993 (CombSUM, CombMNZ, ...); Bassani and
Romelli, CIKM 2022 (ranx.fuse); see :mod:`ragnb.retrievers.fusion`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from ragnb.evaluation.evaluate import evaluate
from ragnb.retrievers.fusion import Fusion, fuse, optimize_weights, parse_fusion

__all__ = ["COMPARED", "FusionComparison", "compare_fusions"]

#: The unweighted methods compared (score methods with their default min-max normalisation).
COMPARED = (
    "rrf",
    "isr",
    "borda",
    "combsum",
    "combmnz",
    "combmax",
    "combmin",
    "combmed",
    "combanz",
    "combsum/z-score",
    "combmnz/z-score",
)


@dataclass(frozen=True)
class FusionComparison:
    """The fusion methods on BM25 + dense.

    Attributes
    ----------
    table : DataFrame
        Index ``fusion`` (method name); columns the measures (mean over the judged queries)
        and ``n_queries``. The configured hybrid fusion is included.
    heldout : DataFrame
        The weight search on the held-out queries: ``search`` (the tuned method), ``system``,
        ``measure``, ``value``, ``n_queries``
        (:attr:`ragnb.retrievers.fusion.WeightSearch.heldout`).
    weights : DataFrame
        ``method``, ``weights`` (tuned, BM25 then dense), ``train_queries``, ``heldout_queries``.
    """

    table: pd.DataFrame
    heldout: pd.DataFrame
    weights: pd.DataFrame


def compare_fusions(
    qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    measures: list[str],
    *,
    configured: str | Fusion = "rrf",
    seed: int = 0,
) -> FusionComparison | None:
    """Fuse the ``bm25`` and ``dense`` runs by every method of :data:`COMPARED`, and tune the
    weighted methods on a training half of the queries.

    Parameters
    ----------
    qrels : DataFrame
    runs : mapping of str to DataFrame
        Needs ``"bm25"`` and ``"dense"``; other runs are ignored.
    measures : list of str
        Measures of the table; the first is the one the weights are tuned on.
    configured : str or Fusion
        The hybrid retriever's fusion, added to the table.
    seed : int
        Seed of the training split.

    Returns
    -------
    FusionComparison or None
        None without both runs.
    """
    if not {"bm25", "dense"} <= set(runs):
        return None
    pair = [runs["bm25"], runs["dense"]]
    names = list(dict.fromkeys([*COMPARED, parse_fusion(configured).name]))
    rows = []
    for name in names:
        agg = evaluate(qrels, fuse(pair, name), measures).aggregate
        rows.append({"fusion": name, **dict(zip(agg["measure"], agg["value"], strict=True))})
        rows[-1]["n_queries"] = int(agg["n_queries"].max())
    table = pd.DataFrame(rows).set_index("fusion")
    held, weights = [], []
    rrf_run = fuse(pair, "rrf")
    for method in ("wsum", "wrrf"):
        found = optimize_weights(
            qrels, {"bm25": pair[0], "dense": pair[1]}, method, measure=measures[0], seed=seed
        )
        held.append(found.heldout.assign(search=method))
        weights.append(
            {
                "method": method,
                "weights": found.fusion.name,
                "train_queries": len(found.train_queries),
                "heldout_queries": len(found.heldout_queries),
            }
        )
        rrf_row = evaluate(
            qrels[qrels["query_id"].astype(str).isin(set(found.heldout_queries))],
            rrf_run,
            measures[0],
        ).aggregate.iloc[0]
        held.append(
            pd.DataFrame(
                [
                    {
                        "search": method,
                        "system": "rrf",
                        "measure": rrf_row["measure"],
                        "value": float(rrf_row["value"]),
                        "n_queries": int(rrf_row["n_queries"]),
                    }
                ]
            )
        )
    heldout = pd.concat(held, ignore_index=True)
    first = ["search", "system"]
    heldout = heldout[first + [c for c in heldout.columns if c not in first]]
    return FusionComparison(table, heldout, pd.DataFrame(weights))
