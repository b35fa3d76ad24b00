"""Concept checks must not give their answer away by its length or its letter (issue 32).

A student who has not understood a check should not pass it by picking the longest, most carefully argued option,
or the letter that comes up most often. So, in every chapter, for each concept check (a markdown cell with options
written as lines "- **a.** ...", answered in the next code cell, whose grade_id starts with "concept_"):

- it has 3 to 5 options, lettered a, b, c, ... in order;
- the right option is at most 1.25 times as long as the longest wrong one (length: the characters of the option's
  text after its letter);
- the right option is the strictly longest one in at most one check of the chapter;
- no letter is the answer of more than half (rounded up) of the chapter's checks.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import pytest

from autograde import notebook as nbk
from autograde.paths import source_path
from course import CHAPTERS

MOST_RATIO = 1.25
"""the right option's length over the longest wrong option's, at most"""

OPTION = re.compile(r"^- \*\*([a-z])\.\*\*(.*)$")
ANSWER = re.compile(r"""^\s*answer_\w+\s*=\s*["']([a-z])["']\s*$""")


@dataclass(frozen=True)
class ConceptCheck:
    """One concept check: its grade_id, its options (letter -> text) in order, and the right letter."""

    grade_id: str
    options: tuple[tuple[str, str], ...]
    answer: str

    def length(self, letter: str) -> int:
        return len(dict(self.options)[letter])

    def longest_wrong(self) -> int:
        return max(len(text) for letter, text in self.options if letter != self.answer)


def _options(markdown: str) -> list[tuple[str, str]]:
    """The "- **x.** text" lines of a markdown cell as (letter, text); an indented line continues the option above."""
    found: list[tuple[str, str]] = []
    continues = False
    for line in markdown.split("\n"):
        match = OPTION.match(line)
        if match:
            found.append((match.group(1), match.group(2).strip()))
            continues = True
        elif continues and line.startswith(" ") and line.strip():
            letter, text = found[-1]
            found[-1] = (letter, f"{text} {line.strip()}")
        else:
            continues = False
    return found


def concept_checks(chapter: str) -> list[ConceptCheck]:
    """Every concept check of a chapter's source notebook, in order."""
    cells = nbk.read(source_path(chapter)).cells
    checks: list[ConceptCheck] = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        options = _options(cell.source)
        if not options:
            continue
        answer_cell = cells[index + 1] if index + 1 < len(cells) else None
        gid = nbk.grade_id(answer_cell) if answer_cell is not None else None
        assert gid and gid.startswith("concept_"), (
            f"{chapter}: the options {[letter for letter, _ in options]} in markdown cell {cell.get('id')} are not "
            f"followed by a concept_ answer cell (the next cell's grade_id is {gid!r})")
        letters = [m.group(1) for line in nbk.solution_lines(answer_cell.source) if (m := ANSWER.match(line))]
        assert len(letters) == 1, (
            f"{chapter} {gid}: expected one line answer_... = \"x\" between the solution markers, found {letters}")
        checks.append(ConceptCheck(gid, tuple(options), letters[0]))
    answered = [nbk.grade_id(c) for c in cells if nbk.is_solution(c) and (nbk.grade_id(c) or "").startswith("concept_")]
    unread = sorted(set(answered) - {c.grade_id for c in checks})
    assert not unread, (
        f"{chapter}: the answer cells {unread} do not follow a markdown cell with options \"- **a.** ...\"; "
        "write each check's options that way, just above its answer cell")
    return checks


def _lengths(check: ConceptCheck) -> str:
    return ", ".join(f"{letter}: {len(text)}" for letter, text in check.options)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_concept_checks_do_not_leak_their_answer(chapter):
    checks = concept_checks(chapter)
    if not checks:
        pytest.skip(f"{chapter}: no concept checks")
    problems: list[str] = []
    for check in checks:
        letters = [letter for letter, _ in check.options]
        expected = [chr(ord("a") + i) for i in range(len(letters))]
        if not 3 <= len(letters) <= 5 or letters != expected:
            problems.append(f"{check.grade_id}: options {letters}, expected 3-5 options lettered a, b, c, ...")
            continue
        if check.answer not in letters:
            problems.append(f"{check.grade_id}: the answer {check.answer!r} is not one of the options {letters}")
            continue
        right, wrong = check.length(check.answer), check.longest_wrong()
        if right > MOST_RATIO * wrong:
            problems.append(
                f"{check.grade_id}: the right option ({check.answer}) has {right} characters, "
                f"{right / wrong:.2f}x the longest wrong one ({wrong}); at most {MOST_RATIO}x ({_lengths(check)})")
    longest = [c for c in checks if c.answer in dict(c.options) and c.length(c.answer) > c.longest_wrong()]
    if len(longest) > 1:
        problems.append(
            f"the right option is the strictly longest in {len(longest)} of {len(checks)} checks, at most 1 allowed: "
            + "; ".join(f"{c.grade_id} ({c.answer}; {_lengths(c)})" for c in longest))
    most = math.ceil(len(checks) / 2)
    counts = Counter(c.answer for c in checks)
    for letter, count in sorted(counts.items()):
        if count > most:
            problems.append(
                f"the letter {letter} answers {count} of {len(checks)} checks, at most {most} allowed "
                f"(answers in order: {', '.join(c.answer for c in checks)})")
    if problems:
        pytest.fail(f"{chapter}: concept checks give their answer away:\n  " + "\n  ".join(problems), pytrace=False)
