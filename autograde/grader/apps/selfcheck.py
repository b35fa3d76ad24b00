"""Grade your own notebook the way the instructor's grader does, and see per exercise what is wrong.

    .venv/bin/python -m autograde.grader.apps.selfcheck path/to/ch01_chain_rule.ipynb

The notebook is copied (never changed) into a scratch nbgrader workspace and
autograded there with the course's configuration: the same contained kernel,
hidden tests and limits as for grading. For each exercise it prints the
points and, when points were lost, the message of the check that failed
(course.checking says what was expected and what your code gave), or "not
attempted yet" when its answer cells are still the release's stubs. The code of
the hidden tests is never printed: only the error's type and message.

Exit status: 0 when the notebook was graded (lost points are not an error), 2
when it could not be (not a notebook of a chapter, nbgrader failed).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from autograde.grader.containment import ContainmentError, check_containment
from autograde.grader.core import grade_one
from autograde.grader.records.limits import LIMITS
from autograde.grader.records.settings import Settings
from autograde.grader.submissions import available_chapters, detect_chapter, read_submission

from autograde.grader.records import incidents as integrity
from autograde import notebook as nbk
from autograde.grader.secrets import scrub
from autograde.paths import release_path
from autograde.grader.workspace import NbgraderError

STUDENT = "me"
NOT_ATTEMPTED = "not attempted yet"


@dataclass(frozen=True)
class Line:
    """One test cell's result."""

    exercise: str
    test: str
    score: float
    max_score: float
    message: str
    attempted: bool = True


def untouched_answers(nb, release) -> set[str]:
    """grade_ids of the answer cells of nb that are still exactly the release's stub (blank lines and trailing
    spaces aside)."""
    stubs = {nbk.grade_id(c): nbk.normalised(c.source) for c in release.cells if nbk.is_solution(c)}
    return {nbk.grade_id(c) for c in nb.cells
            if nbk.is_solution(c) and stubs.get(nbk.grade_id(c)) == nbk.normalised(c.source)}


def messages(nb, chapter: str) -> dict[str, str]:
    """Per test cell, 'ErrorType: message' of its first error (or stderr), without tracebacks, and without any
    line that quotes the chapter's hidden tests or solutions (autograde.grader.secrets)."""
    out = {}
    for cell in nb.cells:
        if not nbk.is_test(cell):
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                out[nbk.grade_id(cell)] = f"{o.get('ename', 'Error')}: {o.get('evalue', '')}".strip()
                break
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                out[nbk.grade_id(cell)] = "wrote to stderr: " + str(o.get("text", "")).strip()[:300]
                break
    return {gid: scrub(text, chapter)[0] for gid, text in out.items()}


def check(path: Path, chapter: str | None = None,
          settings: Settings = Settings()) -> tuple[list[Line], list[integrity.Incident]]:
    """Autograde one notebook in a scratch workspace; per test cell, score and message, and the incidents.

    Raises ContainmentError when bubblewrap cannot run here and weak containment was not accepted.
    """
    settings = replace(settings, weak_containment=check_containment(settings.weak_containment))
    chapters = available_chapters()
    nb, why = read_submission(Path(path))
    if why:
        raise ValueError(f"{path}: {why}")
    chapter = chapter or detect_chapter(nb, chapters, Path(path).name)
    if chapter is None:
        raise ValueError(f"{path} is not a notebook of any chapter ({', '.join(chapters)})")
    with tempfile.TemporaryDirectory(prefix="selfcheck-") as tmp:
        result = grade_one(Path(path), chapter, Path(tmp) / "ws", settings, STUDENT)
    if result.error is not None:
        raise result.error
    scores, graded = result.scores, result.notebook
    said = messages(graded, chapter)
    untouched = untouched_answers(nbk.read(Path(path)), nbk.read(release_path(chapter)))
    answers_of = nbk.exercises(graded)
    owner, current = {}, chapter
    for cell in graded.cells:
        if nbk.is_solution(cell):
            current = nbk.grade_id(cell)
        elif nbk.is_test(cell):
            owner[nbk.grade_id(cell)] = current
    lines = []
    for gid, s in scores.items():
        attempted = not answers_of.get(gid) or not set(answers_of[gid]) <= untouched
        if s.score == s.max_score:
            message = "ok"
        else:
            message = said.get(gid, "no points (no message)") if attempted else NOT_ATTEMPTED
        lines.append(Line(owner.get(gid, chapter), gid, s.score, s.max_score, message, attempted))
    order = {nbk.grade_id(c): i for i, c in enumerate(graded.cells)}
    return sorted(lines, key=lambda ln: order.get(ln.test, 0)), result.incidents


def format_report(lines: list[Line], incidents: list[integrity.Incident]) -> str:
    """Per exercise, each test's points and message; the total; the incidents."""
    out, last = [], None
    for ln in lines:
        if ln.exercise != last:
            out.append(f"\n{ln.exercise}")
            last = ln.exercise
        out.append(f"  {ln.test:32} {ln.score:g} / {ln.max_score:g}   {ln.message}")
    got, total = sum(ln.score for ln in lines), sum(ln.max_score for ln in lines)
    waiting = len({ln.exercise for ln in lines if not ln.attempted})
    todo = f" ({waiting} exercise{'s' if waiting != 1 else ''} not attempted yet)" if waiting else ""
    out.append(f"\nTotal: {got:g} / {total:g}{todo}")
    listed = integrity.shown(incidents)
    if listed:
        out.append("\nThe grader also noted:")
        out += [f"  - {inc.words()}" for inc in listed]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograde.grader.apps.selfcheck", description=__doc__.split("\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--chapter", help="chapter id (default: recognised from the notebook)")
    parser.add_argument("--cell-timeout", type=int, default=LIMITS.cell_seconds)
    parser.add_argument("--weak-containment", action="store_true",
                        help="where bubblewrap cannot run (e.g. Binder), run your notebook anyway with only a fresh "
                             "folder and resource limits around it")
    args = parser.parse_args(argv)
    try:
        lines, incidents = check(args.notebook, args.chapter,
                                 Settings(cell_seconds=args.cell_timeout, weak_containment=args.weak_containment))
    except (ValueError, NbgraderError, ContainmentError) as exc:
        print(exc, file=sys.stderr)
        return 2
    print(format_report(lines, incidents))
    return 0  # graded: lost points are the report's news, not an error


if __name__ == "__main__":
    sys.exit(main())
