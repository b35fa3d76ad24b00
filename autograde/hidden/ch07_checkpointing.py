"""Hidden-test helpers of ch07_checkpointing: each check runs the student's code on seeded random cases and compares it
with PyTorch, with the engine's meter, or with a value this module derives on its own (a plan's peak by simulating the
meter event by event, the best plan by trying every plan of a short chain).

Imported by the hidden regions of the chapter's test cells at grading time (never shipped to students). A check takes
the notebook's namespace (the test cell passes globals()) and reads the student's names and the notebook's given names
from it: this chapter's reference module cannot be imported while grading. Checks print nothing, silence warnings, and
put grad mode back on when they end, whatever happened.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import time
import warnings
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.utils.checkpoint as torch_ckpt

from autograde.hidden.checks import check_close, check_equal, checking as _checking

from course.reference.ch03_vjp_rules import cross_entropy  # the loss of chapter 3, fused
from course.reference.ch04_accumulation import init_mlp, max_saved_bytes, mlp, reset_peak_saved_bytes, saved_bytes
from course.reference.ch05_grad_modes import STATE, is_grad_enabled, no_grad


# -- plumbing ------------------------------------------------------------------------------------------
def fail(message: str) -> AssertionError:
    return _checking().failure(message)


@contextlib.contextmanager
def checked() -> Iterator[None]:
    """No warning reaches stderr; grad mode on before and after, in the engine and in torch."""
    STATE.grad_enabled, STATE.inference_mode = True, False
    torch.set_grad_enabled(True)
    try:
        with warnings.catch_warnings(record=True), np.errstate(all="ignore"):
            warnings.simplefilter("always")
            yield
    finally:
        STATE.grad_enabled, STATE.inference_mode = True, False
        torch.set_grad_enabled(True)


def _grads(tensors: list[Any]) -> list[Any]:
    out = []
    for t in tensors:
        g = t.grad
        out.append(None if g is None else (g.detach().clone().numpy() if isinstance(g, torch.Tensor) else g.data.copy()))
    return out


def _compare_grads(label: str, names: list[str], got: list[Any], expected: list[Any], against: str,
                   rtol: float = 1e-12, atol: float = 1e-12) -> None:
    __tracebackhide__ = True
    for name, g, e in zip(names, got, expected):
        if e is None:
            if g is not None:
                raise fail(f"{label}: {name}.grad should stay None ({against} gives it no gradient), got an array")
            continue
        if g is None:
            raise fail(f"{label}: {name}.grad is None, but {against} gives it a gradient")
        check_close(f"{label}: {name}.grad", g, e, rtol=rtol, atol=atol, against=against)


# -- Exercise 1 ----------------------------------------------------------------------------------------
NODE_KINDS = {"MmBackward0": "linear inputs", "ReluBackward0": "relu masks", "CrossEntropyBackward": "loss"}


def _engine_saved_by_kind(ns: dict, sizes: list[int], batch: int, dtype: Any, seed: int) -> dict[str, int]:
    """The bytes the meter counts after the loss of such an MLP, per kind of node (and their total, checked)."""
    Tensor = ns["Tensor"]
    rng = np.random.default_rng(seed)
    params = [Tensor(a, requires_grad=True) for a in init_mlp(sizes, seed=seed, dtype=dtype)]
    X = Tensor(rng.normal(size=(batch, sizes[0])).astype(dtype))
    y = rng.integers(0, sizes[-1], size=batch).astype(np.int64)
    before = saved_bytes()
    loss = cross_entropy(mlp(params, X), y)
    total = saved_bytes() - before
    kinds = {"linear inputs": 0, "relu masks": 0, "loss": 0}
    stack, seen = [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        saved = getattr(getattr(node, "ctx", None), "_saved", None)
        if saved is not None and node.name() in NODE_KINDS:
            kinds[NODE_KINDS[node.name()]] += saved.nbytes
        stack.extend(child for child, _ in node.next_functions)
    assert sum(kinds.values()) == total, "internal check: the kinds of nodes do not add up to the meter"
    return kinds


def _random_mlps(seed: int, count: int) -> list[tuple[list[int], int, Any]]:
    rng = np.random.default_rng(seed)
    dtypes = [np.float16, np.float32, np.float64, "float32", np.dtype("float64"), "float16"]
    out = []
    for i in range(count):
        depth = int(rng.integers(1, 6))
        sizes = [int(s) for s in rng.integers(1, 40, size=depth + 1)]
        sizes[-1] = max(sizes[-1], 2)
        out.append((sizes, int(rng.choice([1, 2, 7, 33, 64])), dtypes[i % len(dtypes)]))
    return out


def _call_formula(ns: dict, sizes: Any, batch: Any, dtype: Any) -> dict:
    __tracebackhide__ = True
    f = ns["mlp_saved_bytes"]
    shown = f"mlp_saved_bytes({sizes!r}, {batch!r}, {dtype!r})"
    kept = list(np.asarray(sizes).tolist())
    got = f(sizes, batch, dtype)
    if list(np.asarray(sizes).tolist()) != kept:
        raise fail(f"{shown} changed its sizes argument in place")
    if not isinstance(got, dict) or set(got) != {"linear inputs", "relu masks", "loss"}:
        raise fail(f"{shown} should return a dict with the keys 'linear inputs', 'relu masks', 'loss', got {got!r:.200}")
    bad = {k: type(v).__name__ for k, v in got.items() if type(v) is not int}
    if bad:
        raise fail(f"{shown}: every value should be a Python int (bytes), got types {bad}")
    return got


def check_formula_meter(ns: dict) -> None:
    """Every kind of saved array against the meter on random MLPs and dtypes; sizes as list, tuple or array."""
    __tracebackhide__ = True
    with checked():
        for i, (sizes, batch, dtype) in enumerate(_random_mlps(71, 14)):
            expected = _engine_saved_by_kind(ns, sizes, batch, np.dtype(dtype), seed=i)
            arg = [sizes, tuple(sizes), np.array(sizes), np.array(sizes, dtype=np.int32)][i % 4]
            got = _call_formula(ns, arg, [batch, np.int64(batch)][i % 2], dtype)
            for kind in expected:
                check_equal(f"mlp_saved_bytes({sizes}, {batch}, {np.dtype(dtype).name})[{kind!r}] against what the "
                            f"meter counts for the nodes of that kind", got[kind], expected[kind])
        for sizes in ([5, 3], [4, 6, 2], [9, 9, 9, 9]):
            got = _call_formula(ns, sizes, 0, np.float32)
            check_equal(f"mlp_saved_bytes({sizes}, 0, np.float32) (an empty batch keeps nothing)", got,
                        {"linear inputs": 0, "relu masks": 0, "loss": 0})


def check_formula_torch(ns: dict) -> None:
    """The linear inputs against the storages torch saves for the same MLP (no loss: exactly the layers' inputs)."""
    __tracebackhide__ = True
    with checked():
        for i, (sizes, batch, dtype) in enumerate(_random_mlps(72, 12)):
            dt = np.dtype(dtype)
            rng = np.random.default_rng(i)
            weights = [torch.tensor(w, requires_grad=True) for w in init_mlp(sizes, seed=i, dtype=dt)]
            X = torch.tensor(rng.normal(size=(batch, sizes[0])).astype(dt))
            packed = []
            with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
                out = mlp(weights, X)
            storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in packed
                        if not any(t is w for w in weights)}
            del out
            got = _call_formula(ns, sizes, batch, dtype)
            check_equal(f"mlp_saved_bytes({sizes}, {batch}, {dt.name})['linear inputs'] against the storages torch "
                        f"saves for that MLP without a loss (each layer's input, each storage once)",
                        got["linear inputs"], sum(storages.values()))


