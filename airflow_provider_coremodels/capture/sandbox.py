"""Where DAG code runs: a bubblewrap sandbox that can reach nothing of the run judging it.

A DAG file is code written by whoever opened the pull request. The parse server
(``dag_folder_worker.py``) and every child it forks run inside one ``bwrap`` sandbox
(contract 10.1):

- namespaces of its own: PID (``/proc`` shows the sandbox only: no process of the audit, the CI
  step or the runner), network (loopback only), IPC, UTS and user, in a session of its own, with
  every capability dropped; when the parse server ends, the kernel ends everything left in it;
- a filesystem view built from nothing: the system's libraries and the Python environment
  read-only, the DAG folder read-only, a fresh ``/tmp`` of bounded size, and nothing else. The
  working directory, the baseline, rules and waiver files, the outputs and ``$GITHUB_ENV`` are
  simply not there (and are masked where they lie inside the DAG folder);
- an environment built from an allow list: the locale, ``PATH``, and the Airflow settings a
  parse reads (:data:`PARSE_SETTINGS`), taken from the environment or ``airflow.cfg``; never a
  ``_CMD``/``_SECRET`` setting, a connection, or a variable the parse was not named to get.

Why bubblewrap: it is Flatpak's sandbox, packaged by every distribution (``bubblewrap``), works
unprivileged where user namespaces are allowed and as root, and builds the filesystem view from
its arguments. util-linux ``unshare`` gives the namespaces but no filesystem view without a
mount script of our own, which is exactly the home-made mechanism to avoid
(``docs/premerge.md`` measures both).
"""

from __future__ import annotations

import configparser
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_coremodels.errors import UsageError

MODES = ("auto", "require", "off")
#: The fresh ``/tmp`` of a sandbox: what DAG code may write there, all files together.
TMP_BYTES = 256 << 20
#: Where the sandbox finds the parse server, its Airflow home and its scratch space.
INSIDE = "/run/coremodels"
WORKER_INSIDE = f"{INSIDE}/dag_folder_worker.py"
AIRFLOW_HOME_INSIDE = "/tmp/airflow"

#: The Airflow settings a DAG file's parse reads (the DAG and operator defaults, the parse's own
#: switches), as ``section.key``: the only ones the sandbox is given. None holds a secret.
PARSE_SETTINGS = frozenset(
    {
        "core.allow_double_dot_in_ids",
        "core.allowed_deserialization_classes",
        "core.allowed_deserialization_classes_regexp",
        "core.dag_discovery_safe_mode",
        "core.dag_ignore_file_syntax",
        "core.dag_run_conf_overrides_params",
        "core.dagbag_import_error_traceback_depth",
        "core.dagbag_import_error_tracebacks",
        "core.dagbag_import_timeout",
        "core.dags_are_paused_at_creation",
        "core.default_task_execution_timeout",
        "core.default_task_retries",
        "core.default_task_retry_delay",
        "core.default_task_weight_rule",
        "core.default_timezone",
        "core.max_active_runs_per_dag",
        "core.max_active_tasks_per_dag",
        "core.max_consecutive_failed_dag_runs_per_dag",
        "core.max_task_retry_delay",
        "core.max_templated_field_length",
        "core.might_contain_dag_callable",
        "core.multi_team",
        "email.default_email_on_failure",
        "email.default_email_on_retry",
        "logging.logging_level",
        "operators.allow_illegal_arguments",
        "operators.default_cpus",
        "operators.default_deferrable",
        "operators.default_disk",
        "operators.default_gpus",
        "operators.default_owner",
        "operators.default_queue",
        "operators.default_ram",
        "scheduler.allowed_run_id_pattern",
        "scheduler.catchup_by_default",
        "scheduler.create_cron_data_intervals",
        "scheduler.create_delta_data_intervals",
        "sensors.default_timeout",
    }
)
#: Besides the settings: what any process needs to start and print as the user expects.
PLAIN_ENV = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "PYTHONHASHSEED")


@dataclass(frozen=True)
class Isolation:
    """The isolation a run of DAG code had: ``kind`` is ``"sandbox"`` or ``"process"``, ``detail``
    says with what (or, for ``"process"``, what was missing)."""

    kind: str
    detail: str
    bwrap: str | None = None  # the bwrap to run, when kind is "sandbox"


class SandboxUnavailable(UsageError):
    """``--sandbox require`` on a machine that gives no sandbox: exit 2, one line saying what is missing."""


