"""The pre-merge check (``audit --dag-folder``): a pull request's DAG files judged in the estate
they will land in, before the merge rather than after the deploy.

The folder is parsed with Airflow's own parser, each file isolated (``capture/dag_folder.py``),
into the artifacts a capture of a deployment serving those files would give, and the same core
builds its estate. With a baseline (the snapshot the export DAG stored), the parsed bundle takes
the place of that bundle's DAGs in the baseline's estate (``core/comparing/change.py``), both estates are
audited alike (the same rules, waivers and freshness time), and the document gains the
``change`` part: what the change opens and closes, adds and removes, and whom it affects.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.core import Baseline, Estate, State, audit, build_document
from airflow_provider_coremodels.core.checks.policy import Policy
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.comparing.change import (
    DEFAULT_BUNDLE,
    Change,
    Deployed,
    Scope,
    Target,
    alias_uses,
    bundles_of,
    change_json,
    deployed,
    describe,
    parsed_bundle,
    splice,
)
from airflow_provider_coremodels.core.comparing.locations import locate
from airflow_provider_coremodels.core.estate.model import Lossiness
from airflow_provider_coremodels.core.snapshots.document import StoredSnapshot
from airflow_provider_coremodels.errors import UsageError

if TYPE_CHECKING:
    from airflow_provider_coremodels.capture.dag_folder import FolderArtifacts


@dataclass(frozen=True)
class FolderCheck:
    """What ``check_folder`` is told: the folder, the bundle it is, where it lands."""

    folder: str
    bundle: str = DEFAULT_BUNDLE
    baseline: StoredSnapshot | None = None
    #: reads the baseline where ``baseline`` is not given: called once the parse server is started,
    #: so that reading it overlaps Airflow's import there
    load_baseline: Callable[[], StoredSnapshot | None] | None = None
    baseline_source: str | None = None
    deployment: str | None = None
    waivers: Sequence[Waiver] = ()
    policy: Policy | None = None
    timeout: float | None = None
    workers: int | None = None
    withheld_env: Sequence[str] = ()
    max_snapshot_bytes: int | None = None
    sandbox: str = "auto"  # auto, require or off (capture/sandbox.py)
    base: str | None = None  # --base REF: the change relative to the merge base of REF and HEAD
    base_folder: str | None = None  # --base-folder DIR: ... relative to that folder
    full: bool = False  # --full: parse every file of both versions, not only what the change can alter
    deadline: float | None = None  # the whole parse (--parse-deadline)
    passed_env: Sequence[str] = ()  # variables the DAG code is given beside the allow list
    hidden: Sequence[str] = ()  # what the run reads or writes: absent from the sandbox


@dataclass(frozen=True)
class FolderResult:
    document: dict[str, Any]
    change: Change


def check_folder(check: FolderCheck) -> FolderResult:
    """Parse the folder, put it in the baseline's estate, audit before and after, and describe the change.

    With ``base`` (a git ref) or ``base_folder``, the change is what the work tree does relative to
    the merge base: the files it touches, and those that import or read them, are parsed in both
    versions (every file with ``full``), and each version is put in the baseline's estate in place
    of those files' DAGs alone; the rest of the bundle stays as deployed.
    """
    folder = Path(check.folder).expanduser()
    if not folder.is_dir():
        problem = "is not a directory" if folder.exists() else "does not exist"
        raise UsageError(f"--dag-folder {check.folder}: {problem}")
    if check.base or check.base_folder:
        if check.baseline is None and check.load_baseline is None:
            raise UsageError(
                "--base and --base-folder judge a change in the deployed estate: give --baseline too"
            )
        return _check_change(check, folder)
    stored = _stored(check)
    before = stored.estate if stored is not None else None
    target, known, records = _landing(check, stored)
    artifacts, parsed = _parsed(check, folder, known, stored, records)
    if before is None:
        after = parsed
        empty = Estate(datasets=(), lineage=(), state=parsed.state)
        then = audit(empty, waivers=check.waivers, policy=check.policy)
        now = audit(after, waivers=check.waivers, policy=check.policy)
        before_estate = empty
    else:
        after = splice(before, parsed, target, aliases=alias_uses(artifacts.datasets))
        then = audit(before, waivers=check.waivers, policy=check.policy)
        assert stored is not None
        now = audit(after, Baseline(stored.fingerprint, before), waivers=check.waivers, policy=check.policy)
        before_estate = before
    return _result(check, artifacts, parsed, before_estate, after, then, now, stored, target, {})


def _stored(check: FolderCheck) -> StoredSnapshot | None:
    """The baseline, read now where it was not given; one that cannot hold the change is one line."""
    stored = check.baseline
    if stored is None and check.load_baseline is not None:
        stored = check.load_baseline()
    if stored is not None and stored.estate is None:
        raise UsageError(
            f"--baseline {check.baseline_source}: was stored without datasets and lineage (over the "
            "snapshot cap), so the change cannot be placed in it"
        )
    return stored


def _landing(
    check: FolderCheck, stored: StoredSnapshot | None
) -> tuple[Target, Deployed | None, list[Lossiness]]:
    """Which of the baseline's DAGs the folder replaces, what the baseline knows of them, and the
    record of a bundle the baseline does not have."""
    before = stored.estate if stored is not None else None
    target = _target(before, check.bundle, check.deployment)
    known = deployed(before, target) if before is not None else None
    records: list[Lossiness] = []
    if before is not None and known is not None and not known.known:
        present = bundles_of(before, target.deployment)
        records.append(
            Lossiness(
                "dags",
                f"the baseline has no DAG of bundle {check.bundle} (its bundles: "
                f"{', '.join(present) or 'none named'}): every DAG of the folder reads as added",
            )
        )
    return target, known, records


def _parsed(
    check: FolderCheck,
    folder: Path,
    known: Deployed | None,
    stored: StoredSnapshot | None,
    records: Sequence[Lossiness],
) -> tuple[FolderArtifacts, Estate]:
    """The whole folder parsed into the bundle's estate."""
    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder

    artifacts = parse_dag_folder(
        folder,
        bundle=check.bundle,
        timeout=check.timeout,
        workers=check.workers,
        deployed_root=known.root if known is not None else None,
        paused=known.paused if known is not None else None,
        withheld_env=tuple(check.withheld_env),
        sandbox=check.sandbox,
        deadline=check.deadline,
        passed_env=tuple(check.passed_env),
        hidden=tuple(check.hidden),
    )
    return artifacts, _estate(artifacts, stored, records)


