"""An unfinished exercise never breaks the rest of the notebook (autograde.build.single_stub), and the stand-in
that makes it so never earns the exercise's own points under the grader."""
from __future__ import annotations

import pytest

from course.checking import answer_or_reference, is_stub

from autograde.build import single_stub


def test_any_one_exercise_left_as_its_stub_breaks_no_other_cell(chapter, student_runs):
    found = student_runs(chapter)[0]
    assert not found[()], "the filled notebook itself fails:\n" + "\n".join(map(str, found[()]))
    broken = [str(b) for group, cells in found.items() if group for b in cells]
    assert not broken, f"{chapter}: cells that break when one exercise is left as its stub:\n" + "\n".join(broken)
    assert len(found) - 1 == len(single_stub.groups(chapter)) >= 5


def _stub(x):
    """A stub as the release hands it out."""
    # YOUR CODE HERE
    raise NotImplementedError()


def test_under_the_grader_the_graded_name_never_gets_the_reference(capsys):
    from autograde.hidden import harness

    ns = {"double": _stub}
    engine_double = answer_or_reference("double", lambda x: 2 * x, "exercise 9", namespace=ns)
    assert "exercise 9 (double) is not answered yet" in capsys.readouterr().out
    assert is_stub(_stub) and engine_double(3) == 6  # a given cell or another exercise's test: the reference
    harness._STATE["own"] = ("double",)
    try:
        with pytest.raises(NotImplementedError):  # the exercise's own test cell: the student's stub
            engine_double(3)
    finally:
        harness._STATE.pop("own", None)
    ns["double"] = lambda x: x + x + 1
    assert engine_double(3) == 7 and not is_stub(ns["double"])
