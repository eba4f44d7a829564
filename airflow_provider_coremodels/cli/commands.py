"""The commands behind both CLI front doors: thin glue over the core, returning exit codes."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core import audit as run_audit
from airflow_provider_coremodels.core import build_document
from airflow_provider_coremodels.core.estate.rules import failing_findings
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.reading.capabilities import require
from airflow_provider_coremodels.core.views.render import render_json, render_json_bytes, render_table
from airflow_provider_coremodels.errors import CoreModelsError, SinkError, SinksFailed, UsageError
from airflow_provider_coremodels.io.input_files import (
    read_artifacts,
    read_auditable,
    read_baseline,
    read_rules,
    read_stored,
    read_waivers,
)

if TYPE_CHECKING:
    from airflow_provider_coremodels.capture import ApiSource, RetryPolicy
    from airflow_provider_coremodels.core import Baseline
    from airflow_provider_coremodels.core.comparing.compare import Side
    from airflow_provider_coremodels.sinks import SinkResult
    from airflow_provider_coremodels.sinks.history import HistoryReader

#: The example estate's recorded REST responses (example_dags/estate served by Airflow 3.3),
#: package data so that a first run needs nothing but the install.
EXAMPLE_ESTATE = Path(__file__).resolve().parents[1] / "example_estate"

EXIT_OK = 0
EXIT_FINDINGS = 1


def audit(args: argparse.Namespace) -> int:
    """``audit``: parse artifacts (or re-read a snapshot, or parse a DAG folder), audit, print, and
    pick the exit code."""
    if getattr(args, "dag_folder", None):
        return audit_dag_folder(args)
    for flag, given in (
        ("--bundle", args.bundle),
        ("--fail-on-new", args.fail_on_new),
        ("--deployment", args.deployment),
        ("--base", args.base),
        ("--base-folder", args.base_folder),
    ):
        if given is not None:
            raise UsageError(f"audit {flag} goes with --dag-folder")
    for flag, on in (("--fail-on-break", args.fail_on_break), ("--full", args.full)):
        if on:
            raise UsageError(f"audit {flag} goes with --dag-folder")
    outputs = checked_outputs(args.output)
    document = team_view(_audited_document(args, "audit", max_snapshot_bytes=args.max_snapshot_bytes), args)
    write_outputs(document, args, outputs)
    emit(printed(document, args))
    return exit_code(document["findings"], args.fail_on)


def audit_dag_folder(args: argparse.Namespace) -> int:
    """``audit --dag-folder``: a DAG folder parsed with Airflow's parser and judged in the estate of
    ``--baseline``; exit 1 also when ``--fail-on-new`` names a severity a finding it opens reaches,
    or with ``--fail-on-break`` when the change cuts a dependency of another DAG."""
    from airflow_provider_coremodels.core.comparing.change import DEFAULT_BUNDLE
    from airflow_provider_coremodels.core.snapshots.document import StoredSnapshot, load_document
    from airflow_provider_coremodels.errors import SnapshotDocumentError
    from airflow_provider_coremodels.jobs.premerge import FolderCheck, check_folder, withheld_variables

    if args.example or args.snapshot or args.dags or args.tasks or args.datasets:
        raise UsageError(
            "audit takes --dag-folder alone, without --dags, --tasks, --datasets, --snapshot or --example"
        )
    outputs = checked_outputs(args.output)
    if args.base and args.base_folder:
        raise UsageError("audit takes --base or --base-folder, not both")
    if args.full and not (args.base or args.base_folder):
        raise UsageError("audit --full goes with --base or --base-folder (without them every file is parsed)")
    waivers = read_waivers(args.waivers) if args.waivers else ()
    policy = read_rules(args.rules) if args.rules else None

    def load_baseline() -> StoredSnapshot | None:
        if not args.baseline:
            return None
        location, data = stored_bytes(args.baseline, args.sink_conn_id)
        try:
            return load_document(data)
        except SnapshotDocumentError as exc:
            raise exc.with_source(location) from None

    result = check_folder(
        FolderCheck(
            folder=args.dag_folder,
            bundle=args.bundle or DEFAULT_BUNDLE,
            # read once the parse server is started (a pull request's check), which it overlaps
            load_baseline=load_baseline if args.baseline else None,
            baseline_source=args.baseline,
            deployment=args.deployment,
            waivers=waivers,
            policy=policy,
            timeout=args.parse_timeout,
            workers=args.parse_workers,
            withheld_env=withheld_variables(
                *(args.withhold_env or ()),
                conn_ids=(args.sink_conn_id, defaults.AIRFLOW_API_CONN_ID, defaults.COREMODELS_CONN_ID),
            ),
            max_snapshot_bytes=args.max_snapshot_bytes,
            sandbox=args.sandbox,
            base=args.base,
            base_folder=args.base_folder,
            full=args.full,
            deadline=args.parse_deadline,
            passed_env=tuple(args.parse_env or ()),
            hidden=[  # what the run reads and writes: not in the sandbox
                *(
                    p
                    for p in (args.baseline, _sink_of(args.baseline), args.rules, args.waivers)
                    if p and "://" not in p
                ),
                *(str(path) for _, path in outputs),
            ],
        )
    )
    document = team_view(result.document, args)
    write_outputs(document, args, outputs)
    emit(printed(document, args))
    code = exit_code(document["findings"], args.fail_on)
    if args.fail_on_new and failing_findings(document["change"]["findingsOpened"], args.fail_on_new):
        code = EXIT_FINDINGS
    if args.fail_on_break and document["change"]["breaks"]:
        code = EXIT_FINDINGS
    return code


def lineage(args: argparse.Namespace) -> int:
    """``lineage``: the audit's inputs drawn as Mermaid, DOT or the UI page's SVG; findings mark nodes."""
    from airflow_provider_coremodels.core.estate.suggest import did_you_mean
    from airflow_provider_coremodels.core.views.lineage import (
        MAX_NODES,
        LineageGraph,
        cut_note,
        picture,
        to_dot,
        to_mermaid,
    )

    document = _audited_document(args, "lineage")
    graph = LineageGraph.from_document(document)
    note = None
    try:
        if args.format == "svg":  # what the UI page draws, by the same function
            drawn = picture(graph, args.around, args.depth)
            text, note = drawn.svg, drawn.note
        else:
            if args.around is not None:
                graph = graph.neighbourhood(args.around, args.depth, max_nodes=MAX_NODES)
                note = cut_note(graph.cut, args.around, MAX_NODES) if graph.cut else None
            text = to_dot(graph) if args.format == "dot" else to_mermaid(graph)
    except ValueError as exc:
        hint = did_you_mean(args.around, graph.names()) if args.around else ""  # graph: not yet cut
        raise UsageError(f"--around: {exc}{hint}") from None
    if note:
        sys.stderr.write(f"note: {printable(note)}\n")
    emit(text)
    return EXIT_OK


def impact(args: argparse.Namespace) -> int:
    """``impact``: what lies downstream (``--upstream``: upstream) of one DAG or asset, answered by
    the same function as the MCP tool ``downstream_impact`` (``SnapshotQueries.impact``), printed
    as a table, JSON (that answer, every node on one page) or markdown."""
    from airflow_provider_coremodels.core.views.impact import render_impact_markdown, render_impact_table
    from airflow_provider_coremodels.integrations.assistant import QueryError, SnapshotQueries

    waivers = read_waivers(args.waivers) if args.waivers else ()
    policy = read_rules(args.rules) if args.rules else None
    if args.snapshot and not (args.example or args.dags or args.tasks or args.datasets):
        location, data = stored_bytes(args.snapshot, args.sink_conn_id)
        queries = SnapshotQueries(
            data, source=location, waivers=waivers, waivers_source=args.waivers, policy=policy
        )
    else:  # artifacts or the example estate: audited as lineage audits them, then asked alike
        if args.sink_conn_id:
            raise UsageError("impact --sink-conn-id goes with an object-storage --snapshot")
        document = _audited_document(argparse.Namespace(**{**vars(args), "baseline": None}), "impact")
        queries = SnapshotQueries(render_json(document).encode(), source=args.dags or "the example estate")
    try:
        answer = queries.impact(args.id, kind=args.kind, depth=args.depth, limit=None, upstream=args.upstream)
    except QueryError as exc:
        raise UsageError(f"impact: {exc}") from None
    if args.format == "json":
        emit(render_json(answer))
    elif args.format == "markdown":
        emit(render_impact_markdown(answer).rstrip("\n"))
    else:
        emit(render_impact_table(answer))
    return EXIT_OK


def _audited_document(args: argparse.Namespace, command: str, **build: Any) -> dict[str, Any]:
    """What audit and lineage share: the estate from artifacts or a snapshot, audited, as a document."""
    if args.example:
        if args.snapshot or args.dags or args.tasks or args.datasets:
            raise UsageError(
                f"{command} takes --example alone, without --dags, --tasks, --datasets or --snapshot"
            )
        paths = {name: str(EXAMPLE_ESTATE / f"{name}.json") for name in ("dags", "tasks", "datasets")}
        args = argparse.Namespace(**{**vars(args), **paths, "example": False})
    if args.snapshot and (args.dags or args.tasks or args.datasets):
        raise UsageError(
            f"{command} takes either --dags (with --tasks and --datasets) or --snapshot, not both"
        )
    waivers = read_waivers(args.waivers) if args.waivers else ()
    policy = read_rules(args.rules) if args.rules else None
    no_policy = None
    if args.snapshot:
        stored = read_auditable(args.snapshot)
        estate = stored.estate
        if policy is None and stored.policy_digest:
            no_policy = (
                f"the snapshot was checked against rules {stored.policy_digest}; give --rules to check "
                "them again"
            )
    elif args.dags:
        estate = read_artifacts(
            args.dags,
            args.tasks,
            args.datasets,
            max_bytes=args.max_artifact_bytes,
            include_asset_extra=getattr(args, "include_asset_extra", False),
        )
    else:
        raise UsageError(f"{command} needs --dags F (with --tasks and --datasets) or --snapshot S")
    baseline = read_baseline(args.baseline) if args.baseline else None
    assert estate is not None  # read_auditable refuses a snapshot without one
    result = run_audit(
        estate,
        baseline,
        waivers=waivers,
        now=getattr(args, "now", None),
        tolerance=getattr(args, "stale_tolerance", None),
        policy=policy,
        no_policy=no_policy,
    )
    # lean: printed, written and pushed, never read field by field (every view reads the datasets
    # and findings, none a DAG's fields), so each task stays a Field struct instead of a dict
    return build_document(estate, result, lean=True, **build)


def merge(args: argparse.Namespace) -> int:
    """``merge``: the snapshots of several deployments as one estate, audited, printed and pushed."""
    from airflow_provider_coremodels.jobs.export import checked_retention, open_sinks
    from airflow_provider_coremodels.jobs.federation import Source, merge_and_push

    waivers = read_waivers(args.waivers) if args.waivers else ()
    policy = read_rules(args.rules) if args.rules else None
    team_first(args, policy)
    _airflow_logs_to_stderr(args)
    with _stdout_to_stderr():
        sinks = open_sinks(
            args.sink,
            sink_conn_id=args.sink_conn_id,
            coremodels_conn_id=args.coremodels_conn_id,
            retention=checked_retention(args.history_keep, args.history_max_age),
            **_openlineage_defaults(args),
        )
        try:
            result = merge_and_push(
                [Source.parse(given) for given in args.snapshots],
                sinks,
                stale_before=args.stale_before,
                sink_conn_id=args.sink_conn_id,
                waivers=waivers,
                now=args.now,
                stale_tolerance=args.stale_tolerance,
                max_snapshot_bytes=args.max_snapshot_bytes,
                policy=policy,
            )
        except SinksFailed as failure:  # every other sink was written: the output is still due
            result = failure.result
    document = team_view(result.document, args)
    emit(printed(document, args))
    if sinks:
        say_summary(result.summary_line(), args)
    return sink_failures(result.failed) or exit_code(document["findings"], args.fail_on)


def teams(args: argparse.Namespace) -> int:
    """``teams``: each team's DAGs and open findings, and the unowned DAGs, of an audited estate."""
    from airflow_provider_coremodels.core.checks.teams import render_team_report, team_report

    if not args.rules:
        raise UsageError("teams needs --rules FILE, a rules file with a teams: part")
    policy = read_rules(args.rules)
    if policy.teams is None:
        raise UsageError(f"teams: rules file {args.rules} names no teams (it has no teams: part)")
    if args.snapshot and not (args.baseline or args.waivers or getattr(args, "now", None)):
        document = _stored_findings(args.snapshot, policy.teams)
    else:
        document = _audited_document(args, "teams")
    report = team_report(document, policy.teams)
    emit(render_json(report) if args.format == "json" else render_team_report(report))
    return EXIT_OK


