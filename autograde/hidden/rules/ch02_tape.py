"""The graded rules of ch02_tape (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

RULES = (
    Rule("accumulate.torch", ("test_accumulate_grad",),
         "For gradients of any shape (0-d included) in either float dtype, `.grad` after each `apply` equals "
         "torch's `.grad` summed over backward calls: a `Tensor` in the leaf's dtype and shape, with "
         "`requires_grad` False and no `grad_fn`; `apply` returns `()`."),
    Rule("accumulate.own_memory", ("test_accumulate_grad",),
         "`.grad` never shares memory with a gradient handed to `apply` (one array may reach two leaves), a "
         "`.grad` set earlier, by hand or by a backward on the leaf itself, is added to, and nothing handed in "
         "is changed."),
    Rule("recording.edges", ("test_recording",),
         "`gradient_edge(t)` is `(None, 0)` for a tensor that does not require grad, `(t.grad_fn, 0)` for a result "
         "and `(sink, 0)` for a leaf that does, with one `AccumulateGrad` per leaf (made once, `.variable` the "
         "leaf), following `requires_grad` as it is at each use, as torch does."),
    Rule("recording.apply", ("test_recording",),
         "Over random programs (float and int constants, zeros), `apply` records what torch records: values, "
         "`requires_grad`, `is_leaf`, dtype, `grad_fn` names and `next_functions` edge by edge; the node holds the "
         "Function class and its `ctx`; settings reach `forward` unchanged; a non-Tensor input raises `TypeError`; "
         "forward never calls `backward`."),
    Rule("rules.torch", ("test_mul", "test_exp"),
         "Called directly on arrays of any shape (0-d included, zeros included) in float64 and float32, each rule's "
         "forward value and backward gradients equal torch's, in the inputs' dtype and shape, and neither pass "
         "changes its inputs or the upstream gradient."),
    Rule("rules.own_ctx", ("test_mul", "test_exp"),
         "A rule keeps what backward needs in its own `ctx`: two uses of one rule never share saved arrays."),
    Rule("topo.order", ("test_topological_order",),
         "For every DAG (random ones up to 3,000 nodes, chains of diamonds, a root with 50,000 children beside a "
         "100,000-node chain), each node reachable from `root` appears exactly once, `root` first and each node "
         "before every node it has an edge to; `None` edges are skipped."),
    Rule("topo.cost", ("test_topological_order",),
         "The walk reads each node's edges a bounded number of times (at most 50), whatever the number of paths, "
         "and does not recurse; it only reads the graph (no `next_functions` changes)."),
    Rule("backward.torch", ("test_backward",),
         "Over random programs (fan-out, shared leaves, constants on both sides, zeros, 0-d, empty and float32 "
         "outputs, explicit gradients as an array, a Tensor or a list), every leaf's `.grad` equals torch's "
         "(None where torch leaves None, and on every non-leaf), each node runs once, and every gradient handed "
         "between nodes has the graph's dtype."),
    Rule("backward.shapes", ("test_backward",),
         "A leaf as the output, rules that return `None` for an input, a chain of 100,000 nodes and a graph of "
         "3**40 paths all work as in torch (no recursion, each node run once), and the caller's gradient is left "
         "unchanged."),
    Rule("backward.errors", ("test_backward_errors",),
         "Where torch raises, backward raises `RuntimeError` before changing any `.grad`: without `gradient` for an "
         "output that is not a single element (an empty one too), the message names `gradient` and the shape; "
         "with a gradient of the wrong shape, both shapes; with nothing requiring grad, torch's error type."),
    Rule("count.counts", ("test_count_apply_calls",),
         "`count_apply_calls(output, engine)` returns a dict with one entry per node of the graph: how many times "
         "the engine ran it (0 for a node it never ran), for engines that run each node once, only the root, or "
         "once per path, with backward as the default engine; counting changes no gradient."),
    Rule("count.restores", ("test_count_apply_calls",),
         "Afterwards every node's `apply` is its own again, also when the engine raised (the error passes through "
         "unchanged), and the counts it returned do not change when the engine runs again."),
    Rule("structure.both_engines", ("test_graph_structure",),
         "`graph_structure` gives the same list for a program recorded by this engine and by torch: nodes numbered "
         "breadth-first from the root, `None` edges kept, torch's `::` prefixes dropped, `[]` for a leaf."),
)
