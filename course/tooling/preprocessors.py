"""nbgrader preprocessors this course adds to nbgrader's own pipeline (see nbgrader_config.py)."""
from __future__ import annotations

import json as _json
import sys as _sys
from pathlib import Path as _Path
from time import monotonic as _monotonic

from nbclient.exceptions import CellTimeoutError as _CellTimeoutError, DeadKernelError as _DeadKernelError
from nbclient.util import run_sync as _run_sync
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.api import Gradebook as _Gradebook
from nbgrader.preprocessors import ClearHiddenTests, Execute as _Execute, NbGraderPreprocessor
from traitlets import Bool as _Bool, Int as _Int, List, Unicode

from . import integrity as _integrity
from . import notebook as _nbk
from .sandbox import SandboxKernelManager as _SandboxKernelManager

__all__ = ["StripCellTags", "HideHiddenTestsInFeedback", "WARNING_PATTERN"]

WARNING_PATTERN = r"(?m)^.*:\d+: [A-Za-z_]*Warning: "
"""A line as Python's warnings module writes it (file:line: SomeWarning: message)."""


class StripCellTags(NbGraderPreprocessor):
    """Remove execution-control tags from a submission before it runs.

    nbclient skips any cell tagged `skip-execution`; a student who tags a test
    cell that way would otherwise have it score full marks without running.
    Tags carry no meaning for grading, so the listed ones are dropped.
    """

    tags_to_strip = List(
        Unicode(), default_value=["skip-execution", "raises-exception", ""],
        help="Cell tags removed from every cell of a submission before execution.",
    ).tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        tags = cell.get("metadata", {}).get("tags")
        if tags:
            kept = [t for t in tags if t not in self.tags_to_strip]
            if len(kept) != len(tags):
                self.log.warning("Removed tags %s from cell %d", sorted(set(tags) - set(kept)), index)
                cell.metadata["tags"] = kept
        return cell, resources


class HideHiddenTestsInFeedback(ClearHiddenTests):
    """Remove hidden-test code from the feedback a student receives.

    The hidden region is cut from each test cell's source (nbgrader's
    ClearHiddenTests), and the traceback of an error in such a cell, which
    would quote the failing hidden line, is replaced by the error's type and
    message: the message is written for the student by course.checking.
    """

    note = Unicode(
        "# (hidden tests ran here; their code is not shown)",
        help="Line left where a hidden-test region was removed.",
    ).tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type != "code" or self.begin_test_delimeter not in cell.source:
            return cell, resources
        lines, inside = [], False
        for line in cell.source.split("\n"):
            if self.begin_test_delimeter in line:
                inside = True
                lines.append(line[: len(line) - len(line.lstrip())] + self.note)
            elif self.end_test_delimeter in line:
                inside = False
            elif not inside:
                lines.append(line)
        cell.source = "\n".join(lines)
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


# -- untrusted code: containment and honesty (see course.tooling.sandbox and course.tooling.integrity) --------

__all__ += ["DetectTampering", "DropEmptyMetadata", "DetectCheating", "SandboxedExecute", "ApplyIncidents"]

# Run silently in the kernel before every test cell: test cells import their helpers
# afresh from an unpatched course.checking, and builtins get back their original values.
_SNAPSHOT = ("__autograde_restore__ = (lambda snap: lambda: [setattr(__import__('builtins'), k, v) "
             "for k, v in snap.items()])(dict(vars(__import__('builtins'))))")
_GUARD = ("__autograde_restore__(); [__import__('sys').modules.pop(m, None) for m in "
          "list(__import__('sys').modules) if m == 'course.checking']")


def _expected_cells(resources: ResourcesDict) -> dict[str, _integrity.ExpectedCell]:
    """The assignment's graded and locked cells, as the gradebook holds them."""
    nbg = resources["nbgrader"]
    out = {}
    with _Gradebook(nbg["db_url"]) as gb:
        notebook = gb.find_notebook(nbg["notebook"], nbg["assignment"])
        grades = {c.name: c for c in notebook.grade_cells}
        solutions = {c.name for c in notebook.solution_cells}
        for cell in notebook.source_cells:
            grade = cell.name in grades and cell.name not in solutions
            source = _nbk.without_hidden_tests(cell.source) if grade else cell.source
            out[cell.name] = _integrity.ExpectedCell(
                cell.name, cell.cell_type, bool(cell.locked), grade, cell.name in solutions,
                float(grades[cell.name].max_score) if cell.name in grades else None, source)
    return out


