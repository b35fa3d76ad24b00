"""`make bench`: measure the budgets of COURSE_DESIGN.md (a measurement, not a test).

Per chapter: the solution notebook's execution time and the kernel's peak
memory (budget: under 60 s and 2 GB on 2 cores), the time to execute a
student's notebook bare, and the time nbgrader autograde takes for it.

Usage: python -m autograde.bench.notebooks [CHAPTER ...]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course import CHAPTERS
from autograde.authoring import products as build
from autograde import notebook as nbk
from autograde.grader.core import grade_one

BUDGET_SECONDS = 60.0
BUDGET_BYTES = 2 * 1024**3


def time_execution(nb, cwd: Path) -> float:
    """Seconds to execute a notebook in a fresh kernel, kernel start included."""
    from nbclient import NotebookClient

    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return time.perf_counter() - t0


def bench_chapter(chapter: str) -> dict[str, float]:
    """Measure one chapter: solution execution, bare student execution, and one autograde."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        tmp_path = Path(tmp)
        # The kernel is measured alone: run it from a child process so its peak RSS is isolated.
        code = (
            "import sys, time, resource; from pathlib import Path;"
            "from autograde.authoring import products as build; from autograde.bench import notebooks as bench;"
            f"t = bench.time_execution(build.solution_skeleton({chapter!r}), Path({tmp!r}));"
            "print(t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)"
        )
        seconds, peak = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                       text=True).stdout.split()
        out["solution_s"], out["solution_peak_bytes"] = float(seconds), float(peak)

        student = build.example_path("alice", chapter)
        out["bare_execution_s"] = time_execution(nbk.read(student), tmp_path)

        out["autograde_s"] = grade_one(student, chapter, tmp_path / "ws", student="alice").seconds
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*")
    chapters = tuple(parser.parse_args(argv).chapters) or CHAPTERS
    print(f"{'chapter':18} {'solution':>9} {'peak mem':>9} {'bare run':>9} {'autograde':>10} {'overhead':>9}  budget")
    for chapter in chapters:
        r = bench_chapter(chapter)
        ok = r["solution_s"] < BUDGET_SECONDS and r["solution_peak_bytes"] < BUDGET_BYTES
        print(f"{chapter:18} {r['solution_s']:8.1f}s {r['solution_peak_bytes'] / 2**20:7.0f}MB "
              f"{r['bare_execution_s']:8.1f}s {r['autograde_s']:9.1f}s {r['autograde_s'] / r['bare_execution_s']:8.2f}x"
              f"  {'within' if ok else 'OVER'} (60 s, 2 GB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
