"""The llama.cpp libraries installed in this environment are built for a portable x86-64 target.

A native build (``-march=native``) on a CPU that advertises AMX holds AMX tile instructions,
which fault with SIGSEGV where the operating system has not enabled AMX state (many VMs and
containers); AVX-512 code fails the same way on the many x86-64 machines without it. The
Makefile builds llama-cpp-python, and llama.cpp's ``llama-server`` from the same sources, with
AVX2, FMA, F16C and BMI2 and nothing newer: these tests disassemble every shared library of the
installed ``llama_cpp`` package, and the ``llama-server`` program ragnb runs, and check them.
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

from ragnb.llm.server import llama_server_path

REPO = Path(__file__).resolve().parents[1]

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


def _llama_server() -> list[Path]:
    """The ``llama-server`` ragnb runs and the llama.cpp libraries beside it (the Makefile's
    build links them, found through RPATH ``$ORIGIN``)."""
    path = llama_server_path()
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("llama-server is not installed; make test builds it")
        pytest.skip("llama-server is not installed")
    program = path.resolve()
    return [program, *sorted(program.parent.glob("lib*.so*"))]


def _check(binaries: list[Path]) -> None:
    """No AMX or AVX-512 instruction in ``binaries``, and the AVX2 kernels there."""
    objdump = shutil.which("objdump")
    assert objdump is not None, "objdump (binutils) is needed to check the build"
    ymm = 0
    for lib in binaries:
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


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 only")
def test_llama_cpp_libraries_hold_no_amx_or_avx512_instruction():
    _check(_libraries())


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 only")
def test_llama_server_holds_no_amx_or_avx512_instruction():
    _check(_llama_server())


def test_the_makefile_builds_llama_server_with_the_wheels_portable_flags():
    """llama-server is built in the wheel's own build folder (configured with the wheel's flags
    again), and the Makefile asks for no native build anywhere."""
    lines = (REPO / "Makefile").read_text().splitlines(keepends=True)
    joined = "".join(line for line in lines if not line.startswith("#")).replace("\\\n", " ")
    flags = re.search(r"^LLAMA_CMAKE_ARGS\s*:=(.*)$", joined, re.MULTILINE)
    assert flags is not None
    assert "-DGGML_NATIVE=OFF" in flags.group(1).split()
    assert "-DGGML_AVX512=OFF" in flags.group(1).split()
    wheel = re.search(r"^\tCMAKE_ARGS=(.*pip wheel.*)$", joined, re.MULTILINE)
    assert wheel is not None, "no pip wheel line"
    assert '"$(LLAMA_CMAKE_ARGS)"' in wheel.group(1)
    assert "build-dir=$(LLAMA_TREE)" in wheel.group(1)
    server = re.search(r"^\t(cmake -S \$\(LLAMA_SRC\) -B \$\(LLAMA_TREE\) .*)$", joined, re.M)
    assert server is not None, "no cmake line for llama-server"
    assert "$(LLAMA_CMAKE_ARGS)" in server.group(1) and "$(LLAMA_SERVER_ARGS)" in server.group(1)
    assert "--target llama-server" in server.group(1)
    assert "march=native" not in joined and "GGML_NATIVE=ON" not in joined
