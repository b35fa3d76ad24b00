"""How long each chapter is, and an estimate of a student's time on its core path.

Per chapter: words of prose (markdown, without code blocks, formulas or tables' rules), graded test cells and their
points, exercises and concept checks, lines of solution code a student writes, and the release notebook's size, each
for the core path and for the optional "Going further" part (everything after a markdown cell whose heading starts
with "Going further").

The time estimate is a model, not a measurement: reading at 100 words a minute (dense technical prose with
formulas, and running the cells beside it), 1.5 minutes per line of solution code, 5 minutes per exercise
(reading its tests, running them, fixing what they find) and 3 per concept check. Its constants were fitted to the
two reviews' estimates of chapters 1-5 before the second pass (shared/reviews: 3 h, 4.25 h, 6 h, 4.5-6 h and
5-6.5 h); the model gives 3.2, 4.4, 6.3, 5.0 and 5.7 h for those notebooks, within a quarter hour of each.

Usage: python -m autograde.build.sizes [CHAPTER ...]
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from autograde import notebook as nbk
from autograde.paths import release_path, source_path

WORDS_PER_MINUTE = 100
MINUTES_PER_LINE = 1.5
MINUTES_PER_EXERCISE = 5
MINUTES_PER_CONCEPT = 3
GOING_FURTHER = re.compile(r"^#+\s*(\d+\.\s*)?going further", re.IGNORECASE)


@dataclass
class Part:
    words: int = 0
    graded_cells: int = 0
    points: float = 0.0
    exercises: int = 0
    concepts: int = 0
    solution_lines: int = 0

    @property
    def minutes(self) -> float:
        return (self.words / WORDS_PER_MINUTE + MINUTES_PER_LINE * self.solution_lines
                + MINUTES_PER_EXERCISE * self.exercises + MINUTES_PER_CONCEPT * self.concepts)


def _words(markdown: str) -> int:
    text = re.sub(r"```.*?```", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " x ", text, flags=re.DOTALL)  # a formula reads as one word
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*|\d+", text))


def measure(chapter: str) -> tuple[Part, Part, int]:
    """(core, going further, release bytes)."""
    src = nbk.read(source_path(chapter))
    core, further = Part(), Part()
    part = core
    for cell in src.cells:
        if cell.cell_type == "markdown":
            if GOING_FURTHER.match(cell.source.lstrip()):
                part = further
            part.words += _words(cell.source)
        elif nbk.is_solution(cell):
            lines = [ln for ln in nbk.solution_lines(cell.source) if ln.strip() and not ln.strip().startswith("#")]
            part.solution_lines += len(lines)
            if nbk.grade_id(cell).startswith("concept_"):
                part.concepts += 1
            else:
                part.exercises += 1
        elif nbk.is_test(cell):
            part.graded_cells += 1
            part.points += float(nbk.nbgrader_meta(cell).get("points", 0))
    return core, further, release_path(chapter).stat().st_size


def main(argv: list[str] | None = None) -> int:
    from course import CHAPTERS

    chapters = (argv if argv is not None else sys.argv[1:]) or CHAPTERS
    print("| chapter | prose words (core + going further) | answer cells: exercises + concept checks | graded cells "
          "| points | solution lines | release KB | estimated core path |")
    print("|---|---|---|---|---|---|---|---|")
    for chapter in chapters:
        core, further, size = measure(chapter)
        extra = lambda a, b: f"{a:,}" + (f" + {b:,}" if b else "")  # noqa: E731
        print(f"| {chapter} | {extra(core.words, further.words)} | {core.exercises} + {core.concepts}"
              + (f" (+ {further.exercises + further.concepts} going further)" if further.exercises + further.concepts else "")
              + f" | {extra(core.graded_cells, further.graded_cells)} | {extra(int(core.points), int(further.points))} "
              f"| {extra(core.solution_lines, further.solution_lines)} | {size / 1000:.1f} | {core.minutes / 60:.1f} h |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
