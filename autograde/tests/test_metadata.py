"""The source notebooks' nbgrader metadata and structure are sound (fast, no execution)."""
from __future__ import annotations

import ast
import re

import nbformat
import pytest

from autograde.authoring import catalogue as mut
from autograde import notebook as nbk

from .conftest import catalogue, source, graded_test_cells


def test_notebook_is_valid_nbformat(chapter):
    nbformat.validate(source(chapter))


def test_no_outputs_in_source(chapter):
    for cell in source(chapter).cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"cell {cell.id} has outputs: clear them"


def test_grade_ids_unique_and_points_set(chapter):
    ids = [nbk.grade_id(c) for c in source(chapter).cells if nbk.grade_id(c)]
    assert len(ids) == len(set(ids)), f"duplicate grade_ids: {sorted({i for i in ids if ids.count(i) > 1})}"
    for cell in source(chapter).cells:
        meta = nbk.nbgrader_meta(cell)
        if meta.get("grade"):
            assert isinstance(meta.get("points"), (int, float)) and meta["points"] > 0, f"{meta['grade_id']}: no points"
        if meta:
            assert meta.get("schema_version") == 3, f"{meta.get('grade_id')}: nbgrader schema must be 3"


def test_test_cells_locked_answer_cells_open(chapter):
    for cell in source(chapter).cells:
        meta = nbk.nbgrader_meta(cell)
        if nbk.is_test(cell):
            assert meta.get("locked"), f"test cell {meta['grade_id']} must be locked"
        if nbk.is_solution(cell):
            assert not meta.get("locked"), f"answer cell {meta['grade_id']} must not be locked"
            assert not meta.get("grade"), f"answer cell {meta['grade_id']} is autograded through its test cell"


def test_regions_are_where_they_belong(chapter):
    for cell in source(chapter).cells:
        gid = nbk.grade_id(cell) or cell.get("id")
        if nbk.BEGIN_SOLUTION in cell.source:
            assert nbk.is_solution(cell), f"{gid}: a solution region outside an answer cell"
            nbk.solution_code(cell.source)  # raises on unbalanced markers
        elif nbk.is_solution(cell):
            pytest.fail(f"answer cell {gid} has no {nbk.BEGIN_SOLUTION} region")
        if nbk.BEGIN_HIDDEN in cell.source:
            assert nbk.is_test(cell), f"{gid}: hidden tests outside a test cell"
            nbk.without_hidden_tests(cell.source)
        elif nbk.is_test(cell):
            pytest.fail(f"test cell {gid} has no hidden tests: every graded piece is checked against torch")


def _asserts_without_message(code: str) -> list[int]:
    return [n.lineno for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Assert) and n.msg is None]


def test_every_assertion_has_a_message(chapter):
    for gid, cell in graded_test_cells(source(chapter)).items():
        bare = _asserts_without_message(cell.source)
        assert not bare, f"{gid}: assert without a message at lines {bare}; say what was expected and got"


def test_no_trailing_expression_in_test_cells(chapter):
    """nbgrader reads a trailing value as partial credit: a test cell ends in an assertion, not a value.

    Checked on the whole cell (what autograde runs) and on its visible part
    (what the release, and so nbgrader validate, runs).
    """
    returns_none = {"check_close", "check_shape", "check_equal", "check_choice", "passed"}
    for gid, cell in graded_test_cells(source(chapter)).items():
        for label, code in (("cell", cell.source), ("visible part", nbk.without_hidden_tests(cell.source))):
            body = ast.parse(code).body
            last = body[-1] if body else None
            if isinstance(last, ast.Expr):
                func = getattr(last.value, "func", None)
                assert getattr(func, "id", None) in returns_none, (
                    f"the {label} of {gid} ends with an expression whose value nbgrader would score"
                )


def test_answer_cells_use_only_the_students_tools(chapter):
    forbidden = re.compile(r"^\s*(import torch|from torch|import course\.reference|from course\.reference)", re.M)
    for cell in source(chapter).cells:
        if nbk.is_solution(cell):
            assert not forbidden.search(cell.source), f"{nbk.grade_id(cell)}: solutions may not use torch or the reference"


def test_chapter_shape(chapter):
    """4-8 graded exercises (an exercise may have one test cell per concept) and 3-6 concept checks."""
    tests = graded_test_cells(source(chapter))
    concepts = [g for g in tests if g.startswith("test_concept_")]
    graded = nbk.exercises(source(chapter))
    exercises = sorted({graded[g] for g in tests if not g.startswith("test_concept_")})
    assert 4 <= len(exercises) <= 8, f"{len(exercises)} graded exercises: {exercises}"
    assert 3 <= len(concepts) <= 6, f"{len(concepts)} concept checks: {concepts}"
    assert any(nbk.is_exported(c) for c in source(chapter).cells), "no cell exported to the reference engine"


def test_kernelspec_is_python3(chapter):
    assert source(chapter).metadata["kernelspec"]["name"] == "python3"


def test_catalogue_matches_notebook(chapter):
    """Every mutant applies to its cell exactly once and names real test cells; every test cell is mutated."""
    nb = source(chapter)
    cat = catalogue(chapter)
    tests = graded_test_cells(nb)
    filled = mut.filled_submission(nb, nb)
    names = [m.name for m in cat.mutants] + [a.name for a in cat.alternatives]
    assert len(names) == len(set(names)), "mutant and alternative names must be unique"
    for m in cat.mutants:
        mut.apply_mutant(filled, m)
        assert m.loses and set(m.loses) <= set(tests), f"mutant {m.name}: loses {m.loses} are not test cells"
    for a in cat.alternatives:
        mut.apply_alternative(filled, a)
    caught = {gid for m in cat.mutants for gid in m.loses}
    assert not set(tests) - caught, f"test cells no mutant shows failing: {sorted(set(tests) - caught)}"
    kinds = {ex.kind for ex in cat.examples}
    assert {"solution", "blank", "mutants"} <= kinds, f"example students must include each kind, got {kinds}"


def test_deleted_test_cells_can_be_restored(chapter):
    """nbgrader puts a deleted test cell back after the nbgrader cell before it, which it looks up among
    answer and test cells only: a locked read-only cell there makes autograde fail for the whole submission."""
    tracked = [c for c in source(chapter).cells if nbk.nbgrader_meta(c)]
    for previous, cell in zip(tracked, tracked[1:]):
        if nbk.is_test(cell):
            meta = nbk.nbgrader_meta(previous)
            assert meta.get("grade") or meta.get("solution"), (
                f"{nbk.grade_id(cell)} follows the read-only cell {nbk.grade_id(previous)}: if a student deletes "
                f"{nbk.grade_id(cell)}, nbgrader cannot restore it; move it or drop {nbk.grade_id(previous)}'s metadata")


def test_demo_cells_are_safe_to_skip(chapter):
    """A cell marked course.demo (skipped by the in-process verdicts) is a given cell, and no later cell that runs
    reads a name it bound (autograde.authoring.demo_cells)."""
    from autograde.authoring.demo_cells import problems

    found = problems(source(chapter))
    assert not found, f"{chapter}: demo marks that the in-process grading cannot honour:\n  " + "\n  ".join(found)
