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
import dataclasses
import hashlib
import io
import os
import shutil
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
    #: what was read of ``folder`` while it was laid out (None: read it with :func:`scan`)
    tree: Tree | None = None

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


@dataclass(frozen=True)
class GitPlace:
    """Where a DAG folder lies in its git work tree: the top, and the folder relative to it."""

    top: Path
    inside: str  # "." for the top itself

    def base_folder(self, scratch: Path) -> Path:
        """Where :func:`from_git` lays the merge base's version of the folder in ``scratch``: made
        (empty) here, so that a parse server can bind it before it is filled."""
        at_base = scratch / "base" / self.inside if self.inside != "." else scratch / "base"
        at_base.mkdir(parents=True, exist_ok=True)
        return at_base.resolve()


#: Free space a memory-backed ``/dev/shm`` needs to hold the merge base's folder (which is bounded
#: by :data:`MAX_ARCHIVE_BYTES`): Docker gives containers 64 MiB, too little to count on.
_QUICK_BYTES = 2 * MAX_ARCHIVE_BYTES


def quick_scratch() -> str | None:
    """Where to lay out the merge base: ``/dev/shm`` where it is a roomy memory-backed directory
    this user may write (a file written there cost a seventh of one written to disk here, and
    laying out the base writes one a file of the folder), else the system's temporary directory
    (None)."""
    shm = "/dev/shm"
    try:
        if not (os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK)):
            return None
        info = os.statvfs(shm)
    except OSError:
        return None
    return shm if info.f_bavail * info.f_frsize >= _QUICK_BYTES else None


def git_place(folder: Path) -> GitPlace:
    """The git work tree ``folder`` lies in (one line when it lies in none)."""
    folder = folder.resolve()
    said = _git(["rev-parse", "--show-toplevel"], folder, f"{folder} is not in a git work tree")
    top = Path(said.decode().strip()).resolve()
    return GitPlace(top, folder.relative_to(top).as_posix() if folder != top else ".")


def from_git(
    folder: Path, ref: str, scratch: Path, place: GitPlace | None = None, head: Tree | None = None
) -> BaseView:
    """The merge base of ``ref`` and ``HEAD``, the folder as it was there (laid into ``scratch``),
    and what the work tree (committed or not, and files git does not ignore) changed in it.
    ``head``: what :func:`scan` read of ``folder``, where the caller has it (the base's copies of
    the files the change leaves alone are made from it); the view's ``tree`` is the base's."""
    folder = folder.resolve()
    place = place or git_place(folder)
    top, inside = place.top, place.inside
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
    view = BaseView(
        folder=place.base_folder(scratch),
        ref=ref,
        commit=commit,
        added=frozenset(added),
        changed=frozenset(changed),
        deleted=frozenset(deleted),
        renamed=renamed,
    )
    tree = _copied(place, view, scratch, head if head is not None else scan(folder))
    if tree is None:
        _extracted(place, view, scratch)
    return dataclasses.replace(view, tree=tree)


def _archive(place: GitPlace, view: BaseView, paths: list[str] | None) -> bytes:
    """``git archive`` of the merge base's folder (``paths`` of it alone, where given), bounded."""
    spec = [place.inside] if paths is None else [_in_top(place, rel) for rel in paths]
    assert view.commit is not None
    archive = _git(
        ["--literal-pathspecs", "archive", "--format=tar", view.commit, "--", *spec], place.top, "git archive"
    )
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise UsageError(
            f"--base {view.ref}: the folder at the merge base is over {MAX_ARCHIVE_BYTES:,} bytes"
        )
    return archive


def _in_top(place: GitPlace, relative: str) -> str:
    return relative if place.inside == "." else f"{place.inside}/{relative}"


def _untar(archive: bytes, into: Path, ref: str) -> None:
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")  # no member lands outside, nor links out
    except (tarfile.TarError, OSError) as exc:
        raise UsageError(f"--base {ref}: the folder at the merge base cannot be laid out: {exc}") from None


def _extracted(place: GitPlace, view: BaseView, scratch: Path) -> None:
    """The merge base's folder written out whole from ``git archive`` (where :func:`_linked` cannot
    lay it out)."""
    _clear(view.folder)
    assert view.commit is not None
    exists = place.inside == "." or (
        subprocess.run(  # the machine's git: a folder the change creates has nothing at the base
            ["git", "cat-file", "-e", f"{view.commit}:{place.inside}"],
            cwd=place.top,
            capture_output=True,
            timeout=_GIT_SECONDS,
        ).returncode
        == 0
    )
    if exists:
        archive = _archive(place, view, None)
        if archive:
            _untar(archive, scratch / "base", view.ref)


#: Above this many files changed at the merge base, the base is written out whole.
_MAX_DELTA_FILES = 2000