class DetectTampering(NbGraderPreprocessor):
    """Record what a submission changed in cells it may not change (first step of sanitising).

    nbgrader's own steps then neutralise it: DeduplicateIds, StripCellTags,
    OverwriteCells (restores test and read-only cells, cell types and points;
    puts deleted test cells back). The incidents name it in the report.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        expected = _expected_cells(resources)
        found = _integrity.tampering(nb, expected)
        for i, cell in enumerate(nb.cells):
            gid = _nbk.grade_id(cell)
            if "nbgrader" in cell.get("metadata", {}) and gid not in expected:
                # nbgrader 0.9.6 fails on the whole notebook for a grading cell it does not know
                del cell.metadata["nbgrader"]
                if gid:
                    found.append(_integrity.Incident(
                        "tampering", gid, f"cell {_integrity.label(cell, i)} claims to be graded cell {gid}, which "
                                          "the assignment does not have; it was run as an ordinary cell"))
        _integrity.store(nb, found)
        return nb, resources


class DropEmptyMetadata(NbGraderPreprocessor):
    """Remove the empty nbgrader metadata DeduplicateIds leaves on a duplicated cell.

    nbgrader 0.9.6's OverwriteCells (add_missing_task_cells) reads
    metadata.nbgrader.grade_id of every cell that has an nbgrader key and fails
    on the empty one, so a student who duplicates a test cell would otherwise
    get no grade at all. Run right after DeduplicateIds.
    """

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if "nbgrader" in cell.get("metadata", {}) and not cell.metadata.nbgrader.get("grade_id"):
            del cell.metadata["nbgrader"]
        return cell, resources


class DetectCheating(NbGraderPreprocessor):
    """Record code a student may not use (torch, this chapter's reference engine, patched helpers...) and its cost.

    Runs after OverwriteCells, on the notebook as it will run. The cost (the
    exercise the code belongs to) is applied after execution by ApplyIncidents.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        nbg = resources["nbgrader"]
        answer_names = {}
        with _Gradebook(nbg["db_url"]) as gb:
            notebook = gb.find_notebook(nbg["notebook"], nbg["assignment"])
            for cell in notebook.source_cells:
                if cell.name in {c.name for c in notebook.solution_cells}:
                    answer_names[cell.name] = _integrity.defined_names(cell.source)
        _integrity.add(nb, _integrity.cheating(nb, nbg["assignment"], answer_names))
        return nb, resources


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class SandboxedExecute(_Execute):
    """nbgrader's Execute in a contained kernel, with a notebook time limit, output caps and crash recovery.

    - The kernel starts through SandboxKernelManager (course.tooling.sandbox),
      whatever kernelspec the notebook names: fresh empty folder, limits, own
      uid, the workspace hidden.
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

    contain = _Bool(True, help="Run the kernel in the sandbox (False: nbgrader's plain kernel, for controls)").tag(
        config=True)
    notebook_timeout = _Int(900, help="Wall-clock seconds for the whole notebook").tag(config=True)
    max_output_bytes = _Int(1_000_000, help="Output kept per cell, in characters").tag(config=True)

    def __init__(self, **kw):
        kw.setdefault("kernel_manager_class", _SandboxKernelManager)
        super().__init__(**kw)
        if not self.contain:
            from jupyter_client.manager import AsyncKernelManager

            self.kernel_manager_class = AsyncKernelManager

    # -- set-up ---------------------------------------------------------------
    def _hidden_paths(self) -> list[str]:
        """The grader's workspace (gradebook, every student's files), or its parts when it holds the kernel's code."""
        db_url = (getattr(self, "resources", None) or {}).get("nbgrader", {}).get("db_url", "")
        if not db_url.startswith("sqlite:///"):
            return []
        root = _Path(db_url[len("sqlite:///"):]).resolve().parent
        needed = [_Path(_sys.prefix).resolve(), _nbk.REPO / "course"]
        if any(root == p or root in p.parents for p in needed):
            return [str(root / n) for n in ("gradebook.db", "submitted", "autograded", "feedback", "source",
                                            "release", "jobs") if (root / n).exists()]
        return [str(root)]

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if isinstance(km, _SandboxKernelManager):
            km.hide_paths = [*km.hide_paths, *self._hidden_paths()]
        return km

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict = None, km=None):
        self._incidents: list[_integrity.Incident] = []
        self._deadline = _monotonic() + self.notebook_timeout
        self._skip_on_replay: set[int] = set()
        self._used: dict[int, int] = {}
        self._cut: set[int] = set()
        self._stopped = False
        self.timeout_func = self._cell_timeout
        try:
            return super().preprocess(nb, resources, km)
        finally:
            _integrity.add(nb, self._incidents)

    def _cell_timeout(self, cell: NotebookNode) -> int:
        remaining = int(self._deadline - _monotonic()) + 1
        return max(1, min(self.timeout or remaining, remaining))

    def _quiet(self, code: str, timeout: float = 30) -> None:
        _run_sync(self.kc.execute_interactive)(code, silent=True, store_history=False, timeout=timeout,
                                               output_hook=lambda msg: None, allow_stdin=False)

    def start_new_kernel_client(self):  # type: ignore[override]
        kc = super().start_new_kernel_client()
        self._quiet(_SNAPSHOT, timeout=60)
        return kc

    # -- running cells ------------------------------------------------------------
    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        where = _integrity.label(cell, index)
        if _monotonic() >= self._deadline:
            cell.outputs = [_error("NotebookTimeLimit", f"not run: the notebook used up its {self.notebook_timeout} s")]
            if not self._stopped:
                self._stopped = True
                self._incidents.append(_integrity.Incident(
                    "time-limit", where, f"the notebook ran past its {self.notebook_timeout} s limit; "
                                         f"cells from {where} on were not run and score 0"))
            return cell, resources
        if _nbk.is_test(cell):
            try:
                self._quiet(_GUARD)
            except Exception:  # noqa: BLE001 - a broken guard must not stop grading
                pass
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except (_DeadKernelError, _CellTimeoutError, RuntimeError) as exc:
            dead = isinstance(exc, _DeadKernelError) or "died" in str(exc)
            cell.outputs = list(cell.get("outputs", [])) + [_error(
                "KernelDied" if dead else "KernelUnresponsive",
                "the kernel stopped while running this cell" if dead else "the kernel did not respond after an interrupt")]
            self._incidents.append(_integrity.Incident(
                "crash", where, f"cell {where} {'crashed the kernel (os._exit, exit() or a fatal signal)' if dead else 'left the kernel unresponsive'}; "
                                "a fresh kernel reran the cells before it and grading went on"))
            self._skip_on_replay.add(index)
            self._restart(index)
            return cell, resources
        self._after(cell, index, where)
        return cell, resources

    def _after(self, cell: NotebookNode, index: int, where: str) -> None:
        names = {o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"}
        if "CellTimeoutError" in names:
            self._skip_on_replay.add(index)
            self._incidents.append(_integrity.Incident(
                "timeout", where, f"cell {where} ran past the {self.timeout} s "
                                  "limit per cell and was interrupted"))
        if "SystemExit" in names:
            self._incidents.append(_integrity.Incident(
                "exit", where, f"cell {where} called sys.exit(); the kernel went on"))
        if "MemoryError" in names:
            self._incidents.append(_integrity.Incident("memory", where, f"cell {where} ran out of memory (MemoryError)"))
        if index in self._cut:
            self._incidents.append(_integrity.Incident(
                "output", where, f"cell {where} printed more than {self.max_output_bytes:,} characters; the rest was dropped"))
        km = self.km
        if km is not None and hasattr(km, "reap_strays"):
            killed = km.reap_strays()
            if killed:
                self._incidents.append(_integrity.Incident(
                    "processes", where, f"cell {where} left {killed} processes running; they were stopped"))

    def _restart(self, index: int) -> None:
        """Replace a dead or stuck kernel with a fresh one and rerun the cells before `index`."""
        try:
            if self.km is not None:
                _run_sync(self.km.shutdown_kernel)(now=True)
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
                    or _nbk.is_test(earlier)):
                continue
            remaining = self._deadline - _monotonic()
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
            size = sum(len(v) if isinstance(v, str) else len(_json.dumps(v)) for v in content.get("data", {}).values())
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


class ApplyIncidents(NbGraderPreprocessor):
    """Give 0 to the test cells an incident costs, with the reason as the cell's error (before SaveAutoGrades)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        incidents = _integrity.stored(nb)
        tests = {_nbk.grade_id(c): c for c in nb.cells if _nbk.is_test(c)}
        for inc in incidents:
            for gid in inc.costs:
                cell = tests.get(gid)
                if cell is not None:
                    cell.setdefault("outputs", []).append(_error("AutograderIntegrityError", inc.text))
        return nb, resources
