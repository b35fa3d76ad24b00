"""The adversarial corpus: one small submission per attack, built from a chapter's release and solution.

Each Attack is the perfect student's notebook (the release with every answer
filled from the source) with one hostile change, or the release with the
first exercise left blank where the attack is about getting points for it.
It says exactly which test cells must score 0 (all others must keep full
marks) and which incidents the grader must report. The tests grade the whole
corpus through the real grading command (autograde.grader.apps.grade).

Usage: python -m autograde.corpus.attacks CHAPTER DEST   (writes DEST/<attack>/<chapter>/<chapter>.ipynb)
       python -m autograde.corpus.attacks CHAPTER DEST.zip   (the same, as an LMS export: nested folders, a
                                                              student folder whose name is not UTF-8)
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from nbformat import NotebookNode

from autograde import paths as build
from course import CHAPTERS
from autograde.authoring import catalogue as mut
from autograde import notebook as nbk


@dataclass(frozen=True)
class Attack:
    """One hostile submission and what grading it must give."""

    name: str
    why: str
    notebook: NotebookNode
    loses: frozenset[str]
    """test cells that must score 0; every other test cell keeps full marks"""
    incidents: tuple[str, ...]
    """incident kinds the report must name for this student"""
    extra_files: tuple[tuple[str, str], ...] = ()
    must_print: tuple[tuple[str, str], ...] = field(default=())
    """(cell grade_id, text its outputs must contain) in the autograded notebook"""
    must_not_print: tuple[str, ...] = field(default=())
    """text no output of the autograded notebook may contain"""
    raw: bytes | None = None
    """what the submitted file holds instead of the notebook (bad input)"""
    graded: bool = True
    """False: nothing can be graded; not run, 0 in grades.csv, the reason in the report"""
    zip_name: bytes | None = None
    """the student's folder name in the zip export, as raw bytes (not UTF-8)"""

    @property
    def student(self) -> str:
        """The student id the grading command gives this submission."""
        if self.zip_name is None:
            return self.name
        from autograde.grader.submissions import safe_id

        return safe_id(self.zip_name.decode("cp437"))  # zip names not valid UTF-8 are read as cp437


def _first_exercise(release: NotebookNode) -> tuple[str, str, list[str]]:
    """(answer cell grade_id, the function it defines, its test cells) of the first exercise with a function."""
    tests = nbk.exercise_tests(release)
    for i, cell in enumerate(release.cells):
        if nbk.is_solution(cell) and tests[i]:
            names = [n for n in nbk.defined_names(cell.source) if not n[:1].isupper()]
            if names:
                return nbk.grade_id(cell), sorted(names)[0], tests[i]
    raise ValueError("no exercise with a function and a test cell")


def _cell(nb: NotebookNode, gid: str) -> NotebookNode:
    return next(c for c in nb.cells if nbk.grade_id(c) == gid)


def _edit(nb: NotebookNode, gid: str, fn) -> NotebookNode:
    out = nbk.copy_notebook(nb)
    cell = _cell(out, gid)
    fn(cell, out)
    return out


def _append(nb: NotebookNode, gid: str, code: str) -> NotebookNode:
    return _edit(nb, gid, lambda cell, _: cell.__setitem__("source", cell.source + "\n\n" + code.strip() + "\n"))


FORK_BOMB = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
except OSError as exc:
    print(f"fork stopped after {children} children: {exc}")
"""

NOTES_FILE = """
with open("notes.txt", "a") as notes:
    notes.write("done; check the shapes again tomorrow\\n")
from pathlib import Path
print("NOTES:", Path("notes.txt").read_text())
"""

BIG_FILE = """
try:
    with open("big.bin", "wb") as f:
        for _ in range(200):
            f.write(b"\\0" * 2 ** 20)
    print("WROTE 200 MB")
except OSError as exc:
    print("write stopped:", exc)
"""

SNOOP = """
import glob, os
leaks = []
targets = TARGETS
for up in range(6):
    targets += glob.glob(os.path.join(*([".."] * up or ["."]), "*"))
targets += [f"/proc/{os.getppid()}/cwd/gradebook.db"]
for path in targets:
    try:
        if os.path.isdir(path):
            listing = os.listdir(path)
            if any(name in listing for name in ("gradebook.db", "submitted", "autograded", "source")):
                leaks.append(path)
        else:
            with open(path, "rb") as f:
                if f.read(64) and any(key in path for key in ("gradebook", ".ipynb", "source")):
                    leaks.append(path)
    except OSError:
        pass
print("\\n".join(f"LEAK {path}" for path in leaks) or "CONTAINED")
print("kernel uid", os.getuid())
"""


TORCH_AT_RUN_TIME = """
import importlib
_mine_FN = FN
def FN(*args, **kwargs):
    backend = importlib.import_module("to" + "rch")  # to check my answer
    backend.zeros(1)
    return _mine_FN(*args, **kwargs)
"""

TORCH_IN_PARTIAL = """
import functools, importlib
_mine_FN = FN
def _checked(*args, **kwargs):
    importlib.import_module("to" + "rch").zeros(1)  # to check my answer
    return _mine_FN(*args, **kwargs)
