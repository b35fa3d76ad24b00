"""A student's chapters 2-7, collected from their notebooks into an importable package, and imported.

How the package is made (the way `make build` makes course/reference/<chapter>.py, see
autograde.authoring.products.make_reference, with the same cell helpers of autograde.notebook):

- The SOURCE notebook decides what goes into a chapter's module and in which order: its code cells tagged
  `export`, in notebook order. Each is taken from the STUDENT's notebook: an answer cell (nbgrader solution=True)
  found by its nbgrader grade_id wherever the student moved it (a cell copied twice comes in twice, in the student's
  order: the later definitions win, as when the notebook runs top to bottom; one that lost its metadata is found
  by the names it defines); a given export cell by its grade_id, or, for the few without one, paired in order with
  the student's export-tagged cells without one: the student's copy is the release their answers were written
  against. A given cell the student's notebook lacks comes from the source notebook, solutions written out and
  hidden tests removed, exactly as make_reference takes it.
- The student's other cells are their own (a cell counts as the course's when it is one of the source notebook's
  cells as the release gives them). From those, only top-level definitions (def, class, import, plain assignments)
  come in, and only where needed: a name the module reads that nothing in it binds (a helper an answer calls; the
  last definition of it in the notebook), placed before the first block that reads it; or a def or class that
  redefines, further down the notebook, something an answer cell defines (a fixed version), placed right after the
  last answer cell above it: the last definition wins, as in the notebook. Nothing else of theirs runs (no demo,
  print or plot); an earlier scratch definition that the answer cell replaces is left out.
- IPython magics become comments; an answer cell that is only `raise NotImplementedError()` (the release's stub
  of a cell that is all answer) becomes comments too, and is reported as not answered where the capstone needs it.
  A top-level statement the student added to an answer cell (not a def or class, not one of the course's lines:
  a print, a demo call, an assignment from a notebook variable) runs as in the notebook; if it fails at import it
  is left out and the run says so. An answer cell the capstone does not need that is not valid Python is left out.
- `import numpy` (as np, or any name) becomes an import of course.array's np, the engine's one array seam: NumPy
  itself, or CuPy under COURSE_ARRAY=cupy, so a student's engine follows the course's onto a GPU.
- Imports are redirected: `course.reference.chNN_...` for chapters 2-7 (``import ...``, ``from ... import``,
  ``from course.reference import chNN_...``, dotted uses) point to the student's package, so that every chapter
  runs on the student's earlier chapters, never on the course's reference engine. A chapter importing itself (a
  student importing the reference of the chapter being written) gets its own module. course/ modules that import
  the reference engine themselves (course.chapter4 checks an optimiser's parameters against chapter 2's Tensor)
  are copied into the package with the same redirection, and imports of them point to the copy.
- Chapter 8's module is the course's (course/reference/ch08_capstone.py, generated from the chapter 8 source
  notebook) with the same redirection: its model code runs on the student's chapters 2-7. Generating it, rather
  than importing the reference with the student's modules swapped into sys.modules, keeps course.reference
  untouched in the process and leaves every generated file readable on disk (.work/own_engine/<package>/).

Each module's lines are mapped back to cells (Block), so that an error or a failed check names the chapter and the
exercise whose code it came from, with the exercise's heading from the student's notebook.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import io
import json
import re
import shutil
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import nbformat
from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.paths import REPO, reference_path, source_path
from course import CHAPTERS

ENGINE_CHAPTERS: tuple[str, ...] = CHAPTERS[1:7]
"""The chapters whose code is the student's: ch02_tape .. ch07_checkpointing."""
CAPSTONE = CHAPTERS[7]
WORK = REPO / ".work" / "own_engine"
REFERENCE = "course.reference"
_REDIRECTED = re.compile(r"\bcourse\.reference\.(" + "|".join(ENGINE_CHAPTERS) + r")\b")
_MAGIC = re.compile(r"^\s*[%!]")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_POINTS = re.compile(r"\s*\((?:[^()]*\bpoints?\b[^()]*)\)\s*$")
_NUMBER = re.compile(r"\bExercise\s+(\d+)")
IMPORT_SECONDS = 120
"""The most importing the student's chapters may take (their cells run top to bottom, demo lines included)."""