def _estate(
    artifacts: FolderArtifacts, stored: StoredSnapshot | None, records: Sequence[Lossiness]
) -> Estate:
    """A parse's artifacts as the bundle's estate, with what no parse knows said."""
    from airflow_provider_coremodels.capture.dag_folder import NOT_IN_CODE

    runtime = list(artifacts.lossiness)
    if stored is not None:  # what no parse knows, the baseline gives
        runtime = [r for r in runtime if r.message != NOT_IN_CODE]
        runtime.append(
            Lossiness(
                "dags",
                f"parsed from the DAG folder: runs, asset events and DAG warnings are the baseline's "
                f"({stored.fingerprint}), as the deployment last had them",
            )
        )
    state = State(
        connector_version=__version__,
        airflow_version=artifacts.airflow_version,
        api_version="v2",
        captured_at=None,
        deployment=stored.estate.state.deployment if stored is not None and stored.estate else None,
    )
    return parsed_bundle(
        artifacts.dags, artifacts.tasks, artifacts.datasets, state=state, lossiness=[*records, *runtime]
    )


def _check_change(check: FolderCheck, folder: Path) -> FolderResult:
    """The change of ``--base``/``--base-folder``: both versions of what it can alter, each put in
    the deployed estate, audited alike; the drift judged against the merge base's version.

    One parse server parses both versions, in one sandbox, and is started first: Airflow's import
    there overlaps laying out the merge base, reading the baseline and finding what the change can
    alter here. The merge base's files are parsed first, and the work tree's only once every one
    of them has ended, so the pull request's code cannot reach the parse it is judged against."""
    from airflow_provider_coremodels.capture.dag_folder import FolderJob, ParseServer
    from airflow_provider_coremodels.capture.diff import (
        from_folder,
        from_git,
        git_place,
        quick_scratch,
        scan,
        to_parse,
    )

    folder = folder.resolve()
    with tempfile.TemporaryDirectory(prefix="coremodels-base-", dir=quick_scratch()) as scratch:
        if check.base:
            place = git_place(folder)
            base_folder = place.base_folder(Path(scratch))
        else:
            assert check.base_folder is not None
            base_folder = Path(check.base_folder).expanduser()
            if not base_folder.is_dir():
                raise UsageError(f"--base-folder {base_folder}: is not a directory")
            base_folder = base_folder.resolve()
        with ParseServer(
            [folder, base_folder],
            ready=[folder] if check.base else [folder, base_folder],
            bundle=check.bundle,
            timeout=check.timeout,
            workers=check.workers,
            withheld_env=tuple(check.withheld_env),
            sandbox=check.sandbox,
            deadline=check.deadline,
            passed_env=tuple(check.passed_env),
            hidden=tuple(check.hidden),
        ) as server:
            head_tree = scan(folder)  # read once: what the change can alter, and the base's copies
            if check.base:
                view = from_git(folder, check.base, Path(scratch), place, head_tree)
                server.ready(view.folder)
            else:
                view = from_folder(folder, base_folder)
            stored = _stored(check)
            if stored is None or stored.estate is None:
                raise UsageError(
                    "--base and --base-folder judge a change in the deployed estate: give --baseline too"
                )
            deployed_estate = stored.estate
            target, known, records = _landing(check, stored)
            assert known is not None
            touched = view.touched
            head_only = None if check.full else to_parse(head_tree, touched)
            base_only = None if check.full else to_parse(view.tree or view.folder, touched)
            root, paused = known.root, known.paused
            # what judging the parse needs, imported while the server still imports Airflow rather
            # than after it answers: the import errors' reduction (and requests), the declarations
            import airflow_provider_coremodels.capture.crawl
            import airflow_provider_coremodels.capture.dag_folder_worker  # noqa: F401

            base, head = server.parse(
                [
                    FolderJob(view.folder, only=base_only, deployed_root=root, paused=paused),
                    FolderJob(folder, only=head_only, deployed_root=root, paused=paused),
                ]
            )
    head_estate = _estate(head, stored, records)
    base_estate = _estate(base, stored, ())
    files = set(touched) | (set(head_only or ()) | set(base_only or ()))
    if check.full:  # what the scoped parse would read: every file whose parse differs
        files |= _differing(head, base)
    scope = Scope(frozenset(files), frozenset(_dags_of(base, files)) | frozenset(_dags_of(head, files)))
    before = splice(deployed_estate, base_estate, target, aliases=alias_uses(base.datasets), scope=scope)
    after = splice(deployed_estate, head_estate, target, aliases=alias_uses(head.datasets), scope=scope)
    drift = Baseline(stored.fingerprint, before)  # the pull request's own drift, not the deployment's
    then = audit(before, drift, waivers=check.waivers, policy=check.policy)
    now = audit(after, drift, waivers=check.waivers, policy=check.policy)
    base_json = {
        **view.as_json(),
        "filesParsed": head.files,
        "filesListed": head.listed,
        "full": check.full,
    }
    return _result(
        check, head, head_estate, before, after, then, now, stored, target, {"base": base_json}, folder
    )


