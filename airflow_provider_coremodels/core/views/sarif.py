"""SARIF 2.1.0: findings as code-scanning alerts, located at the files of the DAGs concerned.

One rule per finding code (from the catalogue, with its help text; the team's own rules from the
document's ``policy`` part, which records each rule's message and help). A DAG finding points at
the DAG's file, relative to its bundle (Airflow 3 says where) or else to the folder every
DAG file shares; a task finding at its DAG's file; an asset finding at the files of the DAGs
that consume it, falling back to its producers' (a freshness finding the other way round: its
cause lies with the producers). The findings are about whole files, so each
location is the file's first line, which is what GitHub needs to show an alert. Waived
findings carry a suppression with the waiver's reason, so code scanning shows them as
dismissed rather than open. ``partialFingerprints`` follow (code, subject), so an alert
keeps its identity from one run to the next even as files change.

What the estate says is data in SARIF too: a file path that leaves its root once normalized
(``dags/../../.github/workflows/ci.yml``, an absolute path outside the DAG folder) is no location
(the finding keeps a logical one, and says why), and ``message.text`` escapes its square brackets
(SARIF 3.11.6), so no embedded link (``[text](https://...)``) is made from the estate's words.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from airflow_provider_coremodels.core.checks.teams import finding_teams
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.rules import POLICY, Rule, Subject, catalogue
from airflow_provider_coremodels.core.reading.conflicts import read_conflicts
from airflow_provider_coremodels.core.reading.merge import DEPLOYMENT_KEY
from airflow_provider_coremodels.core.views.render import display_names

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "airflow-provider-coremodels"
TOOL_URI = "https://pypi.org/project/airflow-provider-coremodels/"
_LEVEL = {"Info": "note", "Warning": "warning", "Error": "error"}


@gc_paused()
def render_sarif(
    document: Mapping[str, Any],
    *,
    tool_version: str,
    source_root: str | Mapping[str | None, str] | None = None,
    waivers_path: str | None = None,
) -> str:
    """The document's findings as one SARIF run.

    ``source_root`` is prefixed to every DAG file path: where the DAG folder or bundle sits
    in the repository the SARIF is uploaded for (``dags``, say); a mapping gives each bundle its
    own (``{"analytics": "analytics/dags", None: "dags"}``, None for every other bundle). Where the
    DAGs come from more than one bundle, a bundle without a root of its own is a folder of the
    default root, named after it: two bundles' files of one relative path are never one file.
    ``waivers_path`` is where an expired waiver is located (the waiver file, as given).
    """
    roots = dict(source_root) if isinstance(source_root, Mapping) else {None: source_root}
    locator = _Locator(document, {bundle: root for bundle, root in roots.items() if root})
    names = display_names(document)
    rules = catalogue(document)
    rule_index = {code: i for i, code in enumerate(rules)}
    # A pre-merge check's document: the findings its change opens point at the line where their
    # DAG is defined, so code scanning annotates the pull request's diff.
    given = document.get("change")
    change: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    opened = {
        (f.get("code"), f.get("subject")) for f in change.get("findingsOpened", ()) if isinstance(f, Mapping)
    }
    defined = change.get("lines")
    lines: Mapping[str, Any] = defined if isinstance(defined, Mapping) else {}
    placed = _placed(change.get("locations"))

    def _about(code: str) -> Subject:
        """What a finding's subject names; a code this version does not know may be a DAG or an asset."""
        rule = rules.get(code)
        return rule.about if rule else "dataset"

    results = []
    for finding in document.get("findings", []):
        code = finding["code"]
        result: dict[str, Any] = {
            "ruleId": code,
            "level": _LEVEL.get(finding["severity"], "warning"),
            "message": {"text": _message(finding)},
            "partialFingerprints": {"coremodelsFinding/v1": _identity(code, finding["subject"])},
            "properties": {"section": finding["section"], "subject": finding["subject"]},
        }
        if finding["subject"] in names and _about(code) in ("dag", "dataset"):
            result["properties"]["displayName"] = names[finding["subject"]]
        if code in rule_index:
            result["ruleIndex"] = rule_index[code]
        about = _about(code)
        paths = [waivers_path] if about == "waiver" and waivers_path else locator.paths(finding, about)
        if deployments := locator.deployments(finding, about):
            result["properties"]["deployments"] = deployments
        if "team" in finding:  # the rules file named teams: whose it is (unowned: no team's)
            result["properties"]["team"] = finding_teams(finding)
        if (code, finding["subject"]) in opened:
            result["properties"]["change"] = "opened"
        spots = locator.spots(finding, about, placed.get((code, finding["subject"]), ()))
        if spots and (code, finding["subject"]) in opened:  # where in the work tree it was caused
            result["locations"] = [_physical(path, line) for path, line in spots]
        elif paths:
            at = locator.lines(finding, about, lines) if (code, finding["subject"]) in opened else {}
            result["locations"] = [_physical(path, at.get(path, 1)) for path in paths]
        else:  # nothing left on disk to point at (a removed DAG, an asset only external DAGs touch)
            result["locations"] = [{"logicalLocations": [locator.logical(finding, about)]}]
            if locator.escaped(finding, about):
                result["properties"]["locationRefused"] = OUTSIDE_ROOT
        if finding.get("waived"):
            waived = finding["waived"]
            justification = waived.get("reason") or "waived"
            if waived.get("expires"):
                justification += f" (until {waived['expires']})"
            result["suppressions"] = [
                {"kind": "external", "status": "accepted", "justification": justification}
            ]
        results.append(result)

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": tool_version,
                "informationUri": TOOL_URI,
                "rules": [_rule(rule) for rule in rules.values()],
            }
        },
        "automationDetails": {"id": "coremodels/airflow/"},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {
            "fingerprint": document.get("fingerprint"),
            "facts": document.get("state", {}).get("facts", {}),
            "airflowVersion": document.get("state", {}).get("airflowVersion"),
            "capturedAt": document.get("state", {}).get("capturedAt"),
            **_deployments(document.get("state", {})),
            **_isolation(document.get("change")),
        },
    }
    sarif = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(sarif, indent=2, ensure_ascii=False)


