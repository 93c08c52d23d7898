"""SPEAR's staged strategy search over :func:`ragnb.clq.sweep.run_sweep`.

References
----------
Zou et al., "SPEAR", arXiv:2507.06554, section 3.2.1 (staged strategy search) and Table 2.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import pandas as pd

from ragnb.clq.grid import SweepGrid
from ragnb.clq.sweep import run_sweep
from ragnb.errors import InputError
from ragnb.io import BeirDataset

__all__ = ["staged_search"]

#: The results column that holds each staged grid field's chosen value.
_COLUMN_OF_FIELD = {
    "embedders": "embedder",
    "dims": "dim",
    "chunkers": "chunker",
    "indexes": "index",
    "backends": "backend",
    "pool_ks": "pool_k",
    "rerankers": "reranker",
    "modes": "mode",
    "fusions": "fusion",
    "rewriters": "rewriter",
}


def staged_search(
    grid: SweepGrid,
    stages: Sequence[Sequence[str]],
    dataset: BeirDataset,
    out_dir: str | os.PathLike[str],
    *,
    objective: str = "quality",
    **sweep_kwargs: Any,
) -> tuple[SweepGrid, pd.DataFrame]:
    """SPEAR's staged strategy search: optimise groups of knobs one stage at a time.

    Stage 1 sweeps the knobs of ``stages[0]`` over their grid values with every other knob at
    its first grid value; the best configuration's values of those knobs are then fixed, and
    stage 2 sweeps ``stages[1]``, and so on. Far fewer configurations than the full product
    (the sum, not the product, of the stages' sizes); interactions between stages are not
    explored (the paper's caveat). All stages share ``out_dir``, so repeated configurations are
    measured once.

    Parameters
    ----------
    grid : SweepGrid
        The values of every knob.
    stages : sequence of sequence of str
        Grid fields per stage, e.g. ``[["embedders", "dims"], ["indexes"], ["pool_ks",
        "rerankers"]]``.
    dataset : BeirDataset
    out_dir : str or PathLike
    objective : str
        Results column to maximise (default the headline quality).
    **sweep_kwargs
        Passed to :func:`run_sweep`.

    Returns
    -------
    grid : SweepGrid
        The final grid: one value per staged knob.
    trace : DataFrame
        ``stage``, ``knobs``, ``n_configs``, ``best_label``, ``best`` (objective value).

    Raises
    ------
    InputError
        On an unknown grid field.

    References
    ----------
    Zou et al., "SPEAR", arXiv:2507.06554, section 3.2.1 and Table 2 (three-stage search).
    """
    names = {f.name for f in fields(SweepGrid)}
    listed = [k for stage in stages for k in stage]
    unknown = sorted(set(listed) - names)
    if unknown:
        raise InputError(f"unknown grid field(s) in stages: {unknown}")
    multi = [f.name for f in fields(SweepGrid) if isinstance(getattr(grid, f.name), list)]
    current = grid.subgrid(**{k: getattr(grid, k)[:1] for k in multi if getattr(grid, k)})
    trace = []
    for i, stage in enumerate(stages, start=1):
        trial = current.subgrid(**{k: getattr(grid, k) for k in stage})
        res = run_sweep(trial, dataset, out_dir, **sweep_kwargs)
        best = res.results.sort_values(objective, ascending=False, kind="stable").iloc[0]
        fixed: dict[str, Any] = {}
        for k in stage:
            column = _COLUMN_OF_FIELD.get(k)
            if column is not None and column in best.index and best[column] != "-":
                fixed[k] = [best[column]]
        current = current.subgrid(**fixed) if fixed else trial
        trace.append(
            {
                "stage": i,
                "knobs": ", ".join(stage),
                "n_configs": len(trial.expand()),
                "best_label": best["label"],
                "best": float(best[objective]),
            }
        )
    return current, pd.DataFrame(trace)
