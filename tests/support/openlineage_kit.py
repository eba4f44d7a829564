"""The parts the OpenLineage tests share: a real local receiver, the command line in a process of its
own, and the pinned OpenLineage JSON schemas (tests/fixtures/openlineage) to validate events with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

from support import cli_forks
from support.helpers import FIXTURES
from support.local_http import BackgroundHTTPServer, RequestHandler

#: The OpenLineage spec (OpenLineage.json) and the facet schemas the events use, pinned.
SCHEMAS = FIXTURES / "openlineage"
API_KEY = "ol-api-key-7c1d9e2b"


class _Answer(RequestHandler):
    owner: Receiver

    def answer(self, body: bytes) -> None:
        self.send_response(self.owner.status)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Receiver(BackgroundHTTPServer):
    """An OpenLineage HTTP endpoint on 127.0.0.1 that keeps every event POSTed to it.

    ``status`` is what it answers (200 by default; 500 to refuse).
    """

    handler_class = _Answer
    description = "the OpenLineage receiver"
    thread_name = "openlineage-receiver"

    def __init__(self, status: int = 200) -> None:
        super().__init__()
        self.status = status

    @property
    def bodies(self) -> list[str]:
        return [r.body.decode() for r in self.received if r.path == "/api/v1/lineage"]

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for body in self.bodies]


def http_transport(url: str, **extra: str) -> dict[str, str]:
    """The client's own environment configuration of its HTTP transport (no retries: tests are quick)."""
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "http",
        "OPENLINEAGE__TRANSPORT__URL": url,
        "OPENLINEAGE__TRANSPORT__AUTH": json.dumps({"type": "api_key", "apiKey": API_KEY}),
        "OPENLINEAGE__TRANSPORT__RETRY": json.dumps({"total": 1, "backoff_factor": 0}),
        **extra,
    }


#: The command line, as ``python -m airflow_provider_coremodels`` runs it, but with a first
#: statement: ``MISSING`` (a module name) is made unimportable, as if its package were not installed.
_RUN = """
import os, sys
if os.environ.get("MISSING"):
    sys.modules[os.environ["MISSING"]] = None  # simulated: `import <it>` raises ImportError
from airflow_provider_coremodels.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def cli(
    *argv: str, env: dict[str, str] | None = None, timeout: float = 180, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the command line in a process of its own (its own logging), in the cwd: forked from one
    that imported the OpenLineage sink (``support.cli_forks``), or started afresh (its own imports)
    where ``fresh`` says so or ``MISSING`` hides a package."""
    run_env = {**os.environ, **(env or {})}
    if not fresh and not run_env.get("MISSING"):
        return cli_forks.run(*argv, env=run_env, timeout=timeout)
    return subprocess.run(
        [sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, env=run_env, timeout=timeout
    )


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# -- the pinned schemas ---------------------------------------------------------------------------


def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMAS.rglob("*.json")):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


REGISTRY = _registry()
FORMATS = FormatChecker()  # uuid is built in; date-time and uri need packages not installed here


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if "T" not in value.upper() or not (value.endswith("Z") or "+" in value[10:] or "-" in value[10:]):
        raise ValueError(f"not an RFC 3339 date-time: {value}")
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


@FORMATS.checks("uri")
def _uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlsplit(value).scheme)


def schema_errors(document: dict[str, Any], schema_url: str) -> list[str]:
    """Every error of ``document`` against the pinned schema at ``schema_url`` (an ``$id`` and a
    JSON pointer, as events and facets name theirs)."""
    validator = Draft202012Validator({"$ref": schema_url}, registry=REGISTRY, format_checker=FORMATS)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def facets_of(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every facet of an event, named by where it is: job, run and each dataset's."""
    found = [(f"job.{k}", v) for k, v in (event["job"].get("facets") or {}).items()]
    found += [(f"run.{k}", v) for k, v in ((event.get("run") or {}).get("facets") or {}).items()]
    for side in ("inputs", "outputs"):
        for dataset in event.get(side) or ():
            for group in ("facets", "inputFacets", "outputFacets"):
                found += [(f"{side}.{dataset['name']}.{k}", v) for k, v in (dataset.get(group) or {}).items()]
    return found


def event_errors(event: dict[str, Any]) -> list[str]:
    """The event against the spec, and each facet against its own schema."""
    errors = schema_errors(event, event["schemaURL"])
    for where, facet in facets_of(event):
        errors += [f"{where}: {e}" for e in schema_errors(facet, facet["_schemaURL"])]
    return errors