FN = functools.partial(_checked)
"""

TORCH_IN_CALLABLE_OBJECT = """
import importlib
_mine_FN = FN
class _Checked:
    def __call__(self, *args, **kwargs):
        importlib.import_module("to" + "rch").zeros(1)  # to check my answer
        return _mine_FN(*args, **kwargs)
FN = _Checked()
"""

REFERENCE_BY_PATH = """
import os, runpy, course
path = os.path.join(os.path.dirname(course.__file__), "reference", "CHAPTER.py")
try:
    exec(compile(open(path).read(), "<my notes>", "exec"))
    print("RAN THE REFERENCE BY EXEC")
except OSError as exc:
    print("CONTAINED: no reference to exec:", exc.strerror)
try:
    FN = runpy.run_path(path)["FN"]
    print("RAN THE REFERENCE BY RUNPY")
except OSError as exc:
    print("CONTAINED: no reference to run:", exc.strerror)
"""

COMPUTED_IMPORT = """
import importlib
try:
    FN = getattr(importlib.import_module("course.reference." + "CHAPTER"), "FN")
except Exception as exc:
    print("no reference:", type(exc).__name__)
"""

RUN_CELL_OVERRIDE = """
import ast
shell = get_ipython()
class Nothing(ast.NodeTransformer):
    def visit_Module(self, node):
        return ast.Module(body=[], type_ignores=[])
shell.ast_transformers.append(Nothing())
_real_run_cell = shell.run_cell
shell.run_cell = lambda raw_cell, *args, **kwargs: _real_run_cell("pass", *args, **kwargs)
"""

STACK_SNOOP = """
_mine_FN = FN
def FN(*args, **kwargs):
    import inspect, linecache
    frame = inspect.currentframe().f_back
    try:
        print("CALLER SOURCE:", inspect.getsource(frame))
    except Exception as exc:
        print("no source:", type(exc).__name__)
    print("CALLER LINES:", "".join(linecache.getlines(frame.f_code.co_filename))[:5000])
    return _mine_FN(*args, **kwargs)
