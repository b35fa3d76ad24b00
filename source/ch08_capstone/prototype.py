"""Chapter 8's solution, before it becomes notebook cells: the capstone's transformer language model on the engine
of chapters 1-7 (course.reference.ch07_checkpointing and the chapters it builds on), and its training loop.

The model is the one autograde/hidden/ch08_capstone.py writes in torch (see that module's docstring), built from
the same weight dict of NumPy arrays, so both start from the same numbers. What the engine did not have yet, and
the chapter adds as rules (one Function each, torch's node names):

- Embedding: rows of a table gathered by integer ids; backward scatter-adds, so a repeated id adds its rows.
- CausalSoftmax: softmax over the last axis with every key after its query masked out (-inf before the softmax,
  so the masked probabilities are exactly 0); saves the probabilities, (B, H, T, T) of them.
- GELU: x * Phi(x) with the exact (erf) normal CDF, torch's default. NumPy has no erf: math.erf per element in
  float64 (exact, slow), a rational fit with error below float32's resolution in float32 (fast).

Everything else is the engine's: batched matmul (chapter 6's MatMul broadcasts batch axes), reshape, transpose,
GetItem for the positions, layer norm without affine (chapter 3) followed by a recorded scale and shift, the fused
cross-entropy, AdamW, clip_grad_norm_, GradScaler and autocast, and checkpoint.

`python source/ch08_capstone/prototype.py` prints the measurements: tokens per second of the engine and of torch
on the same model with one thread each, and a training run long enough to show learning, with samples.
"""
from __future__ import annotations

import contextlib
import math
import re
import time
from typing import Any, Callable, Iterable, Iterator

import numpy as np

import course.reference.ch06_loss_scaling as ch6        # autocast, GradScaler, the float16-aware MatMul
import course.reference.ch07_checkpointing as ch7       # checkpoint (and, through it, chapters 2-5)
from course.reference.ch02_tape import Context, Function, Tensor
from course.reference.ch03_vjp_rules import cross_entropy, layer_norm as normalise
from course.reference.ch04_accumulation import AdamW, clip_grad_norm_
from course.reference.ch05_grad_modes import no_grad


# -- the new rules -------------------------------------------------------------------------------------------
class Embedding(Function):
    """table[ids] for a (rows, d) table and integer ids of any shape; backward adds each row's gradients."""

    name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Context, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
        ctx.rows = table.shape[0]
        ctx.save_for_backward(ids)                       # the ids, not the table: backward needs only where
        return table[ids]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        (ids,) = ctx.saved_tensors
        grad_table = np.zeros((ctx.rows, grad.shape[-1]), dtype=grad.dtype)
        np.add.at(grad_table, ids.reshape(-1), grad.reshape(-1, grad.shape[-1]))   # repeated ids add up
        return grad_table


def embedding(table: Tensor, ids: Any) -> Tensor:
    """Rows of table picked by integer ids (torch.nn.functional.embedding)."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding ids must be integers, got dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise IndexError(f"embedding ids must be in [0, {table.shape[0]}), got values from {ids.min()} to {ids.max()}")
    return Embedding.apply(table, ids=ids.astype(np.int64, copy=False))


class CausalSoftmax(Function):
    """Softmax over the last axis of (..., T_query, T_key) scores, each query seeing only keys at or before it."""

    name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx: Context, scores: np.ndarray) -> np.ndarray:
        tq, tk = scores.shape[-2:]
        future = np.triu(np.ones((tq, tk), dtype=bool), k=tk - tq + 1)     # key j > query i (aligned at the end)
        masked = np.where(future, -np.inf, scores)
        e = np.exp(masked - np.max(masked, axis=-1, keepdims=True))        # exp(-inf) = 0: masked exactly
        probs = e / np.sum(e, axis=-1, keepdims=True)
        ctx.save_for_backward(probs)
        return probs

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        (probs,) = ctx.saved_tensors
        return probs * (grad - np.sum(grad * probs, axis=-1, keepdims=True))   # 0 where masked: probs is 0


def causal_softmax(scores: Tensor) -> Tensor:
    """Attention probabilities from scores, the future masked (one node)."""
    return CausalSoftmax.apply(scores)


_ERF = np.frompyfunc(math.erf, 1, 1)
_AS_P = 0.3275911                                         # Abramowitz and Stegun 7.1.26
_AS_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in x's dtype.

    float64: math.erf per element (correctly rounded to about one ulp, as torch's, but about 200 ns an element).
    float32 and float16: Abramowitz and Stegun 7.1.26, a rational fit with |error| < 1.5e-7, about float32's
    own resolution (evaluated in float64: near 0 it cancels), some 10 times faster; timed training is float32.
    """
    if x.dtype == np.float64:
        return _ERF(x).astype(np.float64)
    a = np.abs(x).astype(np.float64)                      # in float64: 1 - poly * exp cancels near 0
    t = 1.0 / (1.0 + _AS_P * a)
    poly = np.zeros_like(t)
    for c in _AS_A:                                       # Horner: ((((a5 t + a4) t + a3) t + a2) t + a1) t
        poly = (poly + c) * t
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(x.dtype)


