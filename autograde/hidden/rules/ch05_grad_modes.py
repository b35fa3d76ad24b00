"""The graded rules of ch05_grad_modes (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

INFERENCE = ("test_inference_mode_flags", "test_inference_tensors")
APPLY = ("test_apply_recording", "test_apply_needs_input_grad")

RULES = (
    Rule("grad_mode.nesting", ("test_grad_mode_nesting",),
         "For every nesting of `no_grad`, `enable_grad`, `set_grad_enabled(False)` and `set_grad_enabled(True)` up "
         "to three deep, `is_grad_enabled()` on entering and after leaving each block equals torch's, also when an "
         "exception leaves any of the blocks."),
    Rule("grad_mode.exceptions", ("test_grad_mode_nesting",),
         "`__exit__` returns nothing: an exception raised inside a block reaches the caller."),
    Rule("grad_mode.threads", ("test_grad_mode_threads",),
         "Each thread has its own modes: a new thread starts with grad mode on and inference mode off, whatever mode "
         "the thread that started it is in, and a block in one thread never changes another thread's mode."),
    Rule("grad_mode.decorators", ("test_grad_mode_decorators",),
         "Each manager decorates a function, bare (`@no_grad`) or called (`@no_grad()`, `@set_grad_enabled(False)`): "
         "decorating changes no mode, the mode holds inside every call (recursive ones, and inside `no_grad`), the "
         "previous mode comes back after it, and the function keeps its name."),
    Rule("grad_mode.statement", ("test_grad_mode_decorators",),
         "`set_grad_enabled(flag)` called as a plain statement sets grad mode at once."),
    Rule("inference.flags", ("test_inference_mode_flags",),
         "For every nesting of `inference_mode()`, `inference_mode(False)` and the grad managers up to three deep, "
         "with and without an exception, `is_grad_enabled()`, `is_inference_mode_enabled()` and a new tensor's "
         "`is_inference()` equal torch's on entering and after leaving each block."),
    Rule("inference.decorators_threads", ("test_inference_mode_flags",),
         "As a decorator (`@inference_mode`, `@inference_mode()`, `@inference_mode(False)`) and across threads it "
         "behaves as torch's: a thread started inside inference mode starts outside it."),
    Rule("inference.tensors", ("test_inference_tensors",),
         "Tensors made inside inference mode are inference tensors and reading their `_version` raises "
         "RuntimeError, as in torch; tensors made in `no_grad`, in `inference_mode(False)` or outside, and results "
         "computed outside from inference tensors, are not."),
    Rule("apply.records", ("test_apply_recording",),
         "For every pattern of `requires_grad` among three inputs, in every mode (grad, `no_grad`, `enable_grad` "
         "inside `no_grad` or inside `inference_mode`, `set_grad_enabled(False)`, and nestings of the managers two "
         "deep), the output's `requires_grad`, `is_leaf` and `grad_fn is None` equal torch's built-in ops', in the "
         "inputs' dtype, and a recorded node's backward gives its rule's gradients."),
    Rule("apply.meter", ("test_apply_recording",),
         "A recorded node puts exactly the bytes its rule saved on the meter (parameters' arrays excluded); a call "
         "that records nothing puts nothing there."),
    Rule("apply.errors", ("test_apply_recording",),
         "An input that is not a Tensor raises TypeError; a recorded node that must save an inference tensor raises "
         "torch's RuntimeError, while one that saves none works, as in torch."),
    Rule("apply.zero_d", ("test_apply_recording",),
         "A 0-d result is a 0-d array of the inputs' dtype, the very array the rule saved, so that an in-place "
         "change of it is caught in backward."),
    Rule("apply.needs_input_grad", ("test_apply_needs_input_grad",),
         "Forward sees `ctx.needs_input_grad` as each input's `requires_grad`, as torch fills it, in every mode "
         "(also where nothing is recorded) and for non-leaf inputs."),
    Rule("detach.shares", ("test_detach",),
         "`detach()` returns a new tensor on the same array (a change through one shows in the other) that shares "
         "the version counter, as in torch."),
    Rule("detach.history", ("test_detach",),
         "It has no history (`requires_grad` False, a leaf, no `grad_fn`) for leaves, non-leaves, constants and "
         "under `no_grad`, keeps the dtype and the inference flag, and no gradient flows through it, as in torch."),
    Rule("inplace.torch", ("test_inplace_ops",),
         "`add_`, `sub_`, `mul_`, `div_`, `zero_`, `fill_` and `+=`, `-=`, `*=`, `/=` (numbers and tensors on the "
         "right) give torch's values, versions, node names and gradients, float32 and float64, on non-leaves, "
         "constants, leaves under `no_grad` and inside inference mode, and return `t` itself with its array changed "
         "in place."),
    Rule("inplace.retain", ("test_inplace_ops",),
         "When `t` retains its gradient, its retain hook moves to the new node: `t.grad` is the gradient of `t`'s new "
         "value, as in torch, for every in-place operation."),
    Rule("inplace.refusals", ("test_inplace_refusals",),
         "A leaf that requires grad is refused while grad mode is on (also `enable_grad` inside `no_grad`), an "
         "inference tensor outside inference mode (also under `no_grad`), each with RuntimeError; where both apply, "
         "the leaf's message, as torch."),
    Rule("inplace.shape", ("test_inplace_refusals",),
         "An operation whose broadcast result has another shape than `t` (`t` of shape `(3,)` and another operand of "
         "shape `(4, 3)`, a 0-d `t` and a vector) raises RuntimeError, as torch, and changes neither `t`'s values "
         "nor its version."),
    Rule("inplace.version", ("test_version_check",),
         "backward raises torch's RuntimeError, word for word, when an array a node saved was changed in place since "
         "(a saved output or input, a saved constant, through `detach`, under `no_grad`, by an optimiser step, a 0-d "
         "one), and gives torch's gradients when nothing it needs changed."),
    Rule("hooks.torch", ("test_hooks",),
         "Hooks see and replace the gradient as torch's do: on a leaf before accumulation, in registration order, "
         "once per backward on the summed gradient, `None` keeping it, `remove()` taking a hook out, float32 too."),
    Rule("hooks.refused", ("test_hooks",),
         "A replacement of another shape or dtype raises RuntimeError, as in torch."),
    Rule("retain.torch", ("test_retain_grad",),
         "`retain_grad()` keeps a non-leaf's gradient in `.grad` after every other hook, accumulating over backward "
         "calls, once however often it is called; it does nothing on a leaf and raises RuntimeError on a tensor that "
         "does not require grad, as torch."),
    Rule("retain.memory", ("test_retain_grad",),
         "The node does not keep its output alive: with the garbage collector off, `del y` frees what `y`'s graph "
         "saved."),
    Rule("anomaly.nan", ("test_anomaly",),
         "In anomaly mode a rule that returns NaN raises torch's RuntimeError ('Function ... returned nan values in "
         "its 1th output.') followed by where forward created the node; outside anomaly mode, or with "
         "`check_nan=False`, the NaN reaches `.grad` without an error, as in torch."),
    Rule("anomaly.site", ("test_anomaly",),
         "In anomaly mode a rule's own RuntimeError (a version error) gets the forward call's site appended, and "
         "anomaly mode changes no gradient."),
)
