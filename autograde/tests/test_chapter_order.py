"""Chapters patch the engine as they load (chapter 5's grad modes, chapter 6's autocast, chapter 9's nodes that keep
their inputs). Each wraps the `Function.apply` installed before it, so every loaded chapter keeps its behaviour
whatever order a process imports them in: a test worker, a notebook that imports a later chapter, own-engine.

Before this test, chapter 9 wrapped chapter 5's apply by name. A pytest worker that imported chapter 9 before the
capstone's float16 tests ran them without autocast, and failed them only in that order."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograde.paths import REPO

from .test_array_seam import ENGINE_CHAPTERS

CHECK = '''
import importlib, json, sys
import numpy
import torch
for name in sys.argv[1:]:
    importlib.import_module(f"course.reference.{name}")
from course.reference.ch02_tape import Tensor
from course.reference.ch04_accumulation import saved_bytes
from course.reference.ch05_grad_modes import no_grad
import course.reference.ch06_loss_scaling as ch6
import course.reference.ch09_higher_order as ch9

out = {}
before = saved_bytes()
a = Tensor(numpy.linspace(-1.0, 1.0, 6).reshape(2, 3), requires_grad=True)
kept = (a.exp() * a).sum()                                       # saves exp(a), a new array
out["meter counts"] = saved_bytes() > before                      # chapter 4: the saved-bytes meter
with no_grad():
    out["no_grad records nothing"] = not (a * a).requires_grad      # chapter 5: grad modes
x = Tensor(numpy.ones((2, 3), numpy.float32), requires_grad=True)
w = Tensor(numpy.ones((3, 2), numpy.float32), requires_grad=True)
with ch6.autocast(numpy.float16):
    y = x @ w
y.sum().backward()
out["autocast product dtype"] = str(y.dtype)                       # chapter 6: autocast, float16
out["leaf gradient dtype"] = str(x.grad.dtype)                     # gradients keep their inputs' dtypes
t_value = numpy.array([0.5, -2.0, 3.0])
t = Tensor(t_value, requires_grad=True)
(g,) = ch9.grad((t * t * t).sum(), t, create_graph=True)            # chapter 9: a gradient with history
(h,) = ch9.grad(g.sum(), t)
tt = torch.tensor(t_value, requires_grad=True)
(tg,) = torch.autograd.grad((tt ** 3).sum(), tt, create_graph=True)
(th,) = torch.autograd.grad(tg.sum(), tt)
out["second derivative error"] = float(numpy.abs(h.data - th.numpy()).max())
print(json.dumps(out))
'''

ORDERS = [
    ("ch06_loss_scaling", "ch09_higher_order"),
    ("ch09_higher_order", "ch06_loss_scaling"),
    ("ch09_higher_order", "ch08_capstone"),
    ("ch09_higher_order", "ch07_checkpointing", "ch08_capstone"),
    ENGINE_CHAPTERS,                                    # the course's order
    ENGINE_CHAPTERS[::-1],                              # each chapter before the ones it builds on
]


@pytest.mark.parametrize("order", ORDERS, ids=["-then-".join(c[:4] for c in o) for o in ORDERS])
def test_every_loaded_chapter_keeps_its_engine_patch_in_any_import_order(order):
    run = subprocess.run([sys.executable, "-c", CHECK, *order], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["meter counts"] and out["no_grad records nothing"], out
    assert out["autocast product dtype"] == "float16", out
    assert out["leaf gradient dtype"] == "float32", out
    assert out["second derivative error"] < 1e-12, out
