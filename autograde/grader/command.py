"""The instructor's grading command: every submission of every chapter, contained, in parallel, with incidents.

    autograde/grade SUBMISSIONS [--workspace DIR] [--jobs N] [--cell-timeout S] [--notebook-timeout S] [--weak-containment]

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
import functools
import hashlib
import io
import json
import os
import re
import shutil
import struct
import sys
import threading
import time
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from course import CHAPTERS
from autograde.grader import containment
from autograde.grader import incidents as integrity
from autograde.grader.limits import LIMITS
from autograde import notebook as nbk
from autograde.grader.workspace import NbgraderError, Workspace

DEFAULT_WORKSPACE = nbk.REPO / ".work" / "grading"
CELL_TIMEOUT = LIMITS.cell_seconds
NOTEBOOK_TIMEOUT = LIMITS.notebook_seconds


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
UNGRADABLE: dict[str, dict[str, str]] = {}
"""Per chapter ('' when none could be told), per student, why what they handed in cannot be graded (last collect)."""


def available_chapters() -> tuple[str, ...]:
    """The chapters whose source notebook exists."""
    return tuple(ch for ch in CHAPTERS if (nbk.REPO / "source" / ch / f"{ch}.ipynb").exists())


@functools.lru_cache(maxsize=None)
def fingerprint(chapter: str) -> tuple[frozenset[str], frozenset[str]]:
    """(grade_ids, markdown texts) of a chapter's source notebook: what recognises a notebook of it."""
    cells = nbk.read(nbk.REPO / "source" / chapter / f"{chapter}.ipynb").cells
    return (frozenset(filter(None, map(nbk.grade_id, cells))),
            frozenset(integrity.normalised(c.source) for c in cells if c.cell_type == "markdown" and c.source.strip()))


def detect_chapter(nb, chapters: tuple[str, ...], name: str = "") -> str | None:
    """The chapter a notebook belongs to: most grade_ids in common, else most markdown cells in common (a notebook
    pasted into a new one keeps its text, not its metadata), the file name breaking ties; None if nothing matches."""
    ids = {nbk.grade_id(c) for c in nb.cells} - {None}
    texts = {integrity.normalised(c.source) for c in nb.cells if c.get("cell_type") == "markdown"}
    best = sorted(((len(ids & fingerprint(ch)[0]), len(texts & fingerprint(ch)[1]), ch in name, ch) for ch in chapters),
                  reverse=True)
    return best[0][3] if best and any(best[0][:3]) else None


def read_submission(path: Path) -> tuple[object, str | None]:
    """(notebook, None), or (None, why it is no notebook)."""
    import nbformat

    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"the file could not be read ({exc.strerror})"
    if not data.strip():
        return None, "the file is empty"
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except UnicodeDecodeError:
        return None, "the file is not a notebook (not UTF-8 text)"
    except Exception as exc:  # noqa: BLE001 - JSON or notebook-format errors of every kind
        return None, f"the file is not a valid notebook ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
    return nb, None


def safe_id(text: str) -> str:
    """A student id nbgrader accepts as a folder name: accents dropped, other characters replaced; when a
    character had no ASCII form, a short hash of the whole name keeps two such names apart."""
    folded = unicodedata.normalize("NFKD", text)
    kept = "".join(ch for ch in folded if ch.isascii() or unicodedata.combining(ch))
    out = re.sub(r"[^A-Za-z0-9_.@-]+", "_", "".join(ch for ch in kept if ch.isascii())).strip("._-") or "student"
    if kept != folded:
        out += "-" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    return out


def student_from_name(path: Path, chapters: tuple[str, ...]) -> str:
    """Student id of a loose notebook: the file name without a chapter id, else the nearest folder that is
    neither a chapter nor `submitted`."""
    stem = path.stem
    for chapter in chapters:
        stem = stem.replace(chapter, "")
    stem = re.sub(r"^[\W_]+|[\W_]+$", "", stem)
    if stem:
        return safe_id(stem)
    folder = next((p.name for p in path.parents if p.name and p.name not in (*chapters, "submitted")), "")
    return safe_id(folder)


def _open_zip(path: Path) -> zipfile.ZipFile:
    """A zip, even one whose names are flagged UTF-8 but are not: those are read as cp437, like unflagged names."""
    try:
        return zipfile.ZipFile(path)
    except UnicodeDecodeError:
        pass
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")  # end of central directory: entry count, its size, its offset
    count, _, at = struct.unpack_from("<HII", data, end + 10)
    for _ in range(count):
        name, extra, comment = struct.unpack_from("<HHH", data, at + 28)
        try:
            bytes(data[at + 46:at + 46 + name]).decode("utf-8")
        except UnicodeDecodeError:  # clear the flag in the central and the local header
            local, = struct.unpack_from("<I", data, at + 42)
            for flags_at in (at + 8, local + 6):
                struct.pack_into("<H", data, flags_at, struct.unpack_from("<H", data, flags_at)[0] & ~0x800)
        at += 46 + name + extra + comment
    return zipfile.ZipFile(io.BytesIO(bytes(data)))


