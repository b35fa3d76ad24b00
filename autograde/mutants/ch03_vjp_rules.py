"""Mutants and alternatives for ch03_vjp_rules (loaded by autograde.build.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the
test cells that must then score 0. The rules of Exercises 2 and 4 call `unbroadcast`,
so a broken unbroadcast also costs their tests; every other test cell uses only its own
exercise's code (the gradcheck and SGD tests define their own Functions). Each
alternative replaces a whole answer cell by another correct answer and must keep full
marks; most are the source's solution with one or two rules written differently.
"""
from autograde.build import products as build
from autograde import notebook as nbk
from autograde.build.catalogue import Alternative, ExampleStudent, Mutant

CHAPTER = "ch03_vjp_rules"
UNBROADCAST = ("test_unbroadcast",)
ARITHMETIC = ("test_arithmetic_rules",)
UNARY = ("test_unary_rules",)
MATMUL = ("test_matmul_rule",)
REDUCTIONS = ("test_reduction_rules",)
SOFTMAX = ("test_softmax_rules",)
GRADCHECK = ("test_gradcheck",)
CUSTOM = ("test_custom_functions_and_sgd",)


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
    # --- unbroadcast (used by the rules of Exercises 2 and 4) ----------------------------------
    Mutant("unbroadcast_leading_only", "sums the missing leading axes but not the stretched size-1 axes",
           "unbroadcast",
           "    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)\n"
           "    if stretched:\n"
           "        grad = grad.sum(axis=stretched, keepdims=True)          # size-1 axes that were stretched\n",
           "", UNBROADCAST + ARITHMETIC + MATMUL, visible=True),
    Mutant("unbroadcast_trailing_axes", "aligns shapes from the left: sums the trailing extra axes, not the leading ones",
           "unbroadcast", "grad = grad.sum(axis=tuple(range(leading)))",
           "grad = grad.sum(axis=tuple(range(len(shape), grad.ndim)))", UNBROADCAST + ARITHMETIC + MATMUL, visible=True),
    # --- arithmetic -----------------------------------------------------------------------------
    Mutant("add_keeps_chapter2_rule", "Add returns the upstream gradient as is: no unbroadcast",
           "arithmetic_rules", "return unbroadcast(grad, ctx.a_shape), unbroadcast(grad, ctx.b_shape)",
           "return grad, grad", ARITHMETIC, visible=False,
           hidden_because='to be made visible (issue 8): no visible bias case'),
    Mutant("sub_second_not_negated", "the gradient of b in a - b is +g", "arithmetic_rules",
           "unbroadcast(-grad, ctx.b_shape)", "unbroadcast(grad, ctx.b_shape)", ARITHMETIC, visible=True),
    Mutant("mul_gradients_swapped", "a's gradient multiplied by a, b's by b", "arithmetic_rules",
           "return unbroadcast(grad * b, a.shape), unbroadcast(grad * a, b.shape)",
           "return unbroadcast(grad * a, a.shape), unbroadcast(grad * b, b.shape)", ARITHMETIC, visible=True),
    Mutant("div_missing_square", "d(a/b)/db taken as -a/b instead of -a/b**2", "arithmetic_rules",
           "-grad * a / (b * b)", "-grad * a / b", ARITHMETIC, visible=True),
    Mutant("pow_exponent_not_decremented", "power rule p a**p instead of p a**(p-1)", "arithmetic_rules",
           "a ** (ctx.exponent - 1)", "a ** ctx.exponent", ARITHMETIC, visible=True),
    # --- unary ----------------------------------------------------------------------------------
    Mutant("log_divides_by_output", "Log saves its output y = log a, and backward computes grad / y",
           "unary_rules", "        ctx.save_for_backward(a)\n        return np.log(a)",
           "        out = np.log(a)\n        ctx.save_for_backward(out)\n        return out", UNARY, visible=True),
    Mutant("tanh_missing_square", "tanh derivative 1 - y instead of 1 - y**2", "unary_rules",
           "grad * (1.0 - y * y)", "grad * (1.0 - y)", UNARY, visible=False,
           hidden_because='to be made visible (issue 8): checked only at x = 0, where y = 0'),
    Mutant("sigmoid_missing_factor", "sigmoid derivative 1 - s instead of s(1 - s)", "unary_rules",
           "grad * s * (1.0 - s)", "grad * (1.0 - s)", UNARY, visible=True),
    Mutant("relu_mask_includes_zero", "mask a >= 0: gradient 1 at exactly 0, where torch gives 0", "unary_rules",
           "positive = a > 0", "positive = a >= 0", UNARY, visible=True),
    # --- matmul ---------------------------------------------------------------------------------
    Mutant("matmul_batch_not_reduced", "no unbroadcast: the gradient of a broadcast batch keeps the output's batch shape",
           "matmul_rule",
           "return unbroadcast(grad_a, a2.shape).reshape(a.shape), unbroadcast(grad_b, b2.shape).reshape(b.shape)",
           "return grad_a.reshape(a.shape), grad_b.reshape(b.shape)", MATMUL, visible=True),
    Mutant("matmul_transposes_swapped", "dL/dB as G^T A (the transpose of A^T G)", "matmul_rule",
           "grad_b = np.swapaxes(a2, -1, -2) @ g", "grad_b = np.swapaxes(g, -1, -2) @ a2", MATMUL, visible=True),
    # --- reductions and shape ops ---------------------------------------------------------------
    Mutant("reduction_axes_not_restored", "no expand_dims: without keepdims the gradient broadcasts along the wrong axes",
           "reduction_rules", "return grad if keepdims else np.expand_dims(grad, axes)", "return grad", REDUCTIONS, visible=True),
    Mutant("mean_missing_count", "mean's gradient without the 1/N", "reduction_rules",
           "expand_reduced(grad, ctx.axes, ctx.keepdims) / ctx.count",
           "expand_reduced(grad, ctx.axes, ctx.keepdims)", REDUCTIONS, visible=True),
    Mutant("max_every_tie_full", "every tied maximum receives the whole gradient", "reduction_rules",
           "share = winners / winners.sum(axis=ctx.axes, keepdims=True)", "share = winners", REDUCTIONS, visible=True),
    Mutant("max_share_float64", "ties counted with a boolean sum (int64): float32 gradients come back as float64",
           "reduction_rules", "winners = (a == top).astype(grad.dtype)", "winners = a == top", REDUCTIONS, visible=False,
           hidden_because='to be made visible (issue 8): no visible float32 tie'),
    Mutant("getitem_assigns", "g[index] += grad: repeated indices keep only one contribution", "reduction_rules",
           "np.add.at(grad_in, ctx.index, grad)", "grad_in[ctx.index] += grad", REDUCTIONS, visible=True),
    Mutant("permute_not_inverted", "backward applies the permutation again instead of its inverse", "reduction_rules",
           "np.transpose(grad, np.argsort(ctx.dims))", "np.transpose(grad, ctx.dims)", REDUCTIONS, visible=True),
    # --- softmax, cross-entropy, layer norm -----------------------------------------------------
    Mutant("softmax_backward_no_subtraction", "softmax VJP y * g, the diagonal of the Jacobian only", "softmax_rules",
           "return y * (grad - np.sum(grad * y, axis=ctx.axis, keepdims=True))", "return y * grad", SOFTMAX, visible=True),
    Mutant("softmax_no_max_shift", "exp of the raw logits: overflows to inf/inf = nan for large inputs",
           "softmax_rules", "e = np.exp(a - np.max(a, axis=axis, keepdims=True))", "e = np.exp(a)", SOFTMAX, visible=True),
    Mutant("log_softmax_backward_no_sum", "log-softmax VJP g - softmax * g, without the sum over the axis",
           "softmax_rules", "return grad - np.exp(out) * np.sum(grad, axis=ctx.axis, keepdims=True)",
           "return grad - np.exp(out) * grad", SOFTMAX, visible=False,
           hidden_because='to be made visible (issue 8): log_softmax has no visible check'),
    Mutant("cross_entropy_no_mean", "cross-entropy gradient softmax - onehot without the 1/N of the mean",
           "softmax_rules", "return grad_logits * (grad / len(targets))", "return grad_logits * grad", SOFTMAX, visible=True),
    Mutant("layer_norm_missing_term", "layer-norm VJP without the path through the standard deviation",
           "softmax_rules", "return rstd * (grad - through_mean - through_std)", "return rstd * (grad - through_mean)",
           SOFTMAX, visible=True),
    # --- gradcheck ------------------------------------------------------------------------------
    Mutant("gradcheck_forward_difference", "forward differences: an error of about eps |f''| / 2",
           "gradcheck",
           "data[k] = original - eps\n"
           "            minus = np.array(fn(*inputs).data, dtype=np.float64)\n"
           "            data[k] = original\n"
           "            numerical[(...,) + k] = (plus - minus) / (2 * eps)",
           "data[k] = original\n"
           "            minus = np.array(fn(*inputs).data, dtype=np.float64)\n"
           "            numerical[(...,) + k] = (plus - minus) / eps", GRADCHECK, visible=False,
           hidden_because='to be made visible (issue 8): the visible rule is linear'),
    Mutant("gradcheck_first_element_only", "compares only the first entry of each Jacobian", "gradcheck",
           "if not agree.all():", "if not agree.flat[0]:", GRADCHECK, visible=False,
           hidden_because='to be made visible (issue 8): the visible wrong rule is wrong at the first entry'),
    Mutant("gradcheck_grads_not_cleared", "never resets .grad: each analytical row adds up all the previous ones",
           "gradcheck", "        for i in checked:\n            inputs[i].grad = None\n", "", GRADCHECK, visible=True),
    # --- custom functions and the training step -------------------------------------------------
    Mutant("logsumexp_no_max_shift", "log(sum(exp(a))) computed directly: overflows for large inputs",
           "custom_functions", "out = top + np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True))",
           "out = np.log(np.sum(np.exp(a), axis=axis, keepdims=True))", CUSTOM, visible=True),
    Mutant("round_ste_true_derivative", "backward uses round's true derivative, 0: no gradient gets through",
           "custom_functions", "return grad  # the straight-through estimator: backward as if forward were the identity",
           "return np.zeros_like(grad)  # round is flat almost everywhere", CUSTOM, visible=True),
    Mutant("sgd_no_zero_grad", "never clears .grad: every step descends along the sum of all past gradients",
           "sgd_step",
           "    for p in params:\n"
           "        p.grad = None                   # this step's gradients replace the last step's, never add to them\n",
           "", CUSTOM, visible=True),
    # --- concept checks -------------------------------------------------------------------------
    Mutant("concept_jacobian_is_w", "takes the Jacobian of y = Wx with respect to W to be W", "concept_jacobian",
           'answer_jacobian = "b"', 'answer_jacobian = "a"', ("test_concept_jacobian",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_saved_smaller", "believes outputs are saved because they are smaller", "concept_saved",
           'answer_saved = "b"', 'answer_saved = "a"', ("test_concept_saved",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_softmax_sum_diagonal", "takes the diagonal of the softmax Jacobian", "concept_softmax_sum",
           'answer_softmax_sum = "c"', 'answer_softmax_sum = "b"', ("test_concept_softmax_sum",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_float32_truncation", "blames truncation error for float32's failure", "concept_float32",
           'answer_float32 = "b"', 'answer_float32 = "c"', ("test_concept_float32",), visible=False,
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
    Alternative("div_saves_output", "Div saves b and the quotient: d(a/b)/db = -(a/b)/b", "arithmetic_rules",
                _variant("arithmetic_rules",
                         ("        ctx.save_for_backward(a, b)\n        return a / b",
                          "        out = a / b\n        ctx.a_shape = a.shape\n        ctx.save_for_backward(b, out)\n"
                          "        return out"),
                         ("        a, b = ctx.saved_tensors\n"
                          "        return unbroadcast(grad / b, a.shape), unbroadcast(-grad * a / (b * b), b.shape)",
                          "        b, out = ctx.saved_tensors\n"
                          "        return unbroadcast(grad / b, ctx.a_shape), unbroadcast(-grad * out / b, b.shape)"))),
    Alternative("sigmoid_via_exp_relu_from_output",
                "Sigmoid saves its input and differentiates e^-a / (1 + e^-a)^2; ReLU saves its output, mask y > 0",
                "unary_rules",
                _variant("unary_rules",
                         ("        s = 1.0 / (1.0 + np.exp(-a))\n        ctx.save_for_backward(s)\n        return s",
                          "        ctx.save_for_backward(a)\n        return 1.0 / (1.0 + np.exp(-a))"),
                         ("        (s,) = ctx.saved_tensors\n        return grad * s * (1.0 - s)",
                          "        (a,) = ctx.saved_tensors\n        e = np.exp(-a)\n"
                          "        return grad * e / (1.0 + e) ** 2"),
                         ("        positive = a > 0\n        ctx.save_for_backward(positive)\n"
                          "        return np.where(positive, a, 0)",
                          "        out = np.maximum(a, 0)\n        ctx.save_for_backward(out)\n        return out"),
                         ("        (positive,) = ctx.saved_tensors\n        return grad * positive",
                          "        (out,) = ctx.saved_tensors\n        return np.where(out > 0, grad, 0)"))),
    Alternative("matmul_own_batch_reduction", "lifts vectors with [..., None] and sums the batch axes itself",
                "matmul_rule", '''@register("matmul")
class MatMul(Function):
    """a @ b, batched; the batch reduction written out."""

    name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        A = a.reshape(1, -1) if a.ndim == 1 else a
        B = b.reshape(-1, 1) if b.ndim == 1 else b
        G = grad
        if b.ndim == 1:
            G = G[..., np.newaxis]
        if a.ndim == 1:
            G = G[..., np.newaxis, :]

        def reduce_batch(g, shape):
            """Sum g over the batch axes an operand of this shape was broadcast along."""
            if g.ndim > len(shape):
                g = g.sum(axis=tuple(range(g.ndim - len(shape))))
            stretched = tuple(i for i, s in enumerate(shape[:-2]) if s == 1 and g.shape[i] != 1)
            return g.sum(axis=stretched, keepdims=True) if stretched else g

        grad_A = reduce_batch(np.matmul(G, B.swapaxes(-1, -2)), A.shape)
        grad_B = reduce_batch(np.matmul(A.swapaxes(-1, -2), G), B.shape)
        return grad_A.reshape(a.shape), grad_B.reshape(b.shape)'''),
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
    Alternative("softmax_einsum_layer_norm_by_paths",
                "softmax VJP with einsum over the moved axis; layer norm's VJP through mean and variance step by step; "
                "cross-entropy with an explicit one-hot matrix",
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
                          "        grad_logits = probs - onehot\n"),
                         ("        normalised = centred * rstd\n"
                          "        ctx.save_for_backward(normalised, rstd)\n"
                          "        return normalised",
                          "        ctx.save_for_backward(centred, rstd)\n"
                          "        return centred * rstd"),
                         ("        normalised, rstd = ctx.saved_tensors\n"
                          "        through_mean = np.mean(grad, axis=-1, keepdims=True)\n"
                          "        through_std = normalised * np.mean(grad * normalised, axis=-1, keepdims=True)\n"
                          "        return rstd * (grad - through_mean - through_std)",
                          "        centred, rstd = ctx.saved_tensors\n"
                          "        d_rstd = np.sum(grad * centred, axis=-1, keepdims=True)\n"
                          "        d_var = -0.5 * rstd ** 3 * d_rstd\n"
                          "        d_centred = grad * rstd + d_var * 2.0 * centred / centred.shape[-1]\n"
                          "        return d_centred - np.mean(d_centred, axis=-1, keepdims=True)"))),
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
    Alternative("logsumexp_logaddexp_reduce", "log-sum-exp by np.logaddexp.reduce; the STE returns a copy",
                "custom_functions",
                _variant("custom_functions",
                         ("        top = np.max(a, axis=axis, keepdims=True)\n"
                          "        out = top + np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True))   # every exponent is <= 0\n"
                          "        ctx.save_for_backward(a, out)\n"
                          "        ctx.axis = axis\n"
                          "        return np.squeeze(out, axis=axis)",
                          "        out = np.logaddexp.reduce(a, axis=axis)\n"
                          "        ctx.save_for_backward(a, out)\n"
                          "        ctx.axis = axis\n"
                          "        return out"),
                         ("        return np.expand_dims(grad, ctx.axis) * np.exp(a - out)                 # grad times softmax(a)",
                          "        return np.expand_dims(grad, ctx.axis) * np.exp(a - np.expand_dims(out, ctx.axis))"),
                         ("return grad  # the straight-through estimator: backward as if forward were the identity",
                          "return grad.copy()"))),
    Alternative("sgd_zeroes_and_rebinds", "clears .grad to zeros instead of None, and assigns a new array to .data",
                "sgd_step", '''def sgd_step(params, compute_loss, lr):
    """Zero the gradients, backpropagate, and move each parameter against its gradient."""
    for p in params:
        p.grad = Tensor(np.zeros_like(p.data))
    loss = compute_loss()
    loss.backward()
    for p in params:
        p.data = p.data - lr * p.grad.data
    return loss.item()'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("relu_mask_includes_zero", "getitem_assigns", "cross_entropy_no_mean")),
]
