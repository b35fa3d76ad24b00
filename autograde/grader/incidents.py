"""Incidents of a graded submission: what the grader detected or neutralised, in plain words, and what it cost.

Two static checks, run by the course's nbgrader preprocessors:
- `tampering`: the submission against the assignment as the gradebook has it
  (deleted, edited, duplicated or retyped cells, changed points, tags that
  control execution). nbgrader's OverwriteCells, DeduplicateIds and the
  course's StripCellTags neutralise these; the incident records that it happened.
- `cheating`: the code a student wrote (answer cells and any cell they added
  or may edit) for what may not be in it: torch, the reference engine of the
  chapter being graded, patched test helpers, builtins or modules, hooks into
  IPython, exec/eval, files or shell commands. The incident costs the exercise
  the code belongs to: the test cells after it, up to the next answer cell
  (and, for a name imported from the reference engine, the tests of the answer
  cell that should define that name).
Run-time incidents (timeouts, crashes, memory, output) are recorded by
SandboxedExecute.
"""
from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field

from nbformat import NotebookNode

from autograde import notebook as nbk

METADATA_KEY = "autograde"
"""Notebook metadata key under which incidents travel from one grading step to the next."""

CONTROL_TAGS = ("skip-execution", "raises-exception")
TEST_HELPERS = ("check_close", "check_shape", "check_equal", "check_raises", "check_choice", "to_numpy")
GUARDED_BUILTINS = ("AssertionError", "Exception", "BaseException", "isinstance", "len", "abs", "float", "type",
                    "getattr", "hasattr", "all", "any", "max", "min", "__import__")
MODULE_ALIASES = {"np": "numpy", "math": "math", "sys": "sys", "os": "os", "builtins": "builtins",
                  "course": "course", "torch": "torch", "numpy": "numpy", "importlib": "importlib"}
HOOKS = {"sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.excepthook", "sys.meta_path",
         "sys.path_hooks", "sys.displayhook", "atexit.register", "gc.get_objects", "gc.get_referrers",
         "ctypes.CDLL", "ctypes.pythonapi", "inspect.currentframe", "sys._getframe"}
FILE_CALLS = {"open", "io.open", "os.open", "os.listdir", "os.scandir", "os.walk", "os.stat", "os.chdir",
              "glob.glob", "glob.iglob", "pathlib.Path", "Path", "shutil.copy", "shutil.copyfile", "os.remove",
              "os.unlink", "os.rename", "os.getcwd", "sqlite3.connect"}
SHELL_CALLS = {"os.system", "os.popen", "subprocess.run", "subprocess.Popen", "subprocess.call",
               "subprocess.check_output", "subprocess.check_call", "os.execv", "os.execve", "os.spawnv"}
NETWORK_MODULES = ("socket.", "urllib.", "http.", "requests.", "ftplib.", "smtplib.")
BENIGN_MAGICS = {"time", "timeit", "matplotlib"}


@dataclass(frozen=True)
class Incident:
    """One thing that happened while grading a submission."""

    kind: str
    """timeout | time-limit | crash | exit | memory | output | processes | tampering | cheating | files | network |
    failed | ungradable"""
    cell: str
    """the cell it happened in (grade_id, cell id or position)"""
    text: str
    """what happened, in plain words"""
    costs: tuple[str, ...] = field(default=())
    """grade_ids of the test cells that score 0 because of it (the grader sets them to 0)"""

    def to_json(self) -> dict:
        return {**asdict(self), "costs": list(self.costs)}

    @classmethod
    def from_json(cls, data: dict) -> "Incident":
        return cls(data["kind"], data["cell"], data["text"], tuple(data.get("costs", ())))

    def words(self) -> str:
        """One line for a report."""
        cost = f" [scored 0: {', '.join(self.costs)}]" if self.costs else ""
        return f"{self.kind}: {self.text}{cost}"


def stored(nb: NotebookNode) -> list[Incident]:
    """The incidents recorded in a notebook's metadata."""
    return [Incident.from_json(d) for d in nb.metadata.get(METADATA_KEY, {}).get("incidents", [])]


def store(nb: NotebookNode, incidents: list[Incident]) -> None:
    """Record incidents in a notebook's metadata (deduplicated, in order)."""
    seen, out = set(), []
    for inc in incidents:
        key = (inc.kind, inc.cell, inc.text, inc.costs)
        if key not in seen:
            seen.add(key)
            out.append(inc.to_json())
    nb.metadata.setdefault(METADATA_KEY, {})["incidents"] = out


def add(nb: NotebookNode, new: list[Incident]) -> None:
    """Append incidents to those recorded in a notebook's metadata."""
    store(nb, stored(nb) + list(new))


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output for a cell, as the kernel would have written it (nbgrader scores such a cell 0)."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def label(cell: NotebookNode, index: int) -> str:
    """A cell's name for a report: its grade_id, else its id, else its position."""
    return nbk.grade_id(cell) or cell.get("id") or f"cell {index + 1}"


