"""Hidden-test helpers of ch09_higher_order: torch's first and second derivatives, HVPs and Hessians, and the checks
the hidden test cells share.

Imported by the hidden regions of the chapter's test cells at grading time (never shipped to students). Every check
takes the notebook's namespace, calls the student's code on generated inputs (autograde.hidden.strategies), raises
AssertionError with a message written for the student (course.checking), prints nothing, and runs torch with its
warnings silenced.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
import torch
from hypothesis import strategies as st

from autograde.hidden.checks import check_close, check_equal, quiet
from autograde.hidden.strategies import arrays, broadcastable_pairs, float_dtypes, for_all, shapes


def _tolerance(dtype: np.dtype) -> dict[str, float]:
    return {"rtol": 1e-9, "atol": 1e-11} if np.dtype(dtype) == np.float64 else {"rtol": 2e-4, "atol": 1e-5}


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"shape {tuple(shape)}"


# -- the state of a Tensor, before and after a rule -------------------------------------------------------------
def _state(t: Any) -> tuple:
    data = np.array(t.data, copy=True)
    return data, t.requires_grad, t.grad, t.grad_fn


def _check_unchanged(label: str, name: str, t: Any, before: tuple) -> None:
    __tracebackhide__ = True
    data, requires_grad, grad, grad_fn = before
    assert np.array_equal(np.asarray(t.data), data, equal_nan=True) and np.asarray(t.data).dtype == data.dtype, (
        f"{label}: {name}'s data changed; a rule must leave its inputs and grad unchanged")
    assert t.requires_grad == requires_grad, f"{label}: {name}.requires_grad changed from {requires_grad}"
    assert t.grad is grad, f"{label}: {name}.grad changed; a rule must not call backward or set .grad"
    assert t.grad_fn is grad_fn, f"{label}: {name}.grad_fn changed"


def _results(label: str, result: Any, inputs: tuple, tensor_type: type) -> tuple:
    """The rule's result checked as a tuple of one Tensor per input, each of its input's shape and dtype."""
    __tracebackhide__ = True
    assert isinstance(result, tuple), f"{label} should return a tuple (one gradient per input), got {type(result).__name__}"
    assert len(result) == len(inputs), f"{label} returned {len(result)} gradient(s) for {len(inputs)} input(s)"
    for i, (r, t) in enumerate(zip(result, inputs)):
        assert isinstance(r, tensor_type), f"{label}: gradient {i} should be a Tensor, got {type(r).__name__}"
        check_equal(f"{label}: shape of gradient {i} (the input's shape)", tuple(r.shape), tuple(t.shape))
        check_equal(f"{label}: dtype of gradient {i} (the input's dtype)", np.asarray(r.data).dtype, np.asarray(t.data).dtype)
    return result


# -- Exercise 1: the pointwise rules ---------------------------------------------------------------------------------
UNARY = {  # rule -> (torch's op, smallest magnitude of the input)
    "vjp_exp": (torch.exp, 0.0),
    "vjp_log": (torch.log, 0.25),
    "vjp_tanh": (torch.tanh, 0.0),
    "vjp_sigmoid": (torch.sigmoid, 0.0),
}


def _torch_first_and_second(op: Callable, values: list[np.ndarray], g: np.ndarray, w: list[np.ndarray] | None):
    """torch's gradients of op(*values) for grad_outputs g, and (given weights w) the gradients of
    sum(w_i * gradient_i) with respect to every input and to g (zeros where torch says None)."""
    with quiet():
        ts = [torch.tensor(v, requires_grad=True) for v in values]
        tg = torch.tensor(g, requires_grad=True)
        firsts = torch.autograd.grad(op(*ts), ts, tg, create_graph=True)
        if w is None:
            return [f.detach().numpy() for f in firsts], None
        total = sum((f * torch.tensor(wi)).sum() for f, wi in zip(firsts, w))
        seconds = torch.autograd.grad(total, [*ts, tg], allow_unused=True)
        return ([f.detach().numpy() for f in firsts],
                [np.zeros_like(v) if s is None else s.numpy() for s, v in zip(seconds, [*values, g])])


def _unary_inputs(low_magnitude: float, positive: bool):
    def build(dtype, shape):
        low = low_magnitude if positive else -3.0
        return st.tuples(arrays(dtype, shape, low=low, high=3.0, away_from_zero=low_magnitude),
                         arrays(dtype, shape, low=-2.0, high=2.0), arrays(dtype, shape, low=-2.0, high=2.0))
    return build


def _pointwise_cases(ns: dict[str, Any], second: bool) -> None:
    __tracebackhide__ = True
    for name, (op, smallest) in UNARY.items():
        rule = ns[name]
        positive = name == "vjp_log"

        @for_all(data=st.data(), dtype=float_dtypes(), shape=shapes(max_dims=3, max_side=4))
        def _(data, dtype, shape):
            a, g, w = data.draw(_unary_inputs(smallest, positive)(dtype, shape))
            _check_rule(ns, name, rule, op, [a], g, [w] if second else None, second)

    rule = ns["vjp_div"]

    @for_all(data=st.data(), dtype=float_dtypes(), pair=broadcastable_pairs(max_dims=3))
    def _(data, dtype, pair):
        sa, sb = pair
        out_shape = np.broadcast_shapes(sa, sb)
        a = data.draw(arrays(dtype, sa))
        b = data.draw(arrays(dtype, sb, low=-3.0, high=3.0, away_from_zero=0.5))
        g = data.draw(arrays(dtype, out_shape, low=-2.0, high=2.0))
        w = [data.draw(arrays(dtype, sa, low=-2.0, high=2.0)), data.draw(arrays(dtype, sb, low=-2.0, high=2.0))]
        _check_rule(ns, "vjp_div", rule, lambda x, y: x / y, [a, b], g, w if second else None, second)


def _check_rule(ns: dict[str, Any], name: str, rule: Callable, op: Callable, values: list[np.ndarray],
                g: np.ndarray, w: list[np.ndarray] | None, second: bool) -> None:
    """One call of a rule on generated inputs against torch: first derivatives, and the second ones if asked."""
    __tracebackhide__ = True
    Tensor = ns["Tensor"]
    dtype = values[0].dtype
    shapes_text = ", ".join(_shape_text(v.shape) for v in values)
    label = f"{name}(grad, ...) for {dtype} inputs of {shapes_text}" + (" (all requiring grad)" if second else "")
    inputs = tuple(Tensor(np.array(v, copy=True), requires_grad=True) for v in values)
    tg = Tensor(np.array(g, copy=True), requires_grad=second)
    names = [f"input {i}" for i in range(len(inputs))] + ["grad"]
    before = [_state(t) for t in (*inputs, tg)]
    with quiet():
        result = _results(label, rule(tg, *inputs), inputs, Tensor)
    for t, state, what in zip((*inputs, tg), before, names):
        _check_unchanged(label, what, t, state)
    firsts, seconds = _torch_first_and_second(op, values, g, w)
    tol = _tolerance(dtype)
    for i, (r, expected) in enumerate(zip(result, firsts)):
        check_close(f"{label}: gradient {i}", np.asarray(r.data), expected, against="torch.autograd.grad", **tol)
    if not second:
        return
    for i, r in enumerate(result):
        assert r.grad_fn is not None, (f"{label}: gradient {i} has no grad_fn although its inputs require grad: "
                                       "compute it with Tensor ops on grad and the inputs, not on their .data")
    with quiet():
        total = None
        for r, wi in zip(result, w):
            term = (r * Tensor(np.array(wi, copy=True))).sum()
            total = term if total is None else total + term
        total.backward()
    for t, expected, what in zip((*inputs, tg), seconds, names):
        got = np.zeros_like(expected) if t.grad is None else np.asarray(t.grad.data)
        check_close(f"{label}: the derivative of sum(w * gradients) with respect to {what}", got, expected,
                    against="torch.autograd.grad(..., create_graph=True), then again", **tol)
    # recorded when only grad requires grad, and when only the inputs do
    for grad_requires in (True, False):
        inputs = tuple(Tensor(np.array(v, copy=True), requires_grad=not grad_requires) for v in values)
        tg = Tensor(np.array(g, copy=True), requires_grad=grad_requires)
        with quiet():
            result = rule(tg, *inputs)
        who = "grad alone" if grad_requires else "the inputs alone"
        for i, r in enumerate(result):   # every gradient of these rules depends on grad and on some input
            assert getattr(r, "grad_fn", None) is not None, (
                f"{name}(grad, ...) where {who} require(s) grad: gradient {i} has no grad_fn, so a second "
                "derivative through it would be lost; compute it with Tensor ops on grad and the inputs")


def check_pointwise_first(ns: dict[str, Any]) -> None:
    """Rules pointwise.first and pointwise.unchanged: each rule's gradients against torch's on generated inputs."""
    __tracebackhide__ = True
    _pointwise_cases(ns, second=False)


def check_pointwise_second(ns: dict[str, Any]) -> None:
    """Rules pointwise.second, pointwise.recorded and pointwise.unchanged: second derivatives against torch's."""
    __tracebackhide__ = True
    _pointwise_cases(ns, second=True)


