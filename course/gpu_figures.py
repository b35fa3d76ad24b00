"""The GPU figures of chapters 6 and 7: `python -m course.gpu_figures [--out FILE]` measures them (on a GPU);
`recorded()` reads, and `report()` prints, the figures the course measured on one (course/gpu_figures.json).

On a machine with a CUDA GPU it measures, with torch's allocator statistics and CUDA events (course.torch_memory's
measure_torch: peak above the start with the parameters' gradients included, the fastest of several timed steps
after a warm-up; forward and backward, no optimiser step), on a stack of pre-norm transformer blocks
(course.torch_memory.Block: attention written out, so its S x S scores are kept) at two sizes:

- checkpointing: none, the sqrt(N) plan, every block, selective (keep the matrix products), offloading (save_on_cpu);
  peak memory and step time against no checkpointing (chapter 7's "saves 5-10x", "+33% compute");
- precision: float32, float32 with TF32 matrix products, bf16 autocast, fp16 autocast with GradScaler's scaled loss
  (chapter 6's "mixed precision doubles throughput");
- forward alone (no_grad) against forward and backward (the "training costs 1.3x inference" claim).

Without a GPU it runs the same code at a tiny size on the CPU (to check that it works; the figures mean nothing
there). The figures are printed and written as JSON with the device, torch's version and the date. A notebook
that runs without a GPU prints the recorded ones: `print(report())`.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import time
from pathlib import Path
from typing import Any, Callable

import torch

from course.torch_memory import DEVICE, Block, measure_torch, offloaded, run_segments, selective

CUDA = DEVICE.type == "cuda"

SIZES = {   # name: (blocks, width, heads, sequence, batch)
    "GPT-2-small shape": (12, 768, 12, 1024, 8),
    "small (chapter 7's notebook)": (8, 64, 4, 64, 8),
} if CUDA else {"tiny (CPU check)": (2, 16, 2, 8, 1)}


def sqrt_plan(n: int) -> list[tuple[int, int]]:
    """About sqrt(n) segments of about sqrt(n) blocks, every one checkpointed, as (start, stop) pairs. Not chapter
    7's sqrt_plan, which a student writes (its reference is not in chapter 7's edition) and which leaves the last
    segment unwrapped, as torch's checkpoint_sequential does."""
    size = max(1, round(math.sqrt(n)))
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def stack(blocks: int, width: int, heads: int, seq: int, batch: int) -> tuple[list[Block], torch.Tensor, list]:
    generator = torch.Generator().manual_seed(0)
    layers = [Block(width, heads, generator) for _ in range(blocks)]
    x = torch.randn(batch, seq, width, generator=generator).to(DEVICE)
    return layers, x, [p for b in layers for p in b.params]


def measure(forward: Callable[[], torch.Tensor], params: list, repeats: int) -> dict[str, float]:
    r = measure_torch(forward, params, repeats=repeats)
    return {"peak_MiB": r["peak"] / 2**20, "held_MiB": r["held"] / 2**20, "ms": 1e3 * r["time"]}


def forward_only_ms(forward: Callable[[], torch.Tensor], repeats: int) -> float:
    """The fastest of `repeats` forward passes under no_grad, after a warm-up."""
    times = []
    with torch.no_grad():
        for i in range(repeats + 1):
            if CUDA:
                torch.cuda.synchronize()
            begin = time.perf_counter()
            forward()
            if CUDA:
                torch.cuda.synchronize()
            if i:
                times.append(time.perf_counter() - begin)
    return 1e3 * min(times)


