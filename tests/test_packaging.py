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


def test_the_version_is_the_latest_changelog_entry_or_the_one_under_way() -> None:
    """``__version__`` is the newest release heading, or (between the version bump and the cut) the
    version after it while its entries sit under ``## [Unreleased]``. A tag is refused unless the
    heading is cut (dev/check_release.py, the release workflow's first step)."""
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = RELEASE_HEADING.findall(changelog)
    assert releases, "CHANGELOG.md has no release heading like '## [0.2.0] - 2026-12-01'"
    newest = tuple(map(int, releases[0][0].split(".")[:3]))
    ours = tuple(map(int, __version__.split(".")[:3]))
    if ours != newest:
        assert ours > newest, f"__version__ {__version__} is older than the newest release {releases[0][0]}"
        assert changelog.index("## [Unreleased]") < changelog.index(f"## [{releases[0][0]}]")
    assert len({version for version, _ in releases}) == len(releases)
    dates = [date for _, date in releases if date]
    assert dates == sorted(dates, reverse=True)
    # every release heading has its link reference at the end
    for version, _ in releases:
        assert re.search(rf"^\[{re.escape(version)}\]: {re.escape(REPOSITORY)}/", changelog, re.M), version


def check_release(root: Path, tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "dev" / "check_release.py"), tag, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def release_tree(root: Path, version: str, changelog: str) -> Path:
    (root / "airflow_provider_coremodels").mkdir(parents=True)
    (root / "airflow_provider_coremodels" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (root / "CHANGELOG.md").write_text(changelog)
    return root


CUT = f"""# Changelog

## [Unreleased]

## [0.3.0] - 2026-12-06

- A release.

## [0.2.0] - 2026-12-01

[0.3.0]: {REPOSITORY}/compare/v0.2.0...v0.3.0
[0.2.0]: {REPOSITORY}/releases/tag/v0.2.0
"""


@pytest.mark.parametrize(
    ("version", "changelog", "tag", "said"),
    [
        ("0.3.0", CUT, "refs/tags/v0.3.0", []),
        ("0.3.0", CUT, "v0.3.0", []),
        ("0.3.0", CUT, "v0.3.1", ["the tag v0.3.1 is not v + the package's version (0.3.0)"]),
        ("0.3.0", CUT, "0.3.0", ["the tag 0.3.0 is not v + the package's version (0.3.0)"]),
        (
            "0.3.0",
            CUT.replace("## [0.3.0] - 2026-12-06", "- A release under way."),
            "v0.3.0",
            ["CHANGELOG.md's newest release heading is 0.2.0, not '## [0.3.0] - <date>'"],
        ),
        (
            "0.3.0",
            CUT.replace("## [Unreleased]\n", ""),
            "v0.3.0",
            ["CHANGELOG.md has no '## [Unreleased]' heading above the release"],
        ),
        (
            "0.3.0",
            CUT.replace("[0.3.0]: ", "[0.3]: "),
            "v0.3.0",
            [f"CHANGELOG.md has no link reference '[0.3.0]: {REPOSITORY}/...'"],
        ),
    ],
)
def test_a_tag_is_released_only_when_the_checkout_describes_it(
    tmp_path: Path, version: str, changelog: str, tag: str, said: list[str]
) -> None:
    done = check_release(release_tree(tmp_path, version, changelog), tag)
    assert done.stderr.splitlines() == [f"check_release: {line}" for line in said]
    assert done.returncode == (1 if said else 0)


def test_this_checkout_is_released_by_its_own_tag_only_once_cut() -> None:
    """The checkout as it stands: its tag passes once CHANGELOG.md has the heading; before the
    cut, the check names what is missing (and nothing else)."""
    done = check_release(REPO, f"v{__version__}")
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    if RELEASE_HEADING.findall(changelog)[0][0] == __version__:
        assert (done.returncode, done.stderr) == (0, "")
    else:
        assert done.returncode == 1
        assert "newest release heading is" in done.stderr
        assert f"not '## [{__version__}] - <date>'" in done.stderr


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


def test_the_release_files_pass_twine_check_strict(built: dict[str, Path]) -> None:
    """What ``make dist`` and the release workflow check before anything is published: the
    metadata PyPI requires, and a README that renders."""
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(built["sdist"]), str(built["wheel"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


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
