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
import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.checkpoint as torch_ckpt


@dataclass(frozen=True)
class Config:
    """The model's sizes: vocabulary, context length, width, heads, blocks, MLP width, tied head."""

    vocab: int = 30
    block: int = 32
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    tied: bool = True
    eps: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("vocab", "block", "d_model", "n_heads", "n_layers", "d_ff"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Config.{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


def param_names(config: Config) -> list[str]:
    """Every parameter's name, in a fixed order (the order of init_weights and of the optimiser's lists)."""
    names = ["tok_emb", "pos_emb"]
    for i in range(config.n_layers):
        p = f"blocks.{i}."
        names += [p + n for n in ("ln1.weight", "ln1.bias", "attn.q.weight", "attn.q.bias", "attn.k.weight",
                                  "attn.k.bias", "attn.v.weight", "attn.v.bias", "attn.proj.weight",
                                  "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias",
                                  "mlp.proj.weight", "mlp.proj.bias")]
    names += ["ln_f.weight", "ln_f.bias"] + ([] if config.tied else ["head.weight"])
    return names


def init_weights(config: Config, seed: int = 0, dtype: Any = np.float64, std: float = 0.02,
                 perturb_norms: bool = False) -> dict[str, np.ndarray]:
    """Seeded NumPy arrays for every parameter: N(0, std) matrices and embeddings (the residual projections
    scaled by 1/sqrt(2 n_layers), as GPT-2), zero biases, unit norm scales. perturb_norms draws the norms'
    scales and shifts and every bias at random too, so that tests see each of them matter."""
    rng = np.random.default_rng(seed)
    d, ff, V, T = config.d_model, config.d_ff, config.vocab, config.block
    shapes = {"tok_emb": (V, d), "pos_emb": (T, d), "ln_f.weight": (d,), "ln_f.bias": (d,), "head.weight": (d, V)}
    for i in range(config.n_layers):
        p = f"blocks.{i}."
        shapes.update({p + "ln1.weight": (d,), p + "ln1.bias": (d,), p + "ln2.weight": (d,), p + "ln2.bias": (d,),
                       p + "attn.proj.weight": (d, d), p + "attn.proj.bias": (d,),
                       p + "mlp.fc.weight": (d, ff), p + "mlp.fc.bias": (ff,),
                       p + "mlp.proj.weight": (ff, d), p + "mlp.proj.bias": (d,)})
        for n in "qkv":
            shapes[p + f"attn.{n}.weight"], shapes[p + f"attn.{n}.bias"] = (d, d), (d,)
    weights = {}
    for name in param_names(config):
        shape = shapes[name]
        if name.endswith(".bias"):
            w = rng.normal(0.0, 0.1, shape) if perturb_norms else np.zeros(shape)
        elif len(shape) == 1:                                       # a layer norm's scale
            w = 1.0 + rng.normal(0.0, 0.1, shape) if perturb_norms else np.ones(shape)
        else:
            scale = std / math.sqrt(2 * config.n_layers) if name.endswith("proj.weight") else std
            w = rng.normal(0.0, scale, shape)
        weights[name] = np.asarray(w, dtype=dtype)
    return weights


def decay_names(config: Config) -> list[str]:
    """The parameters AdamW decays: the matrices of linear layers (never biases, norms or embeddings)."""
    linear = ("attn.", "mlp.", "head.")
    return [n for n in param_names(config) if n.endswith(".weight") and any(part in n for part in linear)]


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
    out = out.transpose(1, 2).reshape(B, T, d)
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

    lr: float = 5e-3
    betas: tuple[float, float] = (0.9, 0.99)
    eps: float = 1e-8
    weight_decay: float = 0.1
    max_norm: float | None = 1.0
    micro_batches: int = 1
    autocast: Any = None            # None, or the low dtype (torch.bfloat16 / torch.float16)
    init_scale: float = 2.0 ** 10   # the GradScaler's first scale when autocast is on
    checkpoint: bool = False


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
        scaler.step(optimizer)
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
