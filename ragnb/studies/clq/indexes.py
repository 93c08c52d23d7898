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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ragnb.core.lazylibs import require
from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError

__all__ = [
    "BACKENDS",
    "INDEX_KINDS",
    "SUPPORTED",
    "VectorIndex",
    "load_index",
    "make_index",
    "check_matrix",
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


# --------------------------------------------------------------------------------------------
# validation


def check_matrix(x: Any, what: str, dim: int | None = None) -> np.ndarray:
    """``x`` as a C-contiguous float32 matrix of finite values.

    Parameters
    ----------
    x : object
        Vectors, one a row.
    what : str
        What they are (``"vectors"``, ``"queries"``), named in errors.
    dim : int, optional
        The dimension they must have (the index's).

    Returns
    -------
    ndarray of float32, shape (n, dim)

    Raises
    ------
    InputError
        When ``x`` is not a 2-D numpy array of floats, has another dimension than ``dim``, or
        holds a NaN or infinite value (naming the row).
    """
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
        x = check_matrix(vectors, "vectors", self.dim)
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
        check_positive_int(k)
        k = int(k)
        q = check_matrix(queries, "queries", self.dim)
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
        check_positive_int(ef, "ef")
        ef = int(ef)
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
        from ragnb.io.files import atomic_write, write_json

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
    faiss = require("faiss")

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
        faiss = require("faiss")

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
        faiss = require("faiss")

        return bytes(faiss.serialize_index(self._index))

    def _deserialise(self, data: bytes, n: int) -> None:
        faiss = require("faiss")

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
        faiss = require("faiss")

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
    product. Memory: ``total`` is ``index_file_size()``, the bytes hnswlib's ``save_index``
    writes (the level-0 block of links, vector and label per element, plus upper-level link
    lists); ``vectors`` is the float32 payload ``n * dim * 4`` inside it and ``graph`` the rest.
    """

    backend = "hnswlib"
    kind = "hnsw"

    def __init__(self, kind: str, dim: int, **kw: Any) -> None:
        super().__init__(dim, **kw)
        self._index: Any = None

    def _build(self, x: np.ndarray) -> None:
        hnswlib = require("hnswlib")

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

        hnswlib = require("hnswlib")

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
    for name, value in (
        ("dim", dim),
        ("M", M),
        ("ef_construction", ef_construction),
        ("ef_search", ef_search),
    ):
        check_positive_int(value, name)
    dim, M = int(dim), int(M)
    if M < 2:
        raise InputError(f"M must be >= 2, got {M}")
    kw = {
        "M": M,
        "ef_construction": int(ef_construction),
        "ef_search": int(ef_search),
        "seed": int(seed),
        "threads": int(threads),
    }
    if kw["threads"] < 0:
        raise InputError(f"threads must be >= 0, got {threads!r}")
    if backend == "hnswlib":
        return HnswlibIndex(kind, dim, **kw)
    return FaissIndex(kind, dim, **kw)


# --------------------------------------------------------------------------------------------
# stored indexes


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
    from ragnb.io.files import read_json

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
