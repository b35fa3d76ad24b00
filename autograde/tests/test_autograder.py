"""The grading command on the adversarial corpus: exact scores, incidents, containment, unchanged submissions.

The whole corpus of ch01 (autograde.corpus.attacks: one submission per attack)
is graded once, through the real command (autograde.grader.command, which runs
nbgrader autograde with the course's configuration), with two jobs and a
short per-cell limit; each test then reads one student's result.
"""
from __future__ import annotations

import json
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograde.corpus import attacks as corpus

from autograde.grader import command as grading

from autograde.grader import incidents as integrity
from autograde import notebook as nbk
from autograde.grader.workspace import Workspace

pytestmark = pytest.mark.grading
CH = "ch01_chain_rule"
CELL_TIMEOUT = 30  # seconds; the course uses 60, the endless loops of the corpus need not wait that long, and
                   # an honest cell on a loaded 2-core machine (load 8 measured) still finishes well within it
ATTACKS = [a.name for a in corpus.attacks(CH)]


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): nbk.sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass
class Run:
    root: Path
    ws: Workspace
    subs: Path
    attacks: dict[str, corpus.Attack]
    results: dict
    report: str
    before: dict[str, str]
    after: dict[str, str]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("corpus")
    ws_root, subs = root / "ws", root / "submitted"
    # what the snooping attack is told to look for: the real paths of the grader's files
    targets = (str(ws_root / "gradebook.db"), str(ws_root / "source" / CH / f"{CH}.ipynb"),
               str(ws_root / "autograded"), str(ws_root), str(nbk.REPO / "source" / CH / f"{CH}.ipynb"),
               str(subs / "deleted_tests" / CH / f"{CH}.ipynb"), str(subs))
    attacks = corpus.write(CH, subs, targets)
    before = _hashes(subs)
    results, report = grading.grade_all(subs, ws_root, jobs=2, chapters=(CH,), cell_timeout=CELL_TIMEOUT,
                                        notebook_timeout=300, quiet=True)
    return Run(root, Workspace(ws_root), subs, attacks, results, report, before, _hashes(subs))


def _autograded(run: Run, student: str):
    return nbk.read(run.ws.root / "autograded" / student / CH / f"{CH}.ipynb")


def _outputs(nb, gid: str | None = None) -> str:
    text = []
    for cell in nb.cells:
        if gid is None or nbk.grade_id(cell) == gid:
            for out in cell.get("outputs", []):
                text.append(json.dumps(out))
    return "\n".join(text)


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_scores_exactly(run, attack):
    scores = run.ws.cell_scores(CH).get(attack)
    assert scores, f"{attack} has no grades in the gradebook:\n{run.report}"
    expected_lost = run.attacks[attack].loses
    wrong = [f"{gid}: {c.score:g}/{c.max_score:g}, expected {0 if gid in expected_lost else c.max_score:g}"
             for gid, c in scores.items() if c.score != (0.0 if gid in expected_lost else c.max_score)]
    assert not wrong, f"{attack} ({run.attacks[attack].why}):\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_is_reported(run, attack):
    incidents = run.results[CH][attack].incidents
    kinds = {i.kind for i in incidents}
    for kind in run.attacks[attack].incidents:
        assert kind in kinds, f"{attack}: no '{kind}' incident; got {[i.words() for i in incidents]}"
    lines = [ln for ln in run.report.splitlines() if ln.startswith(f"{attack} {CH}: ")]
    assert any(ln.split(": ", 1)[1].startswith(tuple(run.attacks[attack].incidents)) for ln in lines), \
        f"{attack}: the summary does not name the incident:\n{run.report}"
    row = next(ln for ln in run.report.splitlines() if ln.startswith(attack + " "))
    assert row.split()[-1] == str(len(incidents)), f"incident column of {attack}: {row}"


@pytest.mark.parametrize("attack", [a.name for a in corpus.attacks(CH) if a.must_print or a.must_not_print])
def test_attack_fails_inside_the_kernel(run, attack):
    nb = _autograded(run, attack)
    spec = run.attacks[attack]
    for gid, text in spec.must_print:
        assert text in _outputs(nb, gid), f"{attack}: {gid} should print {text!r}; printed:\n{_outputs(nb, gid)[:2000]}"
    for text in spec.must_not_print:
        assert text not in _outputs(nb), f"{attack}: printed {text!r}:\n{_outputs(nb)[:3000]}"


def test_kernel_runs_under_its_own_uid(run):
    if os.geteuid() != 0:
        pytest.skip("the grader is not root: kernels keep its uid (folder and limits only)")
    printed = _outputs(_autograded(run, "read_gradebook"))
    assert "kernel uid " in printed and "kernel uid 0" not in printed, printed[:2000]


def test_clean_submissions_have_no_incidents(run):
    # the corpus's shadow_torch_py notebook is the perfect student's: its only incident is the ignored files
    assert [i.kind for i in run.results[CH]["shadow_torch_py"].incidents] == ["files"]


def test_submissions_are_never_modified(run):
    assert run.before == run.after


