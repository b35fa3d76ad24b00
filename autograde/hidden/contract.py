"""The contract every graded operation keeps, checked once for all chapters: wherever torch accepts an input,
the engine agrees with it, and leaves its inputs alone.

A chapter's helper that compares one operation with torch on some arrays (ch03's compare_op, and any later
chapter's that calls check_contract) also runs the operation on inputs derived from those arrays:
- non-contiguous: the same values in arrays whose memory is strided (a transposed or sliced view);
- 0-d: every input a scalar array; size-1: every axis of length 1; empty: the first axis of length 0;
and, for each variant torch accepts (torch raising means the variant is not a valid input of the operation,
and it is skipped), checks that the engine's value, dtype and gradients match torch's, and that neither the
forward nor the backward pass changed the caller's arrays. The values are drawn from the original arrays (so
a log still sees positive numbers, a division no zeros); the choice is deterministic, so a notebook graded
twice gets the same score.

These are properties of every rule rather than of one exercise, which is why they live here and not in a test
per case (issue: inputs mutated in place, size-0 and size-1 dimensions, non-contiguous inputs, 0-d tensors,
float32 kept).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

import course.checking as checking


def _values(original: np.ndarray, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    flat = np.asarray(original, dtype=dtype).ravel()
    if flat.size == 0:
        return np.zeros(shape, dtype=dtype)
    return np.resize(flat, shape).astype(dtype)


def _strided(a: np.ndarray) -> np.ndarray:
    """The same values in memory that is not contiguous (a view: every other element of a wider array)."""
    if a.ndim == 0 or a.size == 0:
        return a
    return np.repeat(a, 2, axis=-1)[..., ::2]


def variants(arrays: Sequence[np.ndarray], dtype: Any, elementwise: bool) -> Iterator[tuple[str, list[np.ndarray]]]:
    """(what, arrays) for each input variant derived from the given arrays: non-contiguous for every operation;
    0-d, size-1 and empty for an elementwise one (its result has the inputs' broadcast shape), where any shape
    is valid. (An operation that reduces or indexes takes an axis or an index that a 0-d or empty input may not
    have, and torch accepts some that NumPy refuses, dim=0 of a 0-d tensor among them.)"""
    arrays = [np.asarray(a, dtype=dtype) for a in arrays]
    if not any(a.ndim for a in arrays):
        return
    yield "non-contiguous (strided) inputs", [_strided(a.copy()) for a in arrays]
    if elementwise:
        yield "0-d inputs", [_values(a, (), dtype) for a in arrays]
        yield "inputs with every axis of size 1", [_values(a, (1,) * a.ndim, dtype) for a in arrays]
        yield "an empty first axis", [_values(a, (0, *a.shape[1:]) if a.ndim else (), dtype) for a in arrays]


def check_contract(label: str, engine_fn: Callable[..., Any], torch_fn: Callable[..., torch.Tensor],
                   arrays: Sequence[np.ndarray], dtype: Any, grad_of: Sequence[int], rtol: float, atol: float,
                   tensor: Callable[..., Any]) -> None:
    """Run engine_fn (on tensor(array, requires_grad=...)) and torch_fn on each variant of arrays that torch
    accepts; compare value, dtype and .grad, and check that the caller's arrays did not change."""
    rng = np.random.default_rng(20261125)  # its own stream: the caller's random draws stay as they were
    try:
        shape = tuple(torch_fn(*[torch.tensor(np.asarray(a, dtype=dtype)) for a in arrays]).shape)
        elementwise = shape == tuple(np.broadcast_shapes(*[np.shape(a) for a in arrays]))
    except (RuntimeError, ValueError, IndexError, TypeError):
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # an empty mean warns in NumPy: not the student's
        warnings.simplefilter("ignore")
        for what, data in variants(arrays, dtype, elementwise):
            _check_variant(what, data, label, engine_fn, torch_fn, dtype, grad_of, rtol, atol, rng, tensor)


def _check_variant(what: str, data: list[np.ndarray], label: str, engine_fn: Callable[..., Any],
                   torch_fn: Callable[..., torch.Tensor], dtype: Any, grad_of: Sequence[int], rtol: float,
                   atol: float, rng: np.random.Generator, tensor: Callable[..., Any]) -> None:
    """One variant: skipped where torch refuses it, else compared with torch, inputs checked unchanged."""
    ts = [torch.tensor(np.array(d), requires_grad=i in grad_of) for i, d in enumerate(data)]
    try:
        t_out = torch_fn(*ts)
        G = np.asarray(rng.normal(size=tuple(t_out.shape))).astype(dtype)
        if any(i in grad_of for i in range(len(ts))):
            t_out.backward(torch.from_numpy(G.copy()))
    except (RuntimeError, ValueError, IndexError, TypeError):
        return  # not a valid input of this operation
    kept = [d.copy() for d in data]
    where = f"{label} on {what} (shapes {[tuple(d.shape) for d in data]}, {np.dtype(dtype).name})"
    xs = [tensor(d, requires_grad=i in grad_of) for i, d in enumerate(data)]
    step = "forward"
    try:
        out = engine_fn(*xs)
        value = np.array(out.data, copy=True)
        if any(i in grad_of for i in range(len(xs))):
            step = "backward"
            out.backward(G.copy())
    except Exception as error:  # noqa: BLE001 - the message says what torch does with the same input
        if what == "an empty first axis" and "zero-size array to reduction" in str(error):
            return  # a max over an empty axis, which NumPy refuses and torch skips: not required
        if what == "0-d inputs" and isinstance(error, np.exceptions.AxisError):
            return  # an axis of a 0-d array, which NumPy refuses and torch accepts (dim=0 or -1): not required
        raise checking.failure(f"{where}: torch computes it (a result of shape {tuple(t_out.shape)}), but the "
                               f"engine's {step} raised {type(error).__name__}: {error}") from None
    checking.check_close(f"the value of {where}", value, t_out.detach(), rtol=rtol, atol=atol, against="torch")
    checking.check_equal(f"the dtype of the value of {where}", out.dtype, np.dtype(dtype))
    for i, (d, k) in enumerate(zip(data, kept)):
        for name, got in (("the caller's array", d), ("the tensor's data", xs[i].data)):
            checking.check_close(f"{name} of input {i} of {where}, after the forward and backward passes", got, k,
                                 rtol=0, atol=0, against="its value before (an operation must not modify its inputs)")
    for i in grad_of:
        checking.check_close(f"the gradient of input {i} of {where}", xs[i].grad, ts[i].grad, rtol=rtol,
                             atol=atol, against="torch")
