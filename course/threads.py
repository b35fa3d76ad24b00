"""Fixing the number of threads NumPy's BLAS and torch use, so that timings compare like with like.

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
