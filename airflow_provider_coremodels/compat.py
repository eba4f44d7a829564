"""Airflow names whose home moved between the Airflow releases the provider supports (3.0+).

The one place for version-dependent imports: the hooks, the operator and the CLI take these
names from here. Each is tried at its newest home first, so the day an old path disappears
nothing changes, and the fallback can simply be deleted once that release is no longer supported.
"""

from __future__ import annotations

import logging
import sys

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

__all__ = ["AirflowException", "BaseHook", "stdout_logs_to_stderr"]


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
