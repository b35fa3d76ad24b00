"""The grader's side of a graded kernel: what runs, silently, when the kernel starts and around each test cell.

The grader (autograde.grader.steps.contained_execute) calls it through the kernel's user_expressions, which
IPython evaluates without its input transformers, so a student's hook cannot blank these calls:
- start(blocked) once, before any student code: remembers the builtins, the interpreter's and IPython's hooks,
  and the attributes of the modules tests rely on (numpy, math, torch...); and makes the reference modules
  of this chapter and later ones unimportable (an import gets a module that raises, and is reported);
- before_test(plan) before each test cell:
  * puts back every hook, builtin, module attribute and sys.modules entry a student changed, and names it
    (an input transformer or a patched numpy.allclose then does nothing);
  * checks that the graded names of the cell's own exercise were defined by a cell of the notebook (their
    code says where it came from), not imported from the reference engine or made by exec;
  * runs the reference solution of the chapter's other exercises in the notebook's namespace (isolation:
    one bug costs one exercise), a class the student's code already subclassed taking the reference's
    methods in place;
  * tells the stand-ins of course.checking.answer_or_reference which names the cell grades: those always
    run the student's code, so a stub never earns points through the reference that stands in for it;
  * wraps the graded names so that a torch operation inside them raises (the tests use torch; graded code
    may not), unless the exercise is about torch;
  * keeps the test cell's own source out of IPython's history and linecache, so student code it calls
    cannot read the hidden tests back;
- after_test() after it: undoes the swap and the wrappers, frees what a failed cell's traceback kept alive
  (release_failure) and reports the torch calls the guard stopped;
- file_writes() at the end: where the notebook wrote files (an audit hook, installed by start, sees every open
  for writing), so that a small notes file in the kernel's own folder stays out of the report.
Each call returns a JSON string the grader turns into incidents.
"""
from __future__ import annotations

import builtins
import functools
import json
import linecache
import operator
import os
import sys
import types
from typing import Any

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, whose attributes can be set
_MISSING = object()
_IS = operator.is_  # bound when the harness arrives, before any student code runs
GUARDED_MODULES = ("numpy", "math", "torch", "functorch", "hypothesis", "sys", "builtins", "importlib",
                   "inspect", "functools", "operator", "warnings", "contextlib", "types", "gc", "threading", "_thread")
"""Packages whose modules a test may rely on (torch's and NumPy's oracles: torch.amp.GradScaler,
torch.utils.checkpoint.checkpoint, numpy.isclose...; the standard library the harness and helpers use): every
module of them loaded when the kernel starts is remembered, with the classes each defines, and put back
before every test cell if a student changed one (course.checking needs no guard: test cells import it afresh)."""
HARMLESS_TORCH = frozenset({"__get__", "__repr__", "__str__", "__format__"})
"""Torch calls graded code may make on tensors a test hands it: reading attributes (grad_fn, shape) and printing."""


class AutograderIntegrityError(RuntimeError):
    """Raised inside graded code that does what graded code may not (here: use torch)."""


_STATE: dict[str, Any] = {}
_PENDING: list[Any] = []  # undo actions of the current test cell, last first
_BLOCKED_IMPORTS: list[tuple[str, int]] = []  # (module, execution count of the cell) since the last report


class _ReferenceBlocker:
    """A meta path finder that hands out a module that raises for this chapter's and later chapters' reference."""

    def __init__(self, blocked: tuple[str, ...]) -> None:
        self.blocked = tuple(blocked)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not any(name == b or name.startswith(b + ".") for b in self.blocked):
            return None
        import importlib.util

        # IPython counts a cell before running it: the cell running now has the count before
        _BLOCKED_IMPORTS.append((name, int(getattr(_shell(), "execution_count", 1) or 1) - 1))
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> Any:
        module = types.ModuleType(spec.name)
        message = (f"{spec.name} is the reference solution of this or a later chapter: graded notebooks cannot "
                   "import it; write the code yourself")

        def missing(attr: str) -> Any:
            if attr.startswith("__"):
                raise AttributeError(attr)
            raise AutograderIntegrityError(message)

        module.__getattr__ = missing
        return module

    def exec_module(self, module: Any) -> None:
        pass


# -- what start() remembers, and how before_test() puts it back ---------------------------------------
def _shell():
    from IPython import get_ipython

    return get_ipython()


def _hook_lists(shell) -> dict[str, list]:
    """The lists in which IPython and the interpreter keep hooks that change how code runs."""
    tm = shell.input_transformer_manager
    out = {"IPython input_transformers_cleanup": shell.input_transformers_cleanup,
           "IPython input_transformers_post": shell.input_transformers_post,
           "IPython ast_transformers": shell.ast_transformers,
           "IPython input transformer (line)": tm.line_transforms,
           "IPython input transformer (cleanup)": tm.cleanup_transforms,
           "IPython input transformer (token)": tm.token_transformers,
           "sys.meta_path": sys.meta_path, "sys.path_hooks": sys.path_hooks, "sys.path": sys.path}
    for event, callbacks in shell.events.callbacks.items():
        out[f"IPython event callback ({event})"] = callbacks
    return out


def _hook_values(shell) -> dict[str, tuple[Any, str]]:
    """Single hooks: (owner, attribute) -> value."""
    return {"sys.displayhook": (sys, "displayhook"), "sys.excepthook": (sys, "excepthook"),
            "sys.breakpointhook": (sys, "breakpointhook"), "IPython displayhook": (shell, "displayhook"),
            "IPython display_formatter": (shell, "display_formatter"), "IPython compile": (shell, "compile"),
            "IPython history_manager": (shell, "history_manager"), "IPython user_ns": (shell, "user_ns"),
            "IPython custom_exceptions": (shell, "custom_exceptions"), "IPython CustomTB": (shell, "CustomTB"),
            "IPython InteractiveTB": (shell, "InteractiveTB")}


_WRITTEN: set[str] = set()   # absolute paths the kernel opened for writing since start()
_MOST_WRITTEN = 10_000       # a notebook that opens more for writing is not told apart from one that hides a write
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _audit(event: str, args: tuple) -> None:
    """sys.addaudithook's hook: remember each path opened for writing (never raises, keeps 10,000 at most)."""
    if event != "open" or len(_WRITTEN) >= _MOST_WRITTEN:
        return
    try:
        path, mode, flags = args
        if (mode and any(c in mode for c in "wax+")) or (not mode and isinstance(flags, int) and flags & _WRITE_FLAGS):
            if isinstance(path, (str, bytes, os.PathLike)):
                _WRITTEN.add(os.path.abspath(os.fsdecode(path)))
    except Exception:  # noqa: BLE001 - an audit hook must never break the code it watches
        pass