def _copied(place: GitPlace, view: BaseView, scratch: Path, head: Tree) -> Tree | None:
    """Lay out the merge base's folder as copies of the work tree's tracked files the change leaves
    alone (their content is the merge base's: the diff does not name them; the Python files' texts
    are those ``head`` read already) and the files it touches taken from ``git archive`` of those
    paths alone. The folder's tree, or None where this cannot be done (too many touched files, a
    file that is not what git tracks there, no room): the caller writes the folder out whole.
    Nothing of the work tree is changed: its files are only read."""
    if len(view.touched_base) > _MAX_DELTA_FILES:
        return None
    prefix = "" if place.inside == "." else place.inside + "/"
    listed = _git(["ls-files", "-z", "--stage", "--", place.inside], place.top, "git ls-files")
    skip = view.touched
    at_base = view.folder
    made: set[Path] = {at_base}
    files: set[str] = set()
    texts: dict[str, bytes] = {}
    budget = MAX_ARCHIVE_BYTES
    try:
        for entry in listed.split(b"\0"):
            meta, _, raw = entry.partition(b"\t")
            if not raw or meta.startswith(b"160000"):  # a submodule: git archive gives it empty
                continue
            relative = raw.decode().removeprefix(prefix)
            if relative in skip or relative in files:
                continue
            source = place.top / raw.decode()
            target = at_base / relative
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            if meta.startswith(b"120000"):  # a link, as git archive lays it (the data filter's rule
                link = os.readlink(source)  # is kept: none out of the folder, none absolute)
                if os.path.isabs(link) or not _within(os.path.normpath(target.parent / link), at_base):
                    return None
                os.symlink(link, target)
            else:
                data = head.texts.get(relative) if relative in head.files else None
                if data is None or not data:
                    data = read_bounded(str(source), budget, follow_links=False)
                budget -= len(data)
                if budget < 0:
                    return None
                with open(target, "xb") as out:
                    out.write(data)
                if relative.endswith(".py"):
                    texts[relative] = data
            files.add(relative)
        if view.touched_base:
            delta = scratch / "delta"
            delta.mkdir()
            _untar(_archive(place, view, sorted(view.touched_base)), delta, view.ref)
            from_delta = delta / place.inside if place.inside != "." else delta
            for relative in _entries(from_delta):
                target = _new_name(at_base, relative)
                os.rename(from_delta / relative, target)
                files.add(relative)
                if relative.endswith(".py"):
                    texts[relative] = _bytes(target)
    except (OSError, Unreadable, UnicodeDecodeError):
        return None
    return Tree(frozenset(files), texts)


def _within(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + os.sep)


def _entries(root: Path, below: str = "") -> Iterator[str]:
    """What ``root`` holds but directories (files, links), as paths relative to it."""
    if not root.is_dir():
        return
    for entry in os.scandir(root / below if below else root):
        relative = f"{below}/{entry.name}" if below else entry.name
        if entry.is_dir(follow_symlinks=False):
            yield from _entries(root, relative)
        else:
            yield relative


def _new_name(at_base: Path, relative: str) -> Path:
    """``at_base / relative``, its directories made: never through a link, never a name already there."""
    parts = relative.split("/")
    current = at_base
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink():
            raise OSError(f"{relative}: a link lies on its way")
        if not current.exists():
            current.mkdir()
    target = current / parts[-1]
    if os.path.lexists(target):
        raise OSError(f"{relative}: already in the base folder")
    return target


def _clear(folder: Path) -> None:
    """Empty ``folder`` (a parse server has it bound: it stays), removing names only."""
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


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


@dataclass(frozen=True)
class Tree:
    """A folder's files (paths relative to it) and the text of each Python file among them: read
    once, for both :func:`to_parse` and laying out the merge base."""

    files: frozenset[str]
    texts: Mapping[str, bytes]


def scan(root: Path) -> Tree:
    """``root``'s files, and its Python files' texts (bounded regular files; unreadable: empty)."""
    files = {p.relative_to(root).as_posix(): p for p in _files(root)}
    return Tree(frozenset(files), {rel: _bytes(path) for rel, path in files.items() if rel.endswith(".py")})


def to_parse(root: Path | Tree, touched: Iterable[str]) -> set[str]:
    """The files of ``root`` (relative paths) a parse scoped to ``touched`` reads: the touched files
    there, and every file that imports a touched module, directly or through other files of the
    folder, or names a touched file (its path, or its name) in a string, as a DAG factory names the
    YAML it reads. ``root``: the folder, or what :func:`scan` read of it."""
    touched = set(touched)
    tree = root if isinstance(root, Tree) else scan(root)
    files, texts = tree.files, tree.texts
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
