"""Mutants and alternatives for ch03_vjp_rules (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that
must then score 0, all of them test cells of the mutant's own exercise: the grader runs each test cell
on the reference code of the chapter's other exercises (autograde/hidden/harness.py), so a broken
unbroadcast costs only unbroadcast's points. `visible` records whether the visible part of those test
cells catches the mutant when a student runs the notebook (autograde.authoring.visible measures it).
Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring import products as build
from autograde import notebook as nbk
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

CHAPTER = "ch03_vjp_rules"
UNBROADCAST = ("test_unbroadcast",)
GRADCHECK = ("test_gradcheck",)
REPORT = ("test_gradcheck_report",)
ADD_SUB = ("test_arithmetic_add_sub",)
MUL_DIV = ("test_arithmetic_mul_div",)
POW = ("test_arithmetic_pow",)
NEG_EXP_LOG = ("test_unary_neg_exp_log",)
TANH_SIGMOID = ("test_unary_tanh_sigmoid",)
RELU = ("test_unary_relu",)
SUM_MEAN = ("test_reduction_sum_mean",)
MAX = ("test_reduction_max",)
GETITEM = ("test_reduction_getitem",)
SOFTMAX = ("test_softmax_softmax",)
CROSS_ENTROPY = ("test_softmax_cross_entropy",)

RELU_FORWARD = ("        kept = ~(a <= 0)                    # positive or NaN: torch keeps NaN, and its gradient\n"
                "        ctx.save_for_backward(kept)\n"
                "        return np.where(a < 0, 0, a)        # -0.0 and NaN stay as they are")
RELU_BACKWARD = ("        (kept,) = ctx.saved_tensors\n"
                 "        return np.where(kept, grad, 0)      # not grad * kept: inf * 0 is NaN, torch gives 0")
BACKWARD = "\n\n    @staticmethod\n    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:\n"
"""the lines between a rule's forward and backward bodies, in a filled submission (markers removed)"""


def _variant(cell: str, *replacements: tuple[str, str]) -> str:
    """The source solution of an answer cell with each `old` (occurring exactly once) replaced by `new`."""
    source = nbk.read(build.source_path(CHAPTER))
    (code,) = [nbk.solution_code(c.source) for c in source.cells if nbk.is_solution(c) and nbk.grade_id(c) == cell]
    for old, new in replacements:
        if code.count(old) != 1:
            raise ValueError(f"alternative of {cell}: {old!r} occurs {code.count(old)} times; update the catalogue")
        code = code.replace(old, new)
    return code


