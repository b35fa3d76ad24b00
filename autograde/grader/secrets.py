"""What a student must never be shown: the lines of a chapter's hidden tests and solutions.

Feedback pages, self-check reports and Gradescope results pass every output through scrub(),
whatever printed it: a student's code can reach the hidden tests while they run (IPython's input
history, the frames of the test cell that calls it), so a filter on what is shown back is needed as
well as a limit on what the kernel can read.
"""
from __future__ import annotations

import functools
import re

from autograde import notebook as nbk
from autograde.paths import release_path, source_path

MIN_LENGTH = 12
"""Shorter lines (`return x`, `import numpy`) carry no secret and occur by chance."""
REMOVED = "[line removed by the grader: it quotes the hidden tests or the solutions]"


@functools.lru_cache(maxsize=None)
def secret_lines(chapter: str) -> frozenset[str]:
    """Distinctive lines of the chapter's hidden tests, its solutions and its hidden-test helper module that the
    student's release does not show anyway."""
    path = source_path(chapter)
    if not path.exists():
        return frozenset()
    secret: set[str] = set()
    for cell in nbk.read(path).cells:
        secret |= {ln.strip() for ln in nbk.hidden_test_lines(cell.source) + nbk.solution_lines(cell.source)}
    helper = nbk.REPO / "autograde" / "hidden" / f"{chapter}.py"
    if helper.exists():
        secret |= {ln.strip() for ln in helper.read_text().splitlines()}
    shown: set[str] = set()
    if release_path(chapter).exists():
        for cell in nbk.read(release_path(chapter)).cells:
            shown |= {ln.strip() for ln in cell.source.splitlines()}
    return frozenset(ln for ln in secret - shown if len(ln) >= MIN_LENGTH and not ln.startswith("#"))


@functools.lru_cache(maxsize=None)
def _pattern(chapter: str) -> re.Pattern | None:
    lines = sorted(secret_lines(chapter), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, lines))) if lines else None


def scrub(text: str, chapter: str) -> tuple[str, int]:
    """text with every line that quotes a secret line replaced by a note; and how many lines were replaced."""
    pattern = _pattern(chapter)
    if pattern is None or not text or not pattern.search(text):
        return text, 0
    out, removed = [], 0
    for line in text.split("\n"):
        if pattern.search(line):
            out.append(REMOVED)
            removed += 1
        else:
            out.append(line)
    return "\n".join(out), removed


def scrub_outputs(cell: nbk.NotebookNode, chapter: str) -> int:
    """Scrub every text a code cell's outputs hold (streams, errors, rich data); return the lines replaced."""
    removed = 0

    def clean(value):
        nonlocal removed
        if isinstance(value, str):
            value, n = scrub(value, chapter)
            removed += n
        elif isinstance(value, list):
            value = [clean(v) for v in value]
        return value

    for output in cell.get("outputs", []):
        for key in ("text", "evalue", "traceback"):
            if key in output:
                output[key] = clean(output[key])
        for mime, value in output.get("data", {}).items():
            if mime.startswith("text/") or mime in ("application/json",):
                output["data"][mime] = clean(value)
    return removed
