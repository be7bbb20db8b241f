# Two commands: `make run` (set up + default experiment) and `make test` (set up + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Real data sets live outside the repository; the loaders read SGMCMC_DATA_DIR.
SGMCMC_DATA_DIR ?= $(abspath ../shared/data)
export SGMCMC_DATA_DIR
# Paper reproductions: parallel processes per experiment, output root, and where `make smoke` writes.
JOBS ?= 2
PAPER_ROOT ?= results/paper
SMOKE_ROOT ?= results/smoke
PAPER_EXPERIMENTS := recipe_fig2 sghmc_slides lecture_toys ccadl_table1

.PHONY: setup run test clean figures smoke check-samplers recipe-fig2 sghmc-slides lecture-toys ccadl-table1 bench

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python run.py $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# --- paper figures and tables (each regenerates its folder under results/paper/<figure-id>/) -------
recipe-fig2: $(STAMP)
	$(BIN)/python -m experiments.recipe_fig2 --root $(PAPER_ROOT) --jobs $(JOBS)

sghmc-slides: $(STAMP)
	$(BIN)/python -m experiments.sghmc_slides --root $(PAPER_ROOT) --jobs $(JOBS)

lecture-toys: $(STAMP)
	$(BIN)/python -m experiments.lecture_toys --root $(PAPER_ROOT) --jobs $(JOBS)

# Shang et al. 2015 Table 1 + Fig. 1: Hydra multirun sweeps on the joblib launcher (JOBS processes)
ccadl-table1: $(STAMP)
	$(BIN)/python -m experiments.ccadl_table1 --root $(PAPER_ROOT) --jobs $(JOBS)

figures: recipe-fig2 sghmc-slides lecture-toys ccadl-table1

# speed benchmarks -> results/bench/bench.json (never part of the tests)
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run --output results/bench/bench.json

# every experiment with tiny settings, in seconds (also part of `make test`: tests/test_experiments_smoke.py)
smoke: $(STAMP)
	for experiment in $(PAPER_EXPERIMENTS); do \
		$(BIN)/python -m experiments.$$experiment --smoke --root $(SMOKE_ROOT) --jobs 1 || exit 1; \
	done

# Fokker-Planck stationarity residual of every sampler
check-samplers: $(STAMP)
	$(BIN)/python check.py --all

clean:
	rm -rf $(VENV) results/runs results/smoke .pytest_cache
