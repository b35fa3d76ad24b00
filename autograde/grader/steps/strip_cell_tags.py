"""Step: remove execution-control tags (skip-execution...) from a submission before it runs."""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List, Unicode


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
