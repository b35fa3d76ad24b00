"""The grader's side of a graded kernel: what runs, silently, when the kernel starts and around each test cell.

The grader (autograde.grader.steps.contained_execute) calls, through the kernel:
- start() once, before any student code: remembers the builtins as they are;
- before_test(references) before each test cell: puts the builtins back, makes the test cell import
  course.checking afresh, and, for isolation, runs the reference solution of the chapter's other
  exercises (their answer cells' code, given as source) in the notebook's namespace, so the test
  grades the student's code of this exercise on top of correct code for everything else;
- after_test() after it: undoes everything before_test changed (names, class attributes, registry
  entries), so the cells after it run on the student's own code again.

So one bug costs one exercise: a mistake in an earlier exercise cannot fail the test of a later one.
"""
from __future__ import annotations

import builtins
import sys
from typing import Any

_BUILTINS: dict[str, Any] = {}
_PENDING: list["Snapshot"] = []
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, whose attributes can be set


def start() -> None:
    """Remember the builtins before any student code has run."""
    _BUILTINS.clear()
    _BUILTINS.update(vars(builtins))


def _restore_builtins() -> None:
    current = vars(builtins)
    for name in [n for n in current if n not in _BUILTINS]:
        del current[name]
    for name, value in _BUILTINS.items():
        if current.get(name) is not value:
            current[name] = value


def _namespace() -> dict[str, Any]:
    from IPython import get_ipython

    return get_ipython().user_ns


def _engine_modules() -> list[Any]:
    """The course's reference modules loaded in this kernel: their classes and registries may be extended."""
    return [m for name, m in list(sys.modules.items()) if name.startswith("course.reference.") and m is not None]


class Snapshot:
    """Names of a namespace, attributes of the classes and contents of the dicts reachable from it, to put back."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.names = dict(ns)
        self.swapped: set[str] = set()
        """the names the swap itself changed: only these are put back (a test cell's own names stay)"""
        self.classes: dict[type, dict[str, Any]] = {}
        self.dicts: dict[int, tuple[dict, dict]] = {}
        values = list(ns.values())
        for module in _engine_modules():
            values += list(vars(module).values())
        for value in values:
            if isinstance(value, type) and value.__flags__ & _HEAP_TYPE:
                for cls in value.__mro__:
                    if cls.__flags__ & _HEAP_TYPE and cls not in self.classes:
                        self.classes[cls] = dict(vars(cls))
            elif type(value) is dict and value is not ns:
                self.dicts.setdefault(id(value), (value, dict(value)))

    def restore(self) -> None:
        for cls, attrs in self.classes.items():
            current = dict(vars(cls))
            for name in current.keys() - attrs.keys():
                try:
                    delattr(cls, name)
                except (AttributeError, TypeError):
                    pass
            for name, value in attrs.items():
                if current.get(name, _MISSING) is not value:
                    try:
                        setattr(cls, name, value)
                    except (AttributeError, TypeError):
                        pass
        for d, saved in self.dicts.values():
            if d.keys() != saved.keys() or any(d[k] is not v for k, v in saved.items()):
                d.clear()
                d.update(saved)
        for name in self.swapped:
            if name in self.names:
                self.ns[name] = self.names[name]
            else:
                self.ns.pop(name, None)

    def note_swap(self) -> None:
        """Record which names the swap changed (call right after it)."""
        self.swapped = {n for n in set(self.ns) | set(self.names)
                        if self.ns.get(n, _MISSING) is not self.names.get(n, _MISSING)}


_MISSING = object()


def _rebound(value: Any, new: type, old: type) -> Any:
    """value (a method of class new) made to work as a method of class old: zero-argument super() included."""
    import types

    if isinstance(value, types.FunctionType) and "__class__" in value.__code__.co_freevars:
        cells = tuple(types.CellType(old) if name == "__class__" and cell.cell_contents is new else cell
                      for name, cell in zip(value.__code__.co_freevars, value.__closure__))
        fixed = types.FunctionType(value.__code__, value.__globals__, value.__name__, value.__defaults__, cells)
        fixed.__kwdefaults__, fixed.__dict__ = value.__kwdefaults__, dict(value.__dict__)
        fixed.__qualname__, fixed.__doc__ = value.__qualname__, value.__doc__
        return fixed
    if isinstance(value, (classmethod, staticmethod)):
        return type(value)(_rebound(value.__func__, new, old))
    if isinstance(value, property):
        return property(*(_rebound(f, new, old) if f else None for f in (value.fget, value.fset, value.fdel)),
                        value.__doc__)
    return value


def _transplant(new: type, old: type) -> None:
    """Give the existing class old the attributes of new (same name), so its subclasses made since behave as new."""
    for name, value in vars(new).items():
        if name in ("__dict__", "__weakref__"):
            continue
        try:
            setattr(old, name, _rebound(value, new, old))
        except (AttributeError, TypeError):
            pass


def before_test(references: list[str] | tuple[str, ...] = ()) -> None:
    """Prepare a test cell: builtins back, course.checking fresh, the reference for the other exercises swapped in."""
    after_test()  # a test cell that never finished leaves nothing behind
    _restore_builtins()
    for name in [m for m in sys.modules if m == "course.checking"]:
        sys.modules.pop(name, None)
    if not references:
        return
    ns = _namespace()
    snapshot = Snapshot(ns)
    _PENDING.append(snapshot)
    for code in references:
        before = dict(ns)
        try:
            exec(compile(code, "<reference of another exercise>", "exec"), ns)  # noqa: S102 - the course's own code
        except Exception:  # noqa: BLE001 - a reference that cannot run here leaves the student's code in place
            pass
        # a class the student's code already subclassed (rules built on their Function) takes the reference's
        # methods in place, so those subclasses run on the reference too; the snapshot puts the methods back
        for name, value in list(ns.items()):
            old = before.get(name)
            if (isinstance(value, type) and isinstance(old, type) and value is not old and old in snapshot.classes
                    and value.__flags__ & _HEAP_TYPE):
                _transplant(value, old)
                ns[name] = old
    snapshot.note_swap()


def after_test() -> None:
    """Undo what before_test swapped in."""
    while _PENDING:
        _PENDING.pop().restore()
