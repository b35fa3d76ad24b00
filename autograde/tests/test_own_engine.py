"""`make own-engine NB=DIR` (autograde.own_engine): a student's chapters 2-7 train the capstone's transformer.

The bundled example students: alice's notebooks (the solutions) train with the loss beside torch's; carol's stop at
her first wrong piece with one line naming its chapter and exercise; erin's (a different correct answer in every
cell the catalogue has one for) pass the checks. Then what a real student's folder may hold: make lab's layout, an
unfinished exercise, cells of their own (a helper, a later fix, a demo line, a moved cell, an import of the
reference), and folders that are not notebooks at all (one line, never a traceback).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograde import notebook as nbk
from autograde.authoring import catalogue as mut
from autograde.own_engine import checks, cli, collect
from autograde.paths import REPO, example_path, release_path
from course import CHAPTERS

ENGINE = collect.ENGINE_CHAPTERS
LAST_LINE = re.compile(r"own engine: capstone loss matches torch over 20 steps \(max relative difference "
                       r"\d\.\de[+-]\d\d\)")
FINDING = re.compile(r"own engine: chapter [2-7] \(ch0[2-7]_\w+\), .+: .+")


def run_command(folder: Path, work: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    """python -m autograde.own_engine folder, as make own-engine runs it (the package written under work)."""
    return subprocess.run([sys.executable, "-m", "autograde.own_engine", str(folder), "--work", str(work)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def copy_student(student: str, dest: Path, lab: bool = False) -> Path:
    """A copy of an example student's notebooks: flat (dest/<ch>.ipynb) or in make lab's layout."""
    dest.mkdir(parents=True, exist_ok=True)
    for chapter in CHAPTERS:
        target = dest / chapter / f"{chapter}.ipynb" if lab else dest / f"{chapter}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(example_path(student, chapter), target)
    return dest


def findings(folder: Path) -> str | None:
    """The command's first two stages in-process (collect and import, then the checks against torch): the finding's
    line, or None when every check passes. The training itself is the end-to-end tests' part."""
    try:
        engine, _ = cli.prepare(folder, folder.parent / "work")
        checks.run_checks(engine)
    except collect.OwnEngineError as finding:
        return str(finding)
    return None


def edit_cell(path: Path, grade_id: str, change) -> None:
    """Rewrite the source of the cell with this grade_id in a notebook file: change(old source) -> new source."""
    nb = nbk.read(path)
    cells = [c for c in nb.cells if nbk.grade_id(c) == grade_id]
    assert cells, f"{path.name} has no cell {grade_id!r}"
    cells[0].source = change(cells[0].source)
    nbk.write(nb, path)