"""


def _scratch(nb: NotebookNode, code: str, after: str | None = None) -> NotebookNode:
    """A code cell of the student's own (no nbgrader metadata) right after the answer cell `after`, or at the
    very end of the notebook."""
    from nbformat.v4 import new_code_cell

    out = nbk.copy_notebook(nb)
    index = out.cells.index(_cell(out, after)) + 1 if after else len(out.cells)
    out.cells.insert(index, new_code_cell(code))
    return out


def attacks(chapter: str, targets: tuple[str, ...] = (), port: int = 0) -> list[Attack]:
    """The corpus of a chapter. targets: grader files the snooping attacks try to read (paths they are told);
    port: a port the grader listens on at 127.0.0.1, which the network attack tries to reach."""
    source = nbk.read(build.source_path(chapter))
    release = nbk.read(build.release_path(chapter))
    release.metadata.pop("course", None)
    filled = mut.filled_submission(source, release)
    answer, fn, tests = _first_exercise(release)
    t1 = frozenset(tests)
    blank_answer = _cell(release, answer).source
    blank_first = _edit(filled, answer, lambda cell, _: cell.__setitem__("source", blank_answer))
    cat = mut.load(chapter)
    other = next(m for m in cat.mutants if m.cell != answer and not set(m.loses) & t1)

    def retag(cell, _):
        cell.metadata["tags"] = [*cell.metadata.get("tags", []), "skip-execution"]

    def tests_of(nb, fn_):
        for gid in tests:
            fn_(_cell(nb, gid), nb)

    def duplicate(nb):
        out = nbk.copy_notebook(nb)
        first = _cell(out, tests[0])
        copy = nbk.copy_notebook(first)
        copy.source = "pass  # my copy of the test"
        copy["id"] = first.get("id", "t") + "-copy"
        out.cells.insert(out.cells.index(first), copy)
        return out

    def changed(nb, fn_):
        out = nbk.copy_notebook(nb)
        tests_of(out, fn_)
        return out

    def to_markdown(cell, _):
        cell.cell_type = "markdown"
        cell.pop("outputs", None)
        cell.pop("execution_count", None)

    snoop = SNOOP.replace("TARGETS", repr(list(targets)))
    return [
        Attack("loop_in_function", f"{fn} never returns: the test cell that calls it times out",
               _append(filled, answer, f"def {fn}(*args, **kwargs):\n    while True:\n        pass"), t1, ("timeout",)),
        Attack("loop_after_definitions", "an endless loop at the end of an answer cell, after its definitions",
               _append(filled, answer, "while True:\n    pass"), frozenset(), ("timeout",)),
        Attack("loop_ignoring_interrupt", "an endless loop that ignores the interrupt: the kernel must be replaced",
               _append(filled, answer, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"),
               t1, ("crash",)),
        Attack("os_exit_in_function", f"{fn} calls os._exit: the kernel dies inside its test cell",
               _append(filled, answer, f"def {fn}(*args, **kwargs):\n    import os\n    os._exit(1)"), t1, ("crash",)),
        Attack("sys_exit_after_definitions", "sys.exit() at the end of an answer cell",
               _append(filled, answer, "import sys\nsys.exit(0)"), frozenset(), ("exit",)),
        Attack("memory_bomb", "allocates 10 GB after its definitions",
               _append(filled, answer, "hog = bytearray(10 * 1024 ** 3)"), frozenset(), ("memory",)),
        Attack("print_100mb", "prints 100 MB",
               _append(filled, answer, "print('x' * 100_000_000)"), frozenset(), ("output",)),
        Attack("fork_bomb", "forks until the process limit stops it",
               _append(filled, answer, FORK_BOMB), frozenset(), ("processes",),
               must_print=((answer, "fork stopped"),)),
        Attack("big_file", "writes a 200 MB file",
               _append(filled, answer, BIG_FILE), frozenset(), ("files",),
               must_print=((answer, "write stopped"),), must_not_print=("WROTE 200 MB",)),
        Attack("read_gradebook", "looks for the gradebook, the hidden tests and other students' files",
               _append(filled, answer, snoop), frozenset(), ("files",),
               must_print=((answer, "CONTAINED"),), must_not_print=("LEAK ",)),
        Attack("deleted_tests", "every test cell deleted from a correct notebook",
               nbk.NotebookNode({**filled, "cells": [c for c in filled.cells if not nbk.is_test(c)]}),
               frozenset(), ("tampering",)),
        Attack("edited_test", "first exercise blank, its test cells emptied",
               changed(blank_first, lambda cell, _: cell.__setitem__("source", "pass  # no test")), t1, ("tampering",)),
        Attack("duplicated_test", "first exercise blank, an emptied copy of its test placed before the original",
               duplicate(blank_first), t1, ("tampering",)),
        Attack("skip_execution_tag", "first exercise blank, its test cells tagged skip-execution",
               changed(blank_first, retag), t1, ("tampering",)),
        Attack("test_cell_to_markdown", "first exercise blank, its test cells turned into markdown",
               changed(blank_first, to_markdown), t1, ("tampering",)),
        Attack("shadow_torch_py", "a torch.py and a course/ package handed in beside a correct notebook",
               filled, frozenset(), ("files",),
               extra_files=(("torch.py", "raise ImportError('shadowed torch')\n"),
                            ("course/__init__.py", "raise ImportError('shadowed course')\n"))),
        Attack("notes_file", "an honest student: a correct notebook that keeps notes in a file beside it (nothing "
                             "for the report; incidents.json keeps the file access)",
               _append(filled, answer, NOTES_FILE), frozenset(), (), must_print=((answer, "NOTES: done"),)),
        Attack("torch_in_solution", f"{fn} computes its answer with torch at run time (checked by torch, "
                                    "wrapped so the text never says `torch` in the answer cell)",
               _append(filled, answer, TORCH_AT_RUN_TIME.replace("FN", fn)), t1, ("cheating",)),
        Attack("torch_explored_in_scratch", "a scratch cell of the student's own explores torch: allowed, no cost",
               _scratch(filled, "import torch\nprobe = torch.ones(3, requires_grad=True)\n"
                                "(probe * probe).sum().backward()\nprint(probe.grad)", after=answer), frozenset(), ()),
        Attack("reference_imported", f"takes {fn} from the reference engine of this chapter",
               _edit(filled, answer, lambda cell, _: cell.__setitem__(
                   "source", f"from course.reference.{chapter} import {fn}\n")), t1, ("cheating",)),
        Attack("torch_in_partial", f"{fn} is a functools.partial of a function that runs torch (the guard follows "
                                   "graded names that are not plain functions)",
               _append(filled, answer, TORCH_IN_PARTIAL.replace("FN", fn)), t1, ("cheating",)),
        Attack("torch_in_callable_object", f"{fn} is an object whose __call__ runs torch",
               _append(filled, answer, TORCH_IN_CALLABLE_OBJECT.replace("FN", fn)), t1, ("cheating",)),
        Attack("reference_by_path", "first exercise blank; runs this chapter's reference file by path (exec of its "
                                    f"text, runpy) to define {fn}: the file is absent from the sandbox",
               _append(blank_first, answer, REFERENCE_BY_PATH.replace("CHAPTER", chapter).replace("FN", fn)), t1,
               ("files",), must_print=((answer, "CONTAINED: no reference to exec"),),
               must_not_print=("RAN THE REFERENCE",)),
        Attack("reference_computed_import", f"takes {fn} from this chapter's reference through a module name "
                                            "built at run time (no text scan can see it)",
               _append(filled, answer, COMPUTED_IMPORT.replace("CHAPTER", chapter).replace("FN", fn)), t1, ("cheating",)),
        Attack("patched_check_close", f"patches course.checking.check_close to a no-op, with mutant {other.name} "
                                      "elsewhere: the patch is undone before every test, so the mutant still loses",
               _append(mut.apply_mutant(filled, other), answer,
                       "import course.checking\ncourse.checking.check_close = lambda *args, **kwargs: None"),
               frozenset(other.loses), ("hook",)),
        Attack("input_transformer_blank", "first exercise blank; its answer cell registers an IPython input "
                                          "transformer that empties every later cell (the test cells too)",
               _append(blank_first, answer, "get_ipython().input_transformers_cleanup.append(lambda lines: [])"),
               t1, ("hook",)),
        Attack("run_cell_override_blank", "first exercise blank; its answer cell replaces IPython's run_cell and an "
                                          "AST transformer so that test cells do nothing",
               _append(blank_first, answer, RUN_CELL_OVERRIDE), t1, ("hook",)),
        Attack("history_printed", "the last cell prints IPython's input history (In), where the hidden tests ran",
               _scratch(filled, "print('\\n'.join(In))\nprint(len(_ih))"), frozenset(), (),
               must_not_print=("### BEGIN HIDDEN", "torch.autograd.grad(")),
        Attack("stack_snooper", f"{fn} reads the frames of the test cell that calls it (inspect.currentframe) "
                                "to print its source: the grader refuses a frame to graded code while its checks "
                                "run, so the function raises and its tests lose",
               _append(filled, answer, STACK_SNOOP.replace("FN", fn)), t1, ("hook",),
               must_not_print=("torch.autograd.grad(",)),
        *escapes(chapter, filled, answer, targets, port),
        *judge_attacks(chapter, release, filled, blank_first, answer, fn, t1, other),
        *resource_attacks(chapter, filled, answer),
        *bad_inputs(chapter, filled),
    ]


# -- containment and bad input (issue 11, items 1, 2 and 6) ------------------------------------------------
SANDBOX = ("print_hidden_tests", "pth_in_venv", "rewrite_checking", "leave_session", "network", "later_reference",
           "reference_by_path",
           "read_gradebook", "fork_bomb", "cpu_hog", "disk_filler")
"""The attacks whose outcome depends on the sandbox (what the kernel sees, its uid, its process cap): the tests
grade them a second time as an unprivileged user."""
JUDGE = ("stack_snooper", "torch_in_thread", "torch_below_the_guard", "torch_mode_popped", "harness_patched",
         "channel_forged", "oracle_patched", "hidden_imported", "hidden_printed", "honest_tools_in_graded_code",
         "reference_stolen", "honest_ufunc_attribute")
"""The judge the student's code cannot reach (issue 31): graded a second time as an unprivileged user too."""

