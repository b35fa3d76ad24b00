"""The instructor's grading command: every submission of every chapter, contained, in parallel, with incidents.

    autograde/grade SUBMISSIONS [--workspace DIR] [--jobs N] [--cell-timeout S] [--notebook-timeout S]

SUBMISSIONS is one of:
- an nbgrader `submitted/` folder (submitted/<student>/<chapter>/<chapter>.ipynb,
  with an optional timestamp.txt beside each notebook), or a course folder holding one;
- a folder of loose notebooks, one per student and chapter, as an LMS hands
  them out (alice.ipynb, alice_ch01_chain_rule.ipynb, alice/ch01_chain_rule.ipynb...):
  the chapter is recognised from the notebook's cells, the student id is the
  file name without the chapter id (or the folder name when nothing is left);
- a .zip of either.

Each chapter is graded by nbgrader autograde with the course's configuration
(nbgrader_config.py: contained kernel, limits, tampering and cheating checks).
With --jobs N, the students of a chapter are split over N job workspaces, each
with its own copy of the gradebook; the results are then imported one student
at a time, through nbgrader's Gradebook API, into the main gradebook, so no two
processes ever write to the same SQLite file. Then nbgrader generate_feedback
(hidden tests removed) and nbgrader export write the feedback and the CSV, and
the summary table lists each student's scores and incidents in plain words.
The submissions themselves are only read.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from course import CHAPTERS
from autograde.grader import incidents as integrity
from autograde import notebook as nbk
from autograde.grader.workspace import Workspace

DEFAULT_WORKSPACE = nbk.REPO / ".work" / "grading"
CELL_TIMEOUT = 60
NOTEBOOK_TIMEOUT = 900


@dataclass
class Result:
    """One student's outcome for one chapter."""

    score: float | None
    max_score: float
    incidents: list[integrity.Incident] = field(default_factory=list)


# -- finding the submissions -------------------------------------------------
PHASES: dict[str, float] = {}
"""Seconds spent in each phase by the last grade_all (setup, autograde, feedback, export)."""
IGNORED: dict[Path, tuple[str, ...]] = {}
"""Files a student handed in beside a notebook (nbgrader layout); never copied, reported as an incident."""


def available_chapters() -> tuple[str, ...]:
    """The chapters whose source notebook exists."""
    return tuple(ch for ch in CHAPTERS if (nbk.REPO / "source" / ch / f"{ch}.ipynb").exists())


def chapter_ids(chapter: str) -> set[str]:
    """The grade_ids of a chapter's source notebook."""
    return {nbk.grade_id(c) for c in nbk.read(nbk.REPO / "source" / chapter / f"{chapter}.ipynb").cells
            if nbk.grade_id(c)}


def detect_chapter(path: Path, chapters: tuple[str, ...], ids: dict[str, set[str]]) -> str | None:
    """The chapter a loose notebook belongs to: most grade_ids in common, the file name breaking ties."""
    try:
        found = {nbk.grade_id(c) for c in nbk.read(path).cells if nbk.grade_id(c)}
    except Exception:  # noqa: BLE001 - not a notebook we can read
        found = set()
    best = sorted(((len(found & ids[ch]), ch in str(path), ch) for ch in chapters), reverse=True)
    if best and (best[0][0] > 0 or best[0][1]):
        return best[0][2]
    return None


def safe_id(text: str) -> str:
    """A student id nbgrader accepts as a folder name."""
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", text).strip("._-") or "student"


def student_from_name(path: Path, chapter: str) -> str:
    """Student id of a loose notebook: the file name without the chapter id, else its folder's name."""
    stem = path.stem.replace(chapter, "")
    stem = re.sub(r"^[\W_]+|[\W_]+$", "", stem)
    return safe_id(stem or path.parent.name)


def collect(source: Path, chapters: tuple[str, ...], scratch: Path) -> dict[str, dict[str, Path]]:
    """Per chapter, per student, the submitted notebook (a zip is extracted into scratch first)."""
    source = Path(source).resolve()
    if source.is_file() and zipfile.is_zipfile(source):
        if scratch.exists():
            shutil.rmtree(scratch)
        scratch.mkdir(parents=True)
        with zipfile.ZipFile(source) as zf:
            for member in zf.infolist():
                target = (scratch / member.filename).resolve()
                if scratch.resolve() not in target.parents or member.is_dir():
                    continue  # no path traversal out of the scratch folder
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(member))
        source = scratch
    if not source.is_dir():
        raise FileNotFoundError(f"no folder or zip of submissions at {source}")
    if (source / "submitted").is_dir():
        source = source / "submitted"
    out: dict[str, dict[str, Path]] = {ch: {} for ch in chapters}
    layout = [p for ch in chapters for p in source.glob(f"*/{ch}/{ch}.ipynb")]
    if layout:
        for path in sorted(layout):
            out[path.parent.name][safe_id(path.parent.parent.name)] = path
            extras = sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*")
                            if p.is_file() and p != path and p.name != "timestamp.txt")
            if extras:
                IGNORED[path] = tuple(extras)
        return {ch: s for ch, s in out.items() if s}
    ids = {ch: chapter_ids(ch) for ch in chapters}
    for path in sorted(p for p in source.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
                       and not p.name.startswith(".")):
        chapter = detect_chapter(path, chapters, ids)
        if chapter is None:
            print(f"skipped {path}: not a notebook of any chapter ({', '.join(chapters)})", file=sys.stderr)
            continue
        student = student_from_name(path, chapter)
        if student in out[chapter]:
            print(f"warning: {student} handed in {chapter} twice; grading {path.name}, not "
                  f"{out[chapter][student].name}", file=sys.stderr)
        out[chapter][student] = path
    return {ch: s for ch, s in out.items() if s}


