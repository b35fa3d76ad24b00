"""The graded rules of ch04_accumulation (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

MICRO = ("test_microbatches_equal", "test_microbatches_unequal")
SGD = ("test_sgd_momentum", "test_sgd_decay_nesterov")
CLIP = ("test_clip_norm", "test_clip_inf_norm")

RULES = (
    Rule("zero_grad.none", ("test_zero_grad",),
         "After `zero_grad(params)` every tensor's `.grad` is `None`, as after torch's `optimizer.zero_grad()`, "
         "whatever backward calls came before (parameters of any shape, 0-d included, float32 and float64); the next "
         "backward writes a fresh gradient equal to torch's."),
    Rule("zero_grad.iterables", ("test_zero_grad",),
         "`params` may be a list, a tuple or a generator (iterated once), empty, or hold tensors that do not require "
         "grad; `zero_grad` returns `None`."),
    Rule("zero_grad.unchanged", ("test_zero_grad",),
         "Every tensor's `.data` and `requires_grad` stay as they were."),
    Rule("micro.gradient", MICRO,
         "For every N and k (equal and unequal micro-batches, k up to N), each parameter's `.grad` equals torch's "
         "full-batch gradient of the mean loss, in the parameter's dtype (float32 and float64), whatever `.grad` held "
         "before the call."),
    Rule("micro.loss", MICRO,
         "It returns the full-batch mean loss as a Python float, equal to torch's."),
    Rule("micro.calls", MICRO,
         "`loss_fn` is called once per micro-batch, on the sizes `np.array_split` gives, and each micro-batch's "
         "backward runs before the next `loss_fn` call."),
    Rule("meter.counts", ("test_meter",),
         "Over any sequence of `add`, `release` and `reset_peak` (0 and 10**9 bytes included), `live` is what was "
         "added minus what was released, and `peak` the largest `live` since the meter was made or `reset_peak` last "
         "ran (which sets it to `live`, not 0)."),
    Rule("meter.separate", ("test_meter",),
         "Each meter keeps its own counts (several meters used in turn), and `live` and `peak` stay Python ints."),
    Rule("backward.torch", ("test_backward_frees",),
         "On random graphs with fan-out (float32 and float64, 0-d and size-1 shapes), every leaf's `.grad` equals "
         "torch's, in the leaf's dtype: gradients that meet at a node are added."),
    Rule("backward.frees", ("test_backward_frees",),
         "Without `retain_graph`, each node's saved arrays are freed right after its rule ran (a rule finds the nodes "
         "before it freed), the meter ends where it began, and a second backward raises torch's RuntimeError, word "
         "for word, exactly when torch's does (a graph that saved nothing runs twice)."),
    Rule("backward.retain", ("test_backward_frees",),
         "With `retain_graph=True` nothing is freed, and a second backward adds torch's gradients again."),
    Rule("backward.none", ("test_backward_frees",),
         "A node that only `None` gradients reached is not run, yet freed like every other node: a later backward "
         "through it raises where torch's does, and with `retain_graph=True` nothing is freed."),
    Rule("backward.skipped_edges", ("test_backward_frees",),
         "A `None` gradient adds nothing: an edge without a node (a constant input) or with a `None` gradient is "
         "skipped and the node's later edges still get theirs, and a node reached by `None` and by real gradients "
         "gets the sum of the real ones, as in torch."),
    Rule("backward.root", ("test_backward_frees",),
         "The root is checked as torch checks it: RuntimeError naming 'grad can be implicitly created only for "
         "scalar outputs', 'Mismatch in shape' or 'does not require grad'; a gradient given as an array, a list or a "
         "Tensor is cast to the root's dtype, and a leaf can be the root."),
    Rule("sgd.torch", SGD,
         "Step after step (a small network for 20 steps, scripted gradients with zeros and `None`, 0-d parameters, "
         "float32 and float64), every parameter equals torch.optim.SGD's, for lr, momentum, dampening, weight decay "
         "and Nesterov as torch accepts them; the momentum buffer keeps the parameter's dtype."),
    Rule("sgd.in_place", SGD,
         "`p.data` is updated in place (the same array object) in its dtype, `p.grad` stays exactly what backward "
         "wrote, and a parameter whose `.grad` is `None` does not move."),
    Rule("sgd.momentum_zero", ("test_sgd_momentum",),
         "With `momentum=0` there is no buffer: any dampening changes nothing, as in torch."),
    Rule("sgd.nan_setting", SGD,
         "A NaN momentum or weight decay, which torch accepts, is not 0: it applies, and the parameters become NaN "
         "as torch's do."),
    Rule("sgd.decay_zero", ("test_sgd_decay_nesterov",),
         "With `weight_decay=0` nothing is added to the gradient, not even `0 * p`: a parameter holding inf or NaN "
         "moves as torch's does."),
    Rule("clip.torch", CLIP,
         "For any `norm_type` (2, 1, 3, 0.5, an int, `math.inf` or `\"inf\"`), any `max_norm` (0 and ints included) "
         "and gradients of any shape (0-d included, float32 and float64, some parameters without `.grad`, a single "
         "Tensor), the returned norm and every clipped gradient equal torch's `clip_grad_norm_`."),
    Rule("clip.returns", ("test_clip_norm",),
         "It returns the norm before clipping as a Tensor in the gradients' dtype (0 when no parameter has a "
         "gradient)."),
    Rule("clip.in_place", ("test_clip_norm",),
         "Each gradient is scaled in place (the same `.grad` object and array); a `.grad` of `None` stays `None`."),
    Rule("clip.nonfinite", ("test_clip_inf_norm",),
         "With inf or NaN in a gradient, the norm and the gradients equal torch's exactly (NaN where inf * 0); with "
         "`error_if_nonfinite=True` a non-finite norm raises RuntimeError and changes nothing."),
    Rule("train.torch", ("test_train_step",),
         "Step after step (momentum, dampening, weight decay, Nesterov, float32 too), the parameters and their "
         "`.grad` equal torch's loop: zero_grad, forward, backward, clipping when `max_norm` is not `None` (0 "
         "included), step."),
    Rule("train.loss", ("test_train_step",),
         "It returns the loss before the update as a Python float, equal to torch's, from one `compute_loss()` call "
         "per step."),
    Rule("train.zero_grads", ("test_train_step",),
         "With `zero_grads=False` the new gradient is added to the old one, as in torch's loop without "
         "`zero_grad`."),
)
