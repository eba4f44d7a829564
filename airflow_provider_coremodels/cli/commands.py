"""The commands behind both CLI front doors: thin glue over the core, returning exit codes."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core import audit as run_audit
from airflow_provider_coremodels.core import build_document
from airflow_provider_coremodels.core.capabilities import require
from airflow_provider_coremodels.core.render import render_json, render_table
from airflow_provider_coremodels.core.rules import failing_findings
from airflow_provider_coremodels.core.text import printable
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.input_files import (
    read_artifacts,
    read_baseline,
    read_stored_estate,
    read_waivers,
)

if TYPE_CHECKING:
    from airflow_provider_coremodels.capture import ApiSource, RetryPolicy

#: The example estate's recorded REST responses (example_dags/estate served by Airflow 3.3),
#: package data so that a first run needs nothing but the install.
EXAMPLE_ESTATE = Path(__file__).resolve().parents[1] / "example_estate"

EXIT_OK = 0
EXIT_FINDINGS = 1


def audit(args: argparse.Namespace) -> int:
    """``audit``: parse artifacts (or re-read a snapshot), audit, print, and pick the exit code."""
    document = _audited_document(args, "audit", max_snapshot_bytes=args.max_snapshot_bytes)
    emit(render(document, args))
    return exit_code(document["findings"], args.fail_on)


def lineage(args: argparse.Namespace) -> int:
    """``lineage``: the audit's inputs drawn as Mermaid, DOT or the UI page's SVG; findings mark nodes."""
    from airflow_provider_coremodels.core.lineage import (
        MAX_NODES,
        LineageGraph,
        cut_note,
        picture,
        to_dot,
        to_mermaid,
    )
    from airflow_provider_coremodels.core.suggest import did_you_mean

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
    if args.snapshot:
        estate = read_stored_estate(args.snapshot)
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
    result = run_audit(
        estate,
        baseline,
        waivers=waivers,
        now=getattr(args, "now", None),
        tolerance=getattr(args, "stale_tolerance", None),
    )
    return build_document(estate, result, **build)


def merge(args: argparse.Namespace) -> int:
    """``merge``: the snapshots of several deployments as one estate, audited, printed and pushed."""
    from airflow_provider_coremodels.export import open_sinks
    from airflow_provider_coremodels.federation import Source, merge_and_push

    waivers = read_waivers(args.waivers) if args.waivers else ()
    _airflow_logs_to_stderr(args)
    with _stdout_to_stderr():
        sinks = open_sinks(
            args.sink,
            sink_conn_id=args.sink_conn_id,
            coremodels_conn_id=args.coremodels_conn_id,
            **_openlineage_defaults(args),
        )
        result = merge_and_push(
            [Source.parse(given) for given in args.snapshots],
            sinks,
            stale_before=args.stale_before,
            sink_conn_id=args.sink_conn_id,
            waivers=waivers,
            now=args.now,
            stale_tolerance=args.stale_tolerance,
            max_snapshot_bytes=args.max_snapshot_bytes,
        )
    emit(render(result.document, args))
    if sinks:
        say_summary(result.summary_line(), args)
    return exit_code(result.document["findings"], args.fail_on)


def capture(args: argparse.Namespace) -> int:
    """``capture``: read the estate from the REST API and save the three artifacts under ``--out``."""
    from airflow_provider_coremodels.atomic import write_atomic
    from airflow_provider_coremodels.capture import AirflowApiClient
    from airflow_provider_coremodels.capture import capture as run_capture
    from airflow_provider_coremodels.capture.progress import ProgressReporter

    _airflow_logs_to_stderr(args)
    source = api_source(args)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be created: {exc.strerror or exc}") from None
    progress = ProgressReporter(sys.stderr)
    try:
        with AirflowApiClient(source, retry=retry_policy(args)) as client:
            result = run_capture(client, keep_raw=True, progress=progress)
    finally:
        progress.close()
    files = {"dags.json": result.dags, "tasks.json": result.tasks}
    if isinstance(result.datasets, dict):  # not written when the assets could not be fetched
        files["datasets.json"] = result.datasets
    for name, value in files.items():
        write_atomic(out / name, json.dumps(value, ensure_ascii=False).encode("utf-8"))
    for record in result.lossiness:
        sys.stderr.write(f"warning: {record.artifact}: {printable(record.message)}\n")
    emit(f"{result.summary.line()} -> {out}")
    return EXIT_OK


def export(args: argparse.Namespace) -> int:
    """``export``: capture, audit against the sinks' baseline, print, push to every sink."""
    from airflow_provider_coremodels.capture import AirflowApiClient
    from airflow_provider_coremodels.capture.progress import ProgressReporter
    from airflow_provider_coremodels.export import export as run_export
    from airflow_provider_coremodels.export import open_sinks

    _airflow_logs_to_stderr(args)
    waivers = read_waivers(args.waivers) if args.waivers else ()
    source = api_source(args)
    retry = retry_policy(args)
    with _stdout_to_stderr():
        sinks = open_sinks(
            args.sink,
            sink_conn_id=args.sink_conn_id,
            coremodels_conn_id=args.coremodels_conn_id,
            retry=retry,
            **_openlineage_defaults(args),
        )
    if not sinks:
        sys.stderr.write(
            "warning: export has no --sink: the snapshot is audited and printed, but stored nowhere "
            "(no baseline is kept for the next run's coverage and drift)\n"
        )
    progress = ProgressReporter(sys.stderr)
    try:
        with AirflowApiClient(source, retry=retry) as client:
            result = run_export(
                client,
                sinks,
                max_snapshot_bytes=args.max_snapshot_bytes,
                include_asset_extra=args.include_asset_extra,
                waivers=waivers,
                now=args.now,
                stale_tolerance=args.stale_tolerance,
                deployment=args.deployment or (None if args.base_url else _conn_id(args)),
                progress=progress,
            )
    finally:
        progress.close()
    emit(render(result.document, args))
    say_summary(f"{result.capture.line()}\n{result.summary_line()}", args)
    return exit_code(result.document["findings"], args.fail_on)


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
    if args.timeout:
        overrides["read_timeout"] = args.timeout
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
        from airflow_provider_coremodels.openlineage import Options, render
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
        from airflow_provider_coremodels.openlineage import quiet_client_logs

        quiet_client_logs()


