"""Which catalogued mutants the visible tests catch, measured as a student would meet them.

A student runs their notebook top to bottom in JupyterLab: the release's test cells (hidden tests removed)
after their own answers. For each mutant this runs the release, every answer filled from the source except the
mutant's cell, and records which visible test cells of the mutant's exercise fail (raise).

It is cheap because the notebook is run once per chapter (autograde.authoring.forked): the worker executes the
cells in an IPython shell and, just before an answer cell some mutants change, forks once per mutant; the child
runs the mutated cell and the cells after it up to the exercise's last test cell, reports, and exits. A cell
that computes past the course's 60 s (of CPU time: autograde.authoring.forked.WAITING_FACTOR) raises there, as an
interrupted cell would: the mutant is caught.

Usage: python -m autograde.authoring.visible [CHAPTER ...]   (prints the table of records against measurements)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from autograde import notebook as nbk
from autograde.authoring import catalogue as mut
from autograde.authoring.demo_cells import demo_ids
from autograde.authoring.forked import run_plan
from autograde.grader.records.limits import LIMITS
from autograde.paths import release_path, source_path

CELL_TIMEOUT = LIMITS.cell_seconds  # the course's limit per cell (an endless loop is a caught mutant, reported as such)


@dataclass(frozen=True)
class Outcome:
    """What a student running the notebook with one mutant sees in the visible tests of its exercise."""

    mutant: str
    failed: tuple[str, ...]
    """the exercise's test cells whose visible part fails (raises), in notebook order"""
    other_failed: tuple[str, ...] = ()
    """visible test cells of other exercises, run before the exercise's last test, that fail too"""

    @property
    def caught(self) -> bool:
        return bool(self.failed)


def filled_release(chapter: str) -> nbk.NotebookNode:
    """The release with every answer cell filled from the source: the visible tests only."""
    release = nbk.read(release_path(chapter))
    return mut.filled_submission(nbk.read(source_path(chapter)), release)


def plan(chapter: str, mutants: tuple[mut.Mutant, ...]) -> dict:
    """The worker's input: the filled release's code cells and, per mutant, its cell's new source and tests."""
    nb = filled_release(chapter)
    tests_of = nbk.tests_of(nbk.read(source_path(chapter)))
    code = [c for c in nb.cells if c.cell_type == "code"]
    demos = demo_ids(chapter)
    cells = [{"source": c.source, "grade_id": nbk.grade_id(c), "test": nbk.is_test(c), "demo": c.get("id") in demos}
             for c in code]
    index = {nbk.grade_id(c): i for i, c in enumerate(code) if nbk.is_solution(c)}
    jobs = []
    for m in mutants:
        if m.cell not in index:
            raise ValueError(f"{chapter}: mutant {m.name} changes {m.cell}, an answer cell the notebook does not have")
        mutated = mut.apply_mutant(nb, m)
        source = next(c.source for c in mutated.cells if nbk.grade_id(c) == m.cell and nbk.is_solution(c))
        tests = tests_of.get(m.cell, ())
        if not tests:
            raise ValueError(f"{chapter}: mutant {m.name} changes {m.cell}, which no test cell grades")
        jobs.append({"name": m.name, "changes": {str(index[m.cell]): source}, "stop_after": list(tests)})
    return {"cells": cells, "jobs": jobs, "harness": False, "cell_timeout": CELL_TIMEOUT, "parallel": 2}


def measure(chapter: str, mutants: tuple[mut.Mutant, ...] | None = None) -> dict[str, Outcome]:
    """Run the worker for a chapter's mutants (default: the whole catalogue)."""
    mutants = mut.load(chapter).mutants if mutants is None else mutants
    job = plan(chapter, mutants)
    return outcomes(job["jobs"], run_plan(job))


def outcomes(jobs: list[dict], found: dict[str, dict]) -> dict[str, Outcome]:
    """What the worker found for these mutant jobs (see plan), as each mutant's Outcome."""
    out = {}
    for spec in jobs:
        result = found[spec["name"]]
        own = set(spec["stop_after"])
        raised = [g for g, r in result["tests"].items() if r["raised"]]
        if result.get("died"):  # the child died (a crash): the student sees the notebook die in this exercise
            raised += [g for g in spec["stop_after"] if g not in raised]
        out[spec["name"]] = Outcome(spec["name"], tuple(g for g in raised if g in own),
                                    tuple(g for g in raised if g not in own))
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from course import CHAPTERS

    for chapter in argv or CHAPTERS:
        cat = mut.load(chapter)
        got = measure(chapter)
        graded = [m for m in cat.mutants if not m.cell.startswith("concept_")]
        caught = sum(got[m.name].caught for m in graded)
        print(f"{chapter}: the visible tests catch {caught} of {len(graded)} mutants (concept checks excluded)")
        for m in cat.mutants:
            o = got[m.name]
            flag = "" if o.caught == m.visible else "   <-- the catalogue says " + ("visible" if m.visible else "hidden")
            extra = f" (also fails: {', '.join(o.other_failed)})" if o.other_failed else ""
            print(f"  {'visible' if o.caught else 'hidden '}  {m.name}{extra}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
