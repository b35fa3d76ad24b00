"""The capstone's oracle: a character-level transformer language model written in plain torch ops, and its training.

The chapter's hidden tests build the student's model on the engine and this one in torch from the same NumPy
arrays (init_weights), feed both the same batches, and compare the loss at every step. The model is GPT-shaped:

    h = tok_emb[x] + pos_emb[:T]
    for each block:   h = h + proj(attention(ln1(h)));   h = h + mlp(ln2(h))        (pre-norm, residuals)
    logits = ln_f(h) @ head          head = tok_emb.T when tied, a (d, V) matrix otherwise; no bias
    loss = mean cross-entropy of logits against the next characters

attention: q, k, v = a @ Wq + bq, ... ; heads split the last axis into (n_heads, d_head) (head j owns columns
j*d_head to (j+1)*d_head, as nn.MultiheadAttention); scores = q @ k^T / sqrt(d_head); a query never sees a later
key (the causal mask: -inf above the diagonal, before softmax); softmax over keys; @ v; heads joined; @ Wo + bo.
mlp: gelu(a @ W1 + b1) @ W2 + b2, with torch's default (exact, erf) GELU. No dropout: every step is deterministic.

Weights are stored as the engine stores them: a linear layer's matrix is (in, out) and used as x @ W (torch's
nn.Linear keeps the transpose). Weight decay, as minGPT decides it: only the matrices of linear layers decay;
biases, layer-norm scales and shifts, and the token and position embeddings do not (a tied head is the token
embedding, so it does not decay either). decay_names() is that rule.

Training (train()) is torch's usual loop: zero_grad; k micro-batches, each mean loss divided by k before its
backward; optional autocast (bfloat16 on CPU by default) with a GradScaler that unscales before clipping;
clip_grad_norm_; AdamW with two parameter groups; optional torch.utils.checkpoint around each block.
"""
from __future__ import annotations

import contextlib
import importlib
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.checkpoint as torch_ckpt

from course.model import Config, decay_names, init_weights, param_names  # shared with the notebook
from course.threads import blas_threads, fix_threads


def to_torch(weights: dict[str, np.ndarray], requires_grad: bool = True) -> dict[str, torch.Tensor]:
    """Leaf torch tensors holding copies of the arrays (the NumPy arrays stay untouched)."""
    return {n: torch.tensor(np.array(w), requires_grad=requires_grad) for n, w in weights.items()}


