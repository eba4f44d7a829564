from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Before anything imports airflow: a throw-away AIRFLOW_HOME, so the tests never read or
# write the developer's own ~/airflow, and no example DAGs.
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="coremodels-tests-airflow-")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"

from helpers import FIXTURES


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
