"""The student edition of a class: what its students may see up to one chapter, as a folder ready to push.

    python -m autograde.authoring.edition CHAPTER DEST        (make student-edition CHAPTER=ch03_vjp_rules DEST=...)

DEST gets, for chapters 1..N (N = CHAPTER):
- notebooks/<ch>/<ch>.ipynb: the release notebooks (nbgrader's student version: stubs, visible tests);
- course/: the runtime package (checking, graphs, data, threads) with course/reference holding the reference engine
  of chapters 1..N-1 only, and CHAPTERS listing chapters 1..N;
- pyproject.toml (the course's dependencies; the package `course` only) and the constraints file;
- .binder/ (Binder builds it and opens chapter 1) and .jupyter/ (the student-only Jupyter configuration);
- README.md for students, .gitignore, and edition.json (which chapters, built from which commit).
Nothing of autograde/, source/, solutions/, nbgrader_config.py or the hidden tests.

DEST must be empty, missing, or an earlier edition (a clone of the class's repository): its files are replaced,
its .git is kept, so `git add -A && git commit && git push` publishes the next chapter.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib

from course import CHAPTERS
from autograde import notebook as nbk
from autograde.paths import REPO, reference_path, release_path

MARKER = "edition.json"
RUNTIME_MODULES = tuple(sorted(p.name for p in (REPO / "course").iterdir()
                               if p.is_file() and p.suffix in (".py", ".typed", ".json")))
"""The files of course/ a student's kernel needs (all of them: course/ is the runtime package), besides
course/reference/, which the edition filters by chapter."""
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def chapters_up_to(chapter: str) -> tuple[str, ...]:
    """Chapters 1..N for N = chapter."""
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; chapters: {', '.join(CHAPTERS)}")
    return CHAPTERS[: CHAPTERS.index(chapter) + 1]


def title(chapter: str) -> str:
    """The chapter's title: the first heading of its release notebook, without the '#'."""
    first = nbk.read(release_path(chapter)).cells[0].source.split("\n")[0]
    return first.lstrip("#").strip()


# -- the parts ------------------------------------------------------------------------------------------
def _prepare(dest: Path) -> None:
    """Make dest an empty folder (keeping .git) if it is missing, empty or an earlier edition; else refuse."""
    if dest.exists():
        entries = [p for p in dest.iterdir() if p.name != ".git"]
        if entries and not (dest / MARKER).exists():
            raise ValueError(f"{dest} is neither empty nor a student edition ({MARKER} missing): not touching it")
        for entry in entries:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    dest.mkdir(parents=True, exist_ok=True)


def _copy_notebooks(chapters: tuple[str, ...], dest: Path) -> None:
    for chapter in chapters:
        target = dest / "notebooks" / chapter / f"{chapter}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release_path(chapter), target)


def _copy_course(chapters: tuple[str, ...], dest: Path) -> None:
    """course/ with the runtime modules, and the reference of every chapter but the last."""
    package = dest / "course"
    (package / "reference").mkdir(parents=True)
    for name in RUNTIME_MODULES:
        shutil.copyfile(REPO / "course" / name, package / name)
    shutil.copyfile(REPO / "course" / "reference" / "__init__.py", package / "reference" / "__init__.py")
    for chapter in chapters[:-1]:
        shutil.copyfile(reference_path(chapter), package / "reference" / f"{chapter}.py")
    init = package / "__init__.py"
    text, count = re.subn(r"^CHAPTERS: tuple\[str, \.\.\.\] = \(.*\)$",
                          f"CHAPTERS: tuple[str, ...] = {tuple(chapters)!r}", init.read_text(), flags=re.M)
    if count != 1:
        raise RuntimeError("course/__init__.py has no one-line CHAPTERS tuple to rewrite")
    init.write_text(text)