def run(repeats: int) -> dict[str, Any]:
    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if CUDA else platform.processor() or "cpu",
        "torch": torch.__version__, "date": datetime.date.today().isoformat(),
        "method": "course.torch_memory.measure_torch: forward and backward, no optimiser step; peak above the "
                  f"start, gradients included; fastest of {repeats} after one warm-up",
        "models": {}}
    for name, (n, width, heads, seq, batch) in SIZES.items():
        layers, x, params = stack(n, width, heads, seq, batch)
        loss = lambda h: h.float().pow(2).mean()   # noqa: E731
        plain = lambda: loss(run_segments(layers, x))   # noqa: E731
        model: dict[str, Any] = {"blocks": n, "width": width, "heads": heads, "sequence": seq, "batch": batch,
                                 "parameters": sum(p.numel() for p in params)}
        torch.backends.cuda.matmul.allow_tf32 = False
        every = [(i, i + 1) for i in range(n)]
        checkpointing = {
            "none": plain,
            f"sqrt(N): {len(sqrt_plan(n))} segments": lambda: loss(run_segments(layers, x, sqrt_plan(n))),
            "every block": lambda: loss(run_segments(layers, x, every)),
            "every block, selective (keep products)": lambda: loss(run_segments(layers, x, every,
                                                                                context_fn=selective())),
            "save_on_cpu (offloading)": offloaded(plain),
        }
        model["checkpointing"] = {k: measure(f, params, repeats) for k, f in checkpointing.items()}
        model["forward_only_ms"] = forward_only_ms(plain, repeats)

        def autocast(dtype: torch.dtype, scale: float = 1.0) -> Callable[[], torch.Tensor]:
            def forward() -> torch.Tensor:
                with torch.autocast(DEVICE.type, dtype=dtype):
                    return loss(run_segments(layers, x)) * scale
            return forward

        precision = {"float32": plain}
        if CUDA:
            precision["float32, TF32 products"] = plain
        precision["bf16 autocast"] = autocast(torch.bfloat16)
        if CUDA:   # GradScaler's scaled loss: the multiplication by 2**16 is all that it adds to forward/backward
            precision["fp16 autocast, loss x 2**16"] = autocast(torch.float16, 2.0**16)
        model["precision"] = {}
        for k, f in precision.items():
            torch.backends.cuda.matmul.allow_tf32 = "TF32" in k
            model["precision"][k] = measure(f, params, repeats)
        torch.backends.cuda.matmul.allow_tf32 = False
        results["models"][name] = model
        del layers, x, params
        if CUDA:
            torch.cuda.empty_cache()
    return results


RECORDED = Path(__file__).with_name("gpu_figures.json")


def recorded() -> dict[str, Any]:
    """The figures the course measured on a GPU with this module (written by `--out`, kept in the package)."""
    return json.loads(RECORDED.read_text())


def report(results: dict[str, Any] | None = None) -> str:
    """The figures as a table (default: the recorded ones), with each variant's ratio to the plain float32 step."""
    results = recorded() if results is None else results
    lines = [f"device: {results['device']}; torch {results['torch']}; {results['date']} (python -m course.gpu_figures)",
             results["method"]]
    for name, m in results["models"].items():
        lines.append(f"\n{name}: {m['blocks']} blocks, width {m['width']}, {m['heads']} heads, sequence "
                     f"{m['sequence']}, batch {m['batch']}, {m['parameters']:,} parameters")
        base = m["checkpointing"]["none"]
        for part in ("checkpointing", "precision"):
            lines.append(f"  {part}:")
            ref = base if part == "checkpointing" else m["precision"]["float32"]
            for k, r in m[part].items():
                lines.append(f"    {k:40s} peak {r['peak_MiB']:9.1f} MiB = {r['peak_MiB'] / ref['peak_MiB']:4.2f}x, "
                             f"{r['ms']:8.2f} ms = {r['ms'] / ref['ms']:4.2f}x {part == 'precision' and 'float32' or 'none'}")
        lines.append(f"  forward alone (no_grad) {m['forward_only_ms']:.2f} ms; forward and backward "
                     f"{base['ms']:.2f} ms = {base['ms'] / m['forward_only_ms']:.2f}x forward")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the figures as JSON to this file")
    parser.add_argument("--repeats", type=int, default=5, help="timed steps per figure, after one warm-up")
    args = parser.parse_args()
    torch.manual_seed(0)
    results = run(args.repeats)
    print(report(results), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
