"""The Binder configuration (.binder/, read by repo2docker), checked without Docker: the environment file,
postBuild run in a scratch copy with pip stubbed out, and start's effect on Jupyter's configuration."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import yaml
from packaging.specifiers import SpecifierSet

from course import CHAPTERS
from autograde.authoring import edition
from autograde.authoring.edition import tomllib
from autograde.paths import REPO, release_path

BINDER = REPO / ".binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def fake_python(folder: Path) -> Path:
    """A `python` that records its arguments (one line per call) instead of installing anything."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{folder / "calls"}"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def run_post_build(root: Path, fake: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["./.binder/postBuild"], cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_environment_is_python_and_pip_only_in_the_supported_range():
    """No pip section: repo2docker then builds the environment before copying the repository (and caches it);
    postBuild installs the course once the repository is there."""
    deps = yaml.safe_load((BINDER / "environment.yml").read_text())["dependencies"]
    assert all(isinstance(d, str) for d in deps) and "pip" in deps, deps
    python = next(d.split("=", 1)[1] for d in deps if d.startswith("python="))
    supported = SpecifierSet(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"])
    assert supported.contains(python + ".0"), f"Binder's Python {python} is outside {supported}"


def test_post_build_installs_the_course_from_the_cpu_index_and_copies_the_release(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(BINDER, root / ".binder")
    shutil.copytree(REPO / "release", root / "release")
    shutil.copyfile(REPO / "constraints.txt", root / "constraints.txt")
    fake = fake_python(tmp_path / "bin")
    done = run_post_build(root, fake)
    assert done.returncode == 0, done.stderr
    calls = (fake / "calls").read_text().splitlines()
    assert calls == [f"-m pip install --no-cache-dir --extra-index-url {CPU_INDEX} -c constraints.txt -e ."], calls
    for chapter in CHAPTERS:
        copy = root / "notebooks" / chapter / f"{chapter}.ipynb"
        assert copy.read_bytes() == release_path(chapter).read_bytes()
    mine = root / "notebooks" / CHAPTERS[0] / f"{CHAPTERS[0]}.ipynb"
    mine.write_text("my answers")
    assert run_post_build(root, fake).returncode == 0 and mine.read_text() == "my answers", "a copy was overwritten"


def test_post_build_in_a_student_edition_keeps_its_notebooks(tmp_path):
    root = edition.build(CHAPTERS[-1], tmp_path / "edition")
    before = {p: p.read_bytes() for p in (root / "notebooks").rglob("*.ipynb")}
    fake = fake_python(tmp_path / "bin")
    done = run_post_build(root, fake)
    assert done.returncode == 0, done.stderr
    assert (fake / "calls").read_text().split() == ["-m", "pip", "install", "--no-cache-dir", "--extra-index-url",
                                                    CPU_INDEX, "-c", "constraints.txt", "-e", "."]
    assert {p: p.read_bytes() for p in (root / "notebooks").rglob("*.ipynb")} == before


def test_start_puts_the_student_configuration_on_jupyters_path(tmp_path):
    """start adds $REPO_DIR/.jupyter (repo2docker's REPO_DIR is the repository's copy) and keeps what was set;
    Jupyter then sees nbgrader's instructor plugins disabled, as under make lab."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_")}
    env.update(REPO_DIR=str(REPO), JUPYTER_CONFIG_DIR=str(tmp_path / "user"), JUPYTER_CONFIG_PATH="/srv/extra")
    show = [sys.executable, "-c", "import os; print(os.environ['JUPYTER_CONFIG_PATH'])"]
    out = subprocess.run([str(BINDER / "start"), *show], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == f"{REPO}/.jupyter:/srv/extra", out
    del env["JUPYTER_CONFIG_PATH"]
    jupyter = Path(sys.executable).parent / "jupyter"
    listed = subprocess.run([str(BINDER / "start"), str(jupyter), "labextension", "list"], env=env,
                            capture_output=True, text=True, timeout=120)
    disabled = listed.stdout + listed.stderr
    disabled = disabled[disabled.index("Disabled extensions"):]
    for plugin in ("formgrader", "course-list", "assignment-list", "create-assignment", "menu"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled, disabled
    assert "validate-assignment" not in disabled