# Each escape is the perfect notebook with code appended to its first answer cell: it must keep full marks,
# print that it was contained, and leave nothing behind (the tests hash the course package, the virtual
# environment and the submissions, and look for its processes after grading).
PRINT_HIDDEN_TESTS = """
import json
found = []
for path in TARGETS:
    try:
        cells = json.load(open(path))["cells"]
        found += [line for c in cells for line in c["source"] if "BEGIN HIDDEN" in line or "assert" in line]
    except (OSError, ValueError, KeyError, TypeError):
        pass
print("\\n".join(f"HIDDEN {line}" for line in found) or "CONTAINED: no hidden test could be read")
"""

PTH_IN_VENV = """
import site, sys
written = []
for folder in [*site.getsitepackages(), sys.prefix]:
    try:
        with open(folder + "/zz_autograde_attack.pth", "a") as f:
            f.write("import os; os.environ['AUTOGRADE_ATTACK'] = 'pth'\\n")
        written.append(folder)
    except OSError as exc:
        print("write failed:", folder, exc.strerror)
print("\\n".join(f"PLANTED {f}" for f in written) or "CONTAINED: the environment is read-only")
"""

REWRITE_CHECKING = """
import course.checking
try:
    with open(course.checking.__file__, "a") as f:
        f.write("\\ndef check_close(*args, **kwargs):\\n    pass\\n")
    print("REWROTE", course.checking.__file__)
except OSError as exc:
    print("CONTAINED: course is read-only:", exc.strerror)
"""

LEAVE_SESSION = """
import os, subprocess
subprocess.Popen(["autograde-escaped-setsid", "1000"], executable="/bin/sleep", start_new_session=True)
middle = os.fork()
if middle == 0:  # double fork: the grandchild is nobody's child and in a session of its own
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["autograde-escaped-fork", "1000"])
    os._exit(0)
try:
    os.waitpid(middle, 0)  # not os.wait(): where SIGCHLD is ignored, it waits for every child, the setsid one too
except ChildProcessError:  # reaped already (SIGCHLD ignored)
    pass
print("left two processes behind")
"""

NETWORK = """
import socket
reached = []
for host, port in (("127.0.0.1", PORT), ("1.1.1.1", 80), ("8.8.8.8", 53)):
    try:
        socket.create_connection((host, port), timeout=3).close()
        reached.append(f"{host}:{port}")
    except OSError as exc:
        print(f"no connection to {host}:{port}: {exc}")
print("\\n".join(f"REACHED {r}" for r in reached) or "CONTAINED: no network")
"""

LATER_REFERENCE = """
import os, course
path = os.path.join(os.path.dirname(course.__file__), "reference", "LATER.py")
try:
    print("LATER REFERENCE", open(path).read()[:300])
except OSError as exc:
    print("CONTAINED: no later reference:", exc.strerror)
"""


