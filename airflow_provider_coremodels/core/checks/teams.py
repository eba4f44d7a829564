"""Teams: who owns what, from the rules file's ``teams``, and the team each finding belongs to.

A platform of many teams names them once, in the rules file:
``teams: {data-eng: {owners: [...], bundles: [...], tags: [...]}}`` (each key optional, none
empty). A DAG's team is the first team, in file order, that names one of its owners, its bundle
or one of its tags, each matched exactly (``team_a`` never matches ``team_a_legacy``); a DAG no
team names has none, and the views call that ``unowned``.

A finding's teams (``team`` in the document, a list in file order, outside the fingerprint):
its subject DAG's (a task's DAG, a broken file's DAGs, else the team naming its bundle); for an
asset, its producers' teams, and for ``asset-unproduced`` (which has none) its consumers', who
are the ones harmed; an asset whose lineage crosses deployments adds the consumers' teams, so
each deployment's side hears of it. Pure: no I/O, time linear in the estate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_coremodels.core.checks.team_files import quote, unknown_keys
from airflow_provider_coremodels.core.estate.findings import Finding
from airflow_provider_coremodels.core.estate.model import DAG, BrokenFile, Dataset, Estate
from airflow_provider_coremodels.errors import RulesFileError

TEAM_KEYS = ("owners", "bundles", "tags")
#: What the views call the findings and DAGs no team owns; no team may be named so.
UNOWNED = "unowned"
#: In ``on_new_findings``: every new finding, whichever team it is of.
EVERY_TEAM = "*"
MAX_TEAMS = 1000
MAX_NAME_CHARS = 100
MAX_NAMES = 10_000

_BUNDLE_KEY = "airflow.bundle"
_OWNERS_KEY = "airflow.owners"


@dataclass(frozen=True, slots=True)
class Team:
    """One team of the rules file: the owners, bundles and tags that make a DAG its own."""

    name: str
    owners: tuple[str, ...] = ()
    bundles: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "owners": list(self.owners),
            "bundles": list(self.bundles),
            "tags": list(self.tags),
        }


@dataclass(frozen=True, eq=False)
class Teams:
    """The teams of one rules file, in file order, with what each owner, bundle and tag points at."""

    teams: tuple[Team, ...]
    _owner: dict[str, int] = field(init=False, repr=False)
    _bundle: dict[str, int] = field(init=False, repr=False)
    _tag: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for attr, key in (("_owner", "owners"), ("_bundle", "bundles"), ("_tag", "tags")):
            first: dict[str, int] = {}
            for index, team in enumerate(self.teams):
                for value in getattr(team, key):
                    first.setdefault(value, index)  # the first team in file order wins
            object.__setattr__(self, attr, first)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(team.name for team in self.teams)

    def get(self, name: str) -> Team | None:
        return next((team for team in self.teams if team.name == name), None)

    def of_bundle(self, bundle: str | None) -> str | None:
        index = self._bundle.get(bundle) if bundle else None
        return None if index is None else self.teams[index].name

    def team_of(self, dag: Dataset) -> str | None:
        """The DAG's team: the first in file order naming one of its owners, its bundle or a tag."""
        return self.team_by(owners(dag), dag.metadata.get(_BUNDLE_KEY), dag.tags)

    def team_by(self, owned_by: Iterable[str], bundle: str | None, tags: Iterable[str]) -> str | None:
        """The team of a DAG with these owners, bundle and tags (``team_of``'s rule)."""
        found = [self._owner.get(owner) for owner in owned_by]
        found.append(self._bundle.get(bundle or ""))
        found.extend(self._tag.get(tag) for tag in tags)
        hits = [index for index in found if index is not None]
        return self.teams[min(hits)].name if hits else None

    def json(self) -> list[dict[str, Any]]:
        return [team.json() for team in self.teams]


def owners(dag: Dataset) -> list[str]:
    """A DAG's owners as the document keeps them: stripped, empty ones dropped."""
    return [owner.strip() for owner in dag.metadata.get(_OWNERS_KEY, "").split(",") if owner.strip()]


# -- the rules file's ``teams`` ---------------------------------------------------------------


def _fail(where: str, problem: str) -> RulesFileError:
    return RulesFileError(f"{where} {problem}")


def teams_from_value(value: Any, where: str = "teams") -> Teams:
    """Check ``teams`` as the rules file gives it: a mapping of team names to ``owners``, ``bundles``
    and ``tags`` lists. Raises RulesFileError naming the team and key."""
    if not isinstance(value, dict):
        raise _fail(
            where, f"must be a mapping of team names to {{owners, bundles, tags}}, got {quote(value)}"
        )
    if not value:
        raise _fail(where, "names no team; leave it out, or name at least one")
    if len(value) > MAX_TEAMS:
        raise _fail(where, f"names {len(value):,} teams, over the {MAX_TEAMS:,}-team limit")
    teams = []
    for name, entry in value.items():
        teams.append(_team(name, entry, where))
    return Teams(tuple(teams))


