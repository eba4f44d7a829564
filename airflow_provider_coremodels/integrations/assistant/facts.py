"""Facts: what the snapshot is (its source, counts and audit), its findings filtered and paged, and
one DAG or asset with its fields, neighbours and findings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from airflow_provider_coremodels.core.checks.teams import (
    UNOWNED,
    checked_team,
    document_teams,
    finding_teams,
    of_team,
)
from airflow_provider_coremodels.core.estate.model import DAG
from airflow_provider_coremodels.core.estate.rules import (
    most_severe_first,
)
from airflow_provider_coremodels.core.snapshots.document import (
    dataset_json,
)
from airflow_provider_coremodels.integrations.assistant.answers import (
    _KIND_ORDER,
    DEFAULT_LIMIT,
    JSON,
    MAX_LIMIT,
    Kind,
    QueryError,
    WaivedFilter,
    _claimed,
    _counts,
    _field_json,
    _key,
    _node_json,
    page,
)
from airflow_provider_coremodels.integrations.assistant.index import (
    SnapshotIndex,
)


class FactsQuestions(SnapshotIndex):
    """``facts``, ``findings_page`` and ``dataset``, asked of the shared index."""

    # -- facts ---------------------------------------------------------------------------

    def facts(self, *, lossiness_offset: int = 0, lossiness_limit: int = 20) -> JSON:
        """What the snapshot is: where it came from, its counts and facts, and what its audit found."""
        state = self.head.state
        teams = self._teams()
        by_severity: dict[str, dict[str, int]] = {}
        for severity in most_severe_first(f["severity"] for f in self.findings):
            by_severity[severity] = {"open": 0, "waived": 0}
        codes: Counter[str] = Counter()
        for finding in self.findings:
            by_severity[finding["severity"]]["waived" if finding.get("waived") else "open"] += 1
            if not finding.get("waived"):
                codes[finding["code"]] += 1
        # As stored, and what reading it found (a fingerprint that does not match the content)
        lossiness = list(self.head.lossiness)
        stored = {(r.get("artifact"), r.get("message")) for r in lossiness}
        for record in self.estate.lossiness if self.estate is not None else ():
            if (record.artifact, record.message) not in stored:
                lossiness.append({"artifact": record.artifact, "message": record.message})
        freshness = self.head.freshness if isinstance(self.head.freshness, dict) else {}
        baseline = self._given_baseline
        return {
            "source": self.source,
            "fingerprint": self.head.fingerprint,
            "schemaVersion": self.head.schema_version,
            "connectorVersion": state.get("connectorVersion"),
            "airflowVersion": state.get("airflowVersion"),
            "apiVersion": state.get("apiVersion"),
            "capturedAt": state.get("capturedAt"),
            "deployment": state.get("deployment"),
            "deployments": list(state.get("deployments") or []),
            # counted from the document, as merge and audit count them: a document's own claim
            # (facts.dags: 10**9 for an estate of six) is served only where nothing can be counted
            "counts": self.estate.counts() if self.estate is not None else _claimed(state.get("counts")),
            "facts": self.estate.facts() if self.estate is not None else _claimed(state.get("facts")),
            "countsSource": "counted from the snapshot's datasets and lineage"
            if self.estate is not None
            else "as the snapshot states them: it holds no datasets or lineage to count them from",
            "snapshotStored": self.head.snapshot_stored,
            "hasLineage": self.estate is not None,
            "freshness": {"judgedAt": freshness.get("judgedAt"), "tolerance": freshness.get("tolerance")},
            "findings": {
                "total": len(self.findings),
                "open": sum(1 for f in self.findings if not f.get("waived")),
                "waived": sum(1 for f in self.findings if f.get("waived")),
                "bySeverity": by_severity,
                "openByCode": dict(sorted(codes.items())),
                "openByTeam": None if teams is None else self._open_by_team(teams),
                "source": self.findings_source,
            },
            "teams": None if teams is None else list(teams),
            "baseline": (
                {"source": baseline.source, "fingerprint": baseline.baseline.fingerprint}
                if baseline
                else None
            ),
            "lossiness": {
                "byArtifact": dict(sorted(Counter(str(r.get("artifact")) for r in lossiness).items())),
                **page(lossiness, lossiness_offset, lossiness_limit),
            },
        }

    # -- findings ------------------------------------------------------------------------

    def findings_page(
        self,
        *,
        severity: str | None = None,
        code: str | None = None,
        subject: str | None = None,
        section: str | None = None,
        waived: WaivedFilter = "include",
        team: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """The findings at or above ``severity``, of ``code``, whose subject matches the glob ``subject``,
        of ``team`` (one the rules file names, or ``unowned``) when given."""
        if team is not None:
            try:
                team = checked_team(team.strip(), self._teams(), "this snapshot")
            except ValueError as exc:
                raise QueryError(str(exc).removeprefix("--team ")) from None
        selected = self._filter(self.findings, self._ranks, severity, code, subject, section, waived)
        if team is not None:
            selected = of_team(selected, team)
        return {
            "filters": {
                "severity": severity,
                "code": code,
                "subject": subject,
                "section": section,
                "waived": waived,
                "team": team,
            },
            "source": self.findings_source,
            "counts": _counts(selected),
            "findings": page(selected, offset, limit),
        }

    def _teams(self) -> tuple[str, ...] | None:
        """The teams the findings were audited with (the rules file's, in file order), or None."""
        return document_teams({"policy": self.head.policy})

    def _open_by_team(self, teams: Sequence[str]) -> dict[str, int]:
        """Open findings per team of ``teams``, then ``unowned`` (a finding of two teams counts for each)."""
        counts: Counter[str] = Counter()
        for finding in self.findings:
            if not finding.get("waived"):
                counts.update(finding_teams(finding))
        return {name: counts[name] for name in (*teams, UNOWNED) if counts[name]}

    # -- a dataset -----------------------------------------------------------------------

    def dataset(
        self, identity: str, *, kind: Kind | None = None, offset: int = 0, limit: int = DEFAULT_LIMIT
    ) -> JSON:
        """One DAG or asset: its metadata, a page of its fields (tasks), its neighbours and findings."""
        graph = self._graph()
        identity = self._canonical(identity)
        found = self._resolve(identity, kind)
        if found == "external":
            node = graph.node(_key("dag", identity))
            dataset: JSON = {
                "identity": identity,
                "materialization": "external",
                "note": "a DAG named by lineage but absent from the capture (another deployment, or "
                "a DAG that failed to import): nothing else is known of it",
            }
            fields: Sequence[Any] = ()
            key = node.key
        else:
            described = self._datasets[identity][found]
            dataset = dataset_json(described)
            del dataset["fields"]
            if found == DAG:
                dataset["paused"] = described.paused
            fields = described.fields
            key = _key(found, identity)
        dataset["fields"] = page(fields, offset, limit, _field_json)
        about = (
            [self.findings[i] for i in self._about.get((found, identity), ())] if found != "external" else []
        )
        first = min(limit, MAX_LIMIT)
        return {
            "dataset": dataset,
            "upstream": page(self._neighbours(self._in.get(key, ()), key, upstream=True), 0, first),
            "downstream": page(self._neighbours(self._out.get(key, ()), key, upstream=False), 0, first),
            "findings": page(about, 0, first),
        }

    def _neighbours(self, keys: Iterable[str], center: str, *, upstream: bool) -> list[JSON]:
        graph = self._graph()
        out = []
        for key in keys:
            node = graph.node(key)
            item = _node_json(node)
            via = graph.via.get((key, center) if upstream else (center, key))
            if via:
                item["via"] = via
            out.append(item)
        out.sort(key=lambda n: (_KIND_ORDER[n["kind"]], n["identity"]))
        return out
