"""The GitHub furniture: the CI and release workflows and the composite action (``action.yml``).

Each is validated against SchemaStore's published schema (github-workflow, github-action), the
copies check-jsonschema ships (this machine cannot fetch them). The action's own ``run:`` steps
are then run here with bash, as the runner would, their ``${{ }}`` expressions substituted from
the inputs: the sandbox step (with ``sudo``, ``apt-get``, ``sysctl``, ``tee`` and
``apparmor_parser`` as recording stand-ins: a real install needs root and changes the machine),
the install step (with a ``python`` whose ``pip`` records its arguments: Airflow's constraint file
is on GitHub, which this machine cannot reach), the judging step for real on the example estate in
a small git repository, the comment step against a local HTTP server standing in for GitHub's REST
API, and the gate. Not run: ``actions/setup-python`` and ``github/codeql-action/upload-sarif``,
actions of GitHub's own that need its runner and API. The release workflow's notes step runs with
a recording ``gh``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml
from support.helpers import REPO
from support.local_http import BackgroundHTTPServer, RequestHandler

WORKFLOWS = REPO / ".github" / "workflows"
ACTION = REPO / "action.yml"
MARKER = "<!-- coremodels-premerge -->"


def validate(schema: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", f"vendor.{schema}", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def load(path: Path) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


# -- the schemas ----------------------------------------------------------------------------


def test_the_workflows_validate_against_the_github_workflow_schema() -> None:
    workflows = sorted(WORKFLOWS.glob("*.yml"))
    assert [path.name for path in workflows] == ["ci.yml", "release.yml"]
    done = validate("github-workflows", *workflows)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_action_validates_against_the_github_action_schema() -> None:
    done = validate("github-actions", ACTION)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("schema", "source", "broken"),
    [
        ("github-workflows", WORKFLOWS / "release.yml", ("runs-on: ubuntu-24.04", "run-on: ubuntu-24.04")),
        ("github-actions", ACTION, ("using: composite", "using: compost")),
        ("github-actions", ACTION, ("      shell: bash\n", "\n")),  # a composite run step needs its shell
    ],
)
def test_the_schemas_refuse_a_broken_copy(tmp_path: Path, schema: str, source: Path, broken: tuple) -> None:
    """The validation above can fail: one word changed, and the schema refuses the file."""
    text = source.read_text(encoding="utf-8")
    assert broken[0] in text
    copy = tmp_path / source.name
    copy.write_text(text.replace(broken[0], broken[1], 1), encoding="utf-8")
    assert validate(schema, copy).returncode == 1


# -- the workflows --------------------------------------------------------------------------


def test_ci_runs_the_readmes_test_command_on_pull_requests_and_pushes() -> None:
    workflow = load(WORKFLOWS / "ci.yml")
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in triggers and "push" in triggers
    (job,) = workflow["jobs"].values()
    assert [step["run"] for step in job["steps"] if "run" in step] == [".ci/run"]
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci_run if line and not line.startswith(("#", "set ", "cd ", "export "))]
    assert commands == ["make test", "make test-oldest", "make test-wheel", "make bench-smoke"]
    assert "`make test` runs ruff, mypy and the suite" in (REPO / "README.md").read_text(encoding="utf-8")
    assert workflow["permissions"] == {"contents": "read"}


def test_release_publishes_by_trusted_publishing_and_attaches_the_files() -> None:
    workflow = load(WORKFLOWS / "release.yml")
    assert workflow[True] == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    build = [step.get("run", "") for step in jobs["build"]["steps"]]
    assert 'python dev/check_release.py "$GITHUB_REF_NAME"' in build
    assert any("python -m twine check --strict dist/*" in run for run in build)
    assert any("dev/test_wheel.sh dist/*.whl 3.0.6 constraints-oldest.txt" in run for run in build)
    pypi = jobs["pypi"]
    assert pypi["environment"]["name"] == "pypi"
    assert pypi["permissions"] == {"id-token": "write"}
    assert pypi["steps"][-1] == {"uses": "pypa/gh-action-pypi-publish@release/v1"}
    assert "password" not in json.dumps(pypi)  # no token: trusted publishing
    assert jobs["github-release"]["permissions"] == {"contents": "write"}


def test_the_release_notes_are_the_versions_changelog_section(tmp_path: Path) -> None:
    """The github-release job's step, run as written with a ``gh`` that records what it was given,
    on this CHANGELOG.md and tag v0.2.0: the notes are that section, and both files go up."""
    (step,) = [s for s in load(WORKFLOWS / "release.yml")["jobs"]["github-release"]["steps"] if "run" in s]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "gh"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\n')
    shim.chmod(0o755)
    work = tmp_path / "checkout"
    (work / "dist").mkdir(parents=True)
    shutil.copy(REPO / "CHANGELOG.md", work)
    for name in (
        "airflow_provider_coremodels-0.2.0-py3-none-any.whl",
        "airflow_provider_coremodels-0.2.0.tar.gz",
    ):
        (work / "dist" / name).write_bytes(b"")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_REPOSITORY": "coremodels/airflow-provider-coremodels",
        "TAG": "v0.2.0",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=work, env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:4] == [
        "release",
        "create",
        "v0.2.0",
        "dist/airflow_provider_coremodels-0.2.0-py3-none-any.whl",
    ]
    assert args[4] == "dist/airflow_provider_coremodels-0.2.0.tar.gz"
    notes = (tmp_path / "notes.md").read_text()
    assert notes.lstrip().startswith("### Changed\n\n- **Airflow 3.0 and 3.1 are supported**")
    assert "## [" not in notes and "### Security: hostile round three" not in notes  # 0.2.0's only
    assert "- The operator now gives its sinks the run's retry policy" in notes  # 0.2.0's last line
    assert "`python -m airflow_provider_coremodels` for the same commands" not in notes  # 0.1.0's


# -- the action: its shape ------------------------------------------------------------------


def action() -> dict[str, Any]:
    return load(ACTION)


def step_named(name: str) -> dict[str, Any]:
    (step,) = [s for s in action()["runs"]["steps"] if s.get("name") == name]
    return step


def test_inputs_reach_the_scripts_only_through_their_environment() -> None:
    """No ``${{ }}`` in a ``run:`` script: an input (a branch name, a path) is never pasted into
    shell code, and the judging step's environment holds no token."""
    steps = action()["runs"]["steps"]
    for step in steps:
        assert "${{" not in step.get("run", ""), step["name"]
    judge = step_named("Judge the change")
    assert not [value for value in judge["env"].values() if "token" in value]
    assert "github-token" in step_named("One pull request comment, edited in place")["env"]["GH_TOKEN"]


