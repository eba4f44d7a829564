# One command each: `make demo` runs the local demo, `make test` runs the tests.
# Both create the virtualenv (.venv) and install everything on first use.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install demo test lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) tests/demo.py

test: install lint
	$(PY) -m pytest

lint: install
	$(PY) -m ruff check airflow_provider_coremodels tests example_dags
	$(PY) -m mypy airflow_provider_coremodels

clean:
	rm -rf $(VENV) coremodels-out .pytest_cache .ruff_cache .mypy_cache .hypothesis
