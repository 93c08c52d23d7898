"""The llama.cpp libraries installed in this environment are built for a portable x86-64 target.

A native build (``-march=native``) on a CPU that advertises AMX holds AMX tile instructions,
which fault with SIGSEGV where the operating system has not enabled AMX state (many VMs and
containers); AVX-512 code fails the same way on the many x86-64 machines without it. The
Makefile builds llama-cpp-python with AVX2, FMA, F16C and BMI2 and nothing newer: this test
disassembles every shared library of the installed ``llama_cpp`` package and checks it.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# AMX: tile configuration, loads and stores, and the tile dot products
AMX = re.compile(
    r"\s(ldtilecfg|sttilecfg|tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|tdpb\w*|"
    r"tdpfp16ps|tcmmimfp16ps|tcmmrlfp16ps)\b"
)
AVX512 = re.compile(r"%zmm\d|%k[1-7]\b")
AVX2 = re.compile(r"%ymm\d")


def _libraries() -> list[Path]:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("llama-cpp-python is not installed; make test installs it")
        pytest.skip("llama-cpp-python is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    libs = sorted({p.resolve() for p in folder.rglob("*.so*") if p.is_file()})
    assert libs, f"no shared library under {folder}"
    return libs


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 only")
def test_llama_cpp_libraries_hold_no_amx_or_avx512_instruction():
    objdump = shutil.which("objdump")
    assert objdump is not None, "objdump (binutils) is needed to check the build"
    ymm = 0
    for lib in _libraries():
        text = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", str(lib)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        amx = sorted({m.group(1) for m in AMX.finditer(text)})
        assert not amx, f"{lib.name} holds AMX instructions: {amx[:5]}"
        wide = AVX512.search(text)
        assert wide is None, f"{lib.name} holds AVX-512 code: {wide.group(0) if wide else ''}"
        ymm += len(AVX2.findall(text))
    # the build is not a baseline one either: the AVX2 kernels are there
    assert ymm > 1000
