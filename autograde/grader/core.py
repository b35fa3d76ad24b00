"""The grading pipeline of one chapter, which every entry point runs: nbgrader autograde over job workspaces
(each its own gradebook copy), the results imported one student at a time into the main gradebook through
nbgrader's Gradebook API, and one Result per student (score and incidents).

`grade_one` is the same pipeline for one notebook in a scratch workspace (the self-check and the Gradescope
runner).
"""
from __future__ import annotations

import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode
from tqdm import tqdm

from autograde.grader.records import incidents as integrity
from autograde.grader.records.settings import Settings
from autograde.grader.workspace import CellScore, NbgraderError, Workspace


@dataclass
class Result:
    """One student's outcome for one chapter."""

    score: float | None
    max_score: float
    incidents: list[integrity.Incident] = field(default_factory=list)


class Progress:
    """tqdm's progress bar on stderr for one chapter, advanced by the 'Autograding' lines nbgrader writes to each
    job's log (nbgrader reports no progress of its own; the jobs run in other processes)."""

    def __init__(self, label: str, total: int, logs: list[Path], quiet: bool = False) -> None:
        self.total, self.logs = total, logs
        # mininterval: in a log file (no terminal) one line per change, not a redraw every 0.1 s
        self.bar = tqdm(total=total, desc=f"[{label}]", unit="student", file=sys.stderr, disable=quiet,
                        mininterval=0.5 if sys.stderr.isatty() else 5.0, dynamic_ncols=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def count(self) -> int:
        """Students whose grading has started, in all jobs."""
        done = 0
        for log in self.logs:
            try:
                done += log.read_text(errors="replace").count("] Autograding ")
            except OSError:
                pass
        return done

    def _show(self, finished: int) -> None:
        finished = min(finished, self.total)
        if finished > self.bar.n:
            self.bar.update(finished - self.bar.n)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._show(max(0, self.count() - 1))  # the one being graded now is not finished

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._show(self.total)
        self.bar.close()


def _autograde_job(ws: Workspace, chapter: str, timeout: float) -> str | None:
    """nbgrader autograde in one job workspace; the error text when it reports one."""
    try:
        ws.autograde(chapter, timeout=timeout)
    except NbgraderError as error:
        return error.errors
    return None


def _import_results(main: Workspace, job: Workspace, chapter: str, students: list[str]) -> list[str]:
    """Copy a job's autograded notebooks and grades into the main workspace; return the students it has no grades for."""
    import warnings

    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader's own autoflush notes on new submissions
    missing = []
    with Gradebook(main.db_url) as gb, Gradebook(job.db_url) as jg:
        for student in students:
            try:
                graded = jg.find_submission(chapter, student)
            except MissingEntry:
                graded = None
            src = job.root / "autograded" / student / chapter
            dest = main.root / "autograded" / student / chapter
            if dest.exists():
                shutil.rmtree(dest)
            if graded is None or not src.exists():
                missing.append(student)
                continue
            shutil.copytree(src, dest)
            gb.update_or_create_student(student)
            gb.update_or_create_submission(chapter, student, timestamp=graded.timestamp)
            for notebook in graded.notebooks:
                for grade in notebook.grades:
                    mine = gb.find_grade(grade.name, notebook.name, chapter, student)
                    mine.auto_score = grade.auto_score
                    mine.needs_manual_grade = mine.manual_score is not None or grade.auto_score is None
                for comment in notebook.comments:
                    gb.find_comment(comment.name, notebook.name, chapter, student).auto_comment = comment.auto_comment
            gb.db.commit()
    return missing


def grade_chapter(main: Workspace, chapter: str, submissions: dict[str, Path], jobs: int, quiet: bool = False,
                  ignored: dict[Path, tuple[str, ...]] | None = None, copy_beside: bool = False,
                  ungradable: dict[str, str] | None = None) -> dict[str, Result]:
    """Autograde every submission of one chapter over `jobs` job workspaces (with the main workspace's settings),
    import the results into the main gradebook and return each student's Result, score included. A student in
    `ungradable` (student -> why) is not run: 0, with an incident saying why, and a row in the gradebook."""
    results = _autograde_all(main, chapter, submissions, jobs, quiet, ignored, copy_beside)
    for student, why in (ungradable or {}).items():
        results[student] = not_graded(chapter, why)
    _fill_scores(main, chapter, results, zero=set(ungradable or ()))
    return results


def not_graded(chapter: str, why: str) -> Result:
    """The Result of a file that could not be graded: 0, and an incident saying why ("" when no chapter could be
    told)."""
    return Result(0.0, 0.0, [integrity.Incident("ungradable", chapter, f"not graded, 0: {why}")])


def _autograde_all(main: Workspace, chapter: str, submissions: dict[str, Path], jobs: int, quiet: bool,
                   ignored: dict[Path, tuple[str, ...]] | None, copy_beside: bool) -> dict[str, Result]:
    """nbgrader autograde over the job workspaces; per student the incidents (scores come from the gradebook)."""
    students = sorted(submissions)
    if not students:
        return {}
    shards = [s for s in (students[i::jobs] for i in range(max(1, jobs))) if s]
    job_spaces: list[Workspace] = []
    for k, shard in enumerate(shards):
        job = Workspace(main.root / "jobs" / f"{chapter}-{k}", main.settings)
        if job.root.exists():
            shutil.rmtree(job.root)
        job.create((chapter,))
        shutil.copyfile(main.root / "gradebook.db", job.root / "gradebook.db")  # the assignment, as generated
        for student in shard:
            sub = submissions[student]
            dest = job.root / "submitted" / student / chapter
            dest.mkdir(parents=True)
            shutil.copyfile(sub, dest / f"{chapter}.ipynb")
            # beside it only its timestamp; everything handed in with it only for the tests' controls, which prove
            # the sandbox keeps such files harmless
            beside = sub.parent.rglob("*") if copy_beside else [sub.parent / "timestamp.txt"]
            for extra in (p for p in beside if p.is_file() and p != sub):
                (dest / extra.relative_to(sub.parent)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(extra, dest / extra.relative_to(sub.parent))
        job_spaces.append(job)
    errors: dict[int, str | None] = {}

    def run(k: int) -> None:
        errors[k] = _autograde_job(job_spaces[k], chapter, main.settings.job_seconds(len(shards[k])))

    with Progress(chapter, len(students), [j.logs / f"autograde-{chapter}.log" for j in job_spaces], quiet):
        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(shards))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    results: dict[str, Result] = {}
    for k, shard in enumerate(shards):
        for student in _import_results(main, job_spaces[k], chapter, shard):
            why = errors.get(k) or "nbgrader wrote no grades"
            results[student] = Result(None, 0.0, [integrity.Incident(
                "failed", chapter, f"the notebook could not be graded (see {job_spaces[k].logs}): {why.splitlines()[-1][:200]}")])
        # keep the submitted copy in the main workspace, for nbgrader commands run there by hand
        for student in shard:
            src = job_spaces[k].root / "submitted" / student / chapter
            dest = main.root / "submitted" / student / chapter
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(src, dest)
    for student in students:
        if student not in results:
            results[student] = Result(None, 0.0, incidents_of(main, chapter, student))
        extras = (ignored or {}).get(submissions[student])
        if extras:
            results[student].incidents.insert(0, integrity.Incident(
                "files", chapter, f"files handed in beside the notebook were ignored: {', '.join(extras)}"))
    return results


def incidents_of(ws: Workspace, chapter: str, student: str) -> list[integrity.Incident]:
    """The incidents recorded in a student's autograded notebook."""
    graded = ws.autograded(student, chapter)
    return integrity.stored(graded) if graded is not None else []


def _fill_scores(ws: Workspace, chapter: str, results: dict[str, Result], zero: set[str]) -> None:
    """Scores from the main gradebook; every student in results is in it (so in grades.csv): None where nothing
    was graded, 0 for the students in `zero` (not gradable)."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(ws.db_url) as gb:
        maximum = float(gb.find_assignment(chapter).max_score)
        for student, res in results.items():
            gb.update_or_create_student(student)
            res.max_score = maximum
            try:
                res.score = 0.0 if student in zero else float(gb.find_submission(chapter, student).score)
            except MissingEntry:
                res.score = None


@dataclass
class GradedNotebook:
    """One notebook graded alone: per test cell its score, the autograded notebook (None when nbgrader wrote
    none), the incidents, and nbgrader's failure if it reported one."""

    scores: dict[str, CellScore]
    notebook: NotebookNode | None
    incidents: list[integrity.Incident]
    error: NbgraderError | None = None
    seconds: float = 0.0
    """how long grading took (the assignment's generation left out)"""


def grade_one(path: Path, chapter: str, root: Path, settings: Settings | None = None,
              student: str = "student") -> GradedNotebook:
    """Autograde one notebook of `chapter` in a fresh workspace at `root`, through grade_chapter as a class is
    graded (the self-check, the Gradescope runner, the notebook benchmark)."""
    ws = Workspace(root, settings)
    ws.create((chapter,))
    ws.generate_assignment(chapter)
    start = time.perf_counter()
    result = grade_chapter(ws, chapter, {student: Path(path)}, jobs=1, quiet=True)[student]
    seconds = time.perf_counter() - start
    failed = [i for i in result.incidents if i.kind == "failed"]
    error = NbgraderError(failed[0].text) if failed else None
    return GradedNotebook(ws.cell_scores(chapter).get(student, {}), ws.autograded(student, chapter),
                          [i for i in result.incidents if i.kind != "failed"], error, seconds)


@dataclass(frozen=True)
class Submission:
    """A student's notebook and any other files they handed in beside it (graded with them beside it: the
    grading command never copies them, the tests prove the sandbox would keep them harmless anyway)."""

    notebook: NotebookNode | Path
    extra_files: tuple[tuple[str, str], ...] = ()


def grade_in_parallel(root: Path, chapter: str, submissions: dict[str, Submission],
                      jobs: int = 2, settings: Settings | None = None) -> dict[str, dict[str, CellScore]]:
    """Grade many notebooks of one chapter the way the grading command does (grade_chapter over `jobs` job
    workspaces, imported into one main gradebook under root), the files handed in beside them included; per
    student, per test cell, the score."""
    main = Workspace(Path(root) / "main", settings)
    main.create((chapter,))
    main.generate_assignment(chapter)
    paths = {}
    for student, sub in submissions.items():
        paths[student] = main.submit(student, chapter, sub.notebook, dict(sub.extra_files))
    grade_chapter(main, chapter, paths, jobs, quiet=True, copy_beside=True)
    return main.cell_scores(chapter)
