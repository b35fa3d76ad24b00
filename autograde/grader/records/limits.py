"""The grading limits, written once. Every place that applies one reads it from here: nbgrader_config.py (the
settings nbgrader's steps and the sandbox start from), the grading command's defaults, the sandbox's kernel
manager, the in-process checks (autograde.build.verdicts, visible, single_stub) and the forked worker."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    cell_seconds: int = 60
    """wall clock per cell: a cell past it is interrupted and scores 0"""
    notebook_seconds: int = 900
    """wall clock for the whole notebook"""
    memory_bytes: int = 3 * 1024**3
    """RLIMIT_DATA of a kernel: torch + numpy + a notebook's arrays fit in well under 2 GB"""
    file_bytes: int = 64 * 1024**2
    """RLIMIT_FSIZE: the largest single file a kernel may write"""
    processes: int = 128
    """RLIMIT_NPROC, threads included: ipykernel and torch use about 20"""
    cpu_seconds: int = 900
    """RLIMIT_CPU of a kernel: a backstop, the wall-clock limits act first"""
    tmpfs_bytes: int = 256 * 1024**2
    """size of a kernel's /tmp and /dev/shm"""
    output_chars: int = 1_000_000
    """output kept per cell"""


LIMITS = Limits()