def _stored_findings(path: str, teams: Any) -> dict[str, Any]:
    """``teams --snapshot S`` alone: the stored document's findings as its audit made them (against
    its baseline, with its waivers, at its capture time), which ``history`` counts too, so the two
    say one count. Re-audited, a stored document loses the drift its baseline found and its waivers.
    Each finding keeps its stored teams when the rules file's teams are those it was audited with;
    otherwise its teams are worked out again from the stored estate."""
    from airflow_provider_coremodels.core.checks.teams import TeamIndex, teams_from_json
    from airflow_provider_coremodels.core.snapshots.document import decode_stored, load_document
    from airflow_provider_coremodels.errors import SnapshotDocumentError
    from airflow_provider_coremodels.io.input_files import read_stored

    data = read_stored(path)
    try:
        document = decode_stored(data)
        policy = document.get("policy")
        stored_teams = teams_from_json(policy.get("teams")) if isinstance(policy, dict) else None
        if stored_teams is not None and stored_teams.json() == teams.json():
            return document
        estate = load_document(data).estate
    except SnapshotDocumentError as exc:
        raise exc.with_source(path) from None
    if estate is None:
        raise SnapshotDocumentError(
            "was stored without datasets and lineage (it exceeded the snapshot cap), and audited with "
            "other teams: give the rules it was audited with, or audit the artifacts",
            path,
        )
    index = TeamIndex(teams, estate)
    findings = [
        {**f, "team": list(index.of(str(f.get("code")), str(f.get("subject")), f.get("detail")))}
        for f in document.get("findings") or ()
        if isinstance(f, dict)
    ]
    return {**document, "findings": findings}


