"""The mutant catalogues keep the form's promises to students (fast: no nbgrader grading here).

- One bug costs one exercise: a mutant loses only test cells of its own exercise, unless a test cell
  declares that its exercise integrates the chapter's pieces (then the notebook says so to the student).
- Every mutant records whether the visible test of its exercise catches it, and the record is true:
  measured by running the release's visible tests as a student would (autograde.authoring.visible).
- The visible tests catch at least 90% of the mutants of graded code (concept checks, whose answers
  live only in the hidden tests, are not counted); each exception says why only hidden tests can.
"""
from __future__ import annotations

import pytest

from autograde import notebook as nbk

from .conftest import catalogue, source

VISIBLE_TARGET = 0.90


def _is_concept(cell: str) -> bool:
    return cell.startswith("concept_")


def test_mutant_losses_stay_in_their_exercise(chapter):
    src = source(chapter)
    tests_of = nbk.tests_of(src)
    integrating = {nbk.grade_id(c) for c in src.cells if nbk.is_test(c) and nbk.integrates(c)}
    wrong = []
    for m in catalogue(chapter).mutants:
        own = set(tests_of.get(m.cell, ()))
        outside = set(m.loses) - own - integrating
        if outside:
            wrong.append(f"{m.name} (answer cell {m.cell}) loses {sorted(outside)}, outside its exercise {sorted(own)}")
        if not set(m.loses) & own:
            wrong.append(f"{m.name} loses nothing of its own exercise {sorted(own)}")
    assert not wrong, "one bug must cost one exercise:\n  " + "\n  ".join(wrong)


def test_visible_catch_records_are_true(chapter, student_runs):
    got = student_runs(chapter)[1]
    wrong = []
    for m in catalogue(chapter).mutants:
        o = got[m.name]
        if o.caught != m.visible:
            seen = f"fails {', '.join(o.failed)}" if o.caught else "passes every visible test of its exercise"
            wrong.append(f"{m.name}: recorded visible={m.visible}, but a student running it {seen}")
    assert not wrong, "update the catalogue's visible= records (or the visible tests):\n  " + "\n  ".join(wrong)


def test_visible_tests_catch_most_mutants(chapter):
    graded = [m for m in catalogue(chapter).mutants if not _is_concept(m.cell)]
    caught = [m for m in graded if m.visible]
    assert len(caught) >= VISIBLE_TARGET * len(graded), (
        f"{chapter}: the visible tests catch {len(caught)} of {len(graded)} mutants of graded code, below "
        f"{VISIBLE_TARGET:.0%}; not caught: {', '.join(m.name for m in graded if not m.visible)}")