class GELU(Function):
    """x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2; saves x and Phi(x)."""

    name = "GeluBackward0"

    @staticmethod
    def forward(ctx: Context, x: np.ndarray) -> np.ndarray:
        cdf = 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
        ctx.save_for_backward(x, cdf)
        return x * cdf

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        x, cdf = ctx.saved_tensors
        pdf = np.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
        return grad * (cdf + x * pdf)                    # d/dx x Phi(x) = Phi(x) + x phi(x)


def gelu(x: Tensor) -> Tensor:
    """torch's default GELU (exact, with erf), one node."""
    return GELU.apply(x)


# -- the model -----------------------------------------------------------------------------------------------
def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """Chapter 3's layer norm over the last axis, then the learnt scale and shift."""
    return normalise(x, eps=eps) * weight + bias


def attention(a: Tensor, W: dict[str, Tensor], prefix: str, n_heads: int) -> Tensor:
    """Multi-head causal self-attention of a (B, T, d), with its output projection."""
    B, T, d = a.shape
    d_head = d // n_heads

    def split_heads(name: str) -> Tensor:                # (B, T, d) -> (B, H, T, d_head)
        t = a @ W[f"{prefix}attn.{name}.weight"] + W[f"{prefix}attn.{name}.bias"]
        return t.reshape(B, T, n_heads, d_head).transpose(1, 2)

    q, k, v = split_heads("q"), split_heads("k"), split_heads("v")
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d_head))
    out = causal_softmax(scores) @ v                     # (B, H, T, d_head)
    out = out.transpose(1, 2).reshape(B, T, d)           # heads side by side again
    return out @ W[f"{prefix}attn.proj.weight"] + W[f"{prefix}attn.proj.bias"]


BLOCK_PARAMS = ("ln1.weight", "ln1.bias", "attn.q.weight", "attn.q.bias", "attn.k.weight", "attn.k.bias",
                "attn.v.weight", "attn.v.bias", "attn.proj.weight", "attn.proj.bias", "ln2.weight", "ln2.bias",
                "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias")


def block(h: Tensor, W: dict[str, Tensor], prefix: str, n_heads: int, eps: float = 1e-5) -> Tensor:
    """One pre-norm block: h + attention(ln1(h)), then + mlp(ln2(that))."""
    a = layer_norm(h, W[prefix + "ln1.weight"], W[prefix + "ln1.bias"], eps)
    h = h + attention(a, W, prefix, n_heads)
    m = layer_norm(h, W[prefix + "ln2.weight"], W[prefix + "ln2.bias"], eps)
    m = gelu(m @ W[prefix + "mlp.fc.weight"] + W[prefix + "mlp.fc.bias"])
    return h + (m @ W[prefix + "mlp.proj.weight"] + W[prefix + "mlp.proj.bias"])


def n_layers_of(W: dict[str, Any]) -> int:
    """How many blocks a weight dict holds."""
    return len({m.group(1) for n in W if (m := re.match(r"blocks\.(\d+)\.", n))})


