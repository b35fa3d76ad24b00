"""The course's engine on a GPU: `python -m course.gpu_engine [--out FILE]` measures it there; `report()` prints
the figures, measured here on a GPU or recorded (course/gpu_engine.json).

The engine is the one of chapters 2-8, unchanged: under COURSE_ARRAY=cupy its modules take CuPy in NumPy's place
(course.array). On a machine with CuPy and an NVIDIA GPU this module runs itself in such a process and measures:

- capstone: chapter 8's model at a real size (width 512, 6 blocks, 8 heads, context 256, batch 32), trained in
  float32 by the engine on the GPU and by torch's eager building blocks on the same GPU (course.torch_capstone):
  tokens a second, each the fastest of several runs of a few steps after a warm-up, and their ratio;
- plans: chapter 7's checkpointing plans (none, sqrt(N), and the optimal plan within sqrt(N)'s peak, which reruns fewer layers) on a
  chain of 16 layers of width 4096, batch 512, float32: the peak of the GPU memory the engine's arrays hold during
  one training step (CuPy's memory pool, through course.array.PoolMeter), beside chapter 7's saved-bytes model.

Without a GPU it runs the same code at a tiny size on the CPU, with NumPy (`--cpu-check`: to check that it works;
its figures mean nothing), and `report()` prints the recorded figures. In course/gpu_engine.json a row with a
"source" key is cited (measured elsewhere, by what "source" names); the others were written by this module.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

RECORDED = Path(__file__).with_name("gpu_engine.json")

SIZES = {  # name: (Config fields, batch, steps a run)
    "real": ({"block": 256, "d_model": 512, "n_heads": 8, "n_layers": 6, "d_ff": 2048}, 32, 3),
    "tiny": ({"block": 16, "d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64}, 4, 2),
}
CHAIN = {"real": ([4096] * 17, 512), "tiny": ([32] * 9, 8)}


def gpu_present() -> bool:
    """CuPy is installed and finds an NVIDIA GPU."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: each means "no GPU here"
        return False


def _best_rate(run: Callable[[int], Any], steps: int, tokens_a_step: int, repeats: int = 3) -> float:
    """Tokens a second: the fastest of `repeats` runs of `steps` steps, after a warm-up of one step."""
    from course.array import synchronize

    run(1)
    synchronize()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        synchronize()
        best = min(best, time.perf_counter() - start)
    return steps * tokens_a_step / best


def measure_capstone(size: str) -> dict[str, Any]:
    """The engine (on the array module course.array chose) and torch (on the GPU if there is one) train chapter 8's
    model at this size in float32: tokens a second each."""
    import numpy

    import torch

    from course import text
    from course.model import Config, init_weights
    from course.reference.ch08_capstone import train
    from course.torch_capstone import torch_train

    fields, batch, steps = SIZES[size]
    config = Config(**fields)
    weights = init_weights(config, seed=0, dtype=numpy.float32)
    ids, _ = text.split(text.encode(text.corpus()))

    def batches():
        return text.batches(ids, config.block, batch, seed=7)

    device = "cuda" if torch.cuda.is_available() else "cpu"

    def torch_run(n: int) -> None:
        torch_train(weights, config, batches(), n, device=device)
        if device == "cuda":
            torch.cuda.synchronize()

    tokens = batch * config.block
    engine = _best_rate(lambda n: train(weights, config.n_heads, batches(), n), steps, tokens)
    reference = _best_rate(torch_run, steps, tokens)
    return {"what": f"capstone, width {config.d_model}, {config.n_layers} blocks, {config.n_heads} heads, context "
                    f"{config.block}, batch {batch}, float32: tokens/s", "engine": round(engine),
            "torch": round(reference), "torch / engine": round(reference / engine, 2)}


