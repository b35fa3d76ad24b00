"""The graded rules of ch09_higher_order (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

FIRST = ("test_pointwise_first",)
SECOND = ("test_pointwise_second",)
POINTWISE = FIRST + SECOND
MATMUL = ("test_matmul_rule",)
REVERSE = ("test_hvp_reverse",)
FORWARD = ("test_hvp_forward",)
DIFFERENCE = ("test_hvp_difference",)
HESSIAN = ("test_hessian",)

RULES = (
    Rule("pointwise.first", FIRST,
         "For float64 and float32 Tensors of any shapes that broadcast together (0-d, size-1 and empty axes "
         "included; `log`'s input and `div`'s divisor away from zero), each rule returns one Tensor per input, "
         "of that input's shape and dtype, equal to torch's gradient (`torch.autograd.grad` with "
         "`grad_outputs=grad`)."),
    Rule("pointwise.second", SECOND,
         "Differentiating a rule's results again (the engine's `backward` of `sum(w * result)`, for random `w`) "
         "gives torch's second derivatives with respect to every input and to `grad` itself "
         "(`torch.autograd.grad` with `create_graph=True`, then again)."),
    Rule("pointwise.recorded", SECOND,
         "A result is recorded on the tape (it has a `grad_fn`) whenever `grad` or an input it depends on "
         "requires grad."),
    Rule("pointwise.unchanged", POINTWISE,
         "A rule leaves `grad` and its inputs unchanged: their data, `requires_grad`, `grad` and `grad_fn`."),
    Rule("matmul.values", MATMUL,
         "For float64 and float32 `a` of shape `(..., n, k)` and `b` of shape `(k, m)` or `(..., k, m)` whose "
         "batch axes broadcast (none, size 1, or equal; any sides from 1 up), `vjp_matmul` returns torch's "
         "gradients, each of its input's shape and dtype."),
    Rule("matmul.second", MATMUL,
         "Differentiating its results again gives torch's second derivatives with respect to `a`, `b` and "
         "`grad`, and it leaves `a`, `b` and `grad` unchanged."),
    Rule("hvp_reverse.torch", REVERSE,
         "For a scalar `f` written in the engine's ops and float64 arrays `x` and `v` of one shape (0-d "
         "included), `hvp_reverse(f, x, v)` returns a float64 array of `x`'s shape equal to torch's "
         "`torch.autograd.functional.hvp` (to 1e-9 relative); a linear `f` gives zeros."),
    Rule("hvp_reverse.method", REVERSE,
         "It calls `f` once and `grad` twice, the first time with `create_graph=True` and the second without, and "
         "leaves `x` and `v` unchanged."),
    Rule("hvp_forward.torch", FORWARD,
         "For the same `f`, `x` and `v`, `hvp_forward(f, x, v)` returns a float64 array of `x`'s shape equal to "
         "torch's forward-over-reverse HVP, `torch.func.jvp` of `torch.func.grad` (to 1e-9 relative)."),
    Rule("hvp_forward.method", FORWARD,
         "It calls `f` once, on a Tensor whose entries are `Dual` numbers with the values of `x` and the "
         "tangents of `v`, and `grad` once, without `create_graph`; it leaves `x` and `v` unchanged."),
    Rule("hvp_forward.constant", FORWARD,
         "Where an entry of the gradient does not depend on `x` (a plain number, not a `Dual`), its entry of "
         "the result is 0."),
    Rule("hvp_difference.torch", DIFFERENCE,
         "For the same `f`, `x` and `v` (entries of `v` at most 1 in size), `hvp_finite_difference(f, x, v)` "
         "returns a float64 array of `x`'s shape within 1e-7 (relative and absolute) of torch's HVP."),
    Rule("hvp_difference.step", DIFFERENCE,
         "It uses the `eps` passed in, with two gradients by `grad`: for `f = sum(x**4)` it returns "
         "`12 x**2 v + 4 eps**2 v**3` (to 1e-9), and it leaves `x` and `v` unchanged."),
    Rule("hessian.torch", HESSIAN,
         "For a 1-D float64 `x` of length n >= 1 and `hvp=hvp_reverse`, `hessian(f, x, hvp)` returns an "
         "`(n, n)` float64 array equal to `torch.autograd.functional.hessian` (to 1e-9 relative)."),
    Rule("hessian.columns", HESSIAN,
         "It calls `hvp(f, x, e_j)` exactly once for each basis vector `e_j` (of `x`'s shape) and "
         "puts the result in column `j`, and leaves `x` unchanged."),
)
