"""What the grader would give each catalogue case of a chapter, measured in forked processes instead of kernels.

The grader (autograde/grade: nbgrader and autograde.grader.steps) runs a submission's cells in a kernel, each
test cell in its source form (hidden tests included) between the harness's before_test and after_test calls,
and scores a test cell 0 when it raised, wrote to stderr anything but warnings (IgnorePattern), or an incident
costs it: graded code that is not the student's (harness report "foreign"), torch inside graded code ("torch"),
or an import of this chapter's reference (harness report "blocked": the exercise of the cell that imported it).

`measure` does the same in-process: one worker per chapter (autograde.build.forked) runs the filled notebook
once with the same harness, plans and blocked imports, and each case's changed cells in a child forked before
the first of them, to the end of the notebook. What it cannot reproduce is what only a kernel has (the sandbox,
resource limits, a kernel that dies and is replaced); the suite grades the bundled example students and a sample
of cases per chapter through the real command and checks that both agree (autograde/tests/test_verdicts.py), and
`make test-exhaustive` grades every case through nbgrader.

Usage: python -m autograde.build.verdicts [CHAPTER ...]   (prints each case's lost test cells and the time)
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.build import catalogue as mut
from autograde.build.forked import BASE, run_plan
from autograde.grader.incidents import exercise_tests
from autograde.grader.steps import WARNING_PATTERN
from autograde.grader.test_plans import blocked_references, plans
from autograde.paths import release_path, source_path

CELL_TIMEOUT = 60  # the course's limit per cell (nbgrader_config.py)


@dataclass(frozen=True)
class Verdict:
    """The test cells one case loses, and why each."""

    case: str
    lost: dict[str, str]
    """grade_id -> why it scores 0 (raised, stderr, foreign code, torch, reference import)"""
    died: str = ""
    seconds: float = 0.0


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


def case_sources(chapter: str, nb: NotebookNode, cases: dict[str, list]) -> dict[str, dict[str, str]]:
    """case -> {answer cell grade_id: its source} for each case, a list of mutants and alternatives applied in turn."""
    out = {}
    for name, entries in cases.items():
        changed = nb
        for entry in entries:
            changed = mut.apply_mutant(changed, entry) if isinstance(entry, mut.Mutant) else \
                mut.apply_alternative(changed, entry)
        out[name] = {nbk.grade_id(c): c.source for c in changed.cells
                     if nbk.is_solution(c) and c.source != _answer(nb, nbk.grade_id(c))}
    return out


def _answer(nb: NotebookNode, gid: str) -> str:
    return next(c.source for c in nb.cells if nbk.grade_id(c) == gid and nbk.is_solution(c))


def measure(chapter: str, cases: dict[str, list], parallel: int = 2) -> dict[str, Verdict]:
    """Grade each case (name -> mutants/alternatives applied together) in-process; BASE is the unchanged notebook."""
    nb = graded_notebook(chapter)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    index = {nbk.grade_id(c): i for i, c in enumerate(code) if nbk.grade_id(c)}
    test_plans = plans(chapter)
    cells = [{"source": c.source, "grade_id": nbk.grade_id(c), "test": nbk.is_test(c),
              "plan": test_plans[nbk.grade_id(c)].to_kernel() if nbk.is_test(c) else None} for c in code]
    jobs = [{"name": name, "changes": {str(index[gid]): src for gid, src in changed.items()}}
            for name, changed in case_sources(chapter, nb, cases).items()]
    t0 = time.perf_counter()
    found = run_plan({"cells": cells, "jobs": jobs, "harness": True, "blocked": list(blocked_references(chapter)),
                      "cell_timeout": CELL_TIMEOUT, "child_timeout": 900, "parallel": parallel})
    owners = exercise_tests(nbk.NotebookNode({**nb, "cells": code}))
    base = found[BASE]
    out = {name: _verdict(name, result, base, owners) for name, result in found.items()}
    out[BASE] = Verdict(BASE, out[BASE].lost, out[BASE].died, round(time.perf_counter() - t0, 1))
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
            lost[gid] = "raised"
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
    return Verdict(name, lost, result.get("died", ""), float(result.get("seconds", 0.0)))


def catalogue_cases(chapter: str) -> dict[str, list]:
    """Every mutant and alternative of a chapter's catalogue, each alone."""
    cat = mut.load(chapter)
    return {**{f"mutant_{m.name}": [m] for m in cat.mutants}, **{f"alt_{a.name}": [a] for a in cat.alternatives}}


def main(argv: list[str] | None = None) -> int:
    from course import CHAPTERS

    for chapter in (argv if argv is not None else sys.argv[1:]) or CHAPTERS:
        got = measure(chapter, catalogue_cases(chapter))
        print(f"{chapter}: {len(got) - 1} cases in {got[BASE].seconds:.0f} s")
        for name, v in sorted(got.items()):
            print(f"  {name}: {v.seconds:.1f} s, loses {sorted(v.lost) or 'nothing'}{' DIED ' + v.died if v.died else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