def file_writes() -> str:
    """Where the notebook wrote since start(): the bytes now in the files of the kernel's own folder (tools'
    caches in its dot-folders left out), and whether it wrote anywhere else (the kernel's private temporary
    folder and /dev left out: libraries write scratch files there)."""
    import tempfile

    home = _STATE.get("folder") or os.getcwd()
    scratch = [os.path.realpath(tempfile.gettempdir()), "/dev"]
    total, elsewhere = 0, []
    for path in sorted(_WRITTEN):
        inside = os.path.commonpath([home, path]) == home
        if inside and os.path.relpath(path, home).startswith("."):
            continue                        # .ipython, .config (matplotlib's font cache), .cache
        if not inside:                      # (without bubblewrap the temporary folder is the kernel's own)
            if not any(os.path.commonpath([s, os.path.realpath(path)]) == s for s in scratch):
                elsewhere.append(path)
            continue
        try:
            total += os.stat(path).st_size
        except OSError:
            pass
    if len(_WRITTEN) >= _MOST_WRITTEN:   # the record stopped: what came after it is unknown
        elsewhere.append(f"(more than {_MOST_WRITTEN} files opened for writing; the rest not recorded)")
    return json.dumps({"bytes": total, "elsewhere": elsewhere[:20]})


def start(blocked: list[str] | tuple[str, ...] = ()) -> str:
    """Remember the state student code may change (import torch now so its attributes are remembered too),
    and block the given reference modules."""
    if blocked:
        for name in [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in blocked)]:
            del sys.modules[name]
        sys.meta_path.insert(0, _ReferenceBlocker(tuple(blocked)))
    try:  # every chapter's hidden tests use torch: imported here, outside any cell's time limit, and remembered
        import torch  # noqa: F401
        import torch.func  # noqa: F401 - the slowest part of torch to import (torch._dynamo), used by ch01's tests
    except Exception:  # noqa: BLE001 - a course without torch still grades
        pass
    try:  # the generated inputs of the hidden checks (autograde.hidden.strategies): remembered with torch
        import hypothesis  # noqa: F401
    except Exception:  # noqa: BLE001
        pass
    _guard_threads()
    shell = _shell()
    _STATE.clear()
    _STATE["folder"] = os.getcwd()
    if not getattr(sys, "_autograde_audit", False):   # a restarted kernel is a new process: installed again
        sys.addaudithook(_audit)
        sys._autograde_audit = True
    _STATE["builtins"] = dict(vars(builtins))
    _STATE["lists"] = {name: list(lst) for name, lst in _hook_lists(shell).items()}
    _STATE["values"] = {name: getattr(owner, attr, _MISSING) for name, (owner, attr) in _hook_values(shell).items()}
    _STATE["shell_attrs"] = set(vars(shell))  # an instance attribute added later shadows a method (run_cell...)
    _STATE["shell_class"] = {cls: dict(vars(cls)) for cls in type(shell).__mro__ if cls.__flags__ & _HEAP_TYPE}
    _STATE["modules"] = dict(sys.modules)
    import warnings

    # (taken outside catch_warnings, which swaps warnings.filters for a list of its own while it runs)
    _STATE["module_attrs"] = {name: dict(vars(module)) for name, module in list(sys.modules.items())
                              if _guarded_module(name) and isinstance(module, types.ModuleType)}
    with warnings.catch_warnings():  # some of torch's module attributes warn when looked at (deprecated names)
        warnings.simplefilter("ignore")
        _STATE["classes"] = _library_classes(_STATE["module_attrs"])
    _STATE["trace"] = (sys.gettrace(), sys.getprofile())
    return json.dumps({"started": True})


def _guarded_module(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in GUARDED_MODULES)


def _library_classes(module_attrs: dict[str, dict]) -> dict[type, dict[str, Any]]:
    """The classes (made by class statements, so their attributes can be set) that the guarded modules define,
    with their attributes: torch.Tensor, torch.amp.GradScaler, torch.autograd.Function..."""
    out: dict[type, dict[str, Any]] = {}
    for name, attrs in module_attrs.items():
        for value in attrs.values():
            if (isinstance(value, type) and value.__flags__ & _HEAP_TYPE and value not in out
                    and getattr(value, "__module__", None) == name):
                out[value] = dict(vars(value))
    return out


def _restore_classes(saved: dict[type, dict[str, Any]], cells: set[str]) -> list[str]:
    """Put back every attribute of a library class that was changed or deleted, and take away one the notebook
    added (a library may add its own: those stay); name those the notebook's code made."""
    changed: list[str] = []
    for cls, attrs in saved.items():
        current = vars(cls)
        if _unchanged(current, attrs):
            continue
        for attr in [a for a in current if a not in attrs and _from_notebook(current[a], cells)]:
            try:
                delattr(cls, attr)
                changed.append(f"{cls.__module__}.{cls.__qualname__}.{attr}")
            except (AttributeError, TypeError):
                pass
        for attr, value in attrs.items():
            now = current.get(attr, _MISSING)
            if now is not value:
                if now is _MISSING or _from_notebook(now, cells):
                    changed.append(f"{cls.__module__}.{cls.__qualname__}.{attr}")
                try:
                    setattr(cls, attr, value)
                except (AttributeError, TypeError):
                    pass
    return changed


def _unchanged(current: Any, saved: dict) -> bool:
    """Whether a namespace holds exactly what was saved, the same names bound to the same objects, in the same order
    (a name deleted and bound again reads as changed): compared at C speed, since ~60,000 names are checked before
    every test cell."""
    return (len(current) == len(saved) and all(map(_IS, current.values(), saved.values()))
            and current.keys() == saved.keys())


def _restore_dict(current: dict, saved: dict, drop_new: bool = True) -> list[str]:
    """Give back every saved entry that was changed or deleted (and drop new ones if drop_new); return the names
    given back (new entries alone do not count: libraries add some)."""
    if drop_new:
        for name in [n for n in current if n not in saved]:
            del current[name]
    changed = [name for name, value in saved.items() if current.get(name, _MISSING) is not value]
    for name in changed:
        current[name] = saved[name]
    return changed


def _cell_files() -> set[str]:
    """The file names IPython gave the code of this notebook's cells."""
    return set(getattr(_shell().compile, "_filename_map", {}))


