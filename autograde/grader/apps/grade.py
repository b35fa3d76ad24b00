"""The instructor's grading command: every submission of every chapter, contained, in parallel, with incidents.

    autograde/grade SUBMISSIONS [--workspace DIR] [--jobs N] [--cell-timeout S] [--notebook-timeout S] [--weak-containment]

SUBMISSIONS is an nbgrader `submitted/` folder, a folder of loose notebooks or a .zip of either
(autograde.grader.submissions).

Each chapter is graded by nbgrader autograde with the course's configuration
(nbgrader_config.py: contained kernel, limits, tampering and cheating checks).
With --jobs N, the students of a chapter are split over N job workspaces, each
with its own copy of the gradebook; the results are then imported one student
at a time, through nbgrader's Gradebook API, into the main gradebook, so no two
processes ever write to the same SQLite file. Then nbgrader generate_feedback
(hidden tests removed) and nbgrader export write the feedback and the CSV, and
the summary table lists each student's scores and incidents in plain words
(incidents.json has them all, also those an instructor need not look at: a small
notes file a notebook wrote in its own folder).
The submissions themselves are only read.

Every student handed in gets a row in grades.csv: a file that cannot be graded
(empty, not a notebook, a notebook of another chapter) is not run; its student
scores 0 and the report and incidents.json say why.

Each kernel runs in a bubblewrap sandbox (autograde.grader.containment). Where
bubblewrap cannot run, the command says so before it starts and grades nothing,
unless --weak-containment accepts kernels contained by a fresh folder and
resource limits only (the report then says so).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from autograde import notebook as nbk
from autograde.grader import containment
from autograde.grader.containment import ContainmentError, check_containment  # noqa: F401 - for callers of the command
from autograde.grader.core import Result, grade_chapter, not_graded
from autograde.grader.report import format_summary
from autograde.grader.records.settings import Settings, cores, threads_per_kernel
from autograde.grader.submissions import available_chapters, collect
from autograde.grader.workspace import Workspace

DEFAULT_WORKSPACE = nbk.REPO / ".work" / "grading"


@dataclass
class Graded:
    """What one grading run produced."""

    results: dict[str, dict[str, Result]]
    """per chapter, per student: score and incidents"""
    report: str
    """what the command prints (also in the workspace's report.txt)"""
    phases: dict[str, float]
    """seconds spent in each phase: setup, autograde, feedback, export"""


def grade_all(source: Path, workspace: Path = DEFAULT_WORKSPACE, jobs: int = 1,
              chapters: tuple[str, ...] | None = None, settings: Settings = Settings(), quiet: bool = False,
              feedback: bool = True) -> Graded:
    """Grade every chapter present in source with the run's settings: the results, the printed report, the time
    each phase took.

    Raises ContainmentError before anything is graded when bubblewrap cannot run here, unless
    settings.weak_containment accepts kernels contained by a fresh folder and resource limits only.
    """
    t0 = time.perf_counter()
    weak = check_containment(settings.weak_containment)
    settings = replace(settings, weak_containment=weak, kernel_threads=settings.kernel_threads or threads_per_kernel(jobs))
    chapters = tuple(chapters or available_chapters())
    main = Workspace(workspace, settings)
    main.root.mkdir(parents=True, exist_ok=True)
    os.chmod(main.root, 0o700)  # with weak containment, kernels of another uid must not enter it
    collected = collect(source, chapters, main.root / "incoming")
    found, ungradable = collected.found, collected.ungradable
    if not found and not any(ungradable.values()):
        raise FileNotFoundError(f"no notebook of {', '.join(chapters)} in {source}")
    # a chapter with only ungradable notebooks still gets its assignment (their rows in grades.csv); so does
    # every chapter asked for when no notebook could be told apart at all
    present = tuple(ch for ch in chapters if ch in found or ungradable.get(ch)) or chapters
    main.create(present)
    results: dict[str, dict[str, Result]] = {}
    phases = {"setup": 0.0, "autograde": 0.0, "feedback": 0.0, "export": 0.0}
    for chapter in present:
        t = time.perf_counter()
        main.generate_assignment(chapter)
        phases["setup"] += time.perf_counter() - t
        t = time.perf_counter()
        results[chapter] = grade_chapter(main, chapter, found.get(chapter, {}), jobs, quiet, collected.ignored,
                                         ungradable=ungradable.get(chapter, {}))
        phases["autograde"] += time.perf_counter() - t
        t = time.perf_counter()
        if feedback and found.get(chapter):
            main.generate_feedback(chapter)
        phases["feedback"] += time.perf_counter() - t
    if ungradable.get(""):  # no chapter could be told: the student still gets a row (0) in grades.csv
        results[""] = {student: not_graded("", why) for student, why in ungradable[""].items()}
        main.add_students(list(results[""]))
    t = time.perf_counter()
    csv_path = main.export(main.root / "grades.csv")
    phases["export"] += time.perf_counter() - t
    summary = format_summary(results, present)
    (main.root / "incidents.json").write_text(json.dumps(
        {ch: {s: [i.to_json() for i in r.incidents] for s, r in per.items()} for ch, per in results.items()},
        indent=1, sort_keys=True) + "\n")
    graded = sum(len(v) for v in found.values())
    report = (f"\nGradebook ({main.root / 'gradebook.db'})\n\n{summary}\n\n"
              f"Feedback (HTML, hidden tests removed): {main.root / 'feedback'}/<student>/<chapter>/\n"
              f"Grades CSV: {csv_path}\nIncidents (JSON): {main.root / 'incidents.json'}\n"
              f"nbgrader logs: {main.logs} and {main.root / 'jobs'}/*/logs\n"
              f"Containment: {containment.describe(weak)}\n"
              f"Graded {graded} notebooks with {jobs} job(s) of {settings.kernel_threads} thread(s) each"
              + (f", {sum(len(v) for v in ungradable.values())} not gradable (0, reason above)" if any(
                  ungradable.values()) else "")
              + f" in {time.perf_counter() - t0:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
              + ").\n")
    (main.root / "report.txt").write_text(report)
    return Graded(results, report, phases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="autograde/grade", description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="submitted/ folder, folder of notebooks, or .zip")
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE,
                        help=f"nbgrader course folder for the gradebook, feedback and CSV (default {DEFAULT_WORKSPACE})")
    parser.add_argument("--jobs", "-j", type=int, default=cores(),
                        help=f"students graded in parallel (default: one per core, {cores()} here); each kernel may use "
                             "an equal share of the cores")
    parser.add_argument("--chapter", action="append", dest="chapters", help="grade only this chapter (repeatable)")
    default = Settings()
    parser.add_argument("--cell-timeout", type=int, default=default.cell_seconds,
                        help=f"seconds per cell (default {default.cell_seconds})")
    parser.add_argument("--notebook-timeout", type=int, default=default.notebook_seconds,
                        help=f"seconds per notebook (default {default.notebook_seconds})")
    parser.add_argument("--no-feedback", action="store_true", help="skip nbgrader generate_feedback")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--weak-containment", action="store_true",
                        help="where bubblewrap cannot run, grade anyway with kernels contained only by a fresh folder "
                             "and resource limits (they can read what you can; the report says so)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        settings = Settings(args.cell_timeout, args.notebook_timeout, args.weak_containment)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        report = grade_all(args.submissions, args.workspace, args.jobs, tuple(args.chapters or ()) or None,
                           settings, args.quiet, not args.no_feedback).report
    except (ContainmentError, FileNotFoundError) as exc:  # no sandbox here; no notebook of the chapters given
        print(f"autograde/grade: {exc}", file=sys.stderr)
        return 2
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
