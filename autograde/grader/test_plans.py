"""What the grader asks the kernel to do around each test cell, read from the course's own source notebook.

Never from the submission (a student may edit anything in it): the plan for a test cell says
- references: the reference solution of the chapter's other exercises (answer cells tagged `export` before
  the test cell, except its own), which the harness runs in the notebook's namespace so the test grades
  only its own exercise; none for a test cell whose exercise integrates the chapter's pieces;
- names: the names its own exercise's answer cells define (the graded code: checked for provenance and
  guarded against torch);
- torch: the exercise is written in torch (metadata course.torch), so torch inside it is allowed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from course import CHAPTERS

from autograde import notebook as nbk
from autograde.notebook import defined_names


@dataclass(frozen=True)
class TestPlan:
    """The kernel-side preparation of one test cell (see autograde.hidden.harness.before_test)."""

    references: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    torch: bool = False

    def to_kernel(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def plans(chapter: str, isolate: bool = True, root: Path | None = None) -> dict[str, TestPlan]:
    """Per test cell (grade_id) of a chapter, its plan, from the source notebook under `root` (a grading
    workspace; default the repository); {} for a chapter without one."""
    path = (nbk.REPO if root is None else Path(root)) / "source" / chapter / f"{chapter}.ipynb"
    if not path.exists():
        return {}
    source = nbk.read(path)
    graded = nbk.exercises(source)
    answers = {nbk.grade_id(c): nbk.without_hidden_tests(nbk.solution_code(c.source))
               for c in source.cells if nbk.is_solution(c)}
    out: dict[str, TestPlan] = {}
    exported: list[tuple[str, str]] = []  # (answer grade_id, its reference code), in notebook order
    for cell in source.cells:
        if nbk.is_solution(cell) and nbk.is_exported(cell):
            exported.append((nbk.grade_id(cell), answers[nbk.grade_id(cell)]))
        elif nbk.is_test(cell):
            gid = nbk.grade_id(cell)
            own = graded.get(gid, ())
            refs = () if not isolate or nbk.integrates(cell) else tuple(c for a, c in exported if a not in own)
            names = tuple(sorted({n for a in own for n in defined_names(answers.get(a, ""))}))
            out[gid] = TestPlan(refs, names, bool(nbk.course_meta(cell).get("torch")))
    return out


def blocked_references(chapter: str) -> tuple[str, ...]:
    """The reference modules a notebook of this chapter may not import: its own chapter's and every later one's."""
    if chapter not in CHAPTERS:
        return ()
    return tuple(f"course.reference.{ch}" for ch in CHAPTERS[CHAPTERS.index(chapter):])
