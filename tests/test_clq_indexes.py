"""Vector indexes for CLQ sweeps: exactness, HNSW recall, quantisation, memory, validation."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.studies.clq.index_measures import (
    exact_top_k,
    memory_estimate,
    memory_table,
    recall_vs_ef,
)
from ragnb.studies.clq.indexes import INDEX_KINDS, SUPPORTED, make_index

N, D, NQ, K = 2000, 64, 100, 10


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, D)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x, q = _unit(rng, N), _unit(rng, NQ)
    _, ids = exact_top_k(x, q, K)
    return x, q, ids


@pytest.fixture(scope="module")
def built(data) -> dict[tuple[str, str], object]:
    x, _, _ = data
    out = {}
    for kind, backend in SUPPORTED:
        index = make_index(kind, D, backend=backend)
        index.build(x)
        out[(kind, backend)] = index
    return out


def test_exact_top_k_matches_a_naive_loop() -> None:
    rng = np.random.default_rng(1)
    x, q = _unit(rng, 50), _unit(rng, 5)
    scores, ids = exact_top_k(x, q, 7)
    for j in range(5):
        sims = [float(x[i] @ q[j]) for i in range(50)]
        best = sorted(range(50), key=lambda i: -sims[i])[:7]
        assert ids[j].tolist() == best
        np.testing.assert_allclose(scores[j], [sims[i] for i in best], rtol=1e-5)


def test_flat_equals_exact(data, built) -> None:
    x, q, _ = data
    es, ei = exact_top_k(x, q, K)
    s, i = built[("flat", "faiss")].search(q, K)
    assert s.dtype == np.float32 and i.dtype == np.int64 and s.shape == i.shape == (NQ, K)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_allclose(s, es, atol=1e-5)


@pytest.mark.parametrize(
    "kind,backend,floor",
    [("hnsw", "faiss", 0.9), ("hnsw", "hnswlib", 0.9), ("hnsw-sq8", "faiss", 0.9)],
)
def test_hnsw_recall_curve(data, built, kind: str, backend: str, floor: float) -> None:
    _, q, exact = data
    index = built[(kind, backend)]
    curve = recall_vs_ef(index, q, exact, K, [8, 16, 32, 64, 128])
    assert list(curve.columns[:3]) == ["ef_search", "recall", "latency_ms_p50"]
    assert curve["ef_search"].tolist() == [8, 16, 32, 64, 128]
    at64 = curve.set_index("ef_search")["recall"][64]
    assert at64 >= floor
    # monotone up to noise, and ef matters: a small beam loses neighbours
    assert (curve["recall"].diff().dropna() >= -0.02).all()
    assert curve["recall"].iloc[-1] - curve["recall"].iloc[0] >= 0.1
    assert (curve["latency_ms_p50"] > 0).all()
    assert index.ef_search == 64  # restored after the sweep


def test_sq8_recall_and_approximate_scores(data, built) -> None:
    x, q, exact = data
    index = built[("flat-sq8", "faiss")]
    curve = recall_vs_ef(index, q, exact, K, [16, 64])
    assert (curve["recall"] >= 0.95).all()
    assert curve["recall"].nunique() == 1  # ef is a no-op for an exhaustive index
    s, i = index.search(q, K)
    true = np.einsum("qd,qkd->qk", q, x[i])
    err = np.abs(s - true).max()
    assert 0 < err < 0.05  # quantised, so not exact, but close


def test_memory_is_measured(built, tmp_path) -> None:
    import faiss

    mem = {key: index.memory_bytes() for key, index in built.items()}
    for key, m in mem.items():
        assert m["total"] == m["vectors"] + m["graph"], key
    flat, sq8 = mem[("flat", "faiss")], mem[("flat-sq8", "faiss")]
    assert flat["graph"] == 0 and flat["vectors"] >= N * D * 4
    assert sq8["total"] < flat["total"] / 3.5  # one byte per component instead of four
    assert mem[("hnsw-sq8", "faiss")]["total"] < mem[("hnsw", "faiss")]["total"]
    for key in [("hnsw", "faiss"), ("hnsw-sq8", "faiss"), ("hnsw", "hnswlib")]:
        assert mem[key]["graph"] >= N * 2 * 16 * 4 * 0.5, key  # level-0 links dominate
    # the measurement is the size of the saved index
    path = tmp_path / "h.bin"
    built[("hnsw", "hnswlib")]._index.save_index(str(path))
    assert os.path.getsize(path) == mem[("hnsw", "hnswlib")]["total"]
    faiss.write_index(built[("hnsw-sq8", "faiss")]._index, str(tmp_path / "f.bin"))
    assert os.path.getsize(tmp_path / "f.bin") == mem[("hnsw-sq8", "faiss")]["total"]


def test_describe_and_set_ef(built) -> None:
    h = built[("hnsw", "hnswlib")]
    d = h.describe()
    assert (d["kind"], d["backend"], d["dim"], d["n"], d["M"]) == ("hnsw", "hnswlib", D, N, 16)
    assert d["ef_construction"] == 200 and d["ef_search"] == 64 and d["build_seconds"] > 0
    flat = built[("flat", "faiss")]
    flat.set_ef_search(5)
    assert flat.describe()["ef_search"] is None and flat.describe()["M"] is None


def test_padding_when_k_exceeds_n() -> None:
    rng = np.random.default_rng(3)
    x, q = _unit(rng, 5), _unit(rng, 2)
    for kind, backend in SUPPORTED:
        index = make_index(kind, D, backend=backend)
        index.build(x)
        s, i = index.search(q, 8)
        assert sorted(i[0, :5].tolist()) == [0, 1, 2, 3, 4], (kind, backend)
        assert (i[:, 5:] == -1).all() and np.isneginf(s[:, 5:]).all()


def test_hnswlib_is_reproducible_with_a_seed(data) -> None:
    x, q, _ = data
    a = make_index("hnsw", D, backend="hnswlib", seed=3, ef_search=16)
    b = make_index("hnsw", D, backend="hnswlib", seed=3, ef_search=16)
    a.build(x[:500])
    b.build(x[:500])
    np.testing.assert_array_equal(a.search(q, K)[1], b.search(q, K)[1])


@pytest.mark.parametrize(
    "kind,backend,needle",
    [
        ("flat", "hnswlib", "supported kind/backend pairs: flat/faiss"),
        ("hnsw-sq8", "hnswlib", "hnsw/hnswlib"),
        ("flat-sq8", "hnswlib", "not available"),
        ("ivf", "faiss", "known kinds: flat, hnsw, flat-sq8, hnsw-sq8"),
        ("hnsw", "annoy", "known backends: faiss, hnswlib"),
    ],
)
def test_unsupported_combinations(kind: str, backend: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        make_index(kind, D, backend=backend)


def test_input_validation(built) -> None:
    index = built[("hnsw", "faiss")]
    good = np.ones((2, D), dtype=np.float32) / 8
    with pytest.raises(InputError, match="floats"):
        index.search(np.ones((2, D), dtype=np.int64), 3)
    with pytest.raises(InputError, match="dimension 32"):
        index.search(good[:, :32], 3)
    with pytest.raises(InputError, match="shape"):
        index.search(good[0], 3)
    with pytest.raises(InputError, match="k must be"):
        index.search(good, 0)
    bad = good.copy()
    bad[1, 3] = np.nan
    with pytest.raises(InputError, match="row 1"):
        index.search(bad, 3)
    with pytest.raises(InputError, match="empty"):
        make_index("flat", D).search(good, 3)
    with pytest.raises(InputError, match="no rows"):
        make_index("flat", D).build(np.zeros((0, D), dtype=np.float32))
    with pytest.raises(InputError, match="ef must be"):
        index.set_ef_search(0)
    with pytest.raises(InputError, match="exact_ids"):
        recall_vs_ef(index, good, np.zeros((3, K), dtype=np.int64), K, [8])
    with pytest.raises(InputError, match="M must be"):
        make_index("hnsw", D, M=0)
    # float64 input is accepted and converted
    s, _ = index.search(good.astype(np.float64), 3)
    assert s.dtype == np.float32


def test_memory_estimate_by_hand() -> None:
    # Dallaire 5.3: d = 1024 float32 is 4096 B per vector, ~3.8 GiB per million; int8 ~0.95 GiB
    f32 = memory_estimate(1_000_000, 1024, "flat")
    assert f32 == {"vectors": 4.096e9, "graph": 0.0, "total": 4.096e9, "bytes_per_vector": 4096.0}
    assert round(f32["total"] / 2**30, 1) == 3.8
    i8 = memory_estimate(1_000_000, 1024, "flat-sq8")
    assert i8["vectors"] == 1.024e9 and round(i8["vectors"] / 2**30, 2) == 0.95
    # graph: 2 * M ids of 4 bytes on level 0 -> M = 16: 128 B per node
    h = memory_estimate(1_000_000, 1024, "hnsw-sq8", M=16)
    assert h["graph"] == 1_000_000 * 2 * 16 * 4 and h["total"] == 1.024e9 + 1.28e8
    # M = 32 with 64-bit ids: 512 B per node ~0.48 GiB per million, inside the paper's 0.15-0.6
    g = memory_estimate(1_000_000, 1024, "hnsw", M=32, id_bytes=8)["graph"] / 2**30
    assert 0.15 <= g <= 0.6
    # 10M float32 vectors ~38 GiB (paper)
    assert round(memory_estimate(10_000_000, 1024, "hnsw")["vectors"] / 2**30) == 38
    with pytest.raises(InputError, match="known kinds"):
        memory_estimate(10, 4, "pq")
    with pytest.raises(InputError, match="n_vectors"):
        memory_estimate(-1, 4, "flat")


def test_memory_table(built) -> None:
    index = built[("hnsw-sq8", "faiss")]
    table = memory_table(D, "hnsw-sq8", measured=index)
    assert isinstance(table, pd.DataFrame) and len(table) == 4
    assert set(table["source"]) == {"estimate", "measured"}
    est = table[(table["source"] == "estimate") & (table["n_vectors"] == 1_000_000)].iloc[0]
    assert est["vectors_bytes"] == 1e6 * D and est["graph_bytes"] == 1e6 * 128
    meas = table[(table["source"] == "measured") & (table["n_vectors"] == 10_000_000)].iloc[0]
    per_vector = index.memory_bytes()["total"] / N
    assert meas["total_bytes"] == pytest.approx(per_vector * 1e7)
    assert meas["total_gib"] == pytest.approx(meas["total_bytes"] / 2**30)
    assert meas["backend"] == "faiss"
    with pytest.raises(InputError, match="measured index is 'hnsw-sq8'"):
        memory_table(D, "hnsw", measured=index)
    assert set(INDEX_KINDS) == {k for k, _ in SUPPORTED}


@pytest.mark.parametrize(("kind", "backend"), sorted(SUPPORTED))
def test_save_and_load_give_the_same_index(kind, backend, tmp_path):
    from ragnb.studies.clq.indexes import load_index

    rng = np.random.default_rng(7)
    x = rng.standard_normal((500, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[:20] + 0.05 * rng.standard_normal((20, 32)).astype(np.float32)
    index = make_index(kind, 32, backend=backend, M=8, ef_search=32)
    index.build(x)
    path = tmp_path / f"index.{backend}"
    index.save(path)
    loaded = load_index(path)
    assert loaded.describe() == index.describe()  # build_seconds of the original build
    s1, i1 = index.search(q, 10)
    s2, i2 = loaded.search(q, 10)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_allclose(s1, s2, rtol=1e-6)
    assert loaded.memory_bytes() == index.memory_bytes()
    (tmp_path / f"index.{backend}.json").unlink()
    with pytest.raises(InputError, match="no stored index"):
        load_index(path)
