# dpexp: common tasks. `make help` lists them.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
JOBS ?= 2
SEED ?= 0
# extra options of every `dpexp run` of reproduce-all, e.g. RUN_ARGS="--recompute-before 2026-11-27"
RUN_ARGS ?=
EXPERIMENTS = $(shell $(PYTHON) -m dpexp.cli list --json 2>/dev/null | $(PYTHON) -c "import json,sys; print(' '.join(r['id'] for r in json.load(sys.stdin)))")

.PHONY: help install install-test test lint demo plan-all reproduce-smoke reproduce-all reproduce-shard bench clean-results

help:
	@echo "make demo             install and run the default experiment (synthetic data, smoke scale)"
	@echo "make test             install with test extras and run the test suite"
	@echo "make reproduce-smoke  run every experiment at smoke scale (minutes), then render"
	@echo "make plan-all         cells, cached cells and estimated wall time of every experiment (paper scale)"
	@echo "make reproduce-all    print that plan, then run every experiment at paper scale (resumable)"
	@echo "make reproduce-shard SHARD=K/N  shard K of N of every experiment at paper scale (cells only)"
	@echo "make bench            run the benchmarks in bench/ (prints ratios vs references)"
	@echo "make lint             ruff"

install:
	$(PIP) install -q -e .

install-test:
	$(PIP) install -q -e ".[test,dask]"
	@# diffprivlib 0.6.6 needs scikit-learn < 1.6: its side venv, instant once made; when it
	@# cannot be made (offline) one line, and its tests skip (fail: DPEXP_TEST_REQUIRE_PEERS=1)
	$(PYTHON) -m dpexp.cli peers setup diffprivlib --best-effort

demo: install
	dpexp run

test: install-test
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check dpexp tests bench

reproduce-smoke: install
	@for e in $(EXPERIMENTS); do \
	  dpexp run $$e --scale smoke --jobs $(JOBS) --seed $(SEED) -q || exit $$?; \
	done
	dpexp report --scale smoke

reproduce-all: install
	dpexp plan --all --scale paper --jobs $(JOBS) --seed $(SEED)
	@for e in $(EXPERIMENTS); do \
	  dpexp run $$e --scale paper --jobs $(JOBS) --seed $(SEED) --skip-unavailable $(RUN_ARGS) || exit $$?; \
	done
	dpexp report --scale paper

# One machine's share of reproduce-all (README, "Paper scale on several machines"): caches
# shard K of N of every experiment; `make reproduce-all` on the merged caches then writes
# the tables, figures and report without computing anything.
reproduce-shard: install
	@test -n "$(SHARD)" || { echo "give SHARD=K/N, e.g. make reproduce-shard SHARD=1/4"; exit 2; }
	@for e in $(EXPERIMENTS); do \
	  dpexp run $$e --scale paper --jobs $(JOBS) --seed $(SEED) --skip-unavailable --shard $(SHARD) $(RUN_ARGS) || exit $$?; \
	done

plan-all: install
	dpexp plan --all --scale paper --jobs $(JOBS) --seed $(SEED)

bench: install
	$(PIP) install -q -e ".[bench]"
	$(PYTHON) -m dpexp.cli peers setup diffprivlib  # diffprivlib needs scikit-learn < 1.6: a side venv
	$(PYTHON) bench/run_all.py

clean-results:
	rm -rf results/cache results/*/ figures/*/