def _from_notebook(entry: Any, cells: set[str]) -> bool:
    """True if a hook entry (function, bound method, object) was written in a cell of the notebook."""
    for target in (entry, getattr(entry, "__func__", None), type(entry)):
        code = getattr(target, "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename in cells:
            return True
        if target is not None and getattr(target, "__module__", None) == "__main__":
            return True
    return False


def restore_interpreter(remembered: dict | None = None) -> list[str]:
    """Put back builtins, hooks, IPython's machinery and the guarded modules; return what had been changed.
    remembered: the guarded modules' and library classes' attributes as start() saw them ({"module_attrs",
    "classes"}; the channel passes its own, which never sit in _STATE); default _STATE's."""
    if not _STATE:
        return []
    remembered = _STATE if remembered is None else remembered
    shell = _shell()
    changed: list[str] = []
    changed += [f"builtins.{n}" for n in _restore_dict(vars(builtins), _STATE["builtins"])[:3]]
    cells = _cell_files()
    for name, lst in _hook_lists(shell).items():
        saved = _STATE["lists"].get(name, [])
        if name == "sys.path":
            if lst != saved:
                lst[:] = saved
                changed.append(name)
            continue
        # entries the notebook added go; entries it removed come back; what libraries add stays
        kept = [e for e in lst if not (_from_notebook(e, cells) and not any(e is s for s in saved))]
        missing = [e for e in saved if not any(e is k for k in kept)]
        if len(kept) != len(lst) or missing:
            lst[:] = missing + kept  # what the notebook removed goes back in front (the blocker first)
            changed.append(name)
    for name, (owner, attr) in _hook_values(shell).items():
        saved = _STATE["values"][name]
        if saved is not _MISSING and getattr(owner, attr, _MISSING) is not saved:
            setattr(owner, attr, saved)
            changed.append(name)
    for attr in [a for a in vars(shell) if a not in _STATE["shell_attrs"]]:
        if callable(getattr(type(shell), attr, None)):  # an instance attribute that shadows a method (run_cell...)
            delattr(shell, attr)
            changed.append(f"IPython shell.{attr}")
    methods = (types.FunctionType, classmethod, staticmethod)
    for cls, saved in _STATE["shell_class"].items():
        current = vars(cls)
        bad = [n for n, v in saved.items() if isinstance(v, methods) and current.get(n, _MISSING) is not v]
        for name in bad:
            setattr(cls, name, saved[name])
        if bad:
            changed.append(f"IPython {cls.__name__}.{bad[0]}")
    if (sys.gettrace(), sys.getprofile()) != _STATE["trace"]:
        sys.settrace(_STATE["trace"][0])
        sys.setprofile(_STATE["trace"][1])
        changed.append("sys.settrace / sys.setprofile")
    for name, module in _STATE["modules"].items():
        if sys.modules.get(name, _MISSING) is not module and name not in ("course.checking", "__main__"):
            sys.modules[name] = module
            changed.append(f"sys.modules[{name!r}]")
    for name, saved in remembered.get("module_attrs", {}).items():
        module = _STATE["modules"].get(name)
        if module is None:
            continue
        # libraries wrap some functions once loaded (torch._dynamo wraps torch.manual_seed): every change is undone,
        # but only one made with the notebook's own code, or with a builtin like print, is reported
        current = vars(module)
        if _unchanged(current, saved):
            continue
        suspicious = [n for n, v in saved.items() if current.get(n, _MISSING) is not v
                      and (_from_notebook(current.get(n), cells) or isinstance(current.get(n), types.BuiltinFunctionType)
                           and getattr(current.get(n), "__module__", "") == "builtins")]
        added = [n for n in current if n not in saved and _from_notebook(current[n], cells)]
        for n in added:
            del current[n]
        if name == "builtins":
            continue  # restored above, new names dropped too
        _restore_dict(current, saved, drop_new=False)
        changed += [f"{name}.{n}" for n in (suspicious + added)[:3]]
    changed += _restore_classes(remembered.get("classes", {}), cells)[:3]
    checking = sys.modules.pop("course.checking", None)  # the test cell imports its helpers afresh
    if checking is not None:
        changed += [f"course.checking.{n}" for n, v in vars(checking).items() if _from_notebook(v, cells)]
    return changed


def _is_blocked(name: str) -> bool:
    blockers = [f for f in sys.meta_path if isinstance(f, _ReferenceBlocker)]
    return any(name == b or name.startswith(b + ".") for f in blockers for b in f.blocked)


# -- isolation: the reference of the other exercises ---------------------------------------------------
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

    def note_swap(self) -> None:
        """Record which names the swap changed (call right after it)."""
        self.swapped = {n for n in set(self.ns) | set(self.names)
                        if self.ns.get(n, _MISSING) is not self.names.get(n, _MISSING)}

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


def _rebound(value: Any, new: type, old: type) -> Any:
    """value (a method of class new) made to work as a method of class old: zero-argument super() included."""
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


_KEEP = ("__dict__", "__weakref__", "__module__", "__qualname__", "__doc__", "__slots__")


def _same_layout(new: type, old: type) -> bool:
    """Whether old can take new's attributes and then behave as new: same metaclass, same bases, same slots.
    A NamedTuple, an Enum or a slotted dataclass cannot become a plain class; its name is bound to new instead."""
    return (type(old) is type(new) and old.__bases__ == new.__bases__
            and vars(old).get("__slots__") == vars(new).get("__slots__"))


def _transplant(new: type, old: type) -> None:
    """Make the existing class old behave as new (same name), so its subclasses made since behave as new: give it
    new's attributes, and take away those new lacks (what a decorator such as @dataclass(frozen=True) added, a
    __setattr__ that would refuse new's __init__); data descriptors of the layout (__slots__) stay."""
    for name in [n for n in vars(old) if n not in vars(new) and n not in _KEEP]:
        member = vars(old)[name]
        if hasattr(type(member), "__set__") and not isinstance(member, property):
            continue
        try:
            delattr(old, name)
        except (AttributeError, TypeError):
            pass
    for name, value in vars(new).items():
        if name in _KEEP[:2]:
            continue
        try:
            setattr(old, name, _rebound(value, new, old))
        except (AttributeError, TypeError):
            pass


def _swap_in(ns: dict[str, Any], references: list[str]) -> Snapshot:
    snapshot = Snapshot(ns)
    for code in references:
        before = dict(ns)
        try:
            exec(compile(code, REFERENCE_MARK, "exec"), ns)  # noqa: S102 - the course's own code
        except Exception:  # noqa: BLE001 - a reference that cannot run here leaves the student's code in place
            pass
        for name, value in list(ns.items()):
            old = before.get(name)
            if (isinstance(value, type) and isinstance(old, type) and value is not old and old in snapshot.classes
                    and value.__flags__ & _HEAP_TYPE and _same_layout(value, old)):
                _transplant(value, old)
                ns[name] = old
    snapshot.note_swap()
    return snapshot


# -- provenance: graded code is not torch's or the course's ------------------------------------------------
FORBIDDEN_PACKAGES = ("torch", "functorch", "course.reference", "autograde")
"""Graded code may not be these packages' code: the tests' oracle, the reference engine (this chapter's is
blocked and absent from the sandbox; an earlier chapter's may be imported and extended, not handed in as the
answer), the grader. Code generated by the standard library from a student's own definitions (dataclasses,
namedtuple, enum, functools), NumPy's wrappers (vectorize) and code a cell made with exec are the student's."""
_UNWRAP = ("__wrapped__", "__func__", "func", "pyfunc", "fget", "fset", "fdel", "dispatcher")
"""Attributes through which wrappers reach the code they wrap: functools (wraps, lru_cache, cache, partial,
partialmethod, cached_property, singledispatchmethod), bound methods, classmethod/staticmethod, property,
numpy.vectorize."""


@functools.lru_cache(maxsize=None)
def _forbidden_folders() -> tuple[str, ...]:
    """The folders of FORBIDDEN_PACKAGES, found without importing them."""
    import importlib.util
    import os

    folders = []
    for name in FORBIDDEN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for folder in (spec.submodule_search_locations or []) if spec else []:
            folders.append(os.path.realpath(folder) + os.sep)
    return tuple(folders)


def _forbidden_module(module: Any) -> bool:
    return isinstance(module, str) and any(module == p or module.startswith(p + ".") for p in FORBIDDEN_PACKAGES)


REFERENCE_MARK = "<autograde reference of another exercise>"
"""The file name of the reference code the harness runs for the other exercises (isolation), and HIDDEN_MARK the
prefix of the hidden helpers' when the grader loads them: both start with MARK, which no file a student's code
can come from starts with (cells are files of IPython's, code made by exec is the student's own choice: a
student who takes the mark only makes their own code foreign)."""
MARK = "<autograde "
HIDDEN_MARK = "<autograde hidden: "


def _forbidden_file(filename: str) -> bool:
    import os

    if filename and filename.startswith(MARK):
        return True   # the reference of another exercise, kept past its test, or a hidden helper's code
    if not filename or filename.startswith("<"):
        return False  # a cell, or code generated at run time (dataclasses, namedtuple, exec in a cell)
    return os.path.realpath(filename).startswith(_forbidden_folders())


def _foreign_origins(value: Any, seen: set[int] | None = None, depth: int = 0) -> list[str]:
    """Where the code reachable from a graded value comes from, when that is torch, the reference or the grader:
    the code of a function, of a class's own attributes, of what wrappers wrap and of a callable object's class."""
    seen = set() if seen is None else seen
    if id(value) in seen or depth > 12:
        return []
    seen.add(id(value))
    found: list[str] = []
    if isinstance(value, types.CodeType):
        return [f"code from {value.co_filename}"] if _forbidden_file(value.co_filename) else []
    if isinstance(value, types.FunctionType):
        found += _foreign_origins(value.__code__, seen, depth + 1)
        found += _reached(value, seen, depth)
    elif isinstance(value, type):
        if not value.__flags__ & _HEAP_TYPE:
            module = getattr(value, "__module__", None)
            return [f"from {module}"] if _forbidden_module(module) else []
        if _forbidden_module(getattr(value, "__module__", None)):
            found.append(f"from {value.__module__}")
        for attr in vars(value).values():
            if not isinstance(attr, type):  # a nested class is checked when it is itself a graded name
                found += _foreign_origins(attr, seen, depth + 1)
        return found
    elif isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                            types.WrapperDescriptorType, types.MethodDescriptorType)):
        owner = getattr(value, "__self__", None)
        objclass = getattr(value, "__objclass__", None)
        modules = (getattr(value, "__module__", None), type(owner).__module__ if owner is not None else None,
                   getattr(owner, "__name__", None) if isinstance(owner, types.ModuleType) else None,
                   getattr(objclass, "__module__", None))
        return [f"from {m}" for m in modules if _forbidden_module(m)][:1]
    for attr in _UNWRAP:
        try:
            inner = getattr(value, attr, None)
        except Exception:  # noqa: BLE001 - a property of a student's object may raise
            inner = None
        if inner is not None and inner is not value:
            found += _foreign_origins(inner, seen, depth + 1)
    registry = getattr(value, "registry", None)  # functools.singledispatch: the function for each type
    if isinstance(registry, types.MappingProxyType) or type(registry) is dict:
        for impl in list(registry.values()):
            found += _foreign_origins(impl, seen, depth + 1)
    if not isinstance(value, (types.FunctionType, types.MethodType)) and callable(value):
        cls = type(value)
        if _forbidden_module(getattr(cls, "__module__", None)):
            found.append(f"from {cls.__module__}")
        elif cls.__flags__ & _HEAP_TYPE:
            found += _foreign_origins(cls, seen, depth + 1)  # a callable object: its class's code
    return found