def escapes(chapter: str, filled: NotebookNode, answer: str, targets: tuple[str, ...], port: int) -> list[Attack]:
    """Attempts to reach past the kernel's own folder: each keeps full marks, fails, and is reported."""
    later = build.REPO / "course" / "reference"
    after = [ch for ch in CHAPTERS[CHAPTERS.index(chapter) + 1:] if (later / f"{ch}.py").exists()]
    out = [
        Attack("print_hidden_tests", "opens the source notebook (hidden tests) and the gradebook by their real "
                                     "paths and prints the hidden test lines",
               _append(filled, answer, PRINT_HIDDEN_TESTS.replace("TARGETS", repr(list(targets)))), frozenset(),
               ("files",), must_print=((answer, "CONTAINED"),), must_not_print=("HIDDEN ",)),
        Attack("pth_in_venv", "appends a .pth file to the virtual environment's site-packages (it would run in "
                              "every later Python process)",
               _append(filled, answer, PTH_IN_VENV), frozenset(), ("files",),
               must_print=((answer, "CONTAINED"),), must_not_print=("PLANTED ",)),
        Attack("rewrite_checking", "rewrites course/checking.py (the installed test helpers) into a no-op",
               _append(filled, answer, REWRITE_CHECKING), frozenset(), ("files",),
               must_print=((answer, "CONTAINED"),), must_not_print=("REWROTE ",)),
        Attack("leave_session", "starts processes that leave the session (setsid, double fork) and keep running",
               _append(filled, answer, LEAVE_SESSION), frozenset(), ("processes",),
               must_print=((answer, "left two processes behind"),)),
        Attack("network", "connects to the grader's loopback, the internet and a DNS server",
               _append(filled, answer, NETWORK.replace("PORT", str(port or 9))), frozenset(), ("network",),
               must_print=((answer, "CONTAINED"),), must_not_print=("REACHED ",)),
    ]
    if after:
        out.append(Attack("later_reference", f"reads the reference solution of a later chapter ({after[0]}) by path",
                          _append(filled, answer, LATER_REFERENCE.replace("LATER", after[0])), frozenset(), ("files",),
                          must_print=((answer, "CONTAINED"),), must_not_print=("LATER REFERENCE",)))
    return out


# -- the judge the student's code cannot reach (issue 31, items 1-7) ----------------------------------------
TORCH_IN_THREAD = """
import importlib, threading
from concurrent.futures import ThreadPoolExecutor
_pool = ThreadPoolExecutor(1)  # started at definition time, outside any test
_mine_FN = FN
def FN(*args, **kwargs):
    backend = importlib.import_module("to" + "rch")
    box = []
    worker = threading.Thread(target=lambda: box.append(float(backend.ones(2).sum())))
    worker.start()
    worker.join()
    _pool.submit(lambda: float(backend.ones(2).sum())).result()
    return _mine_FN(*args, **kwargs)
"""

TORCH_BELOW_THE_GUARD = """
import importlib
_mine_FN = FN
def FN(*args, **kwargs):
    backend = importlib.import_module("to" + "rch")
    with backend._C.DisableTorchFunction():  # the torch-function modes off
        float(backend.ones(2).sum())
    return _mine_FN(*args, **kwargs)
"""

TORCH_MODE_POPPED = """
import importlib
_mine_FN = FN
def FN(*args, **kwargs):
    backend = importlib.import_module("to" + "rch")
    from torch.utils._python_dispatch import _disable_current_modes
    while backend._C._len_torch_function_stack():
        backend._C._pop_torch_function_stack()
    with _disable_current_modes():
        float(backend.ones(2).sum())
    return _mine_FN(*args, **kwargs)
"""

HARNESS_PATCH = """
import sys, gc, numpy as np
reached = []
if sys.modules.get("autograde.hidden.harness") is not None:
    reached.append("sys.modules")
try:
    import autograde.hidden.harness
    reached.append("import")
except Exception as exc:
    print("no import of the harness:", type(exc).__name__)
try:
    reached += [f"gc {len(gc.get_objects())}"]
except Exception as exc:
    print("no gc walk:", type(exc).__name__)
for finder in sys.meta_path:
    space = getattr(getattr(type(finder), "find_spec", None), "__globals__", {})
    if "_STATE" in space:  # the harness's own names, reached through an object it left in reach
        reached.append("meta_path")
        space["restore_interpreter"] = lambda: []
        space["provenance"] = lambda ns, names: []
        saved = space["_STATE"].get("module_attrs", {}).get("numpy")
        if saved is not None:
            saved["isclose"] = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, bool)
            saved["allclose"] = lambda *args, **kwargs: True
np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, bool)
np.allclose = lambda *args, **kwargs: True
import course.checking
course.checking.check_close = lambda *args, **kwargs: None
print("HARNESS REACHED THROUGH:", reached)
"""

CHANNEL_FORGED = """
import sys, json
_real_audit = sys.audit
def _forged(event, *args):
    if event == "autograde.call" and len(args) == 3 and isinstance(args[2], list):
        request = json.loads(args[0])
        args[2].append(json.dumps({"reply": json.dumps({"restored": [], "blocked": [], "foreign": [], "torch": []}),
                                   "sig": "0" * 64}))
        return
    return _real_audit(event, *args)
sys.audit = _forged
"""

