"""An nbgrader course folder outside the repository, driven through nbgrader's own apps and commands.

A Workspace holds nbgrader's run-time state (source copy, release,
submitted/, autograded/, feedback/, gradebook.db) in a folder that git
ignores. Its nbgrader_config.py loads the repository's configuration, so an
instructor can also `cd` into it and run any nbgrader command by hand.

generate_assignment and generate_feedback run nbgrader's apps in this process
(as nbgrader's own NbGraderAPI does: an nbgrader process costs seconds to
start); autograde runs the student's code and goes to an nbgrader process,
which a time limit can stop. Both read the run's Settings.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.grader.records import releases
from autograde.grader.records.settings import Settings

CONFIG_TEMPLATE = '''"""nbgrader settings for this workspace: the course's own, with this folder as the root."""
c = get_config()  # noqa: F821
load_subconfig({repo_config!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
'''


_IN_PROCESS = threading.Lock()
"""nbgrader's converters chdir into the course root while they run: one app at a time in this process."""

RELEASES = "earlier_releases"
"""The workspace's copy of autograde/releases/<chapter>.json: a grading step reads the workspace, not the repository."""


def course_file(resources: dict, *parts: str) -> Path:
    """A file of the workspace nbgrader is grading in, for a step: its course root is where the gradebook is
    (resources["nbgrader"]["db_url"], sqlite:///<root>/gradebook.db), else the current folder."""
    url = (resources or {}).get("nbgrader", {}).get("db_url", "")
    root = Path(url[len("sqlite:///"):]).parent if url.startswith("sqlite:///") else Path.cwd()
    return root.joinpath(*parts)


class NbgraderError(RuntimeError):
    """An nbgrader command failed; the message holds the end of its log, `errors` its [ERROR] lines."""

    def __init__(self, message: str, errors: str = "") -> None:
        super().__init__(message)
        self.errors = errors or message


@dataclass(frozen=True)
class CellScore:
    """One graded cell's result for one student."""

    score: float
    max_score: float


class Workspace:
    """One nbgrader course root with its own gradebook."""

    def __init__(self, root: Path, settings: Settings | None = None) -> None:
        self.root = Path(root).resolve()
        self.settings = settings or Settings()
        self.logs = self.root / "logs"

    # -- setting up ---------------------------------------------------------
    def create(self, chapters: tuple[str, ...]) -> None:
        """Write the config and copy the chapters' source notebooks in (keeps existing state)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        (self.root / "nbgrader_config.py").write_text(
            CONFIG_TEMPLATE.format(repo_config=str(nbk.REPO / "nbgrader_config.py"), root=str(self.root))
        )
        for chapter in chapters:
            src = nbk.REPO / "source" / chapter / f"{chapter}.ipynb"
            if not src.exists():
                raise FileNotFoundError(f"chapter {chapter}: no source notebook at {src}")
            dest = self.root / "source" / chapter
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / src.name)
            record = releases.record_path(chapter)   # what earlier releases handed out, for the grading steps
            if record.exists():
                (self.root / RELEASES).mkdir(exist_ok=True)
                shutil.copyfile(record, self.root / RELEASES / record.name)

    def _env(self) -> dict[str, str]:
        # nbgrader runs `alembic` from PATH when it creates a gradebook: this interpreter's bin folder goes first,
        # so an un-activated virtual environment works
        return dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

    @staticmethod
    def _check(what: str, text: str, failed: bool, log_path: Path) -> None:
        """Raise NbgraderError when an nbgrader step failed or logged an error (nbgrader autograde exits 0 even
        when a notebook could not be graded; its log says so)."""
        if failed or "[ERROR]" in text:
            tail = "\n".join(text.splitlines()[-40:])
            errors = "\n".join(ln for ln in text.splitlines() if "[ERROR]" in ln)[-2000:]
            raise NbgraderError(f"{what} failed in {log_path.parent.parent} (log {log_path}):\n{tail}",
                                errors or f"{what} failed")

    def nbgrader(self, *args: str, log: str, timeout: float | None = None) -> None:
        """Run one nbgrader command in this workspace as a process, with the run's settings (stopped after
        `timeout` seconds if given); raise NbgraderError with its log if it fails. Every nbgrader process the
        grader starts starts here."""
        cmd = [sys.executable, "-m", "nbgrader", *args, *self.settings.args()]
        log_path = self.logs / f"{log}.log"
        what = f"`nbgrader {' '.join(args)}`"
        with log_path.open("w") as out:
            try:
                proc = subprocess.run(cmd, cwd=self.root, env=self._env(), stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, timeout=timeout)
            except subprocess.TimeoutExpired:
                why = f"{what} ran past {timeout:.0f} s and was stopped"
                raise NbgraderError(f"{why} (log {log_path})", why) from None
        text = log_path.read_text(errors="replace")
        if proc.returncode != 0:
            text += f"\n[ERROR] exit status {proc.returncode}\n"
        self._check(what, text, proc.returncode != 0, log_path)

    @contextmanager
    def _app_environment(self):
        """One nbgrader app at a time, with the PATH an nbgrader process would get; the folder restored after."""
        with _IN_PROCESS:
            saved_path, saved_cwd = os.environ.get("PATH"), os.getcwd()
            os.environ["PATH"] = self._env()["PATH"]
            try:
                yield
            finally:
                os.chdir(saved_cwd)
                if saved_path is None:
                    os.environ.pop("PATH", None)
                else:
                    os.environ["PATH"] = saved_path

    def run_app(self, app_class: type, chapter: str, log: str, **traits) -> None:
        """Run one of nbgrader's converters (GenerateAssignment, GenerateFeedback) on `chapter` in this
        process, with this workspace's nbgrader_config.py and the run's settings, as nbgrader's NbGraderAPI runs
        them; its log goes to logs/<log>.log. Raise NbgraderError if it fails or logs an error."""
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.utils import capture_log
        from traitlets.config.loader import PyFileConfigLoader

        log_path = self.logs / f"{log}.log"
        with self._app_environment():
            config = PyFileConfigLoader("nbgrader_config.py", path=str(self.root)).load_config()
            config.merge(self.settings.config())
            # a logger of its own: its lines go to the log file, not to the grading command's output
            logger = logging.getLogger(f"autograde.nbgrader.{log}")
            logger.setLevel(logging.INFO)
            logger.propagate = False
            coursedir = CourseDirectory(config=config, log=logger)
            coursedir.assignment_id = chapter
            app = app_class(coursedir=coursedir, config=config, log=logger)
            for name, value in traits.items():
                setattr(app, name, value)
            result = capture_log(app)
        text = result.get("log", "") + (("\n[ERROR] " + result["error"]) if result.get("error") else "")
        log_path.write_text(text)
        self._check(f"nbgrader {app_class.__name__}", text, not result.get("success"), log_path)

    def generate_assignment(self, chapter: str) -> Path:
        """nbgrader generate_assignment: writes release/<chapter>/ and the chapter's cells into the gradebook."""
        from nbgrader.converters import GenerateAssignment

        self.run_app(GenerateAssignment, chapter, f"generate_assignment-{chapter}", force=True,
                     create_assignment=True)
        return self.root / "release" / chapter / f"{chapter}.ipynb"

    def submit(self, student: str, chapter: str, nb: NotebookNode | Path,
               extra_files: dict[str, str] | None = None) -> Path:
        """Place a student's notebook (and any files they put beside it) where nbgrader expects them."""
        dest = self.root / "submitted" / student / chapter / f"{chapter}.ipynb"
        if dest.parent.exists():
            shutil.rmtree(dest.parent)
        dest.parent.mkdir(parents=True)
        if isinstance(nb, Path):
            shutil.copyfile(nb, dest)
        else:
            nbk.write(nb, dest)
        for name, text in (extra_files or {}).items():
            (dest.parent / name).parent.mkdir(parents=True, exist_ok=True)
            (dest.parent / name).write_text(text)
        return dest

    # -- grading ------------------------------------------------------------
    def autograde(self, chapter: str, student: str | None = None, timeout: float | None = None) -> None:
        """nbgrader autograde (all submitted students, or one), regrading from scratch."""
        args = ["autograde", chapter, "--force"]
        if student:
            args.append(f"--student={student}")
        self.nbgrader(*args, log=f"autograde-{chapter}" + (f"-{student}" if student else ""), timeout=timeout)

    def generate_feedback(self, chapter: str) -> Path:
        """nbgrader generate_feedback: one HTML page per student, hidden tests removed."""
        from nbgrader.converters import GenerateFeedback

        self.run_app(GenerateFeedback, chapter, f"generate_feedback-{chapter}", force=True)
        return self.root / "feedback"

    def export(self, csv_path: Path) -> Path:
        """The gradebook as CSV: what `nbgrader export` writes, through its plugin in this process (an nbgrader
        process costs seconds to start; the plugin, milliseconds)."""
        from nbgrader.api import Gradebook
        from nbgrader.plugins.export import CsvExportPlugin

        plugin = CsvExportPlugin()
        plugin.to = str(csv_path)
        plugin.log.setLevel("WARNING")
        with Gradebook(self.db_url) as gb:
            plugin.export(gb)
        return csv_path

    def add_students(self, students: list[str]) -> None:
        """Put students in the gradebook: nbgrader export writes a row for each, 0 where nothing was graded."""
        from nbgrader.api import Gradebook

        with Gradebook(self.db_url) as gb:
            for student in students:
                gb.update_or_create_student(student)

    # -- reading results ----------------------------------------------------
    def autograded(self, student: str, chapter: str) -> NotebookNode | None:
        """The notebook nbgrader autograde wrote for a student (None when it wrote none)."""
        path = self.root / "autograded" / student / chapter / f"{chapter}.ipynb"
        return nbk.read(path) if path.exists() else None

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"

    def cell_scores(self, chapter: str) -> dict[str, dict[str, CellScore]]:
        """Per student, per graded cell (grade_id), the autograded score of a chapter."""
        from nbgrader.api import Gradebook, MissingEntry

        out: dict[str, dict[str, CellScore]] = {}
        with Gradebook(self.db_url) as gb:
            for student in gb.students:
                try:
                    sub = gb.find_submission_notebook(chapter, chapter, student.id)
                except MissingEntry:
                    continue
                out[student.id] = {g.name: CellScore(float(g.score), float(g.max_score)) for g in sub.grades}
        return out

    def totals(self, chapters: tuple[str, ...]) -> dict[str, dict[str, CellScore]]:
        """Per student, per chapter, (score, max) from the gradebook."""
        from nbgrader.api import Gradebook, MissingEntry

        out: dict[str, dict[str, CellScore]] = {}
        with Gradebook(self.db_url) as gb:
            for student in gb.students:
                for chapter in chapters:
                    try:
                        sub = gb.find_submission(chapter, student.id)
                    except MissingEntry:
                        continue
                    out.setdefault(student.id, {})[chapter] = CellScore(float(sub.score), float(sub.max_score))
        return out
