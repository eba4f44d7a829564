"""Every Airflow line the provider claims, replayed: recorded real servers against a truth by hand.

CI cannot run five Airflow lines, so ``tests/fixtures/versions/<line>/<scenario>.json.gz`` holds
what real servers of 2.11.2, 3.0.6, 3.1.8, 3.2.2 and 3.3.2 answered to the provider's own capture
(``dev/record_versions.py`` made them; the README beside them says how). Each test here starts a
``ReplayServer`` from one recording, runs ``capture(client)`` against it as export runs it, builds
and audits the estate, and checks it against ``tests/fixtures/versions/truth.py``: the lineage
each line's own example DAG code (and the probe's lifecycle DAG files) declares, written by hand.

* every edge the capture gives is declared by the code;
* every declared edge the line's API can show is given;
* every declared edge it cannot show (a blind spot) is owned up to: a lossiness record, or an
  ``asset-conflict`` finding for a refused asset;
* the example bundles, the import errors, broken and deleted files come out as the code implies.

``test_raw_fields`` reads the recordings' raw JSON and pins, by name, each field the capture and
the parse read, so a line that moves one fails there first.

Where the package and the truth disagree, the case is marked ``xfail(strict=True)`` with what is
wrong (``KNOWN``): never a weaker truth.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
from support.helpers import FIXTURES, fingerprint_without_deadlines
from support.recording import ReplayServer, capture_clock, load_recording

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.core import Estate, audit, build_document
from airflow_provider_coremodels.core.estate.model import DAG_LINKS_KEY, DEADLINE_KEY, VIA_ALIAS, VIA_INLET
from airflow_provider_coremodels.core.reading.conflicts import read_conflicts

VERSIONS = FIXTURES / "versions"


def _load_truth() -> ModuleType:
    """``tests/fixtures/versions/truth.py`` (fixtures is no package: loaded by path)."""
    spec = importlib.util.spec_from_file_location("versions_truth", VERSIONS / "truth.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


T = _load_truth()
EXAMPLE_SCENARIOS = ("examples", "examples_scheduler")
LIFECYCLE_SCENARIOS = ("broken", "deleted")

#: Disagreements between the package and the truth: (test, line, scenario) -> what is wrong. None
#: now: the one found (an inlet Airflow kept after the code dropped it, 3.1+) is a blind spot no
#: endpoint can settle, owned up to in test (a) below.
KNOWN: dict[tuple[str, str, str], str] = {}


def cases(test: str, scenarios: tuple[str, ...] = T.SCENARIOS) -> list[Any]:
    """(line, scenario) parameters with readable ids (``3.1.8-examples``), each known disagreement
    marked strict xfail."""
    params = []
    for line in T.LINES:
        for scenario in scenarios:
            marks = []
            reason = KNOWN.get((test, line, scenario))
            if reason is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            params.append(pytest.param(line, scenario, id=f"{line}-{scenario}", marks=marks))
    return params


# ------------------------------------------------------------------------------------- the replay


@dataclass(frozen=True)
class Replayed:
    recording: dict[str, Any]
    estate: Estate
    document: dict[str, Any]
    unrecorded: list[str]

    def findings(self, code: str) -> list[dict[str, Any]]:
        return [f for f in self.document["findings"] if f["code"] == code]

    def lossiness(self) -> list[dict[str, Any]]:
        return list(self.document["lossiness"])


@functools.cache
def replayed(line: str, scenario: str) -> Replayed:
    """The recording of (line, scenario) replayed through ``capture(client)`` (not keep_raw, as
    export runs it) at the recorded capture's clock, parsed, audited and made a document."""
    recording = load_recording(VERSIONS / line / f"{scenario}.json.gz")
    with ReplayServer(recording["exchanges"]) as server, capture_clock(recording["captured_at"]):
        source = ApiSource(server.base_url, username=recording["username"], password="replayed-password")
        with AirflowApiClient(source) as client:
            captured = capture(client)
        unrecorded = server.unrecorded
    estate = captured.estate()
    document = build_document(estate, audit(estate))
    return Replayed(recording, estate, document, unrecorded)


