"""Mutants and alternatives for ch05_grad_modes (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that must then
score 0, all of its own exercise (the grader runs each test cell on the course's solution of the other
exercises). Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

NEST, THREADS, DECO = "test_grad_mode_nesting", "test_grad_mode_threads", "test_grad_mode_decorators"
FLAGS, INFT = "test_inference_mode_flags", "test_inference_tensors"
REC, NEEDS = "test_apply_recording", "test_apply_needs_input_grad"
DET = "test_detach"
OPS, REF, VER = "test_inplace_ops", "test_inplace_refusals", "test_version_check"
HK, RT, AN = "test_hooks", "test_retain_grad", "test_anomaly"

NO_GRAD_EXIT = """STATE.grad_enabled = False

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = self.prev"""
SGE_INIT_AND_ENTER = """        self.prev = STATE.grad_enabled
        self.mode = bool(mode)
        STATE.grad_enabled = self.mode      # takes effect now: set_grad_enabled(False) works as a statement

    def __enter__(self) -> None:
        STATE.grad_enabled = self.mode"""
CALL_NODE_HOOKS = """    if node._tensor_hooks:
        for hook in list(node._tensor_hooks.values()):
            result = hook(Tensor(grad))
            if result is not None:
                grad = checked_hook_result(hook, grad, result)
    if node._retain_grad_hook is not None:
        node._retain_grad_hook(grad)             # after the other hooks, as torch runs retain_grad last
    if not ANOMALY.enabled:
        return node.apply(grad)"""

MUTANTS = [
    # -- Exercise 1: grad mode ---------------------------------------------------------------------
    Mutant("grad_mode_global_state", "a plain class instead of threading.local: one grad mode for every thread",
           "grad_state", "class AutogradState(threading.local):", "class AutogradState:", (THREADS,), visible=True),
    Mutant("no_grad_not_restored_on_error", "__exit__ restores the mode only when the body finished without an "
           "exception: one failed evaluation leaves grad mode off", "grad_mode", NO_GRAD_EXIT,
           NO_GRAD_EXIT.replace("def __exit__(self, *exc: Any) -> None:\n        STATE.grad_enabled = self.prev",
                                "def __exit__(self, exc_type: Any, *exc: Any) -> None:\n        if exc_type is None:\n"
                                "            STATE.grad_enabled = self.prev"), (NEST,), visible=True),
    Mutant("no_grad_exit_sets_true", "no_grad's __exit__ turns grad mode on instead of restoring it: no_grad in "
           "no_grad ends recording-off too early", "grad_mode", NO_GRAD_EXIT,
           NO_GRAD_EXIT.replace("STATE.grad_enabled = self.prev", "STATE.grad_enabled = True"), (NEST, DECO, THREADS),
           visible=True),
    Mutant("no_grad_swallows_exception", "no_grad's __exit__ returns True (meant as 'done'), which swallows the "
           "body's exception", "grad_mode", NO_GRAD_EXIT, NO_GRAD_EXIT + "\n        return True", (NEST,),
           visible=True),
    Mutant("set_grad_enabled_prev_in_enter", "set_grad_enabled remembers the previous mode in __enter__, after its "
           "constructor already changed it: the block restores its own mode", "grad_mode", SGE_INIT_AND_ENTER,
           """        self.mode = bool(mode)
        STATE.grad_enabled = self.mode

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = self.mode""", (NEST, DECO), visible=True),
    Mutant("set_grad_enabled_only_on_enter", "set_grad_enabled changes the mode only in __enter__: as a plain "
           "statement it does nothing", "grad_mode",
           "        STATE.grad_enabled = self.mode      # takes effect now: set_grad_enabled(False) works as a statement\n",
           "", (DECO,), visible=True),
    # -- Exercise 2: inference_mode ----------------------------------------------------------------
    Mutant("inference_mode_only_disables_grad", "inference_mode as a second no_grad: the inference flag is never set, "
           "so tensors made inside are ordinary tensors", "inference_mode",
           "        STATE.inference_mode = self.mode\n", "", (FLAGS, INFT), visible=True),
    Mutant("inference_false_keeps_grad_mode", "inference_mode(False) leaves grad mode as it found it (torch turns it "
           "on)", "inference_mode",
           "STATE.grad_enabled = not self.mode      # entering inference mode turns grad mode off; (False) turns it on",
           "if self.mode:\n            STATE.grad_enabled = False", (FLAGS, INFT), visible=True),
    Mutant("inference_exit_restores_grad_only", "__exit__ restores grad mode but leaves the inference flag on",
           "inference_mode", "STATE.grad_enabled, STATE.inference_mode = self.prev",
           "STATE.grad_enabled = self.prev[0]", (FLAGS, INFT), visible=True),
    # -- Exercise 3: apply --------------------------------------------------------------------------
    Mutant("apply_records_under_no_grad", "records whenever an input requires grad, ignoring grad mode (Chapter 2's "
           "rule)", "apply", "if not (STATE.grad_enabled and not STATE.inference_mode and any(ctx.needs_input_grad)):",
           "if not (not STATE.inference_mode and any(ctx.needs_input_grad)):", (REC,), visible=True),
    Mutant("apply_ignores_inference_mode", "records inside inference mode when enable_grad turned grad mode on",
           "apply", "if not (STATE.grad_enabled and not STATE.inference_mode and any(ctx.needs_input_grad)):",
           "if not (STATE.grad_enabled and any(ctx.needs_input_grad)):", (REC, NEEDS), visible=True),
    Mutant("apply_all_inputs", "records only when every input requires grad", "apply", "any(ctx.needs_input_grad)",
           "all(ctx.needs_input_grad)", (REC, NEEDS), visible=True),
    Mutant("apply_needs_only_when_recording", "needs_input_grad all False when nothing is recorded (torch keeps each "
           "input's requires_grad)", "apply", "ctx.needs_input_grad = tuple(t.requires_grad for t in inputs)",
           "ctx.needs_input_grad = tuple(STATE.grad_enabled and not STATE.inference_mode and t.requires_grad "
           "for t in inputs)", (NEEDS,), visible=True),
    Mutant("apply_0d_output_not_saved_array", "the output's array is made from forward's result without output_array: "
           "for a 0-d result (a NumPy scalar) the rule saved another object, so an in-place change of the output "
           "escapes the version check", "apply",
           "    out = Tensor(output_array(ctx, cls.forward(ctx, *[t.data for t in inputs], **settings)))\n",
           "    out = Tensor(cls.forward(ctx, *[t.data for t in inputs], **settings))\n", (REC,), visible=False,
           hidden_because="only a 0-d output changed in place after its node saved it reveals it; the visible tests "
           "use vectors"),
    Mutant("apply_no_bookkeeping", "records the node but never calls keep_for_backward: no versions, no meter, "
           "inference tensors saved", "apply", "    keep_for_backward(node, inputs, out)\n", "", (REC,), visible=True),
    # -- Exercise 4: detach ----------------------------------------------------------------------------
    Mutant("detach_copies", "detach copies the array: a change through one tensor no longer shows in the other",
           "detach", "    out = Tensor(self.data)\n", "    out = Tensor(self.data.copy())\n", (DET,), visible=True),
    Mutant("detach_keeps_history", "detach keeps grad_fn and requires_grad: gradients still flow through it",
           "detach", "    out._inference = self._inference\n",
           "    out._inference = self._inference\n    out.grad_fn, out.requires_grad = self.grad_fn, self.requires_grad\n",
           (DET,), visible=True),
    Mutant("detach_fresh_version_counter", "the detached tensor gets its own version counter: in-place changes "
           "through it go unnoticed", "detach", "    out._version_counter = self._version_counter\n", "", (DET,),
           visible=True),
    # -- Exercise 5: in-place operations and the version check ----------------------------------------------
    Mutant("inplace_no_version_bump", "in-place operations do not bump the version: the check never fires",
           "inplace", "    t._version_counter.bump()\n", "", (OPS, REF, VER), visible=True),
    Mutant("inplace_checks_at_forward", "the in-place operation itself raises when its tensor's node saved it "
           "(torch waits for backward, which may never come)", "inplace", "    check_inplace(t)\n",
           "    check_inplace(t)\n    if t.grad_fn is not None and any(a is t.data for a in t.grad_fn.ctx._saved.arrays "
           "or ()):\n        raise RuntimeError(\"modified by an inplace operation\")\n", (OPS, VER), visible=True),
    Mutant("inplace_no_private_copy", "the new node keeps t's own array, which the in-place write then overwrites: "
           "wrong gradients", "inplace",
           "        saved.arrays = tuple(a.copy() if a is t.data else a for a in saved.arrays)\n", "", (OPS, VER),
           visible=True),
    Mutant("inplace_keeps_own_version_records", "the new node keeps its version record of t, which its own write "
           "then invalidates", "inplace",
           "        saved.versions = [r for r in saved.versions if r.counter is not t._version_counter]\n", "",
           (OPS, VER), visible=True),
    Mutant("inplace_forbids_leaf_under_no_grad", "in-place on a leaf that requires grad refused even under no_grad "
           "(optimisers could not update)", "inplace",
           "if STATE.grad_enabled and t.is_leaf and t.requires_grad:", "if t.is_leaf and t.requires_grad:",
           (OPS, REF, VER), visible=True),
    Mutant("inplace_allows_leaf", "in-place on a leaf that requires grad allowed in grad mode", "inplace",
           "    if STATE.grad_enabled and t.is_leaf and t.requires_grad:\n        raise RuntimeError(INPLACE_LEAF_MESSAGE)\n",
           "", (REF,), visible=True),
    Mutant("inplace_leaves_retain_hook", "leaves a retained tensor's retain hook on its old node: after y.mul_(3), "
           "y.grad is the gradient of y's old value (3 times torch's), where torch moves retain_grad to the new node",
           "inplace",
           "        if t._retains_grad:                      # retain_grad (section 7) follows t to its new node, "
           "as in torch\n            out.grad_fn._retain_grad_hook, t.grad_fn._retain_grad_hook = "
           "t.grad_fn._retain_grad_hook, None\n", "", (OPS,), visible=False,
           hidden_because="retain_grad comes in section 7, after this exercise's visible tests, which cannot call it; "
                          "the hidden test stands in Exercise 6's retain hook and compares with torch"),
    Mutant("version_not_checked", "saved_tensors returns the arrays without comparing versions", "inplace",
           "    for record in self._saved.versions:\n        if record.counter.value != record.version:\n"
           "            raise RuntimeError(version_message(record, arrays[record.slot]))\n", "", (VER,), visible=True),
    # -- Exercise 6: retain_grad, hooks and anomaly mode in backward ---------------------------------------
    Mutant("hooks_after_the_rule", "hooks run after the node's rule: on a leaf, after accumulation, so a returned "
           "gradient changes nothing", "hooks", CALL_NODE_HOOKS,
           CALL_NODE_HOOKS.replace("    if node._tensor_hooks:", "    grads = None if ANOMALY.enabled else "
                                   "node.apply(grad)\n    if node._tensor_hooks:", 1)
           .replace("    if not ANOMALY.enabled:\n        return node.apply(grad)",
                    "    if not ANOMALY.enabled:\n        return grads"), (HK, RT), visible=True),
    Mutant("hook_result_ignored", "the gradient a hook returns is checked but not used", "hooks",
           "                grad = checked_hook_result(hook, grad, result)",
           "                checked_hook_result(hook, grad, result)", (HK, RT), visible=True),
    Mutant("retain_grad_first", "retain_grad runs before the other hooks (torch runs it last)", "hooks",
           "    if node._tensor_hooks:\n        for hook in list(node._tensor_hooks.values()):",
           "    if node._retain_grad_hook is not None:\n        node._retain_grad_hook(grad)\n"
           "    if node._tensor_hooks:\n        for hook in list(node._tensor_hooks.values()):", (RT,), visible=True),
    Mutant("retain_grad_overwrites", "the retained gradient is replaced at each backward instead of accumulated",
           "hooks", "tensor.grad = Tensor(grad.copy()) if tensor.grad is None else Tensor(tensor.grad.data + grad)",
           "tensor.grad = Tensor(grad.copy())", (RT,), visible=True),
    Mutant("anomaly_checks_incoming_gradient", "the NaN check looks at the gradient a node receives: it names the "
           "node after the culprit", "hooks", "        for i, g in enumerate(grads):",
           "        for i, g in enumerate((grad,)):", (AN,), visible=True),
    Mutant("anomaly_first_output_only", "the NaN check looks only at the rule's first output", "hooks",
           "        for i, g in enumerate(grads):", "        for i, g in enumerate(grads[:1]):", (AN,), visible=True),
    Mutant("anomaly_site_from_backward", "the creation site is taken when backward fails, not when forward ran: it "
           "points at the backward call", "hooks", "    if ANOMALY.check_nan:\n",
           "    node.creation_stack = traceback.extract_stack()\n    if ANOMALY.check_nan:\n", (AN,), visible=True),
    # -- the blind spots of issue 19 ------------------------------------------------------------------
    Mutant("inplace_drops_every_version_record", "the new node of an in-place operation drops all its version "
           "records, the other operand's too: changing that operand afterwards goes unnoticed", "inplace",
           "        saved.versions = [r for r in saved.versions if r.counter is not t._version_counter]\n",
           "        saved.versions = []\n", (VER,), visible=True),
    Mutant("inplace_inference_refusal_first", "check_inplace tests the inference tensor before the leaf: where both "
           "refusals apply it names the wrong one (torch names the leaf)", "inplace",
           """    if STATE.grad_enabled and t.is_leaf and t.requires_grad:
        raise RuntimeError(INPLACE_LEAF_MESSAGE)
    if t._inference and not STATE.inference_mode:
        raise RuntimeError(INPLACE_INFERENCE_MESSAGE)""",
           """    if t._inference and not STATE.inference_mode:
        raise RuntimeError(INPLACE_INFERENCE_MESSAGE)
    if STATE.grad_enabled and t.is_leaf and t.requires_grad:
        raise RuntimeError(INPLACE_LEAF_MESSAGE)""", (REF,), visible=True),
    Mutant("hook_result_checks_shape_only", "call_node checks a hook's replacement for its shape but not its dtype: "
           "a float64 gradient flows into float32 tensors", "hooks",
           "                grad = checked_hook_result(hook, grad, result)",
           """                new = np.asarray(result.data if isinstance(result, Tensor) else result)
                if new.shape != grad.shape:
                    raise RuntimeError("hook has changed the size of value")
                grad = new""", (HK,), visible=True),
    Mutant("retain_grad_strong_reference", "retain_grad's hook holds its tensor directly: node -> hook -> tensor -> "
           "node is a cycle that keeps the saved bytes until the garbage collector runs", "hooks",
           "    owner = weakref.ref(self)                    # the node must not keep its own output alive",
           "    owner = lambda: self", (RT,), visible=True),
    Mutant("anomaly_ignores_check_nan", "the NaN check runs in anomaly mode whatever check_nan says", "hooks",
           "    if ANOMALY.check_nan:\n", "    if True:\n", (AN,), visible=True),
    Mutant("no_grad_shared_stack", "no_grad keeps the modes it replaced on one stack shared by every thread: threads "
           "whose blocks interleave restore each other's modes", "grad_mode",
           """        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = self.prev""",
           """        globals().setdefault("SAVED_MODES", []).append(STATE.grad_enabled)
        STATE.grad_enabled = False

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = SAVED_MODES.pop()""", (THREADS,), visible=False,
           hidden_because="only two threads whose no_grad blocks interleave reveal it; the visible thread test runs "
           "one block at a time in each thread"),
    # -- concept checks -------------------------------------------------------------------------------
    Mutant("concept_no_grad_wrong", "believes no_grad makes new tensors not require grad", "concept_no_grad",
           'answer_no_grad = "c"', 'answer_no_grad = "b"', ("test_concept_no_grad",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
    Mutant("concept_backward_wrong", "believes backward cannot run under no_grad", "concept_backward",
           'answer_backward = "a"', 'answer_backward = "b"', ("test_concept_backward",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
    Mutant("concept_inference_wrong", "believes inference mode only matters inside its block", "concept_inference",
           'answer_inference = "d"', 'answer_inference = "a"', ("test_concept_inference",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
    Mutant("concept_predict_wrong", "believes a product computed under no_grad still carries x's history (3x**2)",
           "concept_predict", 'answer_predict = "c"', 'answer_predict = "a"', ("test_concept_predict",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
    Mutant("concept_numpy_wrong", "believes .numpy() detaches", "concept_numpy", 'answer_numpy = "b"',
           'answer_numpy = "c"', ("test_concept_numpy",), visible=False,
           hidden_because="a concept check: the answer is only in the hidden test"),
]

ALTERNATIVES = [
    Alternative("grad_state_class_defaults", "defaults as class attributes of a threading.local subclass (each "
                "thread writes its own instance attributes)", "grad_state", '''class AutogradState(threading.local):
    """Per-thread modes: the class attributes are the defaults every thread starts from."""

    grad_enabled = True
    inference_mode = False
'''),
    Alternative("grad_mode_exit_returns_false", "managers that read the mode through is_grad_enabled() and whose "
                "__exit__ returns False", "grad_mode", '''class Chapter4Modes:
    """The modes of Chapter 4's engine, which had none: recording always on, never inference mode."""

    grad_enabled = True
    inference_mode = False


