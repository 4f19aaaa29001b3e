# pycontroller developer entry points. Every target bootstraps .venv itself.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv run test test-fast chaos lint fmt bench e2e nginx-deps clean

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

## run the Balancer controller against an embedded API server
run: $(STAMP)
	$(BIN)/python -m controllers.balancer --embedded

## the whole test suite (unit, integration over the embedded API server, chaos, e2e with nginx/kubectl):
## everything but tests/chaos on TEST_WORKERS processes (pytest-xdist), then the
## chaos suite alone, so its fault timings share the machine with nothing else
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --ignore=tests/chaos
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/chaos

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/unit

## chaos soak: the convergence scenario of tests/chaos (run by `make test` at its CI
## minimums: seeds 1,2, 300 mutations) with other seeds and more mutations, e.g.
##   make chaos SEED=7 MUTATIONS=3000      (SEED may list several: SEED=3,4,5)
## Faults scale with MUTATIONS; the JSON report goes to CHAOS_REPORT_DIR.
SEED ?= 1
MUTATIONS ?= 3000
BALANCERS ?= 50
CHAOS_REPORT_DIR ?= build/chaos
CHAOS_TIMEOUT ?= 7200
chaos: $(STAMP)
	CHAOS_SEEDS=$(SEED) CHAOS_MUTATIONS=$(MUTATIONS) CHAOS_BALANCERS=$(BALANCERS) \
	CHAOS_REPORT_DIR=$(abspath $(CHAOS_REPORT_DIR)) \
	$(BIN)/python -m pytest -q -s -p no:cacheprovider --timeout=$(CHAOS_TIMEOUT) \
		tests/chaos/test_convergence.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## benchmarks: speed and memory, measured side by side in one run as ratios; writes
## bench/results.md and its PNG plots (hack/bench/run_all.py). BENCH_ARGS=--quick for
## a small smoke run (not the figures to publish).
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	$(BIN)/python hack/bench/run_all.py $(BENCH_ARGS)

## end-to-end on a kind cluster (needs Docker; not available on CI machines)
e2e:
	bash hack/kind-e2e.sh

## Debian packages the e2e tests use (real nginx with the stream module, kubectl)
nginx-deps:
	bash hack/install-deps.sh

clean:
	rm -rf $(VENV) build *.egg-info
