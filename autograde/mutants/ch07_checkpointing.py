"""Mutants and alternatives for ch07_checkpointing (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that must then
score 0, all of its own exercise (the grader runs each test cell on the course's solution of the other
exercises). Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

FM, FT = "test_formula_meter", "test_formula_torch"
CG, CM, CR = "test_checkpoint_gradients", "test_checkpoint_memory", "test_checkpoint_rng"
SP, RC = "test_sqrt_plan", "test_run_chain"
PP = "test_plan_peak"
OF, OB = "test_optimal_plan_fits", "test_optimal_plan_best"

CKPT_SAVE_TO_LEAVES = '''        ctx.save_for_backward(*arrays)                   # the inputs themselves: counted, freed, version-checked
        with no_grad():
            out = fn(*fill_args(args, [Tensor(a) for a in arrays]))
        return out.data

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        """Rerun fn with recording on fresh leaves, from forward's random state; backpropagate grad through it."""
        leaves = [Tensor(a, requires_grad=need) for a, need in zip(ctx.saved_tensors, ctx.needs_input_grad)]'''
CKPT_RERUN = '''        try:
            with enable_grad(), autocast(*ctx.autocast):   # in forward's autocast state, wherever backward runs
                out = ctx.fn(*fill_args(ctx.args, leaves))
        finally:
            if ctx.rng_state is not None:
                set_rng_state(outside)                   # the program goes on drawing what it would have drawn'''
NOT_PLAN = "the visible test's segments never raise"

