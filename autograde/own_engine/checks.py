"""Each piece of the student's engine that the capstone uses, checked against torch at the level of the visible tests.

Small generated inputs; forward values, dtypes and gradients compared with torch's. The checks run bottom-up, each
one adding few new pieces to those already checked, so that a failure names the exercise it most likely comes from:
the first of the check's exercises whose code ran during the check (found with a profiler), or, for an error raised
in the student's code, the exercise whose cell raised it (a stub's NotImplementedError: "not answered yet").

Before any check, REQUIRED (the answers the capstone's training runs) must all be answered: a stub there is
reported at once; a stub elsewhere is only noted (the capstone does not need it).
"""
from __future__ import annotations

import contextlib
import io
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from autograde.own_engine.collect import (
    CAPSTONE, Engine, OwnEngineError, chapter_label, innermost_block, one_line, time_limit,
    TookTooLong,
)

REQUIRED: dict[tuple[str, str], tuple[str, ...]] = {
    ("ch02_tape", "accumulate_grad"): ("AccumulateGrad",),
    ("ch02_tape", "recording"): ("gradient_edge",),
    ("ch02_tape", "topological_order"): ("topological_order",),
    ("ch03_vjp_rules", "unbroadcast"): ("unbroadcast",),
    ("ch03_vjp_rules", "arithmetic_rules"): ("Add",),
    ("ch03_vjp_rules", "reduction_rules"): ("Reshape", "Transpose", "GetItem"),
    ("ch03_vjp_rules", "softmax_rules"): ("CrossEntropy", "cross_entropy"),
    ("ch04_accumulation", "backward_engine"): ("backward", "free_saved"),
    ("ch04_accumulation", "clip"): ("clip_grad_norm_",),
    ("ch04_accumulation", "adamw"): ("AdamW",),
    ("ch05_grad_modes", "grad_state"): ("AutogradState",),
    ("ch05_grad_modes", "grad_mode"): ("no_grad", "enable_grad"),
    ("ch05_grad_modes", "apply"): ("apply",),
    ("ch05_grad_modes", "inplace"): ("get_saved_tensors_checked",),
    ("ch05_grad_modes", "hooks"): ("call_node",),
    ("ch05_grad_modes", "rules"): ("Mul", "Div"),
    ("ch06_loss_scaling", "grad_scaler"): ("GradScaler",),
    ("ch06_loss_scaling", "autocast_inputs"): ("autocast_inputs",),
    ("ch07_checkpointing", "checkpoint"): ("Checkpoint", "checkpoint", "fill_args"),
}
"""The functions and classes of the student's answers that the capstone's training runs (traced on the solutions:
training in float64, in float32 with checkpointed blocks and with float16 autocast, two micro-batches; the test
suite traces it again), plus chapter 5's AutogradState, made at import. Left out: chapter 4's saved-bytes meter, which
the training calls but which changes no number (the engine runs unmetered while it is a stub)."""


CHECK_SECONDS = 120
"""The most one check may take (each takes well under a second on a correct engine)."""


class Mismatch(Exception):
    """A check's finding: what differed from torch (one line)."""


# -- comparing ---------------------------------------------------------------------------------------------------
def show(value: Any) -> str:
    """A short rendering of a value for a one-line message."""
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.asarray(value)
        if a.ndim == 0:
            return _number(a.item())
        flat = [_number(v) for v in a.ravel()[:6].tolist()]
        body = "[" + ", ".join(flat) + (", ..." if a.size > 6 else "") + "]"
        return body + (f" (shape {a.shape}, {a.dtype})" if a.ndim > 1 or a.size > 6 else "")
    if isinstance(value, np.dtype):
        return str(value)
    return one_line(repr(value), 160)


def _number(v: Any) -> str:
    return f"{v:.8g}" if isinstance(v, float) else repr(v)


def array_of(t: Any) -> np.ndarray:
    """The array behind an engine Tensor, a torch tensor or anything array-like."""
    if hasattr(t, "detach") and hasattr(t, "numpy") and type(t).__module__.startswith("torch"):
        return t.detach().numpy()
    return np.asarray(t.data if hasattr(t, "data") and not isinstance(t, np.ndarray) else t)


def close(what: str, got: Any, expected: Any, rtol: float, atol: float, dtype: Any = None) -> None:
    """Raise Mismatch unless got has expected's shape (and dtype, if given) and values within tolerance."""
    if got is None:
        raise Mismatch(f"{what}: expected {show(array_of(expected))}, got None")
    g, e = array_of(got), array_of(expected)
    if g.shape != e.shape:
        raise Mismatch(f"{what}: expected shape {e.shape}, got shape {g.shape}")
    if dtype is not None and g.dtype != np.dtype(dtype):
        raise Mismatch(f"{what}: expected dtype {np.dtype(dtype)}, got {g.dtype}")
    with np.errstate(all="ignore"):
        ok = np.isclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        where = tuple(int(i) for i in np.argwhere(~ok)[0]) if g.ndim else ()
        at = f" (first at index {where}: expected {show(e[where])}, got {show(g[where])})" if g.ndim else ""
        raise Mismatch(f"{what}: expected {show(e)}, got {show(g)}{at}")


def equal(what: str, got: Any, expected: Any) -> None:
    if not (got == expected if not isinstance(got, np.ndarray) else np.array_equal(got, expected)):
        raise Mismatch(f"{what}: expected {show(expected)}, got {show(got)}")


def grad_of(t: Any) -> Any:
    g = getattr(t, "grad", None)
    return None if g is None else array_of(g)


# -- the checks ------------------------------------------------------------------------------------------------------
@dataclass
class Check:
    what: str                               # what is checked, for the message
    targets: tuple[tuple[str, str], ...]    # (chapter, grade_id), most likely culprit first
    run: Callable[[dict[str, Any]], None]


F64 = dict(rtol=1e-10, atol=1e-12)
F32 = dict(rtol=1e-5, atol=1e-6)


