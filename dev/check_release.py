"""Refuse a release tag the checkout does not describe (the release workflow's first step).

    python dev/check_release.py v0.3.0 [--root DIR]

The tag must be ``v`` + the package's ``__version__``; CHANGELOG.md must give that version as its
newest release heading (``## [0.3.0] - 2026-12-06``, Keep a Changelog) under an ``## [Unreleased]``
heading, and the link reference ``[0.3.0]: ...`` at its end. Between releases the checkout may
already carry the next ``__version__`` while its entries are still under Unreleased (the
packaging tests allow it); a tag is the moment that must not happen. Exit 0, or 1 with one line
per problem.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPOSITORY = "https://github.com/coremodels/airflow-provider-coremodels"
RELEASE_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+(?:[-.+]\w+)*)\] - (\d{4}-\d{2}-\d{2})\s*$", re.M)


def package_version(root: Path) -> str:
    text = (root / "airflow_provider_coremodels" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    if not found:
        raise SystemExit("check_release: no __version__ in airflow_provider_coremodels/__init__.py")
    return found.group(1)


def problems(tag: str, version: str, changelog: str) -> list[str]:
    """What stops ``tag`` being released from a checkout at ``version`` with this changelog."""
    tag = tag.removeprefix("refs/tags/")
    said = []
    if tag != f"v{version}":
        said.append(f"the tag {tag} is not v + the package's version ({version})")
    releases = RELEASE_HEADING.findall(changelog)
    if not releases or releases[0][0] != version:
        newest = releases[0][0] if releases else "none"
        said.append(f"CHANGELOG.md's newest release heading is {newest}, not '## [{version}] - <date>'")
    unreleased = changelog.find("## [Unreleased]")
    if unreleased < 0 or (releases and unreleased > changelog.find(f"## [{releases[0][0]}]")):
        said.append("CHANGELOG.md has no '## [Unreleased]' heading above the release")
    if not re.search(rf"^\[{re.escape(version)}\]: {re.escape(REPOSITORY)}/", changelog, re.M):
        said.append(f"CHANGELOG.md has no link reference '[{version}]: {REPOSITORY}/...'")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    changelog = (args.root / "CHANGELOG.md").read_text(encoding="utf-8")
    said = problems(args.tag, package_version(args.root), changelog)
    for line in said:
        print(f"check_release: {line}", file=sys.stderr)
    return 1 if said else 0


if __name__ == "__main__":
    sys.exit(main())