def _names_of(code: types.CodeType) -> set[str]:
    """The global names a function's code (and the code nested in it) looks up (LOAD_GLOBAL, LOAD_NAME: not the
    attribute names co_names also holds)."""
    import dis

    out = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names_of(const)
    return {n for n in out if isinstance(n, str)}


def _marked(value: Any) -> bool:
    code = getattr(value, "__code__", None) if isinstance(value, types.FunctionType) else None
    return isinstance(code, types.CodeType) and code.co_filename.startswith(MARK)


def _reached(func: types.FunctionType, seen: set[int], depth: int) -> list[str]:
    """What a graded function reaches besides its own code: the values of its closure, its defaults, and the
    globals it names (a function, class or callable there, and the functions one level inside a list, tuple,
    dict or set there): a reference object kept from another exercise's test and called from a student's
    function is found this way. Modules and other data are not followed."""
    found: list[str] = []
    values: list[Any] = []
    for cell in func.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    values += list(func.__defaults__ or ()) + list((func.__kwdefaults__ or {}).values())
    module_globals = func.__globals__
    for name in _names_of(func.__code__):
        if name in module_globals:
            values.append(module_globals[name])
    for value in values:
        if isinstance(value, types.ModuleType):
            continue
        if type(value) in (list, tuple, set, frozenset, dict):
            items = list(value.values()) if type(value) is dict else list(value)
            found += [f"a kept reference ({getattr(v, '__qualname__', '?')})" for v in items[:1000] if _marked(v)]
            continue
        if isinstance(value, (types.FunctionType, type)) or callable(value):
            # only the marks count here: a student's function may well name torch or an earlier chapter's engine
            found += [f for f in _foreign_origins(value, seen, depth + 1) if MARK in f]
    return found


def provenance(ns: dict[str, Any], names: list[str]) -> list[str]:
    """The graded names whose code is torch's, the reference engine's or the grader's, with where it came from."""
    bad = []
    for name in names:
        value = ns.get(name, _MISSING)
        if value is _MISSING:
            continue
        foreign = sorted(set(_foreign_origins(value)))
        if foreign:
            bad.append(f"{name} ({foreign[0]})")
    return bad


# -- the torch guard ----------------------------------------------------------------------------------
_TRIPS: list[str] = []


_LOCAL = None  # threading.local(): how deep the current thread is in graded calls (made by start)
_WATCHED_DISABLERS = ("_pop_torch_dispatch_stack", "_pop_torch_function_stack", "_DisableTorchDispatch",
                      "_unset_dispatch_mode", "_set_dispatch_mode", "_ExcludeDispatchKeyGuard",
                      "_ForceDispatchKeyGuard", "_dispatch_tls_set_dispatch_key_excluded",
                      "_dispatch_tls_set_dispatch_key_included", "_DisablePythonDispatcher",
                      "_disable_current_modes", "_pop_mode_temporarily", "_pop_mode")
"""torch's ways to run an operator below the guard's dispatch mode (torch._C and torch.utils._python_dispatch,
torch.overrides): called from graded code, each is itself a torch call the guard stops."""


