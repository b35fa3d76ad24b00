"""The student edition (autograde.authoring.edition) holds what a class's students may see, and its notebooks run.

Leaks are looked for in every file of the edition, line by line (a notebook's cells and outputs parsed, and its
raw JSON): no solution line of this chapter or a later one, no hidden-test line, no line of autograde/hidden/,
no line of the reference engine of this chapter or a later one.

"A release notebook runs" means, here: executed top to bottom in a fresh kernel whose imports see the edition's
course package only (not the repository's, not autograde), every cell runs (no time-out, no dead kernel), and
every error is one a student's unanswered notebook must raise: NotImplementedError raised in an answer cell's
stub (or NotAnsweredYet, course.checking.needs' one line about it), or NameError for a name that an answer cell
defines once answered, or that a cell which failed that way would have defined. Anything else (an import that
fails, a given cell that breaks) is a failure of the edition.
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from course import CHAPTERS
from autograde import notebook as nbk
from autograde.authoring import edition
from autograde.paths import REPO, reference_path, release_path, source_path

from .test_products import _hidden_lines

LAST = CHAPTERS[-1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RUNTIME = [REPO / "course" / name for name in edition.RUNTIME_MODULES if name.endswith(".py")]


# -- what may not be in an edition for chapter N ---------------------------------------------------------
def lines_of_text(text: str) -> set[str]:
    return {ln.strip() for ln in text.split("\n")}


def lines_of_file(path: Path) -> set[str]:
    """Every stripped line of a file; for a notebook, of its raw JSON and of its parsed cells and outputs."""
    text = path.read_text(errors="replace")
    lines = lines_of_text(text)
    if path.suffix == ".ipynb":
        nb = nbk.read(path)
        for cell in nb.cells:
            lines |= lines_of_text(cell.source)
            for output in cell.get("outputs", []):
                for value in (output.get("text", ""), output.get("evalue", ""), *output.get("traceback", []),
                              *[v for v in output.get("data", {}).values() if isinstance(v, str)]):
                    lines |= lines_of_text(value if isinstance(value, str) else "".join(value))
    return lines


def solution_lines(chapter: str) -> set[str]:
    """The distinctive lines of the chapter's solutions: in a solution region, not also outside one."""
    out = set()
    for cell in nbk.read(source_path(chapter)).cells:
        if nbk.is_solution(cell):
            outside = lines_of_text(nbk.without_hidden_tests(cell.source)) - lines_of_text(
                "\n".join(nbk.solution_lines(cell.source)))
            out |= {ln.strip() for ln in nbk.solution_lines(cell.source)
                    if len(ln.strip()) >= 15 and ln.strip() not in outside}
    return out


def code_lines(path: Path, minimum: int) -> set[str]:
    """The lines of a Python file at least minimum characters long, comments left out."""
    return {ln for ln in lines_of_text(path.read_text()) if len(ln) >= minimum and not ln.startswith("#")}


def forbidden(chapter: str) -> dict[str, set[str]]:
    """What may not appear in an edition for chapter N, by kind. A line that the edition's release notebooks
    show (nbgrader's student version, checked for leaks by test_products) or an earlier chapter's reference
    (shipped on purpose) also has is public at chapter N, and left out; so is, for the hidden tests, the hidden
    helpers and the later reference, a line of the runtime package (an import line, `__tracebackhide__ = True`)."""
    chapters = edition.chapters_up_to(chapter)
    later = CHAPTERS[len(chapters) - 1:]  # this chapter and the later ones
    earlier_reference = set().union(*[lines_of_file(reference_path(ch)) for ch in chapters[:-1]])
    runtime = set().union(*[lines_of_file(p) for p in RUNTIME])
    releases = set().union(*[lines_of_file(release_path(ch)) for ch in chapters])
    hidden_modules = set().union(*[code_lines(p, 20) for p in (REPO / "autograde" / "hidden").glob("*.py")])
    return {
        "solution": set().union(*[solution_lines(ch) for ch in later]) - earlier_reference - releases,
        "hidden test": set().union(*[_hidden_lines(ch) for ch in CHAPTERS]) - earlier_reference - runtime - releases,
        "autograde/hidden": {ln for ln in hidden_modules - earlier_reference - runtime - releases
                              if not ln.startswith(('"""', "'''"))},
        "later reference": set().union(*[code_lines(reference_path(ch), 15) for ch in later])
        - earlier_reference - runtime - releases,
    }