def _team(name: Any, entry: Any, where: str) -> Team:
    if not isinstance(name, str) or not name.strip():
        raise _fail(where, f"has a team name {quote(name)}; a team's name is a non-empty string")
    if name != name.strip() or len(name) > MAX_NAME_CHARS:
        raise _fail(
            f"{where}.{quote(name)}",
            f"must have no surrounding spaces and at most {MAX_NAME_CHARS} characters",
        )
    if name in (UNOWNED, EVERY_TEAM):
        raise _fail(
            f"{where}.{name}", f"is reserved: {UNOWNED} names what no team owns, {EVERY_TEAM} every team"
        )
    here = f"{where}.{name}"
    if not isinstance(entry, dict):
        raise _fail(here, f"must be a mapping of {', '.join(TEAM_KEYS)}, got {quote(entry)}")
    if unknown := unknown_keys(entry, TEAM_KEYS):
        raise _fail(here, unknown)
    if not entry:
        raise _fail(here, f"is empty: a team names at least one of {', '.join(TEAM_KEYS)}")
    lists = {key: _names(entry[key], f"{here}.{key}") for key in TEAM_KEYS if key in entry}
    return Team(name, **lists)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _fail(where, f"must be a list of names, got {quote(value)}")
    if not value:
        raise _fail(where, "is an empty list; name at least one, or leave the key out")
    if len(value) > MAX_NAMES:
        raise _fail(where, f"lists {len(value):,} names, over the {MAX_NAMES:,}-name limit")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise _fail(f"{where}[{i}]", f"must be a non-empty string, got {quote(item)}")
        out.append(item.strip())
    return tuple(out)


def teams_from_json(value: Any) -> Teams | None:
    """The teams a document's ``policy.teams`` recorded (``Team.json`` each), None when there are
    none or they are not readable."""
    if not isinstance(value, list) or not value:
        return None
    teams = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        lists = {
            key: tuple(str(v) for v in item.get(key) or () if isinstance(v, str))
            for key in TEAM_KEYS
            if isinstance(item.get(key) or [], list)
        }
        teams.append(Team(item["name"], **lists))
    return Teams(tuple(teams))


# -- each finding's teams ---------------------------------------------------------------------

#: Codes whose subject is an asset URI.
ASSET_CODES = frozenset(
    {"asset-unproduced", "asset-conflict", "paused-producer", "asset-stale", "producer-failing"}
)
#: Codes whose subject is a dataset of either kind (their detail says which).
DATASET_CODES = frozenset({"dataset-unmapped", "dataset-removed"})