def normalised(source: str) -> str:
    """Source without trailing spaces and blank lines, for comparing versions of a cell."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines() if line.strip())


# -- tampering --------------------------------------------------------------
@dataclass(frozen=True)
class ExpectedCell:
    """A graded or locked cell of the assignment, as the gradebook holds it."""

    name: str
    cell_type: str
    locked: bool
    grade: bool
    solution: bool
    points: float | None
    release_source: str
    """the source a student received (hidden tests removed)"""


def tampering(submission: NotebookNode, expected: dict[str, ExpectedCell]) -> list[Incident]:
    """What a submission changed in the cells it may not change."""
    out: list[Incident] = []
    seen: dict[str, int] = {}
    for i, cell in enumerate(submission.cells):
        tags = [t for t in cell.get("metadata", {}).get("tags", []) if t in CONTROL_TAGS]
        if tags:
            out.append(Incident("tampering", label(cell, i),
                                f"cell {label(cell, i)} was tagged {', '.join(tags)}; the tag was removed and the cell run"))
        gid = nbk.grade_id(cell)
        if gid:
            seen[gid] = seen.get(gid, 0) + 1
    for gid, count in seen.items():
        if count > 1 and gid in expected:
            what = "test" if expected[gid].grade else "answer" if expected[gid].solution else "read-only"
            out.append(Incident("tampering", gid, f"{what} cell {gid} appears {count} times; only one copy was graded"))
    present = {nbk.grade_id(c): c for c in submission.cells if nbk.grade_id(c)}
    for gid, exp in expected.items():
        cell = present.get(gid)
        kind = "test" if exp.grade else "answer" if exp.solution else "read-only"
        if cell is None:
            if exp.grade or exp.locked:
                fate = "restored from the gradebook and run" if exp.grade else "not restored: the cells after it ran without it"
                out.append(Incident("tampering", gid, f"{kind} cell {gid} was deleted ({fate})"))
            continue
        if cell.cell_type != exp.cell_type:
            out.append(Incident("tampering", gid, f"{kind} cell {gid} was changed to a {cell.cell_type} cell "
                                                  f"(changed back to {exp.cell_type})"))
        meta = nbk.nbgrader_meta(cell)
        if exp.grade and exp.points is not None and meta.get("points") is not None:
            try:
                changed = float(meta["points"]) != float(exp.points)
            except (TypeError, ValueError):
                changed = True
            if changed:
                out.append(Incident("tampering", gid, f"the points of {gid} were changed to {meta['points']!r} "
                                                      f"(restored to {exp.points:g})"))
        if exp.locked and not exp.solution and normalised(cell.source) != normalised(exp.release_source):
            out.append(Incident("tampering", gid, f"{kind} cell {gid} was edited (the original was restored and run)"))
    return out


# -- cheating ---------------------------------------------------------------
def _dotted(node: ast.AST) -> str | None:
    """'a.b.c' for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        inner = _dotted(node.func)
        return f"{inner}()" + ("." + ".".join(reversed(parts)) if parts else "") if inner else None
    return None