# Your AutogradState once the cell above defines it (run this cell again then); Chapter 4's modes until it does.
STATE = current_or_reference("AutogradState", Chapter4Modes, "Exercise 1")()


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference_mode


class no_grad(NoParamDecoratorContextManager):
    def __enter__(self) -> None:
        self.prev = is_grad_enabled()
        STATE.grad_enabled = False

    def __exit__(self, exc_type, exc_value, tb) -> bool:
        STATE.grad_enabled = self.prev
        return False


class enable_grad(NoParamDecoratorContextManager):
    def __enter__(self) -> None:
        self.prev = is_grad_enabled()
        STATE.grad_enabled = True

    def __exit__(self, exc_type, exc_value, tb) -> bool:
        STATE.grad_enabled = self.prev
        return False


class set_grad_enabled(DecoratorContextManager):
    def __init__(self, mode: bool) -> None:
        self.prev, self.mode = is_grad_enabled(), bool(mode)
        STATE.grad_enabled = self.mode

    def __enter__(self) -> None:
        STATE.grad_enabled = self.mode

    def __exit__(self, exc_type, exc_value, tb) -> bool:
        STATE.grad_enabled = self.prev
        return False

    def __call__(self, function):
        STATE.grad_enabled = self.prev
        return super().__call__(function)

    def clone(self):
        return self.__class__(self.mode)