# -- grading ---------------------------------------------------------------
class Progress:
    """A plain-text progress line on stderr, fed by counting 'Autograding' lines in the job logs."""

    def __init__(self, label: str, total: int, logs: list[Path], quiet: bool = False) -> None:
        self.label, self.total, self.logs, self.quiet = label, total, logs, quiet
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def count(self) -> int:
        done = 0
        for log in self.logs:
            try:
                done += log.read_text(errors="replace").count("] Autograding ")
            except OSError:
                pass
        return done

    def _show(self, started: int, final: bool = False) -> None:
        if self.quiet:
            return
        width = 30
        shown = self.total if final else max(0, started - 1)
        if not sys.stderr.isatty():  # a log file: one line per change, no carriage returns
            if shown != getattr(self, "_last", None) and (final or shown < self.total):
                self._last = shown
                print(f"[{self.label}] {shown}/{self.total} students graded, {time.perf_counter() - self.t0:.0f} s",
                      file=sys.stderr, flush=True)
            return
        filled = int(width * shown / max(self.total, 1))
        print(f"\r[{self.label}] [{'#' * filled}{'.' * (width - filled)}] {shown}/{self.total} students "
              f"{time.perf_counter() - self.t0:5.0f} s", end="\n" if final else "", file=sys.stderr, flush=True)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._show(self.count())

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._show(self.total, final=True)


