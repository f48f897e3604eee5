# SearchTweak developer commands. Everything installs into .venv; nothing global.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
export NUMBA_CACHE_DIR ?= $(CURDIR)/.cache/numba
HOST ?= 127.0.0.1
PORT ?= 8000
# Where the demo endpoint fetches from: this server unless set (a base address or full URL).
DEMO_SEARCH_URL ?= http://$(HOST):$(PORT)
# The address people open the app at, for the links in mails and webhook bodies: this
# server unless set (searchtweak/settings.py reads it). Given to the server, the workers
# and what they run first, not to the tests, which check the settings' own default.
run worker beat: export SITE_URL ?= http://$(HOST):$(PORT)

# Test processes: one per core by default (pytest-xdist); at most 14, one Redis database
# each (tests/startup.py). `make test TEST_WORKERS=0` runs in this process, one at a time.
TEST_WORKERS ?= auto
TEST_ARGS := -n $(TEST_WORKERS) --maxprocesses=14 --dist loadgroup

.PHONY: run test test-fast lint bench install install-dev migrate worker beat clean

$(PY):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "SearchTweak needs Python 3.11 or newer"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --editable .
	@touch $@

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --editable '.[dev]'
	@touch $@ $(RUN_STAMP)

install: $(RUN_STAMP)
install-dev: $(DEV_STAMP)

migrate: $(RUN_STAMP)
	$(PY) manage.py migrate --noinput

## make run: install, migrate, load the demo data, serve on http://$(HOST):$(PORT)
## (the last lines it prints, once the server is up, are the demo's logins)
run: migrate
	$(PY) manage.py seed_demo --demo-url "$(DEMO_SEARCH_URL)"
	$(PY) manage.py seed_demo_history
	@echo "Serving SearchTweak on http://$(HOST):$(PORT)/ (Ctrl+C to stop)"
	@$(PY) manage.py serve_demo $(HOST):$(PORT)

## make test: install the test extras and run the whole suite on every core
test: $(DEV_STAMP)
	$(PY) -m pytest $(TEST_ARGS) --slowest=15

## make test-fast: the inner loop, without the browser and real-worker tests
test-fast: $(DEV_STAMP)
	$(PY) -m pytest $(TEST_ARGS) -m "not browser and not worker"

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) scripts/architecture_graph.py --check
	$(PY) scripts/architecture_walks.py --check
	$(PY) scripts/settings_reference.py --check

bench: $(DEV_STAMP)
	$(PY) bench/metrics_engine.py
	$(PY) bench/grading.py
	$(PY) bench/dashboard.py
	$(PY) bench/fetch.py
	$(PY) bench/recompute.py
	$(PY) bench/judges.py
	$(PY) bench/uploads.py
	$(PY) bench/schedules.py
	$(PY) bench/bounds.py
	$(PY) bench/active_order.py
	$(PY) bench/active_simulation.py

worker: $(RUN_STAMP)
	$(VENV)/bin/celery -A searchtweak worker --loglevel=INFO --without-gossip --without-mingle \
		--without-heartbeat

beat: $(RUN_STAMP)
	$(VENV)/bin/celery -A searchtweak beat --loglevel=INFO

clean:
	rm -rf $(VENV) .cache staticfiles tests/artifacts
