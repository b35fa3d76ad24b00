"""Step: nbgrader's Execute in a contained kernel, with a notebook time limit, output caps and crash recovery."""
from __future__ import annotations

import ast
import json
from time import monotonic

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Int

from autograde import notebook as nbk
from autograde.grader.records import incidents
from autograde.grader.containment import SandboxKernelManager
from autograde.grader.records.incidents import error_output
from autograde.grader.records.limits import LIMITS
from autograde.grader.test_plans import TestPlan, blocked_references, plans
from autograde.grader.workspace import course_file

# Called in the kernel through user_expressions, which IPython evaluates without its input transformers.
_HARNESS = "__import__('sys').modules['autograde.hidden.harness']"
_IMPORT_HARNESS = "__import__('autograde.hidden.harness', fromlist=['harness'])"


class SandboxedExecute(Execute):
    """nbgrader's Execute in a contained kernel, with a notebook time limit, output caps and crash recovery.

    - The kernel starts through SandboxKernelManager (autograde.grader.containment),
      whatever kernelspec the notebook names: its own namespaces (bubblewrap), a
      read-only view of the system, interpreter, venv and course, a fresh folder, limits.
    - The whole notebook has `notebook_timeout` seconds; each cell gets
      min(Execute.timeout, what is left); cells past the limit are not run
      and score 0.
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
    notebook_timeout = Int(LIMITS.notebook_seconds, help="Wall-clock seconds for the whole notebook").tag(config=True)
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
        self._deadline = monotonic() + self.notebook_timeout
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
            return self._call(f"{_HARNESS}.file_writes()")
        except Exception:  # noqa: BLE001 - without a record every file incident stays in the report
            return None

    def _cell_timeout(self, cell: NotebookNode) -> int:
        remaining = int(self._deadline - monotonic()) + 1
        return max(1, min(self.timeout or remaining, remaining))

    def _quiet(self, code: str, timeout: float = 30) -> None:
        run_sync(self.kc.execute_interactive)(code, silent=True, store_history=False, timeout=timeout,
                                               output_hook=lambda msg: None, allow_stdin=False)

    def _call(self, expression: str, timeout: float = 60) -> dict | None:
        """Evaluate a harness call in the kernel (user_expressions: no input transformer applies); its JSON reply."""
        reply = run_sync(self.kc.execute_interactive)("", silent=True, store_history=False, timeout=timeout,
                                                       user_expressions={"r": expression},
                                                       output_hook=lambda msg: None, allow_stdin=False)
        return _json_of(reply.get("content", {}).get("user_expressions", {}).get("r", {}))

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
                kwargs["user_expressions"] = {**(kwargs.get("user_expressions") or {}), **riding}
            return original(code, *args, **kwargs)

        kc.execute = execute

    def on_cell_executed(self, **kwargs):  # nbgrader's hook (it records an error the outputs lack), and ours
        super().on_cell_executed(**kwargs)
        content = (kwargs.get("execute_reply") or {}).get("content", {})
        self._answers = content.get("user_expressions", {}) if content.get("status") == "ok" else {}

    def start_new_kernel_client(self):  # type: ignore[override]
        kc = super().start_new_kernel_client()
        self._call(f"{_IMPORT_HARNESS}.start({list(getattr(self, '_blocked', ()))!r})", timeout=self.startup_timeout)
        self._wrap_execute(kc)
        self._riding, self._prepared = {}, None
        return kc

    def _before_call(self, cell: NotebookNode) -> str:
        plan = self._plans.get(nbk.grade_id(cell), TestPlan())
        return f"{_HARNESS}.before_test({plan.to_kernel()!r})"

    def _before_test(self, cell: NotebookNode, where: str, index: int) -> None:
        """Prepare the kernel for a test cell (unless that rode on the cell before) and turn what the harness found
        into incidents."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared[0] == index and prepared[1] is not None:
            report = prepared[1]
        else:
            report = self._call(self._before_call(cell))
        if report is None:
            self._incidents.append(incidents.Incident(
                "hook", where, f"before test cell {where} the grader could not reach its harness in the kernel"))
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
                "cheating", label, f"{label} imported {module}, the reference solution, which graded "
                                   "notebooks cannot use; its exercise scores 0", costs))

    def _after_test(self, cell: NotebookNode, where: str) -> None:
        report = _json_of(self._answers.get("after", {}))
        if report is None:
            report = self._call(f"{_HARNESS}.after_test()")
        if report and report.get("torch"):
            self._incidents.append(incidents.Incident(
                "cheating", where, f"graded code called torch during {where} ({', '.join(report['torch'][:3])}): "
                                   "answers must use NumPy; it scores 0", (nbk.grade_id(cell),)))

    # -- running cells ------------------------------------------------------------
    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        where = incidents.label(cell, index)
        if monotonic() >= self._deadline:
            cell.outputs = [error_output("NotebookTimeLimit", f"not run: the notebook used up its {self.notebook_timeout} s")]
            if not self._stopped:
                self._stopped = True
                self._incidents.append(incidents.Incident(
                    "time-limit", where, f"the notebook ran past its {self.notebook_timeout} s limit; "
                                         f"cells from {where} on were not run and score 0"))
            return cell, resources
        test = nbk.is_test(cell)
        if test:
            try:
                self._before_test(cell, where, index)
            except Exception:  # noqa: BLE001 - a broken guard must not stop grading
                pass
        following = self._next_code.get(index)
        self._riding = {"after": f"{_HARNESS}.after_test()"} if test else {}
        if following is not None and nbk.is_test(self.nb.cells[following]):
            self._riding["before"] = self._before_call(self.nb.cells[following])
        self._answers = {}
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
            self._skip_on_replay.add(index)
            self._restart(index)
            return cell, resources
        finally:
            self._riding = {}  # used by this cell's request, or by none
        if test:
            try:
                self._after_test(cell, where)
            except Exception:  # noqa: BLE001 - the next test cell's before_test undoes the swap too
                pass
        if following is not None and "before" in self._answers:
            self._prepared = (following, _json_of(self._answers["before"]))
        self._after(cell, index, where)
        if index == self._last:
            self._writes = self._file_writes()
        return cell, resources

    def _after(self, cell: NotebookNode, index: int, where: str) -> None:
        names = {o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"}
        if "CellTimeoutError" in names:
            self._skip_on_replay.add(index)
            self._incidents.append(incidents.Incident(
                "timeout", where, f"cell {where} ran past the {self.timeout} s "
                                  "limit per cell and was interrupted"))
        if "SystemExit" in names:
            self._incidents.append(incidents.Incident(
                "exit", where, f"cell {where} called sys.exit(); the kernel went on"))
        if "MemoryError" in names:
            self._incidents.append(incidents.Incident("memory", where, f"cell {where} ran out of memory (MemoryError)"))
        if index in self._cut:
            self._incidents.append(incidents.Incident(
                "output", where, f"cell {where} printed more than {self.max_output_bytes:,} characters; the rest was dropped"))
        km = self.km
        if km is not None and hasattr(km, "reap_strays"):
            killed = km.reap_strays()
            if killed:
                self._incidents.append(incidents.Incident(
                    "processes", where, f"cell {where} left {killed} processes running; they were stopped"))

    def _restart(self, index: int) -> None:
        """Replace a dead or stuck kernel with a fresh one and rerun the cells before `index`."""
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
                self._quiet(earlier.source, timeout=min(self.timeout or remaining, remaining))
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


def _json_of(found: dict) -> dict | None:
    """A harness call's JSON report from a user_expressions entry (None when it raised or is missing)."""
    if not found or found.get("status") != "ok":
        return None
    try:
        return json.loads(ast.literal_eval(found["data"]["text/plain"]))
    except (ValueError, SyntaxError, KeyError, TypeError):
        return None