class OwnEngineError(Exception):
    """A finding to report in one line (exit status 1)."""


class BadInput(OwnEngineError):
    """The folder given cannot be read as a student's notebooks (exit status 2)."""


class TookTooLong(Exception):
    """Raised by time_limit when the student's code runs past its limit (an endless loop, say)."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Any:
    """Raise TookTooLong inside the block after `seconds` (SIGALRM, main thread only; elsewhere no limit)."""
    import signal
    import threading

    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TookTooLong(f"did not finish within {seconds} s (an endless loop?)")

    before = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def chapter_number(chapter: str) -> int:
    return int(chapter[2:4])


def chapter_label(chapter: str) -> str:
    """'chapter 3 (ch03_vjp_rules)'."""
    return f"chapter {chapter_number(chapter)} ({chapter})"


# -- finding and reading the notebooks ------------------------------------------------------------------------
def notebook_paths(folder: Path) -> dict[str, Path]:
    """The notebook of each engine chapter in folder: make lab's layout (folder/<ch>/<ch>.ipynb) or flat."""
    if not folder.exists():
        raise BadInput(f"own engine: no such folder: {folder}")
    if not folder.is_dir():
        raise BadInput(f"own engine: {folder} is not a folder: give the folder that holds your chapter notebooks")
    found: dict[str, Path] = {}
    for chapter in ENGINE_CHAPTERS:
        for candidate in (folder / chapter / f"{chapter}.ipynb", folder / f"{chapter}.ipynb"):
            if candidate.is_file():
                found[chapter] = candidate
                break
    if not found:
        raise BadInput(f"own engine: no chapter notebooks in {folder}: expected {folder}/ch02_tape.ipynb ... "
                       f"(flat) or {folder}/ch02_tape/ch02_tape.ipynb ... (make lab's layout)")
    missing = [c for c in ENGINE_CHAPTERS if c not in found]
    if missing:
        names = ", ".join(missing)
        raise BadInput(f"own engine: {folder} lacks {names}: the capstone runs on chapters 2-7, so each needs its "
                       f"notebook ({folder}/{missing[0]}.ipynb or {folder}/{missing[0]}/{missing[0]}.ipynb)")
    return found


def read_notebook(path: Path) -> NotebookNode:
    """The student's notebook as nbformat v4, or BadInput naming what is wrong with the file."""
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - JSON errors, validation errors, unreadable files: one line
        detail = " ".join(str(exc).split())[:160]
        raise BadInput(f"own engine: {path} is not a valid notebook ({type(exc).__name__}: {detail})") from None
    if not isinstance(nb.get("cells"), list):
        raise BadInput(f"own engine: {path} is not a valid notebook (no list of cells)")
    return nb


