"""Assertion helpers for the notebooks' tests, with messages a student can act on.

Every helper raises AssertionError (never prints to stderr, which nbgrader would
score as a failure) with a message that says what was checked, what was
expected, what was got, and where. The helpers set __tracebackhide__, and the
error they raise renders its own traceback in IPython (_render_traceback_)
without the frames that set it: a student sees the failing line of the test
cell and the message, not this module's code. (IPython alone would still show
the innermost frame, the helper's raise statement.)
A visible test ends with passed(...): one line that says it passed.

A demo cell that runs the student's code wraps it in `with needs("exercise 3, Dual"):`:
while that exercise still raises NotImplementedError, the cell says so in one
line instead of a traceback (the cell still counts as an error, so Run All stops there).

A given cell that puts the student's code into the engine (a method on Tensor, a rule in a registry)
installs `answer_or_reference("backward", reference.backward, "exercise 5")` instead: while the
exercise is still its stub, the course's reference stands in for it (the cell says so in one line), and
from the moment the student's answer exists the engine calls it, without running the given cell again.
So an unfinished exercise never breaks the cells after it. `current_or_reference` does the same once,
for what must be an object now (a class to subclass); `is_stub` says whether code is still a stub.
"""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
import traceback
import weakref
from contextlib import contextmanager
from types import CodeType, FunctionType, TracebackType
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["to_numpy", "failure", "check_close", "check_shape", "check_equal", "check_raises", "check_choice", "passed",
           "needs", "NotAnsweredYet", "is_stub", "raised_by_stub", "answer_or_reference", "current_or_reference"]


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


