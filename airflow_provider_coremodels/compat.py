"""Airflow names whose home moved between the Airflow releases the provider supports (3.0+).

The one place for version-dependent imports: the hooks, the operator and the CLI take these
names from here. Each is tried at its newest home first, so the day an old path disappears
nothing changes, and the fallback can simply be deleted once that release is no longer supported.
"""

from __future__ import annotations

import inspect
import logging
import sys
from typing import Any

# BaseHook joined the Task SDK in Airflow 3.1 (``airflow.sdk.BaseHook``); 3.0 has only core's.
try:
    from airflow.sdk import BaseHook
except ImportError:  # Airflow 3.0
    from airflow.hooks.base import BaseHook  # type: ignore[attr-defined,no-redef]

# AirflowException is the Task SDK's own class from Airflow 3.2 (core re-exports it), and 3.1's
# ``airflow.sdk.exceptions`` re-exports core's; 3.0's has no such name.
try:
    from airflow.sdk.exceptions import AirflowException
except ImportError:  # Airflow 3.0
    from airflow.exceptions import AirflowException  # type: ignore[attr-defined]

__all__ = ["AirflowException", "BaseHook", "airflow_stats", "stdout_logs_to_stderr"]


def stdout_logs_to_stderr() -> None:
    """Send Airflow's console log handler to stderr, so stdout carries a command's output alone.

    Airflow 3.3.1 added a helper for its own CLI; on older releases the root logger's stdout
    handlers are replaced here. 3.0's handler reads ``sys.stdout`` at each write (its stream
    cannot be set), so it is swapped for a stderr one with the same level, format and filters
    (the filters hold the secrets masker).
    """
    try:
        from airflow.cli.utils import redirect_stdout_log_handlers_to_stderr
    except ImportError:  # Airflow 3.0 to 3.3.0
        pass
    else:
        redirect_stdout_log_handlers_to_stderr()
        return
    import airflow  # noqa: F401 - importing Airflow configures its logging: the handlers to move

    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            replacement = logging.StreamHandler(sys.stderr)
            replacement.setLevel(handler.level)
            replacement.setFormatter(handler.formatter)
            for log_filter in handler.filters:
                replacement.addFilter(log_filter)
            root.removeHandler(handler)
            root.addHandler(replacement)


def airflow_stats() -> Any:
    """Airflow's metrics client (``gauge``, ``incr``, ``timing``, each with ``tags``), sending to
    StatsD, DogStatsD or OpenTelemetry as ``[metrics]`` configures it; a no-op when metrics are off.

    Airflow 3.0 and 3.1 have ``airflow.stats.Stats``, configured on first use. From 3.2 it lives in
    the Task SDK (3.3 deprecates the old name), and is configured only where Airflow's own process
    entry points call ``initialize``: a task run by the task runner, the scheduler. Anywhere else
    (``airflow coremodels export``, ``dag.test()``) it is initialized here from the same
    configuration, once, so the metrics go where the deployment's other metrics go.
    """
    try:
        from airflow.sdk.observability.metrics import stats_utils
        from airflow.sdk.observability.stats import Stats
    except ImportError:  # Airflow 3.0, 3.1
        from airflow.stats import Stats

        return Stats
    module = sys.modules[Stats.__module__]
    if hasattr(module, "_factory"):  # 3.3+: module-level functions behind the class
        configured = module._factory is not None
    else:  # 3.2: the class holds its factory
        configured = type.__getattribute__(Stats, "factory") is not None
    if not configured:
        from airflow.configuration import conf

        make: Any = stats_utils.get_stats_factory  # 3.2 takes the class, 3.3 nothing
        factory = make(Stats) if inspect.signature(make).parameters else make()
        initialize: Any = Stats.initialize  # 3.3 also takes export_legacy_names
        if "export_legacy_names" in inspect.signature(initialize).parameters:
            legacy = conf.getboolean("metrics", "legacy_names_on", fallback=True)
            initialize(factory=factory, export_legacy_names=legacy)
        else:
            initialize(factory=factory)
    return Stats
