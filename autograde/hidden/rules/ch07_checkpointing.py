"""The graded rules of ch07_checkpointing (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

FORMULA = ("test_formula_meter", "test_formula_torch")

RULES = (
    # Exercise 1: mlp_saved_bytes
    Rule("formula.meter", ("test_formula_meter",),
         "Each entry equals what the meter counts for the nodes of its kind after `cross_entropy(mlp(params, X), y)`, "
         "for random MLPs of one to five layers, batches of 0 to 64 rows, and float16, float32 and float64 given as a "
         "type, a string or an `np.dtype`."),
    Rule("formula.torch", ("test_formula_torch",),
         "`\"linear inputs\"` equals the bytes of the storages torch saves for the same MLP without a loss (each "
         "storage once)."),
    Rule("formula.inputs", ("test_formula_meter",),
         "`sizes` may be a list, a tuple or a NumPy array (int32 too) and is left unchanged; `batch` may be a NumPy "
         "integer."),
    Rule("formula.returns", FORMULA,
         "Returns a dict with exactly the keys `\"linear inputs\"`, `\"relu masks\"` and `\"loss\"`, each value a "
         "Python `int`."),
    # Exercise 2: checkpoint
    Rule("checkpoint.gradients", ("test_checkpoint_gradients",),
         "Every gradient equals the same program's without checkpoint and `torch.utils.checkpoint`'s: tensor, int, "
         "float, None and string arguments; parameters as arguments or in the closure; unused and 0-d inputs; an input "
         "also used after the segment; nested checkpoints; empty and transposed batches; float32 stays float32."),
    Rule("checkpoint.modes", ("test_checkpoint_gradients",),
         "Backward under `no_grad()` gives the same gradients and leaves grad mode off; inside `no_grad()` the segment "
         "runs once and the output does not require grad; with `retain_graph=True` each backward reruns once and the "
         "gradients add up."),
    Rule("checkpoint.autocast", ("test_checkpoint_gradients",),
         "The rerun computes in forward's dtypes under Chapter 6's `autocast` (on or off in forward, on or off in "
         "backward), and the output's and gradients' dtypes are torch's, as with torch's reentrant checkpoint."),
    Rule("checkpoint.memory", ("test_checkpoint_memory",),
         "After forward the meter holds exactly the non-parameter inputs, saved as their own arrays; at the peak those "
         "plus one rerun; after backward, or once the output is dropped, nothing; inside `no_grad()` nothing."),
    Rule("checkpoint.errors", ("test_checkpoint_memory",),
         "A second backward raises `RuntimeError` (the inputs were freed) and leaves the meter as it was; an input "
         "changed in place after forward makes backward raise `RuntimeError`."),
    Rule("checkpoint.rng", ("test_checkpoint_rng",),
         "With dropout inside and between segments, outputs, gradients and the numbers the generator draws after "
         "backward equal the run without checkpoint; with `preserve_rng_state=False` the generator is left alone."),
    Rule("checkpoint.rng_raises", ("test_checkpoint_rng",),
         "A rerun that raises still puts the generator's state back, and the exception passes through."),
    # Exercise 3: sqrt_plan and run_chain
    Rule("sqrt_plan.layout", ("test_sqrt_plan",),
         "`sqrt_plan(n)` follows the rule for every `n` from 0 to 259 and for large `n` (up to 123457), as a list of "
         "tuples of Python ints, and reruns the layers torch's `checkpoint_sequential` reruns."),
    Rule("run_chain.plain", ("test_run_chain",),
         "Under random plans (segments in any order; the plan and `x` left unchanged) and for chains of any length "
         "(300 layers too) the loss and every gradient equal the plain chain's and torch's; each layer of a segment "
         "runs twice, every other layer once."),
    Rule("run_chain.memory", ("test_run_chain",),
         "The meter's peak during a training step equals the model's for the plan: one `checkpoint` per segment, with "
         "its input and its layers' parameters as arguments."),
    Rule("run_chain.errors", ("test_run_chain",),
         "A plan that is not one (out of range, empty or overlapping segments, in any order) raises `ValueError`; "
         "without a plan the chain runs plainly."),
    # Exercise 4: plan_peak
    Rule("plan_peak.model", ("test_plan_peak",),
         "`(peak, rerun)` equals a simulation of the meter event by event for every plan (segments in any order) of "
         "random chains of up to 6 layers (zero costs included), and the peak equals the meter's on real chains in "
         "float16, float32 and float64."),
    Rule("plan_peak.types", ("test_plan_peak",),
         "Costs may be tuples, lists, NumPy arrays or NumPy integers of any width, and are left unchanged; the result "
         "is a tuple of two Python ints, exact when the sums pass the dtype's range."),
    Rule("plan_peak.errors", ("test_plan_peak",),
         "A plan that is not one raises `ValueError`."),
    # Exercise 5: optimal_plan
    Rule("optimal.fits", ("test_optimal_plan_fits",),
         "For random short chains and budgets (the smallest possible peak, just below it, in between; an int or a NumPy "
         "integer) the result is a plan whose peak fits, and `ValueError` comes exactly when no plan fits."),
    Rule("optimal.best", ("test_optimal_plan_best",),
         "The plan reruns as few layers as the best of all plans, tried one by one on chains of up to 7 layers, and "
         "as the best plan on section 6's 64-layer chain; the costs are left unchanged."),
    Rule("optimal.fast", ("test_optimal_plan_best",),
         "A 64-layer chain takes well under a second."),
)