def choose(mode: str = "auto") -> Isolation:
    """The isolation ``mode`` gives on this machine: ``off`` never sandboxes, ``auto`` sandboxes
    where bubblewrap works, ``require`` raises :class:`SandboxUnavailable` where it does not."""
    if mode not in MODES:
        raise UsageError(f"--sandbox {mode!r}: one of {', '.join(MODES)}")
    if mode == "off":
        return Isolation("process", "--sandbox off")
    bwrap, problem = probe()
    if bwrap is not None:
        bounded = (
            ""
            if supports_size(bwrap)
            else "; /tmp bounded per file only: bubblewrap before 0.7 has no --size"
        )
        return Isolation(
            "sandbox", f"bubblewrap {_version(bwrap)}: own PID and network namespaces{bounded}", bwrap
        )
    if mode == "require":
        raise SandboxUnavailable(f"--sandbox require: no sandbox on this machine: {problem}")
    return Isolation("process", problem)


_PROBED: dict[str, tuple[str | None, str]] = {}


def probe() -> tuple[str | None, str]:
    """(the bwrap that works here, "") or (None, what is missing); tried once per process."""
    found = shutil.which(os.environ.get("COREMODELS_BWRAP") or "bwrap")
    key = found or ""
    if key in _PROBED:
        return _PROBED[key]
    if found is None:
        answer: tuple[str | None, str] = (
            None,
            "bwrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)",
        )
    else:
        try:
            tried = subprocess.run(  # bwrap itself, the machine's own program
                [found, *_NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"],
                capture_output=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            answer = (None, f"{found} cannot run: {exc}")
        else:
            if tried.returncode == 0:
                answer = (found, "")
            else:
                said = tried.stderr.decode(errors="replace").strip().splitlines()
                why = said[-1] if said else f"exit {tried.returncode}"
                answer = (
                    None,
                    f"{found} cannot make namespaces here ({why[:200]}): user namespaces are off or "
                    "restricted (docs/premerge.md says what each CI allows)",
                )
    _PROBED[key] = answer
    return answer


@functools.cache
def _version(bwrap: str) -> str:
    try:
        said = subprocess.run([bwrap, "--version"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "(version unknown)"
    return said.stdout.decode(errors="replace").strip().rpartition(" ")[2] or "(version unknown)"


#: Every namespace bwrap can make (user, PID, network, IPC, UTS, cgroup), a session of its own,
#: no capability, and an end with the process that started it.
_NAMESPACES = ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL")


def parse_environment(
    environ: Mapping[str, str], passed: Iterable[str] = (), *, home: str = AIRFLOW_HOME_INSIDE
) -> dict[str, str]:
    """The environment a parse gets: built from an allow list, never by withholding. The Airflow
    settings of :data:`PARSE_SETTINGS`, from ``environ`` or else the ``airflow.cfg`` it points at
    (never a ``_CMD`` or ``_SECRET`` form, which run or fetch something); the locale; the variables
    named in ``passed`` (``--parse-env``); a ``PATH`` of the system's and the interpreter's
    directories; ``HOME`` and ``TMPDIR`` in the fresh ``/tmp``."""
    env = {name: environ[name] for name in PLAIN_ENV if name in environ}
    for section, key, value in _configured(environ):
        env[f"AIRFLOW__{section.upper()}__{key.upper()}"] = value
    for name in passed:
        if name in environ:
            env[name] = environ[name]
    env.update(
        {
            "PATH": os.pathsep.join(
                dict.fromkeys([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
            ),
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "AIRFLOW_HOME": home,
            # no plugins: a folder DAG code could write to would make them a channel between files
            "AIRFLOW__CORE__PLUGINS_FOLDER": f"{INSIDE}/no-plugins",
            "PYTHONNOUSERSITE": "1",  # no ~/.local site-packages
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


def _configured(environ: Mapping[str, str]) -> Iterable[tuple[str, str, str]]:
    """The parse settings that are set: ``airflow.cfg``'s first, then the environment's over them."""
    found: dict[tuple[str, str], str] = {}
    home = environ.get("AIRFLOW_HOME") or os.path.join(environ.get("HOME", "~"), "airflow")
    config = environ.get("AIRFLOW_CONFIG") or os.path.join(home, "airflow.cfg")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    # an unreadable airflow.cfg gives no settings: Airflow's defaults apply
    with contextlib.suppress(configparser.Error, UnicodeDecodeError, OSError):
        parser.read(os.path.expanduser(config), encoding="utf-8")
    for setting in sorted(PARSE_SETTINGS):
        section, key = setting.split(".")
        if parser.has_option(section, key):
            found[(section, key)] = parser.get(section, key)
        value = environ.get(f"AIRFLOW__{section.upper()}__{key.upper()}")
        if value is not None:
            found[(section, key)] = value
    for (section, key), value in found.items():
        yield section, key, value


@functools.cache
def python_paths(python: str) -> tuple[str, ...]:
    """What the interpreter needs to run: its prefixes and the directories of its ``sys.path`` (as
    ``-I`` sees it: no working directory, no user site), and where it finds this package (for
    Airflow's provider discovery; an editable install's source), real paths. Asked once per
    interpreter: a pull request's check parses two versions with the same one."""
    code = (
        "import importlib.util, json, os, sys\n"
        "spec = importlib.util.find_spec('airflow_provider_coremodels')\n"
        "package = list(spec.submodule_search_locations or []) if spec else []\n"
        "print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "
        "os.path.dirname(os.path.realpath(sys.executable)), *sys.path, *package]))"
    )
    said = subprocess.run([python, "-I", "-c", code], capture_output=True, timeout=60, check=True)
    return tuple(p for p in json.loads(said.stdout) if p)


def bwrap_command(
    bwrap: str,
    *,
    python: str,
    worker: str,
    folders: Sequence[str],
    hidden: Sequence[str] = (),
    tmp_bytes: int = TMP_BYTES,
) -> list[str]:
    """The ``bwrap`` command that runs ``python worker`` over ``folders`` in the sandbox (a pull
    request's check binds two: the merge base's version of the DAG folder and the work tree's).

    ``hidden``: what the audit reads or writes (and the working directory): never bound, and masked
    where it lies inside a folder or the Python environment, so it does not exist in there; what
    lies inside the first folder is masked at the same place in the others (the merge base's copy
    of a baseline kept in the DAG folder is the baseline too).
    """
    command = [bwrap, *_NAMESPACES, "--hostname", "coremodels-sandbox", "--proc", "/proc", "--dev", "/dev"]
    # first, so that what is bound below (a DAG folder under /tmp, say) lies over it
    if supports_size(bwrap):
        command += ["--size", str(tmp_bytes)]
    command += ["--tmpfs", "/tmp", "--dir", AIRFLOW_HOME_INSIDE]
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            command += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            command += ["--ro-bind", top, top]
    for wanted in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/localtime",
        "/etc/timezone",
        "/etc/alternatives",
        "/etc/passwd",
        "/etc/group",
        "/etc/nsswitch.conf",
        "/etc/mime.types",
    ):
        if os.path.exists(wanted):
            command += ["--ro-bind", wanted, wanted]
    protected = [os.path.realpath(p) for p in hidden if p]
    if len(folders) > 1:  # the same place in every version of the folder
        first = folders[0]
        protected += [
            os.path.join(other, os.path.relpath(path, first))
            for path in protected
            if _within(path, first) and path != first
            for other in folders[1:]
        ]
    binds = _environment_binds(python_paths(python), protected, folders)
    for path in binds:
        command += ["--ro-bind", path, path]
    for folder in folders:
        command += ["--ro-bind", folder, folder]
    for path in protected:  # what the audit touches, where a bound tree would show it
        inside = any(_within(path, root) for root in (*folders, *binds))
        if not inside or not os.path.lexists(path):
            continue
        if not os.path.isdir(path):
            command += ["--ro-bind", "/dev/null", path]
        elif not any(_within(path, folder) or _within(folder, path) for folder in folders):
            # a directory inside the DAG folder is the folder's (a run from dags/sub must not hide
            # DAG files): only a file the run names there is masked
            command += ["--tmpfs", path, "--remount-ro", path]
    command += ["--ro-bind", worker, WORKER_INSIDE]
    # the module the worker loads from beside itself to infer lineage (contract 10.3)
    beside = os.path.join(os.path.dirname(worker), "lineage_inference.py")
    if os.path.isfile(beside):
        command += ["--ro-bind", beside, f"{INSIDE}/lineage_inference.py"]
    command += ["--chdir", "/tmp", "--", python, WORKER_INSIDE]
    return command


def supports_size(bwrap: str) -> bool:
    """Whether this bwrap bounds a tmpfs (``--size``, bubblewrap 0.7.0 and later; Ubuntu 22.04
    has 0.6.1). Without it the fresh ``/tmp`` is bounded per file only (``RLIMIT_FSIZE``)."""
    if bwrap not in _SIZED:
        try:
            said = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, check=False)
            _SIZED[bwrap] = b"--size" in said.stdout + said.stderr
        except (OSError, subprocess.TimeoutExpired):
            _SIZED[bwrap] = False
    return _SIZED[bwrap]


_SIZED: dict[str, bool] = {}


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _environment_binds(paths: Iterable[str], protected: Sequence[str], folders: Sequence[str]) -> list[str]:
    """The Python environment's directories to bind, outermost only. A directory that holds what
    the audit touches (an editable install's source checkout, which is the working directory) is
    left out; the package itself is among ``paths``, where the interpreter finds it."""
    chosen: list[str] = []
    for raw in sorted({os.path.realpath(p) for p in paths}, key=len):
        if not os.path.isdir(raw) or raw == "/":
            continue
        if any(_within(raw, folder) or _within(folder, raw) for folder in folders):
            continue
        if any(_within(p, raw) for p in protected):
            continue
        if any(_within(raw, outer) for outer in chosen):
            continue
        chosen.append(raw)
    return chosen
