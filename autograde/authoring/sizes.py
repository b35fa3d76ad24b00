"""How long each chapter is, and an estimate of a student's time on its core path.

Per chapter: words of prose (markdown, without code blocks, formulas or tables' rules), graded test cells and their
points, exercises and concept checks, lines of solution code a student writes, and the release notebook's size, each
for the core path and for the optional "Going further" part (everything after a markdown cell whose heading starts
with "Going further").

The time estimate is a model, not a measurement: reading prose at 70 words a minute (dense technical prose with
formulas, and running the cells beside it), 0.1 minute per line of given code a student reads to use it (code cells
that are neither answers nor tests, and the given lines of answer cells: the reviews' "1 minute per 10 lines"),
1 minute per line of solution code, 9 minutes per exercise (reading its tests, running them, fixing what they find)
and 3 per concept check. The constants were fitted (`--calibrate`) to the three reviews in shared/reviews, each
on the notebook it read (REVIEWED): the model falls inside every range the reviewers gave.

Usage: python -m autograde.authoring.sizes [CHAPTER ...]
       python -m autograde.authoring.sizes --calibrate   (the model against the reviews, on the notebooks they read)
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from autograde import notebook as nbk
from autograde.paths import release_path, source_path

WORDS_PER_MINUTE = 70
MINUTES_PER_GIVEN_LINE = 0.1
MINUTES_PER_LINE = 1.0
MINUTES_PER_EXERCISE = 9
MINUTES_PER_CONCEPT = 3
REVIEWED = (  # (chapter, the commit its review read, the reviewer's estimate of the core path in hours: low, high)
    ("ch01_chain_rule", "d5fc568", 2.25, 3.75),
    ("ch02_tape", "d5fc568", 3.25, 5.5),
    ("ch03_vjp_rules", "d5fc568", 4.5, 7.5),
    ("ch04_accumulation", "d5fc568", 4.5, 6.0),
    ("ch05_grad_modes", "d5fc568", 5.0, 6.5),
    ("ch06_loss_scaling", "839f46b", 4.5, 5.5),
    ("ch07_checkpointing", "839f46b", 5.0, 6.0),
    ("ch08_capstone", "839f46b", 4.5, 5.5),
)
"""shared/reviews/ch01-ch03.md, ch04-ch05.md and ch06-ch08.md: section "Student time" of each."""
GOING_FURTHER = re.compile(r"^#+\s*(\d+\.\s*)?going further", re.IGNORECASE)


@dataclass
class Part:
    words: int = 0
    graded_cells: int = 0
    points: float = 0.0
    exercises: int = 0
    concepts: int = 0
    solution_lines: int = 0
    given_lines: int = 0

    @property
    def minutes(self) -> float:
        return (self.words / WORDS_PER_MINUTE + MINUTES_PER_GIVEN_LINE * self.given_lines
                + MINUTES_PER_LINE * self.solution_lines + MINUTES_PER_EXERCISE * self.exercises
                + MINUTES_PER_CONCEPT * self.concepts)


def _words(markdown: str) -> int:
    text = re.sub(r"```.*?```", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " x ", text, flags=re.DOTALL)  # a formula reads as one word
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*|\d+", text))


def _code_lines(source: str) -> list[str]:
    """The lines of code that are neither blank nor a comment."""
    return [ln for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def measure_notebook(src) -> tuple[Part, Part]:
    """(core, going further) of a source notebook."""
    core, further = Part(), Part()
    part = core
    for cell in src.cells:
        if cell.cell_type == "markdown":
            if GOING_FURTHER.match(cell.source.lstrip()):
                part = further
            part.words += _words(cell.source)
        elif nbk.is_solution(cell):
            part.solution_lines += len(_code_lines("\n".join(nbk.solution_lines(cell.source))))
            part.given_lines += len(_code_lines(nbk.without_solutions(cell.source)))  # signature, docstring, checks
            if nbk.grade_id(cell).startswith("concept_"):
                part.concepts += 1
            else:
                part.exercises += 1
        elif nbk.is_test(cell):
            part.graded_cells += 1
            part.points += float(nbk.nbgrader_meta(cell).get("points", 0))
        elif cell.cell_type == "code":
            part.given_lines += len(_code_lines(cell.source))
    return core, further


def measure(chapter: str) -> tuple[Part, Part, int]:
    """(core, going further, release bytes)."""
    core, further = measure_notebook(nbk.read(source_path(chapter)))
    return core, further, release_path(chapter).stat().st_size


def calibrate() -> list[tuple[str, str, float, float, float]]:
    """(chapter, commit, the model's hours, the review's low, high) for each reviewed notebook (read from git)."""
    import subprocess

    import nbformat

    out = []
    for chapter, commit, low, high in REVIEWED:
        text = subprocess.run(["git", "show", f"{commit}:source/{chapter}/{chapter}.ipynb"], cwd=nbk.REPO,
                              capture_output=True, text=True, check=True).stdout
        core, _ = measure_notebook(nbformat.reads(text, as_version=4))
        out.append((chapter, commit, core.minutes / 60, low, high))
    return out


def main(argv: list[str] | None = None) -> int:
    from course import CHAPTERS

    args = list(argv if argv is not None else sys.argv[1:])
    if args == ["--calibrate"]:
        rows = calibrate()
        print("| chapter | notebook the review read | model | review |")
        print("|---|---|---|---|")
        for chapter, commit, hours, low, high in rows:
            mark = "" if low <= hours <= high else "  OUTSIDE"
            print(f"| {chapter} | {commit} | {hours:.1f} h | {low:g}-{high:g} h{mark} |")
        return 0 if all(low <= hours <= high for _, _, hours, low, high in rows) else 1
    chapters = args or CHAPTERS
    print("| chapter | prose words (core + going further) | given code lines | answer cells: exercises + concept "
          "checks | graded cells | points | solution lines | release KB | estimated core path |")
    print("|---|---|---|---|---|---|---|---|---|")
    for chapter in chapters:
        core, further, size = measure(chapter)
        extra = lambda a, b: f"{a:,}" + (f" + {b:,}" if b else "")  # noqa: E731
        print(f"| {chapter} | {extra(core.words, further.words)} | {extra(core.given_lines, further.given_lines)} "
              f"| {core.exercises} + {core.concepts}"
              + (f" (+ {further.exercises + further.concepts} going further)" if further.exercises + further.concepts else "")
              + f" | {extra(core.graded_cells, further.graded_cells)} | {extra(int(core.points), int(further.points))} "
              f"| {extra(core.solution_lines, further.solution_lines)} | {size / 1000:.1f} | {core.minutes / 60:.1f} h |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
