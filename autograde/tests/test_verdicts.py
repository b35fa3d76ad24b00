"""The catalogue, graded in-process: every mutant loses exactly its declared test cells, every alternative keeps
full marks, the solution passes every cell; and the in-process verdicts equal the real grader's on a sample.

autograde.authoring.verdicts runs each chapter's notebook once and each case from a fork, with the grader's harness
around every test cell (isolation, provenance, the torch guard, blocked imports), in a few seconds per case
instead of a kernel per submission. That it gives what nbgrader gives is checked here on every chapter's
bundled example students (graded by the demo through autograde/grade), among them one that
changes every answer cell (erin: an alternative or a mutant in each, Catalogue.sample). Cases that change
different lines share a run to the end of the notebook (autograde.authoring.verdicts.share), where only a spill
into cells no case of the run claims is looked for; each case's own exercise is graded in a run of its own, so
two mutants of one exercise may share (in the exhaustive tier, where nothing else grades them, cases that claim
the same cell never share a submission). COURSE_GRADE_SEPARATELY=1 runs each alone. `make test-exhaustive` grades
every case through nbgrader (autograde/tests/test_grading.py).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from course import CHAPTERS
from autograde import notebook as nbk
from autograde.authoring import verdicts as inproc
from autograde.authoring.examples import example_losses
from autograde.authoring.forked import BASE

from .conftest import catalogue, computed_once, graded_test_cells, source

pytestmark = pytest.mark.grading
SEPARATELY = os.environ.get("COURSE_GRADE_SEPARATELY") == "1"
"""Every case in a run of its own (no shared runs, so no spill can be masked by another case's loss)."""


class Measured(dict):
    """Chapter -> {case: Verdict}: the catalogue's cases and the example students, measured in one run of the
    chapter on first use (so `pytest -k <chapter>` measures that chapter alone), once per test run: the worker that
    grades the catalogue usually measures it, and the worker that compares the example students with the real
    grader (the "examples" group, handed out last) reads it (conftest.computed_once)."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def __missing__(self, chapter: str):
        def compute() -> dict[str, inproc.Verdict]:
            return inproc.measure(chapter, inproc.catalogue_cases(chapter),
                                  claims=None if SEPARATELY else inproc.catalogue_claims(chapter))

        self[chapter] = computed_once(
            self.folder, f"verdicts-{chapter}{'-separately' if SEPARATELY else ''}", compute,
            encode=lambda got: json.dumps({name: asdict(v) for name, v in got.items()}),
            decode=lambda text: {name: inproc.Verdict(**{**v, "raised_cells": tuple(v["raised_cells"])})
                                 for name, v in json.loads(text).items()})
        return self[chapter]


@pytest.fixture(scope="session")
def measured(run_folder) -> Measured:
    return Measured(run_folder)


def _cases(kind: str) -> list[tuple[str, str]]:
    out = []
    for ch in CHAPTERS:
        cat = catalogue(ch)
        out += [(ch, m.name) for m in cat.mutants] if kind == "mutants" else [(ch, a.name) for a in cat.alternatives]
    return out


def _explain(verdict) -> str:
    return "; ".join(f"{g}: {why}" for g, why in sorted(verdict.lost.items())) or "nothing"


def test_solution_runs_clean_and_passes_every_test(chapter, measured):
    """The perfect submission, graded: no test cell loses a point (this replaces running the source notebook)."""
    base = measured[chapter][BASE]
    assert not base.died and not base.lost, f"{chapter}: the solution loses {_explain(base)} {base.died}"
    code = [c for c in inproc.graded_notebook(chapter).cells if c.cell_type == "code" and c.source.strip()]
    raised = [nbk.grade_id(code[i]) or code[i].source.split("\n")[0][:60] for i in base.raised_cells]
    assert not raised, f"{chapter}: cells raise on the solution: {raised}"


@pytest.mark.parametrize("chapter_id,name", _cases("mutants"))
def test_mutant_loses_exactly_its_exercise(measured, chapter_id, name):
    m = catalogue(chapter_id).mutant(name)
    got = measured[chapter_id][f"mutant_{name}"]
    assert set(got.lost) == set(m.loses) and not got.died, (
        f"{chapter_id}: mutant {name} should lose exactly {sorted(m.loses)}; it loses {_explain(got)} {got.died}")


@pytest.mark.parametrize("chapter_id,name", _cases("alternatives"))
def test_alternative_keeps_full_marks(measured, chapter_id, name):
    got = measured[chapter_id][f"alt_{name}"]
    assert not got.lost and not got.died, f"{chapter_id}: alternative {name} loses {_explain(got)} {got.died}"


def _real_losses(scores: dict | None, tests) -> set[str]:
    """The test cells below full marks, from the demo's scores (grade_id -> [score, max_score])."""
    assert scores is not None, "not in the gradebook"
    return {g for g in tests if scores[g][0] < scores[g][1]}


@pytest.mark.parametrize("chapter_id,student", [(ch, ex.student) for ch in CHAPTERS for ex in catalogue(ch).examples])
def test_in_process_equals_the_grader_on_the_example_students(demo, measured, chapter_id, student):
    """The demo graded the example students with autograde/grade: per test cell, the same verdict (each example
    student runs alone, to the end of the notebook)."""
    tests = graded_test_cells(source(chapter_id))
    real = _real_losses(demo[2][chapter_id].get(student), tests)
    got = measured[chapter_id][f"example_{student}"]
    assert set(got.lost) == real, (f"{chapter_id} {student}: the grader took {sorted(real)}, the in-process run "
                                   f"{_explain(got)}")
    ex = next(e for e in catalogue(chapter_id).examples if e.student == student)
    assert real == example_losses(catalogue(chapter_id), ex, set(tests))


def test_cases_share_a_run_only_where_no_loss_is_left_to_it():
    """share(): cases that change overlapping lines never share; cases that claim the same test cell share only
    where each one's own run grades that cell (two mutants of one exercise), never in the exhaustive tier's
    submissions (no `exact`), where the shared submission is all that grades them."""
    a = ("a", [("ex1", 3, 5)], frozenset({"t1"}))
    b = ("b", [("ex1", 7, 9)], frozenset({"t1", "t2"}))      # same exercise, other lines
    c = ("c", [("ex1", 4, 8)], frozenset({"t1"}))            # overlaps a's and b's lines
    d = ("d", [("ex2", 1, 2)], frozenset({"t3"}))            # another exercise
    own = {"a": frozenset({"t1", "t2"}), "b": frozenset({"t1", "t2"}), "c": frozenset({"t1", "t2"}),
           "d": frozenset({"t3"})}
    assert inproc.share([a, b, c, d]) == [["a", "d"], ["b"], ["c"]]
    assert inproc.share([a, b, c, d], exact=own) == [["a", "b", "d"], ["c"]]
    # a claim that the case's own run does not grade (a loss outside its exercise) is never shared
    assert inproc.share([a, b, c, d], exact={**own, "b": frozenset({"t2"})}) == [["a", "d"], ["b"], ["c"]]
    assert inproc.share([a, b, c, d], exact={**own, "a": frozenset()}) == [["a", "d"], ["b"], ["c"]]