# -- Exercise 2: matmul -----------------------------------------------------------------------------------------------
BATCHES = [((), None), ((3,), None), ((2, 3), None), ((3,), (3,)), ((3,), (1,)), ((1,), (4,)), ((), (2,)),
           ((2, 1), (3,)), ((2, 3), (2, 3))]
"""(a's batch axes, b's batch axes or None for a 2-D b)"""


def check_matmul_rule(ns: dict[str, Any]) -> None:
    """Rules matmul.values and matmul.second: vjp_matmul against torch.matmul's first and second derivatives."""
    __tracebackhide__ = True
    rule = ns["vjp_matmul"]

    @for_all(data=st.data(), dtype=float_dtypes(), batches=st.sampled_from(BATCHES),
             sides=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)))
    def _(data, dtype, batches, sides):
        batch_a, batch_b = batches
        n, k, m = sides
        sa, sb = (*batch_a, n, k), ((k, m) if batch_b is None else (*batch_b, k, m))
        out_shape = np.broadcast_shapes(sa[:-2], sb[:-2]) + (n, m)
        a, b = data.draw(arrays(dtype, sa)), data.draw(arrays(dtype, sb))
        g = data.draw(arrays(dtype, out_shape, low=-2.0, high=2.0))
        w = [data.draw(arrays(dtype, sa, low=-2.0, high=2.0)), data.draw(arrays(dtype, sb, low=-2.0, high=2.0))]
        _check_rule(ns, "vjp_matmul", rule, torch.matmul, [a, b], g, None, False)
        _check_rule(ns, "vjp_matmul", rule, torch.matmul, [a, b], g, w, True)


