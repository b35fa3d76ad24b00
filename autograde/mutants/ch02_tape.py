"""Mutants and alternatives for ch02_tape (loaded by autograde.build.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the
test cells that must then score 0. The tests of later exercises build their graphs with
the student's recording (Exercise 2) but with their own copies of the mul and exp rules,
and test the call counter with engines of their own, so a mistake in Exercise 3, 5 or 6
costs only that exercise. A recording mistake changes the graph itself, and every test
that compares a graph with torch's sees it; a wrong topological order breaks the engine
built on it (Exercise 5). Each alternative replaces a whole answer cell by another
correct answer and must keep full marks.
"""
from autograde.build.catalogue import Alternative, ExampleStudent, Mutant

ACC = ("test_accumulate_grad",)
REC = ("test_recording",)
RULES = ("test_mul_and_exp",)
TOPO = ("test_topological_order",)
BACK = ("test_backward",)
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
    # --- gradient_edge and Function.apply --------------------------------------------------------------------
    Mutant("rec_requires_grad_not_set", "records grad_fn but leaves out.requires_grad False: the next op records "
           "nothing and backward refuses the output",
           "recording", "            out.requires_grad = True\n", "", REC + BACK + COUNT + STRUCT, visible=True),
    Mutant("rec_fresh_accumulator", "a new AccumulateGrad for every use of a leaf instead of one per leaf: "
           "x + x has two sinks, unlike torch",
           "recording",
           "        if t._accumulator is None:\n"
           "            t._accumulator = AccumulateGrad(t)  # one sink per leaf, shared by every use of the leaf\n"
           "        return (t._accumulator, 0)",
           "        return (AccumulateGrad(t), 0)", REC + STRUCT, visible=True),
    Mutant("rec_sink_for_constants", "gives every leaf an AccumulateGrad, even one that does not require grad: "
           "constants get edges and a .grad",
           "recording", "    if t.requires_grad:\n        if t._accumulator is None:",
           "    if True:\n        if t._accumulator is None:", REC + BACK + STRUCT, visible=True),
    Mutant("rec_all_instead_of_any", "records only when every input requires grad: x * constant is not recorded",
           "recording", "if any(t.requires_grad for t in inputs):", "if all(t.requires_grad for t in inputs):",
           REC + BACK + COUNT + STRUCT, visible=True),
    Mutant("rec_differentiates_in_forward", "runs the backward rule during forward to store local derivatives "
           "(the misconception of section 1)",
           "recording", "        if any(t.requires_grad for t in inputs):\n",
           "        ctx.local_gradients = cls.backward(ctx, np.ones_like(out.data))\n"
           "        if any(t.requires_grad for t in inputs):\n", REC, visible=False,
           hidden_because='to be made visible (issue 8): the visible test does not count backward calls during forward'),
    Mutant("rec_drops_settings", "does not pass the keyword settings on to forward",
           "recording", "*(t.data for t in inputs), **settings))", "*(t.data for t in inputs)))", REC, visible=False,
           hidden_because='to be made visible (issue 8): no visible op takes keyword settings'),
    # --- Mul and Exp ---------------------------------------------------------------------------------------------
    Mutant("mul_swapped_operands", "each input's gradient multiplied by the input itself instead of the other one",
           "mul_and_exp", "return grad * b, grad * a", "return grad * a, grad * b", RULES, visible=True),
    Mutant("mul_forgets_grad", "returns the local derivatives b and a without multiplying by the incoming gradient",
           "mul_and_exp", "return grad * b, grad * a", "return b, a", RULES, visible=True),
    Mutant("exp_saves_input", "Exp saves its input and its backward multiplies by it instead of by exp(input)",
           "mul_and_exp", "ctx.save_for_backward(result)", "ctx.save_for_backward(a)", RULES, visible=True),
    Mutant("exp_forgets_grad", "Exp backward returns exp(a) without the incoming gradient",
           "mul_and_exp", "return grad * result", "return result", RULES, visible=True),
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
           "    return order", TOPO + BACK, visible=True),
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
           "    return order", TOPO + BACK, visible=True),
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
           "    return order[::-1]", TOPO + BACK, visible=True),
    Mutant("topo_not_reversed", "post-order not reversed: leaves first, root last",
           "topological_order", "    order.reverse()\n", "", TOPO + BACK, visible=True),
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
           "", BACK, visible=True),
    Mutant("bw_sets_output_grad", "stores the starting gradient in the output's .grad (a non-leaf)",
           "backward", "    root, _ = gradient_edge(tensor)\n",
           "    tensor.grad = Tensor(gradient)  # the output's own gradient\n    root, _ = gradient_edge(tensor)\n", BACK, visible=True),
    Mutant("bw_ignores_gradient", "always starts from ones, ignoring the gradient argument (and its shape)",
           "backward",
           "gradient = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient, dtype=tensor.dtype)",
           "gradient = np.ones_like(tensor.data)", BACK, visible=True),
    Mutant("bw_leaves_first", "walks the topological order backwards (leaves first): nodes run before their "
           "gradient has arrived", "backward", "for node in topological_order(root):",
           "for node in reversed(topological_order(root)):", BACK, visible=True),
    Mutant("bw_no_requires_grad_check", "no check that the output requires grad: an AttributeError instead of "
           "torch's RuntimeError",
           "backward",
           "    if not tensor.requires_grad:\n"
           "        raise RuntimeError(\"backward: this tensor does not require grad and has no grad_fn: \"\n"
           "                           \"no input of the computation had requires_grad=True\")\n",
           "", BACK, visible=True),
    # --- count_apply_calls ---------------------------------------------------------------------------------------
    Mutant("cnt_late_binding", "wrappers defined in the loop body: every wrapper sees the loop's last node and "
           "last apply (closures capture variables)",
           "count_apply_calls",
           "    def counted(node: Node, apply: Callable) -> Callable:\n"
           "        \"\"\"apply, counting each call in counts[node] (a function of its own, so node and apply are not "
           "shared).\"\"\"\n"
           "        def wrapper(grad):\n"
           "            counts[node] += 1\n"
           "            return apply(grad)\n"
           "        return wrapper\n"
           "\n"
           "    for node in nodes:\n"
           "        node.apply = counted(node, node.apply)  # an instance attribute: shadows the class's method on "
           "this node\n",
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
           "        del node.apply\n", COUNT, visible=False,
           hidden_because='to be made visible (issue 8): the visible test has no engine that raises'),
    Mutant("cnt_omits_unrun_nodes", "counts only the nodes that ran: nodes that never ran are missing, not 0",
           "count_apply_calls",
           "    counts = {node: 0 for node in nodes}\n",
           "    import collections\n    counts = collections.defaultdict(int)\n", COUNT, visible=True),
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
           "            for node in nodes]", STRUCT, visible=False,
           hidden_because='to be made visible (issue 8): the visible graphs number the same either way'),
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
    Mutant("concept_forward_jacobians", "believes forward stores each op's Jacobian", "concept_forward",
           'answer_forward = "c"', 'answer_forward = "b"', ("test_concept_forward",), visible=False,
           hidden_because='concept check: the visible test checks only that the answer is one letter'),
    Mutant("concept_define_by_run_static", "believes the first call fixes the graph", "concept_define_by_run",
           'answer_define_by_run = "b"', 'answer_define_by_run = "d"', ("test_concept_define_by_run",), visible=False,
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
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("acc_overwrites", "mul_swapped_operands", "bw_assign_at_fan_out")),
]
