"""An unprivileged user who grades, for tests that must also run the grader as most instructors do.

make test runs as root in CI. The user (created once with useradd) cannot execute pyenv's
interpreters under /root, so it runs Debian's /usr/bin/python3 in a virtual environment of its
own that holds the packages of the test run's environment: their files hard-linked (copied
across file systems) from this environment's site-packages, the same wheels `pip install
--no-deps` of its `pip freeze` would unpack, in a second instead of minutes. A package whose
release does not support that interpreter (soupsieve 4 needs 3.11.5; Debian 12 has 3.11.2) is
reinstalled at the newest release that does: this workaround lives here, not in constraints.txt.
The course comes from a copy of the repository that root owns and the user can read (PYTHONPATH): a clone
may sit in a folder only root can enter (/root is 0700, as is every `mktemp -d`), and the user's folders are
never loosened to let the user in. Everything the user runs lives under SHARE, a root-owned folder of the
system's (0755): the environment (a cache, reused while the interpreter and the package list are the same) and
the copy (made afresh for each grader(), a second's work: the repository without .git, .venv and .work is about
10 MB). The user can run both and change nothing in them.
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
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograde import notebook as nbk

USER = "autograde-test"
SYSTEM_PYTHON = Path("/usr/bin/python3")
SHARE = Path("/var/cache/autograde-test")
"""Root's, 0755, outside any clone: what the user reads and runs."""
CACHE = SHARE / "venvs"
COPIED = (".venv", ".work", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache", "__pycache__")
"""What the user's copy of the repository leaves out: environments, run-time state, git, caches."""


@dataclass(frozen=True)
class Grader:
    """The unprivileged user, and the interpreter of its environment."""

    uid: int
    gid: int
    home: Path
    python: Path
    repo: Path
    """The user's readable copy of the repository: its course and autograde packages, its notebooks."""

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": f"{self.python.parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
                "PYTHONPATH": str(self.repo)}

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
    SHARE.mkdir(parents=True, exist_ok=True)
    os.chmod(SHARE, 0o755)
    with open(SHARE / "venvs.lock", "w") as lock:  # one builder at a time (parallel test runs)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            _build(venv, relaxed)
    return Grader(entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), venv / "bin" / "python", _copy_repository())


def _copy_repository() -> Path:
    """A fresh copy of the repository that the user can read, whatever the folders above the clone allow."""
    parent = SHARE / "repos"
    parent.mkdir(exist_ok=True)
    os.chmod(parent, 0o755)
    copy = Path(tempfile.mkdtemp(prefix=f"{nbk.REPO.name}-", dir=parent))
    shutil.copytree(nbk.REPO, copy / nbk.REPO.name, ignore=shutil.ignore_patterns(*COPIED), symlinks=True)
    for dirpath, dirnames, filenames in os.walk(copy):  # readable whatever the clone's umask was
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode & 0o111 | 0o644)
    return copy / nbk.REPO.name


def release(user: Grader) -> None:
    """Remove the user's copy of the repository (the environment stays: it is a cache)."""
    if user.repo.parent.parent == SHARE / "repos":
        shutil.rmtree(user.repo.parent, ignore_errors=True)


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
    os.chmod(CACHE, 0o755)
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    theirs = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    shutil.rmtree(theirs)
    shutil.copytree(sysconfig.get_paths()["purelib"], theirs, symlinks=True, copy_function=_link)
    shebangs = {f"#!{prefix / 'bin'}/python".encode() for prefix in (Path(sys.prefix), Path(sys.prefix).resolve())}
    for script in Path(sys.prefix, "bin").iterdir():  # console scripts (nbgrader runs `alembic`), for this python
        text = script.read_bytes() if script.is_file() and not script.is_symlink() else b""
        ours = next((s for s in shebangs if text.startswith(s)), None)
        if ours:
            target = venv / "bin" / script.name
            target.write_bytes(text.replace(ours, f"#!{python}".encode(), 1))
            target.chmod(0o755)
    if relaxed:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
                        "--disable-pip-version-check", *relaxed], check=True, capture_output=True, timeout=600)
    (venv / ".complete").write_text("\n".join(relaxed) + "\n")
