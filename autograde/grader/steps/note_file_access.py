"""Step: report what a submission's own code does with files and the shell (the sandbox contains it; no cost).

What could change a score is checked at run time, in the kernel, by SandboxedExecute and the harness
(autograde.hidden.harness): torch inside graded code, graded code not written in the notebook, this
chapter's reference engine, patched helpers and hooks.
"""
from __future__ import annotations

import ast

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from autograde import notebook as nbk
from autograde.grader.records import incidents
from autograde.grader.records.incidents import Incident, label
from autograde.notebook import python_of


FILE_CALLS = {"open", "io.open", "os.open", "os.listdir", "os.scandir", "os.walk", "os.stat", "os.chdir",
              "glob.glob", "glob.iglob", "pathlib.Path", "Path", "shutil.copy", "shutil.copyfile", "os.remove",
              "os.unlink", "os.rename", "os.getcwd", "sqlite3.connect"}
SHELL_CALLS = {"os.system", "os.popen", "subprocess.run", "subprocess.Popen", "subprocess.call",
               "subprocess.check_output", "subprocess.check_call", "os.execv", "os.execve", "os.spawnv"}
NETWORK_MODULES = ("socket.", "urllib.", "http.", "requests.", "ftplib.", "smtplib.")


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
    """Collects what one cell's code does with files and the shell.

    Everything that could change a score is checked at run time instead, in the kernel
    (autograde.hidden.harness): torch inside graded code, graded code not written in the notebook,
    this chapter's reference engine, patched helpers, builtins and hooks. A text scan cannot see a
    computed module name, and would call a student who explores torch in a scratch cell a cheat.
    """

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}  # local alias -> module
        self.findings: list[str] = []
        self.own: set[str] = set()      # plain file names the file calls give as literals
        self.other = False              # a file call that names anything else, or no literal

    def _find(self, text: str) -> None:
        if text not in self.findings:
            self.findings.append(text)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.modules[(alias.asname or alias.name).split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self.modules[alias.asname or alias.name] = f"{node.module or ''}.{alias.name}"
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name:
            head, _, rest = name.partition(".")
            full = self.modules.get(head, head) + ("." + rest if rest else "")
            if name.startswith("get_ipython()") and name.endswith((".system", ".getoutput")):
                self._find("runs a shell command (!)")
                self.other = True
            elif full in SHELL_CALLS or full.startswith("subprocess."):
                self._find(f"runs a shell command ({name})")
                self.other = True
            elif full.startswith(NETWORK_MODULES):
                self._find(f"uses the network ({name})")
                self.other = True
            elif full in FILE_CALLS or full.startswith(("shutil.", "pathlib.")):
                self._find(f"reads, writes or lists files ({name})")
                own = _own_file(node) if full in OWN_FILE_CALLS else None
                if own:
                    self.own.add(own)
                elif not _on_own_file(node.func):
                    self.other = True
        self.generic_visit(node)


OWN_FILE_CALLS = {"open", "io.open", "pathlib.Path", "Path"}
"""The file calls whose literal first argument can name a file of the notebook's own (the others list, move,
delete or inspect files, or take no name)."""
NOT_NOTES = (".py", ".pyc", ".pth", ".ipynb", ".db", ".json", ".so")
"""Suffixes no notes file needs: what Python, Jupyter or the grader read."""


def _own_file(call: ast.Call) -> str | None:
    """The file name a call gives as a plain literal (no folder, not hidden, not a suffix that Python, Jupyter or
    the grader read), else None."""
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    name = call.args[0].value
    if not name or "/" in name or "\\" in name or name.startswith((".", "~")) or name.lower().endswith(NOT_NOTES):
        return None
    return name


def _on_own_file(func: ast.AST) -> bool:
    """A method called on a Path(literal own file) or open(literal own file): Path("notes.txt").write_text(...)."""
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
            and _dotted(func.value.func) in OWN_FILE_CALLS | {"pathlib.Path"} and _own_file(func.value) is not None)


def scan(source: str) -> tuple[list[str], tuple[str, ...]]:
    """What one cell's code does with files, the network and the shell, in words; and the plain file names its
    file calls give as literals, when those are all they name (else ())."""
    try:
        tree = ast.parse(python_of(source))
    except SyntaxError:
        return [], ()
    scanner = _Scanner()
    scanner.visit(tree)
    return scanner.findings, () if scanner.other else tuple(sorted(scanner.own))


def scan_code(source: str) -> list[str]:
    """What one cell's code does with files, the network and the shell, in words."""
    return scan(source)[0]


def file_access(nb: NotebookNode) -> list[Incident]:
    """File and shell access in every cell a student can write (answer cells and cells they added): reported only."""
    out: list[Incident] = []
    for i, cell in enumerate(nb.cells):
        meta = nbk.nbgrader_meta(cell)
        if cell.cell_type != "code" or nbk.is_test(cell) or (meta.get("locked") and not meta.get("solution")):
            continue
        where = label(cell, i)
        findings, own = scan(cell.source)
        out += [Incident("network", where, f"cell {where} {text}") if text.startswith("uses the network") else
                Incident("files", where, f"cell {where} {text}",
                         own_files=own if text.startswith("reads, writes") else ()) for text in findings]
    return out


class NoteFileAccess(NbGraderPreprocessor):
    """Record file and shell access in the cells a student wrote (runs on the notebook as it will run)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        incidents.add(nb, file_access(nb))
        return nb, resources