def _depth() -> int:
    return getattr(_LOCAL, "depth", 0) if _LOCAL is not None else 0


def _guard():
    """A context in which any torch operation raises AutograderIntegrityError (reading attributes is allowed).

    Two modes: a torch-function mode (torch's Python API, tensor methods) and a dispatch mode (every ATen operator
    however it was reached). Switching the function modes off (torch._C.DisableTorchFunction, popping the mode
    stack) leaves the dispatch mode, which then stops the operator; the ways to get below the dispatch mode are
    watched (_WATCHED_DISABLERS). Threads that graded code starts run in the same guard (_guard_threads)."""
    try:
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
    except Exception:  # noqa: BLE001 - no torch: nothing to guard
        return None

    def trip(name: str) -> None:
        _TRIPS.append(name)
        raise AutograderIntegrityError(
            f"graded code called torch ({name}): your answer must use NumPy; the tests use torch to check it")

    class NoTorch(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
            if name.split(".")[-1] in HARMLESS_TORCH:
                with _disable_current_modes():  # printing a tensor runs operators of torch's own
                    return func(*args, **(kwargs or {}))
            trip(name)

    class NoTorchOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
            trip(str(func))

    class Guard:
        def __enter__(self):
            self.modes = (NoTorch(), NoTorchOps())
            for mode in self.modes:
                mode.__enter__()
            if _LOCAL is not None:
                _LOCAL.depth = _depth() + 1
            return self

        def __exit__(self, *exc):
            if _LOCAL is not None:
                _LOCAL.depth = max(0, _depth() - 1)
            for mode in reversed(self.modes):
                try:
                    mode.__exit__(*exc)
                except Exception:  # noqa: BLE001 - graded code popped it: reported below
                    _TRIPS.append("graded code took the grader's torch guard off the mode stack")
            return False

    return Guard


def _guard_threads() -> None:
    """Threads that graded code starts (threading, concurrent.futures, _thread) run their function in the torch
    guard too: torch in a worker thread is torch in graded code. Installed once, before any student code, in
    every module that holds the thread starter; and the torch calls that get below the guard's dispatch mode
    are wrapped so that graded code calling them trips the guard."""
    global _LOCAL
    import _thread
    import threading

    if _LOCAL is not None:
        return
    _LOCAL = threading.local()
    original = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None):
        if _depth() and _STATE.get("guard") is not None:
            inner, guard = function, _STATE["guard"]

            def function(*a, **k):
                with guard():
                    return inner(*a, **k)
        return original(function, args, {} if kwargs is None else kwargs)

    for module, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
        if getattr(module, name, None) is original:
            setattr(module, name, start_new_thread)
    try:
        import torch
        import torch.overrides
        import torch.utils._python_dispatch as python_dispatch
    except Exception:  # noqa: BLE001
        return
    for module in (torch._C, python_dispatch, torch.overrides):
        for name in _WATCHED_DISABLERS:
            target = vars(module).get(name)
            if target is not None and not getattr(target, "_autograde_watched", False):
                setattr(module, name, _watched(target, name))


@functools.lru_cache(maxsize=None)
def _library_folders() -> tuple[str, ...]:
    """Where library code lives: the interpreter's standard library and site-packages, and the course package."""
    import importlib.util

    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    try:
        spec = importlib.util.find_spec("course")  # found, not imported: the course package's folder
    except (ImportError, ValueError):
        spec = None
    folders |= set(spec.submodule_search_locations or []) if spec is not None else set()
    out = set()
    for folder in folders:
        out |= {folder.rstrip(os.sep) + os.sep, os.path.realpath(folder).rstrip(os.sep) + os.sep}
    return tuple(sorted(out))


def _kinds(test_file: Any, library: tuple[str, ...], realpath: Any = os.path.realpath) -> Any:
    """A function: file name -> 'judge' (the harness, the hidden helpers, the test cell now running: test_file()),
    'library' (under `library`, or frozen) or 'student' (a cell, code made by exec, anything else). It keeps a cache
    of its own and reads nothing else, so the channel's copy cannot be changed through this module's names."""
    cache: dict[str, str] = {}
    mark = MARK

    def kind(filename: str) -> str:
        if filename.startswith(mark) or filename == test_file():
            return "judge"
        found = cache.get(filename)
        if found is None:
            if filename.startswith("<frozen "):
                found = "library"
            elif filename.startswith("<"):
                found = "student"
            else:
                found = "library" if realpath(filename).startswith(library) else "student"
            if len(cache) < 100_000:
                cache[filename] = found
        return found

    kind.cache = cache
    return kind


def _kind(filename: str) -> str:
    """What _kinds says, with the test cell the harness's state names (the harness's own file is the judge's)."""
    if filename == __file__:
        return "judge"
    if _KIND[0] is None:
        _KIND[0] = _kinds(lambda: _STATE.get("test_file"), _library_folders())
    return _KIND[0](filename)


_KIND: list[Any] = [None]


def _watched(target: Any, name: str) -> Any:
    """target, which raises when graded code calls it itself (depth > 0 in this thread, the caller a student's
    file): a way around the guard's dispatch mode. torch's own calls (the guard's modes entering and leaving) pass."""
    def call(*args, **kwargs):
        if _depth() and _kind(sys._getframe(1).f_code.co_filename) == "student":
            _TRIPS.append(f"torch.{name}")
            raise AutograderIntegrityError(f"graded code called torch ({name}, which switches the grader's torch "
                                           "guard off): your answer must use NumPy")
        return target(*args, **kwargs)

    call._autograde_watched = True
    call.__name__ = call.__qualname__ = getattr(target, "__name__", name)
    return call


def _guarded(func: Any, mode: Any) -> Any:
    @functools.wraps(func)
    def call(*args, **kwargs):
        with mode():
            return func(*args, **kwargs)

    return call


class _GuardedCallable:
    """A callable class attribute that Python does not bind to instances (a NumPy ufunc such as np.isfinite, a
    builtin, functools.partial, a callable object), run in the torch guard. It has no __get__, so
    `self._finite(g)` still calls np.isfinite(g), exactly as without the guard."""

    __slots__ = ("inner", "mode")

    def __init__(self, inner: Any, mode: Any) -> None:
        self.inner, self.mode = inner, mode

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.mode():
            return self.inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _GuardedDescriptor:
    """A non-data descriptor of a graded class (functools.cached_property, singledispatchmethod, partialmethod,
    an lru_cache'd method...) whose __get__, and what it returns, run in the torch guard."""

    def __init__(self, inner: Any, mode: Any) -> None:
        self.inner, self.mode = inner, mode

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        with self.mode():  # cached_property runs the student's function here
            got = self.inner.__get__(obj, objtype)
        return _guarded(got, self.mode) if callable(got) and not isinstance(got, type) else got

    def __set_name__(self, owner: Any, name: str) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _wrap_attr(value: Any, mode: Any) -> Any:
    """A class attribute made to run in the torch guard: methods, classmethods and staticmethods, properties, other
    non-data descriptors and callable objects; data (and data descriptors such as __slots__) stay as they are."""
    if isinstance(value, (classmethod, staticmethod)):
        return type(value)(_wrap_attr(value.__func__, mode) if not isinstance(value.__func__, types.FunctionType)
                           else _guarded(value.__func__, mode))
    if isinstance(value, property):
        return property(*(_guarded(f, mode) if f else None for f in (value.fget, value.fset, value.fdel)),
                        value.__doc__)
    if isinstance(value, types.FunctionType):
        return _guarded(value, mode)
    if isinstance(value, type):
        return value
    kind = type(value)
    if hasattr(kind, "__get__") and not (hasattr(kind, "__set__") or hasattr(kind, "__delete__")):
        return _GuardedDescriptor(value, mode)
    if callable(value) and not hasattr(kind, "__get__"):
        return _GuardedCallable(value, mode)  # not a function: like the ufunc or builtin it wraps, it does not bind
    return value


