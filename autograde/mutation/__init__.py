"""The measure of the hidden tests: automatic mutation of every graded answer, graded in-process.

Generation uses cosmic-ray's mutation operators (https://cosmic-ray.readthedocs.io), applied to the lines a student
writes (between the solution markers) of each graded answer cell of a chapter's perfect submission (`cosmic_ray.mutating.mutate_code`: parso rewrites one occurrence of
one operator and keeps the rest of the cell as it was written). cosmic-ray rather than mutmut: its operator engine
takes a source string and returns the mutated string, so a mutant is one changed answer cell, graded by the runner
the catalogue already uses; mutmut 3 rewrites whole modules into trampolines for its own pytest run.

The operators are cosmic-ray's core set, with two kinds left out:
- a binary operator is replaced only within its own family (arithmetic + - * / // % ** among themselves, bitwise
  | & ^ among themselves): an arithmetic operator replaced by a shift or a bitwise one fails on every float array,
  a mutant no test is needed to catch;
- VariableReplacer and VariableInserter, which draw names at random (not reproducible from one run to the next);
and a mutant that changes only type annotations is dropped: annotations are not run (the cells' code never reads
them), so `Node | None` made `Node & None` is no bug for a test to find.

Every mutant that compiles and differs from the others is graded (`grade`): the chapter's filled notebook runs once,
and each mutant runs in a forked child from its changed cell up to the last test cell of its own exercise, with the
hidden tests, the harness and the grader's scoring rules (autograde.authoring.verdicts). A mutant is killed when any
test cell scores 0 or its run dies (a cell past its limit dies as the grader would stop it). A survivor is either
killed by a new rule and check, or listed in equivalent.json with its reason (it computes the same thing as the
reference on every input the exercise's rules admit).

Files (written by `make mutation`, committed):
- report.json: {"chapters": {chapter: {"generated", "killed", "equivalent", "survived"}}};
- survivors.json: each chapter's surviving mutants (cell, operator, the line before and after);
- equivalent.json: the mutants judged equivalent, each with its reason (written by hand).

Usage: python -m autograde.mutation [--list | --dry] [CHAPTER ...]   (make mutation [CHAPTER=...])
"""
from __future__ import annotations

import ast
import difflib
import json
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from autograde import notebook as nbk
from autograde.paths import source_path

HERE = Path(__file__).resolve().parent
REPORT = HERE / "report.json"
SURVIVORS = HERE / "survivors.json"
EQUIVALENT = HERE / "equivalent.json"

ARITHMETIC = {"Add", "Sub", "Mul", "Div", "FloorDiv", "Mod", "Pow"}
BITWISE = {"BitOr", "BitAnd", "BitXor"}
RANDOM_OPERATORS = {"VariableReplacer", "VariableInserter"}


def operators() -> list[str]:
    """The cosmic-ray operators make mutation applies, by name, in cosmic-ray's order."""
    from cosmic_ray.plugins import operator_names

    out = []
    for name in operator_names():
        op = name.split("/", 1)[1]
        if op.startswith("ReplaceBinaryOperator_"):
            _, a, b = op.split("_")
            if not ({a, b} <= ARITHMETIC or {a, b} <= BITWISE):
                continue
        elif op in RANDOM_OPERATORS:
            continue
        out.append(name)
    return out


@dataclass(frozen=True)
class Generated:
    """One mutant: an answer cell's source with one occurrence of one operator applied."""

    chapter: str
    cell: str
    operator: str
    occurrence: int
    line: int
    """the first changed line (1-based, in the answer cell's code)"""
    before: str
    after: str
    """the changed lines before and after the mutation, stripped"""
    source: str

    @property
    def id(self) -> str:
        return f"{self.cell}:{self.operator.split('/', 1)[1]}:{self.occurrence}"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What identifies it across edits elsewhere in the cell (equivalent.json matches on this)."""
        return self.cell, self.operator.split("/", 1)[1], self.before, self.after


def _changed(old: str, new: str) -> tuple[int, str, str]:
    a, b = old.splitlines(), new.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            return i1 + 1, " / ".join(s.strip() for s in a[i1:i2]), " / ".join(s.strip() for s in b[j1:j2])
    return 0, "", ""


class _NoAnnotations(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        node.returns = None
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        node.annotation = ast.Constant(None)
        return self.generic_visit(node)


def _code(source: str) -> str:
    """The cell's code as an AST dump, with every type annotation left out."""
    return ast.dump(_NoAnnotations().visit(ast.parse(nbk.python_of(source))))