def truth_of(line: str, scenario: str) -> Any:
    return T.truth(line, scenario)


# ----------------------------------------------------------------------------------- edges


def role(edge: Any) -> str:
    if edge.producing:
        return T.PRODUCES
    return T.INLET if edge.via == VIA_INLET else T.SCHEDULES


def aliases_of(edge: Any) -> list[str]:
    """The aliases an edge was resolved through (``via`` = ``alias:<a>[,<b>...]``)."""
    if not (edge.via or "").startswith(VIA_ALIAS):
        return []
    return edge.via[len(VIA_ALIAS) :].split(",")


def declared_link_edges(truth: Any) -> set[tuple[str, str, str]]:
    """The truth's triggers and sensors as edges: (dependent, dependsOn, via)."""
    return {
        (other, dag, via) if via == "trigger" else (dag, other, via) for via, dag, _task, other in truth.links
    }


def is_declared(truth: Any, edge: Any) -> bool:
    if edge.dag_link:
        return (edge.dependent, edge.depends_on, edge.via) in declared_link_edges(truth)
    declared = {(d.kind, d.dag, d.asset) for d in truth.edges}
    kind = role(edge)
    if (kind, edge.dag_id, edge.asset) in declared:
        return True
    return any((kind, edge.dag_id, T.ALIAS + alias) in declared for alias in aliases_of(edge))


def is_given(estate: Estate, edge: Any) -> bool:
    """Whether the estate carries a declared edge. A task inlet shares its edge with the DAG's
    schedule on the same asset (one consuming edge per DAG and asset, the most direct kept), and
    a task reading the asset its own DAG writes (``self-inlet``) is its producing edge (parse.py:
    no DAG -> asset -> same DAG loop)."""
    for held in estate.lineage:
        if held.dag_id != edge.dag or held.asset != edge.asset:
            continue
        if edge.kind == T.PRODUCES and held.producing:
            return True
        if edge.kind == T.SCHEDULES and not held.producing and held.via != VIA_INLET:
            return True
        if edge.kind == T.INLET and (not held.producing or edge.note == "self-inlet"):
            return True
    return False


def owned_up(replay: Replayed, truth: Any, edge: Any, spot: str) -> str | None:
    """None where the estate says why ``edge`` cannot be shown (blind spot ``spot``), else what
    is missing."""
    records = replay.lossiness()
    if spot == T.UNRESOLVED_ALIAS:
        alias = edge.asset[len(T.ALIAS) :]
        if any(r.get("subject") == alias or f"alias '{alias}'" in r["message"] for r in records):
            return None
        return f"no lossiness record names the unresolved alias '{alias}'"
    if spot == T.ASSET_INPUTS:
        if any(
            r["message"].startswith("the inputs of @asset functions") and edge.dag in r["message"]
            for r in records
        ):
            return None
        return f"no lossiness record says the inputs of @asset function {edge.dag} appear in no endpoint"
    if spot == T.NO_INLETS:
        if any(r["message"].startswith("task inlets unknown") for r in records):
            return None
        return "no lossiness record says the API lists no task inlets"
    if spot == T.REFUSED_ASSET:
        if is_given(replay.estate, edge):
            return None  # the active one of the clashing pair
        for finding in replay.findings("asset-conflict"):
            if finding["subject"] == edge.asset and re.search(
                rf"\b{re.escape(edge.dag)}\b", finding["detail"] or ""
            ):
                return None
        return f"no asset-conflict finding about {edge.asset} names {edge.dag} ({truth.clashes[edge.asset]})"
    raise AssertionError(f"unknown blind spot {spot}")