def _install_guard(ns: dict[str, Any], names: list[str]) -> list:
    """Run the graded names in the torch guard: functions and any other callable (functools.partial, lru_cache,
    numpy.vectorize, a callable object) are wrapped, and so are the methods and descriptors of classes; return
    undo actions."""
    mode = _guard()
    undo: list = []
    if mode is None:
        return undo
    for name in names:
        value = ns.get(name, _MISSING)
        if not isinstance(value, type) and callable(value) and type(value).__module__ == "__main__":
            value = type(value)  # an object of a class of the notebook's: guard its class, keep the object
        if isinstance(value, type):
            if not value.__flags__ & _HEAP_TYPE:
                continue
            for attr, member in list(vars(value).items()):
                wrapped = _wrap_attr(member, mode)
                if wrapped is not member:
                    try:
                        setattr(value, attr, wrapped)
                    except (AttributeError, TypeError):  # an attribute the class does not let anyone replace
                        continue
                    undo.append(lambda c=value, a=attr, m=member: setattr(c, a, m))
        elif value is not _MISSING and callable(value):
            ns[name] = _guarded(value, mode)
            undo.append(lambda n=name, v=value: ns.__setitem__(n, v) if ns.get(n) is not v else None)
    return undo


# -- keeping the test cell's own code out of reach --------------------------------------------------------
def _hide_next_cell(shell) -> list:
    """Until after_test: the next cell's source stays out of the input history and of linecache."""
    undo: list = []
    compiler, history = shell.compile, shell.history_manager
    if hasattr(compiler, "cache"):
        original_cache = compiler.cache

        def cache(*args, **kwargs):
            name = original_cache(*args, **kwargs)
            linecache.cache.pop(name, None)
            return name

        compiler.cache = cache
        undo.append(lambda: vars(compiler).pop("cache", None))
    if history is not None and hasattr(history, "store_inputs"):
        history.store_inputs = lambda *args, **kwargs: None
        undo.append(lambda: vars(history).pop("store_inputs", None))
    return undo


# -- the two calls the grader makes around a test cell ----------------------------------------------------
def before_test(plan: dict | None = None, remembered: dict | None = None) -> str:
    """Prepare a test cell; plan: {"references": [code...], "names": [graded names], "torch": bool}; remembered:
    see restore_interpreter."""
    plan = plan or {}
    after_test()  # a test cell that never finished leaves nothing behind
    report: dict[str, Any] = {"restored": restore_interpreter(remembered), "blocked": list(_BLOCKED_IMPORTS)}
    _BLOCKED_IMPORTS.clear()
    for name in [m for m in sys.modules if _is_blocked(m) and not isinstance(sys.modules[m].__spec__.loader
                                                                              if sys.modules[m].__spec__ else None,
                                                                              _ReferenceBlocker)]:
        del sys.modules[name]  # the real module, loaded around the blocker: gone before any test
    shell = _shell()
    ns = shell.user_ns
    names = list(plan.get("names", ()))
    _STATE["own"] = tuple(names)  # course.checking's stand-ins call these names' own code, never the reference
    _PENDING.append(lambda: _STATE.pop("own", None))
    report["foreign"] = provenance(ns, names)
    if plan.get("references"):
        snapshot = _swap_in(ns, list(plan["references"]))
        _PENDING.append(snapshot.restore)
    if names and not plan.get("torch"):
        _STATE["guard"] = _guard()
        _PENDING.append(lambda: _STATE.pop("guard", None))
        _PENDING.extend(_install_guard(ns, names))
    _PENDING.extend(_hide_next_cell(shell))
    _TRIPS.clear()
    return json.dumps(report)


def release_failure() -> bool:
    """Drop every reference the interpreter and IPython keep to the last exception (sys.last_*, the shell's last
    execution result, the traceback formatter's copy), and collect, so that what a failed cell allocated in its
    frames (a cell stopped at its time limit inside an answer that built a huge structure) is freed before the next
    cell runs: one bug costs one exercise, not every later cell a MemoryError. True if something was held."""
    held = False
    for name in ("last_exc", "last_type", "last_value", "last_traceback"):
        if getattr(sys, name, None) is not None:
            setattr(sys, name, None)
            held = True
    shell = _shell()
    result = getattr(shell, "last_execution_result", None)
    if result is not None and (result.error_in_exec is not None or result.error_before_exec is not None):
        result.error_in_exec = result.error_before_exec = None  # read (success) before the harness runs
        held = True
    for formatter in (getattr(shell, "InteractiveTB", None), getattr(shell, "SyntaxTB", None)):
        for attr in ("tb", "last_syntax_error"):
            if getattr(formatter, attr, None) is not None:
                setattr(formatter, attr, None)
                held = True
    if held:
        import gc

        gc.collect()
    return held


def _hidden_code(value: Any) -> bool:
    """Whether a value of the notebook's namespace is the hidden helpers' (a function, class or module of theirs)."""
    if isinstance(value, types.ModuleType):
        return str(getattr(value, "__name__", "")).startswith(HIDDEN_PACKAGE)
    if isinstance(value, type):
        return str(getattr(value, "__module__", "")).startswith(HIDDEN_PACKAGE)
    target = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    code = getattr(target, "__code__", None) if isinstance(target, types.FunctionType) else None
    return isinstance(code, types.CodeType) and code.co_filename.startswith(HIDDEN_MARK)


def after_test() -> str:
    """Undo what before_test did; free what a failed cell left alive; report the torch calls the guard stopped."""
    while _PENDING:
        try:
            _PENDING.pop()()
        except Exception:  # noqa: BLE001 - undo as much as possible
            pass
    shell = _shell()
    ns = getattr(shell, "user_ns", None) if shell is not None else None
    if isinstance(ns, dict):  # what the test cell imported from the hidden helpers leaves the notebook with it
        for name in [n for n, v in list(ns.items()) if _hidden_code(v)]:
            del ns[name]
    release_failure()
    trips = sorted(set(_TRIPS))
    _TRIPS.clear()
    return json.dumps({"torch": trips})


