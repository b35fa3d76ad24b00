"""Step: nbgrader's OverwriteCells, with missing cells put back where the assignment has them.

nbgrader 0.9.6's OverwriteCells.add_missing_grade_cells puts a missing test cell after "the previous source cell",
looked up among the submission's graded and answer cells only, and visits the missing cells in the gradebook's
order. A notebook handed out before the chapter gained an exercise (an answer cell and its test cell, or a test cell
after a read-only cell) makes that lookup fail with a KeyError, and the whole notebook gets no grade. Read-only
cells the submission lacks are not put back at all, so the cells after them run without what they define.

This step walks the assignment's cells in the release notebook's order and puts every missing cell back after the
last cell before it that the submission has: test cells (scored, as nbgrader does), read-only cells (run as the
release has them) and answer cells (the release's stub: the exercise scores nothing, the cells after it run).
DetectTampering, which runs before this, has already recorded a deletion as an incident, unless an earlier
release of the chapter did not have the cell (autograde.grader.records.releases).
"""
from __future__ import annotations

from pathlib import Path

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import OverwriteCells

from autograde import notebook as nbk


def _release_order(resources: ResourcesDict) -> list[str]:
    """grade_ids in the order of the workspace's release notebook (nbgrader generate_assignment wrote it)."""
    nbg = resources.get("nbgrader", {})
    url = str(nbg.get("db_url", ""))
    if not url.startswith("sqlite:///"):
        return []
    path = Path(url[len("sqlite:///"):]).parent / "release" / nbg.get("assignment", "") / f"{nbg.get('notebook', '')}.ipynb"
    if not path.is_file():
        return []
    return [gid for gid in (nbk.grade_id(c) for c in nbk.read(path).cells) if gid]


class RestoreMissingCells(OverwriteCells):
    """OverwriteCells (same settings: c.OverwriteCells.add_missing_cells), putting back every missing cell in order."""

    def add_missing_grade_cells(self, nb: NotebookNode, resources: ResourcesDict):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        sources = {c.name: c for c in source_nb.source_cells}
        grades = {c.name: c for c in source_nb.grade_cells}
        solutions = {c.name for c in source_nb.solution_cells}
        order = [gid for gid in _release_order(resources) if gid in sources]
        order += [gid for gid in sources if gid not in order]  # no release notebook: the gradebook's order
        position = {gid: i for i, gid in enumerate(nbk.grade_id(c) for c in nb.cells) if gid}
        after = -1  # the notebook index the next missing cell goes after
        for gid in order:
            if gid in position:
                after = position[gid]
                continue
            cell = self._cell(sources[gid], grades.get(gid), gid in solutions)
            self.log.warning("Missing cell %s encountered, adding it to the notebook", gid)
            nb.cells.insert(after + 1, cell)
            after += 1
            position = {g: i for i, g in enumerate(nbk.grade_id(c) for c in nb.cells) if g}
        return nb, resources

    def _cell(self, source_cell, grade_cell, is_solution: bool) -> NotebookNode:
        if grade_cell is not None:  # nbgrader's own form for a graded cell (test cell, or graded answer)
            return self.missing_cell_transform(source_cell, grade_cell.max_score, is_solution=is_solution)
        meta = {"grade": False, "grade_id": source_cell.name, "locked": bool(source_cell.locked),
                "solution": is_solution, "schema_version": 3, "checksum": source_cell.checksum}
        cell = NotebookNode({"cell_type": source_cell.cell_type, "metadata": NotebookNode({}), "source": source_cell.source})
        if source_cell.cell_type == "code":
            cell["execution_count"] = None
            cell["outputs"] = []
        if not is_solution:
            cell.metadata["deletable"] = False
            cell.metadata["editable"] = False
        cell.metadata["nbgrader"] = NotebookNode(meta)
        return cell
