"""OpenLineage out: the declared estate of a snapshot as OpenLineage events, one job per DAG.

Runtime lineage already flows from the OpenLineage Airflow provider while DAGs run; what nobody
emits is what a deployment *declares*: DAGs that never ran, the assets they read and write, who
owns them. This module turns a snapshot document into that, named exactly as the provider names
it at runtime, so a catalog merges both onto the same jobs and datasets:

- a job per DAG: namespace = the provider's namespace for the deployment (``[openlineage]
  namespace`` / ``OPENLINEAGE_NAMESPACE``, read through the provider's own ``conf``), or the one
  given; name = the dag_id (a merged snapshot's ``mapsTo.uri``);
- its inputs and outputs: the assets it consumes and produces, translated by the provider's own
  ``translate_airflow_asset`` (the asset-to-OpenLineage converters providers register: amazon for
  ``s3://``, common.io for ``file://``, ...); a URI no converter knows is named by the provider's
  generic URI rule, and one without a scheme in the namespace ``airflow``, each with a note;
- facets as the provider builds them for a DAG (job type, ownership, documentation, tags), and
  the DAG file's location.

Events are built with the client's own classes and serialized by its ``Serde``. Which client
configuration sends them, and how, is the sink's business (``sinks/openlineage.py``); printing
(``--format openlineage``) passes them through the same client, so what is printed is what the
sink would send. Imported only when OpenLineage is asked for: it needs the ``openlineage`` extra.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from airflow.providers.openlineage import conf as provider_conf
from airflow.providers.openlineage.extractors.manager import ExtractorManager
from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter
from airflow.providers.openlineage.utils.utils import translate_airflow_asset
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, JobEvent, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    JobFacet,
    documentation_job,
    job_type_job,
    ownership_job,
    source_code_location_job,
    tags_job,
)
from openlineage.client.serde import Serde
from openlineage.client.transport import Transport

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.core.estate.model import ASSET, DAG
from airflow_provider_coremodels.core.snapshots.document import Document
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.redaction import SECRETS, scrub, scrubbed_logger

log = scrubbed_logger(__name__)

#: Who made the events (``producer`` and every facet's ``_producer``): this provider, at its version.
PRODUCER = f"https://github.com/coremodels/airflow-provider-coremodels/tree/v{__version__}"
#: The event kinds: RunEvent (the default: every consumer takes it) or the static JobEvent.
EVENT_KINDS = ("run", "job")
DEFAULT_EVENTS = "run"
#: The namespace of an asset whose URI has no scheme (``Asset("orders")``, ``@asset``): it names
#: nothing outside Airflow, so no converter can place it in a data source.
UNSCOPED_NAMESPACE = "airflow"
#: The UUID namespace of run ids (version 5): a fixed value, so the same declaration always has
#: the same run id.
RUN_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/coremodels/airflow-provider-coremodels")

#: How an asset URI was named.
CONVERTER = "converter"  # a converter registered by a provider (the name the provider emits at runtime)
FALLBACK = "fallback"  # no converter for its scheme: the provider's generic URI rule
UNSCOPED = "unscoped"  # no scheme at all: namespace ``airflow``, name the URI

Event = RunEvent | JobEvent


# -- options --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """What the events look like: their kind and the job namespaces.

    ``namespace`` is the namespace of every DAG whose deployment has none of its own in
    ``namespaces`` (by deployment name). Without either: the provider's namespace for a one-
    deployment snapshot, and each deployment's name in a merged one.
    """

    events: str = DEFAULT_EVENTS
    namespace: str | None = None
    namespaces: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, events: str | None = None, namespaces: Iterable[str] = ()) -> Options:
        """From the command line's (or a sink URI's) ``events`` and ``[DEPLOYMENT=]NAMESPACE`` values."""
        return cls().updated(events, namespaces)

    def updated(self, events: str | None = None, namespaces: Iterable[str] = ()) -> Options:
        """These options with ``events`` and the namespaces given here winning over their own."""
        if events is not None and events not in EVENT_KINDS:
            raise UsageError(f"openlineage events must be run or job, got {events!r}")
        namespace, by_deployment = self.namespace, dict(self.namespaces)
        for value in namespaces:
            deployment, named = split_namespace(value)
            if deployment is None:
                namespace = named
            else:
                by_deployment[deployment] = named
        return Options(events or self.events, namespace, by_deployment)


def split_namespace(value: str) -> tuple[str | None, str]:
    """``DEPLOYMENT=NAMESPACE`` or ``NAMESPACE`` (a deployment name holds no ``/``, ``:`` or ``=``)."""
    value = value.strip()
    deployment, separator, namespace = value.partition("=")
    if separator and deployment and not any(c in deployment for c in "/:"):
        if not namespace.strip():
            raise UsageError(f"openlineage namespace for deployment {deployment!r} is empty")
        return deployment, namespace.strip()
    if not value:
        raise UsageError("openlineage namespace is empty")
    return None, value


def provider_namespace() -> str:
    """The OpenLineage provider's namespace for this deployment: ``[openlineage] namespace``, else
    ``OPENLINEAGE_NAMESPACE``, else ``default``, read by the provider's own ``conf``."""
    return str(provider_conf.namespace())