def test_the_action_exposes_what_the_docs_say() -> None:
    spec = action()
    assert set(spec["inputs"]) >= {
        "dag-folder",
        "baseline",
        "rules",
        "waivers",
        "fail-on-break",
        "fail-on-new",
        "base-ref",
        "sandbox",
        "python-version",
        "airflow-version",
    }
    assert set(spec["outputs"]) == {"exit-code", "report", "sarif"}
    uses = [step["uses"] for step in spec["runs"]["steps"] if "uses" in step]
    assert uses == ["actions/setup-python@v5", "github/codeql-action/upload-sarif@v3"]


def test_the_docs_one_line_uses_this_release_and_inputs_the_action_has() -> None:
    """docs/premerge.md's "in one line" workflow: the action at this version's tag, given only
    inputs it declares, in a workflow that validates; and every input is named in the docs."""
    from airflow_provider_coremodels import __version__

    text = (REPO / "docs" / "premerge.md").read_text(encoding="utf-8")
    block = next(b for b in text.split("```yaml")[1:] if "premerge.yml" in b.split("\n", 2)[1])
    workflow = yaml.safe_load(block.split("```")[0])
    (step,) = [s for s in workflow["jobs"]["judge"]["steps"] if "coremodels" in s.get("uses", "")]
    assert step["uses"] == f"coremodels/airflow-provider-coremodels@v{__version__}"
    declared = set(action()["inputs"])
    assert set(step["with"]) <= declared
    section = text.split("### GitHub Actions, in one line")[1].split("\n### ")[0]
    assert not [name for name in declared if f"`{name}`" not in section]
    assert "rev: v" + __version__ in text  # the pre-commit hook's pin


