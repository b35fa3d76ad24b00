"""`make demo`: autograde the bundled example submissions with nbgrader and print the gradebook.

The workspace (default .work/demo, ignored by git) is an ordinary nbgrader
course folder: after the demo, `cd .work/demo && ../../.venv/bin/nbgrader ...`
works on it by hand. Running the demo again regrades from the same inputs and
prints the same gradebook.

Usage: python -m autograde.demo [--workspace DIR]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from course import CHAPTERS
from autograde.build import catalogue as mut
from autograde import notebook as nbk
from autograde.build.products import example_path
from autograde.grader.workspace import CellScore, Workspace

DEFAULT_WORKSPACE = nbk.REPO / ".work" / "demo"


def example_students(chapters: tuple[str, ...]) -> dict[str, list[str]]:
    """Per chapter, the bundled example students (from each chapter's catalogue)."""
    return {ch: [ex.student for ex in mut.load(ch).examples] for ch in chapters}


def format_gradebook(totals: dict[str, dict[str, CellScore]], chapters: tuple[str, ...],
                     students: list[str], incidents: dict[str, int] | None = None) -> str:
    """A student-by-chapter table of score / max, with each student's total, percentage and incident count."""
    header = ["student", *chapters, "total", "%"] + (["incidents"] if incidents is not None else [])
    rows = [header]
    for student in students:
        row = [student]
        got = maximum = 0.0
        for chapter in chapters:
            cell = totals.get(student, {}).get(chapter)
            if cell is None:
                row.append("-")
                continue
            row.append(f"{cell.score:g} / {cell.max_score:g}")
            got += cell.score
            maximum += cell.max_score
        row.append(f"{got:g} / {maximum:g}")
        row.append(f"{100 * got / maximum:.0f}" if maximum else "-")
        if incidents is not None:
            row.append(str(incidents.get(student, 0) or "none"))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))) for r in rows]
    lines = [ln.rstrip() for ln in lines]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_losses(ws: Workspace, chapters: tuple[str, ...], students: list[str]) -> str:
    """Per student, the test cells that did not score full marks."""
    lines = []
    for chapter in chapters:
        scores = ws.cell_scores(chapter)
        for student in students:
            lost = [f"{gid} {c.score:g}/{c.max_score:g}" for gid, c in scores.get(student, {}).items()
                    if c.score < c.max_score]
            if lost:
                lines.append(f"{student} {chapter} ({len(lost)}): {', '.join(lost)}")
    return "\n".join(lines) if lines else "none"


def format_incidents(ws: Workspace, chapters: tuple[str, ...], students: list[str]) -> tuple[dict[str, int], str]:
    """Per student, the number of incidents the grader recorded, and one line per incident."""
    from autograde.grader.command import incidents_of

    counts: dict[str, int] = {}
    lines = []
    for chapter in chapters:
        for student in students:
            found = incidents_of(ws, chapter, student)
            counts[student] = counts.get(student, 0) + len(found)
            lines += [f"{student} {chapter}: {inc.words()}" for inc in found]
    return counts, "\n".join(lines) if lines else "none"


def run_demo(root: Path = DEFAULT_WORKSPACE, chapters: tuple[str, ...] = CHAPTERS) -> str:
    """Set up the workspace, grade every example student, write feedback and CSV; return the report."""
    t0 = time.perf_counter()
    ws = Workspace(root)
    ws.create(chapters)
    roster = example_students(chapters)
    for chapter in chapters:
        print(f"[{chapter}] generate_assignment", flush=True)
        ws.generate_assignment(chapter)
        for student in roster[chapter]:
            path = example_path(student, chapter)
            if not path.exists():
                raise FileNotFoundError(f"example submission missing: {path}; run `make build`")
            ws.submit(student, chapter, path)
        print(f"[{chapter}] autograde {', '.join(roster[chapter])}", flush=True)
        ws.autograde(chapter)
        print(f"[{chapter}] generate_feedback", flush=True)
        ws.generate_feedback(chapter)
    csv_path = ws.export(ws.root / "grades.csv")
    students = sorted({s for names in roster.values() for s in names})
    counts, incident_lines = format_incidents(ws, chapters, students)
    table = format_gradebook(ws.totals(chapters), chapters, students, counts)
    losses = format_losses(ws, chapters, students)
    return (
        f"\nGradebook ({ws.root / 'gradebook.db'})\n\n{table}\n\n"
        f"Test cells below full marks:\n{losses}\n\n"
        f"Incidents (timeouts, crashes, limits, tampering, cheating):\n{incident_lines}\n\n"
        f"Feedback (HTML, hidden tests removed): {ws.root / 'feedback'}/<student>/<chapter>/\n"
        f"Grades CSV: {csv_path}\n"
        f"nbgrader logs: {ws.logs}\n"
        f"Done in {time.perf_counter() - t0:.0f} s.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE, help="nbgrader course folder to use")
    args = parser.parse_args(argv)
    print(run_demo(args.workspace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