# -- Exercises 3-6: Hessian-vector products and the Hessian -------------------------------------------------------------
def _cases(n: int, rng: np.random.Generator) -> list[tuple[str, Callable]]:
    """(label, f(t, C)): each f written once for both the engine and torch (C makes a constant), and each runs on
    the engine's Duals too (no op of theirs compares values)."""
    A = rng.normal(size=(n, n)) / np.sqrt(n)
    c = rng.normal(size=n)
    return [
        ("sum(tanh(t) * exp(t / 2))", lambda t, C: (t.tanh() * (t * 0.5).exp()).sum()),
        ("log(1 + sum(t * t)) * sum(t)", lambda t, C: ((t * t).sum() + 1.0).log() * t.sum()),
        ("sum((A @ t)**3) + sum(t / (1 + t * t))",
         lambda t, C: ((C(A) @ t.reshape(n, 1)) ** 3).sum() + (t / (t * t + 1.0)).sum()),
        ("mean(sigmoid(A @ t)) * sum(t * t)",
         lambda t, C: (C(A) @ t.reshape(n, 1)).sigmoid().mean() * (t * t).sum()),
        ("exp(sum(c * t) / 4) - sum(t**4) / 10",
         lambda t, C: ((C(c) * t.reshape(n)).sum() * 0.25).exp() - (t ** 4).sum() * 0.1),
        ("the linear sum(c * t)", lambda t, C: (C(c) * t.reshape(n)).sum()),
    ]


def _torch_const(value: np.ndarray) -> torch.Tensor:
    return torch.tensor(value)


def _engine_f(ns: dict[str, Any], f: Callable) -> Callable:
    Tensor = ns["Tensor"]
    return lambda t: f(t, lambda value: Tensor(np.array(value, copy=True)))


