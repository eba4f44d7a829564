"""The OpenLineage sink: send the snapshot's declared estate as OpenLineage events.

``openlineage://`` means "the OpenLineage client, as configured": the configuration the
OpenLineage Airflow provider reads (``[openlineage] config_conn_id``, ``config_path`` or
``transport``), else the client's own (``OPENLINEAGE_CONFIG``, ``openlineage.yml``,
``OPENLINEAGE__TRANSPORT__*``, ``OPENLINEAGE_URL``). The client's transports do the sending
(HTTP to Marquez or any OpenLineage endpoint, a file, Kafka, the console, ...). The query may
choose the event kind and the job namespaces: ``openlineage://?events=job&namespace=etl=etl-prod``.

An OpenLineage consumer keeps nothing this sink can read back, so there is no baseline and no
``unchanged``: every push sends every DAG's event. That is safe to repeat (a job event is an
upsert, a run event's id is derived from the declaration), and it heals a catalog that lost
what it was sent before.

Every HTTP request the client makes for this sink (the events, a token endpoint's) goes out
through the provider's one transport (``openlineage_http.py``): bounded answers, the push's
budget, no redirects, no key of a URL's query in a message.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from openlineage.client.transport import Transport

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.snapshots.document import Document
from airflow_provider_coremodels.errors import CoreModelsError, SinkError, UsageError
from airflow_provider_coremodels.integrations.openlineage import (
    Collector,
    Options,
    build_events,
    client_config,
    make_client,
)
from airflow_provider_coremodels.redaction import scrub, scrubbed_logger
from airflow_provider_coremodels.sinks.base import Sink, SinkResult
from airflow_provider_coremodels.sinks.openlineage_http import PushBudget, guard

log = scrubbed_logger(__name__)

SCHEME = "openlineage"
#: Where the client looks for its configuration, named when none is found.
CONFIGURE = (
    "set OPENLINEAGE_URL, OPENLINEAGE_CONFIG or OPENLINEAGE__TRANSPORT__TYPE, write an openlineage.yml, "
    "or configure [openlineage] transport"
)


class OpenLineageSink(Sink):
    """Send each DAG of a pushed document as an OpenLineage event through the configured client."""

    def __init__(
        self, uri: str, options: Options | None = None, *, budget: float = defaults.RETRY_BUDGET
    ) -> None:
        """``budget``: the seconds one push may take in all (``--retry-budget``), every request and
        retry of it included, and the most the client's ``close`` may wait for its transports."""
        parts = urlsplit(uri)
        if parts.netloc or parts.path.strip("/") or parts.fragment:
            raise UsageError(
                f"sink {scrub(uri)}: openlineage:// takes no host or path: the OpenLineage client's "
                f"own configuration says where events go ({CONFIGURE})"
            )
        self.uri = uri
        self.options = _with_query(options or Options(), parts.query, uri)
        self._budget = PushBudget(budget)
        config = client_config()
        # read the configuration first, resolving no transport: without one the client would fall
        # back to its console (logging each event) with a warning, and nothing would reach a catalog
        if not _configured(config, make_client(config, Collector()).config.transport):
            raise UsageError(f"sink {uri}: no OpenLineage transport is configured ({CONFIGURE})")
        self._client = make_client(config)
        self.transport = self._client.transport.kind or type(self._client.transport).__name__
        self._client.transport = guard(self._client.transport, self._budget)

    def __repr__(self) -> str:
        return f"OpenLineageSink({self.uri!r}, transport={self.transport!r})"

    def read_baseline(self) -> bytes | None:
        return None  # an OpenLineage consumer keeps nothing this sink can read back

    def push(self, document: Document) -> SinkResult:
        emission = build_events(document, self.options)
        for note in emission.notes:
            log.warning("sink %s: %s", self.uri, note)
        if self.transport == "noop":
            log.warning("sink %s: OpenLineage is disabled (OPENLINEAGE_DISABLED): nothing sent", self.uri)
            return SinkResult(self.uri, unchanged=False, sent=0)
        counted = _Counted(self._client.transport)
        self._client.transport = counted
        budget = self._budget
        budget.start()
        failed = f"sink {self.uri}: the OpenLineage {self.transport} transport failed after"
        try:
            for event in emission.events:
                if budget.deadline.spent():  # a transport that is not HTTP: checked between events
                    raise SinkError(
                        f"{failed} {counted.sent} of {len(emission.events)} events: the push did not "
                        f"finish within its budget of {budget.seconds:g} s (--retry-budget)"
                    )
                budget.failure = None
                self._client.emit(event)
            delivered = self._client.close(max(0.0, budget.deadline.remaining()))
        except SinkError as exc:
            if str(exc).startswith(failed):
                raise
            raise SinkError(f"{failed} {counted.sent} of {len(emission.events)} events: {exc}") from None
        except Exception as exc:
            raise SinkError(
                f"{failed} {counted.sent} of {len(emission.events)} events: {_reason(exc, budget.failure)}"
            ) from None
        finally:
            self._client.transport = counted.inner
            budget.finish()
        if delivered is False:
            raise SinkError(
                f"sink {self.uri}: the OpenLineage {self.transport} transport did not deliver every event "
                f"within {budget.seconds:g} s (--retry-budget)"
            )
        log.info("sink %s: sent %d OpenLineage events (%s transport)", self.uri, counted.sent, self.transport)
        written = [self.uri] if counted.sent else []
        return SinkResult(self.uri, unchanged=False, written=written, sent=counted.sent)


class _Counted(Transport):
    """The configured transport, counting the events the client hands it (after its filters)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.name = inner.name
        self.sent = 0

    def emit(self, event: Any) -> Any:
        result = self.inner.emit(event)
        self.sent += 1
        return result

    def close(self, timeout: float = -1) -> bool:
        return self.inner.close(timeout)


def _with_query(options: Options, query: str, uri: str) -> Options:
    """The sink URI's ``events`` and ``namespace`` (repeatable) win over the command's options."""
    events: str | None = None
    namespaces: list[str] = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "events":
            events = value
        elif key == "namespace":
            namespaces.append(value)
        else:
            raise UsageError(
                f"sink {uri}: unknown query parameter {key!r} (openlineage:// takes events and namespace)"
            )
    try:
        return options.updated(events, namespaces)
    except UsageError as exc:
        raise UsageError(f"sink {uri}: {exc}") from None


def _configured(config: dict[str, Any] | None, transport: dict[str, Any] | None) -> bool:
    """Whether any configuration chose a transport: otherwise the client falls back to its console."""
    return bool(
        (config and config.get("transport"))
        or (transport and transport.get("type"))
        or os.environ.get("OPENLINEAGE_URL")
        or os.environ.get("OPENLINEAGE_DISABLED", "").lower().strip() == "true"
    )


def _reason(exc: BaseException, failure: CoreModelsError | None = None) -> str:
    """One line: the exception and its first cause, without secrets. ``failure`` is what a
    guarded request failed on while this event was sent: a composite transport says only that
    none of its transports delivered, so that is what happened, beside it."""
    if failure is not None:
        said = " ".join(scrub(str(exc)).split())[:200]
        return f"{failure}; {type(exc).__name__}: {said}"
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    line = " ".join(scrub(text).split())
    return line[:500]


__all__: Sequence[str] = ["OpenLineageSink"]
