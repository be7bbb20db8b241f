# Two commands: `make run` (set up + default experiment) and `make test` (set up + every correctness check, <= 10 min);
# `make validate` runs the long checks (<= 25 min). CI (.ci/run) runs both, `make test` first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Real data sets live outside the repository (never committed); the loaders read SGMCMC_DATA:
# ../shared/data when it exists, else the project's data_cache/ (filled by downloads when online).
SGMCMC_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),$(CURDIR)/data_cache)
export SGMCMC_DATA
# Paper reproductions: parallel processes per experiment, output root, and where `make smoke` writes.
JOBS ?= 2
PAPER_ROOT ?= results/paper
SMOKE_ROOT ?= results/smoke
PAPER_EXPERIMENTS := recipe_fig2 sghmc_slides lecture_toys ccadl_table1 ccadl_fig2 ccadl_fig2_posterior ccadl_fig3 recipe_fig3 recipe_fig3_friction sghmc_bnn sghmc_bpmf csgmcmc_mixture sgld_cv_scaling

.PHONY: setup run test validate validate-exhaustive clean figures smoke check-samplers recipe-fig2 sghmc-slides lecture-toys ccadl-table1 reference-logistic ccadl-fig2 ccadl-fig2-posterior ccadl-fig3 recipe-fig3 recipe-fig3-friction sghmc-bnn sghmc-bpmf sghmc-bpmf-synthetic csgmcmc-mixture sgld-cv-scaling bench bench-peers

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,distributed,jax]" || { echo "warning: the distributed extra (Ray, submitit) did not install: its launcher tests will skip"; $(BIN)/python -m pip install --quiet -e ".[dev,jax]"; } || { echo "warning: the jax extra did not install: the tests of models in JAX will skip"; $(BIN)/python -m pip install --quiet -e ".[dev]"; }
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python run.py $(ARGS)

# Both tiers on pytest-xdist's workers, one per core, one BLAS thread each; they share numba's on-disk cache and none
# compiles a function another has compiled (tests/conftest.py); a module marked xdist_group runs on one worker, so its module fixture is built
# once. Both print the 25 slowest tests.
TEST_WORKERS ?= auto
PYTEST_TIERS := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=25
test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PYTEST_TIERS) -m "not validate" $(PYTEST_ARGS)

# the long checks: every sampler x toy target default run at its full length, every sampler's walk over the real-data
# targets, every paper experiment's smoke run
validate: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PYTEST_TIERS) -m "validate and not exhaustive" $(PYTEST_ARGS)

# the long checks' further cases (a user's models at the defaults: the pairs beyond one model per sampler); not in CI
validate-exhaustive: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PYTEST_TIERS) -m exhaustive $(PYTEST_ARGS)

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

# full-data HMC reference posterior for logistic regression (results/reference/, loaded by ccadl-fig2)
reference-logistic: $(STAMP)
	$(BIN)/python -m experiments.reference_logistic --root results/reference

ccadl-fig2: $(STAMP)
	$(BIN)/python -m experiments.ccadl_fig2 --root $(PAPER_ROOT) --jobs $(JOBS)

# Fig. 2 bottom row with 2 chains x 10^6 steps per method at h = 1e-4, A = 10 (~45 min)
ccadl-fig2-posterior: $(STAMP)
	$(BIN)/python -m experiments.ccadl_fig2_posterior --root $(PAPER_ROOT) --jobs $(JOBS)

# Shang et al. Fig. 3 (DRBM on connect-4, letter, acoustic); long: see README
ccadl-fig3: $(STAMP)
	$(BIN)/python -m experiments.ccadl_fig3 --root $(PAPER_ROOT) --jobs $(JOBS)

# Ma, Chen & Fox Fig. 3 (online LDA on the Wikipedia sample): tuning, 4 samplers x 3 seeds, online-VB baseline.
# One job at a time: the Gibbs kernels use both cores (numba threads).
recipe-fig3: $(STAMP)
	$(BIN)/python -m experiments.recipe_fig3 --root $(PAPER_ROOT) --jobs 1

# Why gSGRHMC sits above SGRLD on LDA (issue 36): gSGRHMC at SGRLD's tuned step in its overdamped limit, the metric's
# scale c = 1, 10, 100, 1000, 3 seeds each, beside SGRLD and recipe-fig3's own gSGRHMC (reads recipe-fig3's newest folder)
recipe-fig3-friction: $(STAMP)
	$(BIN)/python -m experiments.recipe_fig3_friction --root $(PAPER_ROOT) --jobs $(JOBS)

