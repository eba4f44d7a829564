from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

# Before anything imports airflow: a throw-away AIRFLOW_HOME, so the tests never read or
# write the developer's own ~/airflow, and no example DAGs.
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="coremodels-tests-airflow-")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"

from support.helpers import FIXTURES

# pytest keeps a test module's assertion rewriting as bytecode beside it only where bytecode may be
# written: where PYTHONDONTWRITEBYTECODE is set (as in some CI images), each of make test's workers
# rewrote every module again at collection, 6 of its 15 s of CPU there. The test modules' bytecode is
# written (to their __pycache__, ignored by git); the processes the tests start keep the setting.
sys.dont_write_bytecode = False


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


#: Each module's seconds (its tests' set-up, calls and tear-down) in a measured run of the whole suite,
#: written by ``pytest --record-durations``. Only the order of the modules comes from it.
DURATIONS = Path(__file__).with_name("durations.json")
#: What a module missing from DURATIONS (a new one) is taken to cost.
UNKNOWN_SECONDS = 5.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each module's measured seconds to {DURATIONS.name}, which orders the modules",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``airflow_server`` every test that asks, directly or through its fixtures, for a real
    Airflow API server, and ``browser`` every test that drives Chromium: ``make test-fast`` runs
    the others. A module that starts a server of its own says so with ``pytestmark``.

    Then the modules are ordered longest first (as DURATIONS measured them; a module's own tests keep
    their order). ``make test`` hands whole modules to its workers in this order
    (``--dist loadfile --no-loadscope-reorder``): the longest start first and the short ones fill in
    around them, where a long module handed out last would keep one worker busy while the others
    wait."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & SERVER_FIXTURES:
            item.add_marker(pytest.mark.airflow_server)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
    try:
        seconds = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(_module(item.nodeid), index)
    position = {id(item): index for index, item in enumerate(items)}
    items.sort(
        key=lambda item: (
            -float(seconds.get(_module(item.nodeid), UNKNOWN_SECONDS)),
            first[_module(item.nodeid)],
            position[id(item)],
        )
    )


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


_measured: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[_module(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("record_durations") or hasattr(config, "workerinput") or not _measured:
        return  # a worker's reports reach the controller, which writes the file once
    ordered = dict(sorted(((module, round(total, 1)) for module, total in _measured.items())))
    DURATIONS.write_text(json.dumps(ordered, indent=0) + "\n", encoding="utf-8")
