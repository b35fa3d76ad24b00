"""Reading, classifying and rewriting notebook cells the way the build and the tests need."""
from __future__ import annotations

import ast
import copy
import hashlib
import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
EXPORT_TAG = "export"

from autograde.paths import REPO  # noqa: F401 - the repository root, for callers that only import this module


def read(path: Path) -> NotebookNode:
    """Read a notebook as nbformat v4."""
    return nbformat.read(str(path), as_version=4)


def dumps(nb: NotebookNode) -> str:
    """Serialise a notebook deterministically (sorted keys, one-space indent, final newline)."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write(nb: NotebookNode, path: Path) -> None:
    """Write a notebook deterministically, creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(nb), encoding="utf-8")


def sha256(path: Path) -> str:
    """Hex digest of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def nbgrader_meta(cell: NotebookNode) -> dict:
    """The cell's nbgrader metadata ({} when it has none)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell: NotebookNode) -> str | None:
    """The cell's nbgrader grade_id, if any."""
    return nbgrader_meta(cell).get("grade_id")


def is_solution(cell: NotebookNode) -> bool:
    """True for an answer cell (nbgrader solution=True)."""
    return bool(nbgrader_meta(cell).get("solution"))


def is_test(cell: NotebookNode) -> bool:
    """True for an autograded test cell (grade=True, not a solution)."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def is_exported(cell: NotebookNode) -> bool:
    """True for a cell whose code goes into the reference engine."""
    return cell.cell_type == "code" and EXPORT_TAG in cell.get("metadata", {}).get("tags", [])


def _drop_region(source: str, begin: str, end: str, keep_inside: bool) -> str:
    """Remove the marker lines of every begin/end region, keeping or dropping what is inside."""
    out: list[str] = []
    inside = False
    for line in source.split("\n"):
        if begin in line:
            if inside:
                raise ValueError(f"nested {begin!r} in cell:\n{source}")
            inside = True
            continue
        if end in line:
            if not inside:
                raise ValueError(f"{end!r} without {begin!r} in cell:\n{source}")
            inside = False
            continue
        if keep_inside or not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{begin!r} without {end!r} in cell:\n{source}")
    return "\n".join(out)


def solution_code(source: str) -> str:
    """The cell's source with the solution markers removed and the solution kept."""
    return _drop_region(source, BEGIN_SOLUTION, END_SOLUTION, keep_inside=True)


def without_solutions(source: str) -> str:
    """The cell's source with every solution region removed, markers included: the lines given around them."""
    return _drop_region(source, BEGIN_SOLUTION, END_SOLUTION, keep_inside=False)


def without_hidden_tests(source: str) -> str:
    """The cell's source with every hidden-test region removed, markers included."""
    return _drop_region(source, BEGIN_HIDDEN, END_HIDDEN, keep_inside=False).rstrip("\n")


def region_lines(source: str, begin: str, end: str) -> list[str]:
    """The lines strictly inside the begin/end regions of a cell."""
    lines, inside = [], False
    for line in source.split("\n"):
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def hidden_test_lines(source: str) -> list[str]:
    """The lines inside the hidden-test regions of a cell."""
    return region_lines(source, BEGIN_HIDDEN, END_HIDDEN)


def solution_lines(source: str) -> list[str]:
    """The lines inside the solution regions of a cell."""
    return region_lines(source, BEGIN_SOLUTION, END_SOLUTION)


def copy_notebook(nb: NotebookNode) -> NotebookNode:
    """A deep copy of a notebook."""
    return copy.deepcopy(nb)


def solved_copy(nb: NotebookNode) -> NotebookNode:
    """A copy of a source notebook with solutions written out and hidden tests removed."""
    out = copy_notebook(nb)
    for cell in out.cells:
        cell.source = without_hidden_tests(solution_code(cell.source))
    return out


# -- exercises: which answer cells a test cell grades ----------------------------
COURSE_KEY = "course"
"""Cell metadata key for the course's own settings (nbgrader ignores it):
- on a test cell, "exercise": [answer grade_ids] overrides the default (the nearest answer cells before it);
- on a test cell, "integrates": true says the exercise exists to combine the chapter's pieces, so the
  grader does not swap in the reference for the others (the notebook says so to the student)."""


def course_meta(cell: NotebookNode) -> dict:
    """The cell's course metadata ({} when it has none)."""
    return cell.get("metadata", {}).get(COURSE_KEY, {})


def integrates(cell: NotebookNode) -> bool:
    """True for a test cell of an exercise that combines the chapter's pieces (no reference swapped in)."""
    return bool(course_meta(cell).get("integrates"))


def exercises(nb: NotebookNode) -> dict[str, tuple[str, ...]]:
    """Per test cell (grade_id), the answer cells it grades, in notebook order.

    Default: walking back from the test cell, the answer cells met before the
    previous group of test cells (so A1 T1 T2 A2 A3 T3 gives T1, T2 -> A1 and
    T3 -> A2, A3). A test cell's metadata course.exercise overrides it.
    """
    out: dict[str, tuple[str, ...]] = {}
    for i, cell in enumerate(nb.cells):
        if not is_test(cell):
            continue
        explicit = course_meta(cell).get("exercise")
        if explicit:
            out[grade_id(cell)] = tuple(explicit)
            continue
        found: list[str] = []
        for earlier in reversed(nb.cells[:i]):
            if is_test(earlier) and found:
                break
            if is_solution(earlier):
                found.append(grade_id(earlier))
        out[grade_id(cell)] = tuple(reversed(found))
    return out


def tests_of(nb: NotebookNode) -> dict[str, tuple[str, ...]]:
    """Per answer cell (grade_id), the test cells that grade it (the inverse of exercises)."""
    out: dict[str, list[str]] = {}
    for test, answers in exercises(nb).items():
        for answer in answers:
            out.setdefault(answer, []).append(test)
    return {answer: tuple(tests) for answer, tests in out.items()}


# -- reading cells' code ----------------------------------------------------------------------------
def normalised(source: str) -> str:
    """Source without trailing spaces and blank lines, for comparing versions of a cell."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines() if line.strip())


def python_of(source: str) -> str:
    """Cell source as plain Python (IPython magics and shell escapes turned into calls)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - fall back to the raw source
        return source


def defined_names(source: str) -> set[str]:
    """Top-level names a cell defines (functions, classes, assignments)."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def exercise_tests(nb: NotebookNode) -> dict[int, list[str]]:
    """Per code cell index, the test cells after it up to the next answer cell (the exercise it belongs to)."""
    out: dict[int, list[str]] = {}
    for i, cell in enumerate(nb.cells):
        tests = []
        for later in nb.cells[i + 1:]:
            if is_solution(later):
                break
            if is_test(later):
                tests.append(grade_id(later))
        out[i] = tests
    return out
