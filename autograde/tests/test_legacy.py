"""A class that handed in a chapter before it took its present form must still be gradable.

legacy/<chapter>.ipynb is a complete submission (example student alice) made from an earlier release: chapters 1-3
from their first release (commit 90e4829), before the fair-grading form split and renamed test cells; chapters 4
and 5 from the release before their concept checks gained a predict-the-output item (an answer cell and a test cell
the old notebook lacks; nbgrader 0.9.6's own add_missing_grade_cells fails on the whole notebook there with a
KeyError). Every answer cell's grade_id of that release must still exist in the source or be retired (an exercise
that moved to a later chapter), every test cell's grade_id must exist or be listed as retired, grading it gives no
tampering incident, and the autograded notebook has every cell of today's release once, those the old release did
not have put back after the cell the release has before them (RestoreMissingCells).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograde import notebook as nbk
from autograde.grader.apps import grade as grading
from autograde.grader.records import releases

LEGACY = Path(__file__).parent / "legacy"
CHAPTERS = sorted(p.stem for p in LEGACY.glob("*.ipynb"))
STUDENT = "alice_2026"


def _ids(nb, test: bool) -> set[str]:
    """grade_ids of the test cells (test=True) or of the answer cells (solution=True, concept checks included)."""
    return {nbk.grade_id(c) for c in nb.cells if (nbk.is_test(c) if test else nbk.is_solution(c))}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_old_grade_ids_still_known(chapter):
    old = nbk.read(LEGACY / f"{chapter}.ipynb")
    source = nbk.read(nbk.REPO / "source" / chapter / f"{chapter}.ipynb")
    retired = set(source.metadata.get("course", {}).get("retired_grade_ids", []))
    lost_answers = _ids(old, test=False) - _ids(source, test=False) - _ids(source, test=True) - retired
    assert not lost_answers, (f"{chapter}: answer cells handed in under these ids have no cell any more and are "
                              f"not retired: {lost_answers}")
    unknown_tests = _ids(old, test=True) - _ids(source, test=True) - retired
    assert not unknown_tests, (f"{chapter}: old test cells neither in the source nor retired "
                               f"(metadata course.retired_grade_ids): {unknown_tests}")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("legacy")
    for chapter in CHAPTERS:
        dest = root / "submitted" / STUDENT / chapter
        dest.mkdir(parents=True)
        shutil.copyfile(LEGACY / f"{chapter}.ipynb", dest / f"{chapter}.ipynb")
    graded = grading.grade_all(root / "submitted", root / "ws", jobs=2, chapters=tuple(CHAPTERS), quiet=True,
                               feedback=False)
    return graded.results, graded.report, root / "ws"


@pytest.mark.grading
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_old_submission_graded_without_tampering(graded, chapter):
    results, report, _ = graded
    result = results[chapter][STUDENT]
    kinds = {i.kind for i in result.incidents}
    assert not kinds & {"tampering", "ungradable", "cheating", "hook"}, \
        f"{chapter}: {[i.words() for i in result.incidents]}\n{report}"
    assert result.score and result.score > 0, f"{chapter}: scored {result.score}\n{report}"


@pytest.mark.grading
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_old_submission_gets_every_cell_of_today_in_order(graded, chapter):
    autograded = next(graded[2].rglob(f"autograded/{STUDENT}/{chapter}/{chapter}.ipynb"))
    ran = [nbk.grade_id(c) for c in nbk.read(autograded).cells if nbk.grade_id(c)]
    release = [nbk.grade_id(c) for c in nbk.read(nbk.REPO / "release" / chapter / f"{chapter}.ipynb").cells
               if nbk.grade_id(c)]
    missing = [gid for gid in release if ran.count(gid) != 1]
    assert not missing, f"{chapter}: cells of today's release not in the autograded notebook exactly once: {missing}"
    handed_in = {nbk.grade_id(c) for c in nbk.read(LEGACY / f"{chapter}.ipynb").cells}
    restored = [gid for gid in release if gid not in handed_in]
    misplaced = [(before, gid) for before, gid in zip(release, release[1:])
                 if gid in restored and ran.index(gid) < ran.index(before)]
    assert not misplaced, f"{chapter}: restored cells placed before the cell the release has before them: {misplaced}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_an_old_release_cell_is_known_and_an_edited_one_is_not(chapter):
    """autograde/releases/<chapter>.json knows the first release's test cells; an edit of one is still an edit."""
    record = releases.load(chapter)
    old = nbk.read(LEGACY / f"{chapter}.ipynb")
    tests = [c for c in old.cells if nbk.is_test(c)]
    assert tests and all(record.known_version(nbk.grade_id(c), c.source) for c in tests)
    assert not any(record.known_version(nbk.grade_id(c), c.source + "\nassert True") for c in tests)
    present = {nbk.grade_id(c): c for c in old.cells if nbk.grade_id(c)}
    assert record.release_of(present, {}) is not None
