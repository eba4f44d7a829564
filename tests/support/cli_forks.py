"""The command line as users run it, ``python -m airflow_provider_coremodels``, forked from a process
that has imported what its OpenLineage sink imports.

A run that pushes to OpenLineage, or prints OpenLineage events, imports Airflow's OpenLineage
provider and Airflow with it: 3 of its 3.5 s of CPU, paid again by each of the OpenLineage tests'
runs before the push they are about. So those runs are forked, as ``airflow_forks`` forks Airflow's
commands: a server per environment imports the command line and the sink once, and each run is a
child of it with its own environment, working directory, output and exit code, whose exit handlers
run as the interpreter's exit runs them.

What a run's environment may set differently from its server's (``PER_RUN``): where the events
go, which the client and the provider read when the sink builds its client, the variables the tests
pass a password or a measurement in, ``HOME`` (each OpenLineage test has its own), and pytest's own.
``tests/openlineage/test_openlineage_sink.py`` holds a forked run to one started afresh, for each
way of saying where events go and in which namespace. A run that must start afresh (one that hides
a package it would import) does not come here.
"""

from __future__ import annotations

import os
import subprocess
import sys

from support import airflow_forks
from support.airflow_forks import KeptServers

#: What a run's environment may set differently from its server's, by prefix.
PER_RUN = (
    *airflow_forks.PER_RUN,
    # where the events go: the client's settings, read when the sink builds its client
    "OPENLINEAGE__",  # OPENLINEAGE__TRANSPORT__*
    "OPENLINEAGE_URL",
    "OPENLINEAGE_API_KEY",
    "OPENLINEAGE_ENDPOINT",
    "OPENLINEAGE_CONFIG",
    "OPENLINEAGE_DISABLED",
    "AIRFLOW__OPENLINEAGE__TRANSPORT",  # the provider's [openlineage] transport, read when asked for
    "AF_PASSWORD",  # the tests' --password-env variable
    "PEAK_RSS_FILE",  # support.measured's
    "HOME",  # each OpenLineage test's own (the client looks for ~/.openlineage when it is built)
    "PYTEST_",  # PYTEST_CURRENT_TEST changes with every test
)
#: Not among them: the namespace (``[openlineage] namespace``, ``OPENLINEAGE_NAMESPACE``). The
#: provider reads it when it is imported (the default of one of its functions' arguments) and caches
#: it, as it caches all its settings, except where ``PYTEST_VERSION`` is set: a fresh run started by
#: a test inherits that variable, but the server is started without it, as a deployment's processes
#: are. A run in another namespace gets a server of its own.

#: Servers kept at once: a module's environment, and a variant a test makes.
KEPT = 2

#: ``python -m airflow_provider_coremodels``, as a forked run's code (its argv follows).
RUN_MODULE = """
import runpy
runpy.run_module("airflow_provider_coremodels", run_name="__main__", alter_sys=True)
"""

_servers = KeptServers(warm=("openlineage",), kept=KEPT, per_run=PER_RUN)


def run(
    *argv: str, env: dict[str, str], timeout: float, code: str = RUN_MODULE, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -c code argv...`` (by default, ``python -m airflow_provider_coremodels argv...``),
    forked: its exit code and output, as ``subprocess.run(..., capture_output=True, text=True)``
    gives them; ``subprocess.TimeoutExpired`` past ``timeout``."""
    args = [sys.executable, "-c", code, *argv]
    return _servers.server(env).run(
        {"python": code, "argv": list(argv), "exit_handlers": True},
        env=env,
        timeout=timeout,
        args=args,
        cwd=cwd or os.getcwd(),
    )
