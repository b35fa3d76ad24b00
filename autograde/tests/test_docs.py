"""The README and docs/: the README stays short, its links lead somewhere, and the commands the pages show exist
as shown (a make target in the Makefile, a `python -m` module that imports, a file or script in the repository)."""
from __future__ import annotations

import importlib.util
import re
import subprocess

import pytest

from autograde import notebook as nbk

PAGES = [nbk.REPO / "README.md", *sorted((nbk.REPO / "docs").glob("*.md"))]


def _targets() -> set[str]:
    text = (nbk.REPO / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.MULTILINE))


def _code(page) -> str:
    """Everything the page shows as code: inline spans and fenced blocks."""
    text = page.read_text()
    return "\n".join(re.findall(r"```.*?```", text, flags=re.DOTALL) + re.findall(r"`([^`\n]+)`", text))


def test_the_readme_is_short_and_the_details_are_in_docs():
    lines = (nbk.REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"the README has {len(lines)} lines: move details to docs/"
    for name in ("instructors", "authors", "tests", "measurements"):
        assert (nbk.REPO / "docs" / f"{name}.md").is_file(), name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_lead_to_files_of_the_repository(page):
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
        if not target.startswith(("http://", "https://")):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_commands_a_page_shows_exist(page):
    code = _code(page)
    targets = _targets()
    for target in re.findall(r"\bmake ([a-z][\w-]*)", code):
        assert target in targets, f"{page.name} shows `make {target}`, which the Makefile does not define"
    for module in re.findall(r"python -m ([\w.]+)", code):
        assert importlib.util.find_spec(module) is not None, f"{page.name} shows `python -m {module}`: no such module"
    for script in re.findall(r"(?<![\w/.])((?:autograde|course|\.ci)/[\w./-]+)", code):
        if "<" in script or "*" in script or script.endswith("/") or re.search(r"\b[A-Z]{2,}\b", script):
            continue
        assert (nbk.REPO / script.rstrip(".,:)")).exists(), f"{page.name} names {script}, which does not exist"


def test_make_help_lists_what_the_readme_shows():
    shown = set(re.findall(r"\bmake ([a-z][\w-]*)", _code(nbk.REPO / "README.md")))
    out = subprocess.run(["make", "-s", "help"], cwd=nbk.REPO, capture_output=True, text=True, timeout=60).stdout
    listed = set(re.findall(r"^make ([a-z][\w-]*)", out, flags=re.MULTILINE))
    assert shown - {"help"} <= listed, f"make help leaves out {sorted(shown - listed)}"
