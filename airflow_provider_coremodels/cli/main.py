"""``python -m airflow_provider_coremodels``: the CLI without Airflow's start-up cost.

Both front doors end in :func:`run`, which turns the provider's errors into one line on
stderr and the exit codes of the contract: 0 done, 1 findings at or above ``--fail-on``,
2 unusable input or usage, 3 capture or sink failure.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.cli.arguments import COMMANDS, CommandSpec
from airflow_provider_coremodels.errors import CoreModelsError

EXIT_USAGE = 2
PROG = "python -m airflow_provider_coremodels"


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {self.prog}: {message} (see --help)\n")


def resolve(spec: CommandSpec) -> Callable[[argparse.Namespace], int]:
    module, _, name = spec.func.partition(":")
    func: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
    return func


#: Commands that talk to a deployment or a sink: an unforeseen failure there is exit 3, else 2.
_REMOTE = ("capture", "export")


def run(spec: CommandSpec, args: argparse.Namespace) -> int:
    """Run one command and map every failure to an exit code and one stderr line.

    The provider's own errors carry their exit code. Anything else is a failure nobody
    foresaw (a bug, or an input that found one): it still ends as one line and exit 2 or 3,
    never a traceback, since exit 1 means findings and CI reads it so. Every line is scrubbed
    of the secrets the run knows, and of control characters.
    """
    try:
        return resolve(spec)(args)
    except CoreModelsError as exc:
        _fail(f"{exc.cli_prefix}{exc}")
        return exc.exit_code
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except (Exception, RecursionError) as exc:
        _fail(f"error: unexpected {type(exc).__name__} in {spec.name}: {str(exc)[:500]}")
        return 3 if spec.name in _REMOTE else EXIT_USAGE


def _fail(line: str) -> None:
    from airflow_provider_coremodels.core.estate.text import printable
    from airflow_provider_coremodels.redaction import scrub

    sys.stderr.write(printable(scrub(line)) + "\n")


def _spec(name: str) -> CommandSpec:
    return next(spec for spec in COMMANDS if spec.name == name)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="CoreModels: capture, audit and export an Airflow estate.")
    parser.add_argument("--version", action="version", version=f"airflow-provider-coremodels {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    for spec in COMMANDS:
        sub = commands.add_parser(spec.name, help=spec.help, description=spec.description or spec.help)
        for arg in spec.args:
            sub.add_argument(*arg.flags, **arg.kwargs)
        sub.set_defaults(spec=spec)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["generate"]:
        # The capability gate comes before everything, argument parsing included: any
        # generation request, whatever its options, gets the same refusal.
        return run(_spec("generate"), argparse.Namespace())
    args = build_parser().parse_args(argv)
    try:
        return run(args.spec, args)
    except BrokenPipeError:  # e.g. piped into `head`: not an error worth a traceback
        sys.stderr.close()
        return 0
