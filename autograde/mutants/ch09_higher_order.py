"""Mutants and alternatives for ch09_higher_order (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that must then
score 0, all of its own exercise (the grader runs each test cell on the course's solution of the other
exercises). Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

FIRST, SECOND = "test_pointwise_first", "test_pointwise_second"
BOTH = (FIRST, SECOND)
MM = ("test_matmul_rule",)
REV = ("test_hvp_reverse",)
FWD = ("test_hvp_forward",)
FD = ("test_hvp_difference",)
HESS = ("test_hessian",)
CONCEPT = "a concept check: the answer is only in the hidden test"

MUTANTS = [
    # -- Exercise 1: the pointwise rules ---------------------------------------------------------------------------------
    Mutant("div_b_sign", "the quotient rule's minus sign dropped: +g a / b**2 for b", "pointwise_rules",
           "sum_to(-grad * a / (b * b), b.shape)", "sum_to(grad * a / (b * b), b.shape)", BOTH, visible=True),
    Mutant("div_b_not_summed", "the gradient for a broadcast divisor left at the output's shape", "pointwise_rules",
           "sum_to(-grad * a / (b * b), b.shape)", "-grad * a / (b * b)", BOTH, visible=True),
    Mutant("div_a_not_summed", "the gradient for a broadcast dividend left at the output's shape", "pointwise_rules",
           "return sum_to(grad / b, a.shape),", "return grad / b,", BOTH, visible=True),
    Mutant("div_b_over_b", "the divisor's gradient divided by b once, not b**2", "pointwise_rules",
           "sum_to(-grad * a / (b * b), b.shape)", "sum_to(-grad * a / b, b.shape)", BOTH, visible=True),
    Mutant("div_grad_detached", "grad / b computed on grad's array: correct values, but the path from grad is cut",
           "pointwise_rules", "return sum_to(grad / b, a.shape),", "return sum_to(Tensor(grad.data) / b, a.shape),",
           (SECOND,), visible=True),
    Mutant("exp_constant", "exp(a) from a.data: the first derivative right, the second lost", "pointwise_rules",
           "return (grad * a.exp(),)", "return (grad * Tensor(np.exp(a.data)),)", (SECOND,), visible=True),
    Mutant("log_times", "d log(a) taken as a da", "pointwise_rules", "return (grad / a,)", "return (grad * a,)", BOTH,
           visible=True),
    Mutant("log_constant", "1/a from a.data: the second derivative lost", "pointwise_rules", "return (grad / a,)",
           "return (grad * Tensor(1 / a.data),)", (SECOND,), visible=True),
    Mutant("tanh_not_squared", "1 - tanh(a) instead of 1 - tanh(a)**2", "pointwise_rules",
           "return (grad * (1 - t * t),)", "return (grad * (1 - t),)", BOTH, visible=True),
    Mutant("tanh_constant", "tanh(a) computed on the array: the second derivative lost", "pointwise_rules",
           "t = a.tanh()", "t = Tensor(np.tanh(a.data))", (SECOND,), visible=True),
    Mutant("sigmoid_value", "the sigmoid itself in place of its derivative", "pointwise_rules",
           "return (grad * (s * (1 - s)),)", "return (grad * s,)", BOTH, visible=True),
    Mutant("sigmoid_constant", "s(a) computed on the array: the second derivative lost", "pointwise_rules",
           "s = a.sigmoid()", "s = Tensor(1 / (1 + np.exp(-a.data)))", (SECOND,), visible=True),
    # -- Exercise 2: matmul ---------------------------------------------------------------------------------------------
    Mutant("mm_b_not_summed", "a batch's gradient for a 2-D b left with the batch axes", "matmul_rule",
           "grad_b = sum_to(a.transpose(-1, -2) @ grad, b.shape)", "grad_b = a.transpose(-1, -2) @ grad", MM,
           visible=True),
    Mutant("mm_a_not_summed", "a matrix a's gradient, used by a batch of b's, left with the batch axes",
           "matmul_rule", "grad_a = sum_to(grad @ b.transpose(-1, -2), a.shape)",
           "grad_a = grad @ b.transpose(-1, -2)", MM, visible=True),
    Mutant("mm_b_detached", "b's transpose taken on the array: the derivative of grad_a with respect to b is lost",
           "matmul_rule", "grad_a = sum_to(grad @ b.transpose(-1, -2), a.shape)",
           "grad_a = sum_to(grad @ Tensor(np.swapaxes(b.data, -1, -2)), a.shape)", MM, visible=True),
    Mutant("mm_transpose_first_axes", "the first two axes swapped: right for matrices, wrong for a batched b",
           "matmul_rule", "grad_a = sum_to(grad @ b.transpose(-1, -2), a.shape)",
           "grad_a = sum_to(grad @ b.transpose(0, 1), a.shape)", MM, visible=True),
    Mutant("mm_a_grad_swapped", "the gradient for a multiplied in the wrong order", "matmul_rule",
           "grad_a = sum_to(grad @ b.transpose(-1, -2), a.shape)",
           "grad_a = sum_to((b @ grad.transpose(-1, -2)).transpose(-1, -2) * 0.5, a.shape)", MM, visible=True),
    # -- Exercise 3: hvp_reverse ----------------------------------------------------------------------------------------
    Mutant("rev_no_create_graph", "the first gradient not recorded: nothing to differentiate, zeros returned",
           "hvp_reverse", "(g,) = grad(f(point), point, create_graph=True)", "(g,) = grad(f(point), point)", REV,
           visible=True),
    Mutant("rev_second_recorded", "the second gradient recorded too: right values, a graph kept for nothing",
           "hvp_reverse", "(hv,) = grad((g * Tensor(np.array(v, dtype=np.float64))).sum(), point)",
           "(hv,) = grad((g * Tensor(np.array(v, dtype=np.float64))).sum(), point, create_graph=True)", REV,
           visible=True),
    Mutant("rev_without_v", "the gradient summed without v: H times a vector of ones", "hvp_reverse",
           "(hv,) = grad((g * Tensor(np.array(v, dtype=np.float64))).sum(), point)", "(hv,) = grad(g.sum(), point)",
           REV, visible=True),
    Mutant("rev_linear_raises", "no case for a linear f: the second grad raises", "hvp_reverse",
           "    if not g.requires_grad:                       # f is linear in x: its gradient is a constant",
           "    if False:", REV, visible=True),
    Mutant("rev_f_twice", "f called twice", "hvp_reverse", "(g,) = grad(f(point), point, create_graph=True)",
           "f(point)\n    (g,) = grad(f(point), point, create_graph=True)", REV, visible=True),
    # -- Exercise 4: hvp_forward ----------------------------------------------------------------------------------------
    Mutant("fwd_unit_tangent", "every tangent 1 instead of v's entries", "hvp_forward",
           "duals[i] = Dual(float(x[i]), float(v[i]))", "duals[i] = Dual(float(x[i]), 1.0)", FWD, visible=True),
    Mutant("fwd_values", "the gradient's values returned instead of its tangents", "hvp_forward",
           "tangents[i] = entries[i].tangent if isinstance(entries[i], Dual) else 0.0",
           "tangents[i] = entries[i].value if isinstance(entries[i], Dual) else 0.0", FWD, visible=True),
    Mutant("fwd_plain_numbers", "every entry of the gradient taken to be a Dual: a linear f raises", "hvp_forward",
           "tangents[i] = entries[i].tangent if isinstance(entries[i], Dual) else 0.0",
           "tangents[i] = entries[i].tangent", FWD, visible=True),
    Mutant("fwd_recorded", "the gradient recorded (create_graph=True): right values, a graph kept for nothing",
           "hvp_forward", "(g,) = grad(f(point), point)", "(g,) = grad(f(point), point, create_graph=True)", FWD,
           visible=True),
    # -- Exercise 5: finite differences ---------------------------------------------------------------------------------
    Mutant("fd_forward_difference", "a forward difference of gradients", "hvp_difference",
           "(gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)", "(gradient(x + eps * v) - gradient(x)) / eps",
           FD, visible=True),
    Mutant("fd_not_halved", "the central difference divided by eps, not 2 eps", "hvp_difference",
           "(gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)",
           "(gradient(x + eps * v) - gradient(x - eps * v)) / eps", FD, visible=True),
    Mutant("fd_fixed_step", "the step fixed at 1e-5 whatever eps is passed", "hvp_difference",
           "(gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)",
           "(gradient(x + 1e-5 * v) - gradient(x - 1e-5 * v)) / (2 * 1e-5)", FD, visible=True),
    # -- Exercise 6: hessian ----------------------------------------------------------------------------------------------
    Mutant("hess_rows", "each HVP stored as a row", "hessian", "H[:, j] = hvp(f, x, e)", "H[j] = hvp(f, x, e)", HESS,
           visible=True),
    Mutant("hess_last_column_missing", "the loop stops one column short", "hessian", "for j in range(n):",
           "for j in range(n - 1):", HESS, visible=True),
    # -- concept checks ---------------------------------------------------------------------------------------------------
    Mutant("concept_retain_wrong", "believes retain_graph records the backward", "concept_retain",
           'answer_retain = "b"', 'answer_retain = "a"', ("test_concept_retain",), visible=False,
           hidden_because=CONCEPT),
    Mutant("concept_history_wrong", "believes sum's rule depends on its input's history", "concept_history",
           'answer_history = "c"', 'answer_history = "a"', ("test_concept_history",), visible=False,
           hidden_because=CONCEPT),
    Mutant("concept_cost_wrong", "believes an HVP needs a row of the Hessian per entry", "concept_cost",
           'answer_cost = "c"', 'answer_cost = "a"', ("test_concept_cost",), visible=False, hidden_because=CONCEPT),
]

ALTERNATIVES = [
    Alternative("pointwise_powers", "each derivative written with powers and in another order", "pointwise_rules", '''
@tensor_rule("DivBackward0")
def vjp_div(grad, a, b):
    inverse = b ** -1
    return sum_to(grad * inverse, a.shape), sum_to(-(grad * a) * inverse ** 2, b.shape)


@tensor_rule("ExpBackward0")
def vjp_exp(grad, a):
    return (a.exp() * grad,)


@tensor_rule("LogBackward0")
def vjp_log(grad, a):
    return (grad * a ** -1,)


@tensor_rule("TanhBackward0")
def vjp_tanh(grad, a):
    return (grad - grad * a.tanh() ** 2,)


@tensor_rule("SigmoidBackward0")
def vjp_sigmoid(grad, a):
    s = a.sigmoid()
    return (grad * s - grad * s ** 2,)
'''),
    Alternative("matmul_permute", "the transposes written as permutations of every axis", "matmul_rule", '''
def swap_last(t):
    """t with its last two axes swapped, by a full permutation."""
    dims = list(range(t.ndim))
    dims[-2:] = dims[:-3:-1]
    return t.permute(*dims)


@tensor_rule("MmBackward0")
def vjp_matmul(grad, a, b):
    return sum_to(grad @ swap_last(b), a.shape), sum_to(swap_last(a) @ grad, b.shape)
'''),
    Alternative("hvp_reverse_grad_outputs", "the second gradient seeded with v through grad_outputs", "hvp_reverse", '''
def hvp_reverse(f, x, v):
    t = Tensor(np.asarray(x, dtype=np.float64).copy(), requires_grad=True)
    (g,) = grad(f(t), t, create_graph=True)
    if g.grad_fn is None and not g.requires_grad:
        return np.zeros_like(t.data)
    (hv,) = grad(g, t, grad_outputs=Tensor(np.asarray(v, dtype=np.float64)))
    return np.asarray(hv.data, dtype=np.float64)
'''),
    Alternative("hvp_forward_frompyfunc", "Duals made and read with np.frompyfunc", "hvp_forward", '''
make_dual = np.frompyfunc(Dual, 2, 1)
tangent_of = np.frompyfunc(lambda e: e.tangent if isinstance(e, Dual) else 0.0, 1, 1)


def hvp_forward(f, x, v):
    point = Tensor(np.asarray(make_dual(np.asarray(x, dtype=float), np.asarray(v, dtype=float)), dtype=object),
                   requires_grad=True)
    (g,) = grad(f(point), point)
    return np.asarray(tangent_of(g.data), dtype=np.float64)
'''),
    Alternative("hvp_difference_loop", "the two gradients in a loop over the signs", "hvp_difference", '''
def hvp_finite_difference(f, x, v, eps=1e-5):
    grads = []
    for sign in (1.0, -1.0):
        t = Tensor(np.asarray(x, dtype=np.float64) + sign * eps * np.asarray(v, dtype=np.float64), requires_grad=True)
        grads.append(np.asarray(grad(f(t), t)[0].data, dtype=np.float64))
    return np.asarray((grads[0] - grads[1]) / (2.0 * eps))
'''),
    Alternative("hessian_column_stack", "the columns stacked from the rows of np.eye", "hessian", '''
def hessian(f, x, hvp):
    x = np.asarray(x, dtype=np.float64)
    return np.column_stack([np.asarray(hvp(f, x, e), dtype=np.float64) for e in np.eye(len(x))])
'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("tanh_constant", "rev_second_recorded", "hess_rows")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
