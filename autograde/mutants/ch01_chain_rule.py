"""Mutants and alternatives for ch01_chain_rule (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the
test cells that must then score 0, all of its own exercise: when graded, test_jvp runs the
student's jvp on the reference Dual (autograde.hidden.harness), so a Dual bug costs only
the Dual test cell of its concept (arithmetic or functions). Each alternative replaces a
whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

CD = ("test_central_difference",)
ARITH = ("test_dual_arithmetic",)
FUNCS = ("test_dual_functions",)
JVP = ("test_jvp",)
REV1 = ("test_reverse_example1",)
REV2 = ("test_reverse_example2",)
PASSES = ("test_passes_needed",)

JVP_BODY = """    inputs = [Dual(float(xi), float(vi)) for xi, vi in zip(x, v)]
    out = f(inputs)
"""
JVP_TAIL = """    if isinstance(out, Dual):
        return float(out.value), float(out.tangent)
    values = np.array([o.value for o in out], dtype=np.float64)
    tangents = np.array([o.tangent for o in out], dtype=np.float64)
    return values, tangents"""
JVP_COLUMNS = """    columns = []
    for j in range(len(x)):  # column j of J from the seed e_j: one forward pass per input
        columns.append(f([Dual(float(xi), 1.0 if i == j else 0.0) for i, xi in enumerate(x)]))
    single = isinstance(columns[0], Dual)
    outputs = [[column] if single else list(column) for column in columns]
    values = np.array([o.value for o in outputs[0]], dtype=np.float64)
    J = np.array([[o.tangent for o in column] for column in outputs], dtype=np.float64).T
    tangents = J @ np.asarray(v, dtype=np.float64)
    if single:
        return float(values[0]), float(tangents[0])
    return values, tangents"""
JVP_DIFFERENCE = """    h = 1e-6
    out = f([Dual(float(xi), 0.0) for xi in x])
    plus = f([Dual(float(xi) + h * float(vi), 0.0) for xi, vi in zip(x, v)])
    minus = f([Dual(float(xi) - h * float(vi), 0.0) for xi, vi in zip(x, v)])
    if isinstance(out, Dual):
        out = Dual(out.value, (plus.value - minus.value) / (2 * h))
    else:
        out = [Dual(o.value, (p.value - q.value) / (2 * h)) for o, p, q in zip(out, plus, minus)]