def test_the_docs_one_line_workflow_validates(tmp_path: Path) -> None:
    text = (REPO / "docs" / "premerge.md").read_text(encoding="utf-8")
    block = next(b for b in text.split("```yaml")[1:] if "premerge.yml" in b.split("\n", 2)[1])
    (tmp_path / "premerge.yml").write_text(block.split("```")[0])
    done = validate("github-workflows", tmp_path / "premerge.yml")
    assert done.returncode == 0, done.stdout + done.stderr


# -- the action: its steps, run ---------------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def substituted(value: str, inputs: dict[str, str], context: dict[str, str]) -> str:
    """``value`` with each ``${{ inputs.X }}`` and each expression of ``context`` replaced; any
    other expression fails the test, so the action cannot grow one this test does not run."""

    def one(found: re.Match[str]) -> str:
        expression = found.group(1)
        if expression.startswith("inputs."):
            return inputs[expression.removeprefix("inputs.")]
        assert expression in context, f"the test does not know ${{{{ {expression} }}}}"
        return context[expression]

    return EXPRESSION.sub(one, value)


def action_inputs(**given: str) -> dict[str, str]:
    defaults = {name: str(spec.get("default", "")) for name, spec in action()["inputs"].items()}
    defaults["github-token"] = "the-token"  # ${{ github.token }} on a runner
    unknown = set(given) - set(defaults)
    assert not unknown, unknown
    return {**defaults, **given}


