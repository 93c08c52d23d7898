"""Vector indexes for cost-latency-quality sweeps: exact, HNSW and int8 scalar-quantised.

The ANN axis of a CLQ sweep (Dallaire, section 3.5: "ANN {flat-f32, HNSW-f32, HNSW-int8}") needs
indexes that can be built, searched, tuned (``efSearch``) and measured (memory) behind one small
interface. Four kinds are offered:

========== ================================================ =====================
kind       what it is                                       backends
========== ================================================ =====================
flat       exact float32 inner product                      faiss (IndexFlatIP)
hnsw       HNSW graph over float32 vectors                  faiss (IndexHNSWFlat),
                                                            hnswlib (space "ip")
flat-sq8   exhaustive search over int8 scalar-quantised     faiss
           vectors (one byte per dimension)                 (IndexScalarQuantizer)
hnsw-sq8   HNSW graph over int8 scalar-quantised vectors    faiss (IndexHNSWSQ)
========== ================================================ =====================

Vectors are expected L2-normalised float32, so the inner product is the cosine. Scores are inner
products (approximate for the quantised kinds, which compare against decoded vectors); ids are row
numbers of the built matrix.

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv 2511.09545, sections 3.1-3.3 (CLQ framing), 3.5 (sweep design) and 5.3
(quantisation and ANN effects, memory back-of-envelope).
Malkov and Yashunin, "Efficient and robust approximate nearest neighbor search using Hierarchical
Navigable Small World graphs", IEEE TPAMI 2020.
"""

from __future__ import annotations

import contextlib
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.validation import check_positive_int

__all__ = [
    "BACKENDS",
    "INDEX_KINDS",
    "SUPPORTED",
    "VectorIndex",
    "exact_top_k",
    "load_index",
    "make_index",
    "memory_estimate",
    "memory_table",
    "recall_vs_ef",
]

INDEX_KINDS: tuple[str, ...] = ("flat", "hnsw", "flat-sq8", "hnsw-sq8")
BACKENDS: tuple[str, ...] = ("faiss", "hnswlib")
#: The (kind, backend) pairs that exist; hnswlib has no scalar quantiser and no flat index.
SUPPORTED: tuple[tuple[str, str], ...] = (
    ("flat", "faiss"),
    ("hnsw", "faiss"),
    ("flat-sq8", "faiss"),
    ("hnsw-sq8", "faiss"),
    ("hnsw", "hnswlib"),
)

_GIB = float(1 << 30)


# --------------------------------------------------------------------------------------------
# validation


