"""The GPU figures of chapters 6 and 7: `python -m course.gpu_figures [--out FILE]` measures them (on a GPU);
`recorded()` reads, and `report()` prints, the figures the course measured on one (course/gpu_figures.json).

On a machine with a CUDA GPU it measures, with torch's allocator statistics and CUDA events (course.torch_memory's
measure_torch: peak above the start with the parameters' gradients included, the fastest of several timed steps
after a warm-up; forward and backward, no optimiser step), stacks of pre-norm transformer blocks at two sizes, with
two kinds of attention at GPT-2 small's size:

- written out (course.torch_memory.Block): its S x S scores and their softmax are kept for backward;
- fused (FusedBlock: torch.nn.functional.scaled_dot_product_attention, as real code and chapter 8's reference use):
  it keeps q, k, v, the output and one logsumexp per row, no S x S tensor.

For each stack:

- checkpointing: none, chapter 7's sqrt(N) plan (the last segment not checkpointed), every block, selective (keep
  the matrix products), offloading (save_on_cpu); peak memory and step time against no checkpointing (chapter 7's
  "saves 5-10x", "+33% compute");
- precision: float32, float32 with TF32 matrix products, bf16 autocast (also with every block checkpointed), fp16
  autocast with GradScaler's scaled loss (chapter 6's "mixed precision doubles throughput");
- forward alone (no_grad) against forward and backward (the "training costs 1.3x inference" claim).

The small stack's steps are so short that kernel launches dominate them, and their times vary from run to run (the
same float32 step was once recorded at 12.6 ms and 7.8 ms in one run), so only its memory is recorded.

Without a GPU it runs the same code at a tiny size on the CPU (to check that it works; the figures mean nothing
there). The figures are printed and written as JSON with the device, torch's version and the date. A notebook
that runs without a GPU prints the recorded ones: `print(report())`.

In course/gpu_figures.json a row without a "source" key was written by this module's last run (its device, torch
and date are at the top); a row with one is cited: measured elsewhere, by the source that "sources" names. The next
run with `--out` replaces the whole file, cited rows included.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import torch

from course.torch_memory import DEVICE, Block, measure_torch, offloaded, run_segments, selective

CUDA = DEVICE.type == "cuda"

class FusedBlock(Block):
    """Block with fused causal attention (torch.nn.functional.scaled_dot_product_attention): the same weights and
    the same function, but no S x S tensor is kept for backward."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        B, S, d = x.shape
        q, k, v = (torch.nn.functional.layer_norm(x, (d,)) @ self.qkv).split(d, dim=-1)
        q, k, v = (t.reshape(B, S, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        attention = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + attention.transpose(1, 2).reshape(B, S, d) @ self.proj
        return x + torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (d,)) @ self.fc) @ self.out


class Size(NamedTuple):
    """One stack to measure: its shape, its block class, and whether its step times mean anything."""

    blocks: int
    width: int
    heads: int
    sequence: int
    batch: int
    block: type[Block] = Block
    timed: bool = True


SIZES = {
    "GPT-2-small shape": Size(12, 768, 12, 1024, 8),
    "GPT-2-small shape, fused attention (SDPA)": Size(12, 768, 12, 1024, 8, FusedBlock),
    "small (chapter 7's notebook)": Size(8, 64, 4, 64, 8, timed=False),
} if CUDA else {"tiny (CPU check)": Size(2, 16, 2, 8, 1),
                "tiny, fused attention (CPU check)": Size(2, 16, 2, 8, 1, FusedBlock)}


