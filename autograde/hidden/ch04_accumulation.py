"""Hidden-test helpers of ch04_accumulation, written once and imported by the chapter's hidden test cells.

The grader's kernel imports this module while it grades; it never reaches release/, solutions/ or
feedback. It never imports course.reference.ch04_accumulation (the grader blocks it): the student's
pieces are passed in by the test cells, and every helper compares them with torch (or, for the meter,
with a plain model of its three operations) and fails with a course.checking message.

- moons_problem, engine_mlp_loss, torch_mlp_loss, torch_full_batch: the chapter 3 network on moons, both sides.
- check_zero_grad: random sequences of backward calls and zero_grad against torch's optimizer.zero_grad().
- check_meter: random add/release/reset_peak sequences against a model of live and peak bytes.
- check_microbatches: accumulated micro-batch gradients and the returned loss against torch's full batch.
- random_program, check_backward_program: random graphs with fan-out, run in the engine and in torch.
- check_none_branches: random branches that only None gradients reach, freed as torch frees them.
- check_skipped_edges: None gradients and constants before real edges, and None meeting real gradients at a node.
- run_optimiser: step-by-step runs of an optimiser against torch.optim.
- check_sgd_without_momentum, check_sgd_without_decay: momentum=0 ignores dampening; weight_decay=0 adds nothing.
- check_sgd_nan_setting: a NaN momentum or weight decay (torch accepts both) is not 0.
- check_clip: clip_grad_norm_ against torch.nn.utils.clip_grad_norm_.
- check_training: the training step on the chapter 3 network against torch's loop.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

import course.checking as checking
from course.data import make_moons
from course.reference import ch03_vjp_rules
from course.reference.ch02_tape import Function, Tensor

check_close, check_equal = checking.check_close, checking.check_equal
cross_entropy = ch03_vjp_rules.cross_entropy

FLOATS = (np.float64, np.float32)


def torch_dtype(dtype: Any) -> torch.dtype:
    """torch's dtype for a NumPy float dtype."""
    return torch.float64 if np.dtype(dtype) == np.float64 else torch.float32


