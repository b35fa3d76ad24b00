"""Record: what one grading run changes in the course's nbgrader configuration, written once.

nbgrader_config.py holds the course's settings (the limits come from autograde.grader.records.limits). A run may
change a few of them: the time limits, weak containment, and, in the tests' controls only, any nbgrader
setting put back to its default. A Settings object says which, and every nbgrader step of the run reads it
from here: as traitlets configuration in the grading process (generate_assignment, generate_feedback) and
as command-line flags in each nbgrader autograde process.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from autograde.grader.records.limits import LIMITS


@dataclass(frozen=True)
class Settings:
    """The settings of one grading run on top of nbgrader_config.py."""

    cell_seconds: int = LIMITS.cell_seconds
    """CPU time per cell, all the sandbox's processes counted (nbgrader's Execute.timeout; wall clock backstop:
    LIMITS.wall_factor times it)"""
    notebook_seconds: int = LIMITS.notebook_seconds
    """CPU time for a whole notebook, counted the same way (SandboxedExecute.notebook_timeout)"""
    weak_containment: bool = False
    """kernels contained by a fresh folder and resource limits only (where bubblewrap cannot run)"""
    kernel_threads: int | None = None
    """threads each kernel's NumPy and torch may use (None: the course's default, one)"""
    overrides: tuple[str, ...] = ()
    """further `--Class.trait=value` settings: the tests' controls put nbgrader's defaults back with these"""

    def __post_init__(self) -> None:
        if self.kernel_threads is not None and self.kernel_threads < 1:
            raise ValueError(f"kernel_threads must be at least 1, got {self.kernel_threads}")
        if self.cell_seconds < 1 or self.notebook_seconds < 1:
            raise ValueError(f"time limits must be at least 1 s, got cell {self.cell_seconds} s, "
                             f"notebook {self.notebook_seconds} s")
        bad = [flag for flag in self.overrides if not (flag.startswith("--") and "=" in flag and "." in flag)]
        if bad:
            raise ValueError(f"overrides must look like --Class.trait=value, got {bad}")

    def args(self) -> tuple[str, ...]:
        """The settings as nbgrader command-line flags."""
        return (f"--Execute.timeout={self.cell_seconds}",
                f"--SandboxedExecute.notebook_timeout={self.notebook_seconds}",
                *(["--SandboxKernelManager.weak_containment=True"] if self.weak_containment else []),
                *([f"--SandboxKernelManager.threads={self.kernel_threads}"] if self.kernel_threads else []),
                *self.overrides)

    def config(self):
        """The same settings as a traitlets Config (parsed from the flags, so both forms always agree)."""
        from traitlets.config.loader import KVArgParseConfigLoader

        return KVArgParseConfigLoader(argv=list(self.args())).load_config()

    def job_seconds(self, notebooks: int) -> float:
        """How long one nbgrader autograde process may take for `notebooks` notebooks before it is stopped:
        each notebook's own limit (its wall-clock backstop), a minute of kernel start and bookkeeping each, and five
        for the process."""
        return notebooks * (self.notebook_seconds * LIMITS.wall_factor + 60) + 300


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_per_kernel(jobs: int) -> int:
    """An equal share of the cores for each of `jobs` kernels running at once (at least one thread)."""
    return max(1, cores() // max(1, jobs))
