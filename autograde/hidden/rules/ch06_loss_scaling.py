"""The graded rules of ch06_loss_scaling (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

BF16 = ("test_bf16_values", "test_bf16_specials")
E4M3 = ("test_e4m3fn_values", "test_e4m3fn_range")
SCALER = ("test_scaler_update", "test_scaler_unscale", "test_scaler_step")
FP16 = ("test_fp16_step", "test_fp16_skips")
AUTOCAST = ("test_autocast_dtypes", "test_autocast_graph")

RULES = (
    # Exercise 1: format_info
    Rule("format_info.torch", ("test_format_info",),
         "For torch's five formats and float64 every fact equals `torch.finfo`'s (the bias and the smallest subnormal "
         "read from torch's bit patterns); for any other layout, `finite_only=True` ones included, it equals the facts "
         "of every bit pattern decoded one by one."),
    Rule("format_info.types", ("test_format_info",),
         "`bias` is an `int`, the four facts are exact Python `float`s (not NumPy scalars), and `exponent_bits` and "
         "`mantissa_bits` are the numbers given."),
    # Exercise 2: bf16_bits
    Rule("bf16.torch", BF16,
         "Bit for bit torch's `x.to(torch.bfloat16)` for every finite float32 (normals, subnormals, exact ties, values "
         "that round up to inf), in arrays of any shape: 0-d, empty, size-1 and non-contiguous included."),
    Rule("bf16.returns", BF16,
         "Returns a new `uint16` array of `x`'s shape that shares no memory with `x`, and leaves `x` unchanged."),
    Rule("bf16.nan", ("test_bf16_specials",),
         "Every NaN (either sign, any payload) gives a quiet NaN: the exponent all ones and the bit `0x0040` set."),
    Rule("bf16.error", ("test_bf16_specials",),
         "Anything but a float32 ndarray (float64, float16 and integer arrays, a 0-d float64 array, a list, a Python "
         "float) raises `TypeError`."),
    # Exercise 3: e4m3fn_bits
    Rule("e4m3fn.torch", E4M3,
         "Bit for bit torch's cast to `float8_e4m3fn` for every representable value, every midpoint and its float32 "
         "neighbours, random values, zeros, subnormals and values that underflow, both signs, in arrays of any shape "
         "(0-d, empty, non-contiguous)."),
    Rule("e4m3fn.range", ("test_e4m3fn_range",),
         "Every value beyond 448 in magnitude, infinities included, saturates to `0x7E` or `0xFE`; a NaN gives `0x7F`, "
         "or `0xFF` when its sign bit is set."),
    Rule("e4m3fn.returns", E4M3,
         "Returns a new `uint8` array of `x`'s shape that shares no memory with `x`, and leaves `x` unchanged."),
    Rule("e4m3fn.error", ("test_e4m3fn_range",),
         "Anything but a float32 ndarray (float64 and float16 arrays, a list) raises `TypeError`."),
    # Exercise 4: fp16_cast_losses
    Rule("cast_losses.torch", ("test_fp16_cast_losses",),
         "Both fractions equal those of torch's `.half()` cast, for float32 and float64 gradients spread over 50 "
         "binades and around the edges $2^{-25}$ and 65504, with any scale, 0-d and transposed gradients included."),
    Rule("cast_losses.counted", ("test_fp16_cast_losses",),
         "Only the finite non-zero entries of `grad * scale` are counted; with none (empty, all zeros, all NaN) the "
         "result is `(0.0, 0.0)`."),
    Rule("cast_losses.returns", ("test_fp16_cast_losses",),
         "Returns a tuple of two Python floats and leaves `grad` unchanged."),
    # Exercise 5: scaled_train_step
    Rule("scaled.torch", ("test_scaled_step",),
         "The loss, every gradient and every parameter after each of three steps equal the same steps written in "
         "torch (scale, backward, unscale, clip, SGD with momentum), for float32 and float64 parameters, a 0-d one "
         "among them, any scale and `max_norm` (None included)."),
    Rule("scaled.returns", ("test_scaled_step",),
         "Returns `(loss, stepped)`, a Python float (the unscaled loss, on a skipped step too) and a bool; parameters "
         "and gradients keep their dtype."),
    Rule("scaled.skip", ("test_scaled_step",),
         "A step whose scaled gradients hold inf or NaN changes no parameter and does not start the optimizer's state "
         "(momentum); a later step with a smaller scale is taken."),
    # Exercise 6: GradScaler
    Rule("scaler.update", ("test_scaler_update",),
         "After each `update()` the scale equals `torch.amp.GradScaler('cpu')`'s with the same settings, through "
         "scripted overflows and clean steps: backoff, growth after `growth_interval` clean steps in a row (any "
         "interval from 1, counts past 256 too), no growth past float32's range; `get_scale()` is a Python float."),
    Rule("scaler.update_call", ("test_scaler_update",),
         "`update(new_scale)` sets the scale, as a float32; `update()` with no `unscale_` or `step` since the last "
         "update raises `AssertionError`."),
    Rule("scaler.unscale", ("test_scaler_unscale",),
         "`unscale_` multiplies every gradient by torch's float32 reciprocal of the scale, in place (the same Tensor "
         "and array, a 0-d one too), notes inf and NaN, and leaves `None` gradients alone."),
    Rule("scaler.errors", ("test_scaler_unscale", "test_scaler_step"),
         "A second `unscale_` before `update()`, `unscale_` after `step()` and a second `step()` raise `RuntimeError` "
         "with torch's message; a float16 gradient raises `ValueError` (\"Attempting to unscale FP16 gradients\") before "
         "any gradient changes."),
    Rule("scaler.state", ("test_scaler_unscale",),
         "`update()` forgets every optimizer's stage and inf flag: `unscale_` and `step` work again in the next step."),
    Rule("scaler.step", ("test_scaler_unscale", "test_scaler_step"),
         "`step` unscales unless `unscale_` was called, skips exactly the optimizers whose own gradients hold inf or "
         "NaN, returns a bool, and every parameter after every step equals torch's, with one to three optimizers."),
    Rule("scaler.scale", ("test_scaler_step",),
         "`scale(loss)` is a recorded Tensor equal to torch's bit for bit for float16, float32 and float64 losses: a "
         "0-d loss is promoted to float32, one with dimensions keeps its dtype; its node is the product's (`MulBackward0`, "
         "as torch's), with a cast recorded after it only where the product's dtype differs from the loss's."),
    # Exercise 7: fp16_train_step
    Rule("fp16.torch", FP16,
         "The returned loss, the scale and every master after each of eight steps equal the same algorithm in torch "
         "(float16 model, float32 masters, `torch.amp.GradScaler('cpu')`, with and without clipping, SGD with "
         "momentum and AdamW), overflowing steps included."),
    Rule("fp16.model", ("test_fp16_step",),
         "Masters and their gradients are float32; each model parameter keeps its own float16 array, updated in "
         "place to its master rounded to float16; the loss returned is a Python float."),
    Rule("fp16.skip", ("test_fp16_skips",),
         "A step whose float16 gradients overflow changes no master and no model parameter and backs the scale off; "
         "clean steps grow it as the scaler's rules say."),
    # Exercise 8: autocast_inputs
    Rule("autocast.torch", ("test_autocast_dtypes",),
         "Inside `autocast()` the dtype and value of twelve programs and the dtype and value of every leaf's gradient "
         "equal `torch.autocast('cpu', dtype=torch.float16)`'s, for float16, float32 and float64 inputs and mixed "
         "pairs."),
    Rule("autocast.error", ("test_autocast_dtypes",),
         "A product whose operands would still differ in dtype after the casts (float64 beside float16 or float32) "
         "raises `RuntimeError` with a message, as torch does, for every shape, changing neither the inputs nor "
         "autocast's state."),
    Rule("autocast.graph", ("test_autocast_graph",),
         "A cast (`ToCopyBackward0`) is recorded only for an input that changes dtype, as in torch; every other input "
         "is returned as the same object, and an operation without a policy gets its inputs back unchanged."),
    Rule("autocast.outside", ("test_autocast_graph",),
         "Outside `autocast()` and inside `autocast(enabled=False)` nothing is cast."),
)
