"""What the grader would give each catalogue case of a chapter, measured in forked processes instead of kernels.

The grader (autograde/grade: nbgrader and autograde.grader.steps) runs a submission's cells in a kernel, each
test cell in its source form (hidden tests included) between the harness's before_test and after_test calls,
and scores a test cell 0 when it raised, wrote to stderr anything but warnings (IgnorePattern), or an incident
costs it: graded code that is not the student's (harness report "foreign"), torch inside graded code ("torch"),
or an import of this chapter's reference (harness report "blocked": the exercise of the cell that imported it).

`measure` does the same in-process: one worker per chapter (autograde.authoring.forked) runs the filled notebook
once with the same harness, plans and blocked imports, and each case's changed cells in a child forked before
the first of them, to the end of the notebook. What it cannot reproduce is what only a kernel has (the sandbox,
resource limits, a kernel that dies and is replaced); the demo grades every chapter's example students through
the real command, among them one that changes every answer cell (Catalogue.sample), and the suite checks that
both agree cell by cell (autograde/tests/test_verdicts.py); `make test-exhaustive` grades every case through
nbgrader.

Usage: python -m autograde.authoring.verdicts [--alone] [CHAPTER ...]   (each case's lost test cells and its run's time;
--alone: every case in a run of its own, no sharing)
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.authoring import catalogue as mut
from autograde.authoring.forked import BASE, run_plan
from autograde.notebook import exercise_tests
from autograde.grader.records.limits import LIMITS
from autograde.authoring.demo_cells import demo_ids
from autograde.grader.steps import WARNING_PATTERN
from autograde.grader.test_plans import blocked_references, plans
from autograde.paths import example_path, release_path, source_path

CELL_TIMEOUT = LIMITS.cell_seconds  # the course's limit per cell


@dataclass(frozen=True)
class Verdict:
    """The test cells one case loses, and why each."""

    case: str
    lost: dict[str, str]
    """grade_id -> why it scores 0 (raised, stderr, foreign code, torch, reference import)"""
    died: str = ""
    seconds: float = 0.0
    raised_cells: tuple[int, ...] = ()
    """code cells other than test cells that raised (by position among the notebook's code cells)"""


def graded_notebook(chapter: str) -> NotebookNode:
    """The notebook a perfect submission becomes when graded: answers filled in, test cells in their source form."""
    source = nbk.read(source_path(chapter))
    release = nbk.read(release_path(chapter))
    release.metadata.pop("course", None)
    filled = mut.filled_submission(source, release)
    tests = {nbk.grade_id(c): c.source for c in source.cells if nbk.is_test(c)}
    for cell in filled.cells:
        if nbk.is_test(cell):
            cell.source = tests[nbk.grade_id(cell)]
    return filled


def case_sources(nb: NotebookNode, cases: dict[str, list]) -> dict[str, dict[str, str]]:
    """case -> {answer cell grade_id: its source} for the answer cells a case changes. A case is a list of
    mutants and alternatives applied in turn, or of one notebook (a submission) whose answer cells are taken."""
    out = {}
    for name, entries in cases.items():
        changed = nb
        for entry in entries:
            if isinstance(entry, (mut.Mutant, mut.Alternative)):
                changed = mut.apply_mutant(changed, entry) if isinstance(entry, mut.Mutant) else \
                    mut.apply_alternative(changed, entry)
            else:  # a handed-in notebook: its answer cells, by grade_id
                theirs = {nbk.grade_id(c): c.source for c in entry.cells if nbk.is_solution(c)}
                changed = nbk.copy_notebook(changed)
                for cell in changed.cells:
                    if nbk.is_solution(cell) and nbk.grade_id(cell) in theirs:
                        cell.source = theirs[nbk.grade_id(cell)]
        out[name] = {nbk.grade_id(c): c.source for c in changed.cells
                     if nbk.is_solution(c) and c.source != _answer(nb, nbk.grade_id(c))}
    return out


def _answer(nb: NotebookNode, gid: str) -> str:
    return next(c.source for c in nb.cells if nbk.grade_id(c) == gid and nbk.is_solution(c))


Region = tuple[str, int, int]
"""(answer cell, first line, last line) a case changes; an alternative or a notebook changes its whole cell."""
WHOLE = 10 ** 9


def regions(nb: NotebookNode, entries: list) -> list[Region]:
    """The lines of answer cells a case changes: a mutant its `old` text (1 line of margin each side)."""
    out = []
    for entry in entries:
        if isinstance(entry, mut.Mutant):
            cell = next(c for c in nb.cells if nbk.grade_id(c) == entry.cell and nbk.is_solution(c))
            first = cell.source.count("\n", 0, cell.source.index(entry.old))
            out.append((entry.cell, first - 1, first + entry.old.count("\n") + 1))
        elif isinstance(entry, mut.Alternative):
            out.append((entry.cell, -WHOLE, WHOLE))
        else:
            out += [(nbk.grade_id(c), -WHOLE, WHOLE) for c in entry.cells if nbk.is_solution(c)]
    return out


def share(items: list[tuple[str, list[Region], frozenset[str]]],
          exact: dict[str, frozenset[str]] | None = None) -> list[list[str]]:
    """Group (name, regions changed, test cells it must lose) so that no two in a group change overlapping lines
    of an answer cell, and no two lose the same test cell: each group runs as one submission, in which every
    test cell is claimed by at most one case and every unclaimed one must keep full marks.

    With `exact` (name -> the test cells a run of its own grades exactly: the in-process verdicts' own runs), two
    cases may claim the same cell where the own runs of both grade it: such a cell is proven for each of them
    there, and the shared run only has to find spills into cells no case of it claims. In practice this lets
    the mutants of one exercise that change different lines share a run."""
    exact = exact or {}
    groups: list[tuple[list[str], dict[str, list[str]], list[Region]]] = []

    def fits(group, name: str, changed: list[Region], lost: frozenset[str]) -> bool:
        overlap = lost & group[1].keys()
        if any(not (c in exact.get(name, ()) and all(c in exact.get(m, ()) for m in group[1][c])) for c in overlap):
            return False
        return all(c != c2 or l1 < f2 or f1 > l2 for c, f1, l1 in changed for c2, f2, l2 in group[2])

    for name, changed, lost in items:
        group = next((g for g in groups if fits(g, name, changed, lost)), None)
        if group is None:
            group = ([], {}, [])
            groups.append(group)
        group[0].append(name)
        for cell in lost:
            group[1].setdefault(cell, []).append(name)
        group[2].extend(changed)
    return [names for names, _, _ in groups]


def measure(chapter: str, cases: dict[str, list], parallel: int = 2,
            claims: dict[str, set[str]] | None = None) -> dict[str, Verdict]:
    """Grade each case (name -> mutants/alternatives applied together, or one notebook) in-process; BASE is the
    unchanged notebook.

    Without claims every case runs alone, to the end of the notebook. With claims (case -> the test cells it must
    lose) a claimed case is graded in two runs that together cost a fraction of that:
    - alone, from its first changed cell to its own exercises' last test cell: every cell it loses there, exactly
      (no other case can hide a loss, as two mutants of one exercise in one shared submission can);
    - shared with cases that change other lines (`share`), to the end of the notebook: a cell that fails there
      and that no case of the run claims is a spill, and counts against every case of it. Two cases may claim
      the same cell only where each one's own run grades it (two mutants of one exercise), so no case's loss in
      its own exercise is left to the shared run.
    Unclaimed cases (example students) run alone to the end."""
    nb = graded_notebook(chapter)
    runs: dict[str, tuple[list, tuple[str, ...]]] = {}  # run -> (entries, test cells to stop after, or ())
    members: dict[str, list[str]] = {}
    claims = claims or {}
    tests_of = nbk.tests_of(nb)
    for n in cases:
        if n in claims:
            own = tuple(dict.fromkeys(g for cell, _, _ in regions(nb, cases[n]) for g in tests_of.get(cell, ())))
            runs[f"own:{n}"] = (cases[n], own)
        else:
            runs[n], members[n] = (cases[n], ()), [n]
    groups = share([(n, regions(nb, cases[n]), frozenset(claims[n])) for n in cases if n in claims],
                   exact={n: frozenset(runs[f"own:{n}"][1]) for n in cases if n in claims})
    for k, group in enumerate(groups):
        runs[f"shared_{k}"] = ([e for n in group for e in cases[n]], ())
        members[f"shared_{k}"] = group
    found = _measure_runs(chapter, nb, runs, parallel)
    out = {BASE: found[BASE]}
    for run, names in members.items():
        verdict = found[run]
        if run in cases:  # alone to the end
            out[run] = verdict
            continue
        claimed = {g for n in names for g in claims[n]}
        spilled = {g: f"{why} (in a run shared with {', '.join(names)})" for g, why in verdict.lost.items()
                   if g not in claimed}
        for n in names:
            alone = found[f"own:{n}"]
            out[n] = Verdict(n, {**spilled, **alone.lost}, alone.died or verdict.died, alone.seconds + verdict.seconds)
        out[run] = verdict  # the shared run itself, for a report
    return out


def measure_until(chapter: str, runs: dict[str, tuple[list, tuple[str, ...]]], parallel: int = 2) -> dict[str, Verdict]:
    """Grade each run (name -> (mutants/alternatives applied together, the test cells to stop after)) in-process,
    each alone from its first changed cell until every one of those test cells has run; BASE is the unchanged
    notebook, run to its end (autograde.mutation grades its generated mutants this way)."""
    return _measure_runs(chapter, graded_notebook(chapter), runs, parallel)


def _measure_runs(chapter: str, nb: NotebookNode, runs: dict[str, tuple[list, tuple[str, ...]]],
                  parallel: int) -> dict[str, Verdict]:
    demos = demo_ids(chapter)  # shows, and nothing later reads
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip() and c.get("id") not in demos]
    index = {nbk.grade_id(c): i for i, c in enumerate(code) if nbk.grade_id(c)}
    test_plans = plans(chapter)
    cells = [{"source": c.source, "grade_id": nbk.grade_id(c), "test": nbk.is_test(c),
              "plan": test_plans[nbk.grade_id(c)].to_kernel() if nbk.is_test(c) else None} for c in code]
    changed = case_sources(nb, {name: entries for name, (entries, _) in runs.items()})
    jobs = [{"name": name, "changes": {str(index[gid]): src for gid, src in changed[name].items()},
             "stop_after": list(runs[name][1])} for name in runs]
    t0 = time.perf_counter()
    found = run_plan({"cells": cells, "jobs": jobs, "harness": True, "blocked": list(blocked_references(chapter)),
                      "cell_timeout": CELL_TIMEOUT, "child_timeout": LIMITS.notebook_seconds, "parallel": parallel})
    owners = exercise_tests(nbk.NotebookNode({**nb, "cells": code}))
    base = found[BASE]
    out = {name: _verdict(name, result, base, owners) for name, result in found.items()}
    out[BASE] = Verdict(BASE, out[BASE].lost, out[BASE].died, round(time.perf_counter() - t0, 1),
                        out[BASE].raised_cells)
    return out


