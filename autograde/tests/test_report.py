"""The grading report's incident column means "look at this": a note that cost nothing and that the sandbox
contained (a notes file written, a folder listed) is counted in one line and kept in incidents.json."""
from __future__ import annotations

from autograde.grader.command import Result, format_summary
from autograde.grader.incidents import Incident, file_access
from autograde import notebook as nbk
from nbformat.v4 import new_code_cell, new_notebook


def _answer_cell(source: str):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": "notes", "solution": True, "grade": False, "locked": False,
                                 "schema_version": 3}
    return cell


def test_a_notes_file_is_kept_out_of_the_column_and_a_costly_incident_is_not():
    nb = new_notebook(cells=[_answer_cell("with open('notes.txt', 'w') as f:\n    f.write('to do: exercise 3')")])
    notes = file_access(nb)
    assert [i.kind for i in notes] == ["files"] and not notes[0].listed
    assert Incident.from_json(notes[0].to_json()) == notes[0]
    cheat = Incident("cheating", "dual", "graded code calls torch", ("test_dual",))
    results = {"ch01_chain_rule": {"ann": Result(18.0, 18.0, list(notes)), "ben": Result(12.0, 18.0, [cheat])}}
    report = format_summary(results, ("ch01_chain_rule",))
    rows = {line.split()[0]: line.split() for line in report.split("\n\n")[0].splitlines()[2:]}
    assert rows["ann"][-1] == "none" and rows["ben"][-1] == "1", report
    section = report.split("Incidents:\n")[1]
    assert "ben ch01_chain_rule: cheating: graded code calls torch [scored 0: test_dual]" in section
    assert "ann" not in section and "1 more that cost nothing" in section and "incidents.json" in section
    assert nbk.grade_id(nb.cells[0]) == "notes"
