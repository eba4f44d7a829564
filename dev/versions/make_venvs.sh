#!/usr/bin/env bash
# Build one virtualenv per Airflow line the provider claims, from the pinned freezes beside this
# script (constraints-<version>.txt; each file's header says how it was resolved and why pins
# were forced). Idempotent: a venv that exists and imports its Airflow at the right version is
# skipped; a broken or wrong one is rebuilt.
#
#   dev/versions/make_venvs.sh                 # every line below
#   dev/versions/make_venvs.sh 3.1.8 2.11.2    # only these
#   VENVS_DIR=/somewhere dev/versions/make_venvs.sh
#
# 3.3.2 is not built here: it is the dev venv (/work/main/.venv, `make`, pinned by
# constraints.txt). tests/support/version_servers.py and dev/versions/probe_api.py use these
# venvs as /work/venvs/af-<version>.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venvs_dir="${VENVS_DIR:-/work/venvs}"
python="${PYTHON:-python3}"
all_versions=(2.11.2 3.0.6 3.1.8 3.2.2)
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${all_versions[@]}")

imports_ok() {  # venv version
    "$1/bin/python" - "$2" <<'PY' >/dev/null 2>&1
import importlib.metadata, sys
import airflow  # noqa: F401 - the venv must import it, not only list it
sys.exit(0 if importlib.metadata.version("apache-airflow") == sys.argv[1] else 1)
PY
}

mkdir -p "$venvs_dir"
for version in "${versions[@]}"; do
    constraints="$here/constraints-$version.txt"
    venv="$venvs_dir/af-$version"
    if [ ! -f "$constraints" ]; then
        echo "no $constraints (3.3.2 is the dev venv: run make)" >&2
        exit 2
    fi
    if [ -x "$venv/bin/python" ] && imports_ok "$venv" "$version"; then
        echo "af-$version: exists and imports, skipped"
        continue
    fi
    echo "af-$version: building $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    # Every package is pinned by the constraints file, so the install is reproducible whatever
    # the indexes offer beyond those versions.
    "$venv/bin/python" -m pip install --quiet "apache-airflow==$version" -c "$constraints"
    if ! imports_ok "$venv" "$version"; then
        echo "af-$version: built but does not import apache-airflow $version" >&2
        exit 1
    fi
    echo "af-$version: ok"
done
