"""Hidden-test helpers of ch05_grad_modes: each check runs the same program on the student's engine and on torch.

Imported by the hidden regions of the chapter's test cells at grading time (never shipped to students).
A check takes the notebook's namespace (the test cell passes globals()), reads the engine's names from it,
and raises AssertionError with a message written for the student: what torch does, what the engine did, and
in which scenario. Checks print nothing, silence torch's and NumPy's warnings, and put grad mode, inference
mode and anomaly mode back to their defaults when they end, so that one wrong answer cannot leave a mode
switched on for the test cells that follow.
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import re
import threading
import weakref
from typing import Any, Callable, Iterator

import numpy as np
import torch

from autograde.hidden.checks import check_close, quiet

GRAD_MANAGERS = ("no_grad", "enable_grad", "set_grad_enabled(False)", "set_grad_enabled(True)")
ALL_MANAGERS = GRAD_MANAGERS + ("inference_mode()", "inference_mode(False)")


# -- the two engines behind one set of names ------------------------------------------------------
class _Boom(Exception):
    """Raised inside a managed block to see that the mode comes back."""


def engine(ns: dict) -> dict[str, Any]:
    """The student's engine, by the names a program uses (missing names are left out)."""
    names = ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
             "is_inference_mode_enabled")
    api = {n: ns[n] for n in names if n in ns}
    Tensor = ns["Tensor"]
    api["Tensor"] = lambda a, rg=False: Tensor(np.array(a), requires_grad=rg)
    api["is_torch"] = False
    return api


TORCH: dict[str, Any] = dict(
    no_grad=torch.no_grad, enable_grad=torch.enable_grad, set_grad_enabled=torch.set_grad_enabled,
    inference_mode=torch.inference_mode, is_grad_enabled=torch.is_grad_enabled,
    is_inference_mode_enabled=torch.is_inference_mode_enabled,
    Tensor=lambda a, rg=False: torch.tensor(np.array(a), requires_grad=rg), is_torch=True)


def reset_modes(ns: dict) -> None:
    """Grad mode on, inference mode and anomaly mode off, in the student's engine and in torch."""
    state = ns.get("STATE")
    if state is not None:
        for attr, value in (("grad_enabled", True), ("inference_mode", False)):
            try:
                setattr(state, attr, value)
            except Exception:  # noqa: BLE001 - a student's state object may refuse; nothing else to do
                pass
    anomaly = ns.get("ANOMALY")
    if anomaly is not None:
        anomaly.enabled, anomaly.check_nan = False, True
    torch.set_grad_enabled(True)
    torch.autograd.set_detect_anomaly(False)


@contextlib.contextmanager
def checked(ns: dict) -> Iterator[None]:
    """Run a check quietly, from the default modes, and reset every mode afterwards, whatever happened."""
    reset_modes(ns)
    try:
        with quiet():
            yield
    finally:
        reset_modes(ns)


def managers(api: dict) -> dict[str, Callable[[], Any]]:
    """Each context manager by name, as a factory (the names of GRAD_MANAGERS and ALL_MANAGERS)."""
    return {
        "no_grad": lambda: api["no_grad"](), "enable_grad": lambda: api["enable_grad"](),
        "set_grad_enabled(False)": lambda: api["set_grad_enabled"](False),
        "set_grad_enabled(True)": lambda: api["set_grad_enabled"](True),
        "inference_mode()": lambda: api["inference_mode"](),
        "inference_mode(False)": lambda: api["inference_mode"](False),
    }


def observe_flags(api: dict) -> tuple:
    return (api["is_grad_enabled"](),)


def observe_inference(api: dict) -> tuple:
    made = api["Tensor"](np.ones(2))
    return (api["is_grad_enabled"](), api["is_inference_mode_enabled"](), made.is_inference())


def observe_recording(api: dict) -> tuple:
    w = api["Tensor"](np.ones(2), True)
    y = w * 2.0
    return observe_inference(api) + (y.requires_grad, y.grad_fn is None, y.is_inference())


OBSERVED = {observe_flags: "(is_grad_enabled,)",
            observe_inference: "(is_grad_enabled, is_inference_mode_enabled, a new tensor's is_inference())",
            observe_recording: "(is_grad_enabled, is_inference_mode_enabled, a new tensor's is_inference(), "
                               "(w * 2).requires_grad, (w * 2).grad_fn is None, (w * 2).is_inference())"}


def trace(api: dict, names: tuple[str, ...], raise_at: int | None, observe: Callable) -> list:
    """Nest the named managers; observe on entering each, raise inside one, observe after leaving each."""
    made = managers(api)
    out: list = [("before", observe(api))]

    def level(i: int) -> None:
        if i == len(names):
            return
        try:
            with made[names[i]]():
                out.append((f"inside {names[i]}", observe(api)))
                if raise_at == i:
                    raise _Boom()
                level(i + 1)
        finally:
            out.append((f"after {names[i]}", observe(api)))

    try:
        level(0)
    except _Boom:
        out.append(("the exception reached the caller", True))
    out.append(("at the end", observe(api)))
    return out


def _nesting_text(names: tuple[str, ...], raise_at: int | None) -> str:
    text = ""
    for depth, name in enumerate(names):
        text += f"{'    ' * depth}with {name}:\n"
        if raise_at == depth:
            text += f"{'    ' * (depth + 1)}raise an exception\n"
    return text


def check_nesting(ns: dict, names: tuple[str, ...] = GRAD_MANAGERS, depth: int = 3,
                  observe: Callable = observe_flags) -> None:
    """Every nesting of the named managers up to depth, with and without an exception at each level, as torch."""
    __tracebackhide__ = True
    ours = engine(ns)
    with checked(ns):
        for d in range(1, depth + 1):
            for combo in itertools.product(names, repeat=d):
                for raise_at in (None, *range(d)):
                    reset_modes(ns)
                    expected = trace(TORCH, combo, raise_at, observe)
                    try:
                        got = trace(ours, combo, raise_at, observe)
                    except Exception as error:  # noqa: BLE001 - report what the student's code raised
                        raise AssertionError(f"this nesting raised {type(error).__name__}: {error} (torch runs it; "
                                             f"only the raised exception may leave it):\n"
                                             f"{_nesting_text(combo, raise_at)}") from None
                    for (where, value), (_, want) in zip(got, expected):
                        assert value == want, (
                            f"{where}: got {value}, expected {want} as torch, observing {OBSERVED[observe]}, in\n"
                            f"{_nesting_text(combo, raise_at)}")
                    assert len(got) == len(expected), (
                        f"the exception was swallowed by a manager's __exit__ (it must reach the caller) in\n"
                        f"{_nesting_text(combo, raise_at)}")


def _decorator_forms(with_inference: bool) -> list[tuple[str, Callable[[dict], Callable]]]:
    forms = [("@no_grad", lambda m: m["no_grad"]), ("@no_grad()", lambda m: m["no_grad"]()),
             ("@enable_grad", lambda m: m["enable_grad"]), ("@enable_grad()", lambda m: m["enable_grad"]()),
             ("@set_grad_enabled(False)", lambda m: m["set_grad_enabled"](False)),
             ("@set_grad_enabled(True)", lambda m: m["set_grad_enabled"](True))]
    if with_inference:
        forms += [("@inference_mode", lambda m: m["inference_mode"]),
                  ("@inference_mode()", lambda m: m["inference_mode"]()),
                  ("@inference_mode(False)", lambda m: m["inference_mode"](False))]
    return forms


def _decorated_run(api: dict, make: Callable, with_inference: bool) -> tuple:
    observe = observe_inference if with_inference else observe_flags

    def body(n: int) -> list:
        if n > 0:
            return body(n - 1) + [observe(api)]      # recursion: the decorated function runs nested in itself
        return []

    before = observe(api)
    decorated = make(api)(body)
    after_decorating = observe(api)
    assert getattr(decorated, "__name__", None) == "body", "a decorated function keeps its name (functools.wraps)"
    outside = decorated(2)
    with api["no_grad"]():
        inside_no_grad = decorated(2)
    return before, after_decorating, outside, inside_no_grad, observe(api)


