"""Mutants and alternatives for ch06_loss_scaling (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that must then
score 0, all of its own exercise (the grader runs each test cell on the course's solution of the other
exercises). Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

FMT = ("test_format_info",)
BFV, BFS = "test_bf16_values", "test_bf16_specials"
CAST = ("test_fp16_cast_losses",)
STATIC = ("test_scaled_step",)
UPD, UNS, STP = "test_scaler_update", "test_scaler_unscale", "test_scaler_step"
MP, MPS = "test_fp16_step", "test_fp16_skips"
ACD, ACG = "test_autocast_dtypes", "test_autocast_graph"

SCALER_GROWTH = """                self._growth_tracker += 1
                if self._growth_tracker == self.growth_interval:"""
SCALER_AFTER_GROWTH = """                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0"""
MP_CLIP = """    scaler.unscale_(optimizer)
    if max_norm is not None:
        clip_grad_norm_(masters, max_norm)"""
STATIC_CLIP = """    for g in grads:
        g *= 1.0 / scale                                     # in place, in the gradient's own dtype
    if max_norm is not None:
        clip_grad_norm_(optimizer.params, max_norm)          # on the true gradients, after unscaling"""

MUTANTS = [
    # -- Exercise 1: format_info ------------------------------------------------------------------------
    Mutant("fmt_bias_off_by_one", "bias 2**(E-1) instead of 2**(E-1) - 1", "format_info",
           "bias = 2 ** (exponent_bits - 1) - 1", "bias = 2 ** (exponent_bits - 1)", FMT, visible=True),
    Mutant("fmt_fn_as_ieee", "finite_only ignored: e4m3fn's maximum computed by the IEEE rule (240)", "format_info",
           "    if finite_only:      # the all-ones exponent holds numbers; only its all-ones mantissa is NaN",
           "    if False:", FMT, visible=True),
    Mutant("fmt_fn_all_ones_mantissa", "finite_only keeps the all-ones mantissa of the top exponent as a number (480)",
           "format_info", "2 ** exponent_bits - 1, 2 ** mantissa_bits - 2", "2 ** exponent_bits - 1, 2 ** mantissa_bits - 1",
           FMT, visible=True),
    Mutant("fmt_eps_unit_roundoff", "eps taken as half the gap, 2**-(M+1) (the unit roundoff)", "format_info",
           "math.ldexp(1.0, -mantissa_bits))", "math.ldexp(1.0, -mantissa_bits - 1))", FMT, visible=True),
    Mutant("fmt_subnormals_flushed", "no subnormals: the smallest positive value taken to be the smallest normal",
           "format_info", "math.ldexp(1.0, 1 - bias - mantissa_bits)", "math.ldexp(1.0, 1 - bias)", FMT, visible=True),
    Mutant("fmt_numpy_float32", "the maximum computed as a NumPy float32 (not a Python float; float64's overflows)",
           "format_info", "largest = math.ldexp(1.0 + top_mantissa / 2 ** mantissa_bits, top_field - bias)",
           "largest = np.ldexp(np.float32(1.0 + top_mantissa / 2 ** mantissa_bits), top_field - bias)", FMT,
           visible=True),
    # -- Exercise 2: bf16_bits ------------------------------------------------------------------------------
    Mutant("bf16_truncate", "truncation: the upper 16 bits kept without rounding", "bf16_bits",
           "rounded = (bits + np.uint32(0x7FFF) + lower_half_odd) >> 16", "rounded = bits >> 16", (BFV, BFS), visible=True),
    Mutant("bf16_ties_away", "ties rounded away from zero (add 0x8000) instead of to even", "bf16_bits",
           "rounded = (bits + np.uint32(0x7FFF) + lower_half_odd) >> 16", "rounded = (bits + np.uint32(0x8000)) >> 16",
           (BFV,), visible=True),
    Mutant("bf16_nan_rounded", "NaN rounded like any number: a low payload becomes inf, all ones become -0",
           "bf16_bits", "return np.where(np.isnan(x), quiet_nan, rounded).astype(np.uint16)",
           "return rounded.astype(np.uint16)", (BFV, BFS), visible=True),
    Mutant("bf16_nan_truncated", "NaN truncated without setting the quiet bit: a payload in the low bits is lost (inf)",
           "bf16_bits", "quiet_nan = (bits >> 16) | 0x0040", "quiet_nan = bits >> 16", (BFS,), visible=True),
    Mutant("bf16_accepts_float64", "float64 converted to float32 first (rounded twice) instead of refused",
           "bf16_bits", """    if not isinstance(x, np.ndarray) or x.dtype != np.float32:   # a float64 rounded via float32 would round twice
        raise TypeError(f"bf16_bits needs a float32 ndarray, got {getattr(x, 'dtype', type(x).__name__)}")""",
           "    x = np.asarray(x, dtype=np.float32)", (BFS,), visible=True),
    Mutant("bf16_inplace_on_input", "the rounding bias added in place to a view of the caller's array", "bf16_bits",
           "rounded = (bits + np.uint32(0x7FFF) + lower_half_odd) >> 16",
           "bits += np.uint32(0x7FFF) + lower_half_odd\n    rounded = bits >> 16", (BFV, BFS), visible=True),
    # -- Exercise 3: fp16_cast_losses ---------------------------------------------------------------------------
    Mutant("cast_flushes_subnormals", "counts as lost everything below float16's smallest normal 2**-14",
           "fp16_cast_losses", "float(np.count_nonzero(half == 0) / count)",
           "float(np.count_nonzero(np.abs(scaled[kept]) < 2.0 ** -14) / count)", CAST, visible=True),
    Mutant("cast_threshold_not_rounding", "counts as lost everything below 2**-24, though values from 2**-25 up round "
           "up to 2**-24", "fp16_cast_losses", "float(np.count_nonzero(half == 0) / count)",
           "float(np.count_nonzero(np.abs(scaled[kept]) < 2.0 ** -24) / count)", CAST, visible=True),
    Mutant("cast_scale_after_cast", "casts to float16 first and scales afterwards: nothing is saved by the scale",
           "fp16_cast_losses", "half = scaled[kept].astype(np.float16)",
           "half = np.asarray(grad)[kept].astype(np.float16) * np.float16(scale)", CAST, visible=True),
    Mutant("cast_counts_every_entry", "divides by the number of all entries, zeros, inf and NaN included",
           "fp16_cast_losses", "count = int(np.count_nonzero(kept))", "count = int(np.size(scaled))", CAST,
           visible=True),
    Mutant("cast_numpy_floats", "returns NumPy float64 scalars instead of Python floats", "fp16_cast_losses",
           "return float(np.count_nonzero(half == 0) / count), float(np.count_nonzero(np.isinf(half)) / count)",
           "return np.count_nonzero(half == 0) / count, np.count_nonzero(np.isinf(half)) / count", CAST,
           visible=True),
    # -- Exercise 4: scaled_train_step ------------------------------------------------------------------------
    Mutant("static_clip_before_unscale", "clips the scaled gradients, then unscales", "scaled_train_step",
           STATIC_CLIP, """    if max_norm is not None:
        clip_grad_norm_(optimizer.params, max_norm)
    for g in grads:
        g *= 1.0 / scale""", STATIC, visible=True),
    Mutant("static_no_overflow_check", "steps even when a gradient overflowed", "scaled_train_step",
           "    if not all(np.isfinite(g).all() for g in grads):", "    if False:", STATIC, visible=True),
    Mutant("static_checks_loss_only", "checks the loss for inf/NaN instead of the gradients", "scaled_train_step",
           "    if not all(np.isfinite(g).all() for g in grads):", "    if not np.isfinite(loss.item()):", STATIC,
           visible=True),
    Mutant("static_returns_scaled_loss", "reports the scaled loss", "scaled_train_step",
           "    return float(loss.item()), True", "    return float(loss.item()) * scale, True", STATIC, visible=True),
    Mutant("static_no_zero_grad", "forgets zero_grad: the gradients of successive steps add up", "scaled_train_step",
           "    optimizer.zero_grad()                                    # this step's gradients only\n", "",
           STATIC, visible=True),
    # -- Exercise 5: GradScaler -----------------------------------------------------------------------------------
    Mutant("scaler_grows_every_clean_step", "grows the scale after every step without overflow", "grad_scaler",
           SCALER_GROWTH, "                self._growth_tracker += 1\n                if True:", (UPD, UNS, STP),
           visible=True),
    Mutant("scaler_tracker_kept_on_overflow", "an overflow backs off but does not restart the count of clean steps",
           "grad_scaler", """                self._scale = np.float32(float(self._scale) * self.backoff_factor)   # in double, stored as float32
                self._growth_tracker = 0""",
           "                self._scale = np.float32(float(self._scale) * self.backoff_factor)", (UPD, UNS, STP),
           visible=True),
    Mutant("scaler_tracker_kept_after_growth", "the count is not restarted after growing: the scale grows only once",
           "grad_scaler", SCALER_AFTER_GROWTH, "                    if np.isfinite(grown):\n                        self._scale = grown",
           (UPD, UNS, STP), visible=True),
    Mutant("scaler_float64_scale", "the scale kept as a Python float: it grows beyond float32's range, and odd "
           "factors round differently", "grad_scaler",
           "                self._scale = np.float32(float(self._scale) * self.backoff_factor)   # in double, stored as float32",
           "                self._scale = float(self._scale) * self.backoff_factor", (UPD,), visible=False,
           hidden_because="with factors 0.5 and 2 and ordinary scales float64 and float32 agree exactly; only odd "
           "factors (0.3, 1.7) show it, and those are in the hidden tests"),
    Mutant("scaler_inf_check_first_grad", "looks for inf/NaN in the first gradient only", "grad_scaler",
           "            found_inf = found_inf or not np.isfinite(g).all()",
           "            found_inf = found_inf or (g is grads[0] and not np.isfinite(g).all())", (UPD, UNS, STP),
           visible=True),
    Mutant("scaler_isinf_misses_nan", "np.isinf: a NaN gradient goes unnoticed", "grad_scaler",
           "            found_inf = found_inf or not np.isfinite(g).all()",
           "            found_inf = found_inf or bool(np.isinf(g).any())", (UPD, UNS, STP), visible=True),
    Mutant("scaler_skipped_step_applied", "the step is taken even after inf/NaN (only the result says skipped)",
           "grad_scaler", """        if state["found_inf"]:
            return False
        optimizer.step()""", """        optimizer.step()
        if state["found_inf"]:
            return False""", (UPD, UNS, STP), visible=True),
    Mutant("scaler_step_unscales_again", "step unscales whatever the stage: after an explicit unscale_ it unscales "
           "twice", "grad_scaler", """        if state["stage"] == "ready":
            self.unscale_(optimizer)""", """        state["stage"] = "ready"
        self.unscale_(optimizer)""", (UNS,), visible=True),
    Mutant("scaler_accepts_fp16", "unscales float16 gradients (where they underflow again)", "grad_scaler",
           """        if any(g.dtype == np.float16 for g in grads):
            raise ValueError("Attempting to unscale FP16 gradients.")""", "", (UNS,), visible=True),
    Mutant("scaler_scale_in_loss_dtype", "scale() multiplies by a Python float: a float16 loss overflows",
           "grad_scaler", "loss * Tensor(np.asarray(self._scale, dtype=np.float32))",
           "loss * float(self._scale)", (STP,), visible=True),
    Mutant("scaler_scale_promotes_with_dimensions", "scale() returns float32 for a float16 loss with dimensions too "
           "(torch keeps its dtype: a 0-d scale does not decide a dimensioned tensor's dtype)", "grad_scaler",
           "        if loss.ndim and scaled.dtype != loss.dtype:", "        if False:", (STP,), visible=True),
    Mutant("scaler_state_kept_after_update", "update() does not forget the optimizers' stages: the next step() raises",
           "grad_scaler", "        self._per_optimizer = {}", "        pass", (UPD, UNS, STP), visible=True),
    # -- Exercise 6: fp16_train_step --------------------------------------------------------------------------------
    Mutant("mp_master_grads_float16", "the masters get the float16 gradients as they are: master weights that see "
           "float16", "fp16_train_step", "Tensor(p.grad.data.astype(np.float32))", "Tensor(p.grad.data)", (MP, MPS),
           visible=True),
    Mutant("mp_clip_before_unscale", "clips the scaled gradients, then unscales", "fp16_train_step", MP_CLIP,
           """    if max_norm is not None:
        clip_grad_norm_(masters, max_norm)
    scaler.unscale_(optimizer)""", (MP,), visible=True),
    Mutant("mp_model_not_updated", "the masters are updated but never copied into the float16 model",
           "fp16_train_step", """            np.copyto(p.data, master.data, casting="same_kind")     # in place: the model keeps its arrays""",
           "            pass", (MP,), visible=True),
    Mutant("mp_model_arrays_replaced", "the model gets new arrays instead of being updated in place", "fp16_train_step",
           """            np.copyto(p.data, master.data, casting="same_kind")     # in place: the model keeps its arrays""",
           "            p.data = master.data.astype(np.float16)", (MP,), visible=True),
    Mutant("mp_model_grads_not_cleared", "only the masters' gradients are cleared: the model's float16 gradients "
           "accumulate across steps", "fp16_train_step", "    for p in model + masters:\n        p.grad = None",
           "    for p in masters:\n        p.grad = None", (MP, MPS), visible=True),
    Mutant("mp_update_before_step", "scaler.update() before scaler.step(): the gradients are unscaled twice",
           "fp16_train_step", """    if scaler.step(optimizer):""", """    scaler.update()
    if scaler.step(optimizer):""", (MP, MPS), visible=True),
    # -- Exercise 7: autocast_inputs ----------------------------------------------------------------------------------
    Mutant("ac_casts_float64", "float64 inputs cast too (torch never casts them)", "autocast_inputs",
           "    eligible = (np.dtype(np.float16), np.dtype(np.float32))  # float64 and integers are never cast",
           "    eligible = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))", (ACD, ACG),
           visible=True),
    Mutant("ac_cast_not_recorded", "the cast done on the array, not recorded: no gradient reaches the original tensor",
           "autocast_inputs", "cast(t, target) if", "Tensor(t.data.astype(target)) if", (ACD, ACG), visible=True),
    Mutant("ac_mixed_float64_promoted", "float64 beside a float32 or float16 operand of the product is let through: "
           "NumPy promotes to float64, where torch raises", "autocast_inputs",
           '    if policy == "lower" and len(set(after)) > 1:', "    if False:", (ACD,), visible=True),
    Mutant("ac_casts_same_dtype", "an input already of the target dtype is cast too (an extra node, a copy)",
           "autocast_inputs", "if t.dtype in eligible and t.dtype != target else t",
           "if t.dtype in eligible else t", (ACG,), visible=True),
    Mutant("ac_cuda_list", "every operation without a low-precision policy runs in float32 (the CUDA lists' "
           "spirit)", "autocast_inputs", "    if policy is None:\n        return inputs",
           "    if policy is None:\n        policy = \"fp32\"", (ACD, ACG), visible=True),
    Mutant("ac_fp32_ignored", "only the low-precision policy is applied: the loss is not lifted to float32",
           "autocast_inputs", 'target = AUTOCAST.dtype if policy == "lower" else np.dtype(np.float32)',
           "target = AUTOCAST.dtype", (ACD, ACG), visible=True),
    # -- concept checks ----------------------------------------------------------------------------------------------
    Mutant("concept_bf16_wrong", "believes bf16 loses nothing", "concept_bf16", 'answer_bf16 = "c"', 'answer_bf16 = "a"',
           ("test_concept_bf16",), visible=False, hidden_because="a concept check: the answer is only in the hidden test"),
    Mutant("concept_clip_order_wrong", "believes unscaling undoes clipping", "concept_clip_order",
           'answer_clip_order = "b"', 'answer_clip_order = "a"', ("test_concept_clip_order",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
    Mutant("concept_autocast_wrong", "quotes CUDA's list for the CPU", "concept_autocast", 'answer_autocast = "d"',
           'answer_autocast = "a"', ("test_concept_autocast",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
]

ALTERNATIVES = [
    Alternative("format_info_closed_forms", "the maximum as (2 - 2**-M) * 2**emax in Python numbers, the finite-only "
                "case as one binade more with one step less", "format_info", '''def format_info(exponent_bits, mantissa_bits, finite_only=False):
    bias = (1 << (exponent_bits - 1)) - 1
    emax = (1 << exponent_bits) - 2 - bias
    if finite_only:
        largest = (2.0 - 2.0 * 2.0 ** -mantissa_bits) * 2.0 ** (emax + 1)
    else:
        largest = (2.0 - 2.0 ** -mantissa_bits) * 2.0 ** emax
    smallest_normal = 2.0 ** (1 - bias)
    return FloatFormat(exponent_bits=exponent_bits, mantissa_bits=mantissa_bits, bias=bias, max=largest,
                       smallest_normal=smallest_normal, smallest_subnormal=smallest_normal * 2.0 ** -mantissa_bits,
                       eps=2.0 ** -mantissa_bits)
'''),
    Alternative("bf16_bits_where", "rounding decided with np.where on the lower half (above, below or at a tie) "
                "instead of the carry trick", "bf16_bits", '''def bf16_bits(x):
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError("bf16_bits rounds float32 arrays only")
    bits = x.view(np.uint32).astype(np.uint64)           # room for the carry
    upper, lower = bits >> 16, bits & 0xFFFF
    round_up = (lower > 0x8000) | ((lower == 0x8000) & (upper & 1 == 1))
    rounded = np.where(round_up, upper + 1, upper)
    out = np.where(np.isnan(x), upper | 0x40, rounded)
    return np.array(out, dtype=np.uint16)
'''),
    Alternative("cast_losses_whole_array", "the whole array cast, masks combined afterwards, sums of booleans",
                "fp16_cast_losses", '''def fp16_cast_losses(grad, scale=1.0):
    scaled = np.multiply(grad, scale)
    counted = np.isfinite(scaled) & (scaled != 0)
    total = counted.sum()
    if not total:
        return 0.0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        half = scaled.astype(np.float16)
    lost = (half == 0) & counted
    overflowed = np.isinf(half) & counted
    return float(lost.sum()) / float(total), float(overflowed.sum()) / float(total)
'''),
    Alternative("scaled_step_divide", "gradients divided with np.divide(out=...), finiteness checked on one "
                "concatenated array", "scaled_train_step", '''def scaled_train_step(optimizer, compute_loss, scale, max_norm=None):
    for p in optimizer.params:
        p.grad = None
    loss = compute_loss()
    loss_value = float(loss.item())
    with np.errstate(all="ignore"):
        (loss * scale).backward()
    grads = [p.grad.data for p in optimizer.params if p.grad is not None]
    if grads and not np.isfinite(np.concatenate([g.ravel() for g in grads])).all():
        return loss_value, False
    for g in grads:
        np.divide(g, scale, out=g, casting="unsafe")
    if max_norm is not None:
        clip_grad_norm_(optimizer.params, max_norm)
    optimizer.step()
    return loss_value, True
'''),
    Alternative("grad_scaler_dataclass", "a dataclass for each optimizer's state and an Enum for the stages",
                "grad_scaler", '''import dataclasses
import enum


class Stage(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


@dataclasses.dataclass
class OptimizerState:
    stage: Stage = Stage.READY
    found_inf: bool = False


class GradScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self._scale = np.float32(init_scale)
        self.factors = (float(growth_factor), float(backoff_factor))
        self.growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self):
        return self._scale.item()

    def scale(self, loss):
        product = loss * Tensor(np.array(self._scale, dtype=np.float32))
        return product if loss.ndim == 0 or product.dtype == loss.dtype else cast(product, loss.dtype)

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), OptimizerState())

    def unscale_(self, optimizer):
        state = self._state(optimizer)
        if state.stage is Stage.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state.stage is Stage.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        tensors = [p.grad for p in optimizer.params if p.grad is not None]
        for t in tensors:
            if t.dtype == np.float16:
                raise ValueError("Attempting to unscale FP16 gradients.")
        inverse = np.float32(1.0 / float(self._scale))
        state.found_inf = any(not np.all(np.isfinite(t.data)) for t in tensors)
        for t in tensors:
            np.multiply(t.data, inverse, out=t.data)
        state.stage = Stage.UNSCALED

    def step(self, optimizer):
        state = self._state(optimizer)
        if state.stage is Stage.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state.stage is Stage.READY:
            self.unscale_(optimizer)
        state.stage = Stage.STEPPED
        if not state.found_inf:
            optimizer.step()
        return not state.found_inf

    def update(self, new_scale=None):
        growth, backoff = self.factors
        if new_scale is not None:
            self._scale = np.float32(new_scale)
        elif not self._per_optimizer:
            raise AssertionError("No inf checks were recorded prior to update.")
        elif any(s.found_inf for s in self._per_optimizer.values()):
            self._scale = np.float32(float(self._scale) * backoff)
            self._growth_tracker = 0
        elif self._growth_tracker + 1 < self.growth_interval:
            self._growth_tracker += 1
        else:
            with np.errstate(over="ignore"):
                grown = np.float32(float(self._scale) * growth)
            self._scale = grown if np.isfinite(grown) else self._scale
            self._growth_tracker = 0
        self._per_optimizer.clear()
'''),
    Alternative("fp16_step_indexed", "index loops, the copy into the model by slice assignment, the loss read "
                "before backward", "fp16_train_step", '''def fp16_train_step(model, masters, optimizer, scaler, compute_loss, max_norm=None):
    for i in range(len(model)):
        model[i].grad = None
        masters[i].grad = None
    loss = compute_loss()
    value = loss.item()
    with np.errstate(all="ignore"):
        scaler.scale(loss).backward()
    for i in range(len(model)):
        if model[i].grad is not None:
            masters[i].grad = Tensor(np.asarray(model[i].grad.data, dtype=np.float32))
    scaler.unscale_(optimizer)
    if max_norm is not None:
        clip_grad_norm_(masters, max_norm)
    stepped = scaler.step(optimizer)
    scaler.update()
    if stepped:
        for i in range(len(model)):
            model[i].data[...] = masters[i].data
    return float(value)
'''),
    Alternative("autocast_inputs_loop", "an explicit loop, the target dtype looked up in a small table",
                "autocast_inputs", '''def autocast_inputs(function, inputs):
    targets = {"lower": AUTOCAST.dtype, "fp32": np.dtype(np.float32)}
    policy = policy_of(function)
    if policy not in targets:
        return inputs
    kinds = {targets[policy] if t.dtype.kind == "f" and t.dtype.itemsize <= 4 else t.dtype for t in inputs}
    if policy == "lower" and len(kinds) != 1:
        raise RuntimeError("expected the operands of " + function.__name__ + " to have one dtype, got "
                           + " and ".join(str(t.dtype) for t in inputs))
    out = []
    for t in inputs:
        if t.dtype.kind == "f" and t.dtype.itemsize <= 4 and t.dtype != targets[policy]:
            out.append(cast(t, targets[policy]))
        else:
            out.append(t)
    return tuple(out)
'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("bf16_truncate", "scaler_grows_every_clean_step", "mp_clip_before_unscale")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