def _check_matrix(x: Any, what: str, dim: int | None = None) -> np.ndarray:
    """A C-contiguous float32 matrix, or InputError naming ``what``."""
    if not isinstance(x, np.ndarray):
        raise InputError(f"{what} must be a numpy array, got {type(x).__name__}")
    if x.ndim != 2:
        raise InputError(f"{what} must have shape (n, dim), got {x.ndim} dimension(s) {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        raise InputError(f"{what} must hold floats (float32), got dtype {x.dtype}")
    if dim is not None and x.shape[1] != dim:
        raise InputError(f"{what} have dimension {x.shape[1]}, the index has {dim}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if not np.isfinite(x).all():
        row = int(np.nonzero(~np.isfinite(x).all(axis=1))[0][0])
        raise InputError(f"{what} hold a NaN or infinite value (row {row})")
    return x


def _check_kind_backend(kind: str, backend: str) -> None:
    if kind not in INDEX_KINDS:
        raise InputError(f"unknown index kind {kind!r}; known kinds: {', '.join(INDEX_KINDS)}")
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}; known backends: {', '.join(BACKENDS)}")
    if (kind, backend) not in SUPPORTED:
        pairs = ", ".join(f"{k}/{b}" for k, b in SUPPORTED)
        raise InputError(
            f"index kind {kind!r} is not available with backend {backend!r}; "
            f"supported kind/backend pairs: {pairs}"
        )


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# the interface


class VectorIndex(ABC):
    """A vector index over L2-normalised float32 vectors, scored by inner product.

    Build once with :meth:`build`, then :meth:`search`. Made by :func:`make_index`.

    Attributes
    ----------
    kind : str
        One of :data:`INDEX_KINDS`.
    backend : str
        ``"faiss"`` or ``"hnswlib"``.
    dim : int
        Vector dimension.
    n : int
        Vectors indexed (0 before :meth:`build`).
    build_seconds : float or None
        Wall-clock seconds of the last :meth:`build` (training, for sq8, included).
    """

    kind: str
    backend: str

    def __init__(
        self, dim: int, *, M: int, ef_construction: int, ef_search: int, seed: int, threads: int
    ) -> None:
        self.dim = dim
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.seed = seed
        self.threads = threads
        self.n = 0
        self.build_seconds: float | None = None

    @property
    def is_hnsw(self) -> bool:
        """Whether the index is an HNSW graph (``efSearch`` matters)."""
        return self.kind.startswith("hnsw")

    def build(self, vectors: np.ndarray) -> None:
        """Index ``vectors``; row ``i`` gets id ``i``. Replaces any earlier content.

        Parameters
        ----------
        vectors : ndarray of shape (n, dim), float
            L2-normalised embeddings (converted to C-contiguous float32). ``n >= 1``.

        Raises
        ------
        InputError
            Not a 2-D float array, wrong dimension, no rows, or a NaN/infinite value.
        """
        x = _check_matrix(vectors, "vectors", self.dim)
        if x.shape[0] == 0:
            raise InputError("vectors has no rows; an index needs at least one vector")
        t0 = time.perf_counter()
        self._build(x)
        self.build_seconds = time.perf_counter() - t0
        self.n = x.shape[0]

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows for each query.

        Parameters
        ----------
        queries : ndarray of shape (n_queries, dim), float
            L2-normalised query embeddings.
        k : int, >= 1
            Results per query. When ``k`` exceeds the number of indexed vectors the tail is padded.

        Returns
        -------
        scores : ndarray of shape (n_queries, k), float32
            Inner products, best first (approximate for the sq8 kinds); ``-inf`` in padding.
        ids : ndarray of shape (n_queries, k), int64
            Row numbers of the built matrix; ``-1`` in padding.

        Raises
        ------
        InputError
            Bad ``queries`` or ``k``, or the index is not built.
        """
        k = check_positive_int(k)
        q = _check_matrix(queries, "queries", self.dim)
        if self.n == 0:
            raise InputError("the index is empty: call build(vectors) before search")
        nq = q.shape[0]
        scores = np.full((nq, k), -np.inf, dtype=np.float32)
        ids = np.full((nq, k), -1, dtype=np.int64)
        if nq == 0:
            return scores, ids
        kk = min(k, self.n)
        s, i = self._search(q, kk)
        scores[:, :kk] = s
        ids[:, :kk] = i
        missing = ids < 0  # faiss pads with -1 and -FLT_MAX when the graph returns fewer
        scores[missing] = -np.inf
        return scores, ids

    def set_ef_search(self, ef: int) -> None:
        """Set ``efSearch``, the HNSW search beam width (recall/latency knob).

        A no-op for the flat kinds, which are exhaustive (the value is not recorded).

        Raises
        ------
        InputError
            ``ef`` is not an integer >= 1.
        """
        ef = _positive_int(ef, "ef")
        if not self.is_hnsw:
            return
        self.ef_search = ef
        if self.n:
            self._apply_ef()

    def describe(self) -> dict[str, Any]:
        """Parameters and build time, for a sweep's result table.

        Returns
        -------
        dict
            ``kind``, ``backend``, ``dim``, ``n``, ``M``, ``ef_construction``, ``ef_search``
            (``None`` for the flat kinds) and ``build_seconds`` (float seconds, ``None`` before
            :meth:`build`).
        """
        hnsw = self.is_hnsw
        return {
            "kind": self.kind,
            "backend": self.backend,
            "dim": self.dim,
            "n": self.n,
            "M": self.M if hnsw else None,
            "ef_construction": self.ef_construction if hnsw else None,
            "ef_search": self.ef_search if hnsw else None,
            "build_seconds": self.build_seconds,
        }

    @abstractmethod
    def memory_bytes(self) -> dict[str, int]:
        """Measured size of the built index, in bytes.

        Returns
        -------
        dict
            ``vectors`` (the vector payload, codes for sq8 with the quantiser's trained ranges),
            ``graph`` (HNSW links, levels and ids; 0 for flat kinds) and ``total``. How each
            backend measures is stated on its class.
        """

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the built index (backend's own format) and its facts beside it, atomically.

        ``path`` receives the index; ``path + ".json"`` the :meth:`describe` facts (with the
        build time of the original build). Read back with :func:`load_index`.

        Raises
        ------
        InputError
            The index is not built.
        """
        from ragnb.io import atomic_write, write_json

        self._require_built()
        path = Path(path)
        with atomic_write(path, "wb") as f:
            f.write(self._serialise())
        write_json({**self.describe(), "seed": self.seed, "threads": self.threads}, _meta(path))

    @abstractmethod
    def _serialise(self) -> bytes: ...

    @abstractmethod
    def _deserialise(self, data: bytes, n: int) -> None: ...

    @abstractmethod
    def _build(self, x: np.ndarray) -> None: ...

    @abstractmethod
    def _search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...

    def _apply_ef(self) -> None:  # noqa: B027 - optional hook, flat kinds have nothing to set
        pass

    def _require_built(self) -> None:
        if self.n == 0:
            raise InputError("the index is empty: call build(vectors) first")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} kind={self.kind} backend={self.backend} n={self.n}>"


@contextlib.contextmanager
def _faiss_threads(n: int) -> Iterator[None]:
    import faiss

    old = faiss.omp_get_max_threads()
    if n > 0:
        faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(old)


class FaissIndex(VectorIndex):
    """An index of the faiss library (every kind).

    Memory is measured by serialising: ``total`` is ``len(faiss.serialize_index(index))``; for the
    HNSW kinds ``vectors`` is the serialised size of the index's ``storage`` (the flat or
    scalar-quantised codes) and ``graph`` the difference (neighbour lists, level offsets, entry
    point, headers). For the flat kinds ``graph`` is 0 and ``vectors`` the total. The serialised
    form holds the same arrays faiss keeps in RAM, without allocator slack.
    """

    backend = "faiss"

    def __init__(self, kind: str, dim: int, **kw: Any) -> None:
        self.kind = kind
        super().__init__(dim, **kw)
        self._index: Any = None

    def _new(self) -> Any:
        import faiss

        ip = faiss.METRIC_INNER_PRODUCT
        sq8: Any = faiss.ScalarQuantizer.QT_8bit  # an int; faiss's type stubs say otherwise
        index: Any
        if self.kind == "flat":
            return faiss.IndexFlatIP(self.dim)
        if self.kind == "flat-sq8":
            return faiss.IndexScalarQuantizer(self.dim, sq8, ip)
        if self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.M, ip)
        else:
            index = faiss.IndexHNSWSQ(self.dim, sq8, self.M, ip)
        index.hnsw.efConstruction = self.ef_construction
        index.hnsw.efSearch = self.ef_search
        return index

    def _build(self, x: np.ndarray) -> None:
        index = self._new()
        with _faiss_threads(self.threads):
            if not index.is_trained:
                index.train(x)  # sq8: per-dimension min/max ranges
            index.add(x)
        self._index = index

    def _apply_ef(self) -> None:
        self._index.hnsw.efSearch = self.ef_search

    def _serialise(self) -> bytes:
        import faiss

        return bytes(faiss.serialize_index(self._index))

    def _deserialise(self, data: bytes, n: int) -> None:
        import faiss

        self._index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        if self._index.ntotal != n or self._index.d != self.dim:
            raise InputError(
                f"stored faiss index holds {self._index.ntotal} x {self._index.d}; "
                f"its facts say {n} x {self.dim}"
            )

    def _search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.is_hnsw:
            self._index.hnsw.efSearch = self.ef_search
        with _faiss_threads(self.threads):
            scores, ids = self._index.search(q, k)
        return scores.astype(np.float32, copy=False), ids.astype(np.int64, copy=False)

    def memory_bytes(self) -> dict[str, int]:
        import faiss

        self._require_built()
        total = int(faiss.serialize_index(self._index).size)
        if self.is_hnsw:
            vectors = int(faiss.serialize_index(self._index.storage).size)
        else:
            vectors = total
        return {"vectors": vectors, "graph": total - vectors, "total": total}