def torch_hvp(f: Callable, x: np.ndarray, v: np.ndarray, forward: bool = False) -> np.ndarray:
    """torch's H v of f(t, C) at x: torch.func.jvp of torch.func.grad (forward) or torch.autograd.functional.hvp."""
    g = lambda t: f(t, _torch_const)
    with quiet():
        if forward:
            return torch.func.jvp(torch.func.grad(g), (torch.tensor(x),), (torch.tensor(v),))[1].numpy()
        return torch.autograd.functional.hvp(g, torch.tensor(x), torch.tensor(v))[1].numpy()


@contextmanager
def _counted_grad(ns: dict[str, Any]) -> Iterator[list[bool]]:
    """The notebook's grad, recording create_graph of each call while the block runs."""
    original = ns["grad"]
    flags: list[bool] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        create = kwargs.get("create_graph", args[3] if len(args) > 3 else False)
        flags.append(bool(create))
        return original(*args, **kwargs)

    ns["grad"] = counting
    try:
        yield flags
    finally:
        ns["grad"] = original


def _points():
    return st.tuples(shapes(min_dims=0, max_dims=2, min_side=1, max_side=4), st.integers(0, 2 ** 31 - 1))


def _call_hvp(name: str, hvp: Callable, ns: dict[str, Any], f: Callable, x: np.ndarray, v: np.ndarray, label: str,
              **kwargs: Any) -> tuple[np.ndarray, list[Any], list[bool]]:
    """Call the student's hvp on copies of x and v; check they are unchanged; return (result, f's arguments, flags)."""
    __tracebackhide__ = True
    xs, vs = x.copy(), v.copy()
    arguments: list[Any] = []
    engine_f = _engine_f(ns, f)

    def recorded(t: Any) -> Any:
        arguments.append(t)
        return engine_f(t)

    with _counted_grad(ns) as flags, quiet():
        got = hvp(recorded, xs, vs, **kwargs)
    assert np.array_equal(xs, x) and np.array_equal(vs, v), f"{label}: x or v changed; {name} must leave them unchanged"
    result = np.asarray(got)
    check_equal(f"{label}: dtype of the result", result.dtype, np.dtype(np.float64))
    check_equal(f"{label}: shape of the result (x's shape)", result.shape, x.shape)
    return result, arguments, flags


def _for_each_case(ns: dict[str, Any], name: str, examples: int, check: Callable[..., None],
                   then: Callable[..., None] | None = None) -> None:
    """For generated points (shape, x, v), call the student's ns[name] on every case of _cases and hand the result
    to check(where, label, f, x, v, got, arguments, flags); then(x, v, rng), if given, checks more at that point."""
    __tracebackhide__ = True
    hvp = ns[name]

    @for_all(examples=examples, point=_points())
    def _(point):
        shape, seed = point
        rng = np.random.default_rng(seed)
        x, v = rng.uniform(-1.5, 1.5, size=shape), rng.uniform(-1.0, 1.0, size=shape)
        for label, f in _cases(int(np.prod(shape)), rng):
            where = f"{name}(f, x, v) for f = {label}, x of {_shape_text(shape)}"
            check(where, label, f, x, v, *_call_hvp(name, hvp, ns, f, x, v, where))
        if then is not None:
            then(x, v, rng)


def check_hvp_reverse(ns: dict[str, Any]) -> None:
    """Rules hvp_reverse.torch and hvp_reverse.method."""
    __tracebackhide__ = True

    def check(where, label, f, x, v, got, arguments, flags):
        check_close(where, got, torch_hvp(f, x, v), rtol=1e-9, atol=1e-11, against="torch.autograd.functional.hvp")
        check_equal(f"{where}: calls of f", len(arguments), 1)
        if not label.startswith("the linear"):
            check_equal(f"{where}: the create_graph of each grad call, in order", flags, [True, False])

    _for_each_case(ns, "hvp_reverse", 8, check)


