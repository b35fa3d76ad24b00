"""Memory and time of a torch training step, on a GPU when there is one and on the CPU otherwise.

On a GPU, torch's caching allocator keeps statistics: torch.cuda.memory_allocated() and, since
torch.cuda.reset_peak_memory_stats(), torch.cuda.max_memory_allocated(); CUDA events time the step. On the CPU torch
keeps no such statistics, and saved_tensors_hooks see only what autograd's rules save (not what
torch.utils.checkpoint or selective checkpointing keep elsewhere). LiveTensorBytes plays the allocator's part on the
CPU: a TorchDispatchMode sees every operation and the tensors it creates, and a weak reference tells when each of
them dies, so it knows the bytes of the storages operations created that are still alive, and their peak.
measure_torch uses whichever applies, so that a notebook cell runs unchanged on either machine. run_segments,
offloaded and saved_costs run a chain of torch blocks under a checkpointing plan, offloaded, or measure it for a
planner.
"""
from __future__ import annotations

import functools
import time
import weakref
from typing import Any, Callable, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

__all__ = ["DEVICE", "MATMULS", "LiveTensorBytes", "measure_torch", "selective", "run_segments", "offloaded",
           "saved_costs", "Block"]

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""The GPU if torch sees one, else the CPU."""

MATMULS = frozenset({torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default})
"""The matrix products among torch's operations (what selective checkpointing usually keeps)."""


class LiveTensorBytes(TorchDispatchMode):
    """While active: the bytes of the storages torch operations created that are still alive (live, and peak since the
    mode was entered), and how many matrix products ran (matmuls). Tensors made before, or not by an operation
    (torch.from_numpy), are not counted; views count their storage once."""

    def __init__(self) -> None:
        super().__init__()
        self.storages: dict[int, list[int]] = {}      # storage address -> [bytes, tensors alive on it]
        self.live = self.peak = self.matmuls = 0

    def _release(self, key: int) -> None:
        entry = self.storages.get(key)
        if entry is not None:
            entry[1] -= 1
            if entry[1] == 0:
                self.live -= entry[0]
                del self.storages[key]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.matmuls += func in MATMULS
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type != "meta" and t.untyped_storage().data_ptr():
                key = t.untyped_storage().data_ptr()
                if key not in self.storages:
                    self.storages[key] = [t.untyped_storage().nbytes(), 0]
                    self.live += self.storages[key][0]
                    self.peak = max(self.live, self.peak)
                self.storages[key][1] += 1
                weakref.finalize(t, self._release, key)
        return out


def measure_torch(forward: Callable[[], torch.Tensor], params: Sequence[torch.Tensor], repeats: int = 5) -> dict:
    """One training step whose forward() returns the loss, measured: bytes held after forward ("held") and the peak
    during forward and backward ("peak"), both above the start and with the parameters' gradients (set to None
    first) included; the matrix products backward ran ("matmuls", CPU only, else None); the fastest of `repeats`
    timed steps after one warm-up ("time", seconds). GPU: the allocator's statistics and CUDA events; CPU:
    LiveTensorBytes and time.perf_counter (timed without the meter)."""
    for param in params:
        param.grad = None
    if DEVICE.type == "cuda":
        forward().backward()    # warm-up: a first step also allocates what stays (cuBLAS's workspace, 32 MiB on an H200)
        for param in params:
            param.grad = None
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step_loss = forward()
        held = torch.cuda.memory_allocated() - start
        step_loss.backward()
        torch.cuda.synchronize()
        peak, matmuls = torch.cuda.max_memory_allocated() - start, None
    else:
        with LiveTensorBytes() as meter:
            step_loss = forward()
            held, before = meter.live, meter.matmuls
            step_loss.backward()
        peak, matmuls = meter.peak, meter.matmuls - before
    del step_loss
    times = []
    for i in range(repeats + 1):
        if DEVICE.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            forward().backward()
            end.record()
            torch.cuda.synchronize()
            elapsed = begin.elapsed_time(end) / 1e3
        else:
            begin = time.perf_counter()
            forward().backward()
            elapsed = time.perf_counter() - begin
        if i:
            times.append(elapsed)
    return {"held": held, "peak": peak, "matmuls": matmuls, "time": min(times)}


