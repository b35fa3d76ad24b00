"""Mutants and alternatives for ch02_tape (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the
test cells that must then score 0, and they are all test cells of the mutant's own
exercise. When graded, each test cell runs on the student's code for its own exercise
and on the reference solution for the chapter's other exercises (autograde/hidden/
harness.py swaps it in): a recording mistake fails the recording test alone, not the tests
of the engine, the counter or the graph structure that build graphs with it, and a wrong
topological order fails its own test, not the engine's. No exercise of this chapter
integrates the others. `visible` records whether the visible test of the mutant's own
exercise catches it when a student runs the notebook. Each alternative replaces a whole
answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

ACC = ("test_accumulate_grad",)
REC = ("test_recording",)
MUL = ("test_mul",)
EXP = ("test_exp",)
TOPO = ("test_topological_order",)
BACK = ("test_backward",)
ERRORS = ("test_backward_errors",)
COUNT = ("test_count_apply_calls",)
STRUCT = ("test_graph_structure",)

# The whole body of the solution's topological_order: the mutants of that exercise replace all of it.
TOPO_BODY = (
    "    order: list[Node] = []\n"
    "    visited: set[int] = {id(root)}\n"
    "    stack: list[tuple[Node, int]] = [(root, 0)]  # (node, index of the next edge to follow)\n"
    "    while stack:\n"
    "        node, i = stack.pop()\n"
    "        if i < len(node.next_functions):\n"
    "            stack.append((node, i + 1))\n"
    "            child = node.next_functions[i][0]\n"
    "            if child is not None and id(child) not in visited:\n"
    "                visited.add(id(child))\n"
    "                stack.append((child, 0))\n"
    "        else:\n"
    "            order.append(node)  # post-order: after everything below it\n"
    "    order.reverse()\n"
    "    return order"
)

MUTANTS = [
    # --- AccumulateGrad.apply ------------------------------------------------------------------------------
    Mutant("acc_overwrites", "the leaf's .grad overwritten by each new gradient instead of accumulated",
           "accumulate_grad",
           "leaf.grad = Tensor((leaf.grad.data + grad).astype(leaf.dtype, copy=False))",
           "leaf.grad = Tensor(np.array(grad, dtype=leaf.dtype, copy=True))", ACC, visible=True),
    Mutant("acc_aliases_incoming", "stores the incoming array itself, then adds into it in place: leaves that "
           "received the same array (both inputs of an Add) change each other's gradient",
           "accumulate_grad",
           "            leaf.grad = Tensor(np.array(grad, dtype=leaf.dtype, copy=True))  # a copy: grad may be shared\n"
           "        else:\n"
           "            leaf.grad = Tensor((leaf.grad.data + grad).astype(leaf.dtype, copy=False))  # a new array, never +=",
           "            leaf.grad = Tensor(grad)\n"
           "        else:\n"
           "            leaf.grad.data += grad", ACC, visible=True),
    Mutant("acc_ignores_dtype", "first gradient stored in its own dtype: a float32 leaf gets a float64 .grad",
           "accumulate_grad", "np.array(grad, dtype=leaf.dtype, copy=True)", "np.array(grad, copy=True)", ACC, visible=True),
    Mutant("acc_grad_requires_grad", "the first .grad inherits the leaf's requires_grad: a gradient that itself "
           "requires grad, unlike torch's plain .grad",
           "accumulate_grad", "leaf.grad = Tensor(np.array(grad, dtype=leaf.dtype, copy=True))",
           "leaf.grad = Tensor(np.array(grad, dtype=leaf.dtype, copy=True), requires_grad=leaf.requires_grad)", ACC,
           visible=True),
    Mutant("acc_stores_ndarray", "stores a bare ndarray in .grad instead of a Tensor",
           "accumulate_grad",
           "            leaf.grad = Tensor(np.array(grad, dtype=leaf.dtype, copy=True))  # a copy: grad may be shared\n"
           "        else:\n"
           "            leaf.grad = Tensor((leaf.grad.data + grad).astype(leaf.dtype, copy=False))  # a new array, never +=",
           "            leaf.grad = np.array(grad, dtype=leaf.dtype)\n"
           "        else:\n"
           "            leaf.grad = (leaf.grad + grad).astype(leaf.dtype)", ACC, visible=True),
    Mutant("acc_returns_none", "forgets to return (): the engine cannot iterate over the sink's result",
           "accumulate_grad", "\n        return ()", "", ACC, visible=True),
    # --- gradient_edge and Function.apply --------------------------------------------------------------------
    Mutant("rec_requires_grad_not_set", "records grad_fn but leaves out.requires_grad False: the next op records "
           "nothing and backward refuses the output",
           "recording", "            out.requires_grad = True\n", "", REC, visible=True),
    Mutant("rec_fresh_accumulator", "a new AccumulateGrad for every use of a leaf instead of one per leaf: "
           "x + x has two sinks, unlike torch",
           "recording",
           "        if t._accumulator is None:\n"
           "            t._accumulator = AccumulateGrad(t)  # one sink per leaf, shared by every use of the leaf\n"
           "        return (t._accumulator, 0)",
           "        return (AccumulateGrad(t), 0)", REC, visible=True),
    Mutant("rec_sink_for_constants", "gives every leaf an AccumulateGrad, even one that does not require grad: "
           "constants get edges and a .grad",
           "recording", "    if t.requires_grad:\n        if t._accumulator is None:",
           "    if True:\n        if t._accumulator is None:", REC, visible=True),
    Mutant("rec_all_instead_of_any", "records only when every input requires grad: x * constant is not recorded",
           "recording", "if any(t.requires_grad for t in inputs):", "if all(t.requires_grad for t in inputs):",
           REC, visible=True),
    Mutant("rec_differentiates_in_forward", "runs the backward rule during forward to store local derivatives "
           "(the misconception of section 1)",
           "recording", "        if any(t.requires_grad for t in inputs):\n",
           "        ctx.local_gradients = cls.backward(ctx, np.ones_like(out.data))\n"
           "        if any(t.requires_grad for t in inputs):\n", REC, visible=True),
    Mutant("rec_drops_settings", "does not pass the keyword settings on to forward",
           "recording", "*(t.data for t in inputs), **settings))", "*(t.data for t in inputs)))", REC, visible=True),
    Mutant("rec_sink_in_grad_fn", "keeps the leaf's AccumulateGrad in its grad_fn: the graph is the same, but "
           "the leaf stops being a leaf (is_leaf False, a grad_fn where torch has None)",
           "recording",
           "        if t._accumulator is None:\n"
           "            t._accumulator = AccumulateGrad(t)  # one sink per leaf, shared by every use of the leaf\n"
           "        return (t._accumulator, 0)",
           "        t.grad_fn = AccumulateGrad(t)  # the leaf keeps its sink as its grad_fn\n"
           "        return (t.grad_fn, 0)", REC, visible=True),
    Mutant("rec_no_type_check", "no check that the inputs are Tensors: an AttributeError on .data instead of a TypeError",
           "recording",
           "        for i, t in enumerate(inputs):\n"
           "            if not isinstance(t, Tensor):\n"
           "                raise TypeError(f\"{cls.__name__}.apply: input {i} should be a Tensor, got {type(t).__name__}\")\n",
           "", REC, visible=True),
    Mutant("rec_skips_constant_edges", "records edges only for the inputs that require grad: x + c has one edge, "
           "so the rule's two gradients no longer match the edges",
           "recording", "tuple(gradient_edge(t) for t in inputs)",
           "tuple(gradient_edge(t) for t in inputs if t.requires_grad)", REC, visible=True),
    # --- Mul and Exp ---------------------------------------------------------------------------------------------
    Mutant("rec_stale_accumulator", "returns a leaf's AccumulateGrad whenever one was made, even after its "
           "requires_grad was set to False: later uses still record an edge to it",
           "recording", "        return (t.grad_fn, 0)\n    if t.requires_grad:\n",
           "        return (t.grad_fn, 0)\n    if t._accumulator is not None:  # made on an earlier use\n"
           "        return (t._accumulator, 0)\n    if t.requires_grad:\n", REC, visible=True),
    Mutant("mul_swapped_operands", "each input's gradient multiplied by the input itself instead of the other one",
           "mul_and_exp", "return grad * b, grad * a", "return grad * a, grad * b", MUL, visible=True),
    Mutant("mul_forgets_grad", "returns the local derivatives b and a without multiplying by the incoming gradient",
           "mul_and_exp", "return grad * b, grad * a", "return b, a", MUL, visible=True),
    Mutant("mul_divides_output", "computes d(ab)/da as (ab)/a: NaN where an input is 0",
           "mul_and_exp", "        a, b = ctx.saved_tensors\n        return grad * b, grad * a",
           "        a, b = ctx.saved_tensors\n        product = a * b\n        return grad * product / a, grad * product / b",
           MUL, visible=True),
    Mutant("mul_returns_list", "returns the two gradients as a list: the engine reads a list as one gradient",
           "mul_and_exp", "return grad * b, grad * a", "return [grad * b, grad * a]", MUL, visible=True),
    Mutant("exp_saves_input", "Exp saves its input and its backward multiplies by it instead of by exp(input)",
           "mul_and_exp", "ctx.save_for_backward(result)", "ctx.save_for_backward(a)", EXP, visible=True),
    Mutant("exp_forgets_grad", "Exp backward returns exp(a) without the incoming gradient",
           "mul_and_exp", "return grad * result", "return result", EXP, visible=True),
    Mutant("exp_exp_of_result", "saves the result, then takes its exponential again in backward",
           "mul_and_exp", "return grad * result", "return grad * np.exp(result)", EXP, visible=True),
    # --- topological_order ---------------------------------------------------------------------------------------
    Mutant("topo_breadth_first", "breadth-first order: with root -> leaf and root -> mid -> leaf, leaf comes "
           "before mid, so the engine runs a node before all its gradient has arrived",
           "topological_order",
           TOPO_BODY,
           "    order, seen, queue = [root], {id(root)}, [root]\n"
           "    while queue:\n"
           "        node = queue.pop(0)\n"
           "        for child, _ in node.next_functions:\n"
           "            if child is not None and id(child) not in seen:\n"
           "                seen.add(id(child))\n"
           "                order.append(child)\n"
           "                queue.append(child)\n"
           "    return order", TOPO, visible=True),
    Mutant("topo_preorder", "depth-first pre-order (a node listed when first reached): in a diamond the shared "
           "node comes before the second branch",
           "topological_order",
           TOPO_BODY,
           "    order, seen, stack = [], {id(root)}, [root]\n"
           "    while stack:\n"
           "        node = stack.pop()\n"
           "        order.append(node)\n"
           "        for child, _ in reversed(node.next_functions):\n"
           "            if child is not None and id(child) not in seen:\n"
           "                seen.add(id(child))\n"
           "                stack.append(child)\n"
           "    return order", TOPO, visible=True),
    Mutant("topo_recursive", "recursive depth-first search (correct order, visited set): RecursionError on deep chains",
           "topological_order",
           TOPO_BODY,
           "    order, visited = [], set()\n"
           "\n"
           "    def visit(node):\n"
           "        visited.add(id(node))\n"
           "        for child, _ in node.next_functions:\n"
           "            if child is not None and id(child) not in visited:\n"
           "                visit(child)\n"
           "        order.append(node)\n"
           "\n"
           "    visit(root)\n"
           "    return order[::-1]", TOPO, visible=True),
    Mutant("topo_not_reversed", "post-order not reversed: leaves first, root last",
           "topological_order", "    order.reverse()\n", "", TOPO, visible=True),
    Mutant("topo_no_visited", "iterative post-order without a visited set: a node reached along two paths is "
           "listed twice (and the walk is exponential on chains of diamonds)",
           "topological_order",
           "            if child is not None and id(child) not in visited:\n                visited.add(id(child))\n",
           "            if child is not None:\n", TOPO, visible=True),
    Mutant("topo_two_phase_marks_on_push", "a stack of (node, expanded) pairs that marks a child as seen when it is "
           "pushed: a node pushed by an early parent is finished before a later node that has an edge to it",
           "topological_order",
           TOPO_BODY,
           "    order, seen, stack = [], {id(root)}, [(root, False)]\n"
           "    while stack:\n"
           "        node, expanded = stack.pop()\n"
           "        if expanded:\n"
           "            order.append(node)\n"
           "            continue\n"
           "        stack.append((node, True))\n"
           "        for child, _ in node.next_functions:\n"
           "            if child is not None and id(child) not in seen:\n"
           "                seen.add(id(child))\n"
           "                stack.append((child, False))\n"
           "    return order[::-1]", TOPO, visible=True),
    # --- backward ------------------------------------------------------------------------------------------------
    Mutant("bw_assign_at_fan_out", "= instead of + when a second gradient reaches a node: only the last use counts",
           "backward", "grads[key] = child_grad if key not in grads else grads[key] + child_grad",
           "grads[key] = child_grad", BACK, visible=True),
    Mutant("bw_recursive", "recursive backward without an order: a node runs once per path (wrong call counts) "
           "and deep chains hit the recursion limit",
           "backward",
           "    grads: dict[int, np.ndarray] = {id(root): gradient}  # node -> sum of the gradients sent to it so far\n"
           "    for node in topological_order(root):\n"
           "        grad = grads.pop(id(node), None)\n"
           "        if grad is None:\n"
           "            continue\n"
           "        for (child, _), child_grad in zip(node.next_functions, node.apply(grad)):\n"
           "            if child is None or child_grad is None:\n"
           "                continue\n"
           "            key = id(child)\n"
           "            grads[key] = child_grad if key not in grads else grads[key] + child_grad",
           "\n"
           "    def push(node, grad):\n"
           "        for (child, _), child_grad in zip(node.next_functions, node.apply(grad)):\n"
           "            if child is not None and child_grad is not None:\n"
           "                push(child, child_grad)\n"
           "\n"
           "    push(root, gradient)", BACK, visible=True),
    Mutant("bw_no_scalar_check", "seeds a non-scalar output with ones instead of asking for a gradient",
           "backward",
           "        if tensor.data.size != 1:\n"
           "            raise RuntimeError(f\"backward: grad can be implicitly created only for scalar outputs; this tensor \"\n"
           "                               f\"has shape {tensor.shape}: pass gradient= an array of that shape\")\n",
           "", ERRORS, visible=True),
    Mutant("bw_sets_output_grad", "stores the starting gradient in the output's .grad (a non-leaf)",
           "backward", "    root, _ = gradient_edge(tensor)\n",
           "    tensor.grad = Tensor(gradient)  # the output's own gradient\n    root, _ = gradient_edge(tensor)\n", BACK, visible=True),
    Mutant("bw_ignores_gradient", "always starts from ones, ignoring the gradient argument (and its shape)",
           "backward",
           "gradient = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient, dtype=tensor.dtype)",
           "gradient = np.ones_like(tensor.data)", BACK + ERRORS, visible=True),
    Mutant("bw_leaves_first", "walks the topological order backwards (leaves first): nodes run before their "
           "gradient has arrived", "backward", "for node in topological_order(root):",
           "for node in reversed(topological_order(root)):", BACK, visible=True),
    Mutant("bw_no_requires_grad_check", "no check that the output requires grad: an AttributeError instead of "
           "torch's RuntimeError",
           "backward",
           "    if not tensor.requires_grad:\n"
           "        raise RuntimeError(\"backward: this tensor does not require grad and has no grad_fn: \"\n"
           "                           \"no input of the computation had requires_grad=True\")\n",
           "", ERRORS, visible=True),
    Mutant("bw_seed_float64", "starts from np.ones(shape) and converts the gradient to Python float: a float32 "
           "graph runs its backward in float64 (the leaves' .grad still come out float32)",
           "backward",
           "        gradient = np.ones_like(tensor.data)\n"
           "    gradient = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient, dtype=tensor.dtype)",
           "        gradient = np.ones(tensor.shape)\n"
           "    gradient = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient, dtype=float)",
           BACK, visible=True),
    Mutant("bw_none_not_skipped", "adds a None gradient from a rule into the table: None + array raises",
           "backward", "            if child is None or child_grad is None:\n                continue\n",
           "            if child is None:\n                continue\n", BACK, visible=True),
    Mutant("bw_none_as_zeros", "replaces a None gradient by zeros of the output's shape: a leaf that received "
           "only None gets a .grad (of the wrong shape), where torch leaves None",
           "backward", "            if child is None or child_grad is None:\n                continue\n",
           "            if child is None:\n                continue\n"
           "            if child_grad is None:\n                child_grad = np.zeros_like(grad)\n", BACK, visible=True),
    Mutant("bw_keyerror_unreached", "takes every node's gradient with grads.pop(id(node)): a node that only None "
           "reached raises KeyError",
           "backward", "        grad = grads.pop(id(node), None)\n        if grad is None:\n            continue\n",
           "        grad = grads.pop(id(node))\n", BACK, visible=True),
    Mutant("bw_leaf_output_overwrites", "special-cases a leaf output by setting its .grad to the gradient: a second "
           "backward on the leaf overwrites instead of adding",
           "backward", "    root, _ = gradient_edge(tensor)\n",
           "    if tensor.is_leaf:  # the output is the leaf itself: its gradient is the seed\n"
           "        tensor.grad = Tensor(gradient)\n"
           "        return\n"
           "    root, _ = gradient_edge(tensor)\n", BACK, visible=True),
    Mutant("bw_stack_per_path", "an explicit stack without an order: no recursion, right gradients (the sinks add), "
           "but a node runs once per path",
           "backward",
           "    grads: dict[int, np.ndarray] = {id(root): gradient}  # node -> sum of the gradients sent to it so far\n"
           "    for node in topological_order(root):\n"
           "        grad = grads.pop(id(node), None)\n"
           "        if grad is None:\n"
           "            continue\n"
           "        for (child, _), child_grad in zip(node.next_functions, node.apply(grad)):\n"
           "            if child is None or child_grad is None:\n"
           "                continue\n"
           "            key = id(child)\n"
           "            grads[key] = child_grad if key not in grads else grads[key] + child_grad",
           "    stack = [(root, gradient)]  # (node, a gradient to run it with)\n"
           "    while stack:\n"
           "        node, grad = stack.pop()\n"
           "        for (child, _), child_grad in zip(node.next_functions, node.apply(grad)):\n"
           "            if child is not None and child_grad is not None:\n"
           "                stack.append((child, child_grad))", BACK, visible=True),
    Mutant("bw_no_shape_check", "accepts a gradient of the wrong shape: NumPy broadcasting hides it",
           "backward",
           "    if gradient.shape != tensor.shape:\n"
           "        raise RuntimeError(f\"backward: gradient has shape {gradient.shape}, expected {tensor.shape} (the tensor's shape)\")\n",
           "", ERRORS, visible=True),
    Mutant("bw_vague_scalar_error", "refuses a non-scalar output without naming the missing argument or the shape",
           "backward",
           "            raise RuntimeError(f\"backward: grad can be implicitly created only for scalar outputs; this tensor \"\n"
           "                               f\"has shape {tensor.shape}: pass gradient= an array of that shape\")\n",
           "            raise RuntimeError(\"backward: the output must be a scalar\")\n", ERRORS, visible=True),
    Mutant("bw_vague_shape_error", "refuses a gradient of the wrong shape without saying which shapes",
           "backward",
           "raise RuntimeError(f\"backward: gradient has shape {gradient.shape}, expected {tensor.shape} (the tensor's shape)\")",
           "raise RuntimeError(\"backward: the gradient has the wrong shape\")", ERRORS, visible=True),
    Mutant("bw_inplace_accumulate", "adds a second gradient into the table's array in place (+=): the first "
           "arrival may be the caller's gradient itself (Add hands it on to both inputs), which backward then changes",
           "backward", "            grads[key] = child_grad if key not in grads else grads[key] + child_grad",
           "            if key in grads:\n"
           "                grads[key] += child_grad\n"
           "            else:\n"
           "                grads[key] = child_grad", BACK, visible=True),
    Mutant("bw_size_gt_one", "asks for a gradient only when the output has more than one element: an empty output "
           "is seeded with an empty array of ones, where torch refuses it", "backward",
           "        if tensor.data.size != 1:\n", "        if tensor.data.size > 1:\n", ERRORS, visible=True),
    # --- count_apply_calls ---------------------------------------------------------------------------------------
    Mutant("cnt_late_binding", "writes its own wrapper in the loop body instead of the given counted: every "
           "wrapper sees the loop's last node and last apply (closures capture variables)",
           "count_apply_calls",
           "    for node in nodes:\n"
           "        node.apply = counted(counts, node, node.apply)  # an instance attribute: shadows the class's method "
           "on this node\n",
           "    for node in nodes:\n"
           "        original = node.apply\n"
           "\n"
           "        def wrapper(grad):\n"
           "            counts[node] += 1\n"
           "            return original(grad)\n"
           "\n"
           "        node.apply = wrapper\n", COUNT, visible=True),
    Mutant("cnt_never_restores", "leaves every node wrapped: the returned counts keep growing afterwards",
           "count_apply_calls",
           "    try:\n"
           "        engine(output)\n"
           "    finally:\n"
           "        for node in nodes:\n"
           "            del node.apply  # the class's method shows through again\n",
           "    engine(output)\n", COUNT, visible=True),
    Mutant("cnt_no_finally", "restores the nodes only when the engine succeeds",
           "count_apply_calls",
           "    try:\n"
           "        engine(output)\n"
           "    finally:\n"
           "        for node in nodes:\n"
           "            del node.apply  # the class's method shows through again\n",
           "    engine(output)\n"
           "    for node in nodes:\n"
           "        del node.apply\n", COUNT, visible=True),
    Mutant("cnt_omits_unrun_nodes", "counts only the nodes that ran: nodes that never ran are missing, not 0",
           "count_apply_calls",
           "    counts = {node: 0 for node in nodes}\n",
           "    import collections\n    counts = collections.defaultdict(int)\n", COUNT, visible=True),
    Mutant("cnt_leaf_output_no_nodes", "starts from output.grad_fn instead of gradient_edge(output): a leaf "
           "output's sink is neither counted nor listed",
           "count_apply_calls", "    root, _ = gradient_edge(output)\n", "    root = output.grad_fn\n", COUNT,
           visible=True),
    # --- graph_structure -----------------------------------------------------------------------------------------
    Mutant("st_keeps_namespace", "keeps torch's C++ namespace: 'torch::autograd::AccumulateGrad'",
           "graph_structure", "node.name().split(\"::\")[-1]", "node.name()", STRUCT, visible=True),
    Mutant("st_class_name", "names nodes by their Python class: 'BackwardNode' for every recorded op",
           "graph_structure", "node.name().split(\"::\")[-1]", "type(node).__name__", STRUCT, visible=True),
    Mutant("st_depth_first", "numbers the nodes depth-first instead of breadth-first",
           "graph_structure",
           "    number = {id(root): 0}\n"
           "    nodes = [root]  # also keeps torch's node objects alive, so their ids stay valid\n"
           "    structure = []\n"
           "    for node in nodes:  # the list grows while we walk it: breadth-first\n"
           "        edges = []\n"
           "        for child, _ in node.next_functions:\n"
           "            if child is None:\n"
           "                edges.append(None)\n"
           "                continue\n"
           "            if id(child) not in number:\n"
           "                number[id(child)] = len(nodes)\n"
           "                nodes.append(child)\n"
           "            edges.append(number[id(child)])\n"
           "        structure.append((node.name().split(\"::\")[-1], tuple(edges)))\n"
           "    return structure",
           "    number, nodes, stack = {}, [], [root]\n"
           "    while stack:\n"
           "        node = stack.pop()\n"
           "        if id(node) in number:\n"
           "            continue\n"
           "        number[id(node)] = len(nodes)\n"
           "        nodes.append(node)\n"
           "        for child, _ in reversed(node.next_functions):\n"
           "            if child is not None:\n"
           "                stack.append(child)\n"
           "    return [(node.name().split(\"::\")[-1],\n"
           "             tuple(None if child is None else number[id(child)] for child, _ in node.next_functions))\n"
           "            for node in nodes]", STRUCT, visible=True),
    Mutant("st_numbers_each_path", "gives a node a new number each time it is reached (x + x has two sinks)",
           "graph_structure",
           "            if id(child) not in number:\n"
           "                number[id(child)] = len(nodes)\n"
           "                nodes.append(child)\n",
           "            number[id(child)] = len(nodes)\n"
           "            nodes.append(child)\n", STRUCT, visible=True),
    Mutant("st_drops_none_edges", "leaves out the None edges of inputs that need no gradient",
           "graph_structure", "                edges.append(None)\n                continue",
           "                continue", STRUCT, visible=True),
    # --- concept checks ---------------------------------------------------------------------------------------
    Mutant("concept_forward_grad_in_forward", "believes forward already computes x.grad", "concept_forward",
           'answer_forward = "d"', 'answer_forward = "a"', ("test_concept_forward",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_define_by_run_static", "believes the first call fixes the graph", "concept_define_by_run",
           'answer_define_by_run = "c"', 'answer_define_by_run = "d"', ("test_concept_define_by_run",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_leaves_every_tensor", "believes every tensor in the graph gets a .grad", "concept_leaves",
           'answer_leaves = "a"', 'answer_leaves = "b"', ("test_concept_leaves",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_naive_every_path", "believes any engine must follow every path", "concept_naive",
           'answer_naive = "b"', 'answer_naive = "c"', ("test_concept_naive",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
]

ALTERNATIVES = [
    Alternative("acc_in_place_after_copy", "copies the first gradient, then adds in place into its own copy "
                "(what torch's AccumulateGrad does)",
                "accumulate_grad", '''class AccumulateGrad(Node):
    """The sink of a leaf that requires grad."""

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    def apply(self, grad):
        leaf = self.variable
        if leaf.grad is None:
            leaf.grad = Tensor(np.array(grad, dtype=leaf.dtype))  # np.array copies
        else:
            leaf.grad.data += grad  # in place, into the leaf's own array (same-kind casting keeps its dtype)
        return ()'''),
    Alternative("rec_edges_first", "checks all inputs at once, builds the Tensor with requires_grad, map() for the edges",
                "recording", '''def gradient_edge(t):
    """The edge a gradient for t follows."""
    if t.grad_fn is not None:
        return t.grad_fn, 0
    if not t.requires_grad:
        return None, 0
    if getattr(t, "_accumulator", None) is None:
        t._accumulator = AccumulateGrad(t)
    return t._accumulator, 0


class Function:
    """An operation: forward and backward on ndarrays; apply() records the node."""

    name = None

    @staticmethod
    def forward(ctx, *inputs, **settings):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    @classmethod
    def node_name(cls):
        return cls.name or f"{cls.__name__}Backward"

    @classmethod
    def apply(cls, *inputs, **settings):
        wrong = [type(t).__name__ for t in inputs if not isinstance(t, Tensor)]
        if wrong:
            raise TypeError(f"{cls.__name__}.apply takes Tensors, got {', '.join(wrong)}")
        ctx = Context()
        out = Tensor(cls.forward(ctx, *[t.data for t in inputs], **settings))
        out.requires_grad = any(t.requires_grad for t in inputs)
        if out.requires_grad:
            out.grad_fn = BackwardNode(cls, ctx, tuple(map(gradient_edge, inputs)))
        return out'''),
    Alternative("exp_recomputes", "Exp saves its input and recomputes exp(a) in backward",
                "mul_and_exp", '''@register("mul")
class Mul(Function):
    name = "MulBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.multiply(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (b * grad, a * grad)


@register("exp")
class Exp(Function):
    name = "ExpBackward0"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.exp(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * np.exp(a),)'''),
    Alternative("topo_kahn", "dependency counting (Kahn's algorithm), as torch's engine does",
                "topological_order", '''def topological_order(root):
    """Kahn's algorithm: count the edges into each node, take nodes whose count has dropped to zero."""
    nodes, stack = {id(root): root}, [root]
    while stack:  # collect every node
        for child, _ in stack.pop().next_functions:
            if child is not None and id(child) not in nodes:
                nodes[id(child)] = child
                stack.append(child)
    waiting = dict.fromkeys(nodes, 0)
    for node in nodes.values():
        for child, _ in node.next_functions:
            if child is not None:
                waiting[id(child)] += 1
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None:
                waiting[id(child)] -= 1
                if waiting[id(child)] == 0:
                    ready.append(child)
    return order'''),
    Alternative("topo_recursive_raised_limit", "recursive depth-first search after raising the recursion limit "
                "(works on CPython 3.11+, where pure-Python recursion does not use the C stack)",
                "topological_order", '''import sys


