"""Every source notebook runs top to bottom in a fresh kernel with every test passing."""
from __future__ import annotations

import re
import time

from autograde.build import products as build
from autograde import notebook as nbk
from autograde.grader.steps import WARNING_PATTERN


def failures(nb) -> dict[str, str]:
    """grade_id -> what went wrong, for every test cell nbgrader would score 0 (error, or stderr that is no warning)."""
    bad = {}
    for cell in nb.cells:
        if not nbk.is_test(cell):
            continue
        for out in cell.outputs:
            if out.output_type == "error":
                bad[nbk.grade_id(cell)] = f"{out.ename}: {out.evalue}"
            elif out.output_type == "stream" and out.name == "stderr" and not re.search(WARNING_PATTERN, out.text):
                bad[nbk.grade_id(cell)] = f"stderr: {out.text[:300]}"
    return bad


def test_source_notebook_passes_its_own_tests(chapter, tmp_path):
    # solutions written out, hidden tests kept: what the autograder runs for a perfect answer
    nb = nbk.read(build.source_path(chapter))
    for cell in nb.cells:
        cell.source = nbk.solution_code(cell.source)
    t0 = time.perf_counter()
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    elapsed = time.perf_counter() - t0
    errors = [c.id for c in nb.cells if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]
    assert not failures(nb), f"test cells fail on the solution: {failures(nb)}"
    assert not errors, f"cells raise on the solution: {errors}"
    print(f"{chapter}: source notebook executed in {elapsed:.1f} s")