#: What ``mcp`` says when the MCP SDK is not installed.
MCP_EXTRA_MISSING = "mcp needs the mcp extra: pip install 'airflow-provider-coremodels[mcp]'"


def mcp(args: argparse.Namespace) -> int:
    """``mcp``: read one snapshot, then serve it to an assistant over MCP (stdio) until it hangs up.

    Everything that can fail is checked before serving (the SDK, the snapshot, the baseline, the
    waivers), as one line on stderr and exit 2; once serving, stdout is the protocol's alone.
    """
    try:
        from airflow_provider_coremodels.mcp_server import serve
    except ImportError as exc:
        if (exc.name or "").startswith("airflow_provider_coremodels"):
            raise
        raise UsageError(f"{MCP_EXTRA_MISSING} ({exc})") from None
    from airflow_provider_coremodels.assistant import SnapshotQueries

    waivers = read_waivers(args.waivers) if args.waivers else ()
    queries = SnapshotQueries.open(
        args.snapshot, waivers=waivers, waivers_source=args.waivers, baseline=args.baseline
    )
    facts = queries.head.state.get("facts")
    facts = facts if isinstance(facts, dict) else {}
    sys.stderr.write(
        f"coremodels mcp: serving {printable(args.snapshot)} (fingerprint {queries.head.fingerprint}, "
        f"{facts.get('dags', '?')} DAGs, {facts.get('assets', '?')} assets, {len(queries.findings)} "
        "findings) over stdio, read-only\n"
    )
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):  # a client that stops its server: not an error
        serve(queries)
    return EXIT_OK


def generate(args: argparse.Namespace) -> int:
    """``generate``: always refused by the capability gate, before anything else happens."""
    require("generate")
    return EXIT_OK  # pragma: no cover - the gate always raises


def render(document: dict[str, Any], args: argparse.Namespace) -> str:
    """The document in the format ``--format`` names."""
    if args.format == "json":
        return render_json(document)
    if args.format == "openlineage":
        return render_openlineage(document, args)
    if args.format == "sarif":
        from airflow_provider_coremodels import __version__
        from airflow_provider_coremodels.core.sarif import render_sarif

        return render_sarif(
            document,
            tool_version=__version__,
            source_root=source_roots(args.source_root),
            waivers_path=args.waivers,
        )
    if args.format == "markdown":
        from airflow_provider_coremodels.core.markdown import render_markdown

        return render_markdown(document).rstrip("\n")
    return render_table(document)


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


def emit(text: str) -> None:
    """Print to stdout as UTF-8 whatever the locale says (messages carry an em dash)."""
    try:
        sys.stdout.write(text + "\n")
    except UnicodeEncodeError:
        sys.stdout.flush()
        sys.stdout.buffer.write((text + "\n").encode("utf-8"))
    sys.stdout.flush()