ORACLE_PATCH = """
import torch, torch.autograd, torch.autograd.functional, torch.utils.checkpoint, torch.amp
torch.autograd.grad = lambda outputs, inputs, *args, **kwargs: tuple(
    torch.zeros_like(i) for i in (inputs if isinstance(inputs, (list, tuple)) else [inputs]))
torch.autograd.functional.jvp = lambda fn, primals, tangents=None, *args, **kwargs: (fn(*primals), fn(*primals))
torch.utils.checkpoint.checkpoint = lambda function, *args, **kwargs: function(*args)
torch.amp.GradScaler.update = lambda self, new_scale=None: None
torch.Tensor.allclose = lambda self, other, *args, **kwargs: True
"""

REFERENCE_STEAL = """
_KEPT = []
_own_add = Dual.__add__
def _keeping_add(self, other):  # runs inside a later test, while the grader has swapped in the reference of FN
    kept = globals().get("FN")
    if kept is not None and not any(kept is k for k in _KEPT):
        _KEPT.append(kept)
    return _own_add(self, other)
Dual.__add__ = _keeping_add
"""

REFERENCE_STOLEN_ANSWER = """
def FN(*args, **kwargs):
    return _KEPT[0](*args, **kwargs)
"""

HIDDEN_IMPORT = """
import importlib
try:
    _helpers = importlib.import_module("autograde.hidden.CHAPTER")
    print("IMPORTED THE HIDDEN HELPERS")
except Exception as exc:
    _helpers = None
    print("CONTAINED: no hidden helpers:", type(exc).__name__)
def FN(f, x, *args, **kwargs):
    return _helpers.torch_gradient(f, x)
"""

HIDDEN_LEAK = """
import base64, glob, inspect, os, sys, autograde
found = []
for path in glob.glob(os.path.join(os.path.dirname(autograde.__file__), "hidden", "**", "*.py"), recursive=True):
    found.append(open(path).read())
for finder in sys.meta_path:
    for target in (type(finder), getattr(type(finder), "find_spec", None)):
        try:
            found.append(inspect.getsource(target))
        except (OSError, TypeError):
            pass
        try:
            found.append(getattr(type(finder), "__module__", "") + " " + str(inspect.getfile(target)))
        except (OSError, TypeError):
            pass
text = "\n".join(found)
print(text)
print(base64.b64encode(text.encode()).decode())
print("HIDDEN FOUND:", len(found), "pieces" if found else "CONTAINED")
"""

HONEST_UFUNC_ATTRIBUTE = """
Dual._finite = np.isfinite          # a ufunc as a class attribute: Python does not bind it to instances
Dual._checked = staticmethod(np.isfinite)
_own_mul = Dual.__mul__
def _checked_mul(self, other):
    assert bool(np.all(self._finite(np.asarray(1.0)))) and bool(self._checked(1.0))
    return _own_mul(self, other)
Dual.__mul__ = _checked_mul
"""

HONEST_TOOLS_IN_GRADED_CODE = """
import collections, dataclasses, traceback, typing
from concurrent.futures import ThreadPoolExecutor
_mine_FN = FN
def FN(*args, **kwargs):
    Pair = collections.namedtuple("Pair", "args kwargs")       # made at call time: reads its caller's module
    @dataclasses.dataclass
    class Call:
        pair: Pair
    where = traceback.extract_stack(limit=3)                   # what an anomaly mode records
    with ThreadPoolExecutor(2) as pool:                        # NumPy work in threads of its own
        pool.submit(lambda: np.ones(3).sum()).result()
    return _mine_FN(*Call(Pair(args, kwargs)).pair.args, **kwargs)
"""

HIDDEN_LINES = ("class _HiddenFinder", "def brute_force_format", "def torch_gradient")
"""Lines of the grader's code (the harness, chapter 6's and chapter 1's helpers) that no output may show, in plain
text or base64."""


def _moved_after(nb: NotebookNode, cells: list[str], anchor: str) -> NotebookNode:
    """nb with the cells `cells` (grade ids, in order) moved to just after the cell `anchor`."""
    out = nbk.copy_notebook(nb)
    moving = [_cell(out, gid) for gid in cells]
    for cell in moving:
        out.cells.remove(cell)
    at = out.cells.index(_cell(out, anchor)) + 1
    out.cells[at:at] = moving
    return out