def check_hvp_forward(ns: dict[str, Any]) -> None:
    """Rules hvp_forward.torch, hvp_forward.method and hvp_forward.constant."""
    __tracebackhide__ = True
    Dual, Tensor = ns["Dual"], ns["Tensor"]

    def check(where, label, f, x, v, got, arguments, flags):
        check_close(where, got, torch_hvp(f, x, v, forward=True), rtol=1e-9, atol=1e-11,
                    against="torch.func.jvp of torch.func.grad")
        check_equal(f"{where}: calls of f", len(arguments), 1)
        check_equal(f"{where}: the create_graph of each grad call", flags, [False])
        t = arguments[0]
        assert isinstance(t, Tensor), f"{where}: f was called on a {type(t).__name__}, not a Tensor"
        entries = np.asarray(t.data, dtype=object)
        check_equal(f"{where}: the shape of the Tensor f was called on", entries.shape, x.shape)
        for i in np.ndindex(x.shape):
            e = entries[i]
            assert isinstance(e, Dual), f"{where}: entry {i} of f's argument is a {type(e).__name__}, not a Dual"
            assert float(e.value) == x[i] and float(e.tangent) == v[i], (
                f"{where}: entry {i} of f's argument is Dual({e.value!r}, {e.tangent!r}), expected "
                f"Dual({x[i]!r}, {v[i]!r}) (value from x, tangent from v)")

    _for_each_case(ns, "hvp_forward", 6, check)


def check_hvp_difference(ns: dict[str, Any]) -> None:
    """Rules hvp_difference.torch and hvp_difference.step."""
    __tracebackhide__ = True
    hvp = ns["hvp_finite_difference"]

    def check(where, label, f, x, v, got, arguments, flags):
        check_close(where, got, torch_hvp(f, x, v), rtol=1e-7, atol=1e-7, against="torch.autograd.functional.hvp")

    def step(x, v, rng):
        eps = float(rng.choice([1e-3, 1e-2, 0.05, 0.1]))
        quartic = lambda t, C: (t ** 4).sum()
        where = f"hvp_finite_difference(sum(t**4), x, v, eps={eps}) for x of {_shape_text(x.shape)}"
        got, arguments, flags = _call_hvp("hvp_finite_difference", hvp, ns, quartic, x, v, where, eps=eps)
        check_close(where, got, 12 * x ** 2 * v + 4 * eps ** 2 * v ** 3, rtol=1e-9, atol=1e-9,
                    against="the central difference with that eps, 12 x**2 v + 4 eps**2 v**3")
        check_equal(f"{where}: calls of f", len(arguments), 2)
        check_equal(f"{where}: the create_graph of each grad call", flags, [False, False])

    _for_each_case(ns, "hvp_finite_difference", 8, check, then=step)


def check_hessian(ns: dict[str, Any]) -> None:
    """Rules hessian.torch and hessian.columns."""
    __tracebackhide__ = True
    hessian, hvp_reverse = ns["hessian"], ns["hvp_reverse"]

    @for_all(examples=10, n=st.integers(1, 6), seed=st.integers(0, 2 ** 31 - 1))
    def _(n, seed):
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1.5, 1.5, size=n)
        A = rng.normal(size=(n, n))
        asked: list[np.ndarray] = []

        def fake_hvp(f: Any, at: Any, e: Any) -> np.ndarray:
            asked.append(np.array(e, copy=True))
            return A @ np.asarray(e, dtype=np.float64)

        xs = x.copy()
        with quiet():
            H = np.asarray(hessian(lambda t: t.sum(), xs, fake_hvp))
        where = f"hessian(f, x, hvp) for x of length {n} and a fake hvp(f, x, e) = A @ e (A not symmetric)"
        assert np.array_equal(xs, x), f"{where}: x changed"
        check_equal(f"{where}: dtype", H.dtype, np.dtype(np.float64))
        check_close(where, H, A, rtol=1e-12, atol=1e-12, against="A: column j is hvp(f, x, e_j)")
        check_equal(f"{where}: the vectors passed to hvp", [e.tolist() for e in asked], np.eye(n).tolist())
        for label, f in _cases(n, rng)[:3]:
            engine_f = _engine_f(ns, f)
            with quiet():
                H = np.asarray(hessian(engine_f, x.copy(), hvp_reverse))
                expected = torch.autograd.functional.hessian(lambda t: f(t, _torch_const), torch.tensor(x)).numpy()
            check_close(f"hessian(f, x, hvp_reverse) for f = {label}, x of length {n}", H, expected, rtol=1e-9,
                        atol=1e-11, against="torch.autograd.functional.hessian")
