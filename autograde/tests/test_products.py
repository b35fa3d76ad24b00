"""The committed products are fresh and leak no hidden test (release/, solutions/, reference, examples)."""
from __future__ import annotations

import ast
import importlib
import json

from autograde.authoring import products as build
from autograde import notebook as nbk

from .conftest import catalogue, source


def test_products_are_fresh(chapter):
    problems = build.stale_products((chapter,))
    assert not problems, "stale products (run `make build` and commit):\n" + "\n".join(problems)


def hidden_helper_path(chapter: str):
    """The chapter's hidden-test helper module (autograde/hidden/<chapter>.py), which hidden test cells import."""
    return nbk.REPO / "autograde" / "hidden" / f"{chapter}.py"


def _hidden_lines(chapter: str) -> set[str]:
    """Distinctive hidden lines (the hidden-test regions and the chapter's hidden-test helper module): long
    enough not to occur by chance, not also visible, and not an import."""
    visible, hidden = set(), set()
    for cell in source(chapter).cells:
        visible |= {ln.strip() for ln in nbk.without_hidden_tests(cell.source).split("\n")}
        hidden |= {ln.strip() for ln in nbk.hidden_test_lines(cell.source)}
    helper = hidden_helper_path(chapter)
    if helper.exists():
        hidden |= {ln.strip() for ln in helper.read_text().split("\n")}
    return {ln for ln in hidden - visible if len(ln) >= 20 and not ln.startswith(("#", '"""')) and not _imports(ln)}


def _imports(line: str) -> bool:
    """An import statement names modules and says nothing of a test: a release may trim its own imports to the same
    line (chapter 6's keeps `from typing import Any, Callable`)."""
    return line.startswith("import ") or (line.startswith("from ") and " import " in line)


def _texts_of(path) -> str:
    nb = nbk.read(path)
    parts = [c.source for c in nb.cells]
    parts += [json.dumps(c.get("outputs", [])) for c in nb.cells]
    return "\n".join(parts)


def answer_lines(path) -> set[str]:
    """The lines of a submission's own answer cells: a student's code may say what a hidden helper says (erin's
    alternatives do), and showing it back is no leak."""
    return {ln.strip() for c in nbk.read(path).cells if nbk.is_solution(c) for ln in c.source.split("\n")}


def test_hidden_tests_absent_from_release_solutions_and_examples(chapter):
    lines = _hidden_lines(chapter)
    assert lines, "no distinctive hidden-test lines found: is the check looking at the right cells?"
    paths = [build.release_path(chapter), build.solution_path(chapter)]
    examples = [build.example_path(ex.student, chapter) for ex in catalogue(chapter).examples]
    for path in paths + examples:
        text = _texts_of(path)
        own = answer_lines(path) if path in examples else set()
        leaked = sorted(ln for ln in lines - own if ln in text)
        assert not leaked, f"{path.relative_to(nbk.REPO)} contains hidden-test lines: {leaked[:3]}"
        assert nbk.BEGIN_HIDDEN not in text, f"{path.relative_to(nbk.REPO)} contains a hidden-test marker"


def test_release_has_no_solution_code(chapter):
    release = nbk.read(build.release_path(chapter))
    text = "\n".join(c.source for c in release.cells)
    for cell in source(chapter).cells:
        if nbk.is_solution(cell):
            outside = set(nbk.without_hidden_tests(cell.source).split("\n")) - set(nbk.solution_lines(cell.source))
            distinctive = [ln for ln in nbk.solution_lines(cell.source) if len(ln.strip()) >= 15 and ln not in outside]
            leaked = [ln.strip() for ln in distinctive if ln in text]
            assert not leaked, f"release keeps solution lines of {nbk.grade_id(cell)}: {leaked[:3]}"
    answers = [c for c in release.cells if nbk.is_solution(c)]
    assert all("raise NotImplementedError()" in c.source for c in answers), "an answer cell in the release lacks its stub"


def test_solutions_are_executed_with_outputs(chapter):
    nb = nbk.read(build.solution_path(chapter))
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "solution notebook has unexecuted cells: run `make build`"
    errors = [c.id for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"solution notebook has errors in cells {errors}"
    assert any("image/png" in o.get("data", {}) for c in code for o in c.outputs), "the solution keeps no plot"
    assert not any("nbgrader" in c.metadata for c in nb.cells), "solutions carry no nbgrader metadata"


def test_reference_engine_defines_every_exported_answer(chapter):
    module = importlib.import_module(f"course.reference.{chapter}")
    for cell in source(chapter).cells:
        if nbk.is_exported(cell) and nbk.is_solution(cell):
            tree = ast.parse(nbk.solution_code(cell.source))
            names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
            missing = [n for n in names if not hasattr(module, n)]
            assert not missing, f"course.reference.{chapter} lacks {missing} from cell {nbk.grade_id(cell)}"