def _isolation(change: Any) -> dict[str, Any]:
    """A pre-merge run's isolation (``sandbox`` or ``process``), as its other views say it first."""
    if not isinstance(change, dict) or not isinstance(change.get("isolation"), str):
        return {}
    return {"isolation": change["isolation"], "isolationDetail": change.get("isolationDetail")}


def _deployments(state: Mapping[str, Any]) -> dict[str, Any]:
    """Which deployment the run is about: its name, or a merged estate's names."""
    if state.get("deployments"):
        return {"deployments": list(state["deployments"])}
    return {"deployment": state["deployment"]} if state.get("deployment") else {}


#: Asset findings whose cause lies with the asset's producers, located at their DAG files.
_AT_PRODUCERS = frozenset(("asset-stale", "producer-failing"))


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": "".join(part.capitalize() for part in rule.code.split("-")),
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": f"{rule.message} {rule.help}"},
        # the built-in help is our own markdown; a rules file's help is shown as the text it is
        "help": {"text": rule.help} if rule.section == POLICY else {"text": rule.help, "markdown": rule.help},
        "defaultConfiguration": {"level": _LEVEL[rule.severity.value]},
        "properties": {"tags": ["airflow", "governance", rule.section.lower()]},
    }


def _message(finding: Mapping[str, Any]) -> str:
    text = f"{finding['subject']}: {finding['message']}"
    if finding.get("detail"):
        text += f" ({finding['detail']})"
    return plain_text(text)


_BRACKET = re.compile(r"(\\*)([\[\]])")


def plain_text(text: str) -> str:
    """Text for a SARIF plain-text message that no viewer turns into a link: every square bracket
    escaped with a backslash (SARIF 3.11.6: a literal bracket in a message is written ``\\[``), the
    backslashes right before one doubled, so ``[click](https://evil)`` reads as written."""
    if "[" not in text and "]" not in text:
        return text
    return _BRACKET.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), text)


#: Why a finding points at no file although its DAG has one.
OUTSIDE_ROOT = (
    "the DAG's file path leaves its folder once normalized (..): "
    "no file outside the source root is pointed at"
)


def _contained(path: str | None) -> str | None:
    """A relative file path, normalized (``a/./b``, ``a/x/../b``: ``a/b``); None where it leaves
    the folder it is relative to (``../x``, ``a/../../x``) or names no file."""
    if not path:
        return None
    normal = posixpath.normpath(path.lstrip("/"))
    if normal in (".", "..") or normal.startswith("../"):
        return None
    return normal


def _identity(code: str, subject: str) -> str:
    return hashlib.sha256(f"{code}\0{subject}".encode()).hexdigest()[:32]


def _physical(path: str, line: int | None = 1) -> dict[str, Any]:
    """A line of a file (its first by default; None: the file as a whole, no region), the path
    percent-encoded as a SARIF uri must be (``a b.py``: ``a%20b.py``)."""
    uri = quote(path, safe="/")
    if line is None:
        return {"physicalLocation": {"artifactLocation": {"uri": uri}}}
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": line}}}