def _json_pieces(value: Any) -> Iterator[bytes]:
    """``json.dumps(value, ensure_ascii=False)`` as UTF-8, the same bytes, an object of string keys
    one member at a time: ``tasks.json`` (every DAG's tasks as served) is never held as text whole,
    nor twice (as a str, then its bytes) beside the answers it is made of."""
    if not (isinstance(value, dict) and all(isinstance(key, str) for key in value)):
        yield json.dumps(value, ensure_ascii=False).encode("utf-8")
        return
    yield b"{"
    for index, (key, member) in enumerate(value.items()):
        text = f"{', ' if index else ''}{json.dumps(key, ensure_ascii=False)}: "
        yield (text + json.dumps(member, ensure_ascii=False)).encode("utf-8")
    yield b"}"


def capture(args: argparse.Namespace) -> int:
    """``capture``: read the estate from the REST API and save the three artifacts under ``--out``."""
    from airflow_provider_coremodels.capture import capture as run_capture
    from airflow_provider_coremodels.capture import open_client
    from airflow_provider_coremodels.capture.progress import ProgressReporter
    from airflow_provider_coremodels.io.atomic import write_atomic

    _airflow_logs_to_stderr(args)
    source = api_source(args)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be created: {exc.strerror or exc}") from None
    progress = ProgressReporter(sys.stderr)
    try:
        with open_client(source, retry=retry_policy(args)) as client:
            result = run_capture(client, keep_raw=True, progress=progress)
    finally:
        progress.close()
    files = {"dags.json": result.dags, "tasks.json": result.tasks}
    if isinstance(result.datasets, dict):  # not written when the assets could not be fetched
        files["datasets.json"] = result.datasets
    for name, value in files.items():
        write_atomic(out / name, _json_pieces(value))
    for record in result.lossiness:
        sys.stderr.write(f"warning: {record.artifact}: {printable(record.message)}\n")
    emit(f"{result.summary.line()} -> {out}")
    return EXIT_OK