def _trusted(m2: Any) -> dict[str, type]:
    """Rules written here on the student's Function and Context, to check the engine without the student's rules."""
    Function = m2.Function

    class Prod(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    class Scale(Function):
        @staticmethod
        def forward(ctx, a, factor=1.0):
            ctx.factor = factor
            return a * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor

    class Total(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.shape = a.shape
            return np.asarray(a.sum())

        @staticmethod
        def backward(ctx, grad):
            return np.broadcast_to(grad, ctx.shape).copy()

    return {"Prod": Prod, "Scale": Scale, "Total": Total}


def check_accumulate(ns: dict) -> None:
    import torch
    m2 = ns["ch02_tape"]
    for dtype in (np.float64, np.float32):
        g1, g2 = np.array([0.5, -1.0, 2.0], dtype=dtype), np.array([2.0, 3.0, -0.25], dtype=dtype)
        leaf = m2.Tensor(np.array([1.0, 2.0, 3.0], dtype=dtype), requires_grad=True)
        sink = m2.AccumulateGrad(leaf)
        incoming = g1.copy()
        returned = sink.apply(incoming)
        if returned is None or len(tuple(returned)) != 0:
            raise Mismatch(f"AccumulateGrad.apply(grad): expected () (a sink has no edges to send gradients along), got "
                           f"{returned!r:.80}")
        incoming *= 100                     # the caller's array changes later: .grad must not
        if not isinstance(leaf.grad, m2.Tensor):
            raise Mismatch(f"leaf.grad after AccumulateGrad.apply(grad): expected a Tensor (torch: x.grad is a tensor), "
                           f"got {type(leaf.grad).__name__}")
        if leaf.grad.requires_grad:
            raise Mismatch("leaf.grad.requires_grad after AccumulateGrad.apply(grad): expected False (torch), got True")
        close(f"leaf.grad ({np.dtype(dtype).name}) after AccumulateGrad.apply(g1) and a later change to g1's array",
              grad_of(leaf), g1, dtype=dtype, **F64)
        sink.apply(g2.copy())
        x = torch.tensor(np.array([1.0, 2.0, 3.0], dtype=dtype), requires_grad=True)
        (x * 1).backward(torch.from_numpy(g1))
        (x * 1).backward(torch.from_numpy(g2))
        close(f"leaf.grad ({np.dtype(dtype).name}) after AccumulateGrad.apply(g1) then apply(g2), against torch's "
              f"x.grad after two backward calls", grad_of(leaf), x.grad, dtype=dtype, **F64)
    leaf = m2.Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    m2.AccumulateGrad(leaf).apply(np.array([0.5, 0.25]))
    close("leaf.grad of a float32 leaf after AccumulateGrad.apply(a float64 gradient) (torch: the leaf's dtype)",
          grad_of(leaf), [0.5, 0.25], dtype=np.float32, **F32)


def check_gradient_edge(ns: dict) -> None:
    m2 = ns["ch02_tape"]
    leaf = m2.Tensor(np.ones(3), requires_grad=True)
    first, second = m2.gradient_edge(leaf), m2.gradient_edge(leaf)
    if not (isinstance(first, tuple) and len(first) == 2 and isinstance(first[0], m2.AccumulateGrad)):
        raise Mismatch(f"gradient_edge(leaf that requires grad): expected (its AccumulateGrad, 0), got {first!r:.120}")
    if first[0] is not second[0] or first[1] != 0 or getattr(first[0], "variable", leaf) is not leaf:
        raise Mismatch("gradient_edge(leaf) twice: expected the same AccumulateGrad of that leaf both times (torch: "
                       "one sink per leaf), got two different sinks" if first[0] is not second[0] else
                       f"gradient_edge(leaf): expected (sink, 0) with sink.variable the leaf, got {first!r:.120}")
    if not leaf.is_leaf or leaf.grad_fn is not None:
        raise Mismatch(f"leaf.is_leaf and leaf.grad_fn after gradient_edge(leaf): expected True and None (torch: a leaf "
                       f"stays a leaf), got {leaf.is_leaf} and {leaf.grad_fn!r:.60}")
    equal("gradient_edge(a tensor that does not require grad)", tuple(m2.gradient_edge(m2.Tensor(np.ones(2)))), (None, 0))
    node = m2.Node(())
    inner = m2.Tensor(np.ones(2))
    inner.requires_grad, inner.grad_fn = True, node
    got = tuple(m2.gradient_edge(inner))
    if got[0] is not node or got[1] != 0:
        raise Mismatch(f"gradient_edge(a non-leaf tensor): expected (its grad_fn, 0), got {got!r:.120}")


def check_topological_order(ns: dict) -> None:
    m2 = ns["ch02_tape"]
    Node = m2.Node
    rng = np.random.default_rng(12)
    for trial in range(12):            # random graphs with shared nodes: each node before every node it sends to
        n = 9
        nodes: list[Any] = []
        edges: dict[int, list[int]] = {}
        for i in range(n):             # node i may send gradients to any earlier-made node
            targets = sorted({int(j) for j in rng.integers(0, i, size=rng.integers(1, 4))}) if i else []
            edges[i] = targets
            nodes.append(Node(tuple((nodes[j], 0) for j in targets) + (((None, 0),) if i % 3 == 0 else ())))
        root = nodes[-1]
        order = list(m2.topological_order(root))
        index = {id(node): i for i, node in enumerate(nodes)}
        got = [index.get(id(node), "?") for node in order]
        reachable, todo = set(), [n - 1]
        while todo:
            i = todo.pop()
            if i not in reachable:
                reachable.add(i)
                todo.extend(edges[i])
        if sorted(got, key=str) != sorted(reachable, key=str) or got[0] != n - 1:
            raise Mismatch(f"topological_order(root) of a graph with shared nodes (node -> nodes it sends to: "
                           f"{ {i: edges[i] for i in sorted(reachable)} }): expected each node reachable from the root "
                           f"once, the root ({n - 1}) first; got {got}")
        pos = {i: k for k, i in enumerate(got)}
        for i in reachable:
            for j in edges[i]:
                if pos[i] > pos[j]:
                    raise Mismatch(f"topological_order(root): node {i} should come before node {j} (it sends it a "
                                   f"gradient) in the graph {{node: nodes it sends to}} = "
                                   f"{ {k: edges[k] for k in sorted(reachable)} }; got the order {got}")
    chain = Node(())
    for _ in range(5000):
        chain = Node(((chain, 0),))
    length = len(list(m2.topological_order(chain)))
    if length != 5001:
        raise Mismatch(f"topological_order of a chain of 5001 nodes (a deep graph, as torch handles): expected 5001 "
                       f"nodes, got {length}")


def check_grad_mode(ns: dict) -> None:
    import torch
    m5 = ns["ch05_grad_modes"]

    def run(no_grad: Any, enable_grad: Any, enabled: Callable[[], bool]) -> list[bool]:
        seen = [enabled()]
        with no_grad():
            seen.append(enabled())
            with enable_grad():
                seen.append(enabled())
            seen.append(enabled())
            with no_grad():
                pass
            seen.append(enabled())
        seen.append(enabled())
        raised = False
        try:
            with no_grad():
                raise KeyError("inside")
        except KeyError:
            raised = True
        seen.extend([raised, enabled()])
        return seen

    ours = run(m5.no_grad, m5.enable_grad, m5.is_grad_enabled)
    theirs = run(torch.no_grad, torch.enable_grad, torch.is_grad_enabled)
    labels = ["is_grad_enabled() before", "is_grad_enabled() inside no_grad",
              "is_grad_enabled() inside enable_grad inside no_grad", "is_grad_enabled() back in no_grad",
              "is_grad_enabled() in no_grad after a no_grad block inside it", "is_grad_enabled() after no_grad",
              "did the KeyError raised inside no_grad reach the caller", "is_grad_enabled() after a no_grad block that raised"]
    for label, o, t in zip(labels, ours, theirs):
        if o != t:
            raise Mismatch(f"{label}: expected {t} (torch), got {o}")


def check_apply(ns: dict) -> None:
    m2, m5 = ns["ch02_tape"], ns["ch05_grad_modes"]
    r = _trusted(m2)
    x = m2.Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    c = m2.Tensor(np.array([2.0, 0.5, -1.0]))
    out = r["Prod"].apply(x, c)
    close("Function.apply(x, c).data (a rule that multiplies)", out.data, [2.0, -1.0, -3.0], **F64)
    if not out.requires_grad or out.grad_fn is None or out.is_leaf:
        raise Mismatch(f"Function.apply(x, c) with x requiring grad: expected requires_grad=True, a grad_fn, not a leaf "
                       f"(torch), got requires_grad={out.requires_grad}, grad_fn={out.grad_fn!r:.60}")
    edges = tuple(tuple(e) for e in out.grad_fn.next_functions)
    if len(edges) != 2 or edges[0][0] is not m2.gradient_edge(x)[0] or edges[1][0] is not None:
        raise Mismatch(f"Function.apply(x, c).grad_fn.next_functions: expected ((x's AccumulateGrad, 0), (None, 0)) "
                       f"as torch, got {edges!r:.160}")
    need = tuple(getattr(out.grad_fn.ctx, "needs_input_grad", ()))
    equal("ctx.needs_input_grad of Function.apply(x, c) (x requires grad, c does not)", need, (True, False))
    with m5.no_grad():
        inside = r["Prod"].apply(x, c)
    if inside.requires_grad or inside.grad_fn is not None:
        raise Mismatch("Function.apply(x, c) inside no_grad(): expected requires_grad=False and no grad_fn (torch), "
                       f"got requires_grad={inside.requires_grad}, grad_fn={inside.grad_fn!r:.60}")
    plain = r["Prod"].apply(c, c)
    if plain.requires_grad or plain.grad_fn is not None:
        raise Mismatch("Function.apply(c, c), no input requiring grad: expected no graph (requires_grad=False, "
                       f"grad_fn None), got requires_grad={plain.requires_grad}")
    zero_d = r["Total"].apply(x)
    if not isinstance(zero_d.data, np.ndarray) or zero_d.shape != ():
        raise Mismatch(f"Function.apply of a rule returning a NumPy scalar: expected a 0-d array in .data, got "
                       f"{type(zero_d.data).__name__} {zero_d.data!r:.60}")


def check_call_node(ns: dict) -> None:
    m2 = ns["ch02_tape"]
    r = _trusted(m2)
    x = m2.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = r["Scale"].apply(x, factor=3.0)
    got = out.grad_fn(np.array([1.0, -1.0]))
    got = got if isinstance(got, tuple) else (got,)
    close("node(grad) for the node of x * 3 (a node called as backward calls it)", got[0], [3.0, -3.0], **F64)


def check_backward(ns: dict) -> None:
    import torch
    m2 = ns["ch02_tape"]
    r = _trusted(m2)
    xv, wv, g = np.array([0.5, -1.5, 2.0]), np.array([1.5, 2.0, -0.5]), np.array([1.0, -2.0, 0.5])

    def ours() -> tuple[Any, Any]:
        x, w = m2.Tensor(xv.copy(), requires_grad=True), m2.Tensor(wv.copy(), requires_grad=True)
        y = r["Prod"].apply(x, w)                    # x used three times: fan-out and a diamond
        z = r["Prod"].apply(y, x)
        u = r["Scale"].apply(z, factor=2.0)
        v = r["Prod"].apply(u, y)
        loss = r["Total"].apply(r["Prod"].apply(v, m2.Tensor(g)))
        loss.backward()
        return x, w

    def theirs() -> tuple[Any, Any]:
        x = torch.tensor(xv, requires_grad=True)
        w = torch.tensor(wv, requires_grad=True)
        y = x * w
        v = (y * x * 2.0) * y
        (v * torch.tensor(g)).sum().backward()
        return x, w

    (x, w), (tx, tw) = ours(), theirs()
    close("x.grad after backward() of a graph where x is used three times (fan-out, a diamond)", grad_of(x), tx.grad,
          **F64)
    close("w.grad after the same backward()", grad_of(w), tw.grad, **F64)
    # an explicit gradient, a non-scalar root, and a second backward (retain_graph) accumulating as torch does
    x = m2.Tensor(xv.copy(), requires_grad=True)
    out = r["Prod"].apply(r["Prod"].apply(x, x), m2.Tensor(wv))
    out.backward(g, retain_graph=True)
    out.backward(g)
    t = torch.tensor(xv, requires_grad=True)
    tout = t * t * torch.tensor(wv)
    tout.backward(torch.tensor(g), retain_graph=True)
    tout.backward(torch.tensor(g))
    close("x.grad after out.backward(g, retain_graph=True) then out.backward(g) for out = x * x * w", grad_of(x),
          t.grad, **F64)
    try:                                # the graph was freed by the last backward: torch refuses a third one
        out.backward(g)
    except RuntimeError:
        pass
    else:
        raise Mismatch("a third out.backward(g) after out.backward(g) without retain_graph: expected RuntimeError (torch: "
                       "backward frees what the graph saved), got none")
    leaf = m2.Tensor(xv.copy(), requires_grad=True)
    leaf.backward(g)
    close("leaf.grad after leaf.backward(g) on a leaf itself (torch: g)", grad_of(leaf), g, **F64)


def check_unbroadcast(ns: dict) -> None:
    import torch
    m3 = ns["ch03_vjp_rules"]
    rng = np.random.default_rng(0)
    for grad_shape, shape in (((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((4, 2, 3), (2, 1)), ((2, 3), (2, 3)),
                              ((2, 3), ()), ((3, 1, 4), (1, 4))):
        for dtype in (np.float64, np.float32):
            grad = rng.normal(size=grad_shape).astype(dtype)
            expected = torch.from_numpy(grad.copy()).sum_to_size(shape).numpy()
            close(f"unbroadcast(grad of shape {grad_shape}, {shape}) ({np.dtype(dtype).name})",
                  m3.unbroadcast(grad.copy(), shape), expected, dtype=dtype, **(F64 if dtype == np.float64 else F32))


def _binary(ns: dict, op: str, b_shapes: tuple[tuple[int, ...], ...], positive: bool = False) -> None:
    import torch
    m2 = ns["ch02_tape"]
    rng = np.random.default_rng(1)
    fn = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}[op]
    for dtype in (np.float64, np.float32):
        tol = F64 if dtype == np.float64 else F32
        for b_shape in b_shapes:
            av = rng.normal(size=(2, 3)).astype(dtype)
            bv = rng.normal(size=b_shape).astype(dtype)
            if positive:
                bv = (np.abs(bv) + 0.5).astype(dtype)
            gv = rng.normal(size=np.broadcast_shapes((2, 3), b_shape)).astype(dtype)
            a, b = m2.Tensor(av.copy(), requires_grad=True), m2.Tensor(bv.copy(), requires_grad=True)
            out = fn(a, b)
            ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
            tout = fn(ta, tb)
            name = f"a {op} b for a {(2, 3)} and b {b_shape}, {np.dtype(dtype).name}"
            close(f"({name}).data", out.data, tout, dtype=dtype, **tol)
            out.backward(gv)
            tout.backward(torch.from_numpy(gv))
            close(f"a.grad after ({name}).backward(g)", grad_of(a), ta.grad, dtype=dtype, **tol)
            close(f"b.grad after ({name}).backward(g)", grad_of(b), tb.grad, dtype=dtype, **tol)
        a = m2.Tensor(rng.normal(size=(2, 3)).astype(dtype), requires_grad=True)
        ta = torch.tensor(a.data.copy(), requires_grad=True)
        out, tout = fn(a, 4.0), fn(ta, 4.0)
        close(f"(a {op} 4.0).data, a {np.dtype(dtype).name} and a Python number", out.data, tout, dtype=dtype, **tol)
        out.backward(np.ones((2, 3), dtype=dtype))
        tout.backward(torch.ones(2, 3, dtype=tout.dtype))
        close(f"a.grad after (a {op} 4.0).backward(ones)", grad_of(a), ta.grad, dtype=dtype, **tol)


def check_add_sub(ns: dict) -> None:
    _binary(ns, "+", ((3,), (2, 1), (2, 3)))
    _binary(ns, "-", ((3,), (2, 1)))


def check_mul_div(ns: dict) -> None:
    _binary(ns, "*", ((3,), (2, 1), (2, 3)))
    _binary(ns, "/", ((3,), (2, 1)), positive=True)


def check_matmul(ns: dict) -> None:
    import torch
    m2 = ns["ch02_tape"]
    rng = np.random.default_rng(2)
    for dtype in (np.float64, np.float32):
        tol = F64 if dtype == np.float64 else dict(rtol=1e-5, atol=1e-5)
        for a_shape, b_shape in (((2, 3, 4, 5), (5, 6)), ((2, 3, 4, 5), (2, 3, 5, 4)), ((4, 5), (5,))):
            av, bv = rng.normal(size=a_shape).astype(dtype), rng.normal(size=b_shape).astype(dtype)
            a, b = m2.Tensor(av.copy(), requires_grad=True), m2.Tensor(bv.copy(), requires_grad=True)
            ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
            _forward_backward(f"a @ b for a {a_shape} and b {b_shape}, {np.dtype(dtype).name}", a @ b, ta @ tb,
                              {"a": (a, ta), "b": (b, tb)}, rng, dtype, tol)


def _forward_backward(name: str, out: Any, tout: Any, inputs: dict[str, tuple[Any, Any]], rng: np.random.Generator,
                      dtype: Any, tol: dict) -> None:
    """The engine's result and torch's, then each input's gradient after backward of the same random g."""
    import torch

    close(f"({name}).data", out.data, tout, dtype=dtype, **tol)
    gv = rng.normal(size=tout.shape).astype(dtype)
    out.backward(gv)
    tout.backward(torch.from_numpy(gv))
    for label, (ours, theirs) in inputs.items():
        close(f"{label}.grad after ({name}).backward(g)", grad_of(ours), theirs.grad, dtype=dtype, **tol)


def check_shapes(ns: dict) -> None:
    import torch
    m2 = ns["ch02_tape"]
    rng = np.random.default_rng(3)
    cases = [
        ("x.reshape(2, 3, 2, 2)", lambda t: t.reshape(2, 3, 2, 2), lambda t: t.reshape(2, 3, 2, 2)),
        ("x.transpose(1, 2)", lambda t: t.transpose(1, 2), lambda t: t.transpose(1, 2)),
        ("x.T", lambda t: t.T, lambda t: t.transpose(-2, -1)),
        ("x[:, :2] (a slice)", lambda t: t[:, :2], lambda t: t[:, :2]),
        ("x[[0, 0, 1]] (a repeated index)", lambda t: t[[0, 0, 1]], lambda t: t[[0, 0, 1]]),
        ("x[1] (an integer)", lambda t: t[1], lambda t: t[1]),
    ]
    for dtype in (np.float64, np.float32):
        tol = F64 if dtype == np.float64 else F32
        for label, ours, theirs in cases:
            xv = rng.normal(size=(2, 3, 4)).astype(dtype)
            x, tx = m2.Tensor(xv.copy(), requires_grad=True), torch.tensor(xv, requires_grad=True)
            _forward_backward(f"{label} for x of shape (2, 3, 4), {np.dtype(dtype).name}", ours(x), theirs(tx),
                              {"x": (x, tx)}, rng, dtype, tol)


def check_cross_entropy(ns: dict) -> None:
    import torch
    import torch.nn.functional as F
    m2, m3 = ns["ch02_tape"], ns["ch03_vjp_rules"]
    rng = np.random.default_rng(4)
    for dtype in (np.float64, np.float32):
        tol = F64 if dtype == np.float64 else F32
        for n, c, scale in ((6, 5, 1.0), (3, 30, 30.0), (3, 4, 1000.0)):
            zv = (rng.normal(size=(n, c)) * scale).astype(dtype)
            y = rng.integers(0, c, size=n)
            z, tz = m2.Tensor(zv.copy(), requires_grad=True), torch.tensor(zv, requires_grad=True)
            loss, tloss = m3.cross_entropy(z, y), F.cross_entropy(tz, torch.from_numpy(y))
            name = f"cross_entropy(logits {(n, c)}, targets), {np.dtype(dtype).name}, logits of scale {scale:g}"
            close(f"{name}", loss.data, tloss, dtype=dtype, **tol)
            loss.backward()
            tloss.backward()
            close(f"logits.grad after {name}.backward()", grad_of(z), tz.grad, dtype=dtype, **tol)


def check_layer_norm(ns: dict) -> None:
    import torch
    import torch.nn.functional as F
    m2, m8 = ns["ch02_tape"], ns[CAPSTONE]
    rng = np.random.default_rng(5)
    for dtype in (np.float64, np.float32):
        tol = F64 if dtype == np.float64 else dict(rtol=1e-5, atol=1e-5)
        xv, wv, bv = (rng.normal(size=s).astype(dtype) for s in ((2, 3, 8), (8,), (8,)))
        x, w, b = (m2.Tensor(v.copy(), requires_grad=True) for v in (xv, wv, bv))
        tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
        out, tout = m8.layer_norm(x, w, b), F.layer_norm(tx, (8,), tw, tb, eps=1e-5)
        name = f"layer_norm(x (2, 3, 8), weight, bias) (the capstone's: chapter 3's norm, then * weight + bias), " \
               f"{np.dtype(dtype).name}"
        close(name, out.data, tout, dtype=dtype, **tol)
        gv = rng.normal(size=(2, 3, 8)).astype(dtype)
        out.backward(gv)
        tout.backward(torch.from_numpy(gv))
        for label, ours, theirs in (("x", x, tx), ("weight", w, tw), ("bias", b, tb)):
            close(f"{label}.grad after {name}.backward(g)", grad_of(ours), theirs.grad, dtype=dtype, **tol)


def check_capstone_functions(ns: dict) -> None:
    import torch
    import torch.nn.functional as F
    m2, m8 = ns["ch02_tape"], ns[CAPSTONE]
    rng = np.random.default_rng(6)
    table = rng.normal(size=(6, 4))
    ids = np.array([[1, 4, 1], [5, 0, 1]])
    t, tt = m2.Tensor(table.copy(), requires_grad=True), torch.tensor(table, requires_grad=True)
    out, tout = m8.embedding(t, ids), F.embedding(torch.from_numpy(ids), tt)
    close("embedding(table (6, 4), ids with repeats)", out.data, tout, **F64)
    g = rng.normal(size=(2, 3, 4))
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    close("table.grad after embedding(table, ids).backward(g)", grad_of(t), tt.grad, **F64)
    xv = rng.normal(size=(3, 5)) * 2
    x, tx = m2.Tensor(xv.copy(), requires_grad=True), torch.tensor(xv, requires_grad=True)
    out, tout = m8.gelu(x), F.gelu(tx)
    close("gelu(x)", out.data, tout, **F64)
    out.backward(np.ones((3, 5)))
    tout.backward(torch.ones(3, 5, dtype=torch.float64))
    close("x.grad after gelu(x).backward(ones)", grad_of(x), tx.grad, **F64)
    sv = rng.normal(size=(2, 2, 4, 4))
    s, ts = m2.Tensor(sv.copy(), requires_grad=True), torch.tensor(sv, requires_grad=True)
    mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    out, tout = m8.causal_softmax(s), torch.softmax(ts.masked_fill(mask, float("-inf")), dim=-1)
    close("causal_softmax(scores (2, 2, 4, 4))", out.data, tout, **F64)
    g = rng.normal(size=(2, 2, 4, 4))
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    close("scores.grad after causal_softmax(scores).backward(g)", grad_of(s), ts.grad, **F64)


def check_clip(ns: dict) -> None:
    import torch
    m2, m4 = ns["ch02_tape"], ns["ch04_accumulation"]
    rng = np.random.default_rng(7)
    shapes = ((3, 4), (4,), (2, 2))
    for max_norm in (0.5, 100.0):
        for dtype in (np.float64, np.float32):
            tol = F64 if dtype == np.float64 else F32
            grads = [rng.normal(size=s).astype(dtype) for s in shapes]
            params = [m2.Tensor(np.zeros(s, dtype=dtype), requires_grad=True) for s in shapes]
            tparams = [torch.zeros(s, dtype=torch.float64 if dtype == np.float64 else torch.float32,
                                   requires_grad=True) for s in shapes]
            for p, tp, g in zip(params, tparams, grads):
                p.grad = m2.Tensor(g.copy())
                tp.grad = torch.from_numpy(g.copy())
            total = m4.clip_grad_norm_(params, max_norm)
            ttotal = torch.nn.utils.clip_grad_norm_(tparams, max_norm)
            name = f"clip_grad_norm_(three parameters, max_norm={max_norm:g}), {np.dtype(dtype).name} gradients"
            close(f"the norm {name} returns", float(np.asarray(array_of(total))), float(ttotal), **tol)
            for i, (p, tp) in enumerate(zip(params, tparams)):
                close(f"parameter {i}'s .grad after {name}", grad_of(p), tp.grad, dtype=dtype, **tol)


def check_adamw(ns: dict) -> None:
    import torch
    m2, m8 = ns["ch02_tape"], ns[CAPSTONE]
    rng = np.random.default_rng(8)
    values = [rng.normal(size=s) for s in ((3, 2), (2,), (4, 3))]
    grads = [[rng.normal(size=v.shape) * 10 ** -k for v in values] for k in range(3)]
    params = [m2.Tensor(v.copy(), requires_grad=True) for v in values]
    tparams = [torch.tensor(v, requires_grad=True) for v in values]
    settings = dict(lr=0.05, betas=(0.9, 0.99), eps=1e-8)
    opt = m8.GroupedAdamW(params, [params[0], params[2]], weight_decay=0.1, **settings)
    topt = torch.optim.AdamW([{"params": [tparams[0], tparams[2]], "weight_decay": 0.1},
                              {"params": [tparams[1]], "weight_decay": 0.0}], foreach=False, **settings)
    for step, gs in enumerate(grads, 1):
        for p, tp, g in zip(params, tparams, gs):
            p.grad = m2.Tensor(g.copy())
            tp.grad = torch.from_numpy(g.copy())
        opt.step()
        topt.step()
        for i, (p, tp) in enumerate(zip(params, tparams)):
            kind = "decayed" if i != 1 else "not decayed"
            close(f"parameter {i} ({kind}) after {step} AdamW step(s) (lr 0.05, betas (0.9, 0.99), weight decay 0.1 on "
                  f"matrices only, as chapter 8 groups them)", p.data, tp, **F64)


def check_autocast(ns: dict) -> None:
    import torch
    import torch.nn.functional as F
    m2, m3, m6 = ns["ch02_tape"], ns["ch03_vjp_rules"], ns["ch06_loss_scaling"]
    rng = np.random.default_rng(9)
    av, bv = rng.normal(size=(4, 5)).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)
    y = np.array([0, 2, 1, 2])
    a, b = m2.Tensor(av.copy(), requires_grad=True), m2.Tensor(bv.copy(), requires_grad=True)
    ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
    with m6.autocast(dtype=np.float16):
        z = a @ b
        loss = m3.cross_entropy(z, y)
    with torch.autocast("cpu", dtype=torch.float16):
        tz = ta @ tb
        tloss = F.cross_entropy(tz, torch.from_numpy(y))
    equal("(a @ b).dtype inside autocast(float16) for float32 a and b (torch: float16)", z.dtype, np.dtype(np.float16))
    close("(a @ b) inside autocast(float16)", z.data, tz.float(), rtol=2e-3, atol=2e-3)
    equal("cross_entropy(float16 logits).dtype inside autocast (torch: float32)", loss.dtype, np.dtype(np.float32))
    close("cross_entropy(a @ b, y) inside autocast(float16)", loss.data, tloss, rtol=1e-3, atol=1e-4)
    loss.backward()
    tloss.backward()
    for label, ours, theirs in (("a", a, ta), ("b", b, tb)):
        close(f"{label}.grad after the autocast loss's backward (float32 leaves: float32 gradients)", grad_of(ours),
              theirs.grad, rtol=5e-3, atol=5e-4, dtype=np.float32)
    a64, b64 = m2.Tensor(av.astype(np.float64)), m2.Tensor(bv.astype(np.float64))
    with m6.autocast(dtype=np.float16):
        z64 = a64 @ b64
    equal("(a @ b).dtype inside autocast(float16) for float64 a and b (torch: float64 is never cast)", z64.dtype,
          np.dtype(np.float64))


class _PlainOptimizer:
    """p -= 0.1 * grad: an optimiser written here, so that the GradScaler check depends on nothing else of the student's."""

    def __init__(self, params: list[Any]) -> None:
        self.params = params

    def step(self) -> None:
        for p in self.params:
            if p.grad is not None:
                p.data -= 0.1 * np.asarray(p.grad.data)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


def check_grad_scaler(ns: dict) -> None:
    import torch
    m2, m6 = ns["ch02_tape"], ns["ch06_loss_scaling"]
    w0, v0 = np.array([1.0, -2.0, 0.5], dtype=np.float32), np.array([0.25, 4.0], dtype=np.float32)
    p, q = m2.Tensor(w0.copy(), requires_grad=True), m2.Tensor(v0.copy(), requires_grad=True)
    tp, tq = torch.tensor(w0.copy(), requires_grad=True), torch.tensor(v0.copy(), requires_grad=True)
    scaler = m6.GradScaler(init_scale=2.0 ** 10, growth_interval=2)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    opt, topt = _PlainOptimizer([p, q]), torch.optim.SGD([tp, tq], lr=0.1)
    c, d = np.array([0.5, 1.5, -1.0], dtype=np.float32), np.array([2.0, -0.5], dtype=np.float32)
    # an inf (step 2) or a NaN (step 8) in the second parameter's gradient: the step is skipped and the scale backs
    # off; two clean steps in a row grow it (steps 4 and 6)
    plan = {2: np.inf, 8: np.nan}
    for step in range(1, 10):
        factor = d.copy()
        if step in plan:
            factor[1] = plan[step]
        p.grad = q.grad = tp.grad = tq.grad = None
        loss = (p * m2.Tensor(c)).sum() + (q * m2.Tensor(factor)).sum()
        tloss = (tp * torch.from_numpy(c)).sum() + (tq * torch.from_numpy(factor)).sum()
        scaled, tscaled = scaler.scale(loss), tscaler.scale(tloss)
        if step not in plan:
            close(f"scaler.scale(loss) at step {step} (scale {tscaler.get_scale():g})", scaled.data, tscaled,
                  rtol=1e-6, atol=0, dtype=np.float32)
        with np.errstate(all="ignore"):
            scaled.backward()
        tscaled.backward()
        scaler.unscale_(opt)
        tscaler.unscale_(topt)
        if step not in plan:
            close(f"p.grad after scaler.unscale_ at step {step}", grad_of(p), tp.grad, rtol=1e-6, atol=0)
        scaler.step(opt)
        tscaler.step(topt)
        scaler.update()
        tscaler.update()
        for name, ours, theirs in (("p", p, tp), ("q", q, tq)):
            close(f"{name} after scaler.step at step {step} (an inf at step 2 and a NaN at step 8 in q's gradient: "
                  f"those steps must be skipped)", ours.data, theirs, rtol=1e-6, atol=1e-7)
        close(f"scaler.get_scale() after update() at step {step} (init_scale 2**10, growth_interval 2; an inf at step 2 "
              f"and a NaN at step 8)", scaler.get_scale(), tscaler.get_scale(), rtol=0, atol=0)


def check_checkpoint(ns: dict) -> None:
    import torch
    import torch.utils.checkpoint as torch_ckpt
    m2, m7 = ns["ch02_tape"], ns["ch07_checkpointing"]
    rng = np.random.default_rng(10)
    hv, wv, bv = rng.normal(size=(3, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4,))

    def segment(h: Any, w: Any, b: Any) -> Any:
        z = h @ w + b
        return z * z + h

    h, w, b = (m2.Tensor(v.copy(), requires_grad=True) for v in (hv, wv, bv))
    th, tw, tb = (torch.tensor(v, requires_grad=True) for v in (hv, wv, bv))
    out = m7.checkpoint(segment, h, w, b)
    tout = torch_ckpt.checkpoint(segment, th, tw, tb, use_reentrant=False)
    close("checkpoint(segment, h, w, b) (segment: z = h @ w + b; z * z + h)", out.data, tout, **F64)
    if out.grad_fn is None:
        raise Mismatch("checkpoint(segment, h, w, b) with inputs requiring grad: expected a grad_fn (torch), got None")
    g = rng.normal(size=(3, 4))
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    for label, ours, theirs in (("h", h, th), ("w", w, tw), ("b", b, tb)):
        close(f"{label}.grad after checkpoint(segment, h, w, b).backward(g)", grad_of(ours), theirs.grad, **F64)

    def with_dropout(x: Any) -> Any:
        return m7.dropout(x, 0.5) * 3.0

    def run(use_checkpoint: bool) -> tuple[Any, np.ndarray]:
        m7.manual_seed(3)
        x = m2.Tensor(np.ones(8), requires_grad=True)
        y = m7.checkpoint(with_dropout, x) if use_checkpoint else with_dropout(x)
        m7.RNG.random(3)                  # the program draws between forward and backward
        y.backward(np.ones(8))
        return grad_of(x), m7.RNG.random(4)

    (grad, after), (plain_grad, plain_after) = run(True), run(False)
    close("x.grad through a checkpointed segment with dropout (the rerun must draw forward's mask)", grad, plain_grad,
          rtol=0, atol=0)
    close("the random numbers drawn after backward of a checkpointed segment with dropout, numbers drawn between "
          "forward and backward (torch: the same as without checkpoint; the rerun's state must be put back)", after,
          plain_after, rtol=0, atol=0)
    m6 = ns["ch06_loss_scaling"]
    h32, w32 = hv.astype(np.float32), wv.astype(np.float32)

    def under_autocast(use_checkpoint: bool) -> tuple[Any, Any]:
        h, w = m2.Tensor(h32.copy(), requires_grad=True), m2.Tensor(w32.copy(), requires_grad=True)
        with m6.autocast(dtype=np.float16):
            out = m7.checkpoint(lambda h, w: (h @ w) * (h @ w), h, w) if use_checkpoint else (h @ w) * (h @ w)
        out.backward(np.ones(out.shape, dtype=out.dtype))
        return grad_of(h), grad_of(w)

    (gh, gw), (ph, pw) = under_autocast(True), under_autocast(False)
    close("h.grad through a checkpointed segment run under autocast(float16) (the rerun must repeat forward's casts)",
          gh, ph, rtol=1e-6, atol=0)
    close("w.grad through the same checkpointed segment under autocast", gw, pw, rtol=1e-6, atol=0)


def check_capstone_loss(ns: dict) -> None:
    """The capstone's loss and every parameter's gradient on a tiny model, plain and checkpointed, against torch."""
    from course.model import Config, init_weights
    import autograde.hidden.ch08_capstone as oracle
    m2, m8 = ns["ch02_tape"], ns[CAPSTONE]
    config = Config(vocab=30, block=8, d_model=8, n_heads=2, n_layers=2, d_ff=12)
    weights = init_weights(config, seed=3, std=0.3, perturb_norms=True)
    rng = np.random.default_rng(11)
    x, y = rng.integers(0, 30, size=(3, 6)), rng.integers(0, 30, size=(3, 6))
    TW = oracle.to_torch(weights)
    tloss = oracle.loss_fn(TW, x, y, config)
    tloss.backward()
    for ckpt in (False, True):
        W = {n: m2.Tensor(np.array(v), requires_grad=True) for n, v in weights.items()}
        loss = m8.loss_fn(W, x, y, config.n_heads, checkpoint=ckpt)
        name = f"the capstone's loss_fn on a tiny model (2 blocks, d 8){' with checkpointed blocks' if ckpt else ''}"
        close(name, loss.data, tloss, **F64)
        loss.backward()
        for n in weights:
            close(f"W[{n!r}].grad after {name}.backward()", grad_of(W[n]), TW[n].grad, rtol=1e-8, atol=1e-12)


CH2, CH3, CH4, CH5, CH6, CH7 = ("ch02_tape", "ch03_vjp_rules", "ch04_accumulation", "ch05_grad_modes",
                                "ch06_loss_scaling", "ch07_checkpointing")
CORE = ((CH5, "apply"), (CH4, "backward_engine"), (CH5, "hooks"), (CH5, "inplace"), (CH2, "accumulate_grad"),
        (CH2, "recording"), (CH2, "topological_order"))
CHECKS: tuple[Check, ...] = (
    Check("AccumulateGrad (a leaf's gradients add up)", ((CH2, "accumulate_grad"),), check_accumulate),
    Check("gradient_edge", ((CH2, "recording"),), check_gradient_edge),
    Check("topological_order", ((CH2, "topological_order"),), check_topological_order),
    Check("no_grad and enable_grad", ((CH5, "grad_mode"), (CH5, "grad_state")), check_grad_mode),
    Check("Function.apply (recording)", ((CH5, "apply"), (CH2, "recording")), check_apply),
    Check("calling a node", ((CH5, "hooks"),), check_call_node),
    Check("backward", ((CH4, "backward_engine"),) + CORE, check_backward),
    Check("unbroadcast", ((CH3, "unbroadcast"),), check_unbroadcast),
    Check("add and sub, broadcasting", ((CH3, "arithmetic_rules"), (CH2, "mul_and_exp"), (CH3, "unbroadcast")) + CORE,
          check_add_sub),
    Check("mul and div, broadcasting", ((CH5, "rules"), (CH3, "arithmetic_rules"), (CH2, "mul_and_exp"),
                                        (CH3, "unbroadcast")) + CORE, check_mul_div),
    Check("matmul, batched", ((CH3, "unbroadcast"),) + CORE, check_matmul),
    Check("reshape, transpose and indexing", ((CH3, "reduction_rules"),) + CORE, check_shapes),
    Check("cross_entropy", ((CH3, "softmax_rules"),) + CORE, check_cross_entropy),
    Check("layer norm", ((CH5, "rules"), (CH3, "arithmetic_rules"), (CH3, "unbroadcast")) + CORE, check_layer_norm),
    Check("the capstone's embedding, gelu and causal softmax on your engine", CORE, check_capstone_functions),
    Check("clip_grad_norm_", ((CH4, "clip"),), check_clip),
    Check("AdamW", ((CH4, "adamw"),), check_adamw),
    Check("autocast", ((CH6, "autocast_inputs"),) + CORE, check_autocast),
    Check("GradScaler", ((CH6, "grad_scaler"),), check_grad_scaler),
    Check("checkpoint", ((CH7, "checkpoint"),) + CORE, check_checkpoint),
    Check("the capstone's loss and gradients on a tiny model", CORE, check_capstone_loss),
)


# -- running them ------------------------------------------------------------------------------------------------------
def _stubs_by_design(code: str) -> set[str]:
    """Names in the course's own answer whose body (or one of whose methods) only raises NotImplementedError (an
    abstract base such as chapter 2's Function): is_stub is true of them even when answered."""
    import ast

    from course.checking import _raises_not_implemented

    def stub_body(body: list) -> bool:
        kept = [s for s in body
                if not (isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        return len(kept) == 1 and _raises_not_implemented(kept[0])

    out = set()
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and stub_body(node.body):
            out.add(node.name)
        elif isinstance(node, ast.ClassDef) and any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                                                    and stub_body(f.body) for f in node.body):
            out.add(node.name)
    return out


def unanswered(engine: Engine) -> tuple[str | None, list[str]]:
    """(the message for the first answer the capstone's training needs that is not answered, or None; notes on
    unanswered exercises it does not need). Not answered: the cell is missing or still only raises
    NotImplementedError, or a function or class of REQUIRED it defines is still a stub. A name the student's cell
    does not define at all is left to the import and the checks (an alternative answer may do without it)."""
    from course.checking import is_stub
    from autograde import notebook as nbk
    from autograde.own_engine.collect import source_code
    from autograde.paths import source_path

    notes, first = [], None
    for chapter, plan in engine.plans.items():
        module = vars(engine.modules[chapter]) if chapter in engine.modules else {}
        by_design: set[str] = set()
        for cell in nbk.read(source_path(chapter)).cells:
            if nbk.is_solution(cell) and nbk.is_exported(cell):
                by_design |= _stubs_by_design(source_code(cell))
        for gid, exercise in plan.exercises.items():
            required = REQUIRED.get((chapter, gid))
            problem = plan.unanswered.get(gid)
            if problem is None:
                names = required if required is not None else exercise.defines
                stubs = [n for n in names if n in module and n not in by_design and is_stub(module[n])]
                if stubs:
                    problem = f"{', '.join(stubs)} still raises NotImplementedError"
            if problem is None:
                continue
            if required is not None:
                first = first or (f"own engine: {exercise.label()}: not answered yet ({problem}); the capstone's "
                                  f"engine needs {', '.join(required)}")
            else:
                notes.append(f"{exercise.label()} is not answered ({problem}); the capstone does not need it")
    return first, notes


def _profile(engine: Engine) -> tuple[Callable[..., Any], set[tuple[str, str]]]:
    """A profile function recording the answer cells whose code runs, and the set it fills."""
    files = {str(engine.path_of(c)): c for c in engine.plans}
    ran: set[tuple[str, str]] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename in files:
            block = engine.block_at(frame.f_code.co_filename, frame.f_code.co_firstlineno)
            if block is not None and block.kind in ("answer", "own") and block.grade_id:
                ran.add((block.chapter, block.grade_id))

    return profile, ran


def blame(engine: Engine, targets: tuple[tuple[str, str], ...], ran: set[tuple[str, str]]) -> str:
    """The exercise to name: the first target whose code ran, else the first target."""
    for chapter, gid in targets:
        if (chapter, gid) in ran and engine.exercise(chapter, gid) is not None:
            return engine.exercise(chapter, gid).label()
    for chapter, gid in targets:
        if engine.exercise(chapter, gid) is not None:
            return engine.exercise(chapter, gid).label()
    return chapter_label(targets[0][0]) if targets else "your engine"


def error_message(engine: Engine, what: str, exc: BaseException, fallback: str,
                  verified: frozenset[tuple[str, str]] = frozenset()) -> str:
    """The one line for an exception raised while checking `what`: a stub's NotImplementedError names the stub's
    exercise ("not answered yet"); an error raised in the student's own code (the last frame of the generated modules
    is in an answer cell, even if NumPy raised it underneath) names that cell; an error the course's code raises
    deliberately (a refusal such as "backward through the graph a second time") names `fallback`, the exercise the
    check is about. So does an error raised in an exercise already checked on its own (`verified`): it was most
    likely handed something wrong by the code that calls it."""
    from course.checking import raised_by_stub

    detail = f"{type(exc).__name__}: {one_line(exc, 200)}"
    if isinstance(exc, TookTooLong):
        last, last_line = innermost_block(engine, exc.__traceback__)
        where = f"{engine.describe(last)} (line {last_line} of your cell)" if last is not None else fallback
        return f"own engine: {where}: {what} {exc}"
    block, line = innermost_block(engine, exc.__traceback__)
    if block is not None and raised_by_stub(exc):
        return f"own engine: {engine.describe(block)}: not answered yet ({what} raised {detail})"
    last, last_line = innermost_block(engine, exc.__traceback__, ("answer", "own", "given"))
    if last is not None and last.kind in ("answer", "own"):
        if (last.chapter, last.grade_id) not in verified or engine.describe(last) == fallback:
            return f"own engine: {engine.describe(last)}: {what} raised {detail} (line {last_line} of your cell)"
        return (f"own engine: {fallback}: {what} raised {detail} (in {engine.describe(last)}, line {last_line} of "
                f"that cell, which passed its own check: it was given something it does not expect)")
    return f"own engine: {fallback}: {what} raised {detail}"


@contextlib.contextmanager
def quiet() -> Any:
    """No output and no warnings from the student's code; NumPy's floating-point warnings off."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), warnings.catch_warnings(), \
            np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def run_checks(engine: Engine, checks: tuple[Check, ...] = CHECKS) -> int:
    """Run every check; raise OwnEngineError with one line at the first that fails. Returns how many passed."""
    ns = dict(engine.modules)
    verified: set[tuple[str, str]] = set()
    for check in checks:
        profile, ran = _profile(engine)
        try:
            with quiet(), time_limit(CHECK_SECONDS):
                sys.setprofile(profile)
                try:
                    check.run(ns)
                finally:
                    sys.setprofile(None)
        except Mismatch as finding:
            raise OwnEngineError(f"own engine: {blame(engine, check.targets, ran)}: {finding}") from None
        except Exception as exc:  # noqa: BLE001 - a student's code may raise anything
            raise OwnEngineError(error_message(engine, f"checking {check.what}", exc, blame(engine, check.targets, ran),
                                               frozenset(verified))) from None
        verified.add(check.targets[0])
    return len(checks)
