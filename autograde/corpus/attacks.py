"""The adversarial corpus: one small submission per attack, built from a chapter's release and solution.

Each Attack is the perfect student's notebook (the release with every answer
filled from the source) with one hostile change, or the release with the
first exercise left blank where the attack is about getting points for it.
It says exactly which test cells must score 0 (all others must keep full
marks) and which incidents the grader must report. The tests grade the whole
corpus through the real grading command (autograde.grader.command).

Usage: python -m autograde.corpus.attacks CHAPTER DEST   (writes DEST/<attack>/<chapter>/<chapter>.ipynb)
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from autograde import paths as build
from autograde.grader import incidents as integrity
from autograde.build import catalogue as mut
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


def _first_exercise(release: NotebookNode) -> tuple[str, str, list[str]]:
    """(answer cell grade_id, the function it defines, its test cells) of the first exercise with a function."""
    tests = integrity.exercise_tests(release)
    for i, cell in enumerate(release.cells):
        if nbk.is_solution(cell) and tests[i]:
            names = [n for n in integrity.defined_names(cell.source) if not n[:1].isupper()]
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


def attacks(chapter: str, targets: tuple[str, ...] = ()) -> list[Attack]:
    """The corpus of a chapter. targets: grader files the snooping attack tries to read (paths it is told)."""
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
        Attack("torch_in_solution", "imports torch in an answer cell",
               _append(filled, answer, "import torch  # to check my answer"), t1, ("cheating",)),
        Attack("reference_imported", f"takes {fn} from the reference engine of this chapter",
               _edit(filled, answer, lambda cell, _: cell.__setitem__(
                   "source", f"from course.reference.{chapter} import {fn}\n")), t1, ("cheating",)),
        Attack("patched_check_close", f"patches course.checking.check_close to a no-op, with mutant {other.name} "
                                      "elsewhere: the patch costs its exercise and does not save the mutant",
               _append(mut.apply_mutant(filled, other), answer,
                       "import course.checking\ncourse.checking.check_close = lambda *args, **kwargs: None"),
               t1 | frozenset(other.loses), ("cheating",)),
    ]


def attack(chapter: str, name: str) -> Attack:
    """The attack called name in a chapter's corpus."""
    found = {a.name: a for a in attacks(chapter)}
    if name not in found:
        raise KeyError(f"{chapter}: no attack named {name!r}; the corpus has {', '.join(sorted(found))}")
    return found[name]


def write(chapter: str, dest: Path, targets: tuple[str, ...] = ()) -> dict[str, Attack]:
    """Write the corpus in nbgrader's submitted/ layout: dest/<attack>/<chapter>/<chapter>.ipynb (+ extra files)."""
    out = {}
    for attack in attacks(chapter, targets):
        folder = Path(dest) / attack.name / chapter
        nbk.write(attack.notebook, folder / f"{chapter}.ipynb")
        for name, text in attack.extra_files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        out[attack.name] = attack
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapter")
    parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    for name, attack in write(args.chapter, args.dest).items():
        print(f"{name:28} loses {sorted(attack.loses) or 'nothing'}; reports {', '.join(attack.incidents)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