def _extract(archive: Path, scratch: Path) -> None:
    """Unzip into scratch: no path leaves it (.., absolute names), Windows separators become folders."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    with _open_zip(archive) as zf:
        for member in zf.infolist():
            parts = [p for p in re.split(r"[\\/]+", member.filename) if p not in ("", ".", "..")]
            if not parts or member.is_dir() or parts[0] == "__MACOSX":
                continue
            target = scratch.joinpath(*(p.replace("\0", "_")[:200] for p in parts))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(member))


def collect(source: Path, chapters: tuple[str, ...], scratch: Path) -> dict[str, dict[str, Path]]:
    """Per chapter, per student, the submitted notebook (a zip is extracted into scratch first).

    What cannot be graded (an empty file, no notebook, a notebook of another chapter, one of no chapter)
    goes to UNGRADABLE instead, with the reason.
    """
    UNGRADABLE.clear()
    source = Path(source).resolve()
    if source.is_file() and zipfile.is_zipfile(source):
        _extract(source, scratch)
        source = scratch
    if not source.is_dir():
        raise FileNotFoundError(f"no folder or zip of submissions at {source}")
    out: dict[str, dict[str, Path]] = {ch: {} for ch in chapters}

    known = tuple(dict.fromkeys((*available_chapters(), *chapters)))  # a notebook of a chapter not graded is told too

    def take(path: Path, chapter: str | None, student: str) -> None:
        """chapter: the one the nbgrader layout names; None for a loose notebook (recognised from its cells)."""
        nb, why = read_submission(path)
        found = None if nb is None else detect_chapter(nb, known, path.name)
        if chapter is None and found not in (None, *chapters):
            return  # a notebook of a chapter not being graded
        if why is None and chapter is None and found is None:
            why = f"not a notebook of any chapter ({', '.join(chapters)})"
        elif why is None and chapter is not None and found not in (None, chapter):
            why = f"this is a notebook of {found}, handed in as {chapter}"
        elif why is None and not {nbk.grade_id(c) for c in nb.cells} & fingerprint(chapter or found)[0]:
            why = ("none of its cells is a cell of the assignment (they lost their nbgrader metadata: pasted into a "
                   "new notebook?); download the assignment again and copy the answers into it")
        chapter = chapter or found or next((ch for ch in chapters if ch in path.name),
                                           chapters[0] if len(chapters) == 1 else "")
        if why is None:
            if student in out[chapter]:
                print(f"warning: {student} handed in {chapter} twice; grading {path.name}, not "
                      f"{out[chapter][student].name}", file=sys.stderr)
            out[chapter][student] = path
            UNGRADABLE.get(chapter, {}).pop(student, None)
        elif student not in out.get(chapter, {}):
            UNGRADABLE.setdefault(chapter, {})[student] = why

    # nbgrader's layout, at any depth (an LMS export may wrap it in folders): <student>/<chapter>/<chapter>.ipynb
    layout = [p for ch in chapters for p in source.glob(f"**/{ch}/{ch}.ipynb") if "__MACOSX" not in p.parts]
    if layout:
        for path in sorted(layout):
            take(path, path.parent.name, safe_id(path.parent.parent.name))
            extras = sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*")
                            if p.is_file() and p != path and p.name != "timestamp.txt")
            if extras:
                IGNORED[path] = tuple(extras)
    else:
        for path in sorted(p for p in source.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
                           and "__MACOSX" not in p.parts and not p.name.startswith(".")):
            take(path, None, student_from_name(path.relative_to(source), chapters))
    return {ch: s for ch, s in out.items() if s}


# -- grading ---------------------------------------------------------------
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


def grade_chapter(main: Workspace, chapter: str, submissions: dict[str, Path], jobs: int,
                  notebook_timeout: float, quiet: bool = False) -> dict[str, Result]:
    """Autograde every submission of one chapter over `jobs` job workspaces and import the results."""
    students = sorted(submissions)
    if not students:
        return {}
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
    """Scores from the main gradebook; every student in results is in it (so in grades.csv), with 0 if not graded."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(ws.db_url) as gb:
        maximum = float(gb.find_assignment(chapter).max_score)
        for student, res in results.items():
            gb.update_or_create_student(student)
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
        for chapter in (*chapters, ""):
            res = results.get(chapter, {}).get(student)
            if res is None:
                row += ["-"] if chapter else []
                continue
            if chapter:
                row.append("failed" if res.score is None else f"{res.score:g} / {res.max_score:g}")
            got += res.score or 0.0
            maximum += res.max_score
            count += len(integrity.shown(res.incidents))
            words += [f"{student} {chapter or '(no chapter)'}: {inc.words()}" for inc in integrity.shown(res.incidents)]
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
              feedback: bool = True, weak_containment: bool = False) -> tuple[dict[str, dict[str, Result]], str]:
    """Grade every chapter present in source; return the results and the printed report.

    Raises ContainmentError before anything is graded when bubblewrap cannot run here, unless
    weak_containment accepts kernels contained by a fresh folder and resource limits only.
    """
    t0 = time.perf_counter()
    weak = check_containment(weak_containment)
    chapters = tuple(chapters or available_chapters())
    extra = (f"--Execute.timeout={cell_timeout}", f"--SandboxedExecute.notebook_timeout={notebook_timeout}",
             *(["--SandboxKernelManager.weak_containment=True"] if weak else []))
    main = Workspace(workspace, extra_args=extra)
    main.root.mkdir(parents=True, exist_ok=True)
    os.chmod(main.root, 0o700)  # with weak containment, kernels of another uid must not enter it
    found = collect(source, chapters, main.root / "incoming")
    if not found and not any(UNGRADABLE.values()):
        raise FileNotFoundError(f"no notebook of {', '.join(chapters)} in {source}")
    # a chapter with only ungradable notebooks still gets its assignment (their rows in grades.csv); so does
    # every chapter asked for when no notebook could be told apart at all
    present = tuple(ch for ch in chapters if ch in found or UNGRADABLE.get(ch)) or chapters
    main.create(present)
    results: dict[str, dict[str, Result]] = {}
    phases = {"setup": 0.0, "autograde": 0.0, "feedback": 0.0, "export": 0.0}
    for chapter in present:
        t = time.perf_counter()
        main.generate_assignment(chapter)
        phases["setup"] += time.perf_counter() - t
        t = time.perf_counter()
        results[chapter] = grade_chapter(main, chapter, found.get(chapter, {}), jobs, notebook_timeout, quiet)
        for student, why in UNGRADABLE.get(chapter, {}).items():
            results[chapter][student] = Result(0.0, 0.0, [integrity.Incident("ungradable", chapter, f"not graded, 0: {why}")])
        fill_scores(main, chapter, results[chapter])
        for student in UNGRADABLE.get(chapter, {}):
            results[chapter][student].score = 0.0
        phases["autograde"] += time.perf_counter() - t
        t = time.perf_counter()
        if feedback and found.get(chapter):
            main.generate_feedback(chapter)
        phases["feedback"] += time.perf_counter() - t
    if UNGRADABLE.get(""):  # no chapter could be told: the student still gets a row (0) in grades.csv
        results[""] = {student: Result(0.0, 0.0, [integrity.Incident("ungradable", "", f"not graded, 0: {why}")])
                       for student, why in UNGRADABLE[""].items()}
        main.add_students(list(results[""]))
    t = time.perf_counter()
    csv_path = main.export(main.root / "grades.csv")
    phases["export"] += time.perf_counter() - t
    PHASES.clear()
    PHASES.update(phases)
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
              f"Graded {graded} notebooks with {jobs} job(s)"
              + (f", {sum(len(v) for v in UNGRADABLE.values())} not gradable (0, reason above)" if any(
                  UNGRADABLE.values()) else "")
              + f" in {time.perf_counter() - t0:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
              + ").\n")
    (main.root / "report.txt").write_text(report)
    return results, report


