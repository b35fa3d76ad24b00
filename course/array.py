"""The engine's array module, chosen in one place: NumPy, or CuPy on an NVIDIA GPU.

Every module of the engine (course.reference.*, from the chapters' setup cells) and every chapter notebook
binds `np` here: `from course.array import np`. By default `np` *is* NumPy, the very module, so nothing costs
more and nothing changes. With the environment variable COURSE_ARRAY=cupy, set before Python starts
(`COURSE_ARRAY=cupy python -m course.gpu_engine`), `np` is CuPy with the few names the engine uses that CuPy lacks
filled in (cupy_module below), and the same engine code runs on the GPU: the course's, and a student's own engine as
`make own-engine` assembles it (its `import numpy` becomes this module's np). The notebooks themselves stay on
NumPy: their test cells compare with torch on the CPU.

Why an environment variable, and not a `use_gpu()` call: the choice has to be made once, before any module binds
`np` and before any array exists. Switched in a running notebook, the modules imported earlier would keep NumPy
and the arrays already made would stay in host memory, and the first operation mixing the two would fail far
from the switch. Read once at import, the variable gives every module the same array module, and a process
(a notebook kernel, `python -m course.gpu_engine`) is on the GPU or not, from its start.

Grading never uses it: the grading command runs every kernel with COURSE_ARRAY=numpy, on the CPU.

Install CuPy with the optional extra: `pip install -e ".[gpu]"` (CuPy's wheel for CUDA 12), or on Colab, where
CuPy is preinstalled, nothing.
"""
from __future__ import annotations

import contextlib
import math
import os
import types
from typing import Any, Callable

import numpy

CHOICES = ("numpy", "cupy")


class ArrayModuleError(RuntimeError):
    """COURSE_ARRAY names a module this machine cannot provide."""


def _errstate(**_: Any) -> contextlib.AbstractContextManager:
    """CuPy has no floating-point error reporting (a GPU kernel never warns on overflow): nothing to silence."""
    return contextlib.nullcontext()


def _frompyfunc(cupy: Any) -> Callable[..., Any]:
    """np.frompyfunc for CuPy, which has none: math.erf becomes CuPy's own erf kernel (the only use in the
    engine, chapter 8's erf in float64); any other function runs elementwise on the host, and its result comes
    back to the device (correct, and slow: a copy each way)."""

    def frompyfunc(func: Callable[..., Any], nin: int, nout: int) -> Callable[..., Any]:
        if func is math.erf and nin == 1 and nout == 1:
            try:
                from cupyx.scipy.special import erf
            except ImportError:
                pass
            else:
                return erf
        on_host = numpy.frompyfunc(func, nin, nout)

        def on_device(*args: Any) -> Any:
            out = on_host(*(cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in args))
            return cupy.asarray(numpy.asarray(out, dtype=numpy.float64))

        return on_device

    return frompyfunc


def _scatter_ufunc(cupy: Any, ufunc: Any) -> Any:
    """cupy.add with an `at` method where this CuPy's has none (cupyx.scatter_add: unbuffered, repeated indices
    accumulate, as numpy.add.at does)."""
    if hasattr(ufunc, "at"):
        return ufunc

    class WithAt:
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return ufunc(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(ufunc, name)

        @staticmethod
        def at(a: Any, indices: Any, b: Any = None) -> None:
            import cupyx

            cupyx.scatter_add(a, indices, b)

    return WithAt()


def cupy_module(cupy: Any) -> types.ModuleType:
    """A module with CuPy's names and the shims the engine needs: what `np` is under COURSE_ARRAY=cupy."""
    module = types.ModuleType("cupy_for_the_engine", "CuPy, with the names the course's engine uses filled in")
    module.__dict__.update({k: v for k, v in vars(cupy).items() if not k.startswith("__")})
    if not hasattr(cupy, "errstate"):
        module.errstate = _errstate
    if not hasattr(cupy, "frompyfunc"):
        module.frompyfunc = _frompyfunc(cupy)
    module.add = _scatter_ufunc(cupy, cupy.add)          # cupy.add itself where it has `at`
    return module


def _select(name: str) -> Any:
    if name not in CHOICES:
        raise ArrayModuleError(f"COURSE_ARRAY={name!r}: expected one of {', '.join(CHOICES)} (unset means numpy)")
    if name == "numpy":
        return numpy
    try:
        import cupy
    except ImportError as exc:
        raise ArrayModuleError(f"COURSE_ARRAY=cupy, but CuPy is not installed ({exc}): pip install -e \".[gpu]\" "
                               f"on a machine with an NVIDIA GPU, or unset COURSE_ARRAY") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDA's errors come in several classes; each means "no GPU here"
        raise ArrayModuleError(f"COURSE_ARRAY=cupy, but CuPy finds no GPU ({type(exc).__name__}: {exc})") from None
    if count < 1:
        raise ArrayModuleError("COURSE_ARRAY=cupy, but CuPy finds no GPU")
    return cupy_module(cupy)


NAME = os.environ.get("COURSE_ARRAY", "numpy").strip().lower() or "numpy"
np = _select(NAME)
"""The engine's array module: numpy itself unless COURSE_ARRAY=cupy."""

ON_GPU = np is not numpy


def synchronize() -> None:
    """Wait for the GPU to finish the work queued so far (for timing); nothing to wait for under NumPy."""
    if ON_GPU:
        np.cuda.get_current_stream().synchronize()


class PoolMeter:
    """Bytes of GPU memory the engine's arrays hold now, and the most they held since reset_peak(): CuPy's memory
    pool, followed through a memory hook on every allocation and free. Under NumPy it reads 0 (see chapter 4's
    saved-bytes meter for a count that works everywhere)."""

    def __init__(self) -> None:
        self.reset_peak()
        self._hook = None
        if ON_GPU:
            meter = self

            class Hook(np.cuda.memory_hook.MemoryHook):
                name = "course_pool_meter"

                # CuPy calls these with keywords (device_id, size, mem_size, mem_ptr, pmem_id): read mem_size, the
                # size the pool hands out, by name, or by its position where an older CuPy passes positions
                def malloc_postprocess(self, *args: Any, **kwargs: Any) -> None:
                    meter.live += int(kwargs["mem_size"] if "mem_size" in kwargs else args[2])
                    meter.peak = max(meter.peak, meter.live)

                def free_postprocess(self, *args: Any, **kwargs: Any) -> None:
                    meter.live -= int(kwargs["mem_size"] if "mem_size" in kwargs else args[1])

            self._hook = Hook()

    def __enter__(self) -> "PoolMeter":
        if self._hook is not None:
            self._hook.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._hook is not None:
            self._hook.__exit__(*exc)

    def reset_peak(self) -> None:
        """Read the pool again, and start a new peak from what it holds now."""
        self.live = self.peak = int(np.get_default_memory_pool().used_bytes()) if ON_GPU else 0
