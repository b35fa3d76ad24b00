"""Given code of Chapter 5 that its notebook only builds on: the base classes that make a context manager also a
decorator (torch's _DecoratorContextManager and _NoParamDecoratorContextManager). The notebook's setup cell imports
them, so course/reference/ch05_grad_modes.py re-exports them.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["DecoratorContextManager", "NoParamDecoratorContextManager"]


class DecoratorContextManager:
    """A context manager that also decorates: each call of the decorated function runs inside a fresh clone."""

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return function(*args, **kwargs)
        return decorated

    def clone(self) -> DecoratorContextManager:
        """A new manager with the same settings (a decorated function may run nested, or in several threads)."""
        return self.__class__()


class NoParamDecoratorContextManager(DecoratorContextManager):
    """Also usable as a bare decorator, @no_grad without parentheses, as torch allows."""

    def __new__(cls, function: Callable | None = None) -> Any:
        if function is None:
            return super().__new__(cls)
        return cls()(function)          # @no_grad: the class was called with the function to decorate

    def __init__(self, function: Callable | None = None) -> None:
        pass
