"""Mutants (plausible wrong answers) and alternatives (other correct answers) for a chapter.

A chapter's catalogue lives in autograde/mutants/<chapter>.py and defines
MUTANTS, ALTERNATIVES and EXAMPLE_STUDENTS with the classes below. The tests
turn each entry into a submission (the release notebook with every answer
cell filled from the source solution, then this one change), autograde it
with nbgrader, and check that exactly the declared test cells lose points.
"""
from __future__ import annotations

import runpy
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from autograde import notebook as nbk

CATALOGUES = nbk.REPO / "autograde" / "mutants"


@dataclass(frozen=True)
class Mutant:
    """A plausible wrong implementation: replace `old` by `new` in one answer cell's solution."""

    name: str
    why: str
    cell: str
    old: str
    new: str
    loses: tuple[str, ...]
    """grade_ids of the test cells that must score 0; every other test cell must keep full marks."""
    visible: bool | None = None
    """Does the visible test of its exercise catch it (the student's own run of the notebook)? Must be set."""
    hidden_because: str = ""
    """When visible is False: why only the hidden tests can catch it (e.g. a bug only random shapes reveal)."""

    def __post_init__(self) -> None:
        if self.visible is None:
            raise ValueError(f"mutant {self.name}: say whether the visible test catches it (visible=True/False)")
        if not self.visible and not self.hidden_because.strip():
            raise ValueError(f"mutant {self.name}: visible=False needs hidden_because (why a visible test cannot catch it)")


@dataclass(frozen=True)
class Alternative:
    """A different correct answer: the whole source of one answer cell; it must keep full marks."""

    name: str
    why: str
    cell: str
    source: str


@dataclass(frozen=True)
class ExampleStudent:
    """A bundled example submission: 'solution', 'blank', the named mutants applied together, 'sample' (every
    answer cell changed: see Catalogue.sample), or an 'attack' from the adversarial corpus
    (autograde.corpus.attacks), which the demo shows as an incident."""

    student: str
    kind: str
    mutants: tuple[str, ...] = field(default=())
    attack: str = ""


@dataclass(frozen=True)
class Catalogue:
    """One chapter's mutants, alternatives and example students."""

    chapter: str
    mutants: tuple[Mutant, ...]
    alternatives: tuple[Alternative, ...]
    examples: tuple[ExampleStudent, ...]

    def mutant(self, name: str) -> Mutant:
        """The mutant called name."""
        for m in self.mutants:
            if m.name == name:
                return m
        raise KeyError(f"{self.chapter}: no mutant named {name!r}")

    def sample(self) -> list[Mutant | Alternative]:
        """A submission that changes every answer cell the catalogue knows: the first alternative of each cell that
        has one, the first mutant of each other cell. Graded both by the real command (as an example student) and
        in-process, it shows that the two agree on every kind of change at once."""
        entries: dict[str, Mutant | Alternative] = {}
        for alt in self.alternatives:
            entries.setdefault(alt.cell, alt)
        for m in self.mutants:
            entries.setdefault(m.cell, m)
        return list(entries.values())

    def apply(self, nb: NotebookNode, entries: list[Mutant | Alternative]) -> NotebookNode:
        """nb with the entries (mutants and alternatives) applied in turn."""
        for entry in entries:
            nb = apply_mutant(nb, entry) if isinstance(entry, Mutant) else apply_alternative(nb, entry)
        return nb


def load(chapter: str) -> Catalogue:
    """Load autograde/mutants/<chapter>.py."""
    path = CATALOGUES / f"{chapter}.py"
    if not path.exists():
        raise FileNotFoundError(f"no mutant catalogue for {chapter}: expected {path}")
    ns = runpy.run_path(str(path))
    return Catalogue(chapter, tuple(ns["MUTANTS"]), tuple(ns["ALTERNATIVES"]), tuple(ns["EXAMPLE_STUDENTS"]))


def filled_submission(source: NotebookNode, release: NotebookNode) -> NotebookNode:
    """The release notebook with every answer cell replaced by the source's solution (a perfect student)."""
    solutions = {nbk.grade_id(c): nbk.solution_code(c.source) for c in source.cells if nbk.is_solution(c)}
    out = nbk.copy_notebook(release)
    for cell in out.cells:
        gid = nbk.grade_id(cell)
        if nbk.is_solution(cell) and gid in solutions:
            cell.source = solutions[gid]
    return out


def _answer_cell(nb: NotebookNode, cell_id: str) -> NotebookNode:
    for cell in nb.cells:
        if nbk.is_solution(cell) and nbk.grade_id(cell) == cell_id:
            return cell
    raise KeyError(f"no answer cell with grade_id {cell_id!r}")


def apply_mutant(nb: NotebookNode, mutant: Mutant) -> NotebookNode:
    """A copy of a filled submission with the mutant applied; `old` must occur exactly once."""
    out = nbk.copy_notebook(nb)
    cell = _answer_cell(out, mutant.cell)
    count = cell.source.count(mutant.old)
    if count != 1:
        raise ValueError(
            f"mutant {mutant.name}: {mutant.old!r} occurs {count} times in cell {mutant.cell!r} "
            f"(expected exactly once); update the catalogue to match the source notebook"
        )
    cell.source = cell.source.replace(mutant.old, mutant.new)
    return out


def apply_alternative(nb: NotebookNode, alt: Alternative) -> NotebookNode:
    """A copy of a filled submission with one answer cell replaced by the alternative."""
    out = nbk.copy_notebook(nb)
    _answer_cell(out, alt.cell).source = alt.source
    return out