def _verdict(name: str, result: dict, base: dict, owners: dict[int, list[str]]) -> Verdict:
    tests = {**base["tests"], **result["tests"]}
    counts = {**base["counts"], **result["counts"]}  # a child's counts after its start replace the parent's
    lost: dict[str, str] = {}
    missing = [g for g in base["tests"] if g not in result["tests"]] if result is not base else []
    for gid, record in tests.items():
        if gid in missing and result.get("died"):
            lost[gid] = f"not run ({result['died']})"
        elif record.get("raised"):
            lost[gid] = "raised" + (f": {record['error']}" if record.get("error") else "")
        elif record.get("stderr") and not re.search(WARNING_PATTERN, record["stderr"]):
            lost[gid] = "stderr: " + record["stderr"].strip()[:200]
        elif (record.get("before") or {}).get("foreign"):
            lost[gid] = "foreign: " + ", ".join(record["before"]["foreign"])
        elif (record.get("after") or {}).get("torch"):
            lost[gid] = "torch: " + ", ".join(record["after"]["torch"][:3])
        elif (record.get("before") or {}).get("error") or (record.get("after") or {}).get("error"):
            lost[gid] = "harness: " + str((record.get("before") or {}).get("error") or record["after"]["error"])
    for record in tests.values():  # an import of the blocked reference costs the exercise of the cell that made it
        for module, count in (record.get("before") or {}).get("blocked", []):
            cell = counts.get(str(count))
            for gid in owners.get(cell, []) if cell is not None else []:
                lost.setdefault(gid, f"imported {module}")
    return Verdict(name, lost, result.get("died", ""), float(result.get("seconds", 0.0)),
                   tuple(result.get("raised_cells", ())))