def describe(edge: Any) -> str:
    if getattr(edge, "dag_link", False):
        return f"{edge.via} {edge.depends_on} -> {edge.dependent}"
    if hasattr(edge, "producing"):
        arrow = f"{edge.dag_id} -> {edge.asset}" if edge.producing else f"{edge.asset} -> {edge.dag_id}"
        return f"{role(edge)} {arrow}" + (f" (via {edge.via})" if edge.via else "")
    arrow = f"{edge.dag} -> {edge.asset}" if edge.kind == T.PRODUCES else f"{edge.asset} -> {edge.dag}"
    return f"{edge.kind} {arrow}" + (f" ({edge.note})" if edge.note else "")


# ------------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize(("line", "scenario"), cases("test_replay_is_complete"))
def test_replay_is_complete(line: str, scenario: str) -> None:
    """The capture asks the replayed server nothing the real one was not asked: the recording is
    the whole of what the capture reads (so every other test here sees a real server's answers)."""
    replay = replayed(line, scenario)
    assert replay.unrecorded == []
    assert replay.recording["airflow"] == line and replay.recording["scenario"] == scenario
    assert replay.estate.state.airflow_version == line


@pytest.mark.parametrize(("line", "scenario"), cases("test_captured_edges_are_declared"))
def test_captured_edges_are_declared(line: str, scenario: str) -> None:
    """(a) Every edge the capture gives is one the DAG code declares: no reference that outlived
    its code (a lost outlet, a deleted file's DAG, a broken file's DAG), no edge of a refused or
    unrelated asset, nothing invented."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    undeclared = [edge for edge in replay.estate.lineage if not is_declared(truth, edge)]
    # A task inlet the code dropped stays in Airflow's references on 3.1+ (the lifecycle's step d:
    # reader), and no endpoint shows a DAG's current inlets: the edge may only stand where a
    # record names its reader and every finding that counts the reader says it is unconfirmed.
    unconfirmed = replay.estate.unconfirmed_inlets()
    owned = [edge for edge in undeclared if edge.via == VIA_INLET and edge.dag_id in unconfirmed]
    assert [describe(edge) for edge in undeclared if edge not in owned] == []
    for edge in owned:
        for finding in replay.document["findings"]:
            if finding["subject"] == edge.asset and edge.dag_id in (finding["detail"] or ""):
                assert "read only through a task inlet Airflow may keep" in finding["detail"], finding


@pytest.mark.parametrize(("line", "scenario"), cases("test_declared_edges_are_captured"))
def test_declared_edges_are_captured(line: str, scenario: str) -> None:
    """(b) Every edge the code declares that the line's API can show is in the estate: outlets,
    schedules on assets (lists, ``&``/``|`` conditions, ``Asset.ref``, timetables on assets) and,
    from 3.1, task inlets."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    missing = [
        describe(edge)
        for edge in truth.edges
        if T.blind_spot(truth, edge) is None and not is_given(replay.estate, edge)
    ]
    assert missing == []


