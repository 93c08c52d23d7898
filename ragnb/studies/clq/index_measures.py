"""What a CLQ sweep measures about a vector index: exact top K, recall against efSearch, memory.

- :func:`exact_top_k`: brute-force inner-product top K in numpy, the reference every index of
  :mod:`ragnb.studies.clq.indexes` is checked against;
- :func:`recall_vs_ef`: recall of the exact top K and per-query latency for each efSearch;
- :func:`memory_estimate`, :func:`memory_table`: Dallaire's back-of-envelope RAM estimate at
  corpus scale, beside a built index's measured bytes scaled per vector.

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv 2511.09545, section 5.3 (quantisation and ANN effects, memory
back-of-envelope, efSearch tuning).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.studies.clq.indexes import INDEX_KINDS, VectorIndex, check_matrix

__all__ = ["exact_top_k", "memory_estimate", "memory_table", "recall_vs_ef"]

_GIB = float(1 << 30)


# --------------------------------------------------------------------------------------------
# exact reference and recall


def exact_top_k(
    vectors: np.ndarray, queries: np.ndarray, k: int, *, block: int = 1024
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force inner-product top ``k`` in numpy: the reference every index is checked against.

    Parameters
    ----------
    vectors : ndarray of shape (n, dim), float
    queries : ndarray of shape (n_queries, dim), float
    k : int, >= 1
        Clipped to ``n``; the tail is padded with score ``-inf`` and id ``-1``.
    block : int, default 1024
        Queries scored at a time (bounds memory at ``block * n`` floats).

    Returns
    -------
    scores : ndarray of shape (n_queries, k), float32
        Inner products, best first; ties broken by the smaller row number.
    ids : ndarray of shape (n_queries, k), int64

    Raises
    ------
    InputError
        Non-float or non-2-D arrays, mismatched dimensions, NaN, or ``k < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    >>> s, i = exact_top_k(v, np.array([[0, 1]], dtype=np.float32), 2)
    >>> i.tolist(), [round(float(x), 2) for x in s[0]]
    ([[2, 1]], [1.0, 0.8])
    """
    check_positive_int(k)
    k = int(k)
    x = check_matrix(vectors, "vectors")
    q = check_matrix(queries, "queries", x.shape[1])
    n, nq = x.shape[0], q.shape[0]
    scores = np.full((nq, k), -np.inf, dtype=np.float32)
    ids = np.full((nq, k), -1, dtype=np.int64)
    kk = min(k, n)
    if kk == 0 or nq == 0:
        return scores, ids
    for start in range(0, nq, block):
        sim = q[start : start + block] @ x.T  # (b, n)
        # stable sort of -sim: best first, ties by smaller row number
        order = np.argsort(-sim, axis=1, kind="stable")[:, :kk]
        ids[start : start + block, :kk] = order
        scores[start : start + block, :kk] = np.take_along_axis(sim, order, axis=1)
    return scores, ids


def _recall_at_k(found: np.ndarray, exact: np.ndarray, k: int) -> np.ndarray:
    """Per-query |found ∩ exact| / k over the first k columns, ignoring -1 padding."""
    out = np.empty(found.shape[0])
    for j, (f, e) in enumerate(zip(found[:, :k], exact[:, :k], strict=True)):
        out[j] = len(set(f[f >= 0].tolist()) & set(e[e >= 0].tolist())) / k
    return out