def test_output_flood_does_not_bloat_the_results(run):
    nb_path = run.ws.root / "autograded" / "print_100mb" / CH / f"{CH}.ipynb"
    assert nb_path.stat().st_size < 2_000_000
    assert (run.ws.root / "gradebook.db").stat().st_size < 5_000_000
    page = run.ws.root / "feedback" / "print_100mb" / CH / f"{CH}.html"
    assert page.exists() and page.stat().st_size < 3_000_000


def test_feedback_and_csv_written(run):
    rows = (run.ws.root / "grades.csv").read_text().splitlines()
    assert len(rows) >= 1 + len(ATTACKS)
    assert all((run.ws.root / "feedback" / a / CH / f"{CH}.html").exists() for a in ATTACKS)


def test_integrity_errors_named_in_feedback(run):
    page = (run.ws.root / "feedback" / "reference_imported" / CH / f"{CH}.html").read_text()
    assert "AutograderIntegrityError" in page and "reference solution" in page


def test_feedback_pages_carry_no_hidden_line(run):
    """Whatever a submission printed (its input history, the source of the test that called it), no feedback
    page shows a line of the hidden tests or of the hidden-test helpers."""
    import html
    import re

    from .test_products import _hidden_lines

    lines = _hidden_lines(CH)
    for attack in ATTACKS:
        page = run.ws.root / "feedback" / attack / CH / f"{CH}.html"
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        leaked = sorted(ln for ln in lines if ln in text)
        assert not leaked, f"the feedback of {attack} shows hidden lines: {leaked[:3]}"


def test_regrading_with_one_job_gives_the_same_gradebook(run, tmp_path):
    """Two students graded again, with --jobs 1, into the same workspace: same scores, others untouched."""
    again = ["os_exit_in_function", "patched_check_close"]
    first = run.ws.cell_scores(CH)
    subset = tmp_path / "submitted"
    for student in again:
        shutil.copytree(run.subs / student, subset / student)
    grading.grade_all(subset, run.ws.root, jobs=1, chapters=(CH,), cell_timeout=CELL_TIMEOUT,
                      notebook_timeout=300, quiet=True, feedback=False)
    assert run.ws.cell_scores(CH) == first