def answer_cells(chapter: str) -> dict[str, tuple[str, set[int]]]:
    """grade_id -> (source, the numbers of its lines that the student writes) of every graded answer cell of the
    chapter's perfect submission (one that a test cell grades; an optional exercise has none), in notebook order.
    The student writes the lines between the solution markers; the rest of an answer cell is given."""
    from autograde.authoring.verdicts import graded_notebook

    nb = graded_notebook(chapter)
    graded = nbk.tests_of(nb)
    written = {nbk.grade_id(c): _solution_lines(c.source) for c in nbk.read(source_path(chapter)).cells
               if nbk.is_solution(c)}
    return {nbk.grade_id(c): (c.source, written[nbk.grade_id(c)]) for c in nb.cells
            if nbk.is_solution(c) and nbk.grade_id(c) in graded}


def _solution_lines(source: str) -> set[int]:
    """The 1-based numbers, in the cell's code with the markers removed (nbk.solution_code), of the lines between
    the solution markers."""
    out, inside, n = set(), False, 0
    for line in source.split("\n"):
        if nbk.BEGIN_SOLUTION in line or nbk.END_SOLUTION in line:
            inside = nbk.BEGIN_SOLUTION in line
            continue
        n += 1
        if inside:
            out.add(n)
    return out


def generate(chapter: str) -> list[Generated]:
    """Every distinct mutant of the chapter's answer cells that compiles, in a fixed order."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    names = operators()
    out: list[Generated] = []
    for cell, (source, written) in answer_cells(chapter).items():
        seen = {source}
        for name in names:
            op = get_operator(name)()
            k = 0
            while (mutated := mutate_code(source, op, k)) is not None:
                k += 1
                if mutated in seen:
                    continue
                seen.add(mutated)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", SyntaxWarning)
                        compile(nbk.python_of(mutated), cell, "exec")
                        if _code(mutated) == _code(source):
                            continue  # only an annotation changed
                except SyntaxError:
                    continue
                line, before, after = _changed(source, mutated)
                if line not in written:
                    continue  # a line the exercise gives
                out.append(Generated(chapter, cell, name, k - 1, line, before, after, mutated))
    return out


def equivalent(chapter: str) -> dict[tuple[str, str, str, str], str]:
    """key -> reason, for the chapter's mutants judged equivalent (equivalent.json)."""
    entries = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else []
    return {(e["cell"], e["operator"], e["before"], e["after"]): e["reason"] for e in entries if e["chapter"] == chapter}


def grade(chapter: str, mutants: list[Generated], parallel: int = 2) -> dict[str, dict[str, str]]:
    """mutant id -> the test cells it loses and why (empty: it survived), each graded in-process up to the last test
    cell of its own exercise."""
    from autograde.authoring.catalogue import Alternative
    from autograde.authoring.verdicts import BASE, graded_notebook, measure_until

    nb = graded_notebook(chapter)
    tests_of = nbk.tests_of(nb)
    runs = {m.id: ([Alternative(m.id, "generated", m.cell, m.source)], tuple(tests_of.get(m.cell, ())))
            for m in mutants}
    found = measure_until(chapter, runs, parallel)
    base = found.pop(BASE)
    if base.lost or base.died:
        raise RuntimeError(f"{chapter}: the perfect submission itself loses {sorted(base.lost)} {base.died}")
    return {name: {**v.lost, **({"(run)": v.died} if v.died else {})} for name, v in found.items()}


def measure_chapter(chapter: str, parallel: int = 2) -> tuple[dict[str, int], list[dict]]:
    """The chapter's report row and its survivors."""
    mutants = generate(chapter)
    known = equivalent(chapter)
    stale = set(known) - {m.key for m in mutants}
    if stale:
        raise SystemExit(f"equivalent.json lists {len(stale)} mutants of {chapter} that make mutation no longer "
                         f"generates (the answer changed): {sorted(stale)[:3]}; remove or update them")
    graded = [m for m in mutants if m.key not in known]
    lost = grade(chapter, graded, parallel)
    survivors = [m for m in graded if not lost[m.id]]
    row = {"generated": len(mutants), "killed": len(graded) - len(survivors), "equivalent": len(mutants) - len(graded),
           "survived": len(survivors)}
    return row, [{k: v for k, v in asdict(m).items() if k not in ("chapter", "source")} for m in survivors]


def score(row: dict[str, int]) -> float:
    """killed / (generated - equivalent)."""
    return row["killed"] / max(1, row["generated"] - row["equivalent"])
