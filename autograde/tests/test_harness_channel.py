"""The private harness and its signed channel (issue 31), in a real IPython shell of a child process (an audit hook
cannot be removed, so it is never installed in the test process itself).

The corpus (test_autograder) grades the hostile and honest submissions end to end; these check the pieces: the
boot, signed calls and replies, a forged or replayed request, the harness's own names put back, the hidden helpers
served to the test cell only, and the reaches refused to a student's code."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from autograde.grader.harness_link import HarnessLink, HarnessUnreachable, sources
from autograde.hidden import harness

CHILD = textwrap.dedent('''
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell
    from autograde.grader.harness_link import HarnessLink, HarnessUnreachable
    shell = InteractiveShell.instance()
    link = HarnessLink("ch01_chain_rule")
    out = {}

    def evaluate(expression):
        return shell.user_expressions({"r": expression})["r"]

    def call(name, payload=None):
        expression, count = link.call(name, payload)
        return link.verify(evaluate(expression), count)

    def cell(source):
        result = shell.run_cell(source, store_history=True)
        return None if result.success else f"{type(result.error_in_exec).__name__}: {result.error_in_exec}"

    out["boot"] = evaluate(link.boot())["data"]["text/plain"]
    out["start"] = call("start", [[]])
    out["in_sys_modules"] = "autograde.hidden.harness" in sys.modules
    out["student_import"] = cell("import autograde.hidden.ch01_chain_rule as h\\nh.torch_gradient")
    out["student_gc"] = cell("import gc\\ngc.get_objects()")
    # a student's cell reaches the harness's names through an object left in reach, and replaces one
    out["patch"] = cell("import sys\\nfor f in sys.meta_path:\\n"
                        "    g = getattr(getattr(type(f), 'find_spec', None), '__globals__', {})\\n"
                        "    if '_STATE' in g: g['provenance'] = lambda ns, names: []; g['_STATE']['module_attrs']"
                        "['numpy']['isclose'] = print")
    test = "from autograde.hidden.ch01_chain_rule import torch_gradient\\nimport numpy as np\\n" \\
           "got = torch_gradient(lambda t: (t * t).sum(), np.ones(2))"
    before = call("before_test", {"names": [], "references": [], "torch": False, "source": test})
    out["tampered"] = before["harness"]["tampered"]
    out["test_cell"] = cell(test)
    out["got"] = shell.user_ns.get("got").tolist() if shell.user_ns.get("got") is not None else None
    after = call("after_test")
    out["hidden_left"] = [m for m in sys.modules if m.startswith("autograde.hidden")]
    import numpy
    out["isclose_is_numpy"] = getattr(numpy.isclose, "__module__", "") .startswith("numpy")
    # a forged request, and a replayed one, get no answer
    expression, count = link.call("after_test")
    out["forged"] = evaluate(expression.replace(link._sign(json.dumps({"n": count, "name": "after_test",
                                                                        "payload": None})), "0" * 64))["data"]
    try:
        link.verify(evaluate(expression), count)
        out["replayed"] = "answered once"
        link.verify(evaluate(expression), count)
        out["replayed"] = "answered twice"
    except HarnessUnreachable as exc:
        out["replayed"] += f", then {exc}"
    out["graded_now"] = cell("import course.checking as c\\nprint(c._graded_now())")
    print("RESULT" + json.dumps(out, default=str))
''')


@pytest.fixture(scope="module")
def child() -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(line[len("RESULT"):])


def test_the_harness_boots_outside_sys_modules(child):
    assert child["boot"] == "'installed'" and child["start"]["started"] is True
    assert child["in_sys_modules"] is False


def test_a_students_cell_cannot_import_the_hidden_helpers_or_walk_gc(child):
    assert child["student_import"] and child["student_import"].startswith(("ModuleNotFoundError", "Autograder"))
    assert child["student_gc"] and child["student_gc"].startswith("AutograderIntegrityError")


def test_the_harness_names_a_student_changed_are_put_back_and_reported(child):
    assert child["patch"] is None  # the reach itself is possible; its effect is not
    assert "provenance" in child["tampered"]
    assert child["isclose_is_numpy"]


def test_the_test_cell_imports_the_helpers_and_they_leave_after_it(child):
    assert child["test_cell"] is None and child["got"] == [2.0, 2.0]
    assert child["hidden_left"] == []


def test_forged_and_replayed_requests_get_no_answer(child):
    assert child["forged"]["text/plain"] == "None"
    assert child["replayed"] == "answered once, then no reply" or child["replayed"].startswith("answered once, then")


def test_the_stand_ins_ask_the_channel_which_names_are_graded(child):
    assert child["graded_now"] is None


def test_a_reply_not_signed_by_the_harness_is_refused():
    link = HarnessLink("ch01_chain_rule")
    _expression, count = link.call("after_test")
    forged = {"status": "ok", "data": {"text/plain": repr(json.dumps({"reply": json.dumps({"torch": []}),
                                                                        "sig": "0" * 64}))}}
    with pytest.raises(HarnessUnreachable):
        link.verify(forged, count)
    with pytest.raises(HarnessUnreachable):
        link.verify({"status": "error"}, count)


def test_the_kernel_gets_the_chapters_helpers_and_what_they_import_only():
    got = sources("ch08_capstone")
    assert {"autograde.hidden", "autograde.hidden.harness", "autograde.hidden.ch08_capstone"} <= set(got)
    assert "autograde.hidden.ch07_checkpointing" in got  # ch08's helper imports ch07's
    assert "autograde.hidden.ch02_tape" not in got
    assert "autograde.hidden.ch02_tape" not in sources("ch01_chain_rule")


def test_the_guard_keeps_pythons_binding_rules():
    class Graded:
        finite = np.isfinite               # a ufunc: Python does not bind it
        checked = staticmethod(np.isfinite)

        def method(self, x):
            return bool(self.finite(x)) and bool(self.checked(x))

    ns = {"Graded": Graded}
    undo = harness._install_guard(ns, ["Graded"])
    try:
        assert Graded().method(1.0) is True
        assert Graded.finite(np.inf) == np.False_
    finally:
        for action in reversed(undo):
            action()
