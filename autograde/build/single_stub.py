"""An unfinished exercise never breaks the rest of the notebook: measured, one exercise at a time.

For each exercise of a chapter (the answer cells its test cells grade together), the release notebook is run
with every answer filled from the source except that exercise's cells, which keep their release stub, as a
student who skipped it would run it (visible tests only). Every cell must run, except:
- the exercise's own answer cells (a top-level stub raises NotImplementedError) and its own test cells;
- a demo cell that says in one line that it needs the exercise (course.checking.needs: NotAnsweredYet);
- a cell that needs the exercise by name: the stub itself raised, and the cell uses (as a name) what the
  exercise defines, or what another answer built on it defines (jvp on Dual): the student sees which.
A given cell that puts the exercise into the engine must use course.checking.answer_or_reference, so the
reference stands in for the stub; a test cell of another exercise must not depend on this one.
The filled notebook itself must run without any error.

It runs in-process and forked (autograde.build.forked): the notebook once, and each stubbed variant from its
first stubbed cell on.

Usage: python -m autograde.build.single_stub [CHAPTER ...]   (prints each exercise's cells that broke)
"""
from __future__ import annotations

import sys
import ast
from dataclasses import dataclass

from autograde import notebook as nbk
from autograde.build.forked import BASE, run_plan
from autograde.build import catalogue as mut
from autograde.build import visible
from autograde.notebook import defined_names, python_of
from autograde.paths import release_path, source_path

ALLOWED = ("NotAnsweredYet",)
"""Errors a cell other than the exercise's own may show: the one-line 'this cell needs exercise N'."""


@dataclass(frozen=True)
class Broken:
    """A cell that failed in the run where only `exercise` was left as its stub."""

    exercise: tuple[str, ...]
    cell: int
    """the code cell's index in the notebook's code cells"""
    grade_id: str | None
    error: str

    def __str__(self) -> str:
        where = f"code cell {self.cell}" + (f" ({self.grade_id})" if self.grade_id else "")
        return f"with {', '.join(self.exercise)} left as its stub, {where} fails: {self.error}"


def groups(chapter: str) -> list[tuple[str, ...]]:
    """The chapter's exercises: each distinct group of answer cells that test cells grade, in notebook order,
    and any answer cell no test grades, alone."""
    source = nbk.read(source_path(chapter))
    out: list[tuple[str, ...]] = []
    for group in nbk.exercises(source).values():
        if group and group not in out:
            out.append(group)
    covered = {g for group in out for g in group}
    out += [(nbk.grade_id(c),) for c in source.cells if nbk.is_solution(c) and nbk.grade_id(c) not in covered]
    return out


def _used_names(source: str) -> set[str]:
    """The names a cell's code reads (not attributes: loss.backward() does not name backward)."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def needing(cells: list[dict], group: tuple[str, ...], answer_ids: set[str]) -> set[str]:
    """The names that need the exercise: what its answer cells define, and what any answer cell that uses one
    of those names defines, and so on."""
    answers = [c for c in cells if c["grade_id"] in answer_ids and not c["test"]]
    names = {n for c in answers if c["grade_id"] in group for n in defined_names(c["source"])}
    grew = True
    while grew:
        grew = False
        for c in answers:
            defined = defined_names(c["source"])
            if defined - names and _used_names(c["source"]) & names:
                names |= defined
                grew = True
    return names


STUB = "stub:"
"""The prefix of a stub job's name (a run may also hold the visible run's mutant jobs)."""


def stub_jobs(chapter: str, cells: list[dict], only: list[tuple[str, ...]] | None = None) -> list[dict]:
    """One job per exercise: its answer cells back to their release stubs, run to the notebook's end."""
    stubs = {nbk.grade_id(c): c.source for c in nbk.read(release_path(chapter)).cells if nbk.is_solution(c)}
    index = {c["grade_id"]: i for i, c in enumerate(cells) if c["grade_id"] in stubs and not c["test"]}
    return [{"name": STUB + "+".join(group), "changes": {str(index[g]): stubs[g] for g in group}}
            for group in (only or groups(chapter))]


def plan(chapter: str, only: list[tuple[str, ...]] | None = None) -> dict:
    """The visible run's plan (the filled release as a student runs it) with the stub jobs instead of mutants."""
    job = visible.plan(chapter, ())
    return {**job, "jobs": stub_jobs(chapter, job["cells"], only)}


def judge(chapter: str, cells: list[dict], jobs: list[dict], found: dict[str, dict]
          ) -> dict[tuple[str, ...], list[Broken]]:
    """Per exercise (and () for the filled notebook), the cells that broke."""
    source = nbk.read(source_path(chapter))
    graded = nbk.exercises(source)
    answer_ids = {nbk.grade_id(c) for c in source.cells if nbk.is_solution(c)}
    out: dict[tuple[str, ...], list[Broken]] = {}
    for spec in [{"name": BASE}, *jobs]:
        group = () if spec["name"] == BASE else tuple(spec["name"][len(STUB):].split("+"))
        result = found[spec["name"]]
        broken: list[Broken] = []
        if result.get("died"):
            broken.append(Broken(group, -1, None, f"the run died: {result['died']}"))
        own_tests = {t for t, answers in graded.items() if set(answers) & set(group)}
        names = needing(cells, group, answer_ids)
        failed = {int(i): e for i, e in result.get("errors", {}).items()}
        failed |= {next(i for i, c in enumerate(cells) if c["grade_id"] == gid): record.get("error") or "raised"
                   for gid, record in result.get("tests", {}).items() if record["raised"]}
        for i, error in sorted(failed.items()):
            cell = cells[i]
            if (cell["grade_id"] in group or cell["grade_id"] in own_tests or error.split(":")[0] in ALLOWED
                    or error.startswith("stub ") and _used_names(cell["source"]) & names):
                continue
            broken.append(Broken(group, i, cell["grade_id"], error))
        out[group] = broken
    return out


def measure(chapter: str, only: list[tuple[str, ...]] | None = None) -> dict[tuple[str, ...], list[Broken]]:
    """Per exercise (and () for the filled notebook), the cells that broke."""
    job = plan(chapter, only)
    return judge(chapter, job["cells"], job["jobs"], run_plan(job))


def measure_with_visible(chapter: str) -> tuple[dict[tuple[str, ...], list[Broken]], dict[str, visible.Outcome]]:
    """This measurement and the visible one (autograde.build.visible) from one run of the notebook: the same
    filled release, its mutants and its stubbed exercises forked from it."""
    job = visible.plan(chapter, mut.load(chapter).mutants)
    mutants = list(job["jobs"])
    stubs = stub_jobs(chapter, job["cells"])
    found = run_plan({**job, "jobs": mutants + stubs})
    return judge(chapter, job["cells"], stubs, found), visible.outcomes(mutants, found)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from course import CHAPTERS

    bad = 0
    for chapter in argv or CHAPTERS:
        got = measure(chapter)
        broken = [b for found in got.values() for b in found]
        print(f"{chapter}: {len(got) - 1} exercises left as stubs one at a time; "
              f"{sum(1 for g, f in got.items() if g and not f)} break nothing else")
        for b in broken:
            print(f"  {b}")
        bad += len(broken)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