"""
DUAL_SHARED_PARTS = '''class Dual:
    """A dual number value + tangent * eps; a plain number is the pair (number, 0)."""

    def __init__(self, value, tangent=0.0):
        self.value = value
        self.tangent = tangent

    def __repr__(self):
        return f"Dual({self.value!r}, {self.tangent!r})"

    @staticmethod
    def _parts(other):
        """(value, tangent) of a Dual, or of a number (tangent 0)."""
        return (other.value, other.tangent) if isinstance(other, Dual) else (other, 0.0)

    def __add__(self, other):
        v, t = Dual._parts(other)
        return Dual(self.value + v, self.tangent + t)

    __radd__ = __add__

    def __sub__(self, other):
        v, t = Dual._parts(other)
        return Dual(self.value - v, self.tangent - t)

    def __rsub__(self, other):
        return -(self - other)

    def __mul__(self, other):
        v, t = Dual._parts(other)
        return Dual(self.value * v, self.tangent * v + self.value * t)

    __rmul__ = __mul__

    def __truediv__(self, other):
        v, t = Dual._parts(other)
        return Dual(self.value / v, (self.tangent * v - self.value * t) / (v * v))

    def __rtruediv__(self, other):
        return Dual(other) / self

    def __pow__(self, other):
        p, dp = Dual._parts(other)
        value = self.value ** p
        tangent = 0.0 if p == 0 else p * self.value ** (p - 1) * self.tangent
        if dp:
            tangent += value * math.log(self.value) * dp
        return Dual(value, tangent)

    def __rpow__(self, other):
        return Dual(other) ** self

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def exp(self):
        e = math.exp(self.value)
        return Dual(e, e * self.tangent)

    def log(self):
        return Dual(math.log(self.value), self.tangent / self.value)

    def sin(self):
        return Dual(math.sin(self.value), math.cos(self.value) * self.tangent)

    def cos(self):
        return Dual(math.cos(self.value), -math.sin(self.value) * self.tangent)

    def tanh(self):
        t = math.tanh(self.value)
        return Dual(t, (1.0 - t) * (1.0 + t) * self.tangent)'''

MUTANTS = [
    # --- central_difference ---------------------------------------------------
    Mutant("cd_forward_difference", "forward difference: error O(h), about 5e-7 |f''|",
           "central_difference",
           "grad[index] = (f(x + step) - f(x - step)) / (2 * h)",
           "grad[index] = (f(x + step) - f(x)) / h", CD, visible=True),
    Mutant("cd_divides_by_h", "central difference divided by h instead of 2h: twice the gradient",
           "central_difference", "/ (2 * h)", "/ h", CD, visible=True),
    Mutant("cd_perturbs_caller_x", "moves the caller's x in place and never puts it back",
           "central_difference",
           "    x = np.array(x, dtype=np.float64)  # a private copy: the caller's array is never touched\n"
           "    grad = np.zeros_like(x)\n"
           "    for index in np.ndindex(x.shape):\n"
           "        step = np.zeros_like(x)\n"
           "        step[index] = h\n"
           "        grad[index] = (f(x + step) - f(x - step)) / (2 * h)",
           "    grad = np.zeros_like(x, dtype=np.float64)\n"
           "    for index in np.ndindex(x.shape):\n"
           "        x[index] += h\n"
           "        f_plus = f(x)\n"
           "        x[index] -= 2 * h\n"
           "        grad[index] = (f_plus - f(x)) / (2 * h)", CD, visible=True),
    Mutant("cd_float32", "computes in float32, where h = 1e-6 leaves about two correct digits",
           "central_difference", "np.array(x, dtype=np.float64)", "np.array(x, dtype=np.float32)", CD, visible=True),
    Mutant("cd_rows_not_entries", "loops over range(len(x)): for a matrix each step moves a whole row",
           "central_difference", "for index in np.ndindex(x.shape):", "for index in range(len(x)):", CD, visible=True),
    # --- Dual: arithmetic -----------------------------------------------------
    Mutant("dual_mul_missing_term", "product rule without the u w' term",
           "dual", "self.tangent * other.value + self.value * other.tangent)", "self.tangent * other.value)",
           ARITH, visible=True),
    Mutant("dual_mul_float_only", "tests isinstance(other, float) for a number: an int constant (2 * d, d * 2) "
           "is taken for a Dual", "dual",
           "        if isinstance(other, Dual):\n"
           "            return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)\n"
           "        return Dual(self.value * other, self.tangent * other)",
           "        if isinstance(other, float):\n"
           "            return Dual(self.value * other, self.tangent * other)\n"
           "        return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)",
           ARITH, visible=True),
    Mutant("dual_div_sign", "quotient rule with the numerator's sign flipped",
           "dual", "(self.tangent * other.value - self.value * other.tangent) / other.value ** 2",
           "(self.value * other.tangent - self.tangent * other.value) / other.value ** 2", ARITH, visible=True),
    Mutant("dual_rsub_swapped", "__rsub__ computes Dual - number instead of number - Dual",
           "dual", "return Dual(other - self.value, -self.tangent)", "return Dual(self.value - other, self.tangent)",
           ARITH, visible=True),
    Mutant("dual_pow_dual_no_log", "Dual ** Dual without the u**w log(u) w' term",
           "dual", "\n                        + value * math.log(self.value) * other.tangent)", ")", ARITH, visible=True),
    Mutant("dual_pow_forgets_tangent", "power rule p u**(p-1) without the incoming tangent u'",
           "dual", "slope * self.tangent)", "slope)", ARITH, visible=True),
    Mutant("dual_pow_float_exponent_only", "treats every exponent that is not a float as a Dual: d ** 2 fails",
           "dual", "        if isinstance(other, Dual):\n            value = self.value ** other.value",
           "        if not isinstance(other, float):\n            value = self.value ** other.value", ARITH, visible=True),
    Mutant("dual_pow_divides_by_base", "power rule as p u**p / u: divides by zero at u = 0 (torch gives 0)",
           "dual", "slope = other * self.value ** (other - 1) if other != 0 else 0.0",
           "slope = other * self.value ** other / self.value", ARITH, visible=True),
    Mutant("dual_pow_zero_exponent", "p u**(p-1) taken literally: for p = 0 at u = 0 it raises 0.0 to the power -1 "
           "(the chapter's own reference had this bug; torch gives tangent 0)",
           "dual", " if other != 0 else 0.0", "", ARITH, visible=True),
    # --- Dual: functions ------------------------------------------------------
    Mutant("dual_tanh_missing_square", "tanh derivative 1 - tanh instead of 1 - tanh**2",
           "dual", "(1.0 - t * t) * self.tangent", "(1.0 - t) * self.tangent", FUNCS, visible=True),
    Mutant("dual_tanh_via_cosh", "tanh derivative as 1 / cosh(u)**2: math.cosh overflows beyond |u| = 710 (torch: 0)",
           "dual", "return Dual(t, (1.0 - t * t) * self.tangent)",
           "return Dual(t, self.tangent / math.cosh(self.value) ** 2)", FUNCS, visible=True),
    Mutant("dual_tanh_exp_ratio", "tanh as (e^u - e^-u) / (e^u + e^-u): math.exp overflows beyond |u| = 709 (torch: 1)",
           "dual", "t = math.tanh(self.value)",
           "t = (math.exp(self.value) - math.exp(-self.value)) / (math.exp(self.value) + math.exp(-self.value))",
           FUNCS, visible=True),
    Mutant("dual_log_no_chain", "log derivative 1/u without the incoming tangent",
           "dual", "self.tangent / self.value)", "1.0 / self.value)", FUNCS, visible=True),
    Mutant("dual_cos_sign", "cos derivative +sin instead of -sin",
           "dual", "-math.sin(self.value) * self.tangent", "math.sin(self.value) * self.tangent", FUNCS, visible=True),
    # --- jvp --------------------------------------------------------------------
    Mutant("jvp_seeds_ones", "seeds every tangent with 1 instead of v: computes J @ ones",
           "jvp", "Dual(float(xi), float(vi))", "Dual(float(xi), 1.0)", JVP, visible=True),
    Mutant("jvp_returns_lists", "returns Python lists for a list output instead of float64 arrays",
           "jvp", "    return values, tangents", "    return list(values), list(tangents)", JVP, visible=True),
    Mutant("jvp_one_pass_per_input", "builds the Jacobian column by column (one call of f per input), then J @ v: "
           "right numbers, n passes instead of one", "jvp", JVP_BODY + JVP_TAIL, JVP_COLUMNS, JVP, visible=True),
    Mutant("jvp_finite_difference", "tangent by a central difference along v (three calls of f) instead of dual tangents",
           "jvp", JVP_BODY, JVP_DIFFERENCE, JVP, visible=True),
    # --- reverse_example1 -------------------------------------------------------
    Mutant("rev1_assign_not_accumulate", "x1's adjoint overwritten (=) instead of accumulated (+=): 3 instead of 10",
           "reverse_example1", "x1_bar += a_bar * 1.0", "x1_bar = a_bar * 1.0", REV1, visible=True),
    Mutant("rev1_wrong_local_derivative", "df/da taken as a instead of x1",
           "reverse_example1", "a_bar = f_bar * x1", "a_bar = f_bar * a", REV1, visible=True),
    Mutant("rev1_direct_path_overwrites", "x1's two contributions assigned in the other order with =: 7 instead of 10",
           "reverse_example1",
           "    x1_bar = f_bar * a        # ... and x1's direct path: df/dx1 = a\n"
           "    x1_bar += a_bar * 1.0     # a = x1 + x2: x1's second path adds to its adjoint\n",
           "    x1_bar = a_bar * 1.0\n    x1_bar = f_bar * a\n", REV1, visible=True),
    Mutant("rev1_unseeded_output", "every adjoint starts at 0, the output's too: the reverse pass is never seeded",
           "reverse_example1", "f_bar = 1.0", "f_bar = 0.0", REV1, visible=True),
    # --- reverse_example2 -------------------------------------------------------
    Mutant("rev2_no_sigmoid_derivative", "drops the s'(a) factor", "reverse_example2",
           "dL_da = dL_dh * h * (1.0 - h)", "dL_da = dL_dh", REV2, visible=True),
    Mutant("rev2_sigmoid_not_derivative", "multiplies by s(a) instead of s'(a)", "reverse_example2",
           "dL_da = dL_dh * h * (1.0 - h)", "dL_da = dL_dh * h", REV2, visible=True),
    Mutant("rev2_missing_factor_two", "dL/dy = y instead of 2y", "reverse_example2",
           "dL_dy = 2.0 * y", "dL_dy = y", REV2, visible=True),
    Mutant("rev2_w1_grad_transposed", "dL/dW1 as x (dL/da)^T: the transpose, shape (n, k)", "reverse_example2",
           "dL_dW1 = np.outer(dL_da, x)", "dL_dW1 = np.outer(x, dL_da)", REV2, visible=True),
    Mutant("rev2_dh_keeps_row_shape", "2 y W2 written as dL_dy * W2: dL_dh, dL_da and dL_dx keep a leading axis "
           "(shapes (1, k), (1, k), (1, n))", "reverse_example2", "dL_dh = dL_dy @ W2", "dL_dh = dL_dy * W2", REV2,
           visible=True),
    # --- passes_needed ----------------------------------------------------------
    Mutant("passes_swapped", "forward and reverse swapped", "passes_needed",
           '{"forward": n, "reverse": m}', '{"forward": m, "reverse": n}', PASSES, visible=True),
    Mutant("passes_accepts_bool", "True passes as the int 1", "passes_needed",
           "isinstance(size, bool) or not isinstance(size, int)", "not isinstance(size, int)", PASSES, visible=True),
    Mutant("passes_allows_zero", "accepts n = 0 or m = 0", "passes_needed",
           "size < 1", "size < 0", PASSES, visible=True),
    Mutant("passes_message_unnamed", "the ValueError does not say which argument is wrong", "passes_needed",
           'raise ValueError(f"{name} must be', 'raise ValueError(f"the argument must be', PASSES, visible=True),
    Mutant("passes_message_always_n", "the check is copied for m but its message still blames n", "passes_needed",
           'raise ValueError(f"{name} must be', 'raise ValueError(f"n must be', PASSES, visible=True),
    # --- concept checks ---------------------------------------------------------
    Mutant("concept_rounding_truncation", "blames truncation for the error at tiny h", "concept_rounding",
           'answer_rounding = "b"', 'answer_rounding = "d"', ("test_concept_rounding",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_paths_product", "multiplies the two paths instead of adding them", "concept_paths",
           'answer_paths = "c"', 'answer_paths = "b"', ("test_concept_paths",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_order_associative", "thinks associativity makes both orders cost the same", "concept_order",
           'answer_order = "a"', 'answer_order = "c"', ("test_concept_order",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_mode_always_reverse", "believes reverse mode always wins", "concept_mode",
           'answer_mode = "d"', 'answer_mode = "a"', ("test_concept_mode",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
]

ALTERNATIVES = [
    Alternative("cd_in_place_restored", "moves each coordinate of x in place and restores it exactly",
                "central_difference", '''def central_difference(f, x, h=1e-6):
    """Central differences, moving one coordinate of x at a time and putting it back."""
    work = np.asarray(x, dtype=np.float64)  # may be the caller's own array: every change is undone
    grad = np.empty(work.shape, dtype=np.float64)
    for index in np.ndindex(work.shape):
        original = work[index]
        work[index] = original + h
        f_plus = f(work)
        work[index] = original - h
        f_minus = f(work)
        work[index] = original
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad'''),
    Alternative("cd_vectorised_steps", "builds all the steps at once from an identity matrix",
                "central_difference", '''def central_difference(f, x, h=1e-6):
    """Central differences along every unit direction, the steps built from np.eye."""
    x = np.asarray(x, dtype=np.float64)
    steps = h * np.eye(x.size).reshape((x.size,) + x.shape)
    plus = np.array([f(x + step) for step in steps], dtype=np.float64)
    minus = np.array([f(x - step) for step in steps], dtype=np.float64)
    return ((plus - minus) / (2 * h)).reshape(x.shape)'''),
    Alternative("dual_with_lift", "lifts numbers to Duals; division via the reciprocal, u**w via exp(w log u)"
                " (updated for the zero and overflow checks: u**0 has slope 0, tanh' from tanh, not cosh)",
                "dual", '''class Dual:
    """A dual number value + tangent * eps, eps**2 = 0."""

    def __init__(self, value, tangent=0.0):
        self.value = value
        self.tangent = tangent

    def __repr__(self):
        return f"Dual({self.value!r}, {self.tangent!r})"

    @staticmethod
    def _lift(x):
        """A plain number as a constant Dual."""
        return x if isinstance(x, Dual) else Dual(x, 0.0)

    def _apply(self, value, derivative):
        """A function of self with this value and this local derivative (chain rule)."""
        return Dual(value, derivative * self.tangent)

    def __add__(self, other):
        other = Dual._lift(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __radd__(self, other):
        return Dual._lift(other) + self

    def __sub__(self, other):
        return self + (-Dual._lift(other))

    def __rsub__(self, other):
        return Dual._lift(other) + (-self)

    def __mul__(self, other):
        other = Dual._lift(other)
        return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)

    def __rmul__(self, other):
        return Dual._lift(other) * self

    def _reciprocal(self):
        return self._apply(1.0 / self.value, -1.0 / self.value ** 2)

    def __truediv__(self, other):
        return self * Dual._lift(other)._reciprocal()

    def __rtruediv__(self, other):
        return Dual._lift(other) * self._reciprocal()

    def __pow__(self, other):
        if isinstance(other, Dual) and other.tangent != 0.0:
            return (self.log() * other).exp()
        p = other.value if isinstance(other, Dual) else other
        return self._apply(self.value ** p, p * self.value ** (p - 1) if p != 0 else 0.0)

    def __rpow__(self, other):
        return (self * math.log(other)).exp()

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def exp(self):
        return self._apply(math.exp(self.value), math.exp(self.value))

    def log(self):
        return self._apply(math.log(self.value), 1.0 / self.value)

    def sin(self):
        return self._apply(math.sin(self.value), math.cos(self.value))

    def cos(self):
        return self._apply(math.cos(self.value), -math.sin(self.value))

    def tanh(self):
        t = math.tanh(self.value)
        return self._apply(t, 1.0 - t * t)'''),
    Alternative("dual_shared_parts", "numbers read as (value, 0) pairs; reflected + and * are the direct methods; "
                "tanh' as (1 - t)(1 + t)", "dual", DUAL_SHARED_PARTS),
    Alternative("jvp_outputs_as_list", "treats a single output as a list of one and unwraps at the end",
                "jvp", '''def jvp(f, x, v):
    """J v by one forward pass; a single output is handled as a list of one."""
    if len(x) != len(v):
        raise ValueError(f"x has {len(x)} entries but v has {len(v)}")
    x = np.asarray(x, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    out = f([Dual(xi, vi) for xi, vi in zip(x.tolist(), v.tolist())])
    outputs = [out] if isinstance(out, Dual) else list(out)
    values = np.array([o.value for o in outputs], dtype=np.float64)
    tangents = np.array([o.tangent for o in outputs], dtype=np.float64)
    if isinstance(out, Dual):
        return float(values[0]), float(tangents[0])
    return values, tangents'''),
    Alternative("jvp_pairs_array", "one call of f, then the (value, tangent) pairs as one (m, 2) array",
                "jvp", '''def jvp(f, x, v):
    """J v in one forward pass: seed, call f once, split the pairs."""
    if len(x) != len(v):
        raise ValueError(f"x and v differ in length: {len(x)} and {len(v)}")
    out = f([Dual(float(a), float(b)) for a, b in zip(x, v)])
    if isinstance(out, Dual):
        return float(out.value), float(out.tangent)
    pairs = np.array([(o.value, o.tangent) for o in out], dtype=np.float64).reshape(-1, 2)
    return pairs[:, 0].copy(), pairs[:, 1].copy()'''),
    Alternative("rev1_zero_initialised_adjoints", "every adjoint starts at 0 and only ever grows by +=",
                "reverse_example1", '''def reverse_example1(x1, x2):
    """f = (x1 + x2) * x1 and the adjoints of f, a, x1, x2, all accumulated from zero."""
    a = x1 + x2
    f = a * x1
    f_bar, a_bar, x1_bar, x2_bar = 1.0, 0.0, 0.0, 0.0
    a_bar += f_bar * x1      # f = a * x1
    x1_bar += f_bar * a
    x1_bar += a_bar          # a = x1 + x2
    x2_bar += a_bar
    return float(f), {"x1": x1_bar, "x2": x2_bar, "a": a_bar, "f": f_bar}'''),
    Alternative("rev1_tape_of_edges", "a tiny tape: each operation's (input, local derivative) edges, replayed newest "
                "first with +=", "reverse_example1", '''def reverse_example1(x1, x2):
    """f = (x1 + x2) * x1; the reverse pass replays the recorded edges in reverse order."""
    value = {"x1": x1, "x2": x2}
    tape = []  # (output, [(input, d output / d input)]), in forward order
    value["a"] = value["x1"] + value["x2"]
    tape.append(("a", [("x1", 1.0), ("x2", 1.0)]))
    value["f"] = value["a"] * value["x1"]
    tape.append(("f", [("a", value["x1"]), ("x1", value["a"])]))
    adjoint = {name: 0.0 for name in value}
    adjoint["f"] = 1.0
    for output, edges in reversed(tape):
        for name, local in edges:
            adjoint[name] += adjoint[output] * local
    return float(value["f"]), adjoint'''),
    Alternative("rev2_column_vectors", "column vectors and transposed matrices; s'(a) as e^-a / (1 + e^-a)^2",
                "reverse_example2", '''def reverse_example2(x, W1, W2):
    """The same reverse pass written with column vectors."""
    col = np.asarray(x, dtype=np.float64).reshape(-1, 1)   # (n, 1)
    a = W1 @ col                                           # (k, 1)
    e = np.exp(-a)
    h = 1.0 / (1.0 + e)
    y = W2 @ h                                             # (1, 1)
    L = float(y[0, 0] ** 2)
    g_y = 2.0 * y
    g_h = W2.T @ g_y                                       # (k, 1)
    g_a = g_h * e / (1.0 + e) ** 2
    g_x = W1.T @ g_a                                       # (n, 1)
    return L, {"dL_dy": g_y.reshape(-1), "dL_dh": g_h.reshape(-1), "dL_da": g_a.reshape(-1),
               "dL_dx": g_x.reshape(-1), "dL_dW1": g_a @ col.T, "dL_dW2": g_y @ h.T}'''),
    Alternative("rev2_einsum_tanh_sigmoid", "every product as an einsum; the sigmoid as (1 + tanh(a / 2)) / 2",
                "reverse_example2", '''def reverse_example2(x, W1, W2):
    """The reverse pass with einsum, the adjoints gathered in the dict as they are computed."""
    x = np.asarray(x, dtype=np.float64)
    a = np.einsum("kn,n->k", W1, x)
    h = 0.5 * (1.0 + np.tanh(0.5 * a))
    y = np.einsum("ok,k->o", W2, h)
    L = float(np.einsum("o,o->", y, y))
    adjoints = {"dL_dy": 2.0 * y}
    adjoints["dL_dh"] = np.einsum("o,ok->k", adjoints["dL_dy"], W2)
    adjoints["dL_da"] = adjoints["dL_dh"] * h * (1.0 - h)
    adjoints["dL_dx"] = np.einsum("k,kn->n", adjoints["dL_da"], W1)
    adjoints["dL_dW1"] = np.einsum("k,n->kn", adjoints["dL_da"], x)
    adjoints["dL_dW2"] = np.einsum("o,k->ok", adjoints["dL_dy"], h)
    return L, adjoints'''),
    Alternative("cd_warns_about_small_steps",
                "correct, but warns (RuntimeWarning on stderr) when h is small: a warning must not cost points",
                "central_difference", '''def central_difference(f, x, h=1e-6):
    """Central differences, with a warning that a small h trusts float64 rounding."""
    import warnings
    if h < 1e-4:
        warnings.warn(f"h = {h:g} is only safe in float64", RuntimeWarning)
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad'''),
    # -- honest Python that the standard library or NumPy helps write (issue 15): code generated from the
    # student's own definitions is theirs; none of these may cost a point or be called cheating
    Alternative("dual_frozen_dataclass", "a frozen @dataclass: __init__, __repr__, __eq__ and __setattr__ are "
                "generated by the standard library from the student's own fields", "dual", '''import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Dual:
    """A dual number value + tangent * eps with eps**2 = 0, immutable."""

    value: float
    tangent: float = 0.0

    def __add__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value + other.value, self.tangent + other.tangent)
        return Dual(self.value + other, self.tangent)

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value - other.value, self.tangent - other.tangent)
        return Dual(self.value - other, self.tangent)

    def __rsub__(self, other):
        return Dual(other - self.value, -self.tangent)

    def __mul__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)
        return Dual(self.value * other, self.tangent * other)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value / other.value,
                        (self.tangent * other.value - self.value * other.tangent) / other.value ** 2)
        return Dual(self.value / other, self.tangent / other)

    def __rtruediv__(self, other):
        return Dual(other / self.value, -other * self.tangent / self.value ** 2)

    def __pow__(self, other):
        if isinstance(other, Dual):
            value = self.value ** other.value
            return Dual(value, other.value * self.value ** (other.value - 1) * self.tangent
                        + value * math.log(self.value) * other.tangent)
        slope = other * self.value ** (other - 1) if other != 0 else 0.0
        return Dual(self.value ** other, slope * self.tangent)

    def __rpow__(self, other):
        result = other ** self.value
        return Dual(result, result * math.log(other) * self.tangent)

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def exp(self):
        e = math.exp(self.value)
        return Dual(e, e * self.tangent)

    def log(self):
        return Dual(math.log(self.value), self.tangent / self.value)

    def sin(self):
        return Dual(math.sin(self.value), math.cos(self.value) * self.tangent)

    def cos(self):
        return Dual(math.cos(self.value), -math.sin(self.value) * self.tangent)

    def tanh(self):
        t = math.tanh(self.value)
        return Dual(t, (1.0 - t * t) * self.tangent)'''),
    Alternative("dual_descriptors_and_dispatch", "value and tangent are properties over a private pair; numbers are "
                "lifted by a functools.singledispatchmethod; comparisons from functools.total_ordering; a "
                "functools.cached_property", "dual", '''import functools
import math
import numbers


@functools.total_ordering
class Dual:
    """A dual number stored as a (value, tangent) pair behind read-only properties."""

    def __init__(self, value, tangent=0.0):
        self._pair = (value, tangent)

    value = property(lambda self: self._pair[0], doc="the value")
    tangent = property(lambda self: self._pair[1], doc="the derivative along the tangent direction")

    def __repr__(self):
        return f"Dual({self.value!r}, {self.tangent!r})"

    def __eq__(self, other):
        return isinstance(other, Dual) and self._pair == other._pair

    def __lt__(self, other):
        return self.value < (other.value if isinstance(other, Dual) else other)

    __hash__ = None

    @functools.singledispatchmethod
    def lift(self, other):
        """Another Dual as it is."""
        return other

    @lift.register(numbers.Number)
    def _(self, other):
        return Dual(other, 0.0)

    @functools.cached_property
    def reciprocal(self):
        return Dual(1.0 / self.value, -self.tangent / self.value ** 2)

    def __add__(self, other):
        other = self.lift(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-self.lift(other))

    def __rsub__(self, other):
        return self.lift(other) + (-self)

    def __mul__(self, other):
        other = self.lift(other)
        return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        other = self.lift(other)
        return Dual(self.value / other.value,
                    (self.tangent * other.value - self.value * other.tangent) / other.value ** 2)

    def __rtruediv__(self, other):
        return self.lift(other) * self.reciprocal

    def __pow__(self, other):
        if isinstance(other, Dual):
            value = self.value ** other.value
            return Dual(value, other.value * self.value ** (other.value - 1) * self.tangent
                        + value * math.log(self.value) * other.tangent)
        slope = other * self.value ** (other - 1) if other != 0 else 0.0
        return Dual(self.value ** other, slope * self.tangent)

    def __rpow__(self, other):
        result = other ** self.value
        return Dual(result, result * math.log(other) * self.tangent)

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def exp(self):
        e = math.exp(self.value)
        return Dual(e, e * self.tangent)

    def log(self):
        return Dual(math.log(self.value), self.tangent / self.value)

    def sin(self):
        return Dual(math.sin(self.value), math.cos(self.value) * self.tangent)

    def cos(self):
        return Dual(math.cos(self.value), -math.sin(self.value) * self.tangent)

    def tanh(self):
        t = math.tanh(self.value)
        return Dual(t, (1.0 - t * t) * self.tangent)'''),
    Alternative("dual_made_with_type", "the class made by type() from closures and lambdas: one factory per kind "
                "of rule", "dual", '''import math


def _binary(combine):
    """A method for Dual (op) other, other a Dual or a number, from combine(u, u', w, w') -> (value, tangent)."""
    def method(self, other):
        w, dw = (other.value, other.tangent) if isinstance(other, Dual) else (other, 0.0)
        return Dual(*combine(self.value, self.tangent, w, dw))
    return method


def _reflected(combine):
    """number (op) Dual."""
    return lambda self, other: Dual(*combine(other, 0.0, self.value, self.tangent))


def _unary(f, df):
    """A method for f(Dual), df the derivative of f."""
    return lambda self: Dual(f(self.value), df(self.value) * self.tangent)


def _init(self, value, tangent=0.0):
    self.value, self.tangent = value, tangent


def _power(u, du, w, dw):
    value = u ** w
    slope = w * u ** (w - 1) if w != 0 else 0.0
    return value, slope * du + (value * math.log(u) * dw if dw != 0 else 0.0)


_add = lambda u, du, w, dw: (u + w, du + dw)
_sub = lambda u, du, w, dw: (u - w, du - dw)
_mul = lambda u, du, w, dw: (u * w, du * w + u * dw)
_div = lambda u, du, w, dw: (u / w, (du * w - u * dw) / w ** 2)

Dual = type("Dual", (), {
    "__doc__": "A dual number value + tangent * eps with eps**2 = 0.",
    "__init__": _init,
    "__repr__": lambda self: f"Dual({self.value!r}, {self.tangent!r})",
    "__add__": _binary(_add), "__radd__": _reflected(_add),
    "__sub__": _binary(_sub), "__rsub__": _reflected(_sub),
    "__mul__": _binary(_mul), "__rmul__": _reflected(_mul),
    "__truediv__": _binary(_div), "__rtruediv__": _reflected(_div),
    "__pow__": _binary(_power), "__rpow__": _reflected(_power),
    "__neg__": lambda self: Dual(-self.value, -self.tangent),
    "exp": _unary(math.exp, math.exp),
    "log": _unary(math.log, lambda u: 1.0 / u),
    "sin": _unary(math.sin, math.cos),
    "cos": _unary(math.cos, lambda u: -math.sin(u)),
    "tanh": _unary(math.tanh, lambda u: 1.0 - math.tanh(u) ** 2),
})'''),
    Alternative("cd_partial_vectorize_cache", "central_difference is a functools.partial of a general difference "
                "function; the unit steps come from a functools.cache; the quotient is a numpy.vectorize",
                "central_difference", '''import functools


@functools.cache
def _unit_step(shape, index, h):
    """h at index, 0 elsewhere; cached, so shared between calls and never written."""
    step = np.zeros(shape)
    step[index] = h
    step.setflags(write=False)
    return step


_quotient = np.vectorize(lambda plus, minus, h: (plus - minus) / (2 * h), otypes=[np.float64])


def _differences(f, x, h=1e-6, *, scheme):
    """Forward or central differences of the scalar f at x, one coordinate at a time."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = _unit_step(x.shape, index, h)
        if scheme == "central":
            grad[index] = _quotient(f(x + step), f(x - step), h)
        else:
            grad[index] = (f(x + step) - f(x)) / h
    return grad