# Chen, Fox & Guestrin (2014) §4.2: the Bayesian neural network on MNIST, SGD / SGD with momentum / SGLD / SGHMC x 3 seeds,
# 800 epochs each (ARGS="--epochs 100" for a shorter run)
sghmc-bnn: $(STAMP)
	$(BIN)/python -m experiments.sghmc_bnn --root $(PAPER_ROOT) --jobs $(JOBS) $(ARGS)

# Chen, Fox & Guestrin (2014) Table 1: online BPMF on MovieLens-1M (the real ratings.dat in $(SGMCMC_DATA)/movielens/ml-1m/,
# fetched from GroupLens when online; else it stops with one line saying where to put it), 4 methods x 5 folds, 1,000
# rounds of 2,000 steps (ARGS="--rounds 50" for a shorter run); -synthetic: the full-size synthetic set instead
sghmc-bpmf: $(STAMP)
	$(BIN)/python -m experiments.sghmc_bpmf --ratings real --root $(PAPER_ROOT) --jobs $(JOBS) $(ARGS)

sghmc-bpmf-synthetic: $(STAMP)
	$(BIN)/python -m experiments.sghmc_bpmf --ratings synthetic --root $(PAPER_ROOT) --jobs $(JOBS) $(ARGS)

# Zhang et al. (2020) Fig. 2: SGLD and cSGLD (and cSGLD as the authors' mog25.m ran it) on 25 Gaussians, 4 chains x
# 50,000 samples, seeds 0-4 (ARGS="--seeds 0,1,2"); the modes found beside the published 4 and 25
csgmcmc-mixture: $(STAMP)
	$(BIN)/python -m experiments.csgmcmc_mixture --root $(PAPER_ROOT) --jobs $(JOBS) $(ARGS)

# Baker et al. 2019: SGLD against SGLD-CV (control variates at the mode) on logistic regression with N = 10^3, 10^4, 10^5
# at one budget of per-example gradients, the error of the posterior mean against a Gauss-Hermite reference
sgld-cv-scaling: $(STAMP)
	$(BIN)/python -m experiments.sgld_cv_scaling --root $(PAPER_ROOT) --jobs $(JOBS) $(ARGS)

# every paper figure but the two SGHMC experiments, which are timed on their own (issue 36): make sghmc-bnn,
# make sghmc-bpmf-synthetic
figures: recipe-fig2 sghmc-slides lecture-toys ccadl-table1 reference-logistic ccadl-fig2 ccadl-fig2-posterior ccadl-fig3 recipe-fig3 recipe-fig3-friction csgmcmc-mixture sgld-cv-scaling

# speed benchmarks -> results/bench/<run-id>.json, LATEST names it (never part of the tests)
bench: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m benchmarks.engine
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m benchmarks.run

# ours against blackjax (SGLD, SGHMC, SGNHT; 1 and 1,000 chains) -> results/bench/peers-<run-id>.json + .md,
# LATEST-peers names it; then end to end through run.py (a user's model at 1 and 100 chains, the double well at 1,000)
# -> results/bench/end-to-end-<run-id>.json. Installs the peers extra (jax, blackjax) when jax is missing. ARGS=--quick: a short run.
bench-peers: $(STAMP)
	@$(BIN)/python -c "import jax, blackjax" 2>/dev/null || $(BIN)/python -m pip install --quiet -e ".[peers]" >$(VENV)/peers-install.log 2>&1 \
		|| { echo 'bench-peers needs jax and blackjax, which did not install (see $(VENV)/peers-install.log): pip install -e ".[peers]"'; exit 1; }
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m benchmarks.peers $(ARGS)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m benchmarks.end_to_end $(ARGS)

# every experiment with tiny settings, in seconds (also part of `make validate`: each tests/test_<experiment>.py has a test_smoke_run_*)
smoke: $(STAMP)
	for experiment in $(PAPER_EXPERIMENTS); do \
		$(BIN)/python -m experiments.$$experiment --smoke --root $(SMOKE_ROOT) --jobs 1 || exit 1; \
	done

# Fokker-Planck stationarity residual of every sampler
check-samplers: $(STAMP)
	$(BIN)/python check.py --all

clean:
	rm -rf $(VENV) results/runs results/smoke .pytest_cache
