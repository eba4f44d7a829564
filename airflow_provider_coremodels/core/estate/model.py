"""The neutral estate model: datasets with fields, lineage edges, findings and lossiness.

Frozen, slotted dataclasses (and a msgspec struct for the most numerous, the field) rather than
pydantic models: an estate of 10,000 DAGs holds hundreds of thousands of fields, and these are
built on the hot path of every audit.
Python names are snake_case; the snapshot document (``document.py``) spells them in camelCase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal

import msgspec

from airflow_provider_coremodels.core.estate.findings import Finding as Finding
from airflow_provider_coremodels.core.estate.findings import Severity as Severity
from airflow_provider_coremodels.core.estate.findings import Waived as Waived

Materialization = Literal["dag", "asset"]

DAG: Materialization = "dag"
ASSET: Materialization = "asset"

# Every Airflow "native type" is an operator class name: carried as a String, flagged approximate.
FIELD_TYPE: Literal["String"] = "String"

#: A non-empty string, where a document is decoded straight into the model.
NonEmptyText = Annotated[str, msgspec.Meta(min_length=1)]

CAPABILITIES = ("import", "audit")
CONNECTOR = "airflow"
SCHEMA_VERSION = 2
#: Older document versions still read as snapshots and baselines.
READABLE_SCHEMA_VERSIONS = (1, 2)


class Field(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """A task, as a field of its DAG's dataset.

    A msgspec struct rather than a dataclass, and spelled as the snapshot document spells a field
    (``type`` and ``approximate`` are the document's constants): an estate holds a field per task,
    millions when deployments are merged, and as a struct it is decoded from a stored document
    and encoded into a new one without a dict in between (``document.py``). Untracked by the
    cyclic collector (``gc=False``): it holds strings and a dict of strings, never a cycle.
    """

    name: NonEmptyText
    native_type: NonEmptyText
    type: Literal["String"] = FIELD_TYPE
    approximate: bool = True
    tags: tuple[str, ...] = ()
    metadata: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Dataset:
    """A DAG or an asset: the two flavours are told apart by ``materialization``."""

    identity: str
    name: str
    materialization: Materialization
    physical_name: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    fields: tuple[Field, ...] = ()
    #: What the dataset is in Airflow, where that is not its identity: a merged estate's DAG
    #: ``<deployment>/<dag_id>`` maps to its dag_id.
    maps_to: str | None = None

    @property
    def paused(self) -> bool:
        return self.metadata.get("airflow.paused") == "true"

    @property
    def display_name(self) -> str:
        """How Airflow's UI names it: a DAG's ``dag_display_name``, else its name."""
        return self.metadata.get("airflow.displayName") or self.name


#: How a record begins that says a DAG's task inlets rest on Airflow's references alone.
INLETS_UNCONFIRMED = "task inlets rest on Airflow's references alone"

#: A DAG's ``dag_display_name``, where it is not the dag_id.
DISPLAY_NAME_KEY = "airflow.displayName"
#: "true" for a DAG documented in ``doc_md`` (which counts as its description).
DOC_MD_KEY = "airflow.docMd"

#: A DAG's ``max_active_runs``, and a task's ``retries``, where the API gives them (whole numbers as text).
MAX_ACTIVE_RUNS_KEY = "airflow.maxActiveRuns"
RETRIES_KEY = "airflow.retries"
#: The DAG warnings Airflow reports on a DAG, other than asset conflicts (``airflow.assetConflict``):
#: canonical JSON of ``{warning type: message}``, each message scrubbed and bounded by the parse.
WARNINGS_KEY = "airflow.warnings"

#: Whether watchers (event-driven triggers) update an asset: "true", or WATCHED_UNKNOWN where the
#: API cannot tell (absent: none is registered, and one could be).
WATCHED_KEY = "airflow.watched"
WATCHED_UNKNOWN = "unknown"

#: An asset's own freshness tolerance, in its metadata (from its extra ``coremodels_stale_tolerance``).
STALE_TOLERANCE_KEY = "coremodels.staleTolerance"

#: How an edge was learned, when not from a plain producing task or schedule reference.
VIA_REF = "ref"  # a schedule on Asset.ref, resolved by name or URI
VIA_INLET = "inlet"  # a task inlet that does not schedule the DAG
VIA_ALIAS = "alias:"  # + the alias's name: resolved through an AssetAlias
VIA_TRIGGER = "trigger"  # DAG to DAG: a TriggerDagRunOperator; the triggered DAG depends on its DAG
VIA_SENSOR = "sensor"  # DAG to DAG: an ExternalTaskSensor; its DAG depends on the DAG it waits on
#: Read off a SQL or transfer operator's code, not declared (contract 10.3); the edge's ``source``
#: names the tasks, ``<dag_id>.<task_id>``.
VIA_INFERRED = "inferred"
#: How an edge between two DAGs is learned: no other edge joins two datasets of one kind.
DAG_LINK_VIAS = (VIA_TRIGGER, VIA_SENSOR)

#: The trigger and sensor tasks of a DAG whose target is known, in the DAG's metadata: canonical
#: JSON of ``[{"dag": <the other DAG's dag_id>, "task": <task_id>, "via": "trigger" | "sensor"}]``.
DAG_LINKS_KEY = "airflow.dagLinks"
#: A DAG's ``owner_links`` (owner -> URL), canonical JSON, where its details were read.
OWNER_LINKS_KEY = "airflow.ownerLinks"
#: A DAG's deadline alerts, canonical JSON (``core/reading/deadlines.py``), ``[]`` for none; absent: unknown.
DEADLINE_KEY = "airflow.deadline"


def joins(dependent_kind: str, depends_on_kind: str, via: str | None) -> bool:
    """Whether an edge of these kinds can exist: a DAG and an asset, or two DAGs by a trigger or sensor."""
    if dependent_kind != depends_on_kind:
        return True
    return dependent_kind == DAG and via in DAG_LINK_VIAS


@dataclass(frozen=True, slots=True)
class Edge:
    """``dependent`` depends on ``depends_on``; each end names its kind, since a DAG and an asset
    may share a name (``@asset`` makes exactly that). An edge joins a DAG and an asset (a
    producing edge makes the asset depend on its DAG, a consuming edge the DAG on its asset), or
    two DAGs (``dag_link``: a trigger or a sensor, ``via`` says which). ``producing``, ``dag_id``
    and ``asset`` speak of the first kind only: code that reads them skips DAG links first.
    ``external`` when the DAG is absent from the dags artifact; ``via`` says how an edge was
    learned when not from a plain producing task or schedule reference (``VIA_*``).
    """

    dependent: str
    dependent_kind: Materialization
    depends_on: str
    depends_on_kind: Materialization
    external: bool = False
    via: str | None = None
    #: In a merged estate: the asset's lineage spans deployments (it is the join between them).
    cross_deployment: bool = False
    #: An inferred edge's tasks, ``<dag_id>.<task_id>`` (several joined with ", ").
    source: str | None = None

    @classmethod
    def produces(
        cls,
        dag_id: str,
        uri: str,
        *,
        external: bool = False,
        via: str | None = None,
        source: str | None = None,
    ) -> Edge:
        """The DAG produces the asset: the asset depends on it."""
        return cls(uri, ASSET, dag_id, DAG, external, via, source=source)

    @classmethod
    def consumes(
        cls,
        dag_id: str,
        uri: str,
        *,
        external: bool = False,
        via: str | None = None,
        source: str | None = None,
    ) -> Edge:
        """The DAG consumes the asset: it depends on the asset."""
        return cls(dag_id, DAG, uri, ASSET, external, via, source=source)

    @property
    def inferred(self) -> bool:
        """Read off an operator's code rather than declared (contract 10.3)."""
        return self.via == VIA_INFERRED

    @classmethod
    def link(cls, dependent: str, depends_on: str, via: str, *, external: bool = False) -> Edge:
        """A link between two DAGs: ``dependent`` (the triggered or the waiting DAG) depends on
        ``depends_on`` (the triggering DAG or the one waited for)."""
        return cls(dependent, DAG, depends_on, DAG, external, via)

    @property
    def dag_link(self) -> bool:
        """Whether the edge joins two DAGs (a trigger or a sensor) rather than a DAG and an asset."""
        return self.dependent_kind == self.depends_on_kind

    @property
    def link_owner(self) -> str:
        """A DAG link's DAG whose task makes it: the triggering DAG, or the waiting one."""
        return self.depends_on if self.via == VIA_TRIGGER else self.dependent

    @property
    def link_target(self) -> str:
        """A DAG link's DAG that its task names: the triggered DAG, or the one waited for (the end
        ``external`` is about)."""
        return self.dependent if self.via == VIA_TRIGGER else self.depends_on

    @property
    def producing(self) -> bool:
        return self.dependent_kind == ASSET

    @property
    def dag_id(self) -> str:
        return self.depends_on if self.producing else self.dependent

    @property
    def asset(self) -> str:
        return self.dependent if self.producing else self.depends_on

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What makes an edge unique, in the order edges are listed."""
        return (self.dependent, self.dependent_kind, self.depends_on, self.depends_on_kind)


@dataclass(frozen=True, slots=True)
class Lossiness:
    """Something the parse could not represent, declared rather than silently dropped.

    ``subject`` names the one item concerned (a dag_id, an asset URI) where there is one.
    """

    artifact: str
    message: str
    subject: str | None = None


@dataclass(frozen=True, slots=True)
class BrokenFile:
    """A DAG file Airflow reports an import error for (``GET /importErrors``).

    ``file`` names it as findings do: ``<bundle>/<path>`` where Airflow says the bundle (3.x),
    else the path Airflow gives (2.x: the absolute file location). ``error`` is the first line of
    the error (the exception's, for a traceback). ``dags`` are the DAGs that last parsed from the
    file: they do not run while it does not import, so they are neither producers nor consumers.
    ``outlets`` are the (dag_id, asset URI) pairs those DAGs were last known to produce (Airflow's
    references that outlive the break, or a baseline's lineage): what the break may leave with no
    producer.
    """

    file: str
    path: str
    error: str
    bundle: str | None = None
    dags: tuple[str, ...] = ()
    outlets: tuple[tuple[str, str], ...] = ()

    def producers_of(self, uri: str) -> list[str]:
        return [dag_id for dag_id, asset in self.outlets if asset == uri]

    def assets(self) -> list[str]:
        return sorted({asset for _, asset in self.outlets})


@dataclass(frozen=True, slots=True)
class State:
    """Where a snapshot came from: versions, capture time and the deployment's name (None where
    unknown); the name is what tells deployments apart when their snapshots are combined."""

    connector_version: str
    airflow_version: str | None = None
    api_version: str | None = None
    captured_at: str | None = None
    deployment: str | None = None
    #: A merged estate's deployments, by name (empty for one deployment's snapshot).
    deployments: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Freshness:
    """The volatile facts the freshness rules judge, kept apart from the governed content: they
    change with every run of the estate, so they never enter datasets, lineage or the fingerprint.

    ``asset_updates``: each asset's newest event (an ISO time; None: never updated), or None as a
    whole when the API did not say. With ``updates_since`` (before Airflow 3.1, where only the
    newest events back to that time are listed) an asset absent from ``asset_updates`` was not
    updated since then, and may have been before. ``asset_created``: when each asset was
    registered, which ages one never updated. ``failed_latest_run``: the DAGs whose latest run
    failed, or None when unknown. ``next_run_after``: when each scheduled DAG runs next.
    ``partitioned``: DAGs on partitioned timetables; their assets are judged as a whole (the newest
    event of any partition) where the timetable states a cadence, never per partition.
    ``judged_at`` and ``tolerance``: how a stored document was judged, so that its re-audit
    judges the same way unless told otherwise (None for a fresh capture).
    """

    asset_updates: Mapping[str, str | None] | None = None
    updates_since: str | None = None
    asset_created: Mapping[str, str] = field(default_factory=dict)
    failed_latest_run: frozenset[str] | None = None
    next_run_after: Mapping[str, str] = field(default_factory=dict)
    partitioned: frozenset[str] = frozenset()
    judged_at: str | None = None
    tolerance: float | None = None

    @property
    def known(self) -> bool:
        return self.asset_updates is not None or self.failed_latest_run is not None


@dataclass(frozen=True, slots=True)
class Estate:
    """A parsed estate in canonical order.

    Datasets are sorted by (materialization, identity) with fields by name, and edges by their
    ``key``: the order the snapshot document and the fingerprint rely on.
    """

    datasets: tuple[Dataset, ...]
    lineage: tuple[Edge, ...]
    state: State
    lossiness: tuple[Lossiness, ...] = ()
    freshness: Freshness = field(default_factory=Freshness)
    #: The files that do not import, by ``file``; their DAGs are in ``datasets`` as last parsed.
    import_errors: tuple[BrokenFile, ...] = ()

    def broken_dags(self) -> dict[str, BrokenFile]:
        """The DAGs that last parsed from a file that does not import, and that file."""
        return {dag_id: broken for broken in self.import_errors for dag_id in broken.dags}

    def dags(self) -> list[Dataset]:
        return [d for d in self.datasets if d.materialization == DAG]

    def assets(self) -> list[Dataset]:
        return [d for d in self.datasets if d.materialization == ASSET]

    def fields_unknown(self) -> set[str] | None:
        """DAGs whose task lists are incomplete, read off the tasks lossiness records.

        A tasks record with a subject taints that DAG; one without a subject (the whole
        artifact was ignored or not given) taints every DAG, returned as None. Drift must
        not report the fields of such DAGs as removed: they were never seen.
        """
        unknown: set[str] = set()
        for record in self.lossiness:
            if record.artifact == "tasks":
                if record.subject is None:
                    return None
                unknown.add(record.subject)
        return unknown

    def unconfirmed_inlets(self) -> set[str]:
        """The DAGs whose task inlets only Airflow's references tell (``references.inlets_record``):
        such a reader may be one whose code no longer reads the asset."""
        return {
            record.subject
            for record in self.lossiness
            if record.artifact == "datasets"
            and record.subject is not None
            and record.message.startswith(INLETS_UNCONFIRMED)
        }

    def lineage_known(self) -> bool:
        """Whether the lineage was read at all: not when the datasets artifact was missing or
        ignored (then every edge is unknown, and none is gone)."""
        return not any(
            record.artifact == "datasets"
            and record.subject is None
            and record.message.startswith(("datasets artifact ignored", "datasets artifact not provided"))
            for record in self.lossiness
        )

    @property
    def lineage_edges_skipped(self) -> int:
        return sum(1 for edge in self.lineage if edge.external)

    def counts(self) -> dict[str, int]:
        return {
            "datasets": len(self.datasets),
            "fields": sum(len(d.fields) for d in self.datasets),
            "lineageEdges": len(self.lineage),
            "lineageEdgesSkipped": self.lineage_edges_skipped,
        }

    def facts(self) -> dict[str, int]:
        dags = self.dags()
        return {
            "dags": len(dags),
            "pausedDags": sum(1 for d in dags if d.paused),
            "assets": len(self.datasets) - len(dags),
            "tasks": sum(len(d.fields) for d in dags),
        }