def recall_vs_ef(
    index: VectorIndex,
    queries: np.ndarray,
    exact_ids: np.ndarray,
    k: int,
    ef_values: Sequence[int],
) -> pd.DataFrame:
    """Recall of the exact top ``k`` and search latency for each ``efSearch`` value.

    Each query is searched on its own, so the latency is the time of one search call per query
    (single query, the index's own threads), measured with :func:`time.perf_counter`. The index's
    ``efSearch`` is restored afterwards.

    Parameters
    ----------
    index : VectorIndex
        A built index. For the flat kinds ``ef`` has no effect and every row measures the same
        search.
    queries : ndarray of shape (n_queries, dim), float
    exact_ids : ndarray of shape (n_queries, >= k), int
        The exact top ``k`` row numbers, e.g. from :func:`exact_top_k` (``-1`` padding ignored).
    k : int, >= 1
    ef_values : sequence of int, each >= 1

    Returns
    -------
    DataFrame
        One row per ef value, in the given order: ``ef_search`` (int), ``recall`` (float in
        [0, 1], mean over queries of ``|found ∩ exact| / k``), ``latency_ms_p50`` and
        ``latency_ms_p95`` (float, milliseconds per query), ``k`` (int), ``n_queries`` (int).

    Raises
    ------
    InputError
        Bad queries, ``exact_ids`` that do not have one row per query and at least ``k`` columns,
        an empty ``ef_values`` or an ef below 1, or an empty index.

    References
    ----------
    Dallaire, arXiv 2511.09545, section 5.3: "tune recall (efSearch) until the delta vs. flat at
    @10/@30 is <= 1-2%; further tuning mostly burns latency".
    """
    check_positive_int(k)
    k = int(k)
    q = check_matrix(queries, "queries", index.dim)
    exact = np.asarray(exact_ids)
    if exact.ndim != 2 or exact.shape[0] != q.shape[0] or exact.shape[1] < k:
        raise InputError(
            f"exact_ids must have shape (n_queries={q.shape[0]}, >= k={k}), got {exact.shape}"
        )
    if not np.issubdtype(exact.dtype, np.integer):
        raise InputError(f"exact_ids must hold integer row numbers, got dtype {exact.dtype}")
    for ef in ef_values:
        check_positive_int(ef, "ef")
    efs = [int(ef) for ef in ef_values]
    if not efs:
        raise InputError("ef_values is empty")
    if index.n == 0:
        raise InputError("the index is empty: call build(vectors) first")
    old = index.ef_search
    rows = []
    try:
        for ef in efs:
            index.set_ef_search(ef)
            found = np.empty((q.shape[0], k), dtype=np.int64)
            times = np.empty(q.shape[0])
            for j in range(q.shape[0]):
                t0 = time.perf_counter()
                _, ids = index.search(q[j : j + 1], k)
                times[j] = time.perf_counter() - t0
                found[j] = ids[0]
            rows.append(
                {
                    "ef_search": ef,
                    "recall": float(_recall_at_k(found, exact, k).mean()) if len(q) else np.nan,
                    "latency_ms_p50": float(np.median(times) * 1e3) if len(q) else np.nan,
                    "latency_ms_p95": float(np.percentile(times, 95) * 1e3) if len(q) else np.nan,
                    "k": k,
                    "n_queries": int(q.shape[0]),
                }
            )
    finally:
        if index.is_hnsw:
            index.set_ef_search(old)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# memory


def memory_estimate(
    n_vectors: int, dim: int, kind: str, *, M: int = 16, id_bytes: int = 4
) -> dict[str, float]:
    """Dallaire's back-of-envelope RAM estimate for an index.

    ``vectors = n * dim * b`` with ``b = 4`` bytes per float32 component (flat, hnsw) or ``b = 1``
    per int8 component (flat-sq8, hnsw-sq8); ``graph = n * 2 * M * id_bytes`` for the HNSW kinds
    (the ``2 * M`` neighbour ids of level 0, which dominate; upper levels add about
    ``M / (M - 1)`` ids per node, left out) and 0 for the flat kinds; ``total = vectors + graph``.

    Parameters
    ----------
    n_vectors : int, >= 0
    dim : int, >= 1
    kind : {"flat", "hnsw", "flat-sq8", "hnsw-sq8"}
    M : int, default 16
        HNSW links per node.
    id_bytes : {4, 8}, default 4
        Bytes per neighbour id (32- or 64-bit).

    Returns
    -------
    dict
        ``vectors``, ``graph``, ``total`` (float, bytes) and ``bytes_per_vector`` (float).

    Raises
    ------
    InputError
        Unknown kind, negative ``n_vectors``, or a non-positive ``dim``, ``M`` or ``id_bytes``.

    Notes
    -----
    The paper's section 5.3 ("Memory considerations (order-of-magnitude,
    implementation-agnostic)") gives float32 ``4 x d`` bytes per vector (d = 1024: 4096 B, about
    3.8 GiB per million), int8 ``1 x d`` (about 0.95 GiB per million, "about 4x compression"), and
    HNSW "neighbor links and metadata add ~0.15-0.6 GiB per million nodes (typical M = 16-32 and
    32/64-bit IDs)", a component that "does not shrink when you quantize". ``2 * M * id_bytes``
    spans 0.12 GiB (M = 16, 32-bit) to 0.48 GiB (M = 32, 64-bit) per million, the paper's range
    without its per-node metadata. The trained sq8 ranges (``2 * dim`` floats) are negligible and
    left out.

    References
    ----------
    Dallaire, arXiv 2511.09545, section 5.3.

    Examples
    --------
    >>> e = memory_estimate(1_000_000, 1024, "hnsw-sq8", M=16)
    >>> e["vectors"], e["graph"], e["total"]
    (1024000000.0, 128000000.0, 1152000000.0)
    >>> round(memory_estimate(1_000_000, 1024, "flat")["total"] / 2**30, 2)  # the paper's 3.8 GiB
    3.81
    """
    if kind not in INDEX_KINDS:
        raise InputError(f"unknown index kind {kind!r}; known kinds: {', '.join(INDEX_KINDS)}")
    if isinstance(n_vectors, bool) or not isinstance(n_vectors, int | np.integer) or n_vectors < 0:
        raise InputError(f"n_vectors must be an integer >= 0, got {n_vectors!r}")
    for name, value in (("dim", dim), ("M", M), ("id_bytes", id_bytes)):
        check_positive_int(value, name)
    dim, M, id_bytes = int(dim), int(M), int(id_bytes)
    per_component = 1 if kind.endswith("sq8") else 4
    per_vector = float(dim * per_component)
    per_node_graph = float(2 * M * id_bytes) if kind.startswith("hnsw") else 0.0
    n = float(n_vectors)
    return {
        "vectors": n * per_vector,
        "graph": n * per_node_graph,
        "total": n * (per_vector + per_node_graph),
        "bytes_per_vector": per_vector + per_node_graph,
    }