def logits(W: dict[str, Tensor], x: Any, n_heads: int, checkpoint: bool = False, eps: float = 1e-5) -> Tensor:
    """The (B, T, vocab) next-character logits for int ids x of shape (B, T); T at most pos_emb's rows."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] > W["pos_emb"].shape[0]:
        raise ValueError(f"x must be (batch, T) ids with T <= {W['pos_emb'].shape[0]}, got shape {x.shape}")
    T = x.shape[1]
    h = embedding(W["tok_emb"], x) + W["pos_emb"][:T]
    for i in range(n_layers_of(W)):
        prefix = f"blocks.{i}."
        if checkpoint:
            def run(h: Tensor, *params: Tensor, prefix: str = prefix) -> Tensor:
                return block(h, dict(zip([prefix + n for n in BLOCK_PARAMS], params)), prefix, n_heads, eps)
            h = ch7.checkpoint(run, h, *[W[prefix + n] for n in BLOCK_PARAMS])
        else:
            h = block(h, W, prefix, n_heads, eps)
    h = layer_norm(h, W["ln_f.weight"], W["ln_f.bias"], eps)
    head = W["head.weight"] if "head.weight" in W else W["tok_emb"].T      # tied: the token table, transposed
    return h @ head


def loss_fn(W: dict[str, Tensor], x: Any, y: Any, n_heads: int, checkpoint: bool = False) -> Tensor:
    """Mean cross-entropy of the next-character logits for x against y (both (B, T) ints), one fused node."""
    out = logits(W, x, n_heads, checkpoint)
    vocab = out.shape[-1]
    if ch6.AUTOCAST.enabled and out.dtype != np.float32:
        out = ch6.cast(out, np.float32)
    return cross_entropy(out.reshape(-1, vocab), np.asarray(y, dtype=np.int64).reshape(-1))


# -- memory ------------------------------------------------------------------------------------------------------
def saved_bytes_formula(vocab: int, T: int, B: int, d: int, n_heads: int, d_ff: int, n_layers: int, tied: bool,
                        dtype: Any, checkpoint: bool) -> dict[str, int]:
    """The bytes the engine's meter holds for backward: after the forward pass of loss_fn(...) / k, and at its peak.

    Counted node by node from what each rule saves (a parameter's own array is never counted; an array that two
    nodes save counts twice, as the meter counts it). With N = B T rows and s bytes an element, one block keeps
        two layer norms (x-hat and 1/std: N d s + N s) with their scales (x-hat again: N d s) 2 (2 N d s + N s),
        the q, k, v, projection and fc matmuls' inputs 5 N d s,
        q and k^T 2 N d s, the 1/sqrt(d_head) constant s, the probabilities twice (softmax, then probs @ v)
        2 B H T^2 s, v N d s, GELU's input and Phi 2 N d_ff s, the last matmul's input N d_ff s;
    outside the blocks: the token ids 8 N, the final norm with its scale 2 N d s + N s, the head's input N d s
    (and, tied, the transposed token table V d s, not a leaf), cross-entropy's probabilities N V s and targets
    8 N, the division by k's constant s. Checkpointing keeps each block's input N d s instead of its insides; the
    peak is then either the end of forward or the rerun of the last block, after the head's arrays are freed.
    """
    s, N = np.dtype(dtype).itemsize, B * T
    block = 12 * N * d * s + 3 * N * d_ff * s + 2 * B * n_heads * T * T * s + 2 * N * s + s
    outside_blocks = 3 * N * d * s + N * s + (vocab * d * s if tied else 0) + N * vocab * s + 8 * N + s
    ids = 8 * N
    if not checkpoint:
        after = ids + n_layers * block + outside_blocks
        return {"after forward": after, "peak": after}
    after = ids + n_layers * N * d * s + outside_blocks
    return {"after forward": after, "peak": max(after, ids + n_layers * N * d * s + block)}


# -- training ------------------------------------------------------------------------------------------------
def decayed(W: dict[str, Any]) -> list[str]:
    """The names AdamW decays: matrices of linear layers (2-D, not an embedding table); never norms or biases."""
    return [n for n, w in W.items() if np.ndim(w) == 2 and n not in ("tok_emb", "pos_emb")]


class GroupedAdamW(AdamW):
    """AdamW whose weight decay falls only on the parameters in `decayed` (torch: one optimizer, two param groups).

    One optimizer, not two, so that a GradScaler sees every gradient at once: an inf anywhere skips the whole step.
    """

    def __init__(self, params: Iterable[Tensor], decayed: Iterable[Tensor], **settings: Any) -> None:
        super().__init__(params, **settings)
        self.decay_rate, self.decayed_ids = self.weight_decay, {id(p) for p in decayed}

    def update(self, p: Tensor, grad: np.ndarray, state: dict[str, Any]) -> None:
        self.weight_decay = self.decay_rate if id(p) in self.decayed_ids else 0.0
        super().update(p, grad, state)


def micro_splits(x: np.ndarray, y: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The batch's rows in k equal micro-batches."""
    if not isinstance(k, int) or k < 1 or len(x) % k:
        raise ValueError(f"micro_batches must be a positive int that divides the batch size {len(x)}, got {k!r}")
    n = len(x) // k
    return [(x[j * n:(j + 1) * n], y[j * n:(j + 1) * n]) for j in range(k)]


