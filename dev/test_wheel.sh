#!/usr/bin/env bash
# The release's wheel, installed as a user installs it, and run with no checkout anywhere near:
#
#   dev/test_wheel.sh WHEEL AIRFLOW_VERSION CONSTRAINTS [PIP_CACHE]
#
# A fresh virtualenv in a temporary directory gets WHEEL and apache-airflow==AIRFLOW_VERSION under
# CONSTRAINTS (the checkout's pins for that Airflow line). Everything then runs from that empty
# directory with PYTHONPATH unset, so the package can only come from the virtualenv's
# site-packages (checked), never from the checkout or an editable install. Checked: the provider is
# registered (`airflow providers list`), the example audit runs from the installed package data
# (`python -m airflow_provider_coremodels audit --example`, and `airflow coremodels audit
# --example` where Airflow has provider commands, 3.2+). Exits non-zero on the first failure.
set -euo pipefail

wheel=$(realpath "$1")
airflow_version=$2
constraints=$(realpath "$3")
cache=${4:-${PIP_CACHE_DIR:-$HOME/.cache/pip}}
python=${PYTHON:-python3}

work=$(mktemp -d "${TMPDIR:-/tmp}/coremodels-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
unset PYTHONPATH PYTHONHOME
export AIRFLOW_HOME="$work/airflow-home" PIP_DISABLE_PIP_VERSION_CHECK=1
say() { printf 'test-wheel (Airflow %s): %s\n' "$airflow_version" "$*"; }

start=$SECONDS
"$python" -m venv "$work/venv"
bin="$work/venv/bin"
# --no-compile: byte-compiling all of Airflow at install cost more (here 22 s of 54) than the few
# modules the checks import compile on first use (4 s)
"$bin/python" -m pip install --quiet --no-compile --cache-dir "$cache" "$wheel" \
    "apache-airflow==$airflow_version" --constraint "$constraints"
say "installed $(basename "$wheel") in $((SECONDS - start)) s"

where=$("$bin/python" -c 'import airflow_provider_coremodels as p; print(p.__file__)')
case $where in
    "$work/venv/"*) say "imported from $where" ;;
    *) say "the package was imported from $where, not the fresh virtualenv" >&2; exit 1 ;;
esac
installed=$("$bin/python" -c 'import airflow; print(airflow.__version__)')
[ "$installed" = "$airflow_version" ] || { say "Airflow $installed installed, not $airflow_version" >&2; exit 1; }

providers=$("$bin/airflow" providers list --output plain)
grep -q '^airflow-provider-coremodels' <<<"$providers" \
    || { say "not in 'airflow providers list':" >&2; echo "$providers" >&2; exit 1; }
say "registered: $(grep '^airflow-provider-coremodels' <<<"$providers" | tr -s ' \t' ' ')"

audit=$("$bin/python" -m airflow_provider_coremodels audit --example)
head -1 <<<"$audit"
grep -q '^6 DAGs (2 paused) · 4 assets · 11 tasks' <<<"$audit" \
    || { say "the example audit printed something else" >&2; exit 1; }
grep -q 'paused-producer *s3://lake/orders.parquet' <<<"$audit" \
    || { say "the example audit lost its paused-producer finding" >&2; exit 1; }

if "$bin/python" -c 'import sys, airflow; sys.exit(tuple(map(int, airflow.__version__.split(".")[:2])) < (3, 2))'; then
    grep -q '^6 DAGs (2 paused)' <<<"$("$bin/airflow" coremodels audit --example)" \
        || { say "'airflow coremodels audit --example' failed" >&2; exit 1; }
    say "airflow coremodels audit --example: the same estate"
fi
say "passed in $((SECONDS - start)) s"
