from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Before anything imports airflow: a throw-away AIRFLOW_HOME, so the tests never read or
# write the developer's own ~/airflow, and no example DAGs.
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="coremodels-tests-airflow-")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"

from support.helpers import FIXTURES


@pytest.fixture(autouse=True)
def _forget_secrets():
    """The registry of secrets to scrub is process-wide, as Airflow's masker is: a test's
    passwords ("nope") must not scrub the next test's messages."""
    yield
    from airflow_provider_coremodels.redaction import SECRETS

    SECRETS.clear()


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def airflow_server():
    """A real API server of the installed Airflow on 127.0.0.1 serving example_dags/estate, started once
    per session."""
    from support.airflow_server import AirflowApiServer
    from support.helpers import REPO

    with AirflowApiServer(REPO / "example_dags" / "estate") as server:
        yield server


@pytest.fixture(scope="session")
def assets_server():
    """A real API server of the installed Airflow serving example_dags/assets, Airflow 3's asset constructs.

    The alias producer runs once (so the alias resolves) and the scheduler's asset pass runs once
    (so Airflow writes its asset-conflict warnings), as on a deployment whose scheduler runs.
    """
    from support.airflow_server import AirflowApiServer
    from support.helpers import REPO

    with AirflowApiServer(
        REPO / "example_dags" / "assets", run_dags=("exports_producer",), scheduler_pass=True
    ) as server:
        yield server


#: The fixtures that start a real Airflow API server (directly, or through the fixtures that use them).
SERVER_FIXTURES = frozenset({"airflow_server", "assets_server"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``airflow_server`` every test that asks, directly or through its fixtures, for a real
    Airflow API server, and ``browser`` every test that drives Chromium: ``make test-fast`` runs
    the others. A module that starts a server of its own says so with ``pytestmark``."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SERVER_FIXTURES:
            item.add_marker(pytest.mark.airflow_server)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