def sqrt_step(layers: list[Block], x: torch.Tensor, loss: Callable[[torch.Tensor], torch.Tensor],
              counted: list[int] | None = None) -> torch.Tensor:
    """The loss of x through the blocks under chapter 7's sqrt(N) plan: torch's checkpoint_sequential with
    ceil(sqrt(n)) segments, whose layout chapter 7's sqrt_plan follows (every segment checkpointed but the last).
    With `counted`, each block call adds one to counted[0]."""
    blocks: list[Callable[[torch.Tensor], torch.Tensor]] = list(layers)
    if counted is not None:
        def counting(block: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
            def run(h: torch.Tensor) -> torch.Tensor:
                counted[0] += 1
                return block(h)
            return run
        blocks = [counting(block) for block in layers]
    segments = math.ceil(math.sqrt(len(blocks)))
    return loss(torch.utils.checkpoint.checkpoint_sequential(blocks, segments, x, use_reentrant=False))


def blocks_rerun(layers: list[Block], x: torch.Tensor, loss: Callable[[torch.Tensor], torch.Tensor]) -> int:
    """How many blocks run again in backward under sqrt_step (counted in one training step)."""
    counted = [0]
    sqrt_step(layers, x, loss, counted).backward()
    for block in layers:
        for p in block.params:
            p.grad = None
    return counted[0] - len(layers)


def stack(size: Size) -> tuple[list[Block], torch.Tensor, list]:
    """The blocks of a stack (seeded weights), an input batch, and the parameters."""
    generator = torch.Generator().manual_seed(0)
    blocks, width, heads, seq, batch = size[:5]
    layers = [size.block(width, heads, generator) for _ in range(blocks)]
    x = torch.randn(batch, seq, width, generator=generator).to(DEVICE)
    return layers, x, [p for b in layers for p in b.params]


def measure(forward: Callable[[], torch.Tensor], params: list, repeats: int, timed: bool = True) -> dict[str, Any]:
    """One row: peak and held MiB, and the step time in ms (None when the stack is not timed)."""
    r = measure_torch(forward, params, repeats=repeats)
    return {"peak_MiB": r["peak"] / 2**20, "held_MiB": r["held"] / 2**20, "ms": 1e3 * r["time"] if timed else None}


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
    """Measure every stack of SIZES on this machine (see the module's docstring)."""
    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if CUDA else platform.processor() or "cpu",
        "torch": torch.__version__, "date": datetime.date.today().isoformat(),
        "method": "course.torch_memory.measure_torch: forward and backward, no optimiser step; peak above the "
                  f"start, gradients included; fastest of {repeats} after one warm-up",
        "sources": {}, "models": {}}
    for name, size in SIZES.items():
        layers, x, params = stack(size)
        n, timed = size.blocks, size.timed
        loss = lambda h: h.float().pow(2).mean()   # noqa: E731
        plain = lambda: loss(run_segments(layers, x))   # noqa: E731
        model: dict[str, Any] = {"blocks": n, "width": size.width, "heads": size.heads, "sequence": size.sequence,
                                 "batch": size.batch, "attention": "fused (SDPA)" if size.block is FusedBlock
                                 else "written out", "timed": timed, "parameters": sum(p.numel() for p in params)}
        torch.backends.cuda.matmul.allow_tf32 = False
        every, rerun = [(i, i + 1) for i in range(n)], blocks_rerun(layers, x, loss)
        sqrt_row = f"sqrt(N), chapter 7's layout: {rerun} block{'s' * (rerun != 1)} rerun"
        checkpointing = {
            "none": plain,
            sqrt_row: lambda: sqrt_step(layers, x, loss),
            "every block": lambda: loss(run_segments(layers, x, every)),
            "every block, selective (keep products)": lambda: loss(run_segments(layers, x, every,
                                                                                context_fn=selective())),
            "save_on_cpu (offloading)": offloaded(plain),
        }
        model["checkpointing"] = {k: measure(f, params, repeats, timed) for k, f in checkpointing.items()}
        model["forward_only_ms"] = forward_only_ms(plain, repeats) if timed else None

        def autocast(dtype: torch.dtype, scale: float = 1.0, plan: list = ()) -> Callable[[], torch.Tensor]:
            def forward() -> torch.Tensor:
                with torch.autocast(DEVICE.type, dtype=dtype):
                    return loss(run_segments(layers, x, plan)) * scale
            return forward

        precision = {"float32": plain}
        if CUDA:
            precision["float32, TF32 products"] = plain
        precision["bf16 autocast"] = autocast(torch.bfloat16)
        precision["bf16 autocast, every block checkpointed"] = autocast(torch.bfloat16, plan=every)
        if CUDA:   # GradScaler's scaled loss: the multiplication by 2**16 is all that it adds to forward/backward
            precision["fp16 autocast, loss x 2**16"] = autocast(torch.float16, 2.0**16)
        model["precision"] = {}
        for k, f in precision.items():
            torch.backends.cuda.matmul.allow_tf32 = "TF32" in k
            model["precision"][k] = measure(f, params, repeats, timed)
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


def _ratio(value: float | None, reference: float | None, unit: str, width: int) -> str:
    """'value unit = ratio x', or 'not measured' when either is missing."""
    if value is None:
        return f"{'not measured':>{width + len(unit) + 10}s}"
    ratio = f"{value / reference:4.2f}x" if reference else "  -  "
    return f"{value:{width}.1f} {unit} = {ratio}"


def report(results: dict[str, Any] | None = None) -> str:
    """The figures as a table (default: the recorded ones), with each row's ratio to the plain float32 step; a cited
    row is marked with its source, listed under the table."""
    results = recorded() if results is None else results
    sources = results.get("sources", {})
    lines = [f"device: {results['device']}; torch {results['torch']}; {results['date']} (python -m course.gpu_figures)",
             results["method"]]
    for name, m in results["models"].items():
        lines.append(f"\n{name}: {m['blocks']} blocks, width {m['width']}, {m['heads']} heads, sequence "
                     f"{m['sequence']}, batch {m['batch']}, {m['parameters']:,} parameters"
                     + ("" if m.get("timed", True) else "; launch-bound, so not timed"))
        for part in ("checkpointing", "precision"):
            ref = m["checkpointing"]["none"] if part == "checkpointing" else m["precision"]["float32"]
            lines.append(f"  {part} (ratios against {'none' if part == 'checkpointing' else 'float32'}):")
            for k, r in m[part].items():
                mark = f"  [{r['source']}]" if r.get("source") else ""
                timing = "" if not m.get("timed", True) else ", " + _ratio(r["ms"], ref["ms"], "ms", 7)
                lines.append(f"    {k:44s} peak {_ratio(r['peak_MiB'], ref['peak_MiB'], 'MiB', 8)}{timing}{mark}")
        forward, both = m.get("forward_only_ms"), m["checkpointing"]["none"]["ms"]
        if forward and both:
            lines.append(f"  forward alone (no_grad) {forward:.2f} ms; forward and backward {both:.2f} ms = "
                         f"{both / forward:.2f}x forward")
    if sources:
        lines.append("\nrows in [brackets] are cited, not measured by the run above:")
        lines.extend(f"  [{key}] {text}" for key, text in sources.items())
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
