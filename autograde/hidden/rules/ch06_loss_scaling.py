"""The graded rules of ch06_loss_scaling (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

BF16 = ("test_bf16_values", "test_bf16_specials")
FP16 = ("test_fp16_step", "test_fp16_skips")

RULES = (
    # Exercise 1: format_info
    Rule("format_info.torch", ("test_format_info",),
         "Every fact equals `torch.finfo`'s for torch's five formats and float64, and for any other layout the facts "
         "of its bit patterns decoded one by one."),
    Rule("format_info.types", ("test_format_info",),
         "`bias` is an `int`, the four facts are Python `float`s, and the bit counts are those given."),
    # Exercise 2: bf16_bits
    Rule("bf16.torch", BF16,
         "Bit for bit torch's cast for every finite float32, in arrays of any shape (0-d, empty, non-contiguous)."),
    Rule("bf16.returns", BF16,
         "Returns a new `uint16` array of `x`'s shape and leaves `x` unchanged."),
    Rule("bf16.nan", ("test_bf16_specials",),
         "Every NaN, of either sign and any payload, gives a quiet NaN."),
    Rule("bf16.error", ("test_bf16_specials",),
         "Anything but a float32 ndarray raises `TypeError` (the given check)."),
    # Exercise 3: fp16_cast_losses
    Rule("cast_losses.torch", ("test_fp16_cast_losses",),
         "Both fractions equal those of torch's cast, for float32 and float64 gradients of any shape, spread over 50 "
         "binades and around float16's edges, and any scale."),
    Rule("cast_losses.counted", ("test_fp16_cast_losses",),
         "Only the finite non-zero entries of `grad * scale` count; with none the result is `(0.0, 0.0)`."),
    Rule("cast_losses.returns", ("test_fp16_cast_losses",),
         "Returns two Python floats and leaves `grad` unchanged."),
    # Exercise 4: scaled_train_step
    Rule("scaled.torch", ("test_scaled_step",),
         "The loss, gradients and parameters after each of three steps equal torch's (SGD with momentum), for float32 "
         "and float64 parameters (0-d too), any scale and `max_norm`."),
    Rule("scaled.returns", ("test_scaled_step",),
         "Returns a Python float (the unscaled loss) and a bool; parameters and gradients keep their dtype."),
    Rule("scaled.skip", ("test_scaled_step",),
         "A step with inf or NaN gradients changes no parameter and no optimizer state; a later step is taken."),
    # Exercise 5: GradScaler
    Rule("scaler.update", ("test_scaler_update",),
         "After each `update()` the scale equals `torch.amp.GradScaler('cpu')`'s through scripted overflows and clean "
         "steps, for any interval and factors, and never grows past float32's range."),
    Rule("scaler.update_call", ("test_scaler_update",),
         "`update(new_scale)` sets the scale; `update()` before any `unscale_` or `step` raises `AssertionError`."),
    Rule("scaler.unscale", ("test_scaler_unscale",),
         "`unscale_` multiplies every gradient in place (0-d too) by torch's float32 reciprocal of the scale and notes "
         "inf and NaN; `None` gradients are left alone."),
    Rule("scaler.errors", ("test_scaler_unscale", "test_scaler_step"),
         "Calls out of order raise `RuntimeError`, float16 gradients `ValueError` (the given checks)."),
    Rule("scaler.state", ("test_scaler_unscale",),
         "After `update()` every optimizer starts the next step anew."),
    Rule("scaler.step", ("test_scaler_unscale", "test_scaler_step"),
         "`step` unscales unless `unscale_` was called, skips exactly the optimizers whose gradients hold inf or NaN, "
         "returns a bool, and leaves every parameter as torch's does, with one to three optimizers."),
    Rule("scaler.scale", ("test_scaler_step",),
         "`scale(loss)` (given) equals torch's bit for bit, dtype and recorded nodes included."),
    # Exercise 6: fp16_train_step
    Rule("fp16.torch", FP16,
         "The loss, the scale and every master after each of eight steps equal the same algorithm in torch, with and "
         "without clipping, with SGD and AdamW, overflows included."),
    Rule("fp16.model", ("test_fp16_step",),
         "Masters and their gradients are float32; each model parameter keeps its own float16 array, updated in "
         "place; the loss is a Python float."),
    Rule("fp16.skip", ("test_fp16_skips",),
         "An overflowing step changes no master and no model parameter and backs the scale off."),
    # Exercise 7: autocast_inputs
    Rule("autocast.torch", ("test_autocast_dtypes",),
         "The dtypes, values and gradients of twelve programs equal those under `torch.autocast('cpu', "
         "dtype=torch.float16)`, for float16, float32 and float64 inputs."),
    Rule("autocast.error", ("test_autocast_dtypes",),
         "A product whose operands still differ in dtype after the casts raises `RuntimeError` and changes nothing."),
    Rule("autocast.graph", ("test_autocast_graph",),
         "A cast is recorded only for an input that changes dtype; other inputs come back as the same objects."),
    Rule("autocast.outside", ("test_autocast_graph",),
         "Outside `autocast()` and in `autocast(enabled=False)` nothing is cast."),
)