def _without_hidden_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback tb less the frames of functions that set __tracebackhide__ = True (these helpers)."""
    kept = []
    while tb is not None:
        if tb.tb_frame.f_locals.get("__tracebackhide__") is not True:
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for frame in reversed(kept):
        out = TracebackType(out, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return out


def _render_without_helpers(error: BaseException) -> list[str]:
    """error's traceback as IPython would show it, without the helpers' frames (IPython's _render_traceback_)."""
    tb = _without_hidden_frames(error.__traceback__)
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is None:
        return traceback.format_exception(type(error), error, tb)
    return shell.InteractiveTB.structured_traceback(type(error), error, tb)


def failure(message: str) -> AssertionError:
    """An AssertionError with message whose traceback, in IPython, leaves out every helper's frame."""
    error = AssertionError(message)
    error._render_traceback_ = lambda: _render_without_helpers(error)  # type: ignore[attr-defined]
    return error


def check_shape(name: str, got: Any, expected_shape: tuple[int, ...]) -> None:
    """Assert that got has exactly expected_shape."""
    __tracebackhide__ = True
    shape = tuple(to_numpy(got).shape)
    if shape != tuple(expected_shape):
        raise failure(f"{name} has the wrong shape: got {shape}, expected {tuple(expected_shape)}")


def check_close(name: str, got: Any, expected: Any, *, rtol: float = 1e-7, atol: float = 1e-9,
                against: str = "torch") -> None:
    """Assert got equals expected elementwise within atol + rtol*|expected|, naming the first bad index.

    `against` names where the expected value came from, for the message
    (torch, the worked example, the formula...).
    """
    __tracebackhide__ = True
    if got is None:
        raise failure(f"{name} is None: did the function return its result?")
    g = to_numpy(got)
    e = to_numpy(expected)
    if g.dtype == object:
        raise failure(f"{name} should be numbers, got {type(got).__name__}: {got!r:.200}")
    check_shape(name, g, e.shape)
    g = g.astype(np.float64)
    e = e.astype(np.float64)
    if np.isnan(g).any() and not np.isnan(e).any():
        bad = tuple(int(i) for i in np.argwhere(np.isnan(g))[0])
        where = f" at index {bad}" if g.ndim else ""
        raise failure(f"{name} is NaN{where}, expected {_fmt(e[bad])} from {against}")
    close = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return
    bad_idx = np.argwhere(~close)
    first = tuple(int(i) for i in bad_idx[0])
    where = f" at index {first}" if g.ndim else ""
    more = f" ({len(bad_idx)} of {g.size} entries differ)" if g.size > 1 else ""
    raise failure(
        f"{name} differs from {against}{where}: got {_fmt(g[first])}, expected {_fmt(e[first])}"
        f"{more}; tolerance atol={atol:g}, rtol={rtol:g}"
    )


def check_equal(name: str, got: Any, expected: Any) -> None:
    """Assert got == expected for plain values (ints, strings, tuples, dicts)."""
    __tracebackhide__ = True
    if not got == expected:
        raise failure(f"{name}: got {got!r}, expected {expected!r}")


def check_raises(name: str, exc_type: type[BaseException] | tuple[type[BaseException], ...],
                 call: Callable[[], Any]) -> BaseException:
    """Assert that call() raises exc_type; return the exception so its message can be checked."""
    __tracebackhide__ = True
    types = exc_type if isinstance(exc_type, tuple) else (exc_type,)
    try:
        result = call()
    except exc_type as exc:  # the expected outcome, unless it is an unanswered exercise's NotImplementedError
        if raised_by_stub(exc) and not any(issubclass(t, NotImplementedError) for t in types):
            raise failure(f"{name}: {_raised_in(exc.__traceback__)} still raises NotImplementedError (an exercise "
                          "left as its stub), so this check cannot tell anything yet: write it first") from None
        return exc
    except Exception as exc:  # noqa: BLE001 - we report whatever else happened
        raise failure(f"{name} should raise {' or '.join(t.__name__ for t in types)}, but raised "
                      f"{type(exc).__name__}: {exc}") from None
    raise failure(f"{name} should raise {' or '.join(t.__name__ for t in types)}, but returned {result!r:.200}")


def check_choice(name: str, answer: Any, choices: str) -> None:
    """Assert a multiple-choice answer is one of the letters in choices (e.g. "abcd")."""
    __tracebackhide__ = True
    if not (isinstance(answer, str) and len(answer.strip()) == 1 and answer.strip().lower() in choices):
        raise failure(f"{name} should be one letter out of {', '.join(repr(c) for c in choices)}; got {answer!r}")


def passed(what: str) -> None:
    """Say in one line that the visible checks of `what` passed (and that grading adds hidden ones)."""
    print(f"Visible checks of {what} passed. (When graded, hidden tests also compare it with PyTorch.)")


class NotAnsweredYet(NotImplementedError):
    """An exercise that a demo cell needs still raises NotImplementedError; IPython shows this in one line."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook for an exception's own traceback: the message alone, no frames."""
        return [f"{type(self).__name__}: {self}"]


def _last_code(tb: TracebackType | None) -> CodeType | None:
    """The code of the function in which a traceback ends (where the error was raised)."""
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code


def _raised_in(tb: TracebackType | None) -> str:
    """The qualified name of the function in which a traceback ends (where the error was raised)."""
    code = _last_code(tb)
    return "?" if code is None else getattr(code, "co_qualname", code.co_name)


@contextmanager
def needs(exercise: str = "") -> Iterator[None]:
    """Run a demo cell's code; if an unanswered exercise raises NotImplementedError, say which in one line.

        with needs("exercise 3, Dual"):
            print(Dual(1.0, 2.0) * Dual(3.0, 4.0))

    The function that raised is named too (Dual.__mul__); without `exercise` it alone is named.
    """
    __tracebackhide__ = True
    try:
        yield
    except NotAnsweredYet:
        raise
    except NotImplementedError as error:
        function = _raised_in(error.__traceback__)
        detail = f" ({error})" if str(error) else ""
        what = f"{exercise}: {function} still raises" if exercise else f"{function}, which still raises"
        raise NotAnsweredYet(f"this cell needs {what} NotImplementedError{detail}. "
                             "Write it, run its cell, then run this cell again.") from None


# -- stubs and stand-ins ------------------------------------------------------------------------------------
def _raises_not_implemented(node: ast.stmt) -> bool:
    exc = node.exc if isinstance(node, ast.Raise) else None
    if isinstance(exc, ast.Call):
        exc = exc.func
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


@functools.lru_cache(maxsize=4096)
def _stub_code(code: CodeType) -> bool:
    """Whether a function's code is a stub: its body, after the docstring, only raises NotImplementedError
    (comments, `pass` and `...` aside). Code without source (made by exec, a lambda) is not a stub."""
    if code.co_name == "<lambda>":
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = [s for s in tree.body[0].body
            if not (isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and _raises_not_implemented(body[0])


def raised_by_stub(error: BaseException | None) -> bool:
    """Whether error is a NotImplementedError raised by a stub (the function it was raised in is one, as is_stub
    tells), not by finished code that raises NotImplementedError on purpose."""
    code = _last_code(error.__traceback__) if isinstance(error, NotImplementedError) else None
    return code is not None and _stub_code(code)


def _functions_of(value: Any) -> list[Any]:
    """The plain functions behind a function, method, classmethod/staticmethod or property."""
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset) if f is not None]
    value = inspect.unwrap(value) if callable(value) else value
    return [value] if hasattr(value, "__code__") else []


_STUB_OF: "weakref.WeakKeyDictionary[Any, tuple[CodeType, bool]]" = weakref.WeakKeyDictionary()
"""function -> (its code when last looked at, whether that code is a stub): a stand-in asks on every call."""


def _stub_function(f: Any) -> bool:
    code = f.__code__
    seen = _STUB_OF.get(f)
    if seen is not None and seen[0] is code:
        return seen[1]
    stub = _stub_code(code)
    try:
        _STUB_OF[f] = (code, stub)
    except TypeError:
        pass
    return stub


def is_stub(answer: Any) -> bool:
    """Whether an exercise's answer is still its stub: a function whose body only raises NotImplementedError,
    or a class one of whose own methods is such a function. A missing answer (None) counts as a stub."""
    if answer is None:
        return True
    if isinstance(answer, type):
        return any(_stub_function(f) for v in vars(answer).values() for f in _functions_of(v))
    if type(answer) is FunctionType and "__wrapped__" not in answer.__dict__:  # the common case, fast
        return _stub_function(answer)
    return any(_stub_function(f) for f in _functions_of(answer))


def _graded_now() -> tuple[str, ...]:
    """The names graded by the test cell now running under the grader (its harness says), else ().

    Under the grading command the harness is private to the kernel and answers an audit event (a notebook cannot
    change its answer); the in-process checks of the course's own tests import it as a module."""
    box: list = []
    sys.audit("autograde.graded_now", box)
    if box:
        return tuple(box[0])
    harness = sys.modules.get("autograde.hidden.harness")
    state = getattr(harness, "_STATE", None)
    return tuple(state.get("own", ())) if isinstance(state, dict) else ()


def _say_stands_in(name: str, exercise: str) -> None:
    print(f"{exercise} ({name}) is not answered yet: the course's reference stands in for it until it is.")


def answer_or_reference(name: str, reference: Callable, exercise: str,
                        namespace: dict[str, Any] | None = None) -> Callable:
    """A function to install in the engine in place of the student's `name` (looked up in the notebook's
    namespace, by default the caller's globals, at every call): the student's answer once it is no longer a
    stub, the reference until then. Says so in one line if the answer is a stub now. Under the grader, the
    test cell of the exercise itself always gets the student's code (a stub raises), so the stand-in never
    earns its points."""
    ns = namespace if namespace is not None else sys._getframe(1).f_globals
    if is_stub(ns.get(name)):
        _say_stands_in(name, exercise)

    written: list = [None, None]  # the function last found written, and its code: while both are unchanged,
    # it is called at once (graded or not, a written answer is what runs), without the stub and grader checks

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        answer = ns.get(name)
        if answer is written[0] is not None and answer.__code__ is written[1]:
            return answer(*args, **kwargs)
        if name in _graded_now():
            if answer is None:
                raise NotImplementedError(f"{name} is not defined")
            return answer(*args, **kwargs)
        if is_stub(answer):
            return reference(*args, **kwargs)
        if type(answer) is FunctionType:
            written[:] = answer, answer.__code__
        return answer(*args, **kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = f"The notebook's {name} once answered, the course's reference until then ({exercise})."
    return stand_in


def current_or_reference(name: str, reference: Any, exercise: str, namespace: dict[str, Any] | None = None) -> Any:
    """The student's `name` if it is answered, else the reference (said in one line): for what a given cell
    needs as an object now, such as a class to subclass. Run the cell again once the exercise is answered."""
    ns = namespace if namespace is not None else sys._getframe(1).f_globals
    answer = ns.get(name)
    if is_stub(answer):
        _say_stands_in(name, exercise)
        return reference
    return answer


def rule_or_reference(answer: type, reference: type | None, exercise: str) -> type:
    """What to register for an operation whose rule `answer` (a class used through its classmethod `apply`, such
    as a Function) is an exercise: the answer itself once it is written; while it is a stub, a stand-in (a
    subclass of it) whose `apply` runs an earlier chapter's rule `reference` (said in one line) and the answer as
    soon as its methods are written; where there is no earlier rule, the stub itself (it raises). Under the
    grader, the test cell that grades `answer` always gets the answer's own code."""
    if reference is None or not is_stub(answer):
        return answer
    print(f"{exercise} ({answer.__name__}) is not answered yet: the earlier chapter's rule stands in until it is.")

    def apply(cls: type, *inputs: Any, **settings: Any) -> Any:
        own = answer.__name__ in _graded_now() or not is_stub(answer)
        return (answer if own else reference).apply(*inputs, **settings)

    return type(answer.__name__, (answer,), {"apply": classmethod(apply), "__module__": answer.__module__,
                                             "__doc__": f"{answer.__name__} once answered, else {reference.__name__} "
                                                        f"of an earlier chapter ({exercise})."})
