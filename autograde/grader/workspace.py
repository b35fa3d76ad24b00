"""An nbgrader course folder outside the repository, driven through nbgrader's own commands.

A Workspace holds nbgrader's run-time state (source copy, release,
submitted/, autograded/, feedback/, gradebook.db) in a folder that git
ignores. Its nbgrader_config.py loads the repository's configuration, so an
instructor can also `cd` into it and run any nbgrader command by hand.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.grader import releases

CONFIG_TEMPLATE = '''"""nbgrader settings for this workspace: the course's own, with this folder as the root."""
c = get_config()  # noqa: F821
load_subconfig({repo_config!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
'''


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

    def __init__(self, root: Path, extra_args: tuple[str, ...] = ()) -> None:
        self.root = Path(root).resolve()
        self.extra_args = tuple(extra_args)
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

    def nbgrader(self, *args: str, log: str, timeout: float | None = None) -> None:
        """Run one nbgrader command in this workspace (stopped after `timeout` seconds if given); raise
        NbgraderError with its log if it fails. Every nbgrader process the grader starts starts here."""
        cmd = [sys.executable, "-m", "nbgrader", *args, *self.extra_args]
        log_path = self.logs / f"{log}.log"
        # nbgrader runs `alembic` from PATH: put this interpreter's bin folder first,
        # so an un-activated virtual environment works.
        env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        what = f"`nbgrader {' '.join(args)}`"
        with log_path.open("w") as out:
            try:
                proc = subprocess.run(cmd, cwd=self.root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, timeout=timeout)
            except subprocess.TimeoutExpired:
                why = f"{what} ran past {timeout:.0f} s and was stopped"
                raise NbgraderError(f"{why} (log {log_path})", why) from None
        text = log_path.read_text(errors="replace")
        # nbgrader autograde exits 0 even when a notebook could not be graded; its log says so.
        if proc.returncode != 0 or "[ERROR]" in text:
            tail = "\n".join(text.splitlines()[-40:])
            errors = "\n".join(ln for ln in text.splitlines() if "[ERROR]" in ln)[-2000:]
            raise NbgraderError(f"{what} failed in {self.root} (log {log_path}):\n{tail}",
                                errors or f"exit status {proc.returncode}")

    def generate_assignment(self, chapter: str) -> Path:
        """nbgrader generate_assignment: writes release/<chapter>/ and the chapter's cells into the gradebook."""
        self.nbgrader("generate_assignment", chapter, "--force", log=f"generate_assignment-{chapter}")
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
        self.nbgrader("generate_feedback", chapter, "--force", log=f"generate_feedback-{chapter}")
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
