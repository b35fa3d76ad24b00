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

It runs in-process and forked (autograde.authoring.forked): the notebook once, and each stubbed variant from its
first stubbed cell on, to the end; except an exercise whose answer cells only bind literals to names (a concept
check: answer_bf16 = "c") that no later cell reads, by name or through the namespace (globals(), eval, magics):
its stub, which binds nothing, leaves every later cell as the filled run left it, so its run stops after its own
test cells and the rest is the filled run's (which must run clean).

Demo cells (course.demo: they only show something, and no later cell reads what they bind; see
autograde.authoring.demo_cells) hold most of a chapter's time: a training run drawn as a curve, a throughput
against torch. `make test` runs each stubbed variant without them (demo_cells=False) and the filled notebook
with them; `make test-exhaustive` and this module's command run every variant with them too.

Usage: python -m autograde.authoring.single_stub [CHAPTER ...]   (prints each exercise's cells that broke)
"""
from __future__ import annotations

import sys
import ast
from dataclasses import dataclass

from autograde import notebook as nbk
from autograde.authoring.forked import BASE, run_plan
from autograde.authoring import catalogue as mut
from autograde.authoring import visible
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


NAMESPACE_READS = {"globals", "locals", "vars", "eval", "exec", "dir", "get_ipython", "__import__", "__main__",
                   "__builtins__"}
"""Names through which a cell can read a variable without naming it (IPython magics become get_ipython calls)."""
NAMESPACE_ATTRIBUTES = {"modules", "user_ns", "f_globals", "f_locals", "last_value", "last_exc", "last_traceback",
                        "last_type"}
"""Attributes that lead there (sys.modules["__main__"], a frame's globals, the error a stub left in sys)."""


def literal_bindings(source: str) -> set[str] | None:
    """The names an answer cell binds when all it does is assign literals to plain names (a concept check's
    answer), else None."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return None
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                return None
            try:
                ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
            names |= {t.id for t in targets}
        elif not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            return None
    return names


def reads_namespace(source: str) -> bool:
    """Whether a cell may read variables without naming them (globals(), eval, a magic, sys.modules, ...)."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return True
    return any(isinstance(n, ast.Name) and n.id in NAMESPACE_READS
               or isinstance(n, ast.Attribute) and n.attr in NAMESPACE_ATTRIBUTES for n in ast.walk(tree))


def unread_after(cells: list[dict], indices: list[int], own_tests: set[str]) -> bool:
    """Whether the answer cells at these indices only bind literals that no later cell but their own test cells
    reads (by name, or through the namespace), nor what those test cells bind (with the stub they stop early)."""
    names: set[str] = set()
    for i in indices:
        bound = literal_bindings(cells[i]["source"])
        if bound is None:
            return False
        names |= bound
    tests = [c for c in cells[max(indices) + 1:] if c["test"] and c["grade_id"] in own_tests]
    names |= {n for c in tests for n in defined_names(c["source"])}
    later = [c for c in cells[max(indices) + 1:] if not (c["test"] and c["grade_id"] in own_tests)]
    return not any(_used_names(c["source"]) & names or reads_namespace(c["source"]) for c in later)


STUB = "stub:"
"""The prefix of a stub job's name (a run may also hold the visible run's mutant jobs)."""


def stub_jobs(chapter: str, cells: list[dict], only: list[tuple[str, ...]] | None = None,
              demo_cells: bool = True) -> list[dict]:
    """One job per exercise: its answer cells back to their release stubs, run to the notebook's end (or to its
    own last test cell, where the rest cannot differ from the filled run: see unread_after); without demo_cells,
    leaving the demo cells out."""
    stubs = {nbk.grade_id(c): c.source for c in nbk.read(release_path(chapter)).cells if nbk.is_solution(c)}
    index = {c["grade_id"]: i for i, c in enumerate(cells) if c["grade_id"] in stubs and not c["test"]}
    tests_of = nbk.tests_of(nbk.read(source_path(chapter)))
    skip = [] if demo_cells else [i for i, c in enumerate(cells) if c.get("demo")]
    jobs = []
    for group in only or groups(chapter):
        own = [t for g in group for t in tests_of.get(g, ())]
        job = {"name": STUB + "+".join(group), "changes": {str(index[g]): stubs[g] for g in group}}
        if own and unread_after(cells, [index[g] for g in group], set(own)):
            job["stop_after"] = own
        if skip:
            job["skip"] = skip
        jobs.append(job)
    return jobs


def plan(chapter: str, only: list[tuple[str, ...]] | None = None, demo_cells: bool = True) -> dict:
    """The visible run's plan (the filled release as a student runs it) with the stub jobs instead of mutants."""
    job = visible.plan(chapter, ())
    return {**job, "jobs": stub_jobs(chapter, job["cells"], only, demo_cells)}


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


def measure(chapter: str, only: list[tuple[str, ...]] | None = None,
            demo_cells: bool = True) -> dict[tuple[str, ...], list[Broken]]:
    """Per exercise (and () for the filled notebook), the cells that broke."""
    job = plan(chapter, only, demo_cells)
    return judge(chapter, job["cells"], job["jobs"], run_plan(job))


def measure_with_visible(chapter: str, demo_cells: bool = True
                         ) -> tuple[dict[tuple[str, ...], list[Broken]], dict[str, visible.Outcome]]:
    """This measurement and the visible one (autograde.authoring.visible) from one run of the notebook: the same
    filled release, its mutants and its stubbed exercises forked from it (without demo_cells, the stubbed runs
    leave the demo cells out; the filled run keeps them)."""
    job = visible.plan(chapter, mut.load(chapter).mutants)
    mutants = list(job["jobs"])
    stubs = stub_jobs(chapter, job["cells"], demo_cells=demo_cells)
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
