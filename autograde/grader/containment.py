"""A contained kernel for untrusted student code: fresh empty folder, resource limits, no way back to the grader.

nbgrader starts kernels through jupyter_client. `SandboxKernelManager` (used
by the course's `SandboxedExecute` preprocessor) wraps the kernel command of
whatever kernelspec the notebook names in this module's launcher:

    python -m autograde.grader.containment --workdir DIR [--uid N] [limits] [--hide PATH]... -- <kernel argv>

The launcher runs as the grader, then, before exec'ing ipykernel:
- when root and the kernel may have a mount namespace: hides the grader's
  folders (the workspace with the gradebook and every student's files, the
  course's `source/` with the hidden tests) under empty, unreadable tmpfs mounts;
- copies the connection file into DIR (a fresh folder that holds nothing
  else: no notebook, no hidden tests, no `torch.py` handed in by a student)
  and makes DIR the kernel's working folder and HOME;
- applies limits with setrlimit: RLIMIT_DATA (heap and anonymous mappings;
  RLIMIT_AS is avoided because torch and glibc reserve large virtual ranges
  that are never touched), RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_CPU, no core files;
- when root, drops to an unprivileged uid of its own (one per kernel, from a
  range with no passwd entry), so the kernel can read neither the 0700
  workspace nor another kernel's folder, and its fork bomb is capped and can
  be reaped without touching anyone else's processes.
Without root the kernel keeps the grader's uid: the folder, the limits and the
reaping of stray processes still apply, the uid and mount isolation do not
(`containment_level()` says which applies).
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import fcntl
import json
import os
import resource
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Int, List, Unicode

from autograde import notebook as nbk

UID_BASE = 61000
UID_COUNT = 2000
DEFAULT_MEMORY = 3 * 1024**3      # RLIMIT_DATA: torch + numpy + a notebook's arrays fit in well under 2 GB
DEFAULT_FILE_SIZE = 64 * 1024**2  # RLIMIT_FSIZE: largest single file the kernel may write
DEFAULT_PROCESSES = 128           # RLIMIT_NPROC (threads count): ipykernel + torch use about 20
DEFAULT_CPU_SECONDS = 900         # RLIMIT_CPU: a backstop; the wall-clock limits act first
DEFAULT_TMPFS = "256m"            # size of the private /tmp and working folder when namespaces exist
KERNEL_VISIBLE = ("__init__.py", "hidden")
"""What a graded kernel may see of autograde/: the hidden-test helpers its test cells import."""
HIDDEN_BY_DEFAULT = (nbk.REPO / "source", nbk.REPO / "solutions",
                     *sorted(p for p in (nbk.REPO / "autograde").iterdir() if p.name not in KERNEL_VISIBLE))
"""The course's folders with hidden tests, full solutions or the grader's own code and data;
course/reference stays visible (later chapters import it), and so does autograde/hidden."""

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 4096, 16384, 1 << 18
MNT_DETACH = 2


def sandbox_root() -> Path:
    """Where per-kernel folders live (one root per grader uid)."""
    base = os.environ.get("AUTOGRADE_SANDBOX_ROOT")
    if base:
        return Path(base)
    return Path("/tmp") / ("autograd-sandbox" if os.geteuid() == 0 else f"autograd-sandbox-{os.geteuid()}")


def containment_level() -> str:
    """'uid' when kernels run under their own unprivileged uid (grader is root), else 'limits'."""
    return "uid" if os.geteuid() == 0 else "limits"


# -- processes -------------------------------------------------------------
def processes_of(uid: int) -> list[int]:
    """Pids of the processes whose real uid is uid."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(entry))
                        break
        except OSError:
            continue
    return pids


def children_of(pid: int) -> list[int]:
    """Pids of every descendant of pid."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        frontier += kids
    return out


def reap(uid: int | None, keep: int | None = None, kernel_pid: int | None = None) -> int:
    """Kill the sandbox's stray processes (all of its uid, or the kernel's descendants); return how many."""
    if uid is not None:
        victims = [p for p in processes_of(uid) if p != keep]
    elif kernel_pid is not None:
        victims = children_of(kernel_pid)
    else:
        return 0
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return len(victims)


# -- per-kernel folders ----------------------------------------------------
def allocate_slot() -> tuple[int | None, Path]:
    """A fresh, empty working folder for one kernel, and (when root) a uid no other live kernel uses."""
    root = sandbox_root()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o711)  # others may enter their own folder, never list the others
    with open(root / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _sweep(root)
            if os.geteuid() != 0:
                return None, Path(_mkdtemp(root))
            start = (os.getpid() * 7) % UID_COUNT
            for i in range(UID_COUNT):
                uid = UID_BASE + (start + i) % UID_COUNT
                slot = root / f"k{uid}"
                if slot.exists():
                    if processes_of(uid):
                        continue
                    shutil.rmtree(slot, ignore_errors=True)  # left over by a crashed grader
                slot.mkdir(mode=0o700)
                return uid, slot
            raise RuntimeError(f"no free sandbox uid in {UID_BASE}..{UID_BASE + UID_COUNT}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _live_uids() -> set[int]:
    """Real uids of every running process."""
    uids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                uids.add(os.stat(f"/proc/{entry}").st_uid)
            except OSError:
                continue
    return uids


def _sweep(root: Path, older_than: float = 600.0) -> None:
    """Remove kernel folders a crashed grader left behind (old, and no process of their uid alive)."""
    now, live = time.time(), None
    for slot in root.glob("k*"):
        try:
            if now - slot.stat().st_mtime < older_than:
                continue
        except OSError:
            continue
        uid = int(slot.name[1:]) if slot.name[1:].isdigit() else None
        if uid is None:  # a folder of a kernel that kept the grader's uid: only when a day old
            if now - slot.stat().st_mtime > 86400:
                shutil.rmtree(slot, ignore_errors=True)
            continue
        if live is None:
            live = _live_uids()
        if uid not in live:
            shutil.rmtree(slot, ignore_errors=True)


def _mkdtemp(root: Path) -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="k", dir=root)


def release_slot(uid: int | None, slot: Path) -> None:
    """Kill what is left of a kernel's processes and remove its folder."""
    if uid is not None:
        for _ in range(3):
            if not reap(uid):
                break
            time.sleep(0.05)
    shutil.rmtree(slot, ignore_errors=True)


