"""Demo cells: given cells that only show something (a plot, a timing, a table), which the in-process grading
runs (autograde.authoring.verdicts) may skip.

A chapter's source marks such a cell with the metadata `course.demo: true`. Its cost is the point: a training
run drawn as a curve, a throughput measured against torch. The in-process verdicts run every catalogue case from
its first changed cell to the end of the notebook; a demo cell that no later cell needs is then paid once per
case, for nothing a test reads. nbgrader (make test-exhaustive, and every real grading) still runs every cell, and
the exhaustive tier checks that its scores agree with the in-process ones.

`problems` is the static check that a mark is safe (test_metadata runs it): a demo cell is neither an answer nor
a test cell, and no later cell that is not a demo itself reads a name whose latest binding before it is a demo
cell's (module-level reads, taken in statement order; a function's own arguments and locals are its own).
"""
from __future__ import annotations

import ast

from autograde import notebook as nbk
from autograde.notebook import python_of
from autograde.paths import source_path


def is_demo(cell: nbk.NotebookNode) -> bool:
    return cell.cell_type == "code" and bool(nbk.course_meta(cell).get("demo"))


def demo_ids(chapter: str) -> set[str]:
    """The cell ids of a chapter's demo cells (marked in its source; the release and its fillings keep the ids)."""
    return {c.get("id") for c in nbk.read(source_path(chapter)).cells if is_demo(c)}


def _bound_in(node: ast.AST) -> set[str]:
    """Names a statement binds in the scope it runs in (not inside the functions and classes it defines)."""
    out: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(child.name)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            out.add(child.id)
        elif not isinstance(child, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            out |= _bound_in(child)
    return out


def _reads(node: ast.AST, local: frozenset[str] = frozenset()) -> set[str]:
    """Names a piece of code reads from the enclosing (module) scope: a function's arguments and the names it
    binds are its own, as are a comprehension's targets."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        own = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        own |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            own |= _bound_in(stmt)
        defaults = [*args.defaults, *[d for d in args.kw_defaults if d is not None]]
        decorators = getattr(node, "decorator_list", [])
        out = set().union(*(_reads(d, local) for d in (*defaults, *decorators)))
        return out | set().union(*(_reads(s, local | own) for s in body))
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        own = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        return set().union(*(_reads(c, local | own) for c in ast.iter_child_nodes(node)))
    if isinstance(node, ast.Name):
        return {node.id} - local if isinstance(node.ctx, ast.Load) else set()
    return set().union(*(_reads(c, local) for c in ast.iter_child_nodes(node)))


def free_reads(source: str) -> set[str]:
    """The names a cell reads that it has not bound itself by then (statement by statement; for an assignment,
    its value is read before its targets are bound)."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return set()
    bound: set[str] = set()
    out: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            value_reads = _reads(stmt.value) if stmt.value is not None else set()
            target_reads = set().union(*(_reads(t) for t in getattr(stmt, "targets", [getattr(stmt, "target", None)])
                                         if t is not None))
            if isinstance(stmt, ast.AugAssign):
                target_reads |= {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
            out |= (value_reads | target_reads) - bound
        else:
            out |= _reads(stmt) - bound - (_bound_in(stmt) if isinstance(stmt, (ast.For, ast.With)) else set())
        bound |= _bound_in(stmt)
    return out


def problems(nb: nbk.NotebookNode) -> list[str]:
    """Why a demo mark would be unsafe: a demo cell that is an answer or test cell, or a later cell that is not a
    demo and reads what a demo cell bound."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    out = [f"code cell {i} ({nbk.grade_id(c)}) is marked demo but is an answer or test cell" for i, c in enumerate(code)
           if is_demo(c) and (nbk.is_solution(c) or nbk.is_test(c))]
    latest: dict[str, int] = {}
    for i, cell in enumerate(code):
        if not is_demo(cell):
            needed = sorted(n for n in free_reads(cell.source) if n in latest and is_demo(code[latest[n]]))
            out += [f"code cell {i} ({nbk.grade_id(cell) or 'given'}) reads {n}, bound last by demo cell {latest[n]}"
                    for n in needed]
        try:
            tree = ast.parse(python_of(cell.source))
        except SyntaxError:
            continue
        for stmt in tree.body:
            for name in _bound_in(stmt):
                latest[name] = i
    return out
