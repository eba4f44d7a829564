"""The documentation: every command and option documented, a short README, links that resolve.

The README is the front door (and the PyPI page); the detail lives in docs/. These tests keep
the command reference complete as the argument table grows, and keep every relative link
between the pages pointing at a file, and a heading, that exists.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from airflow_provider_coremodels.cli.arguments import COMMANDS

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
CLI_DOC = DOCS / "cli.md"
README_LIMIT = 10_000

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def pages() -> list[Path]:
    """README.md and every docs page."""
    found = sorted(DOCS.glob("*.md"))
    assert found, "docs/ has no pages"
    return [README, *found]


def prose(text: str) -> str:
    """The text without fenced code blocks: links and headings inside them are not links or headings."""
    return _FENCE.sub("", text)


def code_spans(text: str) -> list[str]:
    """The contents of every inline code span, fenced blocks excluded."""
    return [match.group(2) for match in _CODE_SPAN.finditer(prose(text))]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, numbered as GitHub numbers repeated ones."""
    seen: dict[str, int] = {}
    found = set()
    for match in _HEADING.finditer(prose(path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    return _LINK.findall(prose(path.read_text(encoding="utf-8")))


def options() -> list[tuple[str, str]]:
    """(command, flag) for every option of every command, shared options included."""
    return [
        (spec.name, flag)
        for spec in COMMANDS
        for arg in spec.args
        for flag in arg.flags
        if flag.startswith("-")
    ]


def sections(text: str) -> dict[str, str]:
    """The level-2 sections of a page, by the command a heading names in backticks (`## `audit``)."""
    found: dict[str, str] = {}
    parts = re.split(r"^## ", prose(text), flags=re.MULTILINE)
    for part in parts[1:]:
        heading, _, body = part.partition("\n")
        name = re.fullmatch(r"`([a-z-]+)`", heading.strip())
        if name:
            found[name.group(1)] = body
    return found


# -- every command and option in the command reference ----------------------------------------


def test_the_argument_table_has_commands_and_options() -> None:
    """The checks below are only as good as what they iterate over."""
    assert {spec.name for spec in COMMANDS} >= {"audit", "lineage", "capture", "export", "generate"}
    flags = {flag for _, flag in options()}
    assert len(flags) > 20
    assert {"--conn-id", "--sink", "--fail-on", "--format", "--waivers"} <= flags


@pytest.mark.parametrize("command", [spec.name for spec in COMMANDS])
def test_every_command_has_a_section_in_the_reference(command: str) -> None:
    assert command in sections(CLI_DOC.read_text(encoding="utf-8")), (
        f"docs/cli.md has no section headed ## `{command}`"
    )


@pytest.mark.parametrize(("command", "flag"), options())
def test_every_option_is_documented_under_its_command(command: str, flag: str) -> None:
    """Each flag appears in a code span in its command's section (a table row, or a list of the
    shared options with a link to their description)."""
    body = sections(CLI_DOC.read_text(encoding="utf-8")).get(command, "")
    pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")
    assert any(pattern.search(span) for span in code_spans(body)), (
        f"docs/cli.md does not document {flag} in the section of `{command}`"
    )


def test_every_exit_code_is_documented() -> None:
    text = prose(CLI_DOC.read_text(encoding="utf-8"))
    exit_codes = text.split("## Exit codes", 1)[-1].split("\n## ", 1)[0]
    for code in "0123":
        assert f"| `{code}` |" in exit_codes, f"exit code {code} is not in docs/cli.md"


# -- the README is a front door ------------------------------------------------------------


def test_the_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert 0 < size < README_LIMIT, (
        f"README.md is {size:,} bytes; keep it under {README_LIMIT:,} and move detail to docs/"
    )


def test_the_readme_links_every_docs_page() -> None:
    linked = {Path(target.split("#", 1)[0]).name for target in links(README) if target.startswith("docs/")}
    missing = sorted(page.name for page in DOCS.glob("*.md") if page.name not in linked)
    assert not missing, f"README.md does not link docs pages {missing}"


# -- links ----------------------------------------------------------------------------------


def relative_links() -> list[tuple[str, str]]:
    found = [
        (str(page.relative_to(REPO)), target)
        for page in pages()
        for target in links(page)
        if not _SCHEME.match(target)
    ]
    assert found, "no relative links found: the link pattern is broken"
    return found


@pytest.mark.parametrize(("page", "target"), relative_links())
def test_every_relative_link_resolves(page: str, target: str) -> None:
    """A relative link names an existing file in the repository, and a heading of it if it names one."""
    source = REPO / page
    path_part, _, anchor = target.partition("#")
    resolved = (source.parent / unquote(path_part)).resolve() if path_part else source
    assert resolved.exists(), f"{page} links {target}, but {resolved} does not exist"
    assert resolved.is_relative_to(REPO), f"{page} links {target}, outside the repository"
    if anchor and resolved.suffix == ".md":
        assert anchor in anchors(resolved), (
            f"{page} links {target}, but {resolved.name} has no heading #{anchor}"
        )


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    """The helpers find links and headings as GitHub does: a check that cannot fail checks nothing."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Failing a run: `--fail-on`\n\n## Source options\n\n"
        "```\n## not a heading\n[x](nope.md)\n```\n"
        "[a](other.md#gone) [b](#source-options) ![img](pic.png) [c](https://example.com/x.md)\n",
        encoding="utf-8",
    )
    assert links(page) == ["other.md#gone", "#source-options", "https://example.com/x.md"]
    assert anchors(page) == {"title", "failing-a-run---fail-on", "source-options"}


def test_nothing_links_outside_the_repository() -> None:
    """The interface contract the project was built against is not in this repository: the docs
    describe the interface themselves, and link nothing outside it."""
    for page in [*pages(), REPO / "CHANGELOG.md", REPO / "benchmarks" / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for forbidden in ("CONTRACT.md", "../shared", "/work/shared"):
            assert forbidden not in text, f"{page.relative_to(REPO)} mentions {forbidden}"


def test_the_readme_first_command_prints_what_the_readme_shows() -> None:
    """The README's first look, run as written: every line it shows (up to its ``...``) is the
    command's real output, in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"```\n\$ (python -m airflow_provider_coremodels audit --example)\n(.*?)```", text, re.S
    )
    assert block, (
        "the README's first look (`$ python -m airflow_provider_coremodels audit --example`) is gone"
    )
    shown = block.group(2).split("\n...\n")[0].splitlines()
    run = subprocess.run(
        [sys.executable, *block.group(1).split()[1:]], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert len(shown) > 5
    assert run.stdout.splitlines()[: len(shown)] == shown