# -- the kernel manager nbgrader uses --------------------------------------
class SandboxKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernels start through the sandbox launcher."""

    memory_limit = Int(DEFAULT_MEMORY, help="RLIMIT_DATA of the kernel, bytes (0: no limit)").tag(config=True)
    file_size_limit = Int(DEFAULT_FILE_SIZE, help="RLIMIT_FSIZE of the kernel, bytes").tag(config=True)
    process_limit = Int(DEFAULT_PROCESSES, help="RLIMIT_NPROC of the kernel's uid (threads count)").tag(config=True)
    cpu_limit = Int(DEFAULT_CPU_SECONDS, help="RLIMIT_CPU of the kernel, seconds").tag(config=True)
    tmpfs_size = Unicode(DEFAULT_TMPFS, help="Size of the kernel's private /tmp (mount namespace only)").tag(config=True)
    hide_paths = List(Unicode(), help="Folders the kernel must not see (in addition to the course's source/)").tag(
        config=True)

    _slot: tuple[int | None, Path] | None = None

    @property
    def sandbox_uid(self) -> int | None:
        return self._slot[0] if self._slot else None

    async def _async_pre_start_kernel(self, **kw):
        # Unix sockets in the kernel's own folder instead of TCP ports: no race for free ports
        # between kernels started at the same moment, and nothing listening on the network.
        if self._slot is None:
            self._slot = allocate_slot()
        self.transport = "ipc"
        self.ip = str(self._slot[1] / "zmq")
        self.cache_ports = False
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if self._slot is None:
            self._slot = allocate_slot()
        uid, slot = self._slot
        wrapper = [sys.executable, "-m", "autograde.grader.containment", "--workdir", str(slot),
                   "--memory", str(self.memory_limit), "--file-size", str(self.file_size_limit),
                   "--processes", str(self.process_limit), "--cpu", str(self.cpu_limit),
                   "--tmpfs-size", self.tmpfs_size]
        if uid is not None:
            wrapper += ["--uid", str(uid)]
        for path in [*map(str, HIDDEN_BY_DEFAULT), *self.hide_paths]:
            wrapper += ["--hide", path]
        return [*wrapper, "--", *cmd]

    def reap_strays(self) -> int:
        """Kill every process of this kernel's sandbox except the kernel itself."""
        pid = getattr(getattr(self, "provisioner", None), "pid", None)
        if self._slot is None or pid is None:
            return 0
        return reap(self._slot[0], keep=pid, kernel_pid=pid)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if self._slot is not None:
                release_slot(*self._slot)
                self._slot = None

    cleanup_resources = _async_cleanup_resources  # type: ignore[assignment]