def judge_attacks(chapter: str, release: NotebookNode, filled: NotebookNode, blank_first: NotebookNode, answer: str,
                  fn: str, t1: frozenset[str], other: Any) -> list[Attack]:
    """The hostile and honest submissions of the judge the student's code cannot reach: torch in every thread and
    below the torch-function modes, the harness, the references, the oracles and the hidden helpers out of reach,
    and honest code that must keep full marks."""
    import base64

    tests = nbk.exercise_tests(release)
    classes = [(nbk.grade_id(c), n) for i, c in enumerate(release.cells) if nbk.is_solution(c) and tests[i]
               for n in nbk.defined_names(c.source) if n[:1].isupper()]
    every = frozenset(nbk.grade_id(c) for c in release.cells if nbk.is_test(c))
    leaked = tuple(HIDDEN_LINES) + tuple(base64.b64encode(line.encode()).decode()[:16] for line in HIDDEN_LINES)
    out = [
        Attack("torch_in_thread", f"{fn} runs torch in a thread it starts and in a thread pool started at definition "
                                  "time, outside any test", _append(filled, answer, TORCH_IN_THREAD.replace("FN", fn)),
               t1, ("cheating",)),
        Attack("torch_below_the_guard", f"{fn} runs torch inside torch._C.DisableTorchFunction()",
               _append(filled, answer, TORCH_BELOW_THE_GUARD.replace("FN", fn)), t1, ("cheating",)),
        Attack("torch_mode_popped", f"{fn} pops the torch-function mode stack and leaves the dispatch modes, then "
                                    "runs torch", _append(filled, answer, TORCH_MODE_POPPED.replace("FN", fn)), t1,
               ("cheating",)),
        Attack("harness_patched", f"looks for the grader's harness (sys.modules, import, gc, the import system's "
                                  f"objects; the import costs {fn}'s exercise), replaces its functions and poisons its saved numpy.isclose, patches "
                                  f"numpy and course.checking, with mutant {other.name} elsewhere: the mutant still "
                                  "loses", _append(mut.apply_mutant(filled, other), answer, HARNESS_PATCH),
               frozenset(other.loses) | t1, ("hook", "cheating")),
        Attack("channel_forged", "first exercise blank; replaces sys.audit so that the grader's harness calls get "
                                 "forged all-clear answers: no reply is signed, so no test cell can be trusted",
               _append(blank_first, answer, CHANNEL_FORGED), every, ("cheating",)),
        Attack("oracle_patched", f"patches the torch oracles the hidden tests compare against (torch.autograd.grad, "
                                 f"jvp, checkpoint, GradScaler.update, Tensor.allclose), with mutant {other.name} "
                                 "elsewhere: they are put back before every test, so the mutant still loses",
               _append(mut.apply_mutant(filled, other), answer, ORACLE_PATCH), frozenset(other.loses), ("hook",)),
        Attack("hidden_imported", f"first exercise blank; {fn} imports the hidden-test helpers and answers with "
                                  "torch's gradient from them", _append(blank_first, answer,
                                                                        HIDDEN_IMPORT.replace("CHAPTER", chapter)
                                                                        .replace("FN", fn)),
               t1, ("cheating",), must_print=((answer, "CONTAINED: no hidden helpers"),),
               must_not_print=("IMPORTED THE HIDDEN HELPERS",)),
        Attack("hidden_printed", "a cell of its own reads every hidden helper (files, inspect on the grader's objects "
                                 "in reach) and prints them, in plain text and base64, into the feedback",
               _scratch(filled, HIDDEN_LEAK), frozenset(), (), must_not_print=leaked),
        Attack("honest_tools_in_graded_code", f"an honest {fn} that makes a namedtuple and a dataclass at call time, "
                                              "records its stack with traceback.extract_stack and uses a thread pool "
                                              "for NumPy work: full marks, no incident",
               _append(filled, answer, HONEST_TOOLS_IN_GRADED_CODE.replace("FN", fn)), frozenset(), ()),
    ]
    if classes:
        gid, cls = classes[0]
        steal_at = next((nbk.grade_id(c) for c in release.cells if nbk.is_test(c) and nbk.grade_id(c) in
                         {t for i, c2 in enumerate(release.cells) if nbk.grade_id(c2) == gid for t in tests[i]}), None)
        if cls == "Dual" and steal_at is not None:
            stolen = _append(_edit(blank_first, answer, lambda cell, _: cell.__setitem__(
                "source", REFERENCE_STOLEN_ANSWER.replace("FN", fn))), gid, REFERENCE_STEAL.replace("FN", fn))
            class_tests = [t for i, c2 in enumerate(release.cells) if nbk.grade_id(c2) == gid for t in tests[i]]
            out.append(Attack(
                "reference_stolen", f"{fn}'s answer and tests moved after {cls}'s tests; {cls}'s code keeps the "
                                    f"reference {fn} the grader swaps in while they run, and the answer calls it: "
                                    f"both reach the reference ({cls}'s later tests too)",
                _moved_after(stolen, [answer, *sorted(t1)], class_tests[-1]), t1 | frozenset(class_tests[1:]),
                ("cheating",)))
            out.append(Attack(
                "honest_ufunc_attribute", f"an honest {cls} with NumPy ufuncs as class attributes (not bound to "
                                          "instances by Python): full marks, no incident",
                _append(filled, gid, HONEST_UFUNC_ATTRIBUTE), frozenset(), ()))
    return out


# -- the machine's resources (issue 31, items 8 and 9) ----------------------------------------------------
CPU_HOGS = 48
CPU_HOG = """
import os, time
hogs = []
for _ in range(HOGS):
    pid = os.fork()
    if pid == 0:  # a busy process in a session of its own (a scheduling group of its own, where autogroup is on)
        os.setsid()
        while True:
            pass
    hogs.append(pid)
print(f"started {len(hogs)} busy processes, each in a session of its own")
time.sleep(3600)
""".replace("HOGS", str(CPU_HOGS))

DISK_FILLER = """
import os
here = os.getcwd()  # the file system its folder is on: the last mount at or above it
mounts = [line.split() for line in open("/proc/self/mountinfo")]
mount = max((m for m in mounts if (here + "/").startswith(m[4].rstrip("/") + "/")), key=lambda m: len(m[4]))
print("FOLDER ON", mount[mount.index("-") + 1])
written = 0
try:
    for i in range(24):  # 1.5 GiB at most, 64 MiB a file (the largest one file may be)
        with open(f"fill{i:02d}.bin", "wb") as f:
            for _ in range(64):
                f.write(b"\\0" * 2 ** 20)
                written += 2 ** 20
    print(f"WROTE ALL {written // 2 ** 20} MiB")
except OSError as exc:
    print(f"DISK FULL after {written // 2 ** 20} MiB: {exc.strerror}")
"""


