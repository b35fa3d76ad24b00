"""What a student reads in a real kernel: one line for a pass, a failing check's message without the helper's
frames, and one line naming the unanswered exercise a demo cell needs (course.checking)."""
from __future__ import annotations

import re

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from autograde.paths import REPO

ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS_STUB_DOUBLE = "def double(x):\n    \"\"\"Twice x.\"\"\"\n    # YOUR CODE HERE\n    raise NotImplementedError()"
CELLS = {
    "imports": "import numpy as np\nfrom course.checking import check_close, check_raises, needs, passed",
    "close": "check_close('f(2)', 1.0, 2.0, against='the worked example')",
    "shape": "check_close('grad', np.zeros(3), np.zeros((2, 3)))",  # check_close -> check_shape: two helper frames
    "raises": "check_raises('f(-1)', ValueError, lambda: 1.0)",
    "stubs": ("def central_difference(f, x, h=1e-6):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\n\n"
              "class Dual:\n    def __mul__(self, other):\n        # YOUR CODE HERE\n        raise NotImplementedError()"),
    "needs_function": "with needs('exercise 1, central_difference'):\n    print(central_difference(np.sin, 1.0))",
    "needs_method": "with needs():\n    Dual() * Dual()",
    "needs_message": "with needs('exercise 5'):\n    raise NotImplementedError('no rule for op pow')",
    "needs_other_error": "with needs('exercise 1'):\n    int('x')",
    "needs_answered": "with needs('exercise 1'):\n    print('ran')\nprint('after')",
    "passed": "passed('central_difference')",
    # a given cell installs the student's `double` into an engine; the reference stands in while it is a stub
    "stub_double": CELLS_STUB_DOUBLE,
    "install": ("from course.checking import answer_or_reference, current_or_reference, is_stub\n"
                "class Engine:\n    pass\n"
                "Engine.double = answer_or_reference('double', lambda self, x: 2 * x, 'exercise 9')\n"
                "print(Engine().double(21), is_stub(double), is_stub(Dual), is_stub(lambda: 1))"),
    "answer_double": "def double(x):\n    return x + x + 0.5",
    "engine_uses_answer": "print(Engine.double(4), is_stub(double))",
    # the stand-in remembers the answer it last found written: a changed body or a stub again must still be seen
    "code_swapped": "double.__code__ = (lambda x: 3 * x).__code__\nprint(Engine.double(4))",
    "stub_again": CELLS_STUB_DOUBLE + "\n\n\nprint(Engine().double(21))",
    "current": "print(current_or_reference('Dual', int, 'exercise 2').__name__)",
    # check_raises(..., RuntimeError) on a stub: NotImplementedError is a RuntimeError, but nothing is answered yet
    "raises_stub": "check_raises('backward of a non-scalar', RuntimeError, lambda: central_difference(np.sin, 1.0))",
    "raises_stub_expected": "print(type(check_raises('f', NotImplementedError, lambda: central_difference(np.sin, 1.0))).__name__)",
    "raises_on_purpose": ("def no_rule(op):\n    if op != 'add':\n        raise NotImplementedError(f'no rule for {op}')\n"
                          "    return 1\n"
                          "print(check_raises('no_rule', RuntimeError, lambda: no_rule('pow')))"),
}


@pytest.fixture(scope="module")
def outputs() -> dict[str, list]:
    """Run CELLS in a fresh kernel (the course installed as for a student); per cell, its outputs."""
    nb = new_notebook(cells=[new_code_cell(src) for src in CELLS.values()])
    NotebookClient(nb, timeout=120, startup_timeout=180, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO)}}).execute()
    return {name: cell.outputs for name, cell in zip(CELLS, nb.cells)}


def error_of(outputs: dict[str, list], name: str):
    errors = [o for o in outputs[name] if o.output_type == "error"]
    assert len(errors) == 1, f"cell {name}: expected one error, got {outputs[name]}"
    return errors[0], ANSI.sub("", "\n".join(errors[0].traceback))


@pytest.mark.parametrize("name, message", [
    ("raises_stub", "backward of a non-scalar: central_difference still raises NotImplementedError (an exercise left "
                    "as its stub), so this check cannot tell anything yet: write it first"),
    ("close", "f(2) differs from the worked example: got 1, expected 2"),
    ("shape", "grad has the wrong shape: got (3,), expected (2, 3)"),
    ("raises", "f(-1) should raise ValueError, but returned 1.0"),
])
def test_a_failing_check_shows_its_message_and_the_cells_line_not_the_helpers_frames(outputs, name, message):
    error, shown = error_of(outputs, name)
    assert error.ename == "AssertionError" and message in error.evalue
    assert f"AssertionError: {message}" in shown
    assert CELLS[name] in shown, f"the failing line of the cell is not shown:\n{shown}"
    assert "checking.py" not in shown and "__tracebackhide__" not in shown, f"helper frames shown:\n{shown}"
    assert "skipping hidden" not in shown


def test_a_demo_cell_names_the_unanswered_exercise_in_one_line(outputs):
    error, shown = error_of(outputs, "needs_function")
    assert error.ename == "NotAnsweredYet" and len(error.traceback) == 1, error.traceback
    assert shown == ("NotAnsweredYet: this cell needs exercise 1, central_difference: central_difference still "
                     "raises NotImplementedError. Write it, run its cell, then run this cell again.")
    assert not [o for o in outputs["needs_function"] if o.output_type == "stream"], "the cell stopped at the stub"
    _, method = error_of(outputs, "needs_method")
    assert method.startswith("NotAnsweredYet: this cell needs Dual.__mul__, which still raises") and "\n" not in method
    _, message = error_of(outputs, "needs_message")
    assert "needs exercise 5: <module> still raises NotImplementedError (no rule for op pow)" in message


def test_needs_leaves_other_errors_and_answered_exercises_alone(outputs):
    error, shown = error_of(outputs, "needs_other_error")
    assert error.ename == "ValueError" and "int('x')" in shown and "Traceback" in shown
    assert [o.text for o in outputs["needs_answered"]] == ["ran\nafter\n"]


def test_a_passing_visible_test_says_so_in_one_line(outputs):
    streams = outputs["passed"]
    assert len(streams) == 1 and streams[0].name == "stdout", streams
    assert streams[0].text.count("\n") == 1 and "central_difference passed" in streams[0].text


def test_a_stand_in_uses_the_reference_until_the_answer_exists_and_says_so_once(outputs):
    said = "".join(o.text for o in outputs["install"] if o.output_type == "stream")
    assert said == ("exercise 9 (double) is not answered yet: the course's reference stands in for it until it is.\n"
                    "42 True True False\n"), said
    # the answer defined after the install: the engine calls it, without the given cell run again
    assert [o.text for o in outputs["engine_uses_answer"]] == ["8.5 False\n"]
    assert [o.text for o in outputs["code_swapped"]] == ["12\n"]       # the new body, not the one remembered
    assert [o.text for o in outputs["stub_again"]] == ["42\n"]         # a stub again: the reference again
    shown = "".join(o.text for o in outputs["current"] if o.output_type == "stream")
    assert shown.endswith("int\n") and "exercise 2 (Dual) is not answered yet" in shown


def test_check_raises_accepts_not_implemented_when_it_is_asked_for_or_raised_on_purpose(outputs):
    assert [o.text.strip() for o in outputs["raises_stub_expected"] if o.output_type == "stream"] == ["NotImplementedError"]
    assert [o.text.strip() for o in outputs["raises_on_purpose"] if o.output_type == "stream"] == ["no rule for pow"]
