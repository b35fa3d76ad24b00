"""Hidden-test helpers of ch01_chain_rule: torch's answers and the checks the hidden test cells share.

Imported by the hidden regions of the chapter's test cells at grading time (never shipped to students).
Every check raises AssertionError with a message written for the student (course.checking), prints nothing,
and runs torch with its warnings silenced.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import torch

from autograde.hidden.checks import check_close


EXAMPLE1_ADJOINTS = ("f", "a", "x1", "x2")
EXAMPLE2_ADJOINTS = ("dL_dy", "dL_dh", "dL_da", "dL_dx", "dL_dW1", "dL_dW2")


def _float64(values: Any) -> tuple[torch.Tensor, ...]:
    return tuple(torch.tensor(np.asarray(v, dtype=np.float64)) for v in values)


def torch_gradient(fn: Callable[[torch.Tensor], torch.Tensor], x: np.ndarray) -> np.ndarray:
    """Gradient of the scalar fn at x by torch.autograd.grad, in float64."""
    t = torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (grad,) = torch.autograd.grad(fn(t), t)
    return grad.numpy()


JVP = "torch's jvp (torch.autograd.functional.jvp)"


def torch_jvp(fn: Callable[..., torch.Tensor], primals: Any, tangents: Any) -> tuple[np.ndarray, np.ndarray]:
    """Value and tangent of fn at primals in the direction tangents, by torch's jvp in float64.

    torch.autograd.functional.jvp (the double-backward trick) rather than torch.func.jvp: the latter's first
    tensor + Python-number under forward AD imports torch._dynamo, 3-7 s per graded kernel; both give J v.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch may warn about its own internals on first use
        value, tangent = torch.autograd.functional.jvp(fn, _float64(primals), _float64(tangents))
    return value.detach().numpy(), tangent.detach().numpy()


def check_dual(dual_type: type, label: str, compute: Callable[[], Any], value: Any, tangent: Any,
               rtol: float = 1e-10, atol: float = 1e-12) -> None:
    """Assert compute() returns a dual_type with torch's value and tangent; an exception is reported as such."""
    __tracebackhide__ = True
    try:
        got = compute()
    except Exception as exc:  # noqa: BLE001 - the student's operator raised: say where, and what torch gives
        raise AssertionError(f"{label} raised {type(exc).__name__}: {exc}; {JVP} gives value "
                             f"{float(value):.10g} and tangent {float(tangent):.10g}") from None
    assert isinstance(got, dual_type), f"{label} should return a Dual, got {type(got).__name__}: {got!r:.100}"
    check_close(f"{label}: value", got.value, value, rtol=rtol, atol=atol, against=JVP)
    check_close(f"{label}: tangent", got.tangent, tangent, rtol=rtol, atol=atol, against=JVP)


def check_dual_cases(dual_type: type, cases: list[tuple[str, Callable]], points: list[tuple[float, ...]]) -> None:
    """Each case (label, expression of one or two Duals) against torch's jvp at each point.

    A point is (a, da) or (a, da, b, db); the expression gets one Dual per (value, tangent) pair, and must
    leave its operands unchanged. Torch evaluates it once per case, on tensors that hold every point.
    """
    __tracebackhide__ = True
    pairs = [[(float(point[i]), float(point[i + 1])) for i in range(0, len(point), 2)] for point in points]
    columns = np.array(pairs, dtype=np.float64)  # (point, operand, value or tangent)
    for label, expression in cases:
        values, tangents = torch_jvp(expression, list(columns[:, :, 0].T), list(columns[:, :, 1].T))
        for k, operands in enumerate(pairs):
            duals = [dual_type(v, t) for v, t in operands]
            shown = ", ".join(f"Dual({v:.4g}, {t:.4g})" for v, t in operands)
            where = f"{label} at {shown}"
            check_dual(dual_type, where, lambda: expression(*duals), values[k], tangents[k])
            after = [(d.value, d.tangent) for d in duals]
            assert after == operands, (f"{where}: an operand changed to {after}; every operation must return a "
                                       "new Dual and leave its operands alone")


def counted(f: Callable) -> tuple[Callable, list[int]]:
    """f wrapped so that each call is recorded (the list of calls is returned with it)."""
    calls: list[int] = []

    def wrapper(x):
        calls.append(1)
        return f(x)

    return wrapper, calls


def torch_example1(x1: float, x2: float) -> tuple[float, dict[str, float]]:
    """f = (x1 + x2) * x1 and the adjoints of f, a, x1, x2 by torch.autograd.grad."""
    t1, t2 = (torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in (x1, x2))
    a = t1 + t2
    f = a * t1
    grads = torch.autograd.grad(f, (f, a, t1, t2))
    return f.item(), {name: g.item() for name, g in zip(EXAMPLE1_ADJOINTS, grads)}


def torch_example2(x: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    """L = sum((W2 @ sigmoid(W1 @ x))**2) and the adjoints of y, h, a, x, W1, W2 by torch.autograd.grad."""
    tx, tW1, tW2 = (torch.tensor(np.asarray(t, dtype=np.float64), requires_grad=True) for t in (x, W1, W2))
    a = tW1 @ tx
    h = torch.sigmoid(a)
    y = tW2 @ h
    L = torch.sum(y ** 2)
    grads = torch.autograd.grad(L, (y, h, a, tx, tW1, tW2))
    return L.item(), {name: g.numpy() for name, g in zip(EXAMPLE2_ADJOINTS, grads)}


def check_adjoints(label: str, result: Any, expected_value: float, expected: dict[str, Any],
                   rtol: float = 1e-10, atol: float = 1e-12) -> None:
    """Assert result is (value, adjoints) with the expected value and every expected adjoint (values and shapes)."""
    __tracebackhide__ = True
    assert isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict), (
        f"{label} should return a tuple (value, adjoints) with adjoints a dict, got {result!r:.200}")
    value, adjoints = result
    missing = [name for name in expected if name not in adjoints]
    assert not missing, f"{label}: the adjoints dict lacks {missing}; it has {sorted(map(str, adjoints))}"
    check_close(f"the value of {label}", value, expected_value, rtol=rtol, atol=atol, against="torch")
    for name, e in expected.items():
        check_close(f"the adjoint {name} of {label}", adjoints[name], e, rtol=rtol, atol=atol,
                    against="torch.autograd.grad")

