"""Mutants and alternatives for ch04_accumulation (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that
must then score 0, all of them test cells of the mutant's own exercise: the grader runs each test cell
on the reference code of the chapter's other exercises (autograde/hidden/harness.py), so a broken meter
costs only the meter's point. `visible` records whether the visible part of those test cells catches
the mutant when a student runs the notebook (autograde.authoring.visible measures it).
Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring import products as build
from autograde import notebook as nbk
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

CHAPTER = "ch04_accumulation"
ZERO_GRAD = ("test_zero_grad",)
MICRO_EQUAL = ("test_microbatches_equal",)
MICRO_UNEQUAL = ("test_microbatches_unequal",)
MICRO = MICRO_EQUAL + MICRO_UNEQUAL
METER = ("test_meter",)
FREES = ("test_backward_frees",)
MOMENTUM = ("test_sgd_momentum",)
DECAY_NESTEROV = ("test_sgd_decay_nesterov",)
CLIP_NORM = ("test_clip_norm",)
CLIP_INF = ("test_clip_inf_norm",)
TRAIN = ("test_train_step",)


def _solution(cell: str) -> str:
    """The source solution of an answer cell (markers removed), as a filled submission has it."""
    source = nbk.read(build.source_path(CHAPTER))
    (code,) = [nbk.solution_code(c.source) for c in source.cells if nbk.is_solution(c) and nbk.grade_id(c) == cell]
    return code


def _from(cell: str, first_line: str) -> str:
    """The solution of an answer cell from the line that starts with first_line (stripped) to the end."""
    code = _solution(cell)
    lines = code.split("\n")
    (start,) = [i for i, line in enumerate(lines) if line.strip().startswith(first_line)]
    return "\n".join(lines[start:])


def _variant(cell: str, *replacements: tuple[str, str]) -> str:
    """The source solution of an answer cell with each `old` (occurring exactly once) replaced by `new`."""
    code = _solution(cell)
    for old, new in replacements:
        if code.count(old) != 1:
            raise ValueError(f"alternative of {cell}: {old!r} occurs {code.count(old)} times; update the catalogue")
        code = code.replace(old, new)
    return code


BACKWARD_LOOP = _from("backward_engine", "for node in topological_order(root):")
SGD_BODY = _from("sgd", "if self.weight_decay != 0:")
SGD_DECAY = "\n".join(SGD_BODY.split("\n")[:2]) + "\n"  # its first two lines: the decay added before momentum

MUTANTS = [
    # --- Exercise 1: zero_grad -------------------------------------------------------------------
    Mutant("zero_grad_fills_zeros", "fills .grad with zeros instead of dropping it", "zero_grad",
           "        p.grad = None", "        p.grad = Tensor(np.zeros_like(p.data))", ZERO_GRAD, visible=True),
    Mutant("zero_grad_first_only", "returns inside the loop: only the first parameter is cleared", "zero_grad",
           "    for p in params:\n        p.grad = None", "    for p in params:\n        p.grad = None\n        return",
           ZERO_GRAD, visible=True),
    Mutant("zero_grad_zeros_in_place", "zeroes the gradient array in place (and keeps it)", "zero_grad",
           "        p.grad = None", "        if p.grad is not None:\n            p.grad.data[...] = 0", ZERO_GRAD,
           visible=True),
    Mutant("zero_grad_consumes_generator", "checks for an empty list with list(params), which exhausts a generator",
           "zero_grad", "    for p in params:", "    if len(list(params)) == 0:\n        return\n    for p in params:",
           ZERO_GRAD, visible=True),
    # --- Exercise 2: micro-batches ---------------------------------------------------------------
    Mutant("micro_no_division", "backpropagates each micro-batch's mean loss unweighted: k times the gradient",
           "microbatches", "loss_fn(X[idx], y[idx]) * (len(idx) / n)", "loss_fn(X[idx], y[idx])", MICRO,
           visible=True),
    Mutant("micro_divides_by_k", "weights every micro-batch by 1/k, wrong when the sizes differ", "microbatches",
           "* (len(idx) / n)", "* (1 / k)", MICRO_UNEQUAL, visible=True),
    Mutant("micro_zero_grad_inside", "clears the gradients before every micro-batch: only the last one survives",
           "microbatches", "    for idx in np.array_split(np.arange(n), k):\n",
           "    for idx in np.array_split(np.arange(n), k):\n        zero_grad(params)\n", MICRO, visible=True),
    Mutant("micro_no_initial_zero_grad", "adds onto whatever .grad held before", "microbatches",
           "    zero_grad(params)\n    total = 0.0", "    total = 0.0", MICRO, visible=True),
    Mutant("micro_full_batch_each_time", "calls loss_fn on the whole batch k times (X instead of X[idx])",
           "microbatches", "loss = loss_fn(X[idx], y[idx])", "loss = loss_fn(X, y)", MICRO, visible=True),
    Mutant("micro_total_overwritten", "= for += on the returned loss: the last micro-batch's share only",
           "microbatches", "        total += float(loss.item())", "        total = float(loss.item())", MICRO,
           visible=True),
    Mutant("micro_single_backward", "adds the k weighted losses up and calls backward once: the right gradient, "
           "but all k graphs are alive at once, which micro-batching exists to avoid", "microbatches",
           "        loss.backward()                                   # .grad accumulates across the k backward calls\n"
           "        total += float(loss.item())\n    return total",
           "        total = loss if isinstance(total, float) else total + loss\n"
           "    total.backward()\n    return float(total.item())", MICRO, visible=True),
    # --- Exercise 3: the meter -------------------------------------------------------------------
    Mutant("meter_peak_not_updated", "add does not move the peak", "meter",
           "        self.live += nbytes\n        self.peak = max(self.peak, self.live)", "        self.live += nbytes",
           METER, visible=True),
    Mutant("meter_reset_to_zero", "reset_peak sets the peak to 0 instead of what is live", "meter",
           "        self.peak = self.live", "        self.peak = 0", METER, visible=True),
    Mutant("meter_release_lowers_peak", "release lowers the peak too", "meter",
           "        self.live -= nbytes", "        self.live -= nbytes\n        self.peak -= nbytes", METER,
           visible=True),
    Mutant("meter_never_releases", "release forgotten: live only grows", "meter",
           "        self.live -= nbytes", "        pass", METER, visible=True),
    Mutant("meter_add_overwrites", "= for += in add: live is the last node's bytes", "meter",
           "        self.live += nbytes", "        self.live = nbytes", METER, visible=True),
    # --- Exercise 4: backward ----------------------------------------------------------------------
    Mutant("backward_never_frees", "never frees: a second backward silently adds the gradient again",
           "backward_engine", "        if not retain_graph:\n            free_saved(node)\n", "", FREES, visible=True),
    Mutant("backward_ignores_retain_graph", "frees even with retain_graph=True", "backward_engine",
           "        if not retain_graph:\n            free_saved(node)", "        free_saved(node)", FREES,
           visible=True),
    Mutant("backward_frees_before_rule", "frees a node before running its rule: the first backward fails",
           "backward_engine",
           "        child_grads = node(grad)\n        if not retain_graph:\n            free_saved(node)\n",
           "        if not retain_graph:\n            free_saved(node)\n        child_grads = node(grad)\n", FREES,
           visible=True),
    Mutant("backward_frees_at_end", "frees every node after the whole pass, not right after its rule",
           "backward_engine", BACKWARD_LOOP,
           "    ran = []\n" + BACKWARD_LOOP.replace("        if not retain_graph:\n            free_saved(node)\n",
                                                "        ran.append(node)\n")
           + "\n    if not retain_graph:\n        for node in ran:\n            free_saved(node)", FREES, visible=True),
    Mutant("backward_skips_none_nodes", "skips a node that only None gradients reached without freeing it: its saved "
           "arrays stay on the meter, and a later backward through it runs where torch raises (torch frees every "
           "node of the graph)", "backward_engine",
           "            if not retain_graph:\n                free_saved(node)\n            continue",
           "            continue", FREES, visible=True),
    Mutant("backward_overwrites_paths", "= for += where gradients meet: only the last path survives",
           "backward_engine", "grads[key] = child_grad if key not in grads else grads[key] + child_grad",
           "grads[key] = child_grad", FREES, visible=True),
    Mutant("backward_calls_apply", "runs node.apply(grad), bypassing Node.__call__ (chapter 5's hooks)",
           "backward_engine", "        child_grads = node(grad)", "        child_grads = node.apply(grad)", FREES,
           visible=True),
    Mutant("free_saved_every_node", "frees node.ctx of every node: AccumulateGrad has no ctx", "backward_engine",
           "    if isinstance(node, BackwardNode):\n        node.ctx._saved.free()", "    node.ctx._saved.free()",
           FREES, visible=True),
    Mutant("backward_root_is_grad_fn", "starts at tensor.grad_fn instead of gradient_edge(tensor): a leaf root has "
           "no grad_fn", "backward_engine", "    root, _ = gradient_edge(tensor)", "    root = tensor.grad_fn", FREES,
           visible=True),
    Mutant("backward_ignores_gradient", "starts from ones, whatever gradient was given", "backward_engine",
           "    grad = root_gradient(tensor, gradient)", "    grad = np.ones_like(tensor.data)", FREES, visible=True),
    # --- Exercise 5: SGD -----------------------------------------------------------------------------
    Mutant("sgd_zero_buffer", "momentum buffer initialised to zeros (first step (1 - dampening) g)", "sgd",
           '            buf = state.get("momentum_buffer")\n'
           "            if buf is None:\n"
           '                buf = state["momentum_buffer"] = np.array(grad)  # first step: a copy of the gradient, no dampening\n'
           "            else:\n"
           "                buf *= self.momentum\n"
           "                buf += (1 - self.dampening) * grad",
           '            buf = state.setdefault("momentum_buffer", np.zeros_like(p.data))\n'
           "            buf *= self.momentum\n"
           "            buf += (1 - self.dampening) * grad", MOMENTUM, visible=True),
    Mutant("sgd_damp_first_step", "dampens the first buffer: b = (1 - dampening) g", "sgd",
           'buf = state["momentum_buffer"] = np.array(grad)',
           'buf = state["momentum_buffer"] = np.array((1 - self.dampening) * grad)',
           MOMENTUM, visible=True),
    Mutant("sgd_buffer_not_stored", "never stores the buffer: every step starts momentum afresh", "sgd",
           'buf = state["momentum_buffer"] = np.array(grad)', "buf = np.array(grad)", MOMENTUM + DECAY_NESTEROV,
           visible=True),
    Mutant("sgd_scalar_buffer_0d", "copies the gradient with grad.copy(): on a 0-d parameter with weight decay the "
           "decayed gradient is a NumPy scalar, so the buffer is a scalar and buf *= momentum rebinds a local name; the "
           "stored buffer never changes (issue 19: 0.845 after three steps where torch gives 1.016)", "sgd",
           'buf = state["momentum_buffer"] = np.array(grad)', 'buf = state["momentum_buffer"] = grad.copy()',
           DECAY_NESTEROV, visible=False,
           hidden_because="only a 0-d parameter with weight decay and momentum shows it; the visible test's parameters "
                          "are vectors, for which grad.copy() is an array"),
    Mutant("sgd_decay_after_momentum", "adds weight decay after momentum, to the step", "sgd", SGD_BODY,
           SGD_BODY.replace(SGD_DECAY, "").replace("        p.data -= self.lr * grad ",
                                        "        p.data -= self.lr * (grad + self.weight_decay * p.data)"),
           DECAY_NESTEROV, visible=True),
    Mutant("sgd_decay_into_grad", "adds weight decay into p.grad in place", "sgd",
           "            grad = grad + self.weight_decay * p.data", "            grad += self.weight_decay * p.data",
           DECAY_NESTEROV, visible=True),
    Mutant("sgd_nesterov_uses_buffer", "nesterov steps along the buffer, not g + momentum * buffer", "sgd",
           "            grad = grad + self.momentum * buf if self.nesterov else buf", "            grad = buf",
           DECAY_NESTEROV, visible=True),
    Mutant("sgd_rebinds_data", "p.data = p.data - lr * g: a new array, so aliases of the parameter go stale", "sgd",
           "        p.data -= self.lr * grad ", "        p.data = p.data - self.lr * grad ", MOMENTUM + DECAY_NESTEROV,
           visible=True),
    # --- Exercise 6: clip_grad_norm_ ----------------------------------------------------------------
    Mutant("clip_per_parameter", "clips each gradient on its own norm", "clip",
           "    coef = np.minimum(max_norm / (total + 1e-6), 1.0)             # torch always multiplies, by at most 1\n"
           '    with np.errstate(invalid="ignore"):                           # inf * 0 = nan, as in torch: no warning\n'
           "        for g in grads:\n"
           "            g.data *= coef                                        # in place, as torch's g.mul_(coef)",
           '    with np.errstate(invalid="ignore"):\n'
           "        for g, norm in zip(grads, norms):\n"
           "            g.data *= np.minimum(max_norm / (norm + 1e-6), 1.0)    # each on its own norm",
           CLIP_NORM + CLIP_INF, visible=True),
    Mutant("clip_sum_of_norms", "adds the per-parameter norms instead of taking their norm", "clip",
           "        total = np.sum(np.stack(norms) ** norm_type) ** (1.0 / norm_type)",
           "        total = np.sum(np.stack(norms))", CLIP_NORM + CLIP_INF, visible=True),
    Mutant("clip_no_epsilon", "divides by the norm without the 1e-6", "clip",
           "max_norm / (total + 1e-6)", "max_norm / total", CLIP_NORM + CLIP_INF, visible=True),
    Mutant("clip_not_clamped", "scales small gradients up (factor not clamped to 1)", "clip",
           "np.minimum(max_norm / (total + 1e-6), 1.0)", "max_norm / (total + 1e-6)", CLIP_NORM,
           visible=True),
    Mutant("clip_returns_clipped_norm", "returns the norm after clipping", "clip",
           "    return Tensor(np.asarray(total))", "    return Tensor(np.asarray(total * coef))",
           CLIP_NORM + CLIP_INF, visible=True),
    Mutant("clip_inf_string", "never converts norm_type: 'inf' as a string fails", "clip",
           "    norm_type = float(norm_type)\n", "", CLIP_NORM + CLIP_INF, visible=True),
    Mutant("clip_norm_in_float64", "computes the norms in float64: float32 gradients get a float64 norm", "clip",
           "norms = [np.sum(np.abs(g.data) ** norm_type)", "norms = [np.sum(np.abs(g.data.astype(np.float64)) ** norm_type)",
           CLIP_NORM, visible=True),
    Mutant("clip_rebinds_grad", "g.data = g.data * c: a new array, so aliases of the gradient go stale", "clip",
           "            g.data *= coef ", "            g.data = g.data * coef ", CLIP_NORM, visible=True),
    Mutant("clip_slice_0d", "scales with g.data[:] *= c, which fails on a 0-d gradient", "clip",
           "            g.data *= coef ", "            g.data[:] *= coef ", CLIP_NORM, visible=True),
    # --- Exercise 7: train_step ---------------------------------------------------------------------
    Mutant("train_loss_after_update", "returns the loss recomputed after the step (a second forward)", "train_step",
           "    return float(loss.item())", "    return float(compute_loss().item())", TRAIN, visible=True),
    Mutant("train_zero_grad_after_backward", "zero_grad after backward: the step finds no gradients", "train_step",
           "    if zero_grads:\n        optimizer.zero_grad()\n    loss = compute_loss()\n    loss.backward()\n",
           "    loss = compute_loss()\n    loss.backward()\n    if zero_grads:\n        optimizer.zero_grad()\n", TRAIN,
           visible=True),
    Mutant("train_no_zero_grad", "the forgotten zero_grad", "train_step",
           "    if zero_grads:\n        optimizer.zero_grad()\n", "", TRAIN, visible=True),
    Mutant("train_clips_after_step", "clips after the step, when the gradients were already used", "train_step",
           "    if max_norm is not None:\n        clip_grad_norm_(optimizer.params, max_norm)\n    optimizer.step()",
           "    optimizer.step()\n    if max_norm is not None:\n        clip_grad_norm_(optimizer.params, max_norm)", TRAIN,
           visible=True),
    Mutant("train_returns_tensor", "returns the loss tensor, which keeps its graph alive", "train_step",
           "    return float(loss.item())", "    return loss", TRAIN, visible=True),
    Mutant("train_max_norm_truthy", "if max_norm: skips clipping for max_norm = 0", "train_step",
           "    if max_norm is not None:", "    if max_norm:", TRAIN, visible=False,
           hidden_because="only max_norm = 0 tells `if max_norm:` from `is not None`; the visible test clips to 1, "
                          "a value a student would use, and the hidden test adds the edge case"),
    # --- concept checks -----------------------------------------------------------------------------
    Mutant("concept_forgotten_exponential", "believes the popular claim of exponential growth", "concept_forgotten",
           'answer_forgotten = "b"', 'answer_forgotten = "a"', ("test_concept_forgotten",), visible=False,
           hidden_because="a concept check's answer is only in the hidden test"),
    Mutant("concept_microbatch_same", "thinks a mean loss per micro-batch needs no weight", "concept_microbatch",
           'answer_microbatch = "c"', 'answer_microbatch = "a"', ("test_concept_microbatch",), visible=False,
           hidden_because="a concept check's answer is only in the hidden test"),
    Mutant("concept_retain_graph_second_order", "confuses retain_graph with create_graph", "concept_retain_graph",
           'answer_retain_graph = "a"', 'answer_retain_graph = "b"', ("test_concept_retain_graph",), visible=False,
           hidden_because="a concept check's answer is only in the hidden test"),
    Mutant("concept_predict_second_backward_raises", "thinks retain_graph=True leaves the graph freed for the second "
           "backward", "concept_predict", 'answer_predict = "a"', 'answer_predict = "d"', ("test_concept_predict",),
           visible=False, hidden_because="a concept check's answer is only in the hidden test"),
    Mutant("concept_keep_alive_print", "believes printing a loss keeps its graph", "concept_keep_alive",
           'answer_keep_alive = "d"', 'answer_keep_alive = "a"', ("test_concept_keep_alive",), visible=False,
           hidden_because="a concept check's answer is only in the hidden test"),
    Mutant("concept_clip_per_parameter", "thinks each gradient is clipped on its own", "concept_clip",
           'answer_clip = "b"', 'answer_clip = "a"', ("test_concept_clip",), visible=False,
           hidden_because="a concept check's answer is only in the hidden test"),
]

ALTERNATIVES = [
    Alternative("zero_grad_listed", "lists the parameters first and drops only gradients that exist", "zero_grad",
                '''def zero_grad(params):
    """Drop every gradient (None), listing the parameters first."""
    for p in list(params):
        if p.grad is not None:
            p.grad = None'''),
    Alternative("micro_seeded_backward", "weights each micro-batch through backward's gradient argument",
                "microbatches", '''def accumulate_microbatches(params, loss_fn, X, y, k):
    """Accumulate k micro-batches, each backward seeded with its share n_i / N instead of scaling the loss."""
    for p in params:
        p.grad = None
    total = 0.0
    for idx in np.array_split(np.arange(len(X)), k):
        share = len(idx) / len(X)
        loss = loss_fn(X[idx], y[idx])
        loss.backward(np.asarray(share, dtype=loss.dtype))
        total += share * loss.item()
    return float(total)'''),
    Alternative("meter_if_peak", "raises the peak with an if, keeps counts as plain sums", "meter",
                '''class SavedBytesMeter:
    """Live bytes and their peak since the last reset."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    def add(self, nbytes: int) -> None:
        self.live = self.live + nbytes
        if self.live > self.peak:
            self.peak = self.live

    def release(self, nbytes: int) -> None:
        self.live = self.live - nbytes

    def reset_peak(self) -> None:
        self.peak = self.live + 0'''),
    Alternative("backward_dependency_counts", "torch's own order: a node runs when all its dependencies are done",
                "backward_engine", '''def free_saved(node):
    """Free a recorded node's saved arrays; sinks have none."""
    saved = getattr(getattr(node, "ctx", None), "_saved", None)
    if saved is not None:
        saved.free()


