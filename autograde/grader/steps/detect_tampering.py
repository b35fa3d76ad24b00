"""Steps: record what a submission changed in cells it may not change; drop the metadata nbgrader would choke on."""
from __future__ import annotations

from dataclasses import dataclass

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

from autograde import notebook as nbk
from autograde.grader.records import releases
from autograde.grader.workspace import RELEASES, course_file
from autograde.grader.records import incidents
from autograde.grader.records.incidents import Incident, label
from autograde.grader.records.releases import EarlierReleases
from autograde.notebook import normalised


CONTROL_TAGS = ("skip-execution", "raises-exception")
"""Cell tags that control execution: a student who adds one to a test cell must not skip it."""


@dataclass(frozen=True)
class ExpectedCell:
    """A graded or locked cell of the assignment, as the gradebook holds it."""

    name: str
    cell_type: str
    locked: bool
    grade: bool
    solution: bool
    points: float | None
    release_source: str
    """the source a student received (hidden tests removed)"""


def tampering(submission: NotebookNode, expected: dict[str, ExpectedCell],
              earlier: EarlierReleases = EarlierReleases()) -> list[Incident]:
    """What a submission changed in the cells it may not change (an earlier release's version is no change)."""
    out: list[Incident] = []
    seen: dict[str, int] = {}
    for i, cell in enumerate(submission.cells):
        tags = [t for t in cell.get("metadata", {}).get("tags", []) if t in CONTROL_TAGS]
        if tags:
            out.append(Incident("tampering", label(cell, i),
                                f"cell {label(cell, i)} was tagged {', '.join(tags)}; the tag was removed and the cell run"))
        gid = nbk.grade_id(cell)
        if gid:
            seen[gid] = seen.get(gid, 0) + 1
    for gid, count in seen.items():
        if count > 1 and gid in expected:
            what = "test" if expected[gid].grade else "answer" if expected[gid].solution else "read-only"
            out.append(Incident("tampering", gid, f"{what} cell {gid} appears {count} times; only one copy was graded"))
    present = {nbk.grade_id(c): c for c in submission.cells if nbk.grade_id(c)}
    old_release = earlier.release_of(present, {gid: e.release_source for gid, e in expected.items() if e.locked})
    for gid, exp in expected.items():
        cell = present.get(gid)
        kind = "test" if exp.grade else "answer" if exp.solution else "read-only"
        if cell is None:
            if old_release is not None and gid not in old_release.get("ids", ()):
                continue  # added after the release this notebook was handed out under: run, not missed
            if exp.grade or exp.locked:
                fate = "restored from the gradebook and run" if exp.grade else "restored from the release and run"
                out.append(Incident("tampering", gid, f"{kind} cell {gid} was deleted ({fate})"))
            continue
        if cell.cell_type != exp.cell_type:
            out.append(Incident("tampering", gid, f"{kind} cell {gid} was changed to a {cell.cell_type} cell "
                                                  f"(changed back to {exp.cell_type})"))
        meta = nbk.nbgrader_meta(cell)
        if exp.grade and exp.points is not None and meta.get("points") is not None:
            try:
                changed = float(meta["points"]) != float(exp.points)
            except (TypeError, ValueError):
                changed = True
            if changed and old_release is not None:  # the points the earlier release gave are no change
                try:
                    changed = old_release.get("points", {}).get(gid) != float(meta["points"])
                except (TypeError, ValueError):
                    pass
            if changed:
                out.append(Incident("tampering", gid, f"the points of {gid} were changed to {meta['points']!r} "
                                                      f"(restored to {exp.points:g})"))
        if (exp.locked and not exp.solution and normalised(cell.source) != normalised(exp.release_source)
                and not earlier.known_version(gid, cell.source)):
            out.append(Incident("tampering", gid, f"{kind} cell {gid} was edited (the original was restored and run)"))
    return out


def _expected_cells(resources: ResourcesDict) -> dict[str, ExpectedCell]:
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
            out[cell.name] = ExpectedCell(
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
        found = tampering(nb, expected, earlier)
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