MUTANTS = [
    # -- Exercise 1: mlp_saved_bytes ---------------------------------------------------------------------
    Mutant("formula_in_elements", "counts elements, not bytes: the itemsize is left out", "activation_formula",
           "batch, itemsize = int(batch), np.dtype(dtype).itemsize", "batch, itemsize = int(batch), 1", (FM, FT),
           visible=True),
    Mutant("formula_itemsize_4", "assumes float32: 4 bytes per element whatever the dtype", "activation_formula",
           "batch, itemsize = int(batch), np.dtype(dtype).itemsize", "batch, itemsize = int(batch), 4", (FM, FT),
           visible=True),
    Mutant("formula_logits_as_input", "the popular 432,640: the logits counted as one more linear input",
           "activation_formula", '"linear inputs": batch * sum(sizes[:-1]) * itemsize',
           '"linear inputs": batch * sum(sizes) * itemsize', (FM, FT), visible=True),
    Mutant("formula_masks_at_itemsize", "a ReLU mask counted at the dtype's size (torch keeps the ReLU's output)",
           "activation_formula", '"relu masks": batch * sum(sizes[1:-1]),', '"relu masks": batch * sum(sizes[1:-1]) * itemsize,',
           (FM,), visible=True),
    Mutant("formula_mask_after_last_layer", "a ReLU after the last layer too", "activation_formula",
           '"relu masks": batch * sum(sizes[1:-1]),', '"relu masks": batch * sum(sizes[1:]),', (FM,), visible=True),
    Mutant("formula_targets_forgotten", "the loss keeps only the probabilities", "activation_formula",
           " + batch * np.dtype(np.int64).itemsize}", "}", (FM,), visible=True),
    Mutant("formula_targets_in_dtype", "the integer targets counted at the float dtype's size", "activation_formula",
           "batch * np.dtype(np.int64).itemsize}", "batch * itemsize}", (FM,), visible=True),
    Mutant("formula_numpy_ints", "NumPy integers come back when sizes is an array (no int())", "activation_formula",
           "    sizes = [int(s) for s in sizes]\n", "", (FM,), visible=True),
    # -- Exercise 2: checkpoint -------------------------------------------------------------------------
    Mutant("ckpt_records_everything", "checkpoint just calls fn: the gradients are right, but every activation is "
           "kept, nothing reruns, and the segment runs once, with grad mode on", "checkpoint", "    tensors = [a for a in args if isinstance(a, Tensor)]\n",
           "    return fn(*args)\n", (CG, CM, CR), visible=True),
    Mutant("ckpt_keeps_forward_graph", "forward records the segment and keeps its graph on ctx for backward, instead "
           "of rerunning: all activations are kept anyway", "checkpoint", CKPT_SAVE_TO_LEAVES,
           '''        ctx.save_for_backward(*arrays)
        ctx.leaves = [Tensor(a, requires_grad=need) for a, need in zip(arrays, ctx.needs_input_grad)]
        with enable_grad():
            ctx.out = fn(*fill_args(args, ctx.leaves))
        return ctx.out.data

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        ctx.out.backward(grad)
        return tuple(t.grad.data if t.requires_grad and t.grad is not None else None for t in ctx.leaves)
        leaves = [Tensor(a, requires_grad=need) for a, need in zip(ctx.saved_tensors, ctx.needs_input_grad)]''',
           (CG, CM, CR), visible=True),
    Mutant("ckpt_rerun_under_no_grad", "the rerun in backward runs under no_grad: nothing is recorded, no gradient",
           "checkpoint", "            with enable_grad(), autocast(*ctx.autocast):",
           "            with no_grad(), autocast(*ctx.autocast):", (CG, CM, CR), visible=True),
    Mutant("ckpt_rerun_without_autocast", "the rerun runs in backward's autocast state: after an autocast block "
           "closed, its products run in float32 where forward's ran in float16", "checkpoint",
           "            with enable_grad(), autocast(*ctx.autocast):", "            with enable_grad():", (CG,),
           visible=True),
    Mutant("ckpt_leaves_without_grad", "the rerun's inputs are leaves that do not require grad (detached): no "
           "gradient reaches the inputs", "checkpoint", "leaves = [Tensor(a, requires_grad=need) for a, need",
           "leaves = [Tensor(a) for a, need", (CG, CM, CR), visible=True),
    Mutant("ckpt_rerun_on_original_inputs", "the rerun uses the original input tensors: its backward runs the graph "
           "before the segment from inside the node, and the outer backward runs it again", "checkpoint",
           "settings = tuple(SLOT if isinstance(a, Tensor) else a for a in args)", "settings = tuple(args)", (CG,),
           visible=True),
    Mutant("ckpt_rng_not_restored", "forward's random state is kept but never set before the rerun: other dropout "
           "masks", "checkpoint", "set_rng_state(ctx.rng_state)                 # the same dropout masks as in forward",
           "pass", (CR,), visible=True),
    Mutant("ckpt_rng_not_put_back", "the rerun's random state is left in place: the program's later draws repeat the "
           "segment's numbers", "checkpoint",
           "set_rng_state(outside)                   # the program goes on drawing what it would have drawn", "pass",
           (CR,), visible=True),
    Mutant("ckpt_rng_state_after_forward", "the random state is taken after forward ran the segment", "checkpoint",
           "    state = get_rng_state() if preserve_rng_state else None\n"
           "    return Checkpoint.apply(*tensors, fn=fn, args=settings, rng_state=state)",
           "    out = Checkpoint.apply(*tensors, fn=fn, args=settings, rng_state=None)\n"
           "    if out.grad_fn is not None and preserve_rng_state:\n"
           "        out.grad_fn.ctx.rng_state = get_rng_state()\n"
           "    return out", (CR,), visible=True),
    Mutant("ckpt_rng_put_back_unguarded", "the state is put back only when the rerun succeeds (no finally)",
           "checkpoint", CKPT_RERUN, '''        with enable_grad(), autocast(*ctx.autocast):
            out = ctx.fn(*fill_args(ctx.args, leaves))
        if ctx.rng_state is not None:
            set_rng_state(outside)''', (CR,), visible=True),
    Mutant("ckpt_no_rng_preserve_still_forks", "with preserve_rng_state=False the generator is still put back after "
           "the rerun (torch leaves it alone)", "checkpoint",
           "            if ctx.rng_state is not None:\n                set_rng_state(outside)",
           "            set_rng_state(outside)", (CR,), visible=False,
           hidden_because="the visible test uses the default preserve_rng_state=True"),
    Mutant("ckpt_upstream_gradient_ignored", "backward through the rerun starts from ones (out.sum()) instead of the "
           "incoming gradient", "checkpoint", "            out.backward(grad)", "            out.sum().backward()",
           (CG, CR), visible=True),
    Mutant("ckpt_constants_as_tensors", "every argument becomes a Tensor input, ints and floats too", "checkpoint",
           "    tensors = [a for a in args if isinstance(a, Tensor)]\n"
           "    settings = tuple(SLOT if isinstance(a, Tensor) else a for a in args)",
           "    tensors = [a if isinstance(a, Tensor) else Tensor(np.asarray(a, dtype=float)) for a in args]\n"
           "    settings = tuple(SLOT for a in args)", (CG,), visible=True),
    Mutant("ckpt_gradient_per_argument", "backward returns a gradient (None) for the non-tensor arguments too",
           "checkpoint",
           "        return tuple(t.grad.data if t.requires_grad and t.grad is not None else None for t in leaves)",
           "        grads = tuple(t.grad.data if t.requires_grad and t.grad is not None else None for t in leaves)\n"
           "        return grads + tuple(None for a in ctx.args if a is not SLOT)", (CG,), visible=True),
    Mutant("ckpt_saves_copies", "forward saves copies of the inputs: parameters' copies count, and in-place changes "
           "go unnoticed", "checkpoint", "ctx.save_for_backward(*arrays)                   #",
           "ctx.save_for_backward(*[a.copy() for a in arrays])  #", (CM,), visible=True),
    Mutant("ckpt_inputs_on_ctx", "the inputs kept as a plain attribute of ctx: not on the meter, never freed, never "
           "version-checked", "checkpoint", CKPT_SAVE_TO_LEAVES,
           CKPT_SAVE_TO_LEAVES.replace("ctx.save_for_backward(*arrays)", "ctx.kept = arrays")
           .replace("zip(ctx.saved_tensors, ctx.needs_input_grad)", "zip(ctx.kept, ctx.needs_input_grad)"),
           (CM,), visible=True),
    # -- Exercise 3: sqrt_plan and run_chain ------------------------------------------------------------
    Mutant("sqrt_floor", "floor(sqrt(n)) segments instead of the ceiling", "plans",
           "segments = math.isqrt(n - 1) + 1", "segments = math.isqrt(n)", (SP,), visible=True),
    Mutant("sqrt_rounded", "round(sqrt(n)) segments", "plans", "segments = math.isqrt(n - 1) + 1",
           "segments = round(math.sqrt(n))", (SP,), visible=True),
    Mutant("sqrt_last_segment_checkpointed", "the last segment is checkpointed too", "plans",
           "range(0, size * (segments - 1), size)", "range(0, size * segments, size)", (SP,), visible=True),
    Mutant("sqrt_equal_split", "segments of equal length (np.array_split) instead of checkpoint_sequential's layout",
           "plans", "    return [(start, start + size) for start in range(0, size * (segments - 1), size)]",
           "    parts = np.array_split(np.arange(n), segments)[:-1]\n"
           "    return [(int(p[0]), int(p[-1]) + 1) for p in parts]", (SP,), visible=True),
    Mutant("sqrt_two_layers_empty", "off by one: no plan below three layers", "plans", "    if n <= 1:",
           "    if n <= 2:", (SP,), visible=True),
    Mutant("chain_params_in_closure", "the segment takes its parameters from the closure: the segment at the chain's "
           "start (its input needs no gradient) records nothing, and its weights get no gradient", "plans",
           "        h = checkpoint(run, h, *[p for _, params in segment for p in params])",
           "        h = checkpoint(lambda h, s=segment: run(h, *[p for _, ps in s for p in ps], segment=s), h)", (RC,),
           visible=True),
    Mutant("chain_late_binding", "the segment function finds `segment` when it runs: every rerun runs the last "
           "segment's layers", "plans", "def run(h: Tensor, *flat: Tensor, segment: list[Layer] = segment) -> Tensor:",
           "def run(h: Tensor, *flat: Tensor) -> Tensor:", (RC,), visible=True),
    Mutant("chain_tail_dropped", "the layers after the last checkpointed segment are never run", "plans",
           "    while i < len(layers):", "    while i < (max(stops.values()) if stops else len(layers)):", (RC,),
           visible=True),
    Mutant("chain_plan_unchecked", "the plan is used without check_plan: overlaps and empty segments pass", "plans",
           "stops = dict(check_plan(plan, len(layers)))", "stops = dict(plan)", (RC,), visible=True),
    Mutant("chain_checkpoint_per_layer", "each layer of a segment gets its own checkpoint: the same gradients and "
           "reruns, but every layer's input is kept", "plans",
           "        h = checkpoint(run, h, *[p for _, params in segment for p in params])",
           "        for fn, params in segment:\n            h = checkpoint(fn, h, *params)", (RC,), visible=False,
           hidden_because="the gradients and the layers' run counts are those of one checkpoint per segment; only the "
                          "meter's peak differs, and the visible test does not measure it"),
    # -- Exercise 4: plan_peak ---------------------------------------------------------------------------
    Mutant("peak_tail_forgotten", "the loss's saved bytes are left out of the forward end", "plan_peak",
           "max(peak, held + int(tail))", "max(peak, held)", (PP,), visible=True),
    Mutant("peak_rerun_without_prefix", "a segment's rerun peak without what the layers before it hold", "plan_peak",
           "peak = max(peak, held + int(inp[start]) + sum(int(a) for a in act[start:stop]))",
           "peak = max(peak, int(inp[start]) + sum(int(a) for a in act[start:stop]))", (PP,), visible=True),
    Mutant("peak_rerun_without_own_input", "a segment's rerun peak without its own kept input", "plan_peak",
           "peak = max(peak, held + int(inp[start]) + sum(int(a) for a in act[start:stop]))",
           "peak = max(peak, held + sum(int(a) for a in act[start:stop]))", (PP,), visible=True),
    Mutant("peak_forward_end_only", "only the end of forward is considered: reruns never raise the peak", "plan_peak",
           "            peak = max(peak, held + int(inp[start]) + sum(int(a) for a in act[start:stop]))   # this segment's rerun",
           "            pass", (PP,), visible=True),
    Mutant("peak_rerun_off_by_one", "a segment (start, stop) counted as stop - start - 1 layers", "plan_peak",
           "rerun += stop - start", "rerun += stop - start - 1", (PP,), visible=True),
    Mutant("peak_last_layers_forgotten", "the unplanned layers after the last segment are never added", "plan_peak",
           "check_plan(plan, n) + [(n, n)]", "check_plan(plan, n)", (PP,), visible=True),
    Mutant("peak_sums_in_numpy", "the costs summed in their own NumPy dtype, then converted: int32 sums wrap around "
           "past 2**31", "plan_peak",
           "        held += sum(int(a) for a in act[i:start])          # Python ints: exact for any integer dtype\n"
           "        if start < stop:\n"
           "            peak = max(peak, held + int(inp[start]) + sum(int(a) for a in act[start:stop]))",
           "        held += int(sum(act[i:start]))\n"
           "        if start < stop:\n"
           "            peak = max(peak, held + int(inp[start]) + int(sum(act[start:stop])))", (PP,), visible=True),
    Mutant("peak_numpy_int", "a NumPy integer comes back when the costs are NumPy arrays", "plan_peak",
           "max(peak, held + int(tail)), rerun", "max(peak, held + tail), rerun", (PP,), visible=True),
    # -- Exercise 5: optimal_plan ------------------------------------------------------------------------
    Mutant("dp_no_segment_to_the_end", "off by one: a segment can never end at the last layer", "optimal_plan",
           "for stop in range(i + 1, n + 1):", "for stop in range(i + 1, n):", (OF, OB), visible=True),
    Mutant("dp_budget_strict", "a rerun must stay strictly below the budget", "optimal_plan",
           "if held + inp[i] + prefix[stop] - prefix[i] > budget:",
           "if held + inp[i] + prefix[stop] - prefix[i] >= budget:", (OF, OB), visible=True),
    Mutant("dp_rerun_without_prefix", "a segment's rerun is checked without what the layers before it hold",
           "optimal_plan", "if held + inp[i] + prefix[stop] - prefix[i] > budget:",
           "if inp[i] + prefix[stop] - prefix[i] > budget:", (OF, OB), visible=True),
    Mutant("dp_rerun_without_own_input", "a segment's rerun is checked without its own kept input", "optimal_plan",
           "if held + inp[i] + prefix[stop] - prefix[i] > budget:", "if held + prefix[stop] - prefix[i] > budget:",
           (OF, OB), visible=True),
    Mutant("dp_one_state_per_boundary", "at each boundary only the partial plan with the fewest reruns goes on, "
           "whatever it holds", "optimal_plan", "for held in sorted(best[i]):",
           "for held in sorted(best[i], key=lambda h: (best[i][h][0], h))[:1]:", (OF, OB), visible=True),
    Mutant("dp_kept_layers_only_at_the_end", "a kept layer ends the plan: every layer after it is kept too, so no "
           "layer is kept before a segment", "optimal_plan",
           "offer(i + 1, held + act[i], rerun, segments)", "offer(n, held + prefix[n] - prefix[i], rerun, segments)",
           (OF, OB), visible=True),
    Mutant("dp_rerun_count_off_by_one", "a segment (i, stop) counted as stop - i - 1 layers rerun", "optimal_plan",
           "rerun + stop - i, segments", "rerun + stop - i - 1, segments", (OB,), visible=True),
    # -- concept checks ----------------------------------------------------------------------------------
    Mutant("concept_counted_wrong", "a wrong answer to the concept check on what a figure counts", "concept_counted",
           'answer_counted = "c"', 'answer_counted = "a"', ("test_concept_counted",), visible=False,
           hidden_because="the answer is only in the hidden test"),
    Mutant("concept_closure_wrong", "a wrong answer to the concept check on parameters in the closure",
           "concept_closure", 'answer_closure = "a"', 'answer_closure = "b"', ("test_concept_closure",),
           visible=False, hidden_because="the answer is only in the hidden test"),
    Mutant("concept_predict_wrong", "a wrong answer to the concept check on sqrt_plan(16)", "concept_predict",
           'answer_predict = "d"', 'answer_predict = "c"', ("test_concept_predict",), visible=False,
           hidden_because="the answer is only in the hidden test"),
    Mutant("concept_rng_wrong", "a wrong answer to the concept check on the random state", "concept_rng",
           'answer_rng = "b"', 'answer_rng = "a"', ("test_concept_rng",), visible=False,
           hidden_because="the answer is only in the hidden test"),
]