def run_step(
    name: str,
    cwd: Path,
    env: dict[str, str],
    inputs: dict[str, str],
    context: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """One ``run:`` step of action.yml as the runner runs it: its ``env`` substituted, then
    ``bash -e {0}`` (the shell ``shell: bash`` means) on its script."""
    step = step_named(name)
    assert step["shell"] == "bash"
    step_env = {
        key: substituted(str(value), inputs, context or {}) for key, value in step.get("env", {}).items()
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd,
        env={**env, **step_env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def shims(bin_dir: Path, log: Path, **scripts: str) -> dict[str, str]:
    bin_dir.mkdir(exist_ok=True)
    for name, script in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{script}\n")
        path.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "LOG": str(log)}


@pytest.mark.parametrize(("restricted", "profile"), [("1", True), ("0", False)])
def test_the_sandbox_step_installs_bubblewrap_and_its_apparmor_profile(
    tmp_path: Path, restricted: str, profile: bool
) -> None:
    log = tmp_path / "log"
    env = shims(
        tmp_path / "bin",
        log,
        sudo='"$@"',
        **{
            "apt-get": 'echo "apt-get $*" >> "$LOG"',
            "sysctl": f'[ "$*" = "-n kernel.apparmor_restrict_unprivileged_userns" ] && echo {restricted}',
            "tee": 'echo "tee $*" >> "$LOG"; cat >> "$LOG"',
            "apparmor_parser": 'echo "apparmor_parser $*" >> "$LOG"',
        },
    )
    done = run_step("The sandbox (bubblewrap, and an AppArmor profile where user namespaces are restricted)",
                    tmp_path, env, action_inputs())  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[:2] == ["apt-get update -qq", "apt-get install -y -qq bubblewrap"]
    if profile:
        assert lines[2] == "tee /etc/apparmor.d/bwrap"
        assert "profile bwrap /usr/bin/bwrap flags=(unconfined) {" in lines and "  userns," in lines
        assert lines[-1] == "apparmor_parser -r /etc/apparmor.d/bwrap"
    else:
        assert len(lines) == 2
    assert (
        step_named("The sandbox (bubblewrap, and an AppArmor profile where user namespaces are restricted)")[
            "if"
        ]
        == "inputs.sandbox != 'off'"
    )


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """A checkout as actions/checkout leaves a pull request's (fetch-depth 0): origin/main holds the
    example estate and its requirements; the branch breaks orders.py and changes requirements.txt."""
    repo = tmp_path / "repo"
    (repo / "dags").mkdir(parents=True)
    for source in (REPO / "example_dags" / "estate").glob("*.py"):
        shutil.copy(source, repo / "dags" / source.name)
    (repo / "requirements.txt").write_text("pendulum\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the estate")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "checkout", "-q", "-b", "pull-request")
    orders = repo / "dags" / "orders.py"
    orders.write_text(orders.read_text().replace("ORDERS = Asset(", "ORDERS = Assett("))
    (repo / "requirements.txt").write_text("evil-package-that-runs-at-install\n")
    git(repo, "commit", "-q", "-am", "a pull request that breaks orders.py")
    return repo


def runner_env(tmp_path: Path, python: str) -> dict[str, str]:
    """What a runner gives every step: RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_BASE_REF, and ``python``
    (the one actions/setup-python put first on PATH)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python").write_text(python)
    (bin_dir / "python").chmod(0o755)
    (tmp_path / "runner-temp").mkdir(exist_ok=True)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "GITHUB_OUTPUT": str(tmp_path / "github-output"),
        "GITHUB_BASE_REF": "main",
    }


def test_the_install_step_takes_the_base_refs_requirements_and_the_actions_own_ref(
    tmp_path: Path, pull_request: Path
) -> None:
    """pip records its arguments here (the constraint file is on GitHub): Airflow at the input's
    version under its constraints for the Python in use, the provider from the action's own ref,
    and the requirements as origin/main has them, not as the pull request changed them."""
    recorder = (
        f'#!/bin/bash\nif [ "$1 $2" = "-m pip" ]; then printf "%s\\n" "$@" > {tmp_path}/pip; exit 0; fi\n'
    )
    recorder += f'exec {sys.executable} "$@"\n'
    env = runner_env(tmp_path, recorder)
    inputs = action_inputs(**{"airflow-version": "3.3.2"})
    context = {"github.action_path": "/runner/_actions/coremodels/airflow-provider-coremodels/v0.3.0"}
    done = run_step(
        "Airflow, your DAGs' requirements (as the base ref pins them) and the provider",
        pull_request, env, inputs, context,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pip = (tmp_path / "pip").read_text().splitlines()
    python = "{}.{}".format(*sys.version_info[:2])
    assert pip[:6] == [
        "-m",
        "pip",
        "install",
        "--quiet",
        "apache-airflow==3.3.2",
        context["github.action_path"],
    ]
    assert pip[6:8] == ["-r", str(tmp_path / "runner-temp" / "coremodels-requirements.txt")]
    assert pip[8:] == [
        "--constraint",
        f"https://raw.githubusercontent.com/apache/airflow/constraints-3.3.2/constraints-{python}.txt",
    ]
    assert (tmp_path / "runner-temp" / "coremodels-requirements.txt").read_text() == "pendulum\n"


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_the_judging_step_and_the_gate_on_a_pull_request_that_breaks_a_producer(
    tmp_path: Path, pull_request: Path
) -> None:
    """The judging step for real (``python`` is this interpreter; the sandbox where this machine
    gives one): a baseline of the deployed estate, the pull request renaming orders.py's asset
    class to a typo, judged by its diff from origin/main. It opens an Error: exit 1 as the step's
    output, the report and the SARIF of the one run beside it, and the gate step fails with it."""
    env = runner_env(tmp_path, f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    # the deployed estate: origin/main's folder, parsed in a work tree of its own
    main = tmp_path / "main"
    git(pull_request, "worktree", "add", "-q", str(main), "origin/main")
    deployed = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_coremodels",
            "audit",
            "--dag-folder",
            "dags",
            "--format",
            "json",
        ],
        cwd=main,
        capture_output=True,
        timeout=300,
    )
    assert deployed.returncode == 0, deployed.stderr
    (tmp_path / "baseline.json").write_bytes(deployed.stdout)
    inputs = action_inputs(baseline=str(tmp_path / "baseline.json"), sandbox="auto")
    done = run_step("Judge the change", pull_request, env, inputs)
    assert done.returncode == 0, done.stderr  # the step itself passes: the gate is its own step
    said = outputs(tmp_path / "github-output")
    assert said["exit-code"] == "1", done.stdout + done.stderr
    report = Path(said["report"]).read_text()
    assert report.startswith("#") and "orders.py" in report
    assert "merge base" in done.stdout and "of origin/main" in done.stdout
    sarif = json.loads(Path(said["sarif"]).read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("dags/")  # --source-root: paths from the repository root, as code scanning needs
    gate = run_step(
        "The gate", pull_request, env, inputs, {"steps.judge.outputs.exit-code": said["exit-code"]}
    )
    assert gate.returncode == 1 and "the CoreModels pre-merge check failed (exit 1)" in gate.stdout
    passed = run_step("The gate", pull_request, env, inputs, {"steps.judge.outputs.exit-code": "0"})
    assert passed.returncode == 0


# -- the comment step, against a stand-in for GitHub's REST API -------------------------------


class Issues(RequestHandler):
    """``GET/POST /repos/{repo}/issues/{n}/comments`` (paged, 100 a page at most) and ``PATCH
    /repos/{repo}/issues/comments/{id}``, over a list of comments held by the server."""

    def answer(self, body: bytes) -> None:
        owner: GitHubApi = self.owner  # type: ignore[assignment]
        if self.headers.get("Authorization") != "Bearer the-token":
            return self.reply(401, {"message": "Bad credentials"})
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query))
        if self.command == "GET" and url.path == "/repos/team/dags/issues/7/comments":
            size, page = int(query.get("per_page", 30)), int(query.get("page", 1))
            return self.reply(200, owner.comments[(page - 1) * size : page * size])
        if self.command == "POST" and url.path == "/repos/team/dags/issues/7/comments":
            comment = {"id": 1000 + len(owner.comments), "body": json.loads(body)["body"]}
            owner.comments.append(comment)
            return self.reply(201, comment)
        if self.command == "PATCH" and url.path.startswith("/repos/team/dags/issues/comments/"):
            wanted = int(url.path.rsplit("/", 1)[1])
            (comment,) = [c for c in owner.comments if c["id"] == wanted]
            comment["body"] = json.loads(body)["body"]
            return self.reply(200, comment)
        return self.reply(404, {"message": "Not Found"})

    def reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class GitHubApi(BackgroundHTTPServer):
    handler_class = Issues

    def __init__(self, comments: list[dict[str, Any]]) -> None:
        super().__init__()
        self.comments = comments


def test_the_comment_step_posts_one_comment_then_edits_it_in_place(tmp_path: Path) -> None:
    """150 comments already on the pull request (two pages): the first run posts the report with
    its marker; the second finds that comment on page two and edits it; nothing else changes."""
    others = [{"id": n, "body": f"comment {n} mentions {MARKER[5:-4]} in passing"} for n in range(150)]
    report = tmp_path / "report.md"
    inputs = action_inputs()
    with GitHubApi(others) as api:
        env = {
            **os.environ,
            "GITHUB_API_URL": api.base_url,
            "GITHUB_REPOSITORY": "team/dags",
        }
        context = {"github.event.pull_request.number": "7", "steps.judge.outputs.report": str(report)}
        for text in ("## first push\n", "## second push\n"):
            report.write_text(text)
            done = run_step("One pull request comment, edited in place", tmp_path, env, inputs, context)
            assert done.returncode == 0, done.stderr
            assert "::warning::" not in done.stdout
        ours = [c for c in api.comments if c["body"].startswith(MARKER)]
        assert ours == [{"id": 1150, "body": f"{MARKER}\n## second push\n"}]
        assert len(api.comments) == 151
        assert done.stdout.strip() == "edited comment 1150"
        writes = [(method, path) for method, path in api.requests if method != "GET"]
        assert writes == [
            ("POST", "/repos/team/dags/issues/7/comments"),
            ("PATCH", "/repos/team/dags/issues/comments/1150"),
        ]
        # a token the API refuses (a fork's pull request): a warning, never a failed check
        refused = run_step(
            "One pull request comment, edited in place", tmp_path, env,
            {**inputs, "github-token": "read-only"}, context,
        )  # fmt: skip
        assert refused.returncode == 0
        assert "::warning::the report could not be posted" in refused.stdout