# -- asset URIs as OpenLineage datasets ------------------------------------------------------


@dataclass(frozen=True)
class DatasetName:
    namespace: str
    name: str
    how: str  # CONVERTER, FALLBACK or UNSCOPED


def dataset_name(uri: str) -> DatasetName:
    """An asset URI as the OpenLineage provider names the dataset: its registered converter first
    (``translate_airflow_asset``, which normalizes the URI as Airflow does), else the provider's
    generic rule for a URI (``scheme://authority`` / path), else ``airflow`` / the URI."""
    from airflow.sdk import Asset

    with warnings.catch_warnings():  # a URI Airflow would warn about is still a URI to name
        warnings.simplefilter("ignore")
        try:
            asset = Asset(uri=uri)
        except Exception:  # an Airflow of another release that refuses this URI
            asset = None
        converted = translate_airflow_asset(asset, None) if asset is not None else None
        if converted is not None:
            return DatasetName(converted.namespace, converted.name, CONVERTER)
        generic = ExtractorManager.convert_to_ol_dataset_from_object_storage_uri(uri)
    if generic is not None:
        # a bare bucket reads "/" as the amazon converter names it, never an empty name
        return DatasetName(generic.namespace, generic.name or "/", FALLBACK)
    return DatasetName(UNSCOPED_NAMESPACE, uri, UNSCOPED)


# -- events -------------------------------------------------------------------------------


@dataclass
class Emission:
    """The events of a document, and the notes on what could not be named as the provider would."""

    events: list[Event]
    notes: list[str] = field(default_factory=list)


def build_events(document: Document, options: Options | None = None) -> Emission:
    """One event per DAG of ``document``, sorted by job namespace and name."""
    options = options or Options()
    datasets = document.get("datasets")
    if datasets is None:
        return Emission([], ["the snapshot was stored without datasets and lineage: no events"])
    dags = {d["identity"]: d for d in datasets if d.get("materialization") == DAG}
    names: dict[str, DatasetName] = {}
    reads: dict[str, set[str]] = {identity: set() for identity in dags}
    writes: dict[str, set[str]] = {identity: set() for identity in dags}
    external = 0
    for edge in document.get("lineage") or ():
        if edge["dependentKind"] == edge["dependsOnKind"]:
            continue  # a trigger or a sensor joins two jobs: no dataset is read or written
        producing = edge["dependentKind"] == ASSET
        dag, asset = edge["dependsOn"], edge["dependent"]
        if not producing:
            dag, asset = asset, dag
        if dag not in dags:
            external += 1
            continue
        if asset not in names:
            names[asset] = dataset_name(asset)
        (writes if producing else reads)[dag].add(asset)

    merged = bool(document.get("state", {}).get("deployments"))
    fallback_namespace = options.namespace or (None if merged else provider_namespace())
    event_time = _event_time(document)
    jobs: dict[tuple[str, str], str] = {}
    events: list[Event] = []
    for identity, dag in dags.items():
        job = _job(dag, _job_namespace(dag, document, options, fallback_namespace))
        twin = jobs.setdefault((job.namespace, job.name), identity)
        if twin != identity:
            raise UsageError(
                f"openlineage: DAGs {twin} and {identity} would both be job {job.name} in namespace "
                f"{job.namespace}: give their deployments namespaces of their own "
                "(--openlineage-namespace DEPLOYMENT=NAMESPACE)"
            )
        inputs = [InputDataset(n.namespace, n.name) for n in _datasets(reads[identity], names)]
        outputs = [OutputDataset(n.namespace, n.name) for n in _datasets(writes[identity], names)]
        if options.events == "job":
            events.append(
                JobEvent(eventTime=event_time, job=job, inputs=inputs, outputs=outputs, producer=PRODUCER)
            )
        else:
            run = Run(runId=str(_run_id(job, inputs, outputs)))
            events.append(
                RunEvent(
                    eventType=RunState.COMPLETE,
                    eventTime=event_time,
                    run=run,
                    job=job,
                    inputs=inputs,
                    outputs=outputs,
                    producer=PRODUCER,
                )
            )
    events.sort(key=lambda e: (e.job.namespace, e.job.name))
    return Emission(events, _notes(names, external))


