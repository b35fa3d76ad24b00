"""The grading report: a student-by-chapter table of scores with a count of what to look at, then each
incident in words (the ones an instructor need not look at are in incidents.json only)."""
from __future__ import annotations

from autograde.grader.records import incidents as integrity
from autograde.grader.core import Result


def format_summary(results: dict[str, dict[str, Result]], chapters: tuple[str, ...]) -> str:
    """A student-by-chapter table of scores with an incident count, then each student's incidents in words."""
    students = sorted({s for per in results.values() for s in per})
    header = ["student", *chapters, "total", "%", "incidents"]
    rows = [header]
    words: list[str] = []
    for student in students:
        row, got, maximum, count = [student], 0.0, 0.0, 0
        for chapter in (*chapters, ""):
            res = results.get(chapter, {}).get(student)
            if res is None:
                row += ["-"] if chapter else []
                continue
            if chapter:
                row.append("failed" if res.score is None else f"{res.score:g} / {res.max_score:g}")
            got += res.score or 0.0
            maximum += res.max_score
            listed = integrity.shown(res.incidents)
            count += len(listed)
            words += [f"{student} {chapter or '(no chapter)'}: {inc.words()}" for inc in listed]
        row += [f"{got:g} / {maximum:g}", f"{100 * got / maximum:.0f}" if maximum else "-", str(count) if count else "none"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) if i in (0, len(header) - 1) else v.rjust(w)
                       for i, (v, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n\nIncidents:\n" + ("\n".join(words) if words else "none")
