"""Step: give 0 to the test cells an incident costs, with the reason as the cell's error."""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from autograde import notebook as nbk
from autograde.grader.records import incidents
from autograde.grader.records.incidents import error_output


class ApplyIncidents(NbGraderPreprocessor):
    """Give 0 to the test cells an incident costs, with the reason as the cell's error (before SaveAutoGrades)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        recorded = incidents.stored(nb)
        tests = {nbk.grade_id(c): c for c in nb.cells if nbk.is_test(c)}
        for inc in recorded:
            for gid in inc.costs:
                cell = tests.get(gid)
                if cell is not None:
                    cell.setdefault("outputs", []).append(error_output("AutograderIntegrityError", inc.text))
        return nb, resources
