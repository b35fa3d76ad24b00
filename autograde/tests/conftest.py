"""Shared fixtures: the chapters, their source notebooks and catalogues."""
from __future__ import annotations

import pytest

from course import CHAPTERS
from autograde.build import products as build
from autograde.build import catalogue as mut
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
def demo(tmp_path_factory):
    """`make demo` run once: (workspace, report, None).

    Session-wide: test_demo checks the report (and regrades one chapter to check a rerun agrees), and
    test_grading reads the example students' scores from this gradebook rather than grading them again.
    """
    from autograde.demo import run_demo

    root = tmp_path_factory.mktemp("demo") / "ws"
    return root, run_demo(root, quiet=True), None
