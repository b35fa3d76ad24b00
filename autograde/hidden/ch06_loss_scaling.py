"""Hidden-test helpers of ch06_loss_scaling: each check runs the student's code and torch on the same inputs.

Imported by the hidden regions of the chapter's test cells at grading time (never shipped to students).
A check takes the notebook's namespace (the test cell passes globals()), reads the student's names from it,
and raises AssertionError with a message written for the student: what torch (or an independent computation
in this file) gives, what the student's code gave, and for which input. Checks print nothing and silence
torch's and NumPy's warnings (nbgrader scores a cell that writes to stderr 0).

The classes of wrong answer every chapter's hidden tests look for are covered here too: inputs changed in
place, 0-d, empty and transposed arrays, Python floats where torch keeps float32 (and float32 kept where
it must be), which error wins, and identity (arrays updated in place, new arrays where torch makes new ones).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from autograde.hidden.checks import checking as _checking, quiet

F32 = np.dtype(np.float32)


def _hex(values: Any) -> str:
    return "[" + ", ".join(f"0x{int(v):0{2 * np.asarray(values).itemsize}x}" for v in np.asarray(values).ravel()[:6]) + "]"


# -- Exercise 1: formats ------------------------------------------------------------------------------------
def brute_force_format(exponent_bits: int, mantissa_bits: int, finite_only: bool) -> dict[str, float]:
    """The facts of a small format by decoding every bit pattern (independent of any formula for the maximum)."""
    bias = 2 ** (exponent_bits - 1) - 1
    values, normals = [], []
    top = 2 ** exponent_bits - 1
    for field in range(top + 1):
        for mantissa in range(2 ** mantissa_bits):
            if field == top and (not finite_only or mantissa == 2 ** mantissa_bits - 1):
                continue                                      # inf / NaN patterns
            if field == 0:
                value = math.ldexp(mantissa, 1 - bias - mantissa_bits)
            else:
                value = math.ldexp(2 ** mantissa_bits + mantissa, field - bias - mantissa_bits)
                normals.append(value)
            values.append(value)
    values.sort()
    one = values.index(1.0)
    return {"bias": bias, "max": values[-1], "smallest_normal": min(normals),
            "smallest_subnormal": min(v for v in values if v > 0), "eps": values[one + 1] - 1.0}


TORCH_FORMATS = {"float32": (8, 23, False, torch.float32), "float16": (5, 10, False, torch.float16),
                 "bfloat16": (8, 7, False, torch.bfloat16), "float8_e4m3fn": (4, 3, True, torch.float8_e4m3fn),
                 "float8_e5m2": (5, 2, False, torch.float8_e5m2), "float64": (11, 52, False, torch.float64)}
UINT_OF = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def torch_format(dtype: torch.dtype, mantissa_bits: int) -> dict[str, float]:
    """torch.finfo's facts, plus the smallest subnormal (bit pattern 1) and the bias (the exponent field of 1.0)."""
    info = torch.finfo(dtype)
    size = torch.tensor([], dtype=dtype).element_size()
    one_bits = int(torch.tensor([1.0], dtype=dtype).view(UINT_OF[size]).item())
    tiny = torch.tensor([1], dtype=UINT_OF[size]).view(dtype).double().item()
    return {"bias": one_bits >> mantissa_bits, "max": info.max, "smallest_normal": info.smallest_normal,
            "smallest_subnormal": tiny, "eps": info.eps}


def _check_format(format_info: Callable, layout: tuple[int, int, bool], expected: dict[str, float], label: str) -> None:
    e, m, finite_only = layout
    call = f"format_info({e}, {m}" + (", finite_only=True)" if finite_only else ")")
    got = format_info(e, m, finite_only) if finite_only else format_info(e, m)
    for field in ("exponent_bits", "mantissa_bits"):
        value = getattr(got, field, None)
        assert value == layout[("exponent_bits", "mantissa_bits").index(field)], (
            f"{call}.{field} is {value!r}, expected {layout[('exponent_bits', 'mantissa_bits').index(field)]}")
    for field, want in expected.items():
        value = getattr(got, field, None)
        if field == "bias":
            assert type(value) is int and value == want, f"{call}.bias is {value!r}, expected the int {want} ({label})"
            continue
        assert type(value) is float, (
            f"{call}.{field} is a {type(value).__name__}, expected a Python float (exact: compute with Python "
            f"numbers, not NumPy scalars, whose own format may not even hold the value)")
        assert value == want, f"{call}.{field} is {value!r}, expected {want!r} ({label})"


def check_format_info(ns: dict) -> None:
    """format_info against torch.finfo for torch's formats (float64 too), and against every bit pattern decoded."""
    __tracebackhide__ = True
    format_info = ns["format_info"]
    with quiet():
        for name, (e, m, finite_only, dtype) in TORCH_FORMATS.items():
            _check_format(format_info, (e, m, finite_only), torch_format(dtype, m), f"torch.{name}")
        for layout in ((3, 2, False), (3, 2, True), (2, 3, True), (4, 3, False), (5, 2, True), (6, 9, False),
                       (2, 1, False), (8, 1, True), (5, 10, True)):
            _check_format(format_info, layout, brute_force_format(*layout), "every bit pattern of this layout decoded")