def export(args: argparse.Namespace) -> int:
    """``export``: capture, audit against the sinks' baseline, print, push to every sink."""
    from airflow_provider_coremodels.capture import open_client
    from airflow_provider_coremodels.capture.progress import ProgressReporter
    from airflow_provider_coremodels.jobs.export import ExportSettings

    _airflow_logs_to_stderr(args)
    # the files a team writes are checked before anything is captured: a bad one is exit 2 at once
    settings = ExportSettings(
        sinks=args.sink,
        sink_conn_id=args.sink_conn_id,
        coremodels_conn_id=args.coremodels_conn_id,
        fail_on=args.fail_on,
        max_snapshot_bytes=args.max_snapshot_bytes,
        include_asset_extra=args.include_asset_extra,
        waivers=read_waivers(args.waivers) if args.waivers else (),
        policy=read_rules(args.rules) if args.rules else None,
        now=args.now,
        stale_tolerance=defaults.STALE_TOLERANCE if args.stale_tolerance is None else args.stale_tolerance,
        deployment=args.deployment or (None if args.base_url else _conn_id(args)),
        history_keep=args.history_keep,
        history_max_age_days=args.history_max_age,
        dag_folder=args.dag_folder,
        **_openlineage_defaults(args),
    )
    team_first(args, settings.policy)
    source = api_source(args)
    retry = retry_policy(args)
    with _stdout_to_stderr():
        sinks = settings.open_sinks(retry)
    if not sinks:
        sys.stderr.write(
            "warning: export has no --sink: the snapshot is audited and printed, but stored nowhere "
            "(no baseline is kept for the next run's coverage and drift)\n"
        )
    progress = ProgressReporter(sys.stderr)
    try:
        with open_client(source, retry=retry) as client:
            try:
                result = settings.run(client, sinks, progress)
            except SinksFailed as failure:  # every other sink was written: the output is still due
                result = failure.result
    finally:
        progress.close()
    from airflow_provider_coremodels.jobs.alerts import send_metrics

    send_metrics(result, str(result.document["state"].get("deployment") or "default"))
    document = team_view(result.document, args)
    emit(printed(document, args))
    say_summary(f"{result.capture.line()}\n{result.summary_line()}", args)
    return sink_failures(result.failed) or exit_code(document["findings"], args.fail_on)


def history(args: argparse.Namespace) -> int:
    """``history``: a sink's stored snapshots, newest first, as a table or JSON."""
    from airflow_provider_coremodels.sinks.history import list_history, render_listing

    rules = drift_teams(args)
    reader = history_reader(args.sink, args.sink_conn_id)
    with _reading(reader):
        listing = list_history(reader, limit=args.limit)
        if getattr(args, "team", None):
            from airflow_provider_coremodels.sinks.history import team_drift, team_listing

            try:
                listing = team_listing(listing, args.team, known=rules.names if rules else None)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            listing = team_drift(reader, listing, args.team, rules)
    emit(render_json(listing.as_dict()) if args.format == "json" else render_listing(listing))
    return EXIT_OK


