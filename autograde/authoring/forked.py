"""Run a notebook's cells once and its variants from forks: the engine of the in-process checks.

A chapter's catalogue has dozens of variants of one notebook (each mutant or alternative changes one or a few
answer cells). Running each variant from its first changed cell on, in a child forked from a process that has
already run everything before that cell, costs a fraction of a kernel per variant: no kernel start, no torch
import, no cells run twice before the change.

The worker (its own process: `python -m autograde.authoring.forked PLAN.json`) executes the plan's code cells in an
IPython shell, in notebook order. Before a cell that some jobs change first, it forks one child per job (at most
`parallel` children at a time, while the parent carries on); a child runs its job's version of the cells from
there to the end (leaving out the cells in its `skip`), or until every test cell in the job's `stop_after` has
run, writes what each test cell did, and exits. The parent's own run is the job named BASE. Two kinds of run use it:
- visible (autograde.authoring.visible): the release's test cells, as a student runs them in JupyterLab;
- graded (autograde.authoring.verdicts): the source's test cells with their hidden tests, each wrapped in the
  grader's harness calls (autograde.hidden.harness.before_test / after_test) as the grader wraps them.
Per test cell a job records: whether the cell raised, what it wrote to stderr, and the harness's reports; and
which other cells raised ("raised_cells", by index, and "errors": index -> the exception's type and message, after the word "stub"
for a NotImplementedError that an exercise's stub raised).
"""
from __future__ import annotations

import gc
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = "__base__"
"""The name of the unchanged run (the parent's own)."""


def run_plan(plan: dict, timeout: float = 1800) -> dict[str, dict]:
    """Run the worker on a plan (see module docstring); job name -> {"tests": {grade_id: record}, ...}."""
    with tempfile.TemporaryDirectory(prefix="forked-") as tmp:
        path = Path(tmp) / "plan.json"
        path.write_text(json.dumps(plan))
        env = dict(os.environ, MPLBACKEND="agg", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", PYTHONWARNINGS="default")
        proc = subprocess.run([sys.executable, "-m", "autograde.authoring.forked", str(path)], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=timeout)
        result = Path(tmp) / "result.json"
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"the forked worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        return json.loads(result.read_text())


# -- the worker (its own process) -------------------------------------------------------------------------
class _Alarm(Exception):
    """A cell ran past its time limit (raised in the cell by SIGPROF or SIGALRM, as the grader's interrupt would)."""


def _on_alarm(signum, frame):  # noqa: ARG001
    raise _Alarm("the cell ran past its time limit")


WAITING_FACTOR = 5
"""A cell's limit is cell_timeout seconds of CPU time (its process's, measured by ITIMER_PROF), so that what it
measures does not depend on how busy the machine is: the test suite runs several of these workers, each with its
children, on two cores, where a 9 s training cell took more than 60 s of wall time. A cell that waits without
computing is stopped after WAITING_FACTOR times the limit of wall time."""


def _limit(seconds: float) -> None:
    """Arm (seconds > 0) or disarm (0) the cell's CPU-time and wall-time limits."""
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WAITING_FACTOR)


class _Capture(io.StringIO):
    """sys.stdout/sys.stderr of a cell: kept (stderr) or counted and dropped (stdout)."""

    def __init__(self, keep: bool) -> None:
        super().__init__()
        self.keep = keep

    def write(self, text: str) -> int:
        return super().write(text) if self.keep else len(text)


def _harness_call(expression: str) -> dict:
    from autograde.hidden import harness

    try:
        return json.loads(getattr(harness, expression[0])(*expression[1:]))
    except Exception as exc:  # noqa: BLE001 - reported as such; the verdict treats it as the grader would
        return {"error": repr(exc)}


def _run_cell(shell, cell: dict, source: str, cell_timeout: int, harness: bool) -> tuple[int, dict | None]:
    """Run one cell; return its execution count and, for a test cell, its record: raised, stderr, the harness's
    before/after reports."""
    count = int(shell.execution_count)
    before = _harness_call(("before_test", cell.get("plan") or {})) if harness and cell["test"] else None
    err = _Capture(keep=cell["test"])
    real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Capture(keep=False), err
    _limit(cell_timeout)
    error = ""
    try:
        result = shell.run_cell(source, store_history=True, silent=False)
        ok = result.success
        failure = result.error_in_exec or result.error_before_exec
        error = f"{type(failure).__name__}: {str(failure)[:300]}" if failure is not None else ""
        from course.checking import raised_by_stub

        if raised_by_stub(failure):
            error = "stub " + error
    except _Alarm:
        ok, error = False, "_Alarm: the cell ran past its time limit"
    finally:
        _limit(0)
        sys.stdout, sys.stderr = real
    if not cell["test"]:
        return count, None if ok else {"raised": True, "error": error}
    record = {"raised": not ok, "error": error, "stderr": err.getvalue()[-4000:]}
    if harness:
        record["before"] = before
        record["after"] = _harness_call(("after_test",))
    return count, record


