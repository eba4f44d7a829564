"""The package's floors (docs/development.md, "Layout"): every import goes to its own floor or one
below, never up. Read from the source with ``ast``, so imports inside functions count too; those
under ``if TYPE_CHECKING:`` do not (they never run)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from support.helpers import REPO

PACKAGE = "airflow_provider_coremodels"

#: The packages whose parts stand on floors of their own (``core.reading``, ``jobs.export``): a module of
#: such a package is placed by its first two names, the package's own ``__init__`` by its name.
SPLIT = ("core", "integrations", "jobs")

#: Bottom to top: what each floor holds (a top-level module, or a package with all it holds).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors", "defaults", "compat", "redaction"),  # the shared plumbing
    ("integrations", "jobs"),  # (their ``__init__``: a docstring each)
    # the pure core, one floor per stage of its pipeline (artifacts -> estate model -> findings ->
    # renderings); ``core`` itself, the package's names loaded on first use, stands above its stages
    ("core.estate",),  # the model every stage shares, the finding catalogue, safe text
    ("core.reading",),  # artifacts -> estate
    ("core.checks",),  # estate -> findings
    ("core.snapshots",),  # estate + findings -> the snapshot document, and stored ones read back
    ("core.views",),  # document -> renderings
    ("core.comparing",),  # two documents -> what changed (worded with the views' helpers)
    ("core",),
    ("io",),  # atomic writes, HTTP out, bounded reads in: above the core, below the rest
    ("capture", "integrations.openlineage"),  # the integrations, each talking to one outside system ...
    ("sinks",),  # (the OpenLineage sink sends the events openlineage.py makes)
    ("hooks", "jobs.alerts"),  # (the connection hooks test captures and open sinks)
    ("jobs.export", "integrations.assistant", "jobs.premerge"),  # the jobs
    ("jobs.federation",),  # (the merge runs exports)
    # the front doors
    ("cli", "__main__", "operators", "ui", "integrations.mcp_server", "get_provider_info"),
)
SPLIT_PACKAGES = {f"{PACKAGE}.{split}" for split in SPLIT}
FLOOR = {part: level for level, parts in enumerate(FLOORS) for part in parts}


def part_of(module: str) -> str:
    """``airflow_provider_coremodels.capture.crawl`` -> ``capture``; the package itself -> ``__init__``;
    ``airflow_provider_coremodels.core.reading.parse`` -> ``core.reading`` (a package in ``SPLIT``)."""
    rest = module.split(".")[1:]
    if not rest:
        return "__init__"
    two = ".".join(rest[:2])
    return two if rest[0] in SPLIT and two in FLOOR else rest[0]


def module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(tree: ast.AST) -> Iterator[str]:
    """Every module of the package ``tree`` imports, at run time (not under ``TYPE_CHECKING``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (name for child in node.orelse for name in imports(ast.Module([child], [])))
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == PACKAGE:  # from airflow_provider_coremodels import defaults, __version__
                yield from (f"{PACKAGE}.{a.name}" if a.name in FLOOR else PACKAGE for a in node.names)
            elif node.module in SPLIT_PACKAGES:  # from airflow_provider_coremodels.jobs import export
                yield from (f"{node.module}.{a.name}" for a in node.names)
            elif node.module.startswith(PACKAGE + "."):
                yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith(PACKAGE + "."))
        else:
            yield from imports(node)


def arrows() -> Iterator[tuple[str, str]]:
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        module = module_of(path)
        for imported in imports(ast.parse(path.read_text(), str(path))):
            yield module, imported


def test_every_part_of_the_package_has_a_floor() -> None:
    parts = {path.stem for path in (REPO / PACKAGE).glob("*.py")}
    parts |= {path.parent.name for path in (REPO / PACKAGE).glob("*/__init__.py")}
    for split in SPLIT:
        parts |= {f"{split}.{path.stem}" for path in (REPO / PACKAGE / split).glob("*.py")} - {
            f"{split}.__init__"
        }
        parts |= {f"{split}.{path.parent.name}" for path in (REPO / PACKAGE / split).glob("*/__init__.py")}
    placed = set(FLOOR)
    assert parts - placed == set(), "a new module: give it a floor here and in docs/development.md"
    assert placed - parts == set(), "a floor names a module that is gone"


def test_no_import_runs_up_a_floor() -> None:
    found = list(arrows())
    assert len(found) > 200  # the scan reads the package's imports (it would pass on none)
    up = sorted(
        f"{module} imports {imported} (floor {FLOOR[part_of(module)]} -> {FLOOR[part_of(imported)]})"
        for module, imported in found
        if FLOOR[part_of(imported)] > FLOOR[part_of(module)]
    )
    assert up == []


def test_the_scan_sees_imports_inside_functions_and_skips_type_checking_ones() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from airflow_provider_coremodels.jobs.export import ExportResult\n"
        "else:\n    import airflow_provider_coremodels.sinks.base\n"
        "def f():\n    from airflow_provider_coremodels import cli\n"
        "from airflow_provider_coremodels.jobs import export\n"
    )
    assert list(imports(tree)) == [f"{PACKAGE}.sinks.base", f"{PACKAGE}.cli", f"{PACKAGE}.jobs.export"]
    assert part_of(f"{PACKAGE}.jobs.export") == "jobs.export"
    assert part_of(f"{PACKAGE}.core.reading.parse") == "core.reading"
    assert part_of(f"{PACKAGE}.core.audit") == "core"  # (from ...core import audit: the function)
