"""The declarative grid of a cost-latency-quality (CLQ) sweep.

A :class:`SweepGrid` lists the values of every knob (embedder, dimension, chunker, index, pool
size K, reranker, retrieval mode, near-duplicate suppression, dynamic K); :meth:`SweepGrid.expand`
turns it into the :class:`SweepConfig` objects a sweep runs, each with a stable id (a hash of its
canonical form), so a sweep that is interrupted and started again recognises what it has already
measured. Knobs that do not apply to a mode are neutralised before deduplication: a BM25
configuration has no embedder, dimension or index, so the grid yields one BM25 configuration per
(chunker, K, reranker), not one per embedder.

The knobs follow Dallaire's sweep (embedder x dimension x ANN x K x reranker, modes dense, hybrid
RRF and hybrid + rerank; section 3.5) with the chunker of section 3.1 as an extra dimension, and the
hybrid's fusion method (:mod:`ragnb.retrievers.fusion`: RRF, weighted RRF, CombSUM, CombMNZ, ...) as
another, and query rewriting (none, the rule-based denoiser, an LLM rewriter; section 4.1 compares
stacks with and without rewriting) as a third, optionally restricted to part of the grid
(``rewrite_scope``) because it multiplies the configurations.

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv:2511.09545, sections 3.1-3.5 and 4.1.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ragnb.core.validation import check_int_at_least, check_positive_ints
from ragnb.errors import InputError
from ragnb.retrievers.fusion import Fusion, parse_fusion

__all__ = [
    "INDEX_KINDS",
    "MODES",
    "REWRITERS",
    "DynamicK",
    "SweepConfig",
    "SweepGrid",
]

#: Retrieval modes. A reranker other than ``"none"`` reorders the mode's pool, so
#: "hybrid + rerank" is ``mode="hybrid"`` with a reranker.
MODES = ("dense", "bm25", "hybrid")
#: Index kinds (see :mod:`ragnb.studies.clq.indexes`): exact flat float32, HNSW float32, and both
#: with int8 scalar quantisation.
INDEX_KINDS = ("flat", "hnsw", "flat-sq8", "hnsw-sq8")
BACKENDS = ("faiss", "hnswlib")
#: Query rewriters of the ``rewriters`` axis: none, the rule-based denoiser
#: (:func:`ragnb.rewrite.denoise_query`) and an LLM (:class:`ragnb.rewrite.LLMRewriter`;
#: ``"llm:<model>"`` names the model in the configuration's id).
REWRITERS = ("none", "denoise", "llm")
#: The axes added after the first sweeps: grid attribute -> (:class:`SweepConfig` field, axis
#: default). One rule keeps the ids of earlier sweeps: a value equal to its axis default is
#: stored as ``""`` and left out of the configuration id (and a results row stored before the
#: axis existed reads as the default).
DEFAULTED_AXES = {"fusions": ("fusion", "rrf"), "rewriters": ("rewriter", "none")}
#: The :class:`SweepConfig` fields a ``rewrite_scope`` may restrict, each with the grid list
#: its values come from.
SCOPE_FIELDS = {
    "mode": "modes",
    "embedder": "embedders",
    "dim": "dims",
    "index": "indexes",
    "backend": "backends",
    "chunker": "chunkers",
    "reranker": "rerankers",
    "dedup": "dedup",
    "fusion": "fusions",
    "pool_k": "pool_ks",
    "dynamic": "dynamic_k",
}
_NONE = "-"


@dataclass(frozen=True)
class DynamicK:
    """Dynamic candidate depth: start at ``start`` and escalate to ``escalate_to`` for a query
    whose top-1 minus top-2 dense cosine is below ``margin`` (Dallaire sections 5.2 and 6).

    Attributes
    ----------
    start : int
        Pool size for confident queries (50 in the paper).
    escalate_to : int
        Pool size for uncertain ones (100).
    margin : float
        Cosine margin threshold, in [0, 2].
    """

    start: int = 50
    escalate_to: int = 100
    margin: float = 0.02

    def __post_init__(self) -> None:
        if not 1 <= self.start < self.escalate_to:
            raise InputError(
                f"dynamic K needs 1 <= start < escalate_to, got {self.start}, {self.escalate_to}",
                column="dynamic_k",
            )
        if not 0.0 <= float(self.margin) <= 2.0:
            raise InputError(
                f"dynamic K margin must lie in [0, 2], got {self.margin}", column="dynamic_k"
            )

    @property
    def name(self) -> str:
        """E.g. ``"dyn50-100@0.02"``."""
        return f"dyn{self.start}-{self.escalate_to}@{self.margin:g}"


@dataclass(frozen=True)
class SweepConfig:
    """One point of the sweep.

    Attributes
    ----------
    mode : {"dense", "bm25", "hybrid"}
    embedder : str
        Embedder name (:func:`ragnb.embed.make_embedder`), ``"-"`` for BM25.
    dim : int
        Truncation dimension, 0 for the model's full dimension (and for BM25).
    chunker : str
        A :class:`ragnb.studies.clq.chunking.Chunker` name (``"document"``,
        ``"sentences-200-70+title"``).
    index : str
        One of :data:`INDEX_KINDS`, ``"-"`` for BM25.
    backend : str
        ``"faiss"`` or ``"hnswlib"`` (HNSW float32 only), ``"-"`` for BM25.
    pool_k : int
        Candidates retrieved per query (the reranker's input), or the start of a dynamic K.
    reranker : str
        A :func:`ragnb.rerank.make_reranker` spec: ``"none"``, ``"rescore:<embedder>"``, ...
    dedup : float
        Cosine threshold of near-duplicate suppression before reranking; 0 = off.
    dynamic : str
        ``""`` for a fixed K, else a :attr:`DynamicK.name`.
    ef_search, hnsw_m, ef_construction : int
        HNSW parameters (0 for indexes without a graph).
    rrf_k, hybrid_depth : int
        Reciprocal rank fusion constant and depth taken from each side (hybrid only, else 0).
    fusion : str
        The hybrid's fusion (:attr:`ragnb.retrievers.fusion.Fusion.name`, weights in the order BM25,
        dense); ``""`` for reciprocal rank fusion with ``rrf_k`` and for the other modes. Left
        out of :attr:`config_id` when empty (:data:`DEFAULTED_AXES`), so the ids of RRF
        configurations do not change.
    rewriter : str
        The query rewriter applied before retrieval: ``""`` for none, ``"denoise"``, ``"llm"``
        or ``"llm:<model>"`` (see :data:`REWRITERS`). Left out of :attr:`config_id` when
        empty (:data:`DEFAULTED_AXES`), so the ids of configurations without rewriting do not
        change.
    """

    mode: str
    embedder: str
    dim: int
    chunker: str
    index: str
    backend: str
    pool_k: int
    reranker: str = "none"
    dedup: float = 0.0
    dynamic: str = ""
    ef_search: int = 0
    hnsw_m: int = 0
    ef_construction: int = 0
    rrf_k: int = 0
    hybrid_depth: int = 0
    fusion: str = ""
    rewriter: str = ""

    def _identity(self) -> dict[str, Any]:
        """The fields, without those of :data:`DEFAULTED_AXES` at their default (empty)."""
        d = asdict(self)
        for name, _ in DEFAULTED_AXES.values():
            if not d[name]:
                d.pop(name)
        return d

    @property
    def config_id(self) -> str:
        """Stable 16-hex id: SHA-256 of the canonical JSON of the fields."""
        blob = json.dumps(self._identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @functools.cached_property
    def fusion_spec(self) -> Fusion:
        """The hybrid's :class:`ragnb.retrievers.fusion.Fusion` (RRF with ``rrf_k`` when ``fusion``
        is empty)."""
        return parse_fusion(self.fusion or DEFAULTED_AXES["fusions"][1], rrf_k=self.rrf_k)

    @property
    def dense(self) -> bool:
        """Whether the configuration embeds and searches an index."""
        return self.mode in ("dense", "hybrid")

    @property
    def embedding_key(self) -> tuple[str, int, str]:
        """(embedder, dim, chunker): the vectors this configuration searches."""
        return (self.embedder, self.dim, self.chunker)

    @property
    def index_key(self) -> tuple[Any, ...]:
        """The index this configuration searches (built once, shared)."""
        return (*self.embedding_key, self.index, self.backend, self.hnsw_m, self.ef_construction)

    @property
    def family(self) -> str:
        """The configuration without its pool size: configurations of one family differ only
        in K (used for the marginal gain of raising K)."""
        d = self._identity()
        d.pop("pool_k")
        d.pop("dynamic")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]

    @property
    def label(self) -> str:
        """A short readable name, e.g. ``"dense wordllama/256d flat K=50 sentences | none"``."""
        k = self.dynamic or f"K={self.pool_k}"
        parts = [f"{self.mode} {self.fusion}" if self.fusion else self.mode]
        if self.dense:
            dim = f"{self.dim}d" if self.dim else "full"
            index = self.index if self.backend == "faiss" else f"{self.index}({self.backend})"
            if "hnsw" in self.index:
                index += f" ef={self.ef_search}"
            parts += [f"{self.embedder}/{dim}", index]
        parts += [self.chunker, k]
        out = " ".join(parts) + f" | {self.reranker}"
        if self.dedup:
            out += f" dedup>{self.dedup:g}"
        if self.rewriter:
            out += f" | rewrite={self.rewriter}"
        return out

    def as_row(self) -> dict[str, Any]:
        """The fields plus ``config_id``, ``label`` and ``family``, for the results table."""
        return {
            "config_id": self.config_id,
            **asdict(self),
            "label": self.label,
            "family": self.family,
        }


def _rewriter_name(spec: Any) -> str:
    """The canonical name of a ``rewriters`` entry (``"none"`` for None or ``""``)."""
    name = "none" if spec in (None, "") else str(spec).strip()
    if name in REWRITERS or (name.startswith("llm:") and len(name) > 4):
        return name
    raise InputError(
        f"rewriters: unknown value {spec!r}; allowed {list(REWRITERS)} or 'llm:<model>'",
        column="rewriters",
    )


def _as_list(value: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | int | float):
        return [value]
    if not isinstance(value, list | tuple):
        raise InputError(f"{name} must be a list, got {type(value).__name__}", column=name)
    return list(value)


@dataclass
class SweepGrid:
    """The values of each knob; :meth:`expand` gives their valid combinations.

    Attributes
    ----------
    embedders : list of str
        Offline names (``"wordllama"``, ...), sentence-transformers names or ``"openai:<model>"``.
    dims : list of int
        Truncation dimensions; 0 = the model's full dimension. A dimension above a model's own
        is skipped when the sweep runs (with a note).
    chunkers : list of str
        :class:`ragnb.studies.clq.chunking.Chunker` names.
    indexes : list of str
        Among :data:`INDEX_KINDS`.
    backends : list of str
        ``"faiss"`` and/or ``"hnswlib"``; hnswlib is used for ``"hnsw"`` only.
    pool_ks : list of int
        Candidate pool sizes K (the paper: 50, 100, 150, 200).
    rerankers : list of str
        :func:`ragnb.rerank.make_reranker` specs; ``"none"`` for no reranking.
    modes : list of str
        Among :data:`MODES`.
    dedup : list of float
        Near-duplicate suppression thresholds (cosine) before reranking; 0 = off. Applies to
        dense and hybrid configurations with a reranker.
    dynamic_k : list of dict
        Dynamic-K policies (:class:`DynamicK` fields), each run like a configuration (dense
        and hybrid modes).
    ef_search : int
        HNSW search breadth of the timed configurations (the recall-vs-efSearch curve is
        measured separately).
    hnsw_m, ef_construction : int
        HNSW graph parameters.
    rrf_k : int
        RRF constant (Cormack et al. 2009; the paper uses 60).
    hybrid_depth : int
        Candidates taken from each of dense and BM25 before fusion (the paper: top-100).
    fusions : list of str or dict
        The hybrid mode's fusion methods, an axis of the grid
        (:func:`ragnb.retrievers.fusion.parse_fusion`: ``"rrf"``, ``"wrrf(0.3,0.7)"``,
        ``"combmnz/z-score"``, ``{"method": "wsum", "weights": [0.3, 0.7]}``); weights in the order
        BM25, dense. Default ``["rrf"]`` (with ``rrf_k``).
    rewriters : list of str
        Query rewriters, an axis of the grid (:data:`REWRITERS`): ``"none"``, ``"denoise"``,
        ``"llm"`` or ``"llm:<model>"``; an LLM rewriter needs ``rewrite_judge`` in
        :func:`ragnb.studies.clq.sweep.run_sweep`. Default ``["none"]``.
    rewrite_scope : dict of str to list
        Where rewriters other than ``"none"`` apply: a :class:`SweepConfig` field (one of
        :data:`SCOPE_FIELDS`) to the grid values it may take, matched on the grid's values
        before the knobs a mode ignores are neutralised (so ``{"dim": [0], "index":
        ["flat"]}`` keeps the BM25 configurations too); ``"dynamic": [""]`` means fixed K
        only, and a ``fusion`` entry is a fusion spec. Empty (default): everywhere.
    """

    embedders: list[str] = field(default_factory=lambda: ["wordllama"])
    dims: list[int] = field(default_factory=lambda: [0])
    chunkers: list[str] = field(default_factory=lambda: ["document"])
    indexes: list[str] = field(default_factory=lambda: ["flat"])
    backends: list[str] = field(default_factory=lambda: ["faiss"])
    pool_ks: list[int] = field(default_factory=lambda: [50, 100])
    rerankers: list[str] = field(default_factory=lambda: ["none"])
    modes: list[str] = field(default_factory=lambda: ["dense"])
    dedup: list[float] = field(default_factory=lambda: [0.0])
    dynamic_k: list[dict[str, Any]] = field(default_factory=list)
    ef_search: int = 64
    hnsw_m: int = 16
    ef_construction: int = 200
    rrf_k: int = 60
    hybrid_depth: int = 100
    fusions: list[Any] = field(default_factory=lambda: [DEFAULTED_AXES["fusions"][1]])
    rewriters: list[str] = field(default_factory=lambda: [DEFAULTED_AXES["rewriters"][1]])
    rewrite_scope: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in (
            "embedders",
            "dims",
            "chunkers",
            "indexes",
            "backends",
            "pool_ks",
            "rerankers",
            "modes",
            "dedup",
            "dynamic_k",
            "fusions",
            "rewriters",
        ):
            setattr(self, name, _as_list(getattr(self, name), name))
            if not getattr(self, name) and name != "dynamic_k":
                raise InputError(f"{name} must list at least one value", column=name)
        self.dims = [0 if d in (None, "full") else int(d) for d in self.dims]
        self.pool_ks = check_positive_ints(self.pool_ks, "pool_ks")
        self.dedup = [0.0 if d in (None, False) else float(d) for d in self.dedup]
        checks = (
            ("modes", MODES),
            ("indexes", INDEX_KINDS),
            ("backends", BACKENDS),
        )
        for name, allowed in checks:
            bad = [v for v in getattr(self, name) if v not in allowed]
            if bad:
                raise InputError(
                    f"{name}: unknown value(s) {bad}; allowed {list(allowed)}", column=name
                )
        if any(d < 0 for d in self.dims):
            raise InputError(f"dims must be >= 0 (0 = full), got {self.dims}", column="dims")
        if any(not 0.0 <= d <= 1.0 for d in self.dedup):
            raise InputError(
                f"dedup thresholds must lie in [0, 1], got {self.dedup}", column="dedup"
            )
        for name in ("ef_search", "hnsw_m", "ef_construction", "hybrid_depth"):
            check_int_at_least(getattr(self, name), name, 1, column=name)
        self._dynamic = [DynamicK(**d) if isinstance(d, dict) else d for d in self.dynamic_k]
        if any(not isinstance(d, DynamicK) for d in self._dynamic):
            raise InputError(
                "dynamic_k entries must be mappings of start, escalate_to, margin",
                column="dynamic_k",
            )
        if "dense" not in self.modes and "hybrid" not in self.modes:
            self._dynamic = []
        self._fusions = [self._axis_value("fusions", f) for f in self.fusions]
        self._rewriters = list(
            dict.fromkeys(self._axis_value("rewriters", r) for r in self.rewriters)
        )
        self._scope = self._scope_values(self.rewrite_scope)

    def _scope_values(self, scope: Any) -> dict[str, set[Any]]:
        """``rewrite_scope`` checked, with its values in :class:`SweepConfig`'s form."""
        if scope is None:
            return {}
        if not isinstance(scope, dict):
            raise InputError(
                "rewrite_scope must map config fields to lists", column="rewrite_scope"
            )
        bad = sorted(set(scope) - set(SCOPE_FIELDS))
        if bad:
            raise InputError(
                f"rewrite_scope: unknown field(s) {bad}; allowed {list(SCOPE_FIELDS)}",
                column="rewrite_scope",
            )
        out: dict[str, set[Any]] = {}
        for name, values in scope.items():
            vals = _as_list(values, "rewrite_scope")
            if name == "fusion":
                vals = [self._axis_value("fusions", v) for v in vals]
            elif name in ("dim", "pool_k"):
                vals = [0 if v in (None, "full") else int(v) for v in vals]
            elif name == "dedup":
                vals = [float(v or 0.0) for v in vals]
            elif name == "dynamic":
                vals = ["" if v in (None, "", "none", "fixed") else str(v) for v in vals]
            out[name] = set(vals)
        return out

    def _in_scope(self, knobs: dict[str, Any]) -> bool:
        """Whether rewriting applies to the grid point ``knobs`` (field -> grid value)."""
        return all(knobs[name] in allowed for name, allowed in self._scope.items())

    def _fusion_name(self, spec: Any) -> str:
        """The :attr:`~ragnb.retrievers.fusion.Fusion.name` of a ``fusions`` entry (``rrf_k``)."""
        if isinstance(spec, dict) and not isinstance(spec.get("weights", []), list | tuple):
            raise InputError("fusion weights must be a list", column="fusions")
        try:
            f = parse_fusion(
                spec if isinstance(spec, Fusion | dict) else str(spec), rrf_k=self.rrf_k
            )
            f.weights_for(2)  # BM25 and dense
        except InputError as e:
            raise InputError(e.message, column="fusions") from None
        return f.name

    def _axis_value(self, axis: str, spec: Any) -> str:
        """The :class:`SweepConfig` value of an entry of an axis of :data:`DEFAULTED_AXES`: its
        canonical name, or ``""`` when that is the axis default's (so the id leaves it out).

        Raises
        ------
        InputError
            On an invalid entry (naming the axis).
        """
        canonical = {"fusions": self._fusion_name, "rewriters": _rewriter_name}[axis]
        name = canonical(spec)
        return "" if name == canonical(DEFAULTED_AXES[axis][1]) else name

    # ------------------------------------------------------------------ expansion

    def _base(
        self,
        mode: str,
        embedder: str,
        dim: int,
        index: str,
        backend: str,
        chunker: str,
        reranker: str,
        dedup: float,
        k: int,
        dynamic: str,
        fusion: str = "",
        rewriter: str = "",
    ) -> SweepConfig:
        dense = mode in ("dense", "hybrid")
        graph = dense and "hnsw" in index
        return SweepConfig(
            mode=mode,
            embedder=embedder if dense else _NONE,
            dim=dim if dense else 0,
            chunker=chunker,
            index=index if dense else _NONE,
            backend=backend if dense else _NONE,
            pool_k=k,
            reranker=reranker,
            dedup=dedup if (dense and reranker != "none") else 0.0,
            dynamic=dynamic if dense else "",
            ef_search=self.ef_search if graph else 0,
            hnsw_m=self.hnsw_m if graph else 0,
            ef_construction=self.ef_construction if graph else 0,
            rrf_k=self.rrf_k if mode == "hybrid" else 0,
            hybrid_depth=self.hybrid_depth if mode == "hybrid" else 0,
            fusion=fusion if mode == "hybrid" else "",
            rewriter=rewriter,
        )

    def expand(self) -> list[SweepConfig]:
        """Every valid, distinct configuration, in a stable order.

        Invalid combinations are dropped (hnswlib with a quantised or flat index: only
        ``"hnsw"`` runs on hnswlib); knobs a mode ignores are neutralised (the fusion outside
        hybrid mode), then duplicates are removed. Each dynamic-K policy adds one configuration
        per (mode, embedder, dim, index, chunker, reranker, dedup, fusion) of the dense and
        hybrid modes. Each rewriter other than none adds a copy of the configurations inside
        ``rewrite_scope``.

        Returns
        -------
        list of SweepConfig
        """
        out: dict[str, SweepConfig] = {}
        pools: list[tuple[int, str]] = [(k, "") for k in self.pool_ks]
        pools += [(d.start, d.name) for d in self._dynamic]
        # (K, dynamic policy, rewriter): the rewriter varies fastest
        tails = [(k, dyn, rw) for k, dyn in pools for rw in self._rewriters]
        knobs = itertools.product(
            self.modes,
            self.embedders,
            self.dims,
            self.indexes,
            self.backends,
            self.chunkers,
            self.rerankers,
            self.dedup,
            self._fusions,
            tails,
        )
        for mode, embedder, dim, index, backend, chunker, reranker, dedup, fusion, tail in knobs:
            if backend == "hnswlib" and index != "hnsw":
                continue
            k, dyn, rw = tail
            values = (mode, embedder, dim, index, backend, chunker, reranker, dedup, fusion, k, dyn)
            if rw and not self._in_scope(dict(zip(SCOPE_FIELDS, values, strict=True))):
                continue
            cfg = self._base(
                mode, embedder, dim, index, backend, chunker, reranker, dedup, k, dyn, fusion, rw
            )
            if dyn and not cfg.dense:
                continue
            out.setdefault(cfg.config_id, cfg)
        return list(out.values())

    def dynamic_policy(self, name: str) -> DynamicK:
        """The :class:`DynamicK` named ``name``."""
        for d in self._dynamic:
            if d.name == name:
                return d
        raise InputError(f"no dynamic-K policy {name!r} in the grid", column="dynamic_k")

    # ------------------------------------------------------------------ YAML

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists, numbers, strings) that :meth:`from_dict` reads back."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["fusions"] = [f.name if isinstance(f, Fusion) else f for f in self.fusions]
        return out

    @classmethod
    def from_dict(cls, data: Any, *, path: str | None = None) -> SweepGrid:
        """Build from a mapping; unknown keys raise :class:`InputError` naming them.

        Raises
        ------
        InputError
            On a non-mapping, an unknown key or an invalid value.
        """
        if not isinstance(data, dict):
            raise InputError("a sweep grid must be a mapping of knob: values", path=path)
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"unknown grid key(s) {unknown}; known: {sorted(names)}", path=path)
        return cls(**data)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> SweepGrid:
        """Read a grid from a YAML file (keys as the attributes)."""
        from ragnb.io.files import read_yaml

        return cls.from_dict(read_yaml(path), path=str(path))

    def to_yaml(self, path: str | os.PathLike[str]) -> None:
        """Write the grid as YAML, atomically."""
        import yaml

        from ragnb.io.files import atomic_write

        with atomic_write(path) as f:
            yaml.safe_dump(self.to_dict(), f, sort_keys=False)