def _run_from(shell, cells, start: int, job: dict, cell_timeout: int, harness: bool, deadline: float) -> dict:
    """Run cells[start:] with the job's changes; stop after its stop_after tests, or at the deadline."""
    changes = {int(k): v for k, v in job.get("changes", {}).items()}
    pending = set(job.get("stop_after") or ())
    skip = set(job.get("skip") or ()) - set(changes)
    out: dict = {"tests": {}, "counts": {}}
    for i in range(start, len(cells)):
        if i in skip:
            continue
        if time.monotonic() > deadline:
            out["died"] = f"ran past its time limit before cell {i}"
            break
        cell = cells[i]
        count, record = _run_cell(shell, cell, changes.get(i, cell["source"]), cell_timeout, harness)
        out["counts"][str(count)] = i
        if record is not None and not cell["test"]:
            out.setdefault("raised_cells", []).append(i)
            out.setdefault("errors", {})[str(i)] = record["error"]
        elif record is not None:
            out["tests"][cell["grade_id"]] = record
            pending.discard(cell["grade_id"])
            if job.get("stop_after") and not pending:
                break
    return out


def worker(plan_path: Path) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    data = json.loads(plan_path.read_text())
    cells, jobs = data["cells"], data["jobs"]
    from autograde.grader.records.limits import LIMITS

    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)  # a kernel's memory limit, as the grader's sandbox sets it:
    memory = LIMITS.memory_bytes if hard == resource.RLIM_INFINITY else min(hard, LIMITS.memory_bytes)
    resource.setrlimit(resource.RLIMIT_DATA, (memory, hard))  # an answer that eats memory fails as it would there
    cell_timeout = int(data.get("cell_timeout", LIMITS.cell_seconds))
    child_timeout = int(data.get("child_timeout", LIMITS.notebook_seconds))
    parallel, harness = max(1, int(data.get("parallel", 1))), bool(data.get("harness"))
    out_dir = plan_path.parent
    starts: dict[int, list[dict]] = {}
    for job in jobs:
        changed = [int(k) for k in job.get("changes", {})]
        starts.setdefault(min(changed) if changed else len(cells), []).append(job)
    shell = InteractiveShell.instance()
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_alarm)
    if harness:
        from autograde.hidden import harness as kernel_side

        kernel_side.start(list(data.get("blocked", ())))
    running: dict[int, tuple[str, float]] = {}
    results: dict[str, dict] = {}

    def reap(block: bool) -> None:
        """Collect finished children: all of them (block), or until fewer than `parallel` run."""
        while running and (block or len(running) >= parallel):
            pid, status = os.waitpid(-1, 0)
            if pid not in running:
                continue
            name, started = running.pop(pid)
            found = out_dir / f"{pid}.json"
            if found.exists():
                results[name] = json.loads(found.read_text())
            else:
                results[name] = {"tests": {}, "counts": {},
                                 "died": f"exit status {status} after {time.monotonic() - started:.0f} s"}

    def fork(index: int, job: dict) -> None:
        reap(block=False)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # the child's collector leaves what the parent built alone: fewer pages copied on write
        pid = os.fork()
        if pid:
            gc.unfreeze()
        else:
            code = 1
            try:
                started = time.monotonic()
                result = _run_from(shell, cells, index, job, cell_timeout, harness, started + child_timeout)
                result["start"], result["seconds"] = index, round(time.monotonic() - started, 2)
                (out_dir / f"{os.getpid()}.json").write_text(json.dumps(result))
                code = 0
            finally:
                os._exit(code)
        running[pid] = (job["name"], time.monotonic())

    base: dict = {"tests": {}, "counts": {}, "start": 0}
    started = time.monotonic()
    for index, cell in enumerate(cells):
        for job in starts.get(index, []):
            fork(index, job)
        t = time.monotonic()
        count, record = _run_cell(shell, cell, cell["source"], cell_timeout, harness)
        base.setdefault("cell_seconds", []).append(round(time.monotonic() - t, 3))
        base["counts"][str(count)] = index
        if record is not None and not cell["test"]:
            base.setdefault("raised_cells", []).append(index)
            base.setdefault("errors", {})[str(index)] = record["error"]
        elif record is not None:
            base["tests"][cell["grade_id"]] = record
    base["seconds"] = round(time.monotonic() - started, 2)
    for job in starts.get(len(cells), []):  # jobs that change nothing: the base run is theirs
        results[job["name"]] = {**base, "seconds": 0.0}
    reap(block=True)
    results[BASE] = base
    (out_dir / "result.json").write_text(json.dumps(results))


if __name__ == "__main__":
    worker(Path(sys.argv[1]))
