"""Small seeded 2-D classification datasets made with NumPy (no download, no scikit-learn).

Each generator returns (X, y): X a float64 array of shape (n, 2), y an int64
array of shape (n,) with class labels 0, 1, ...; the same arguments always give
the same arrays.
"""
from __future__ import annotations

import numpy as np

__all__ = ["make_moons", "make_spirals"]


def _split(n: int, parts: int) -> list[int]:
    """n points split into `parts` class sizes that differ by at most one."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < parts:
        raise ValueError(f"n must be an int of at least {parts} (one point per class), got {n!r}")
    return [n // parts + (1 if k < n % parts else 0) for k in range(parts)]


def make_moons(n: int = 200, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles (class 0 on top, class 1 below), with Gaussian noise of std `noise`.

    The classes cannot be separated by a line, so a linear model fails and a
    small MLP succeeds: the standard first test of a training loop.
    """
    rng = np.random.default_rng(seed)
    n0, n1 = _split(n, 2)
    t0 = np.linspace(0.0, np.pi, n0)
    t1 = np.linspace(0.0, np.pi, n1)
    upper = np.stack([np.cos(t0), np.sin(t0)], axis=1)
    lower = np.stack([1.0 - np.cos(t1), 0.5 - np.sin(t1)], axis=1)
    X = np.concatenate([upper, lower]) + rng.normal(scale=noise, size=(n0 + n1, 2))
    y = np.concatenate([np.zeros(n0, dtype=np.int64), np.ones(n1, dtype=np.int64)])
    order = rng.permutation(n0 + n1)
    return X[order], y[order]


def make_spirals(n: int = 300, classes: int = 3, noise: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`classes` interleaved spiral arms from the origin to radius 1, the angle jittered by noise of std `noise`."""
    if not isinstance(classes, (int, np.integer)) or classes < 2:
        raise ValueError(f"classes must be an int of at least 2, got {classes!r}")
    rng = np.random.default_rng(seed)
    points, labels = [], []
    for k, size in enumerate(_split(n, classes)):
        radius = np.linspace(0.0, 1.0, size)
        angle = np.linspace(4.0 * k, 4.0 * (k + 1), size) + rng.normal(scale=noise, size=size)
        points.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        labels.append(np.full(size, k, dtype=np.int64))
    X = np.concatenate(points)
    y = np.concatenate(labels)
    order = rng.permutation(len(y))
    return X[order], y[order]