'''),
    Alternative("grad_mode_stack", "a per-thread stack of saved modes instead of an attribute on each manager",
                "grad_mode", '''class Chapter4Modes:
    """The modes of Chapter 4's engine, which had none: recording always on, never inference mode."""

    grad_enabled = True
    inference_mode = False


# Your AutogradState once the cell above defines it (run this cell again then); Chapter 4's modes until it does.
STATE = current_or_reference("AutogradState", Chapter4Modes, "Exercise 1")()
SAVED = threading.local()   # this thread's modes saved by the managers it is inside (innermost last)


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference_mode


def _push(mode: bool) -> None:
    SAVED.__dict__.setdefault("stack", []).append(STATE.grad_enabled)
    STATE.grad_enabled = mode


def _pop() -> None:
    STATE.grad_enabled = SAVED.stack.pop()


class no_grad(NoParamDecoratorContextManager):
    def __enter__(self) -> None:
        _push(False)

    def __exit__(self, *exc) -> None:
        _pop()


class enable_grad(NoParamDecoratorContextManager):
    def __enter__(self) -> None:
        _push(True)

    def __exit__(self, *exc) -> None:
        _pop()


class set_grad_enabled(DecoratorContextManager):
    def __init__(self, mode: bool) -> None:
        self.prev = STATE.grad_enabled
        self.mode = bool(mode)
        STATE.grad_enabled = self.mode

    def __enter__(self) -> None:
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc) -> None:
        STATE.grad_enabled = self.prev

    def __call__(self, function):
        STATE.grad_enabled = self.prev
        return super().__call__(function)

    def clone(self):
        return self.__class__(self.mode)
