# ragnb: set-up, reports and tests. Everything the project needs is installed from here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

# Three installs, each a superset of the one before:
#   core     `pip install ragnb`: measures, evaluation, statistics, file formats (checked by
#            `make core-check` in a venv of its own)
#   reports  `make reports`: the core and ".[reports]" (notebooks, embedders, offline models,
#            the local model server, the OpenTelemetry SDK); no test tools
#   test     `make test`: ".[all,test]" (adds Ray, optuna, the outside oracles and the linters)
BASE_STAMP    := $(VENV)/.ragnb-base
REPORTS_STAMP := $(VENV)/.ragnb-reports
TEST_STAMP    := $(VENV)/.ragnb-test
CORE_VENV     := .venv-core

# llama.cpp (through llama-cpp-python, a source distribution) is built for a portable x86-64
# target: AVX2, FMA, F16C and BMI2, what every x86-64 machine of the last ten years runs. Never
# -march=native: a native build on a CPU that advertises AMX emits AMX tile instructions, which
# fault (SIGSEGV) where the operating system has not enabled AMX state, as in many VMs. The wheel
# is built once into a folder keyed by the version and these flags, and installed from there, so
# a wheel that pip cached from another build is never reused.
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CMAKE_ARGS  := -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
	-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF \
	-DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_KEY    := $(shell printf '%s' "$(LLAMA_CPP_VERSION) $(LLAMA_CMAKE_ARGS)" | sha256sum | cut -c1-16)
WHEELHOUSE   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ragnb/wheels
LLAMA_WHEELS := $(WHEELHOUSE)/llama-cpp-python-$(LLAMA_CPP_VERSION)-$(LLAMA_KEY)
LLAMA_STAMP  := $(LLAMA_WHEELS)/.built

# Models shipped in PyPI packages load from site-packages; nothing is fetched from a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: all venv reports test lint browser lab core-check llama-wheel docs clean

all: reports

$(BASE_STAMP):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	touch $@

# 8 to 10 minutes on two cores, once per machine (the folder outlives the clone)
$(LLAMA_STAMP): | $(BASE_STAMP)
	mkdir -p $(LLAMA_WHEELS)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(BIN)/python -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
	  -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_CPP_VERSION)
	touch $@

llama-wheel: $(LLAMA_STAMP)

$(REPORTS_STAMP): pyproject.toml $(LLAMA_STAMP) $(BASE_STAMP)
	# the CPU build of torch first: an unpinned torch would pull gigabytes of CUDA packages
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl)[server]"
	PIP_FIND_LINKS=$(LLAMA_WHEELS) $(BIN)/python -m pip install -q -e ".[reports]"
	# numba's machine code for the evaluation kernels, cached now rather than on the first run
	$(BIN)/python scripts/compile_kernels.py
	touch $@

$(TEST_STAMP): pyproject.toml $(REPORTS_STAMP)
	PIP_FIND_LINKS=$(LLAMA_WHEELS) $(BIN)/python -m pip install -q -e ".[all,test]"
	touch $@

venv: $(TEST_STAMP)

# Debian's chromium and chromedriver, by path, for the browser tests of the HTML reports.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; \
	fi

reports: $(REPORTS_STAMP)
	$(BIN)/ragnb report --all

# JupyterLab on notebooks/, the project's venv as the kernel (python3), ipywidgets working.
# Listens on 127.0.0.1 only; open the URL it prints (with its token) in a browser.
lab: $(REPORTS_STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --no-browser

# `pip install ragnb` with no extras, in a venv of its own: its size, what it must not pull in,
# and `ragnb evaluate` working there
core-check: $(BASE_STAMP)
	rm -rf $(CORE_VENV)
	$(PYTHON) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/python -m pip install -q --upgrade pip
	$(CORE_VENV)/bin/python -m pip install -q .
	$(BIN)/python scripts/check_core_install.py $(CORE_VENV)

# the documentation site: docs/ and mkdocs.yml into site/; any warning fails (--strict)
docs: $(TEST_STAMP)
	DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict

# lint first (ruff, mypy): a style or type error fails CI before the test run
# two workers (the machines here have two cores), each taking whole test files so a file's
# module fixtures are built once
test: $(TEST_STAMP) browser lint core-check docs
	$(BIN)/python -m pytest -n 2 --dist loadfile

lint: $(TEST_STAMP)
	$(BIN)/ruff check ragnb tests benchmarks scripts docs
	$(BIN)/ruff format --check ragnb tests benchmarks scripts docs
	$(BIN)/mypy ragnb
	$(BIN)/lint-imports

clean:
	rm -rf reports/_executed reports/*.html $(CORE_VENV) site
