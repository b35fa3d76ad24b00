"""Hidden-test helpers of ch02_tape: random programs run in the notebook's engine and in torch, graph walks,
instrumented engines. The chapter's hidden test cells import them at grading time; they assert nothing
themselves (the cells do, with course.checking), so a helper cannot be the reason a test passes. Two of them
stop a walk that has gone exponential (edge_reads_limited, run_instrumented's most_calls) with an
AssertionError that says so, seconds before the cell's time limit would.

The notebook's classes are passed in (the engine's Tensor, Function, ...), never imported: the helpers work
on whatever code the test cell is grading.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch

# -- random programs ------------------------------------------------------------------------------------
# An op is (kind, input indices, constant). "_c" kinds take a Python constant on the right (recorded by both
# engines as an edge (None, 0)); "r..._c" kinds put it on the left, which torch records in another shape
# (RsubBackward1, swapped edges), so those appear only where gradients, not graphs, are compared.
ARITY = {"add": 2, "sub": 2, "mul": 2, "neg": 1, "exp": 1, "add_c": 1, "sub_c": 1, "mul_c": 1,
         "radd_c": 1, "rsub_c": 1, "rmul_c": 1}
GRAPH_KINDS = ("add", "sub", "mul", "neg", "exp", "add_c", "sub_c", "mul_c")
ALL_KINDS = tuple(ARITY)
CONSTANTS = (-1.5, -0.5, 0.25, 2.0, 2, -1, 3, 0)  # floats and ints, zero included
TORCH_OPS: dict[str, Callable] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "neg": torch.neg, "exp": torch.exp,
    "add_c": lambda a, c: a + c, "sub_c": lambda a, c: a - c, "mul_c": lambda a, c: a * c,
    "radd_c": lambda a, c: c + a, "rsub_c": lambda a, c: c - a, "rmul_c": lambda a, c: c * a}


def our_ops(Function: type, as_tensor: Callable) -> dict[str, Callable]:
    """The program ops in the notebook's engine. Mul and exp are the tests' own rules (subclasses of the
    notebook's Function, named as torch names them), so a test that is not Exercise 3's never grades Mul or Exp."""

    class CheckMul(Function):
        name = "MulBackward0"

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    class CheckExp(Function):
        name = "ExpBackward0"

        @staticmethod
        def forward(ctx, a):
            result = np.exp(a)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.saved_tensors[0]

    return {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: CheckMul.apply(a, b),
            "neg": lambda a: -a, "exp": lambda a: CheckExp.apply(a),
            "add_c": lambda a, c: a + c, "sub_c": lambda a, c: a - c,
            "mul_c": lambda a, c: CheckMul.apply(a, as_tensor(c, like=a)),
            "radd_c": lambda a, c: c + a, "rsub_c": lambda a, c: c - a,
            "rmul_c": lambda a, c: CheckMul.apply(as_tensor(c, like=a), a)}


def random_program(rng: np.random.Generator, n_leaves: int, n_ops: int, kinds=GRAPH_KINDS):
    """Which leaves require grad, and ops on earlier values (fan-out, shared leaves), values kept below 40."""
    requires = [True] + [bool(rng.random() < 0.6) for _ in range(n_leaves - 1)]
    bound = [1.0] * n_leaves  # |value| <= bound: keeps exp and products finite
    ops = []
    for k in range(n_ops):
        for _ in range(50):
            kind = str(rng.choice(sorted(kinds)))
            args = [int(rng.integers(len(bound))) for _ in range(ARITY[kind])]
            if k == 0:
                args[0] = 0  # the first op uses leaf 0, which requires grad: the output will too
            c = CONSTANTS[int(rng.integers(len(CONSTANTS)))]
            b = [bound[i] for i in args]
            new = {"add": sum(b), "sub": sum(b), "mul": b[0] * b[-1], "neg": b[0], "exp": float(np.exp(b[0]))}.get(
                kind, b[0] * abs(c) if "mul" in kind else b[0] + abs(c))
            if new <= 40.0:
                break
        else:
            kind, args, new = "neg", args[:1], b[0]
        ops.append((kind, tuple(args), c))
        bound.append(new)
    return requires, ops


def run_program(program, leaves: list, table: dict[str, Callable]):
    """Every value of the program (leaves first) and the scalar output: the sum of all values no op uses."""
    _, ops = program
    values = list(leaves)
    used = set()
    for kind, args, c in ops:
        inputs = [values[i] for i in args]
        used.update(args)
        values.append(table[kind](*inputs, c) if kind.endswith("_c") else table[kind](*inputs))
    sinks = [v for i, v in enumerate(values) if i >= len(leaves) and i not in used]
    total = sinks[0]
    for v in sinks[1:]:
        total = total + v
    return values, total.sum()


def make_leaves(rng: np.random.Generator, program, shape: tuple, dtypes: list, Tensor: type):
    """The same leaf data (some entries exactly zero) as the notebook's Tensors and as torch tensors."""
    requires, _ = program
    datas = []
    for _ in requires:
        data = rng.uniform(-1.0, 1.0, size=shape)
        data = np.where(rng.random(size=shape) < 0.15, 0.0, data)
        datas.append(np.asarray(data, dtype=dtypes[int(rng.integers(len(dtypes)))]))
    ours = [Tensor(d.copy(), requires_grad=r) for d, r in zip(datas, requires)]
    theirs = [torch.tensor(d.copy(), requires_grad=r) for d, r in zip(datas, requires)]
    return ours, theirs


@dataclass
class Case:
    """One random program, recorded by both engines."""

    where: str
    program: Any
    shape: tuple
    ours: list
    theirs: list
    our_values: list
    our_out: Any
    their_values: list
    their_out: Any


def random_cases(seed: int, specs: list, Tensor: type, Function: type, as_tensor: Callable,
                 n_leaves: tuple[int, int] = (2, 6), n_ops: tuple[int, int] = (4, 16),
                 kinds=GRAPH_KINDS) -> Iterator[Case]:
    """For each (shape, dtypes) in specs, a random program run in both engines (seeded: the same every time)."""
    rng = np.random.default_rng(seed)
    table = our_ops(Function, as_tensor)
    for k, (shape, dtypes) in enumerate(specs):
        program = random_program(rng, int(rng.integers(*n_leaves)), int(rng.integers(*n_ops)), kinds)
        ours, theirs = make_leaves(rng, program, shape, dtypes, Tensor)
        our_values, our_out = run_program(program, ours, table)
        their_values, their_out = run_program(program, theirs, TORCH_OPS)
        names = "/".join(np.dtype(d).name for d in dtypes)
        where = f"random program {k} ({len(program[1])} ops, {names} leaves of shape {shape})"
        yield Case(where, program, shape, ours, theirs, our_values, our_out, their_values, their_out)


def numpy_dtype(t: torch.Tensor) -> np.dtype:
    """The NumPy dtype of a torch tensor."""
    return np.dtype(str(t.dtype).replace("torch.", ""))


# -- graph walks (work on both engines' nodes) -----------------------------------------------------------------
def nodes_breadth_first(root) -> list:
    """The nodes reachable from root, numbered breadth-first (children in next_functions order)."""
    if root is None:
        return []
    seen, queue, k = {id(root)}, [root], 0
    while k < len(queue):
        for child, _ in queue[k].next_functions:
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
        k += 1
    return queue


def structure(root) -> list[tuple[str, tuple]]:
    """(name without namespace, edges) per node, numbered as nodes_breadth_first numbers them."""
    nodes = nodes_breadth_first(root)
    number = {id(n): k for k, n in enumerate(nodes)}
    return [(n.name().split("::")[-1], tuple(None if c is None else number[id(c)] for c, _ in n.next_functions))
            for n in nodes]


class _CountedEdges(tuple):
    """A node's next_functions that counts each read (iterating it, or taking one edge) against a shared limit."""

    def __new__(cls, edges: tuple, meter: list):
        self = super().__new__(cls, edges)
        self.meter = meter
        return self

    def _read(self) -> None:
        self.meter[0] += 1
        if self.meter[0] > self.meter[1]:
            raise AssertionError(self.meter[2])

    def __iter__(self):
        self._read()
        return super().__iter__()

    def __getitem__(self, k):
        self._read()
        return super().__getitem__(k)


@contextmanager
def edge_reads_limited(nodes: list, label: str, per_node: int = 50) -> Iterator[None]:
    """Within the block, the nodes' next_functions may be read (iterated, or indexed) at most per_node times per
    node in all; one read more raises an AssertionError that says the walk is exponential. A walk that visits
    each node once reads each node's edges a few times; one without a visited set reads them once per path (2**30
    times in a chain of 30 diamonds) and would run until the cell's time limit. The edges are restored after."""
    limit = per_node * len(nodes)
    meter = [0, limit, f"{label} read the edges of its {len(nodes)} nodes more than {limit} times: it follows every "
                       "path instead of visiting each node once (keep a set of the nodes already seen)"]
    before = [node.next_functions for node in nodes]
    for node, edges in zip(nodes, before):
        node.next_functions = _CountedEdges(edges, meter)
    try:
        yield
    finally:
        for node, edges in zip(nodes, before):
            node.next_functions = edges


def reachable(root) -> list:
    """Every node reachable from root (order irrelevant)."""
    seen, stack = {id(root): root}, [root]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None and id(child) not in seen:
                seen[id(child)] = child
                stack.append(child)
    return list(seen.values())


def random_dag(rng: np.random.Generator, n: int, make: Callable) -> list:
    """n nodes made by make(label, *children); each has edges only to later nodes (repeats and None allowed)."""
    nodes: list = [None] * n
    for k in reversed(range(n)):
        children = []
        for _ in range(int(rng.integers(0, 4)) if k < n - 1 else 0):
            children.append(nodes[int(rng.integers(k + 1, n))] if rng.random() < 0.85 else None)
        nodes[k] = make(f"n{k}", *children)
    return nodes


def path_counts(root) -> list[int]:
    """Paths from root to each node (numbered breadth-first): how often a per-path engine runs it."""
    nodes = nodes_breadth_first(root)
    index = {id(n): k for k, n in enumerate(nodes)}
    indegree = [0] * len(nodes)
    for n in nodes:
        for child, _ in n.next_functions:
            if child is not None:
                indegree[index[id(child)]] += 1
    paths = [0] * len(nodes)
    paths[0] = 1
    ready = [0]
    while ready:
        k = ready.pop()
        for child, _ in nodes[k].next_functions:
            if child is not None:
                j = index[id(child)]
                paths[j] += paths[k]
                indegree[j] -= 1
                if indegree[j] == 0:
                    ready.append(j)
    return paths


# -- engines and counters ------------------------------------------------------------------------------------
def correct_engine(output) -> None:
    """The tests' own engine: dependency counts (Kahn's algorithm), each node run once with its summed gradient."""
    root = output.grad_fn
    nodes = nodes_breadth_first(root)
    waiting = {id(n): 0 for n in nodes}
    for n in nodes:
        for child, _ in n.next_functions:
            if child is not None:
                waiting[id(child)] += 1
    grads, ready = {id(root): np.ones_like(output.data)}, [root]
    while ready:
        node = ready.pop()
        for (child, _), g in zip(node.next_functions, node.apply(grads.pop(id(node)))):
            if child is not None:
                grads[id(child)] = grads[id(child)] + g if id(child) in grads else g
                waiting[id(child)] -= 1
                if waiting[id(child)] == 0:
                    ready.append(child)


class EngineFailure(Exception):
    """Raised by failing_engine."""


def failing_engine(output) -> None:
    """Runs the root, then fails."""
    output.grad_fn.apply(np.ones_like(output.data))
    raise EngineFailure("the engine failed half-way")


def run_instrumented(nodes: list, call: Callable[[], Any], most_calls: int | None = None,
                     label: str = "backward") -> tuple[list[int], list[list[np.dtype]]]:
    """call() with every node's apply counted and the dtype of each gradient it received recorded; per node,
    in the order of nodes: (calls, dtypes). The nodes are restored afterwards, whatever happened.

    most_calls: a node called more often than that stops the run with an AssertionError (an engine that runs a
    node once per path takes forever on a graph with 3**40 paths; this says why in a moment)."""
    calls = [0] * len(nodes)
    dtypes: list[list[np.dtype]] = [[] for _ in nodes]

    def wrap(k: int, apply: Callable) -> Callable:
        def wrapper(grad):
            calls[k] += 1
            if most_calls is not None and calls[k] > most_calls:
                raise AssertionError(f"{label}: node {k} ({nodes[k].name()}) ran more than {most_calls} times; "
                                     "an engine that runs each node once, after every path into it, runs it once")
            dtypes[k].append(np.asarray(grad).dtype)
            return apply(grad)
        return wrapper

    for k, node in enumerate(nodes):
        node.apply = wrap(k, node.apply)
    try:
        call()
    finally:
        for node in nodes:
            del node.apply
    return calls, dtypes


def torch_counts(output: torch.Tensor, gradient: torch.Tensor | None = None) -> list[int]:
    """torch's backward with a prehook counting each node's runs, per node numbered breadth-first."""
    nodes = nodes_breadth_first(output.grad_fn)
    counts = [0] * len(nodes)
    handles = [n.register_prehook(lambda grads, k=k: counts.__setitem__(k, counts[k] + 1))
               for k, n in enumerate(nodes)]
    try:
        output.backward(gradient)
    finally:
        for handle in handles:
            handle.remove()
    return counts


def call_deep(call: Callable[[], Any]) -> str | None:
    """call(); returns None, or a one-line note when it hit Python's recursion limit (no thousand-frame traceback)."""
    try:
        call()
    except RecursionError:
        return (f"RecursionError: Python allows about {sys.getrecursionlimit()} nested calls; walk the graph "
                "with an explicit stack or dependency counts instead of recursion")
    return None


# -- custom Functions with a None gradient -------------------------------------------------------------------
def take_first(Function: type) -> type:
    """first(a, b) = a, whose backward returns (grad, None): b gets no gradient from it (the notebook's engine)."""

    class TakeFirst(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.copy()

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    return TakeFirst


class TorchTakeFirst(torch.autograd.Function):
    """first(a, b) = a in torch, backward (grad, None)."""

    @staticmethod
    def forward(ctx, a, b):
        return a.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


# -- rules -------------------------------------------------------------------------------------------------
def torch_vjp(fn: Callable, inputs: tuple, grad: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """fn(*inputs) by torch, and the gradients of <grad, fn(inputs)> with respect to each input."""
    ts = [torch.tensor(a, requires_grad=True) for a in inputs]
    out = fn(*ts)
    return out.detach().numpy(), [g.numpy() for g in torch.autograd.grad(out, ts, torch.tensor(grad))]
