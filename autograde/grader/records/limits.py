"""The grading limits, written once. Every place that applies one reads it from here: nbgrader_config.py (the
settings nbgrader's steps and the sandbox start from), the grading command's defaults, the sandbox's kernel
manager, the in-process checks (autograde.authoring.verdicts, visible, single_stub) and the forked worker."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    cell_seconds: int = 60
    """CPU time per cell, of every process of the kernel's sandbox together: a cell past it is interrupted and scores
    0 (what other kernels on the machine do cannot make a cell run out of it)"""
    notebook_seconds: int = 900
    """CPU time for the whole notebook, counted the same way"""
    wall_factor: int = 5
    """the wall-clock backstop of both time limits, as a multiple of them: a cell that waits rather than computes
    (sleep, input) is stopped after wall_factor * cell_seconds seconds, a notebook after wall_factor *
    notebook_seconds"""
    memory_bytes: int = 3 * 1024**3
    """RLIMIT_DATA of a kernel: torch + numpy + a notebook's arrays fit in well under 2 GB"""
    file_bytes: int = 64 * 1024**2
    """RLIMIT_FSIZE: the largest single file a kernel may write"""
    processes: int = 128
    """RLIMIT_NPROC, threads included: ipykernel and torch use about 20"""
    cpu_seconds: int = 900
    """RLIMIT_CPU of each of a kernel's processes: a backstop, the limits per cell and notebook act first"""
    tmpfs_bytes: int = 256 * 1024**2
    """size of a kernel's /tmp and /dev/shm (each a tmpfs: memory, not the host's disk)"""
    disk_bytes: int = 256 * 1024**2
    """size of a kernel's working folder (its cwd and HOME, a tmpfs in the sandbox): all it may write there, in all;
    nothing it writes reaches the host's disk, and a notebook that fills it is reported (a files incident)"""
    output_chars: int = 1_000_000
    """output kept per cell"""


LIMITS = Limits()
