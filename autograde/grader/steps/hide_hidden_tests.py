"""Step (feedback): remove hidden-test code, the tracebacks that quote it, and any output line that quotes the
hidden tests or the solutions (whatever printed it) from what a student sees."""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Unicode

from autograde.grader.secrets import scrub_outputs


class HideHiddenTestsInFeedback(ClearHiddenTests):
    """Remove hidden-test code from the feedback a student receives.

    The hidden region is cut from each test cell's source (nbgrader's
    ClearHiddenTests), and the traceback of an error in such a cell, which
    would quote the failing hidden line, is replaced by the error's type and
    message: the message is written for the student by course.checking.
    Every cell's outputs are then scrubbed of lines that quote the chapter's
    hidden tests or solutions (autograde.grader.secrets), whoever printed them.
    """

    note = Unicode(
        "# (hidden tests ran here; their code is not shown)",
        help="Line left where a hidden-test region was removed.",
    ).tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type != "code":
            return cell, resources
        chapter = resources.get("nbgrader", {}).get("assignment", "")
        if chapter:
            scrub_outputs(cell, chapter)
        if self.begin_test_delimeter not in cell.source:
            return cell, resources
        lines, inside = [], False
        for line in cell.source.split("\n"):
            if self.begin_test_delimeter in line:
                inside = True
                lines.append(line[: len(line) - len(line.lstrip())] + self.note)
            elif self.end_test_delimeter in line:
                inside = False
            elif not inside:
                lines.append(line)
        cell.source = "\n".join(lines)
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