def leaks(root: Path, bad: dict[str, set[str]]) -> list[str]:
    """'path: kind: line' for every forbidden line found in any file under root."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts):
        lines = lines_of_file(path)
        for kind, forbidden_lines in bad.items():
            found += [f"{path.relative_to(root)}: {kind}: {ln}" for ln in sorted(lines & forbidden_lines)]
    return found


# -- fixtures -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> dict[str, Path]:
    """One edition per chapter, as `make student-edition CHAPTER=... DEST=...` writes it."""
    root = tmp_path_factory.mktemp("editions")
    return {ch: edition.build(ch, root / ch) for ch in CHAPTERS}


def files_of(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


# -- contents -------------------------------------------------------------------------------------------
def test_the_edition_holds_the_notebooks_runtime_earlier_reference_binder_and_readme(editions):
    root = editions[LAST]
    files = files_of(root)
    notebooks = {f"notebooks/{ch}/{ch}.ipynb" for ch in CHAPTERS}
    references = {f"course/reference/{ch}.py" for ch in CHAPTERS[:-1]}
    runtime = {f"course/{name}" for name in edition.RUNTIME_MODULES} | {"course/reference/__init__.py"}
    config = {".binder/environment.yml", ".binder/postBuild", ".binder/start", ".jupyter/jupyter_server_config.json",
              ".jupyter/labconfig/page_config.json"}
    rest = {"README.md", "pyproject.toml", "constraints.txt", ".gitignore", edition.MARKER}
    assert files == notebooks | references | runtime | config | rest, sorted(files ^ (notebooks | references |
                                                                                       runtime | config | rest))
    for path in notebooks:
        chapter = Path(path).parent.name
        assert (root / path).read_bytes() == release_path(chapter).read_bytes()
    for path in config:
        assert (root / path).read_bytes() == (REPO / path).read_bytes()
    assert (root / ".binder" / "postBuild").stat().st_mode & 0o111, "postBuild must stay executable"
    assert f"CHAPTERS: tuple[str, ...] = {CHAPTERS!r}" in (root / "course" / "__init__.py").read_text()
    readme = (root / "README.md").read_text()
    assert f"?urlpath=lab/tree/notebooks/{CHAPTERS[0]}/{CHAPTERS[0]}.ipynb" in readme
    assert "Validate" in readme and "JUPYTER_CONFIG_PATH" in readme
    pyproject = (root / "pyproject.toml").read_text()
    assert 'include = ["course*"]' in pyproject and "autograde" not in pyproject
    assert json.loads((root / edition.MARKER).read_text())["chapters"] == list(CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_an_earlier_edition_stops_at_its_chapter(editions, chapter):
    chapters = edition.chapters_up_to(chapter)
    files = files_of(editions[chapter])
    assert {f for f in files if f.startswith("notebooks/")} == {f"notebooks/{ch}/{ch}.ipynb" for ch in chapters}
    assert {f for f in files if f.startswith("course/reference/") and not f.endswith("__init__.py")} == {
        f"course/reference/{ch}.py" for ch in chapters[:-1]}
    assert not any(f.split("/")[0] in ("autograde", "source", "solutions", "release") for f in files)
    assert "nbgrader_config.py" not in files


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_solution_hidden_test_or_later_reference_line_in_any_file(editions, chapter):
    bad = forbidden(chapter)
    for kind, lines in bad.items():
        assert lines or kind == "autograde/hidden", f"no {kind} lines to look for: is the scan looking at anything?"
    assert leaks(REPO / "course" / "reference", {"later reference": bad["later reference"]}), (
        "the scan finds nothing in the repository's own reference modules: it would miss a leak")
    found = leaks(editions[chapter], bad)
    assert not found, "\n".join(found[:10])
    text = "\n".join(p.read_text(errors="replace") for p in editions[chapter].rglob("*") if p.is_file())
    assert nbk.BEGIN_HIDDEN not in text and nbk.BEGIN_SOLUTION not in text


def test_a_second_build_replaces_an_edition_and_keeps_its_git_folder(tmp_path):
    dest = edition.build(CHAPTERS[-1], tmp_path / "class")
    (dest / ".git").mkdir()
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (dest / "stray.txt").write_text("left from before")
    edition.build(CHAPTERS[0], dest)
    assert (dest / ".git" / "HEAD").exists() and not (dest / "stray.txt").exists()
    assert not (dest / "notebooks" / CHAPTERS[-1]).exists()
    foreign = tmp_path / "work"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine")
    with pytest.raises(ValueError, match="neither empty nor a student edition"):
        edition.build(CHAPTERS[0], foreign)
    with pytest.raises(ValueError, match="inside the course repository"):
        edition.build(CHAPTERS[0], REPO / "course")


# -- running in a kernel that sees the edition's course only -----------------------------------------------
LAUNCHER = """import sys
edition, repo = sys.argv.pop(1), sys.argv.pop(1)
editable = lambda f: getattr(f, "__module__", "").startswith("__editable__")  # an editable install's finders
sys.meta_path[:] = [f for f in sys.meta_path if not editable(f)]
sys.path_hooks[:] = [h for h in sys.path_hooks if not editable(h)]
sys.path[:] = [edition] + [p for p in sys.path if p and p.rstrip("/") != repo and not p.startswith("__editable__")]
sys.path_importer_cache.clear()
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""

