"""The size model (autograde.authoring.sizes) that judges a chapter's time: it counts the given code a student reads, and
its constants agree with the reviewers' estimates on the notebooks they read (issue 32)."""
from __future__ import annotations

import subprocess

import nbformat
import pytest

from autograde import notebook as nbk
from autograde.authoring import sizes


def _cell(kind: str, source: str, **grader) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "points": 0, **grader}
    return cell


def test_given_code_is_counted_and_solutions_are_not():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("markdown", "Read this: two words."),
        _cell("code", "import numpy as np\n# a comment\n\nx = np.ones(3)\n"),  # given: 2 lines
        _cell("code", "def f(x):\n    \"\"\"doc\"\"\"\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n",
              grade_id="ex", solution=True, grade=False),  # given: 2 lines, solution: 1
        _cell("code", "assert f(1) == 1\n", grade_id="test_ex", solution=False, grade=True, points=1),  # a test
        _cell("markdown", "## Going further (optional)\n\nMore."),
        _cell("code", "y = 2\n"),
    ]
    core, further = sizes.measure_notebook(nb)
    assert (core.given_lines, core.solution_lines, core.exercises, core.graded_cells) == (4, 1, 1, 1)
    assert further.given_lines == 1
    assert core.minutes == pytest.approx(core.words / sizes.WORDS_PER_MINUTE + 0.4 + sizes.MINUTES_PER_LINE
                                         + sizes.MINUTES_PER_EXERCISE)


def _have(commit: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=nbk.REPO,
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not all(_have(c) for _, c, _, _ in sizes.REVIEWED),
                    reason="a shallow clone lacks the commits the reviews read")
def test_the_model_falls_inside_every_reviewers_estimate():
    rows = sizes.calibrate()
    outside = [f"{ch} at {commit}: model {hours:.2f} h, review {low:g}-{high:g} h"
               for ch, commit, hours, low, high in rows if not low <= hours <= high]
    assert len(rows) == 8 and not outside, outside