def _job_namespace(dag: dict[str, Any], document: Document, options: Options, fallback: str | None) -> str:
    deployment = (dag.get("metadata") or {}).get("airflow.deployment") or document.get("state", {}).get(
        "deployment"
    )
    if deployment and deployment in options.namespaces:
        return options.namespaces[deployment]
    if fallback:
        return fallback
    return str(deployment)  # a merged snapshot without a namespace given: the deployment's name


def _job(dag: dict[str, Any], namespace: str) -> Job:
    """The DAG as an OpenLineage job, with the facets the provider gives a DAG's job (same keys,
    same shapes), and where its file is."""
    metadata = dag.get("metadata") or {}
    facets: dict[str, JobFacet] = {}
    if dag.get("description"):
        facets["documentation"] = documentation_job.DocumentationJobFacet(
            description=dag["description"], contentType="text/plain", producer=PRODUCER
        )
    owners = [owner for owner in (metadata.get("airflow.owners") or "").split(",") if owner]
    if owners:
        facets["ownership"] = ownership_job.OwnershipJobFacet(
            owners=[ownership_job.Owner(name=owner) for owner in sorted(owners)], producer=PRODUCER
        )
    if dag.get("tags"):
        facets["tags"] = tags_job.TagsJobFacet(
            tags=[tags_job.TagsJobFacetFields(tag, tag, "AIRFLOW") for tag in sorted(dag["tags"])],
            producer=PRODUCER,
        )
    location = _source_code_location(dag.get("physicalName"), metadata.get("airflow.relativeFileloc"))
    if location is not None:
        facets["sourceCodeLocation"] = location
    facets["jobType"] = job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="AIRFLOW", jobType="DAG", producer=PRODUCER
    )
    name = (dag.get("mapsTo") or {}).get("uri") or dag["identity"]
    return Job(namespace=namespace, name=name, facets=facets)


def _source_code_location(fileloc: str | None, relative: str | None) -> JobFacet | None:
    """The DAG's file: ``url`` its ``fileloc`` on the deployment's file system, ``path`` its path
    inside its DAG bundle (Airflow 3). None when the capture did not say where the file is."""
    if not fileloc or not fileloc.startswith("/"):
        return None
    return source_code_location_job.SourceCodeLocationJobFacet(
        type="file", url=PurePosixPath(fileloc).as_uri(), path=relative or None, producer=PRODUCER
    )


def _datasets(uris: Iterable[str], names: Mapping[str, DatasetName]) -> list[DatasetName]:
    """The datasets of these URIs, each once (two URIs may name one dataset), sorted."""
    unique = {(names[uri].namespace, names[uri].name): names[uri] for uri in uris}
    return [unique[key] for key in sorted(unique)]


def _run_id(job: Job, inputs: Sequence[InputDataset], outputs: Sequence[OutputDataset]) -> uuid.UUID:
    """A UUID v5 over the job and its datasets as serialized: the same declaration, the same run.

    A repeated export of an unchanged DAG therefore names the run it named before instead of
    adding a run per export, and a DAG whose declaration changed gets a new one.
    """
    content = "\n".join([Serde.to_json(job), *map(Serde.to_json, inputs), "->", *map(Serde.to_json, outputs)])
    return uuid.uuid5(RUN_ID_NAMESPACE, content)


def _event_time(document: Document) -> str:
    """The capture time (the moment the declaration was read), in UTC; else now."""
    captured = document.get("state", {}).get("capturedAt")
    when = datetime.now(timezone.utc).replace(microsecond=0)
    if isinstance(captured, str):
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(captured.strip().replace("Z", "+00:00"))
    if when.tzinfo is None:  # as every time the API gives: UTC
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _notes(names: Mapping[str, DatasetName], external: int) -> list[str]:
    notes = []
    fallback = sorted(uri for uri, n in names.items() if n.how == FALLBACK)
    if fallback:
        examples = "; ".join(f"{uri} -> {names[uri].namespace} {names[uri].name}" for uri in fallback[:5])
        more = f" (and {len(fallback) - 5} more)" if len(fallback) > 5 else ""
        notes.append(
            f"{len(fallback)} asset URI(s) with no OpenLineage converter installed for their scheme, "
            "named by the provider's generic URI rule (the provider itself emits no dataset for them): "
            f"{examples}{more}"
        )
    unscoped = sorted(uri for uri, n in names.items() if n.how == UNSCOPED)
    if unscoped:
        listed = ", ".join(unscoped[:5]) + (f" (and {len(unscoped) - 5} more)" if len(unscoped) > 5 else "")
        notes.append(
            f"{len(unscoped)} asset URI(s) without a scheme, named in namespace {UNSCOPED_NAMESPACE}: "
            f"{listed}"
        )
    if external:
        notes.append(f"{external} lineage edge(s) name a DAG absent from the snapshot: no job for it")
    return notes


