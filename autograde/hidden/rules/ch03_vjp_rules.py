"""The graded rules of ch03_vjp_rules (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

ARITH = ("test_arithmetic_add_sub", "test_arithmetic_mul_div", "test_arithmetic_pow")
UNARY = ("test_unary_neg_exp_log", "test_unary_tanh_sigmoid", "test_unary_relu")
REDUCE = ("test_reduction_sum_mean", "test_reduction_max", "test_reduction_getitem")
SOFTMAX = ("test_softmax_softmax", "test_softmax_cross_entropy")

TORCH = ("Value, dtype (float32 stays float32), node name, what the rule saves and every input's gradient equal "
         "torch's, for inputs of many shapes, non-contiguous, 0-d, size-1 and empty ones included.")
SPECIAL = ("The same for special values (NaN, inf, -inf, -0.0, 0.0, subnormal, tiny and huge entries) and an "
           "upstream gradient holding inf, NaN and 0: finite where torch's result is finite, not finite where it is "
           "not (which of NaN, inf and -inf is not graded, nor the gradient of a NaN entry).")
UNCHANGED = ("A rule changes neither its inputs nor the gradient it receives, and returns the same gradients when it "
             "runs a second time.")

RULES = (
    Rule("unbroadcast.sum_to_size", ("test_unbroadcast",),
         "For every shape that broadcasts to `grad.shape` (0-d, size-1 and empty axes included), "
         "`unbroadcast(grad, shape)` equals torch's `grad.sum_to_size(shape)`: exactly that shape, in `grad`'s "
         "dtype, with `grad` left unchanged (a non-contiguous `grad` too)."),
    Rule("gradcheck.verdict", ("test_gradcheck",),
         "`gradcheck` returns True for right rules (inputs of any shape, large gradients, tight tolerances, inputs "
         "that do not require grad or already hold a `.grad`) and False for a rule wrong at any single entry, and "
         "leaves every input's data as it was."),
    Rule("gradcheck.tolerance", ("test_gradcheck",),
         "An entry agrees when `|analytical - numerical| <= atol + rtol * |numerical|`, with `<=`: an exact 0 "
         "agrees even with `atol=0`, and an error of 4 `rtol` (relative) does not."),
    Rule("gradcheck.error", ("test_gradcheck_report",),
         "A mismatch raises `GradcheckError` (a RuntimeError) whose message names the input (`input 1`) and the "
         "element's index as a tuple; with `raise_exception=False` it returns False instead."),
    Rule("arithmetic.torch", ARITH, TORCH + " Broadcasting shapes and Python numbers on either side included."),
    Rule("arithmetic.special", ARITH, SPECIAL),
    Rule("arithmetic.unchanged", ARITH, UNCHANGED),
    Rule("pow.negative_zero", ("test_arithmetic_pow",),
         "Pow narrows the special values: the sign of a fractional power's infinite gradient at -0.0 is not graded "
         "(torch computes `a ** -0.5` as `1 / sqrt(a)`, which gives -inf there)."),
    Rule("unary.torch", UNARY, TORCH),
    Rule("unary.special", UNARY, SPECIAL),
    Rule("unary.unchanged", UNARY, UNCHANGED),
    Rule("unary.saves", UNARY,
         "Log saves its input, Tanh and Sigmoid their output (as many bytes as torch), ReLU one boolean mask "
         "`~(a <= 0)` (a byte an element)."),
    Rule("reduction.torch", REDUCE, TORCH + " Axes as None, an int or a tuple, with and without `keepdims`; "
         "any index NumPy accepts."),
    Rule("reduction.unchanged", REDUCE, UNCHANGED),
    Rule("max.ties", ("test_reduction_max",),
         "Max splits the gradient equally among exact ties (a near tie is no tie), as torch's `amax` does."),
    Rule("getitem.copy", ("test_reduction_getitem",),
         "GetItem keeps its own copy of the index: a list, array or tuple the caller changes after forward changes "
         "nothing, as in torch."),
    Rule("getitem.memory", ("test_reduction_getitem",),
         "GetItem's backward allocates at most a few arrays of the input's size (checked on a 1000 x 1000 input), "
         "never one per picked element."),
    Rule("softmax.torch", SOFTMAX, TORCH + " Softmax along any axis and at any scale (near 5000 too); "
         "cross-entropy with integer targets given as an array or a list."),
    Rule("softmax.special", ("test_softmax_softmax",), SPECIAL),
    Rule("softmax.unchanged", SOFTMAX, UNCHANGED),
    Rule("softmax.no_jacobian", ("test_softmax_softmax",),
         "Softmax saves its output and its backward builds no Jacobian: its peak memory stays far below n * n "
         "numbers for rows of n entries (n up to 3000)."),
)
