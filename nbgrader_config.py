"""nbgrader settings for this course, fit for grading untrusted student code.

Run nbgrader from the repository root, or from a workspace made by
course.tooling.workspace (its own nbgrader_config.py loads this file and sets
the workspace as the course root, so run-time state stays out of git).
"""
from course.tooling.preprocessors import WARNING_PATTERN, HideHiddenTestsInFeedback, StripCellTags
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, Execute, GetGrades,
    IgnorePattern, LimitOutput, OverwriteCells, OverwriteKernelspec, SaveAutoGrades,
)
from nbconvert.preprocessors import ClearMetadataPreprocessor

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = "autograd-course"

# Stray files beside a submission (a torch.py, a course/ folder) are never
# copied next to the notebook that runs: only notebooks are graded. The course
# ships every helper inside the installed `course` package, so nothing else is
# needed from source/ either.
c.CourseDirectory.ignore = ["*"]

# Per-cell wall-clock limit (seconds); a cell past it is interrupted and scores 0.
c.Execute.timeout = 60
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

# A deleted test cell is put back from the gradebook and scored.
c.OverwriteCells.add_missing_cells = True

c.Autograde.sanitize_preprocessors = [
    ClearOutput,
    DeduplicateIds,
    StripCellTags,  # a skip-execution tag must not let a test cell pass unrun
    OverwriteKernelspec,
    OverwriteCells,
    CheckCellMetadata,
]
c.Autograde.autograde_preprocessors = [
    Execute,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Feedback shows scores and messages, never the hidden tests' code.
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTestsInFeedback, CSSHTMLHeaderPreprocessor]