def train(weights: dict[str, np.ndarray], n_heads: int, batches: Iterable[tuple[np.ndarray, np.ndarray]],
          steps: int, lr: float = 5e-3, betas: tuple[float, float] = (0.9, 0.99), eps: float = 1e-8,
          weight_decay: float = 0.1, max_norm: float | None = 1.0, micro_batches: int = 1,
          autocast: Any = None, init_scale: float = 2.0 ** 10, checkpoint: bool = False,
          ) -> tuple[list[float], dict[str, np.ndarray]]:
    """Train copies of weights for `steps` steps on successive batches, as torch users write the loop: the loss of
    each step (before its update) and the final weights."""
    W = {n: Tensor(np.array(w), requires_grad=True) for n, w in weights.items()}
    params = list(W.values())
    optimizer = GroupedAdamW(params, [W[n] for n in decayed(W)], lr=lr, betas=betas, eps=eps,
                             weight_decay=weight_decay)
    scaler = ch6.GradScaler(init_scale=init_scale) if autocast is not None else None
    losses = []
    it: Iterator = iter(batches)
    for _ in range(steps):
        x, y = next(it)
        quiet = np.errstate(over="ignore", invalid="ignore") if scaler else contextlib.nullcontext()
        with quiet:                                      # an overflow is the scaler's to find and skip, silently
            total = step(W, params, optimizer, scaler, x, y, n_heads, max_norm, micro_batches, autocast, checkpoint)
        losses.append(total)
    return losses, {n: t.data.copy() for n, t in W.items()}


def step(W: dict[str, Tensor], params: list[Tensor], optimizer: GroupedAdamW, scaler: ch6.GradScaler | None,
         x: np.ndarray, y: np.ndarray, n_heads: int, max_norm: float | None, micro_batches: int, autocast: Any,
         checkpoint: bool) -> float:
    """One training step: fresh gradients, k micro-batches (each loss / k), unscale, clip, step; the mean loss."""
    for p in params:
        p.grad = None
    total = 0.0
    for xm, ym in micro_splits(np.asarray(x), np.asarray(y), micro_batches):
        if autocast is not None:
            with ch6.autocast(dtype=autocast):
                loss = loss_fn(W, xm, ym, n_heads, checkpoint) / micro_batches
            scaler.scale(loss).backward()
        else:
            loss = loss_fn(W, xm, ym, n_heads, checkpoint) / micro_batches
            loss.backward()
        total += float(loss.item())
    if scaler is not None:
        scaler.unscale_(optimizer)                       # true gradients before clipping
    if max_norm is not None:
        clip_grad_norm_(params, max_norm)
    if scaler is not None:
        scaler.step(optimizer)                           # skipped if any gradient is inf or NaN
        scaler.update()
    else:
        optimizer.step()
    return total


def sample(weights: dict[str, np.ndarray], n_heads: int, prompt_ids: np.ndarray, length: int, seed: int = 0,
           temperature: float = 1.0) -> np.ndarray:
    """prompt_ids and `length` more ids drawn one at a time from the model's next-character distribution."""
    W = {n: Tensor(w) for n, w in weights.items()}
    block_size = W["pos_emb"].shape[0]
    rng = np.random.default_rng(seed)
    ids = [int(i) for i in prompt_ids]
    with no_grad():
        for _ in range(length):
            context = np.asarray(ids[-block_size:], dtype=np.int64)[None]
            last = logits(W, context, n_heads).data[0, -1].astype(np.float64) / temperature
            p = np.exp(last - last.max())
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return np.asarray(ids, dtype=np.int64)