def compare(args: argparse.Namespace) -> int:
    """``compare``: what changed between two stored snapshots; exit 1 when a finding at or above
    ``--fail-on`` opened."""
    from airflow_provider_coremodels.core.comparing.compare import (
        compare as run_compare,
    )
    from airflow_provider_coremodels.core.comparing.compare import (
        comparison_json,
        render_comparison_markdown,
        render_comparison_table,
    )

    rules = drift_teams(args)
    old, new = stored_side(args.old, args.sink_conn_id), stored_side(args.new, args.sink_conn_id)
    if getattr(args, "team", None) and rules is None:
        from airflow_provider_coremodels.core.checks.teams import checked_team

        known = [*(old.teams or ()), *(t for t in new.teams or () if t not in (old.teams or ()))]
        try:
            checked_team(args.team, known or None, "neither snapshot")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    comparison = run_compare(old, new, team=getattr(args, "team", None) or None, teams=rules)
    if args.format == "json":
        emit(render_json(comparison_json(comparison)))
    elif args.format == "markdown":
        emit(render_comparison_markdown(comparison).rstrip("\n"))
    else:
        emit(render_comparison_table(comparison))
    return EXIT_FINDINGS if comparison.failing(args.fail_on) else EXIT_OK


#: The sinks that keep no snapshot to read back.
_NO_HISTORY = {"http": "an HTTP endpoint", "https": "an HTTP endpoint", "openlineage": "an OpenLineage sink"}


def history_reader(uri: str, sink_conn_id: str | None) -> HistoryReader:
    """The history of the file or object-storage sink ``uri``, opened as export opens it (its
    scheme, package and connection checked first)."""
    from urllib.parse import urlsplit

    from airflow_provider_coremodels.jobs.export import open_sink
    from airflow_provider_coremodels.sinks.directory import DirectorySink, FileSink
    from airflow_provider_coremodels.sinks.history import LocalHistory, StoreHistory

    scheme = urlsplit(uri).scheme.lower()
    if scheme in _NO_HISTORY:
        raise UsageError(
            f"sink {redact(uri)}: {_NO_HISTORY[scheme]} keeps no history to read back; "
            "give a directory or an object-storage URI"
        )
    if len(scheme) > 1 and scheme != "file":
        from airflow_provider_coremodels.cli.definition import logs_to_stderr

        logs_to_stderr()  # object storage means Airflow, whose logging writes to stdout
    with _stdout_to_stderr():
        sink = open_sink(uri, sink_conn_id=sink_conn_id)
    if isinstance(sink, FileSink):
        root = sink.root.expanduser()
        if not root.is_dir():
            problem = "is not a directory" if root.exists() else "does not exist"
            raise UsageError(f"sink {uri}: {root} {problem}")
        return LocalHistory(root, sink.uri)
    if isinstance(sink, DirectorySink):
        return StoreHistory(sink.root, sink.uri)
    raise UsageError(f"sink {redact(uri)} keeps no history to read back")  # pragma: no cover


def redact(uri: str) -> str:
    from airflow_provider_coremodels.io.transport import redact_url

    return redact_url(uri)


@contextlib.contextmanager
def _reading(reader: HistoryReader) -> Iterator[None]:
    """Hold a local history open while it is read; a store that fails is a sink failure (exit 3)."""
    try:
        with reader.opened():
            yield
    except (CoreModelsError, KeyboardInterrupt):
        raise
    except Exception as exc:  # each store client raises its own errors (botocore's are no OSError)
        detail = getattr(exc, "strerror", None) or " ".join(str(exc).split())[:300] or type(exc).__name__
        raise SinkError(f"sink {reader.location}: cannot read its history: {detail}") from None


def stored_side(given: str, sink_conn_id: str | None) -> Side:
    """One side of ``compare``: a document, a sink (its ``latest.json``), or ``SINK@REF``."""
    from airflow_provider_coremodels.core.comparing.compare import read_side

    location, data = stored_bytes(given, sink_conn_id)
    return read_side(given, location, data)


def stored_bytes(given: str, sink_conn_id: str | None) -> tuple[str, bytes]:
    """A stored document, where it was read and its bytes: a document's path, a file sink's
    directory (its ``latest.json``), an object-storage sink, or ``SINK@REF`` (a history entry);
    each read within the one bound."""
    from urllib.parse import urlsplit

    from airflow_provider_coremodels.errors import SnapshotDocumentError
    from airflow_provider_coremodels.io.input_files import Unreadable
    from airflow_provider_coremodels.sinks.history import resolve, split_reference
    from airflow_provider_coremodels.sinks.layout import LATEST, newest_first

    where, reference = split_reference(given)
    scheme = urlsplit(where).scheme.lower()
    if reference is None and (not scheme or len(scheme) == 1):  # a document, or a file sink's directory
        path = os.path.expanduser(where)
        location = os.path.join(path, LATEST) if os.path.isdir(path) else path
        return location, read_stored(path)
    reader = history_reader(where, sink_conn_id)
    with _reading(reader):
        name = None if reference is None else resolve(reference, newest_first(reader.names()), where)
        location = reader.where(name) if name else f"{reader.location.rstrip('/')}/{LATEST}"
        try:
            data = reader.read(name) if name else reader.read_latest()
        except Unreadable as exc:
            raise SnapshotDocumentError(str(exc), location) from None
    if data is None:
        raise SnapshotDocumentError(f"does not exist: {where} has stored no snapshot yet", location)
    return location, data