@pytest.mark.parametrize(("line", "scenario"), cases("test_blind_spots_are_owned_up"))
def test_blind_spots_are_owned_up(line: str, scenario: str) -> None:
    """(c) Every declared edge the line's API cannot show is owned up to: task inlets before 3.1,
    ``@asset`` inputs, aliases nobody has written through (a lossiness record each), and the
    edges of an asset Airflow refused (an ``asset-conflict`` finding naming the DAG)."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    unowned = []
    for edge in truth.edges:
        spot = T.blind_spot(truth, edge)
        if spot is not None and (problem := owned_up(replay, truth, edge, spot)) is not None:
            unowned.append(f"{describe(edge)}: {spot}: {problem}")
    assert unowned == []


@pytest.mark.parametrize(
    ("line", "scenario"), cases("test_examples_are_one_finding_per_bundle", EXAMPLE_SCENARIOS)
)
def test_examples_are_one_finding_per_bundle(line: str, scenario: str) -> None:
    """Airflow's example DAGs get no findings of their own (no ``dag-no-owner`` or
    ``dag-no-description``: every DAG here is an example), and each example bundle gets one
    ``examples-loaded`` finding, subject the bundle, counting every DAG of it: ``example_dags``
    (2.11: by file location), and on 3.3 each provider's ``apache-airflow-providers-*-example-dags``."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    about_examples = [
        (f["code"], f["subject"])
        for f in replay.document["findings"]
        if f["code"] in ("dag-no-owner", "dag-no-description")
    ]
    assert about_examples == []
    loaded = {f["subject"]: f["detail"] for f in replay.findings("examples-loaded")}
    assert sorted(loaded) == sorted(truth.bundles)
    for bundle, count in truth.bundles.items():
        counted = f"{count} example DAG{'s' if count != 1 else ''}: "
        assert loaded[bundle].startswith(counted), (bundle, loaded[bundle])
    by_bundle: dict[str, int] = {}
    for dag in replay.estate.dags():
        bundle = dag.metadata.get("airflow.bundle", "example_dags")  # 2.11 has no bundles
        by_bundle[bundle] = by_bundle.get(bundle, 0) + 1
    assert by_bundle == dict(truth.bundles)


@pytest.mark.parametrize(("line", "scenario"), cases("test_import_errors"))
def test_import_errors(line: str, scenario: str) -> None:
    """The files that do not import, as the document and the findings name them: ``<bundle>/<path
    in the bundle>`` on 3.x (3.0 gives the absolute path, which the parse makes relative), the
    absolute path on 2.11; the error's line; one ``dag-import-error`` finding per file."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    files = {entry["file"]: entry for entry in replay.document["importErrors"]}
    assert sorted(files) == sorted(truth.import_errors)
    for file, fragment in truth.import_errors.items():
        assert fragment in files[file]["error"], files[file]
    subjects = sorted(f["subject"] for f in replay.findings("dag-import-error"))
    assert subjects == sorted(truth.import_errors)


@pytest.mark.parametrize(("line", "scenario"), cases("test_lifecycle_dags", LIFECYCLE_SCENARIOS))
def test_lifecycle_dags(line: str, scenario: str) -> None:
    """The DAGs the estate describes are those whose files are there: a broken file's DAG is
    kept (as last parsed), a deleted file's DAG is not."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    assert {dag.identity for dag in replay.estate.dags()} == set(truth.dags)


@pytest.mark.parametrize(("line", "scenario"), cases("test_broken_file", ("broken",)))
def test_broken_file(line: str, scenario: str) -> None:
    """A file broken with a NameError: its DAG stays in the datasets, has no edge (Airflow may
    still name it as a producer), and a ``dag-import-error`` finding names its file and the DAG."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    dag_ids = {dag.identity for dag in replay.estate.dags()}
    for dag_id in truth.broken:
        assert dag_id in dag_ids
        assert [describe(e) for e in replay.estate.lineage if e.dag_id == dag_id] == []
    (file,) = truth.import_errors
    (finding,) = [f for f in replay.findings("dag-import-error") if f["subject"] == file]
    for dag_id in truth.broken:
        assert f"dags: {dag_id}" in finding["detail"], finding


@pytest.mark.parametrize(("line", "scenario"), cases("test_deleted_and_dropped", ("deleted",)))
def test_deleted_and_dropped(line: str, scenario: str) -> None:
    """After a lost outlet, a lost inlet and a deleted file: no edge is ``external`` (the deleted
    file's DAG is known to be gone, not someone else's), ``gone`` is not in the datasets, and
    ``loser`` is no producer of ``s3://lake/lost`` though Airflow 3 still lists it as one."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    assert [describe(e) for e in replay.estate.lineage if e.external] == []
    identities = {d.identity for d in replay.estate.datasets}
    for dag_id in truth.gone:
        assert dag_id not in identities
    assert not any(
        e.producing and e.dag_id == "loser" and e.asset == "s3://lake/lost" for e in replay.estate.lineage
    )