class TeamIndex:
    """What a finding's teams are worked out from: each DAG's team (the estate's, else the
    baseline's for a DAG that is gone), each asset's producers and consumers, the broken files.
    A DAG's team is worked out when a finding first needs it, and the assets' sides when an asset's
    finding first does: an estate of 10,000 DAGs has a few thousand findings about a few of them."""

    def __init__(
        self,
        teams: Teams,
        estate: Estate,
        baseline: Estate | None = None,
        import_errors: Sequence[BrokenFile] = (),
    ) -> None:
        self.teams = teams
        self.order = {name: i for i, name in enumerate(teams.names)}
        self._sources = (estate, baseline) if baseline is not None else (estate,)
        self.dags: dict[str, Dataset] = {}
        self.assets: set[str] = set()
        for source in self._sources:
            for dataset in source.datasets:
                if dataset.materialization == DAG:
                    self.dags.setdefault(dataset.identity, dataset)
                else:
                    self.assets.add(dataset.identity)
        self._teams: dict[str, str | None] = {}
        self._sides: tuple[dict[str, set[str]], dict[str, set[str]], set[str]] | None = None
        self.files = {file.file: file for file in (*import_errors, *estate.import_errors)}

    def team(self, dag: str) -> str | None:
        """The team of the DAG ``dag`` (an identity of the estate or the baseline), None for none."""
        if dag in self._teams:
            return self._teams[dag]
        dataset = self.dags.get(dag)
        found = self._teams[dag] = self.teams.team_of(dataset) if dataset is not None else None
        return found

    def sides(self) -> tuple[dict[str, set[str]], dict[str, set[str]], set[str]]:
        """Each asset's producing and consuming DAGs (both estates' lineage), and the assets whose
        lineage crosses deployments."""
        if self._sides is None:
            producers: dict[str, set[str]] = {}
            consumers: dict[str, set[str]] = {}
            crossing: set[str] = set()
            for source in self._sources:
                for edge in source.lineage:
                    if edge.dag_link:
                        continue
                    side = producers if edge.producing else consumers
                    side.setdefault(edge.asset, set()).add(edge.dag_id)
                    if edge.cross_deployment:
                        crossing.add(edge.asset)
            self._sides = (producers, consumers, crossing)
        return self._sides

    def _sorted(self, names: Iterable[str | None]) -> tuple[str, ...]:
        return tuple(sorted({n for n in names if n is not None}, key=self.order.__getitem__))

    def dag(self, subject: str) -> str | None:
        """The DAG a subject names: itself, or the DAG of a ``dag_id.task_id`` (dag_ids may hold dots)."""
        head = subject
        while True:
            if head in self.dags:
                return head
            if "." not in head:
                return None
            head = head.rsplit(".", 1)[0]

    def of_dag(self, subject: str) -> tuple[str, ...]:
        dag = self.dag(subject)
        return self._sorted([self.team(dag)]) if dag is not None else ()

    def of_asset(self, uri: str, code: str) -> tuple[str, ...]:
        all_producers, all_consumers, crossing = self.sides()
        producers = all_producers.get(uri, set())
        consumers = all_consumers.get(uri, set())
        harmed = consumers if code == "asset-unproduced" or not producers else producers
        if uri in crossing:
            harmed = producers | consumers
        return self._sorted(self.team(dag) for dag in harmed)

    def of_file(self, subject: str) -> tuple[str, ...]:
        file = self.files.get(subject)
        if file is None:
            return ()
        found = self._sorted(self.team(dag) for dag in file.dags)
        return found or self._sorted([self.teams.of_bundle(file.bundle)])

    def of_edge(self, subject: str) -> tuple[str, ...]:
        ends = subject.split(" -> ")
        return self._sorted(self.team(end) for end in ends if end in self.dags)

    def of(self, code: str, subject: str, detail: str | None) -> tuple[str, ...]:
        """The teams of a finding of ``code`` about ``subject``: those it belongs to, in file order."""
        if code in ASSET_CODES:
            return self.of_asset(subject, code)
        if code in DATASET_CODES:
            is_asset = "asset" in (detail or "") and subject in self.assets
            return self.of_asset(subject, code) if is_asset else self.of_dag(subject)
        if code == "dag-import-error":
            return self.of_file(subject)
        if code == "examples-loaded":
            return self._sorted([self.teams.of_bundle(subject)])
        if code in ("lineage-added", "lineage-removed"):
            return self.of_edge(subject)
        if code == "waiver-expired":  # "<code> <subject>": the waived subject's, where it is a DAG's
            waived = subject.partition(" ")[2]
            return self.of_dag(waived) or (self.of_asset(waived, "") if waived in self.assets else ())
        return self.of_dag(subject)  # a DAG's, a task's, a policy rule's, a link's


def with_teams(findings: Iterable[Finding], index: TeamIndex) -> list[Finding]:
    """The findings, each carrying its teams (an empty tuple: unowned)."""
    return [
        Finding(
            f.section,
            f.severity,
            f.code,
            f.subject,
            f.message,
            f.detail,
            f.waived,
            index.of(f.code, f.subject, f.detail),
        )
        for f in findings
    ]


# -- the views --------------------------------------------------------------------------------