# -- the launcher (runs as the grader, execs the kernel) -------------------
def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _mount(libc, source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    if libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                  data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _blocking_ancestor(path: Path) -> tuple[Path, Path] | None:
    """(A, child of A towards path) for the highest ancestor A that other users cannot enter, else None."""
    parts = Path(os.path.realpath(path)).parts
    for i in range(1, len(parts) - 1):
        ancestor = Path(*parts[: i + 1])
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor, ancestor / parts[i + 1]
    return None


def _expose(libc, needed: list[Path], stage: Path) -> None:
    """Make each needed path reachable by other users inside this namespace (e.g. a Python under /root).

    The closed ancestor is covered by an empty tmpfs that others may enter, and
    only the one child on the way to the needed path is bound back into it: the
    rest of that folder (root's home) stays out of sight.
    """
    for path in needed:
        blocked = _blocking_ancestor(path)
        if blocked is None:
            continue
        ancestor, child = blocked
        stage.mkdir(parents=True, exist_ok=True)
        _mount(libc, str(child), str(stage), None, MS_BIND | MS_REC, None)
        _mount(libc, "none", str(ancestor), "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=711")
        (ancestor / child.name).mkdir()
        _mount(libc, str(stage), str(ancestor / child.name), None, MS_BIND | MS_REC, None)
        libc.umount2(str(stage).encode(), MNT_DETACH)


def isolate_mounts(hide: list[str], tmpfs_size: str, workdir: Path) -> bool:
    """In a new mount namespace: private /tmp, the interpreter reachable, each hidden path covered; False if unavailable."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    _mount(libc, "none", "/", None, MS_REC | MS_PRIVATE, None)
    needed = [Path(os.path.realpath(sys.executable)).parent, Path(sys.base_prefix), Path(sys.prefix),
              nbk.REPO / "course", nbk.REPO / "autograde" / "hidden"]
    scratch = [p for p in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(p)]
    # what the kernel needs and lives in a scratch folder (a course unpacked under /tmp) is bound back after
    keep = {p: os.open(p, os.O_PATH) for p in [*needed, workdir]
            if any(Path(s) in p.resolve().parents for s in scratch) and p.is_dir()}
    # private, size-limited scratch space: the kernel cannot fill the grader's disk or meet other kernels' files
    for path in scratch:
        _mount(libc, "none", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_size},mode=1777")
    for path, fd in keep.items():
        os.makedirs(path, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{fd}", str(path), None, MS_BIND | MS_REC, None)
        os.close(fd)
    _expose(libc, needed, Path("/tmp/.autograde-stage"))
    for path in hide:
        if any(Path(path) == p or Path(path) in p.parents for p in needed):
            continue  # never hide the interpreter or the course package from the kernel
        if os.path.isdir(path):
            _mount(libc, "none", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=000")
        elif os.path.isfile(path):
            _mount(libc, "/dev/null", path, None, MS_BIND, None)
    return True


def _set_limit(which: int, value: int) -> None:
    if value > 0:
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def launch(argv: list[str]) -> None:
    """Set up the sandbox described by argv and exec the kernel command after `--`."""
    parser = argparse.ArgumentParser(prog="python -m autograde.grader.containment")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--uid", type=int)
    parser.add_argument("--memory", type=int, default=DEFAULT_MEMORY)
    parser.add_argument("--file-size", type=int, default=DEFAULT_FILE_SIZE)
    parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES)
    parser.add_argument("--cpu", type=int, default=DEFAULT_CPU_SECONDS)
    parser.add_argument("--tmpfs-size", default=DEFAULT_TMPFS)
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("kernel", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cmd = args.kernel[1:] if args.kernel[:1] == ["--"] else args.kernel
    if not cmd:
        parser.error("no kernel command after --")

    connection = cmd.index("-f") + 1 if "-f" in cmd else None
    info = Path(cmd[connection]).read_bytes() if connection else None
    workdir: Path = args.workdir
    root = os.geteuid() == 0
    isolated = False
    if root and args.uid is not None:
        isolated = isolate_mounts(args.hide, args.tmpfs_size, workdir)
        if not isolated and any(_blocking_ancestor(p) for p in (Path(sys.executable), Path(sys.base_prefix))):
            args.uid = None  # the unprivileged uid could not even start Python here: keep folder and limits only
    workdir.mkdir(parents=True, exist_ok=True)
    for sub in ("tmp", ".ipython", ".config"):
        (workdir / sub).mkdir(exist_ok=True)
    if info is not None:
        (workdir / "kernel.json").write_bytes(info)
        cmd[connection] = str(workdir / "kernel.json")
    if root and args.uid is not None:
        for dirpath, dirnames, filenames in os.walk(workdir):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.chown(name, args.uid, args.uid)
    os.chmod(workdir, 0o700)

    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TZ", "PYTHONHASHSEED") or k.startswith("JPY_")}
    env.update(HOME=str(workdir), TMPDIR=str(workdir / "tmp"), IPYTHONDIR=str(workdir / ".ipython"),
               MPLCONFIGDIR=str(workdir / ".config"), JUPYTER_RUNTIME_DIR=str(workdir),
               PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="agg", OMP_NUM_THREADS="1",
               AUTOGRADE_SANDBOX=json.dumps({"uid": args.uid, "mount_namespace": isolated}))

    _set_limit(resource.RLIMIT_DATA, args.memory)
    _set_limit(resource.RLIMIT_FSIZE, args.file_size)
    _set_limit(resource.RLIMIT_CPU, args.cpu)
    _set_limit(resource.RLIMIT_CORE, 0)
    if args.uid is not None:  # a per-kernel uid: the limit counts this kernel's processes only
        _set_limit(resource.RLIMIT_NPROC, args.processes)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel (no zombies)
    os.chdir(workdir)
    if root and args.uid is not None:
        os.setgroups([])
        os.setgid(args.uid)
        os.setuid(args.uid)
    os.execve(cmd[0], cmd, env)


if __name__ == "__main__":
    launch(sys.argv[1:])