def topological_order(root):
    """Recursive DFS post-order, reversed; the recursion limit is raised for deep graphs."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1_000_000))
    order, visited = [], {id(root)}

    def visit(node):
        for child, _ in node.next_functions:
            if child is not None and id(child) not in visited:
                visited.add(id(child))
                visit(child)
        order.append(node)

    visit(root)
    return order[::-1]'''),
    Alternative("bw_dependency_counts", "the engine counts dependencies itself and runs ready nodes, "
                "without calling topological_order", "backward", '''def backward(tensor, gradient=None):
    """Dependency-counting engine: a node runs when every node with an edge to it has run."""
    if not tensor.requires_grad:
        raise RuntimeError("backward: the tensor does not require grad")
    if gradient is None:
        if tensor.data.size != 1:
            raise RuntimeError(f"backward: pass a gradient for an output of shape {tensor.shape}")
        gradient = np.ones_like(tensor.data)
    if isinstance(gradient, Tensor):
        gradient = gradient.data
    gradient = np.asarray(gradient, dtype=tensor.dtype)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"backward: gradient of shape {gradient.shape} for an output of shape {tensor.shape}")
    root = gradient_edge(tensor)[0]
    dependencies, seen, stack = {}, {id(root)}, [root]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                dependencies[id(child)] = dependencies.get(id(child), 0) + 1
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)
    buffers, ready = {id(root): gradient}, [root]
    while ready:
        node = ready.pop()
        for (child, _), g in zip(node.next_functions, node.apply(buffers.pop(id(node)))):
            if child is None:
                continue
            if g is not None:
                buffers[id(child)] = buffers[id(child)] + g if id(child) in buffers else g
            dependencies[id(child)] -= 1
            if dependencies[id(child)] == 0 and id(child) in buffers:
                ready.append(child)'''),
    Alternative("cnt_callable_wrapper", "a small callable class per node; restores by assigning the original "
                "bound method back", "count_apply_calls", '''class _Counted:
    """Wraps one node's apply and counts its calls."""

    def __init__(self, apply):
        self.apply, self.calls = apply, 0

    def __call__(self, grad):
        self.calls += 1
        return self.apply(grad)


