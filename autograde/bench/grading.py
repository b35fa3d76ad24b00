"""Throughput of the grading command: students per minute with 1 and 2 jobs, and its cost over bare execution.

    .venv/bin/python -m autograde.bench.grading [--students N] [--chapter CH] [--jobs 1 2]

N submissions (the bundled example students, repeated) of one chapter are
(1) executed bare, one after another, with nbclient in a plain python3 kernel
(no nbgrader, no sandbox, no hidden tests: what a student's "Run all" costs),
(2) executed the same way with the hidden tests put back (the cells nbgrader
runs, without nbgrader), and (3) graded end to end by the grading command (autograde.grader.command:
generate_assignment, contained autograde, import, feedback, CSV) with each
--jobs value. Prints seconds, students per minute, and the overhead of one
job over (2): nbgrader's own work plus the containment. A measurement, not a test; the machine's load
average is printed with it, since other work on the machine skews it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from autograde.build import products as build
from autograde import notebook as nbk
from autograde.grader.command import PHASES, grade_all

EXAMPLES = ("alice", "bob", "carol")


def _cpu() -> float:
    """CPU seconds used so far by this process and its finished children (nbgrader, kernels)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def submissions(chapter: str, n: int, dest: Path) -> Path:
    """dest/submitted/<student>/<chapter>/<chapter>.ipynb for n students cycling over the examples."""
    for i in range(n):
        example = EXAMPLES[i % len(EXAMPLES)]
        folder = dest / "submitted" / f"{example}{i:03d}" / chapter
        folder.mkdir(parents=True)
        shutil.copyfile(build.example_path(example, chapter), folder / f"{chapter}.ipynb")
    return dest / "submitted"


def with_hidden_tests(nb, chapter: str):
    """The notebook with its test cells as the grader runs them (hidden tests put back)."""
    tests = {nbk.grade_id(c): c.source for c in nbk.read(build.source_path(chapter)).cells if nbk.is_test(c)}
    out = nbk.copy_notebook(nb)
    for cell in out.cells:
        if nbk.is_test(cell):
            cell.source = nbk.solution_code(tests[nbk.grade_id(cell)]).replace(nbk.BEGIN_HIDDEN, "#").replace(
                nbk.END_HIDDEN, "#")
    return out


def bare(chapter: str, n: int, cwd: Path, hidden: bool = False) -> float:
    """Seconds to execute the n notebooks one after another in a plain kernel (with the hidden tests if asked)."""
    from nbclient import NotebookClient

    t0 = time.perf_counter()
    for i in range(n):
        nb = nbk.read(build.example_path(EXAMPLES[i % len(EXAMPLES)], chapter))
        if hidden:
            nb = with_hidden_tests(nb, chapter)
        NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(cwd)}}).execute()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", default="ch01_chain_rule")
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    n = args.students
    print(f"{args.chapter}, {n} students, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp_path = Path(tmp)
        subs = submissions(args.chapter, n, tmp_path)
        base = bare(args.chapter, n, tmp_path)
        print(f"bare execution       {base:7.1f} s  {60 * n / base:6.1f} students/min  "
              f"({base / n:.1f} s per notebook: the student's Run All)", flush=True)
        full = bare(args.chapter, n, tmp_path, hidden=True)
        print(f"bare + hidden tests  {full:7.1f} s  {60 * n / full:6.1f} students/min  "
              f"({full / n:.1f} s per notebook: the same cells nbgrader runs, in a plain kernel)", flush=True)
        per_job = {}
        for jobs in args.jobs:
            t0, cpu0 = time.perf_counter(), _cpu()
            grade_all(subs, tmp_path / f"ws{jobs}", jobs=jobs, chapters=(args.chapter,), quiet=True)
            per_job[jobs] = time.perf_counter() - t0
            cpu = _cpu() - cpu0
            print(f"grade --jobs {jobs}        {per_job[jobs]:7.1f} s  {60 * n / per_job[jobs]:6.1f} students/min  "
                  f"({per_job[jobs] / n:.1f} s per notebook; {per_job[jobs] / full:.2f}x bare + hidden tests)", flush=True)
            print(f"  CPU time {cpu:7.1f} s ({cpu / n:.1f} s per student): on an idle {os.cpu_count()}-core machine "
                  f"at most {60 * n * (os.cpu_count() or 1) / cpu:.1f} students/min", flush=True)
            ag = PHASES["autograde"]
            print(f"  of which autograde {ag:7.1f} s  {60 * n / ag:6.1f} students/min  ({ag / full:.2f}x bare + hidden "
                  f"tests); setup {PHASES['setup']:.0f} s, feedback {PHASES['feedback']:.0f} s, "
                  f"export {PHASES['export']:.0f} s", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
