"""The install resolves on every Python that pyproject.toml's requires-python admits.

One test per supported minor version (3.11, 3.12, ...). Each one asks a
resolver to install this project with its test extra under constraints.txt
(a dry run: nothing is downloaded beyond metadata, nothing is installed):

- with every interpreter of that version found on this machine (PATH, pyenv,
  /usr/bin, /usr/local/bin), each in a fresh empty venv, so its own patch
  level, markers and wheel tags count (Debian 12's 3.11.2 and pyenv's 3.11.7
  are both checked);
- for the lowest patch release the range admits (3.X.0) on manylinux, from
  this interpreter (`--python-version`): a pin that needs a later patch
  (soupsieve 4 needs 3.11.5) fails even where no such interpreter is installed.

Then it checks that the resolution is the lock: every package it would install
is pinned in constraints.txt, at a pinned version. It fails when the pins do
not resolve; it skips only when uv is missing or the package index cannot be
reached.

The resolver is uv's (about a second per interpreter). COURSE_INSTALL_RESOLVER=pip
runs pip's own resolver instead, on the real interpreters only (pip evaluates
markers for the interpreter it runs on, so it cannot stand in for 3.X.0); it
takes minutes per interpreter where wheels have no separate metadata.

Self-contained: standard library and `packaging` only.
"""
from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
CONSTRAINTS = ROOT / "constraints.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
REQUIRES_PYTHON = SpecifierSet(PROJECT["requires-python"])
RESOLVER = os.environ.get("COURSE_INSTALL_RESOLVER", "uv")
TIMEOUT = 1800 if RESOLVER == "pip" else 300


def lowest_patch(minor: str) -> str | None:
    """The lowest 3.X.Y release requires-python admits, or None."""
    return next((f"{minor}.{p}" for p in range(100) if f"{minor}.{p}" in REQUIRES_PYTHON), None)


SUPPORTED = [f"3.{m}" for m in range(0, 30) if lowest_patch(f"3.{m}")]


def pins() -> dict[str, set[str]]:
    """constraints.txt: canonical name -> the versions pinned (one per marker line)."""
    out: dict[str, set[str]] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        req = line.split("#", 1)[0].split(";", 1)[0].strip()
        if req:
            name, sep, version = req.partition("==")
            assert sep, f"constraints.txt: not a pin: {line!r}"
            out.setdefault(canonicalize_name(name), set()).add(version.strip())
    return out