def root_gradient(tensor, gradient=None):
    """The starting gradient, checked like torch."""
    if not tensor.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if gradient is None:
        if tensor.data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return np.ones(tensor.shape, dtype=tensor.dtype)
    if isinstance(gradient, Tensor):
        gradient = gradient.data
    gradient = np.array(gradient, dtype=tensor.dtype)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {gradient.shape} and output[0] has a "
                           f"shape of {tensor.shape}")
    return gradient


def backward(tensor, gradient=None, retain_graph=False):
    """Run each node once its users have all sent their gradients (dependency counts), freeing as it goes."""
    start = root_gradient(tensor, gradient)
    root, _ = gradient_edge(tensor)
    users = {}
    seen = {id(root)}
    stack = [root]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            users[id(child)] = users.get(id(child), 0) + 1
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    pending = {id(root): start}
    ready = [root]
    while ready:
        node = ready.pop()
        grad = pending.pop(id(node), None)
        if grad is not None:
            outputs = node(grad)
        else:
            outputs = [None] * len(node.next_functions)
        if not retain_graph:
            free_saved(node)                 # also a node that only None reached, as torch
        for (child, _), child_grad in zip(node.next_functions, outputs):
            if child is None:
                continue
            if child_grad is not None:
                pending[id(child)] = pending[id(child)] + child_grad if id(child) in pending else child_grad
            users[id(child)] -= 1
            if users[id(child)] == 0:
                ready.append(child)'''),
    Alternative("sgd_torch_style", "torch's variable names, the buffer replaced rather than updated in place", "sgd",
                _variant("sgd", (SGD_BODY, '''        d_p = grad if self.weight_decay == 0 else grad + self.weight_decay * p.data
        if self.momentum != 0:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = np.array(d_p, copy=True)
            else:
                state["momentum_buffer"] = self.momentum * state["momentum_buffer"] + (1 - self.dampening) * d_p
            buf = state["momentum_buffer"]
            d_p = d_p + self.momentum * buf if self.nesterov else buf
        p.data -= self.lr * d_p'''))),
    Alternative("clip_concatenated", "one vector of all gradients and np.linalg.norm", "clip",
                '''def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Clip by the norm of all gradients concatenated."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if len(grads) == 0:
        return Tensor(np.zeros((), dtype=np.float32))
    flat = np.concatenate([g.data.ravel() for g in grads])
    total = np.linalg.norm(flat, ord=float(norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError("the total norm of the gradients is non-finite")
    factor = max_norm / (total + 1e-6)
    if factor < 1 or not np.isfinite(total):
        with np.errstate(invalid="ignore"):
            for g in grads:
                g.data *= min(factor, 1.0)
    return Tensor(np.asarray(total))'''),
    Alternative("train_step_spelled_out", "clears the gradients and calls backward itself", "train_step",
                '''def train_step(optimizer, compute_loss, max_norm=None, zero_grads=True):
    """One step, written with the chapter's functions."""
    if zero_grads:
        zero_grad(optimizer.params)
    loss = compute_loss()
    value = loss.item()
    backward(loss)
    if max_norm is not None:
        clip_grad_norm_(optimizer.params, max_norm)
    optimizer.step()
    return float(value)'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("micro_no_division", "sgd_zero_buffer", "clip_per_parameter")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