def measure_plans(size: str) -> dict[str, Any]:
    """Peak GPU memory of the engine's arrays in one training step of chapter 7's chain, for each plan, beside
    chapter 7's saved-bytes model of the same plan."""
    import numpy

    from course.array import PoolMeter, np
    from course.reference.ch03_vjp_rules import Tensor, cross_entropy
    from course.reference.ch07_checkpointing import (measure_chain_costs, mlp_chain, optimal_plan, peak_saved_bytes,
                                                     plan_peak, run_chain, sqrt_plan)

    sizes, batch = CHAIN[size]
    layers = mlp_chain(sizes, seed=0)
    x = Tensor(np.asarray(numpy.random.default_rng(0).normal(size=(batch, sizes[0])), dtype=np.float32))
    y = np.asarray(numpy.arange(batch) % sizes[-1])
    costs = measure_chain_costs(layers, x, y)
    n = len(layers)
    sqrt_peak, _ = plan_peak(costs, sqrt_plan(n))
    plans = {"none": [], "sqrt(N)": sqrt_plan(n), "optimal within sqrt(N)'s peak": optimal_plan(costs, sqrt_peak)}
    rows = {}
    for name, plan in plans.items():
        for _, weights in layers:                          # each plan's step starts with no gradients
            for tensor in weights:
                tensor.grad = None

        def step(plan: list = plan) -> None:
            loss = cross_entropy(run_chain(layers, x, plan), y)
            loss.backward(gradient=None)                   # the scalar loss: a seed of 1
            float(loss.item())

        with PoolMeter() as meter:
            meter.reset_peak()
            start = meter.live
            saved = peak_saved_bytes(step)
        model_peak, recomputed = plan_peak(costs, plan)
        rows[name] = {"pool peak MiB": round((meter.peak - start) / 2 ** 20, 3),
                      "meter peak MiB": round(saved / 2 ** 20, 3),
                      "saved-bytes model MiB": round(model_peak / 2 ** 20, 3), "layers rerun": recomputed}
    return {"what": f"chapter 7's chain: {n} layers of width {sizes[1]}, batch {batch}, float32; one training step",
            "plans": rows}


PARTS = ("capstone", "plans")


def _parts(part: str) -> tuple[str, ...]:
    return PARTS if part == "all" else (part,)


def _on_cupy(args: list[str], **run: Any) -> subprocess.CompletedProcess:
    """`python -m course.gpu_engine ARGS` in a process of its own with COURSE_ARRAY=cupy (the seam reads it once)."""
    return subprocess.run([sys.executable, "-m", "course.gpu_engine", *args],
                          env={**os.environ, "COURSE_ARRAY": "cupy"}, **run)


def measure(size: str, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    import numpy

    from course.array import NAME, ON_GPU, np

    header: dict[str, Any] = {"array module": NAME, "numpy": numpy.__version__, "date": time.strftime("%Y-%m-%d")}
    if ON_GPU:
        header["cupy"] = np.__version__
        header["device"] = np.cuda.runtime.getDeviceProperties(0)["name"].decode()
    if "capstone" in parts:
        header["capstone"] = measure_capstone(size)
    if "plans" in parts:
        header["plans"] = measure_plans(size)
    return header


def recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_text())


def report(figures: dict[str, Any] | None = None, parts: tuple[str, ...] = PARTS) -> str:
    """The figures as lines of text (these, or the recorded ones): the header, the parts asked for, what is cited."""
    figures = figures if figures is not None else recorded()
    lines = [f"{k}: {v}" for k, v in figures.items() if not isinstance(v, (dict, list))]
    for key in (*parts, "cited"):
        part = figures.get(key)
        if part is None:
            if key != "cited":
                lines.append(f"{key}: not measured on a GPU yet")
            continue
        rows = part if isinstance(part, list) else [part]
        for row in rows:
            lines.append(f"{key}: " + "; ".join(f"{k} {v}" for k, v in row.items() if not isinstance(v, dict)))
            for name, sub in (row.get("plans") or {}).items():
                lines.append(f"    {name}: " + ", ".join(f"{k} {v}" for k, v in sub.items()))
    return "\n".join(lines)


def run_or_recorded(part: str = "all", timeout: float = 900) -> str:
    """For a notebook: measure `part` (capstone, plans or all) on this machine's GPU where CuPy finds one (in a
    process of its own, on CuPy), else the recorded figures, said as such."""
    parts = _parts(part)
    if not gpu_present():
        return "no GPU here (CuPy and an NVIDIA GPU are needed): the recorded figures\n" + report(parts=parts)
    done = _on_cupy(["--json", "--part", part], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"the GPU run failed ({why}): the recorded figures\n" + report(parts=parts)
    return "measured now, on this machine's GPU\n" + report(json.loads(done.stdout), parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the figures here as JSON (course/gpu_engine.json records them)")
    parser.add_argument("--cpu-check", action="store_true", help="no GPU: run the tiny size on NumPy, to check the code")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--part", choices=("all", *PARTS), default="all", help="measure one part only")
    args = parser.parse_args(argv)
    from course.array import ON_GPU

    if not ON_GPU and not args.cpu_check:
        if not gpu_present():
            print("course.gpu_engine: no GPU here (CuPy and an NVIDIA GPU are needed); --cpu-check runs the code on "
                  "NumPy at a tiny size. The recorded figures:\n" + report())
            return 0
        return _on_cupy(argv if argv is not None else sys.argv[1:]).returncode
    parts = _parts(args.part)
    figures = measure("real" if ON_GPU else "tiny", parts)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures) if args.json else report(figures, parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
