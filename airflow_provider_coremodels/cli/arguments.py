"""Every command and argument, declared once.

Both front doors are built from these specs: ``definition.py`` turns them into Airflow's
``Arg``/``ActionCommand`` objects for ``airflow coremodels``, and ``main.py`` into a plain
argparse parser for ``python -m airflow_provider_coremodels``. Same flags, same output.
This module imports nothing heavy: Airflow reads it whenever its CLI starts.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("table", "json")
FAIL_ON = ("never", "info", "warning", "error")


@dataclass(frozen=True)
class ArgSpec:
    flags: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CommandSpec:
    name: str
    help: str
    func: str  # "module:function", imported only when the command runs
    args: tuple[ArgSpec, ...]
    description: str | None = None


def _positive_int(value: str) -> int:
    number = int(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {value}")
    return number


FORMAT = ArgSpec(
    ("--format",),
    {"choices": FORMATS, "default": "table", "help": "output format (default: table)"},
)
FAIL_ON_ARG = ArgSpec(
    ("--fail-on",),
    {
        "choices": FAIL_ON,
        "default": "never",
        "help": "exit 1 when a finding at or above this severity remains (default: never)",
    },
)
MAX_SNAPSHOT_BYTES = ArgSpec(
    ("--max-snapshot-bytes",),
    {
        "type": _positive_int,
        "default": 1_500_000,
        "metavar": "N",
        "help": "snapshot cap: a larger document is stored without datasets and lineage (default: 1500000)",
    },
)
BASELINE = ArgSpec(
    ("--baseline",),
    {"metavar": "S", "help": "a previous snapshot document to report coverage and drift against"},
)

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name="audit",
        help="Audit an estate offline, from artifact files or a stored snapshot",
        description=(
            "Parse the dags, tasks and datasets artifacts (or re-read a stored snapshot document), "
            "run the audit rules and print the findings and the snapshot document."
        ),
        func="airflow_provider_coremodels.cli.commands:audit",
        args=(
            ArgSpec(("--dags",), {"metavar": "F", "help": "the dags artifact (required unless --snapshot)"}),
            ArgSpec(("--tasks",), {"metavar": "F", "help": "the tasks artifact"}),
            ArgSpec(("--datasets",), {"metavar": "F", "help": "the datasets (assets) artifact"}),
            ArgSpec(("--snapshot",), {"metavar": "S", "help": "re-audit this stored snapshot document"}),
            BASELINE,
            FORMAT,
            FAIL_ON_ARG,
            MAX_SNAPSHOT_BYTES,
        ),
    ),
    CommandSpec(
        name="generate",
        help="Refused: the airflow connector does not generate code",
        description="Generation is not a capability of the airflow connector; this command always exits 2.",
        func="airflow_provider_coremodels.cli.commands:generate",
        args=(ArgSpec(("request",), {"nargs": argparse.REMAINDER, "help": "ignored"}),),
    ),
)