'''),
    Alternative("inference_mode_two_attributes", "the previous flags in two attributes, set in another order",
                "inference_mode", '''class inference_mode(DecoratorContextManager):
    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.old_grad = is_grad_enabled()
        self.old_inference = is_inference_mode_enabled()
        STATE.inference_mode = bool(self.mode)
        STATE.grad_enabled = not STATE.inference_mode

    def __exit__(self, exc_type, exc_value, tb) -> None:
        STATE.inference_mode = self.old_inference
        STATE.grad_enabled = self.old_grad

    def clone(self):
        return self.__class__(self.mode)
'''),
    Alternative("apply_explicit_loops", "the recording decision and the edges written with explicit loops",
                "apply", '''def apply(cls, *inputs, **settings):
    """Run forward; record only in grad mode, outside inference mode, when an input requires grad."""
    arrays, needs, edges = [], [], []
    for position, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{cls.__name__}.apply: input {position} is {type(t).__name__}, not a Tensor")
        arrays.append(t.data)
        needs.append(t.requires_grad)
    ctx = Context()
    ctx.needs_input_grad = tuple(needs)
    out = Tensor(output_array(ctx, cls.forward(ctx, *arrays, **settings)))
    recording = is_grad_enabled() and not is_inference_mode_enabled()
    if recording and True in needs:
        for t in inputs:
            edges.append(gradient_edge(t))
        node = BackwardNode(cls, ctx, tuple(edges))
        out.grad_fn = node
        out.requires_grad = True
        keep_for_backward(node, inputs, out)
    return out