def document_teams(document: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The team names a document was audited with, in file order; None when it has no teams."""
    policy = document.get("policy")
    teams = teams_from_json(policy.get("teams")) if isinstance(policy, Mapping) else None
    return teams.names if teams is not None else None


def finding_teams(finding: Mapping[str, Any]) -> list[str]:
    """A finding's teams as the views group it: its ``team`` list, or ``[unowned]``."""
    teams = finding.get("team")
    named = [t for t in teams if isinstance(t, str)] if isinstance(teams, list) else []
    return named or [UNOWNED]


def of_team(findings: Iterable[Mapping[str, Any]], team: str) -> list[Any]:
    """The findings of ``team`` (``unowned``: those of no team)."""
    return [f for f in findings if team in finding_teams(f)]


def grouped(findings: Sequence[Mapping[str, Any]], names: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
    """Each team's findings, teams in file order then ``unowned``; a team with none is left out.
    A finding of two teams is in both groups: each team reads its own list whole."""
    for name in (*names, UNOWNED):
        mine = of_team(findings, name)
        if mine:
            yield name, mine


def checked_team(name: str, names: Sequence[str] | None, what: str = "the document") -> str:
    """``--team NAME`` checked against the teams ``what`` was audited with; a UsageError-worthy
    message (ValueError) when it has none or names another."""
    if names is None:
        raise ValueError(f"--team {name}: {what} names no teams (give --rules with a teams: part)")
    if name != UNOWNED and name not in names:
        raise ValueError(f"--team {name}: no such team; the teams are {', '.join(names)} (and {UNOWNED})")
    return name


def for_team(document: Mapping[str, Any], team: str) -> dict[str, Any]:
    """The document with only ``team``'s findings (and its ``change``'s), for one team's view; the
    change's breaks are those whose finding is the team's, or whose broken DAG is."""
    out = dict(document)
    out["findings"] = of_team(document.get("findings") or [], team)
    change = document.get("change")
    if isinstance(change, Mapping):
        opened = of_team(change.get("findingsOpened") or [], team)
        out["change"] = {
            **change,
            "findingsOpened": opened,
            "findingsClosed": of_team(change.get("findingsClosed") or [], team),
        }
        if isinstance(change.get("breaks"), list):
            said = {(f.get("code"), f.get("subject")) for f in opened}
            out["change"]["breaks"] = [
                b
                for b in change["breaks"]
                if isinstance(b, Mapping)
                and (
                    b.get("team") == team
                    or (b.get("finding", {}).get("code"), b.get("finding", {}).get("subject")) in said
                )
            ]
    return out


# -- the team report (the ``teams`` command) --------------------------------------------------


def team_report(document: Mapping[str, Any], teams: Teams) -> dict[str, Any]:
    """Who owns what in one audited document: each team (in file order, then ``unowned``) with
    what makes a DAG its own, its DAGs, and its open findings by severity and waived ones."""
    dags: dict[str, list[str]] = {name: [] for name in (*teams.names, UNOWNED)}
    for dataset in document.get("datasets") or ():
        if not isinstance(dataset, Mapping) or dataset.get("materialization") != DAG:
            continue
        given_metadata = dataset.get("metadata")
        metadata: Mapping[str, Any] = given_metadata if isinstance(given_metadata, Mapping) else {}
        owned_by = [o.strip() for o in str(metadata.get(_OWNERS_KEY) or "").split(",") if o.strip()]
        tags = [t for t in dataset.get("tags") or () if isinstance(t, str)]
        team = teams.team_by(owned_by, metadata.get(_BUNDLE_KEY), tags) or UNOWNED
        dags[team].append(str(dataset.get("identity")))
    findings = [f for f in document.get("findings") or () if isinstance(f, Mapping)]
    out = []
    for name in (*teams.names, UNOWNED):
        mine = of_team(findings, name)
        opened: dict[str, int] = {}
        for finding in mine:
            if not finding.get("waived"):
                opened[str(finding.get("severity"))] = opened.get(str(finding.get("severity")), 0) + 1
        given = teams.get(name)
        out.append(
            {
                "name": name,
                **({key: list(getattr(given, key)) for key in TEAM_KEYS} if given is not None else {}),
                "dags": sorted(dags[name]),
                "open": opened,
                "waived": sum(1 for f in mine if f.get("waived")),
            }
        )
    return {"fingerprint": document.get("fingerprint"), "teams": out}


def render_team_report(report: Mapping[str, Any], names_shown: int = 20) -> str:
    """The team report for a terminal: a row per team (its DAGs, open findings by severity, waived,
    what makes a DAG its own), then each team's DAGs; the unowned DAGs last."""
    from airflow_provider_coremodels.core.estate.text import printable

    rows: list[tuple[str, ...]] = [("TEAM", "DAGS", "ERROR", "WARNING", "INFO", "WAIVED", "MATCHED BY")]
    for team in report["teams"]:
        matched = "; ".join(f"{key}: {', '.join(team[key])}" for key in TEAM_KEYS if team.get(key))
        counts = [str(team["open"].get(s, 0)) for s in ("Error", "Warning", "Info")]
        rows.append((team["name"], str(len(team["dags"])), *counts, str(team["waived"]), matched))
    rows = [tuple(printable(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    named = sum(len(t["dags"]) for t in report["teams"] if t["name"] != UNOWNED)
    unowned = next(len(t["dags"]) for t in report["teams"] if t["name"] == UNOWNED)
    lines = [
        f"{len(report['teams']) - 1} teams · {named + unowned} DAGs: {named} owned by a team, "
        f"{unowned} unowned · fingerprint {report.get('fingerprint')}",
        "",
    ]
    for row in rows:
        cells = [
            cell.rjust(w) if 0 < i < 6 else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=False))
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    lines.append("")
    for team in report["teams"]:
        shown = team["dags"][:names_shown]
        more = f" and {len(team['dags']) - len(shown)} more" if len(team["dags"]) > len(shown) else ""
        lines.append(printable(f"{team['name']}: {', '.join(shown) or 'no DAGs'}{more}"))
    return "\n".join(lines)