def _placed(given: Any) -> dict[tuple[Any, Any], list[Mapping[str, Any]]]:
    """A pre-merge change's ``locations``: where each opened finding was caused, by (code, subject)."""
    placed: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for item in given if isinstance(given, list) else ():
        finding = item.get("finding") if isinstance(item, Mapping) else None
        at = item.get("at") if isinstance(item, Mapping) else None
        if isinstance(finding, Mapping) and isinstance(at, list):
            spots = [spot for spot in at if isinstance(spot, Mapping)]
            placed[(finding.get("code"), finding.get("subject"))] = spots
    return placed


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


class _Locator:
    """Find the files a finding is about, from the document's DAGs, lineage and broken files."""

    def __init__(self, document: Mapping[str, Any], roots: Mapping[str | None, str]) -> None:
        datasets = document.get("datasets", [])
        dags = [d for d in datasets if d.get("materialization") == "dag"]
        self.assets = {d["identity"] for d in datasets if d.get("materialization") == "asset"}
        self.paused = {d["identity"] for d in dags if d.get("metadata", {}).get("airflow.paused") == "true"}
        self.deployment: dict[str, str] = {
            d["identity"]: d["metadata"][DEPLOYMENT_KEY]
            for d in dags
            if isinstance(d.get("metadata", {}).get(DEPLOYMENT_KEY), str)
        }
        self.roots = roots
        broken = [f for f in document.get("importErrors") or [] if isinstance(f, Mapping)]
        bundles = {d.get("metadata", {}).get("airflow.bundle") for d in dags} | {
            f.get("bundle") for f in broken
        }
        self.by_bundle = len(bundles - {None}) > 1
        # Only needed where the API gave no bundle path (Airflow 2): computed only then.
        unplaced = [d for d in dags if not d.get("metadata", {}).get("airflow.relativeFileloc")]
        self.folder = _shared_folder(
            [d["physicalName"] for d in unplaced if _absolute(d.get("physicalName"))]
            + [f["path"] for f in broken if not f.get("bundle") and _absolute(f.get("path"))]
        )
        self.files: dict[str, str] = {}
        #: DAGs and broken files whose path leaves its folder: pointed at nowhere, said so.
        self.outside: set[str] = set()
        for dag in dags:
            given = _relative_path(dag, self.folder)
            path = _contained(given)
            if path:
                self.files[dag["identity"]] = self._rooted(
                    dag.get("metadata", {}).get("airflow.bundle"), path
                )
            elif given:
                self.outside.add(dag["identity"])
        self.broken: dict[str, str] = {}
        for file in broken:
            path = file.get("path")
            if isinstance(path, str) and path and isinstance(file.get("file"), str):
                relative = posixpath.relpath(path, self.folder) if self.folder and _absolute(path) else path
                contained = _contained(relative)
                if contained:
                    self.broken[file["file"]] = self._rooted(file.get("bundle"), contained)
                else:
                    self.outside.add(file["file"])
        self.consumers: dict[str, list[str]] = defaultdict(list)
        self.producers: dict[str, list[str]] = defaultdict(list)
        for edge in document.get("lineage", []):
            if edge.get("dependentKind") == edge.get("dependsOnKind") == "dag":
                continue  # a trigger or a sensor: no asset end to place a finding at
            producing = edge.get("dependentKind") == "asset"
            dag_id, asset = (
                (edge["dependsOn"], edge["dependent"])
                if producing
                else (edge["dependent"], edge["dependsOn"])
            )
            if asset in self.assets and dag_id in self.files:
                (self.producers if producing else self.consumers)[asset].append(dag_id)
        # An asset Airflow refused is in no listing: its conflict sits at the DAGs that declare it.
        self.conflicts: dict[str, list[str]] = defaultdict(list)
        for dag in dags:
            conflicts, _ = read_conflicts(dag.get("metadata", {}).get("airflow.assetConflict", ""))
            for conflict in conflicts:
                if dag["identity"] in self.files:
                    self.conflicts[conflict.uri].append(dag["identity"])

    def _rooted(self, bundle: Any, path: str) -> str:
        """A file's path in the repository: under its bundle's root, else the default root (in a
        folder named after the bundle where there are several)."""
        if isinstance(bundle, str) and bundle in self.roots:
            return posixpath.join(self.roots[bundle], path)
        if self.by_bundle and isinstance(bundle, str):
            path = posixpath.join(bundle, path)
        root = self.roots.get(None)
        return posixpath.join(root, path) if root else path

    def paths(self, finding: Mapping[str, Any], about: Subject) -> list[str]:
        if about == "file":
            file = self.broken.get(finding["subject"])
            return [file] if file else []
        return sorted({self.files[dag] for dag in self.dags(finding, about)})

    def lines(self, finding: Mapping[str, Any], about: Subject, defined: Mapping[str, Any]) -> dict[str, int]:
        """Where in each of its files a finding's DAG is defined (``defined``: dag_id -> line)."""
        out: dict[str, int] = {}
        for dag in self.dags(finding, about) if about != "file" else ():
            line = defined.get(dag)
            if isinstance(line, int) and not isinstance(line, bool) and line >= 1:
                out.setdefault(self.files[dag], line)
        return out

    def spots(
        self, finding: Mapping[str, Any], about: Subject, placed: Iterable[Mapping[str, Any]]
    ) -> list[tuple[str, int | None]]:
        """The files and lines a change's ``locations`` give a finding: a DAG's file as the document
        places it, a broken file's, or (a file the change deleted) the path its baseline gave,
        within its folder. A spot without a line is the file as a whole."""
        out: dict[tuple[str, int | None], None] = {}
        for spot in placed:
            dag, file = spot.get("dag"), spot.get("file")
            if isinstance(dag, str) and dag in self.files:
                path: str | None = self.files[dag]
            elif about == "file" and finding["subject"] in self.broken:
                path = self.broken[finding["subject"]]
            elif isinstance(file, str) and not file.startswith("/") and (contained := _contained(file)):
                path = self._rooted(spot.get("bundle"), contained)
            else:
                path = None
            if path:
                out[(path, _line(spot.get("line")))] = None
        return list(out)

    def escaped(self, finding: Mapping[str, Any], about: Subject) -> bool:
        """Whether the finding is about a DAG or file whose path was refused as leaving its folder."""
        subject = finding["subject"]
        if about == "task":
            head = subject
            while "." in head:
                head = head.rsplit(".", 1)[0]
                if head in self.outside:
                    return True
            return False
        return subject in self.outside

    def deployments(self, finding: Mapping[str, Any], about: Subject) -> list[str]:
        """In a merged estate, the deployments of the DAGs the finding is located at."""
        return sorted({self.deployment[dag] for dag in self.dags(finding, about) if dag in self.deployment})

    def dags(self, finding: Mapping[str, Any], about: Subject) -> list[str]:
        """The DAGs (with a file) a finding is located at."""
        subject = finding["subject"]
        if finding["code"] == "asset-conflict" and subject in self.conflicts:
            return self.conflicts[subject]
        if about in ("dag", "dataset") and subject in self.files:
            return [subject]
        if about in ("asset", "dataset") and subject in self.assets:
            if finding["code"] in _AT_PRODUCERS:  # the cause is with the active producers the detail names
                producers = self.producers.get(subject, [])
                return [p for p in producers if p not in self.paused] or self.consumers.get(subject) or []
            return self.consumers.get(subject) or self.producers.get(subject) or []
        if about == "task":
            dag = self._dag_of_task(subject)
            return [dag] if dag else []
        if about == "edge":  # "<dependsOn> -> <dependent>": one end is the DAG
            return [end for end in subject.split(" -> ") if end in self.files][:1]
        return []

    def logical(self, finding: Mapping[str, Any], about: Subject) -> dict[str, str]:
        subject = finding["subject"]
        if about == "task":
            kind = "member"
        elif about == "bundle":
            kind = "namespace"
        elif about in ("edge", "asset") or (
            about == "dataset" and (subject in self.assets or "://" in subject)
        ):
            kind = "resource"
        else:
            kind = "module"
        return {"fullyQualifiedName": subject, "kind": kind}

    def _dag_of_task(self, subject: str) -> str | None:
        """The DAG of a ``dag_id.task_id`` subject; dag ids may hold dots, so the longest match wins."""
        head = subject
        while "." in head:
            head = head.rsplit(".", 1)[0]
            if head in self.files:
                return head
        return None


def _absolute(path: Any) -> bool:
    return isinstance(path, str) and path.startswith("/")


def _shared_folder(paths: list[str]) -> str | None:
    """The deepest folder every DAG file lies in: the DAG folder, when the API gives no bundle path."""
    if not paths:
        return None
    return posixpath.commonpath([posixpath.dirname(p) for p in paths])


def _relative_path(dag: Mapping[str, Any], folder: str | None) -> str | None:
    relative = dag.get("metadata", {}).get("airflow.relativeFileloc")
    if relative:
        return str(relative).lstrip("/")
    path = dag.get("physicalName")
    if not isinstance(path, str) or not path:
        return None
    if folder is not None and _absolute(path):
        return posixpath.relpath(path, folder)
    return path.lstrip("/")