Function.apply = classmethod(apply)
'''),
    Alternative("detach_via_constructor", "detach through Tensor(self), which keeps the same array", "detach", '''def detach(self):
    out = Tensor(self)                      # Chapter 2's constructor takes a Tensor's array, without copying
    out._version_counter, out._inference = self._version_counter, self._inference
    return out


Tensor.detach = detach
'''),
    Alternative("inplace_loops", "apply_inplace rebuilds the saved arrays and records with loops; the version check "
                "finds the first stale record with next()", "inplace", '''def check_inplace(t):
    if is_grad_enabled() and t.requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if t.is_inference() and not is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.")


def apply_inplace(t, op, *others, **settings):
    check_inplace(t)
    operands = [as_tensor(o, like=t) for o in others]
    out = OPS[op].apply(t, *operands, **settings)
    if out.shape != t.shape:
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape {list(out.shape)}")
    node = out.grad_fn
    if node is not None:
        saved = node.ctx._saved
        arrays = []
        for array in saved.arrays:
            arrays.append(array.copy() if array is t.data else array)
        saved.arrays = tuple(arrays)
        kept = []
        for record in saved.versions:
            if record.counter is not t._version_counter:
                kept.append(record)
        saved.versions = kept
    t.data[...] = out.data
    t._version_counter.bump()
    if node is not None:
        if t._retains_grad:
            node._retain_grad_hook = t.grad_fn._retain_grad_hook
            t.grad_fn._retain_grad_hook = None
        t.requires_grad = True
        t.grad_fn = node
    return t


