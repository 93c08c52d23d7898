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
LLAMA_KEY    := $(shell printf '%s' "$(LLAMA_CPP_VERSION) $(LLAMA_CMAKE_ARGS) tree" | sha256sum | cut -c1-16)
WHEELHOUSE   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ragnb/wheels
LLAMA_WHEELS := $(WHEELHOUSE)/llama-cpp-python-$(LLAMA_CPP_VERSION)-$(LLAMA_KEY)
LLAMA_STAMP  := $(LLAMA_WHEELS)/.built
LLAMA_SRC    := $(LLAMA_WHEELS)/src/llama_cpp_python-$(LLAMA_CPP_VERSION)
LLAMA_TREE   := $(LLAMA_WHEELS)/build

# llama.cpp's own server, llama-server (several requests at once, a prompt cache), is built in
# the wheel's CMake build folder, kept for it: configured again with llama.cpp's tools on (and
# the wheel's own copy of the multimodal library off, which they add again), only the
# llama-server target is compiled: its sources and the multimodal library it links; the rest
# is the wheel's, already compiled with the flags above (any option that changes their command
# lines, such as LLAMA_OPENSSL, would compile them again). No web UI, nothing downloaded. It
# goes with the shared libraries it links (found through RPATH $ORIGIN) into a folder keyed by
# these options, then into the venv (.venv/lib/llama-server, linked from .venv/bin, beside the
# python where ragnb.llm.server looks for it).
LLAMA_SERVER_ARGS := -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAVA_BUILD=OFF \
	-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON
LLAMA_SERVER_KEY  := $(shell printf '%s' "$(LLAMA_SERVER_ARGS)" | sha256sum | cut -c1-8)
LLAMA_SERVER_DIR  := $(LLAMA_WHEELS)/llama-server-$(LLAMA_SERVER_KEY)
LLAMA_SERVER      := $(LLAMA_SERVER_DIR)/llama-server

# Models shipped in PyPI packages load from site-packages; nothing is fetched from a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: all venv reports test lint browser lab core-check llama-wheel llama-server docs clean

all: reports

$(BASE_STAMP):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	touch $@

# 8 to 10 minutes on two cores, once per machine (the folder outlives the clone); the build
# folder is kept for llama-server
$(LLAMA_STAMP): | $(BASE_STAMP)
	rm -rf $(LLAMA_WHEELS)/src $(LLAMA_TREE) && mkdir -p $(LLAMA_WHEELS)/src
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -d $(LLAMA_WHEELS)/src \
	  llama-cpp-python==$(LLAMA_CPP_VERSION)
	tar -xzf $(LLAMA_SRC).tar.gz -C $(LLAMA_WHEELS)/src
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(BIN)/python -m pip wheel -q --no-deps --no-cache-dir \
	  --config-settings=build-dir=$(LLAMA_TREE) -w $(LLAMA_WHEELS) $(LLAMA_SRC)
	touch $@

llama-wheel: $(LLAMA_STAMP)

# N minutes on two cores, once per machine, after the wheel
$(LLAMA_SERVER): $(LLAMA_STAMP)
	rm -rf $(LLAMA_SERVER_DIR) $(LLAMA_SERVER_DIR).tmp && mkdir -p $(LLAMA_SERVER_DIR).tmp
	cmake -S $(LLAMA_SRC) -B $(LLAMA_TREE) $(LLAMA_CMAKE_ARGS) $(LLAMA_SERVER_ARGS) \
	  > $(LLAMA_SERVER_DIR).tmp/build.log 2>&1 \
	  && cmake --build $(LLAMA_TREE) --target llama-server -j $$(nproc) \
	  >> $(LLAMA_SERVER_DIR).tmp/build.log 2>&1 \
	  || { tail -n 40 $(LLAMA_SERVER_DIR).tmp/build.log; exit 1; }
	cp -P $(LLAMA_TREE)/bin/llama-server $(LLAMA_TREE)/bin/lib*.so* $(LLAMA_SERVER_DIR).tmp/
	rm $(LLAMA_SERVER_DIR).tmp/build.log && mv $(LLAMA_SERVER_DIR).tmp $(LLAMA_SERVER_DIR)

llama-server: $(LLAMA_SERVER)

$(REPORTS_STAMP): pyproject.toml $(LLAMA_STAMP) $(LLAMA_SERVER) $(BASE_STAMP)
	rm -rf $(VENV)/lib/llama-server && cp -rP $(LLAMA_SERVER_DIR) $(VENV)/lib/llama-server
	ln -sfn ../lib/llama-server/llama-server $(BIN)/llama-server
	# the CPU build of torch first: an unpinned torch would pull gigabytes of CUDA packages
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl)[server]"
	PIP_FIND_LINKS=$(LLAMA_WHEELS) $(BIN)/python -m pip install -q -e ".[reports]"
	# numba's machine code for the evaluation kernels, cached now rather than on the first run
	$(BIN)/python scripts/compile_kernels.py
	# the package's bytecode, which an editable install does not write (a regular one does):
	# a command then starts without compiling its modules, PYTHONDONTWRITEBYTECODE set or not
	$(BIN)/python -m compileall -q ragnb
	touch $@

$(TEST_STAMP): pyproject.toml $(REPORTS_STAMP)
	PIP_FIND_LINKS=$(LLAMA_WHEELS) $(BIN)/python -m pip install -q -e ".[all,test]"
	# the test oracles' numba code (ranx), cached now rather than by the first test that calls it
	$(BIN)/python scripts/compile_oracles.py
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