# -- the private harness: loaded by the grader before any student code, reached only through its channel ------
# Under the grader (autograde.grader.steps.contained_execute), the kernel has no file of autograde/hidden: the
# grader sends this module's source and the hidden helpers' (autograde.grader.harness_link), this module is
# made outside sys.modules, and install() adds one audit hook, the channel, which
# - runs the grader's calls (start, before_test, after_test, file_writes), each request signed by the grader
#   with a key only the grader and the channel's closure hold, each reply signed back, so that a notebook that
#   replaces sys.audit or __import__ cannot fake a call or its answer (the grader sees a missing or wrong
#   signature);
# - before each call puts back every name of this module and every snapshot start() took, from copies only the
#   channel holds, so a patched harness function or a poisoned snapshot lasts until the next call at most;
# - serves the hidden helpers to the test cell now running (and to each other), never to a student's cell; they
#   leave sys.modules after each test cell, and their source is nowhere in the kernel (no file, no linecache);
# - refuses, to a student's code, the ways in-process code could reach the channel's closure or the checks'
#   frames: gc's object walks, ctypes' memory and calls, audit hooks of its own, code objects built by hand or
#   code compiled under the grader's file names, and (while a test cell runs) frames and new processes.
# What stays possible, and is said in docs/instructors.md: code that a test cell itself calls runs inside the check and
# can change, until the next call, what the objects the check hands it reach (the globals of a helper's
# function passed as an argument, say).
HIDDEN_PACKAGE = "autograde.hidden"
CHANNEL_EVENTS = ("autograde.call", "autograde.graded_now")
_HIDDEN_CODES: dict[str, Any] = {}
_START_KEYS = ("builtins", "lists", "values", "shell_attrs", "shell_class", "modules", "module_attrs", "classes",
               "trace", "folder")
_ALWAYS_REFUSED = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.addaudithook", "code.__new__",
                   "ctypes.call_function", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.string_at",
                   "ctypes.wstring_at", "ctypes.addressof")
_REFUSED_IN_TESTS = ("sys._getframe", "sys._current_frames", "os.fork", "os.forkpty", "subprocess.Popen",
                     "os.posix_spawn", "os.spawn", "os.system", "os.exec", "pty.spawn")
_FRAME_ATTRS = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")
_FRAME_HELPERS = {"collections": None, "enum": None, "typing": None, "dataclasses": None, "logging": None,
                  "warnings": None, "abc": None,
                  "traceback": ("extract_stack", "format_stack", "print_stack", "format_exc", "print_exc",
                                "format_exception", "print_exception", "extract_tb", "format_tb", "print_tb")}
"""Standard-library code that looks at frames on behalf of its caller and hands back no frame: a student's code
may use it while a test runs (namedtuple, dataclasses and typing read their caller's module name; traceback's
summaries are what an anomaly mode records)."""