# -- the client ---------------------------------------------------------------------------


def client_config() -> dict[str, Any] | None:
    """The OpenLineage configuration of this Airflow, as the OpenLineage provider reads it
    (``[openlineage] config_conn_id``, ``config_path`` or ``transport``), or None: the client then
    reads its own (``OPENLINEAGE_CONFIG``, ``openlineage.yml``, ``OPENLINEAGE__*``, ``OPENLINEAGE_URL``)."""
    try:
        config = OpenLineageAdapter().get_openlineage_config()
    except Exception as exc:
        raise UsageError(
            f"openlineage: the [openlineage] configuration of this Airflow is unusable: "
            f"{type(exc).__name__}: {scrub(str(exc))[:300]}"
        ) from None
    if config is not None and not isinstance(config, dict):
        raise UsageError("openlineage: the [openlineage] configuration of this Airflow is not a mapping")
    remember_secrets(config)
    return config


def make_client(config: dict[str, Any] | None, transport: Transport | None = None) -> OpenLineageClient:
    """``OpenLineageClient(config=...)``: the transport, filters, tags and facets as configured
    (``transport`` replaces the configured transport, for printing)."""
    try:
        client = OpenLineageClient(config=config, transport=transport)
        remember_secrets(client.config.transport)
    except Exception as exc:
        raise UsageError(
            f"openlineage: the client configuration is unusable: {type(exc).__name__}: "
            f"{scrub(str(exc))[:300]}"
        ) from None
    if transport is not None:
        client.transport = transport  # even where OPENLINEAGE_DISABLED chose the no-op transport
    return client


#: How the keys of secret values end in a client configuration, letters only and lowercased: an
#: API key (``apiKey``, ``api_key``), a client secret, a password (Kafka's ``sasl.password``), a
#: token, a header such as ``Authorization``. Not ``tokenEndpoint`` or Kafka's ``messageKey``.
_SECRET_KEYS = (
    "apikey",
    "secret",
    "password",
    "token",
    "accesskey",
    "privatekey",
    "credentials",
    "authorization",
)


def remember_secrets(config: Any) -> None:
    """Register every value of a client configuration that may be a secret (an API key, a
    password, a token; a URL's password) with the scrubber, and Airflow's masker when loaded."""

    def walk(value: Any, secret: bool) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                letters = "".join(c for c in str(key).lower() if c.isalpha())
                walk(item, letters.endswith(_SECRET_KEYS))
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, secret)
        elif isinstance(value, str):
            if secret:
                SECRETS.add(value)
            elif "@" in value and "://" in value:
                with contextlib.suppress(ValueError):
                    SECRETS.add(urlsplit(value).password)

    walk(config, False)
    SECRETS.add(os.environ.get("OPENLINEAGE_API_KEY"), os.environ.get("DD_API_KEY"))


class Collector(Transport):
    """A transport that keeps the events the client hands it: what printing prints."""

    kind = "coremodels-print"

    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)


def render(document: Document, options: Options | None = None) -> tuple[str, list[str]]:
    """``--format openlineage``: the events as newline-delimited JSON, each as the configured client
    prepares it for its transport (its own additions included: its version as a run tag, and the
    tags or environment variables its configuration adds), and the notes."""
    emission = build_events(document, options)
    collector = Collector()
    client = make_client(client_config(), collector)
    for event in emission.events:
        client.emit(event)
    return "\n".join(Serde.to_json(event) for event in collector.events), emission.notes


def quiet_client_logs() -> None:
    """At the command line, keep stderr to what matters: the client's INFO lines ("will use `http`
    transport"), urllib3's retry warnings under its HTTP transport, and the INFO lines of Airflow's
    providers manager, which the asset translation starts (on Airflow 3.0, one per hook that lacks
    its UI widgets), are noise before the one line that says whether the events went out.
    ``OPENLINEAGE_CLIENT_LOGGING`` keeps them all."""
    if not os.environ.get("OPENLINEAGE_CLIENT_LOGGING"):
        logging.getLogger("openlineage.client").setLevel(logging.WARNING)
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
        logging.getLogger("airflow.providers_manager").setLevel(logging.WARNING)


__all__ = [
    "DEFAULT_EVENTS",
    "EVENT_KINDS",
    "PRODUCER",
    "UNSCOPED_NAMESPACE",
    "DatasetName",
    "Emission",
    "Options",
    "build_events",
    "client_config",
    "dataset_name",
    "make_client",
    "render",
]
