"""Incidents of a graded submission: what the grader detected or neutralised, in plain words, and what it cost.

Two static checks, run by the course's nbgrader preprocessors:
- `tampering`: the submission against the assignment as the gradebook has it
  (deleted, edited, duplicated or retyped cells, changed points, tags that
  control execution). nbgrader's OverwriteCells, DeduplicateIds and the
  course's StripCellTags neutralise these; the incident records that it happened.
- `file_access`: what the code a student wrote does with files and the shell
  (reported; the sandbox contains it).
Run-time incidents are recorded by SandboxedExecute: timeouts, crashes, memory,
output, and from the harness in the kernel (autograde.hidden.harness) hooks it
undid and cheating it found: torch inside graded code, graded code not written
in the notebook, this chapter's reference engine imported. Cheating costs
exactly the test cells it concerns.
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import asdict, dataclass, field, replace

from nbformat import NotebookNode

from autograde import notebook as nbk

METADATA_KEY = "autograde"
"""Notebook metadata key under which incidents travel from one grading step to the next."""

CONTROL_TAGS = ("skip-execution", "raises-exception")
FILE_CALLS = {"open", "io.open", "os.open", "os.listdir", "os.scandir", "os.walk", "os.stat", "os.chdir",
              "glob.glob", "glob.iglob", "pathlib.Path", "Path", "shutil.copy", "shutil.copyfile", "os.remove",
              "os.unlink", "os.rename", "os.getcwd", "sqlite3.connect"}
SHELL_CALLS = {"os.system", "os.popen", "subprocess.run", "subprocess.Popen", "subprocess.call",
               "subprocess.check_output", "subprocess.check_call", "os.execv", "os.execve", "os.spawnv"}
NETWORK_MODULES = ("socket.", "urllib.", "http.", "requests.", "ftplib.", "smtplib.")


@dataclass(frozen=True)
class Incident:
    """One thing that happened while grading a submission."""

    kind: str
    """timeout | time-limit | crash | exit | memory | output | processes | tampering | hook | cheating | files |
    network | failed | ungradable"""
    cell: str
    """the cell it happened in (grade_id, cell id or position)"""
    text: str
    """what happened, in plain words"""
    costs: tuple[str, ...] = field(default=())
    """grade_ids of the test cells that score 0 because of it (the grader sets them to 0)"""
    own_files: tuple[str, ...] = field(default=())
    """files only: the plain file names, written as literals, that are all the cell's file calls name (a notes
    file beside the notebook); empty when a call names anything else or a computed path"""
    shown: bool = True
    """False: kept in incidents.json, left out of the report (an instructor need not look at it)"""

    def to_json(self) -> dict:
        return {**asdict(self), "costs": list(self.costs), "own_files": list(self.own_files)}

    @classmethod
    def from_json(cls, data: dict) -> "Incident":
        return cls(data["kind"], data["cell"], data["text"], tuple(data.get("costs", ())),
                   tuple(data.get("own_files", ())), data.get("shown", True))

    def words(self) -> str:
        """One line for a report."""
        cost = f" [scored 0: {', '.join(self.costs)}]" if self.costs else ""
        return f"{self.kind}: {self.text}{cost}"


def shown(found: list[Incident]) -> list[Incident]:
    """The incidents a report lists (the others are in incidents.json only)."""
    return [i for i in found if i.shown]


NOTES_BYTES = 1 << 20
"""What a notebook may write into its own folder, in all, for its file access to stay out of the report."""


def settle_own_files(found: list[Incident], writes: dict | None) -> list[Incident]:
    """Leave out of the report the file access of cells that name only plain files of their own, when the run
    bears it out: `writes` (the harness's record, harness.file_writes()) shows every file the notebook wrote
    inside its own folder, NOTES_BYTES in all at most, and nothing written elsewhere. Without a record (the
    harness unreachable) every incident stays in the report."""
    if not writes or writes.get("elsewhere") or writes.get("bytes", NOTES_BYTES + 1) > NOTES_BYTES:
        return found
    return [replace(i, shown=False) if i.kind == "files" and i.own_files and i.shown else i for i in found]


def stored(nb: NotebookNode) -> list[Incident]:
    """The incidents recorded in a notebook's metadata."""
    return [Incident.from_json(d) for d in nb.metadata.get(METADATA_KEY, {}).get("incidents", [])]


def store(nb: NotebookNode, incidents: list[Incident]) -> None:
    """Record incidents in a notebook's metadata (deduplicated, in order)."""
    seen, out = set(), []
    for inc in incidents:
        key = (inc.kind, inc.cell, inc.text, inc.costs, inc.shown)
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


def version_hash(source: str) -> str:
    """A short fingerprint of a read-only or test cell's release text (as normalised)."""
    return hashlib.sha256(normalised(source).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class EarlierReleases:
    """What earlier releases of a chapter handed to students (autograde/releases/<chapter>.json): per release,
    the grade_ids it had and the fingerprint of each read-only or test cell. A notebook handed in under an
    earlier release has that release's version of a cell, not an edited one, and lacks the cells added since."""

    releases: tuple[dict, ...] = ()

    def known_version(self, gid: str, source: str) -> bool:
        digest = version_hash(source)
        return any(digest in r.get("cells", {}).get(gid, ()) for r in self.releases)

    def release_of(self, present: dict[str, NotebookNode], today: dict[str, str]) -> dict | None:
        """The earlier release a submission came from: every cell it has of that release's read-only and test
        cells is that release's version, and either at least one of them is not today's, or it has none of the
        read-only and test cells added since that release (today: grade_id -> release text)."""
        for r in self.releases:
            cells = r.get("cells", {})
            mine = {gid: c for gid, c in present.items() if gid in cells}
            if not mine or not all(version_hash(c.source) in cells[gid] for gid, c in mine.items()):
                continue
            added_since = set(today) - set(r.get("ids", ()))
            if (any(gid not in today or normalised(c.source) != normalised(today[gid]) for gid, c in mine.items())
                    or (added_since and not added_since & set(present))):
                return r
        return None


def tampering(submission: NotebookNode, expected: dict[str, ExpectedCell],
              earlier: EarlierReleases = EarlierReleases()) -> list[Incident]:
    """What a submission changed in the cells it may not change (an earlier release's version is no change)."""
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
    old_release = earlier.release_of(present, {gid: e.release_source for gid, e in expected.items() if e.locked})
    for gid, exp in expected.items():
        cell = present.get(gid)
        kind = "test" if exp.grade else "answer" if exp.solution else "read-only"
        if cell is None:
            if old_release is not None and gid not in old_release.get("ids", ()):
                continue  # added after the release this notebook was handed out under: run, not missed
            if exp.grade or exp.locked:
                fate = "restored from the gradebook and run" if exp.grade else "restored from the release and run"
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
            if changed and old_release is not None:  # the points the earlier release gave are no change
                try:
                    changed = old_release.get("points", {}).get(gid) != float(meta["points"])
                except (TypeError, ValueError):
                    pass
            if changed:
                out.append(Incident("tampering", gid, f"the points of {gid} were changed to {meta['points']!r} "
                                                      f"(restored to {exp.points:g})"))
        if (exp.locked and not exp.solution and normalised(cell.source) != normalised(exp.release_source)
                and not earlier.known_version(gid, cell.source)):
            out.append(Incident("tampering", gid, f"{kind} cell {gid} was edited (the original was restored and run)"))
    return out


# -- file and shell access (reported, never charged: the sandbox contains it) ------------------------------
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


def python_of(source: str) -> str:
    """Cell source as plain Python (IPython magics and shell escapes turned into calls)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - fall back to the raw source
        return source


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