def sink_failures(failed: Sequence[SinkResult]) -> int:
    """One line on stderr per sink the document could not be pushed to; exit 3 if there was one.

    Every other sink was written all the same: one broken store costs the others nothing.
    """
    for result in failed:
        sys.stderr.write(f"error: {printable(str(result.error))}\n")
    return SinkError.exit_code if failed else EXIT_OK


def say_summary(summary: str, args: argparse.Namespace) -> None:
    """After a table, on stdout; after a document, SARIF or report, on stderr (stdout is theirs alone)."""
    if args.format != "table":
        sys.stderr.write(summary + "\n")
    else:
        emit("\n" + summary)


def api_source(args: argparse.Namespace) -> ApiSource:
    """The REST API to read: from ``--conn-id``, or ``--base-url`` with secrets from the environment."""
    from airflow_provider_coremodels.capture import ApiSource

    if args.conn_id and args.base_url:
        raise UsageError("give either --conn-id or --base-url, not both")
    if args.base_url:
        try:
            source = ApiSource(
                base_url=args.base_url,
                username=args.username,
                password=_secret_from_env(args.password_env),
                token=_secret_from_env(args.token_env),
            )
        except ValueError as exc:
            raise UsageError(f"--base-url: {exc}") from None
    else:
        if args.username or args.password_env or args.token_env:
            raise UsageError("--username, --password-env and --token-env go with --base-url, not --conn-id")
        source = _connection_source(args.conn_id)
    overrides: dict[str, Any] = {}
    if args.ca_bundle:
        overrides["verify"] = args.ca_bundle
    if args.concurrency:
        overrides["concurrency"] = args.concurrency
    if args.pacing:
        overrides["pacing"] = args.pacing
    if args.pacing_share:
        overrides["pacing_share"] = args.pacing_share
    if args.timeout:
        overrides["read_timeout"] = args.timeout
    if args.no_deadline_alerts:
        overrides["deadline_alerts"] = False
    return dataclasses.replace(source, **overrides) if overrides else source


def retry_policy(args: argparse.Namespace) -> RetryPolicy:
    from airflow_provider_coremodels.capture import RetryPolicy

    return RetryPolicy(budget=args.retry_budget)


def _secret_from_env(variable: str | None) -> str | None:
    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise UsageError(f"environment variable {variable} is not set")
    return value


def _conn_id(args: argparse.Namespace) -> str:
    """The connection the source comes from: ``--conn-id``, else the default one."""
    return str(args.conn_id or defaults.AIRFLOW_API_CONN_ID)


def _connection_source(conn_id: str | None) -> ApiSource:
    """The source from ``--conn-id``, else from the default connection the operator uses too."""
    from airflow_provider_coremodels.errors import ConnectionConfigError
    from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook

    try:
        with _stdout_to_stderr():
            return AirflowApiHook(conn_id or defaults.AIRFLOW_API_CONN_ID).get_source()
    except ConnectionConfigError as exc:
        if conn_id:
            raise
        raise ConnectionConfigError(f"no --conn-id or --base-url given, and the default {exc}") from None


def _stdout_to_stderr() -> contextlib.AbstractContextManager[Any]:
    """While Airflow looks up a connection: its log lines (some written straight to stdout, past
    any logging handler) go to stderr, and stdout stays the command's output alone."""
    return contextlib.redirect_stdout(sys.stderr)


def _airflow_logs_to_stderr(args: argparse.Namespace) -> None:
    """Connections mean Airflow, whose logging writes to stdout: keep stdout for the output.

    ``airflow coremodels`` does this before every command; ``python -m`` only needs it when a
    command is about to use Airflow (a connection, or object storage).
    """
    # a connection: --conn-id, or the default one (merge reads no REST API)
    uses_airflow = hasattr(args, "conn_id") and not args.base_url
    if (
        uses_airflow
        or getattr(args, "coremodels_conn_id", None)
        or getattr(args, "sink_conn_id", None)
        or _uses_openlineage(args)  # the OpenLineage provider reads Airflow's configuration
    ):
        from airflow_provider_coremodels.cli.definition import logs_to_stderr

        logs_to_stderr()


def _uses_openlineage(args: argparse.Namespace) -> bool:
    """``--format openlineage``, or an ``openlineage://`` sink."""
    sinks = getattr(args, "sink", None) or []
    return getattr(args, "format", None) == "openlineage" or any(
        str(uri).strip().lower().startswith("openlineage:") for uri in sinks
    )


def _openlineage_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """What ``--openlineage-events`` and ``--openlineage-namespace`` make the default of every
    ``openlineage://`` sink (its URI's own query wins)."""
    if _uses_openlineage(args):
        _quiet_openlineage_client()
    return {
        "openlineage_events": getattr(args, "openlineage_events", None),
        "openlineage_namespaces": getattr(args, "openlineage_namespace", None) or (),
    }


