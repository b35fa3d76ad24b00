"""Generated inputs for the hidden checks, shared by every chapter (Hypothesis, deterministic).

A check is a function of generated inputs that calls the student's code and compares what it observes with torch
or with the stated rule. `for_all` runs it on a bounded number of examples drawn with a fixed seed (Hypothesis's
derandomize), no example database and no shrinking, so a notebook graded twice gets the same score in the same
time, and a failure reports the first example that broke the rule, in the check's own message.

    @for_all(shapes=broadcastable_pairs(), dtype=float_dtypes())
    def _(shapes, dtype):
        ...   # runs here, on each example; nothing is left to call

The strategies: float_dtypes (float64, float32), shapes (0-d, size-1 and empty axes included), broadcastable_pairs,
arrays (finite values of a dtype, with or without the special values of autograde.hidden.contract), and
integers/floats as Hypothesis has them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

EXAMPLES = 25
"""examples a check runs by default: enough to meet 0-d, empty and broadcast shapes, few enough to grade fast"""


def for_all(examples: int = EXAMPLES, **strategies: st.SearchStrategy) -> Callable[[Callable[..., Any]], None]:
    """Run the decorated check now on `examples` generated examples (keyword arguments drawn from `strategies`)."""
    def run(check: Callable[..., Any]) -> None:
        prop = settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                        phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck),
                        verbosity=Verbosity.quiet, print_blob=False)(given(**strategies)(check))
        prop()
    return run


def float_dtypes() -> st.SearchStrategy:
    return st.sampled_from([np.dtype(np.float64), np.dtype(np.float32)])


def shapes(min_dims: int = 0, max_dims: int = 4, min_side: int = 0, max_side: int = 5) -> st.SearchStrategy:
    """Array shapes, 0-d, size-1 and empty axes included (min_side=1 leaves out the empty ones)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_pairs(max_dims: int = 4, min_side: int = 0, max_side: int = 4) -> st.SearchStrategy:
    """(shape_a, shape_b) that broadcast together: missing leading axes, stretched size-1 axes, 0-d, empty."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims, min_side=min_side,
                                             max_side=max_side).map(lambda s: tuple(s.input_shapes))


def arrays(dtype: Any, shape: Any, low: float = -3.0, high: float = 3.0, away_from_zero: float = 0.0) -> st.SearchStrategy:
    """Arrays of finite values in [low, high] of a dtype (a strategy or a dtype) and shape (a strategy or a
    shape); away_from_zero > 0 keeps every entry's magnitude at least that (a divisor, a log's input)."""
    def build(d: Any, s: Any) -> st.SearchStrategy:
        width = 32 if np.dtype(d) == np.float32 else 64
        elements = st.floats(low, high, width=width, allow_nan=False, allow_infinity=False)
        if away_from_zero:
            elements = elements.filter(lambda v: abs(v) >= away_from_zero)
        return hnp.arrays(np.dtype(d), s, elements=elements)
    dtypes = dtype if isinstance(dtype, st.SearchStrategy) else st.just(dtype)
    sizes = shape if isinstance(shape, st.SearchStrategy) else st.just(shape)
    return st.tuples(dtypes, sizes).flatmap(lambda ds: build(*ds))
