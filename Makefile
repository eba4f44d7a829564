# One command each: `make demo` runs the local demo, `make test` runs the tests.
# Both create the virtualenv (.venv) and install everything on first use.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install browser sandbox demo test test-fast test-oldest lint bench-smoke dist test-wheel clean

# constraints.txt pins every package of a known-good install (as Airflow's own constraint files
# do): pip resolves at once instead of backtracking through botocore, s3fs and fastapi releases.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' -c constraints.txt
	touch $@

install: $(VENV)/.installed

# The UI tests drive Debian's Chromium headless. Installed here when missing and we may (root
# with apt-get, as on CI); otherwise those tests skip, unless COREMODELS_REQUIRE_BROWSER=1.
# BROWSER=0 (`make test BROWSER=0`) leaves the machine alone: the UI tests then skip.
BROWSER ?= 1
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ "$(BROWSER)" = 0 ] || [ -x "$(CHROMIUM)" ] || [ -n "$$COREMODELS_CHROMIUM" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "make browser: $(CHROMIUM) is missing; installing Debian's chromium with apt-get for the UI tests (make test BROWSER=0 skips this, and those tests)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: $(CHROMIUM) is missing: the browser tests will skip (apt-get install chromium; BROWSER=0 silences this)"; fi

# audit --dag-folder runs DAG code in a bubblewrap sandbox (docs/premerge.md). Installed here when
# missing and we may (root with apt-get, as on CI); otherwise the sandbox tests skip, unless
# COREMODELS_REQUIRE_SANDBOX=1. SANDBOX=0 (`make test SANDBOX=0`) leaves the machine alone.
SANDBOX ?= 1
sandbox:
	@if [ "$(SANDBOX)" = 0 ] || command -v bwrap >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "make sandbox: bwrap is missing; installing Debian's bubblewrap with apt-get for the sandbox tests (make test SANDBOX=0 skips this, and those tests)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	else echo "note: bwrap is missing: the sandbox tests will skip (apt-get install bubblewrap; SANDBOX=0 silences this)"; fi

demo: install
	$(PY) dev/demo.py

# The suite on TEST_WORKERS pytest-xdist workers, a module's tests on one worker (--dist loadfile:
# its servers start once), the modules handed out longest first as tests/durations.json measured
# them (--no-loadscope-reorder keeps that order; tests/conftest.py sets it, and
# `make test PYTEST_ARGS=--record-durations` measures it again). A fifth of a run waits on servers,
# deadlines and subprocesses, so three workers on 2 cores finish first (18.4 minutes where two took
# 19.7, measured quiet before later cuts brought three to 13.3-14.7); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 3
PYTEST_WORKERS := $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
PYTEST_ARGS ?=
# The suite starts about a thousand Python processes that import the package (the command line as
# users run it, Airflow's servers loading the provider). In a fresh checkout, or where
# PYTHONDONTWRITEBYTECODE is set (as in some CI images), each would compile the package from source
# again, about 0.2 s of CPU apiece: it is compiled once, first.
BYTECODE := -m compileall -q airflow_provider_coremodels tests/support

test: install lint browser sandbox
	$(PY) $(BYTECODE)
	$(PY) -m pytest $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The edit-test loop: every test that needs no server (a real Airflow API server, a local one a
# test scripts, an MCP server) and no browser: about two minutes on 2 cores; `make test` runs
# them all. The markers: tests/conftest.py and the modules' pytestmark.
test-fast: install
	$(PY) -m pytest -q $(PYTEST_WORKERS) -m "not airflow_server and not browser and not slow"

lint: install
	$(PY) -m ruff check airflow_provider_coremodels tests example_dags benchmarks dev
	$(PY) -m ruff format --check airflow_provider_coremodels tests example_dags benchmarks dev
	$(PY) -m mypy airflow_provider_coremodels

# The oldest Airflow line the provider claims (3.0, pyproject's apache-airflow>=3.0) in a second
# virtualenv, pinned by constraints-oldest.txt, without the heavy object-storage test extras:
# the tests of what must work there (the operator, the hooks, provider registration, the export
# and `python -m`, the parse). Tests of 3.2+ features skip, naming the version they need.
VENV_OLDEST ?= .venv-oldest
PY_OLDEST := $(VENV_OLDEST)/bin/python
OLDEST_TESTS := tests/operators tests/cli tests/core tests/test_provider.py tests/capture/test_source.py \
	tests/capture/test_dag_folder.py tests/capture/test_sandbox_hostile.py \
	tests/capture/test_live_capture.py::test_a_connection_stored_in_the_metadata_database_works_from_the_command_line

$(VENV_OLDEST)/.installed: pyproject.toml constraints-oldest.txt
	$(PYTHON) -m venv $(VENV_OLDEST)
	$(PY_OLDEST) -m pip install --quiet --upgrade pip
	$(PY_OLDEST) -m pip install --quiet -e . pytest pytest-mock pytest-xdist hypothesis statsd aiosmtpd -c constraints-oldest.txt
	touch $@

test-oldest: $(VENV_OLDEST)/.installed sandbox
	$(PY_OLDEST) $(BYTECODE)
	$(PY_OLDEST) -m pytest $(PYTEST_WORKERS) $(OLDEST_TESTS)

# The benchmarks at size S, once: keeps the scripts working (CI runs it); figures need the full sizes.
# bench_polite and bench_vs_client each start a real api-server (about 20 s each); bench_vs_client
# also installs apache-airflow-client from PyPI into a virtualenv of its own (benchmarks/README.md).
bench-smoke: install
	$(PY) benchmarks/bench_offline.py --sizes S --repeat 1 --no-memory
	$(PY) benchmarks/bench_capture.py --size S --concurrency 16 --repeat 1
	$(PY) benchmarks/bench_views.py --sizes S --repeat 1 --dense-timeout 2
	$(PY) benchmarks/bench_credentials.py --dags 100 --repeat 1
	$(PY) benchmarks/bench_merge.py --deployments 3 --dags 100 --repeat 1
	$(PY) benchmarks/bench_rules.py --ids 20 --repeat 1
	$(PY) benchmarks/bench_mcp.py --sizes 200 --repeat 1
	$(PY) benchmarks/bench_polite.py --dags 20 --tasks-per-dag 3 --repeat 1 --idle 2 --gap 0.5
	$(PY) benchmarks/bench_vs_client.py --dags 20 --tasks-per-dag 3 --repeat 1 --concurrency 8 --quiet 0
	$(PY) benchmarks/bench_dag_folder.py --files 20 --repeat 1
	$(PY) benchmarks/bench_premerge.py --files 50 --repeat 1
	$(PY) benchmarks/bench_capture_memory.py --dags 1 --answer-mb 2 --commands export
	$(PY) benchmarks/bench_parse_start.py --repeat 1

# The release's files, as the release workflow makes them: the sdist, the wheel built from it, and
# both checked as PyPI renders and accepts them (twine check --strict: the README must render).
dist: install
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(PY) -m twine check --strict dist/*

# The wheel of `make dist`, not the checkout, installed into a fresh virtualenv per Airflow line CI
# claims (the newest 3.3.x and the oldest, 3.0, each under its constraints) and run from an empty
# directory: the provider registers, and the example audit runs from the installed package.
# WHEEL_PIP_CACHE: pip's own cache by default, where `make install` and `make test-oldest` left the
# same pinned packages, so a fresh machine downloads nothing twice.
WHEEL_PIP_CACHE ?= $(or $(PIP_CACHE_DIR),$(HOME)/.cache/pip)
test-wheel: dist
	dev/test_wheel.sh dist/*.whl 3.3.2 constraints.txt $(WHEEL_PIP_CACHE)
	dev/test_wheel.sh dist/*.whl 3.0.6 constraints-oldest.txt $(WHEEL_PIP_CACHE)

clean:
	rm -rf $(VENV) $(VENV_OLDEST) dist coremodels-out .pytest_cache .ruff_cache .mypy_cache .hypothesis