#: What ``--format openlineage`` says when the OpenLineage client or provider is not installed.
OPENLINEAGE_EXTRA_MISSING = (
    "--format openlineage needs the openlineage extra: pip install 'airflow-provider-coremodels[openlineage]'"
)


def render_openlineage(document: dict[str, Any], args: argparse.Namespace) -> str:
    """``--format openlineage``: one event per DAG, one per line; notes on what could not be named
    as the OpenLineage provider names it go to stderr as warnings."""
    try:
        from airflow_provider_coremodels.integrations.openlineage import Options, render
    except ImportError as exc:
        if (exc.name or "").startswith("airflow_provider_coremodels"):
            raise
        raise UsageError(f"{OPENLINEAGE_EXTRA_MISSING} ({exc})") from None
    _airflow_logs_to_stderr(args)
    _quiet_openlineage_client()
    options = Options.parse(args.openlineage_events, args.openlineage_namespace)
    with _stdout_to_stderr():  # the provider's configuration may look up a connection
        text, notes = render(document, options)
    for note in notes:
        sys.stderr.write(f"warning: openlineage: {printable(note)}\n")
    return text


def _quiet_openlineage_client() -> None:
    """The client's INFO lines ("will use `http` transport") are noise on a command's stderr."""
    with contextlib.suppress(ImportError):
        from airflow_provider_coremodels.integrations.openlineage import quiet_client_logs

        quiet_client_logs()


#: What ``mcp`` says when the MCP SDK is not installed.
MCP_EXTRA_MISSING = "mcp needs the mcp extra: pip install 'airflow-provider-coremodels[mcp]'"


def mcp(args: argparse.Namespace) -> int:
    """``mcp``: read one snapshot, then serve it to an assistant over MCP (stdio) until it hangs up.

    Everything that can fail is checked before serving (the SDK, the snapshot, the baseline, the
    waivers), as one line on stderr and exit 2; once serving, stdout is the protocol's alone.
    """
    try:
        from airflow_provider_coremodels.integrations.mcp_server import serve
    except ImportError as exc:
        if (exc.name or "").startswith("airflow_provider_coremodels"):
            raise
        raise UsageError(f"{MCP_EXTRA_MISSING} ({exc})") from None
    from airflow_provider_coremodels.integrations.assistant import SnapshotQueries

    waivers = read_waivers(args.waivers) if args.waivers else ()
    policy = read_rules(args.rules) if args.rules else None
    _, data = stored_bytes(args.snapshot, args.sink_conn_id)
    queries = SnapshotQueries(
        data,
        source=args.snapshot,
        waivers=waivers,
        waivers_source=args.waivers,
        baseline=args.baseline,
        policy=policy,
        baseline_reader=_startup_baseline(args.baseline, args.sink_conn_id),
    )
    facts = queries.facts(lossiness_limit=1)["facts"] or {}  # counted, not as the document claims
    fingerprint = (queries.head.fingerprint or "none")[:64]
    sys.stderr.write(
        f"coremodels mcp: serving {printable(args.snapshot)} (fingerprint {printable(str(fingerprint))}, "
        f"{facts.get('dags', '?')} DAGs, {facts.get('assets', '?')} assets, {len(queries.findings)} "
        "findings) over stdio, read-only\n"
    )
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):  # a client that stops its server: not an error
        serve(queries)
    return EXIT_OK


def _startup_baseline(given: str | None, sink_conn_id: str | None) -> Callable[[str], Baseline]:
    """How ``mcp`` reads a baseline: the one it was started with from wherever a sink may be (the
    one bounded reader, ``stored_bytes``); one an assistant names in a call, as a local file only,
    so that a call can never make the server read a store with the connection's credentials."""
    from airflow_provider_coremodels.core.snapshots.document import load_document
    from airflow_provider_coremodels.errors import SnapshotDocumentError
    from airflow_provider_coremodels.integrations.assistant import read_baseline as read_local_baseline

    def read(path: str) -> Baseline:
        if given is None or path != given:
            return read_local_baseline(path)
        location, data = stored_bytes(path, sink_conn_id)
        try:
            return load_document(data).as_baseline()
        except SnapshotDocumentError as exc:
            raise exc.with_source(location) from None

    return read


def generate(args: argparse.Namespace) -> int:
    """``generate``: always refused by the capability gate, before anything else happens."""
    require("generate")
    return EXIT_OK  # pragma: no cover - the gate always raises


def printed(document: dict[str, Any], args: argparse.Namespace) -> str | bytes:
    """What a command prints of the document: ``render``'s text, or for JSON its bytes (never
    held as text too: the document's JSON is the largest thing an audit makes)."""
    return render_json_bytes(document) if args.format == "json" else render(document, args)


