# ethos: `make demo` on a fresh machine, `make test` for the whole suite.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install run demo test peers unit lint format typecheck bench bench-tenants bench-peer recall-bench lifecycle-bench meaning-bench browser terminal mcp-inspector serve all clean \
	citus citus-install citus-up citus-down citus-test citus-suite bench-citus test-on baseline

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
	$(BIN)/pytest -q -n 2 --durations=30

peers: install  ## LangGraph's own store suites, pinned sdists from PyPI into .cache/peers
	$(BIN)/python -m tests.peers.langgraph_upstream

test-on: install  ## the suite on another server: make test-on URL=postgresql://postgres@127.0.0.1:9700/postgres
	TEST_ADMIN_URL=$(URL) $(BIN)/pytest -q -n 2 tests/unit tests/integration tests/acceptance

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

baseline: install  ## until the first release: unreleased migrations folded into the baseline (the schema); FREEZE=1 at the release copies it (decision 0025)
	$(BIN)/python scripts/baseline.py $(if $(FREEZE),--freeze)

bench: install  ## ROWS=1000000 VECTORS=100000 by default; smaller: make bench ROWS=100000
	$(BIN)/python bench/bench.py --rows $(or $(ROWS),1000000) --vectors $(or $(VECTORS),100000)

bench-tenants: install  ## tenants' p50/p99 beside one holding row locks and one sending bad batches (GOOD=4 PHASE=20 seconds)
	$(BIN)/python bench/tenants.py --good $(or $(GOOD),4) --seconds $(or $(PHASE),20)

bench-peer: install  ## ethos's LangGraph store vs LangGraph's PostgresStore, one run (ITEMS=100000; QUICK=1)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/peer.py --items $(or $(ITEMS),100000) $(if $(QUICK),--quick)

recall-bench: install  ## LoCoMo recall@k: ethos text/hybrid, BM25, dense (DATA=../shared/data/locomo; LOCAL=1: provider "local" too, and its add cost)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/recall_quality.py --data $(or $(DATA),../shared/data/locomo) $(if $(LOCAL),--local)

lifecycle-bench: install  ## LoCoMo replayed as an agent would: what forgetting keeps (DATA=...)
	$(BIN)/python bench/lifecycle.py --data $(or $(DATA),../shared/data/locomo)

meaning-bench: install  ## Stated facts, first words, short turns, chatter: what each lands on (DATA=...)
	$(BIN)/python bench/meaning.py --data $(or $(DATA),../shared/data/locomo)

.PHONY: import-bench
import-bench: install  ## `ethos import` of LoCoMo's turns repeated against COPY, one run (ROWS=100000 DATA=...)
	$(BIN)/python bench/import_.py --data $(or $(DATA),../shared/data/locomo) --rows $(or $(ROWS),100000)

.PHONY: unmatched-bench
unmatched-bench: install  ## LoCoMo: hits that their own words do not match, reinforced (DATA=...)
	$(BIN)/python bench/unmatched.py --data $(or $(DATA),../shared/data/locomo)

browser:  ## Debian's Chromium and its driver, for the dashboard's browser test (root)
	apt-get update && apt-get install -y chromium chromium-driver

terminal:  ## tmux, for the test that runs a long command on a real terminal (root)
	command -v tmux >/dev/null || (apt-get update && apt-get install -y tmux)

mcp-inspector:  ## the MCP Inspector's CLI (pinned, npm) into .cache, for test_mcp_inspector (make test does not fetch it)
	npm install --prefix .cache/mcp-inspector --no-audit --no-fund --ignore-scripts @modelcontextprotocol/inspector@2.12.0

citus:  ## Citus + pgvector for Debian's PostgreSQL 15, and a coordinator with two workers (root; issue 40)
	scripts/citus.sh install
	scripts/citus.sh up

citus-install:  ## apt packages if missing; Citus and pgvector built from ../shared/vendor if not installed
	scripts/citus.sh install

citus-up:  ## coordinator :9700, workers :9701-9702 in /tmp/ethos-citus (CITUS_DIR, CITUS_PORT); prints its URL
	scripts/citus.sh up

citus-down:  ## stop the three nodes (their data stays; scripts/citus.sh destroy removes it)
	scripts/citus.sh down

citus-test: install  ## the Citus tests, against the cluster make citus started
	$(BIN)/pytest -q tests/citus

citus-suite: install  ## the whole suite on the cluster make citus started, every test's database distributed by agent
	TEST_ADMIN_URL=$$(cat $${CITUS_DIR:-/tmp/ethos-citus}/url) TEST_DISTRIBUTED=1 \
		$(BIN)/pytest -q -n 2 tests/unit tests/integration tests/acceptance

bench-citus: install  ## ethos distributed on the cluster beside its coordinator alone, the same rows (ROWS=200000)
	$(BIN)/python bench/citus.py --rows $(or $(ROWS),200000)

serve: install  ## the HTTP API and the dashboard at http://127.0.0.1:8750 on the embedded database
	$(BIN)/ethos migrate
	$(BIN)/ethos serve --http 127.0.0.1:8750

all: lint typecheck test

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