central_difference = functools.partial(_differences, scheme="central")'''),
    Alternative("jvp_singledispatch", "the output is unpacked by a functools.singledispatch function: one Dual, or "
                "a sequence of them", "jvp", '''import functools


@functools.singledispatch
def _unpack(out):
    """A sequence of Duals: two float64 arrays."""
    return (np.array([o.value for o in out], dtype=np.float64),
            np.array([o.tangent for o in out], dtype=np.float64))


@_unpack.register
def _(out: Dual):
    return float(out.value), float(out.tangent)


def jvp(f, x, v):
    """f at x and J v, pushing Duals through f once."""
    if len(x) != len(v):
        raise ValueError(f"x and v must have the same length, got {len(x)} and {len(v)}")
    return _unpack(f([Dual(float(a), float(b)) for a, b in zip(x, v)]))'''),
    Alternative("rev1_namedtuple_closures", "the forward values in a collections.namedtuple; each edge's local "
                "derivative a lambda over it, replayed from the output back", "reverse_example1", '''import collections

Forward = collections.namedtuple("Forward", "x1 x2 a f")


def reverse_example1(x1, x2):
    """f = (x1 + x2) * x1 and its adjoints, the reverse pass read from a table of edges."""
    fwd = Forward(x1, x2, x1 + x2, (x1 + x2) * x1)
    edges = [("f", "a", lambda: fwd.x1), ("f", "x1", lambda: fwd.a),     # f = a * x1
             ("a", "x1", lambda: 1.0), ("a", "x2", lambda: 1.0)]        # a = x1 + x2
    bar = {"f": 1.0, "a": 0.0, "x1": 0.0, "x2": 0.0}
    for node, into, local in edges:                                      # newest node first
        bar[into] += bar[node] * local()
    return float(fwd.f), {name: float(value) for name, value in bar.items()}'''),
    Alternative("passes_enum_namedtuple_lru_cache", "an enum.Enum of modes, a typing.NamedTuple of counts, a "
                "validating decorator made with functools.wraps and a typed functools.lru_cache",
                "passes_needed", '''import enum
