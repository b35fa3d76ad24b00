"""The mutation measure (autograde/mutation): its committed report has the promised shape and covers every chapter,
every equivalent mutant has its reason and is still generated, and the generator keeps to what it promises."""
from __future__ import annotations

import json

import pytest

from autograde import mutation
from course import CHAPTERS

KEYS = {"generated", "killed", "equivalent", "survived"}


def test_report_has_every_chapter_in_the_promised_shape():
    report = json.loads(mutation.REPORT.read_text())
    assert set(report) == {"chapters"}
    assert list(report["chapters"]) == list(CHAPTERS), "make mutation (all chapters) writes a row per chapter"
    survivors = json.loads(mutation.SURVIVORS.read_text())
    for chapter, row in report["chapters"].items():
        assert set(row) == KEYS, f"{chapter}: {sorted(row)}"
        assert all(isinstance(v, int) and v >= 0 for v in row.values()), f"{chapter}: {row}"
        assert row["killed"] + row["equivalent"] + row["survived"] == row["generated"], f"{chapter}: {row}"
        assert row["generated"] >= 30, f"{chapter}: at least 30 mutants a chapter"
        assert len(survivors[chapter]) == row["survived"], f"{chapter}: survivors.json and report.json disagree"


def test_every_equivalent_mutant_has_a_reason():
    entries = json.loads(mutation.EQUIVALENT.read_text())
    for e in entries:
        assert set(e) == {"chapter", "cell", "operator", "before", "after", "reason"}, e
        assert e["chapter"] in CHAPTERS, e
        assert len(e["reason"].split()) >= 4, f"a reason in a sentence, not a word: {e}"
        assert "\n" not in e["reason"], f"one line: {e}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_committed_report_is_what_make_mutation_generates_now(chapter):
    """The mutants make mutation would generate today are the ones the committed report counted: a change to an
    answer (or to the operators) without `make mutation CHAPTER=...` fails here, as a stale release does. Every
    equivalent entry must still be generated, and every survivor."""
    pytest.importorskip("cosmic_ray", reason="cosmic-ray comes with the mutation extra (make installs it)")
    generated = mutation.generate(chapter)
    keys = {m.key for m in generated}
    row = json.loads(mutation.REPORT.read_text())["chapters"][chapter]
    assert row["generated"] == len(generated), (
        f"{chapter}: the report counts {row['generated']} mutants, the answers give {len(generated)} today: "
        f"run make mutation CHAPTER={chapter} and commit autograde/mutation/")
    assert set(mutation.equivalent(chapter)) <= keys, f"{chapter}: equivalent.json lists mutants no longer generated"
    for s in json.loads(mutation.SURVIVORS.read_text())[chapter]:
        assert (s["cell"], s["operator"].split("/", 1)[1], s["before"], s["after"]) in keys, s


def test_mutants_change_only_what_the_student_writes_and_compile():
    """Every mutant of one chapter changes a line between the solution markers of a graded answer cell, differs from
    the answer, and compiles."""
    pytest.importorskip("cosmic_ray", reason="cosmic-ray comes with the mutation extra (make installs it)")
    cells = mutation.answer_cells("ch02_tape")
    found = mutation.generate("ch02_tape")
    assert found
    for m in found:
        source, written = cells[m.cell]
        assert m.line in written and m.source != source, m.id
        compile(m.source, m.id, "exec")
    assert len({m.source for m in found}) == len(found), "no mutant twice"