# -- cells as code ------------------------------------------------------------------------------------------------
def cell_python(source: str) -> str:
    """A cell's code as plain Python, line for line: IPython magics and shell escapes become comments; a cell
    magic other than %%time/%%timeit/%%capture makes the whole cell a comment (it is not Python)."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].strip()[2:].split()[0] if lines[first].strip()[2:].split() else ""
        if name not in ("time", "timeit", "capture", "prun"):
            return "\n".join("# " + line for line in lines)
        lines[first] = "# " + lines[first]
    out = []
    for line in lines:
        if _MAGIC.match(line):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}pass  # IPython: {line.strip()}")
        else:
            out.append(line)
    return "\n".join(out)


def statements(code: str) -> list[ast.stmt]:
    """The top-level statements of code ([] if it does not parse)."""
    try:
        return ast.parse(code).body
    except SyntaxError:
        return []


def first_line(node: ast.stmt) -> int:
    """A statement's first line, decorators included."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def shape_of(node: ast.AST) -> str:
    """A statement's structure without positions (to tell a student's line from the course's)."""
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def is_stub_cell(code: str) -> bool:
    """A cell whose only statement is `raise NotImplementedError(...)` (the release's stub of an all-answer cell)."""
    body = [s for s in statements(code)
            if not (isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise):
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def bound_names(node: ast.stmt) -> set[str]:
    """The module-level names a definition statement binds (def, class, import, assignments to names)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return {a.asname or a.name for a in node.names if a.name != "*"}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        out: set[str] = set()
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.add(n.id)
        return out
    return set()


def is_definition(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                             ast.Assign, ast.AnnAssign))


def loaded_names(code: str) -> set[str]:
    """Every name code reads, anywhere."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def free_names(code: str) -> set[str]:
    """Names the module reads as globals (at top level or inside functions) that it never binds at top level and
    that are not builtins: what a helper from the student's own cells may have to supply."""
    import builtins
    import symtable

    try:
        table = symtable.symtable(code, "<module>", "exec")
    except SyntaxError:
        return set()
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    wanted: set[str] = set()

    def walk(t: symtable.SymbolTable) -> None:
        for s in t.get_symbols():
            if s.is_referenced() and (t.get_type() == "module" or s.is_global()):
                wanted.add(s.get_name())
        for child in t.get_children():
            walk(child)

    walk(table)
    return {n for n in wanted - bound if not hasattr(builtins, n) and n not in ("__file__", "__name__")}


# -- import redirection -------------------------------------------------------------------------------------------
def course_modules_to_copy() -> dict[str, str]:
    """course/ modules (outside course.reference) that import the reference engine of chapters 2-7 themselves:
    module name -> the name of their copy in the package."""
    out = {}
    for path in sorted((REPO / "course").glob("*.py")):
        if path.stem != "__init__" and _REDIRECTED.search(path.read_text(encoding="utf-8")):
            out[f"course.{path.stem}"] = f"course_{path.stem}"
    return out


def redirect(code: str, package: str, own: str | None, copies: dict[str, str]) -> str:
    """code with its imports of the reference engine of chapters 2-7 (and of the course modules in copies) pointed at
    package; `own` is the chapter of the module being written (a module that imports itself gets itself). Line
    numbers are kept."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines = code.split("\n")
    edits: list[tuple[int, int, int, int, str]] = []   # (line, col, end_line, end_col, text), 1-based lines

    def target(module: str) -> str | None:
        if module in copies:
            return f"{package}.{copies[module]}"
        m = _REDIRECTED.fullmatch(module)
        return f"{package}.{m.group(1)}" if m else None

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            new: str | None = None
            indent = ""
            if node.module == REFERENCE:          # from course.reference import ch02_tape, ch03_vjp_rules as c3
                parts = []
                for a in node.names:
                    name = f" as {a.asname}" if a.asname else ""
                    if a.name == own:
                        parts.append(f"{a.asname or a.name} = __import__('sys').modules[__name__]")
                    elif a.name in ENGINE_CHAPTERS:
                        parts.append(f"from {package} import {a.name}{name}")
                    else:
                        parts.append(f"from {REFERENCE} import {a.name}{name}")
                new = "; ".join(parts)
            elif node.module == f"{REFERENCE}.{own}":   # the chapter's own names: already here
                names = ", ".join(a.asname or a.name for a in node.names if a.name != "*")
                new = f"pass  # from this chapter itself: {names}" if names else "pass"
            elif (t := target(node.module)) is not None:
                new = None
                segment = ast.get_source_segment(code, node) or ""
                new = segment.replace(node.module, t, 1)
            if new is not None:
                edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, new))
        elif isinstance(node, ast.Import):
            parts, changed = [], False
            for a in node.names:
                if own and a.name == f"{REFERENCE}.{own}":
                    changed = True
                    parts.append(f"{a.asname} = __import__('sys').modules[__name__]" if a.asname else
                                 f"import {package}.{own}")
                elif (t := target(a.name)) is not None:
                    changed = True
                    parts.append(f"import {t}" + (f" as {a.asname}" if a.asname else ""))
                elif a.name == "numpy":           # the array seam: NumPy itself, or CuPy under COURSE_ARRAY=cupy
                    changed = True
                    parts.append(f"from course.array import np as {a.asname or 'numpy'}")
                else:
                    parts.append(f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
            if changed:
                edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, "; ".join(parts)))
    for line, col, end_line, end_col, text in sorted(edits, reverse=True):
        before, after = lines[line - 1][:col], lines[end_line - 1][end_col:]
        replaced = (before + text + after).split("\n")
        # keep the line count: a statement that became shorter is followed by blank lines
        lines[line - 1:end_line] = replaced + [""] * (end_line - line + 1 - len(replaced))
    out = "\n".join(lines)
    # dotted uses left (course.reference.ch03_vjp_rules.Mul after `import course.reference.ch03_...`, strings)
    out = _REDIRECTED.sub(lambda m: f"{package}.{m.group(1)}", out)
    for module, copy in copies.items():
        out = re.sub(rf"\b{re.escape(module)}\b", f"{package}.{copy}", out)
    return out


# -- what a chapter's module is made of ------------------------------------------------------------------------
@dataclass
class Block:
    """A run of lines of a generated module and the cell they came from."""

    chapter: str
    kind: str                   # "given" (the course's export cell), "answer" (an answer cell), "own" (their cell)
    grade_id: str | None        # the answer cell's, or the given cell's
    cell: int | None            # index of the cell in the student's notebook (None: the course's)
    code: str                   # the lines, as written into the module
    start: int = 0              # first line in the module (1-based), set when the module is written

    @property
    def end(self) -> int:
        return self.start + self.code.count("\n")


@dataclass
class Exercise:
    chapter: str
    grade_id: str
    title: str                  # "Exercise 3: arithmetic with broadcasting"
    defines: tuple[str, ...]    # names the course's answer defines

    def label(self) -> str:
        return f"{chapter_label(self.chapter)}, {self.title}"


@dataclass
class ChapterPlan:
    chapter: str
    path: Path                          # the student's notebook
    blocks: list[Block]
    exercises: dict[str, Exercise]      # grade_id -> exercise (answer cells that are exported)
    unanswered: dict[str, str] = field(default_factory=dict)   # grade_id -> what is missing
    notes: list[str] = field(default_factory=list)


def heading_above(nb: NotebookNode, index: int) -> str | None:
    """The nearest markdown heading above cell `index` (its text), or None."""
    for cell in reversed(nb.cells[:index]):
        if cell.get("cell_type") != "markdown":
            continue
        for line in reversed(str(cell.get("source", "")).split("\n")):
            m = _HEADING.match(line)
            if m:
                return m.group(1).strip()
    return None


def exercise_title(student_heading: str | None, source_heading: str | None, grade_id: str) -> str:
    """The heading that names an exercise, its points left out: the student's, unless it names another exercise
    number than the source (a moved cell), else the source's."""
    def clean(h: str | None) -> str | None:
        return _POINTS.sub("", h).replace("`", "").strip() if h else None

    student, source = clean(student_heading), clean(source_heading)
    if student and (source is None or _number(student) == _number(source)):
        return student
    return source or f"the answer cell {grade_id!r}"


def _number(title: str) -> str | None:
    m = _NUMBER.search(title)
    return m.group(1) if m else None


def source_code(cell: NotebookNode) -> str:
    """A source cell's code as the reference engine has it: solutions written out, hidden tests removed."""
    return nbk.without_hidden_tests(nbk.solution_code(cell.source)).strip("\n")


def plan_chapter(chapter: str, path: Path, nb: NotebookNode) -> ChapterPlan:
    """The blocks of the student's module for chapter, from the source notebook's export cells and the student's
    notebook (see the module docstring)."""
    source = nbk.read(source_path(chapter))
    student_cells = [c for c in nb.cells if isinstance(c, dict)]
    nb = nbformat.from_dict({"cells": student_cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    by_id: dict[str, list[int]] = {}
    for i, cell in enumerate(nb.cells):
        gid = nbk.grade_id(cell) if isinstance(cell.get("metadata"), dict) else None
        if gid and cell.get("cell_type") == "code":
            by_id.setdefault(gid, []).append(i)
    # the course's cells as the release gives them (an answer cell as its stub), to tell the student's own cells apart
    course_sources = {nbk.normalised(nbk.without_hidden_tests(nbk.without_solutions(cell.source)))
                      for cell in source.cells if cell.cell_type == "code"}
    source_ids = {nbk.grade_id(c) for c in source.cells if nbk.grade_id(c)}

    # given export cells without a grade_id, paired in order with the student's export cells without one
    theirs = [i for i, c in enumerate(nb.cells) if nbk.is_exported(c) and not nbk.grade_id(c)]
    ours = [k for k, c in enumerate(source.cells) if nbk.is_exported(c) and not nbk.grade_id(c)]
    untagged = dict(zip(ours, theirs)) if len(ours) == len(theirs) else {}
    plan = ChapterPlan(chapter, path, [], {})
    located: dict[int, int] = {}        # block index -> student's cell index (where the block's code sits)
    claimed: set[int] = set()
    for k, cell in enumerate(source.cells):
        if not nbk.is_exported(cell):
            continue
        gid = nbk.grade_id(cell)
        code = source_code(cell)
        if not nbk.is_solution(cell):
            spot = by_id[gid][-1] if gid in by_id else untagged.get(k)
            if spot is not None:        # the student's copy: the release they answered against
                code = cell_python(str(nb.cells[spot].get("source", ""))).rstrip()
            plan.blocks.append(Block(chapter, "given", gid, spot, code))
            if spot is not None:
                located[len(plan.blocks) - 1] = spot
            continue
        defines = tuple(sorted(nbk.defined_names(code)))
        spots = by_id.get(gid, [])
        if not spots:                   # metadata lost: the student's cell that defines the same names
            for i, c in enumerate(nb.cells):
                if c.get("cell_type") == "code" and i not in claimed and defines and \
                        set(defines) <= nbk.defined_names(cell_python(str(c.get("source", "")))):
                    spots = [i]
                    break
        source_heading = heading_above(source, k)
        student_heading = heading_above(nb, spots[-1]) if spots else None
        exercise = Exercise(chapter, gid, exercise_title(student_heading, source_heading, gid), defines)
        plan.exercises[gid] = exercise
        if not spots:
            plan.unanswered[gid] = (f"its answer cell (grade_id {gid!r}, defining {', '.join(defines) or 'nothing'}) "
                                    f"is not in {path}")
            continue
        for i in spots:
            claimed.add(i)
            code_i = cell_python(str(nb.cells[i].get("source", ""))).rstrip()
            if is_stub_cell(code_i):
                if i == spots[-1]:          # a stub copy before an answered one is just an earlier cell
                    plan.unanswered[gid] = "the cell still only raises NotImplementedError"
                code_i = "\n".join("# " + line for line in code_i.split("\n"))
            plan.blocks.append(Block(chapter, "answer", gid, i, code_i))
            located[len(plan.blocks) - 1] = i
    plan.notes.extend(_own_definitions(plan, nb, located, course_sources, source_ids))
    return plan


def _own_definitions(plan: ChapterPlan, nb: NotebookNode, located: dict[int, int], course_sources: set[str],
                     source_ids: set[str]) -> list[str]:
    """Add, from the student's own cells, the definitions the module needs (see the module docstring)."""
    own: list[tuple[int, ast.stmt, str]] = []        # (cell index, statement, its code)
    for i, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        gid = nbk.grade_id(cell) if isinstance(cell.get("metadata"), dict) else None
        if gid in source_ids or any(i == spot for spot in located.values()):
            continue
        text = str(cell.get("source", ""))
        if nbk.normalised(text) in course_sources:
            continue
        code = cell_python(text)
        for node in statements(code):
            if is_definition(node):
                seg = "\n".join(code.split("\n")[first_line(node) - 1:node.end_lineno])
                own.append((i, node, seg))
    notes = []
    # later redefinitions of what an answer cell defines: the last definition wins, as in the notebook. Each goes
    # right after the last answer block above it in the notebook that defines the name.
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    answers = [(located[b], block, {n.name for n in statements(block.code) if isinstance(n, defs)})
               for b, block in enumerate(plan.blocks) if b in located and block.kind == "answer"]
    for i, node, seg in own:
        if not isinstance(node, defs):
            continue
        above = [(spot, block) for spot, block, names in answers if spot < i and node.name in names]
        if not above:
            continue
        _, block = max(above, key=lambda item: item[0])
        pos = plan.blocks.index(block) + 1
        while pos < len(plan.blocks) and plan.blocks[pos].kind == "own" and plan.blocks[pos].grade_id == block.grade_id:
            pos += 1                    # after the redefinitions already placed there: notebook order
        plan.blocks.insert(pos, Block(plan.chapter, "own", block.grade_id, i, seg))
        notes.append(f"{chapter_label(plan.chapter)}: {node.name} is redefined in a cell of yours below its answer "
                     f"cell (`{seg.strip().splitlines()[0][:60]}`, cell {i + 1}); that later definition is used, as "
                     f"in the notebook")
    # helpers: names the module reads that nothing in it binds
    taken: set[int] = set()
    for _ in range(10):
        module = "\n\n".join(b.code for b in plan.blocks)
        missing = free_names(module)
        found = False
        for name in sorted(missing):
            candidates = [(k, item) for k, item in enumerate(own) if name in bound_names(item[1]) and k not in taken]
            if not candidates:
                continue
            k, (i, node, seg) = candidates[-1]         # the last definition in the notebook
            taken.add(k)
            users = [b for b, block in enumerate(plan.blocks) if name in loaded_names(block.code)]
            pos = users[0] if users else len(plan.blocks)
            plan.blocks.insert(pos, Block(plan.chapter, "own", None, i, seg))
            notes.append(f"{chapter_label(plan.chapter)}: {name}, which your answers use, comes from a cell of "
                         f"yours (`{seg.strip().splitlines()[0][:60]}`, cell {i + 1})")
            found = True
        if not found:
            break
    return notes


# -- writing and importing ------------------------------------------------------------------------------------------
def package_name(folder: Path) -> str:
    """A package name for the student's folder: readable, and distinct for distinct folders."""
    resolved = str(folder.resolve())
    slug = re.sub(r"\W+", "_", folder.resolve().name).strip("_").lower() or "student"
    if slug[0].isdigit():
        slug = "s_" + slug
    return f"own_{slug}_{hashlib.sha1(resolved.encode()).hexdigest()[:8]}"


@dataclass
class Engine:
    """The student's package: where it is, its modules, and the blocks each module was written from."""

    folder: Path
    package: str
    root: Path
    plans: dict[str, ChapterPlan]
    modules: dict[str, ModuleType] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    output: str = ""                    # what importing printed
    _index: dict[str, list[Block]] | None = None

    def path_of(self, chapter: str) -> Path:
        return self.root / self.package / f"{chapter}.py"

    def block_at(self, filename: str, line: int) -> Block | None:
        """The block a line of a generated file belongs to (None outside the student's chapters)."""
        blocks = self._files().get(str(filename))
        if blocks:
            for block in blocks:
                if block.start <= line <= block.end:
                    return block
        return None

    def _files(self) -> dict[str, list[Block]]:
        """Generated file -> its blocks (rebuilt whenever the package is rewritten)."""
        if self._index is None:
            self._index = {str(self.path_of(c)): plan.blocks for c, plan in self.plans.items()}
        return self._index

    def exercise(self, chapter: str, grade_id: str | None) -> Exercise | None:
        plan = self.plans.get(chapter)
        return plan.exercises.get(grade_id or "") if plan else None

    def describe(self, block: Block) -> str:
        """'chapter 3 (ch03_vjp_rules), Exercise 3: arithmetic with broadcasting' for a block."""
        ex = self.exercise(block.chapter, block.grade_id)
        if ex is not None:
            return ex.label()
        if block.kind == "own":
            return f"{chapter_label(block.chapter)}, your own cell {block.cell + 1 if block.cell is not None else '?'}"
        return f"{chapter_label(block.chapter)}, the course's given code"


def module_text(chapter: str, package: str, blocks: list[Block], copies: dict[str, str], student: Path) -> str:
    """The module of a chapter: a header, then each block's code redirected, blocks three lines apart."""
    header = (f'"""{chapter}, the student\'s: GENERATED by autograde.own_engine from {student} (answer cells and the\n'
              f"student's own definitions) and source/{chapter}/{chapter}.ipynb (given cells tagged `export`).\n"
              f"Its imports of the course's reference engine (chapters 2-7) point to this package. Rewritten each run.\n\"\"\"\n")
    line = header.count("\n") + 1
    parts = [header]
    for block in blocks:
        block.code = redirect(block.code, package, chapter, copies)
        block.start = line
        parts.append(block.code + "\n\n\n")
        line += block.code.count("\n") + 3
    return "".join(parts)


def capstone_text(package: str, copies: dict[str, str]) -> str:
    """Chapter 8's module: the course's reference (its model code), running on the student's chapters 2-7."""
    code = reference_path(CAPSTONE).read_text(encoding="utf-8")
    tree = ast.parse(code)
    body_start = tree.body[1].lineno if tree.body and isinstance(tree.body[0], ast.Expr) else 1
    lines = code.split("\n")
    kept = "\n".join(lines[body_start - 1:])
    header = (f'"""{CAPSTONE}: the course\'s model code (course/reference/{CAPSTONE}.py, exported from the chapter 8 source\n'
              f"notebook) with its imports of chapters 2-7 pointed at this package: the course's transformer on the\n"
              f'student\'s engine. GENERATED by autograde.own_engine; do not edit.\n"""\n')
    return header + redirect(kept, package, CAPSTONE, copies)


def write_package(engine: Engine) -> None:
    """Write the package under engine.root (a fresh copy each run)."""
    pkg_dir = engine.root / engine.package
    if pkg_dir.exists():
        shutil.rmtree(pkg_dir)
    pkg_dir.mkdir(parents=True)
    copies = course_modules_to_copy()
    (pkg_dir / "__init__.py").write_text(
        f'"""A student\'s engine (chapters 2-7, from {engine.folder}) and the course\'s capstone on it.\n'
        f'GENERATED by autograde.own_engine; the whole folder is rewritten each run."""\n'
        f"from {REFERENCE} import ch01_chain_rule  # chapter 1 is not part of the engine: the course's\n",
        encoding="utf-8")
    for module, copy in copies.items():
        original = REPO / (module.replace(".", "/") + ".py")
        (pkg_dir / f"{copy}.py").write_text(redirect(original.read_text(encoding="utf-8"), engine.package, None, copies),
                                            encoding="utf-8")
    for chapter, plan in engine.plans.items():
        engine.path_of(chapter).write_text(module_text(chapter, engine.package, plan.blocks, copies, plan.path),
                                           encoding="utf-8")
    (pkg_dir / f"{CAPSTONE}.py").write_text(capstone_text(engine.package, copies), encoding="utf-8")
    cells = {ch: [{"kind": b.kind, "grade_id": b.grade_id, "cell": b.cell, "lines": [b.start, b.end]}
                  for b in plan.blocks] for ch, plan in engine.plans.items()}
    (pkg_dir / "cells.json").write_text(json.dumps(cells, indent=1) + "\n", encoding="utf-8")


def syntax_errors(engine: Engine, needed: Callable[[Block], bool]) -> None:
    """Raise OwnEngineError for the first needed block that is not valid Python; a block not needed (an exercise the
    capstone does not use) that does not parse becomes comments, and a note says so."""
    for chapter, plan in engine.plans.items():
        for block in plan.blocks:
            try:
                ast.parse(block.code)
            except SyntaxError as exc:
                where = f"line {exc.lineno} of the cell" if exc.lineno else "the cell"
                what = f"{exc.msg} at {where}{f' (cell {block.cell + 1})' if block.cell is not None else ''}"
                if needed(block):
                    raise OwnEngineError(f"own engine: {engine.describe(block)}: your answer is not valid Python "
                                         f"({what})") from None
                block.code = "\n".join("# " + line for line in block.code.split("\n"))
                engine.notes.append(f"{engine.describe(block)} is not valid Python ({what}); the capstone does not "
                                    f"need it, so it was left out")


def forget(package: str) -> None:
    """Drop the package's modules from sys.modules (before importing a regenerated version)."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def innermost_block(engine: Engine, tb: Any, kinds: tuple[str, ...] = ("answer", "own")) -> tuple[Block | None, int]:
    """The innermost frame of a traceback that runs a block of these kinds: the block and the line in it."""
    found: tuple[Block | None, int] = (None, 0)
    for frame in traceback.extract_tb(tb):
        block = engine.block_at(frame.filename, frame.lineno or 0)
        if block is not None and block.kind in kinds:
            found = (block, (frame.lineno or 0) - block.start + 1)
    return found


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _droppable(engine: Engine, exc: BaseException, module_file: Path) -> tuple[Block, ast.stmt] | None:
    """The student's own top-level statement of an answer cell (not a definition, not the course's) at which the
    import of module_file failed, if that is what failed."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == module_file and f.name == "<module>"]
    if not frames:
        return None
    line = frames[-1].lineno or 0
    block = engine.block_at(str(module_file), line)
    if block is None or block.kind != "answer":
        return None
    source = nbk.read(source_path(block.chapter))
    course = {shape_of(s) for c in source.cells if nbk.grade_id(c) == block.grade_id for s in statements(source_code(c))}
    for node in statements(block.code):
        if first_line(node) <= line - block.start + 1 <= node.end_lineno:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or shape_of(node) in course:
                return None
            return block, node
    return None


def import_engine(engine: Engine, needed: Callable[[Block], bool] = lambda block: True, attempts: int = 20) -> None:
    """Import the chapters in order (and chapter 8), what they print captured. A top-level line the student added
    to an answer cell that fails at import is left out (and noted), and the import tried again; any other failure is
    an OwnEngineError naming the cell it came from."""
    sys.path.insert(0, str(engine.root)) if str(engine.root) not in sys.path else None
    for _ in range(attempts):
        forget(engine.package)
        write_package(engine)
        engine._index = None
        syntax_errors(engine, needed)
        write_package(engine)
        out = io.StringIO()
        failure: tuple[str, BaseException] | None = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), warnings.catch_warnings(), \
                time_limit(IMPORT_SECONDS):
            warnings.simplefilter("ignore")
            for chapter in (*engine.plans, CAPSTONE):
                try:
                    engine.modules[chapter] = importlib.import_module(f"{engine.package}.{chapter}")
                except BaseException as exc:  # noqa: BLE001 - whatever a student's cell raises, and SystemExit
                    failure = (chapter, exc)
                    break
        engine.output = out.getvalue()
        if failure is None:
            return
        chapter, exc = failure
        if isinstance(exc, KeyboardInterrupt):
            raise exc
        drop = _droppable(engine, exc, engine.path_of(chapter)) if chapter in engine.plans else None
        if drop is not None:
            block, node = drop
            lines = block.code.split("\n")
            for k in range(first_line(node) - 1, node.end_lineno):
                indent = lines[k][: len(lines[k]) - len(lines[k].lstrip())]
                lines[k] = f"{indent}# left out (failed at import): {lines[k].strip()}"
            block.code = "\n".join(lines)
            engine.notes.append(f"{engine.describe(block)}: a line you added to the answer cell (line "
                                f"{first_line(node)}: {one_line(lines[first_line(node) - 1].split(': ', 1)[-1], 60)}) "
                                f"failed outside the notebook and was left out ({type(exc).__name__}: "
                                f"{one_line(exc, 120)})")
            continue
        raise OwnEngineError(import_failure(engine, chapter, exc)) from None
    raise OwnEngineError(f"own engine: importing your chapters failed {attempts} times; see .work/own_engine/{engine.package}")


def import_failure(engine: Engine, chapter: str, exc: BaseException) -> str:
    """The one-line message for a chapter whose module raised on import."""
    from course.checking import raised_by_stub

    block, line = innermost_block(engine, exc.__traceback__)
    what = f"{type(exc).__name__}: {one_line(exc, 200)}"
    if block is not None:
        if raised_by_stub(exc) or (isinstance(exc, NotImplementedError) and block.kind == "answer"):
            return f"own engine: {engine.describe(block)}: not answered yet (importing it raises {what})"
        return (f"own engine: {engine.describe(block)}: running your cell outside the notebook raised {what} "
                f"(line {line} of the cell)")
    if isinstance(exc, (NameError, ImportError, AttributeError)):
        name = getattr(exc, "name", None) or next(iter(re.findall(r"'(\w+)'", str(exc))[-1:]), None)
        for plan in engine.plans.values():
            for ex in plan.exercises.values():
                if name and name in ex.defines:
                    return (f"own engine: {ex.label()}: {name} is missing, which the course's code after it needs "
                            f"({what})")
    given, _ = innermost_block(engine, exc.__traceback__, ("given",))
    where = engine.describe(given) if given is not None else chapter_label(chapter)
    return f"own engine: {where}: importing the chapter on your answers raised {what}"


def collect(folder: Path, root: Path = WORK) -> Engine:
    """Read the student's notebooks, write their package under root and import it."""
    paths = notebook_paths(folder)
    plans = {}
    for chapter in ENGINE_CHAPTERS:
        plans[chapter] = plan_chapter(chapter, paths[chapter], read_notebook(paths[chapter]))
    engine = Engine(folder, package_name(folder), root, plans)
    for plan in plans.values():
        engine.notes.extend(plan.notes)
    return engine