def _dags_of(artifacts: FolderArtifacts, files: set[str]) -> set[str]:
    """The DAGs the parse found in ``files``."""
    scope = Scope(frozenset(files))
    return {
        str(d.get("dag_id")) for d in artifacts.dags.get("dags", ()) if scope.holds(d.get("relative_fileloc"))
    }


def _differing(head: FolderArtifacts, base: FolderArtifacts) -> set[str]:
    """The files whose parse differs between the two versions (their DAGs, tasks, asset references
    or import error), for ``--full``: the scope a scoped parse must have found."""
    now, then = _by_file(head), _by_file(base)
    return {path for path in now.keys() | then.keys() if now.get(path) != then.get(path)}


#: What differs between two parses of the same file: time, the signed file token, and the ids
#: Airflow numbers assets with in the order it meets them.
_VOLATILE = frozenset(
    ("file_token", "last_parsed_time", "last_parse_duration", "fileloc", "id", "created_at", "updated_at")
)


def _by_file(artifacts: FolderArtifacts) -> dict[str, str]:
    """Each file's parse as one comparable string: its DAGs, their tasks, their asset references,
    its import error."""
    files: dict[str, list[Any]] = {}
    where: dict[str, str] = {}
    for dag in artifacts.dags.get("dags", ()):
        path = str(dag.get("relative_fileloc"))
        where[str(dag.get("dag_id"))] = path
        files.setdefault(path, []).append(_stable(dag))
        files[path].append(_stable(artifacts.tasks.get(dag.get("dag_id"))))
    for error in artifacts.dags.get("import_errors", ()):
        path = str(error.get("filename") or "")
        files.setdefault(path, []).append(str(error.get("stack_trace")))
    for asset in artifacts.datasets.get("assets", ()):
        for role in ("producing_tasks", "consuming_tasks", "scheduled_dags"):
            for ref in asset.get(role) or ():
                owner = where.get(str(ref.get("dag_id")))
                if owner is not None:
                    files[owner].append([role, asset.get("uri"), asset.get("name"), ref.get("task_id")])
    return {path: json.dumps(sorted(map(json.dumps, parts))) for path, parts in files.items()}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _result(
    check: FolderCheck,
    artifacts: FolderArtifacts,
    parsed: Estate,
    before: Estate,
    after: Estate,
    then: Any,
    now: Any,
    stored: StoredSnapshot | None,
    target: Target,
    extra: dict[str, Any],
    folder: Path | None = None,
) -> FolderResult:
    change = describe(
        before,
        after,
        then.findings,
        now.findings,
        bundle=check.bundle,
        baseline=stored.fingerprint if stored is not None else None,
        teams=check.policy.teams if check.policy is not None else None,
    )
    declared = dict(artifacts.declared)
    if folder is not None:  # a scoped parse: the other files an opened finding points into, by AST
        declared.update(_declared_elsewhere(folder, change, before, after, declared, target))
    located = locate(
        change.opened,
        before,
        after,
        declared=declared,
        error_lines=_error_lines(parsed, artifacts.error_lines, target),
        added=change.lineage_added,
        parsed_id=target.parsed_id,
        owns=target.owns,
    )
    change = dataclasses.replace(
        change, lines=_defined_at(change, after, artifacts.lines, target), locations=located
    )
    build: dict[str, Any] = {"lean": True}
    if check.max_snapshot_bytes is not None:
        build["max_snapshot_bytes"] = check.max_snapshot_bytes
    document = build_document(after, now, **build)
    document["change"] = {
        **change_json(change),
        **extra,
        "isolation": artifacts.isolation.kind,
        "isolationDetail": artifacts.isolation.detail,
    }
    return FolderResult(document, change)


