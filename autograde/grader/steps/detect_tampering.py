"""Steps: record what a submission changed in cells it may not change; drop the metadata nbgrader would choke on."""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

from autograde import notebook as nbk
from autograde.grader import releases
from autograde.grader.workspace import RELEASES, course_file
from autograde.grader import incidents


def _expected_cells(resources: ResourcesDict) -> dict[str, incidents.ExpectedCell]:
    """The assignment's graded and locked cells, as the gradebook holds them."""
    nbg = resources["nbgrader"]
    out = {}
    with Gradebook(nbg["db_url"]) as gb:
        notebook = gb.find_notebook(nbg["notebook"], nbg["assignment"])
        grades = {c.name: c for c in notebook.grade_cells}
        solutions = {c.name for c in notebook.solution_cells}
        for cell in notebook.source_cells:
            grade = cell.name in grades and cell.name not in solutions
            source = nbk.without_hidden_tests(cell.source) if grade else cell.source
            out[cell.name] = incidents.ExpectedCell(
                cell.name, cell.cell_type, bool(cell.locked), grade, cell.name in solutions,
                float(grades[cell.name].max_score) if cell.name in grades else None, source)
    return out


def _retired_ids(resources: ResourcesDict) -> set[str]:
    """grade_ids an earlier version of the chapter had (source metadata course.retired_grade_ids)."""
    chapter = resources.get("nbgrader", {}).get("assignment", "")
    path = course_file(resources, "source", chapter, f"{chapter}.ipynb")   # the workspace's copy
    if not chapter or not path.exists():
        return set()
    return set(nbk.read(path).metadata.get(nbk.COURSE_KEY, {}).get("retired_grade_ids", []))


class DetectTampering(NbGraderPreprocessor):
    """Record what a submission changed in cells it may not change (first step of sanitising).

    nbgrader's own steps then neutralise it: DeduplicateIds, StripCellTags,
    OverwriteCells (restores test and read-only cells, cell types and points;
    puts deleted test cells back). The incidents name it in the report.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        expected = _expected_cells(resources)
        retired = _retired_ids(resources)
        earlier = releases.load(resources.get("nbgrader", {}).get("assignment", ""), course_file(resources, RELEASES))
        found = incidents.tampering(nb, expected, earlier)
        for i, cell in enumerate(nb.cells):
            gid = nbk.grade_id(cell)
            if "nbgrader" in cell.get("metadata", {}) and gid not in expected:
                # nbgrader 0.9.6 fails on the whole notebook for a grading cell it does not know
                is_test = nbk.is_test(cell)
                del cell.metadata["nbgrader"]
                if gid in retired or (gid and earlier.known_version(gid, cell.source)):
                    # handed in before the chapter changed (a retired id, or a read-only or test cell exactly as an
                    # earlier release had it): an old test cell is not run, an old answer or given cell runs as is
                    if is_test:
                        cell.source = f"# test cell {gid} belongs to an earlier version of this chapter; not run"
                    continue
                if gid:
                    found.append(incidents.Incident(
                        "tampering", gid, f"cell {incidents.label(cell, i)} claims to be graded cell {gid}, which "
                                          "the assignment does not have; it was run as an ordinary cell"))
        incidents.store(nb, found)
        return nb, resources


class DropEmptyMetadata(NbGraderPreprocessor):
    """Remove the empty nbgrader metadata DeduplicateIds leaves on a duplicated cell.

    nbgrader 0.9.6's OverwriteCells (add_missing_task_cells) reads
    metadata.nbgrader.grade_id of every cell that has an nbgrader key and fails
    on the empty one, so a student who duplicates a test cell would otherwise
    get no grade at all. Run right after DeduplicateIds.
    """

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if "nbgrader" in cell.get("metadata", {}) and not cell.metadata.nbgrader.get("grade_id"):
            del cell.metadata["nbgrader"]
        return cell, resources
