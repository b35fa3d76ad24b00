"""Step: nbgrader's Execute in a contained kernel, with a notebook time limit, output caps and crash recovery."""
from __future__ import annotations

import ast
import asyncio
import json
import math
import os
from queue import Empty
from time import monotonic

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from jupyter_core.utils import ensure_async
from nbclient.util import run_sync
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, Int

from autograde import notebook as nbk
from autograde.grader.records import incidents
from autograde.grader.containment import SandboxKernelManager
from autograde.grader.harness_link import HarnessLink, HarnessUnreachable
from autograde.grader.records.incidents import error_output
from autograde.grader.records.limits import LIMITS
from autograde.grader.test_plans import TestPlan, blocked_references, plans
from autograde.grader.workspace import course_file

# The harness is called in the kernel through user_expressions (IPython evaluates them without its input
# transformers), by signed requests through its channel: see autograde.grader.harness_link.


class SandboxedExecute(Execute):
    """nbgrader's Execute in a contained kernel, with a notebook time limit, output caps and crash recovery.

    - The kernel starts through SandboxKernelManager (autograde.grader.containment),
      whatever kernelspec the notebook names: its own namespaces (bubblewrap), a
      read-only view of the system, interpreter, venv and course, a fresh folder, limits.
    - Time is CPU time of the kernel's whole sandbox (every process in it; its
      cgroup's count where it has one, else /proc's), so no other kernel on the
      machine can make a cell run out of it: the whole notebook has
      `notebook_timeout` seconds, each cell min(Execute.timeout, what is left);
      a cell that spends it is interrupted as nbclient interrupts one at its
      timeout, and cells past the notebook's limit are not run and score 0.
      The wall clock is a backstop, `wall_factor` times each limit (a cell that
      sleeps), and nbclient's own timeout.
    - A cell's outputs are capped at `max_output_bytes`; the rest is dropped
      (an overflow on stderr still counts as stderr).
    - When a cell kills the kernel (os._exit, exit(), a signal) or leaves it
      unresponsive after an interrupt, the cell keeps an error, a fresh kernel
      is started and every earlier cell except those that killed it or timed
      out is run again, so the cells after it are graded on their own merit.
    - Before each test cell, course.checking is re-imported and builtins are
      restored, so a patch in an answer cell cannot pass later tests.
    - Processes a cell leaves behind (a fork bomb) are killed after it.
    Each of these is recorded as an incident in the notebook's metadata.
    """

    contain = Bool(True, help="Run the kernel in the sandbox (False: nbgrader's plain kernel, for controls)").tag(
        config=True)
    isolate = Bool(True, help="Run each test cell on the reference code of the chapter's other exercises, so one "
                              "bug costs one exercise (False: the student's code throughout, for controls)").tag(config=True)
    notebook_timeout = Int(LIMITS.notebook_seconds, help="CPU seconds of the kernel's sandbox for the whole notebook "
                                                         "(Execute.timeout: per cell)").tag(config=True)
    wall_factor = Float(LIMITS.wall_factor, help="The wall-clock backstop of both time limits, as a multiple of "
                                                 "them").tag(config=True)
    max_output_bytes = Int(LIMITS.output_chars, help="Output kept per cell, in characters").tag(config=True)

    def __init__(self, **kw):
        kw.setdefault("kernel_manager_class", SandboxKernelManager)
        # a graded kernel's state is thrown away: it is stopped at once after its last cell, not asked to shut down
        # and waited for (about 0.9 s a notebook)
        kw.setdefault("shutdown_kernel", "immediate")
        super().__init__(**kw)
        self._riding: dict[str, str] = {}
        self._answers: dict[str, dict] = {}
        if not self.contain:
            from jupyter_client.manager import AsyncKernelManager

            self.kernel_manager_class = AsyncKernelManager

    # -- set-up ---------------------------------------------------------------
    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if isinstance(km, SandboxKernelManager):  # the kernel sees no reference module of a later chapter
            km.chapter = (getattr(self, "resources", None) or {}).get("nbgrader", {}).get("assignment", "")
        return km

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict = None, km=None):
        self._incidents: list[incidents.Incident] = []
        self._deadline = monotonic() + self.notebook_timeout * self._factor()  # the wall-clock backstop
        self._cpu_spent = 0.0        # CPU seconds of the kernels this notebook has already replaced
        self._cpu_end: float | None = None  # while a cell runs: the kernel's CPU count at which it is stopped
        self._cpu_budget = 0.0       # that cell's CPU seconds
        self._cpu_read = (0.0, 0.0)  # the last count and when it was read (monotonic)
        self._cpu_stopped = False    # the last cell was stopped because it spent its CPU time
        self._reaped = 0             # processes of the running cell stopped at its limit
        self._full: set[str] = set()  # the kernel's writable folders already reported full
        self._skip_on_replay: set[int] = set()
        self._used: dict[int, int] = {}
        self._cut: set[int] = set()
        self._stopped = False
        self.timeout_func = self._cell_timeout
        chapter = (resources or {}).get("nbgrader", {}).get("assignment", "")
        self._plans = plans(chapter, isolate=self.isolate, root=course_file(resources or {})) if chapter else {}
        self._blocked = blocked_references(chapter)
        self._hooks: dict[str, str] = {}  # what a student's hook changed -> the first test cell it was undone before
        self._writes: dict | None = None   # where the notebook wrote files, asked after its last code cell
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
        self._last = code[-1] if code else -1
        self._next_code = dict(zip(code, code[1:]))  # a code cell -> the next one
        self._prepared: tuple[int, dict | None] | None = None  # a test cell whose before_test rode on the cell before
        try:
            return super().preprocess(nb, resources, km)
        finally:
            if self._hooks:
                first = next(iter(self._hooks.values()))
                self._incidents.append(incidents.Incident(
                    "hook", first, "the notebook changed how later cells run (" + ", ".join(self._hooks) + "); "
                                   "the grader undid it before every test cell, so it changed no score"))
            incidents.store(nb, incidents.settle_own_files(incidents.stored(nb) + self._incidents, self._writes))

    def _file_writes(self) -> dict | None:
        """The harness's record of where the notebook wrote files (None when the kernel cannot say)."""
        try:
            return self._harness("file_writes")
        except Exception:  # noqa: BLE001 - without a record every file incident stays in the report
            return None

    def _cell_timeout(self, cell: NotebookNode) -> int:
        """nbclient's own (wall-clock) timeout for a cell: the backstop of its CPU time limit."""
        remaining = int(self._deadline - monotonic()) + 1
        return max(1, min(self._wall_limit() or remaining, remaining))

    def _wall_limit(self) -> int:
        """The wall-clock backstop of the limit per cell (0: none)."""
        return math.ceil(self.timeout * self._factor()) if self.timeout else 0

    # -- time: CPU time of the kernel's sandbox ------------------------------------------------------------
    # nbclient waits for a cell's reply on the shell channel, and takes its timeout path (interrupt, an error
    # reply, a fresh kernel when it does not answer) when that wait ends without one. _watch makes the wait end
    # the same way when the cell has spent its CPU time, reading the count no more often than needed: a cell
    # cannot spend its budget faster than every core of the machine at once.
    POLL = 0.25
    """seconds between two reads of the CPU count once a cell is near its budget"""

    def _factor(self) -> float:
        """The wall-clock backstop's multiple: 1 where the kernel's CPU time is not counted (a plain kernel)."""
        return self.wall_factor if self.contain else 1.0

    def _cpu_now(self) -> float | None:
        km = self.km
        try:
            return km.cpu_seconds() if km is not None and hasattr(km, "cpu_seconds") else None
        except Exception:  # noqa: BLE001 - an unreadable count leaves the wall-clock limits alone in charge
            return None

    def _arm(self) -> None:
        """Give the cell about to run its CPU budget: the limit per cell, or what the notebook has left."""
        self._cpu_end, self._cpu_stopped, self._reaped = None, False, 0
        self.iopub_timeout = max(4, math.ceil(4 * self._factor()))  # a starved kernel's last output may lag
        now = self._cpu_now()
        if now is None:
            return
        left = self.notebook_timeout - (self._cpu_spent + now)
        self._cpu_budget = max(0.5, min(self.timeout, left) if self.timeout else left)
        self._cpu_end = now + self._cpu_budget
        self._cpu_read = (now, monotonic())
        self._watch(self.kc)

    def _watch(self, kc) -> None:
        """Make the client's shell channel end a wait for a reply when the running cell has spent its CPU time."""
        channel = kc.shell_channel
        if getattr(channel, "_cpu_watcher", None) is self:
            return
        original = channel.get_msg

        async def get_msg(timeout=None):
            end = None if timeout is None else monotonic() + timeout
            while True:
                step = self._until_check()
                left = None if end is None else max(0.0, end - monotonic())
                if step is None:
                    return await original(timeout=left)
                try:
                    return await original(timeout=step if left is None else min(step, left))
                except Empty:
                    if (end is not None and monotonic() >= end) or self._cpu_spent_up():
                        raise

        channel.get_msg = get_msg
        channel._cpu_watcher = self

    def _until_check(self) -> float | None:
        """Seconds until the running cell could have spent its CPU time (None: no cell is counted)."""
        if self._cpu_end is None:
            return None
        used, at = self._cpu_read
        soonest = at + (self._cpu_end - used) / (os.cpu_count() or 1)
        return max(self.POLL, soonest - monotonic())

    def _cpu_spent_up(self) -> bool:
        """Read the count: True (once) when the running cell has spent its CPU time."""
        if self._cpu_end is None:
            return False
        now = self._cpu_now()
        if now is None:
            return False
        self._cpu_read = (now, monotonic())
        if now < self._cpu_end:
            return False
        self._cpu_end, self._cpu_stopped = None, True
        return True

    async def _async_handle_timeout(self, timeout: int, cell: NotebookNode | None = None):
        """A cell past its limit: its other processes are stopped (they would starve the kernel's answer to the
        interrupt), nbclient interrupts it, and those it started until the interrupt landed are stopped too."""
        self._cpu_end = None
        km = self.km
        reap = km.reap_strays if km is not None and hasattr(km, "reap_strays") else (lambda: 0)
        self._reaped += reap()
        self.iopub_timeout = 4  # nbclient's: an interrupted kernel that says nothing more is replaced
        reply = await super()._async_handle_timeout(timeout, cell)
        for _ in range(5):
            await asyncio.sleep(0.1)
            self._reaped += reap()
        # A signal that arrives while the kernel is inside C code (or while its processes still held the cores) can
        # be lost: until its KeyboardInterrupt shows, the interrupt is sent again, once a second, three more times
        # (each preceded by stopping what the cell started meanwhile), before nbclient gives the kernel up.
        for _ in range(self.INTERRUPTS - 1):
            if cell is None or km is None or self._interrupted(cell):
                break
            await asyncio.sleep(1)
            if self._interrupted(cell):
                break
            self._reaped += reap()
            try:
                await ensure_async(km.interrupt_kernel())
            except Exception:  # noqa: BLE001 - a kernel already gone is nbclient's to report
                break
        return reply

    INTERRUPTS = 4
    """interrupts sent to a cell past its limit before the kernel is called unresponsive (one a second)"""

    @staticmethod
    def _interrupted(cell: NotebookNode) -> bool:
        """Whether the kernel has answered the interrupt (its KeyboardInterrupt is among the cell's outputs)."""
        return any(o.get("output_type") == "error" and o.get("ename") == "KeyboardInterrupt"
                   for o in cell.get("outputs", []))

    def _quiet(self, code: str, timeout: float = 30) -> None:
        run_sync(self.kc.execute_interactive)(code, silent=True, store_history=False, timeout=timeout,
                                               output_hook=lambda msg: None, allow_stdin=False)

    def _expression(self, expression: str, timeout: float = 60) -> dict:
        """Evaluate an expression in the kernel through user_expressions (no input transformer applies); its entry."""
        reply = run_sync(self.kc.execute_interactive)("", silent=True, store_history=False, timeout=timeout,
                                                       user_expressions={"r": expression},
                                                       output_hook=lambda msg: None, allow_stdin=False)
        return reply.get("content", {}).get("user_expressions", {}).get("r", {})

    def _harness(self, name: str, payload: object = None, timeout: float = 60) -> dict | None:
        """A signed call to the kernel's harness, its verified reply; HarnessUnreachable when what came back was not
        signed by the harness (or nothing came back though the kernel answered)."""
        expression, count = self._link.call(name, payload)
        return self._verified(self._expression(expression, timeout), count)

    def _verified(self, found: dict | None, count: int) -> dict:
        reply = self._link.verify(found, count)
        if "error" in reply:  # the harness itself failed (signed): the grader's fault, not the student's
            raise RuntimeError(f"the grader's harness failed: {reply['error']}")
        self._harness_said(reply.get("harness") or {})
        return reply

    def _harness_said(self, said: dict) -> None:
        """What the harness's channel saw since its last call: its own names changed (put back), refused reaches."""
        where = getattr(self, "_where", "the notebook")
        if said.get("tampered"):
            self._incidents.append(incidents.Incident(
                "hook", where, "the notebook changed the grader's harness (" + ", ".join(said["tampered"]) + "); "
                               "it was put back before the grader used it"))
        if said.get("refused"):
            self._incidents.append(incidents.Incident(
                "hook", where, "the grader refused what graded notebooks may not do: " + "; ".join(said["refused"][:3])))

    # -- harness calls riding on a cell's own execute request ----------------------------------------------
    # IPython evaluates an execute request's user_expressions right after its code, when the code raised
    # nothing: after_test rides on its test cell, the next test cell's before_test on the cell before it, and
    # a separate call is made only where the cell raised (or the kernel did not answer them). Before, each was
    # a round trip of its own: about 40 per notebook.
    def _wrap_execute(self, kc) -> None:
        """Let the next cell's execute request carry the harness calls in self._riding (used once)."""
        original = kc.execute

        def execute(code, *args, **kwargs):
            riding, self._riding = self._riding, {}
            if riding:
                kwargs["user_expressions"] = {**(kwargs.get("user_expressions") or {}),
                                              **{k: expression for k, (expression, _count) in riding.items()}}
                self._riding_counts = {k: count for k, (_expression, count) in riding.items()}
            return original(code, *args, **kwargs)

        kc.execute = execute

    def on_cell_executed(self, **kwargs):  # nbgrader's hook (it records an error the outputs lack), and ours
        super().on_cell_executed(**kwargs)
        content = (kwargs.get("execute_reply") or {}).get("content", {})
        self._answers = content.get("user_expressions", {}) if content.get("status") == "ok" else {}

    def start_new_kernel_client(self):  # type: ignore[override]
        kc = super().start_new_kernel_client()
        chapter = (getattr(self, "resources", None) or {}).get("nbgrader", {}).get("assignment", "")
        self._link = HarnessLink(chapter)
        self._expression(self._link.boot(), timeout=self.startup_timeout)
        self._harness("start", [list(getattr(self, "_blocked", ()))], timeout=self.startup_timeout)
        self._wrap_execute(kc)
        self._riding, self._prepared, self._riding_counts = {}, None, {}
        return kc

    def _plan(self, cell: NotebookNode) -> dict:
        """before_test's payload: the cell's plan, and its source (the harness knows by it which code is the test's)."""
        return {**self._plans.get(nbk.grade_id(cell), TestPlan()).to_kernel(), "source": cell.source}

    def _before_call(self, cell: NotebookNode) -> tuple[str, int]:
        return self._link.call("before_test", self._plan(cell))

    def _unreachable(self, cell: NotebookNode, where: str, when: str, why: str) -> None:
        self._incidents.append(incidents.Incident(
            "cheating", where, f"{when} test cell {where} the grader's harness did not answer ({why}): the notebook "
                               "stood between them (sys.audit or __import__ replaced?); the cell scores 0",
            (nbk.grade_id(cell),)))

    def _asked(self, cell: NotebookNode, where: str, when: str, riding: tuple[dict, int] | None, name: str,
               payload: object = None) -> dict | None:
        """The harness's report for the call `name`: the answer that rode on a cell's own request (riding: what came
        back, its counter) when it verifies, else the call made again on its own; None, with a cheating incident that
        costs the test cell, when the harness cannot be reached."""
        if riding is not None:
            try:
                return self._verified(*riding)
            except HarnessUnreachable:
                pass  # asked again, on its own
        try:
            return self._harness(name, payload)
        except HarnessUnreachable as exc:
            self._unreachable(cell, where, when, str(exc))
            return None

    def _before_test(self, cell: NotebookNode, where: str, index: int) -> None:
        """Prepare the kernel for a test cell (unless that rode on the cell before) and turn what the harness found
        into incidents."""
        prepared, self._prepared = self._prepared, None
        self._where = where
        riding = (prepared[1], prepared[2]) if prepared is not None and prepared[0] == index else None
        report = self._asked(cell, where, "before", riding, "before_test", self._plan(cell))
        if report is None:
            return
        for what in report.get("restored", []):
            self._hooks.setdefault(what, where)
        if report.get("foreign"):
            self._incidents.append(incidents.Incident(
                "cheating", where, f"graded code of {where} was not written in this notebook: "
                                   f"{', '.join(report['foreign'])}; it scores 0", (nbk.grade_id(cell),)))
        counts = {c.get("execution_count"): i for i, c in enumerate(self.nb.cells) if c.cell_type == "code"}
        owners = nbk.exercise_tests(self.nb)
        for module, count in report.get("blocked", []):
            at = counts.get(count)  # the cell that imported it
            label = f"cell {incidents.label(self.nb.cells[at], at)}" if at is not None else "a cell"
            costs = tuple(owners.get(at, ())) if at is not None else ()
            self._incidents.append(incidents.Incident(
                "cheating", label, f"{label} imported {module}, {_what_module(module)}, which graded "
                                   "notebooks cannot use; its exercise scores 0", costs))

    def _after_test(self, cell: NotebookNode, where: str) -> None:
        self._where = where
        riding = (self._answers["after"], self._riding_counts.get("after", -1)) if "after" in self._answers else None
        report = self._asked(cell, where, "after", riding, "after_test")
        if report and report.get("torch"):
            self._incidents.append(incidents.Incident(
                "cheating", where, f"graded code called torch during {where} ({', '.join(report['torch'][:3])}): "
                                   "answers must use NumPy; it scores 0", (nbk.grade_id(cell),)))

    # -- running cells ------------------------------------------------------------
    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        where = incidents.label(cell, index)
        used = self._cpu_now()
        if monotonic() >= self._deadline or (used is not None and self._cpu_spent + used >= self.notebook_timeout):
            if used is None:
                limit = f"its {self.notebook_timeout * self._factor():g} s"
            elif monotonic() >= self._deadline:
                limit = f"its {self.notebook_timeout * self._factor():g} s of wall-clock time (the backstop)"
            else:
                limit = f"its {self.notebook_timeout} s of CPU time"
            cell.outputs = [error_output("NotebookTimeLimit", f"not run: the notebook used up {limit}")]
            if not self._stopped:
                self._stopped = True
                self._incidents.append(incidents.Incident(
                    "time-limit", where, f"the notebook used up {limit}; "
                                         f"cells from {where} on were not run and score 0"))
            return cell, resources
        test = nbk.is_test(cell)
        if test:
            try:
                self._before_test(cell, where, index)
            except Exception:  # noqa: BLE001 - a broken guard must not stop grading
                pass
        following = self._next_code.get(index)
        self._riding = {"after": self._link.call("after_test")} if test else {}
        if following is not None and nbk.is_test(self.nb.cells[following]):
            self._riding["before"] = self._before_call(self.nb.cells[following])
        self._answers, self._riding_counts = {}, {}
        self._arm()
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except (DeadKernelError, CellTimeoutError, RuntimeError) as exc:
            dead = isinstance(exc, DeadKernelError) or "died" in str(exc)
            cell.outputs = list(cell.get("outputs", [])) + [error_output(
                "KernelDied" if dead else "KernelUnresponsive",
                "the kernel stopped while running this cell" if dead else "the kernel did not respond after an interrupt")]
            self._incidents.append(incidents.Incident(
                "crash", where, f"cell {where} {'crashed the kernel (os._exit, exit() or a fatal signal)' if dead else 'left the kernel unresponsive'}; "
                                "a fresh kernel reran the cells before it and grading went on"))
            self._report_strays(where)
            self._skip_on_replay.add(index)
            self._restart(index)
            return cell, resources
        finally:
            self._riding = {}  # used by this cell's request, or by none
            self._cpu_end = None
        if test:
            try:
                self._after_test(cell, where)
            except Exception:  # noqa: BLE001 - the next test cell's before_test undoes the swap too
                pass
        if following is not None and "before" in self._answers:
            self._prepared = (following, self._answers["before"], self._riding_counts.get("before", -1))
        self._after(cell, index, where)
        if index == self._last:
            self._writes = self._file_writes()
        return cell, resources

    def _after(self, cell: NotebookNode, index: int, where: str) -> None:
        names = {o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"}
        if "CellTimeoutError" in names:
            self._skip_on_replay.add(index)
            if self._cpu_stopped:
                limit = (f"its {self._cpu_budget:g} s of CPU time (the limit per cell, all its processes counted)"
                         if not self.timeout or self._cpu_budget >= self.timeout else
                         f"the {self._cpu_budget:g} s of CPU time the notebook had left")
                text = f"cell {where} used {limit} and was interrupted"
            elif self._factor() != 1:
                text = (f"cell {where} ran past the {self._wall_limit()} s wall-clock backstop of its limit (it waited "
                        "rather than computed) and was interrupted")
            else:
                text = f"cell {where} ran past the {self.timeout} s limit per cell and was interrupted"
            self._incidents.append(incidents.Incident("timeout", where, text))
        if "SystemExit" in names:
            self._incidents.append(incidents.Incident(
                "exit", where, f"cell {where} called sys.exit(); the kernel went on"))
        if "MemoryError" in names:
            self._incidents.append(incidents.Incident("memory", where, f"cell {where} ran out of memory (MemoryError)"))
        if index in self._cut:
            self._incidents.append(incidents.Incident(
                "output", where, f"cell {where} printed more than {self.max_output_bytes:,} characters; the rest was dropped"))
        self._report_strays(where)
        km = self.km
        if km is not None and hasattr(km, "full_folders"):
            for folder, size in km.full_folders():
                if folder not in self._full:
                    self._full.add(folder)
                    weak = getattr(km, "weak_containment", False)
                    self._incidents.append(incidents.Incident(
                        "files", where, f"cell {where} filled the kernel's {folder} (its limit, {size // 2**20} MiB)"
                                        + ("; it is on the host's disk (weak containment)" if weak else
                                           "; writes past it failed, and nothing reached the host's disk")))

    def _report_strays(self, where: str) -> None:
        """Stop the processes the cell left in the kernel's sandbox (with those stopped at its limit, a processes
        incident); on the crash path this runs before the kernel is replaced, which would stop them unreported."""
        km = self.km
        if km is None or not hasattr(km, "reap_strays"):
            return
        try:
            killed = km.reap_strays()
        except Exception:  # noqa: BLE001 - a sandbox already gone has nothing left to stop
            killed = 0
        killed, self._reaped = killed + self._reaped, 0
        if killed:
            self._incidents.append(incidents.Incident(
                "processes", where, f"cell {where} left {killed} processes running; they were stopped"))

    def _restart(self, index: int) -> None:
        """Replace a dead or stuck kernel with a fresh one and rerun the cells before `index`."""
        self._cpu_spent += self._cpu_now() or 0.0  # the notebook's CPU time goes on counting in the next kernel
        try:
            if self.km is not None:
                run_sync(self.km.shutdown_kernel)(now=True)
        except Exception:  # noqa: BLE001
            pass
        try:
            self._cleanup_kernel()
        except Exception:  # noqa: BLE001
            self.km, self.kc = None, None
        self.km = self.create_kernel_manager()
        self.start_new_kernel()
        self.start_new_kernel_client()
        for i, earlier in enumerate(self.nb.cells[:index]):
            if (i in self._skip_on_replay or earlier.cell_type != "code" or not earlier.source.strip()
                    or nbk.is_test(earlier)):
                continue
            remaining = self._deadline - monotonic()
            if remaining <= 1:
                break
            try:
                self._quiet(earlier.source, timeout=min(self._wall_limit() or remaining, remaining))
            except Exception:  # noqa: BLE001 - a cell that fails again just stays failed
                break

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        if msg.get("msg_type") == "error":
            content["evalue"] = str(content.get("evalue", ""))[:10_000]
            content["traceback"] = [str(line)[:10_000] for line in content.get("traceback", [])[:200]]
            return super().output(outs, msg, display_id, cell_index)
        if msg.get("msg_type") == "stream":
            size = len(content.get("text", ""))
        else:
            size = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in content.get("data", {}).values())
        used = self._used.get(cell_index, 0)
        if used + size <= self.max_output_bytes:
            self._used[cell_index] = used + size
            return super().output(outs, msg, display_id, cell_index)
        if cell_index not in self._cut:
            self._cut.add(cell_index)
            outs.append(NotebookNode(output_type="stream", name="stdout",
                                     text=f"\n... output beyond {self.max_output_bytes:,} characters dropped by the grader ...\n"))
        if msg.get("msg_type") == "stream" and content.get("name") == "stderr" and \
                not any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in outs):
            outs.append(NotebookNode(output_type="stream", name="stderr", text="(stderr output dropped by the grader)\n"))
        return None


def _what_module(module: str) -> str:
    return "the grader's hidden tests" if module.startswith("autograde.") else "the reference solution"


def _json_of(found: dict) -> dict | None:
    """A harness call's JSON report from a user_expressions entry (None when it raised or is missing)."""
    if not found or found.get("status") != "ok":
        return None
    try:
        return json.loads(ast.literal_eval(found["data"]["text/plain"]))
    except (ValueError, SyntaxError, KeyError, TypeError):
        return None