class ContainmentError(RuntimeError):
    """Bubblewrap cannot run here and weak containment was not accepted."""


def check_containment(weak_accepted: bool) -> bool:
    """Whether kernels will be weakly contained; ContainmentError (one line naming the fix) if that was not accepted."""
    if containment.bwrap_problem() is None:
        return False
    if not weak_accepted:
        raise ContainmentError(containment.refusal())
    print(f"warning: {containment.describe(True)}", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="autograde/grade", description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="submitted/ folder, folder of notebooks, or .zip")
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE,
                        help=f"nbgrader course folder for the gradebook, feedback and CSV (default {DEFAULT_WORKSPACE})")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    parser.add_argument("--jobs", "-j", type=int, default=cores,
                        help=f"students graded in parallel (default: one per core, {cores} here)")
    parser.add_argument("--chapter", action="append", dest="chapters", help="grade only this chapter (repeatable)")
    parser.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT, help=f"seconds per cell (default {CELL_TIMEOUT})")
    parser.add_argument("--notebook-timeout", type=int, default=NOTEBOOK_TIMEOUT,
                        help=f"seconds per notebook (default {NOTEBOOK_TIMEOUT})")
    parser.add_argument("--no-feedback", action="store_true", help="skip nbgrader generate_feedback")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--weak-containment", action="store_true",
                        help="where bubblewrap cannot run, grade anyway with kernels contained only by a fresh folder "
                             "and resource limits (they can read what you can; the report says so)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        _, report = grade_all(args.submissions, args.workspace, args.jobs, tuple(args.chapters or ()) or None,
                              args.cell_timeout, args.notebook_timeout, args.quiet, not args.no_feedback,
                              args.weak_containment)
    except ContainmentError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
