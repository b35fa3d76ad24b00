"""Where each chapter's source and generated products live in the repository."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def source_path(chapter: str) -> Path:
    return REPO / "source" / chapter / f"{chapter}.ipynb"


def release_path(chapter: str) -> Path:
    return REPO / "release" / chapter / f"{chapter}.ipynb"


def solution_path(chapter: str) -> Path:
    return REPO / "solutions" / chapter / f"{chapter}.ipynb"


def reference_path(chapter: str) -> Path:
    return REPO / "course" / "reference" / f"{chapter}.py"


def example_path(student: str, chapter: str) -> Path:
    return REPO / "autograde" / "examples" / student / f"{chapter}.ipynb"