def _pyproject() -> str:
    """The edition's pyproject.toml: the course's name, Python range and dependencies; the package course only."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = "".join(f"    {json.dumps(d)},\n" for d in project["dependencies"])
    return (
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{project["name"]}-student"\nversion = "{project["version"]}"\n'
        f'description = {json.dumps(project.get("description", ""))}\nreadme = "README.md"\n'
        f'requires-python = "{project["requires-python"]}"\ndependencies = [\n{deps}]\n\n'
        '[tool.setuptools.packages.find]\ninclude = ["course*"]\n\n'
        '[tool.setuptools.package-data]\ncourse = ["py.typed", "*.json"]\n'
    )


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def readme(chapters: tuple[str, ...]) -> str:
    """The students' README: how to start (Binder or a local install), work, validate and hand in."""
    first = f"notebooks/{chapters[0]}/{chapters[0]}.ipynb"
    rows = "".join(f"| {title(ch)} | `notebooks/{ch}/{ch}.ipynb` |\n" for ch in chapters)
    links = "".join(f"  - chapter {k}: `https://mybinder.org/v2/gh/ORG/REPO/BRANCH?urlpath=lab/tree/notebooks/{ch}/{ch}.ipynb`\n"
                    for k, ch in enumerate(chapters, 1))
    return f"""# Autograd from scratch: the notebooks

You build a reverse-mode automatic differentiation engine on NumPy, one chapter
at a time, and compare it with PyTorch.

| chapter | notebook |
| --- | --- |
{rows}
## Start

**On Binder** (nothing to install): open

    https://mybinder.org/v2/gh/ORG/REPO/BRANCH?urlpath=lab/tree/{first}

with `ORG/REPO/BRANCH` this repository's GitHub owner, name and branch. The
first start builds the environment (several minutes); later starts are quick.
A Binder session is deleted after some idle minutes and keeps nothing: download
your notebook (File > Download) before you stop. Each chapter's link:

{links}
**On your machine** (Python {_python_range()}): in this folder,

    python3 -m venv .venv
    .venv/bin/pip install --extra-index-url {CPU_INDEX} -c constraints.txt -e .
    JUPYTER_CONFIG_PATH="$PWD/.jupyter" .venv/bin/jupyter lab --notebook-dir=notebooks

then open the URL it prints, and stop it with Ctrl+C. (On Windows:
`.venv\\Scripts\\pip ...`, then `set JUPYTER_CONFIG_PATH=%cd%\\.jupyter` and
`.venv\\Scripts\\jupyter lab --notebook-dir=notebooks`.) `.jupyter/` is the course's Jupyter
configuration: it keeps nbgrader's Validate button and leaves out its
instructor tools.

## Work

- Each exercise states the function to write, the rule it follows and a worked
  example. Replace `raise NotImplementedError()` with your code, run the cell,
  then run the test cell below it: it says in one line that the visible checks
  passed, or what it expected, what it got and where. The graded version also
  runs hidden tests that compare your code with PyTorch on random inputs.
- A demo cell that needs an exercise you have not written yet says which one.
- Concept checks are multiple choice: set the variable to one letter.
- Each notebook imports the reference engine of the earlier chapters from the
  `course` package (`course/reference/`), so a bug left in an earlier chapter
  never costs you points in a later one.

## Validate and hand in

- **Validate** (the button at the top of the notebook) runs the whole notebook
  in a fresh kernel and lists the tests that fail: press it before you hand in.
- Hand in the `.ipynb` file of the chapter the way your instructor says (upload
  it to the course's site). Do not rename, delete or re-order cells: the grader
  finds your answers by the cells' ids.

## What is here

| path | what |
| --- | --- |
| `notebooks/` | the chapters' notebooks: your copy to work in |
| `course/` | helpers the notebooks import: `checking` (the tests' messages), `graphs` (pictures of a recorded graph), `data` (small datasets), `threads` (one thread count for timings), `reference` (the engine of the earlier chapters) |
| `pyproject.toml`, `constraints.txt` | the packages to install, at the versions the course was tested with |
| `.binder/`, `.jupyter/` | the Binder set-up and the Jupyter configuration |
"""


def _python_range() -> str:
    spec = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    return spec.replace(",", ", ")


GITIGNORE = ".venv/\n__pycache__/\n*.pyc\n*.egg-info/\n.ipynb_checkpoints/\n"


def build(chapter: str, dest: Path) -> Path:
    """Write the student edition up to chapter into dest; return dest."""
    chapters = chapters_up_to(chapter)
    dest = Path(dest).resolve()
    if dest == REPO or REPO in dest.parents and dest.parts[len(REPO.parts)] != ".work":
        raise ValueError(f"{dest} is inside the course repository: write the edition elsewhere (or under .work/)")
    _prepare(dest)
    _copy_notebooks(chapters, dest)
    _copy_course(chapters, dest)
    (dest / "pyproject.toml").write_text(_pyproject())
    for constraints in sorted(REPO.glob("constraints*.txt")):
        shutil.copyfile(constraints, dest / constraints.name)
    for folder in (".binder", ".jupyter"):
        shutil.copytree(REPO / folder, dest / folder)
    (dest / "README.md").write_text(readme(chapters))
    (dest / ".gitignore").write_text(GITIGNORE)
    (dest / MARKER).write_text(json.dumps({"chapters": list(chapters), "built_from": _commit()}, indent=1) + "\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograde.authoring.edition", description=__doc__.split("\n")[0])
    parser.add_argument("chapter", help=f"the last chapter students may see ({', '.join(CHAPTERS)})")
    parser.add_argument("dest", type=Path, help="the folder to write (empty, missing, or an earlier edition)")
    args = parser.parse_args(argv)
    try:
        dest = build(args.chapter, args.dest)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    files = [p for p in dest.rglob("*") if p.is_file() and ".git" not in p.relative_to(dest).parts]
    size = sum(p.stat().st_size for p in files)
    print(f"student edition of chapters {', '.join(chapters_up_to(args.chapter))}: {dest} "
          f"({len(files)} files, {size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
