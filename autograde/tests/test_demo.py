"""`make demo` end to end: the gradebook it prints, the feedback it writes, and that a rerun agrees."""
from __future__ import annotations

import csv
import html
import re

import pytest

from course import CHAPTERS
from autograde.authoring import catalogue as mut
from autograde.authoring.examples import example_losses
from autograde import notebook as nbk

from .conftest import catalogue, source
from autograde.authoring import products as build

from .test_products import _hidden_lines, answer_lines

pytestmark = pytest.mark.grading


def _table(report: str) -> str:
    return report.split("\n\n")[1]


def test_demo_gradebook_rows(demo):
    root, first, _ = demo
    header = _table(first).splitlines()[0].split()
    assert header[-2:] == ["%", "incidents"], header
    rows = {line.split()[0]: line for line in _table(first).splitlines()[2:]}
    for ch in CHAPTERS:
        total = sum(nbk.nbgrader_meta(c)["points"] for c in source(ch).cells if nbk.is_test(c))
        for ex in catalogue(ch).examples:
            assert ex.student in rows, f"{ex.student} missing from the gradebook:\n{first}"
            pct, incidents = rows[ex.student].split()[-2:]
            attacker = any(e.student == ex.student and e.kind == "attack" for c in CHAPTERS for e in catalogue(c).examples)
            if attacker:
                assert incidents not in ("none", "0"), f"{ex.student} attacks the grader: {rows[ex.student]}"
            else:
                assert incidents == "none", f"{ex.student} commits no incident: {rows[ex.student]}"
            if ex.kind == "solution":
                assert f"{total:g} / {total:g}" in rows[ex.student] and pct == "100"
            elif ex.kind == "blank":
                assert f"0 / {total:g}" in rows[ex.student] and pct == "0"
            else:
                assert 0 < int(pct) < 100, f"{ex.student} should land between 0 and 100%: {rows[ex.student]}"


def test_demo_lists_incidents(demo):
    """Each attacking example student's incidents are named (in plain words) in the report; nobody else's."""
    from autograde.corpus.attacks import attack

    _, first, _ = demo
    section = first.split("Incidents:\n")[1].split("\n\n")[0]
    expected = {(ex.student, ch, kind) for ch in CHAPTERS for ex in catalogue(ch).examples if ex.kind == "attack"
                for kind in attack(ch, ex.attack).incidents}
    for student, ch, kind in expected:
        assert any(ln.startswith(student) and ch in ln and kind in ln for ln in section.splitlines()), (
            f"the report should name a {kind} incident of {student} in {ch}:\n{section}")
    attackers = {student for student, _, _ in expected}
    others = [ln for ln in section.splitlines() if ln.strip() and ln.split()[0] not in attackers]
    assert expected and not others or not expected and section == "none", section


def test_demo_rerun_gives_the_same_report(demo):
    """Running the demo again regrades from the same inputs and reports the same (one chapter, to save time)."""
    from autograde.demo import run_demo
    from autograde.grader.workspace import Workspace

    root, first, _ = demo
    chapter = CHAPTERS[0]
    before = Workspace(root).cell_scores(chapter)
    second = run_demo(root, chapters=(chapter,), quiet=True)
    assert Workspace(root).cell_scores(chapter) == before

    def lines_of(report: str, header: str) -> list[str]:
        return [ln for ln in report.split(header)[1].split("\n\n")[0].splitlines() if f" {chapter}" in ln]

    for header in ("Incidents:\n", "Test cells below full marks:\n"):
        assert lines_of(first, header) == lines_of(second, header), header


def test_demo_lists_exactly_the_lost_test_cells(demo):
    _, first, _ = demo
    section = first.split("Test cells below full marks:\n")[1].split("\n\n")[0]
    for ch in CHAPTERS:
        cat = catalogue(ch)
        for ex in cat.examples:
            line = next((ln for ln in section.splitlines() if ln.startswith(f"{ex.student} {ch} ")), "")
            listed = set(re.findall(r"(test_\w+) ", line))
            tests = {nbk.grade_id(c) for c in source(ch).cells if nbk.is_test(c)}
            expected = example_losses(cat, ex, tests)
            if not expected:
                assert not line, f"{ex.student} should lose nothing: {line}"
            else:
                assert listed == expected, f"{ex.student}: listed {sorted(listed)}, expected {sorted(expected)}"


def test_demo_writes_csv_with_every_example(demo):
    root, _, _ = demo
    with open(root / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    students = {r["student_id"] for r in rows}
    assert {ex.student for ch in CHAPTERS for ex in catalogue(ch).examples} <= students


def test_feedback_hides_hidden_tests(demo):
    root, _, _ = demo
    pages = sorted((root / "feedback").glob("*/*/*.html"))
    assert pages, "no feedback pages were written"
    for ch in CHAPTERS:
        lines = _hidden_lines(ch)
        for page in pages:
            if page.parent.name != ch:
                continue
            text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
            own = answer_lines(build.example_path(page.parent.parent.name, ch))  # the student's own code, shown back
            leaked = sorted(ln for ln in lines - own if ln in text)
            assert not leaked, f"{page} shows hidden-test code: {leaked[:3]}"
            assert nbk.BEGIN_HIDDEN not in text


def test_demo_without_user_namespaces_grades_weakly_and_says_so(monkeypatch, tmp_path):
    """Where bubblewrap cannot run, make demo still grades its own example students, with weak containment (the
    command's warning line and the report's Containment line say so), instead of dying with a traceback."""
    from autograde import demo as demo_module
    from autograde.grader import containment
    from autograde.grader.apps.grade import Graded

    from .test_autograder import _no_userns_bwrap

    seen = {}

    def fake_grade_all(incoming, root, **kw):
        seen.update(kw)
        return Graded({}, f"Containment: {containment.describe(kw['settings'].weak_containment)}\n", {})

    monkeypatch.setattr(containment, "BWRAP", _no_userns_bwrap(tmp_path))
    monkeypatch.setattr(demo_module, "grade_all", fake_grade_all)
    monkeypatch.setattr(demo_module, "format_losses", lambda *a: "none")  # nothing was graded
    containment.forget_choice()
    try:
        report = demo_module.run_demo(tmp_path / "ws", chapters=CHAPTERS[:1], quiet=True)
    finally:
        containment.forget_choice()
    assert seen["settings"].weak_containment is True and "Containment: WEAK" in report, report