class _Scanner(ast.NodeVisitor):
    """Collects (finding, names) for one cell's code."""

    def __init__(self, chapter: str) -> None:
        self.chapter = chapter
        self.reference = f"course.reference.{chapter}"
        self.modules: dict[str, str] = dict(MODULE_ALIASES)  # local alias -> module
        self.findings: list[tuple[str, tuple[str, ...]]] = []

    def _find(self, text: str, names: tuple[str, ...] = ()) -> None:
        if (text, names) not in self.findings:
            self.findings.append((text, names))

    def _module_import(self, module: str, names: tuple[str, ...]) -> None:
        if module == "torch" or module.startswith("torch."):
            self._find("uses torch in student code")
        if module == self.reference or module.startswith(self.reference + "."):
            self._find(f"imports the reference engine of this chapter ({self.reference})", names)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module_import(alias.name, ("*",))
            self.modules[(alias.asname or alias.name).split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        names = tuple(a.name for a in node.names)
        self._module_import(module, names)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if module == "course.reference" or module == "torch" or module.startswith("torch."):
                self._module_import(full, ("*",))
            self.modules[alias.asname or alias.name] = full
        self.generic_visit(node)

    def _resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        if head in self.modules:
            return self.modules[head] + ("." + rest if rest else "")
        return dotted

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name:
            full = self._resolve(name)
            consts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if full in ("__import__", "importlib.import_module", "importlib.__import__"):
                for c in consts:
                    self._module_import(c, ("*",))
            elif full in ("exec", "eval", "compile", "builtins.exec", "builtins.eval"):
                self._find(f"runs generated code with {name}()")
            elif full in ("setattr", "delattr", "builtins.setattr") and node.args:
                target = _dotted(node.args[0])
                if target and self._resolve(target).split(".")[0] in set(MODULE_ALIASES.values()) | {"course"}:
                    self._find(f"patches {self._resolve(target)} with {name}()")
            elif name.startswith("get_ipython()") and name.endswith((".system", ".getoutput")):
                self._find("runs a shell command (!)")
            elif name.startswith("get_ipython()"):
                magic = consts[0] if consts else ""
                if not (name.endswith((".run_line_magic", ".run_cell_magic")) and magic in BENIGN_MAGICS):
                    self._find("hooks into IPython (get_ipython) in student code")
            elif full in SHELL_CALLS or full.startswith("subprocess."):
                self._find(f"runs a shell command ({name})")
            elif full.startswith(NETWORK_MODULES):
                self._find(f"uses the network ({name})")
            elif full in FILE_CALLS or full.startswith(("shutil.", "pathlib.")):
                self._find(f"reads, writes or lists files ({name})")
            if full in HOOKS:
                self._find(f"hooks into the interpreter ({full})")
            if full.startswith(self.reference):
                self._find(f"uses the reference engine of this chapter ({self.reference})", ("*",))
        self.generic_visit(node)

    def _target(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id in TEST_HELPERS:
                self._find(f"redefines the test helper {node.id}")
            elif node.id in GUARDED_BUILTINS:
                self._find(f"redefines the builtin {node.id}")
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            base = node.value if isinstance(node, ast.Subscript) else node
            dotted = _dotted(base)
            if dotted:
                full = self._resolve(dotted)
                root = full.split(".")[0]
                if full.startswith("sys.modules"):
                    pass  # reported by visit_Attribute
                elif root in set(MODULE_ALIASES.values()) and "." in full and not full.startswith(("torch",)):
                    self._find(f"patches {full}")
                elif root == "torch":
                    self._find("uses torch in student code")
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                self._target(elt)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._target(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._target(t)
        self.generic_visit(node)

    def _defined(self, node: ast.AST, name: str) -> None:
        if name in TEST_HELPERS:
            self._find(f"redefines the test helper {name}")
        elif name in GUARDED_BUILTINS:
            self._find(f"redefines the builtin {name}")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._defined(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._defined(node, node.name)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__loader__"):
            self._find(f"uses {node.id}")
        if node.id == "torch":
            self._find("uses torch in student code")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        if dotted:
            full = self._resolve(dotted)
            if full.startswith(self.reference):
                self._find(f"uses the reference engine of this chapter ({self.reference})", ("*",))
            if full in HOOKS:
                self._find(f"hooks into the interpreter ({full})")
            if full.startswith("sys.modules"):
                self._find("reaches into sys.modules")
        self.generic_visit(node)


def python_of(source: str) -> str:
    """Cell source as plain Python (IPython magics and shell escapes turned into calls)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - fall back to the raw source
        return source


def scan_code(source: str, chapter: str) -> list[tuple[str, tuple[str, ...]]]:
    """Findings in one cell's code: (what, names imported from the reference engine or ('*',))."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return []
    scanner = _Scanner(chapter)
    scanner.visit(tree)
    return scanner.findings


def defined_names(source: str) -> set[str]:
    """Top-level names a cell defines (functions, classes, assignments)."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def exercise_tests(nb: NotebookNode) -> dict[int, list[str]]:
    """Per code cell index, the test cells after it up to the next answer cell (the exercise it belongs to)."""
    out: dict[int, list[str]] = {}
    for i, cell in enumerate(nb.cells):
        tests = []
        for later in nb.cells[i + 1:]:
            if nbk.is_solution(later):
                break
            if nbk.is_test(later):
                tests.append(nbk.grade_id(later))
        out[i] = tests
    return out


def cheating(nb: NotebookNode, chapter: str, answer_names: dict[str, set[str]] | None = None) -> list[Incident]:
    """Findings in every cell a student can write (answer cells and unlocked cells), with their cost.

    answer_names maps an answer cell's grade_id to the names the assignment
    expects it to define (from the release), so that a name imported from the
    reference engine costs the exercise of the cell that should define it.
    """
    tests_after = exercise_tests(nb)
    owner: dict[str, list[str]] = {}
    for gid, names in (answer_names or {}).items():
        idx = next((i for i, c in enumerate(nb.cells) if nbk.grade_id(c) == gid and nbk.is_solution(c)), None)
        if idx is not None:
            for name in names:
                owner[name] = tests_after[idx]
    out: list[Incident] = []
    for i, cell in enumerate(nb.cells):
        meta = nbk.nbgrader_meta(cell)
        if cell.cell_type != "code" or nbk.is_test(cell) or (meta.get("locked") and not meta.get("solution")):
            continue
        where = label(cell, i)
        for text, names in scan_code(cell.source, chapter):
            if text.startswith(("reads, writes or lists files", "runs a shell command", "uses the network")):
                # contained by the sandbox, not a way to a better score: reported, not charged
                out.append(Incident("network" if "network" in text else "files", where, f"cell {where} {text}"))
                continue
            costs = list(tests_after[i])
            if "*" in names:
                costs = [nbk.grade_id(c) for c in nb.cells[i + 1:] if nbk.is_test(c)]
            else:
                for name in names:
                    costs += owner.get(name, [])
            costs = tuple(dict.fromkeys(costs))
            out.append(Incident("cheating", where, f"cell {where} {text}", costs))
    return out