ALTERNATIVES = [
    Alternative("formula_loop", "a loop over the layers, adding each layer's input and mask", "activation_formula",
                '''def mlp_saved_bytes(sizes, batch, dtype):
    width = np.dtype(dtype).itemsize
    out = {"linear inputs": 0, "relu masks": 0, "loss": 0}
    sizes = list(sizes)
    for k, fan_in in enumerate(sizes[:-1]):
        out["linear inputs"] += int(batch) * int(fan_in) * width
        if k > 0:
            out["relu masks"] += int(batch) * int(fan_in)         # the ReLU before this layer
    out["loss"] = int(batch) * (int(sizes[-1]) * width + 8)
    return out
'''),
    Alternative("checkpoint_positions", "the tensors' positions kept on ctx instead of markers; the random state "
                "handled by a small helper; gradients collected in a loop", "checkpoint", '''class Checkpoint(Function):
    name = "CheckpointFunctionBackward"

    @staticmethod
    def forward(ctx, *arrays, fn, args, rng_state):
        ctx.save_for_backward(*arrays)
        ctx.fn, ctx.positions, ctx.constants, ctx.rng_state = fn, args[0], args[1], rng_state
        ctx.cast_state = {"dtype": AUTOCAST.dtype, "enabled": AUTOCAST.enabled}
        with no_grad():
            return fn(*rebuild(ctx.positions, ctx.constants, [Tensor(a) for a in arrays])).data

    @staticmethod
    def backward(ctx, grad):
        leaves = [Tensor(a, requires_grad=bool(need)) for a, need in zip(ctx.saved_tensors, ctx.needs_input_grad)]
        with same_random_numbers(ctx.rng_state), enable_grad(), autocast(**ctx.cast_state):
            out = ctx.fn(*rebuild(ctx.positions, ctx.constants, leaves))
        if out.requires_grad:
            out.backward(grad)
        grads = []
        for leaf in leaves:
            grads.append(None if leaf.grad is None else leaf.grad.data)
        return tuple(grads)


class same_random_numbers:
    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            self.saved = get_rng_state()
            set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            set_rng_state(self.saved)


def rebuild(positions, constants, tensors):
    args = list(constants)
    for position, tensor in zip(positions, tensors):
        args[position] = tensor
    return args


def checkpoint(fn, *args, preserve_rng_state=True):
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    constants = tuple(None if i in positions else a for i, a in enumerate(args))
    state = get_rng_state() if preserve_rng_state else None
    return Checkpoint.apply(*[args[i] for i in positions], fn=fn, args=(positions, constants), rng_state=state)
'''),
    Alternative("plans_ceil_and_steps", "math.ceil(math.sqrt(n)) and a list of steps built first; each segment's "
                "function made by a factory", "plans", '''def sqrt_plan(n):
    if n < 2:
        return []
    k = math.ceil(math.sqrt(n))
    size = n // k
    return [(j * size, (j + 1) * size) for j in range(k - 1)]


def segment_function(layers):
    counts = [len(params) for _, params in layers]

    def run(h, *flat):
        position = 0
        for (fn, _), count in zip(layers, counts):
            h = fn(h, *flat[position:position + count])
            position += count
        return h
    return run


def run_chain(layers, x, plan=()):
    segments = check_plan(plan, len(layers))
    steps, i = [], 0
    for start, stop in segments + [(len(layers), len(layers))]:
        steps += [("layer", j) for j in range(i, start)]
        if start < stop:
            steps.append(("segment", start, stop))
        i = stop
    h = x
    for step in steps:
        if step[0] == "layer":
            fn, params = layers[step[1]]
            h = fn(h, *params)
        else:
            part = layers[step[1]:step[2]]
            h = checkpoint(segment_function(part), h, *[p for _, params in part for p in params])
    return h
'''),
    Alternative("peak_event_walk", "walks the layers one by one, marking which are checkpointed", "plan_peak",
                '''def plan_peak(costs, plan):
    n = len(costs.act)
    segments = check_plan(plan, n)
    stop_of = {start: stop for start, stop in segments}
    held = peak = rerun = 0
    i = 0
    while i < n:
        if i in stop_of:
            stop = stop_of[i]
            rerun_bytes = held + int(costs.inp[i]) + sum(int(a) for a in costs.act[i:stop])
            peak = max(peak, rerun_bytes)
            held += int(costs.inp[i])
            rerun += stop - i
            i = stop
        else:
            held += int(costs.act[i])
            i += 1
    return max(peak, held + int(costs.tail)), int(rerun)
'''),
    Alternative("optimal_pareto_lists", "partial plans kept as Pareto lists (held, rerun, plan) filtered after each "
                "boundary; the segment's bytes summed as it grows", "optimal_plan", '''def optimal_plan(costs, budget):
    act = [int(a) for a in costs.act]
    inp = [int(c) for c in costs.inp]
    tail = int(costs.tail)
    n = len(act)
    fronts = [[] for _ in range(n + 1)]
    fronts[0] = [(0, 0, [])]
    for i in range(n):
        front = []
        for held, rerun, plan in sorted(fronts[i], key=lambda s: (s[0], s[1])):
            if not front or rerun < front[-1][1]:
                front.append((held, rerun, plan))
        for held, rerun, plan in front:
            if held + act[i] + tail <= budget:
                fronts[i + 1].append((held + act[i], rerun, plan))
            inside = 0
            for stop in range(i + 1, n + 1):
                inside += act[stop - 1]
                if held + inp[i] + inside > budget:
                    break
                if held + inp[i] + tail <= budget:
                    fronts[stop].append((held + inp[i], rerun + stop - i, plan + [(i, stop)]))
    finals = [s for s in fronts[n] if s[0] + tail <= budget]
    if not finals:
        raise ValueError(f"no plan fits within {budget} bytes")
    return min(finals, key=lambda s: s[1])[2]
'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("formula_logits_as_input", "ckpt_rng_not_put_back", "dp_no_segment_to_the_end")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