class HnswlibIndex(VectorIndex):
    """An hnswlib HNSW index (space ``"ip"``; kind ``"hnsw"`` only).

    hnswlib reports distances ``1 - <q, x>``; :meth:`search` returns ``1 - distance``, the inner
    product. Memory: ``total`` is ``index_file_size()``, the bytes :meth:`save_index` writes (the
    level-0 block of links, vector and label per element, plus upper-level link lists); ``vectors``
    is the float32 payload ``n * dim * 4`` inside it and ``graph`` the rest.
    """

    backend = "hnswlib"
    kind = "hnsw"

    def __init__(self, kind: str, dim: int, **kw: Any) -> None:
        super().__init__(dim, **kw)
        self._index: Any = None

    def _build(self, x: np.ndarray) -> None:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=self.dim)
        index.init_index(
            max_elements=x.shape[0],
            ef_construction=self.ef_construction,
            M=self.M,
            random_seed=self.seed,
        )
        index.add_items(x, np.arange(x.shape[0]), num_threads=self._nthreads)
        index.set_ef(self.ef_search)
        self._index = index

    @property
    def _nthreads(self) -> int:
        return self.threads if self.threads else -1

    def _apply_ef(self) -> None:
        self._index.set_ef(self.ef_search)

    def _serialise(self) -> bytes:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "index.bin"
            self._index.save_index(str(target))
            return target.read_bytes()

    def _deserialise(self, data: bytes, n: int) -> None:
        import tempfile

        import hnswlib

        index = hnswlib.Index(space="ip", dim=self.dim)
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "index.bin"
            source.write_bytes(data)
            index.load_index(str(source), max_elements=n)
        if index.get_current_count() != n:
            raise InputError(
                f"stored hnswlib index holds {index.get_current_count()} vectors, not {n}"
            )
        index.set_ef(self.ef_search)
        self._index = index

    def _search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        self._index.set_ef(self.ef_search)
        try:
            labels, dist = self._index.knn_query(q, k=k, num_threads=self._nthreads)
        except RuntimeError as e:  # graph returned fewer than k: retry with a wider beam
            self._index.set_ef(max(self.ef_search, 4 * k, self.n))
            try:
                labels, dist = self._index.knn_query(q, k=k, num_threads=self._nthreads)
            except RuntimeError:
                raise InputError(f"hnswlib could not return {k} results: {e}") from None
            finally:
                self._index.set_ef(self.ef_search)
        return (1.0 - dist).astype(np.float32), labels.astype(np.int64)

    def memory_bytes(self) -> dict[str, int]:
        self._require_built()
        total = int(self._index.index_file_size())
        vectors = self.n * self.dim * 4
        return {"vectors": vectors, "graph": total - vectors, "total": total}