def code_cell(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(source)


# -- the example students, end to end ---------------------------------------------------------------------------------
def test_alice_trains_the_capstone_beside_torch(tmp_path):
    """The solutions: exit 0, a loss table, the last line exactly as documented; nothing on stderr."""
    done = run_command(REPO / "autograde" / "examples" / "alice", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert LAST_LINE.fullmatch(lines[-1]), lines[-1]
    assert done.stderr == ""
    table = [line for line in lines if re.match(r"\s*\d+\s", line)]
    assert len(table) == 20, done.stdout


def test_carol_stops_at_her_first_wrong_piece_in_one_line(tmp_path):
    """carol's chapter 2 overwrites a leaf's gradient instead of adding (the catalogue's acc_overwrites): one line on
    stderr naming chapter 2's Exercise 1 and what differed from torch; nothing else printed; exit 1."""
    carol = next(e for e in mut.load("ch02_tape").examples if e.student == "carol")
    assert "acc_overwrites" in carol.mutants
    done = run_command(REPO / "autograde" / "examples" / "carol", tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert FINDING.fullmatch(lines[0]), lines[0]
    assert lines[0].startswith("own engine: chapter 2 (ch02_tape), Exercise 1: the leaf's sink: ")
    assert "expected" in lines[0] and "got" in lines[0] and "Traceback" not in done.stderr


def test_chapter_8s_optional_cell_runs_the_command_on_the_lab_folder_above_the_notebook(tmp_path):
    """The cell at the end of chapter 8's release, switched on, run where make lab puts the notebook."""
    cell = next(c for c in nbk.read(release_path("ch08_capstone")).cells if c.get("id") == "own-engine-run")
    assert "RUN_MY_ENGINE = False" in cell.source                     # off by default: the notebook runs in seconds
    lab = copy_student("alice", tmp_path / "lab", lab=True)
    done = subprocess.run([sys.executable, "-c", cell.source.replace("RUN_MY_ENGINE = False", "RUN_MY_ENGINE = True", 1)],
                          cwd=lab / "ch08_capstone", capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "own engine: capstone loss matches torch over 20 steps" in done.stdout, done.stdout


def test_make_labs_layout_works(tmp_path):
    """DIR/<chapter>/<chapter>.ipynb, as make lab copies the release: the same run as the flat layout."""
    done = run_command(copy_student("alice", tmp_path / "lab", lab=True), tmp_path / "work")
    assert done.returncode == 0, done.stderr
    assert LAST_LINE.fullmatch(done.stdout.strip().splitlines()[-1])


def test_erins_other_correct_answers_pass_the_checks(tmp_path):
    """erin answers every cell the catalogue has an alternative for with that alternative (other names, other
    helpers, other loops): API details the chapters leave open do not make a correct engine fail."""
    assert findings(copy_student("erin", tmp_path / "erin")) is None


# -- unfinished exercises ------------------------------------------------------------------------------------------------
def test_an_unfinished_function_names_its_chapter_and_exercise(tmp_path):
    """clip_grad_norm_'s body replaced by `raise NotImplementedError()`: one line, chapter 4, Exercise 6."""
    folder = copy_student("alice", tmp_path / "s")

    def unfinished(source: str) -> str:
        head = source.split('"""Scale all gradients together', 1)[0]
        return head + '"""Scale all gradients together."""\n    raise NotImplementedError()\n'

    edit_cell(folder / "ch04_accumulation.ipynb", "clip", unfinished)
    done = run_command(folder, tmp_path / "work")
    assert done.returncode == 1 and done.stdout == ""
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("own engine: chapter 4 (ch04_accumulation), Exercise 6: clip_grad_norm_: not answered yet"), line


def test_an_answer_cell_that_only_raises_names_its_exercise(tmp_path):
    """The whole answer cell `raise NotImplementedError()` (the release's stub of chapter 3's Exercise 6)."""
    folder = copy_student("alice", tmp_path / "s")
    edit_cell(folder / "ch03_vjp_rules.ipynb", "softmax_rules", lambda _: "# YOUR CODE HERE\nraise NotImplementedError()")
    line = findings(folder)
    assert line is not None and line.startswith("own engine: chapter 3 (ch03_vjp_rules), Exercise 6: Softmax, "
                                                "CrossEntropy: not answered yet"), line


def test_an_unfinished_exercise_the_capstone_does_not_need_is_only_noted(tmp_path):
    """Chapter 2's graph_structure (Exercise 7) left unanswered, chapter 4's SGD (Exercise 5) a stub: the engine
    still trains the capstone, and the run notes both."""
    folder = copy_student("alice", tmp_path / "s")
    edit_cell(folder / "ch02_tape.ipynb", "graph_structure", lambda _: "# YOUR CODE HERE\nraise NotImplementedError()")
    edit_cell(folder / "ch04_accumulation.ipynb", "sgd",
              lambda s: s.split("    def update(", 1)[0] + "    def update(self, p, grad, state):\n        raise NotImplementedError()\n")
    assert findings(folder) is None
    engine = collect.collect(folder, tmp_path / "work")
    collect.import_engine(engine)
    first, notes = checks.unanswered(engine)
    assert first is None
    assert any(n.startswith("chapter 2 (ch02_tape), Exercise 7") and "does not need it" in n for n in notes), notes
    assert any(n.startswith("chapter 4 (ch04_accumulation), Exercise 5") and "SGD still raises" in n for n in notes), notes


# -- cells of the student's own ----------------------------------------------------------------------------------------
def test_cells_of_the_students_own(tmp_path):
    """A helper in a cell of their own that an answer calls; an answer cell moved to the end; a demo line added to an
    answer cell that only works in the notebook; an import of the reference engine in an answer; an earlier
    scratch definition that the answer cell replaces. The checks pass, and the package holds what was used."""
    folder = copy_student("alice", tmp_path / "s")
    path = folder / "ch04_accumulation.ipynb"
    nb = nbk.read(path)
    clip = next(c for c in nb.cells if nbk.grade_id(c) == "clip")
    clip.source = clip.source.replace("coef = np.minimum(max_norm / (total + 1e-6), 1.0)",
                                      "coef = clip_coefficient(max_norm, total)")
    assert "clip_coefficient" in clip.source
    nb.cells.append(code_cell("import numpy as np\n\n\ndef clip_coefficient(max_norm, total):\n"
                              "    return np.minimum(max_norm / (total + 1e-6), 1.0)\n\n\nprint(clip_coefficient(1.0, 2.0))"))
    nbk.write(nb, path)

    path = folder / "ch02_tape.ipynb"
    nb = nbk.read(path)
    topo = next(i for i, c in enumerate(nb.cells) if nbk.grade_id(c) == "topological_order")
    nb.cells.insert(topo, code_cell("def topological_order(root):\n    return []  # a first try, replaced below"))
    moved = nb.cells.pop(topo + 1)
    nb.cells.append(moved)                                     # the answer cell, now last
    nbk.write(nb, path)

    edit_cell(folder / "ch03_vjp_rules.ipynb", "unbroadcast",
              lambda s: "from course.reference.ch02_tape import Tensor  # the reference, in an answer\n" + s +
              "\n\nprint(unbroadcast(example_grad, (3,)))  # a demo line: example_grad is a notebook variable")
    assert findings(folder) is None
    engine = collect.collect(folder, tmp_path / "work")
    collect.import_engine(engine)
    ch4 = engine.path_of("ch04_accumulation").read_text()
    assert "def clip_coefficient" in ch4 and "print(clip_coefficient" not in ch4
    assert "a first try" not in engine.path_of("ch02_tape").read_text()
    ch3 = engine.path_of("ch03_vjp_rules").read_text()
    assert f"from {engine.package}.ch02_tape import Tensor" in ch3
    assert any("left out" in n and "Exercise 1: unbroadcast" in n for n in engine.notes), engine.notes
    assert any("clip_coefficient, which your answers use, comes from a cell of yours" in n for n in engine.notes), \
        engine.notes


def test_a_later_redefinition_wins_as_in_the_notebook(tmp_path):
    """A cell below the answer redefines unbroadcast wrongly: that definition is the one used (as when the notebook
    runs top to bottom), so the check of chapter 3's Exercise 1 fails."""
    folder = copy_student("alice", tmp_path / "s")
    path = folder / "ch03_vjp_rules.ipynb"
    nb = nbk.read(path)
    nb.cells.append(code_cell("def unbroadcast(grad, shape):\n    return grad.sum(axis=0).reshape(shape)"))
    nbk.write(nb, path)
    line = findings(folder)
    assert line is not None and line.startswith("own engine: chapter 3 (ch03_vjp_rules), Exercise 1: unbroadcast:"), line
    answer = next(c for c in nb.cells if nbk.grade_id(c) == "unbroadcast")
    nb.cells.append(code_cell(answer.source))                  # fixed again further down: that one wins
    nbk.write(nb, path)
    assert findings(folder) is None


def test_the_generated_package_never_imports_the_reference_engine_of_chapters_2_to_7(tmp_path):
    """Every module of the package, chapter 8's included, reads the student's chapters: no import of
    course.reference.ch02..ch07 (nor of course.chapter4, which imports chapter 2's reference) is left."""
    engine = collect.collect(copy_student("alice", tmp_path / "s"), tmp_path / "work")
    collect.import_engine(engine)
    pkg = engine.root / engine.package
    pattern = re.compile(r"course\.reference\.ch0[2-7]|from course\.reference import ch0[2-7]|course\.chapter4")
    for path in sorted(pkg.glob("*.py")):
        assert not pattern.search(path.read_text()), f"{path.name} still imports the reference engine"
    m8 = engine.modules["ch08_capstone"]
    assert m8.Tensor is engine.modules["ch02_tape"].Tensor
    assert Path(m8.clip_grad_norm_.__code__.co_filename) == engine.path_of("ch04_accumulation")


# -- what the checks rely on ------------------------------------------------------------------------------------------
def test_required_is_what_the_capstones_training_runs(tmp_path):
    """REQUIRED lists the answer cells whose code the capstone's training runs (float64; float32 with checkpointed
    blocks and two micro-batches; float16 autocast with a GradScaler), the saved-bytes meter aside, chapter 5's
    AutogradState (made at import) added; every name it lists is one the course's answer defines."""
    import numpy as np

    from course import text
    from course.model import Config, init_weights

    engine = collect.collect(copy_student("alice", tmp_path / "s"), tmp_path / "work")
    collect.import_engine(engine)
    profile, ran = checks._profile(engine)
    m8 = engine.modules["ch08_capstone"]
    config = Config(vocab=30, block=8, d_model=8, n_heads=2, n_layers=1, d_ff=8)
    data = text.encode(text.corpus(5_000))
    sys.setprofile(profile)
    try:
        with checks.quiet():
            for dtype, ckpt, low in ((np.float64, False, None), (np.float32, True, None), (np.float32, False, np.float16)):
                m8.train(init_weights(config, dtype=dtype), 2, text.batches(data, 8, 4, seed=1), 2, checkpoint=ckpt,
                         autocast=low, micro_batches=2)
    finally:
        sys.setprofile(None)
    traced = (ran - {("ch04_accumulation", "meter")}) | {("ch05_grad_modes", "grad_state")}
    assert traced == set(checks.REQUIRED)
    for (chapter, gid), names in checks.REQUIRED.items():
        exercise = engine.exercise(chapter, gid)
        assert exercise is not None, f"{chapter}: no exported answer cell {gid!r}"
        assert set(names) <= set(exercise.defines), (chapter, gid, names)


def test_the_redirection_keeps_lines_and_handles_every_form_of_import():
    code = ("import course.reference.ch03_vjp_rules as chapter3\n"
            "from course.reference.ch02_tape import (\n    Tensor, Function,\n)\n"
            "from course.reference import ch02_tape, ch01_chain_rule\n"
            "from course.reference.ch04_accumulation import zero_grad\n"
            "from course.chapter4 import mlp\n"
            "x = course.reference.ch02_tape.Tensor\n")
    out = collect.redirect(code, "pkg", "ch04_accumulation", {"course.chapter4": "course_chapter4"})
    assert out.count("\n") == code.count("\n")
    assert "import pkg.ch03_vjp_rules as chapter3" in out
    assert "from pkg.ch02_tape import (\n    Tensor, Function,\n)" in out
    assert "from pkg import ch02_tape; from course.reference import ch01_chain_rule" in out
    assert "pass  # from this chapter itself: zero_grad" in out
    assert "from pkg.course_chapter4 import mlp" in out
    assert "x = pkg.ch02_tape.Tensor" in out


# -- folders that are not a student's notebooks ---------------------------------------------------------------------
def test_a_missing_folder_is_one_line(tmp_path):
    done = run_command(REPO / "no" / "such" / "folder", tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"own engine: no such folder: {REPO / 'no' / 'such' / 'folder'}"]


@pytest.mark.parametrize("case", ["empty", "a file", "a chapter missing", "invalid JSON", "not a notebook"])
def test_bad_folders_are_one_line(tmp_path, capsys, case):
    folder = tmp_path / "nb"
    if case == "a file":
        folder.write_text("x")
    else:
        folder.mkdir()
    if case in ("a chapter missing", "invalid JSON", "not a notebook"):
        copy_student("alice", folder)
    if case == "a chapter missing":
        (folder / "ch05_grad_modes.ipynb").unlink()
    if case == "invalid JSON":
        (folder / "ch03_vjp_rules.ipynb").write_text('{"cells": [')
    if case == "not a notebook":
        (folder / "ch03_vjp_rules.ipynb").write_text('{"hello": 1}')
    assert cli.main([str(folder)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("own engine: "), err
    expected = {"empty": "no chapter notebooks in", "a file": "is not a folder", "a chapter missing": "lacks ch05_grad_modes",
                "invalid JSON": "ch03_vjp_rules.ipynb is not a valid notebook",
                "not a notebook": "ch03_vjp_rules.ipynb is not a valid notebook"}[case]
    assert expected in err, err


def test_the_students_numpy_imports_go_through_the_array_seam():
    """So that COURSE_ARRAY=cupy puts a student's own engine on the GPU, as it does the course's (course.array)."""
    code = "import numpy as np\nimport numpy\nimport math, numpy as xp\nx = np.zeros(3)"
    out = collect.redirect(code, "pkg", None, {})
    assert out.split("\n") == ["from course.array import np as np", "from course.array import np as numpy",
                               "import math; from course.array import np as xp", "x = np.zeros(3)"]