def count_apply_calls(output, engine=None):
    """Calls of each node's apply during engine(output)."""
    root = gradient_edge(output)[0]
    nodes = topological_order(root) if root is not None else []
    wrappers = [_Counted(node.apply) for node in nodes]
    for node, wrapper in zip(nodes, wrappers):
        node.apply = wrapper
    try:
        (engine or backward)(output)
    finally:
        for node, wrapper in zip(nodes, wrappers):
            node.apply = wrapper.apply  # the original bound method
    return {node: wrapper.calls for node, wrapper in zip(nodes, wrappers)}'''),
    Alternative("st_deque", "a deque of nodes to visit and a dict keyed by the node objects themselves",
                "graph_structure", '''from collections import deque


def graph_structure(output):
    """Breadth-first numbering with a queue; nodes are dict keys (hashable in both engines)."""
    if output.grad_fn is None:
        return []
    number = {output.grad_fn: 0}
    queue = deque([output.grad_fn])
    result = []
    while queue:
        node = queue.popleft()
        edges = []
        for child, _ in node.next_functions:
            if child is not None and child not in number:
                number[child] = len(number)
                queue.append(child)
            edges.append(None if child is None else number[child])
        result.append((node.name().rsplit("::", 1)[-1], tuple(edges)))
    return result'''),
    Alternative("acc_astype_copies", "astype, which returns a new array by default, for both the first gradient "
                "and the sum", "accumulate_grad", '''class AccumulateGrad(Node):
    """The sink of a leaf that requires grad."""

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    def apply(self, grad):
        leaf = self.variable
        total = np.asarray(grad) if leaf.grad is None else leaf.grad.data + grad
        leaf.grad = Tensor(total.astype(leaf.dtype))  # astype copies unless told otherwise
        return ()'''),
    Alternative("topo_two_phase_stack", "a stack of (node, expanded) pairs: a node is pushed back as expanded "
                "before its children, and listed when it comes back to the top", "topological_order", '''def topological_order(root):
    """Post-order by an explicit stack of (node, expanded) pairs, reversed; a node is marked when expanded."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)  # every child was finished before this entry came back to the top
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                stack.append((child, False))
    return order[::-1]'''),
    Alternative("cnt_default_arguments", "the wrapper binds node and apply as default arguments (the classic fix "
                "for closures in a loop)", "count_apply_calls", '''def count_apply_calls(output, engine=None):
    """Calls of each node's apply during engine(output)."""
    root = gradient_edge(output)[0]
    nodes = topological_order(root) if root is not None else []
    counts = dict.fromkeys(nodes, 0)
    for node in nodes:
        def wrapper(grad, node=node, apply=node.apply):
            counts[node] += 1
            return apply(grad)
        node.apply = wrapper
    try:
        (backward if engine is None else engine)(output)
    finally:
        for node in nodes:
            del node.apply
    return counts'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("acc_overwrites", "mul_swapped_operands", "bw_assign_at_fan_out")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