def make_index(
    kind: str,
    dim: int,
    *,
    backend: str = "faiss",
    M: int = 16,
    ef_construction: int = 200,
    ef_search: int = 64,
    seed: int = 0,
    threads: int = 1,
) -> VectorIndex:
    """A new, empty vector index.

    Parameters
    ----------
    kind : {"flat", "hnsw", "flat-sq8", "hnsw-sq8"}
        See the module docstring.
    dim : int, >= 1
        Vector dimension.
    backend : {"faiss", "hnswlib"}, default "faiss"
        hnswlib offers ``"hnsw"`` only.
    M : int, default 16
        HNSW links per node (``2 * M`` on level 0). Ignored by the flat kinds.
    ef_construction : int, default 200
        HNSW build beam width. Ignored by the flat kinds.
    ef_search : int, default 64
        HNSW search beam width (change later with :meth:`VectorIndex.set_ef_search`).
    seed : int, default 0
        hnswlib's level-assignment seed. faiss draws HNSW levels from its own fixed seed.
    threads : int, default 1
        Threads used to build and search. 1 makes HNSW graphs reproducible run to run and
        latencies comparable across backends (one core per query, as a sweep measures); 0 uses
        the library's default (all cores).

    Returns
    -------
    VectorIndex

    Raises
    ------
    InputError
        Unknown kind or backend (the message lists the known ones), an unsupported pair such as
        ``("flat-sq8", "hnswlib")`` (the message lists the supported pairs), or a parameter that is
        not a positive integer.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    >>> index = make_index("flat", 2)
    >>> index.build(x)
    >>> index.search(x[2:], 2)[1].tolist()
    [[2, 1]]
    """
    _check_kind_backend(kind, backend)
    dim = _positive_int(dim, "dim")
    M = _positive_int(M, "M")
    if M < 2:
        raise InputError(f"M must be >= 2, got {M}")
    kw = {
        "M": M,
        "ef_construction": _positive_int(ef_construction, "ef_construction"),
        "ef_search": _positive_int(ef_search, "ef_search"),
        "seed": int(seed),
        "threads": int(threads),
    }
    if kw["threads"] < 0:
        raise InputError(f"threads must be >= 0, got {threads!r}")
    if backend == "hnswlib":
        return HnswlibIndex(kind, dim, **kw)
    return FaissIndex(kind, dim, **kw)