def get_saved_tensors_checked(self):
    arrays = get_saved_tensors(self)
    stale = next((r for r in self._saved.versions if r.counter.value != r.version), None)
    if stale is not None:
        raise RuntimeError(version_message(stale, arrays[stale.slot]))
    return arrays


Context.saved_tensors = property(get_saved_tensors_checked, set_saved_tensors)
'''),
    Alternative("hooks_helpers", "call_node split into small helpers; retain_grad's closure uses np.add; the NaN "
                "check finds the first bad output with next()", "hooks", '''def retain_grad(self):
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self.retains_grad:
        return None
    ref = weakref.ref(self)

    def keep(grad):
        me = ref()
        if me is not None:
            me.grad = Tensor(np.array(grad, copy=True) if me.grad is None else np.add(me.grad.data, grad))

    self.grad_fn._retain_grad_hook = keep
    self._retains_grad = True
    return None


def run_hooks(node, grad):
    for hook in list((node._tensor_hooks or {}).values()):
        result = hook(Tensor(grad))
        if result is not None:
            grad = checked_hook_result(hook, grad, result)
    if node._retain_grad_hook is not None:
        node._retain_grad_hook(grad)
    return grad


def call_node(node, grad):
    grad = run_hooks(node, grad)
    if not is_anomaly_enabled():
        return node.apply(grad)
    try:
        grads = node.apply(grad)
    except RuntimeError as error:
        raise RuntimeError(str(error) + creation_site(node)) from error
    bad = next((i for i, g in enumerate(grads) if g is not None and np.isnan(g).any()), None)
    if ANOMALY.check_nan and bad is not None:
        raise RuntimeError(f"Function '{node.name()}' returned nan values in its {bad}th output." + creation_site(node))
    return grads


Tensor.retain_grad = retain_grad
Tensor.retains_grad = property(lambda self: self._retains_grad)
Node.__call__ = call_node
'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("no_grad_not_restored_on_error", "detach_copies", "retain_grad_overwrites")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
