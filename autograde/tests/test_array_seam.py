"""The engine's one array seam (course.array): NumPy by default, the very module; CuPy, with the names it lacks
filled in, under COURSE_ARRAY=cupy; grading always on NumPy.

Without a GPU, a stand-in `cupy` package (NumPy underneath, without errstate and frompyfunc, as CuPy is) shows that
every engine module takes its arrays from the seam and that the capstone trains through the shims, loss for loss
as on NumPy. The test on a real GPU is skipped where CuPy finds none."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograde import notebook as nbk
from autograde.paths import REPO, source_path
from course import CHAPTERS

ENGINE_CHAPTERS = [c for c in CHAPTERS if c != "ch01_chain_rule"]

FAKE_CUPY = '''
"""A stand-in for CuPy in the tests: NumPy's names, minus the two the engine uses that CuPy lacks."""
import numpy as _np

globals().update({k: getattr(_np, k) for k in dir(_np) if not k.startswith("__") and k not in ("errstate", "frompyfunc")})


def asnumpy(a):
    return _np.asarray(a)


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1


class cuda:
    runtime = _Runtime
'''

TRAIN = '''
import json, sys
import numpy
from course.array import np, ON_GPU
import course.reference.ch08_capstone as c8
from course import text
from course.model import Config, init_weights
import importlib, pkgutil, course.reference
modules = [importlib.import_module(f"course.reference.{m.name}") for m in pkgutil.iter_modules(course.reference.__path__)]
config = Config()
ids, _ = text.split(text.encode(text.corpus()))
out = {"on_gpu": ON_GPU, "np": np.__name__,
       "bound": sorted(m.__name__ for m in modules if getattr(m, "np", None) is np),
       "errstate_silent": isinstance(np.errstate(over="ignore").__enter__(), type(None)) if ON_GPU else None}
for dtype in ("float64", "float32"):
    losses, weights = c8.train(init_weights(config, seed=0, dtype=getattr(numpy, dtype)), config.n_heads,
                               text.batches(ids, config.block, 4, seed=7), 4)
    out[dtype] = [float(v) for v in losses]
    out[dtype + "_weight_type"] = type(next(iter(weights.values()))).__module__
print(json.dumps(out))
'''


def run(code: str, env_extra: dict[str, str], path_extra: list[str] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COURSE_ARRAY"}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([*path_extra, str(REPO)])
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def fake_cupy(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fake_cupy")
    (folder / "cupy").mkdir()
    (folder / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    return folder


def test_by_default_np_is_numpy_itself():
    done = run("import numpy\nfrom course.array import np, ON_GPU\nprint(np is numpy, ON_GPU)", {})
    assert done.stdout.split() == ["True", "False"], done.stderr


@pytest.mark.parametrize("value, expected", [
    ("tensorflow", "COURSE_ARRAY='tensorflow': expected one of numpy, cupy (unset means numpy)"),
    ("cupy", "COURSE_ARRAY=cupy, but CuPy is not installed"),
])
def test_a_bad_choice_is_refused_in_one_line_that_says_what_to_do(value, expected):
    if value == "cupy":
        try:
            import cupy  # noqa: F401
            pytest.skip("CuPy is installed here")
        except ImportError:
            pass
    done = run("import course.array", {"COURSE_ARRAY": value})
    assert done.returncode != 0 and expected in done.stderr.strip().splitlines()[-1], done.stderr


def test_every_engine_chapter_takes_np_from_the_seam_in_its_exported_setup():
    """The modules of course.reference come from these cells: each binds np from course.array, never numpy."""
    for chapter in ENGINE_CHAPTERS:
        exported = [c.source for c in nbk.read(source_path(chapter)).cells if c.cell_type == "code" and nbk.is_exported(c)]
        lines = [ln.strip() for src in exported for ln in src.splitlines()]
        assert "from course.array import np" in " ".join(lines), chapter
        assert not any(ln.startswith("import numpy as np") for ln in lines), chapter


def test_the_capstone_trains_through_the_seam_loss_for_loss_as_on_numpy(fake_cupy):
    on_numpy = run(TRAIN, {})
    on_fake = run(TRAIN, {"COURSE_ARRAY": "cupy"}, [str(fake_cupy)])
    assert on_numpy.returncode == 0, on_numpy.stderr[-3000:]
    assert on_fake.returncode == 0, on_fake.stderr[-3000:]
    a, b = json.loads(on_numpy.stdout), json.loads(on_fake.stdout)
    assert (a["on_gpu"], a["np"]) == (False, "numpy")
    assert (b["on_gpu"], b["np"]) == (True, "cupy_for_the_engine")
    assert b["errstate_silent"] is True
    # every module of the engine bound the seam's np: none kept NumPy for itself
    engine_modules = {f"course.reference.{c}" for c in ENGINE_CHAPTERS}
    assert engine_modules <= set(b["bound"]), engine_modules - set(b["bound"])
    # NumPy underneath: the same arithmetic, so the same losses, float64 (erf through the host) and float32
    assert b["float64"] == a["float64"] and b["float32"] == a["float32"], (a, b)


def test_grading_kernels_run_on_numpy_whatever_the_graders_shell_says(monkeypatch, tmp_path):
    from autograde.grader.containment import kernel_env

    monkeypatch.setenv("COURSE_ARRAY", "cupy")
    assert kernel_env(tmp_path, "bwrap")["COURSE_ARRAY"] == "numpy"


def _gpu_present() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU"
        return False


@pytest.mark.skipif(not _gpu_present(), reason="needs CuPy and an NVIDIA GPU")
def test_on_a_gpu_the_capstone_trains_4_steps_with_numpys_losses():
    """Tolerance: float64 to 1e-9 relative (the GPU sums in another order), float32 to 1e-4."""
    on_numpy, on_gpu = run(TRAIN, {}), run(TRAIN, {"COURSE_ARRAY": "cupy"})
    assert on_gpu.returncode == 0, on_gpu.stderr[-3000:]
    a, b = json.loads(on_numpy.stdout), json.loads(on_gpu.stdout)
    assert b["on_gpu"] and b["float64_weight_type"].startswith("cupy")
    for dtype, rtol in (("float64", 1e-9), ("float32", 1e-4)):
        for x, y in zip(a[dtype], b[dtype]):
            assert abs(x - y) <= rtol * abs(x), (dtype, a[dtype], b[dtype])


def test_gpu_engine_checks_its_code_on_numpy_and_prints_the_recorded_figures_without_a_gpu():
    done = run("from course.gpu_engine import main\nmain(['--cpu-check'])", {})
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "array module: numpy" in out and "capstone: what capstone" in out, out
    for plan in ("none", "sqrt(N)", "optimal within sqrt(N)'s peak"):
        assert f"    {plan}: pool peak MiB" in out, out
    if not _gpu_present():
        from course.gpu_engine import recorded, run_or_recorded

        said = run_or_recorded()
        assert said.startswith("no GPU here") and "source issue 35" in said
        assert all("source" in row for row in recorded()["cited"])   # nothing cited passes for a measurement
