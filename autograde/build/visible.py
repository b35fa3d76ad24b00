"""Which catalogued mutants the visible tests catch, measured as a student would meet them.

A student runs their notebook top to bottom in JupyterLab: the release's test
cells (hidden tests removed) after their own answers. For each mutant this runs
the release, every answer filled from the source except the mutant's cell, and
records which visible test cells of the mutant's exercise fail.

It is cheap because the notebook is run once per chapter: one worker process
executes the cells in an IPython shell and, just before an answer cell some
mutants change, forks once per mutant; the child runs the mutated cell and the
cells after it up to the exercise's last test cell, reports, and exits.

Usage: python -m autograde.build.visible [CHAPTER ...]   (prints the table of records against measurements)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograde import notebook as nbk
from autograde.build import catalogue as mut
from autograde.paths import release_path, source_path

CHILD_TIMEOUT = 120  # seconds for one mutant's cells (an endless loop is a caught mutant, reported as such)


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
    cells = [{"source": c.source, "grade_id": nbk.grade_id(c), "test": nbk.is_test(c)}
             for c in nb.cells if c.cell_type == "code"]
    jobs = []
    for m in mutants:
        mutated = mut.apply_mutant(nb, m)
        source = next(c.source for c in mutated.cells if nbk.grade_id(c) == m.cell and nbk.is_solution(c))
        tests = tests_of.get(m.cell, ())
        if not tests:
            raise ValueError(f"{chapter}: mutant {m.name} changes {m.cell}, which no test cell grades")
        jobs.append({"name": m.name, "cell": m.cell, "source": source, "tests": list(tests)})
    return {"cells": cells, "mutants": jobs}


def measure(chapter: str, mutants: tuple[mut.Mutant, ...] | None = None) -> dict[str, Outcome]:
    """Run the worker for a chapter's mutants (default: the whole catalogue)."""
    mutants = mut.load(chapter).mutants if mutants is None else mutants
    with tempfile.TemporaryDirectory(prefix="visible-") as tmp:
        job = Path(tmp) / "plan.json"
        job.write_text(json.dumps(plan(chapter, mutants)))
        env = dict(os.environ, MPLBACKEND="agg", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
        proc = subprocess.run([sys.executable, "-m", "autograde.build.visible", "--worker", str(job)], cwd=tmp,
                              env=env, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"{chapter}: the visible-test worker failed:\n{proc.stderr[-3000:]}")
        found = json.loads(Path(tmp, "result.json").read_text())
    return {name: Outcome(name, tuple(r["failed"]), tuple(r["other_failed"])) for name, r in found.items()}


# -- the worker (runs in its own process) ---------------------------------------------------------
def _run_cells(shell, cells: list[dict], start_source: str, start: int, stop_after: set[str]) -> dict:
    """Run start_source in place of cells[start], then the cells after it until every stop_after test has run."""
    failed, others, pending = [], [], set(stop_after)
    for i in range(start, len(cells)):
        cell = cells[i]
        source = start_source if i == start else cell["source"]
        ok = shell.run_cell(source, store_history=False, silent=False).success
        if cell["test"]:
            if not ok:
                (failed if cell["grade_id"] in stop_after else others).append(cell["grade_id"])
            pending.discard(cell["grade_id"])
            if not pending:
                break
    return {"failed": failed, "other_failed": others}


def _fork_and_run(shell, cells, index, job, out_dir: Path) -> dict:
    result_file = out_dir / f"{job['name']}.json"
    pid = os.fork()
    if pid == 0:  # the child: run the mutant, write what failed, leave without cleanup
        code = 1
        try:
            import signal

            signal.alarm(CHILD_TIMEOUT)
            result_file.write_text(json.dumps(_run_cells(shell, cells, job["source"], index, set(job["tests"]))))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if result_file.exists():
        return json.loads(result_file.read_text())
    # killed by the alarm or a crash: the student sees the notebook hang or die in this exercise
    return {"failed": list(job["tests"]), "other_failed": [], "note": f"child ended with status {status}"}


def worker(plan_path: Path) -> None:
    """Execute the cells once, forking before each answer cell that mutants change."""
    from IPython.core.interactiveshell import InteractiveShell

    data = json.loads(plan_path.read_text())
    cells, jobs = data["cells"], data["mutants"]
    by_cell: dict[str, list[dict]] = {}
    for job in jobs:
        by_cell.setdefault(job["cell"], []).append(job)
    out_dir = plan_path.parent
    devnull = open(os.devnull, "w")
    real_stdout = sys.stdout
    sys.stdout = sys.stderr = devnull
    shell = InteractiveShell.instance()
    results: dict[str, dict] = {}
    for index, cell in enumerate(cells):
        for job in by_cell.get(cell["grade_id"] or "", []):
            sys.stdout.flush()
            results[job["name"]] = _fork_and_run(shell, cells, index, job, out_dir)
        shell.run_cell(cell["source"], store_history=False, silent=False)
    missing = [j["name"] for j in jobs if j["name"] not in results]
    if missing:
        sys.stdout = real_stdout
        raise SystemExit(f"mutants of answer cells the notebook does not have: {missing}")
    (out_dir / "result.json").write_text(json.dumps(results))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker(Path(argv[1]))
        return 0
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