def interpreters() -> dict[str, list[tuple[str, str]]]:
    """minor version -> [(full version, path)], one per distinct patch release found."""
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    paths = [shutil.which(f"python{v}") for v in SUPPORTED] + [shutil.which("python3")]
    for pattern in (f"{pyenv_root}/versions/*/bin/python3", "/usr/bin/python3.*", "/usr/local/bin/python3.*"):
        paths += sorted(p for p in glob.glob(pattern) if re.search(r"python3(\.\d+)?$", p))
    paths = list(dict.fromkeys(filter(None, paths)))

    def version(path: str) -> str:
        try:
            return subprocess.run([path, "-c", "import platform; print(platform.python_version())"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    found: dict[str, list[tuple[str, str]]] = {}
    seen: set[str] = set()
    with ThreadPoolExecutor(max_workers=8) as pool:
        for path, v in zip(paths, pool.map(version, paths)):
            if re.fullmatch(r"3\.\d+\.\d+", v) and v not in seen:
                seen.add(v)
                found.setdefault(v.rsplit(".", 1)[0], []).append((v, path))
    return found


def uv_bin() -> str | None:
    try:
        from uv import find_uv_bin
        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


UV_COMMON = ["--no-config", "--no-python-downloads", "--no-build", "-c", str(CONSTRAINTS)]


def uv_installs(uv: str, python: str) -> tuple[int, str, dict[str, str]]:
    """`uv pip install --dry-run` of the project into a fresh venv made from `python`."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = subprocess.run([uv, "venv", "--no-config", "-q", "--python", python, tmp],
                              capture_output=True, text=True, timeout=120)
        if venv.returncode:
            return venv.returncode, venv.stdout + venv.stderr, {}
        run = subprocess.run(
            [uv, "pip", "install", "--dry-run", "--python", f"{tmp}/bin/python", *UV_COMMON, "-e", ".[test]"],
            cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
        )
    out = run.stdout + run.stderr
    would = dict(re.findall(r"^ \+ (\S+)==(\S+)", out, re.M))
    return run.returncode, out, would


def uv_compiles(uv: str, version: str) -> tuple[int, str, dict[str, str]]:
    """`uv pip compile` for Python `version` on manylinux_2_28, from this interpreter."""
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine().lower()]
    run = subprocess.run(
        [uv, "pip", "compile", "--python", sys.executable, "--python-version", version,
         "--python-platform", f"{arch}-manylinux_2_28", *UV_COMMON,
         "--no-header", "--no-annotate", "pyproject.toml", "--extra", "test"],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
    )
    would = dict(re.findall(r"^(\S+)==(\S+)$", run.stdout, re.M))
    return run.returncode, run.stdout + run.stderr, would


def pip_installs(python: str) -> tuple[int, str, dict[str, str]]:
    """pip's resolver, run under `python` (pip --python), dry run with a JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run = subprocess.run(
            [sys.executable, "-m", "pip", "--python", python, "install", "--dry-run", "--ignore-installed",
             "--quiet", "--report", str(report), "-c", str(CONSTRAINTS), "-e", ".[test]"],
            cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
        )
        would = {}
        if run.returncode == 0:
            would = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    return run.returncode, run.stdout + run.stderr, would


@pytest.fixture(scope="module")
def resolutions():
    """minor -> [(what was resolved, Future of (returncode, output, {name: version}))], all started at once."""
    uv = uv_bin()
    if RESOLVER == "uv" and uv is None:
        pytest.skip("uv is not installed (it comes with the test extra: pip install -e '.[test]')")
    found = interpreters()
    pool = ThreadPoolExecutor(max_workers=8)
    jobs: dict[str, list[tuple[str, Future]]] = {}
    for minor in SUPPORTED:
        for version, path in found.get(minor, []):
            job = pool.submit(pip_installs, path) if RESOLVER == "pip" else pool.submit(uv_installs, uv, path)
            jobs.setdefault(minor, []).append((f"Python {version} ({path})", job))
        if RESOLVER == "uv":
            low = lowest_patch(minor)
            jobs.setdefault(minor, []).append((f"Python {low} (--python-version)", pool.submit(uv_compiles, uv, low)))
    yield jobs
    pool.shutdown(wait=True)


NETWORK = re.compile(r"error sending request|dns error|Failed to fetch|Could not connect|"
                     r"NewConnectionError|Temporary failure in name resolution|Name or service not known")


@pytest.mark.parametrize("minor", SUPPORTED)
def test_constraints_resolve(minor, resolutions):
    checks = resolutions.get(minor)
    if not checks:
        pytest.skip(f"no Python {minor} on this machine, and pip cannot stand in for one")
    locked = pins()
    failures = []
    for what, job in checks:
        code, out, would = job.result(timeout=TIMEOUT + 60)
        tail = "\n".join(out.strip().splitlines()[-25:])
        if code and NETWORK.search(out) and not re.search(r"No solution found|ResolutionImpossible|conflict", out):
            pytest.skip(f"package index unreachable ({what}): {NETWORK.search(out).group(0)}")
        if code:
            failures.append(f"{what}: constraints.txt does not resolve:\n{tail}")
            continue
        would = {canonicalize_name(n): v for n, v in would.items()}
        would.pop(canonicalize_name(PROJECT["name"]), None)
        missing = {"nbgrader", "torch", "jupyterlab", "pytest"} - would.keys()
        unpinned = sorted(set(would) - set(locked))
        off = {n: v for n, v in would.items() if n in locked and v.split("+")[0] not in locked[n]}
        if missing:
            failures.append(f"{what}: resolved without {sorted(missing)}:\n{tail}")
        if unpinned:
            failures.append(f"{what}: resolves packages constraints.txt does not pin: {unpinned}")
        if off:
            failures.append(f"{what}: resolved away from the pins: {off}")
    assert not failures, "\n\n".join(failures)


def test_makefile_and_environment_name_the_supported_pythons():
    """Makefile's SUPPORTED_PYTHONS and environment.yml's python range say what pyproject.toml says."""
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"^SUPPORTED_PYTHONS\s*:?=\s*(.*)$", makefile, re.M)
    assert listed and listed.group(1).split() == SUPPORTED, f"Makefile SUPPORTED_PYTHONS should be {SUPPORTED}"
    env = ROOT / "environment.yml"
    if env.is_file():
        spec = re.search(r"^\s*-\s*python\s*([<>=!~][^\s#]*)", env.read_text(), re.M)
        assert spec and SpecifierSet(spec.group(1)) == REQUIRES_PYTHON, \
            f"environment.yml: python{spec.group(1) if spec else '?'} is not requires-python {REQUIRES_PYTHON}"
