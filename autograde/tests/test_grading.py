"""Real nbgrader autograding: every mutant and alternative (the exhaustive tier), and the untrusted-code settings.

`make test` proves the catalogue in-process (autograde/tests/test_verdicts.py, with the grader's harness, and
checked against the real command on the example students); the tests marked `exhaustive` here grade every
case through nbgrader as well (`make test-exhaustive`). All submissions of a chapter are graded in one batch
(two parallel workspaces), then each test reads its student's per-cell scores.

To keep `make test` within its budget, mutants that change different lines
and lose disjoint test cells share one submission (likewise alternatives, one
per answer cell): each test cell then still has exactly one mutant that claims
it, and every cell outside the claims must keep full marks. Set
COURSE_GRADE_SEPARATELY=1 to grade every mutant and alternative alone. Hostile
submissions are graded by test_autograder.py (the adversarial corpus); the
controls below take a few of them to show which setting protects the score.
"""
from __future__ import annotations

import os

import pytest

from course import CHAPTERS
from autograde.grader.records.limits import LIMITS
from autograde.authoring import products as build
from autograde.authoring import catalogue as mut
from autograde.authoring.examples import example_losses
from autograde import notebook as nbk
from autograde.authoring.verdicts import regions, share
from autograde.grader.core import Submission, grade_in_parallel
from autograde.grader.records.settings import Settings

from .conftest import catalogue, source, graded_test_cells

pytestmark = pytest.mark.grading
CELL_TIMEOUT = LIMITS.cell_seconds  # the course's limit: a correct test cell takes up to ~10 s on a loaded two-core machine, and
# a shorter limit would fail it there; only adv_loop_after_definitions ever reaches it


def _tag_tests(nb, tag):
    out = nbk.copy_notebook(nb)
    for cell in out.cells:
        if nbk.is_test(cell):
            cell.metadata.setdefault("tags", []).append(tag)
    return out


def _drop_tests(nb):
    out = nbk.copy_notebook(nb)
    out.cells = [c for c in out.cells if not nbk.is_test(c)]
    return out


def _edit_tests(nb):
    out = nbk.copy_notebook(nb)
    for cell in out.cells:
        if nbk.is_test(cell):
            cell.source = "pass  # the student emptied this test"
    return out


def _append_to_first_answer(nb, code):
    out = nbk.copy_notebook(nb)
    first = next(c for c in out.cells if nbk.is_solution(c))
    first.source += "\n" + code
    return out


ADVERSARIAL = ("adv_skip_tag_blank", "adv_deleted_tests_solution", "adv_deleted_tests_blank", "adv_emptied_tests_blank",
               "adv_shadow_torch_py", "adv_loop_after_definitions", "adv_output_flood")


def adversarial(filled, blank) -> dict[str, tuple[Submission, str]]:
    """Submissions that test the nbgrader settings, with what each must score: 'full' or 'zero'."""
    return {
        "adv_skip_tag_blank": (Submission(_tag_tests(blank, "skip-execution")), "zero"),
        "adv_deleted_tests_solution": (Submission(_drop_tests(filled)), "full"),
        "adv_deleted_tests_blank": (Submission(_drop_tests(blank)), "zero"),
        "adv_emptied_tests_blank": (Submission(_edit_tests(blank)), "zero"),
        "adv_shadow_torch_py": (Submission(filled, (("torch.py", "raise ImportError('shadowed torch')\n"),
                                                    ("course/__init__.py", "raise ImportError('shadowed course')\n"))), "full"),
        "adv_loop_after_definitions": (Submission(_append_to_first_answer(filled, "while True:\n    pass")), "full"),
        "adv_output_flood": (Submission(_append_to_first_answer(filled, "for _ in range(200000):\n    print('spam')")), "full"),
    }


def all_submissions(chapter: str) -> dict[str, tuple[Submission, set[str]]]:
    """Every submission the tests grade for a chapter, with the test cells it must lose (score 0)."""
    src = source(chapter)
    release = nbk.read(build.release_path(chapter))
    release.metadata.pop("course", None)
    filled = mut.filled_submission(src, release)
    cat = catalogue(chapter)
    tests = set(graded_test_cells(src))
    out: dict[str, tuple[Submission, set[str]]] = {}
    for ex in cat.examples:
        out[ex.student] = (Submission(build.example_path(ex.student, chapter)), example_losses(cat, ex, tests))
    for m in cat.mutants:
        out[f"mutant_{m.name}"] = (Submission(mut.apply_mutant(filled, m)), set(m.loses))
    for a in cat.alternatives:
        out[f"alt_{a.name}"] = (Submission(mut.apply_alternative(filled, a)), set())
    for name, (sub, outcome) in adversarial(filled, release).items():
        out[name] = (sub, tests if outcome == "zero" else set())
    return out


ADVERSARIAL_CHAPTER = CHAPTERS[0]
SEPARATELY = os.environ.get("COURSE_GRADE_SEPARATELY") == "1"