PROBE = """import importlib.util
import course
assert course.__file__.startswith({edition!r}), course.__file__
assert importlib.util.find_spec("autograde") is None, "autograde is importable"
print("course from", course.__file__)"""


def run_in_edition(nb, root: Path, tmp: Path, timeout: int = 120):
    """Execute nb (a probe cell first) in a kernel whose imports see root's course only; return the probe's
    outputs and the executed notebook without the probe."""
    kernels = tmp / "kernels" / "edition"
    kernels.mkdir(parents=True, exist_ok=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", LAUNCHER, str(root), str(REPO), "-f", "{connection_file}"],
        "display_name": "edition", "language": "python"}))
    km = AsyncKernelManager(kernel_name="edition", kernel_spec_manager=KernelSpecManager(kernel_dirs=[
        str(tmp / "kernels")]))
    nb.cells.insert(0, new_code_cell(PROBE.format(edition=str(root))))
    NotebookClient(nb, km=km, timeout=timeout, startup_timeout=180, allow_errors=True,
                   resources={"metadata": {"path": str(root / "notebooks")}}).execute()
    probe = nb.cells.pop(0)
    return probe.outputs, nb


def assigned_names(source: str) -> set[str]:
    """Names a cell binds at top level (assignments, defs, classes, imports)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def unexpected_errors(nb, chapter: str) -> list[str]:
    """The errors of an executed release notebook that an unanswered notebook need not raise (see the module)."""
    answered_names = set().union(*[assigned_names(nbk.solution_code(c.source))
                                   for c in nbk.read(source_path(chapter)).cells if nbk.is_solution(c)])
    answer_counts = {c.execution_count for c in nb.cells if nbk.is_solution(c)}
    failed_names: set[str] = set()
    problems = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.execution_count is None:
            problems.append(f"cell {k} did not run")
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        for error in errors:
            shown = ANSI.sub("", "\n".join(error.traceback))
            frames = [int(n) for n in re.findall(r"Cell In\[(\d+)\]", shown)]
            missing = re.search(r"name '(\w+)' is not defined", error.evalue)
            if error.ename == "NotAnsweredYet":
                continue
            if error.ename == "NotImplementedError" and frames and frames[-1] in answer_counts:
                continue
            if error.ename == "AssertionError" and nbk.is_test(cell) and "raised NotImplementedError" in error.evalue:
                continue  # a visible test that says which unanswered stub it called (course.checking)
            if error.ename == "NameError" and missing and missing.group(1) in answered_names | failed_names:
                continue
            problems.append(f"cell {k} ({nbk.grade_id(cell) or 'given'}): {error.ename}: {error.evalue}")
        if errors:
            failed_names |= assigned_names(cell.source)
    return problems


def test_chapter_1_runs_from_the_edition_with_its_course_package_only(editions, tmp_path):
    root = editions[LAST]
    nb = nbk.read(root / "notebooks" / CHAPTERS[0] / f"{CHAPTERS[0]}.ipynb")
    probe, nb = run_in_edition(nb, root, tmp_path)
    assert not [o for o in probe if o.output_type == "error"], probe
    problems = unexpected_errors(nb, CHAPTERS[0])
    assert not problems, "\n".join(problems)
    given = [c for c in nb.cells if c.cell_type == "code" and not nbk.is_solution(c) and not nbk.is_test(c)]
    assert given and all(c.execution_count for c in given)
    assert any(not [o for o in c.outputs if o.output_type == "error"] and c.outputs for c in given), (
        "no given cell produced output")
    stubs = [c for c in nb.cells if nbk.is_solution(c)]
    assert stubs and all(o.ename == "NotImplementedError" for c in stubs for o in c.outputs
                         if o.output_type == "error"), "an unanswered stub should raise NotImplementedError"


def import_lines(source: str) -> str:
    """The top-level import statements of a given cell (a setup cell may also set things up)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(node) for node in body if isinstance(node, (ast.Import, ast.ImportFrom)))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_chapters_imports_work_in_its_own_edition(editions, chapter, tmp_path):
    """The top-level imports of every given cell of chapter N's notebook, in the edition for chapter N
    (which lacks chapter N's reference): a module the notebook needs is shipped, and imports."""
    root = editions[chapter]
    nb = nbk.read(root / "notebooks" / chapter / f"{chapter}.ipynb")
    imports = [import_lines(c.source) for c in nb.cells
               if c.cell_type == "code" and not nbk.is_solution(c) and not nbk.is_test(c)]
    nb.cells = [nbformat.v4.new_code_cell(code) for code in imports if code]
    assert nb.cells and any("course" in c.source for c in nb.cells)
    probe, nb = run_in_edition(nb, root, tmp_path)
    errors = [f"{o.ename}: {o.evalue}" for c in [*nb.cells] for o in c.outputs if o.output_type == "error"]
    assert not [o for o in probe if o.output_type == "error"] and not errors, errors or probe