# -- Exercise 2 ----------------------------------------------------------------------------------------
def _api(ns: dict, use_torch: bool) -> dict:
    if use_torch:
        return {"tensor": lambda a, rg=False: torch.tensor(np.array(a), requires_grad=rg),
                "ckpt": lambda fn, *args, **kw: torch_ckpt.checkpoint(fn, *args, use_reentrant=False, **kw),
                "no_grad": torch.no_grad, "data": lambda t: t.detach().numpy()}
    Tensor = ns["Tensor"]
    return {"tensor": lambda a, rg=False: Tensor(np.array(a), requires_grad=rg), "ckpt": ns["checkpoint"],
            "no_grad": no_grad, "data": lambda t: t.data}


def _scenarios(rng: np.random.Generator) -> list[dict]:
    """Programs checkpoint(segment, ...) written with methods both engines have; each returns (names, tensors, run)."""
    out = []
    for k in range(6):
        n, d, e = int(rng.integers(1, 7)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
        dtype = np.float64
        x0, W1, W2 = rng.normal(size=(n, d)), rng.normal(size=(d, e)), rng.normal(size=(e, d))
        C = rng.normal(size=(n, d))
        out.append(dict(kind=["args", "data input", "closure", "none arg", "unused", "zero-d"][k],
                        arrays=(x0, W1, W2, C), dtype=dtype, times=int(rng.integers(1, 4)), scale=float(rng.normal())))
    return out


def _run_scenario(api: dict, sc: dict, use_ckpt: bool, under_no_grad_backward: bool = False) -> tuple[list, list]:
    """Build the scenario's tensors, run forward (with or without checkpoint) and backward; return names, grads."""
    T = api["tensor"]
    x0, W1a, W2a, Ca = sc["arrays"]
    x, W1, W2, C = T(x0, True), T(W1a, True), T(W2a, True), T(Ca)
    s = T(np.array(1.7), True)
    unused = T(np.ones(3), True)
    times, scale = sc["times"], sc["scale"]
    call = api["ckpt"] if use_ckpt else (lambda fn, *args: fn(*args))
    kind = sc["kind"]

    def segment(h, A, B, times, scale):
        for _ in range(times):
            h = (h @ A).tanh() @ B
        return h * scale

    if kind == "args":
        out, names, tensors = call(segment, x * 1.0, W1, W2, times, scale), ["x", "W1", "W2"], [x, W1, W2]
    elif kind == "data input":
        out, names, tensors = call(segment, T(x0), W1, W2, times, scale), ["W1", "W2"], [W1, W2]
    elif kind == "closure":
        out = call(lambda h, B: segment(h, W1, B, times, scale), x * 1.0, W2)
        names, tensors = ["x", "W1", "W2"], [x, W1, W2]
    elif kind == "none arg":
        def with_none(h, A, mask, B, label):
            assert mask is None and label == "tag", "the non-tensor arguments did not reach fn unchanged"
            return segment(h, A, B, 1, 1.0)
        out, names, tensors = call(with_none, x * 1.0, W1, None, W2, "tag"), ["x", "W1", "W2"], [x, W1, W2]
    elif kind == "unused":
        out = call(lambda h, A, B, u: segment(h, A, B, 1, 2.0), x * 1.0, W1, W2, unused)
        names, tensors = ["x", "W1", "W2", "unused"], [x, W1, W2, unused]
    else:  # a 0-d tensor argument that requires grad
        out = call(lambda h, A, B, s: segment(h, A, B, 1, 1.0) * s, x * 1.0, W1, W2, s)
        names, tensors = ["x", "W1", "W2", "s (0-d)"], [x, W1, W2, s]
    loss = (out * C).sum()
    if under_no_grad_backward:
        with api["no_grad"]():
            loss.backward()
            if api["no_grad"] is no_grad and is_grad_enabled():
                raise fail(f"checkpoint scenario '{kind}': backward called inside no_grad() left grad mode on: the "
                           f"rerun must turn it on only for itself (with enable_grad():)")
    else:
        loss.backward()
    return names, _grads(tensors)


def check_checkpoint_gradients(ns: dict) -> None:
    """Random programs against the same program without checkpoint and against torch.utils.checkpoint."""
    __tracebackhide__ = True
    engine, reference = _api(ns, False), _api(ns, True)
    with checked():
        for sc in _scenarios(np.random.default_rng(73)):
            label = f"checkpoint scenario '{sc['kind']}' (x of shape {sc['arrays'][0].shape})"
            names, plain = _run_scenario(engine, sc, use_ckpt=False)
            _, got = _run_scenario(engine, sc, use_ckpt=True)
            _compare_grads(label, names, got, plain, "the same program without checkpoint")
            _, via_torch = _run_scenario(reference, sc, use_ckpt=True)
            _compare_grads(label, names, got, via_torch, "torch.utils.checkpoint", rtol=1e-10, atol=1e-10)
            _, inside = _run_scenario(engine, sc, use_ckpt=True, under_no_grad_backward=True)
            _compare_grads(label + ", backward called inside no_grad()", names, inside, plain,
                           "the same program without checkpoint")
        _check_more_programs(ns)


AUTOCAST_DTYPES = ((np.float32, np.float32), (np.float16, np.float32), (np.float32, np.float16), (np.float16, np.float16),
                   (np.float64, np.float64))


def _autocast_segment(record: list, mod: Any) -> Callable:
    """h -> tanh(h @ A) @ B + h, noting the dtype of each product as it runs (forward and rerun alike)."""
    def segment(h, A, B):
        z = h @ A
        record.append(str(z.dtype).replace("torch.", ""))
        z = (z.tanh() if mod is None else mod.tanh(z)) @ B
        record.append(str(z.dtype).replace("torch.", ""))
        return z + h
    return segment


def _autocast_modes(dx: Any, dw: Any) -> tuple[tuple[bool, bool], ...]:
    """(autocast in forward, autocast in backward): mixed dtypes only with autocast in forward (torch's product
    outside autocast takes one dtype only)."""
    both = ((True, False), (True, True))
    return both if dx != dw else both + ((False, True),)


def check_checkpoint_autocast(ns: dict) -> None:
    """checkpoint inside and outside Chapter 6's autocast, backward inside or outside it, float16, float32 and float64
    inputs: the rerun computes in forward's dtypes, as torch.utils.checkpoint (use_reentrant=True: it reruns the whole
    segment) under torch.autocast('cpu') does, and
    the gradients equal those of the same program without checkpoint."""
    __tracebackhide__ = True
    Tensor, checkpoint, autocast = ns["Tensor"], ns["checkpoint"], ns["autocast"]
    rng = np.random.default_rng(79)
    with checked():
        for k, (dx, dw) in enumerate(AUTOCAST_DTYPES * 2):
            n, d = int(rng.integers(1, 6)), int(rng.integers(1, 6))
            arrays = [rng.normal(size=(n, d)).astype(dx), rng.normal(size=(d, d)).astype(dw),
                      rng.normal(size=(d, d)).astype(dw)]
            for forward_on, backward_on in _autocast_modes(dx, dw):
                label = (f"checkpoint(segment, h, A, B) with h {np.dtype(dx).name} {arrays[0].shape}, A and B "
                         f"{np.dtype(dw).name}, forward {'inside' if forward_on else 'outside'} autocast(), backward "
                         f"{'inside' if backward_on else 'outside'} it")
                results = {}
                for use_ckpt in (False, True):
                    record: list = []
                    segment = _autocast_segment(record, None)
                    h, A, B = [Tensor(a.copy(), requires_grad=True) for a in arrays]
                    with autocast(enabled=forward_on):
                        out = checkpoint(segment, h * 1.0, A, B) if use_ckpt else segment(h * 1.0, A, B)
                    forward_dtypes = list(record)
                    with autocast(enabled=backward_on):
                        out.sum().backward()
                    results[use_ckpt] = (out, forward_dtypes, record[len(forward_dtypes):], _grads([h, A, B]))
                trecord: list = []
                th, tA, tB = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
                with torch.autocast("cpu", dtype=torch.float16, enabled=forward_on):
                    tout = torch_ckpt.checkpoint(_autocast_segment(trecord, torch), th * 1, tA, tB, use_reentrant=True)
                with torch.autocast("cpu", dtype=torch.float16, enabled=backward_on):
                    tout.double().sum().backward()
                out, forward_dtypes, rerun_dtypes, grads = results[True]
                half = len(trecord) // 2
                check_equal(f"{label}: the dtypes of the segment's two products in its rerun (forward's: "
                            f"{forward_dtypes})", rerun_dtypes, trecord[half:])
                check_equal(f"{label}: the dtypes of the segment's two products in forward", forward_dtypes,
                            trecord[:half])
                check_equal(f"{label}: the output's dtype", str(out.dtype), str(tout.dtype).replace("torch.", ""))
                _compare_grads(label, ["h", "A", "B"], grads, results[False][3], "the same program without checkpoint",
                               rtol=1e-6, atol=1e-6)
                for name, g, tg in zip("hAB", grads, (th.grad, tA.grad, tB.grad)):
                    check_equal(f"{label}: the dtype of {name}.grad", str(g.dtype), str(tg.dtype).replace("torch.", ""))


def _check_more_programs(ns: dict) -> None:
    __tracebackhide__ = True
    Tensor, checkpoint = ns["Tensor"], ns["checkpoint"]
    rng = np.random.default_rng(74)
    # float32 stays float32
    x = Tensor(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
    W = Tensor(rng.normal(size=(3, 3)).astype(np.float32), requires_grad=True)
    (checkpoint(lambda h, W: (h @ W).tanh(), x * 1.0, W)).sum().backward()
    check_equal("the dtypes of x.grad and W.grad after checkpoint on float32 tensors", (x.grad.dtype, W.grad.dtype),
                (np.dtype(np.float32), np.dtype(np.float32)))
    # nested checkpoints, an empty batch, retain_graph, the call count, inputs left unchanged, no_grad
    for label, batch in (("nested checkpoints", 3), ("an empty batch", 0)):
        x = Tensor(rng.normal(size=(batch, 3)), requires_grad=True)
        A, B = Tensor(rng.normal(size=(3, 4)), requires_grad=True), Tensor(rng.normal(size=(4, 3)), requires_grad=True)
        inner = lambda h, B: (h @ A).tanh() @ B
        outer = lambda h, B: checkpoint(inner, h, B).tanh() * 2.0
        keep = x.data.copy()
        for t in (x, A, B):
            t.grad = None
        (outer(x * 1.0, B) * 1.5).sum().backward()
        plain = _grads([x, A, B])
        for t in (x, A, B):
            t.grad = None
        (checkpoint(outer, x * 1.0, B) * 1.5).sum().backward()
        _compare_grads(label, ["x", "A", "B"], _grads([x, A, B]), plain, "the same program without checkpoint")
        check_close(f"{label}: x's data after forward and backward (inputs must not change)", x.data, keep)
    # a transposed (non-contiguous) batch as the input
    X = Tensor(rng.normal(size=(3, 5)).T)
    A = Tensor(rng.normal(size=(3, 4)), requires_grad=True)
    for use_ckpt in (False, True):
        A.grad = None
        run = checkpoint if use_ckpt else (lambda fn, *a: fn(*a))
        (run(lambda h, A: (h @ A).tanh(), X, A) * 3.0).sum().backward()
        if not use_ckpt:
            plain = _grads([A])
    _compare_grads("checkpoint on a transposed batch X.T", ["A"], _grads([A]), plain, "the same program without checkpoint")
    # fan-out: the segment's input also used after the segment, and twice inside the loss
    x = Tensor(rng.normal(size=(4, 3)), requires_grad=True)
    A = Tensor(rng.normal(size=(3, 3)), requires_grad=True)
    for use_ckpt in (False, True):
        x.grad = A.grad = None
        h = (x * 2.0).tanh()
        seg = (checkpoint if use_ckpt else (lambda fn, *a: fn(*a)))(lambda h, A: (h @ A).tanh() @ A, h, A)
        (seg * h + h.exp()).sum().backward()
        if not use_ckpt:
            plain = _grads([x, A])
    _compare_grads("checkpoint whose input h is also used after the segment", ["x", "A"], _grads([x, A]), plain,
                   "the same program without checkpoint")
    calls = []
    W = Tensor(rng.normal(size=(3, 3)), requires_grad=True)

    def counted(h, W):
        calls.append(1)
        return (h @ W).tanh()

    x = Tensor(rng.normal(size=(2, 3)), requires_grad=True)
    out = checkpoint(counted, x * 1.0, W)
    out.backward(np.ones((2, 3)), retain_graph=True)
    first = W.grad.data.copy()
    out.backward(np.ones((2, 3)))
    check_close("W.grad after two backward calls through a checkpoint with retain_graph=True", W.grad.data, 2 * first)
    check_equal("calls of the segment: forward, then one rerun per backward", len(calls), 3)
    calls.clear()
    with no_grad():
        quiet = checkpoint(counted, x * 1.0, W)
    check_equal("calls of the segment when checkpoint runs inside no_grad()", len(calls), 1)
    check_equal("requires_grad of checkpoint's output inside no_grad()", quiet.requires_grad, False)
    check_close("checkpoint's output inside no_grad()", quiet.data, np.tanh(x.data @ W.data))


def check_checkpoint_memory(ns: dict) -> None:
    """The meter: exactly the non-parameter inputs after forward, one rerun on top at the peak, nothing after; the
    saved arrays are the inputs' own (in-place changes are caught, as for any rule)."""
    __tracebackhide__ = True
    Tensor, checkpoint = ns["Tensor"], ns["checkpoint"]
    reset_peak, max_saved = ns["reset_peak_saved_bytes"], ns["max_saved_bytes"]
    rng = np.random.default_rng(75)
    with checked():
        for trial in range(5):
            n, d = int(rng.integers(1, 9)), int(rng.integers(1, 7))
            dtype = [np.float64, np.float32][trial % 2]
            W1 = Tensor(rng.normal(size=(d, d + 1)).astype(dtype), requires_grad=True)
            W2 = Tensor(rng.normal(size=(d + 1, d)).astype(dtype), requires_grad=True)
            data = Tensor(rng.normal(size=(n, d)).astype(dtype))                 # needs no gradient: counted
            extra = Tensor(rng.normal(size=(n, d)).astype(dtype), requires_grad=True)
            h = extra * 1.0                                                       # a non-leaf: counted

            def segment(a, W1, b, W2):
                return ((a @ W1).relu() @ W2 + b).tanh()

            start = saved_bytes()
            plain = segment(data, W1, h, W2)
            rerun = saved_bytes() - start
            del plain
            start = saved_bytes()
            out = checkpoint(segment, data, W1, h, W2)
            label = f"checkpoint(segment, data, W1, h, W2) with data {data.shape} {np.dtype(dtype).name}"
            check_equal(f"{label}: bytes held after forward (data and h; W1, W2 are parameters)",
                        saved_bytes() - start, data.data.nbytes + h.data.nbytes)
            arrays = getattr(getattr(out.grad_fn, "ctx", None), "_saved", None)
            arrays = () if arrays is None or arrays.arrays is None else arrays.arrays
            for name, t in (("data", data), ("h", h)):
                if not any(a is t.data for a in arrays):
                    raise fail(f"{label}: the node did not save {name}'s own array with ctx.save_for_backward (a copy, "
                               f"or nothing): save the input arrays themselves")
            h_node = h.grad_fn.ctx._saved.nbytes               # what h = extra * 1.0 saved before start
            reset_peak()
            out.sum().backward()
            check_equal(f"{label}: the peak during backward above the start (the inputs plus one rerun)",
                        max_saved() - start, data.data.nbytes + h.data.nbytes + rerun)
            check_equal(f"{label}: bytes held after backward, above the start (the inputs are freed, and so is the "
                        f"node that made h)", saved_bytes() - start, -h_node)
            after = saved_bytes()
            try:
                out.sum().backward()
            except RuntimeError:
                pass
            else:
                raise fail(f"{label}: a second backward through the checkpoint should raise RuntimeError (the saved "
                           f"inputs were freed), as torch does")
            check_equal(f"{label}: bytes held after a failed second backward", saved_bytes(), after)
        # dropped without backward: the bytes come back
        start = saved_bytes()
        out = checkpoint(lambda a, W: (a @ W).tanh(), Tensor(rng.normal(size=(5, 3))),
                         Tensor(rng.normal(size=(3, 3)), requires_grad=True))
        del out
        check_equal("bytes held after a checkpoint's output was dropped without backward", saved_bytes() - start, 0)
        # an input changed in place after forward: backward refuses, as for any rule (and as torch's reentrant one)
        a = Tensor(rng.normal(size=(3, 3)))
        W = Tensor(rng.normal(size=(3, 3)), requires_grad=True)
        out = checkpoint(lambda a, W: (a @ W).tanh(), a, W)
        a.add_(1.0)
        try:
            out.sum().backward()
        except RuntimeError:
            pass
        else:
            raise fail("an input of checkpoint changed in place after forward: backward should raise RuntimeError "
                       "(the version counter of the saved input), not rerun on the changed values")
        with no_grad():
            start = saved_bytes()
            quiet = checkpoint(lambda a, W: (a @ W).tanh(), Tensor(rng.normal(size=(4, 3))), W)
            check_equal("bytes held after checkpoint inside no_grad()", saved_bytes() - start, 0)


def check_checkpoint_rng(ns: dict) -> None:
    """Dropout inside segments: same masks in the rerun, the program's random numbers unchanged afterwards (also when
    the rerun raises), and preserve_rng_state=False leaving the generator alone."""
    __tracebackhide__ = True
    Tensor, checkpoint, dropout = ns["Tensor"], ns["checkpoint"], ns["dropout"]
    manual_seed, RNG, get_state = ns["manual_seed"], ns["RNG"], ns["get_rng_state"]
    rng = np.random.default_rng(76)
    with checked():
        for trial in range(4):
            n, d = int(rng.integers(1, 8)), int(rng.integers(1, 8))
            p = float(rng.uniform(0.2, 0.7))
            x = Tensor(rng.normal(size=(n, d)), requires_grad=True)
            W = Tensor(rng.normal(size=(d, d)), requires_grad=True)
            C = rng.normal(size=(n, d))

            def seg(h, W):
                return dropout((h @ W).tanh(), p) * 2.0

            def program(ckpt, skip_first=False):
                x.grad = W.grad = None
                manual_seed(100 + trial)
                h = ckpt(seg, x * 1.0, W)
                h = dropout(h, p)                       # a dropout outside, between the segments
                h = ckpt(seg, h, W)
                (h * Tensor(C)).sum().backward()
                return {"the output": h.data.copy(), "x.grad": x.grad.data.copy(), "W.grad": W.grad.data.copy(),
                        "the next four numbers RNG draws after backward": RNG.random(4)}

            expected = program(lambda fn, *a: fn(*a))
            got = program(checkpoint)
            for name in expected:
                check_close(f"{name} with two checkpointed segments using dropout({p:.3f}) and a dropout between them "
                            f"(seed {100 + trial})", got[name], expected[name], rtol=1e-12, atol=1e-12,
                            against="the same program without checkpoint")
        # preserve_rng_state=False: the rerun draws the next numbers, and nothing is put back
        x = Tensor(rng.normal(size=(6, 5)), requires_grad=True)
        W = Tensor(rng.normal(size=(5, 5)), requires_grad=True)
        seg = lambda h, W: dropout(h @ W, 0.5)
        manual_seed(7)
        first = seg(x * 1.0, W).data.copy()
        W.grad = None
        manual_seed(7)
        RNG.random((6, 5))                              # forward's mask; the rerun draws the one after it
        seg(x * 1.0, W).sum().backward()
        expected_grad, expected_next = W.grad.data.copy(), RNG.random(4)
        W.grad = None
        manual_seed(7)
        out = checkpoint(seg, x * 1.0, W, preserve_rng_state=False)
        check_close("the output of checkpoint(..., preserve_rng_state=False) with dropout (forward's mask)", out.data,
                    first, against="the same segment without checkpoint")
        out.sum().backward()
        check_close("W.grad with preserve_rng_state=False (the rerun draws the next mask: the generator is left "
                    "alone)", W.grad.data, expected_grad, rtol=1e-12, against="a plain run with that next mask")
        check_close("the numbers RNG draws after backward with preserve_rng_state=False", RNG.random(4), expected_next,
                    against="the generator advanced by forward and by the rerun")
        # the rerun raises: the generator is still put back
        def fragile(h, W):
            h = dropout(h @ W, 0.5)
            if is_grad_enabled():
                raise ValueError("raised during the rerun")
            return h

        manual_seed(9)
        out = checkpoint(fragile, x * 1.0, W)
        RNG.random(5)                                   # draws between the segment's forward and its backward
        before = get_state()
        try:
            out.sum().backward()
        except ValueError:
            pass
        check_equal("RNG's state after a rerun that raised (it must be put back, as with try/finally)",
                    get_state(), before)


# -- Exercise 3 ----------------------------------------------------------------------------------------
def expected_sqrt_plan(n: int) -> list[tuple[int, int]]:
    """The rule, derived here: k = ceil(sqrt(n)) segments (smallest k with k * k >= n), each n // k layers; the first
    k - 1 checkpointed."""
    if n <= 1:
        return []
    k = 1
    while k * k < n:
        k += 1
    size = n // k
    return [(i * size, (i + 1) * size) for i in range(k - 1)]


def _torch_rerun_layers(n: int) -> set[int]:
    """Which layers torch's checkpoint_sequential with ceil(sqrt(n)) segments runs twice (counted calls)."""
    calls = [0] * n

    class Count(torch.nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            self.i = i

        def forward(self, h):
            calls[self.i] += 1
            return torch.tanh(h) * 1.5          # tanh saves its output: the rerun is needed

    x = torch.ones(2, requires_grad=True)
    k = max(1, math.isqrt(n - 1) + 1)
    torch_ckpt.checkpoint_sequential(torch.nn.Sequential(*[Count(i) for i in range(n)]), k, x,
                                     use_reentrant=False).sum().backward()
    return {i for i, c in enumerate(calls) if c == 2}


def check_sqrt_plan(ns: dict) -> None:
    __tracebackhide__ = True
    sqrt_plan = ns["sqrt_plan"]
    with checked():
        for n in list(range(0, 260)) + [399, 400, 401, 1023, 1024, 1025, 9999, 10000, 10001, 123457]:
            got = sqrt_plan(n)
            if not isinstance(got, list) or any(type(s) is not tuple or len(s) != 2 or any(type(v) is not int for v in s)
                                                for s in got):
                raise fail(f"sqrt_plan({n}) should be a list of (start, stop) tuples of Python ints, got {got!r:.200}")
            check_equal(f"sqrt_plan({n})", got, expected_sqrt_plan(n))
        for n in (2, 3, 7, 10, 17, 26, 50):
            rerun = {i for s, t in sqrt_plan(n) for i in range(s, t)}
            check_equal(f"the layers sqrt_plan({n}) reruns", sorted(rerun), sorted(_torch_rerun_layers(n)))


def _plan_model(act: list[int], inp: list[int], tail: int, plan: list[tuple[int, int]]) -> tuple[int, int]:
    """The peak by simulating the meter event by event: forward adds, backward reruns and frees, layer by layer."""
    n = len(act)
    start_of = {s: t for s, t in plan}
    in_segment = {i for s, t in plan for i in range(s, t)}
    live, peak, held = 0, 0, []                   # held: (layer or segment start, bytes) in forward order
    i = 0
    while i < n:
        if i in start_of:
            live += inp[i]
            held.append(("segment", i, inp[i]))
            i = start_of[i]
        else:
            live += act[i]
            held.append(("layer", i, act[i]))
            i += 1
        peak = max(peak, live)
    live += tail
    peak = max(peak, live)
    live -= tail
    for kind, i, nbytes in reversed(held):
        if kind == "segment":
            for j in range(i, start_of[i]):
                live += act[j]
                peak = max(peak, live)
            for j in reversed(range(i, start_of[i])):
                live -= act[j]
        live -= nbytes
    assert live == 0 and len(in_segment) == sum(t - s for s, t in plan)
    return peak, len(in_segment)


def _random_plan(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    plan, i = [], 0
    while i < n:
        if rng.random() < 0.5:
            stop = int(rng.integers(i + 1, n + 1))
            plan.append((i, stop))
            i = stop
        else:
            i += 1
    return plan


def check_run_chain(ns: dict) -> None:
    """Random chains and plans: the plain chain's loss and gradients (and torch's), twice-run layers, the meter's
    peak as the model predicts (one checkpoint per segment, parameters as arguments), ValueError for non-plans."""
    __tracebackhide__ = True
    Tensor, run_chain, mlp_chain = ns["Tensor"], ns["run_chain"], ns["mlp_chain"]
    rng = np.random.default_rng(77)
    with checked():
        for trial in range(8):
            n = int(rng.integers(1, 7))
            sizes = [int(s) for s in rng.integers(1, 7, size=n + 1)]
            sizes[-1] = max(sizes[-1], 2)
            batch = int(rng.integers(1, 6))
            base = mlp_chain(sizes, seed=trial, dtype=np.float64)
            runs = [0] * n

            def counted(i, fn):
                def layer(h, *params):
                    runs[i] += 1
                    return fn(h, *params)
                return layer

            layers = [(counted(i, fn), params) for i, (fn, params) in enumerate(base)]
            params = [p for _, ps in layers for p in ps]
            X = Tensor(rng.normal(size=(batch, sizes[0])))
            keep = X.data.copy()
            y = rng.integers(0, sizes[-1], size=batch)
            plan = _random_plan(rng, n) if trial else [(0, n)]
            shuffled = list(reversed(plan))
            given = list(shuffled)

            def step(p):
                for t in params:
                    t.grad = None
                runs[:] = [0] * n
                try:
                    loss = cross_entropy(run_chain(layers, X, p), y)
                    loss.backward()
                finally:
                    _late_binding(f"run_chain on a chain of sizes {sizes}, batch {batch}, plan {p}", p, runs)
                return loss.item(), _grads(params), list(runs)

            plain_loss, plain_grads, _ = step([])
            loss, grads, counts = step(shuffled)
            label = f"run_chain on a chain of sizes {sizes}, batch {batch}, plan {shuffled}"
            check_equal(f"{label}: the plan argument after the call (it must not change)", shuffled, given)
            check_close(f"{label}: the loss", loss, plain_loss, rtol=1e-12, against="the plain chain")
            names = [f"layer {k // 2}'s {'Wb'[k % 2]}" for k in range(len(params))]
            _compare_grads(label, names, grads, plain_grads, "the plain chain")
            twice = {i for s, t in plan for i in range(s, t)}
            check_equal(f"{label}: how often each layer ran", counts, [2 if i in twice else 1 for i in range(n)])
            check_close(f"{label}: X's data afterwards (inputs must not change)", X.data, keep)
            tw = [torch.tensor(p.data, requires_grad=True) for p in params]
            h = torch.tensor(X.data)
            for i in range(n):
                h = (h if i == 0 else torch.relu(h)) @ tw[2 * i] + tw[2 * i + 1]
            torch.nn.functional.cross_entropy(h, torch.tensor(y)).backward()
            _compare_grads(label, names, grads, _grads(tw), "torch", rtol=1e-10, atol=1e-10)
            act, inp, tail = _chain_costs(base, X, y)
            predicted = _plan_model(act, inp, tail, sorted(plan))[0]
            measured = _peak(lambda: cross_entropy(run_chain(base, X, shuffled), y).backward())
            check_equal(f"{label}: the meter's peak during a training step (one checkpoint per segment, its input "
                        f"and the parameters of its layers as arguments)", measured, predicted)
        _check_long_chain(ns, 300)
        layers = mlp_chain([3, 4, 4, 2], seed=0, dtype=np.float64)
        X = Tensor(rng.normal(size=(2, 3)))
        out = run_chain(layers, X)
        check_equal("run_chain(layers, X) with the default plan: the output's shape", out.shape, (2, 2))
        for wrong in ([(0, 4)], [(2, 2)], [(-1, 1)], [(0, 2), (1, 3)], [(1, 3), (0, 2)]):
            try:
                run_chain(layers, X, wrong)
            except ValueError:
                continue
            except Exception as error:  # noqa: BLE001 - reported
                raise fail(f"run_chain(layers, X, {wrong}) on 3 layers should raise ValueError (check_plan), raised "
                           f"{type(error).__name__}: {error}") from None
            raise fail(f"run_chain(layers, X, {wrong}) on 3 layers should raise ValueError (check_plan), returned")


def _late_binding(label: str, plan: list[tuple[int, int]], runs: list[int]) -> None:
    """Fail, naming the cause, when under a plan of several segments a checkpointed layer did not run exactly twice:
    a segment's rerun ran other layers than its own, which late binding of the loop variable does."""
    __tracebackhide__ = True
    twice = sorted({i for s, t in plan for i in range(s, t)})
    if len(plan) >= 2 and any(runs[k] != 2 for k in twice):
        raise fail(f"{label}: the layers ran {list(runs)} times during forward and backward, expected 2 for each of "
                   f"{twice}: a segment's rerun ran other layers than its own. The usual cause is late binding: the "
                   "function passed to checkpoint runs again in backward, after the loop has moved on, and finds the "
                   "loop variable's last value. Bind it when you define the function: a default argument "
                   "(def run(h, *flat, segment=segment)) or functools.partial.") from None


def _check_long_chain(ns: dict, n: int) -> None:
    """A chain of n layers h -> h * 1.01 without parameters (more than 256: Python's small ints are not shared past
    256), plainly and under a plan: the output and the input's gradient are 1.01 ** n times the input's."""
    __tracebackhide__ = True
    Tensor, run_chain = ns["Tensor"], ns["run_chain"]
    layers = [(lambda h: h * 1.01, ()) for _ in range(n)]
    for plan in ([], [(0, n // 2), (n - 7, n)]):
        x = Tensor(np.array([1.0, -2.0]), requires_grad=True)
        try:
            out = run_chain(layers, x, plan)
        except Exception as error:  # noqa: BLE001 - reported
            raise fail(f"run_chain on a chain of {n} layers without parameters, plan {plan}, raised "
                       f"{type(error).__name__}: {error} (compare layer indices with < or ==, never `is`)") from None
        out.sum().backward()
        check_close(f"run_chain on a chain of {n} layers h -> h * 1.01, plan {plan}: the output", out.data,
                    x.data * 1.01 ** n, rtol=1e-9, against="1.01 ** n times the input")
        check_close(f"run_chain on a chain of {n} layers h -> h * 1.01, plan {plan}: x.grad", x.grad.data,
                    np.full(2, 1.01 ** n), rtol=1e-9, against="1.01 ** n")


def _chain_costs(layers: list, x: Any, y: Any) -> tuple[list[int], list[int], int]:
    """act, inp and tail of a chain, measured with the meter on a plain run (as the notebook's measure_chain_costs)."""
    act, inp, out = [], [], x
    for fn, params in layers:
        parameter = out.requires_grad and out.grad_fn is None            # the meter leaves parameters out
        inp.append(0 if parameter else int(out.data.nbytes))
        start = saved_bytes()
        out = fn(out, *params)
        act.append(saved_bytes() - start)
    start = saved_bytes()
    kept = cross_entropy(out, y)
    return act, inp, saved_bytes() - start


def _peak(step: Callable[[], Any]) -> int:
    start = saved_bytes()
    reset_peak_saved_bytes()
    step()
    return max_saved_bytes() - start


# -- Exercise 4 ----------------------------------------------------------------------------------------
def _all_plans(n: int, i: int = 0) -> Iterator[tuple[tuple[int, int], ...]]:
    if i >= n:
        yield ()
        return
    yield from _all_plans(n, i + 1)
    for end in range(i + 1, n + 1):
        for rest in _all_plans(n, end):
            yield ((i, end),) + rest


def _random_costs(rng: np.random.Generator, n: int, high: int = 50) -> tuple[list[int], list[int], int]:
    act = [int(v) for v in rng.integers(0, high, size=n)]
    inp = [int(v) for v in rng.integers(0, high, size=n)]
    return act, inp, int(rng.integers(0, high))


def check_plan_peak(ns: dict) -> None:
    """Random costs and every plan of short chains against a simulation of the meter; the meter itself on real
    chains; Python ints; ValueError for what is not a plan."""
    __tracebackhide__ = True
    ChainCosts, plan_peak = ns["ChainCosts"], ns["plan_peak"]
    rng = np.random.default_rng(78)
    with checked():
        for trial in range(30):
            n = int(rng.integers(0, 7))
            act, inp, tail = _random_costs(rng, n)
            costs = ChainCosts(tuple(act), tuple(inp), tail) if trial % 3 else ChainCosts(
                np.array(act, dtype=np.int64), np.array(inp, dtype=np.int64), np.int64(tail))
            for plan in _all_plans(n):
                plan = list(plan)
                if trial % 2:
                    plan = plan[::-1]
                got = plan_peak(costs, plan)
                if not (isinstance(got, tuple) and len(got) == 2 and all(type(v) is int for v in got)):
                    raise fail(f"plan_peak should return a tuple of two Python ints, got {got!r:.100}")
                check_equal(f"plan_peak(ChainCosts(act={act}, inp={inp}, tail={tail}), {plan})", got,
                            _plan_model(act, inp, tail, sorted(plan)))
        Tensor, mlp_chain, run_chain = ns["Tensor"], ns["mlp_chain"], ns["run_chain"]
        for trial in range(6):
            n = int(rng.integers(2, 8))
            sizes = [int(s) for s in rng.integers(2, 9, size=n + 1)]
            dtype = [np.float32, np.float64, np.float16][trial % 3]
            layers = mlp_chain(sizes, seed=trial, dtype=dtype)
            X = Tensor(rng.normal(size=(int(rng.integers(1, 5)), sizes[0])).astype(dtype))
            y = rng.integers(0, sizes[-1], size=X.shape[0])
            costs = ChainCosts(*[tuple(v) if isinstance(v, list) else v for v in _chain_costs(layers, X, y)])
            for plan in [_random_plan(rng, n) for _ in range(4)]:
                measured = _peak(lambda: cross_entropy(run_chain(layers, X, plan), y).backward())
                check_equal(f"plan_peak(costs, {plan})[0] for a chain of sizes {sizes} in {np.dtype(dtype).name}, "
                            f"against the meter", plan_peak(costs, plan)[0], measured)
        for n in range(0, 5):                                  # nothing saved anywhere: the peak is 0
            for plan in _all_plans(n):
                check_equal(f"plan_peak(ChainCosts(act={[0] * n}, inp={[0] * n}, tail=0), {list(plan)}) (zero costs)",
                            plan_peak(ChainCosts((0,) * n, (0,) * n, 0), list(plan)),
                            (0, sum(t - s for s, t in plan)))
        act, inp = [7, 3, 9], [2, 2, 2]
        plan_peak(ChainCosts(act, inp, 4), [(0, 2)])
        check_equal("the lists of ChainCosts([7, 3, 9], [2, 2, 2], 4) after plan_peak(costs, [(0, 2)]) (they must "
                    "not change)", (act, inp), ([7, 3, 9], [2, 2, 2]))
        costs = ChainCosts((5, 5, 5), (1, 1, 1), 2)
        for bad in ([(0, 4)], [(2, 2)], [(0, 2), (1, 3)], [(-1, 2)]):
            try:
                plan_peak(costs, bad)
            except ValueError:
                continue
            raise fail(f"plan_peak on 3 layers with plan {bad} should raise ValueError (check_plan)")


WIDE_DTYPES = (np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


def check_plan_peak_wide(ns: dict) -> None:
    """plan_peak with NumPy integer costs of every width whose sums pass the dtype's range (2**15, 2**31, 2**63,
    2**64...): exact, as Python ints add them, for random chains and plans."""
    __tracebackhide__ = True
    ChainCosts, plan_peak = ns["ChainCosts"], ns["plan_peak"]
    rng = np.random.default_rng(88)
    with checked():
        for dtype in WIDE_DTYPES:
            top = int(np.iinfo(dtype).max)
            for trial in range(6):
                n = int(rng.integers(2, 9))
                act = [int(v) for v in rng.integers(top // 4, top // 2 + 1, size=n, dtype=np.uint64)]
                inp = [int(v) for v in rng.integers(0, top // 2 + 1, size=n, dtype=np.uint64)]
                tail = int(rng.integers(0, top // 2 + 1, dtype=np.uint64))
                costs = ChainCosts(np.array(act, dtype=dtype), np.array(inp, dtype=dtype), dtype(tail))
                for plan in [[]] + [_random_plan(rng, n) for _ in range(4)]:
                    got = plan_peak(costs, plan)
                    if not (isinstance(got, tuple) and len(got) == 2 and all(type(v) is int for v in got)):
                        raise fail(f"plan_peak should return a tuple of two Python ints, got {got!r:.100}")
                    check_equal(f"plan_peak of {np.dtype(dtype).name} costs act={act}, inp={inp}, tail={tail}, plan "
                                f"{plan} (the sums pass {np.dtype(dtype).name}'s largest value, {top}: add Python ints)",
                                got, _plan_model(act, inp, tail, plan))


# -- Exercise 5 ----------------------------------------------------------------------------------------
def _best_by_trying(act: list[int], inp: list[int], tail: int) -> list[tuple[int, int]]:
    """(peak, rerun) of every plan."""
    return [_plan_model(act, inp, tail, list(p)) for p in _all_plans(len(act))]


def _call_optimal(ns: dict, costs: Any, budget: Any, label: str, n: int) -> list[tuple[int, int]] | None:
    """The student's plan, checked to be a plan; None if it raised ValueError."""
    __tracebackhide__ = True
    try:
        plan = ns["optimal_plan"](costs, budget)
    except ValueError:
        return None
    try:
        plan = [(int(s), int(t)) for s, t in plan]
        ns["check_plan"](plan, n)
    except (TypeError, ValueError) as error:
        raise fail(f"{label} returned {plan!r:.200}, which is not a plan: {error}") from None
    return plan


def check_optimal_plan_fits(ns: dict) -> None:
    """Random short chains and budgets (the smallest possible peak, just below it, in between): a plan whose peak fits
    whenever one exists, ValueError exactly when none does."""
    __tracebackhide__ = True
    ChainCosts = ns["ChainCosts"]
    rng = np.random.default_rng(79)
    with checked():
        for trial in range(40):
            n = int(rng.integers(0, 7))
            act, inp, tail = _random_costs(rng, n, high=[50, 6, 200][trial % 3])
            results = _best_by_trying(act, inp, tail)
            lowest, highest = min(p for p, _ in results), max(p for p, _ in results)
            for budget in {lowest - 1, lowest, int(rng.integers(lowest, highest + 2)), highest}:
                costs = ChainCosts(tuple(act), tuple(inp), tail)
                arg = budget if trial % 2 else np.int64(budget)
                label = f"optimal_plan(ChainCosts(act={act}, inp={inp}, tail={tail}), {budget})"
                plan = _call_optimal(ns, costs, arg, label, n)
                if plan is None:
                    if budget >= lowest:
                        raise fail(f"{label} raised ValueError, but a plan fits (the smallest possible peak is "
                                   f"{lowest})")
                    continue
                if budget < lowest:
                    raise fail(f"{label} returned {plan}, but no plan fits (the smallest possible peak is {lowest})")
                peak = _plan_model(act, inp, tail, sorted(plan))[0]
                if peak > budget:
                    raise fail(f"{label} returned {plan}, whose peak is {peak} bytes: over the budget")


def check_optimal_plan_best(ns: dict) -> None:
    """The fewest reruns, against every plan of short chains (costs that make keeping a middle layer pay among them),
    and against this module's own search on the 64-layer chain of the notebook; fast enough."""
    __tracebackhide__ = True
    ChainCosts = ns["ChainCosts"]
    rng = np.random.default_rng(80)
    with checked():
        for trial in range(45):
            n = int(rng.integers(1, 8))
            act, inp, tail = _random_costs(rng, n, high=[50, 8, 300][trial % 3])
            if trial % 5 == 0 and n > 2:
                act[1], inp[1] = 0, 40                 # a layer that costs nothing to keep but much to checkpoint
            results = _best_by_trying(act, inp, tail)
            lowest = min(p for p, _ in results)
            for budget in sorted({lowest, int(rng.integers(lowest, max(p for p, _ in results) + 1)),
                                  max(p for p, _ in results)}):
                fewest = min(r for p, r in results if p <= budget)
                label = f"optimal_plan(ChainCosts(act={act}, inp={inp}, tail={tail}), {budget})"
                plan = _call_optimal(ns, ChainCosts(tuple(act), tuple(inp), tail), budget, label, n)
                if plan is None:
                    raise fail(f"{label} raised ValueError, but a plan fits")
                peak, rerun = _plan_model(act, inp, tail, sorted(plan))
                if peak > budget:
                    raise fail(f"{label} returned {plan}, whose peak {peak} is over the budget")
                check_equal(f"layers rerun by {label} = {plan} (the best of all plans reruns {fewest})", rerun, fewest)
        act, inp = [7, 3, 9, 4], [2, 2, 2, 2]
        _call_optimal(ns, ChainCosts(act, inp, 4), 20, "optimal_plan(ChainCosts(lists), 20)", 4)
        check_equal("the lists of ChainCosts([7, 3, 9, 4], [2, 2, 2, 2], 4) after optimal_plan (they must not change)",
                    (act, inp), ([7, 3, 9, 4], [2, 2, 2, 2]))
        act = (65536,) + (81920,) * 63
        inp = (65536,) * 64
        costs = ChainCosts(act, inp, 3072)
        none = sum(act) + 3072
        for fraction in (0.9, 0.5, 0.3, 0.25, 0.2, 0.15):
            budget = int(none * fraction)
            started = time.perf_counter()
            plan = _call_optimal(ns, costs, budget, f"optimal_plan(64-layer costs, {budget})", 64)
            seconds = time.perf_counter() - started
            if seconds > 10:
                raise fail(f"optimal_plan on the 64-layer chain took {seconds:.1f} s; it should take well under a second")
            fewest = _search_uniform(act, inp, 3072, budget)
            if plan is None:
                if fewest is not None:
                    raise fail(f"optimal_plan(64-layer costs, {budget}) raised ValueError, but a plan rerunning "
                               f"{fewest} layers fits")
                continue
            peak, rerun = _plan_model(list(act), list(inp), 3072, sorted(plan))
            if peak > budget:
                raise fail(f"optimal_plan(64-layer costs, {budget}) returned a plan whose peak {peak} is over budget")
            check_equal(f"layers rerun by optimal_plan on the 64-layer chain of section 6 within {budget:,} bytes",
                        rerun, fewest)


def _search_uniform(act: tuple[int, ...], inp: tuple[int, ...], tail: int, budget: int) -> int | None:
    """The fewest reruns within budget, by a search from the right: best(i, held) over the layers from i on, given
    what the layers before i hold (memoised recursion, independent of the left-to-right programme students write)."""
    import functools
    n = len(act)

    @functools.lru_cache(maxsize=None)
    def best(i: int, held: int) -> float:
        if held + tail > budget:
            return math.inf
        if i == n:
            return 0
        options = [best(i + 1, held + act[i])]
        total = 0
        for end in range(i + 1, n + 1):
            total += act[end - 1]
            if held + inp[i] + total > budget:
                break
            options.append(end - i + best(end, held + inp[i]))
        return min(options)

    result = best(0, 0)
    return None if result == math.inf else int(result)