def check_decorators(ns: dict, with_inference: bool = False) -> None:
    """Each manager as a decorator (bare and called), run recursively, inside no_grad and outside; plain calls."""
    __tracebackhide__ = True
    ours = engine(ns)
    labels = ("the mode before decorating", "the mode right after decorating (a decorator changes nothing until "
              "the function runs)", "inside the decorated function (called twice, recursively)",
              "inside the decorated function called within no_grad", "the mode after the calls")
    with checked(ns):
        for name, make in _decorator_forms(with_inference):
            reset_modes(ns)
            expected = _decorated_run(TORCH, make, with_inference)
            got = _decorated_run(ours, make, with_inference)
            for label, g, e in zip(labels, got, expected):
                assert g == e, f"{name} on a function: {label}: got {g}, expected {e} as torch"
        for flag in (False, True, False):
            ours["set_grad_enabled"](flag)
            torch.set_grad_enabled(flag)
            assert ours["is_grad_enabled"]() == torch.is_grad_enabled() == flag, (
                f"set_grad_enabled({flag}) called as a plain statement: is_grad_enabled() is "
                f"{ours['is_grad_enabled']()}, expected {flag} (the constructor sets the mode)")


def _thread_run(api: dict, with_inference: bool) -> dict:
    seen: dict[str, Any] = {}
    started, resume = threading.Event(), threading.Event()

    def worker(tag: str) -> None:
        try:
            seen[f"{tag}: the new thread's (is_grad_enabled(), is_inference_mode_enabled()) at its start"] = (
                api["is_grad_enabled"](), api["is_inference_mode_enabled"]())
            with api["no_grad"]():
                seen[f"{tag}: the new thread's mode inside its no_grad"] = api["is_grad_enabled"]()
                started.set()
                resume.wait(10)
        except Exception as error:  # noqa: BLE001 - a thread's exception would go to stderr: record it instead
            seen[f"{tag}: an exception in the thread"] = repr(error)
            started.set()

    thread = threading.Thread(target=worker, args=("thread 1",), daemon=True)
    thread.start()
    started.wait(10)
    seen["the main thread's mode while thread 1 is inside no_grad"] = api["is_grad_enabled"]()
    resume.set()
    thread.join(10)
    started.clear()
    with api["no_grad"]():
        if with_inference:
            with api["inference_mode"]():
                thread = threading.Thread(target=worker, args=("thread 2, started inside inference_mode",),
                                          daemon=True)
                thread.start()
                thread.join(10)
        else:
            thread = threading.Thread(target=worker, args=("thread 2, started inside no_grad",), daemon=True)
            thread.start()
            thread.join(10)
        seen["the main thread's mode inside its no_grad, after thread 2 ended"] = api["is_grad_enabled"]()
    seen["the main thread's mode at the end"] = api["is_grad_enabled"]()
    return seen


def _interleaved_run(api: dict) -> dict:
    """The main thread is inside no_grad twice; a second thread enters no_grad; the main thread leaves its inner and
    outer blocks while the second is still inside; then the second leaves. Each block restores its own thread's mode."""
    seen: dict[str, Any] = {}
    inside, resume = threading.Event(), threading.Event()

    def worker() -> None:
        try:
            with api["no_grad"]():
                inside.set()
                resume.wait(10)
                seen["the second thread's mode inside its no_grad, after the main thread left both of its blocks"] = (
                    api["is_grad_enabled"]())
            seen["the second thread's mode after its no_grad"] = api["is_grad_enabled"]()
        except Exception as error:  # noqa: BLE001 - record a thread's exception
            seen["an exception in the second thread"] = repr(error)
            inside.set()

    thread = threading.Thread(target=worker, daemon=True)
    with api["no_grad"]():
        with api["no_grad"]():
            thread.start()
            inside.wait(10)
        seen["the main thread's mode after its inner no_grad, the second thread inside its own"] = api["is_grad_enabled"]()
    seen["the main thread's mode after its outer no_grad"] = api["is_grad_enabled"]()
    resume.set()
    thread.join(10)
    return seen


def check_threads(ns: dict, with_inference: bool = False) -> None:
    """Grad mode (and inference mode) are per thread: a new thread starts with the defaults, and affects no other."""
    __tracebackhide__ = True
    with checked(ns):
        expected = _thread_run(TORCH, with_inference)
        got = _thread_run(engine(ns), with_inference)
        expected |= _interleaved_run(TORCH)
        got |= _interleaved_run(engine(ns))
    for key, want in expected.items():
        assert got.get(key) == want, f"{key}: got {got.get(key)}, expected {want} as torch (modes are per thread)"
    extra = sorted(set(got) - set(expected))
    assert not extra, f"{extra[0]}: {got[extra[0]]}"


# -- inference tensors ----------------------------------------------------------------------------
def normalise(message: str) -> str:
    """torch's tensor descriptions and module names replaced by placeholders, so the two engines' texts compare."""
    message = re.sub(r"\[torch\.\w+ \[[\d, ]*\]\]", "[T]", message)
    message = re.sub(r"\[\w+ Tensor of shape \([\d, ]*\)\]", "[T]", message)
    message = message.replace("torch.autograd.set_detect_anomaly(True, check_nan=False)", "set_detect_anomaly(True)")
    return message.replace("torch.no_grad()", "no_grad()").replace("torch.inference_mode()", "inference_mode()")


def outcome(fn: Callable[[], Any]) -> tuple:
    """("ok", values...) or ("error", type, normalised message): the same shape for both engines."""
    try:
        result = fn()
    except Exception as error:  # noqa: BLE001 - the outcome is the error
        return ("error", type(error).__name__, normalise(str(error)))
    if result is None:
        return ("ok",)
    result = result if isinstance(result, tuple) else (result,)
    values: list[Any] = []
    for r in result:
        if isinstance(r, (str, bool, int, float)) or r is None:
            values.append(r)
        elif isinstance(r, torch.Tensor):
            values.append(r.detach().numpy().astype(np.float64))
        else:
            values.append(np.asarray(getattr(r, "data", r), dtype=np.float64))
    return ("ok",) + tuple(values)


def same(got: tuple, expected: tuple, rtol: float = 1e-9) -> bool:
    """Two outcomes agree: the same status and messages, and arrays equal within rtol (NaN equal to NaN)."""
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        if isinstance(e, np.ndarray) or isinstance(g, np.ndarray):
            if not (isinstance(g, np.ndarray) and isinstance(e, np.ndarray)) or g.shape != e.shape:
                return False
            if not np.allclose(g, e, rtol=rtol, atol=rtol, equal_nan=True):
                return False
        elif g != e or type(g) is not type(e) and not (isinstance(g, (int, float)) and isinstance(e, (int, float))):
            return False
    return True


def shown(result: tuple) -> str:
    """An outcome, readable in a message."""
    return repr(tuple(np.round(v, 6).tolist() if isinstance(v, np.ndarray) else v for v in result))[:600]


def compare_scenarios(ours: dict[str, Callable], theirs: dict[str, Callable], what: str, rtol: float = 1e-9,
                      messages: bool = True, words: tuple[str, ...] = ()) -> None:
    """Each scenario's outcome (values, or the error) in the engine equals torch's. Errors compare by type and by
    message (the messages the engine gives, word for word as torch's), or by type only where the student writes the
    message (messages=False) or torch words it its own way (the scenarios named in words)."""
    __tracebackhide__ = True
    for name in theirs:
        expected = outcome(theirs[name])
        got = outcome(ours[name])
        if expected[0] == "error" and (name in words or not messages):
            assert got[:2] == expected[:2], (f"{what}, scenario {name!r}: got {shown(got)}, expected torch's "
                                             f"{expected[1]} ({expected[2][:200]})")
            continue
        if expected[0] == "error" and got[0] == "error":
            assert got[1:] == expected[1:], (f"{what}, scenario {name!r}: the error is {got[1]}: {got[2]}\ntorch "
                                             f"raises {expected[1]}: {expected[2]}")
        assert same(got, expected, rtol), (f"{what}, scenario {name!r}: got {shown(got)}, expected {shown(expected)} "
                                           "as torch")


