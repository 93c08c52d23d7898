"""CLQ decisions and prices: Pareto front against a brute-force reference, the operator rules
and their tie-breaks, the efficiency scalar, the paper's cost tables, and the grid."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.studies.clq.cost import CostModel, generator_cost_table, load_prices, rerank_cost_table
from ragnb.studies.clq.grid import SweepGrid
from ragnb.studies.clq.pareto import (
    best_under_budget,
    best_under_sla,
    efficiency,
    fastest_for_target,
    marginal_gains,
    pareto_front,
    scenario_matrix,
)


def _frame(rows):
    cols = ["label", "cost_usd", "latency_p95_ms", "latency_p50_ms", "quality", "pool_k"]
    return pd.DataFrame(rows, columns=cols)


def test_pareto_front_matches_brute_force_on_random_points():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = 25
        f = pd.DataFrame(
            {
                "cost_usd": rng.integers(0, 5, n).astype(float),
                "latency_p95_ms": rng.integers(0, 5, n).astype(float),
                "quality": rng.integers(0, 5, n) / 4,
            }
        )
        front = pareto_front(f).to_numpy()
        for i, a in f.iterrows():
            dominated = any(
                b.cost_usd <= a.cost_usd
                and b.latency_p95_ms <= a.latency_p95_ms
                and b.quality >= a.quality
                and (b.cost_usd, b.latency_p95_ms, -b.quality)
                != (a.cost_usd, a.latency_p95_ms, -a.quality)
                for j, b in f.iterrows()
                if j != i
            )
            assert front[i] == (not dominated)


def test_pareto_front_drops_nan_and_names_missing_column():
    f = pd.DataFrame({"cost_usd": [1.0, np.nan], "latency_p95_ms": [1.0, 0.1], "quality": [0.5, 1]})
    assert pareto_front(f).tolist() == [True, False]
    with pytest.raises(InputError, match="cost_usd"):
        pareto_front(f.drop(columns="cost_usd"))


def test_rules_filter_then_maximise_and_break_ties_by_smaller_k():
    f = _frame(
        [
            ["a", 1.0, 10.0, 8.0, 0.70, 100],
            ["b", 1.0, 12.0, 9.0, 0.70, 50],  # ties a on quality, smaller K: wins
            ["c", 3.0, 50.0, 40.0, 0.90, 50],  # best quality, too slow and too dear
            ["d", 0.5, 5.0, 4.0, 0.60, 50],
        ]
    )
    assert best_under_sla(f, 20)["row"]["label"] == "b"
    assert best_under_sla(f, 100)["row"]["label"] == "c"
    assert best_under_sla(f, 1)["row"] is None
    assert "no configuration qualifies" in best_under_sla(f, 1)["sentence"]
    assert best_under_budget(f, 1.0)["row"]["label"] == "b"
    assert best_under_budget(f, 0.5)["row"]["label"] == "d"
    # target: the fastest that reaches it, then the cheapest
    assert fastest_for_target(f, 0.65)["row"]["label"] == "a"
    choice = fastest_for_target(f, 0.65)
    assert choice["n_feasible"] == 3 and "ship **a**" in choice["sentence"]


def test_equal_k_ties_go_to_the_higher_efficiency():
    f = _frame([["slow", 1.0, 10.0, 9.0, 0.7, 50], ["fast", 1.0, 10.0, 3.0, 0.7, 50]])
    assert best_under_sla(f, 10)["row"]["label"] == "fast"


def test_efficiency_is_mean_quality_per_second():
    f = pd.DataFrame(
        {
            "N-Recall4+@10": [0.8],
            "RA-nWG@10": [0.6],
            "N-Recall4+@30": [1.0],
            "RA-nWG@30": [0.6],
            "latency_p50_ms": [500.0],
        }
    )
    assert efficiency(f).iloc[0] == pytest.approx(0.75 / 0.5)


def test_marginal_gain_per_ms_within_a_family():
    f = _frame([["k50", 1, 10, 10, 0.5, 50], ["k100", 1, 20, 30, 0.6, 100]]).assign(
        family="f", dynamic=""
    )
    m = marginal_gains(f)
    assert m[["k_from", "k_to"]].values.tolist() == [[50, 100]]
    assert m["dq_per_ms"].iloc[0] == pytest.approx(0.1 / 20)


def test_scenario_matrix_has_table8_shape():
    f = _frame([["a", 1.0, 10.0, 8.0, 0.7, 50], ["b", 2.0, 30.0, 20.0, 0.8, 100]]).assign(
        mode="dense", reranker="none"
    )
    m = scenario_matrix(f, sla_ms=15, budget_usd_per_1k=5, quality_target=0.75)
    got = dict(zip(m["scenario"], m["label"], strict=True))
    assert got["Quality push"] == "b" and got["Within SLA"] == "a" and got["Cost saver"] == "a"
    assert got["Quality target"] == "b" and got["High-K check"] == "b"


def test_cost_tables_reproduce_the_papers_figures():
    rr = rerank_cost_table().set_index("K")
    # Dallaire 3.2.1: $1.25/$0.50 at K=50 ... $5.00/$2.00 at K=200 (500 tokens/candidate)
    assert rr.loc[50].tolist() == pytest.approx([1.25, 0.50])
    assert rr.loc[200].tolist() == pytest.approx([5.00, 2.00])
    gen = generator_cost_table().set_index("K")
    assert gen.loc[10, ["gpt-5", "gpt-5-mini", "gpt-5-nano"]].tolist() == pytest.approx(
        [6.25, 1.25, 0.25]
    )
    assert gen.loc[30, "gpt-5"] == pytest.approx(18.75)


def test_cost_model_prices_local_seconds_and_leaves_unpriced_models_nan():
    prices, machine = load_prices()
    assert machine is not None and machine > 0
    c = CostModel(prices, machine_usd_per_hour=36.0, generator="gpt-5", generator_k=10)
    out = c.per_1k(
        embedder="wordllama",
        reranker="none",
        query_tokens=9,
        rerank_input_tokens=0,
        rerank_output_tokens=0,
        local_seconds=0.01,
        generator_tokens=1000,
    )
    assert out["cost_local_usd"] == pytest.approx(0.01 * 36 / 3600 * 1000)  # 0.1 USD
    assert out["cost_embed_usd"] == 0 and out["cost_rerank_usd"] == 0
    assert out["cost_generator_usd"] == pytest.approx(1000 * 1.25 / 1e6 * 1000)
    unpriced = c.per_1k(
        embedder="openai:my-model",
        reranker="http:my-reranker",
        query_tokens=9,
        rerank_input_tokens=100,
        rerank_output_tokens=0,
        local_seconds=0.0,
        generator_tokens=0,
    )
    assert math.isnan(unpriced["cost_embed_usd"]) and math.isnan(unpriced["cost_usd"])


def test_grid_dedupes_bm25_and_ids_are_stable(tmp_path):
    g = SweepGrid(
        embedders=["wordllama", "paraphrase-minilm-l3-onnx"],
        indexes=["flat", "hnsw"],
        pool_ks=[50, 100],
        modes=["dense", "bm25"],
        backends=["faiss", "hnswlib"],
        dynamic_k=[{"start": 50, "escalate_to": 100, "margin": 0.05}],
    )
    configs = g.expand()
    bm25 = [c for c in configs if c.mode == "bm25"]
    assert len(bm25) == 2  # one per K: embedder, index, backend neutralised
    # dense: 2 embedders x (flat/faiss, hnsw/faiss, hnsw/hnswlib) x (2 K + 1 dynamic)
    assert len(configs) - len(bm25) == 2 * 3 * 3
    assert len({c.config_id for c in configs}) == len(configs)
    g.to_yaml(tmp_path / "grid.yaml")
    again = SweepGrid.from_yaml(tmp_path / "grid.yaml").expand()
    assert [c.config_id for c in again] == [c.config_id for c in configs]
    for a, b in itertools.pairwise(configs[:3]):
        assert a.label != b.label


def test_grid_rejects_unknown_keys_and_values(tmp_path):
    with pytest.raises(InputError, match="unknown grid key"):
        SweepGrid.from_dict({"embedder": ["x"]})
    with pytest.raises(InputError, match="indexes"):
        SweepGrid(indexes=["ivf"])
    with pytest.raises(InputError, match="dynamic K"):
        SweepGrid(dynamic_k=[{"start": 100, "escalate_to": 50}])