# -- finding submissions (no grading) ----------------------------------------------
def test_collect_reads_loose_notebooks_and_zips(tmp_path):
    example = nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb"
    loose = tmp_path / "lms"
    (loose / "carol").mkdir(parents=True)
    shutil.copyfile(example, loose / f"alice_{CH}.ipynb")
    shutil.copyfile(example, loose / "bob.ipynb")
    shutil.copyfile(example, loose / "carol" / f"{CH}.ipynb")
    (loose / "notes.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = grading.collect(loose, (CH,), tmp_path / "scratch")
    assert sorted(found[CH]) == ["alice", "bob", "carol"]
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in loose.rglob("*.ipynb"):
            zf.write(p, p.relative_to(loose))
        zf.writestr("../escape.ipynb", "{}")
    found = grading.collect(archive, (CH,), tmp_path / "scratch")
    assert sorted(found[CH]) == ["alice", "bob", "carol"]
    assert not (tmp_path / "escape.ipynb").exists()


@pytest.mark.parametrize("code,finding", [
    ("with open('/etc/passwd') as f:\n    f.read()", "reads, writes or lists files (open)"),
    ("import os\nos.listdir('..')", "reads, writes or lists files (os.listdir)"),
    ("from pathlib import Path\nPath('x').read_text()", "reads, writes or lists files"),
    ("import subprocess\nsubprocess.run(['ls'])", "runs a shell command"),
    ("!ls", "runs a shell command (!)"),
])
def test_scan_notes_file_and_shell_access(code, finding):
    found = integrity.scan_code(code)
    assert any(finding in text for text in found), f"{code!r}: {found}"


@pytest.mark.parametrize("code", [
    "import numpy as np\nimport math\n\ndef f(x):\n    y = np.zeros(3)\n    y[0] = math.sin(x)\n    return y",
    "import torch\nprobe = torch.ones(3)",  # exploring torch is allowed: the run-time guard watches graded code
    f"from course.reference.{CH} import jvp",  # blocked, with its cost, at run time in the kernel
    "%time x = 1",
    "class Dual:\n    def __add__(self, other):\n        return self",
])
def test_scan_accepts_code_that_is_judged_at_run_time(code):
    assert integrity.scan_code(code) == []


# -- self-check and Gradescope: one real submission each ------------------------------
def _carol_expectation():
    from .conftest import catalogue

    cat = catalogue(CH)
    carol = next(ex for ex in cat.examples if ex.student == "carol")
    return {g for name in carol.mutants for g in cat.mutant(name).loses}


def test_selfcheck_scores_and_explains_without_hidden_code(tmp_path):
    from autograde.grader import selfcheck

    from .test_products import _hidden_lines

    # carol's notebook, with one exercise she gets wrong put back to its release stub ("not attempted yet")
    nb = nbk.read(nbk.REPO / "autograde" / "examples" / "carol" / f"{CH}.ipynb")
    release = nbk.read(nbk.REPO / "release" / CH / f"{CH}.ipynb")
    tests_of = nbk.tests_of(release)
    expected_lost = _carol_expectation()
    stub = next(c for c in release.cells if nbk.is_solution(c) and set(tests_of.get(nbk.grade_id(c), ())) and
                set(tests_of[nbk.grade_id(c)]) <= expected_lost)
    next(c for c in nb.cells if nbk.grade_id(c) == nbk.grade_id(stub)).source = stub.source
    untried = set(tests_of[nbk.grade_id(stub)])
    notebook = tmp_path / "mine.ipynb"
    nbk.write(nb, notebook)
    before = nbk.sha256(notebook)
    lines, incidents = selfcheck.check(notebook, cell_timeout=30)
    assert nbk.sha256(notebook) == before
    lost = {ln.test for ln in lines if ln.score < ln.max_score}
    assert lost == expected_lost
    for ln in lines:
        if ln.test in untried:
            assert ln.score == 0 and ln.message == selfcheck.NOT_ATTEMPTED and not ln.attempted, ln
        elif ln.test in lost:
            assert ln.score == 0 and ln.message != "ok" and ":" in ln.message and ln.attempted, ln
        else:
            assert ln.message == "ok"
    report = selfcheck.format_report(lines, incidents)
    leaked = [h for h in _hidden_lines(CH) if h in report]
    assert not leaked, leaked[:3]
    assert "Total: " in report and "(1 exercise not attempted yet)" in report and not incidents


def test_selfcheck_exits_0_when_grading_worked_and_2_when_it_could_not(tmp_path, monkeypatch, capsys):
    from autograde.grader import selfcheck

    lost = [selfcheck.Line("dual", "test_dual_arithmetic", 0, 2, "AssertionError: Dual(1, 2) - 3 differs")]
    monkeypatch.setattr(selfcheck, "check", lambda *args, **kwargs: (lost, []))
    assert selfcheck.main([str(tmp_path / "mine.ipynb")]) == 0, "lost points are not an error"
    assert "0 / 2" in capsys.readouterr().out
    monkeypatch.undo()
    (tmp_path / "notes.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    assert selfcheck.main([str(tmp_path / "notes.ipynb")]) == 2


def test_gradescope_export_runs_in_a_simulated_autograder(tmp_path):
    import subprocess
    import sys

    from autograde.grader import gradescope

    from .test_products import _hidden_lines

    archive = gradescope.export(CH, tmp_path / "export")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        assert {"setup.sh", "run_autograder", f"source/{CH}/{CH}.ipynb", "nbgrader_config.py"} <= names
        zf.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    shutil.copyfile(nbk.REPO / "autograde" / "examples" / "carol" / f"{CH}.ipynb", root / "submission" / "upload.ipynb")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    proc = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    release = nbk.read(nbk.REPO / "release" / CH / f"{CH}.ipynb")
    exercises = [nbk.grade_id(c) for i, c in enumerate(release.cells)
                 if nbk.is_solution(c) and integrity.exercise_tests(release)[i]]
    assert [t["name"] for t in data["tests"]] == exercises
    lost = _carol_expectation()
    tests_of = {nbk.grade_id(c): t for i, c in enumerate(release.cells) if nbk.is_solution(c)
                for t in [integrity.exercise_tests(release)[i]]}
    points = {nbk.grade_id(c): float(nbk.nbgrader_meta(c)["points"]) for c in release.cells if nbk.is_test(c)}
    for test in data["tests"]:
        cells = tests_of[test["name"]]
        assert test["max_score"] == sum(points[g] for g in cells)
        assert test["score"] == sum(points[g] for g in cells if g not in lost), test
        if set(cells) & lost:
            assert "Error" in test["output"], test
    assert data["score"] == sum(points.values()) - sum(points[g] for g in lost)
    text = "\n".join([data.get("output", "")] + [t["output"] for t in data["tests"]])
    leaked = [h for h in _hidden_lines(CH) if h in text]
    assert not leaked, leaked[:3]


def test_notebook_time_limit_stops_the_rest(tmp_path):
    """A notebook that outlives its budget: the cells past it are not run and score 0, named as an incident.

    Deterministic on any machine: a cell right after the setup sleeps far longer than the whole budget,
    so every test cell comes after the deadline however fast or slow the machine is.
    """
    from nbformat.v4 import new_code_cell

    from autograde.grader import selfcheck

    nb = nbk.read(nbk.REPO / "autograde" / "examples" / "alice" / f"{CH}.ipynb")
    first_answer = next(i for i, c in enumerate(nb.cells) if nbk.is_solution(c))
    nb.cells.insert(first_answer, new_code_cell("import time\ntime.sleep(120)"))
    notebook = tmp_path / f"{CH}.ipynb"
    nbk.write(nb, notebook)
    lines, incidents = selfcheck.check(notebook, CH, cell_timeout=300, notebook_timeout=15)
    assert "time-limit" in {i.kind for i in incidents}, [i.words() for i in incidents]
    assert lines and all(ln.score == 0 for ln in lines), [(ln.test, ln.score) for ln in lines]
    assert "NotebookTimeLimit" in lines[-1].message, lines[-1]
