"""What a pull request does to a DAG folder: its merge base, the files it touches, and the files a
parse scoped to it must read (contract 10.2).

``base_view`` finds the merge base of ``--base REF`` and ``HEAD`` with git and lays the folder as it
was there into a scratch directory (or takes ``--base-folder`` as it is); ``touched`` lists the
files added, changed, deleted or renamed between the two; ``to_parse`` adds, in each view, the files
that import a touched module (transitively) or name a touched file, which is what the change can
alter. DAG files are read here only as bounded regular files and parsed with ``ast``: never run.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import subprocess
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from airflow_provider_coremodels.defaults import MAX_DAG_FILE_BYTES
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.io.input_files import Unreadable, read_bounded

#: A base folder laid out from git: what `git archive` may give.
MAX_ARCHIVE_BYTES = 512 << 20
_GIT_SECONDS = 120.0


@dataclass(frozen=True)
class BaseView:
    """The folder as the merge base has it, and what the work tree changed there.

    ``folder``: the base's copy of the DAG folder; ``commit``: the merge base (None for
    ``--base-folder``); ``ref``: what the user named; ``added``, ``changed``, ``deleted``: paths
    relative to the folder; ``renamed``: old path -> new path.
    """

    folder: Path
    ref: str
    commit: str | None
    added: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()
    deleted: frozenset[str] = frozenset()
    renamed: Mapping[str, str] = field(default_factory=dict)

    @property
    def touched_head(self) -> frozenset[str]:
        """The files of the work tree the change touches."""
        return self.added | self.changed | frozenset(self.renamed.values())

    @property
    def touched_base(self) -> frozenset[str]:
        """The files of the merge base the change touches."""
        return self.changed | self.deleted | frozenset(self.renamed)

    @property
    def touched(self) -> frozenset[str]:
        return self.touched_head | self.touched_base

    def as_json(self) -> dict[str, object]:
        return {
            "ref": self.ref,
            "commit": self.commit,
            "added": sorted(self.added),
            "changed": sorted(self.changed),
            "deleted": sorted(self.deleted),
            "renamed": dict(sorted(self.renamed.items())),
        }


def _git(args: list[str], cwd: Path, what: str) -> bytes:
    try:
        done = subprocess.run(  # the machine's git, on the user's own checkout
            ["git", *args], cwd=cwd, capture_output=True, timeout=_GIT_SECONDS, check=False
        )
    except FileNotFoundError:
        raise UsageError("--base needs git, which is not installed (or give --base-folder)") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--base: git {args[0]} took over {_GIT_SECONDS:g} s ({what})") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"--base: {what}: {said[-1] if said else f'git exit {done.returncode}'}")
    return done.stdout


def from_git(folder: Path, ref: str, scratch: Path) -> BaseView:
    """The merge base of ``ref`` and ``HEAD``, the folder as it was there (laid into ``scratch``),
    and what the work tree (committed or not, and files git does not ignore) changed in it."""
    folder = folder.resolve()
    said = _git(["rev-parse", "--show-toplevel"], folder, f"{folder} is not in a git work tree")
    top = Path(said.decode().strip())
    inside = folder.relative_to(top.resolve()).as_posix() if folder != top.resolve() else "."
    _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top, f"{ref} names no commit here")
    try:
        commit = _git(["merge-base", ref, "HEAD"], top, "no merge base").decode().strip()
    except UsageError:
        shallow = _git(["rev-parse", "--is-shallow-repository"], top, "no merge base").decode().strip()
        hint = (
            " (the checkout is shallow: fetch the history, e.g. actions/checkout with fetch-depth: 0, "
            "or git fetch --unshallow)"
            if shallow == "true"
            else ""
        )
        raise UsageError(f"--base {ref}: {ref} and HEAD have no merge base{hint}") from None
    prefix = "" if inside == "." else inside + "/"
    raw = _git(["diff", "-z", "--name-status", "-M", "--no-ext-diff", commit, "--", inside], top, "git diff")
    added: set[str] = set()
    changed: set[str] = set()
    deleted: set[str] = set()
    renamed: dict[str, str] = {}
    fields = raw.split(b"\0")
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index].decode()
        if status.startswith(("R", "C")):
            old, new = (fields[index + 1].decode(), fields[index + 2].decode())
            index += 3
            if status.startswith("R"):
                renamed[old.removeprefix(prefix)] = new.removeprefix(prefix)
            else:
                added.add(new.removeprefix(prefix))
            continue
        path = fields[index + 1].decode().removeprefix(prefix)
        index += 2
        {"A": added, "D": deleted}.get(status[0], changed).add(path)
    untracked = _git(["ls-files", "-z", "--others", "--exclude-standard", "--", inside], top, "git ls-files")
    added.update(p.decode().removeprefix(prefix) for p in untracked.split(b"\0") if p)
    base = scratch / "base"
    base.mkdir(parents=True)
    archive = b""
    if _exists(top, commit, inside):  # a folder the change creates has nothing at the base
        archive = _git(["archive", "--format=tar", commit, "--", inside], top, "git archive")
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise UsageError(f"--base {ref}: the folder at the merge base is over {MAX_ARCHIVE_BYTES:,} bytes")
    if archive:
        try:
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(base, filter="data")  # no member lands outside, nor links out
        except (tarfile.TarError, OSError) as exc:
            raise UsageError(
                f"--base {ref}: the folder at the merge base cannot be laid out: {exc}"
            ) from None
    at_base = base / inside if inside != "." else base
    at_base.mkdir(parents=True, exist_ok=True)  # a folder the change creates is empty at the base
    return BaseView(
        folder=at_base.resolve(),
        ref=ref,
        commit=commit,
        added=frozenset(added),
        changed=frozenset(changed),
        deleted=frozenset(deleted),
        renamed=renamed,
    )


def _exists(top: Path, commit: str, inside: str) -> bool:
    """Whether the folder existed at the merge base (a new folder has nothing to lay out)."""
    if inside == ".":
        return True
    done = subprocess.run(  # the machine's git
        ["git", "cat-file", "-e", f"{commit}:{inside}"], cwd=top, capture_output=True, timeout=_GIT_SECONDS
    )
    return done.returncode == 0


def from_folder(folder: Path, base: Path) -> BaseView:
    """``--base-folder``: the change is what ``folder`` does relative to ``base`` (renames read as a
    deletion and an addition)."""
    if not base.is_dir():
        raise UsageError(f"--base-folder {base}: is not a directory")
    head_files, base_files = _digests(folder), _digests(base)
    return BaseView(
        folder=base.resolve(),
        ref=str(base),
        commit=None,
        added=frozenset(head_files.keys() - base_files.keys()),
        deleted=frozenset(base_files.keys() - head_files.keys()),
        changed=frozenset(p for p in head_files.keys() & base_files.keys() if head_files[p] != base_files[p]),
    )


def _digests(root: Path) -> dict[str, str]:
    out = {}
    for path in _files(root):
        try:
            data = read_bounded(str(path), MAX_DAG_FILE_BYTES)
        except Unreadable as exc:
            data = f"unreadable: {exc}".encode()
        out[path.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def _files(root: Path) -> Iterator[Path]:
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        for name in sorted(names):
            yield Path(directory) / name


# -- which files the change can alter -------------------------------------------------------------


def module_of(relative: str) -> str | None:
    """The module a file of the folder is imported as (the folder is on ``sys.path``)."""
    if not relative.endswith(".py"):
        return None
    parts = relative[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or None


@dataclass(frozen=True)
class _Source:
    imports: frozenset[str]  # modules it imports, each with its packages
    names: frozenset[str]  # the strings it contains (to find the files it reads)


def _bytes(path: Path) -> bytes:
    try:
        return read_bounded(str(path), MAX_DAG_FILE_BYTES)
    except Unreadable:
        return b""


def _read(source: bytes, relative: str) -> _Source:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _Source(frozenset(), frozenset())
    package = relative.rsplit("/", 1)[0].replace("/", ".") if "/" in relative else ""
    imported: set[str] = set()
    strings: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            if base:
                imported.add(base)
            imported.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 4096:
            strings.add(node.value)
    with_packages: set[str] = set()
    for name in imported:
        parts = name.split(".")
        with_packages.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return _Source(frozenset(with_packages), frozenset(strings))


def to_parse(root: Path, touched: Iterable[str]) -> set[str]:
    """The files of ``root`` (relative paths) a parse scoped to ``touched`` reads: the touched files
    there, and every file that imports a touched module, directly or through other files of the
    folder, or names a touched file (its path, or its name) in a string, as a DAG factory names the
    YAML it reads."""
    touched = set(touched)
    files = {p.relative_to(root).as_posix(): p for p in _files(root)}
    texts = {rel: _bytes(path) for rel, path in files.items() if rel.endswith(".py")}
    sources: dict[str, _Source] = {}

    def source(rel: str) -> _Source:
        if rel not in sources:
            sources[rel] = _read(texts[rel], rel)
        return sources[rel]

    def mentioning(tokens: set[bytes]) -> list[str]:
        """The files whose text holds one of ``tokens``: only those can name the module or file, so
        only those are parsed (most of a folder never is)."""
        return [rel for rel, text in texts.items() if any(token in text for token in tokens)]

    wanted = {rel for rel in touched if rel in files}
    modules = {m for m in (module_of(rel) for rel in touched) if m}
    read_files = {rel for rel in touched if not rel.endswith(".py")}
    for rel in mentioning({rel.rsplit("/", 1)[-1].encode() for rel in read_files}):
        if any(_names(source(rel).names, other) for other in read_files):
            wanted.add(rel)
            if (module := module_of(rel)) is not None:
                modules.add(module)
    looked: set[str] = set()
    while True:  # the files that import what is wanted, until nothing more is
        new, looked = modules - looked, looked | modules
        candidates = mentioning({m.rsplit(".", 1)[-1].encode() for m in new})
        more = {rel for rel in candidates if rel not in wanted and source(rel).imports & modules}
        if not more:
            return wanted
        wanted |= more
        modules |= {m for m in (module_of(rel) for rel in more) if m}


def _names(strings: Iterable[str], relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return any(s == name or s.endswith("/" + name) or s.endswith(relative) for s in strings)
