"""Step: report what a submission's own code does with files and the shell (the sandbox contains it; no cost).

What could change a score is checked at run time, in the kernel, by SandboxedExecute and the harness
(autograde.hidden.harness): torch inside graded code, graded code not written in the notebook, this
chapter's reference engine, patched helpers and hooks.
"""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from autograde.grader import incidents


class NoteFileAccess(NbGraderPreprocessor):
    """Record file and shell access in the cells a student wrote (runs on the notebook as it will run)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        incidents.add(nb, incidents.file_access(nb))
        return nb, resources