# -- the model in plain torch ops ----------------------------------------------------------------------------
def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over the last axis (biased variance), then scale and shift."""
    mean = x.mean(-1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdim=True)
    return centred / torch.sqrt(var + eps) * weight + bias


def gelu(x: torch.Tensor) -> torch.Tensor:
    """x * Phi(x), Phi the standard normal CDF written with erf (torch's default GELU, approximate='none')."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_head), keys after the query masked to -inf) @ v, for (..., T, d_head) inputs."""
    T, d_head = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d_head))
    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def attention(a: torch.Tensor, W: dict[str, torch.Tensor], prefix: str, n_heads: int) -> torch.Tensor:
    """Multi-head causal self-attention of a (B, T, d), with its output projection."""
    B, T, d = a.shape
    heads = []
    for n in "qkv":
        t = a @ W[f"{prefix}attn.{n}.weight"] + W[f"{prefix}attn.{n}.bias"]
        heads.append(t.reshape(B, T, n_heads, d // n_heads).transpose(1, 2))        # (B, H, T, d_head)
    out = causal_attention(*heads)                                                    # (B, H, T, d_head)
    out = out.transpose(1, 2).reshape(B, T, d)                                          # heads joined again
    return out @ W[f"{prefix}attn.proj.weight"] + W[f"{prefix}attn.proj.bias"]


def block(h: torch.Tensor, W: dict[str, torch.Tensor], i: int, config: Config) -> torch.Tensor:
    """One pre-norm transformer block: h + attention(ln1(h)), then + mlp(ln2(that))."""
    p = f"blocks.{i}."
    a = layer_norm(h, W[p + "ln1.weight"], W[p + "ln1.bias"], config.eps)
    h = h + attention(a, W, p, config.n_heads)
    m = layer_norm(h, W[p + "ln2.weight"], W[p + "ln2.bias"], config.eps)
    m = gelu(m @ W[p + "mlp.fc.weight"] + W[p + "mlp.fc.bias"])
    return h + (m @ W[p + "mlp.proj.weight"] + W[p + "mlp.proj.bias"])


def logits(W: dict[str, torch.Tensor], x: Any, config: Config, checkpoint: bool = False) -> torch.Tensor:
    """The (B, T, vocab) next-character logits for int64 ids x of shape (B, T), T <= config.block."""
    x = torch.as_tensor(np.asarray(x, dtype=np.int64))
    if x.ndim != 2 or x.shape[1] > config.block:
        raise ValueError(f"x must be (batch, T) ids with T <= {config.block}, got shape {tuple(x.shape)}")
    T = x.shape[1]
    h = W["tok_emb"][x] + W["pos_emb"][:T]
    for i in range(config.n_layers):
        if checkpoint:
            h = torch_ckpt.checkpoint(block, h, W, i, config, use_reentrant=False)
        else:
            h = block(h, W, i, config)
    h = layer_norm(h, W["ln_f.weight"], W["ln_f.bias"], config.eps)
    head = W["tok_emb"].T if config.tied else W["head.weight"]
    return h @ head


def loss_fn(W: dict[str, torch.Tensor], x: Any, y: Any, config: Config, checkpoint: bool = False) -> torch.Tensor:
    """Mean cross-entropy of the model's logits for x against the next characters y (both (B, T) int64)."""
    out = logits(W, x, config, checkpoint)
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    return F.cross_entropy(out.reshape(-1, config.vocab).float() if out.dtype in (torch.bfloat16, torch.float16)
                           else out.reshape(-1, config.vocab), y.reshape(-1))


# -- training ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainSettings:
    """One training recipe, shared by the engine's loop and torch's."""

    lr: float = 5e-3                # the learning rate
    betas: tuple[float, float] = (0.9, 0.99)   # Adam's averaging rates
    eps: float = 1e-8               # Adam's denominator floor
    weight_decay: float = 0.1       # for decay_names() only
    max_norm: float | None = 1.0    # clip_grad_norm_'s bound, None: no clipping
    micro_batches: int = 1          # k: each micro-batch's loss divided by k
    autocast: Any = None            # None, or the low dtype (torch.bfloat16 / torch.float16)
    init_scale: float = 2.0 ** 10   # the GradScaler's first scale when autocast is on
    checkpoint: bool = False        # torch.utils.checkpoint around each block


def micro_splits(x: np.ndarray, y: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """A batch's rows cut into k equal micro-batches (so k micro-batches make the same mean loss as one)."""
    if not isinstance(k, int) or k < 1 or len(x) % k:
        raise ValueError(f"micro_batches must be a positive int that divides the batch size {len(x)}, got {k!r}")
    n = len(x) // k
    return [(x[j * n:(j + 1) * n], y[j * n:(j + 1) * n]) for j in range(k)]


def make_optimizer(W: dict[str, torch.Tensor], config: Config, s: TrainSettings) -> torch.optim.AdamW:
    """AdamW with two groups: decay_names() decay by s.weight_decay, every other parameter not at all."""
    decayed = set(decay_names(config))
    groups = [{"params": [W[n] for n in param_names(config) if n in decayed], "weight_decay": s.weight_decay},
              {"params": [W[n] for n in param_names(config) if n not in decayed], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=s.lr, betas=s.betas, eps=s.eps, foreach=False)


def train(weights: dict[str, np.ndarray], config: Config, batches: Iterable[tuple[np.ndarray, np.ndarray]],
          steps: int, settings: TrainSettings = TrainSettings()) -> tuple[list[float], dict[str, np.ndarray]]:
    """Train a torch copy of weights for `steps` steps on the first `steps` batches; the loss of each step (the
    mean over the batch, before the update) and the final weights as NumPy arrays."""
    s = settings
    W = to_torch(weights)
    params = [W[n] for n in param_names(config)]
    optimizer = make_optimizer(W, config, s)
    scaler = torch.amp.GradScaler("cpu", init_scale=s.init_scale, enabled=s.autocast is not None)
    losses = []
    it: Iterator = iter(batches)
    for _ in range(steps):
        x, y = next(it)
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for xm, ym in micro_splits(np.asarray(x), np.asarray(y), s.micro_batches):
            ctx = (torch.autocast("cpu", dtype=s.autocast) if s.autocast is not None else contextlib.nullcontext())
            with ctx:
                loss = loss_fn(W, xm, ym, config, s.checkpoint) / s.micro_batches
            scaler.scale(loss).backward()
            total += float(loss.detach())
        scaler.unscale_(optimizer)                    # a no-op when disabled; clip sees true gradients
        if s.max_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, s.max_norm)
        scaler.step(optimizer)                       # skips the step after an overflow
        scaler.update()
        losses.append(total)
    return losses, {n: t.detach().numpy().copy() for n, t in W.items()}


@torch.no_grad()
def sample(weights: dict[str, np.ndarray], config: Config, prompt_ids: np.ndarray, length: int,
           seed: int = 0, temperature: float = 1.0) -> np.ndarray:
    """prompt_ids followed by `length` characters drawn from the model one at a time (the last block of context)."""
    W = to_torch(weights, requires_grad=False)
    rng = np.random.default_rng(seed)
    ids = list(np.asarray(prompt_ids, dtype=np.int64))
    for _ in range(length):
        context = np.asarray(ids[-config.block:], dtype=np.int64)[None]
        last = logits(W, context, config)[0, -1].double().numpy() / temperature
        p = np.exp(last - last.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return np.asarray(ids, dtype=np.int64)


# ==============================================================================================================
# Hidden-test helpers of the chapter's notebook. A check takes the notebook's namespace (the test cell passes
# globals()) and reads the student's names and the given names from it: this chapter's reference module cannot be
# imported while grading. Checks print nothing, silence warnings, and put grad mode back on when they end (chapter
# 7's plumbing: check_close, check_equal, fail, checked).
# ==============================================================================================================
from autograde.hidden.ch07_checkpointing import check_close as _close, check_equal as _equal, checked as _checked, fail as _fail  # noqa: E402


def _raises(label: str, error: type, call: Any) -> BaseException:
    __tracebackhide__ = True
    return importlib.import_module("course.checking").check_raises(label, error, call)


def _grad_of(t: Any) -> np.ndarray | None:
    return None if t.grad is None else np.array(t.grad.data)


def _compare_grads(label: str, ours: dict[str, Any], theirs: dict[str, torch.Tensor], rtol: float,
                   atol: float) -> None:
    __tracebackhide__ = True
    for name, t in theirs.items():
        g = _grad_of(ours[name])
        if t.grad is None:
            if g is not None and np.any(g != 0):
                raise _fail(f"{label}: {name} gets a nonzero gradient, torch gives it none")
            continue
        if g is None:
            raise _fail(f"{label}: {name}.grad is None, but torch gives it a gradient")
        _equal(f"{label}: {name}.grad.dtype", g.dtype, np.dtype(str(t.grad.dtype).replace("torch.", "")))
        _close(f"{label}: {name}.grad", g, t.grad.numpy(), rtol=rtol, atol=atol)


# -- Exercise 1: embedding -------------------------------------------------------------------------------------
def _embedding_cases(rng: np.random.Generator) -> list[tuple[str, np.ndarray, Any]]:
    """(label, table, ids): ids of several shapes and integer dtypes, repeated, 0-d, empty, transposed, a list."""
    cases = []
    for dtype in (np.float64, np.float32):
        table = rng.normal(size=(7, 5)).astype(dtype)
        cases += [
            ("ids (3,) with a repeat", table, np.array([2, 6, 2])),
            ("ids (4, 6) int32, every id repeated", table, rng.integers(0, 7, size=(4, 6)).astype(np.int32)),
            ("ids (2, 3, 4) uint8", table, rng.integers(0, 7, size=(2, 3, 4)).astype(np.uint8)),
            ("ids transposed (a strided view)", table, rng.integers(0, 7, size=(5, 3)).T),
            ("a 0-d id", table, np.int64(4)),
            ("ids as a nested list", table, [[0, 6], [6, 6]]),
            ("an empty batch (0, 4)", table, np.zeros((0, 4), dtype=np.int64)),
            ("ids (1, 1)", table, np.array([[3]])),
        ]
    cases.append(("a one-row table", rng.normal(size=(1, 3)), np.zeros((2, 2), dtype=np.int64)))
    return cases


def _torch_embedding(table: np.ndarray, ids: Any) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.tensor(np.array(table), requires_grad=True)
    return t, F.embedding(torch.as_tensor(np.asarray(ids, dtype=np.int64)), t)


def check_embedding_forward(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, embedding = ns["Tensor"], ns["embedding"]
    with _checked():
        for label, table, ids in _embedding_cases(np.random.default_rng(81)):
            kept_table, kept_ids = table.copy(), np.array(ids).copy()
            t = Tensor(table, requires_grad=True)
            out = embedding(t, ids)
            _, ref = _torch_embedding(table, ids)
            where = f"embedding(table {table.shape} {table.dtype}, {label})"
            _equal(f"{where}.shape", out.shape, tuple(ref.shape))
            _equal(f"{where}.dtype", out.dtype, table.dtype)
            _close(where, out.data, ref.detach().numpy(), rtol=0, atol=0)
            if not (np.array_equal(table, kept_table) and np.array_equal(np.array(ids), kept_ids)):
                raise _fail(f"{where} changed the table or the ids in place")
            if out.grad_fn is None or out.grad_fn.name() != "EmbeddingBackward0":
                raise _fail(f"{where}: the output should be recorded by one node named EmbeddingBackward0")
        table = Tensor(np.zeros((5, 2)), requires_grad=True)
        for bad, error in (([0, 5], IndexError), ([-1, 0], IndexError), (np.array([[4, -5]]), IndexError),
                           (np.array([1.0]), TypeError), (np.array([True]), TypeError)):
            _raises(f"embedding(table of 5 rows, {bad!r})", error, lambda: embedding(table, bad))
        _embedding_range_errors(Tensor, embedding)
        # the table as a computed tensor (not a leaf): its gradient still flows back
        base = Tensor(np.ones((4, 3)), requires_grad=True)
        out = embedding(base * 2.0, np.array([1, 1]))
        _close("embedding(base * 2.0, [1, 1])", out.data, np.full((2, 3), 2.0), rtol=0, atol=0)


def _embedding_range_errors(Tensor: Any, embedding: Any) -> None:
    """Ids equal to the number of rows and above it (and negative ones), drawn with a fixed seed, raise IndexError
    as torch's F.embedding does, with a message that names the valid range [0, rows)."""
    __tracebackhide__ = True
    rng = np.random.default_rng(8101)
    for rows, d in ((7, 3), (4, 9), (12, 5), (1, 2)):
        table = rng.normal(size=(rows, d))
        t = Tensor(table, requires_grad=True)
        over = int(rng.integers(rows + 1, 3 * rows + 20))
        shaped = rng.integers(0, rows, size=(2, 3))
        shaped[1, 2] = over
        for bad in ([0, rows], [rows], np.array([[rows - 1, over]], dtype=np.int32), shaped, np.int64(over),
                    [rows + 1000], [0, -1 - int(rng.integers(0, rows))]):
            where = f"embedding(table of {rows} rows and {d} columns, ids {np.asarray(bad).tolist()})"
            _raises(f"{where} in torch (F.embedding)", IndexError,
                    lambda: F.embedding(torch.as_tensor(np.asarray(bad, dtype=np.int64)), torch.tensor(table)))
            error = _raises(where, IndexError, lambda: embedding(t, bad))
            if f"[0,{rows})" not in str(error).replace(" ", ""):
                raise _fail(f"{where} raised IndexError({str(error)!r:.200}); its message should name the valid range "
                            f"[0, {rows})")


def check_embedding_backward(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, embedding = ns["Tensor"], ns["embedding"]
    rng = np.random.default_rng(82)
    with _checked():
        for label, table, ids in _embedding_cases(rng):
            t = Tensor(table, requires_grad=True)
            out = embedding(t, ids)
            t_table, ref = _torch_embedding(table, ids)
            G = rng.normal(size=tuple(ref.shape)).astype(table.dtype)
            kept_ids, kept_G = np.array(ids).copy(), G.copy()
            out.backward(G)
            ref.backward(torch.tensor(G))
            where = f"embedding(table {table.shape} {table.dtype}, {label}).backward(G): table.grad"
            g = _grad_of(t)
            if g is None:
                raise _fail(f"{where} is None")
            _equal(f"{where}.shape", g.shape, table.shape)
            _equal(f"{where}.dtype", g.dtype, table.dtype)
            tol = 1e-13 if table.dtype == np.float64 else 1e-5
            _close(where, g, t_table.grad.numpy(), rtol=tol, atol=tol)
            if not (np.array_equal(np.array(ids), kept_ids) and np.array_equal(G, kept_G)):
                raise _fail(f"{where}: backward changed the ids or the incoming gradient in place")
        # used twice in one graph (token and a second lookup): the gradients of both add
        table = rng.normal(size=(6, 4))
        t = Tensor(table, requires_grad=True)
        (embedding(t, [[1, 2]]) * 3.0 + embedding(t, [[2, 2]])).sum().backward()
        tt = torch.tensor(table, requires_grad=True)
        (F.embedding(torch.tensor([[1, 2]]), tt) * 3.0 + F.embedding(torch.tensor([[2, 2]]), tt)).sum().backward()
        _close("table.grad after two lookups of the same table", _grad_of(t), tt.grad.numpy(), rtol=1e-14, atol=1e-14)


# -- Exercise 2: GELU ------------------------------------------------------------------------------------------
def _gelu_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    edge = np.array([0.0, -0.0, 1e-8, -1e-8, 5.0, -5.0, 9.0, -9.0, 30.0, -30.0, 2.0, -2.0, 0.7071067811865476])
    return [np.concatenate([np.linspace(-8, 8, 161), edge]), rng.normal(size=(3, 4, 5)) * 3, np.array(1.5),
            rng.normal(size=(6, 1)) * 2]


def _gelu_contract(ns: dict, seed: int, grad_of: tuple[int, ...], tols: tuple[float, float]) -> None:
    """gelu against F.gelu on every input of _gelu_inputs, float64 and float32, with the contract's variants."""
    __tracebackhide__ = True
    from autograde.hidden.contract import check_contract
    Tensor, gelu = ns["Tensor"], ns["gelu"]
    for x in _gelu_inputs(np.random.default_rng(seed)):
        for dtype, tol in zip((np.float64, np.float32), tols):
            check_contract("gelu", lambda t: gelu(t), F.gelu, [x.astype(dtype)], dtype, grad_of=grad_of, rtol=tol,
                           atol=tol, tensor=Tensor)


def check_gelu_values(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, gelu = ns["Tensor"], ns["gelu"]
    with _checked():
        _gelu_contract(ns, 83, (), (1e-13, 2e-6))
        out = gelu(Tensor(np.array([-3.0, 3.0]), requires_grad=True))
        if out.grad_fn is None or out.grad_fn.name() != "GeluBackward0":
            raise _fail("gelu(x) should be recorded by one node named GeluBackward0")


def check_gelu_gradient(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, gelu = ns["Tensor"], ns["gelu"]
    rng = np.random.default_rng(84)
    with _checked():
        _gelu_contract(ns, 84, (0,), (1e-12, 5e-6))
        # inside a larger graph: gelu(x * w) summed with x, gradients to x and w
        x, w = rng.normal(size=(4, 3)), rng.normal(size=(3,))
        X, Wt = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
        (gelu(X * Wt) * X).sum().backward()
        tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        (F.gelu(tx * tw) * tx).sum().backward()
        _compare_grads("(gelu(x * w) * x).sum()", {"x": X, "w": Wt}, {"x": tx, "w": tw}, 1e-12, 1e-13)


# -- Exercise 3: causal softmax and attention ---------------------------------------------------------------------
def _torch_causal_softmax(s: torch.Tensor) -> torch.Tensor:
    T = s.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return torch.softmax(s.masked_fill(future, float("-inf")), dim=-1)


def check_causal_softmax(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, causal_softmax = ns["Tensor"], ns["causal_softmax"]
    rng = np.random.default_rng(85)
    shapes = [(2, 3, 6, 6), (1, 1, 1, 1), (4, 7, 7), (3, 3), (2, 0, 4, 4), (1, 2, 9, 9)]
    with _checked():
        for shape in shapes:
            for dtype, tol in ((np.float64, 1e-13), (np.float32, 1e-6)):
                for scale in (1.0, 40.0, 800.0):
                    s = (rng.normal(size=shape) * scale).astype(dtype)
                    G = rng.normal(size=shape).astype(dtype)
                    kept_s, kept_G = s.copy(), G.copy()
                    x = Tensor(s, requires_grad=True)
                    out = causal_softmax(x)
                    ts = torch.tensor(s, requires_grad=True)
                    ref = _torch_causal_softmax(ts)
                    where = f"causal_softmax(scores {shape} {np.dtype(dtype).name}, spread {scale:g})"
                    _equal(f"{where}.dtype", out.dtype, np.dtype(dtype))
                    _close(where, out.data, ref.detach().numpy(), rtol=tol, atol=tol)
                    T = shape[-1]
                    iu = np.triu_indices(T, 1)
                    if np.any(out.data[..., iu[0], iu[1]] != 0):
                        raise _fail(f"{where}: a probability above the diagonal (a future key) is not exactly 0")
                    out.backward(G)
                    ref.backward(torch.tensor(G))
                    _close(f"{where}, backward: scores.grad", _grad_of(x), ts.grad.numpy(), rtol=tol * 10, atol=tol * 10)
                    if not (np.array_equal(s, kept_s) and np.array_equal(G, kept_G)):
                        raise _fail(f"{where} changed the scores or the incoming gradient in place")


def _attention_weights(rng: np.random.Generator, d: int, prefix: str, dtype: Any) -> dict[str, np.ndarray]:
    return {f"{prefix}attn.{n}.{k}": (rng.normal(size=(d, d) if k == "weight" else (d,)) * 0.6).astype(dtype)
            for n in ("q", "k", "v", "proj") for k in ("weight", "bias")}


def check_attention(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, engine_attention = ns["Tensor"], ns["attention"]
    rng = np.random.default_rng(86)
    # (B, T, d, H): several heads, one head, as many heads as columns, one position, one row, odd sizes
    shapes = [(2, 5, 8, 2), (3, 6, 6, 1), (1, 4, 4, 4), (2, 1, 6, 3), (1, 7, 12, 3), (2, 9, 10, 5)]
    with _checked():
        for i, (B, T, d, H) in enumerate(shapes):
            for dtype, rtol, atol in ((np.float64, 1e-10, 1e-12), (np.float32, 2e-4, 2e-5)):
                prefix = f"blocks.{i % 3}."
                Wn = _attention_weights(rng, d, prefix, dtype)
                a = rng.normal(size=(B, T, d)).astype(dtype)
                G = rng.normal(size=(B, T, d)).astype(dtype)
                W = {n: Tensor(w, requires_grad=True) for n, w in Wn.items()}
                x = Tensor(a, requires_grad=True)
                out = engine_attention(x, W, prefix, H)
                Wt = to_torch(Wn)
                xt = torch.tensor(a, requires_grad=True)
                ref = attention(xt, Wt, prefix, H)
                where = f"attention(a {(B, T, d)} {np.dtype(dtype).name}, W, {prefix!r}, {H})"
                _equal(f"{where}.shape", out.shape, (B, T, d))
                _equal(f"{where}.dtype", out.dtype, np.dtype(dtype))
                _close(where, out.data, ref.detach().numpy(), rtol=rtol, atol=atol)
                out.backward(G)
                ref.backward(torch.tensor(G))
                _compare_grads(f"{where}, backward", {"a": x, **W}, {"a": xt, **Wt}, rtol * 10, atol * 10)


# -- Exercise 4: block, logits, loss -----------------------------------------------------------------------------
def _small_configs() -> list[tuple[Config, int, int]]:
    """(config, batch, T): several heads, one head, one block, three blocks, T below, at and at 1 of the context."""
    return [(Config(vocab=30, block=9, d_model=16, n_heads=4, n_layers=2, d_ff=24), 3, 9),
            (Config(vocab=30, block=8, d_model=6, n_heads=1, n_layers=1, d_ff=10, tied=False), 2, 5),
            (Config(vocab=11, block=5, d_model=12, n_heads=3, n_layers=3, d_ff=7), 1, 1),
            (Config(vocab=30, block=6, d_model=8, n_heads=2, n_layers=1, d_ff=16, tied=False), 4, 6)]


def _deep_configs() -> list[tuple[Config, int, int]]:
    """(config, batch, T): models of 11 to 21 blocks, tiny widths (blocks.10. must run after blocks.9., not after
    blocks.1. as names sorted as strings would have it), drawn with a fixed seed."""
    rng = np.random.default_rng(8811)
    configs = []
    for n_layers, tied in ((11, True), (12, False), (int(rng.integers(13, 22)), True)):
        n_heads, d_model = int(rng.choice([1, 2])), int(rng.choice([4, 6]))
        configs.append((Config(vocab=int(rng.integers(7, 20)), block=5, d_model=d_model, n_heads=n_heads,
                               n_layers=n_layers, d_ff=int(rng.integers(2, 6)), tied=tied),
                        int(rng.integers(1, 3)), int(rng.integers(2, 6))))
    return configs


def check_block(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, engine_block = ns["Tensor"], ns["block"]
    rng = np.random.default_rng(87)
    with _checked():
        for k, (config, B, T) in enumerate(_small_configs()):
            for dtype, rtol, atol in ((np.float64, 1e-10, 1e-12), (np.float32, 5e-4, 5e-5)):
                weights = init_weights(config, seed=k, std=0.4, perturb_norms=True, dtype=dtype)
                i = config.n_layers - 1
                h = rng.normal(size=(B, T, config.d_model)).astype(dtype)
                G = rng.normal(size=h.shape).astype(dtype)
                W = {n: Tensor(w, requires_grad=True) for n, w in weights.items()}
                x = Tensor(h, requires_grad=True)
                out = engine_block(x, W, f"blocks.{i}.", config.n_heads)
                Wt = to_torch(weights)
                xt = torch.tensor(h, requires_grad=True)
                ref = block(xt, Wt, i, config)
                where = f"block(h {h.shape} {np.dtype(dtype).name}, W, 'blocks.{i}.', {config.n_heads})"
                _equal(f"{where}.dtype", out.dtype, np.dtype(dtype))
                _close(where, out.data, ref.detach().numpy(), rtol=rtol, atol=atol)
                out.backward(G)
                ref.backward(torch.tensor(G))
                _compare_grads(f"{where}, backward", {"h": x, **W}, {"h": xt, **Wt}, rtol * 10, atol * 10)


def check_loss(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, logits_fn, loss = ns["Tensor"], ns["logits"], ns["loss_fn"]
    rng = np.random.default_rng(88)
    with _checked():
        for k, (config, B, T) in enumerate(_small_configs() + _deep_configs()):
            for dtype, rtol, atol in ((np.float64, 1e-10, 1e-12), (np.float32, 5e-4, 5e-5)):
                weights = init_weights(config, seed=10 + k, std=0.4, perturb_norms=True, dtype=dtype)
                x = rng.integers(0, config.vocab, size=(B, T))
                y = rng.integers(0, config.vocab, size=(B, T))
                kept = x.copy(), y.copy()
                W = {n: Tensor(w, requires_grad=True) for n, w in weights.items()}
                Wt = to_torch(weights)
                where = f"loss_fn(W, x {x.shape}, y, {config.n_heads}) ({np.dtype(dtype).name}, tied={config.tied}, " \
                        f"{config.n_layers} blocks)"
                out = logits_fn(W, x, config.n_heads)
                ref_logits = logits(Wt, x, config)
                _equal(f"logits of {where}: shape", out.shape, (B, T, config.vocab))
                _close(f"logits of {where}", out.data, ref_logits.detach().numpy(), rtol=rtol, atol=atol)
                ours = loss(W, x.tolist() if k == 1 else x, y, config.n_heads)
                theirs = loss_fn(Wt, x, y, config)
                _equal(f"{where}.dtype", ours.dtype, np.dtype(dtype))
                _equal(f"{where}.shape", ours.shape, ())
                _close(where, ours.item(), theirs.item(), rtol=rtol, atol=0)
                ours.backward()
                theirs.backward()
                _compare_grads(f"{where}, backward", W, Wt, rtol * 10, atol * 10)
                if not (np.array_equal(x, kept[0]) and np.array_equal(y, kept[1])):
                    raise _fail(f"{where} changed x or y in place")
        _model_errors(Tensor, logits_fn, loss)



def _model_errors(Tensor: Any, logits_fn: Any, loss: Any) -> None:
    """Ids that are not (B, T), or with T above pos_emb's rows, drawn with a fixed seed, raise ValueError (as the
    oracle does) with a message that names x's shape and the number of positions."""
    __tracebackhide__ = True
    rng = np.random.default_rng(8102)
    for config in (Config(block=4, d_model=8, n_heads=2, n_layers=1, d_ff=8),
                   Config(vocab=13, block=6, d_model=3, n_heads=1, n_layers=2, d_ff=5, tied=False),
                   Config(vocab=9, block=2, d_model=10, n_heads=2, n_layers=1, d_ff=4)):
        W = {n: Tensor(w) for n, w in init_weights(config).items()}
        P = config.block
        shapes = [(1, P + 1), (int(rng.integers(1, 4)), P + int(rng.integers(2, 9))), (P + 3, P + 1), (3,),
                  (2, P, 3), (1, 2, 2), (2, 1, 1, 1), (P + 2, 1, P)]
        for shape in shapes:
            bad = rng.integers(0, config.vocab, size=shape)
            where = f"logits(W, ids of shape {shape}, {config.n_heads}) for a model of {P} positions"
            _raises(f"{where} in torch (the oracle)", ValueError, lambda: logits(to_torch(init_weights(config)), bad, config))
            for label, call in ((where, lambda: logits_fn(W, bad, config.n_heads)),
                                (where.replace("logits(W, ids", "loss_fn(W, ids"),
                                 lambda: loss(W, bad, bad, config.n_heads))):
                error = str(_raises(label, ValueError, call))
                if str(shape) not in error or not re.search(rf"(?<!\d){P}(?!\d)", error.replace(str(shape), "")):
                    raise _fail(f"{label} raised ValueError({error!r:.200}); its message should name the shape of x, "
                                f"{shape}, and the number of positions, {P}")


# -- Exercise 5: decayed and the training step ---------------------------------------------------------------------
def check_decayed(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, decayed = ns["Tensor"], ns["decayed"]
    with _checked():
        for config in (Config(vocab=30, block=4, d_model=8, n_heads=2, n_layers=3, d_ff=8),
                       Config(vocab=11, block=5, d_model=6, n_heads=3, n_layers=2, d_ff=4, tied=False),
                       Config(vocab=30, block=8, d_model=8, n_heads=1, n_layers=1, d_ff=8)):
            weights = init_weights(config)
            for kind, W in (("arrays", weights), ("Tensors", {n: Tensor(w, requires_grad=True) for n, w in weights.items()})):
                got = decayed(W)
                where = f"decayed(W) for {config.n_layers} blocks, tied={config.tied}, W a dict of {kind}"
                if not all(isinstance(n, str) for n in got):
                    raise _fail(f"{where} should return names (str), got {got!r:.200}")
                _equal(f"sorted({where})", sorted(got), sorted(decay_names(config)))


RECIPES = {
    "plain": dict(),
    "four micro-batches, checkpointed blocks": dict(micro_batches=4, checkpoint=True),
    "clipping that bites, two micro-batches, no decay": dict(max_norm=0.05, weight_decay=0.0, micro_batches=2),
    "untied head, no clipping, strong decay": dict(max_norm=None, tied=False, weight_decay=0.5),
}


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """The training checks with one thread for torch and NumPy's BLAS, whatever the notebook set (a student who
    removed fix_threads(1) must not run into the cell's time limit on a busy grading machine); then as before."""
    torch_before, blas_before = torch.get_num_threads(), blas_threads()
    fix_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(torch_before)
        if blas_before is not None:
            blas_threads(blas_before)


@_one_thread()
def check_train_float64(ns: dict) -> None:
    """20 float64 steps of the notebook's train (the student's step) against torch's loop: losses and weights."""
    __tracebackhide__ = True
    from course import text
    train_fn = ns["train"]
    data = text.encode(text.corpus(20_000))
    with _checked():
        for recipe, settings in RECIPES.items():
            settings = dict(settings)
            tied = settings.pop("tied", True)
            config = Config(vocab=30, block=16, d_model=16, n_heads=4, n_layers=2, d_ff=32, tied=tied)
            weights = init_weights(config, seed=7, perturb_norms=True)
            ours, our_w = train_fn(weights, config.n_heads, text.batches(data, 8, 4, seed=5), 20, lr=1e-2, **settings)
            theirs, their_w = train(weights, config, text.batches(data, 8, 4, seed=5), 20,
                                    TrainSettings(lr=1e-2, **settings))
            where = f"20 float64 training steps ({recipe})"
            if len(ours) != 20 or not all(isinstance(v, float) for v in ours):
                raise _fail(f"{where}: step() should return the step's loss as a Python float, got {ours[:3]!r:.200}")
            _close(f"{where}: the loss at each step", np.array(ours), np.array(theirs), rtol=1e-6, atol=0)
            for name in weights:
                _close(f"{where}: the final {name}", our_w[name], their_w[name], rtol=1e-6, atol=1e-9)


# -- Exercise 6: the scaled step ---------------------------------------------------------------------------------
@_one_thread()
def check_scaled_skips(ns: dict) -> None:
    """From a scale of 2**24 on a repeated batch, the engine skips the steps torch skips, and backs off as torch."""
    __tracebackhide__ = True
    import itertools
    from course import text
    train_fn = ns["train"]
    data = text.encode(text.corpus(20_000))
    with _checked():
        for k, (micro, ckpt) in enumerate(((1, False), (2, True))):
            config = Config(vocab=30, block=16, d_model=16, n_heads=4, n_layers=2, d_ff=32)
            weights = init_weights(config, seed=6 + k, dtype=np.float32)
            x, y = next(text.batches(data, 16, 8, seed=9 + k))
            ours, _ = train_fn(weights, 4, itertools.repeat((x, y)), 10, lr=1e-2, autocast=np.float16,
                               init_scale=2.0 ** 24, micro_batches=micro, checkpoint=ckpt)
            theirs, _ = train(weights, config, itertools.repeat((x, y)), 10,
                              TrainSettings(lr=1e-2, autocast=torch.float16, init_scale=2.0 ** 24,
                                            micro_batches=micro, checkpoint=ckpt))

            def skipped(losses: list[float]) -> int:
                return next((i for i in range(1, len(losses)) if losses[i] != losses[0]), len(losses))

            where = f"float16 training from a scale of 2**24 on one repeated batch ({micro} micro-batches)"
            _equal(f"{where}: the first step that was not skipped", skipped(ours), skipped(theirs))


@_one_thread()
def check_scaled_step(ns: dict) -> None:
    """Float16 autocast training against torch's (rtol 10u, as the notebook derives), clipped."""
    __tracebackhide__ = True
    from course import text
    train_fn = ns["train"]
    data = text.encode(text.corpus(20_000))
    with _checked():
        for recipe, settings in (("clipping at 0.05", dict(max_norm=0.05)),
                                 ("four micro-batches", dict(micro_batches=4)),
                                 ("untied, clipping at 0.05", dict(tied=False, max_norm=0.05))):
            settings = dict(settings)
            tied = settings.pop("tied", True)
            config = Config(vocab=30, block=16, d_model=16, n_heads=4, n_layers=2, d_ff=32, tied=tied)
            weights = init_weights(config, seed=6, dtype=np.float32)
            ours, our_w = train_fn(weights, 4, text.batches(data, 12, 8, seed=1), 10, lr=1e-2, autocast=np.float16,
                                   **settings)
            theirs, _ = train(weights, config, text.batches(data, 12, 8, seed=1), 10,
                              TrainSettings(lr=1e-2, autocast=torch.float16, **settings))
            where = f"10 float16 autocast steps ({recipe})"
            _close(f"{where}: the loss at each step", np.array(ours), np.array(theirs), rtol=10 * 2.0 ** -11, atol=0,
                   against="torch's float16 autocast with GradScaler (rtol 10u, as the notebook derives)")
            bad = sorted(n for n, w in our_w.items() if w.dtype != np.float32)
            if bad:
                raise _fail(f"{where}: the master weights should stay float32, got {bad[:3]} in another dtype")


# -- Exercise 7: one block's saved bytes -----------------------------------------------------------------------------
# The exercise grades the formula: the meter measures the notebook's block, which is the course's while an exercise 7
# test cell is graded (the harness puts the course's solution of the other exercises in). The whole model's formula
# (saved_bytes_formula) is an ungraded exercise in Going further, checked by a visible cell only.
def _count(label: str, value: Any) -> int:
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _fail(f"{label} should be an int (a number of bytes), got {type(value).__name__} {value!r:.100}")
    return int(value)


def _torch_probability_bytes(B: int, T: int, d: int, H: int, dtype: torch.dtype) -> int:
    """The bytes torch's autograd saves, in the oracle's attention, in tensors of B*H*T*T numbers ending (T, T): the
    probabilities, counted at each save by torch.autograd.graph.saved_tensors_hooks (d_head != T keeps q, k, v out)."""
    assert d // H != T
    found: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() and t.numel() == B * H * T * T and tuple(t.shape[-2:]) == (T, T):
            found.append(t.numel() * t.element_size())
        return t

    g = torch.Generator().manual_seed(B * 100 + T)
    a = torch.randn(B, T, d, dtype=dtype, generator=g, requires_grad=True)
    W = {f"blocks.0.attn.{n}.{k}": (torch.randn((d, d) if k == "weight" else (d,), dtype=dtype, generator=g) * 0.5)
         .requires_grad_() for n in ("q", "k", "v", "proj") for k in ("weight", "bias")}
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attention(a, W, "blocks.0.", H)
    return sum(found)


def check_block_bytes(ns: dict) -> None:
    """block_saved_bytes against the meter around the notebook's block on unseen shapes and dtypes, and its T^2
    term against the bytes torch saves in (B, H, T, T) tensors for attention written out as softmax(...) @ v (the
    probabilities, saved twice; torch's fused scaled_dot_product_attention would save none)."""
    __tracebackhide__ = True
    Tensor, engine_block, formula, meter = ns["Tensor"], ns["block"], ns["block_saved_bytes"], ns["saved_bytes"]
    rng = np.random.default_rng(89)
    # (B, T, d, H, d_ff): T != B, one head and several, d_ff below, at and above 4 d, one position, one row
    shapes = [(3, 7, 12, 3, 20), (2, 4, 6, 1, 24), (1, 9, 8, 4, 8), (4, 1, 10, 5, 13), (5, 2, 4, 2, 40)]
    with _checked():
        for B, T, d, H, d_ff in shapes:
            for dtype in (np.float64, np.float32, np.float16):
                config = Config(vocab=30, block=max(T, 2), d_model=d, n_heads=H, n_layers=1, d_ff=d_ff)
                leaves = {name: Tensor(array, requires_grad=True) for name, array
                          in init_weights(config, seed=B + T, dtype=dtype, perturb_norms=True).items()}
                h = Tensor(rng.normal(size=(B, T, d)).astype(dtype), requires_grad=True)
                before = meter()
                out = engine_block(h, leaves, "blocks.0.", H)
                measured = meter() - before
                one_number = np.dtype(dtype).itemsize
                where = f"block_saved_bytes({B}, {T}, {d}, {H}, {d_ff}, {one_number})"
                _equal(f"{where} (against the meter around the course's block, {np.dtype(dtype).name})",
                       _count(where, formula(B, T, d, H, d_ff, one_number)), measured)
                del out
        for B, T, d, H in ((2, 5, 8, 2), (3, 4, 6, 1), (1, 7, 12, 3)):
            for dtype in (torch.float64, torch.float32):
                s = torch.empty((), dtype=dtype).element_size()
                f = [_count("block_saved_bytes", formula(B, m * T, d, H, 16, s)) for m in (1, 2, 3)]
                quadratic = (f[2] - 2 * f[1] + f[0]) // 2        # the T^2 term at T (a second difference)
                _equal(f"the T^2 term of block_saved_bytes({B}, {T}, {d}, {H}, d_ff, {s}) (from T, 2T, 3T), against "
                       f"the bytes torch's autograd saves in (B, H, T, T) tensors for attention written out as "
                       f"softmax(q k^T / sqrt(d_head)) @ v: the probabilities, saved by the softmax and by the product "
                       f"with v ({str(dtype)[6:]})",
                       quadratic, _torch_probability_bytes(B, T, d, H, dtype))
