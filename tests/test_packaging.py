"""What a release carries: the project metadata, the licence, the changelog and the sdist's contents.

Fast checks of the files, then one real build: the sdist, the wheel built from it, and the
README's first command run from that wheel. That every file under ui/templates and ui/static
matches the package data is checked in tests/ui/test_page.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.helpers import REPO

from airflow_provider_coremodels import __version__

REPOSITORY = "https://github.com/coremodels/airflow-provider-coremodels"

CLASSIFIERS = {
    "Development Status :: 4 - Beta",
    "Framework :: Apache Airflow",
    "Framework :: Apache Airflow :: Provider",
    "Intended Audience :: Developers",
    "Intended Audience :: System Administrators",
    "Operating System :: OS Independent",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: System :: Monitoring",
    "Typing :: Typed",
}

#: A release heading of Keep a Changelog: "## [0.2.0] - 2026-12-01" ("## [Unreleased]" is not one).
RELEASE_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+(?:[-.+]\w+)*)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", re.M)


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def test_the_license_file_is_declared_and_is_the_apache_license(project: dict[str, Any]) -> None:
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text.splitlines()[1]
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert text.rstrip().endswith("limitations under the License.")  # the appendix, and nothing after it
    # setuptools >= 77 refuses a licence classifier beside an SPDX expression
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_the_classifiers_say_what_the_project_is(project: dict[str, Any]) -> None:
    classifiers = project["classifiers"]
    assert set(classifiers) >= CLASSIFIERS
    assert len(set(classifiers)) == len(classifiers)


def test_the_python_classifiers_start_at_requires_python(project: dict[str, Any]) -> None:
    floor = re.fullmatch(r">=\s*3\.(\d+)", project["requires-python"])
    assert floor, project["requires-python"]
    minors = sorted(
        int(m.group(1))
        for c in project["classifiers"]
        if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c))
    )
    assert minors[0] == int(floor.group(1))
    assert minors == list(range(minors[0], minors[-1] + 1))


def test_the_urls_name_one_repository_and_files_it_holds(project: dict[str, Any]) -> None:
    urls = project["urls"]
    assert set(urls) == {"Documentation", "Changelog", "Source", "Issues"}
    assert urls["Source"] == REPOSITORY
    assert urls["Issues"] == f"{REPOSITORY}/issues"
    for key, name in (("Documentation", "README.md"), ("Changelog", "CHANGELOG.md")):
        assert urls[key] == f"{REPOSITORY}/blob/main/{name}"
        assert (REPO / name).is_file()
    assert project["readme"] == "README.md"


def test_authors_and_maintainers(project: dict[str, Any]) -> None:
    assert project["authors"] == [{"name": "CoreModels"}]
    assert project["maintainers"] == [{"name": "CoreModels"}]


def test_the_version_is_the_latest_changelog_entry() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = RELEASE_HEADING.findall(changelog)
    assert releases, "CHANGELOG.md has no release heading like '## [0.2.0] - 2026-12-01'"
    assert releases[0][0] == __version__
    assert len({version for version, _ in releases}) == len(releases)
    dates = [date for _, date in releases if date]
    assert dates == sorted(dates, reverse=True)
    # every release heading has its link reference at the end
    for version, _ in releases:
        assert re.search(rf"^\[{re.escape(version)}\]: {re.escape(REPOSITORY)}/", changelog, re.M), version


def test_the_sdist_ships_no_tests_and_the_files_users_read() -> None:
    """MANIFEST.in: the test modules need tests/support and tests/fixtures, and dev/ and benchmarks/
    import the harness, so none of it ships; LICENSE and CHANGELOG.md do."""
    lines = {
        line.strip()
        for line in (REPO / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {"prune tests", "prune dev", "prune benchmarks"} <= lines
    [include] = [line for line in lines if line.startswith("include ")]
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml"} <= set(include.split()[1:])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel built from it, as ``python -m build`` makes a release."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_sdist_holds_the_package_and_no_tests(built: dict[str, Path]) -> None:
    with tarfile.open(built["sdist"]) as sdist:
        names = {name.partition("/")[2] for name in sdist.getnames()}
    assert {
        "LICENSE",
        "CHANGELOG.md",
        "README.md",
        "pyproject.toml",
        "example_dags/coremodels_export.py",
    } <= names
    assert "airflow_provider_coremodels/example_estate/dags.json" in names
    assert not [name for name in names if name.startswith(("tests/", "dev/", "benchmarks/"))]


def test_the_wheel_carries_the_package_data(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
    package = REPO / "airflow_provider_coremodels"
    data = [
        path.relative_to(REPO).as_posix()
        for pattern in ("example_estate/*", "ui/templates/*", "ui/static/*", "py.typed")
        for path in package.glob(pattern)
    ]
    assert len(data) > 8
    assert set(data) <= names


def test_the_first_command_of_the_readme_runs_from_the_wheel(built: dict[str, Path], tmp_path: Path) -> None:
    """``audit --example`` needs nothing a checkout has: the wheel alone, installed elsewhere, run
    from an empty directory (the checkout's editable install is shadowed by PYTHONPATH)."""
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            built["wheel"],
        ],
        check=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    command = [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--example"]
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.startswith("6 DAGs (2 paused) · 4 assets · 11 tasks · 7 lineage edges")
    assert "paused-producer     s3://lake/orders.parquet" in run.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import airflow_provider_coremodels as p; print(p.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(target))
