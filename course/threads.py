"""Fixing the number of threads NumPy's BLAS and torch use, so that timings compare like with like; keeping
freed memory in the process (glibc), so that a step does not pay the OS to map and zero its arrays again.

NumPy multiplies matrices with the BLAS library its wheel ships (OpenBLAS on Linux and Windows), which
starts one thread per core; on a busy machine those threads can make a product ten times slower, and a
comparison with torch on one thread means little. OpenBLAS reads its thread count from the environment only
when it loads, so a notebook that already imported NumPy sets it through the library's own function.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")


def _openblas() -> ctypes.CDLL | None:
    """NumPy's OpenBLAS (the copy already loaded), or None when NumPy uses another BLAS."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    patterns = [os.path.join(root, "numpy.libs", "*openblas*"), os.path.join(os.path.dirname(np.__file__), ".dylibs",
                                                                             "*openblas*")]
    for path in sorted(p for pattern in patterns for p in glob.glob(pattern)):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        if any(hasattr(library, name) for name in _SETTERS):
            return library
    return None


def blas_threads(count: int | None = None) -> int | None:
    """Set NumPy's OpenBLAS to `count` threads (if given) and return its thread count; None if not reachable."""
    library = _openblas()
    if library is None:
        return None
    if count is not None:
        setter = next(getattr(library, name) for name in _SETTERS if hasattr(library, name))
        setter(ctypes.c_int(int(count)))
    getter = next((getattr(library, name) for name in _GETTERS if hasattr(library, name)), None)
    return int(getter()) if getter is not None else count


def fix_threads(count: int = 1) -> str:
    """One thread count for NumPy's BLAS and for torch (if it is installed); a sentence saying what was set."""
    blas = blas_threads(count)
    said = [f"NumPy's BLAS: {blas} thread(s)" if blas is not None else "NumPy's BLAS: not OpenBLAS, thread count unchanged"]
    try:
        import torch
    except ImportError:
        return "; ".join(said)
    torch.set_num_threads(count)
    said.append(f"torch: {torch.get_num_threads()} thread(s)")
    return "; ".join(said)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3        # glibc's mallopt parameters (malloc.h)


def keep_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 256 << 20) -> str:
    """Ask glibc's malloc to keep memory that NumPy frees, for the next array, instead of handing it to the OS.

    By default glibc serves an array over 128 KiB (at first) with a fresh mapping from the OS and returns it when
    the array is freed, and it trims the heap as soon as 128 KiB or more sits free at its top. Each new array then
    starts with the OS zeroing its pages, one page fault per 4 KiB. An engine that makes a few hundred temporary
    arrays a step (every rule returns new arrays) spends much of its step there: about 40% of chapter 8's training
    step on this course's machine (`make bench-capstone`, the minor page faults it prints). With arrays up to
    mmap_threshold taken from the heap, and up to trim_threshold of free heap kept, a step reuses the pages of the
    last one. The cost: the process holds on to up to trim_threshold bytes it no longer uses.

    A no-op (said in the sentence returned) where the C library is not glibc: macOS and Windows allocators differ.
    """
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "allocator: not glibc, left as it is"
    libc = ctypes.CDLL(None)
    done = libc.mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold)) and libc.mallopt(_M_TRIM_THRESHOLD,
                                                                                     int(trim_threshold))
    if not done:
        return "allocator: glibc refused the setting, left as it is"
    return f"allocator: freed memory kept (arrays up to {mmap_threshold >> 20} MiB from the heap, " \
           f"up to {trim_threshold >> 20} MiB of free heap kept)"


def minor_page_faults() -> int:
    """This process's minor page faults so far (pages the OS had to map, and zero, on first touch)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
