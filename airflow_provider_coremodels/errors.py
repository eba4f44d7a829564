"""The provider's errors: one small hierarchy, each message naming what went wrong."""

from __future__ import annotations

from typing import Any

GENERATION_REFUSED = "Connector 'airflow' does not support generation."


class CoreModelsError(Exception):
    """Base class for every error this provider raises."""

    #: The command-line exit code: 2 for unusable input or usage, 3 for capture or sink failures.
    exit_code = 2
    #: What the command line prints before the message on stderr.
    cli_prefix = "error: "


class UsageError(CoreModelsError):
    """The command was called with arguments that do not fit together."""


class InputError(CoreModelsError):
    """An input the command cannot use; the message names the input, where it came from, and why."""

    what = "input"

    def __init__(self, problem: str, source: str | None = None) -> None:
        self.problem = problem
        self.source = source
        super().__init__(" ".join(part for part in (self.what, source, problem) if part))

    def with_source(self, source: str) -> InputError:
        """The same problem, naming where the input came from (a path, a URL)."""
        return type(self)(self.problem, source)


class DagsArtifactError(InputError):
    """The dags artifact is unusable: the one hard failure of a parse."""

    what = "dags artifact"


class SnapshotDocumentError(InputError):
    """A snapshot document (``--snapshot`` or ``--baseline``) cannot be read back."""

    what = "snapshot document"


class WaiverFileError(InputError):
    """A waiver file (``--waivers``, the operator's ``waivers``) is malformed: refused whole."""

    what = "waiver file"


class RulesFileError(InputError):
    """A rules file (``--rules``, the operators' ``rules``) is malformed: refused whole, before a capture."""

    what = "rules file"


class CapabilityError(CoreModelsError):
    """The connector was asked for something its capabilities refuse."""

    cli_prefix = ""  # the refusal is printed exactly as worded, with nothing before it


class GenerationNotSupportedError(CapabilityError):
    """Generation was requested; the airflow connector only imports and audits."""

    def __init__(self) -> None:
        super().__init__(GENERATION_REFUSED)


class CaptureError(CoreModelsError):
    """The deployment's REST API could not be read: unreachable, refused, or retries exhausted."""

    exit_code = 3


class AuthError(CaptureError):
    """The REST API refused our credentials (401 after a renewed token) or our permissions (403)."""


class ConnectionConfigError(CoreModelsError):
    """An Airflow connection is missing or misconfigured (no host, a bad extra)."""


class SinkError(CoreModelsError):
    """A snapshot could not be pushed to a sink: unwritable, unreachable, refused, retries exhausted."""

    exit_code = 3


class SinksFailed(SinkError):
    """Some sinks could not be written, after every sink was tried: ``result`` is the export's (or
    the merge's) result, ``errors`` one message per failed sink. With one failure the message is
    that sink's own."""

    def __init__(self, result: Any, errors: list[str]) -> None:
        self.result = result
        self.errors = errors
        message = (
            errors[0]
            if len(errors) == 1
            else f"{len(errors)} sinks could not be written: " + "; ".join(errors)
        )
        super().__init__(message)
