"""The contract every graded operation keeps, checked once for all chapters: wherever torch accepts an input,
the engine agrees with it, and leaves its inputs alone.

A chapter's helper that compares one operation with torch on some arrays (ch03's compare_op, and any later
chapter's that calls check_contract) also runs the operation on inputs derived from those arrays:
- non-contiguous: the same values in arrays whose memory is strided (a transposed or sliced view);
- 0-d: every input a scalar array; size-1: every axis of length 1; empty: the first axis of length 0;
- special values (an elementwise operation): every other entry NaN, inf, -inf, -0.0, 0.0, a subnormal, a tiny
  number whose square underflows or a huge one whose square overflows, and the upstream gradient with infinities,
  NaN and zeros among its entries: value and gradient as torch's, finite where torch's is finite, and non-finite
  where torch's is not (which of NaN, inf and -inf is not graded), and the gradient of a NaN entry not graded;
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


SPECIAL_VARIANT = "special values (NaN, inf, -inf, -0.0, 0.0, subnormal, tiny and huge entries)"


def specials(dtype: Any, leave_out: Sequence[float] = ()) -> tuple[float, ...]:
    """The values every elementwise operation must treat as torch does, in this dtype: NaN, both infinities, both
    zeros, the smallest subnormal, a tiny normal number whose square underflows, and a huge one whose square
    overflows."""
    info = np.finfo(dtype)
    out = (np.nan, np.inf, -np.inf, -0.0, 0.0, float(info.smallest_subnormal), float(info.tiny) ** 0.8,
           float(info.max) ** 0.75)
    return tuple(v for v in out if not any(str(v) == str(w) for w in leave_out))  # str: -0.0 is not 0.0 here


def _special(a: np.ndarray, which: int, leave_out: Sequence[float] = ()) -> np.ndarray:
    """a with every other entry replaced by a special value, input `which` shifted so that two inputs meet in many
    pairs (NaN with inf, 0 with 0, tiny with tiny, ...)."""
    values = specials(a.dtype, leave_out)
    out = np.array(a, copy=True)
    flat = out.reshape(-1)
    for j in range(0, flat.size, 2):
        flat[j] = values[(j // 2 + 3 * which) % len(values)]
    return out


def _upstream(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, special: bool) -> np.ndarray:
    """A random upstream gradient; in the special-values variant, with infinities, NaN and zeros among its
    entries (a mask that multiplies inf by 0 gives NaN where torch gives 0)."""
    G = np.asarray(rng.normal(size=shape)).astype(dtype)
    if special and G.size:
        flat = G.reshape(-1)
        for j, v in zip(range(1, flat.size, 3), (np.inf, -np.inf, 0.0, np.nan) * flat.size):
            flat[j] = v
    return G


def _nonfinite_as(got: Any, expected: np.ndarray, free: Any = False) -> Any:
    """got, with torch's entry put where torch's is not finite and got's is not finite either, and where `free`:
    which non-finite value stands there is not graded (torch itself gives gelu(inf) = NaN in float32 and inf in
    float64; a derivative that underflows to 0 meets an infinite upstream gradient as NaN, one that does not as
    inf). Where torch's entry is finite, got's must be close to it, as everywhere."""
    g = np.asarray(got)
    if g.shape != expected.shape or g.dtype == object:
        return got  # check_close reports the shape or the type
    return np.where((~np.isfinite(expected) & ~np.isfinite(g)) | free, expected, g)


def variants(arrays: Sequence[np.ndarray], dtype: Any, elementwise: bool,
             leave_out: Sequence[float] = ()) -> Iterator[tuple[str, list[np.ndarray]]]:
    """(what, arrays) for each input variant derived from the given arrays: non-contiguous for every operation;
    0-d, size-1 and empty for an elementwise one (its result has the inputs' broadcast shape), where any shape
    is valid. (An operation that reduces or indexes takes an axis or an index that a 0-d or empty input may not
    have, and torch accepts some that NumPy refuses, dim=0 of a 0-d tensor among them.)"""
    arrays = [np.asarray(a, dtype=dtype) for a in arrays]
    if not any(a.ndim for a in arrays):
        return
    yield "non-contiguous (strided) inputs", [_strided(a.copy()) for a in arrays]
    if elementwise:
        yield SPECIAL_VARIANT, [_special(a, i, leave_out) for i, a in enumerate(arrays)]
        yield "0-d inputs", [_values(a, (), dtype) for a in arrays]
        yield "inputs with every axis of size 1", [_values(a, (1,) * a.ndim, dtype) for a in arrays]
        yield "an empty first axis", [_values(a, (0, *a.shape[1:]) if a.ndim else (), dtype) for a in arrays]


def check_contract(label: str, engine_fn: Callable[..., Any], torch_fn: Callable[..., torch.Tensor],
                   arrays: Sequence[np.ndarray], dtype: Any, grad_of: Sequence[int], rtol: float, atol: float,
                   tensor: Callable[..., Any], specials_left_out: Sequence[float] = ()) -> None:
    """Run engine_fn (on tensor(array, requires_grad=...)) and torch_fn on each variant of arrays that torch
    accepts; compare value, dtype and .grad, and check that the caller's arrays did not change. specials_left_out:
    special values the exercise's rules leave out for this operation (its text says why)."""
    rng = np.random.default_rng(20261125)  # its own stream: the caller's random draws stay as they were
    try:
        shape = tuple(torch_fn(*[torch.tensor(np.asarray(a, dtype=dtype)) for a in arrays]).shape)
        elementwise = shape == tuple(np.broadcast_shapes(*[np.shape(a) for a in arrays]))
    except (RuntimeError, ValueError, IndexError, TypeError):
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # an empty mean warns in NumPy: not the student's
        warnings.simplefilter("ignore")
        for what, data in variants(arrays, dtype, elementwise, specials_left_out):
            _check_variant(what, data, label, engine_fn, torch_fn, dtype, grad_of, rtol, atol, rng, tensor)


def _check_variant(what: str, data: list[np.ndarray], label: str, engine_fn: Callable[..., Any],
                   torch_fn: Callable[..., torch.Tensor], dtype: Any, grad_of: Sequence[int], rtol: float,
                   atol: float, rng: np.random.Generator, tensor: Callable[..., Any]) -> None:
    """One variant: skipped where torch refuses it, else compared with torch, inputs checked unchanged."""
    ts = [torch.tensor(np.array(d), requires_grad=i in grad_of) for i, d in enumerate(data)]
    try:
        t_out = torch_fn(*ts)
        G = _upstream(rng, tuple(t_out.shape), dtype, what == SPECIAL_VARIANT)
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
    expected = t_out.detach().numpy()
    if what == SPECIAL_VARIANT:
        value = _nonfinite_as(value, expected)
    checking.check_close(f"the value of {where}", value, expected, rtol=rtol, atol=atol, against="torch")
    checking.check_equal(f"the dtype of the value of {where}", out.dtype, np.dtype(dtype))
    for i, (d, k) in enumerate(zip(data, kept)):
        for name, got in (("the caller's array", d), ("the tensor's data", xs[i].data)):
            checking.check_close(f"{name} of input {i} of {where}, after the forward and backward passes", got, k,
                                 rtol=0, atol=0, against="its value before (an operation must not modify its inputs)")
    for i in grad_of:
        got, expected = xs[i].grad, ts[i].grad.numpy()
        if what == SPECIAL_VARIANT and got is not None:
            # Not graded either: the gradient of a NaN entry (torch's own choice differs from one operation to the
            # next)
            got = _nonfinite_as(getattr(got, "data", got), expected, free=np.isnan(data[i]))
        checking.check_close(f"the gradient of input {i} of {where}", got, expected, rtol=rtol, atol=atol,
                             against="torch")
