# One command each: `make demo` runs the local demo, `make test` runs the tests.
# Both create the virtualenv (.venv) and install everything on first use.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install browser demo test lint bench-smoke clean

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
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the UI tests ..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: /usr/bin/chromium is missing: the browser tests will skip (apt-get install chromium)"; fi

demo: install
	$(PY) dev/demo.py

test: install lint browser
	$(PY) -m pytest

lint: install
	$(PY) -m ruff check airflow_provider_coremodels tests example_dags benchmarks dev
	$(PY) -m ruff format --check airflow_provider_coremodels tests example_dags benchmarks dev
	$(PY) -m mypy airflow_provider_coremodels

# The benchmarks at size S, once: keeps the scripts working (CI runs it); figures need the full sizes.
bench-smoke: install
	$(PY) benchmarks/bench_offline.py --sizes S --repeat 1 --no-memory
	$(PY) benchmarks/bench_capture.py --size S --concurrency 16 --repeat 1
	$(PY) benchmarks/bench_views.py --sizes S --repeat 1

clean:
	rm -rf $(VENV) coremodels-out .pytest_cache .ruff_cache .mypy_cache .hypothesis