def selective(keep: frozenset = MATMULS) -> Callable[[], Any]:
    """A context_fn for torch.utils.checkpoint.checkpoint: keep the outputs of the operations in `keep`, recompute
    every other operation of the segment (selective activation checkpointing)."""
    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
        return CheckpointPolicy.MUST_SAVE if op in keep else CheckpointPolicy.PREFER_RECOMPUTE
    return functools.partial(create_selective_checkpoint_contexts, policy)


def run_segments(blocks: Sequence[Callable[[torch.Tensor], torch.Tensor]], x: torch.Tensor,
                 plan: Sequence[tuple[int, int]] = (), ckpt: Callable[..., torch.Tensor] | None = None,
                 **options: Any) -> torch.Tensor:
    """x through the blocks in order; each (start, stop) segment of plan runs as one ckpt(fn, h, **options) call
    (default: torch.utils.checkpoint.checkpoint with use_reentrant=False)."""
    if ckpt is None:
        ckpt, options = torch.utils.checkpoint.checkpoint, {"use_reentrant": False, **options}
    stops, i, h = dict(plan), 0, x
    while i < len(blocks):
        if i in stops:
            part = list(blocks[i:stops[i]])
            h, i = ckpt(lambda h, part=part: functools.reduce(lambda y, block: block(y), part, h), h, **options), stops[i]
        else:
            h, i = blocks[i](h), i + 1
    return h


def offloaded(forward: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
    """forward() with every tensor saved for backward kept in host memory (save_on_cpu; pinned on a GPU)."""
    def run() -> torch.Tensor:
        with torch.autograd.graph.save_on_cpu(pin_memory=DEVICE.type == "cuda"):
            return forward()
    return run


def saved_costs(blocks: Sequence[Callable[[torch.Tensor], torch.Tensor]], x: torch.Tensor,
                loss_fn: Callable[[torch.Tensor], torch.Tensor]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(act, inp, tail) of a chain of torch blocks for a checkpointing planner: the bytes of the storages each block
    saves for backward (saved_tensors_hooks; each storage counted in the first block that saves it, parameters left
    out), the bytes of each block's input, and what the loss saves."""
    seen: set[int] = set()
    counts: list[int] = []
    inp: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = t.untyped_storage()._cdata
        if not (t.is_leaf and t.requires_grad) and key not in seen:
            seen.add(key)
            counts[-1] += t.untyped_storage().nbytes()
        return t

    h = x
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for block in [*blocks, loss_fn]:
            inp.append(h.numel() * h.element_size())
            counts.append(0)
            h = block(h)
    return tuple(counts[:-1]), tuple(inp[:-1]), counts[-1]


class Block:
    """A small pre-norm transformer block in torch, for measurements: x + attention(layer_norm(x)), then
    x + mlp(layer_norm(x)); causal attention written out, so that its S x S scores are kept for backward."""

    def __init__(self, width: int, heads: int, generator: torch.Generator | None = None,
                 device: torch.device | str = DEVICE) -> None:
        shapes = {"qkv": (width, 3 * width), "proj": (width, width), "fc": (width, 4 * width), "out": (4 * width, width)}
        for name, (m, k) in shapes.items():
            w = torch.empty(m, k) if str(device) == "meta" else torch.randn(m, k, generator=generator) / m ** 0.5
            setattr(self, name, w.to(device).requires_grad_())
        self.params = [getattr(self, name) for name in shapes]
        self.heads = heads

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        B, S, d = x.shape
        q, k, v = (torch.nn.functional.layer_norm(x, (d,)) @ self.qkv).split(d, dim=-1)
        q, k, v = (t.reshape(B, S, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        causal = torch.ones(S, S, dtype=torch.bool, device=x.device).tril()
        attention = (scores.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v).transpose(1, 2).reshape(B, S, d)
        x = x + attention @ self.proj
        return x + torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (d,)) @ self.fc) @ self.out