MUTANTS = [
    # --- Exercise 1: unbroadcast ----------------------------------------------------------------
    Mutant("unbroadcast_size0_not_stretched", "an axis counts as stretched only when it grew beyond 1: a size-1 axis "
           "broadcast over an empty batch (size 0) is kept, and the reshape fails", "unbroadcast",
           "size == 1 and grad.shape[i] != 1", "size == 1 and grad.shape[i] > 1", UNBROADCAST, visible=True),
    Mutant("unbroadcast_leading_only", "sums the missing leading axes but not the stretched size-1 axes",
           "unbroadcast",
           "    if stretched:\n        grad = grad.sum(axis=stretched, keepdims=True)          # size-1 axes that were stretched\n",
           "", UNBROADCAST, visible=True),
    Mutant("unbroadcast_trailing_axes", "aligns shapes from the left: sums the trailing extra axes, not the leading ones",
           "unbroadcast", "grad = grad.sum(axis=tuple(range(leading)))",
           "grad = grad.sum(axis=tuple(range(len(shape), grad.ndim)))", UNBROADCAST, visible=True),
    # --- Exercise 2: gradcheck (verdicts) ---------------------------------------------------------
    Mutant("gradcheck_forward_difference", "forward differences: an error of about eps |f''| / 2",
           "gradcheck",
           "data[k] = original - eps\n"
           "            minus = np.array(fn(*inputs).data, dtype=np.float64)\n"
           "            data[k] = original\n"
           "            numerical[(...,) + k] = (plus - minus) / (2 * eps)",
           "data[k] = original\n"
           "            minus = np.array(fn(*inputs).data, dtype=np.float64)\n"
           "            numerical[(...,) + k] = (plus - minus) / eps", GRADCHECK, visible=True),
    Mutant("gradcheck_first_element_only", "compares only the first entry of each Jacobian", "gradcheck",
           "if not agree.all():", "if not agree.flat[0]:", GRADCHECK, visible=True),
    Mutant("gradcheck_input_not_restored", "leaves each perturbed element at original - eps", "gradcheck",
           "            data[k] = original\n", "", GRADCHECK, visible=True),
    Mutant("gradcheck_absolute_tolerance_only", "compares with atol only: large correct gradients fail",
           "gradcheck", "agree = np.abs(analytical[i] - numerical) <= atol + rtol * np.abs(numerical)",
           "agree = np.abs(analytical[i] - numerical) <= atol", GRADCHECK, visible=True),
    # --- Exercise 2: gradcheck (the error report) -------------------------------------------------
    Mutant("gradcheck_reports_jacobian_index", "the message gives the Jacobian entry's index, not the input element's",
           "gradcheck", "k = where[analytical[i].ndim - data.ndim:]", "k = where", REPORT, visible=True),
    Mutant("gradcheck_never_raises", "returns False whatever raise_exception says", "gradcheck",
           "            if raise_exception:\n"
           "                raise GradcheckError(f\"gradcheck: Jacobian mismatch for input {i} at element {k}: backward gives \"\n"
           "                                     f\"{analytical[i][where]:.8g}, central differences {numerical[where]:.8g}\")\n",
           "", REPORT, visible=True),
    # --- Exercise 3: arithmetic -------------------------------------------------------------------
    Mutant("sub_keeps_chapter2_rule", "Sub returns g and -g as they are: no sum_to (unbroadcast)",
           "arithmetic_rules", "return sum_to(grad, ctx.a_shape), sum_to(-grad, ctx.b_shape)",
           "return grad, -grad", ADD_SUB, visible=True),
    Mutant("sub_shapes_swapped", "Sub unbroadcasts a's gradient to b's shape and b's to a's", "arithmetic_rules",
           "return sum_to(grad, ctx.a_shape), sum_to(-grad, ctx.b_shape)",
           "return sum_to(grad, ctx.b_shape), sum_to(-grad, ctx.a_shape)", ADD_SUB, visible=True),
    Mutant("sub_second_not_negated", "the gradient of b in a - b is +g", "arithmetic_rules",
           "sum_to(-grad, ctx.b_shape)", "sum_to(grad, ctx.b_shape)", ADD_SUB, visible=True),
    Mutant("mul_gradients_swapped", "a's gradient multiplied by a, b's by b", "arithmetic_rules",
           "return sum_to(grad * b, a.shape), sum_to(grad * a, b.shape)",
           "return sum_to(grad * a, a.shape), sum_to(grad * b, b.shape)", MUL_DIV, visible=True),
    Mutant("mul_keeps_chapter2_rule", "Mul without unbroadcast: a bias gets a gradient of the output's shape",
           "arithmetic_rules", "return sum_to(grad * b, a.shape), sum_to(grad * a, b.shape)",
           "return grad * b, grad * a", MUL_DIV, visible=True),
    Mutant("div_missing_square", "d(a/b)/db taken as -a/b instead of -a/b**2", "arithmetic_rules",
           "-grad * (a / b / b)", "-grad * (a / b)", MUL_DIV, visible=True),
    Mutant("pow_exponent_not_decremented", "power rule p a**p instead of p a**(p-1)", "arithmetic_rules",
           "a ** (ctx.exponent - 1)", "a ** ctx.exponent", POW, visible=True),
    Mutant("pow_divides_by_base", "p a**p / a: NaN at a = 0 for every p", "arithmetic_rules",
           "return grad * ctx.exponent * a ** (ctx.exponent - 1)", "return grad * ctx.exponent * a ** ctx.exponent / a",
           POW, visible=True),
    Mutant("pow_zero_exponent_nan", "no case for p = 0: 0 * 0 ** -1 is NaN at a = 0, where torch gives 0",
           "arithmetic_rules",
           "        if ctx.exponent == 0:\n"
           "            return np.zeros_like(grad)          # a ** 0 is constant: its gradient is 0, also where a == 0\n",
           "", POW, visible=True),
    Mutant("pow_zero_exponent_none", "returns None for p = 0 (no gradient through a constant): torch gives zeros",
           "arithmetic_rules", "            return np.zeros_like(grad)          # a ** 0 is constant: its gradient is 0, "
           "also where a == 0", "            return None", POW, visible=True),
    Mutant("pow_exponent_as_array", "keeps the exponent as a NumPy array: a float32 gradient becomes float64",
           "arithmetic_rules", "        ctx.exponent = exponent", "        ctx.exponent = np.array(exponent)", POW,
           visible=True),
    # --- Exercise 4: functions of one input ------------------------------------------------------
    Mutant("log_divides_by_output", "Log saves its output y = log a, and backward computes grad / y",
           "unary_rules", "        ctx.save_for_backward(a)\n        return np.log(a)",
           "        out = np.log(a)\n        ctx.save_for_backward(out)\n        return out", NEG_EXP_LOG, visible=True),
    Mutant("tanh_missing_square", "tanh derivative 1 - y instead of 1 - y**2", "unary_rules",
           "grad * (1.0 - y * y)", "grad * (1.0 - y)", TANH_SIGMOID, visible=True),
    Mutant("tanh_exp_ratio", "tanh as (e^a - e^-a) / (e^a + e^-a): inf / inf = NaN beyond |a| = 89 in float32",
           "unary_rules", "        y = np.tanh(a)", "        y = (np.exp(a) - np.exp(-a)) / (np.exp(a) + np.exp(-a))",
           TANH_SIGMOID, visible=True),
    Mutant("tanh_saves_input", "Tanh saves its input and recomputes tanh in backward (right values, wrong saves)",
           "unary_rules",
           "        y = np.tanh(a)\n        ctx.save_for_backward(y)\n        return y" + BACKWARD +
           "        (y,) = ctx.saved_tensors\n        return grad * (1.0 - y * y)",
           "        ctx.save_for_backward(a)\n        return np.tanh(a)" + BACKWARD +
           "        (a,) = ctx.saved_tensors\n        return grad * (1.0 - np.tanh(a) ** 2)", TANH_SIGMOID, visible=True),
    Mutant("tanh_overwrites_input", "computes tanh into the input's own array to save an allocation: the caller's "
           "tensor changes", "unary_rules", "        y = np.tanh(a)\n", "        y = np.tanh(a, out=a)\n", TANH_SIGMOID,
           visible=True),
    Mutant("sigmoid_missing_factor", "sigmoid derivative 1 - s instead of s(1 - s)", "unary_rules",
           "grad * s * (1.0 - s)", "grad * (1.0 - s)", TANH_SIGMOID, visible=True),
    Mutant("sigmoid_exp_ratio", "sigmoid as e^a / (1 + e^a): inf / inf = NaN beyond a = 88 in float32",
           "unary_rules", "            s = 1.0 / (1.0 + np.exp(-a))", "            s = np.exp(a) / (1.0 + np.exp(a))",
           TANH_SIGMOID, visible=True),
    Mutant("relu_mask_includes_zero", "mask a >= 0: gradient 1 at exactly 0, where torch gives 0", "unary_rules",
           "kept = ~(a <= 0)", "kept = ~(a < 0)", RELU, visible=True),
    Mutant("relu_saves_input", "ReLU saves the float input instead of a boolean mask", "unary_rules",
           RELU_FORWARD + BACKWARD + RELU_BACKWARD,
           "        ctx.save_for_backward(a)\n        return np.maximum(a, 0)" + BACKWARD +
           "        (a,) = ctx.saved_tensors\n        return grad * (a > 0)", RELU, visible=True),
    Mutant("relu_float64_mask", "selects with a float64 zero: a float32 gradient becomes float64",
           "unary_rules", "np.where(kept, grad, 0)", "np.where(kept, grad, np.float64(0))", RELU, visible=True),
    Mutant("relu_backward_edits_upstream", "zeroes the upstream gradient in place, which other nodes may share",
           "unary_rules", "        return np.where(kept, grad, 0)", "        grad[~kept] = 0\n        return grad", RELU,
           visible=True),
    # --- Exercise 5: reductions and indexing --------------------------------------------------
    Mutant("mean_axes_not_restored", "Mean broadcasts g / N without putting the reduced axes back (no expand_reduced): "
           "without keepdims it lines up with the wrong axes", "reduction_rules",
           "expand_reduced(grad, ctx.axes, ctx.keepdims) / ctx.count", "grad / ctx.count", SUM_MEAN, visible=True),
    Mutant("max_axes_not_restored", "Max multiplies g by the shares without putting the reduced axes back",
           "reduction_rules", "return expand_reduced(grad, ctx.axes, ctx.keepdims) * share", "return grad * share",
           MAX, visible=True),
    Mutant("mean_missing_count", "mean's gradient without the 1/N", "reduction_rules",
           "expand_reduced(grad, ctx.axes, ctx.keepdims) / ctx.count",
           "expand_reduced(grad, ctx.axes, ctx.keepdims)", SUM_MEAN, visible=True),
    Mutant("mean_count_float64", "divides by np.prod(...), an int64 NumPy scalar: float32 gradients become float64",
           "reduction_rules", "ctx.count = int(np.prod([a.shape[d] for d in ctx.axes]))",
           "ctx.count = np.prod([a.shape[d] for d in ctx.axes])", SUM_MEAN, visible=True),
    Mutant("max_every_tie_full", "every tied maximum receives the whole gradient", "reduction_rules",
           "share = winners / winners.sum(axis=ctx.axes, keepdims=True)", "share = winners", MAX, visible=True),
    Mutant("max_share_float64", "ties counted with a boolean sum (int64): float32 gradients come back as float64",
           "reduction_rules", "winners = (a == top).astype(grad.dtype)", "winners = a == top", MAX, visible=True),
    Mutant("max_isclose_ties", "ties found with np.isclose: an element close to the maximum takes a share",
           "reduction_rules", "winners = (a == top).astype(grad.dtype)",
           "winners = np.isclose(a, top).astype(grad.dtype)", MAX, visible=True),
    Mutant("getitem_array_per_element", "backward builds a full-size array for each picked element and sums them: "
           "memory grows as input size times output size, and on a large input the cell runs out of memory with the "
           "arrays still held by its traceback (the harness frees them, so only this exercise loses)",
           "reduction_rules",
           "        grad_in = np.zeros(ctx.shape, dtype=grad.dtype)\n        np.add.at(grad_in, ctx.index, grad)\n"
           "        return grad_in",
           "        grad_in = np.zeros(ctx.shape, dtype=grad.dtype)\n"
           "        source = np.arange(grad_in.size).reshape(ctx.shape)[ctx.index].ravel()  # where each came from\n"
           "        parts = []\n"
           "        for g, k in zip(np.asarray(grad).ravel(), source):\n"
           "            one = np.zeros(ctx.shape, dtype=grad.dtype)\n"
           "            one.flat[k] = g\n"
           "            parts.append(one)\n"
           "        return sum(parts, grad_in)", GETITEM, visible=False,
           hidden_because="its values are right; only an input large enough to exhaust memory shows it"),
    Mutant("getitem_assigns", "g[index] += grad: repeated indices keep only one contribution", "reduction_rules",
           "np.add.at(grad_in, ctx.index, grad)", "grad_in[ctx.index] += grad", GETITEM, visible=True),
    Mutant("getitem_keeps_callers_index", "keeps the caller's index object: a list changed between forward and "
           "backward sends the gradient to the wrong places (torch keeps its own copy)", "reduction_rules",
           "ctx.shape, ctx.index = a.shape, copy.deepcopy(index)", "ctx.shape, ctx.index = a.shape, index", GETITEM,
           visible=True),
    Mutant("getitem_zeros_float64", "scatters into np.zeros(shape), float64: float32 gradients become float64",
           "reduction_rules", "grad_in = np.zeros(ctx.shape, dtype=grad.dtype)", "grad_in = np.zeros(ctx.shape)",
           GETITEM, visible=True),
    # --- Exercise 6: softmax, cross-entropy, layer norm -----------------------------------------
    Mutant("softmax_backward_no_subtraction", "softmax VJP y * g, the diagonal of the Jacobian only", "softmax_rules",
           "return y * (grad - np.sum(grad * y, axis=ctx.axis, keepdims=True))", "return y * grad", SOFTMAX, visible=True),
    Mutant("softmax_no_max_shift", "exp of the raw logits: overflows to inf/inf = nan for large inputs",
           "softmax_rules", "e = np.exp(a - np.max(a, axis=axis, keepdims=True))", "e = np.exp(a)", SOFTMAX, visible=True),
    Mutant("softmax_builds_jacobian", "right values, but backward builds the (n, n) Jacobian of every row",
           "softmax_rules", "        return y * (grad - np.sum(grad * y, axis=ctx.axis, keepdims=True))",
           "        y_last, g_last = np.moveaxis(y, ctx.axis, -1), np.moveaxis(grad, ctx.axis, -1)\n"
           "        jacobian = y_last[..., :, None] * (np.eye(y_last.shape[-1], dtype=y.dtype) - y_last[..., None, :])\n"
           "        return np.moveaxis(np.einsum('...i,...ij->...j', g_last, jacobian), -1, ctx.axis)",
           SOFTMAX, visible=True),
    Mutant("softmax_saves_input", "Softmax saves its input and recomputes the output in backward", "softmax_rules",
           "        ctx.save_for_backward(y)\n        ctx.axis = axis\n        return y" + BACKWARD +
           "        (y,) = ctx.saved_tensors\n",
           "        ctx.save_for_backward(a)\n        ctx.axis = axis\n        return y" + BACKWARD +
           "        (a,) = ctx.saved_tensors\n"
           "        e = np.exp(a - np.max(a, axis=ctx.axis, keepdims=True))\n"
           "        y = e / np.sum(e, axis=ctx.axis, keepdims=True)\n", SOFTMAX, visible=True),
    Mutant("cross_entropy_no_mean", "cross-entropy gradient softmax - onehot without the 1/N of the mean",
           "softmax_rules", "return grad_logits * (grad / len(targets))", "return grad_logits * grad", CROSS_ENTROPY,
           visible=True),
    Mutant("cross_entropy_edits_saved_probs", "subtracts the one-hot from the saved probabilities in place: "
           "a second backward on the same graph gives another gradient", "softmax_rules",
           "        grad_logits = probs.copy()\n", "        grad_logits = probs\n", CROSS_ENTROPY, visible=True),
    Mutant("cross_entropy_no_max_shift", "cross-entropy without the shift: inf - inf for large logits", "softmax_rules",
           "shifted = logits - np.max(logits, axis=1, keepdims=True)", "shifted = logits", CROSS_ENTROPY, visible=True),
    # --- concept checks -------------------------------------------------------------------------
    Mutant("concept_jacobian_is_w", "takes the Jacobian of y = Wx with respect to W to be W", "concept_jacobian",
           'answer_jacobian = "d"', 'answer_jacobian = "a"', ("test_concept_jacobian",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_saved_smaller", "believes outputs are saved because they are smaller", "concept_saved",
           'answer_saved = "c"', 'answer_saved = "a"', ("test_concept_saved",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_softmax_sum_diagonal", "takes log_softmax(x).sum() for a constant, as softmax(x).sum() is",
           "concept_softmax_sum", 'answer_softmax_sum = "b"', 'answer_softmax_sum = "a"', ("test_concept_softmax_sum",),
           visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_float32_truncation", "blames truncation error for float32's failure", "concept_float32",
           'answer_float32 = "a"', 'answer_float32 = "c"', ("test_concept_float32",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
]

ALTERNATIVES = [
    Alternative("unbroadcast_axis_loop", "sums one axis at a time in a loop, no final reshape", "unbroadcast",
                '''def unbroadcast(grad, shape):
    """Sum grad down to shape: the extra leading axes one by one, then each stretched size-1 axis."""
    grad = np.asarray(grad)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad'''),
    Alternative("arithmetic_calls_unbroadcast", "the rules call Exercise 1's unbroadcast directly instead of sum_to",
                "arithmetic_rules", _variant("arithmetic_rules").replace("sum_to(", "unbroadcast(")),
    Alternative("div_saves_output", "Div saves b and the quotient: d(a/b)/db = -(a/b)/b", "arithmetic_rules",
                _variant("arithmetic_rules",
                         ("        ctx.save_for_backward(a, b)\n        return a / b",
                          "        out = a / b\n        ctx.a_shape = a.shape\n        ctx.save_for_backward(b, out)\n"
                          "        return out"),
                         ("        a, b = ctx.saved_tensors\n"
                          "        return sum_to(grad / b, a.shape), sum_to(-grad * (a / b / b), b.shape)  # as torch: b * b "
                          "underflows",
                          "        b, out = ctx.saved_tensors\n"
                          "        return sum_to(grad / b, ctx.a_shape), sum_to(-grad * out / b, b.shape)"))),
    Alternative("max_saves_mask_mean_by_reciprocal",
                "Max saves a boolean mask of the maxima; Mean multiplies by 1/N",
                "reduction_rules",
                _variant("reduction_rules",
                         ("        top = np.max(a, axis=axes, keepdims=True)\n        ctx.save_for_backward(a, top)\n",
                          "        top = np.max(a, axis=axes, keepdims=True)\n        ctx.save_for_backward(a == top)\n"),
                         ("        a, top = ctx.saved_tensors\n"
                          "        winners = (a == top).astype(grad.dtype)                         # 1 where the maximum is attained\n"
                          "        share = winners / winners.sum(axis=ctx.axes, keepdims=True)     # ties split the gradient equally\n"
                          "        return expand_reduced(grad, ctx.axes, ctx.keepdims) * share",
                          "        (mask,) = ctx.saved_tensors\n"
                          "        ties = mask.sum(axis=ctx.axes, keepdims=True).astype(grad.dtype)\n"
                          "        return np.where(mask, expand_reduced(grad, ctx.axes, ctx.keepdims) / ties, 0)"),
                         ("expand_reduced(grad, ctx.axes, ctx.keepdims) / ctx.count",
                          "expand_reduced(grad, ctx.axes, ctx.keepdims) * (1.0 / ctx.count)"))),
    Alternative("softmax_einsum_cross_entropy_onehot",
                "softmax VJP with einsum over the moved axis; cross-entropy with an explicit one-hot matrix",
                "softmax_rules",
                _variant("softmax_rules",
                         ("        (y,) = ctx.saved_tensors\n"
                          "        return y * (grad - np.sum(grad * y, axis=ctx.axis, keepdims=True))",
                          "        (y,) = ctx.saved_tensors\n"
                          "        y_last, g_last = np.moveaxis(y, ctx.axis, -1), np.moveaxis(grad, ctx.axis, -1)\n"
                          "        dot = np.einsum('...i,...i->...', g_last, y_last)[..., np.newaxis]\n"
                          "        return np.moveaxis(y_last * (g_last - dot), -1, ctx.axis)"),
                         ("        grad_logits = probs.copy()\n"
                          "        grad_logits[np.arange(len(targets)), targets] -= 1.0     # softmax - onehot\n",
                          "        onehot = np.eye(probs.shape[1], dtype=probs.dtype)[targets]\n"
                          "        grad_logits = probs - onehot\n"))),
    Alternative("gradcheck_flat_copies", "flat indices, each perturbation on a copy assigned to .data and then undone",
                "gradcheck", '''class GradcheckError(RuntimeError):
    """An analytical gradient disagrees with central differences."""


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Jacobians compared input by input, over flat indices; each perturbation on a copy of the data."""
    inputs = list(inputs)
    size = fn(*inputs).data.size
    for i, x in enumerate(inputs):
        if not x.requires_grad:
            continue
        original = x.data
        numeric = np.empty((size, original.size))
        for k in range(original.size):
            values = []
            for sign in (1.0, -1.0):
                moved = original.copy()
                moved.flat[k] += sign * eps
                x.data = moved
                values.append(np.asarray(fn(*inputs).data, dtype=np.float64).ravel())
            x.data = original
            numeric[:, k] = (values[0] - values[1]) / (2 * eps)
        analytic = np.zeros((size, original.size))
        for j in range(size):
            for t in inputs:
                t.grad = None
            y = fn(*inputs)
            seed = np.zeros(size, dtype=y.dtype)
            seed[j] = 1
            y.backward(seed.reshape(y.shape))
            if x.grad is not None:
                analytic[j] = x.grad.data.ravel()
        bad = np.argwhere(~(np.abs(analytic - numeric) <= atol + rtol * np.abs(numeric)))
        if len(bad):
            j, k = bad[0]
            index = tuple(int(n) for n in np.unravel_index(k, original.shape))
            if raise_exception:
                raise GradcheckError(f"mismatch for input {i}, element {index}: analytical {analytic[j, k]}, "
                                     f"numerical {numeric[j, k]}")
            return False
    return True'''),
    Alternative("sigmoid_via_tanh_relu_by_where",
                "Sigmoid through the identity (1 + tanh(a/2)) / 2, saving its output; ReLU's forward by np.maximum and "
                "backward by np.where on the saved mask (replaces sigmoid_via_exp_relu_from_output, which saved "
                "sigmoid's input and ReLU's float output: what a rule saves is graded now)",
                "unary_rules",
                _variant("unary_rules",
                         ("        with np.errstate(over=\"ignore\"):      # e ** -a overflows to inf for very negative a: "
                          "1 / inf = 0 is right\n            s = 1.0 / (1.0 + np.exp(-a))\n",
                          "        s = 0.5 * (1.0 + np.tanh(0.5 * a))\n"),
                         ("        return np.where(a < 0, 0, a) ", "        return np.maximum(a, 0) "),
                         ("        return np.where(kept, grad, 0) ",
                          "        out = np.zeros_like(grad)\n        out[kept] = grad[kept]\n        return out "))),
    Alternative("sigmoid_logaddexp", "Sigmoid as exp(-log(1 + e^-a)) with np.logaddexp: no overflow, no warning",
                "unary_rules",
                _variant("unary_rules",
                         ("        with np.errstate(over=\"ignore\"):      # e ** -a overflows to inf for very negative a: "
                          "1 / inf = 0 is right\n            s = 1.0 / (1.0 + np.exp(-a))\n",
                          "        s = np.exp(-np.logaddexp(0.0, -a))\n"))),
    Alternative("sub_negates_after_unbroadcast_pow_conditional",
                "Sub negates after unbroadcasting; Pow's zero exponent handled in one conditional expression",
                "arithmetic_rules",
                _variant("arithmetic_rules",
                         ("return sum_to(grad, ctx.a_shape), sum_to(-grad, ctx.b_shape)",
                          "return sum_to(grad, ctx.a_shape), -sum_to(grad, ctx.b_shape)"),
                         ("        if ctx.exponent == 0:\n"
                          "            return np.zeros_like(grad)          # a ** 0 is constant: its gradient is 0, also "
                          "where a == 0\n"
                          "        return grad * ctx.exponent * a ** (ctx.exponent - 1)",
                          "        p = ctx.exponent\n"
                          "        return grad * p * a ** (p - 1) if p != 0 else np.zeros_like(grad)"))),
    Alternative("shape_ops_by_permutations",
                "Mean's backward multiplies by ones; Transpose and Permute build their inverse permutations by hand",
                "reduction_rules",
                _variant("reduction_rules",
                         ("return np.broadcast_to(expand_reduced(grad, ctx.axes, ctx.keepdims) / ctx.count, ctx.shape).copy()",
                          "return np.ones(ctx.shape, dtype=grad.dtype) * (expand_reduced(grad, ctx.axes, ctx.keepdims) / ctx.count)"),
                         ("        return np.swapaxes(grad, ctx.dim0, ctx.dim1)",
                          "        order = list(range(grad.ndim))\n"
                          "        order[ctx.dim0], order[ctx.dim1] = order[ctx.dim1], order[ctx.dim0]\n"
                          "        return np.transpose(grad, order)"),
                         ("        return np.transpose(grad, np.argsort(ctx.dims))",
                          "        inverse = [0] * len(ctx.dims)\n"
                          "        for position, axis in enumerate(ctx.dims):\n"
                          "            inverse[axis] = position\n"
                          "        return np.transpose(grad, inverse)"))),
    Alternative("cross_entropy_saves_log_probs",
                "CrossEntropy saves the log-probabilities and exponentiates them in backward; one-hot from np.eye",
                "softmax_rules",
                _variant("softmax_rules",
                         ("        ctx.save_for_backward(np.exp(log_probs), targets)",
                          "        ctx.save_for_backward(log_probs, targets)"),
                         ("        probs, targets = ctx.saved_tensors\n"
                          "        grad_logits = probs.copy()\n"
                          "        grad_logits[np.arange(len(targets)), targets] -= 1.0     # softmax - onehot\n",
                          "        log_probs, targets = ctx.saved_tensors\n"
                          "        grad_logits = np.exp(log_probs) - np.eye(log_probs.shape[1], dtype=log_probs.dtype)[targets]\n"))),
    Alternative("gradcheck_numpy_index_repr",
                "the reference, with the element's index a tuple of NumPy ints: the message reads (np.int64(0), "
                "np.int64(2)) under NumPy 2, which the exercise accepts",
                "gradcheck",
                _variant("gradcheck",
                         ("where = tuple(int(n) for n in np.argwhere(~agree)[0])",
                          "where = tuple(np.argwhere(~agree)[0])"))),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("relu_mask_includes_zero", "getitem_assigns", "cross_entropy_no_mean")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
