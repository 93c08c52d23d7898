"""Configuration ids of the CLQ grid: the ids earlier sweeps recorded must not change (resume).

The ids below were computed by ragnb 07628ed (before the fusion and rewriter axes shared one
default rule); a sweep started then and resumed now finds its configurations by them.
"""

from __future__ import annotations

import pytest

from ragnb.errors import InputError
from ragnb.studies.clq.grid import DEFAULTED_AXES, SweepGrid


def test_ids_recorded_by_earlier_sweeps_stay_the_same() -> None:
    grid = SweepGrid(
        modes=["bm25", "hybrid"],
        pool_ks=[50],
        fusions=["rrf", "wrrf(0.3,0.7)"],
        rewriters=["none", "denoise"],
    )
    got = {(c.mode, c.fusion, c.rewriter): c.config_id for c in grid.expand()}
    assert got == {
        ("bm25", "", ""): "aa26160289171539",
        ("bm25", "", "denoise"): "92ff80bb6754eba6",
        ("hybrid", "", ""): "50fe9458d037dd17",
        ("hybrid", "", "denoise"): "36aa94433989df09",
        ("hybrid", "wrrf(0.3,0.7)", ""): "c0e93ca53e62d62d",
        ("hybrid", "wrrf(0.3,0.7)", "denoise"): "1b46fb2581044f85",
    }
    # the default fusion is RRF with the grid's rrf_k: "rrf(k=30)" is the default at rrf_k=30
    (rrf30,) = SweepGrid(modes=["hybrid"], pool_ks=[50], fusions=["rrf(k=30)"], rrf_k=30).expand()
    assert (rrf30.fusion, rrf30.config_id) == ("", "aaabb6cb953abc4e")


def test_an_axis_default_in_any_spelling_is_left_out_of_the_id() -> None:
    plain = SweepGrid(modes=["hybrid"]).expand()
    spellings = {"fusions": ["rrf", {"method": "rrf"}, ""], "rewriters": ["none", None, ""]}
    for axis, (name, _) in DEFAULTED_AXES.items():
        for spec in spellings[axis]:
            configs = SweepGrid(modes=["hybrid"], **{axis: [spec]}).expand()
            assert [getattr(c, name) for c in configs] == ["", ""]
            assert [c.config_id for c in configs] == [c.config_id for c in plain]
    with pytest.raises(InputError, match="rewriters: unknown value 'nope'"):
        SweepGrid(rewriters=["nope"])
