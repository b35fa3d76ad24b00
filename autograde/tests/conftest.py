"""Shared fixtures: the chapters, their source notebooks and catalogues."""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from course import CHAPTERS
from autograde.authoring import products as build
from autograde.authoring import catalogue as mut
from autograde import notebook as nbk


@pytest.fixture(scope="session", params=CHAPTERS)
def chapter(request) -> str:
    return request.param


def source(chapter: str):
    return nbk.read(build.source_path(chapter))


def catalogue(chapter: str) -> mut.Catalogue:
    return mut.load(chapter)


def graded_test_cells(nb) -> dict[str, object]:
    """grade_id -> test cell, in notebook order."""
    return {nbk.grade_id(c): c for c in nb.cells if nbk.is_test(c)}


@pytest.fixture(scope="session")
def run_folder(tmp_path_factory) -> Path:
    """A folder this test run's workers share (pytest-xdist gives each worker its own basetemp inside it)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def computed_once(folder: Path, key: str, compute, encode=json.dumps, decode=json.loads):
    """compute() once per test run, whichever worker asks first; the others wait for it and read its result."""
    path = folder / f"{key}.json"
    with open(folder / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if path.exists():
                return decode(path.read_text())
            value = compute()
            path.write_text(encode(value))
            return value
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests (the capstone's tiny models: on a shared machine more threads only wait
    for each other); the count before is restored after the module."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def demo(run_folder):
    """`make demo` run once per test run, by whichever worker asks first: (workspace, report, scores), where scores
    are each chapter's cell scores per student as the demo left them (the rerun test later regrades chapter 1 in
    the same workspace; the comparison with the in-process verdicts reads these, not the gradebook).

    test_demo checks the report (and regrades one chapter to check a rerun agrees); test_verdicts compares the
    example students' scores with the in-process verdicts, on another worker, after the demo has run."""
    from autograde.demo import run_demo
    from autograde.grader.workspace import Workspace

    root = run_folder / "demo" / "ws"

    def compute() -> dict:
        report = run_demo(root, quiet=True)
        ws = Workspace(root)
        return {"report": report, "scores": {ch: {student: {gid: [c.score, c.max_score] for gid, c in cells.items()}
                                                  for student, cells in ws.cell_scores(ch).items()}
                                             for ch in CHAPTERS}}

    got = computed_once(run_folder, "demo", compute)
    return root, got["report"], got["scores"]


@pytest.fixture(scope="session")
def student_runs():
    """chapter -> (single-stub findings, visible outcomes): the release run as a student runs it, once per chapter,
    with every catalogued mutant and every exercise left as its stub forked from it (autograde.authoring.single_stub);
    the stubbed runs leave the demo cells out (the exhaustive tier runs them with: test_single_stub)."""
    from autograde.authoring import single_stub

    cache: dict[str, tuple] = {}

    def get(chapter: str) -> tuple:
        if chapter not in cache:
            cache[chapter] = single_stub.measure_with_visible(chapter, demo_cells=False)
        return cache[chapter]

    return get


# -- running in parallel (pytest-xdist, `make test`: -n 3 --dist loadgroup) -------------------------------------------
def _shared_work(item) -> str | None:
    """The expensive session or module fixture a test shares with others, if any: tests that share one run on the
    same worker, so each is built once (the demo, a chapter's in-process verdicts, a corpus run, the legacy class)."""
    names = set(item.fixturenames)
    params = item.callspec.params if hasattr(item, "callspec") else {}
    if item.name == "test_tests_that_share_a_fixture_share_a_worker":
        return "sentinel"
    if item.originalname == "test_in_process_equals_the_grader_on_the_example_students":
        return "examples"  # reads the demo's scores and every chapter's verdicts, both built elsewhere: handed out last
    if "demo" in names:
        return "demo"
    if "runs" in names:
        return f"corpus-{params.get('kind', 'grader')}"
    if "run" in names:
        return "corpus-grader"
    if "graded" in names and item.module.__name__.endswith("test_legacy"):
        return "legacy"
    if "measured" in names and item.module.__name__.endswith("test_verdicts"):
        return f"verdicts-{params.get('chapter_id') or params.get('chapter')}"
    if "student_runs" in names:
        return f"student-{params.get('chapter')}"
    if "batches" in names:
        return f"grading-{params.get('chapter_id')}"
    return None


EXPENSE = {"demo": 640, "corpus-grader": 275, "student-ch06_loss_scaling": 90, "student-ch08_capstone": 75,
           "student-ch07_checkpointing": 70, "verdicts-ch08_capstone": 150, "legacy": 105, "verdicts-ch02_tape": 90,
           "verdicts-ch04_accumulation": 80, "verdicts-ch07_checkpointing": 75, "corpus-unprivileged": 75,
           "verdicts-ch06_loss_scaling": 70, "verdicts-ch03_vjp_rules": 70, "student-ch02_tape": 65,
           "verdicts-ch05_grad_modes": 60, "student-ch04_accumulation": 60, "student-ch05_grad_modes": 55,
           "verdicts-ch01_chain_rule": 55, "student-ch03_vjp_rules": 45, "student-ch01_chain_rule": 15}
"""Seconds each shared fixture's tests take on one worker of `make test` (2026-11-26, 3 workers on 2 cores): only
the order they are handed out in (longest first) depends on it; a new group counts 60 s, a test of its own 0, and
the comparison of the example students (which waits for the demo and the verdicts) comes last."""
LAST = -1


def _expense(item) -> int:
    group = _shared_work(item)
    return 0 if group is None else LAST if group == "examples" else EXPENSE.get(group, 60)


def pytest_configure(config):
    """Refuse to run in parallel where --dist loadgroup would silently not group (see pyproject.toml's test extra);
    hand out the groups longest first (pytest_collection_modifyitems orders them) rather than by how many tests
    each has: a chapter's two student-run tests take minutes, so handed out last they would end the run alone."""
    if getattr(config.option, "dist", "no") != "loadgroup":
        return
    config.option.loadscopereorder = False
    from importlib.metadata import version

    from packaging.version import Version

    if Version(pytest.__version__) >= Version("9.2") and Version(version("pytest-xdist")) <= Version("3.8.0"):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} with pytest-xdist {version('pytest-xdist')}: --dist loadgroup would not "
            "keep the tests that share a fixture on one worker (pytest-dev/pytest-xdist#1386). Install the pinned "
            "pytest (make test does: pip install -c constraints.txt -e .[test]) or run with TEST_WORKERS=0.")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups (and ignores marks added later)
def pytest_collection_modifyitems(config, items):
    for item in items:
        group = _shared_work(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")  # after pytest's reordering by session parameters
def pytest_collection_modifyitems_longest_first(items):
    """The longest shared work first; stable: within a group, and among single tests, the order pytest chose."""
    items.sort(key=lambda item: -_expense(item))