def time_by_op(run: Callable[[], Any]) -> dict[str, float]:
    """Where run()'s time goes: seconds in each family of rules (forward and backward together), the optimiser,
    clipping, and the rest (recording, the backward driver, Python); measured with cProfile, which slows every
    Python call a little, so the shares matter more than the seconds."""
    import cProfile
    import pstats

    families = {"MatMul": "matmul", "CausalSoftmax": "causal softmax", "LayerNorm": "layer norm", "GELU": "gelu",
                "Embedding": "embedding", "CrossEntropy": "cross-entropy", "Add": "add, mul, div",
                "Mul": "add, mul, div", "Div": "add, mul, div", "Reshape": "reshape, transpose, slice",
                "Transpose": "reshape, transpose, slice", "GetItem": "reshape, transpose, slice"}
    codes: dict[tuple[str, int, str], str] = {}
    todo = list(Function.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        for kind in ("forward", "backward"):
            f = cls.__dict__.get(kind)
            f = f.__func__ if isinstance(f, staticmethod) else f
            if f is not None and cls.__name__ in families:
                codes[(f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name)] = families[cls.__name__]
    for label, f in (("AdamW", AdamW.update), ("clip_grad_norm_", clip_grad_norm_)):
        codes[(f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name)] = label
    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    stats = pstats.Stats(profiler).stats                # (file, line, name) -> (calls, calls, own, cumulative, ...)
    total = sum(entry[2] for entry in stats.values())
    out: dict[str, float] = {}
    for key, entry in stats.items():
        if key in codes:
            out[codes[key]] = out.get(codes[key], 0.0) + entry[3]
    out["recording, backward driver, Python"] = total - sum(out.values())
    return dict(sorted(out.items(), key=lambda item: -item[1]))


# -- measurements --------------------------------------------------------------------------------------------
def main() -> None:
    """Print tokens per second (engine and torch, one thread each) and a training run that shows learning."""
    import torch

    from autograde.hidden import ch08_capstone as oracle
    from course import text
    from course.threads import fix_threads

    print(fix_threads(1))
    config = oracle.Config()
    data = text.encode(text.corpus())
    train_ids, val_ids = text.split(data)
    batch, steps = 16, 20
    print(f"model: {config}; {sum(w.size for w in oracle.init_weights(config).values())} parameters; "
          f"batch {batch} x {config.block} tokens")

    weights = oracle.init_weights(config, seed=0, dtype=np.float32)
    timings = {}
    for name, run in (("engine", lambda b, s: train(weights, config.n_heads, b, s)),
                      ("torch", lambda b, s: oracle.train(weights, config, b, s))):
        run(text.batches(train_ids, config.block, batch, seed=1), 2)                 # warm up
        wall, cpu = time.perf_counter(), time.process_time()
        run(text.batches(train_ids, config.block, batch, seed=1), steps)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        tokens = steps * batch * config.block
        timings[name] = (tokens / wall, tokens / cpu)
        print(f"{name}: {tokens / wall:,.0f} tokens/s of wall time, {tokens / cpu:,.0f} per CPU second "
              f"(float32 training steps: forward, backward, clip, AdamW)")
    profile = time_by_op(lambda: train(weights, config.n_heads, text.batches(train_ids, config.block, batch), 5))
    share = sum(profile.values())
    print("engine time by op family (cProfile):", ", ".join(f"{k} {v / share:.0%}" for k, v in profile.items()))
    print(f"torch / engine: {timings['torch'][0] / timings['engine'][0]:.1f}x by wall time, "
          f"{timings['torch'][1] / timings['engine'][1]:.1f}x by CPU time (CPU time: fair on a busy machine)")

    long_steps = 300
    prompt = text.encode("the ")
    before = text.decode(sample(weights, config.n_heads, prompt, 120, seed=0))
    start, cpu = time.perf_counter(), time.process_time()
    losses, trained = train(weights, config.n_heads, text.batches(train_ids, config.block, batch, seed=2), long_steps,
                            lr=5e-3)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    xv, yv = next(text.batches(val_ids, config.block, 64, seed=3))
    with no_grad():
        val = loss_fn({n: Tensor(w) for n, w in trained.items()}, xv, yv, config.n_heads).item()
    print(f"engine training: {long_steps} steps in {seconds:.1f} s ({cpu:.1f} s of CPU); loss {losses[0]:.3f} -> "
          f"{np.mean(losses[-20:]):.3f} (last 20 mean), validation {val:.3f}; "
          f"uniform guess {math.log(config.vocab):.3f}")
    print("before:", repr(before))
    print("after: ", repr(text.decode(sample(trained, config.n_heads, prompt, 120, seed=0))))
    torch.set_num_threads(1)


if __name__ == "__main__":
    main()