def inference_scenarios(api: dict) -> dict[str, Callable]:
    T = api["Tensor"]
    rng = np.random.default_rng(55)
    a = rng.normal(size=(2, 3))

    def made_inside():
        w = T(a, True)
        with api["inference_mode"]():
            t, y = T(a), w * 2.0
        return t.is_inference(), y.is_inference(), w.is_inference()

    def op_outside_on_inference_tensor():
        with api["inference_mode"]():
            t = T(a)
        u = t * 2.0
        return u.is_inference(), u.requires_grad, u

    def made_in_no_grad():
        with api["no_grad"]():
            t = T(a)
        return t.is_inference()

    def version_of_inference_tensor():
        with api["inference_mode"]():
            t = T(a)
        return t._version

    def version_of_normal_tensor():
        return T(a)._version

    def inside_then_enable_grad():
        w = T(a, True)
        with api["inference_mode"]():
            with api["enable_grad"]():
                y = w * 2.0
                flags = api["is_grad_enabled"](), api["is_inference_mode_enabled"]()
        return flags + (y.is_inference(),)

    def inference_false_inside():
        with api["inference_mode"]():
            with api["inference_mode"](False):
                t = T(a)
                flags = api["is_grad_enabled"](), api["is_inference_mode_enabled"]()
        return flags + (t.is_inference(),)

    return dict(made_inside=made_inside, op_outside_on_inference_tensor=op_outside_on_inference_tensor,
                made_in_no_grad=made_in_no_grad, version_of_inference_tensor=version_of_inference_tensor,
                version_of_normal_tensor=version_of_normal_tensor, inside_then_enable_grad=inside_then_enable_grad,
                inference_false_inside=inference_false_inside)


def check_inference_tensors(ns: dict) -> None:
    """Tensors made inside inference_mode are inference tensors (flags, versions, ops on them), as in torch."""
    __tracebackhide__ = True
    with checked(ns):
        compare_scenarios(inference_scenarios(engine(ns)), inference_scenarios(TORCH), "inference tensors")


# -- Function.apply -------------------------------------------------------------------------------
MODES = ("grad", "no_grad", "enable_grad inside no_grad", "inference_mode", "enable_grad inside inference_mode",
         "set_grad_enabled(False)")


@contextlib.contextmanager
def mode(api: dict, name: str) -> Iterator[None]:
    if name == "grad":
        yield
    elif name == "no_grad":
        with api["no_grad"]():
            yield
    elif name == "enable_grad inside no_grad":
        with api["no_grad"](), api["enable_grad"]():
            yield
    elif name == "inference_mode":
        with api["inference_mode"]():
            yield
    elif name == "enable_grad inside inference_mode":
        with api["inference_mode"](), api["enable_grad"]():
            yield
    else:
        with api["set_grad_enabled"](False):
            yield


def _probes(ns: dict) -> tuple[type, type, list, list]:
    Function = ns["Function"]
    seen_ours: list = []
    seen_torch: list = []

    class Probe(Function):
        """Records what ctx.needs_input_grad said in forward, and saves its three inputs."""

        @staticmethod
        def forward(ctx, a, b, c):
            seen_ours.append(tuple(bool(f) for f in ctx.needs_input_grad))
            ctx.save_for_backward(a, b, c)
            return a * b + c

        @staticmethod
        def backward(ctx, grad):
            a, b, c = ctx.saved_tensors
            return grad * b, grad * a, grad

    class TorchProbe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            seen_torch.append(tuple(bool(f) for f in ctx.needs_input_grad))
            return a * b + c

        @staticmethod
        def backward(ctx, grad):
            return None, None, None

    return Probe, TorchProbe, seen_ours, seen_torch


def check_apply_recording(ns: dict) -> None:
    """Who is recorded, in every mode and for every pattern of requires_grad, against torch; bytes on the meter."""
    __tracebackhide__ = True
    ours = engine(ns)
    meter = ns["saved_bytes"]
    Probe, TorchProbe, _, _ = _probes(ns)
    rng = np.random.default_rng(31)
    gc.collect()
    with checked(ns):
        for dtype in (np.float64, np.float32):
            arrays = [rng.normal(size=(2, 3)).astype(dtype) for _ in range(3)]
            for flags in itertools.product((False, True), repeat=3):
                for m in MODES:
                    xs = [ns["Tensor"](a.copy(), requires_grad=f) for a, f in zip(arrays, flags)]
                    ts = [torch.tensor(a, requires_grad=f) for a, f in zip(arrays, flags)]
                    where = (f"Probe.apply on inputs with requires_grad={flags}, {np.dtype(dtype).name}, in mode {m}")
                    with mode(ours, m):
                        before = meter()
                        out = Probe.apply(*xs)
                        grew = meter() - before
                        built = xs[0] * xs[1] + xs[2]
                    with mode(TORCH, m):
                        t_built = ts[0] * ts[1] + ts[2]
                        t_out = TorchProbe.apply(*ts)
                    # torch records custom Functions inside inference_mode + enable_grad; its built-in ops do not
                    want = (t_built.requires_grad, t_built.is_leaf, t_built.grad_fn is None)
                    for label, result in (("the output", out), ("x0 * x1 + x2 (built-in ops)", built)):
                        got = (result.requires_grad, result.is_leaf, result.grad_fn is None)
                        assert got == want, (f"{where}: {label} has (requires_grad, is_leaf, grad_fn is None) = {got}, "
                                             f"expected {want} as torch's built-in ops")
                    assert out.dtype == dtype, f"{where}: the output is {out.dtype}, expected {np.dtype(dtype).name}"
                    kept = sum(a.nbytes for a, f in zip(arrays, flags) if not f) if want[0] else 0
                    assert grew == kept, (f"{where}: the meter grew by {grew} bytes, expected {kept} (the arrays "
                                          "Probe saved, parameters' arrays excluded, and only for a recorded node: "
                                          "call keep_for_backward(node, inputs, out) after recording)")
                    if want[0]:
                        g = rng.normal(size=out.shape).astype(dtype)
                        out.backward(g)
                        expected = [g * arrays[1], g * arrays[0], g]
                        for i, (x, f) in enumerate(zip(xs, flags)):
                            if f:
                                check_close(f"{where}: input {i}'s .grad after backward", x.grad.data, expected[i],
                                            rtol=1e-5, atol=1e-6, against="the Probe's rule")
                            else:
                                assert x.grad is None, f"{where}: input {i} needs no gradient, but .grad is set"
                    del out, built, t_out, t_built
        # an input that is not a Tensor: TypeError (torch raises TypeError too)
        x = ns["Tensor"](np.ones(2), requires_grad=True)
        try:
            Probe.apply(x, 1.0, x)
        except TypeError:
            pass
        except Exception as error:  # noqa: BLE001 - say what was raised instead
            raise AssertionError(f"Probe.apply(x, 1.0, x) should raise TypeError (input 1 is not a Tensor), "
                                 f"raised {type(error).__name__}: {error}") from None
        else:
            raise AssertionError("Probe.apply(x, 1.0, x) should raise TypeError (input 1 is not a Tensor)")
        # an inference tensor that a recorded node must save: torch's error; one nobody saves: fine
        for op in ("mul", "add", "div"):
            results = []
            for api in (ours, TORCH):
                w = api["Tensor"](np.ones(3), True)
                with api["inference_mode"]():
                    t = api["Tensor"](np.full(3, 2.0))
                program = {"mul": lambda: (w * t).sum(), "add": lambda: (w + t).sum(), "div": lambda: (t / w).sum()}[op]

                def run():
                    y = program()
                    y.backward()
                    return w.grad
                results.append(outcome(run))
            assert same(results[0], results[1]), (f"w {op} t with t made inside inference_mode and w requiring grad, then "
                                              f"backward: got {shown(results[0])}, expected {shown(results[1])} as torch")
        # 0-d outputs: NumPy returns a scalar for a 0-d result, so unless apply makes the output's array the one the
        # rule saved (output_array), an in-place change of a 0-d output escapes section 6's version check (torch
        # raises: zero_d_scenarios, compared in check_version_errors)
        for dtype in (np.float64, np.float32):
            x = ours["Tensor"](np.array(0.5, dtype=dtype), True)
            v = ours["Tensor"](np.array([0.5, -1.0], dtype=dtype), True)
            for label, y in (("x.exp()", x.exp()), ("(x * 2.0).exp()", (x * 2.0).exp()), ("v.sum().exp()", v.sum().exp())):
                where = f"{label} for a 0-d {np.dtype(dtype).name} result"
                assert isinstance(y.data, np.ndarray) and y.data.dtype == dtype and y.shape == (), (
                    f"{where}: y.data is {type(y.data).__name__} {getattr(y.data, 'dtype', '')}, expected a 0-d "
                    f"{np.dtype(dtype).name} array")
                saved = [a for a in y.grad_fn.ctx._saved.arrays if a is not None]
                assert any(a is y.data for a in saved), (
                    f"{where}: Exp saved {[type(a).__name__ for a in saved]}, not the output's own array y.data, so an "
                    "in-place change of y would escape the version check (torch raises): make the output's array "
                    "with output_array(ctx, result)")


