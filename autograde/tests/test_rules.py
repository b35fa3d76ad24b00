"""Every graded exercise states its contract as rules, and the hidden tests check each rule (autograde/hidden/rules):
a rule without a check, a check without a rule, or a rule the student cannot read fails here."""
from __future__ import annotations

import pytest

from autograde import notebook as nbk
from autograde.hidden.rules import TAG, rules
from autograde.paths import release_path, source_path
from course import CHAPTERS

MOST_RULES = 8
"""rules an exercise may list: a student reads them in a minute"""


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _is_concept(cell) -> bool:
    return "check_choice(" in cell.source


def _chapter_rules(chapter: str):
    found = rules(chapter)
    if found is None:
        pytest.skip(f"{chapter}: no rules written yet (autograde/hidden/rules/{chapter}.py)")
    return found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_rule_has_a_check_and_every_check_a_rule(chapter):
    found = _chapter_rules(chapter)
    ids = [r.id for r in found]
    assert len(ids) == len(set(ids)), f"{chapter}: a rule id twice"
    by_id = {r.id: r for r in found}
    tagged: dict[str, set[str]] = {}
    for cell in nbk.read(source_path(chapter)).cells:
        if not nbk.is_test(cell) or _is_concept(cell):
            continue
        gid = nbk.grade_id(cell)
        hidden = "\n".join(nbk.hidden_test_lines(cell.source))
        tags = TAG.findall(hidden)
        assert tags, f"{chapter}: the hidden part of {gid} checks no rule (a line '# rule: <id>' starts each check)"
        for tag in tags:
            assert tag in by_id, f"{chapter}: {gid} checks rule {tag!r}, which autograde/hidden/rules/{chapter}.py lacks"
            assert gid in by_id[tag].tests, f"{chapter}: rule {tag} is checked in {gid}, not among its test cells"
            tagged.setdefault(tag, set()).add(gid)
    for r in found:
        assert r.id in tagged, f"{chapter}: rule {r.id} has no check (no '# rule: {r.id}' in {', '.join(r.tests)})"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_rule_stands_in_its_exercise_text(chapter):
    """A rule's sentence is in the release, in the markdown of its exercise: after the previous exercise's test cells
    and before the rule's first test cell."""
    found = _chapter_rules(chapter)
    cells = nbk.read(release_path(chapter)).cells
    position = {nbk.grade_id(c): i for i, c in enumerate(cells) if nbk.grade_id(c)}
    per_exercise: dict[int, int] = {}
    for r in found:
        first = min(position[t] for t in r.tests)
        start = first
        while start > 0 and not nbk.is_solution(cells[start - 1]):
            start -= 1  # back to this exercise's answer cell
        while start > 0 and not nbk.is_test(cells[start - 1]):
            start -= 1  # back past its text to the previous exercise's last test cell
        text = " ".join(_normalised(c.source) for c in cells[start:first] if c.cell_type == "markdown")
        assert _normalised(r.text) in text, (
            f"{chapter}: rule {r.id} is not in its exercise's text (the markdown before {r.tests[0]}): "
            f"{r.text[:120]!r}")
        per_exercise[start] = per_exercise.get(start, 0) + 1
    assert max(per_exercise.values()) <= MOST_RULES, f"{chapter}: an exercise lists more than {MOST_RULES} rules"
