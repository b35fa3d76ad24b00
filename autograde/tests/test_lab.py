"""`make lab` shows a student's tools only: nbgrader's Validate, none of its instructor tools, and no error at start.

JupyterLab is started by the Makefile's own rule (autograde.tests.lab), so the test sees the configuration a
student gets (.jupyter/, also used on Binder and in the student edition).
"""
from __future__ import annotations

import re
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from .lab import running_lab

NBGRADER_LAB = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
STUDENT_PLUGINS = {"@jupyter/nbgrader:validate-assignment"}
"""nbgrader's frontend plugins a student keeps: the Validate button of the notebook toolbar."""
STUDENT_SERVER_EXTENSIONS = {"nbgrader.server_extensions.validate_assignment"}
INSTRUCTOR_ROUTES = {"/formgrader": "Formgrader", "/assignments": "Assignment List", "/courses": "Course List"}


def nbgrader_plugins() -> set[str]:
    """Every plugin id nbgrader's installed lab extension defines (read from its built JavaScript)."""
    ids = set()
    for script in (NBGRADER_LAB / "static").glob("*.js"):
        ids |= set(re.findall(r'"(@jupyter/nbgrader:[a-z][a-z-]*)"', script.read_text(errors="replace")))
    return ids


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with running_lab(tmp_path_factory.mktemp("make-lab")) as running:
        yield running


def test_make_lab_copies_the_release_for_the_student(lab):
    assert (lab.root / "ch01_chain_rule" / "ch01_chain_rule.ipynb").exists()
    status, body = lab.get("/api/contents/ch01_chain_rule/ch01_chain_rule.ipynb?content=0")
    assert status == 200, body


def test_only_validate_is_left_of_nbgraders_frontend(lab):
    plugins = nbgrader_plugins()
    assert STUDENT_PLUGINS < plugins and len(plugins) >= 5, f"nbgrader's plugins not found: {plugins}"
    config = lab.page_config()
    disabled = set(config["disabledExtensions"])
    enabled_nbgrader = plugins - disabled
    assert enabled_nbgrader == STUDENT_PLUGINS, (
        f"nbgrader plugins a student sees: {sorted(enabled_nbgrader)}; only {sorted(STUDENT_PLUGINS)} should be")
    loaded = {ext["name"] for ext in config["federated_extensions"]}
    assert "@jupyter/nbgrader" in loaded, "the Validate button comes with nbgrader's lab extension"
    print("\nlab extensions loaded:", ", ".join(sorted(loaded)))
    print("nbgrader plugins enabled:", ", ".join(sorted(enabled_nbgrader)))
    print("disabled plugins:", ", ".join(sorted(disabled)))


def test_only_validate_is_left_of_nbgraders_server_extensions(lab):
    loaded = lab.loaded_server_extensions()
    nbgrader = {ext for ext in loaded if ext.startswith("nbgrader.")}
    assert nbgrader == STUDENT_SERVER_EXTENSIONS, f"nbgrader server extensions loaded: {sorted(nbgrader)}"
    print("\nserver extensions loaded:", ", ".join(loaded))
    for route, name in INSTRUCTOR_ROUTES.items():
        assert lab.get(route)[0] == 404, f"{route} ({name}) is served to students"
    status, body = lab.get(f"/nbgrader_version?version={version('nbgrader')}")  # the check Validate makes first
    assert status == 200 and '"success": true' in body, (status, body[:300])


def test_no_error_or_traceback_in_the_server_log(lab):
    lab.page_config()  # the page a browser loads first
    errors = lab.error_lines()
    assert not errors, "the server log reports errors:\n" + "\n".join(errors[:10])
    assert "exchange" not in lab.server_log().lower(), "nbgrader's exchange is mentioned in the log"