def _autograde_job(ws: Workspace, chapter: str, timeout: float) -> str | None:
    """nbgrader autograde in one job workspace; the error text when it reports one."""
    cmd = [sys.executable, "-m", "nbgrader", "autograde", chapter, "--force", *ws.extra_args]
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    log = ws.logs / f"autograde-{chapter}.log"
    with log.open("w") as out:
        try:
            proc = subprocess.run(cmd, cwd=ws.root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"nbgrader autograde ran past {timeout:.0f} s and was stopped"
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or "[ERROR]" in text:
        return "\n".join(ln for ln in text.splitlines() if "[ERROR]" in ln)[-2000:] or f"exit status {proc.returncode}"
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


def grade_chapter(main: Workspace, chapter: str, submissions: dict[str, Path], jobs: int,
                  notebook_timeout: float, quiet: bool = False) -> dict[str, Result]:
    """Autograde every submission of one chapter over `jobs` job workspaces and import the results."""
    students = sorted(submissions)
    shards = [s for s in (students[i::jobs] for i in range(max(1, jobs))) if s]
    job_spaces: list[Workspace] = []
    for k, shard in enumerate(shards):
        job = Workspace(main.root / "jobs" / f"{chapter}-{k}", extra_args=main.extra_args)
        if job.root.exists():
            shutil.rmtree(job.root)
        job.create((chapter,))
        shutil.copyfile(main.root / "gradebook.db", job.root / "gradebook.db")  # the assignment, as generated
        for student in shard:
            sub = submissions[student]
            dest = job.root / "submitted" / student / chapter
            dest.mkdir(parents=True)
            shutil.copyfile(sub, dest / f"{chapter}.ipynb")  # the notebook only: nothing handed in beside it
            if (sub.parent / "timestamp.txt").is_file():
                shutil.copyfile(sub.parent / "timestamp.txt", dest / "timestamp.txt")
        job_spaces.append(job)
    errors: dict[int, str | None] = {}

    def run(k: int) -> None:
        budget = len(shards[k]) * (notebook_timeout + 60) + 300
        errors[k] = _autograde_job(job_spaces[k], chapter, budget)

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
        extras = IGNORED.get(submissions[student])
        if extras:
            results[student].incidents.insert(0, integrity.Incident(
                "files", chapter, f"files handed in beside the notebook were ignored: {', '.join(extras)}"))
    return results


def incidents_of(ws: Workspace, chapter: str, student: str) -> list[integrity.Incident]:
    """The incidents recorded in a student's autograded notebook."""
    path = ws.root / "autograded" / student / chapter / f"{chapter}.ipynb"
    return integrity.stored(nbk.read(path)) if path.exists() else []


def fill_scores(ws: Workspace, chapter: str, results: dict[str, Result]) -> None:
    """Scores from the main gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(ws.db_url) as gb:
        maximum = float(gb.find_assignment(chapter).max_score)
        for student, res in results.items():
            res.max_score = maximum
            try:
                res.score = float(gb.find_submission(chapter, student).score)
            except MissingEntry:
                res.score = None


# -- report ----------------------------------------------------------------
def format_summary(results: dict[str, dict[str, Result]], chapters: tuple[str, ...]) -> str:
    """A student-by-chapter table of scores with an incident count, then each student's incidents in words."""
    students = sorted({s for per in results.values() for s in per})
    header = ["student", *chapters, "total", "%", "incidents"]
    rows = [header]
    words: list[str] = []
    for student in students:
        row, got, maximum, count = [student], 0.0, 0.0, 0
        for chapter in chapters:
            res = results.get(chapter, {}).get(student)
            if res is None:
                row.append("-")
                continue
            row.append("failed" if res.score is None else f"{res.score:g} / {res.max_score:g}")
            got += res.score or 0.0
            maximum += res.max_score
            count += len(res.incidents)
            words += [f"{student} {chapter}: {inc.words()}" for inc in res.incidents]
        row += [f"{got:g} / {maximum:g}", f"{100 * got / maximum:.0f}" if maximum else "-", str(count) if count else "none"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) if i in (0, len(header) - 1) else v.rjust(w)
                       for i, (v, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n\nIncidents:\n" + ("\n".join(words) if words else "none")


def grade_all(source: Path, workspace: Path = DEFAULT_WORKSPACE, jobs: int = 1,
              chapters: tuple[str, ...] | None = None, cell_timeout: int = CELL_TIMEOUT,
              notebook_timeout: int = NOTEBOOK_TIMEOUT, quiet: bool = False,
              feedback: bool = True) -> tuple[dict[str, dict[str, Result]], str]:
    """Grade every chapter present in source; return the results and the printed report."""
    t0 = time.perf_counter()
    chapters = tuple(chapters or available_chapters())
    extra = (f"--Execute.timeout={cell_timeout}", f"--SandboxedExecute.notebook_timeout={notebook_timeout}")
    main = Workspace(workspace, extra_args=extra)
    main.root.mkdir(parents=True, exist_ok=True)
    os.chmod(main.root, 0o700)  # nobody else enters it
    found = collect(source, chapters, main.root / "incoming")
    if not found:
        raise FileNotFoundError(f"no notebook of {', '.join(chapters)} in {source}")
    present = tuple(ch for ch in chapters if ch in found)
    main.create(present)
    results: dict[str, dict[str, Result]] = {}
    phases = {"setup": 0.0, "autograde": 0.0, "feedback": 0.0, "export": 0.0}
    for chapter in present:
        t = time.perf_counter()
        main.generate_assignment(chapter)
        phases["setup"] += time.perf_counter() - t
        t = time.perf_counter()
        results[chapter] = grade_chapter(main, chapter, found[chapter], jobs, notebook_timeout, quiet)
        fill_scores(main, chapter, results[chapter])
        phases["autograde"] += time.perf_counter() - t
        t = time.perf_counter()
        if feedback:
            main.generate_feedback(chapter)
        phases["feedback"] += time.perf_counter() - t
    t = time.perf_counter()
    csv_path = main.export(main.root / "grades.csv")
    phases["export"] += time.perf_counter() - t
    PHASES.clear()
    PHASES.update(phases)
    summary = format_summary(results, present)
    (main.root / "incidents.json").write_text(json.dumps(
        {ch: {s: [i.to_json() for i in r.incidents] for s, r in per.items()} for ch, per in results.items()},
        indent=1, sort_keys=True) + "\n")
    report = (f"\nGradebook ({main.root / 'gradebook.db'})\n\n{summary}\n\n"
              f"Feedback (HTML, hidden tests removed): {main.root / 'feedback'}/<student>/<chapter>/\n"
              f"Grades CSV: {csv_path}\nIncidents (JSON): {main.root / 'incidents.json'}\n"
              f"nbgrader logs: {main.logs} and {main.root / 'jobs'}/*/logs\n"
              f"Graded {sum(len(v) for v in found.values())} notebooks with {jobs} job(s) "
              f"in {time.perf_counter() - t0:.0f} s ("
              + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items()) + ").\n")
    (main.root / "report.txt").write_text(report)
    return results, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="autograde/grade", description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="submitted/ folder, folder of notebooks, or .zip")
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE,
                        help=f"nbgrader course folder for the gradebook, feedback and CSV (default {DEFAULT_WORKSPACE})")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="students graded in parallel (default 1)")
    parser.add_argument("--chapter", action="append", dest="chapters", help="grade only this chapter (repeatable)")
    parser.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT, help="seconds per cell (default 60)")
    parser.add_argument("--notebook-timeout", type=int, default=NOTEBOOK_TIMEOUT,
                        help="seconds per notebook (default 900)")
    parser.add_argument("--no-feedback", action="store_true", help="skip nbgrader generate_feedback")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    _, report = grade_all(args.submissions, args.workspace, args.jobs, tuple(args.chapters or ()) or None,
                          args.cell_timeout, args.notebook_timeout, args.quiet, not args.no_feedback)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
