"""The grading command's cost against plain nbgrader, measured side by side in one run.

    .venv/bin/python -m autograde.bench.grading [--students N] [--chapters CH ...] [--jobs 1 2] [--bare]

N copies of a bundled example notebook (default: alice's, full marks) of one chapter are graded, feedback
off, (1) by plain nbgrader with its defaults (generate_assignment, then autograde of every student, in its own
kernel: no containment, no harness, no course checks), started as the grading command starts nbgrader, and
(2) by the grading command (autograde.grader.apps.grade: containment, the harness around every test cell, the
tampering and file checks, the gradebook import and the CSV) with each --jobs value. Prints the seconds, the
ratio to (1) and the CPU time. With --bare, also the same notebooks executed with nbclient alone, with and
without the hidden tests. A measurement, not a test: the load average is printed with it, since other work on
the machine skews it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from autograde.authoring import products as build
from autograde import notebook as nbk
from autograde.grader.apps.grade import grade_all
from autograde.grader.workspace import Workspace

EXAMPLES = ("alice", "bob", "carol")


def submissions(chapter: str, n: int, dest: Path, examples: tuple[str, ...] = EXAMPLES) -> Path:
    """dest/submitted/<student>/<chapter>/<chapter>.ipynb for n students cycling over the examples."""
    for i in range(n):
        example = examples[i % len(examples)]
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


PLAIN_CONFIG = '''"""Plain nbgrader: its defaults (nbclient's kernel, no sandbox, no harness, no course checks)."""
c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
'''


def plain_nbgrader(chapter: str, subs: Path, root: Path) -> float:
    """Seconds for plain nbgrader (its defaults, no containment) to generate the assignment and autograde every
    submission, started as the grading command starts it (Workspace.nbgrader)."""
    ws = Workspace(root)
    ws.create((chapter,))
    (ws.root / "nbgrader_config.py").write_text(PLAIN_CONFIG.format(root=str(ws.root)))
    t0 = time.perf_counter()
    ws.nbgrader("generate_assignment", chapter, "--force", log=f"generate_assignment-{chapter}")  # its command
    for folder in sorted(subs.iterdir()):
        ws.submit(folder.name, chapter, folder / chapter / f"{chapter}.ipynb")
    ws.autograde(chapter)
    return time.perf_counter() - t0


def bare(chapter: str, n: int, cwd: Path, examples: list[str], hidden: bool = False) -> float:
    """Seconds to execute the n notebooks one after another in a plain kernel (with the hidden tests if asked)."""
    from nbclient import NotebookClient

    t0 = time.perf_counter()
    for i in range(n):
        nb = nbk.read(build.example_path(examples[i % len(examples)], chapter))
        if hidden:
            nb = with_hidden_tests(nb, chapter)
        NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(cwd)}}).execute()
    return time.perf_counter() - t0


def bench_chapter(chapter: str, n: int, args: argparse.Namespace) -> None:
    """Plain nbgrader, then the grading command at each --jobs, on n copies of one chapter's notebook."""
    print(f"{chapter}, {n} students ({', '.join(args.examples)}), feedback off, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp_path = Path(tmp)
        subs = submissions(chapter, n, tmp_path, tuple(args.examples))
        if args.bare:
            base = bare(chapter, n, tmp_path, args.examples)
            print(f"bare execution       {base:7.1f} s  ({base / n:.1f} s per notebook: the student's Run All)",
                  flush=True)
            full = bare(chapter, n, tmp_path, args.examples, hidden=True)
            print(f"bare + hidden tests  {full:7.1f} s  ({full / n:.1f} s per notebook: the cells nbgrader runs, "
                  "in a plain kernel)", flush=True)
        plain = plain_nbgrader(chapter, subs, tmp_path / "plain")
        print(f"plain nbgrader       {plain:7.1f} s  ({plain / n:.1f} s per notebook; its defaults, no containment)",
              flush=True)
        for jobs in args.jobs:
            t0 = time.perf_counter()
            phases = grade_all(subs, tmp_path / f"ws{jobs}", jobs=jobs, chapters=(chapter,), quiet=True,
                               feedback=False).phases
            took = time.perf_counter() - t0
            print(f"grade --jobs {jobs}        {took:7.1f} s  = {took / plain:.2f}x plain nbgrader  "
                  f"({60 * n / took:.1f} students/min)", flush=True)
            print(f"  setup {phases['setup']:.1f} s, autograde {phases['autograde']:.1f} s, "
                  f"export {phases['export']:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", nargs="+", default=["ch01_chain_rule", "ch05_grad_modes"])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--examples", nargs="+", default=["alice"], choices=EXAMPLES,
                        help="the example students whose notebooks are copied (default: alice, full marks)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--bare", action="store_true", help="also time bare execution, without nbgrader")
    args = parser.parse_args(argv)
    n = args.students
    for chapter in args.chapters:
        bench_chapter(chapter, n, args)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
