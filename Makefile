# Two commands: `make run` (set up + default experiment) and `make test` (set up + tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Real data sets live outside the repository; the loaders read SGMCMC_DATA_DIR.
SGMCMC_DATA_DIR ?= $(abspath ../shared/data)
export SGMCMC_DATA_DIR

.PHONY: setup run test clean

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

clean:
	rm -rf $(VENV) results/runs .pytest_cache
