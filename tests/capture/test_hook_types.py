"""Which hook class reads a connection: chosen by the connection's type, without the base hook
knowing its subclasses (``AirflowApiHook.by_conn_type``, filled as each class is defined, and
provider info's ``connection-types`` for a class not imported yet); and no import cycle among
the package's modules, which the base hook importing its own subclasses made."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.helpers import REPO

from airflow_provider_coremodels.capture import ApiSource
from airflow_provider_coremodels.get_provider_info import get_provider_info
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook
from airflow_provider_coremodels.hooks.composer import ComposerApiHook
from airflow_provider_coremodels.hooks.mwaa import MwaaApiHook

PACKAGE = REPO / "airflow_provider_coremodels"


@pytest.mark.parametrize(
    ("conn_type", "hook"),
    [
        ("airflow_api", AirflowApiHook),
        ("airflow_api_mwaa", MwaaApiHook),
        ("airflow_api_composer", ComposerApiHook),
        # not a capture type: read as airflow_api, as before (the connection's fields decide)
        ("coremodels", AirflowApiHook),
        ("http", AirflowApiHook),
        ("", AirflowApiHook),
        (None, AirflowApiHook),
    ],
)
def test_the_connection_type_picks_the_hook_class(conn_type: str | None, hook: type) -> None:
    assert AirflowApiHook.for_conn_type(conn_type) is hook


def test_every_capture_type_provider_info_registers_is_read_by_its_own_hook() -> None:
    capture_types = {
        entry["connection-type"]: entry["hook-class-name"]
        for entry in get_provider_info()["connection-types"]
        if entry["connection-type"].startswith("airflow_api")
    }
    assert len(capture_types) == 3
    for conn_type, class_name in capture_types.items():
        hook = AirflowApiHook.for_conn_type(conn_type)
        assert f"{hook.__module__}.{hook.__qualname__}" == class_name
        assert hook.conn_type == conn_type


def fresh_python(code: str, **env: str) -> dict[str, Any]:
    """Run ``code`` in a new interpreter (no hook module imported yet); it prints a JSON answer."""
    import os

    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return answer


def test_the_base_hook_imports_no_subclass_until_a_connection_of_its_type_is_read() -> None:
    """In a fresh interpreter: importing the base hook imports neither managed hook; reading an
    ``airflow_api_mwaa`` connection through it imports the MWAA hook alone (from provider info)
    and builds an MWAA source (here it stops at the missing region: the MWAA hook's own check)."""
    answer = fresh_python(
        """
import json, sys
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook
from airflow_provider_coremodels.errors import ConnectionConfigError
hooks = "airflow_provider_coremodels.hooks."
before = sorted(m for m in sys.modules if m.startswith(hooks))
try:
    AirflowApiHook("mwaa_prod").get_source()
    said = None
except ConnectionConfigError as exc:
    said = str(exc)
after = sorted(m for m in sys.modules if m.startswith(hooks))
print(json.dumps({"before": before, "after": after, "said": said}))
""",
        AIRFLOW_CONN_MWAA_PROD=json.dumps(
            {"conn_type": "airflow_api_mwaa", "host": "prod", "extra": {"aws_conn_id": ""}}
        ),
        AWS_CONFIG_FILE="/nonexistent",
        AWS_DEFAULT_REGION="",
        AWS_REGION="",
    )
    managed = {"airflow_provider_coremodels.hooks.mwaa", "airflow_provider_coremodels.hooks.composer"}
    assert not managed & set(answer["before"])
    assert set(answer["after"]) - set(answer["before"]) == {"airflow_provider_coremodels.hooks.mwaa"}
    assert answer["said"].startswith("connection 'mwaa_prod': no AWS region for MWAA environment 'prod'")


def test_a_subclass_with_a_type_of_its_own_joins_and_one_without_does_not(monkeypatch) -> None:
    monkeypatch.setattr(AirflowApiHook, "by_conn_type", dict(AirflowApiHook.by_conn_type))

    class Quiet(MwaaApiHook):  # keeps MWAA's type: MWAA connections stay MwaaApiHook's
        pass

    class Lab(AirflowApiHook):
        conn_type = "airflow_api_lab"

        @classmethod
        def source_from(cls, conn: Any, conn_id: str) -> ApiSource:
            return ApiSource(f"https://{conn.host}.lab.example", token="lab")

    assert AirflowApiHook.for_conn_type("airflow_api_mwaa") is MwaaApiHook
    assert AirflowApiHook.for_conn_type("airflow_api_lab") is Lab
    monkeypatch.setenv("AIRFLOW_CONN_LAB", json.dumps({"conn_type": "airflow_api_lab", "host": "one"}))
    assert AirflowApiHook("lab").get_source().base_url == "https://one.lab.example"
    assert Quiet.conn_type == "airflow_api_mwaa"


# -- no import cycle ------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_at_load(path: Path, name: str) -> set[str]:
    """The package's modules ``path`` imports when it is loaded: its top-level statements (and
    those in top-level ``if``/``try`` blocks), not imports inside functions or under
    ``TYPE_CHECKING``, which run later or never."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.split(".")
                    if path.name != "__init__.py":
                        package = package[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, *([base] if base else [])])
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {
            target for target in imports_at_load(path, name) if target in modules and target != name
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected set of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def test_the_cycle_finder_sees_the_old_hook_cycle() -> None:
    """The base hook importing its subclasses (as it did, inside get_source, then at the top)
    and each subclass importing it: a cycle the finder names."""
    graph = import_graph()
    hooks = "airflow_provider_coremodels.hooks."
    graph[f"{hooks}airflow_api"] = graph[f"{hooks}airflow_api"] | {f"{hooks}mwaa"}
    assert [f"{hooks}airflow_api", f"{hooks}mwaa"] in cycles(graph)


def test_no_module_of_the_package_imports_itself_round_a_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 80
    assert "airflow_provider_coremodels.hooks.airflow_api" in graph["airflow_provider_coremodels.hooks.mwaa"]
    assert cycles(graph) == []


def test_the_base_hook_names_no_subclass_even_lazily() -> None:
    source = (PACKAGE / "hooks" / "airflow_api.py").read_text(encoding="utf-8")
    code = ast.unparse(ast.parse(source))  # without comments and docstrings' line breaks
    tree = ast.parse(code)
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {m for m in imported if m.endswith(("hooks.mwaa", "hooks.composer"))}
    assert "MwaaApiHook" not in code and "ComposerApiHook" not in code