def catalogue_claims(chapter: str) -> dict[str, set[str]]:
    """What each catalogue case must lose: a mutant its declared cells, an alternative nothing."""
    cat = mut.load(chapter)
    return {**{f"mutant_{m.name}": set(m.loses) for m in cat.mutants}, **{f"alt_{a.name}": set() for a in cat.alternatives}}


def catalogue_cases(chapter: str) -> dict[str, list]:
    """Every mutant and alternative of a chapter's catalogue, each alone, and the bundled example students."""
    cat = mut.load(chapter)
    return {**{f"mutant_{m.name}": [m] for m in cat.mutants}, **{f"alt_{a.name}": [a] for a in cat.alternatives},
            **{f"example_{ex.student}": [nbk.read(example_path(ex.student, chapter))] for ex in cat.examples}}


def main(argv: list[str] | None = None) -> int:
    from course import CHAPTERS

    args = argv if argv is not None else sys.argv[1:]
    alone = "--alone" in args
    for chapter in [a for a in args if not a.startswith("--")] or CHAPTERS:
        got = measure(chapter, catalogue_cases(chapter), claims=None if alone else catalogue_claims(chapter))
        print(f"{chapter}: {len(got) - 1} cases in {got[BASE].seconds:.0f} s")
        for name, v in sorted(got.items()):
            print(f"  {name}: {v.seconds:.1f} s, loses {sorted(v.lost) or 'nothing'}{' DIED ' + v.died if v.died else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
