"""`make bench-capstone`: the capstone's training step, the course's engine against torch (a measurement, not a test).

The model is chapter 8's (course.model.Config(): 30-character vocabulary, context 32, width 64, 4 heads, 2 blocks),
float32, trained on chapter 8's corpus with its recipe: AdamW in two groups, gradient clipping at 1.0. The engine
is the reference engine (course.reference.ch08_capstone.train); torch trains the same weights on the same batches
with its own building blocks (scaled_dot_product_attention, F.layer_norm, F.gelu, F.linear, F.cross_entropy), as
chapter 8's torch_train does. Both run on one thread (NumPy's BLAS and torch), in one process, alternating: a
warm-up of two steps, then the best of several runs of N steps each, in wall time. The last line reads
"capstone tokens/s: engine X, torch Y, ratio R" with R = torch / engine (tokens/s), so R = 1.5 means torch
trains 1.5 times as many tokens a second.

The process keeps the memory NumPy frees (course.threads.keep_freed_memory, as chapter 8's setup cell does): with
glibc's default the engine's step spends much of its time on page faults, which the header line counts;
--default-allocator measures that case.

--profile adds where the engine's time goes (cProfile of one run, grouped: the recording and backward driver,
matrix products, the elementwise rules...).

Usage: python -m autograde.bench.capstone [--repeats R] [--steps N] [--batch B] [--profile] [--default-allocator]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from typing import Callable

import numpy as np

from course.torch_capstone import torch_train  # torch's side, shared with course.gpu_engine


def best_of(run: Callable[[int], object], steps: int, repeats: int) -> float:
    """The fastest of `repeats` runs of `steps` steps, after a warm-up of two."""
    run(2)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(steps)
        times.append(time.perf_counter() - t0)
    return min(times)


GROUPS = (  # (label, substrings of a profiled function's file:name), first match wins
    ("matrix products", ("matmul", "MatMul", "einsum", "@")),
    ("GELU and erf", ("gelu", "GELU", "erf")),
    ("softmax and attention", ("softmax", "Softmax", "attention")),
    ("layer norm", ("layer_norm", "LayerNorm", "normalise")),
    ("cross-entropy", ("cross_entropy", "CrossEntropy")),
    ("optimiser and clipping", ("AdamW", "Optimizer", "clip", "update")),
    ("elementwise add, mul, div, sum, reshape", ("Add.", "Mul.", "Div.", "Sub.", "Sum.", "Mean.", "Reshape.",
                                                 "Transpose.", "Neg.", "Pow.", "Sqrt.", "Exp.", "Log.")),
)


def _qualnames() -> dict[tuple[str, int], str]:
    """(file, first line) -> Class.method for every method of the reference engine's classes."""
    import importlib
    import inspect

    from course import CHAPTERS

    out = {}
    for chapter in CHAPTERS:
        module = importlib.import_module(f"course.reference.{chapter}")
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                for attr in vars(cls).values():
                    code = getattr(getattr(attr, "__func__", attr), "__code__", None)
                    if code is not None:
                        out[(code.co_filename, code.co_firstlineno)] = code.co_qualname
    return out


def profile(run: Callable[[int], object], steps: int) -> list[tuple[str, float]]:
    """Where the engine's time goes: each group's share of the run's own (tottime) seconds."""
    prof = cProfile.Profile()
    prof.runcall(run, steps)
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    names = _qualnames()
    shares: dict[str, float] = {}
    for (file, line, name), (_, _, tottime, _, _) in stats.items():
        name = names.get((file, line), name)  # Class.method for the engine's rules (their methods are all forward)
        label = next((g for g, keys in GROUPS if any(k in name for k in keys)),
                     "NumPy elsewhere" if "numpy" in file or name.startswith("<method") or name.startswith("<built-in")
                     else "recording, backward driver and other Python")
        shares[label] = shares.get(label, 0.0) + tottime
    total = sum(shares.values())
    return sorted(((k, v / total) for k, v in shares.items()), key=lambda kv: -kv[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--default-allocator", action="store_true",
                        help="leave glibc's malloc as it is (freed arrays go back to the OS)")
    args = parser.parse_args(argv)
    if min(args.repeats, args.steps, args.batch) < 1:
        parser.error("--repeats, --steps and --batch must be positive")

    from course import text
    from course.model import Config, init_weights
    from course.reference.ch08_capstone import train
    from course.threads import fix_threads, keep_freed_memory, minor_page_faults

    config = Config()
    w32 = init_weights(config, seed=0, dtype=np.float32)
    train_ids, _ = text.split(text.encode(text.corpus()))

    def batches():
        return text.batches(train_ids, config.block, args.batch, seed=7)

    def engine(n: int):
        return train(w32, config.n_heads, batches(), n)

    def torch_run(n: int):
        return torch_train(w32, config, batches(), n)

    tokens = args.steps * args.batch * config.block
    threads = fix_threads(1)
    allocator = "allocator: glibc's default (or the platform's)" if args.default_allocator else keep_freed_memory()
    times = {"engine": [], "torch": []}
    for _ in range(2):  # alternate, so that a slow spell of the machine falls on both
        times["engine"].append(best_of(engine, args.steps, args.repeats))
        times["torch"].append(best_of(torch_run, args.steps, args.repeats))
    e, t = min(times["engine"]), min(times["torch"])
    faults = {}
    for name, run in (("engine", engine), ("torch", torch_run)):
        before = minor_page_faults()
        run(args.steps)
        faults[name] = (minor_page_faults() - before) / args.steps
    print(f"model: {config}; batch {args.batch} x {config.block} tokens, float32, threads: {threads}; {allocator}; "
          f"best of {2 * args.repeats} runs of {args.steps} steps after a warm-up")
    print(f"engine {e / args.steps * 1e3:.1f} ms a step, torch {t / args.steps * 1e3:.1f} ms a step; minor page faults "
          f"a step: engine {faults['engine']:,.0f}, torch {faults['torch']:,.0f}")
    if args.profile:
        print("where the engine's time goes (cProfile, own time):")
        for label, share in profile(engine, args.steps):
            print(f"    {label:44s} {share:6.1%}")
    print(f"capstone tokens/s: engine {tokens / e:,.0f}, torch {tokens / t:,.0f}, ratio {e / t:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
