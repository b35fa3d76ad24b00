"""A small character corpus that the course writes itself, for the capstone's language model (nothing downloaded).

corpus() builds English-like text about gradients from a seeded grammar: sentences such as "the optimiser
scales every gradient before the step." grouped into paragraphs. The words, templates and sentence lengths
repeat enough that a transformer of a few thousand parameters learns spelling and word order within a
minute on a laptop, and vary enough that it cannot simply memorise the text.

The text is the same on every Python and every NumPy: the choices come from SplitMix64, written here in
Python integers (no `random`, no NumPy generator, no `hash()`, no standard-library text), so a notebook's
losses and samples do not change when the environment does. encode()/decode() map characters to the int64
ids of VOCAB and back; batches() draws (x, y) blocks of a token array, y being x shifted by one character.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator, Sequence

import numpy as np

__all__ = ["VOCAB", "SplitMix64", "corpus", "encode", "decode", "batches", "split"]

VOCAB: str = "\n ,.abcdefghijklmnopqrstuvwxyz"
"""Every character the corpus uses, in id order: id 0 is the newline, 1 the space."""

_INDEX = {ch: i for i, ch in enumerate(VOCAB)}
_MASK = (1 << 64) - 1


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64 generator in Python integers: the same stream on every platform."""

    def __init__(self, seed: int) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"the seed must be an int, got {type(seed).__name__}")
        self.state = seed & _MASK

    def next_u64(self) -> int:
        """The next 64-bit output."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """An int in [0, n), by Lemire's multiply-shift (no modulo; the bias is below n / 2**64)."""
        if n <= 0:
            raise ValueError(f"below(n) needs n >= 1, got {n}")
        return (self.next_u64() * n) >> 64

    def choice(self, options: Sequence[str]) -> str:
        """One of options, each equally likely."""
        return options[self.below(len(options))]


# -- the grammar -------------------------------------------------------------------------------------------
_WORDS: dict[str, tuple[str, ...]] = {
    "agent": ("the engine", "the optimiser", "the tape", "the student", "the backward pass", "the scaler",
              "the checkpoint", "the model", "the trainer", "torch"),
    "thing": ("gradient", "loss", "weight", "tensor", "graph", "node", "rule", "step", "batch", "block",
              "matrix", "token", "head", "layer", "scale", "norm", "bias", "mask"),
    "verb": ("records", "multiplies", "scales", "frees", "saves", "adds", "checks", "clips", "updates",
             "recomputes", "sums", "divides", "reads", "keeps", "sends"),
    "quantity": ("every", "each", "the first", "the last", "one", "no", "the same", "a small", "a large"),
    "place": ("before the step", "after the forward pass", "in the backward pass", "at every layer",
              "through the residual", "inside the block", "along the last axis", "for each token",
              "in float sixteen", "on the tape"),
    "adjective": ("small", "large", "tiny", "wrong", "finite", "shared", "causal", "fused", "scaled", "saved"),
    "because": ("because the chain rule says so", "because the paths add", "so that nothing overflows",
                "so that memory stays low", "so that torch agrees", "because the mask hides the future",
                "because the scale cancels", "so that the loss goes down"),
}

_TEMPLATES: tuple[str, ...] = (
    "{agent} {verb} {quantity} {thing} {place}.",
    "{agent} {verb} the {thing} {because}.",
    "when {agent} {verb} the {thing}, the {thing} stays {adjective}.",
    "a {adjective} {thing} {verb} the {thing} {place}.",
    "if the {thing} is {adjective}, {agent} {verb} it {place}.",
    "{agent} never {verb} a {adjective} {thing}.",
    "the {thing} of the {thing} is {adjective} {because}.",
)


def _sentence(rng: SplitMix64) -> str:
    """One sentence: a template with each slot filled by a word of its kind."""
    template = rng.choice(_TEMPLATES)
    parts = template.split("{")
    out = [parts[0]]
    for part in parts[1:]:
        slot, rest = part.split("}", 1)
        out.append(rng.choice(_WORDS[slot]) + rest)
    return "".join(out)


@lru_cache(maxsize=4)
def corpus(size: int = 100_000, seed: int = 0) -> str:
    """About `size` characters (whole paragraphs, at least size) of grammar text; the same arguments, the same text."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"corpus size must be a positive int (characters), got {size!r}")
    rng = SplitMix64(seed)
    paragraphs: list[str] = []
    length = 0
    while length < size:
        sentences = [_sentence(rng) for _ in range(3 + rng.below(4))]     # three to six sentences a paragraph
        paragraph = " ".join(sentences) + "\n"
        paragraphs.append(paragraph)
        length += len(paragraph)
    return "".join(paragraphs)


# -- characters <-> ids ------------------------------------------------------------------------------------
def encode(text: str) -> np.ndarray:
    """The ids of text's characters in VOCAB, as an int64 array of shape (len(text),)."""
    if not isinstance(text, str):
        raise TypeError(f"encode() takes a str, got {type(text).__name__}")
    try:
        return np.fromiter((_INDEX[ch] for ch in text), dtype=np.int64, count=len(text))
    except KeyError as error:
        ch = error.args[0]
        raise ValueError(f"character {ch!r} at position {text.index(ch)} is not in the vocabulary "
                         f"(VOCAB has newline, space, comma, full stop and a-z)") from None


def decode(ids: Sequence[int] | np.ndarray) -> str:
    """The text whose character ids are ids (a 1-D sequence of ints in [0, len(VOCAB)))."""
    array = np.asarray(ids)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ValueError(f"decode() takes a 1-D sequence of integer ids, got shape {array.shape}, dtype {array.dtype}")
    bad = np.flatnonzero((array < 0) | (array >= len(VOCAB)))
    if bad.size:
        raise ValueError(f"id {int(array[bad[0]])} at position {int(bad[0])} is outside the vocabulary "
                         f"[0, {len(VOCAB)})")
    return "".join(VOCAB[i] for i in array.tolist())


def split(data: np.ndarray, train_fraction: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """The first train_fraction of data for training, the rest for validation (no shuffling: no leak)."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be strictly between 0 and 1, got {train_fraction}")
    cut = int(len(data) * train_fraction)
    return data[:cut], data[cut:]


def batches(data: np.ndarray, block: int, batch: int, seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Endless (x, y) int64 pairs of shape (batch, block): x = data[i:i+block], y = data[i+1:i+block+1].

    The starts i are drawn with SplitMix64(seed), uniformly over every start where a whole block and its
    next character fit, so the same arguments give the same batches on every NumPy.
    """
    data = np.asarray(data)
    if data.ndim != 1 or data.dtype.kind not in "iu":
        raise ValueError(f"batches() needs a 1-D integer token array, got shape {data.shape}, dtype {data.dtype}")
    for name, value in (("block", block), ("batch", batch)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    starts = len(data) - block                      # i + block must be a valid index for the last target
    if starts < 1:
        raise ValueError(f"data of length {len(data)} is too short for blocks of {block} tokens and their targets "
                         f"(needs at least {block + 1})")
    data = data.astype(np.int64, copy=False)
    rng = SplitMix64(seed)
    offsets = np.arange(block + 1)
    while True:
        rows = np.array([rng.below(starts) for _ in range(batch)], dtype=np.int64)
        window = data[rows[:, None] + offsets]      # (batch, block + 1)
        yield window[:, :-1].copy(), window[:, 1:].copy()
