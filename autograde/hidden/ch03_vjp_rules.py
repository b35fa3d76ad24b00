"""Hidden-test helpers of ch03_vjp_rules, written once and imported by the chapter's hidden test cells.

The grader's kernel imports this module while it grades; it never reaches release/, solutions/ or
feedback. Every helper compares the student's engine (the chapter 2 reference Tensor, with the
chapter's rules registered) against torch and fails with a course.checking message.

- compare_op: one operation against torch: value, dtype, node name, what the rule saves, the
  gradients the rule itself returns (an array per input, the input's shape and dtype, the same on a
  second call, the upstream gradient untouched), every gradient flowing between nodes in the graph's
  dtype, and .grad of each input; then the shared contract (autograde.hidden.contract) on non-contiguous,
  0-d, size-1 and empty variants of the inputs, wherever torch accepts them.
- compare_binary: compare_op for binary operators over pairs of broadcasting shapes, both dtypes, constants.
- peak_bytes: the peak of memory allocated while a call runs (tracemalloc sees NumPy's arrays).
- names_element: whether an error message names an index, as Python prints a tuple of ints.
- Cube, Product, ProductWrongAt, Flip, GarbageForSecond, ScaleWrong, leaf, wrong_positions: right and wrong
  rules, and inputs, for grading gradcheck.
"""
from __future__ import annotations

import re
import tracemalloc
from typing import Any, Callable, Sequence

import numpy as np
import torch

import course.checking as checking
from autograde.hidden.contract import check_contract
from course.reference.ch02_tape import Function, Tensor, gradient_edge, topological_order

FLOATS = (np.float64, np.float32)
TOL32 = (2e-4, 2e-5)


def tolerance(dtype: Any, tol32: tuple[float, float] = TOL32) -> tuple[float, float]:
    """(rtol, atol) for comparing with torch in this dtype."""
    return (1e-9, 1e-10) if np.dtype(dtype) == np.float64 else tol32


def torch_index(index: Any) -> Any:
    """The same index for torch: lists and arrays become tensors."""
    if isinstance(index, tuple):
        return tuple(torch_index(i) for i in index)
    if isinstance(index, (list, np.ndarray)):
        return torch.as_tensor(np.asarray(index))
    return index


def torch_saved(fn: Callable[..., torch.Tensor], *tensors: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """fn's result and every tensor torch saved for backward while it ran."""
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*tensors)
    return out, saved