def zero_d_scenarios(api: dict) -> dict[str, Callable]:
    """A 0-d output saved by its node (Exp saves its output), changed in place or not, then backward."""
    T = api["Tensor"]

    def change(t, value):
        """t += value in place, counted as a version change (the in-place methods come after this exercise)."""
        if api["is_torch"]:
            t.add_(value)
        else:
            t.data += value
            t._version_counter.bump()

    def exp_changed():
        x = T(np.array(0.5), True)
        y = x.exp()
        change(y, 1.0)
        y.backward()

    def sum_then_exp_changed():
        x = T(np.array([0.5, -1.0]), True)
        y = x.sum().exp()
        change(y, 2.0)
        y.backward()

    def exp_float32_changed():
        x = T(np.array(0.5, dtype=np.float32), True)
        y = x.exp()
        change(y, -1.0)
        y.backward()

    def exp_unchanged():
        x = T(np.array(0.5), True)
        y = x.exp() * 2.0
        y.backward()
        return _grad(x)

    return dict(exp_changed=exp_changed, sum_then_exp_changed=sum_then_exp_changed,
                exp_float32_changed=exp_float32_changed, exp_unchanged=exp_unchanged)


def check_needs_input_grad(ns: dict) -> None:
    """ctx.needs_input_grad in forward is each input's requires_grad, as torch fills it, in every mode."""
    __tracebackhide__ = True
    ours = engine(ns)
    Probe, TorchProbe, seen_ours, seen_torch = _probes(ns)
    with checked(ns):
        for flags in itertools.product((False, True), repeat=3):
            for m in MODES:
                seen_ours.clear()
                seen_torch.clear()
                with mode(ours, m):
                    Probe.apply(*[ns["Tensor"](np.ones(2), requires_grad=f) for f in flags])
                with mode(TORCH, m):
                    TorchProbe.apply(*[torch.ones(2, requires_grad=f) for f in flags])
                assert seen_ours == seen_torch, (f"ctx.needs_input_grad seen in forward for inputs with "
                                                 f"requires_grad={flags}, in mode {m}: got {seen_ours[:1]}, expected "
                                                 f"{seen_torch[:1]} as torch")
        x = ns["Tensor"](np.ones(2), requires_grad=True)
        y = ns["Tensor"](np.ones(2))
        z = x * 2.0
        Probe.apply(z, y, x)
        assert seen_ours[-1:] == [(True, False, True)], (
            f"needs_input_grad with a non-leaf input that requires grad: got {seen_ours[-1:]}, expected "
            "[(True, False, True)]")


# -- detach and requires_grad_ --------------------------------------------------------------------
def detach_scenarios(api: dict) -> dict[str, Callable]:
    T = api["Tensor"]
    rng = np.random.default_rng(77)
    a = rng.normal(size=(2, 3))
    is_torch = api["is_torch"]

    def bump(t):
        if is_torch:
            t.mul_(1.0)
        else:
            t._version_counter.bump()

    def fields_nonleaf():
        x = T(a, True)
        d = (x * 2.0).detach()
        return d.requires_grad, d.is_leaf, d.grad_fn is None, d

    def fields_leaf():
        x = T(a, True)
        d = x.detach()
        return d.requires_grad, d.is_leaf, d.grad_fn is None, d is x, d

    def change_shows_through():
        x = T(a, True)
        y = x * 3.0
        d = y.detach()
        (d.data if not is_torch else d.data)[0, 1] = 100.0    # through the array: no version counted, in both
        return y, d, y._version

    def version_shared():
        x = T(a, True)
        y = x * 3.0
        d = y.detach()
        bump(d)
        bump(y)
        return y._version, d._version

    def gradient_stops_at_detach():
        x = T(a, True)
        y = x * x
        z = (y.detach() * y).sum()          # d/dx of (const * x^2): 2 x * const
        z.backward()
        return x.grad

    def detach_of_constant():
        c = T(a)
        d = c.detach()
        return d.requires_grad, d.is_leaf, d

    def detach_of_inference_tensor():
        with api["inference_mode"]():
            t = T(a)
        return t.detach().is_inference()

    def detach_float32():
        x = T(a.astype(np.float32), True)
        d = (x * 2.0).detach()
        return str(d.dtype).replace("torch.", ""), d

    def detach_under_no_grad():
        x = T(a, True)
        with api["no_grad"]():
            d = (x * 2.0).detach()
        return d.requires_grad, d.is_leaf

    return dict(fields_nonleaf=fields_nonleaf, fields_leaf=fields_leaf, change_shows_through=change_shows_through,
                version_shared=version_shared, gradient_stops_at_detach=gradient_stops_at_detach,
                detach_of_constant=detach_of_constant, detach_of_inference_tensor=detach_of_inference_tensor,
                detach_float32=detach_float32, detach_under_no_grad=detach_under_no_grad)


