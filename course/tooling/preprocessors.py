"""nbgrader preprocessors this course adds to nbgrader's own pipeline (see nbgrader_config.py)."""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor
from traitlets import List, Unicode

__all__ = ["StripCellTags", "HideHiddenTestsInFeedback", "WARNING_PATTERN"]

WARNING_PATTERN = r"(?m)^.*:\d+: [A-Za-z_]*Warning: "
"""A line as Python's warnings module writes it (file:line: SomeWarning: message)."""


class StripCellTags(NbGraderPreprocessor):
    """Remove execution-control tags from a submission before it runs.

    nbclient skips any cell tagged `skip-execution`; a student who tags a test
    cell that way would otherwise have it score full marks without running.
    Tags carry no meaning for grading, so the listed ones are dropped.
    """

    tags_to_strip = List(
        Unicode(), default_value=["skip-execution", "raises-exception", ""],
        help="Cell tags removed from every cell of a submission before execution.",
    ).tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        tags = cell.get("metadata", {}).get("tags")
        if tags:
            kept = [t for t in tags if t not in self.tags_to_strip]
            if len(kept) != len(tags):
                self.log.warning("Removed tags %s from cell %d", sorted(set(tags) - set(kept)), index)
                cell.metadata["tags"] = kept
        return cell, resources


class HideHiddenTestsInFeedback(ClearHiddenTests):
    """Remove hidden-test code from the feedback a student receives.

    The hidden region is cut from each test cell's source (nbgrader's
    ClearHiddenTests), and the traceback of an error in such a cell, which
    would quote the failing hidden line, is replaced by the error's type and
    message: the message is written for the student by course.checking.
    """

    note = Unicode(
        "# (hidden tests ran here; their code is not shown)",
        help="Line left where a hidden-test region was removed.",
    ).tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type != "code" or self.begin_test_delimeter not in cell.source:
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