def _nbytes(tensors: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


SAVES = {
    "output": "its output (as torch does)",
    "input": "its input (as torch does)",
    "mask": "a boolean mask of the entries that pass, ~(a <= 0): positive or NaN (torch saves its float output; the "
            "mask is a byte an element)",
    "nothing": "nothing (as torch: only shapes, which are plain ctx attributes)",
}


def check_saves(where: str, node: Any, kind: str, inputs: Sequence[np.ndarray], output: np.ndarray,
                torch_tensors: Sequence[torch.Tensor]) -> None:
    """The arrays a node saved are what the exercise asks (kind: output, input, mask, nothing), in bytes as torch."""
    saved = [np.asarray(s) for s in node.saved_tensors]
    what = SAVES[kind]
    listing = ", ".join(f"{s.dtype}{list(s.shape)}" for s in saved) or "nothing"
    if kind == "nothing":
        assert not saved, f"{where}: the rule should save {what}; it saved {listing}"
        return
    assert len(saved) == 1, f"{where}: the rule should save one array, {what}; it saved {listing}"
    (got,) = saved
    expected = {"output": output, "input": inputs[0], "mask": ~(inputs[0] <= 0)}[kind]
    checking.check_equal(f"the dtype of the array {where} saves", got.dtype, expected.dtype)
    checking.check_equal(f"the shape of the array {where} saves", got.shape, expected.shape)
    assert np.array_equal(got, expected, equal_nan=kind != "mask"), (
        f"{where}: the saved array differs from {what.split(' (')[0]}; save exactly that array")
    torch_bytes = _nbytes(torch_tensors)
    want = torch_bytes // inputs[0].dtype.itemsize if kind == "mask" else torch_bytes  # a mask: a byte an element
    checking.check_equal(f"the bytes {where} saves (torch saves {torch_bytes:,})", got.nbytes, want)


def _rule_gradients(where: str, node: Any, G: np.ndarray, shapes: Sequence[tuple[int, ...]],
                    grad_of: Sequence[int], dtype: Any) -> None:
    """Call the node's backward rule directly, twice: an array per input that requires grad, in its shape and
    dtype, the same both times (the rule must not change what it saved) and the upstream gradient untouched."""
    upstream = G.copy()
    first = node.apply(upstream)
    checking.check_close(f"the upstream gradient after the backward rule of {where} ran", upstream, G, rtol=0,
                         atol=0, against="its value before (a rule must not modify the gradient it receives)")
    first = tuple(None if g is None else np.array(g, copy=True) for g in first)
    second = node.apply(G.copy())
    for i in grad_of:
        g = first[i] if i < len(first) else None
        assert g is not None, (f"the backward rule of {where} returned None for input {i}, which requires grad: "
                               f"return its gradient (an array of its shape)")
        returned = f"the gradient the backward rule returns for input {i} of {where}"
        checking.check_equal(f"the shape of {returned}", np.shape(g), tuple(shapes[i]))
        checking.check_equal(f"the dtype of {returned}", np.asarray(g).dtype, np.dtype(dtype))
        checking.check_close(f"{returned}, when it runs a second time", second[i], g, rtol=0, atol=0,
                             against="the first run (a rule must not modify the arrays it saved)")


def checked_backward(where: str, out: Tensor, gradient: np.ndarray) -> None:
    """out.backward(gradient), with every gradient a node hands to an input checked: not None, the graph's dtype."""
    root, _ = gradient_edge(out)
    nodes = topological_order(root)
    problems: list[str] = []

    def watched(node: Any, apply: Callable) -> Callable:
        def wrapper(grad: np.ndarray):
            grads = apply(grad)
            for k, ((child, _), g) in enumerate(zip(node.next_functions, grads)):
                if child is None:
                    continue
                if g is None:
                    problems.append(f"{node.name()} returned None for its input {k}, which requires grad")
                elif np.asarray(g).dtype != out.dtype:
                    problems.append(f"{node.name()} returned a {np.asarray(g).dtype} gradient for its input {k} "
                                    f"in a {out.dtype} graph")
            return grads
        return wrapper

    for node in nodes:
        node.apply = watched(node, node.apply)
    try:
        out.backward(gradient)
    finally:
        for node in nodes:
            vars(node).pop("apply", None)
    assert not problems, f"backward of {where}: {problems[0]} (every gradient keeps its input's dtype)"


def compare_op(label: str, engine_fn: Callable[..., Tensor], torch_fn: Callable[..., torch.Tensor],
               arrays: Sequence[Any], dtype: Any, rng: np.random.Generator, grad_of: Sequence[int] | None = None,
               name: str | None = None, single_node: bool = True, tol32: tuple[float, float] = TOL32,
               saves: str | None = None, specials_left_out: Sequence[float] = ()) -> Tensor:
    """Run engine_fn and torch_fn on the same inputs and compare everything a rule is responsible for.

    single_node: engine_fn records one node, whose rule is also called directly; saves: what that rule
    must save ("output", "input", "mask", "nothing"), checked against torch's saved bytes.
    """
    grad_of = tuple(range(len(arrays))) if grad_of is None else tuple(grad_of)
    rtol, atol = tolerance(dtype, tol32)
    data = [np.array(a, dtype=dtype) for a in arrays]
    xs = [Tensor(d.copy(), requires_grad=i in grad_of) for i, d in enumerate(data)]
    ts = [torch.tensor(d.copy(), requires_grad=i in grad_of) for i, d in enumerate(data)]
    where = f"{label} for inputs of shapes {[x.shape for x in xs]} in {np.dtype(dtype).name}"
    out = engine_fn(*xs)
    t_out, t_saved = torch_saved(torch_fn, *ts)
    checking.check_close(f"the value of {where}", out, t_out, rtol=rtol, atol=atol, against="torch")
    checking.check_equal(f"the dtype of the value of {where}", out.dtype, np.dtype(dtype))
    assert out.grad_fn is not None, f"{where} recorded no node (grad_fn is None) although an input requires grad"
    if name is not None:
        checking.check_equal(f"grad_fn.name() of {where}", out.grad_fn.name(), name)
    G = np.asarray(rng.normal(size=tuple(t_out.shape))).astype(dtype)
    if single_node:
        if saves is not None:
            check_saves(f"the node of {where}", out.grad_fn, saves, data, np.asarray(out.data), t_saved)
        _rule_gradients(where, out.grad_fn, G, [x.shape for x in xs], grad_of, dtype)
    checked_backward(where, out, G.copy())
    t_out.backward(torch.from_numpy(G.copy()))
    for i in grad_of:
        checking.check_close(f"the gradient of input {i} of {where}, for a random upstream gradient", xs[i].grad,
                             ts[i].grad, rtol=rtol, atol=atol, against="torch")
    check_contract(label, engine_fn, torch_fn, data, dtype, grad_of, rtol, atol, Tensor, specials_left_out)
    return out


def peak_bytes(call: Callable[[], Any]) -> int:
    """The peak number of bytes allocated (NumPy arrays included) while call() runs."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def names_element(message: str, index: Sequence[int]) -> bool:
    """True if message writes index as Python prints a tuple of ints; NumPy 2 reprs (np.int64(2)) count too."""
    plain = re.sub(r"np\.u?int(?:c|p|\d+)?\((-?\d+)\)", r"\1", message)
    return str(tuple(int(i) for i in index)) in plain


def compare_binary(ops: Sequence[tuple[str, Callable, str]], shape_pairs: Sequence[tuple[tuple, tuple]],
                   rng: np.random.Generator, second: Callable[[tuple], np.ndarray] | None = None,
                   **settings: Any) -> None:
    """Each binary op (label, fn, node name) on inputs of each pair of shapes, in float64 and float32, then with one
    input a constant (whose gradient the rule computes and the engine drops); second(shape) draws the second input."""
    draw = second or (lambda shape: rng.normal(size=shape))
    for dtype in FLOATS:
        for shape_a, shape_b in shape_pairs:
            for label, op, name in ops:
                compare_op(label, op, op, [rng.normal(size=shape_a), draw(shape_b)], dtype, rng, name=name, **settings)
        for label, op, _ in ops:
            compare_op(f"{label} (b constant)", op, op, [rng.normal(size=(3, 4)), draw((4,))], dtype, rng, grad_of=(0,))
            compare_op(f"{label} (a constant)", op, op, [rng.normal(size=(2, 1)), draw((2, 5))], dtype, rng,
                       grad_of=(1,))


# -- Functions for grading gradcheck: right and wrong rules, written once ---------------------------
def leaf(rng: np.random.Generator, shape: tuple[int, ...], low: float = 0.5, high: float = 2.0) -> Tensor:
    """A float64 leaf that requires grad, with entries of size between low and high and random signs."""
    return Tensor(rng.uniform(low, high, size=shape) * rng.choice([-1.0, 1.0], size=shape), requires_grad=True)


class Cube(Function):
    """a ** 3, correct."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a ** 3

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return 3 * a ** 2 * grad


class Product(Function):
    """a @ b for matrices, correct."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad @ b.T, a.T @ grad


class ProductWrongAt(Product):
    """a @ b whose gradient for b is off by 0.05 at one element, the class attribute bad."""

    bad: tuple[int, int] = (0, 0)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_b = a.T @ grad
        grad_b[ProductWrongAt.bad] += 0.05
        return grad @ b.T, grad_b


class Flip(Function):
    """y = a, whose backward reverses the gradient: right for an all-ones upstream gradient, wrong otherwise."""

    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad[::-1].copy()


class GarbageForSecond(Function):
    """a * b with a right gradient for a and a wrong one for b."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, np.full(b.shape, 123.0)


class ScaleWrong(Function):
    """a * b with both gradients three times too large: wrong at every element."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return 3 * grad * b, 3 * grad * a


class ScaledBy(Function):
    """a * b (elementwise) with both gradients multiplied by ScaledBy.factor: off by factor - 1 relative to the
    right gradient at every entry of the Jacobian's diagonal, and exactly 0 (right) off it."""

    factor = 1.0

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return ScaledBy.factor * grad * b, ScaledBy.factor * grad * a


def wrong_positions(shape: tuple[int, int]) -> list[tuple[int, int]]:
    """Where to put the one wrong entry of a (rows, cols) gradient: each corner, the first one last."""
    rows, cols = shape
    return sorted({(rows - 1, cols - 1), (0, cols - 1), (rows - 1, 0), (0, 0)}, reverse=True)
