"""A packaged GGUF model with float32 weights: its quantised tensors dequantised once, cached.

On a CPU, llama.cpp evaluates a prompt through matrix products whose speed depends on the
weights' type. SmolLM2-135M-Instruct ships as Q4_1 (4-bit weights ``d * q + m`` in blocks of
32, ``d`` and ``m`` half-precision): on the x86-64 target ragnb builds (AVX2, no AVX-512) that
type has no repacked or tiled kernel, and each product first rounds the activations to 8 bits
(Q8_1) for an integer dot product. With float32 weights llama.cpp uses its tiled float32
kernels (llamafile's ``sgemm``) and keeps the activations in float32. Measured with
``llama-server`` on a 2-core Xeon, one grading call of 450 new prompt tokens: 303 tokens a
second from Q4_1, 479 from the float32 copy (1.4 times the calls a second; generation, bound
by memory, slows from 12 to 25 ms a token, and a call generates about 7). The copy saves 1.2 ms
a prompt token and costs 12.6 ms a written token: it is the faster while a call's prompt has
more than about ten tokens per token written. Half-precision weights would not be the same
numbers (42% of SmolLM2's dequantised weights are not float16 numbers) and were slower (398
tokens a second).

:func:`f32_model_path` writes the copy on first use, from the installed file (never
downloaded), under the ragnb cache directory (``<cache dir>/gguf/``), its name keyed by the
SHA-256 of the source file and :data:`RECIPE`; it is written into a temporary file beside it
and renamed into place (:func:`ragnb.io.files.atomic_path`), so a reader never sees half a
file, concurrent writers do not collide and a killed writer's leftover is removed by the next.
The float32 tensors are ``gguf.quants.dequantize`` of the stored blocks (the ``gguf`` package
of the llama.cpp project, which mirrors ggml's ``dequantize_row_*``); tensors stored as float16
or float32 are widened or copied; metadata (tokenizer, chat template, architecture)
is copied as is, but for ``general.file_type``, which says float32. The weights are the
quantised model's, so the answers are that model's up to the rounding of the activations
(``benchmarks/judge.py`` prints how often the grades agree).

References
----------
.. [1] ggml, ``docs/gguf.md`` (the file format) and ``ggml/src/ggml-quants.c``
   (``dequantize_row_q4_1``: ``y = x * d + m``).
.. [2] J. Tunney, "LLaMA Now Goes Faster on CPUs" (llamafile's ``sgemm``, 2024).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ragnb.core.cache import derived_file
from ragnb.core.lazylibs import require

__all__ = ["RECIPE", "WEIGHTS", "f32_model_path", "write_f32_model"]


#: Version of the conversion below; part of the cached file's name (a change writes it again).
RECIPE = "f32-v1"
#: How :class:`ragnb.llm.LocalLLMServer` loads a model's weights: ``"f32"``, the float32 copy
#: (:func:`f32_model_path`), or ``"stored"``, the file as shipped.
WEIGHTS = ("f32", "stored")
#: ``general.file_type`` of a GGUF whose tensors are all float32 (llama.cpp's
#: ``LLAMA_FTYPE_ALL_F32``).
_FTYPE_ALL_F32 = 0


def _gguf() -> Any:
    try:
        return require("gguf")
    except ImportError:
        raise ImportError(
            "float32 weights need the 'gguf' package: pip install gguf (in "
            "'ragnb[local-llm]'), or use weights='stored'"
        ) from None


def f32_model_path(source: str | os.PathLike[str], *, cache_dir: str | Path | None = None) -> Path:
    """The cached float32 copy of the GGUF model ``source``, written on first use.

    Parameters
    ----------
    source : str or PathLike
        A GGUF model file (any quantisation ``gguf.quants`` reads: Q4_0, Q4_1, Q8_0, the K
        types, ...).
    cache_dir : str or Path, optional
        The ragnb cache directory; default :func:`ragnb.core.cache.default_cache_dir`. The copy
        is ``<cache_dir>/gguf/<stem>-<first 16 hex of the source's SHA-256>-<RECIPE>.gguf``.

    Returns
    -------
    Path
        The float32 model (4 bytes a parameter: 540 MB for SmolLM2-135M).

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    ImportError
        If the copy must be written and the ``gguf`` package is missing.
    ValueError
        If ``source`` is not a GGUF file, or holds a tensor type ``gguf`` cannot dequantise.
    """
    return derived_file(
        source, "gguf", RECIPE, write_f32_model, what="GGUF model", cache_dir=cache_dir
    )


def write_f32_model(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
    """Write ``source`` (a GGUF model) to ``target`` with every tensor in float32.

    Parameters
    ----------
    source : str or PathLike
        A GGUF model file.
    target : str or PathLike
        The file to write, through :func:`ragnb.io.files.atomic_path` (a locked temporary file
        beside it, renamed over it: on an error nothing is left and an existing ``target`` is
        unchanged).

    Returns
    -------
    Path
        ``target``.

    Raises
    ------
    ImportError
        If the ``gguf`` package is missing.
    ValueError
        If ``source`` is not a GGUF file, or holds a tensor type ``gguf`` cannot dequantise.
    """
    from ragnb.io.files import atomic_path

    gguf = _gguf()
    source, target = Path(source), Path(target)
    try:
        reader = gguf.GGUFReader(source)
    except (ValueError, OSError) as e:
        raise ValueError(f"{source}: not a readable GGUF file ({e})") from e
    arch = reader.fields["general.architecture"].contents()
    with atomic_path(target) as partial:
        writer = gguf.GGUFWriter(partial, arch)
        for name, field in reader.fields.items():
            # the writer adds the architecture itself; GGUF.* are the reader's header entries
            if name.startswith("GGUF.") or name == "general.architecture":
                continue
            if name == "general.file_type":
                writer.add_uint32(name, _FTYPE_ALL_F32)
                continue
            kind = field.types[0]
            sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(name, field.contents(), kind, sub_type=sub)
        for tensor in reader.tensors:
            try:
                values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            except NotImplementedError as e:
                raise ValueError(
                    f"{source}: tensor {tensor.name!r} has type {tensor.tensor_type.name}, "
                    f"which gguf cannot dequantise ({e})"
                ) from e
            shape = tuple(int(n) for n in reversed(tensor.shape))  # GGUF lists the fastest first
            writer.add_tensor(tensor.name, np.asarray(values, dtype=np.float32).reshape(shape))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    return target
