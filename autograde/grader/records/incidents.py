"""Record: the incidents of a graded submission, what the grader detected or neutralised, in plain words, and
what it cost; stored in the notebook's metadata from one grading step to the next.

The steps that find them (autograde.grader.steps): DetectTampering (the submission against the assignment
as the gradebook has it), NoteFileAccess (what a student's code does with files and the shell, reported
only), SandboxedExecute (timeouts, crashes, memory, output, and from the harness in the kernel,
autograde.hidden.harness, hooks it undid and cheating it found: torch inside graded code, graded code not
written in the notebook, this chapter's reference engine imported). ApplyIncidents charges cheating to
exactly the test cells it concerns.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from nbformat import NotebookNode

from autograde import notebook as nbk

METADATA_KEY = "autograde"
"""Notebook metadata key under which incidents travel from one grading step to the next."""


@dataclass(frozen=True)
class Incident:
    """One thing that happened while grading a submission."""

    kind: str
    """timeout | time-limit | crash | exit | memory | output | processes | tampering | hook | cheating | files |
    network | failed | ungradable"""
    cell: str
    """the cell it happened in (grade_id, cell id or position)"""
    text: str
    """what happened, in plain words"""
    costs: tuple[str, ...] = field(default=())
    """grade_ids of the test cells that score 0 because of it (the grader sets them to 0)"""
    own_files: tuple[str, ...] = field(default=())
    """files only: the plain file names, written as literals, that are all the cell's file calls name (a notes
    file beside the notebook); empty when a call names anything else or a computed path"""
    shown: bool = True
    """False: kept in incidents.json, left out of the report (an instructor need not look at it)"""

    def to_json(self) -> dict:
        return {**asdict(self), "costs": list(self.costs), "own_files": list(self.own_files)}

    @classmethod
    def from_json(cls, data: dict) -> "Incident":
        return cls(data["kind"], data["cell"], data["text"], tuple(data.get("costs", ())),
                   tuple(data.get("own_files", ())), data.get("shown", True))

    def words(self) -> str:
        """One line for a report."""
        cost = f" [scored 0: {', '.join(self.costs)}]" if self.costs else ""
        return f"{self.kind}: {self.text}{cost}"


def shown(found: list[Incident]) -> list[Incident]:
    """The incidents a report lists (the others are in incidents.json only)."""
    return [i for i in found if i.shown]


NOTES_BYTES = 1 << 20
"""What a notebook may write into its own folder, in all, for its file access to stay out of the report."""


def settle_own_files(found: list[Incident], writes: dict | None) -> list[Incident]:
    """Leave out of the report the file access of cells that name only plain files of their own, when the run
    bears it out: `writes` (the harness's record, harness.file_writes()) shows every file the notebook wrote
    inside its own folder, NOTES_BYTES in all at most, and nothing written elsewhere. Without a record (the
    harness unreachable) every incident stays in the report."""
    if not writes or writes.get("elsewhere") or writes.get("bytes", NOTES_BYTES + 1) > NOTES_BYTES:
        return found
    return [replace(i, shown=False) if i.kind == "files" and i.own_files and i.shown else i for i in found]


def stored(nb: NotebookNode) -> list[Incident]:
    """The incidents recorded in a notebook's metadata."""
    return [Incident.from_json(d) for d in nb.metadata.get(METADATA_KEY, {}).get("incidents", [])]


def store(nb: NotebookNode, incidents: list[Incident]) -> None:
    """Record incidents in a notebook's metadata (deduplicated, in order)."""
    seen, out = set(), []
    for inc in incidents:
        key = (inc.kind, inc.cell, inc.text, inc.costs, inc.shown)
        if key not in seen:
            seen.add(key)
            out.append(inc.to_json())
    nb.metadata.setdefault(METADATA_KEY, {})["incidents"] = out


def add(nb: NotebookNode, new: list[Incident]) -> None:
    """Append incidents to those recorded in a notebook's metadata."""
    store(nb, stored(nb) + list(new))


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output for a cell, as the kernel would have written it (nbgrader scores such a cell 0)."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def label(cell: NotebookNode, index: int) -> str:
    """A cell's name for a report: its grade_id, else its id, else its position."""
    return nbk.grade_id(cell) or cell.get("id") or f"cell {index + 1}"
