"""The ``airflow coremodels`` command group, registered through the provider's ``cli`` section.

Airflow imports this whenever its CLI starts, so it stays light: the specs are plain data,
and each command's implementation is imported only when that command runs. Only Airflow 3.2+
reads a provider's ``cli`` section; older releases ignore it and never import this module,
and ``python -m airflow_provider_coremodels`` is the same CLI there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_coremodels.cli.arguments import COMMANDS, CommandSpec

if TYPE_CHECKING:
    from airflow.cli.cli_config import CLICommand


def _airflow_func(spec: CommandSpec) -> Callable[[Any], None]:
    def command(args: Any) -> None:
        from airflow_provider_coremodels.cli.main import run

        logs_to_stderr()
        code = run(spec, args)
        sys.stdout.flush()
        if code:
            sys.exit(code)

    command.__name__ = spec.name
    return command


def logs_to_stderr() -> None:
    """Keep stdout for the command's output (a table, a JSON document): Airflow logs to stdout."""
    from airflow_provider_coremodels.compat import stdout_logs_to_stderr

    stdout_logs_to_stderr()


def get_coremodels_cli_commands() -> list[CLICommand]:
    """Return the ``coremodels`` group for Airflow's CLI."""
    from airflow.cli.cli_config import ActionCommand, Arg, GroupCommand

    return [
        GroupCommand(
            name="coremodels",
            help="CoreModels: capture, audit and export this Airflow estate",
            subcommands=[
                ActionCommand(
                    name=spec.name,
                    help=spec.help,
                    description=spec.description,
                    func=_airflow_func(spec),
                    args=[Arg(arg.flags, **arg.kwargs) for arg in spec.args],  # type: ignore[no-untyped-call]
                )
                for spec in COMMANDS
            ],
        )
    ]