def check_detach(ns: dict) -> None:
    """detach against torch: same array, no history, shared version counter, inference flag kept."""
    __tracebackhide__ = True
    with checked(ns):
        compare_scenarios(detach_scenarios(engine(ns)), detach_scenarios(TORCH), "detach")
        x = ns["Tensor"](np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2.0
        d = y.detach()
        assert np.shares_memory(d.data, y.data), "y.detach() must share y's array (no copy)"


# -- in-place operations and versions -------------------------------------------------------------
def _grad(t: Any) -> Any:
    return None if t.grad is None else t.grad


def inplace_op_scenarios(api: dict, seed: int, dtype: Any = np.float64) -> dict[str, Callable]:
    rng = np.random.default_rng(seed)
    a, c = rng.normal(size=(2, 3)).astype(dtype), (rng.normal(size=(2, 3)) + 3.0).astype(dtype)
    T = api["Tensor"]

    def name_of(t):
        return t.grad_fn.name().split("::")[-1] if t.grad_fn is not None else None

    def safe_inplace_on_nonleaf():
        x, k = T(a, True), T(c)
        h = x * k
        h.mul_(3.0)
        h.add_(k)
        h.sub_(1.0)
        h.div_(2.0)
        (h * h).sum().backward()
        return _grad(x), h._version, name_of(h), h

    def mul_by_tensor_needing_grad():
        x, z = T(a, True), T(c, True)
        y = x * 1.0
        y.mul_(z)
        y.div_(z * z + 1.0)
        y.sum().backward()
        return _grad(x), _grad(z), y._version

    def augmented_assignment():
        x = T(a, True)
        y = x * 2.0
        y += 1                    # Python ints on the right of every augmented operator
        y *= x
        y -= x
        y /= 4
        y *= 3
        y.sum().backward()
        return _grad(x), y._version, name_of(y), y

    def zero_and_fill():
        x = T(a, True)
        y, z = x * 2.0, x * 3.0
        y.zero_()
        z.fill_(5.0)
        (y + z + x).sum().backward()
        return _grad(x), name_of(y), name_of(z), y._version, z._version

    def leaf_under_no_grad():
        x = T(a, True)
        with api["no_grad"]():
            x.mul_(2.0)
            x -= 1.0
        (x * x).sum().backward()
        return _grad(x), x._version, x.is_leaf, x

    def constant_changed_in_place():
        k = T(c)
        k.add_(1.0)
        k.mul_(T(a))
        return k._version, k.requires_grad, k.is_leaf, k

    def constant_times_tensor_needing_grad():
        k, x = T(c), T(a, True)
        k.mul_(x)
        k.sum().backward()
        return k.requires_grad, k.is_leaf, name_of(k), _grad(x), k._version

    def changed_but_no_backward():
        x = T(a, True)
        y = x.exp()
        y.add_(1.0)
        return y._version, y

    def changed_after_its_node_ran():
        x = T(a, True)
        y = x.exp()
        y.sum().backward(retain_graph=True)
        y.add_(1.0)
        return _grad(x), y._version

    def in_place_inside_inference_mode():
        with api["inference_mode"]():
            t = T(a)
            t.add_(1.0)
        return t

    return dict(safe_inplace_on_nonleaf=safe_inplace_on_nonleaf, mul_by_tensor_needing_grad=mul_by_tensor_needing_grad,
                augmented_assignment=augmented_assignment, zero_and_fill=zero_and_fill,
                leaf_under_no_grad=leaf_under_no_grad, constant_changed_in_place=constant_changed_in_place,
                constant_times_tensor_needing_grad=constant_times_tensor_needing_grad,
                changed_but_no_backward=changed_but_no_backward, changed_after_its_node_ran=changed_after_its_node_ran,
                in_place_inside_inference_mode=in_place_inside_inference_mode)


def check_inplace_ops(ns: dict) -> None:
    """In-place ops that are safe: values, versions, node names and gradients as torch, float64 and float32."""
    __tracebackhide__ = True
    with checked(ns):
        for seed, dtype in ((1, np.float64), (2, np.float32), (3, np.float64)):
            compare_scenarios(inplace_op_scenarios(engine(ns), seed, dtype), inplace_op_scenarios(TORCH, seed, dtype),
                              f"in-place ops ({np.dtype(dtype).name})", rtol=1e-9 if dtype == np.float64 else 1e-5)
        x = ns["Tensor"](np.ones(3), requires_grad=True)
        y = x * 2.0
        before = y.data
        assert y.add_(1.0) is y and y.data is before, "y.add_(1) must return y itself and keep its array (in place)"


def retain_stand_in(ns: dict) -> Callable[[Any], None]:
    """Exercise 6's retain_grad as that exercise specifies it (a hook on t.grad_fn adding into t.grad, and
    t._retains_grad), for Exercise 5's test cell, which runs before section 7 defines it."""
    Tensor = ns["Tensor"]

    def retain(t: Any) -> None:
        owner = weakref.ref(t)

        def hook(grad: np.ndarray) -> None:
            tensor = owner()
            if tensor is not None:
                tensor.grad = Tensor(np.array(grad, copy=True) if tensor.grad is None else tensor.grad.data + grad)

        t.grad_fn._retain_grad_hook = hook
        t._retains_grad = True

    return retain


@contextlib.contextmanager
def running_retain_hooks(Node: type) -> Iterator[None]:
    """Backward calls each node's retain hook (if any) on its gradient, then its rule: Exercise 6's call_node
    reduced to what retain_grad needs."""
    before = Node.__call__

    def call_with_retain_hook(node: Any, grad: np.ndarray) -> Any:
        hook = getattr(node, "_retain_grad_hook", None)
        if hook is not None:
            hook(grad)
        return node.apply(grad)

    Node.__call__ = call_with_retain_hook
    try:
        yield
    finally:
        Node.__call__ = before


def inplace_retained_scenarios(api: dict, seed: int, dtype: Any) -> dict[str, Callable]:
    """A tensor that retains its gradient, changed in place by each in-place operation of the chapter."""
    rng = np.random.default_rng(seed)
    shape = [(2, 3), (3,), ()][seed % 3]
    a, c, w = (np.asarray(rng.normal(size=shape) + s).astype(dtype) for s in (0.0, 3.0, 0.0))
    T, retain = api["Tensor"], api["retain"]
    ops: dict[str, Callable[[Any], Any]] = {
        "add_(scalar)": lambda y: y.add_(1.5),
        "sub_(tensor)": lambda y: y.sub_(T(c)),
        "mul_(scalar)": lambda y: y.mul_(3.0),
        "div_(tensor)": lambda y: y.div_(T(c)),
        "zero_()": lambda y: y.zero_(),
        "fill_(2.5)": lambda y: y.fill_(2.5),
        "+= 1": lambda y: y.__iadd__(1),
        "-= tensor": lambda y: y.__isub__(T(c)),
        "*= -2.0": lambda y: y.__imul__(-2.0),
        "/= 4": lambda y: y.__itruediv__(4),
    }
    scenarios: dict[str, Callable] = {}

    def one(op: Callable[[Any], Any]) -> Callable:
        def run():
            x = T(a, True)
            y = x * T(c)
            retain(y)
            op(y)
            (y * T(w)).sum().backward()
            return _grad(y), _grad(x), y._version
        return run

    for name, op in ops.items():
        scenarios[f"y = x * k; retain y; y.{name}"] = one(op)

    def mul_by_tensor_needing_grad():
        x, z = T(a, True), T(c, True)
        y = x * 2.0
        retain(y)
        y.mul_(z)
        (y * T(w)).sum().backward()
        return _grad(y), _grad(x), _grad(z)

    def two_inplace_ops():
        x = T(a, True)
        y = x * 2.0
        retain(y)
        y.mul_(3.0)
        y.add_(T(c))
        (y * y).sum().backward()
        return _grad(y), _grad(x)

    def used_before_and_after():
        x = T(a, True)
        y = x * 2.0
        retain(y)
        before = y.tanh()                         # reads y's old value: its gradient goes to the old node
        y.mul_(3.0)
        (before.sum() + (y * T(w)).sum()).backward()
        return _grad(y), _grad(x)

    def accumulates_over_two_backward_calls():
        x = T(a, True)
        y = x * 2.0
        retain(y)
        y.mul_(T(c))
        z = (y * T(w)).sum()
        z.backward(retain_graph=True)
        z.backward()
        return _grad(y), _grad(x)

    def retained_after_the_inplace_op():
        x = T(a, True)
        y = x * 2.0
        y.mul_(3.0)
        retain(y)
        (y * T(w)).sum().backward()
        return _grad(y), _grad(x)

    def inplace_under_no_grad():
        x = T(a, True)
        y = x * 2.0
        retain(y)
        with api["no_grad"]():
            y.mul_(3.0)                           # nothing recorded: y keeps its node, and the hook stays there
        (y * T(w)).sum().backward()
        return _grad(y), _grad(x)

    def not_retained():
        x = T(a, True)
        y = x * 2.0
        y.mul_(3.0)
        (y * T(w)).sum().backward()
        return _grad(y), _grad(x)

    scenarios.update(mul_by_tensor_needing_grad=mul_by_tensor_needing_grad, two_inplace_ops=two_inplace_ops,
                     used_before_and_after=used_before_and_after,
                     accumulates_over_two_backward_calls=accumulates_over_two_backward_calls,
                     retained_after_the_inplace_op=retained_after_the_inplace_op,
                     inplace_under_no_grad=inplace_under_no_grad, not_retained=not_retained)
    return scenarios


def check_inplace_retained(ns: dict) -> None:
    """A tensor that retains its gradient and is then changed in place, against torch: its retain hook moves to the
    new node (torch's rebase_history), so y.grad is the gradient of y's new value, for every in-place operation."""
    __tracebackhide__ = True
    ours = dict(engine(ns), retain=retain_stand_in(ns))
    theirs = dict(TORCH, retain=lambda t: t.retain_grad())
    with checked(ns), running_retain_hooks(ns["Node"]):
        for seed, dtype in ((1, np.float64), (2, np.float32), (3, np.float64), (4, np.float32)):
            compare_scenarios(inplace_retained_scenarios(ours, seed, dtype),
                              inplace_retained_scenarios(theirs, seed, dtype),
                              f"in-place ops on a tensor that retains its gradient ({np.dtype(dtype).name})",
                              rtol=1e-9 if dtype == np.float64 else 1e-5)


def inplace_refusal_scenarios(api: dict) -> dict[str, Callable]:
    T = api["Tensor"]
    a = np.arange(6.0).reshape(2, 3)

    def leaf_requiring_grad():
        T(a, True).add_(1.0)

    def leaf_requiring_grad_iadd():
        x = T(a, True)
        x += 1.0

    def leaf_under_enable_grad():
        x = T(a, True)
        with api["no_grad"](), api["enable_grad"]():
            x.mul_(2.0)

    def leaf_under_set_grad_enabled_false():
        x = T(a, True)
        with api["set_grad_enabled"](False):
            x.zero_()
        return x, x._version

    def broadcast_into_smaller():
        x = T(a[0], True)
        y = x * 2.0
        y.add_(T(np.ones((2, 3))))

    def inference_tensor_outside():
        with api["inference_mode"]():
            t = T(a)
        t.mul_(2.0)

    def inference_tensor_under_no_grad():
        with api["inference_mode"]():
            t = T(a)
        with api["no_grad"]():
            t.mul_(2.0)

    def inference_leaf_requiring_grad():
        with api["inference_mode"]():
            t = T(a)
            t.requires_grad_()
        t.add_(1.0)               # two refusals apply: torch names the leaf that requires grad

    def inference_leaf_requiring_grad_no_grad():
        with api["inference_mode"]():
            t = T(a)
            t.requires_grad_()
        with api["no_grad"]():
            t.add_(1.0)           # no_grad lifts the leaf's refusal; the inference tensor's remains

    def leaf_of_inference_mode():
        x = T(a, True)
        with api["inference_mode"]():
            x.add_(1.0)
        return x

    return dict(leaf_requiring_grad=leaf_requiring_grad, leaf_requiring_grad_iadd=leaf_requiring_grad_iadd,
                leaf_under_enable_grad=leaf_under_enable_grad,
                leaf_under_set_grad_enabled_false=leaf_under_set_grad_enabled_false,
                broadcast_into_smaller=broadcast_into_smaller, inference_tensor_outside=inference_tensor_outside,
                inference_tensor_under_no_grad=inference_tensor_under_no_grad,
                inference_leaf_requiring_grad=inference_leaf_requiring_grad,
                inference_leaf_requiring_grad_no_grad=inference_leaf_requiring_grad_no_grad,
                leaf_of_inference_mode=leaf_of_inference_mode)


def check_inplace_refusals(ns: dict) -> None:
    """What torch refuses (a leaf that requires grad while recording, inference tensors outside) and allows."""
    __tracebackhide__ = True
    with checked(ns):
        compare_scenarios(inplace_refusal_scenarios(engine(ns)), inplace_refusal_scenarios(TORCH), "in-place refusals",
                          messages=False)
        # where two refusals apply, the one torch raises: the leaf's, or the inference tensor's
        ours, theirs = inplace_refusal_scenarios(engine(ns)), inplace_refusal_scenarios(TORCH)

        def which(result: tuple) -> tuple:
            text = str(result[2]).lower() if result[0] == "error" else ""
            return result[:2] + ("leaf" in text, "inference" in text)

        for name in ("inference_leaf_requiring_grad", "inference_leaf_requiring_grad_no_grad"):
            got, expected = outcome(ours[name]), outcome(theirs[name])
            assert which(got) == which(expected), (
                f"in-place refusals, scenario {name!r} (two refusals apply): got {shown(got)}, expected torch's "
                f"{shown(expected)}")


def check_inplace_shapes(ns: dict) -> None:
    """An in-place operation whose broadcast result has another shape than t (generated shapes: 0-d, size-1 and
    empty axes, a longer or a wider other operand), on a constant, a non-leaf and a leaf under no_grad, against
    torch: RuntimeError, and t's values and version unchanged."""
    __tracebackhide__ = True
    from hypothesis import strategies as st

    from autograde.hidden.strategies import broadcastable_pairs, float_dtypes, for_all

    ours = engine(ns)
    growing = broadcastable_pairs(max_dims=3, max_side=3).filter(lambda s: np.broadcast_shapes(*s) != tuple(s[0]))

    def run(api: dict, shapes: tuple, op: str, kind: str, dtype: Any, seed: int) -> tuple:
        rng = np.random.default_rng(seed)
        a = np.asarray(rng.normal(size=shapes[0])).astype(dtype)
        b = np.asarray(rng.uniform(0.5, 2.0, size=shapes[1])).astype(dtype)
        T = api["Tensor"]
        if kind == "a non-leaf":
            t = T(a, True) * 2.0
        else:
            t = T(a, kind == "a leaf that requires grad, under no_grad")
        before = t._version
        with api["no_grad"]() if kind.endswith("under no_grad") else contextlib.nullcontext():
            result = outcome(lambda: getattr(t, op)(T(b)))
        data = t.detach().numpy() if api["is_torch"] else t.data
        status = result[:2] if result[0] == "error" else ("ok",)   # the type of the error, not its words
        return status, np.array(data, dtype=np.float64), t._version - before

    with checked(ns):
        @for_all(examples=20, shapes=growing, op=st.sampled_from(["add_", "sub_", "mul_", "div_"]),
                 kind=st.sampled_from(["a constant", "a non-leaf", "a leaf that requires grad, under no_grad"]),
                 dtype=float_dtypes(), seed=st.integers(0, 2 ** 16))
        def _(shapes, op, kind, dtype, seed):
            got = run(ours, shapes, op, kind, dtype, seed)
            expected = run(TORCH, shapes, op, kind, dtype, seed)
            where = (f"t.{op}(other) for t {kind} of shape {shapes[0]} and other of shape {shapes[1]} "
                     f"({np.dtype(dtype).name}; the result would have shape {np.broadcast_shapes(*shapes)})")
            assert got[0] == expected[0], f"{where}: got {got[0]}, expected torch's {expected[0]} (the shapes differ)"
            assert got[1].shape == expected[1].shape and np.array_equal(got[1], expected[1], equal_nan=True), (
                f"{where}: t changed to {np.round(got[1], 6).tolist()}; torch leaves it as it was")
            assert got[2] == expected[2], f"{where}: t's version grew by {got[2]}; torch's by {expected[2]}"


def version_error_scenarios(api: dict, seed: int, dtype: Any = np.float64) -> dict[str, Callable]:
    rng = np.random.default_rng(seed)
    a, c = rng.normal(size=(3,)).astype(dtype), (rng.normal(size=(3,)) + 3.0).astype(dtype)
    T = api["Tensor"]

    def output_changed():
        x = T(a, True)
        y = x.exp()
        y.add_(1.0)
        y.sum().backward()

    def saved_constant_changed():
        x, k = T(a, True), T(c)
        y = x * k
        k.mul_(2.0)
        y.sum().backward()

    def saved_input_changed_twice():
        x = T(a, True)
        h = x * 1.0
        y = h * x
        h.add_(1.0)
        h.mul_(2.0)
        y.sum().backward()

    def changed_through_detach():
        x = T(a, True)
        e = x.exp()
        e.detach().add_(1.0)
        e.sum().backward()

    def changed_under_no_grad():
        x = T(a, True)
        y = x.tanh()
        with api["no_grad"]():
            y.mul_(2.0)
        y.sum().backward()

    def step_before_backward():
        w = T(c, True)
        x = T(a, True)            # x needs a gradient, so Mul saves w for it (with or without Exercise 7's rules)
        loss = (x * w).sum()
        with api["no_grad"]():
            w.sub_(0.1)
        loss.backward()

    def changed_then_unused():
        x, k = T(a, True), T(c)
        y = x + k                 # add saves nothing: changing k is harmless
        k.mul_(2.0)
        y.sum().backward()
        return _grad(x)

    def changed_in_a_branch_not_saved():
        x = T(a, True)
        h = x * 2.0
        y = h.exp()               # exp saves its output, not h
        h.add_(1.0)
        y.sum().backward()
        return _grad(x)

    def other_operand_changed_after_inplace():
        x, w = T(a, True), T(c, True)
        y = x * 1.0
        z = w * 1.0
        y.mul_(z)                 # Mul saved y's old value (a private copy) and z: only y's record goes
        z.add_(1.0)               # z changed after it was saved: backward must refuse
        y.sum().backward()

    def other_operand_changed_0d():
        x, w = T(a[0], True), T(c[0], True)
        y = x * 1.0
        z = w * 1.0
        y.mul_(z)
        z.mul_(2.0)
        y.backward()

    def other_operand_unchanged_0d():
        x, w = T(a[0], True), T(c[0], True)
        y = x * 1.0
        z = w * 1.0
        y.mul_(z)
        y.backward()
        return _grad(x), _grad(w)

    return dict(output_changed=output_changed, saved_constant_changed=saved_constant_changed,
                other_operand_changed_after_inplace=other_operand_changed_after_inplace,
                other_operand_changed_0d=other_operand_changed_0d,
                other_operand_unchanged_0d=other_operand_unchanged_0d,
                saved_input_changed_twice=saved_input_changed_twice, changed_through_detach=changed_through_detach,
                changed_under_no_grad=changed_under_no_grad, step_before_backward=step_before_backward,
                changed_then_unused=changed_then_unused, changed_in_a_branch_not_saved=changed_in_a_branch_not_saved)


def check_version_errors(ns: dict) -> None:
    """backward checks the versions of what each node saved: torch's error, word for word, or torch's gradients."""
    __tracebackhide__ = True
    with checked(ns):
        compare_scenarios(zero_d_scenarios(engine(ns)), zero_d_scenarios(TORCH), "version check (0-d outputs)")
        for seed, dtype in ((4, np.float64), (5, np.float32)):
            compare_scenarios(version_error_scenarios(engine(ns), seed, dtype),
                              version_error_scenarios(TORCH, seed, dtype), f"version check ({np.dtype(dtype).name})",
                              rtol=1e-9 if dtype == np.float64 else 1e-5)
        # the optimiser's step updates in place (torch's SGD runs param.add_(grad, alpha=-lr) under no_grad): a graph
        # that saved the parameter before the step raises at backward
        texts = []
        for api in (engine(ns), TORCH):
            w, h = api["Tensor"](np.ones((3, 3)), True), api["Tensor"](np.ones((2, 3)), True)
            out = (h @ w).sum()
            w.grad = api["Tensor"](np.ones((3, 3)))
            if api["is_torch"]:
                with torch.no_grad():
                    w.sub_(0.1 * w.grad)
            else:
                ns["SGD"]([w], lr=0.1).step()
            texts.append(outcome(out.backward))
        assert same(texts[0], texts[1]), (f"backward after SGD(...).step() changed a saved weight: got "
                                          f"{shown(texts[0])}, expected {shown(texts[1])} as torch")


# -- hooks, retain_grad, anomaly mode -------------------------------------------------------------
def hook_scenarios(api: dict) -> dict[str, Callable]:
    T = api["Tensor"]
    is_torch = api["is_torch"]

    def array(g):
        return np.array(g.detach().numpy() if is_torch else g.data, dtype=np.float64).copy()

    def leaf_hook_replaces_before_accumulation():
        x = T(np.ones(3), True)
        seen = []
        h1 = x.register_hook(lambda g: seen.append(array(g)))
        h2 = x.register_hook(lambda g: g * 10.0)
        (x * 2.0).sum().backward()
        first = x.grad
        h2.remove()
        x.grad = None
        (x * 2.0).sum().backward()
        h1.remove()
        (x * 2.0).sum().backward()
        return first, x.grad, np.array(seen)

    def hooks_run_in_registration_order():
        x = T(np.ones(2), True)
        calls = []
        x.register_hook(lambda g: calls.append("first") or g + 1.0)
        x.register_hook(lambda g: calls.append("second") or g * 3.0)
        (x * 1.0).sum().backward()
        return ",".join(calls), x.grad

    def nonleaf_hook_flows_on():
        x = T(np.arange(3.0), True)
        y = x * 2.0
        seen = []
        y.register_hook(lambda g: seen.append(array(g)))
        y.register_hook(lambda grad: grad * 100.0)
        (y * y).sum().backward()
        return x.grad, np.array(seen), y.grad is None

    def hook_once_on_summed_gradient():
        x = T(np.ones(3), True)
        y = x * 2.0
        calls = []
        y.register_hook(lambda g: calls.append(array(g)))
        (y + y * y).sum().backward()
        return float(len(calls)), np.array(calls), x.grad

    def hook_returns_none_keeps_gradient():
        x = T(np.arange(3.0), True)
        x.register_hook(lambda g: None)
        (x * x).sum().backward()
        return x.grad

    def removed_inside_a_with():
        x = T(np.ones(2), True)
        with x.register_hook(lambda g: g * 0.0):
            pass
        (x * 4.0).sum().backward()
        return x.grad

    def hook_on_leaf_used_twice():
        x = T(np.arange(3.0), True)
        calls = []
        x.register_hook(lambda g: calls.append(1) or g * 2.0)
        (x * x).sum().backward()
        return float(len(calls)), x.grad

    def hook_not_called_without_gradient():
        x, w = T(np.ones(3), True), T(np.ones(3), True)
        calls = []
        x.register_hook(lambda g: calls.append(1))
        _unused = x * 2.0
        (w * 3.0).sum().backward()
        return float(len(calls)), x.grad is None

    def hook_changes_shape():
        x = T(np.ones(3), True)
        y = x * 2.0

        def hook(g):
            return T(np.ones(4))
        y.register_hook(hook)
        y.sum().backward()

    def hook_changes_dtype():
        x = T(np.ones(3, dtype=np.float32), True)
        y = x * 2.0

        def hook(g):
            return T(np.ones(3))          # float64 for a float32 gradient: torch refuses
        y.register_hook(hook)
        y.sum().backward()

    def hook_changes_dtype_0d():
        x = T(np.array(1.0, dtype=np.float32), True)

        def hook(g):
            return T(np.array(2.0))
        x.register_hook(hook)
        (x * 3.0).backward()

    def hook_on_leaf_root_0d():
        x = T(np.array(2.0), True)
        x.register_hook(lambda g: g * 3.0)
        x.backward()                      # the leaf is the root: its hook runs on the seed gradient 1
        return x.grad

    def hook_on_constant():
        T(np.ones(3)).register_hook(lambda g: g)

    def float32_gradient():
        x = T(np.ones(3, dtype=np.float32), True)
        x.register_hook(lambda g: g * 0.5)
        (x * 3.0).sum().backward()
        return str(x.grad.dtype).replace("torch.", ""), x.grad

    return dict(leaf_hook_replaces_before_accumulation=leaf_hook_replaces_before_accumulation,
                hooks_run_in_registration_order=hooks_run_in_registration_order,
                nonleaf_hook_flows_on=nonleaf_hook_flows_on, hook_once_on_summed_gradient=hook_once_on_summed_gradient,
                hook_returns_none_keeps_gradient=hook_returns_none_keeps_gradient,
                removed_inside_a_with=removed_inside_a_with, hook_on_leaf_used_twice=hook_on_leaf_used_twice,
                hook_not_called_without_gradient=hook_not_called_without_gradient,
                hook_changes_shape=hook_changes_shape, hook_changes_dtype=hook_changes_dtype,
                hook_changes_dtype_0d=hook_changes_dtype_0d, hook_on_leaf_root_0d=hook_on_leaf_root_0d,
                hook_on_constant=hook_on_constant,
                float32_gradient=float32_gradient)


def check_hooks(ns: dict) -> None:
    """register_hook against torch: what a hook sees, what it replaces, when it runs, and remove()."""
    __tracebackhide__ = True
    with checked(ns):
        compare_scenarios(hook_scenarios(engine(ns)), hook_scenarios(TORCH), "hooks", messages=False)


def retain_scenarios(api: dict) -> dict[str, Callable]:
    T = api["Tensor"]

    def retained():
        x = T(np.arange(3.0), True)
        y = x * 2.0
        y.retain_grad()
        z = y * y
        z.sum().backward()
        return y.grad, y.retains_grad, z.grad is None, z.retains_grad

    def retain_then_hook():
        x = T(np.ones(3), True)
        y = x * 2.0
        y.retain_grad()
        y.register_hook(lambda grad: grad * 100.0)
        (y * 3.0).sum().backward()
        return y.grad, x.grad

    def hook_then_retain():
        x = T(np.ones(3), True)
        y = x * 2.0
        y.register_hook(lambda grad: grad * 100.0)
        y.retain_grad()
        (y * 3.0).sum().backward()
        return y.grad, x.grad

    def retained_grad_accumulates():
        x = T(np.arange(3.0), True)
        y = x * 2.0
        y.retain_grad()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        z.backward()
        return y.grad, x.grad

    def retained_twice_counts_once():
        x = T(np.arange(3.0), True)
        y = x * 2.0
        y.retain_grad()
        y.retain_grad()
        (y * y).sum().backward()
        return y.grad

    def on_leaf():
        x = T(np.arange(3.0), True)
        r = x.retain_grad()
        (x * x).sum().backward()
        return r is None, x.retains_grad, x.grad

    def on_constant():
        T(np.ones(3)).retain_grad()

    def not_retained():
        x = T(np.ones(3), True)
        y = x * 2.0
        (y * y).sum().backward()
        return y.grad is None, y.retains_grad

    def retained_float32():
        x = T(np.ones(3, dtype=np.float32), True)
        y = x * 2.0
        y.retain_grad()
        (y * y).sum().backward()
        return str(y.grad.dtype).replace("torch.", ""), y.grad

    return dict(retained=retained, retain_then_hook=retain_then_hook, hook_then_retain=hook_then_retain,
                retained_grad_accumulates=retained_grad_accumulates, retained_twice_counts_once=retained_twice_counts_once,
                on_leaf=on_leaf, on_constant=on_constant, not_retained=not_retained, retained_float32=retained_float32)


def check_retain_grad(ns: dict) -> None:
    """retain_grad against torch: non-leaves keep .grad, after every other hook, accumulating; and the node does
    not keep its own output alive (a cycle would hold the graph's saved bytes until the collector runs)."""
    __tracebackhide__ = True
    with checked(ns):
        compare_scenarios(retain_scenarios(engine(ns)), retain_scenarios(TORCH), "retain_grad", messages=False)
        Tensor, saved_bytes = ns["Tensor"], ns["saved_bytes"]
        for shape in ((3,), ()):
            was_enabled = gc.isenabled()
            gc.collect()
            gc.disable()
            try:
                x, k = Tensor(np.ones(shape), requires_grad=True), Tensor(np.full(shape, 2.0))
                base = saved_bytes()
                y = x * k
                y.retain_grad()
                held = saved_bytes() - base
                del y
                left = saved_bytes() - base
            finally:
                if was_enabled:
                    gc.enable()
            assert held > 0 and left == 0, (
                f"y = x * k (shape {shape}), y.retain_grad(), del y: {left} of the {held} saved bytes are still held "
                "without the garbage collector: retain_grad's hook keeps y alive (reach y through weakref.ref)")


def check_anomaly(ns: dict) -> None:
    """Anomaly mode against torch.autograd.detect_anomaly: the NaN message names the node and output; the engine
    adds where forward created it (the function and line of the forward call)."""
    __tracebackhide__ = True
    Function, Tensor, detect_anomaly = ns["Function"], ns["Tensor"], ns["detect_anomaly"]

    class NanBack(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g, g * np.nan

    torch_nan_back = type("NanBack", (torch.autograd.Function,), {
        "forward": staticmethod(lambda ctx, x, w: x * w),
        "backward": staticmethod(lambda ctx, g: (g, g * float("nan")))})

    def forward_that_makes_nan(x, w):
        return NanBack.apply(x, w).sum()

    def forward_dividing_zero(x):
        h = x * 1.0
        return (h / h).sum()

    def error(fn):
        try:
            fn()
        except RuntimeError as e:
            return str(e)
        return "no error"

    def forward_squaring_0d(x):
        h = x * 1.0
        return h * h, h

    with checked(ns):
        cases = [("a custom Function whose rule returns NaN for its second input", forward_that_makes_nan,
                  lambda t: torch_nan_back.apply(*t).sum(), 2),
                 ("0 / 0 (the gradient of the divisor is NaN)", forward_dividing_zero,
                  lambda t: ((t[0] * 1.0) / (t[0] * 1.0)).sum(), 1)]
        for label, forward, torch_forward, n in cases:
            for dtype in (np.float64, np.float32):
                xs = [Tensor(np.zeros(3, dtype=dtype) if n == 1 else np.ones(3, dtype=dtype), requires_grad=True)
                      for _ in range(n)]
                ts = [torch.tensor(x.data, requires_grad=True) for x in xs]
                with detect_anomaly():
                    y = forward(*xs)
                    ours = error(y.backward)
                with torch.autograd.detect_anomaly():
                    ty = torch_forward(ts)
                    theirs = error(ty.backward)
                assert ours.split(" The forward call")[0] == theirs, (
                    f"{label}, in anomaly mode: the error says\n  {ours[:300]}\ntorch says\n  {theirs}")
                assert forward.__name__ in ours, (
                    f"{label}: the error must say where forward created the node (the creation site, recorded in "
                    f"forward): {forward.__name__!r} is not in\n  {ours[:600]}")
                assert not ns["is_anomaly_enabled"](), "anomaly mode is still on after the with block"
                # without anomaly mode the NaN flows silently, in both
                xs = [Tensor(x.data.copy(), requires_grad=True) for x in xs]
                y = forward(*xs)
                assert error(y.backward) == "no error", f"{label}: outside anomaly mode backward must not raise"
                assert np.isnan(xs[-1].grad.data).all(), f"{label}: outside anomaly mode the NaN reaches .grad"
        # check_nan=False: anomaly mode records creation sites but lets NaN through, in both
        for dtype in (np.float64, np.float32):
            xs = [Tensor(np.ones(3, dtype=dtype), requires_grad=True) for _ in range(2)]
            ts = [torch.tensor(x.data, requires_grad=True) for x in xs]
            with detect_anomaly(check_nan=False):
                ours = error(forward_that_makes_nan(*xs).backward)
            with torch.autograd.detect_anomaly(check_nan=False):
                theirs = error(torch_nan_back.apply(*ts).sum().backward)
            assert ours == theirs == "no error", (
                f"detect_anomaly(check_nan=False) with a rule returning NaN: got {ours[:300]!r}, torch: {theirs!r}")
            assert np.isnan(xs[-1].grad.data).all(), "with check_nan=False the NaN reaches .grad, as in torch"
        x = Tensor(np.array(0.5), requires_grad=True)
        with ns["set_detect_anomaly"](True, check_nan=False):
            y, h = forward_squaring_0d(x)
            h.add_(1.0)
            message = error(y.backward)
        assert "modified by an inplace operation" in message and "forward_squaring_0d" in message, (
            "with set_detect_anomaly(True, check_nan=False) a version error still says where forward created the "
            f"node; got\n  {message[:600]}")
        assert not ns["is_anomaly_enabled"](), "anomaly mode is still on after set_detect_anomaly's block"
        # a version error inside anomaly mode names where forward created the failing node
        x = Tensor(np.ones(3), requires_grad=True)

        def forward_with_exp(x):
            return x.exp()

        with detect_anomaly():
            y = forward_with_exp(x)
            y.add_(1.0)
            message = error(lambda: y.sum().backward())
        assert "modified by an inplace operation" in message and "forward_with_exp" in message, (
            f"a version error in anomaly mode must add where forward created the node; got\n  {message[:600]}")
        # no NaN: anomaly mode changes nothing
        x = Tensor(np.arange(3.0), requires_grad=True)
        with detect_anomaly():
            (x * x).sum().backward()
        check_close("x.grad of sum(x * x) computed in anomaly mode", x.grad.data, 2 * np.arange(3.0),
                    against="2x (anomaly mode only checks)")