def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for comparing with torch in this dtype."""
    return (1e-10, 1e-12) if np.dtype(dtype) == np.float64 else (2e-5, 2e-6)


def dtype_name(dtype: Any) -> str:
    return np.dtype(dtype).name


# -- the chapter 3 network on moons --------------------------------------------------------------
def init_arrays(sizes: Sequence[int], seed: int, dtype: Any = np.float64) -> list[np.ndarray]:
    """He-initialised weights and small random biases [W1, b1, W2, b2, ...] (biases nonzero: they must move)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays.append((rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(dtype))
        arrays.append((rng.normal(size=fan_out) * 0.1).astype(dtype))
    return arrays


def moons_problem(n: int, dtype: Any, seed: int, sizes: Sequence[int] = (2, 7, 3)):
    """(X, labels, arrays): n moons points (three classes when sizes ends in 3: labels mod 3), initial weights."""
    X, y = make_moons(n, noise=0.2, seed=seed)
    if sizes[-1] > 2:
        y = (y + np.arange(n) % 2 * (np.arange(n) % 3 == 0)) % sizes[-1]
    return X.astype(dtype), y.astype(np.int64), init_arrays(sizes, seed, dtype)


def mlp(params: Sequence[Any], inputs: Any) -> Any:
    """relu(... relu(inputs @ W1 + b1) ...) @ Wn + bn, for this engine's Tensors or torch's."""
    h = inputs
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.relu()
    return h


def engine_mlp_loss(params: Sequence[Tensor], X: np.ndarray, y: np.ndarray) -> Tensor:
    return cross_entropy(mlp(params, Tensor(X)), y)


def torch_mlp_loss(params: Sequence[torch.Tensor], X: np.ndarray, y: np.ndarray) -> torch.Tensor:
    return F.cross_entropy(mlp(params, torch.from_numpy(X)), torch.from_numpy(y))


def torch_full_batch(arrays: Sequence[np.ndarray], X: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """torch's full-batch mean cross-entropy and its gradients."""
    params = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    loss = torch_mlp_loss(params, X, y)
    loss.backward()
    return loss.item(), [p.grad.numpy() for p in params]


# -- zero_grad ------------------------------------------------------------------------------------
def check_zero_grad(zero_grad: Callable, rng: np.random.Generator, trials: int = 8) -> None:
    """Random backward calls and zero_grad calls, in the engine and torch: every .grad equal after each."""
    for trial in range(trials):
        dtype = FLOATS[trial % 2]
        shapes = [(3,), (2, 2), (1,), ()][: 2 + trial % 3]
        arrays = [np.asarray(rng.normal(size=s)).astype(dtype) for s in shapes]
        ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
        opt = torch.optim.SGD(theirs, lr=0.1)
        history = []
        for _ in range(10):
            if rng.random() < 0.35:
                how = ["list", "generator", "tuple"][int(rng.integers(3))]
                history.append(f"zero_grad({how})")
                arg = {"list": list(ours), "generator": (p for p in ours), "tuple": tuple(ours)}[how]
                result = zero_grad(arg)
                assert result is None, f"zero_grad should return None, it returned {result!r:.100}"
                opt.zero_grad()
            else:
                used = [i for i in range(len(ours)) if rng.random() < 0.7] or [0]
                scale = float(rng.integers(1, 4))
                history.append(f"backward of a loss using parameters {used}")
                (sum_losses([ours[i] for i in used], scale)).backward()
                (sum_losses([theirs[i] for i in used], scale)).backward()
            where = f"after {', '.join(history)} (shapes {shapes}, {dtype_name(dtype)})"
            for i, (p, q) in enumerate(zip(ours, theirs)):
                if q.grad is None:
                    assert p.grad is None, f"parameter {i}'s .grad should be None {where} (as torch's), got {p.grad!r:.100}"
                else:
                    assert p.grad is not None, f"parameter {i}'s .grad is None {where}; torch has {q.grad}"
                    rtol, atol = tolerance(dtype)
                    check_close(f"parameter {i}'s .grad {where}", p.grad, q.grad, rtol=rtol, atol=atol)
                check_close(f"parameter {i}'s data {where}", p.data, arrays[i], rtol=0, atol=0,
                            against="its initial value (zero_grad must not touch .data)")
                assert p.requires_grad, f"parameter {i} no longer requires grad {where}"
    zero_grad([])  # an empty list is fine
    constant = Tensor(np.ones(2))
    zero_grad([constant])
    assert constant.grad is None, "zero_grad([a tensor that does not require grad]) should leave .grad None"


def sum_losses(params: Sequence[Any], scale: float) -> Any:
    """sum over the parameters of scale * sum(p * p) (+ 1 * sum(p)), for either engine."""
    total = None
    for p in params:
        term = (p * p * scale).sum() + p.sum()
        total = term if total is None else total + term
    return total


# -- the meter ------------------------------------------------------------------------------------
def check_meter(meter_cls: type, rng: np.random.Generator, steps: int = 300) -> None:
    """Random add/release/reset_peak on several meters against a model; meters do not share state."""
    meters = [meter_cls() for _ in range(3)]
    model = [[0, 0] for _ in meters]
    log: list[str] = []
    for step in range(steps):
        k = int(rng.integers(len(meters)))
        m, (live, peak) = meters[k], model[k]
        action = rng.random()
        if action < 0.5:
            n = int(rng.choice([0, 1, 7, 4096, 10 ** 9, int(rng.integers(1, 10 ** 6))]))
            m.add(n)
            live += n
            peak = max(peak, live)
            log.append(f"m{k}.add({n})")
        elif action < 0.85:
            n = int(rng.integers(0, live + 1))
            m.release(n)
            live -= n
            log.append(f"m{k}.release({n})")
        else:
            m.reset_peak()
            peak = live
            log.append(f"m{k}.reset_peak()")
        model[k] = [live, peak]
        for j, (meter, (want_live, want_peak)) in enumerate(zip(meters, model)):
            got = (meter.live, meter.peak)
            assert got == (want_live, want_peak), (
                f"after {'; '.join(log[-4:])} (the last 4 of {len(log)} calls on three meters m0, m1, m2), "
                f"m{j} has (live, peak) = {got}, expected {(want_live, want_peak)}")
    for meter in meters:
        assert isinstance(meter.live, int) and isinstance(meter.peak, int), (
            f"live and peak should stay Python ints (bytes), got {type(meter.live).__name__} and "
            f"{type(meter.peak).__name__}")


# -- micro-batches --------------------------------------------------------------------------------
def check_microbatches(accumulate: Callable, rng: np.random.Generator, cases: Sequence[tuple[int, int]],
                       sizes: Sequence[int] = (2, 6, 3)) -> None:
    """For each (N, k), in float64 and float32: the accumulated .grad equals torch's full-batch gradient, the
    loss function is called k times on micro-batches of the sizes np.array_split gives, the full loss is returned."""
    for n, k in cases:
        for dtype in FLOATS:
            X, y, arrays = moons_problem(n, dtype, seed=int(rng.integers(1000)), sizes=sizes)
            expected_loss, expected = torch_full_batch(arrays, X, y)
            params = [Tensor(a.copy(), requires_grad=True) for a in arrays]
            for p in params:  # stale gradients the function must clear first
                p.grad = Tensor(np.full(p.shape, 5.0, dtype=dtype))
            calls: list[int] = []
            seen: list[Any] = []  # params[0].grad when loss_fn was called (None: no backward since zero_grad)

            def loss_fn(xb, yb):
                calls.append(len(xb))
                seen.append(None if params[0].grad is None else params[0].grad.data.copy())
                return engine_mlp_loss(params, np.asarray(xb), np.asarray(yb))

            where = f"accumulate_microbatches with N = {n}, k = {k}, {dtype_name(dtype)}"
            got = accumulate(params, loss_fn, X, y, k)
            split = sorted(len(i) for i in np.array_split(np.arange(n), k))
            check_equal(f"{where}: the micro-batch sizes loss_fn was called with (sorted)", sorted(calls), split)
            for i in range(1, len(seen)):  # one backward per micro-batch, before the next forward
                assert seen[i] is not None, (
                    f"{where}: when loss_fn was called for micro-batch {i + 1}, the first parameter's .grad did not "
                    f"hold the gradient of micro-batch {i} yet: backward must run once per micro-batch, before the "
                    "next forward (a single backward of the summed losses keeps all k graphs alive)")
            rtol, atol = tolerance(dtype)
            if dtype == np.float64:
                atol = 1e-12
            for i, (p, g) in enumerate(zip(params, expected)):
                assert p.grad is not None, f"{where}: parameter {i} has no gradient"
                check_close(f"{where}: the gradient of parameter {i}", p.grad, g, rtol=rtol, atol=atol,
                            against="torch's full-batch gradient")
                check_equal(f"{where}: the dtype of parameter {i}'s gradient", p.grad.dtype, np.dtype(dtype))
            assert isinstance(got, float), f"{where} should return a Python float, got {type(got).__name__}"
            check_close(f"{where}: the returned loss", got, expected_loss, rtol=rtol, atol=atol,
                        against="torch's full-batch mean loss")


# -- backward -------------------------------------------------------------------------------------
UNARY = ["exp_tanh", "tanh", "neg", "scale", "square"]
BINARY = ["add", "sub", "mul"]


def random_program(rng: np.random.Generator, n_leaves: int, n_ops: int) -> list[tuple]:
    """A random straight-line program over values 0..n_leaves-1: each op reads earlier values (fan-out)."""
    program = []
    count = n_leaves
    for _ in range(n_ops):
        if rng.random() < 0.5:
            program.append((str(rng.choice(UNARY)), int(rng.integers(count))))
        else:
            program.append((str(rng.choice(BINARY)), int(rng.integers(count)), int(rng.integers(count))))
        count += 1
    return program


def run_program(program: list[tuple], leaves: list[Any], constant: float) -> Any:
    """Evaluate the program on leaves (engine or torch); the root is the sum of the last three values."""
    values = program_values(program, leaves, constant)
    root = values[-1].sum()
    for v in values[-3:-1]:
        root = root + v.sum()
    return root


def program_values(program: list[tuple], leaves: list[Any], constant: float) -> list[Any]:
    """Every value of the program on leaves (engine or torch): the leaves, then one value per op."""
    values = list(leaves)
    for op in program:
        kind = op[0]
        a = values[op[1]]
        if kind == "exp_tanh":
            out = a.tanh().exp()
        elif kind == "tanh":
            out = a.tanh()
        elif kind == "neg":
            out = -a
        elif kind == "scale":
            out = a * constant
        elif kind == "square":
            out = a * a.tanh()          # bounded growth: |a tanh(a)| <= |a|
        else:
            b = values[op[2]]
            out = a + b if kind == "add" else a - b if kind == "sub" else a * b.tanh()
        values.append(out)
    return values


def saves_something(program: list[tuple]) -> bool:
    """Whether any node of the program needs saved arrays in its backward rule (torch and the engine agree)."""
    return any(op[0] in ("exp_tanh", "tanh", "scale", "square", "mul") for op in program)


def torch_second_backward_message() -> str:
    """torch's message for a second backward through a freed graph, without the autograd.grad clause."""
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as error:
        return str(error).replace(" or autograd.grad()", "")
    raise AssertionError("torch did not raise on a second backward")


def check_backward_program(backward: Callable, saved_bytes: Callable, rng: np.random.Generator, trial: int) -> None:
    """One random program: gradients as torch's, freed after backward, a second backward raising as torch does."""
    dtype = FLOATS[trial % 2]
    shape = [(3,), (2, 3), (), (4, 1)][trial % 4]
    n_leaves = 1 + trial % 3
    program = random_program(rng, n_leaves, 3 + trial % 6)
    arrays = [np.asarray(rng.uniform(-1.5, 1.5, size=shape)).astype(dtype) for _ in range(n_leaves)]
    constant = float(rng.choice([2.0, -0.5, 3.0]))
    where = f"random graph {trial} ({dtype_name(dtype)}, leaves of shape {shape}, ops {[op[0] for op in program]})"
    base = saved_bytes()
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    y, ty = run_program(program, ours, constant), run_program(program, theirs, constant)
    retain_first = trial % 3 == 0
    backward(y, None, retain_first) if retain_first else backward(y)
    ty.backward(retain_graph=retain_first)
    rtol, atol = tolerance(dtype)
    for i, (p, q) in enumerate(zip(ours, theirs)):
        got = None if p.grad is None else p.grad.data
        want = None if q.grad is None else q.grad.numpy()
        if want is None:
            assert got is None or not np.any(got), f"{where}: leaf {i} should get no gradient, got {got}"
            continue
        assert got is not None, f"{where}: leaf {i} got no gradient; torch's is {want}"
        check_close(f"{where}: the gradient of leaf {i}", got, want, rtol=rtol, atol=atol)
        check_equal(f"{where}: the dtype of leaf {i}'s gradient", got.dtype, np.dtype(dtype))
    if retain_first:
        assert saved_bytes() - base > 0 or not saves_something(program), (
            f"{where}: backward(y, retain_graph=True) freed the saved arrays")
        backward(y)
        ty.backward()
        for i, (p, q) in enumerate(zip(ours, theirs)):
            if q.grad is not None:
                check_close(f"{where}: the gradient of leaf {i} after a second backward (the first retained the graph)",
                            p.grad, q.grad, rtol=rtol, atol=atol)
    check_equal(f"{where}: saved bytes after backward without retain_graph (all freed)", saved_bytes() - base, 0)
    torch_raises = True
    try:
        ty.backward()
        torch_raises = False
    except RuntimeError:
        pass
    try:
        backward(y)
        ours_raises = False
    except RuntimeError as error:
        ours_raises = True
        message = str(error)
    assert ours_raises == torch_raises, (
        f"{where}: a second backward through the freed graph {'raises' if ours_raises else 'does not raise'} in "
        f"your engine but {'raises' if torch_raises else 'does not raise'} in torch (torch raises only when a rule "
        f"needs a saved array that was freed)")
    if ours_raises:
        check_equal(f"{where}: the error of a second backward", message, torch_second_backward_message())
    else:
        for i, (p, q) in enumerate(zip(ours, theirs)):
            if q.grad is not None:
                check_close(f"{where}: the gradient of leaf {i} after a second backward through a graph that saved "
                            "nothing", p.grad, q.grad, rtol=rtol, atol=atol)


class TorchFirstOnly(torch.autograd.Function):
    """a + b in torch, whose backward sends no gradient to b (None): the test cell's FirstOnly."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def check_none_branches(backward: Callable, saved_bytes: Callable, first_only: type, rng: np.random.Generator,
                        trials: int = 16) -> None:
    """Random branches that only None reaches (first_only(a, b) sends None to b), in the engine and torch: torch
    frees every node of the graph, those too, so the meter falls back and a later backward through the branch
    raises exactly where torch's does (with retain_graph=True nothing is freed)."""
    message = torch_second_backward_message()
    for trial in range(trials):
        dtype = FLOATS[trial % 2]
        shape = [(3,), (2, 2), ()][trial % 3]
        n_leaves = 1 + trial % 2
        program = random_program(rng, n_leaves, 2 + trial % 4)
        arrays = [np.asarray(rng.uniform(-1.5, 1.5, size=shape)).astype(dtype) for _ in range(n_leaves + 1)]
        constant = float(rng.choice([2.0, -0.5, 3.0]))
        retain = trial % 4 == 3
        mixed = int(rng.integers(n_leaves, n_leaves + len(program))) if trial % 3 == 1 else None
        u_in_branch = trial % 5 == 2             # the main path's leaf u is also a leaf of the branch
        where = (f"none-branch graph {trial} ({dtype_name(dtype)}, shape {shape}, branch ops "
                 f"{[op[0] for op in program]}{', a branch value also on a path of real gradients' if mixed else ''}"
                 f"{', retain_graph=True' if retain else ''})")

        def build(leaf: Callable, first: Callable) -> tuple[list[Any], list[Any], Any]:
            leaves = [leaf(a) for a in arrays]
            u = leaves[0]
            values = program_values(program, [u] + leaves[2:] if u_in_branch else leaves[1:], constant)
            branch = values[n_leaves]
            for v in values[n_leaves + 1:]:      # every value of the branch leads to the root (Add saves nothing)
                branch = branch + v
            root = (first(u * constant, branch) + u.tanh()).sum()
            if mixed is not None:
                root = root + (values[mixed] * 0.5).sum()
            return leaves, values[n_leaves:], root

        base = saved_bytes()
        ours, our_probes, y = build(lambda a: Tensor(a.copy(), requires_grad=True), first_only.apply)
        theirs, their_probes, ty = build(lambda a: torch.tensor(a.copy(), requires_grad=True), TorchFirstOnly.apply)
        held = saved_bytes() - base
        backward(y, None, True) if retain else backward(y)
        ty.backward(retain_graph=retain)
        rtol, atol = tolerance(dtype)

        def compare_grads(when: str) -> None:
            for i, (p, q) in enumerate(zip(ours, theirs)):
                if q.grad is None:
                    assert p.grad is None, (f"{where}: leaf {i}'s .grad {when} should stay None, as torch's (only None "
                                            f"reached it); got {p.grad}")
                else:
                    assert p.grad is not None, f"{where}: leaf {i} got no gradient {when}; torch's is {q.grad}"
                    check_close(f"{where}: the gradient of leaf {i} {when}", p.grad, q.grad, rtol=rtol, atol=atol)

        compare_grads("after backward of the root")
        freed = "nothing freed" if retain else "every node freed, also those that only None gradients reached"
        check_equal(f"{where}: saved bytes after backward of the root ({freed})", saved_bytes() - base,
                    held if retain else 0)
        probes = list(range(len(our_probes)))
        if retain:                               # two probes: the first frees what it ran, the second meets that
            probes = [int(rng.integers(len(probes))), int(rng.integers(len(probes)))]
        for j in probes:
            for p, q in zip(ours, theirs):
                p.grad, q.grad = None, None
            try:
                their_probes[j].sum().backward()
                torch_raises = False
            except RuntimeError:
                torch_raises = True
            try:
                backward(our_probes[j].sum())
                ours_raises, got = False, ""
            except RuntimeError as error:
                ours_raises, got = True, str(error)
            what = f"backward of the branch's value {j} ({program[j][0]}) afterwards"
            assert ours_raises == torch_raises, (
                f"{where}: {what} {'raises' if ours_raises else 'does not raise'} in your engine but "
                f"{'raises' if torch_raises else 'does not raise'} in torch (torch runs and frees every node of the "
                "graph, also a node that only None gradients reached)")
            if ours_raises:
                check_equal(f"{where}: the error of {what}", got, message)
            else:
                compare_grads(f"after {what}")
        del ours, theirs, our_probes, their_probes, y, ty   # this graph dies before the next trial reads the meter


class SecondOnly(Function):
    """a + b, whose rule sends no gradient to a (None) and the whole gradient to b: a None before a real edge."""

    @staticmethod
    def forward(ctx: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: np.ndarray) -> tuple[None, np.ndarray]:
        return None, grad


class TorchSecondOnly(torch.autograd.Function):
    """SecondOnly in torch."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        return None, grad


def check_skipped_edges(backward: Callable, first_only: type, rng: np.random.Generator, trials: int = 16) -> None:
    """Random graphs where a rule's None gradient or an input without a node (a constant) comes before a real edge
    (SecondOnly(a, b), constant * v), and where a value that receives None from one rule (first_only(u, v) sends None
    to v) also receives real gradients from others: every leaf's .grad as torch's (None where torch's is None)."""
    for trial in range(trials):
        dtype = FLOATS[trial % 2]
        shape = [(3,), (2, 2), (), (1, 3)][trial % 4]
        n_leaves = 2 + trial % 2
        program = random_program(rng, n_leaves, 2 + trial % 4)
        arrays = [np.asarray(rng.uniform(-1.5, 1.5, size=shape)).astype(dtype) for _ in range(n_leaves)]
        k = np.asarray(rng.uniform(0.5, 2.0, size=shape)).astype(dtype)
        constant = float(rng.choice([2.0, -0.5, 3.0]))
        count = n_leaves + len(program)
        i, j, m = (int(rng.integers(count)) for _ in range(3))
        also_real = trial % 3 != 2           # v = values[j] gets a real gradient besides first_only's None
        where = (f"graph {trial} ({dtype_name(dtype)}, shape {shape}, ops {[op[0] for op in program]}): root = "
                 f"sum(FirstOnly(value {i}, value {j}) + SecondOnly(value {m}, value {i}) + constant * value {m})"
                 f"{f' + sum(value {j} * 0.5)' if also_real else ''} (FirstOnly sends None to its second input, "
                 "SecondOnly to its first; the constant requires no grad)")

        def build(leaf: Callable, first: Callable, second: Callable) -> tuple[list[Any], Any]:
            leaves = [leaf(a) for a in arrays]
            values = program_values(program, leaves, constant)
            root = (first(values[i], values[j]) + second(values[m], values[i]) + leaf(k, False) * values[m]).sum()
            if also_real:
                root = root + (values[j] * 0.5).sum()
            return leaves, root

        ours, y = build(lambda a, rg=True: Tensor(a.copy(), requires_grad=rg), first_only.apply, SecondOnly.apply)
        theirs, ty = build(lambda a, rg=True: torch.tensor(a.copy(), requires_grad=rg), TorchFirstOnly.apply,
                           TorchSecondOnly.apply)
        try:
            backward(y)
        except Exception as error:  # noqa: BLE001 - say which graph, and what was raised
            raise AssertionError(f"{where}: backward raised {type(error).__name__}: {error} (torch computes the "
                                 "gradients: skip a None gradient or an edge without a node, keep going with the "
                                 "node's other edges, and add nothing for None)") from None
        ty.backward()
        rtol, atol = tolerance(dtype)
        for n, (p, q) in enumerate(zip(ours, theirs)):
            if q.grad is None:
                assert p.grad is None, f"{where}: leaf {n}'s .grad should stay None, as torch's; got {p.grad}"
                continue
            assert p.grad is not None, (f"{where}: leaf {n} got no gradient; torch's is {q.grad.numpy()} (an edge "
                                        "after a None gradient or a constant was skipped too)")
            check_close(f"{where}: the gradient of leaf {n}", p.grad, q.grad, rtol=rtol, atol=atol)


def check_root_errors(backward: Callable, rng: np.random.Generator) -> None:
    """Bad roots and bad gradients raise RuntimeError where torch does, with torch's words; good ones work."""
    for dtype in FLOATS:
        for shape in [(3,), (2, 3), (4, 1, 2)]:
            a = np.asarray(rng.normal(size=shape)).astype(dtype)
            x, tx = Tensor(a.copy(), requires_grad=True), torch.tensor(a.copy(), requires_grad=True)
            where = f"backward of x * 2.0 for x of shape {shape} ({dtype_name(dtype)})"
            try:
                backward(x * 2.0)
                raised = None
            except RuntimeError as error:
                raised = str(error)
            assert raised is not None and "grad can be implicitly created only for scalar outputs" in raised, (
                f"{where} without a gradient should raise RuntimeError mentioning 'grad can be implicitly created "
                f"only for scalar outputs', as torch; got {raised!r}")
            bad_shapes = [shape[1:] or (1,), (1,) + shape, shape[:-1] + (shape[-1] + 1,), ()]
            for bad in bad_shapes:
                try:
                    backward(x * 2.0, np.ones(bad, dtype=dtype))
                    raised = None
                except RuntimeError as error:
                    raised = str(error)
                torch_error = None
                try:
                    (tx * 2).backward(torch.ones(bad, dtype=torch_dtype(dtype)))
                except RuntimeError as error:
                    torch_error = str(error)
                assert torch_error is not None, f"torch accepted a gradient of shape {bad} for an output of shape {shape}"
                assert raised is not None and "Mismatch in shape" in raised, (
                    f"{where} with a gradient of shape {bad} should raise RuntimeError mentioning 'Mismatch in shape' "
                    f"as torch ({torch_error}); got {raised!r}")
            upstream = np.asarray(rng.normal(size=shape))
            for kind in ("ndarray float64", "list", "Tensor"):
                x.grad = None
                seed = {"ndarray float64": upstream, "list": upstream.tolist(), "Tensor": Tensor(upstream)}[kind]
                y = x * 2.0
                backward(y, seed)
                check_close(f"{where} with a gradient given as {kind}", x.grad, 2.0 * upstream.astype(dtype),
                            rtol=tolerance(dtype)[0], atol=tolerance(dtype)[1])
                check_equal(f"the dtype of x.grad ({where}, gradient given as {kind})", x.grad.dtype, np.dtype(dtype))
    for shape in [(), (1,), (1, 1)]:
        s = Tensor(np.full(shape, 2.0), requires_grad=True)
        backward(s * 3.0)
        check_close(f"the gradient of 3 s for a root of shape {shape} without a gradient", s.grad, np.full(shape, 3.0))
    try:
        backward(Tensor(np.ones((2, 2))).sum())
        raised = None
    except RuntimeError as error:
        raised = str(error)
    assert raised is not None and "does not require grad" in raised, (
        f"backward of a tensor that does not require grad should raise RuntimeError mentioning 'does not require "
        f"grad' (torch: 'element 0 of tensors does not require grad and does not have a grad_fn'); got {raised!r}")


# -- optimisers -----------------------------------------------------------------------------------
def scripted_run(make_ours: Callable, make_torch: Callable, gradients: Sequence[Sequence[Any]],
                 initial: Sequence[np.ndarray], where: str) -> None:
    """Set the gradients by hand (None skips a parameter) and step both optimisers; compare after every step."""
    ours = [Tensor(a.copy(), requires_grad=True) for a in initial]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in initial]
    opt, topt = make_ours(ours), make_torch(theirs)
    for step, grads in enumerate(gradients, 1):
        for p, q, g in zip(ours, theirs, grads):
            p.grad = None if g is None else Tensor(np.array(g, dtype=p.dtype))
            q.grad = None if g is None else torch.tensor(np.array(g, dtype=p.dtype))
        arrays = [p.data for p in ours]
        opt.step()
        topt.step()
        for i, (p, q, g) in enumerate(zip(ours, theirs, grads)):
            assert p.data is arrays[i], (f"{where}: after step {step}, parameter {i}'s .data is a new array: update "
                                         "it in place, so that every alias of the parameter sees the step")
            rtol, atol = tolerance(p.dtype)
            check_close(f"{where}: parameter {i} after step {step}", p.data, q.detach().numpy(), rtol=rtol, atol=atol,
                        against="torch.optim")
            check_equal(f"{where}: the dtype of parameter {i} after step {step}", p.dtype, initial[i].dtype)
            if g is not None:
                check_close(f"{where}: parameter {i}'s .grad after step {step}", p.grad, np.array(g, dtype=p.dtype),
                            rtol=0, atol=0, against="the gradient before the step (step must not change .grad)")


def run_optimiser(make_ours: Callable, make_torch: Callable, dtype: Any, where: str, steps: int = 25,
                  seed: int = 0, n: int = 48) -> None:
    """The chapter 3 network (plus a parameter that never gets a gradient) trained by both optimisers for
    `steps` steps from the same weights: parameters, .grad and dtype compared after every step."""
    X, y, arrays = moons_problem(n, dtype, seed)
    arrays = arrays + [np.ones((2, 2), dtype=dtype)]
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    opt, topt = make_ours(ours), make_torch(theirs)
    rtol, atol = tolerance(dtype)
    if np.dtype(dtype) == np.float32:
        rtol, atol = 2e-4, 2e-5  # 25 steps of float32 rounding, in two different orders
    for step in range(1, steps + 1):
        for p in ours:
            p.grad = None
        topt.zero_grad()
        engine_mlp_loss(ours[:-1], X, y).backward()
        torch_mlp_loss(theirs[:-1], X, y).backward()
        arrays = [(p.data, p.grad) for p in ours]
        opt.step()
        topt.step()
        for i, (p, q) in enumerate(zip(ours, theirs)):
            label = f"{where}, {dtype_name(dtype)}: parameter {i} (shape {p.shape}) after step {step} of {steps}"
            assert p.data is arrays[i][0] and p.grad is arrays[i][1], (
                f"{label}: .data or .grad is a new object after step: update the parameter in place and leave .grad "
                "alone, so that every alias sees the step")
            check_equal(f"the dtype of {label}", p.dtype, np.dtype(dtype))
            check_close(label, p.data, q.detach().numpy(), rtol=rtol, atol=atol, against="torch.optim")
            if q.grad is not None:
                check_close(f"the .grad of {label}", p.grad, q.grad, rtol=rtol, atol=atol,
                            against="torch's .grad after the step (step must not change it)")
            else:
                assert p.grad is None, f"{label}: .grad should stay None (the parameter is not used)"
        for state in opt.state.values():
            for key, value in state.items():
                if isinstance(value, np.ndarray):
                    check_equal(f"{where}, {dtype_name(dtype)}: the dtype of state {key!r}", value.dtype,
                                np.dtype(dtype))


def _random_parameters(rng: np.random.Generator, shape: tuple, dtype: Any, special: bool) -> list[np.ndarray]:
    """Two parameters of the shape and a 0-d one; with special, inf, -inf and NaN entries among finite ones."""
    out = []
    for s in (shape, shape, ()):
        a = np.asarray(rng.normal(size=s)).astype(dtype)
        if special and a.size:
            flat = a.reshape(-1)
            flat[rng.integers(flat.size, size=min(flat.size, 3))] = rng.choice([np.inf, -np.inf, np.nan])
        out.append(a)
    return out


def check_sgd_without_momentum(sgd: type) -> None:
    """SGD with momentum=0 and any dampening (0-d and empty parameters included; no weight decay, which the other
    test cell checks) against torch.optim.SGD over several steps of random gradients: torch uses no buffer, so
    dampening changes nothing."""
    from hypothesis import strategies as st

    from autograde.hidden.strategies import float_dtypes, for_all, shapes

    @for_all(examples=12, dtype=float_dtypes(), shape=shapes(max_dims=3, max_side=4),
             dampening=st.sampled_from([0.1, 0.5, 0.9, 1.0]), lr=st.sampled_from([0.05, 0.1, 1.0]),
             seed=st.integers(0, 2 ** 16))
    def _(dtype, shape, dampening, lr, seed):
        rng = np.random.default_rng(seed)
        initial = _random_parameters(rng, shape, dtype, special=False)
        gradients = [[np.asarray(rng.normal(size=a.shape)) for a in initial] for _ in range(4)]
        s = dict(lr=lr, momentum=0.0, dampening=dampening)
        scripted_run(lambda ps: sgd(ps, **s), lambda ps: torch.optim.SGD(ps, **s), gradients, initial,
                     f"SGD({s}) on parameters of shapes {[a.shape for a in initial]} ({dtype_name(dtype)}): with "
                     "momentum 0 torch keeps no buffer and ignores dampening")


def check_sgd_without_decay(sgd: type) -> None:
    """SGD with weight_decay=0 (with and without momentum or Nesterov) on parameters holding inf, -inf and NaN
    against torch.optim.SGD: a weight decay of 0 adds nothing to the gradient (0 * inf would be NaN)."""
    from hypothesis import strategies as st

    from autograde.hidden.strategies import float_dtypes, for_all, shapes

    @for_all(examples=12, dtype=float_dtypes(), shape=shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
             settings=st.sampled_from([dict(lr=0.1), dict(lr=0.5, momentum=0.9),
                                       dict(lr=0.1, momentum=0.9, nesterov=True)]),
             seed=st.integers(0, 2 ** 16))
    def _(dtype, shape, settings, seed):
        rng = np.random.default_rng(seed)
        initial = _random_parameters(rng, shape, dtype, special=True)
        gradients = [[np.asarray(rng.normal(size=a.shape)) for a in initial] for _ in range(3)]
        s = dict(settings, weight_decay=0.0)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            scripted_run(lambda ps: sgd(ps, **s), lambda ps: torch.optim.SGD(ps, **s), gradients, initial,
                         f"SGD({s}) on parameters holding inf, -inf or NaN, shapes {[a.shape for a in initial]} "
                         f"({dtype_name(dtype)}): a weight decay of 0 adds nothing (not even 0 * p)")


def check_sgd_nan_setting(sgd: type, setting: str) -> None:
    """SGD with a NaN momentum or weight decay, which torch.optim.SGD accepts (its checks are `< 0`), against torch:
    NaN is not 0, so the momentum or the decay applies, and the parameters become NaN as torch's do."""
    rng = np.random.default_rng(4603 if setting == "momentum" else 4604)
    for dtype in FLOATS:
        for dampening in ((0.0, 0.5) if setting == "momentum" else (0.0,)):
            initial = _random_parameters(rng, (2, 3), dtype, special=False)
            gradients = [[np.asarray(rng.normal(size=a.shape)) for a in initial] for _ in range(3)]
            s = {"lr": 0.1, setting: math.nan, "dampening": dampening}
            scripted_run(lambda ps: sgd(ps, **s), lambda ps: torch.optim.SGD(ps, **s), gradients, initial,
                         f"SGD({s}) ({dtype_name(dtype)}): torch accepts a NaN {setting}, which is not 0")


# -- clipping -------------------------------------------------------------------------------------
def check_clip(clip: Callable, rng: np.random.Generator) -> None:
    """clip_grad_norm_ against torch on random gradients: the returned norm and every clipped gradient."""
    shapes_list = [[(3, 4), (5,), (2, 1, 3)], [(7,)], [(2, 2), (1,)], [(1, 1), (3, 3), (2,), (4,)], [(), (3,)], [()]]
    cases = [(0.5, 2.0), (1e-7, 2.0), (1.0, math.inf), (1.0, 1.0), (3.0, 3.0), (100.0, 2.0), (2, 2), (1.0, "inf"),
             (0.7, 0.5), (5.0, 2), (0.0, 2.0)]
    for c, (max_norm, norm_type) in enumerate(cases):
        for dtype in FLOATS:
            shapes = shapes_list[c % len(shapes_list)]
            arrays = [np.asarray(rng.normal(size=s) * (10.0 if i == 0 else 0.1)).astype(dtype)
                      for i, s in enumerate(shapes)]
            ours = [Tensor(np.zeros(s, dtype), requires_grad=True) for s in shapes]
            theirs = [torch.zeros(s, dtype=torch_dtype(dtype), requires_grad=True) for s in shapes]
            skipped = c % 3 == 1 and len(shapes) > 1  # the last parameter has no gradient
            for i, (p, q, a) in enumerate(zip(ours, theirs, arrays)):
                if skipped and i == len(shapes) - 1:
                    continue
                p.grad = Tensor(a.copy())
                q.grad = torch.tensor(a.copy())
            where = (f"clip_grad_norm_(max_norm={max_norm!r}, norm_type={norm_type!r}) on gradients of shapes {shapes} "
                     f"({dtype_name(dtype)}{', the last one None' if skipped else ''})")
            before = [(p.grad, None if p.grad is None else p.grad.data) for p in ours]
            total = clip(ours, max_norm, norm_type)
            t_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
            rtol = 1e-12 if dtype == np.float64 else 2e-6
            for i, (p, (grad, array)) in enumerate(zip(ours, before)):
                assert p.grad is grad and (grad is None or p.grad.data is array), (
                    f"{where}: gradient {i} (or its array) is a new object: scale it in place (g.data *= c), so "
                    "that every alias of the gradient sees the clipping")
            assert isinstance(total, Tensor), f"{where} should return a Tensor, got {type(total).__name__}"
            check_close(f"the norm {where} returns", total.data, t_total.numpy(), rtol=rtol, atol=0)
            check_equal(f"the dtype of the norm {where} returns", np.asarray(total.data).dtype, np.dtype(dtype))
            for i, (p, q) in enumerate(zip(ours, theirs)):
                if q.grad is None:
                    assert p.grad is None, f"{where}: parameter {i} had no gradient and should keep .grad None"
                    continue
                check_equal(f"the dtype of gradient {i} after {where}", p.grad.dtype, np.dtype(dtype))
                check_close(f"gradient {i} after {where}", p.grad, q.grad, rtol=rtol, atol=rtol * 1e-3)
    # a single Tensor; integer max_norm; no gradients at all
    for dtype in FLOATS:
        a = np.array([3.0, 4.0], dtype=dtype)
        p, q = Tensor(np.zeros(2, dtype), requires_grad=True), torch.zeros(2, dtype=torch_dtype(dtype), requires_grad=True)
        p.grad, q.grad = Tensor(a.copy()), torch.tensor(a.copy())
        total, t_total = clip(p, 1), torch.nn.utils.clip_grad_norm_(q, 1)
        check_close(f"clip_grad_norm_(a single Tensor, 1) ({dtype_name(dtype)}): the norm", total.data, t_total.numpy())
        check_close(f"clip_grad_norm_(a single Tensor, 1) ({dtype_name(dtype)}): the gradient", p.grad, q.grad,
                    rtol=1e-6, atol=1e-7)
    empty = clip([Tensor(np.zeros(2), requires_grad=True)], 1.0)
    check_close("clip_grad_norm_ of parameters without gradients: the norm", empty.data, 0.0)


def check_clip_nonfinite(clip: Callable) -> None:
    """Gradients with inf or NaN and all-zero gradients, as torch (NaN where inf * 0, no error by default)."""
    for norm_type in (2.0, math.inf, 1.0):
        for values in ([np.inf, 1.0, 1.0], [np.nan, 1.0, 1.0], [0.0, 0.0, 0.0], [-np.inf, 2.0, 0.0]):
            for dtype in FLOATS:
                p = Tensor(np.zeros(3, dtype), requires_grad=True)
                q = torch.zeros(3, dtype=torch_dtype(dtype), requires_grad=True)
                p.grad, q.grad = Tensor(np.array(values, dtype)), torch.tensor(values, dtype=torch_dtype(dtype))
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    total = clip([p], 1.0, norm_type)
                t_total = torch.nn.utils.clip_grad_norm_([q], 1.0, norm_type)
                where = f"clip_grad_norm_(max_norm=1.0, norm_type={norm_type}) of the gradient {values} ({dtype_name(dtype)})"
                np.testing.assert_array_equal(np.asarray(total.data), t_total.numpy(),
                                              err_msg=f"the norm {where} returns differs from torch's")
                np.testing.assert_array_equal(p.grad.data, q.grad.numpy(),
                                              err_msg=f"the gradient after {where} differs from torch's")


# -- training -------------------------------------------------------------------------------------
def check_training(train_step: Callable, make_ours: Callable, make_torch: Callable, steps: int, where: str,
                   max_norm: float | None = None, zero_grads: bool = True, dtype: Any = np.float64) -> None:
    """train_step on the chapter 3 network (moons, 16 hidden units) against torch's loop, loss by loss."""
    X, y, arrays = moons_problem(120, dtype, seed=5, sizes=(2, 16, 2))
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    opt, topt = make_ours(ours), make_torch(theirs)
    inputs = Tensor(X)
    calls = [0]

    def compute_loss():
        calls[0] += 1
        return cross_entropy(mlp(ours, inputs), y)

    rtol, atol = tolerance(dtype)
    if np.dtype(dtype) == np.float32:
        rtol, atol = 1e-4, 1e-5
    for step in range(1, steps + 1):
        got = train_step(opt, compute_loss, max_norm, zero_grads)
        if zero_grads:
            topt.zero_grad()
        loss = torch_mlp_loss(theirs, X, y)
        loss.backward()
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(theirs, max_norm)
        topt.step()
        label = f"{where} ({dtype_name(dtype)}), step {step} of {steps}"
        assert isinstance(got, float), f"train_step should return a Python float, got {type(got).__name__} ({label})"
        check_equal(f"the number of compute_loss calls after {label}", calls[0], step)
        check_close(f"the loss train_step returns at {label}", got, loss.item(), rtol=rtol, atol=atol,
                    against="torch's loss before the update")
        for i, (p, q) in enumerate(zip(ours, theirs)):
            check_close(f"parameter {i} after {label}", p.data, q.detach().numpy(), rtol=rtol, atol=atol,
                        against="torch's parameters")
            check_close(f"parameter {i}'s .grad after {label}", p.grad, q.grad, rtol=rtol, atol=atol,
                        against="torch's .grad (the gradient this step used)")
