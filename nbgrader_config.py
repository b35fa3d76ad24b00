"""nbgrader settings for this course, fit for grading untrusted student code.

Run nbgrader from the repository root, or from a workspace made by
autograde.grader.workspace (its own nbgrader_config.py loads this file and sets
the workspace as the course root, so run-time state stays out of git).
"""
from autograde.grader.records.limits import LIMITS
from autograde.grader.steps import (
    WARNING_PATTERN, ApplyIncidents, DetectTampering, NoteFileAccess, DropEmptyMetadata, HideHiddenTestsInFeedback,
    RestoreMissingCells, SandboxedExecute, StripCellTags,
)
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, GetGrades,
    IgnorePattern, LimitOutput, OverwriteKernelspec, SaveAutoGrades,
)
from nbconvert.preprocessors import ClearMetadataPreprocessor

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = "autograd-course"

# Stray files beside a submission (a torch.py, a course/ folder) are never
# copied next to the notebook that runs: only notebooks are graded. The course
# ships every helper inside the installed `course` package, so nothing else is
# needed from source/ either.
c.CourseDirectory.ignore = ["*"]

# Per-cell limit, in seconds of CPU time of the kernel's whole sandbox (SandboxedExecute counts it; the wall
# clock is a backstop, LIMITS.wall_factor times it); a cell past it is interrupted and scores 0.
c.Execute.timeout = LIMITS.cell_seconds
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True

# Long outputs are cut so one submission cannot bloat the autograded notebook.
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100

# nbgrader scores a test cell 0 when anything reaches stderr. A NumPy or torch
# warning is not a wrong answer, so lines in Python's warning format are removed
# from stderr before scoring (IgnorePattern is nbgrader's own step; off by default).
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = WARNING_PATTERN

# A deleted test cell is put back from the gradebook and scored; so is a read-only cell, and an answer cell
# as its stub (RestoreMissingCells keeps nbgrader's setting name).
c.OverwriteCells.add_missing_cells = True

# Untrusted code runs in a contained kernel (autograde.grader.containment): a bubblewrap
# sandbox with its own user, mount, PID, IPC and network namespaces that sees the system,
# interpreter, venv and course read-only and only its own fresh folder writable (nobody's uid
# when grading as root), with memory / file size / process / CPU limits. The whole notebook has a
# CPU-time budget, each cell's output is capped, a crash restarts the kernel and
# grading goes on. Tampering and forbidden code (torch, this chapter's reference
# engine, patched helpers) are recorded as incidents in the autograded notebook's
# metadata; forbidden code costs the exercise it belongs to (ApplyIncidents).
# The limits themselves are written once, in autograde/grader/records/limits.py.
c.SandboxedExecute.notebook_timeout = LIMITS.notebook_seconds
c.SandboxedExecute.max_output_bytes = LIMITS.output_chars
c.SandboxKernelManager.memory_limit = LIMITS.memory_bytes     # RLIMIT_DATA (not RLIMIT_AS)
c.SandboxKernelManager.file_size_limit = LIMITS.file_bytes
c.SandboxKernelManager.process_limit = LIMITS.processes       # processes and threads of one kernel
c.SandboxKernelManager.cpu_limit = LIMITS.cpu_seconds
c.SandboxKernelManager.tmpfs_size = LIMITS.tmpfs_bytes
c.SandboxKernelManager.disk_size = LIMITS.disk_bytes           # the working folder: a tmpfs, not the host's disk

c.Autograde.sanitize_preprocessors = [
    DetectTampering,  # first: sees the submission exactly as handed in
    ClearOutput,
    DeduplicateIds,
    DropEmptyMetadata,  # else a duplicated test cell makes nbgrader fail on the whole notebook
    StripCellTags,  # a skip-execution tag must not let a test cell pass unrun
    OverwriteKernelspec,
    RestoreMissingCells,  # nbgrader's OverwriteCells; missing cells go back in the release's order
    NoteFileAccess,  # on the notebook as it will run (reported only; cheating is found at run time)
    CheckCellMetadata,
]
c.Autograde.autograde_preprocessors = [
    SandboxedExecute,  # nbgrader's Execute (same settings: c.Execute.timeout...) in the sandbox
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    ApplyIncidents,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Feedback shows scores and messages, never the hidden tests' code.
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTestsInFeedback, CSSHTMLHeaderPreprocessor]
