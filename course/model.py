"""The capstone's model, as data: its sizes (Config), its parameters' names in a fixed order, seeded initial weights
as NumPy arrays, and which parameters AdamW decays.

Chapter 8's notebook builds the model on the engine from these arrays, and the chapter's torch oracle
(autograde/hidden/ch08_capstone.py) builds the same model in torch from the same arrays, so both start from the
same numbers. Weights are stored as the engine uses them: a linear layer's matrix is (in, out), used as x @ W.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Config", "param_names", "init_weights", "decay_names"]


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
