"""An unprivileged user who grades, for tests that must also run the grader as most instructors do.

make test runs as root in CI. The user (created once with useradd) cannot execute pyenv's
interpreters under /root, so it runs Debian's /usr/bin/python3 in a virtual environment of its
own that holds the packages of the test run's environment: their files hard-linked (copied
across file systems) from this environment's site-packages, the same wheels `pip install
--no-deps` of its `pip freeze` would unpack, in a second instead of minutes. A package whose
release does not support that interpreter (soupsieve 4 needs 3.11.5; Debian 12 has 3.11.2) is
reinstalled at the newest release that does: this workaround lives here, not in constraints.txt.
The course itself comes from the repository (PYTHONPATH).

The environment belongs to root and lives in the repository's .work/ (a cache: reused while the
interpreter and the package list are the same): the user can run it and change nothing in it.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from autograde import notebook as nbk

USER = "autograde-test"
SYSTEM_PYTHON = Path("/usr/bin/python3")
CACHE = nbk.REPO / ".work" / "unprivileged"


@dataclass(frozen=True)
class Grader:
    """The unprivileged user, and the interpreter of its environment."""

    uid: int
    gid: int
    home: Path
    python: Path

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": f"{self.python.parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
                "PYTHONPATH": str(nbk.REPO)}

    def run(self, args: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
        """Run a command as the user (no supplementary groups), with its environment."""
        cmd = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--", *args]
        return subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=timeout, **kw)

    def give(self, path: Path) -> None:
        """Make a folder and everything in it the user's."""
        for dirpath, dirnames, filenames in os.walk(path):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, self.uid, self.gid)


def why_not() -> str | None:
    """Why no unprivileged grader can be made here, or None."""
    if os.geteuid() != 0:
        return "make test is not running as root (its grading runs are already unprivileged)"
    if not SYSTEM_PYTHON.exists() or not shutil.which("useradd") or not shutil.which("setpriv"):
        return f"needs {SYSTEM_PYTHON}, useradd and setpriv"
    return None


def grader() -> Grader:
    """The user and its environment, made or reused."""
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--create-home", "--home-dir", f"/var/lib/{USER}", "--shell",
                        "/usr/sbin/nologin", USER], check=True, capture_output=True)
        entry = pwd.getpwnam(USER)
    version = _system("import platform; print(platform.python_version())")
    relaxed, pins = _relaxed(version)
    key = hashlib.sha256(f"{version}\n{pins}".encode()).hexdigest()[:12]
    venv = CACHE / f"venv-{key}"
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / "unprivileged.lock", "w") as lock:  # one builder at a time (parallel test runs)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            _build(venv, relaxed)
    return Grader(entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), venv / "bin" / "python")


def _system(code: str) -> str:
    return subprocess.run([str(SYSTEM_PYTHON), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _relaxed(version: str) -> tuple[list[str], str]:
    """(installed packages whose release does not support `version`, this environment's pins)."""
    from importlib.metadata import distributions

    from packaging.specifiers import SpecifierSet

    pins, relaxed = [], []
    for dist in distributions():
        name, requires = dist.metadata["Name"], dist.metadata.get("Requires-Python")
        pins.append(f"{name}=={dist.version}")
        if requires and version not in SpecifierSet(requires):
            relaxed.append(name)
    return sorted(relaxed), "\n".join(sorted(pins))


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _build(venv: Path, relaxed: list[str]) -> None:
    """Make the environment: Debian's interpreter, this environment's packages, the relaxed ones reinstalled."""
    if CACHE.exists():
        shutil.rmtree(CACHE)  # environments of other package lists
    CACHE.mkdir(parents=True)
    os.chmod(CACHE.parent, 0o755)
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    theirs = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    shutil.rmtree(theirs)
    shutil.copytree(sysconfig.get_paths()["purelib"], theirs, symlinks=True, copy_function=_link)
    ours = f"#!{Path(sys.prefix) / 'bin'}/python".encode()
    for script in Path(sys.prefix, "bin").iterdir():  # console scripts (nbgrader runs `alembic`), for this python
        if script.is_file() and not script.is_symlink() and script.read_bytes()[:len(ours)] == ours:
            target = venv / "bin" / script.name
            target.write_bytes(script.read_bytes().replace(ours, f"#!{python}".encode(), 1))
            target.chmod(0o755)
    if relaxed:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
                        "--disable-pip-version-check", *relaxed], check=True, capture_output=True, timeout=600)
    (venv / ".complete").write_text("\n".join(relaxed) + "\n")