def render(document: dict[str, Any], args: argparse.Namespace) -> str:
    """The document in the format ``--format`` names."""
    if args.format == "json":
        return render_json(document)
    if args.format == "openlineage":
        return render_openlineage(document, args)
    if args.format == "sarif":
        from airflow_provider_coremodels import __version__
        from airflow_provider_coremodels.core.views.sarif import render_sarif

        return render_sarif(
            document,
            tool_version=__version__,
            source_root=source_roots(args.source_root),
            waivers_path=args.waivers,
        )
    if args.format == "markdown":
        from airflow_provider_coremodels.core.views.markdown import render_markdown

        return render_markdown(document).rstrip("\n")
    return render_table(document)


def checked_outputs(given: Sequence[tuple[str, str]] | None) -> list[tuple[str, Path]]:
    """``--output FORMAT=PATH`` values, each PATH checked before anything is read or parsed (exit 2
    for a path given twice, a directory, or one in a directory that does not exist)."""
    outputs: list[tuple[str, Path]] = []
    for view, path in given or ():
        target = Path(path).expanduser()
        where = f"--output {view}={path}"
        if any(target == seen for _, seen in outputs):
            raise UsageError(f"{where}: that path is given twice")
        if target.is_dir():
            raise UsageError(f"{where}: is a directory")
        if not target.parent.is_dir():
            raise UsageError(f"{where}: directory {target.parent} does not exist")
        if not os.access(target.parent, os.W_OK | os.X_OK):
            raise UsageError(f"{where}: directory {target.parent} is not writable")
        outputs.append((view, target))
    return outputs


def write_outputs(
    document: dict[str, Any], args: argparse.Namespace, outputs: Sequence[tuple[str, Path]]
) -> None:
    """Each ``--output`` view of the one document, written whole or not at all (``write_atomic``);
    a write that fails is exit 2, its path named."""
    from airflow_provider_coremodels.io.atomic import write_atomic

    for view, path in outputs:
        text = render(document, argparse.Namespace(**{**vars(args), "format": view}))
        try:
            write_atomic(path, (text + "\n").encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"--output {view}={path}: {exc.strerror or exc}") from None


def drift_teams(args: argparse.Namespace) -> Any:
    """``--rules`` on ``history`` and ``compare``: the teams that decide whose DAGs changed under
    ``--team`` (None: the teams each snapshot was audited with). Exit 2, before any sink is read,
    for a malformed file, one without teams, ``--rules`` without ``--team``, or a team it lacks."""
    if not getattr(args, "rules", None):
        return None
    if not getattr(args, "team", None):
        raise UsageError(f"--rules {args.rules}: it decides the teams of --team NAME; give --team too")
    policy = read_rules(args.rules)
    team_first(args, policy)
    return policy.teams


def team_first(args: argparse.Namespace, policy: Any) -> None:
    """``--team`` on ``export`` and ``merge``, checked against the rules file's teams before anything
    is captured or read (exit 2)."""
    if not getattr(args, "team", None):
        return
    from airflow_provider_coremodels.core.checks.teams import checked_team

    if policy is None:
        raise UsageError(f"--team {args.team} needs --rules FILE, a rules file with a teams: part")
    try:
        checked_team(args.team, policy.teams.names if policy.teams is not None else None, "the rules file")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def team_view(document: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``--team NAME``: the document with that team's findings only (what is printed and what
    ``--fail-on`` counts; what the sinks got is the whole document). Exit 2 for a team the
    document was not audited with."""
    team = getattr(args, "team", None)
    if not team:
        return document
    from airflow_provider_coremodels.core.checks.teams import checked_team, document_teams, for_team

    try:
        checked_team(team, document_teams(document))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return for_team(document, team)


def source_roots(given: list[str] | None) -> dict[str | None, str]:
    """``--source-root`` values: ``DIR`` for every bundle, ``BUNDLE=DIR`` for one; the last wins."""
    roots: dict[str | None, str] = {}
    for value in given or ():
        bundle, sep, root = value.partition("=")
        if sep and bundle and "/" not in bundle:
            roots[bundle] = root
        else:
            roots[None] = value
    return roots


def exit_code(findings: list[dict[str, Any]], fail_on: str) -> int:
    """1 when an unwaived finding is at or above ``fail_on``, else 0."""
    return EXIT_FINDINGS if failing_findings(findings, fail_on) else EXIT_OK


def emit(text: str | bytes) -> None:
    """Print to stdout as UTF-8 whatever the locale says (messages carry an em dash); bytes (UTF-8
    already) are written as they are."""
    if isinstance(text, bytes) and not hasattr(sys.stdout, "buffer"):  # a text-only stream
        text = text.decode("utf-8")
    if isinstance(text, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(text)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
        return
    try:
        sys.stdout.write(text + "\n")
    except UnicodeEncodeError:
        sys.stdout.flush()
        sys.stdout.buffer.write((text + "\n").encode("utf-8"))
    sys.stdout.flush()


def _sink_of(reference: str | None) -> str | None:
    """The sink directory of a ``SINK@REF`` baseline (hidden from the DAG code with it)."""
    return reference.rpartition("@")[0] or None if reference and "@" in reference else None