import functools
from typing import NamedTuple


class Mode(enum.Enum):
    FORWARD = "forward"
    REVERSE = "reverse"


class Passes(NamedTuple):
    forward: int
    reverse: int


def positive_ints(fn):
    """Check that n and m are positive ints (not bools) before calling fn."""
    @functools.wraps(fn)
    def checked(n, m):
        for name, size in (("n", n), ("m", m)):
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"{name} must be a positive int, got {size!r}")
        return fn(n, m)
    return checked


@functools.lru_cache(maxsize=None, typed=True)
def _passes(n, m):
    return Passes(forward=n, reverse=m)


@positive_ints
def passes_needed(n, m):
    """One forward pass per input, one reverse pass per output."""
    return {mode.value: count for mode, count in zip(Mode, _passes(n, m))}'''),
    Alternative("passes_type_is_int", "checks type(...) is int for each argument separately",
                "passes_needed", '''def passes_needed(n, m):
    """n forward passes (one per input) or m reverse passes (one per output)."""
    if type(n) is not int or n <= 0:
        raise ValueError(f"n (the number of inputs) must be a positive int, got {n!r}")
    if type(m) is not int or m <= 0:
        raise ValueError(f"m (the number of outputs) must be a positive int, got {m!r}")
    return {"reverse": m, "forward": n}'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("cd_forward_difference", "dual_rsub_swapped", "rev1_assign_not_accumulate")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
    # checks an answer with torch inside the answer cell: the grader names the incident and takes that exercise
    ExampleStudent("dave", "attack", attack="torch_in_solution"),
]
