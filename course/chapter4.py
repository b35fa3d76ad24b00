"""Given code of Chapter 4 that its notebook only calls: the Chapter 3 network (init_mlp, mlp), the check of an
optimiser's parameters with PyTorch's errors (checked_params), and the gradient norm of each parameter (grad_norms).
(backward's root_gradient stays in the notebook: its checks answer a Chapter 2 exercise, and course/ ships with
every chapter.) The notebook's setup cell imports them, so course/reference/ch04_accumulation.py re-exports them
and later chapters find them where they always did.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["init_mlp", "mlp", "checked_params", "grad_norms"]


def _tensor_class() -> type:
    """Chapter 2's Tensor (imported when first needed: chapters 1 and 2 ship without its reference)."""
    from course.reference.ch02_tape import Tensor
    return Tensor


def init_mlp(sizes: Sequence[int], seed: int = 0, dtype: Any = np.float64) -> list[np.ndarray]:
    """He-initialised weights and zero biases for an MLP with these layer sizes, as arrays [W1, b1, W2, b2, ...]."""
    rng = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays.append((rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(dtype))
        arrays.append(np.zeros(fan_out, dtype=dtype))
    return arrays


def mlp(params: Sequence[Any], inputs: Any) -> Any:
    """relu(... relu(inputs @ W1 + b1) ...) @ Wn + bn, for this engine's Tensors or torch's."""
    h = inputs
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.relu()
    return h


def checked_params(params: Iterable[Any]) -> list[Any]:
    """The optimiser's parameters as a list, checked as torch checks them."""
    tensor = _tensor_class()
    if isinstance(params, tensor):
        raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                        "but got Tensor: pass [tensor]")
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    for i, p in enumerate(params):
        if not isinstance(p, tensor):
            raise TypeError(f"optimizer can only optimize Tensors, but parameter {i} is {type(p).__name__}")
        if not p.is_leaf:
            raise ValueError("can't optimize a non-leaf Tensor: optimise the leaf it was computed from")
        if not p.requires_grad:
            # torch accepts such a tensor and never updates it (its .grad stays None); the engine says so
            raise ValueError(f"parameter {i} does not require grad, so it would never be updated: "
                             f"create it with requires_grad=True")
    return params


def grad_norms(named_params: dict[str, Any]) -> dict[str, float | None]:
    """The 2-norm of each parameter's gradient (None if it has none): a monitoring table."""
    return {name: (None if p.grad is None else float(np.sqrt(np.sum(p.grad.data.astype(np.float64) ** 2))))
            for name, p in named_params.items()}