def _declared_elsewhere(
    folder: Path,
    change: Change,
    before: Estate,
    after: Estate,
    declared: Mapping[str, Any],
    target: Target,
) -> dict[str, dict[str, Any]]:
    """Where the DAGs an opened finding points at declare what it is about, for those a scoped
    parse did not read (a consumer of an asset the change removed, a DAG linking to one it deleted):
    read from their files in the work tree as bounded regular files and parsed with ``ast``, never
    run. A full parse reads them all, so both give the same locations."""
    import ast

    from airflow_provider_coremodels.capture.dag_folder_worker import declarations
    from airflow_provider_coremodels.core.comparing.change import RELATIVE_FILELOC_KEY
    from airflow_provider_coremodels.defaults import MAX_DAG_FILE_BYTES
    from airflow_provider_coremodels.io.input_files import Unreadable, read_bounded

    subjects = {f.subject for f in change.opened}
    subjects |= {s.rpartition(".")[0] for s in subjects if "." in s}
    wanted: set[str] = set()
    for edge in (*before.lineage, *after.lineage):
        ends = {edge.dependent, edge.depends_on}
        if ends & subjects:
            wanted |= ends
    files: dict[str, list[str]] = {}
    for dag in after.dags():
        dag_id = target.parsed_id(dag.identity)
        relative = dag.metadata.get(RELATIVE_FILELOC_KEY)
        if dag.identity in wanted and dag_id not in declared and target.owns(dag) and relative:
            files.setdefault(relative, []).append(dag_id)
    found: dict[str, dict[str, Any]] = {}
    for relative, dag_ids in sorted(files.items()):
        path = folder / relative
        if not relative.endswith(".py") or not path.resolve().is_relative_to(folder.resolve()):
            continue
        try:
            found.update(declarations(ast.parse(read_bounded(str(path), MAX_DAG_FILE_BYTES)), dag_ids))
        except (Unreadable, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return found


def _defined_at(change: Change, after: Estate, lines: Mapping[str, int], target: Target) -> dict[str, int]:
    """Where each parsed DAG that an opened finding is about is defined (``dag_id``, the DAG of a
    ``dag_id.task_id``, or an asset's producers and consumers): what SARIF points the opened
    findings at. Only those DAGs' files are read."""
    touching: dict[str, list[str]] = {}
    for edge in after.lineage:
        if not edge.dag_link:
            touching.setdefault(edge.asset, []).append(edge.dag_id)
    wanted: dict[str, str] = {}  # dag_id as the folder names it -> as the estate does
    for finding in change.opened:
        for identity in touching.get(finding.subject, ()):
            if target.parsed_id(identity) in lines:
                wanted[target.parsed_id(identity)] = identity
        subject = finding.subject
        while subject:
            parsed = target.parsed_id(subject)
            if parsed in lines:
                wanted[parsed] = subject
                break
            subject = subject.rpartition(".")[0]
    return {identity: lines[parsed] for parsed, identity in wanted.items()}


def _error_lines(parsed: Estate, lines: Mapping[str, int], target: Target) -> dict[str, int]:
    """The line of each broken file's error in the file itself, by the file as findings name it in
    the estate the change lands in (``lines``: by the file's path in the folder; Airflow 3.0 names
    a broken file by its absolute path)."""
    out: dict[str, int] = {}
    for file in parsed.import_errors:
        line = lines.get(file.path)
        if line is None and file.path.startswith("/"):  # the longest path in the folder it ends with
            ends = [rel for rel in lines if file.path.endswith("/" + rel)]
            line = lines[max(ends, key=len)] if ends else None
        if line is not None:
            name = f"{target.deployment}/{file.file.lstrip('/')}" if target.deployment else file.file
            out[name] = line
    return out


def _target(baseline: Estate | None, bundle: str, deployment: str | None) -> Target:
    """Which of the baseline's DAGs the folder replaces; a merged baseline needs its deployment named."""
    if not bundle or "/" in bundle:
        raise UsageError(f"--bundle {bundle!r}: a bundle name is non-empty and has no '/'")
    deployments = baseline.state.deployments if baseline is not None else ()
    if not deployments:
        if deployment is not None and baseline is not None and deployment != baseline.state.deployment:
            raise UsageError(
                f"--deployment {deployment}: the baseline is deployment "
                f"{baseline.state.deployment or '(unnamed)'}'s snapshot, not a merged one"
            )
        return Target(bundle)
    if deployment is None:
        raise UsageError(
            "--baseline is a merged snapshot: name the deployment the folder lands in with "
            f"--deployment (one of: {', '.join(deployments)})"
        )
    if deployment not in deployments:
        raise UsageError(
            f"--deployment {deployment}: not in the merged baseline "
            f"(its deployments: {', '.join(deployments)})"
        )
    return Target(bundle, deployment)


#: Where CI systems and cloud SDKs keep the job's own credentials: never the DAG code's to read.
CI_SECRETS = (
    "GITHUB_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "CI_JOB_TOKEN",
    "CI_JOB_JWT",
    "CI_JOB_JWT_V2",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CLIENT_SECRET",
)


def withheld_variables(*names: str | None, conn_ids: Sequence[str | None] = ()) -> list[str]:
    """The environment variables a DAG file must not see: those the run's secrets came from, each
    named connection's ``AIRFLOW_CONN_*`` variable, and the CI job's own credentials."""
    out = [name for name in names if name]
    out.extend(CI_SECRETS)
    out.extend(f"AIRFLOW_CONN_{conn_id.upper()}" for conn_id in conn_ids if conn_id)
    return list(dict.fromkeys(out))
