# GOGH: two commands matter. `make demo` runs the control plane on embedded defaults;
# `make test` runs ruff (`make lint`, configured in ruff.toml) and then the whole suite (unit on
# SQLite, integration on PostgreSQL + Redis + real Celery workers). Before any test, `make preflight`
# checks that those servers answer (and Chromium is there): it starts them with `make services` where
# it can (root on Debian), else stops within seconds with one line saying what to run.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgres://gogh:gogh@127.0.0.1:5432/gogh
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST := $(PY) -m pytest -q

.PHONY: demo lint preflight test test-unit test-integration services venv clean-var

venv: $(VENV)/.installed

# pip's own lines (and its progress bar on a terminal) show what is downloading: PyTorch alone is
# most of it, and a silent first install looks hung.
$(VENV)/.installed: requirements.txt
	@test -x $(PY) || { echo "creating the virtualenv $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "installing Python packages from requirements.txt (PyTorch CPU, about 2 GB; a few minutes the first time)"
	$(PY) -m pip install --progress-bar on -r requirements.txt
	touch $@

# One process sets up (skipping what is done) and then runs the stack: Django and PyTorch load once.
demo: venv
	$(PY) manage.py demo_setup --run-stack

# Lint first: a failure stops the run with ruff's file:line:column message; then the servers.
test: lint preflight test-unit test-integration

preflight: venv
	$(PY) -m tests.preflight --database $(TEST_DATABASE_URL) --redis $(TEST_REDIS_URL)

lint: venv
	$(VENV)/bin/ruff check .

test-unit: venv
	$(PYTEST) tests/unit

# Embedded defaults (SQLite file + filesystem broker) first, then PostgreSQL for everything.
# Tests marked postgres_tier (browser tests, whose stack is on Redis in both tiers, and the
# Slurm executor end to end) run once, in the PostgreSQL tier.
test-integration: venv preflight
	GOGH_TEST_REDIS_URL=$(TEST_REDIS_URL) $(PYTEST) tests/integration -m "not postgres_tier"
	DATABASE_URL=$(TEST_DATABASE_URL) GOGH_TEST_REDIS_URL=$(TEST_REDIS_URL) $(PYTEST) tests/unit tests/integration

services:
	bash .ci/services

clean-var:
	rm -rf var