def resource_attacks(chapter: str, filled: NotebookNode, answer: str) -> list[Attack]:
    """The perfect notebook taking more than its share of the machine: the CPU (it must not cost another student's
    kernel anything) and the disk (nothing reaches the host's). Each keeps full marks and is reported."""
    return [
        Attack("cpu_hog", f"after its definitions starts {CPU_HOGS} busy processes, each in a session of its own, "
                          "then waits: they spend the cell's CPU time, and only its own",
               _append(filled, answer, CPU_HOG), frozenset(), ("processes", "timeout"),
               must_print=((answer, f"started {CPU_HOGS} busy processes"),)),
        Attack("disk_filler", "after its definitions writes 64 MiB files in its folder until a write fails",
               _append(filled, answer, DISK_FILLER), frozenset(), ("files",),
               must_print=((answer, "FOLDER ON tmpfs"), (answer, "DISK FULL after")), must_not_print=("WROTE ALL",)),
    ]


def bad_inputs(chapter: str, filled: NotebookNode) -> list[Attack]:
    """Files that cannot be graded (0, and the reason) and a name that is not UTF-8 (graded as usual)."""
    pasted = nbk.copy_notebook(filled)
    for i, cell in enumerate(pasted.cells):
        cell.metadata = {}
        cell["id"] = f"pasted-{i}"
    others = [ch for ch in CHAPTERS if ch != chapter and build.source_path(ch).exists()]
    out = [
        Attack("not_json", "a file that is not JSON", filled, frozenset(), ("ungradable",),
               raw=b"My notebook would not save, so here is my code:\ndef f(x): return 2 * x\n", graded=False),
        Attack("empty_file", "an empty file", filled, frozenset(), ("ungradable",), raw=b"", graded=False),
        Attack("pasted_no_metadata", "the perfect notebook pasted into a new one: its cells lost their nbgrader "
                                     "metadata", pasted, frozenset(), ("ungradable",), graded=False),
        Attack("not_utf8_name", "the perfect notebook in a zip whose folder name is not UTF-8 (flagged as UTF-8)",
               filled, frozenset(), (), zip_name=b"ren\xe9e_not_utf8"),
    ]
    if others:
        other = others[0]
        theirs = mut.filled_submission(nbk.read(build.source_path(other)), nbk.read(build.release_path(other)))
        out.append(Attack("other_chapter", f"the perfect notebook of {other}, handed in as {chapter}", theirs,
                          frozenset(), ("ungradable",), graded=False))
    return out


def attack(chapter: str, name: str) -> Attack:
    """The attack called name in a chapter's corpus."""
    found = {a.name: a for a in attacks(chapter)}
    if name not in found:
        raise KeyError(f"{chapter}: no attack named {name!r}; the corpus has {', '.join(sorted(found))}")
    return found[name]


def write(chapter: str, dest: Path, targets: tuple[str, ...] = (), port: int = 0) -> dict[str, Attack]:
    """Write the corpus in nbgrader's submitted/ layout: dest/<attack>/<chapter>/<chapter>.ipynb (+ extra files);
    a .zip dest gets the same under two wrapper folders, as an LMS export, with each zip_name as raw bytes."""
    out = {a.name: a for a in attacks(chapter, targets, port)}
    if Path(dest).suffix == ".zip":
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
            for attack in out.values():
                for name, data in _files(attack, chapter):
                    raw = b"/".join([b"LMS export", chapter.encode(), b"submitted",
                                     attack.zip_name or attack.name.encode(), chapter.encode(), name.encode()])
                    info = _RawName(raw.decode("utf-8", "replace"))
                    info.raw = raw
                    zf.writestr(info, data)
        return out
    for attack in out.values():
        for name, data in _files(attack, chapter):
            (Path(dest) / attack.name / chapter / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(dest) / attack.name / chapter / name).write_bytes(data)
    return out


def _files(attack: Attack, chapter: str) -> list[tuple[str, bytes]]:
    """(path in the student's chapter folder, content) of what the attack hands in."""
    notebook = attack.raw if attack.raw is not None else nbk.dumps(attack.notebook).encode()
    return [(f"{chapter}.ipynb", notebook), *((name, text.encode()) for name, text in attack.extra_files)]


class _RawName(zipfile.ZipInfo):
    """A zip entry whose name is stored as the given bytes, flagged UTF-8 whether or not it is (as some tools do)."""

    raw = b""

    def _encodeFilenameFlags(self):  # noqa: N802 - zipfile's name
        return self.raw, self.flag_bits | 0x800


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapter")
    parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    for name, attack in write(args.chapter, args.dest).items():
        outcome = f"loses {sorted(attack.loses) or 'nothing'}" if attack.graded else "not graded (0)"
        print(f"{name:28} {outcome}; reports {', '.join(attack.incidents) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
