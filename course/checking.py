"""Assertion helpers for the notebooks' tests, with messages a student can act on.

Every helper raises AssertionError (never prints to stderr, which nbgrader would
score as a failure) with a message that says what was checked, what was
expected, what was got, and where. The helpers set __tracebackhide__, so
IPython shows the failing line of the test cell, not the helper's own frames.
A visible test ends with passed(...): one line that says it passed.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["to_numpy", "check_close", "check_shape", "check_equal", "check_raises", "check_choice", "passed"]


def to_numpy(value: Any) -> np.ndarray:
    """Return value as an ndarray; accepts ndarrays, Python numbers, sequences and torch tensors."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _fmt(x: Any) -> str:
    """A short, readable rendering of one value for a message."""
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.10g}"
    return repr(x)


def check_shape(name: str, got: Any, expected_shape: tuple[int, ...]) -> None:
    """Assert that got has exactly expected_shape."""
    __tracebackhide__ = True
    shape = tuple(to_numpy(got).shape)
    assert shape == tuple(expected_shape), (
        f"{name} has the wrong shape: got {shape}, expected {tuple(expected_shape)}"
    )


def check_close(name: str, got: Any, expected: Any, *, rtol: float = 1e-7, atol: float = 1e-9,
                against: str = "torch") -> None:
    """Assert got equals expected elementwise within atol + rtol*|expected|, naming the first bad index.

    `against` names where the expected value came from, for the message
    (torch, the worked example, the formula...).
    """
    __tracebackhide__ = True
    assert got is not None, f"{name} is None: did the function return its result?"
    g = to_numpy(got)
    e = to_numpy(expected)
    if g.dtype == object:
        raise AssertionError(f"{name} should be numbers, got {type(got).__name__}: {got!r:.200}")
    check_shape(name, g, e.shape)
    g = g.astype(np.float64)
    e = e.astype(np.float64)
    if np.isnan(g).any() and not np.isnan(e).any():
        bad = tuple(int(i) for i in np.argwhere(np.isnan(g))[0])
        where = f" at index {bad}" if g.ndim else ""
        raise AssertionError(f"{name} is NaN{where}, expected {_fmt(e[bad])} from {against}")
    close = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return
    bad_idx = np.argwhere(~close)
    first = tuple(int(i) for i in bad_idx[0])
    where = f" at index {first}" if g.ndim else ""
    more = f" ({len(bad_idx)} of {g.size} entries differ)" if g.size > 1 else ""
    raise AssertionError(
        f"{name} differs from {against}{where}: got {_fmt(g[first])}, expected {_fmt(e[first])}"
        f"{more}; tolerance atol={atol:g}, rtol={rtol:g}"
    )


def check_equal(name: str, got: Any, expected: Any) -> None:
    """Assert got == expected for plain values (ints, strings, tuples, dicts)."""
    __tracebackhide__ = True
    assert got == expected, f"{name}: got {got!r}, expected {expected!r}"


def check_raises(name: str, exc_type: type[BaseException] | tuple[type[BaseException], ...],
                 call: Callable[[], Any]) -> BaseException:
    """Assert that call() raises exc_type; return the exception so its message can be checked."""
    __tracebackhide__ = True
    try:
        result = call()
    except exc_type as exc:  # the expected outcome
        return exc
    except Exception as exc:  # noqa: BLE001 - we report whatever else happened
        expected = exc_type.__name__ if isinstance(exc_type, type) else " or ".join(t.__name__ for t in exc_type)
        raise AssertionError(f"{name} should raise {expected}, but raised {type(exc).__name__}: {exc}") from None
    expected = exc_type.__name__ if isinstance(exc_type, type) else " or ".join(t.__name__ for t in exc_type)
    raise AssertionError(f"{name} should raise {expected}, but returned {result!r:.200}")


def check_choice(name: str, answer: Any, choices: str) -> None:
    """Assert a multiple-choice answer is one of the letters in choices (e.g. "abcd")."""
    __tracebackhide__ = True
    assert isinstance(answer, str) and len(answer.strip()) == 1 and answer.strip().lower() in choices, (
        f"{name} should be one letter out of {', '.join(repr(c) for c in choices)}; got {answer!r}"
    )


def passed(what: str) -> None:
    """Say in one line that the visible checks of `what` passed (and that grading adds hidden ones)."""
    print(f"Visible checks of {what} passed. (When graded, hidden tests also compare it with PyTorch.)")
