# GOGH: two commands matter. `make demo` runs the control plane on embedded defaults;
# `make test` runs ruff (`make lint`, configured in ruff.toml) and then the whole suite (unit on
# SQLite, integration on PostgreSQL + Redis + real Celery workers; start those servers first with
# `make services`, as .ci/run does).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgres://gogh:gogh@127.0.0.1:5432/gogh
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST := $(PY) -m pytest -q

.PHONY: demo lint test test-unit test-integration services venv clean-var

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

# One set-up process (Django and PyTorch load once; done steps are skipped), then the stack.
demo: venv
	$(PY) manage.py demo_setup
	$(PY) manage.py run_stack --demo-agents

# Lint first: a failure stops the run with ruff's file:line:column message.
test: lint test-unit test-integration

lint: venv
	$(VENV)/bin/ruff check .

test-unit: venv
	$(PYTEST) tests/unit

# Embedded defaults (SQLite file + filesystem broker) first, then PostgreSQL for everything.
test-integration: venv
	GOGH_TEST_REDIS_URL=$(TEST_REDIS_URL) $(PYTEST) tests/integration
	DATABASE_URL=$(TEST_DATABASE_URL) GOGH_TEST_REDIS_URL=$(TEST_REDIS_URL) $(PYTEST) tests/unit tests/integration

services:
	bash .ci/services

clean-var:
	rm -rf var
