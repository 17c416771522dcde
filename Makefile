# ethos: `make demo` on a fresh machine, `make test` for the whole suite.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install run demo test peers unit lint format typecheck schema bench recall-bench lifecycle-bench browser serve all clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install  ## the consolidation daemon on the embedded database
	$(BIN)/ethos migrate
	$(BIN)/ethos daemon

demo: install  ## a short walk through simulated days on the embedded database
	$(BIN)/ethos migrate
	$(BIN)/ethos demo

test: install lint typecheck peers  ## two workers: the suite waits on PostgreSQL and subprocesses
	$(BIN)/pytest -q -n 2

peers: install  ## LangGraph's own store suites, pinned sdists from PyPI into .cache/peers
	$(BIN)/python -m tests.peers.langgraph_upstream

unit: install
	$(BIN)/pytest -q tests/unit

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: install
	$(BIN)/mypy

schema: install  ## write tests/schema.sql anew from a migrated database (review the diff)
	UPDATE_SCHEMA_SNAPSHOT=1 $(BIN)/pytest -q tests/integration/test_schema.py -k snapshot

bench: install  ## ROWS=1000000 VECTORS=100000 by default; smaller: make bench ROWS=100000
	$(BIN)/python bench/bench.py --rows $(or $(ROWS),1000000) --vectors $(or $(VECTORS),100000)

recall-bench: install  ## LoCoMo recall@k: ethos text/hybrid, BM25, dense (DATA=../shared/data/locomo)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/recall_quality.py --data $(or $(DATA),../shared/data/locomo)

lifecycle-bench: install  ## LoCoMo replayed as an agent would: what forgetting keeps (DATA=...)
	$(BIN)/python bench/lifecycle.py --data $(or $(DATA),../shared/data/locomo)

browser:  ## Debian's Chromium and its driver, for the dashboard's browser test (root)
	apt-get update && apt-get install -y chromium chromium-driver

serve: install  ## the HTTP API and the dashboard at http://127.0.0.1:8750 on the embedded database
	$(BIN)/ethos migrate
	$(BIN)/ethos serve --http 127.0.0.1:8750

all: lint typecheck test

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
