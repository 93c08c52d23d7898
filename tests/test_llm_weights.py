"""The float32 copy of a GGUF model (``ragnb.llm.weights``) on small GGUF files the test writes.

The Q4_1 and Q8_0 blocks are decoded here from their bytes, after ggml's layout
(``ggml-common.h``: ``block_q4_1`` is half-precision ``d`` and ``m`` then 16 bytes, the low
nibbles the first 16 values, the high nibbles the last 16; ``block_q8_0`` is ``d`` then 32
signed bytes), not by the ``gguf`` package the module uses.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from ragnb.errors import InputError
from ragnb.llm.server import LocalLLMServer, model_path
from ragnb.llm.weights import RECIPE, f32_model_path, write_f32_model

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType

RNG = np.random.default_rng(7)
#: numpy shapes (rows, columns) of the test model's tensors and their stored types
TENSORS = {
    "blk.0.attn_q.weight": ((4, 64), Q.Q4_1),
    "token_embd.weight": ((3, 32), Q.Q8_0),
    "blk.0.ffn_down.weight": ((2, 32), Q.F16),
    "output_norm.weight": ((32,), Q.F32),
}


def _decode_q4_1(raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    blocks = raw.reshape(-1, 20)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, 4:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
    return (d * q + m).reshape(shape)


def _decode_q8_0(raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    blocks = raw.reshape(-1, 34)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    return (d * blocks[:, 2:].copy().view(np.int8).astype(np.float32)).reshape(shape)


def _write_model(path: Path, seed_shift: float = 0.0) -> dict[str, np.ndarray]:
    """A llama-architecture GGUF with one tensor of each type; returns the float values its
    blocks stand for, by tensor name (decoded from the written bytes)."""
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_uint32("general.file_type", 3)  # LLAMA_FTYPE_MOSTLY_Q4_1
    writer.add_string("general.name", "tiny test model")
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "é", "grade"])
    writer.add_float32("llama.rope.freq_base", 10000.0)
    expected = {}
    for name, (shape, kind) in TENSORS.items():
        values = (RNG.standard_normal(shape) + seed_shift).astype(np.float32)
        if kind == Q.F32:
            writer.add_tensor(name, values)
            expected[name] = values
        elif kind == Q.F16:
            writer.add_tensor(name, values.astype(np.float16))
            expected[name] = values.astype(np.float16).astype(np.float32)
        else:
            raw = gguf.quants.quantize(values, kind)
            writer.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=kind)
            decode = _decode_q4_1 if kind == Q.Q4_1 else _decode_q8_0
            expected[name] = decode(raw, shape)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected


def _fields(reader: object) -> dict[str, object]:
    return {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def test_every_tensor_is_float32_with_the_values_its_blocks_stand_for(tmp_path: Path):
    source = tmp_path / "tiny.Q4_1.gguf"
    expected = _write_model(source)
    target = write_f32_model(source, tmp_path / "out" / "tiny.f32.gguf")
    assert target == tmp_path / "out" / "tiny.f32.gguf"
    out = gguf.GGUFReader(target)
    stored = {t.name: t.tensor_type for t in gguf.GGUFReader(source).tensors}
    assert stored["blk.0.attn_q.weight"] == Q.Q4_1 and stored["token_embd.weight"] == Q.Q8_0
    assert {t.name: t.tensor_type for t in out.tensors} == {name: Q.F32 for name in TENSORS}
    for tensor in out.tensors:
        values = np.asarray(tensor.data).reshape(TENSORS[tensor.name][0])
        np.testing.assert_array_equal(values, expected[tensor.name], err_msg=tensor.name)
    before, after = _fields(gguf.GGUFReader(source)), _fields(out)
    assert before.pop("general.file_type") == 3 and after.pop("general.file_type") == 0
    assert after == before
    assert after["tokenizer.ggml.tokens"] == ["<s>", "a", "é", "grade"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny.f32.gguf"]


def test_the_copy_is_cached_by_the_sources_content(tmp_path: Path):
    source = tmp_path / "tiny.Q4_1.gguf"
    _write_model(source)
    first = f32_model_path(source, cache_dir=tmp_path / "cache")
    assert first.parent == tmp_path / "cache" / "gguf"
    assert re.fullmatch(rf"tiny\.Q4_1-[0-9a-f]{{16}}-{RECIPE}\.gguf", first.name)
    stamp = first.stat().st_mtime_ns, first.stat().st_ino
    os.utime(first, ns=(1, 1))
    again = f32_model_path(source, cache_dir=tmp_path / "cache")
    assert again == first and again.stat().st_mtime_ns == 1 and again.stat().st_ino == stamp[1]
    _write_model(source, seed_shift=1.0)  # other weights under the same name
    other = f32_model_path(source, cache_dir=tmp_path / "cache")
    assert other != first and other.is_file() and first.is_file()
    assert len(list((tmp_path / "cache" / "gguf").iterdir())) == 2


def test_a_file_that_is_not_gguf_is_named_and_nothing_is_left(tmp_path: Path):
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model\n")
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match=re.escape(f"{bad}: not a readable GGUF file")):
        f32_model_path(bad, cache_dir=cache)
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]
    with pytest.raises(FileNotFoundError, match="no such GGUF model"):
        f32_model_path(tmp_path / "missing.gguf", cache_dir=cache)


def test_an_existing_target_survives_a_failed_write(tmp_path: Path):
    target = tmp_path / "model.gguf"
    target.write_bytes(b"the previous copy")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 3)  # the magic, then a cut header
    with pytest.raises(ValueError, match="not a readable GGUF file"):
        write_f32_model(bad, target)
    assert target.read_bytes() == b"the previous copy"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.gguf", "model.gguf"]


def test_the_server_loads_the_weights_it_is_asked_for(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RAGNB_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "tiny.Q4_1.gguf"
    _write_model(source)
    stored = LocalLLMServer(str(source), weights="stored")
    assert stored.served_path() == model_path(str(source)) == source
    assert stored.command(8080)[:2] == ["--model", str(source)]
    f32 = LocalLLMServer(str(source))
    assert f32.weights == "f32"
    served = f32.served_path()
    assert served.parent == tmp_path / "cache" / "gguf" and served.is_file()
    assert f32.command(8080)[:2] == ["--model", str(served)]
    assert LocalLLMServer(str(source), engine="llama-cpp-python").command(8080)[1] == str(served)
    with pytest.raises(InputError, match=re.escape("weights must be one of ['f32', 'stored']")):
        LocalLLMServer(weights="q8")