class _HiddenFinder:
    """Serves autograde.hidden and its modules from the code the grader sent, to the test cell now running and to
    the hidden modules themselves; to anything else, a module that raises (reported like a reference import)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != HIDDEN_PACKAGE and not name.startswith(HIDDEN_PACKAGE + "."):
            return None
        import importlib.util

        frame = sys._getframe(1)
        while frame is not None and _kind(frame.f_code.co_filename) == "library":  # importlib's own frames
            frame = frame.f_back
        kind = _kind(frame.f_code.co_filename) if frame is not None else "library"
        if kind != "judge":
            _BLOCKED_IMPORTS.append((name, int(getattr(_shell(), "execution_count", 1) or 1) - 1))
            return importlib.util.spec_from_loader(name, _HiddenRefusal())
        if name not in _HIDDEN_CODES:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=name == HIDDEN_PACKAGE)

    def create_module(self, spec: Any) -> Any:
        return None

    def exec_module(self, module: Any) -> None:
        module.__file__ = f"{HIDDEN_MARK}{module.__name__}>"
        exec(_HIDDEN_CODES[module.__name__], vars(module))  # noqa: S102 - the grader's own code


class _HiddenRefusal:
    def create_module(self, spec: Any) -> Any:
        module = types.ModuleType(spec.name)

        def missing(attr: str) -> Any:
            if attr.startswith("__"):
                raise AttributeError(attr)
            raise AutograderIntegrityError(f"{spec.name} is the grader's hidden tests: graded notebooks cannot "
                                           "import it")

        module.__getattr__ = missing
        return module

    def exec_module(self, module: Any) -> None:
        pass


def _forget_hidden_modules() -> None:
    """The hidden helpers leave sys.modules after each test cell: the next test cell imports them afresh."""
    for name in [m for m in sys.modules if m == HIDDEN_PACKAGE or m.startswith(HIDDEN_PACKAGE + ".")]:
        del sys.modules[name]


_DEEP_STATE = ("lists", "shell_class", "module_attrs", "classes")
_REMEMBERED = ("module_attrs", "classes")
"""The big parts of start()'s snapshot: the channel keeps its copy in its closure and hands it to before_test's
restore (which reads it and never runs a student's code on it; frames and gc are refused while it runs), instead
of copying them into _STATE before every call (6.5 ms a call)."""


def _copy_state(key: str, value: Any) -> Any:
    """A copy of a start() snapshot: two levels deep for the dicts of lists and dicts (module attributes, class
    attributes, hook lists), one level for the rest (whose values are the very objects to put back)."""
    if key in _DEEP_STATE:
        return {k: (dict(v) if type(v) is dict else list(v)) for k, v in value.items()}
    if isinstance(value, (dict, list, set)):
        return type(value)(value)
    return value


def install(codes: dict[str, Any], key: str) -> None:
    """The grader's boot code calls this once, in a fresh kernel, before any student code: see the section's
    comment. codes: the hidden modules, compiled under HIDDEN_MARK names; key: the grader's signing key."""
    import hashlib
    import hmac
    import threading

    _HIDDEN_CODES.clear()
    _HIDDEN_CODES.update(codes)
    sys.meta_path.insert(0, _HiddenFinder())
    module_globals = globals()
    secret = key.encode()
    calls = {"start": start, "before_test": before_test, "after_test": after_test, "file_writes": file_writes}
    ring: dict[str, Any] = {"window": False, "test_file": None, "own": (), "count": -1, "saved": {},
                            "pristine": dict(module_globals), "refused": []}
    busy: set[int] = set()
    getframe, get_ident, realpath = sys._getframe, threading.get_ident, os.path.realpath
    digest, compare, dumps, loads = hmac.new, hmac.compare_digest, json.dumps, json.loads
    kind_of = _kinds(lambda: ring["test_file"], _library_folders(), realpath)

    def sign(text: str) -> str:
        return digest(secret, text.encode(), hashlib.sha256).hexdigest()

    def initiator(frame: Any) -> tuple[str, Any]:
        """('student' | 'judge' | 'library', the frames passed on the way): the first code outward from frame that
        is not a library's decides who asked."""
        passed = []
        while frame is not None:
            code = frame.f_code
            kind = kind_of(code.co_filename)
            if kind != "library":
                passed.append(code)
                return kind, passed
            passed.append(code)
            frame = frame.f_back
        return "library", passed

    torch_folder = next((f for f in _forbidden_folders() if f.rstrip(os.sep).endswith(os.sep + "torch")), None)

    def helped(passed: list) -> bool:
        for code in passed:
            if torch_folder and realpath(code.co_filename).startswith(torch_folder):
                return True  # torch's own look at frames (its dispatch machinery): torch in graded code trips anyway
            base = os.path.basename(code.co_filename)
            folder = os.path.basename(os.path.dirname(code.co_filename))
            module = folder if base == "__init__.py" else base[:-3] if base.endswith(".py") else base
            if module in _FRAME_HELPERS:
                allowed = _FRAME_HELPERS[module]
                if allowed is None or code.co_name in allowed:
                    return True
        return False

    def refuse(event: str, why: str) -> None:
        if len(ring["refused"]) < 50:
            ring["refused"].append(f"{event} ({why})")
        raise AutograderIntegrityError(f"{event}: {why}")

    def fortress(event: str, args: tuple, frame: Any) -> None:
        if event == "marshal.loads":
            if kind_of(frame.f_code.co_filename) == "student":
                refuse(event, "graded notebooks cannot load code objects")
            return
        if event == "compile":
            filename = args[1] if len(args) > 1 else None
            if isinstance(filename, bytes):
                filename = os.fsdecode(filename)
            if not (isinstance(filename, str) and (filename.startswith(MARK) or filename == ring["test_file"])):
                return
            direct = kind_of(frame.f_code.co_filename)
            if filename == ring["test_file"]:  # IPython compiling the test cell: once a test
                if direct == "library" and not ring.get("compiled"):
                    ring["compiled"] = True
                    return
                refuse(event, "code of the notebook cannot take the test cell's file name")
            if direct == "student":
                refuse(event, "code of the notebook cannot take the grader's file names")
            return
        if event == "object.__getattr__":
            if not ring["window"] or len(args) < 2 or args[1] not in _FRAME_ATTRS:
                return
        elif event in _REFUSED_IN_TESTS or event.startswith("os.exec") or event.startswith("os.spawn"):
            if not ring["window"]:
                return
        who, passed = initiator(frame)
        if who != "student":
            return
        if event in ("sys._getframe", "object.__getattr__") and helped(passed[:-1]):
            return
        what = event if event != "object.__getattr__" else f"the frame of {type(args[0]).__name__}.{args[1]}"
        refuse(what, ("the grader keeps this from graded notebooks" if event in _ALWAYS_REFUSED else
                      "not while the grader's checks run") + f", asked by {passed[-1].co_name}()")

    watched = set(_ALWAYS_REFUSED) | set(_REFUSED_IN_TESTS) | {"marshal.loads", "compile", "object.__getattr__"}

    def call(args: tuple) -> None:
        request, signature, box = args
        if not (isinstance(request, str) and isinstance(signature, str) and isinstance(box, list)):
            return
        if not compare(sign(request), signature):
            ring["refused"].append("a call to the grader's harness that the grader did not sign")
            return
        ask = loads(request)
        if ask["n"] <= ring["count"]:
            return  # a replayed request
        ring["count"] = ask["n"]
        try:
            text = answer(ask)
        except Exception as exc:  # noqa: BLE001 - a failure of the harness itself, signed: not the student's doing
            text = dumps({"error": f"{type(exc).__name__}: {exc}"[:500]})
        box.append(dumps({"reply": text, "sig": sign(f"{ask['n']}:{text}")}))

    def answer(ask: dict) -> str:
        tampered = [k for k, v in ring["pristine"].items() if module_globals.get(k, _MISSING) is not v]
        tampered += [k for k in module_globals if k not in ring["pristine"]]
        for name in tampered:
            if name in ring["pristine"]:
                module_globals[name] = ring["pristine"][name]
            else:
                del module_globals[name]
        name, payload = ask["name"], ask.get("payload")
        if name == "start":
            reply = start(*payload)
            ring["saved"] = {k: _copy_state(k, _STATE[k]) for k in _START_KEYS if k in _STATE}
            for k in _REMEMBERED:  # read-only views: what reaches them cannot change them
                if k in ring["saved"]:
                    ring["saved"][k] = types.MappingProxyType(
                        {n: types.MappingProxyType(d) for n, d in ring["saved"][k].items()})
            ring["pristine"] = dict(module_globals)   # start() installs module-level state (_LOCAL)
        else:
            if ring["saved"]:
                for k, v in ring["saved"].items():
                    if k in _REMEMBERED:  # 60,000 names: handed to restore_interpreter, never copied into _STATE
                        _STATE.pop(k, None)
                    else:
                        _STATE[k] = _copy_state(k, v)
            _KIND[0] = None  # a cache a student's code may have reached: made afresh
            if name == "before_test":
                ring["own"] = tuple((payload or {}).get("names", ()))
                _forget_hidden_modules()  # what a student's import left there (a refusal) never reaches the test
                ring["window"] = True
                reply = calls[name](payload, {k: ring["saved"][k] for k in _REMEMBERED if k in ring["saved"]})
                # the file name IPython will compile the test cell under (after before_test put back its input
                # transformers): the code of that file is the judge's
                source, shell = (payload or {}).get("source", ""), _shell()
                try:
                    ring["test_file"] = shell.compile.get_code_name(source, shell.transform_cell(source),
                                                                    shell.execution_count)
                except Exception:  # noqa: BLE001 - a compiler without the hook: no cell is the judge's
                    ring["test_file"] = None
                _STATE["test_file"] = ring["test_file"]
                ring["compiled"] = False
            elif name == "after_test":
                reply = calls[name]()
                _forget_hidden_modules()
                ring["window"], ring["own"], ring["test_file"] = False, (), None
                _STATE.pop("test_file", None)
            else:
                reply = calls[name]()
        out = loads(reply)
        out["harness"] = {"tampered": tampered[:5], "refused": ring["refused"][:10]}
        ring["refused"] = []
        return dumps(out)

    def channel(event: str, args: tuple) -> None:
        if event not in watched and event not in CHANNEL_EVENTS:
            return
        if event == "autograde.call":  # not marked busy: student code the harness runs is still watched
            try:
                call(args)
            except Exception:  # noqa: BLE001 - a malformed request: no reply, which the grader reports
                pass
            return
        if event == "autograde.graded_now":
            if args and isinstance(args[0], list):
                args[0].append(ring["own"])
            return
        me = get_ident()
        if me in busy:
            return  # the fortress's own frame walk (f_code, sys._getframe)
        busy.add(me)
        try:
            frame = getframe(1)
        finally:
            busy.discard(me)
        busy.add(me)
        try:
            fortress(event, args, frame)
        finally:
            busy.discard(me)

    sys.addaudithook(channel)