def graded_submissions(chapter: str) -> tuple[dict[str, tuple[Submission, set[str]]], dict[str, str]]:
    """The submissions one batch grades, with the cells each must lose, and which submission holds each case."""
    src = source(chapter)
    release = nbk.read(build.release_path(chapter))
    release.metadata.pop("course", None)
    filled = mut.filled_submission(src, release)
    cat = catalogue(chapter)
    subs: dict[str, tuple[Submission, set[str]]] = {}
    where: dict[str, str] = {}  # the example students are graded by the demo fixture, not here
    plans = [("mutants", [(m.name, regions(filled, [m]), frozenset(m.loses)) for m in cat.mutants],
              mut.apply_mutant, cat.mutant),
             ("alternatives", [(a.name, regions(filled, [a]), frozenset()) for a in cat.alternatives],
              mut.apply_alternative, {a.name: a for a in cat.alternatives}.__getitem__)]
    for kind, items, apply, lookup in plans:
        prefix = "mutant" if kind == "mutants" else "alt"
        for k, names in enumerate([[name] for name, _, _ in items] if SEPARATELY else share(items)):
            sub_name = f"{prefix}_{names[0]}" if len(names) == 1 else f"{kind}_{k}"
            nb, lost = filled, set()
            for name in names:
                nb = apply(nb, lookup(name))
                lost |= set(getattr(lookup(name), "loses", ()))
                where[f"{prefix}_{name}"] = sub_name
            subs[sub_name] = (Submission(nb), lost)
    return subs, where


class Batch:
    """Every submission of one chapter, graded once, with what each must score per test cell."""

    def __init__(self, chapter: str, root):
        self.tests = graded_test_cells(source(chapter))
        subs, self.where = graded_submissions(chapter)
        self.expected = {student: lost for student, (_, lost) in subs.items()}
        self.scores = grade_in_parallel(root, chapter, {s: sub for s, (sub, _) in subs.items()}, jobs=2,
                                        settings=Settings(cell_seconds=CELL_TIMEOUT))


class Batches(dict):
    """Chapter -> Batch, graded on first use, so `pytest -k <chapter>` grades that chapter alone."""

    def __init__(self, tmp_path_factory) -> None:
        super().__init__()
        self.tmp_path_factory = tmp_path_factory

    def __missing__(self, chapter: str) -> Batch:
        self[chapter] = Batch(chapter, self.tmp_path_factory.mktemp(f"grade-{chapter}"))
        return self[chapter]


@pytest.fixture(scope="session")
def batches(tmp_path_factory) -> Batches:
    return Batches(tmp_path_factory)


def _students(kind: str) -> list[tuple[str, str]]:
    out = []
    for ch in CHAPTERS:
        cat = catalogue(ch)
        if kind == "mutants":
            out += [(ch, f"mutant_{m.name}") for m in cat.mutants]
        elif kind == "alternatives":
            out += [(ch, f"alt_{a.name}") for a in cat.alternatives]
    return out


def _compare(case: str, got: dict | None, tests, lost: set[str], note: str = "") -> None:
    """Every test cell in lost scored 0, every other one full marks."""
    assert got is not None, f"{case} was not graded (no gradebook entry){note}"
    assert set(got) >= set(tests), f"{case}: test cells missing from the gradebook: {set(tests) - set(got)}"
    wrong = []
    for gid in tests:
        cell = got[gid]
        want = 0.0 if gid in lost else cell.max_score
        if cell.score != want:
            wrong.append(f"{gid}: scored {cell.score:g}, expected {want:g} of {cell.max_score:g}")
    assert not wrong, f"{case}{note}:\n  " + "\n  ".join(wrong)


def _check(batch: Batch, case: str) -> None:
    student = batch.where[case]
    shared = f" (graded in the shared submission {student})" if student != case else ""
    _compare(case, batch.scores.get(student), batch.tests, batch.expected[student], shared)


@pytest.mark.exhaustive
@pytest.mark.parametrize("chapter_id,student", _students("mutants"))
def test_mutant_loses_exactly_its_exercise(batches, chapter_id, student):
    _check(batches[chapter_id], student)


@pytest.mark.exhaustive
@pytest.mark.parametrize("chapter_id,student", _students("alternatives"))
def test_alternative_keeps_full_marks(batches, chapter_id, student):
    _check(batches[chapter_id], student)


# -- controls: with nbgrader's defaults in place of the course's settings, the
# same submissions are mis-scored, so the tests above can fail.
CONTROLS = {
    # student built in Batch -> (nbgrader's default for the setting it relies on, a test cell, its correct score)
    "alt_cd_warns_about_small_steps": ("--IgnorePattern.enabled=False", "test_central_difference", "full"),
    # two layers keep a handed-in torch.py away from the kernel: nbgrader's ignore list and the
    # sandbox's empty working folder (autograde.grader.containment); the control turns both off
    "adv_shadow_torch_py": ("--CourseDirectory.ignore=.ipynb_checkpoints --SandboxedExecute.contain=False",
                            "test_central_difference", "full"),
    "adv_deleted_tests_solution": ("--OverwriteCells.add_missing_cells=False", "test_central_difference", "full"),
    "adv_skip_tag_blank": ("--StripCellTags.enabled=False", "test_central_difference", "zero"),
}


@pytest.mark.parametrize("student", sorted(CONTROLS))
def test_setting_is_what_protects_the_score(tmp_path, student):
    chapter = "ch01_chain_rule"
    submission, _ = all_submissions(chapter)[student]
    flag, cell, correct = CONTROLS[student]
    scores = grade_in_parallel(tmp_path, chapter, {student: submission}, jobs=1,
                               settings=Settings(overrides=tuple(flag.split())))
    got = scores.get(student, {}).get(cell)
    right = None if got is None else (got.max_score if correct == "full" else 0.0)
    assert got is None or got.score != right, (
        f"{student} is scored correctly on {cell} even with {flag}: the test relying on that setting could not fail"
    )