# --------------------------------------------------------------------------------------------
# exact reference and recall


def _meta(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def load_index(path: str | os.PathLike[str]) -> VectorIndex:
    """An index written by :meth:`VectorIndex.save`, ready to search.

    The facts file restores the kind, backend, parameters and the original ``build_seconds``
    (loading is not building: a resumed sweep reports the time the index took to build).

    Raises
    ------
    InputError
        The index or its facts file is missing or does not match.
    """
    from ragnb.io import read_json

    path = Path(path)
    if not path.is_file() or not _meta(path).is_file():
        raise InputError("no stored index (or its .json facts) here", path=path)
    facts = read_json(_meta(path))
    index = make_index(
        facts["kind"],
        int(facts["dim"]),
        backend=facts["backend"],
        M=int(facts["M"] or 16),
        ef_construction=int(facts["ef_construction"] or 200),
        ef_search=int(facts["ef_search"] or 64),
        seed=int(facts.get("seed", 0)),
        threads=int(facts.get("threads", 1)),
    )
    index._deserialise(path.read_bytes(), int(facts["n"]))
    index.n = int(facts["n"])
    index.build_seconds = facts["build_seconds"]
    return index


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
    k = check_positive_int(k)
    x = _check_matrix(vectors, "vectors")
    q = _check_matrix(queries, "queries", x.shape[1])
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
    k = check_positive_int(k)
    q = _check_matrix(queries, "queries", index.dim)
    exact = np.asarray(exact_ids)
    if exact.ndim != 2 or exact.shape[0] != q.shape[0] or exact.shape[1] < k:
        raise InputError(
            f"exact_ids must have shape (n_queries={q.shape[0]}, >= k={k}), got {exact.shape}"
        )
    if not np.issubdtype(exact.dtype, np.integer):
        raise InputError(f"exact_ids must hold integer row numbers, got dtype {exact.dtype}")
    efs = [_positive_int(ef, "ef") for ef in ef_values]
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
    dim = _positive_int(dim, "dim")
    M = _positive_int(M, "M")
    id_bytes = _positive_int(id_bytes, "id_bytes")
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
