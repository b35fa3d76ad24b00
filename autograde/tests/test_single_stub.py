"""An unfinished exercise never breaks the rest of the notebook (autograde.authoring.single_stub), and the stand-in
that makes it so never earns the exercise's own points under the grader."""
from __future__ import annotations

import pytest

from course.checking import answer_or_reference, is_stub

from autograde.authoring import single_stub


def _check(chapter: str, found: dict) -> None:
    assert not found[()], "the filled notebook itself fails:\n" + "\n".join(map(str, found[()]))
    broken = [str(b) for group, cells in found.items() if group for b in cells]
    assert not broken, f"{chapter}: cells that break when one exercise is left as its stub:\n" + "\n".join(broken)
    assert len(found) - 1 == len(single_stub.groups(chapter)) >= 5


def test_any_one_exercise_left_as_its_stub_breaks_no_other_cell(chapter, student_runs):
    """make test: every cell but the demo cells, with each exercise left as its stub (the filled run has them all)."""
    _check(chapter, student_runs(chapter)[0])


@pytest.mark.exhaustive
def test_any_one_exercise_left_as_its_stub_breaks_no_demo_cell_either(chapter):
    """make test-exhaustive: the same with the demo cells too (a training curve, a throughput: most of a chapter's
    time, so make test leaves them out of the stubbed runs)."""
    _check(chapter, single_stub.measure(chapter, demo_cells=True))


def test_leaving_the_demo_cells_out_leaves_out_nothing_else(chapter):
    """The cells make test's stubbed runs skip are exactly the chapter's demo cells, and none is an answer or a test."""
    from autograde import notebook as nbk
    from autograde.authoring import visible
    from autograde.authoring.demo_cells import is_demo
    from autograde.paths import source_path

    cells = visible.plan(chapter, ())["cells"]
    skipped = {i for job in single_stub.stub_jobs(chapter, cells, demo_cells=False) for i in job.get("skip", ())}
    marked = {c.get("id") for c in nbk.read(source_path(chapter)).cells if is_demo(c)}
    code = [c for c in visible.filled_release(chapter).cells if c.cell_type == "code"]
    assert skipped == {i for i, c in enumerate(code) if c.get("id") in marked}
    answers = {g for group in single_stub.groups(chapter) for g in group}
    assert not [i for i in skipped if cells[i]["test"] or cells[i]["grade_id"] in answers], \
        "a demo cell that is an answer or test cell"
    assert not any(job.get("skip") for job in single_stub.stub_jobs(chapter, cells))


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


def _cells(*sources: str, tests: tuple[int, ...] = ()) -> list[dict]:
    return [{"source": s, "grade_id": f"c{i}", "test": i in tests} for i, s in enumerate(sources)]


def test_a_concept_stub_stops_early_only_where_nothing_later_can_read_its_answer():
    answer = '# Allowed answers: "a" or "b".\nanswer_x = "b"'
    own_test = 'check_choice("x", answer_x, "ab")'
    assert single_stub.literal_bindings(answer) == {"answer_x"}
    assert single_stub.unread_after(_cells("import numpy as np", answer, own_test, "print(np.pi)", tests=(2,)),
                                    [1], {"c2"})
    helper_in_test = own_test + "\ndef helper():\n    return 1"
    assert not single_stub.unread_after(_cells(answer, helper_in_test, "helper()", tests=(1,)), [0], {"c1"})
    for later in ("print(answer_x)", "print(globals()['answer_x'])", "print(eval('answer_' + 'x'))", "%who",
                  "import sys\nprint(sys.modules['__main__'].answer_x)", "def f():\n    return answer_x"):
        assert not single_stub.unread_after(_cells(answer, own_test, later, tests=(1,)), [0], {"c1"}), later
    for not_literal in ("answer_x = pick()", "answer_x = 'b'\nprint(answer_x)", "answer_x.value = 'b'",
                        "x, y = 'a', 'b'", "answer_x = 'b' if True else 'a'", "def answer():\n    return 'b'"):
        assert single_stub.literal_bindings(not_literal) is None, not_literal