# -- Exercise 2: bfloat16 rounding ------------------------------------------------------------------------
def torch_bf16_bits(x: np.ndarray) -> np.ndarray:
    return torch.from_numpy(np.ascontiguousarray(x)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def _call_rounding(fn: Callable, x: np.ndarray, name: str, out_dtype: Any, label: str) -> np.ndarray:
    before = x.copy()
    got = fn(x)
    assert isinstance(got, np.ndarray), f"{name} of {label} returned {type(got).__name__}, expected an ndarray"
    assert got.dtype == out_dtype, f"{name} of {label} has dtype {got.dtype}, expected {np.dtype(out_dtype)}"
    assert got.shape == x.shape, f"{name} of {label} has shape {got.shape}, expected the input's shape {x.shape}"
    assert x.tobytes() == before.tobytes(), f"{name} changed its input ({label}) in place"
    assert not (got.size and np.shares_memory(got, x)), f"{name} of {label} returned an array sharing the input's memory"
    return got


def _compare_bits(name: str, x: np.ndarray, got: np.ndarray, want: np.ndarray, label: str, skip_nan: bool) -> None:
    keep = ~np.isnan(x) if skip_nan else np.ones(x.shape, bool)
    bad = np.argwhere((got != want) & keep)
    if len(bad):
        i = tuple(bad[0])
        raise AssertionError(f"{name} of {label}: for x = {x[i]!r} (bits 0x{int(x.view(np.uint32)[i]):08x}) got "
                             f"0x{int(got[i]):0{2 * got.itemsize}x}, torch gives "
                             f"0x{int(want[i]):0{2 * want.itemsize}x} ({len(bad)} of {x.size} entries differ)")


def random_float32(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random float32 bit patterns of every kind (normals, subnormals, ties), without NaN and inf."""
    bits = rng.integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32)
    bits[: n // 4] &= np.uint32(0x807FFFFF)                    # a quarter subnormal (or zero)
    bits[n // 4: n // 2] = (bits[n // 4: n // 2] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)   # exact ties
    x = bits.view(np.float32)
    return np.where(np.isfinite(x), x, np.float32(1.5)).astype(np.float32)


def check_bf16_values(ns: dict) -> None:
    """Bit for bit with torch on random finite float32 values (ties and subnormals included), any shape."""
    __tracebackhide__ = True
    fn = ns["bf16_bits"]
    rng = np.random.default_rng(17)
    with quiet():
        x = random_float32(rng, 60_000)
        got = _call_rounding(fn, x, "bf16_bits", np.uint16, "60,000 random float32 values")
        _compare_bits("bf16_bits", x, got, torch_bf16_bits(x), "random float32 values", False)
        ties = (np.array([0x3F808000, 0x3F818000, 0xBF808000, 0x00008000, 0x00018000, 0x7F7F8000, 0x4049_8000],
                         dtype=np.uint32)).view(np.float32)
        _compare_bits("bf16_bits", ties, fn(ties), torch_bf16_bits(ties), "exact ties (half-way cases)", False)
        for label, arr in [("a 0-d array", np.array(np.float32(3.14159))), ("an empty (0, 3) array", np.zeros((0, 3), np.float32)),
                           ("a transposed (5, 7) array", rng.normal(size=(7, 5)).astype(np.float32).T),
                           ("a (2, 1, 3) array", rng.normal(size=(2, 1, 3)).astype(np.float32) * 1e-39)]:
            got = _call_rounding(fn, arr, "bf16_bits", np.uint16, label)
            _compare_bits("bf16_bits", arr, got, torch_bf16_bits(arr), label, False)


NAN_BITS = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F80FFFF, 0x7FA0_0000],
                    dtype=np.uint32)


def check_bf16_specials(ns: dict) -> None:
    """inf, zeros, overflow to inf, every kind of NaN (a NaN stays a quiet NaN), and TypeError for other dtypes."""
    __tracebackhide__ = True
    fn = ns["bf16_bits"]
    with quiet():
        special = np.array([np.inf, -np.inf, 0.0, -0.0, 3.4028235e38, -3.4028235e38, 3.3895314e38, 3.3961e38,
                            1e-45, -1e-45], dtype=np.float32)
        got = _call_rounding(fn, special, "bf16_bits", np.uint16, "inf, zeros and the largest float32 values")
        _compare_bits("bf16_bits", special, got, torch_bf16_bits(special), "inf, zeros and the largest values", False)
        nans = NAN_BITS.view(np.float32)
        got = _call_rounding(fn, nans, "bf16_bits", np.uint16, "NaN inputs")
        for x_bits, g in zip(NAN_BITS, got):
            g = int(g)
            assert (g & 0x7F80) == 0x7F80 and (g & 0x007F) != 0, (
                f"bf16_bits of the NaN with bits 0x{int(x_bits):08x} gave 0x{g:04x}, which is "
                f"{'an infinity' if g & 0x7F == 0 and g & 0x7F80 == 0x7F80 else 'not a NaN'}: a NaN must stay NaN "
                f"(truncating or rounding its bits can carry into the exponent or drop the whole payload)")
            assert g & 0x0040, f"bf16_bits of the NaN 0x{int(x_bits):08x} gave 0x{g:04x}: set the quiet bit 0x0040"
        for label, bad in [("a float64 array", np.array([1.0, 2.0])), ("a float16 array", np.ones(3, np.float16)),
                           ("an int32 array", np.arange(3, dtype=np.int32)), ("a Python list of floats", [1.0, 2.0]),
                           ("a 0-d float64 array", np.array(1.0)), ("a Python float", 1.0)]:
            try:
                fn(bad)
            except TypeError:
                continue
            except Exception as error:  # noqa: BLE001 - report the wrong kind of error
                raise AssertionError(f"bf16_bits of {label} raised {type(error).__name__}: {error}; expected "
                                     f"TypeError (only float32 arrays are rounded)") from None
            raise AssertionError(f"bf16_bits of {label} returned a result; expected TypeError (a float64 value "
                                 f"rounded through float32 is rounded twice, which can differ from rounding once)")


# -- Exercise 3: what float16 loses -----------------------------------------------------------------------
def torch_cast_losses(grad: np.ndarray, scale: float) -> tuple[float, float]:
    scaled = torch.from_numpy(np.ascontiguousarray(grad)) * scale
    kept = torch.isfinite(scaled) & (scaled != 0)
    count = int(kept.sum())
    if count == 0:
        return 0.0, 0.0
    half = scaled[kept].half()
    return int((half == 0).sum()) / count, int(torch.isinf(half).sum()) / count


def check_cast_losses(ns: dict) -> None:
    """fp16_cast_losses against torch's cast on gradients spread over 50 binades, scales, dtypes and shapes."""
    __tracebackhide__ = True
    fn = ns["fp16_cast_losses"]
    rng = np.random.default_rng(41)
    with quiet():
        g = (np.exp2(rng.uniform(-32, 20, 5000)) * rng.choice([-1.0, 1.0], 5000))
        g[:50] = 0.0
        g[50:55] = [np.inf, -np.inf, np.nan, np.nan, np.inf]
        g[55:70] = np.exp2(-25.0) * rng.choice([1.0, 1.0000001, 0.9999999, 1.5], 15)   # around the rounding edge
        g[70:80] = 65504.0 * rng.choice([1.0, 1.0001, 1.0003, 0.9999], 10)
        cases = [(g.astype(np.float32), s, f"a float32 gradient, scale {s}") for s in (1.0, 2.0 ** 10, 2.0 ** 16, 3.0, 0.5)]
        cases += [(g, s, f"a float64 gradient, scale {s}") for s in (1.0, 2.0 ** 24)]
        cases += [(g.astype(np.float32).reshape(50, 100).T, 2.0 ** 8, "a transposed float32 gradient"),
                  (np.array(np.float32(1e-9)), 1.0, "a 0-d gradient 1e-9"), (np.array(np.float32(1e-9)), 1e3, "a 0-d gradient 1e-9, scale 1000"),
                  (np.zeros((0, 4), np.float32), 1.0, "an empty gradient"), (np.zeros(7, np.float32), 8.0, "a gradient of zeros"),
                  (np.full(3, np.nan, np.float32), 1.0, "a gradient of NaNs")]
        for grad, scale, label in cases:
            before = grad.copy()
            got = fn(grad, scale)
            assert np.array_equal(grad, before, equal_nan=True), f"fp16_cast_losses changed the gradient in place ({label})"
            assert isinstance(got, tuple) and len(got) == 2, f"fp16_cast_losses of {label} returned {got!r}, expected a pair"
            for which, value in zip(("underflow", "overflow"), got):
                assert type(value) is float, (f"the {which} fraction for {label} is a {type(value).__name__}; expected a "
                                              f"Python float (float(...) of a NumPy result)")
            want = torch_cast_losses(grad, scale)
            for which, value, w in zip(("underflow", "overflow"), got, want):
                assert abs(value - w) <= 1e-12, f"the {which} fraction for {label}: got {value!r}, torch's cast gives {w!r}"


# -- Exercise 4: static loss scaling ------------------------------------------------------------------------
def _engine_problem(ns: dict, init: list[np.ndarray], X: np.ndarray) -> tuple[list, Callable]:
    Tensor = ns["Tensor"]
    params = [Tensor(a.copy(), requires_grad=True) for a in init]

    def loss_fn() -> Any:
        W, b, t = params
        return ((X_t @ W + b).tanh() * t).sum() * (1.0 / len(X))

    X_t = Tensor(X)
    return params, loss_fn


def _torch_problem(init: list[np.ndarray], X: np.ndarray) -> tuple[list, Callable]:
    params = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    X_t = torch.from_numpy(X)

    def loss_fn() -> Any:
        W, b, t = params
        return (torch.tanh(X_t @ W + b) * t).sum() * (1.0 / len(X))

    return params, loss_fn


def _problem_arrays(rng: np.random.Generator, dtype: Any, size: float = 1.0) -> tuple[list[np.ndarray], np.ndarray]:
    W = (rng.normal(size=(3, 4)) * size).astype(dtype)
    b = (rng.normal(size=4) * size).astype(dtype)
    t = np.asarray(rng.normal() * 3.0, dtype=dtype)       # a 0-d parameter (a temperature)
    X = rng.normal(size=(5, 3)).astype(dtype)
    return [W, b, t], X


def check_scaled_step(ns: dict) -> None:
    """scaled_train_step against the same steps written in torch: scale, backward, unscale, clip, SGD."""
    __tracebackhide__ = True
    step, SGD = ns["scaled_train_step"], ns["SGD"]
    rng = np.random.default_rng(53)
    with quiet():
        for dtype in (np.float32, np.float64):
            for scale, max_norm in ((2.0 ** 12, None), (1000.0, 0.05), (2.0 ** 10, 1e6), (3.0, 0.01), (1.0, None)):
                init, X = _problem_arrays(rng, dtype)
                params, loss_fn = _engine_problem(ns, init, X)
                opt = SGD(params, lr=0.1, momentum=0.9)
                tparams, tloss_fn = _torch_problem(init, X)
                topt = torch.optim.SGD(tparams, lr=0.1, momentum=0.9)
                where = f"{np.dtype(dtype).name} parameters, scale {scale}, max_norm {max_norm}"
                for k in range(3):
                    got = step(opt, loss_fn, scale, max_norm)
                    topt.zero_grad()
                    loss = tloss_fn()
                    (loss * scale).backward()
                    for p in tparams:
                        p.grad.mul_(1.0 / scale)
                    if max_norm is not None:
                        torch.nn.utils.clip_grad_norm_(tparams, max_norm)
                    topt.step()
                    assert isinstance(got, tuple) and len(got) == 2, f"scaled_train_step returned {got!r}, expected (loss, stepped)"
                    assert type(got[0]) is float and type(got[1]) is bool, (
                        f"scaled_train_step should return (a Python float, a bool), got ({type(got[0]).__name__}, "
                        f"{type(got[1]).__name__})")
                    assert got[1] is True, f"step {k + 1} ({where}): nothing overflowed, yet the step was skipped"
                    assert abs(got[0] - loss.item()) <= 1e-6 * max(1.0, abs(loss.item())), (
                        f"step {k + 1} ({where}): the returned loss is {got[0]!r}, expected the unscaled loss "
                        f"{loss.item()!r}")
                    rtol = 1e-4 if dtype == np.float32 else 1e-9     # NumPy's and torch's tanh differ in the last bits
                    for name, p, tp in zip(("W", "b", "t (0-d)"), params, tparams):
                        assert p.dtype == np.dtype(dtype) and p.grad.dtype == np.dtype(dtype), (
                            f"step {k + 1} ({where}): {name} or its gradient is {p.dtype}/{p.grad.dtype}, expected {np.dtype(dtype)}")
                        want = tp.grad.numpy()
                        _checking().check_close(f"the gradient of {name} after step {k + 1} ({where}): unscaled, then "
                                                f"clipped", p.grad.data, want, rtol=rtol, atol=rtol * np.abs(want).max())
                        _checking().check_close(f"{name} after step {k + 1} ({where})", p.data, tp.detach().numpy(),
                                                rtol=rtol, atol=rtol * 1e-2)
        # overflow: float16 gradients of a large loss; the step must be skipped and nothing change
        init, X = _problem_arrays(rng, np.float16)
        params, loss_fn = _engine_problem(ns, init, X)
        opt = SGD(params, lr=0.1, momentum=0.9)
        before = [p.data.copy() for p in params]
        got = step(opt, loss_fn, 2.0 ** 24, 1.0)
        assert isinstance(got, tuple) and got[1] is False, (
            f"float16 parameters with scale 2**24: the scaled gradients overflow to inf, so the step must be skipped "
            f"(returned {got!r}, expected (loss, False))")
        assert abs(got[0] - float(loss_fn().item())) <= 1e-3, f"a skipped step still returns the unscaled loss, got {got[0]!r}"
        for name, p, b in zip(("W", "b", "t"), params, before):
            assert np.array_equal(p.data, b), f"a skipped step changed {name}"
        assert not any(opt.state.get(id(p)) for p in params), "a skipped step must not start the optimizer's state (momentum)"
        got = step(opt, loss_fn, 8.0, None)
        assert got[1] is True, "after a skipped step, a step with scale 8 (no overflow) must be taken"


# -- Exercise 5: GradScaler ---------------------------------------------------------------------------------
class _Run:
    """The student's GradScaler and torch's, driven through the same scripted gradients."""

    def __init__(self, ns: dict, shapes: tuple, seed: int, n_opt: int = 1, **settings: Any) -> None:
        self.Tensor, self.settings = ns["Tensor"], settings
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.init = [rng.normal(size=s).astype(np.float32) for s in shapes]
        self.params = [self.Tensor(a.copy(), requires_grad=True) for a in self.init]
        self.tparams = [torch.tensor(a.copy(), requires_grad=True) for a in self.init]
        groups = np.array_split(np.arange(len(shapes)), n_opt)
        self.opts = [ns["SGD"]([self.params[i] for i in g], lr=0.1, momentum=0.9) for g in groups]
        self.topts = [torch.optim.SGD([self.tparams[i] for i in g], lr=0.1, momentum=0.9) for g in groups]
        self.scaler = ns["GradScaler"](**settings)
        self.tscaler = torch.amp.GradScaler("cpu", **settings)
        self.tscaler.scale(torch.tensor(1.0))                 # torch makes its scale tensor lazily

    def set_grads(self, poison: dict[int, float]) -> None:
        scale = self.tscaler.get_scale()
        for i, (p, tp) in enumerate(zip(self.params, self.tparams)):
            if i in poison and poison[i] is None:
                p.grad = tp.grad = None
                continue
            g = (self.rng.normal(size=p.shape) * scale).astype(np.float32)
            if i in poison:
                g.flat[self.rng.integers(g.size)] = poison[i]
            p.grad, tp.grad = self.Tensor(g.copy()), torch.tensor(g.copy())

    def describe(self, history: list) -> str:
        return "; ".join(f"step {k + 1}: {text}" for k, text in enumerate(history[-6:]))


def _drive(ns: dict, script: list[dict[int, float]], shapes=((3,), (2, 2)), n_opt: int = 1, seed: int = 0,
           unscale_first: bool = False, **settings: Any) -> None:
    run = _Run(ns, shapes, seed, n_opt, **settings)
    history = []
    name = f"GradScaler({', '.join(f'{k}={v!r}' for k, v in settings.items())})"
    for k, poison in enumerate(script):
        run.set_grads(poison)
        stepped = []
        for opt, topt in zip(run.opts, run.topts):
            if unscale_first:
                run.scaler.unscale_(opt)
                run.tscaler.unscale_(topt)
            before = [p.detach().clone() for p in topt.param_groups[0]["params"]]
            result = run.scaler.step(opt)
            run.tscaler.step(topt)
            moved = not all(torch.equal(b, p) for b, p in zip(before, topt.param_groups[0]["params"]))
            took = moved or all(p.grad is None for p in topt.param_groups[0]["params"])
            assert type(result) is bool, f"{name}.step returned {result!r}; expected True or False (whether it stepped)"
            stepped.append(result)
            assert result == took, (
                f"{name}, step {k + 1} with {_poison_text(poison)}: step() says {'it stepped' if result else 'skipped'}, "
                f"torch {'stepped' if took else 'skipped'} (an optimizer steps unless one of its own gradients has inf "
                f"or NaN). Before: {run.describe(history)}")
        run.scaler.update()
        run.tscaler.update()
        got, want = run.scaler.get_scale(), run.tscaler.get_scale()
        history.append(f"{_poison_text(poison)} -> scale {want!r}")
        assert type(got) is float, f"{name}.get_scale() returned a {type(got).__name__}; expected a Python float"
        assert got == want, (f"{name}: after step {k + 1} ({_poison_text(poison)}) the scale is {got!r}, torch's is "
                             f"{want!r}. Steps so far: {run.describe(history)}")
        for i, (p, tp) in enumerate(zip(run.params, run.tparams)):
            if not np.allclose(p.data, tp.detach().numpy(), rtol=1e-6, atol=1e-7):
                raise AssertionError(f"{name}: after step {k + 1} parameter {i} differs from torch's (got "
                                     f"{p.data.ravel()[:3]}, expected {tp.detach().numpy().ravel()[:3]}): a skipped "
                                     f"step must change nothing, a taken one must use the unscaled gradients")


def _poison_text(poison: dict[int, float]) -> str:
    if not poison:
        return "clean gradients"
    return ", ".join(f"param {i}: {'no gradient' if v is None else f'one entry {v}'}" for i, v in poison.items())


INF, NAN = float("inf"), float("nan")


def check_scaler_update(ns: dict) -> None:
    """The scale history of scripted runs against torch.amp.GradScaler('cpu'): backoff, growth, the tracker."""
    __tracebackhide__ = True
    clean: dict[int, float] = {}
    with quiet():
        _drive(ns, [clean] * 7 + [{1: INF}] + [clean] * 5 + [{0: NAN}, clean, clean, clean], growth_interval=3)
        _drive(ns, [clean, clean, {0: INF}, clean, clean, {1: -INF}, clean, clean, clean, clean], growth_interval=2)
        _drive(ns, [{0: INF}, {0: INF}, clean, {1: NAN}, clean, clean, clean], init_scale=1000.0, growth_factor=1.7,
               backoff_factor=0.3, growth_interval=1)
        _drive(ns, [clean] * 5, init_scale=2.0 ** 127, growth_interval=2)            # growth that would overflow
        _drive(ns, [clean] * 12, growth_interval=2000)                               # the defaults: no growth
        _drive(ns, [clean] * 4 + [{0: INF}] * 3 + [clean] * 4, init_scale=3.0, growth_factor=1.1, backoff_factor=0.7,
               growth_interval=3)
        _check_long_interval(ns, 257)                  # a count past 256: Python's small ints are no longer shared
        # update(new_scale) sets the scale; a new GradScaler starts from init_scale
        scaler = ns["GradScaler"](init_scale=8.0)
        scaler.update(0.1)
        assert scaler.get_scale() == float(np.float32(0.1)), (
            f"update(0.1) should set the scale to 0.1 as a float32 ({float(np.float32(0.1))!r}), got {scaler.get_scale()!r}")
        try:
            ns["GradScaler"]().update()
        except AssertionError:
            pass
        except Exception as error:  # noqa: BLE001
            raise AssertionError(f"update() before any step raised {type(error).__name__}; torch raises "
                                 f"AssertionError('No inf checks were recorded prior to update.')") from None
        else:
            raise AssertionError("update() before any step or unscale_ changed the scale; torch raises AssertionError "
                                 "('No inf checks were recorded prior to update.')")


def _check_long_interval(ns: dict, interval: int) -> None:
    """interval clean steps in a row grow the scale exactly once, at the last of them, as torch's counter does."""
    __tracebackhide__ = True
    Tensor, SGD = ns["Tensor"], ns["SGD"]
    w = Tensor(np.zeros(1, np.float32), requires_grad=True)
    optimizer, scaler = SGD([w], lr=0.0), ns["GradScaler"](init_scale=2.0, growth_interval=interval)
    history = []
    for _ in range(interval + 1):
        w.grad = Tensor(np.ones(1, np.float32))
        scaler.step(optimizer)
        scaler.update()
        history.append(scaler.get_scale())
    expected = [2.0] * (interval - 1) + [4.0, 4.0]
    if history != expected:
        first = next(k for k, (g, e) in enumerate(zip(history, expected)) if g != e)
        raise AssertionError(f"GradScaler(init_scale=2.0, growth_interval={interval}): after clean step {first + 1} the scale is "
                             f"{history[first]!r}, torch's is {expected[first]!r} (the scale grows once the count of "
                             f"clean steps in a row equals growth_interval: compare the numbers with ==, not `is`)")


def check_scaler_unscale(ns: dict) -> None:
    """unscale_: in place, float32 reciprocal, inf/NaN in any gradient, once per step, float16 refused."""
    __tracebackhide__ = True
    Tensor, SGD, GradScaler = ns["Tensor"], ns["SGD"], ns["GradScaler"]
    with quiet():
        _drive(ns, [{}, {1: NAN}, {}, {0: INF, 1: None}, {}], unscale_first=True, init_scale=3.0, growth_interval=2)
        _drive(ns, [{}, {2: INF}, {}, {}], shapes=((3,), (2, 2), ()), unscale_first=True, growth_interval=1,
               init_scale=6.0)
        for scale in (2.0 ** 16, 3.0, 1e-3, 1e30):
            rng = np.random.default_rng(7)
            p = Tensor(np.zeros((2, 3), np.float32), requires_grad=True)
            q = Tensor(np.zeros((), np.float32), requires_grad=True)      # a 0-d parameter
            p.grad, q.grad = Tensor(rng.normal(size=(2, 3)).astype(np.float32)), Tensor(np.float32(2.5))
            grad_object, grad_array = p.grad, p.grad.data
            expected = [torch.from_numpy(p.grad.data.copy()), torch.from_numpy(q.grad.data.copy())]
            tp = torch.zeros(2, 3, requires_grad=True), torch.zeros((), requires_grad=True)
            for t, e in zip(tp, expected):
                t.grad = e
            scaler, tscaler = GradScaler(init_scale=scale), torch.amp.GradScaler("cpu", init_scale=scale)
            tscaler.scale(torch.tensor(1.0))
            opt = SGD([p, q], lr=0.1)
            scaler.unscale_(opt)
            tscaler.unscale_(torch.optim.SGD(list(tp), lr=0.1))
            assert p.grad is grad_object and p.grad.data is grad_array, (
                "unscale_ must change the gradients in place (p.grad and its array stay the same objects), as torch does")
            for name, t, got in (("p", tp[0], p.grad.data), ("q (0-d)", tp[1], q.grad.data)):
                assert got.dtype == F32 and np.shape(got) == tuple(t.shape), (
                    f"after unscale_ the gradient of {name} is {got.dtype} of shape {np.shape(got)}, expected float32 "
                    f"of shape {tuple(t.shape)}")
                assert np.array_equal(got, t.grad.numpy()), (
                    f"unscale_ with scale {scale}: the gradient of {name} is {np.ravel(got)[:3]}, torch's is "
                    f"{t.grad.numpy().ravel()[:3]} (torch multiplies by the float32 of 1/scale computed in double)")
        # errors, and which comes first
        p = Tensor(np.ones(2, np.float32), requires_grad=True)
        p.grad = Tensor(np.ones(2, np.float32))
        opt, scaler = SGD([p], lr=0.1), GradScaler()
        scaler.unscale_(opt)
        _expect(lambda: scaler.unscale_(opt), RuntimeError, "unscale_() has already been called",
                "a second unscale_ before update()")
        scaler.step(opt)
        _expect(lambda: scaler.unscale_(opt), RuntimeError, "unscale_() is being called after step()",
                "unscale_ after step(), before update()")
        scaler.update()
        scaler.unscale_(opt)                                   # allowed again after update()
        h = Tensor(np.ones(2, np.float16), requires_grad=True)
        h.grad = Tensor(np.array([1.0, np.inf], np.float16))
        f = Tensor(np.ones(2, np.float32), requires_grad=True)
        f.grad = Tensor(np.full(2, 4.0, np.float32))
        scaler = GradScaler(init_scale=4.0)
        mixed = SGD([f, h], lr=0.1)
        _expect(lambda: scaler.unscale_(mixed), ValueError, "Attempting to unscale FP16 gradients",
                "unscale_ of an optimizer holding a float16 gradient")
        assert np.array_equal(f.grad.data, np.full(2, 4.0, np.float32)), (
            "unscale_ refused a float16 gradient but had already unscaled the float32 one: check every gradient first")
        f.grad = Tensor(np.full(2, 4.0, np.float32))
        h.grad = None
        scaler.unscale_(mixed)
        assert np.array_equal(f.grad.data, np.ones(2, np.float32)), "after the refusal, unscale_ still works"


def _expect(call: Callable, kind: type, words: str, label: str) -> None:
    try:
        call()
    except kind as error:
        assert words in str(error), f"{label} raised {kind.__name__}({str(error)!r}); torch's message contains {words!r}"
        return
    except Exception as error:  # noqa: BLE001
        raise AssertionError(f"{label} raised {type(error).__name__}: {error}; torch raises {kind.__name__}") from None
    raise AssertionError(f"{label} raised nothing; torch raises {kind.__name__}: {words}...")


def check_scaler_step(ns: dict) -> None:
    """step: unscales when unscale_ was not called, skips on inf/NaN, per optimizer; scale(); step twice."""
    __tracebackhide__ = True
    Tensor, SGD, GradScaler = ns["Tensor"], ns["SGD"], ns["GradScaler"]
    with quiet():
        _drive(ns, [{}, {0: INF}, {}, {2: NAN}, {}, {}, {1: INF, 2: INF}, {}], shapes=((3,), (2, 2), (4,), ()),
               n_opt=2, growth_interval=2)
        _drive(ns, [{3: NAN}, {}, {0: None}, {}], shapes=((3,), (2, 2), (4,), ()), n_opt=3, init_scale=5.0,
               growth_interval=1)
        p = Tensor(np.ones(2, np.float32), requires_grad=True)
        p.grad = Tensor(np.ones(2, np.float32))
        opt, scaler = SGD([p], lr=0.1), GradScaler()
        scaler.step(opt)
        _expect(lambda: scaler.step(opt), RuntimeError, "step() has already been called since the last update()",
                "a second step() before update()")
        for dtype, want in ((np.float32, np.float32), (np.float16, np.float32), (np.float64, np.float64)):
            w = Tensor(np.array([0.5, -2.0], dtype=dtype), requires_grad=True)
            loss = (w * w).sum()
            scaled = GradScaler(init_scale=1024.0).scale(loss)
            assert isinstance(scaled, Tensor), f"scale(loss) returned {type(scaled).__name__}, expected a Tensor"
            assert scaled.dtype == np.dtype(want), (
                f"scale() of a {np.dtype(dtype).name} loss has dtype {scaled.dtype}; torch's is {np.dtype(want).name} "
                f"(the scale is a float32 tensor: a float16 loss is promoted, so loss * 65536 cannot overflow)")
            assert scaled.item() == float(loss.item()) * 1024.0, f"scale(loss) is {scaled.item()}, expected 1024 * loss"
            scaled.backward()
            _checking().check_close(f"w.grad after scale(loss).backward() ({np.dtype(dtype).name})", w.grad.data,
                                    1024.0 * 2 * np.array([0.5, -2.0]), rtol=1e-3)
        big = Tensor(np.array(3.0, np.float16), requires_grad=True)
        assert np.isfinite(GradScaler().scale(big * 1.0).item()), (
            "scale() of a float16 loss 3.0 with the default scale 65536 overflowed to inf: multiply by a float32 scale")


SCALE_DTYPES = (np.float16, np.float32, np.float64)
SCALE_SHAPES = ((), (1,), (3,), (2, 3), (0,), (2, 1, 4))
SCALE_FACTORS = (2.0 ** 16, 2.0 ** 15, 1024.0, 3.0, 1234.5, 2.0 ** -3, 2.0 ** 40)


def check_scale_dtypes(ns: dict) -> None:
    """scale(loss) against torch.amp.GradScaler('cpu').scale for float16, float32 and float64 losses of 0-d and
    n-d shapes, odd scales and values up to float16's range: the dtype (a 0-d loss is promoted, one with dimensions
    keeps its dtype), the shape, the values bit for bit (float32 arithmetic, rounded once), and the gradient."""
    __tracebackhide__ = True
    Tensor, GradScaler = ns["Tensor"], ns["GradScaler"]
    rng = np.random.default_rng(83)
    with quiet():
        for dtype in SCALE_DTYPES:
            for shape in SCALE_SHAPES:
                for factor in rng.choice(SCALE_FACTORS, size=3, replace=False):
                    factor = float(factor)
                    values = np.asarray(rng.normal(size=shape) * 10.0 ** rng.uniform(-5, 4, size=shape))
                    if values.size > 1:
                        values.flat[0] = 0.0                  # 0 * a scale that float16 cannot hold is still 0
                    values = values.astype(dtype)
                    label = (f"GradScaler(init_scale={factor!r}).scale(loss) for a {np.dtype(dtype).name} loss of "
                             f"shape {shape}")
                    w = Tensor(values.copy(), requires_grad=True)
                    got = GradScaler(init_scale=factor).scale(w * 1.0)
                    tw = torch.from_numpy(values.copy()).requires_grad_()
                    want = torch.amp.GradScaler("cpu", init_scale=factor).scale(tw * 1.0)
                    assert isinstance(got, Tensor), f"{label} returned {type(got).__name__}, expected a Tensor"
                    assert got.dtype == _torch_dtype(want), (
                        f"{label} has dtype {got.dtype}; torch's is {_torch_dtype(want)} (torch's scale is a 0-d float32 "
                        f"tensor: a 0-d loss is promoted with it, a loss with dimensions keeps its own dtype)")
                    assert got.shape == tuple(want.shape), f"{label} has shape {got.shape}, torch's {tuple(want.shape)}"
                    node = "ToCopyBackward0" if (len(shape) and dtype == np.float16) else want.grad_fn.name()
                    assert got.grad_fn is not None and got.grad_fn.name() == node, (
                        f"{label}: the result's node is {None if got.grad_fn is None else got.grad_fn.name()}, "
                        f"expected {node} (the product, as torch's; a cast is recorded only where the product's dtype "
                        f"differs from the loss's)")
                    expected = want.detach().numpy()
                    if not np.array_equal(got.data, expected, equal_nan=True):
                        bad = np.argwhere(np.asarray(got.data != expected) & ~np.isnan(expected))
                        where = tuple(bad[0]) if len(bad) else ()
                        differs = (f"{label}: got {np.asarray(got.data)[where]!r} for the loss value "
                                   f"{values[where]!r}, torch gives {expected[where]!r} (multiply in float32, then "
                                   f"round once to the loss's dtype)")
                        raise AssertionError(differs)
                    if factor <= 2.0 ** 10 and w.data.size:
                        got.backward(np.ones(got.shape, got.dtype))
                        want.backward(torch.ones_like(want))
                        _checking().check_close(f"the loss's gradient after {label}, backward from ones",
                                                np.asarray(w.grad.data, np.float64), tw.grad.double().numpy(), rtol=1e-3)


# -- Exercise 6: float16 training with float32 master weights --------------------------------------------------
def _mlp(params: list, X: Any) -> Any:
    h = X
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.relu()
    return h


def _fp16_setup(ns: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    sizes = (3, 8, 8, 2)
    arrays = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        arrays += [(rng.normal(size=(a, b)) * 0.5).astype(np.float32), (rng.normal(size=b) * 0.1).astype(np.float32)]
    X = rng.normal(size=(16, 3)).astype(np.float16)
    y = rng.integers(0, 2, size=16)
    return {"arrays": arrays, "X": X, "y": y}


def check_fp16_step(ns: dict, overflow: bool = False) -> None:
    """fp16_train_step against the same algorithm in torch (float16 model, float32 masters, GradScaler, clipping)."""
    __tracebackhide__ = True
    Tensor, SGD, AdamW, GradScaler = ns["Tensor"], ns["SGD"], ns["AdamW"], ns["GradScaler"]
    cast, cross_entropy, step = ns["cast"], ns["cross_entropy"], ns["fp16_train_step"]
    F = torch.nn.functional
    cases = ([(2.0 ** 40, None, "sgd"), (2.0 ** 36, 0.5, "adamw")] if overflow else
             [(2.0 ** 8, None, "sgd"), (2.0 ** 10, 0.05, "sgd"), (1.0, 0.5, "adamw")])
    with quiet():
        for init_scale, max_norm, optim in cases:
            setup = _fp16_setup(ns, 3 if overflow else 5)
            arrays, X, y = setup["arrays"], setup["X"], setup["y"]
            model = [Tensor(a.astype(np.float16), requires_grad=True) for a in arrays]
            masters = [Tensor(a.copy(), requires_grad=True) for a in arrays]
            model_arrays = [p.data for p in model]
            opt = SGD(masters, lr=0.2, momentum=0.9) if optim == "sgd" else AdamW(masters, lr=0.01)
            scaler = GradScaler(init_scale=init_scale, growth_interval=1000)
            X_t = Tensor(X)
            tmodel = [torch.tensor(a.astype(np.float16), requires_grad=True) for a in arrays]
            tmasters = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
            topt = (torch.optim.SGD(tmasters, lr=0.2, momentum=0.9) if optim == "sgd"
                    else torch.optim.AdamW(tmasters, lr=0.01))
            tscaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=1000)
            tX, ty = torch.from_numpy(X), torch.from_numpy(y)
            where = f"init_scale {init_scale}, max_norm {max_norm}, {optim}"
            for k in range(8):
                loss = step(model, masters, opt, scaler, lambda: cross_entropy(cast(_mlp(model, X_t), np.float32), y),
                            max_norm)
                for p in tmodel + tmasters:
                    p.grad = None
                tloss = F.cross_entropy(_mlp(tmodel, tX).float(), ty)
                tscaler.scale(tloss).backward()
                for p, m in zip(tmodel, tmasters):
                    m.grad = p.grad.float()
                tscaler.unscale_(topt)
                if max_norm is not None:
                    torch.nn.utils.clip_grad_norm_(tmasters, max_norm)
                tscaler.step(topt)
                tscaler.update()
                with torch.no_grad():
                    for p, m in zip(tmodel, tmasters):
                        p.copy_(m)
                assert type(loss) is float, f"fp16_train_step returned a {type(loss).__name__}; expected a Python float"
                assert abs(loss - tloss.item()) <= 2e-3 * max(1.0, abs(tloss.item())), (
                    f"step {k + 1} ({where}): the returned loss is {loss!r}, torch's {tloss.item()!r}")
                assert scaler.get_scale() == tscaler.get_scale(), (
                    f"step {k + 1} ({where}): the scale is {scaler.get_scale()!r}, torch's {tscaler.get_scale()!r}: "
                    f"an overflow in the float16 gradients must skip the step and back off")
                for i, (p, m, tm) in enumerate(zip(model, masters, tmasters)):
                    assert m.dtype == F32 and m.grad is not None and m.grad.dtype == F32, (
                        f"step {k + 1}: master {i} or its gradient is not float32 ({m.dtype}, "
                        f"{None if m.grad is None else m.grad.dtype}): the optimizer must update float32 masters")
                    assert p.dtype == np.float16 and p.data is model_arrays[i], (
                        f"step {k + 1}: model parameter {i} must stay a float16 array updated in place (got "
                        f"{p.dtype}, same array: {p.data is model_arrays[i]})")
                    assert np.array_equal(p.data, m.data.astype(np.float16)), (
                        f"step {k + 1}: model parameter {i} is not its master rounded to float16")
                    _checking().check_close(f"master {i} after step {k + 1} ({where})", m.data, tm.detach().numpy(),
                                            rtol=2e-3, atol=2e-4)


def check_fp16_skips(ns: dict) -> None:
    """Scripted overflows (a float16 gradient of exactly g * scale) and an optimizer state that a skip leaves alone."""
    __tracebackhide__ = True
    Tensor, SGD, GradScaler, step = ns["Tensor"], ns["SGD"], ns["GradScaler"], ns["fp16_train_step"]
    with quiet():
        check_fp16_step(ns, overflow=True)
        coefficients = np.array([0.5, -2048.0, 1.0], np.float16)
        model = [Tensor(np.array([1.0, 2.0, 3.0], np.float16), requires_grad=True)]
        masters = [Tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)]
        opt = SGD(masters, lr=0.01, momentum=0.9)
        scaler = GradScaler(init_scale=2.0 ** 16, growth_interval=2)
        c = Tensor(coefficients)

        def loss_fn():                                   # the float16 gradient of w is exactly c * scale / 1024
            return ns["cast"](model[0] * c, np.float32).sum() * (1.0 / 1024)

        history = []
        for k in range(6):
            before = masters[0].data.copy()
            step(model, masters, opt, scaler, loss_fn)
            history.append(scaler.get_scale())
            moved = not np.array_equal(before, masters[0].data)
            # 2.0 * 65536 = 131072 > 65504: inf; at 32768 the gradients are 65536 -> inf too; at 16384: 32768, fine
            expected_move = history[-1] != (history[-2] if k else 2.0 ** 16) * 0.5
            assert moved == expected_move, (
                f"step {k + 1}: with scale {history[-2] if k else 2.0 ** 16} the float16 gradient of w for the loss "
                f"sum(w * [0.5, -2048, 1]) / 1024 is {'inf (skip the step)' if not expected_move else 'finite'}; the masters "
                f"{'moved' if moved else 'did not move'}. Scales so far: {history}")
        assert history == [32768.0, 16384.0, 16384.0, 32768.0, 16384.0, 16384.0], (
            f"the scale after each of 6 steps (the gradient 2 * scale overflows float16 from scale 32768 on): got "
            f"{history}, expected "
            f"[32768.0, 16384.0, 16384.0, 32768.0, 16384.0, 16384.0]")


# -- Exercise 7: autocast -----------------------------------------------------------------------------------
def _autocast_ops(ns: dict) -> dict[str, tuple[Callable, Callable, int]]:
    """name -> (engine program, torch program, number of tensor inputs)."""
    from course.reference import ch03_vjp_rules as rules

    F = torch.nn.functional
    targets = np.array([0, 2, 1])
    return {
        "a @ b": (lambda a, b: a @ b, lambda a, b: a @ b, 2),
        "a + b": (lambda a, b: a + b, lambda a, b: a + b, 2),
        "a * b": (lambda a, b: a * b, lambda a, b: a * b, 2),
        "(a @ b).relu()": (lambda a, b: (a @ b).relu(), lambda a, b: torch.relu(a @ b), 2),
        "a.exp()": (lambda a: a.exp(), torch.exp, 1),
        "a.sum()": (lambda a: a.sum(), lambda a: a.sum(), 1),
        "softmax(a)": (lambda a: rules.softmax(a), lambda a: torch.softmax(a, -1), 1),
        "log_softmax(a)": (lambda a: rules.log_softmax(a), lambda a: torch.log_softmax(a, -1), 1),
        "logsumexp(a)": (lambda a: rules.logsumexp(a), lambda a: torch.logsumexp(a, -1), 1),
        "layer_norm(a)": (lambda a: rules.layer_norm(a), lambda a: F.layer_norm(a, a.shape[-1:]), 1),
        "cross_entropy(a, targets)": (lambda a: ns["cross_entropy"](a, targets),
                                      lambda a: F.cross_entropy(a, torch.from_numpy(targets)), 1),
        "cross_entropy(a @ b, targets)": (lambda a, b: ns["cross_entropy"](a @ b, targets),
                                          lambda a, b: F.cross_entropy(a @ b, torch.from_numpy(targets)), 2),
    }


DTYPE_CASES = [(np.float32, np.float32), (np.float16, np.float16), (np.float64, np.float64), (np.float32, np.float16),
               (np.float16, np.float32)]


def _run_autocast(ns: dict, program: Callable, tprogram: Callable, arrays: list[np.ndarray]) -> tuple:
    Tensor, autocast = ns["Tensor"], ns["autocast"]
    leaves = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    with autocast():
        out = program(*leaves)
    tleaves = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    with torch.autocast("cpu", dtype=torch.float16):
        tout = tprogram(*tleaves)
    return leaves, out, tleaves, tout


def _torch_dtype(t: Any) -> np.dtype:
    return np.dtype(str(t.dtype).replace("torch.", ""))


def check_autocast_dtypes(ns: dict) -> None:
    """Inside autocast: the dtype each operation computes in, its values and the leaves' gradients, against
    torch.autocast('cpu', dtype=torch.float16), for float16, float32 and float64 inputs."""
    __tracebackhide__ = True
    rng = np.random.default_rng(61)
    with quiet():
        for name, (program, tprogram, n) in _autocast_ops(ns).items():
            for dtypes in DTYPE_CASES:
                arrays = [rng.normal(size=(3, 3)).astype(d) for d in dtypes[:n]]
                label = f"{name} with inputs of dtype {', '.join(np.dtype(d).name for d in dtypes[:n])} inside autocast()"
                leaves, out, tleaves, tout = _run_autocast(ns, program, tprogram, arrays)
                assert out.dtype == _torch_dtype(tout), (
                    f"{label} gives {out.dtype}; torch.autocast on CPU gives {_torch_dtype(tout)} (on CPU only the "
                    f"matrix product is lowered and only the loss is lifted to float32; float64 is never cast)")
                tol = 2e-2 if np.float16 in (out.dtype, *dtypes[:n]) or name.startswith(("a @", "(a @", "cross_entropy(a @")) else 1e-5
                _checking().check_close(f"the value of {label}", out.data.astype(np.float64),
                                        tout.detach().double().numpy(), rtol=tol, atol=tol)
                out.sum().backward()
                tout.double().sum().backward()
                for i, (leaf, tleaf) in enumerate(zip(leaves, tleaves)):
                    assert leaf.grad is not None, (
                        f"{label}: input {i} has no gradient after backward: a cast made by autocast must be recorded "
                        f"(cast(t, dtype)), so that the gradient flows back to the original tensor")
                    assert leaf.grad.dtype == _torch_dtype(tleaf.grad), (
                        f"{label}: the gradient of input {i} is {leaf.grad.dtype}, torch's is {_torch_dtype(tleaf.grad)}")
                    _checking().check_close(f"the gradient of input {i} of {label}", leaf.grad.data.astype(np.float64),
                                            tleaf.grad.double().numpy(), rtol=tol, atol=tol)


def _edges(out: Any) -> list[str | None]:
    return [None if node is None else node.name().split("::")[-1] for node, _ in out.grad_fn.next_functions]


def check_autocast_graph(ns: dict) -> None:
    """The recorded casts: a cast node only where torch records one; nothing cast outside autocast; integer
    inputs, float64 and tensors already of the target dtype left alone (the same objects)."""
    __tracebackhide__ = True
    Tensor, autocast, autocast_inputs = ns["Tensor"], ns["autocast"], ns["autocast_inputs"]
    rng = np.random.default_rng(67)
    with quiet():
        for d1, d2, g1, g2 in [(np.float32, np.float32, True, True), (np.float16, np.float16, True, False),
                               (np.float32, np.float16, False, True), (np.float16, np.float32, True, True),
                               (np.float64, np.float64, True, True)]:
            arrays = [rng.normal(size=(2, 3)).astype(d1), rng.normal(size=(3, 4)).astype(d2)]
            leaves = [Tensor(a, requires_grad=r) for a, r in zip(arrays, (g1, g2))]
            with autocast():
                out = leaves[0] @ leaves[1]
            tleaves = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, (g1, g2))]
            with torch.autocast("cpu", dtype=torch.float16):
                tout = tleaves[0] @ tleaves[1]
            label = (f"a @ b inside autocast() with a {np.dtype(d1).name} (requires_grad={g1}), b "
                     f"{np.dtype(d2).name} (requires_grad={g2})")
            assert _edges(out) == _edges(tout), (
                f"{label}: the product's node points to {_edges(out)}; torch's to {_edges(tout)} (a cast is recorded "
                f"as ToCopyBackward0, only for an input that changes dtype)")
            for name, (op, tensors) in {"MatMul": (ns["OPS"]["matmul"], leaves)}.items():
                with autocast():
                    kept = autocast_inputs(op, tuple(tensors))
                for i, (t, k) in enumerate(zip(tensors, kept)):
                    if t.dtype in (np.float16, np.float64):
                        assert k is t, (f"autocast_inputs({name}, ...) with input {i} of dtype {t.dtype}: return that "
                                        f"tensor itself (nothing to cast), not a copy")
        X = Tensor(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
        W = Tensor(rng.normal(size=(3, 2)).astype(np.float32), requires_grad=True)
        out = X @ W
        assert out.dtype == F32 and _edges(out) == ["AccumulateGrad", "AccumulateGrad"], (
            f"outside autocast, a float32 product must stay float32 with no cast recorded (got {out.dtype}, "
            f"{_edges(out)})")
        with autocast(enabled=False):
            out = X @ W
        assert out.dtype == F32, "inside autocast(enabled=False) nothing is cast"
        with autocast():
            loss = ns["cross_entropy"](X @ W, np.array([1, 0, 1, 1]))
            kept = autocast_inputs(ns["OPS"]["add"], (X, W))
        assert kept[0] is X and kept[1] is W, ("autocast_inputs of an operation without a policy (add) must return its "
                                               "inputs unchanged (the same tensors)")
        assert loss.dtype == F32 and loss.grad_fn.next_functions[0][0].name() == "ToCopyBackward0", (
            f"cross_entropy of a float16 product inside autocast must cast the logits to float32 (recorded): got a "
            f"{loss.dtype} loss whose input node is {loss.grad_fn.next_functions[0][0].name()}")
        loss.backward()
        assert X.grad is not None and X.grad.dtype == F32 and W.grad.dtype == F32, (
            "after backward of cross_entropy(X @ W) inside autocast, the float32 leaves X and W get float32 gradients")
        loss64 = None
        with autocast():
            Z = Tensor(rng.normal(size=(4, 2)), requires_grad=True)     # float64 logits: never cast
            loss64 = ns["cross_entropy"](Z, np.array([1, 0, 1, 1]))
        assert loss64.dtype == np.float64 and loss64.grad_fn.next_functions[0][0].name() == "AccumulateGrad", (
            "cross_entropy of float64 logits inside autocast must stay float64, without a cast")


MIXED_SHAPES = (((2, 3), (3, 4)), ((3,), (3, 2)), ((2, 3), (3,)), ((4,), (4,)), ((2, 2, 3), (3, 2)), ((1, 5), (5, 1)))
MIXED_DTYPES = (np.float16, np.float32, np.float64)


def check_autocast_mixed(ns: dict) -> None:
    """a @ b inside autocast() for every pair of float16, float32 and float64 operands, several shapes, against
    torch.autocast('cpu', dtype=torch.float16): where torch raises (float64 beside a tensor that is cast), the engine
    raises RuntimeError too, changes nothing and leaves autocast as it found it; elsewhere the dtypes agree."""
    __tracebackhide__ = True
    Tensor, autocast, autocast_inputs = ns["Tensor"], ns["autocast"], ns["autocast_inputs"]
    rng = np.random.default_rng(71)
    with quiet():
        for da in MIXED_DTYPES:
            for db in MIXED_DTYPES:
                for sa, sb in MIXED_SHAPES:
                    a, b = rng.normal(size=sa).astype(da), rng.normal(size=sb).astype(db)
                    label = f"a @ b inside autocast() with a {np.dtype(da).name} {sa}, b {np.dtype(db).name} {sb}"
                    try:
                        with torch.autocast("cpu", dtype=torch.float16):
                            want = (torch.from_numpy(a).requires_grad_() @ torch.from_numpy(b)).dtype
                    except RuntimeError as error:
                        want = error
                    A, B = Tensor(a.copy(), requires_grad=True), Tensor(b.copy())
                    state = (ns["AUTOCAST"].enabled, ns["AUTOCAST"].dtype)
                    try:
                        with autocast():
                            got = A @ B
                    except RuntimeError as error:
                        got = error
                    except Exception as error:  # noqa: BLE001 - report the wrong kind of error
                        torch_says = (f"raises RuntimeError ({want})" if isinstance(want, RuntimeError) else
                                      f"gives a {_torch_dtype_name(want)} result")
                        raise AssertionError(f"{label} raised {type(error).__name__}: {error}; torch {torch_says}") from None
                    assert (ns["AUTOCAST"].enabled, ns["AUTOCAST"].dtype) == state, (
                        f"{label}: autocast's state was not restored when the product raised")
                    assert A.data.tobytes() == a.tobytes() and B.data.tobytes() == b.tobytes(), (
                        f"{label} changed its inputs")
                    if isinstance(want, RuntimeError):
                        assert isinstance(got, RuntimeError), (
                            f"{label} gave a {got.dtype} result; torch raises RuntimeError ({want}): float64 is never "
                            f"cast and the other operand is, so the product would mix two dtypes")
                        assert str(got), f"{label} raised RuntimeError without a message: name the dtypes"
                        with autocast():
                            try:
                                autocast_inputs(ns["OPS"]["matmul"], (A, B))
                            except RuntimeError:
                                pass
                            else:
                                raise AssertionError(f"autocast_inputs(MatMul, (a, b)) for {label[6:]} returned inputs; "
                                                     f"torch raises RuntimeError ({want})")
                    else:
                        assert not isinstance(got, BaseException), (
                            f"{label} raised {type(got).__name__}: {got}; torch gives a {_torch_dtype_name(want)} result")
                        assert got.dtype == np.dtype(_torch_dtype_name(want)), (
                            f"{label} gives {got.dtype}; torch's autocast gives {_torch_dtype_name(want)}")
        A, B = Tensor(np.ones((2, 3))), Tensor(np.ones((3, 2), np.float32))
        assert (A @ B).dtype == np.float64, "outside autocast a float64 @ float32 product is the engine's (float64): " \
                                            "only autocast raises"


def _torch_dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")
