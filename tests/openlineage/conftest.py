"""Fixtures of the OpenLineage tests: a clean client environment and a real local receiver.

No ``__init__.py`` here, on purpose: ``tests/`` is on ``sys.path`` and ``openlineage`` is a namespace
package, so a regular package ``tests/openlineage`` would shadow the real client.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.openlineage_kit import Receiver


@pytest.fixture(autouse=True)
def _clean_openlineage_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No OpenLineage configuration leaks in from the developer's machine (``~/.openlineage``, an
    ``openlineage.yml`` in the working directory, ``OPENLINEAGE_*`` variables), and none leaks out:
    the client itself writes ``OPENLINEAGE__TRANSPORT__*`` variables when it reads ``OPENLINEAGE_URL``."""
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.startswith(("OPENLINEAGE", "AIRFLOW__OPENLINEAGE__")):
            del os.environ[key]
    os.environ["HOME"] = str(tmp_path / "home")
    monkeypatch.chdir(tmp_path)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server
