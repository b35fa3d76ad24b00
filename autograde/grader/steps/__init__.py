"""The steps this course adds to nbgrader's pipelines, one nbgrader preprocessor per module.

nbgrader_config.py places them among nbgrader's own steps:
- autograde, sanitising: DetectTampering (first), DropEmptyMetadata, StripCellTags, RestoreMissingCells (nbgrader's
  OverwriteCells, putting back every missing cell in the release's order), NoteFileAccess;
- autograde, executing: SandboxedExecute (nbgrader's Execute in a contained kernel), then ApplyIncidents;
- generate_feedback: HideHiddenTestsInFeedback.
"""
from .apply_incidents import ApplyIncidents
from .contained_execute import SandboxedExecute
from .note_file_access import NoteFileAccess
from .detect_tampering import DetectTampering, DropEmptyMetadata
from .hide_hidden_tests import HideHiddenTestsInFeedback
from .restore_missing import RestoreMissingCells
from .strip_cell_tags import StripCellTags

WARNING_PATTERN = r"(?m)^.*:\d+: [A-Za-z_]*Warning: "
"""A line as Python's warnings module writes it (file:line: SomeWarning: message); IgnorePattern drops it from stderr."""

__all__ = ["ApplyIncidents", "DetectTampering", "DropEmptyMetadata", "HideHiddenTestsInFeedback", "NoteFileAccess",
           "RestoreMissingCells", "SandboxedExecute", "StripCellTags", "WARNING_PATTERN"]
