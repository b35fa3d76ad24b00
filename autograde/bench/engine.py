"""`make bench-engine`: the reference engine against torch on CPU, one MLP training step (a measurement, not a test).

The model: batch 256, 784 -> 256 (ReLU) -> 10, cross-entropy, float32, the
same initial weights in both. The engine is the reference engine of chapter 5
(whose rules skip the gradient of an input that needs none, such as X) or,
with --engine ch03, chapter 3's (every rule computes every input's gradient).
NumPy's BLAS and torch use the same number of threads (--threads, default 1:
on a shared machine more threads make the timings noisy). For each engine: forward time, backward time
(after a fresh forward), a full SGD step (forward, backward, update, zero
grad), the engine's ratio to torch for each, backward / forward within
each engine, and the minor page faults of a step (memory that the allocator
returned to the OS and touches again: the cost of large float64 arrays). Reports the fastest of several repeats after a warm-up (the run
least disturbed by other work on the machine), and the median beside it.

Usage: python -m autograde.bench.engine [--repeats N] [--batch B] [--dtype float32|float64] [--engine ch03|ch05]
                                       [--threads T] [--keep-freed-memory]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable

import numpy as np

LR = 0.1


def timings(fn: Callable[[], object], repeats: int, setup: Callable[[], object] = lambda: None) -> list[float]:
    """Wall times of fn() over repeats runs (setup() runs before each, untimed), after one warm-up."""
    setup()
    fn()
    times = []
    for _ in range(repeats):
        setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def make_problem(batch: int, sizes: tuple[int, ...], dtype: str, seed: int = 0):
    """Random inputs, integer targets and He-initialised weights (as NumPy arrays)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(batch, sizes[0])).astype(dtype)
    y = rng.integers(0, sizes[-1], size=batch)
    weights = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        weights.append((rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(dtype))
        weights.append(np.zeros(fan_out, dtype=dtype))
    return X, y, weights


def measure(params: list, compute_loss: Callable[[], object], update: Callable[[], None],
            repeats: int) -> dict[str, list[float]]:
    """Forward, backward (after an untimed forward) and full-step timings; same code for both engines."""
    state: dict[str, object] = {}

    def forward():
        state["loss"] = compute_loss()

    def zero_grad():
        for p in params:
            p.grad = None

    def backward():
        state["loss"].backward()

    def step():
        zero_grad()
        forward()
        backward()
        update()

    result = {
        "forward": timings(forward, repeats),
        "backward": timings(backward, repeats, setup=lambda: (zero_grad(), forward())),
        "step": timings(step, repeats),
    }
    from course.threads import minor_page_faults

    before = minor_page_faults()
    for _ in range(repeats):
        step()
    result["faults"] = [(minor_page_faults() - before) / repeats]
    return result


def bench_engine(X, y, weights, repeats: int, engine: str = "ch05") -> dict[str, list[float]]:
    """Timings of the course's reference engine: chapters 2-3, or with chapter 5's rules registered on top."""
    import importlib

    importlib.import_module("course.reference.ch05_grad_modes" if engine == "ch05" else "course.reference.ch03_vjp_rules")
    from course.reference.ch03_vjp_rules import Tensor, cross_entropy

    params = [Tensor(w.copy(), requires_grad=True) for w in weights]
    W1, b1, W2, b2 = params
    Xt = Tensor(X)

    def update():
        for p in params:
            p.data -= LR * p.grad.data

    return measure(params, lambda: cross_entropy((Xt @ W1 + b1).relu() @ W2 + b2, y), update, repeats)


def bench_torch(X, y, weights, repeats: int) -> dict[str, list[float]]:
    """The same timings with torch (CPU, the thread count main set)."""
    import torch

    params = [torch.tensor(w, requires_grad=True) for w in weights]
    W1, b1, W2, b2 = params
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    def update():
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad

    return measure(params, lambda: torch.nn.functional.cross_entropy(torch.relu(Xt @ W1 + b1) @ W2 + b2, yt),
                   update, repeats)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--engine", default="ch05", choices=["ch03", "ch05"],
                        help="the reference engine of chapter 3, or chapter 5's (skips unneeded gradients)")
    parser.add_argument("--threads", type=int, default=1, help="threads for NumPy's BLAS and for torch (default 1)")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="keep freed memory in the process (course.threads.keep_freed_memory, as chapter 8 does)")
    args = parser.parse_args(argv)
    import torch

    from course.threads import fix_threads

    threads = fix_threads(args.threads)
    if args.keep_freed_memory:
        from course.threads import keep_freed_memory

        threads += "; " + keep_freed_memory()

    sizes = (784, 256, 10)
    X, y, weights = make_problem(args.batch, sizes, args.dtype)
    engine = bench_engine(X, y, weights, args.repeats, args.engine)
    reference = bench_torch(X, y, weights, args.repeats)
    print(f"MLP {args.batch} x {' -> '.join(map(str, sizes))}, {args.dtype}, fastest (median) of {args.repeats} runs "
          f"(engine of {args.engine}; NumPy {np.__version__}, torch {torch.__version__}; threads: {threads})")
    print(f"{'':10} {'engine ms':>17} {'torch ms':>17} {'engine/torch':>13}")
    best = {name: {k: min(v) for k, v in result.items()} for name, result in (("engine", engine), ("torch", reference))}
    for key in ("forward", "backward", "step"):
        cols = [f"{1e3 * min(r[key]):7.2f} ({1e3 * statistics.median(r[key]):7.2f})" for r in (engine, reference)]
        print(f"{key:10} {cols[0]:>17} {cols[1]:>17} {best['engine'][key] / best['torch'][key]:12.2f}x")
    print(f"{'bwd/fwd':10} {best['engine']['backward'] / best['engine']['forward']:17.2f} "
          f"{best['torch']['backward'] / best['torch']['forward']:17.2f}")
    # memory the allocator hands back to the OS and faults in again on the next step (large float64 arrays):
    print(f"{'faults':10} {best['engine']['faults']:17.0f} {best['torch']['faults']:17.0f}   minor page faults per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
