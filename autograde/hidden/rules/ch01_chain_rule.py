"""The graded rules of ch01_chain_rule (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

CD = ("test_central_difference",)
DUAL = ("test_dual_arithmetic", "test_dual_functions")
ARITH = ("test_dual_arithmetic",)
FUNCS = ("test_dual_functions",)
JVP = ("test_jvp",)
REV1 = ("test_reverse_example1",)
REV2 = ("test_reverse_example2",)
PASSES = ("test_passes_needed",)

RULES = (
    Rule("central_difference.torch", CD,
         "For a scalar `f` and a float64 `x` of any shape (0-d and size-1 included), `central_difference(f, x)` "
         "equals torch's gradient (`torch.autograd.grad`) to about 1e-7, which a forward difference does not meet."),
    Rule("central_difference.result", CD,
         "It returns a float64 array of exactly `x`'s shape and leaves the caller's `x` unchanged, bit for bit."),
    Rule("central_difference.step", CD,
         "It uses the step `h` passed in: for `f = sum(x**3)` and `h=0.1` it gives `3 * x**2 + h**2` to 1e-9."),
    Rule("dual.arithmetic", ARITH,
         "`+`, `-`, `*`, `/`, `**` and unary minus, between two Duals and with an int or a float on either side, "
         "return a Dual with the value and tangent of torch's JVP of the same expression (to 1e-10 relative)."),
    Rule("dual.power_at_zero", ARITH,
         "At a value of 0, `Dual(0, t) ** p` for p = 0, 0.0, 1, 1.5, 2, 3 and products and sums with 0 give torch's "
         "value and tangent (`** 0` is `Dual(1, 0)`): the power rule never divides by the value."),
    Rule("dual.functions", FUNCS,
         "`exp`, `sin`, `cos`, `tanh` at any value and `log` at positive values, alone and composed, return a Dual "
         "with the value and tangent of torch's JVP (to 1e-10 relative)."),
    Rule("dual.tanh_large", FUNCS,
         "`tanh` stays finite where `math.cosh` and `math.exp` overflow: for |u| from 30 up to 1e300 it gives "
         "torch's value (-1 or 1) and tangent (0)."),
    Rule("dual.new", DUAL,
         "No operation or method changes its operands: their value and tangent are the same after the call."),
    Rule("jvp.torch", JVP,
         "For `x` and `v` of equal length (lists or 1-D arrays, from 1 to hundreds of entries), `jvp(f, x, v)` gives "
         "the value and tangent of torch's JVP of the same `f` (to 1e-10 relative)."),
    Rule("jvp.types", JVP,
         "A Dual output gives `(value, tangent)` as two floats; a list of Duals gives two 1-D float64 arrays."),
    Rule("jvp.once", JVP, "`jvp` calls `f` exactly once, whatever the number of inputs."),
    Rule("jvp.lengths", JVP,
         "`x` and `v` of different lengths (either one the longer) raise ValueError whose message names both "
         "lengths."),
    Rule("reverse_example1.torch", REV1,
         "For any `x1`, `x2` (floats or ints, zeros and negatives included), `reverse_example1` returns `(f, adjoints)` "
         "with `f` and the adjoints `\"f\"`, `\"a\"`, `\"x1\"`, `\"x2\"` equal to torch's (`torch.autograd.grad`, to "
         "1e-10 relative)."),
    Rule("reverse_example1.floats", REV1, "`f` and every adjoint are floats, for int inputs too."),
    Rule("reverse_example2.torch", REV2,
         "For `x` of shape `(n,)`, `W1` of shape `(k, n)` and `W2` of shape `(1, k)`, any n, k >= 1, `L` and every "
         "adjoint (`dL_dy`, `dL_dh`, `dL_da`, `dL_dx`, `dL_dW1`, `dL_dW2`) equal torch's (`torch.autograd.grad`) in "
         "shape and value (to 1e-10 relative)."),
    Rule("reverse_example2.unchanged", REV2, "`x`, `W1` and `W2` are left unchanged."),
    Rule("passes_needed.counts", PASSES,
         "For positive ints `n` and `m` (1 up to 10**9), `passes_needed(n, m)` is `{\"forward\": n, \"reverse\": m}`."),
    Rule("passes_needed.errors", PASSES,
         "An `n` or `m` that is not a positive int (0, negative, a float such as 2.0, a str, None, True or False) "
         "raises ValueError whose message names the bad argument, `n` or `m`, as a word of its own."),
)