def memory_table(
    dim: int,
    kind: str,
    sizes: Sequence[int] = (1_000_000, 10_000_000),
    measured: VectorIndex | None = None,
    *,
    M: int | None = None,
    id_bytes: int = 4,
) -> pd.DataFrame:
    """Estimated index memory at corpus scale, beside the measured index scaled per vector.

    Parameters
    ----------
    dim : int
    kind : str
        One of :data:`INDEX_KINDS`.
    sizes : sequence of int, default (1e6, 1e7)
        Corpus sizes (vectors) to project to.
    measured : VectorIndex, optional
        A built index of the same kind and dim; its :meth:`~VectorIndex.memory_bytes` divided by
        its ``n`` and multiplied by each size gives the ``"measured"`` rows. Linear scaling is an
        approximation: headers are amortised over the small index and HNSW upper levels grow with
        ``log n``.
    M : int, optional
        HNSW links per node for the estimate; defaults to the measured index's ``M``, else 16.
    id_bytes : int, default 4
        See :func:`memory_estimate`.

    Returns
    -------
    DataFrame
        Tidy, one row per (size, source): ``kind``, ``dim``, ``M`` (None for flat kinds),
        ``n_vectors`` (int), ``source`` (``"estimate"``, Dallaire section 5.3, or ``"measured"``,
        scaled from the built index), ``backend`` (None for estimates), ``vectors_bytes``,
        ``graph_bytes``, ``total_bytes`` (float, bytes), ``vectors_gib``, ``graph_gib``,
        ``total_gib`` (float, GiB = 2**30 bytes), ``bytes_per_vector`` (float).

    Raises
    ------
    InputError
        Unknown kind, a bad size, or a ``measured`` index that is empty or differs in kind or
        dim.
    """
    if kind not in INDEX_KINDS:
        raise InputError(f"unknown index kind {kind!r}; known kinds: {', '.join(INDEX_KINDS)}")
    if measured is not None:
        if measured.kind != kind or measured.dim != dim:
            raise InputError(
                f"measured index is {measured.kind!r} dim {measured.dim}; "
                f"the table is for {kind!r} dim {dim}"
            )
        if measured.n == 0:
            raise InputError("measured index is empty: build it first")
    if M is None:
        M = measured.M if measured is not None else 16
    hnsw = kind.startswith("hnsw")
    rows = []
    per_vector = None
    if measured is not None:
        mem = measured.memory_bytes()
        per_vector = {key: mem[key] / measured.n for key in ("vectors", "graph", "total")}
    for n in sizes:
        est = memory_estimate(n, dim, kind, M=M, id_bytes=id_bytes)
        sources: list[tuple[str, str | None, dict[str, float]]] = [("estimate", None, est)]
        if per_vector is not None and measured is not None:
            sources.append(
                ("measured", measured.backend, {key: v * n for key, v in per_vector.items()})
            )
        for source, backend, b in sources:
            rows.append(
                {
                    "kind": kind,
                    "dim": dim,
                    "M": M if hnsw else None,
                    "n_vectors": int(n),
                    "source": source,
                    "backend": backend,
                    "vectors_bytes": float(b["vectors"]),
                    "graph_bytes": float(b["graph"]),
                    "total_bytes": float(b["total"]),
                    "vectors_gib": b["vectors"] / _GIB,
                    "graph_gib": b["graph"] / _GIB,
                    "total_gib": b["total"] / _GIB,
                    "bytes_per_vector": b["total"] / n if n else float("nan"),
                }
            )
    return pd.DataFrame(rows)