@pytest.mark.parametrize(("line", "scenario"), cases("test_dag_links", EXAMPLE_SCENARIOS))
def test_dag_links(line: str, scenario: str) -> None:
    """Triggers and sensors: on 3.x each one the example code declares is an edge between two DAGs
    (from the dependency graph) and its DAG names the task; Airflow 2 serves no graph, so each is
    one lossiness record naming the task instead, and no edge."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    links = {(e.dependent, e.depends_on, e.via) for e in replay.estate.lineage if e.dag_link}
    records = {
        r.get("subject"): r["message"] for r in replay.lossiness() if "links to is not known" in r["message"]
    }
    if truth.major == 2:
        assert links == set()
        assert set(records) == {f"{dag}.{task}" for _via, dag, task, _other in truth.links}
        assert all("Airflow 2 serves none" in message for message in records.values())
        return
    assert links == declared_link_edges(truth)
    assert records == {}
    dags = {d.identity: d for d in replay.estate.dags()}
    for via, dag, task, other in truth.links:
        assert {"dag": other, "task": task, "via": via} in json.loads(dags[dag].metadata[DAG_LINKS_KEY])
    assert [f for f in replay.document["findings"] if f["code"].startswith("dag-link")] == []


#: Fingerprints of recorded estates without a trigger or sensor, as the provider gave them before it
#: read links between DAGs: an estate without links keeps its fingerprint. Since it reads deadline
#: alerts, a 3.3 DAG carries ``airflow.deadline`` (``[]`` here), the one change to its fingerprint:
#: the fingerprint is taken without that key.
LINKLESS_FINGERPRINTS = {
    ("3.0.6", "broken"): "ee71fd464ad796fc",
    ("3.0.6", "deleted"): "67dfad8d3ac2f73d",
    ("3.3.2", "broken"): "512e0176006eb268",
    ("3.3.2", "deleted"): "047e0a224dad44ac",
    ("2.11.2", "examples"): "8c86a61e9c66be44",  # links there, unseen: the same estate as before
}


@pytest.mark.parametrize(("line", "scenario"), sorted(LINKLESS_FINGERPRINTS))
def test_fingerprint_without_links_is_unchanged(line: str, scenario: str) -> None:
    replay = replayed(line, scenario)
    assert not any(e.dag_link for e in replay.estate.lineage)
    read = {d.identity: d.metadata.get(DEADLINE_KEY) for d in replay.estate.dags()}
    assert set(read.values()) == ({"[]"} if line == "3.3.2" else {None})
    assert fingerprint_without_deadlines(replay.estate) == LINKLESS_FINGERPRINTS[(line, scenario)]


@pytest.mark.parametrize(("line", "scenario"), cases("test_watched_assets"))
def test_watched_assets(line: str, scenario: str) -> None:
    """The assets the code gives an ``AssetWatcher`` are marked watched where the API lists
    watchers (3.2+, while a DAG scheduled on them is unpaused), and ``unknown`` with a lossiness
    record where it cannot tell: never taken for assets nothing updates."""
    replay, truth = replayed(line, scenario), truth_of(line, scenario)
    assets = {d.identity: d for d in replay.estate.assets()}
    records = [r["message"] for r in replay.lossiness() if r["message"].startswith("watchers of ")]
    for uri in truth.watched:
        assert uri in assets
        watched = assets[uri].metadata.get("airflow.watched")
        if truth.minor < (3, 2):
            assert watched == "unknown", uri
        assert watched in ("true", "unknown"), uri
        if watched == "unknown":
            assert any(uri in message for message in records), (uri, records)


# Per line: the assets of the example DAGs on CronPartitionTimetable(hourly) (timetable_partitioned,
# timetable_summary "0 * * * *" / "15 * * * *" / "30 * * * *"), and how many assets keep only
# producers on a partitioned timetable that states no cadence ("Partitioned Asset").
HOURLY_PARTITIONED = {
    "3.2.2": (
        ["file://incoming/player-stats/team_a.csv", "file://incoming/player-stats/team_b.csv",
         "file://incoming/player-stats/team_c.csv", "file://incoming/sales/regional.csv"],
        1,
    ),
    "3.3.2": (
        ["file://incoming/player-stats/team_a.csv", "file://incoming/player-stats/team_b.csv",
         "file://incoming/player-stats/team_c.csv"],
        2,
    ),
}  # fmt: skip


@pytest.mark.parametrize("line", sorted(HOURLY_PARTITIONED))
def test_partitioned_producers_are_judged_by_their_stated_cadence(line: str) -> None:
    """Issue 35, item 3: a partitioned producer whose timetable states a cadence (its summary is its
    cron) is judged like any other, per asset; one that states none is still counted not judged."""
    from datetime import datetime, timedelta, timezone

    hourly, without_cadence = HOURLY_PARTITIONED[line]
    replay = replayed(line, "examples")
    part = replay.document["freshness"]
    assert part["notJudged"].get("partitioned producer") == without_cadence
    assert part["partitionedJudged"] >= len(hourly)
    assert not [f for f in replay.document["findings"] if f["code"] == "asset-stale"]  # just registered
    # a day after the capture: every hourly producer has missed its runs by then
    captured = datetime.strptime(replay.recording["captured_at"], "%Y-%m-%dT%H:%M:%SZ")
    later = audit(replay.estate, now=captured.replace(tzinfo=timezone.utc) + timedelta(days=1))
    stale = {f.subject: f.detail or "" for f in later.findings if f.code == "asset-stale"}
    assert sorted(stale) == hourly
    for detail in stale.values():
        assert "runs hourly, tolerance 2); judged per asset (its newest event), not per partition" in detail


# --------------------------------------------------------------------------- the raw fields


def answers(recording: dict[str, Any], method: str, path: str, **query: str) -> list[Any]:
    """The decoded bodies of the recorded answers to ``method path`` whose query has ``query``."""
    found = []
    for exchange in recording["exchanges"]:
        pairs = {(name, value) for name, value in exchange["query"]}
        if exchange["method"] == method and exchange["path"] == path and set(query.items()) <= pairs:
            assert exchange["status"] < 300, (path, exchange["status"], exchange["body"][:300])
            found.append(json.loads(exchange["body"]))
    assert found, f"nothing recorded for {method} {path} {query}"
    return found


def items(bodies: list[Any], key: str) -> list[dict[str, Any]]:
    for body in bodies:
        assert key in body, f"the answer has no {key!r} list: keys {sorted(body)}"
    return [item for body in bodies for item in body[key]]


def has(obj: dict[str, Any], field: str, where: str) -> Any:
    assert field in obj, f"{where}: no {field!r} (keys: {sorted(obj)})"
    return obj[field]


def lacks(obj: dict[str, Any], field: str, where: str) -> None:
    assert field not in obj, f"{where}: {field!r} appeared (the parse assumes this line has none)"


@pytest.mark.parametrize("line", T.LINES)
def test_raw_fields(line: str) -> None:
    """Each field the capture and the parse rely on is where they look for it, on each line:

    ``/dags`` (``is_stale`` on 3.x, ``is_active`` on 2.11, ``bundle_name``/``relative_fileloc`` on 3.x,
    ``has_import_errors``, ``fileloc``, the schedule's summary), the DAG details' asset condition
    and ``doc_md``, the tasks' ``class_ref``, ``/importErrors`` (``filename``, relative from 3.1,
    ``bundle_name`` on 3.x, ``stack_trace``), ``/assets`` or ``/datasets`` (``producing_tasks``,
    ``consuming_dags`` to 3.0 and ``scheduled_dags`` from 3.1, ``consuming_tasks`` from 3.1,
    ``last_asset_event`` from 3.1, ``watchers`` from 3.2, ``name``/``group``/``aliases`` on 3.x),
    the aliases, the DAG warnings' conflict lines, the token, and ``/ui/dependencies``'s
    ``source_id``/``target_id`` edges between ``dag:<id>`` and ``asset:<numeric id>`` nodes."""
    major, minor = (int(part) for part in line.split(".")[:2])
    v3 = major == 3
    api = "/api/v2" if v3 else "/api/v1"
    examples = load_recording(VERSIONS / line / "examples.json.gz")
    scheduled = load_recording(VERSIONS / line / "examples_scheduler.json.gz")
    broken = load_recording(VERSIONS / line / "broken.json.gz")
    produce, consume = (
        ("asset_produces_1", "asset_consumes_1") if v3 else ("dataset_produces_1", "dataset_consumes_1")
    )

    # version, and on 3.x the token
    (version,) = answers(examples, "GET", f"{api}/version")
    assert has(version, "version", "GET /version") == line
    if v3:
        (token,) = answers(examples, "POST", "/auth/token")
        assert isinstance(has(token, "access_token", "POST /auth/token"), str)

    # the DAG list, stale ones included
    every = {"exclude_stale": "false"} if v3 else {"only_active": "false"}
    dags = {d["dag_id"]: d for d in items(answers(examples, "GET", f"{api}/dags", **every), "dags")}
    for dag_id, dag in dags.items():
        where = f"{line} dags[{dag_id}]"
        for field in ("fileloc", "has_import_errors", "is_paused", "owners", "tags", "description"):
            has(dag, field, where)
        if v3:
            assert has(dag, "is_stale", where) is False
            assert has(dag, "bundle_name", where)
            relative = has(dag, "relative_fileloc", where)
            assert dag["fileloc"].endswith("/" + relative), where
            has(dag, "timetable_summary", where)
            lacks(dag, "is_active", where)
        else:
            assert has(dag, "is_active", where) is True
            lacks(dag, "bundle_name", where)
            has(dag, "timetable_description", where)
            assert "/airflow/example_dags/" in dag["fileloc"], where
    assert dags[consume]["timetable_summary" if v3 else "timetable_description"] is not None

    # a DAG scheduled on assets: its details carry the condition
    (details,) = answers(examples, "GET", f"{api}/dags/{consume}/details")
    has(details, "asset_expression" if v3 else "dataset_expression", f"{line} details[{consume}]")
    has(details, "doc_md", f"{line} details[{consume}]")
    (tasks,) = answers(examples, "GET", f"{api}/dags/{produce}/tasks")
    (task,) = items([tasks], "tasks")
    has(task, "task_id", f"{line} tasks[{produce}]")
    assert has(task, "class_ref", f"{line} tasks[{produce}]")["class_name"] == "BashOperator"

    # the assets (datasets on 2.11)
    key = "assets" if v3 else "datasets"
    assets = {a["uri"]: a for a in items(answers(examples, "GET", f"{api}/{key}"), key)}
    schedule_key = "scheduled_dags" if (major, minor) >= (3, 1) else "consuming_dags"
    for uri, asset in assets.items():
        where = f"{line} {key}[{uri}]"
        has(asset, "id", where)
        assert isinstance(has(asset, "producing_tasks", where), list)
        assert isinstance(has(asset, schedule_key, where), list)
        lacks(asset, "consuming_dags" if schedule_key == "scheduled_dags" else "scheduled_dags", where)
        if (major, minor) >= (3, 1):
            assert isinstance(has(asset, "consuming_tasks", where), list)
            has(asset, "last_asset_event", where)
        else:
            lacks(asset, "consuming_tasks", where)
            lacks(asset, "last_asset_event", where)
        if (major, minor) >= (3, 2):
            assert isinstance(has(asset, "watchers", where), list)
        else:
            lacks(asset, "watchers", where)
        if v3:
            has(asset, "name", where)
            has(asset, "group", where)
            has(asset, "aliases", where)
    dag1 = assets["s3://dag1/output_1.txt"]
    assert produce in [ref["dag_id"] for ref in dag1["producing_tasks"]]
    assert consume in [ref["dag_id"] for ref in dag1[schedule_key]]

    # the import errors, and the broken file's DAG (the lifecycle's step b)
    errors = items(answers(broken, "GET", f"{api}/importErrors"), "import_errors")
    (error,) = errors
    filename = has(error, "filename", f"{line} import_errors[0]")
    has(error, "stack_trace", f"{line} import_errors[0]")
    if (major, minor) >= (3, 1):
        assert filename == "load_orders.py"
    else:
        assert filename == "/opt/airflow/dags/load_orders.py"
    if v3:
        assert has(error, "bundle_name", f"{line} import_errors[0]") == "dags-folder"
    else:
        lacks(error, "bundle_name", f"{line} import_errors[0]")
    broken_dags = {d["dag_id"]: d for d in items(answers(broken, "GET", f"{api}/dags", **every), "dags")}
    load_orders = broken_dags["load_orders"]
    assert load_orders["has_import_errors"] is True
    assert load_orders["is_stale" if v3 else "is_active"] is v3  # 3.x: stale; 2.11: inactive
    broken_assets = {a["uri"]: a for a in items(answers(broken, "GET", f"{api}/{key}"), key)}
    if (major, minor) >= (3, 1):  # task inlets: reader.read reads the orders
        assert "reader" in [
            ref["dag_id"] for ref in broken_assets["s3://lake/orders.parquet"]["consuming_tasks"]
        ]
    if (major, minor) >= (3, 2):  # AssetWatcher(name='w')
        assert "w" in [w["name"] for w in broken_assets["s3://lake/watched"]["watchers"]]

    if not v3:
        return
    # aliases, and the DAG warnings' asset conflicts (after the scheduler's pass)
    aliases = items(answers(examples, "GET", f"{api}/assets/aliases"), "asset_aliases")
    assert {"example-alias", "example-alias-no-taskflow"} <= {a["name"] for a in aliases}
    warnings = items(answers(scheduled, "GET", f"{api}/dagWarnings"), "dag_warnings")
    for warning in warnings:
        for field in ("dag_id", "warning_type", "message"):
            has(warning, field, f"{line} dag_warnings")
    conflicts = [w for w in warnings if w["warning_type"] == "asset conflict"]
    if minor >= 1:
        assert sorted(w["dag_id"] for w in conflicts) == ["read_asset_event", "read_asset_event_from_classic"]
    for warning in conflicts:
        read, unreadable = read_conflicts(warning["message"])
        assert read and not unreadable, warning["message"]
    every_asset = items(answers(examples, "GET", f"{api}/assets", only_active="false"), "assets")
    assert any(a["uri"] == "s3://output/1.txt" and a["name"] == "s3://output/1.txt" for a in every_asset)

    # the dependency graph
    (graph,) = answers(examples, "GET", "/ui/dependencies")
    edges = has(graph, "edges", f"{line} /ui/dependencies")
    nodes = has(graph, "nodes", f"{line} /ui/dependencies")
    for edge in edges:
        has(edge, "source_id", f"{line} /ui/dependencies edges")
        has(edge, "target_id", f"{line} /ui/dependencies edges")
    ids = {asset["id"] for asset in every_asset}
    asset_nodes = [node["id"] for node in nodes if node["id"].startswith("asset:")]
    assert asset_nodes and all(re.fullmatch(r"asset:\d+", node) for node in asset_nodes), asset_nodes
    assert {int(node.split(":")[1]) for node in asset_nodes} <= ids
    pairs = {(edge["source_id"], edge["target_id"]) for edge in edges}
    assert (f"dag:{produce}", f"asset:{dag1['id']}") in pairs
    assert (f"asset:{dag1['id']}", f"dag:{consume}") in pairs
