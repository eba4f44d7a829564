"""What one stored snapshot says in a history listing, read from its bytes without reading the rest.

A sink's ``history/`` may hold thousands of documents, each as large as the estate. A listing, or
the UI page's chart, needs a handful of values from each: its fingerprint, when it was captured,
how many open findings of each severity it holds, whether it was stored whole. ``summarize``
decodes exactly those, in one typed pass that skips ``datasets`` and ``lineage`` without building
them (``load_document`` builds the whole estate model, which a listing never looks at).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from airflow_provider_coremodels.core.checks.teams import document_teams, grouped
from airflow_provider_coremodels.core.estate.model import CONNECTOR, READABLE_SCHEMA_VERSIONS
from airflow_provider_coremodels.core.estate.rules import most_severe_first
from airflow_provider_coremodels.core.snapshots.document import edge_json, findings_digest
from airflow_provider_coremodels.errors import SnapshotDocumentError

if TYPE_CHECKING:
    from airflow_provider_coremodels.core.comparing.change import Change


@dataclass(frozen=True, slots=True)
class EntrySummary:
    """A stored document as a listing shows it. ``open`` counts unwaived findings by severity;
    ``version`` is ``<fingerprint>-<findings digest>``, what tells two stored documents apart."""

    fingerprint: str | None
    captured_at: str | None
    open: tuple[tuple[str, int], ...]
    waived: int
    snapshot_stored: bool
    version: str | None
    #: The teams the document was audited with (None: none), and each one's open findings by
    #: severity (``unowned`` last, where it has any): a team's view of the listing and its trend.
    teams: tuple[str, ...] | None = None
    by_team: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    #: Each team's waived findings, where it has any (a finding of two teams counts for both).
    waived_by_team: tuple[tuple[str, int], ...] = ()

    def of_team(self, team: str) -> EntrySummary:
        """The summary as one team sees it: its open findings and its waived ones only."""
        return dataclasses.replace(
            self, open=dict(self.by_team).get(team, ()), waived=dict(self.waived_by_team).get(team, 0)
        )

    @property
    def open_count(self) -> int:
        return sum(count for _, count in self.open)

    def open_of(self, severity: str) -> int:
        return dict(self.open).get(severity, 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "capturedAt": self.captured_at,
            "open": dict(self.open),
            "waived": self.waived,
            "snapshotStored": self.snapshot_stored,
        }


@dataclass(frozen=True, slots=True)
class EntryDrift:
    """What changed of one team's DAGs since the older entry ``since`` (``history --team``): the
    ``change`` part of ``compare --team`` between the two, findings aside."""

    since: str
    change: Change

    def as_dict(self) -> dict[str, Any]:
        c = self.change
        return {
            "since": self.since,
            "dagsAdded": list(c.dags_added),
            "dagsRemoved": list(c.dags_removed),
            "dagsChanged": list(c.dags_changed),
            "lineageAdded": [edge_json(e) for e in c.lineage_added],
            "lineageRemoved": [edge_json(e) for e in c.lineage_removed],
        }

    def line(self, names_shown: int = 3) -> str:
        """For a table cell: ``+new_dag -gone_dag ~changed_dag, edges +1 -2``, or ``none``."""
        c = self.change
        dags = [
            f"{sign}{identity}"
            for sign, identities in (("+", c.dags_added), ("-", c.dags_removed), ("~", c.dags_changed))
            for identity in identities
        ]
        parts = []
        if dags:
            more = len(dags) - names_shown
            parts.append(" ".join(dags[:names_shown]) + (f" (+{more} more)" if more > 0 else ""))
        if c.lineage_added or c.lineage_removed:
            parts.append(f"edges +{len(c.lineage_added)} -{len(c.lineage_removed)}")
        return ", ".join(parts) or "none"


class _State(msgspec.Struct, rename="camel"):
    captured_at: str | None = None


class _Head(msgspec.Struct, rename="camel"):
    """The parts of a document a listing reads; every other key is skipped unread."""

    connector: Any = None
    schema_version: Any = None
    fingerprint: str | None = None
    state: _State = msgspec.field(default_factory=_State)
    findings: list[dict[str, Any]] = []
    lossiness: list[Any] = []
    snapshot_stored: bool = True
    policy: Any = None


_DECODER = msgspec.json.Decoder(_Head)


def summarize(data: bytes) -> EntrySummary:
    """The summary of a stored document; ``SnapshotDocumentError`` saying what is wrong when the
    bytes are no snapshot document (the caller names the file)."""
    try:
        head = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise SnapshotDocumentError(f"is not a snapshot document: {_first_line(exc)}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise SnapshotDocumentError(f"is not valid JSON: {_first_line(exc)}") from None
    if head.connector != CONNECTOR:
        raise SnapshotDocumentError(f"has connector {head.connector!r}, expected {CONNECTOR!r}")
    if head.schema_version not in READABLE_SCHEMA_VERSIONS or isinstance(head.schema_version, bool):
        raise SnapshotDocumentError(f"has schemaVersion {head.schema_version!r}")
    open_findings = [f for f in head.findings if not f.get("waived")]
    by_severity = Counter(str(f.get("severity")) for f in open_findings)
    version = None
    if head.fingerprint is not None:
        digest = findings_digest(head.findings, [r for r in head.lossiness if isinstance(r, dict)])
        version = f"{head.fingerprint}-{digest}"
    teams = document_teams({"policy": head.policy})
    by_team: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    waived_by_team: tuple[tuple[str, int], ...] = ()
    if teams is not None:
        by_team = tuple(
            (team, _counts(Counter(str(f.get("severity")) for f in group)))
            for team, group in grouped(open_findings, teams)
        )
        waived = [f for f in head.findings if f.get("waived")]
        waived_by_team = tuple((team, len(group)) for team, group in grouped(waived, teams))
    return EntrySummary(
        fingerprint=head.fingerprint,
        captured_at=head.state.captured_at,
        open=_counts(by_severity),
        waived=len(head.findings) - len(open_findings),
        snapshot_stored=head.snapshot_stored,
        version=version,
        teams=teams,
        by_team=by_team,
        waived_by_team=waived_by_team,
    )


def _counts(by_severity: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple((severity, by_severity[severity]) for severity in most_severe_first(by_severity))


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or ["unreadable"])[0][:200]
