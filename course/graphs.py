"""Pictures of a recorded graph: its data model, a drawing, and a forward/backward step-through.

Everything here works on the course engine's tensors and on torch tensors alike
(told apart by what they have, never by importing torch): a torch node has
register_prehook and keeps its saved values in attributes named _saved_*; a
course node has saved_tensors (ndarrays) and a ctx with plain attributes.

This module imports no reference engine: the student edition of Chapter 2 ships
it without that chapter's reference (whose topological_order is an exercise).
Its own walk (_nodes) orders a picture's tens of nodes recursively, which is
not an answer to that exercise (it asks for a walk with no recursion limit).
"""
from __future__ import annotations

import base64
import html
import io
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np


# -- the data model -------------------------------------------------------------
@dataclass
class Saved:
    """One value a node keeps for backward: a tensor (shape, dtype, bytes) or a plain value."""

    name: str  # where it lives: '_saved_self' (torch), 'saved_tensors[0]' or 'ctx.shape' (course engine)
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    nbytes: int | None = None
    value: Any = None

    def label(self) -> str:
        """A short line for a picture: '_saved_self: float64 (3, 4)' or 'ctx.shape = (3, 4)'."""
        if self.shape is None:
            return f"{self.name} = {self.value}"
        return f"{self.name}: {self.dtype} {self.shape}"


@dataclass
class GraphNode:
    """One node: its name, its edges (child indices, None where an input needs no gradient), its saves."""

    index: int
    name: str
    edges: tuple[int | None, ...]
    saved: tuple[Saved, ...]
    leaf_shape: tuple[int, ...] | None = None  # set for AccumulateGrad only
    leaf_name: str | None = None  # the leaf tensor's name (x, w), when it has one

    def title(self) -> str:
        """The node's name, with its leaf's name for an AccumulateGrad: 'AccumulateGrad (x)'."""
        return f"{self.name} ({self.leaf_name})" if self.leaf_name else self.name

    def leaf(self) -> str:
        """'leaf x (3, 4)', or 'leaf (3, 4)' for a leaf without a name."""
        return " ".join(["leaf", *([self.leaf_name] if self.leaf_name else []), str(self.leaf_shape)])

    def label(self, show_saved: bool = True) -> str:
        """The node's name, then one line per saved value (or the leaf, named, and its shape)."""
        lines = [self.name]
        if self.leaf_shape is not None:
            lines.append(self.leaf())
        if show_saved:
            lines += [s.label() for s in self.saved]
        return "\n".join(lines)


@dataclass
class Graph:
    """The recorded graph, nodes in topological order (root first, index 0)."""

    nodes: list[GraphNode]

    def saved_bytes(self) -> int:
        """Total bytes of the tensors the graph keeps alive for backward."""
        return sum(s.nbytes or 0 for n in self.nodes for s in n.saved)


def node_name(node: Any) -> str:
    """The node's name, torch's or ours, without a C++ namespace ('AccumulateGrad', 'MulBackward0')."""
    return node.name().split("::")[-1]


def _is_torch_node(node: Any) -> bool:
    return hasattr(node, "register_prehook")


def _to_numpy(value: Any) -> np.ndarray:
    """A copy of a gradient as an ndarray (torch tensor, course Tensor or ndarray)."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor (the course's Tensor has detach too)
        return value.detach().cpu().numpy().copy()
    return np.array(getattr(value, "data", value), copy=True)


def _describe(name: str, value: Any) -> list[Saved]:
    """Saved entries for one saved value: an ndarray, a torch tensor, a list of tensors, or a plain value."""
    if isinstance(value, np.ndarray):
        return [Saved(name, tuple(value.shape), str(value.dtype), int(value.nbytes))]
    if hasattr(value, "element_size"):  # a torch tensor
        dtype = str(value.dtype).replace("torch.", "")
        return [Saved(name, tuple(value.shape), dtype, value.numel() * value.element_size())]
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, "element_size") for v in value):
        return [s for k, v in enumerate(value) for s in _describe(f"{name}[{k}]", v)]
    return [Saved(name, value=value if isinstance(value, (int, float, bool, str, tuple)) else repr(value)[:40])]


ENGINE_CTX_ATTRIBUTES = {"saved_tensors", "needs_input_grad"}
"""What the engine, not the rule, puts on ctx (chapter 5 adds needs_input_grad): not a saved value."""


def _saved_of(node: Any) -> tuple[Saved, ...]:
    """What a node keeps for backward, in a fixed order."""
    entries: list[Saved] = []
    if _is_torch_node(node):
        for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
            try:
                value = getattr(node, attr)
            except RuntimeError:  # torch frees saved tensors during backward
                value = "<freed by backward>"
            entries += _describe(attr, value)
        return tuple(entries)
    for k, array in enumerate(node.saved_tensors):
        entries += _describe(f"saved_tensors[{k}]", array)
    ctx = getattr(node, "ctx", None)
    for attr in sorted(vars(ctx)) if ctx is not None else []:
        if attr not in ENGINE_CTX_ATTRIBUTES and not attr.startswith("_"):
            entries += _describe(f"ctx.{attr}", getattr(ctx, attr))
    return tuple(entries)


def _root(output: Any) -> Any:
    if getattr(output, "grad_fn", None) is None:
        raise ValueError("this tensor has no grad_fn, so no graph was recorded: draw the output of an "
                         "operation on tensors with requires_grad=True")
    return output.grad_fn


def _nodes(root: Any) -> list[Any]:
    """Every node reachable from root (course or torch: only next_functions is read), each before the nodes it
    has edges to: by decreasing height (the longest path down to a leaf), ties in the order first met."""
    height: dict[int, int] = {}
    met: dict[int, tuple[int, Any]] = {}  # id -> (rank in the order first met, node)

    def visit(node: Any) -> int:
        if id(node) not in height:
            met[id(node)] = (len(met), node)
            below = [visit(child) for child, _ in node.next_functions if child is not None]
            height[id(node)] = 1 + max(below, default=-1)
        return height[id(node)]

    try:
        visit(root)
    except RecursionError:
        raise ValueError(f"this graph is too deep to draw ({len(met)} nodes or more): draw a smaller one") from None
    return [node for _, node in sorted(met.values(), key=lambda entry: (-height[id(entry[1])], entry[0]))]


def _caller_variables() -> dict[str, Any]:
    """The variables of the code that called into this module: a notebook cell's globals, a function's locals
    (names starting with _ left out: IPython keeps past outputs in _, __, _7...)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return {} if frame is None else {k: v for k, v in frame.f_locals.items() if not k.startswith("_")}


def _leaf_names(nodes: list[Any], names: Mapping[str, Any] | None) -> dict[int, str]:
    """id(leaf tensor) -> its name, from names ({"x": x, "w": w}) or else the caller's variables; the first
    name that refers to the very same tensor wins."""
    leaves = {id(n.variable) for n in nodes if getattr(n, "variable", None) is not None}
    found: dict[int, str] = {}
    for name, value in (_caller_variables() if names is None else names).items():
        if id(value) in leaves:
            found.setdefault(id(value), name)
    return found


def _model(nodes: list[Any], names: Mapping[str, Any] | None = None) -> Graph:
    index = {id(n): i for i, n in enumerate(nodes)}
    leaf_names = _leaf_names(nodes, names)
    model = []
    for i, node in enumerate(nodes):
        edges = tuple(None if child is None else index[id(child)] for child, _ in node.next_functions)
        leaf = getattr(node, "variable", None)
        model.append(GraphNode(i, node_name(node), edges, _saved_of(node),
                               tuple(leaf.shape) if leaf is not None else None,
                               leaf_names.get(id(leaf)) if leaf is not None else None))
    return Graph(model)


def graph(output: Any, names: Mapping[str, Any] | None = None) -> Graph:
    """The graph recorded behind output (a course Tensor or a torch tensor), as plain data.

    Each leaf is named by the variable that holds it where graph() is called (x, w), or by names
    ({"x": x, "w": w}) when given.
    """
    return _model(_nodes(_root(output)), names)


# -- the drawing ----------------------------------------------------------------
_STYLES = {  # node state in a step -> (face colour, edge colour, alpha)
    "recorded": ("#eef3fb", "#4a6fa5", 1.0),
    "pending": ("#ffffff", "#bbbbbb", 0.25),
    "current": ("#ffd98a", "#c07a00", 1.0),
    "ran": ("#d6f0d2", "#3c8c3c", 1.0),
}


@dataclass(frozen=True)
class _Look:
    """Sizes of a drawing: the layout is in inches, the text in points, so a box's width follows its longest line."""

    font: float  # points
    layer: float  # inches between layers
    gap: float = 0.3  # inches between two boxes of a layer
    bend: float = 0.25  # inches for an edge crossing a layer


_DRAWING = _Look(font=8, layer=1.2)
"""draw_graph: pictures in a notebook's figures (two graphs side by side in a 13-inch figure)."""
_STEP = _Look(font=10, layer=0.85)
"""The step-through's picture, shown at STEP_DPI: 10-point text is 13 pixels high, the notebook's own size."""
STEP_DPI = 96  # CSS pixels per inch: the PNG is shown at its own size at 100% zoom


def _box_width(node: GraphNode, show_saved: bool, look: _Look = _DRAWING) -> float:
    return max(len(line) for line in node.label(show_saved).split("\n")) * look.font * 0.62 / 72 + 0.25


def _layout(model: Graph, show_saved: bool,
            look: _Look = _DRAWING) -> tuple[dict[int, tuple[float, float]], list[tuple]]:
    """Node centres (in inches) and each edge's route (parent, child, bend points).

    A node's layer is its longest path from the root, so every node sits below
    all its users and the leaves' AccumulateGrad nodes end each path. An edge
    that skips layers bends through a narrow slot of its own in each layer it
    crosses, so it does not cut through that layer's boxes. Each layer is ordered by the
    mean x of what connects to it from above (which avoids most crossings),
    and each item is placed as near that x as its neighbours allow.
    """
    depth = [0] * len(model.nodes)
    for node in model.nodes:  # topological order: every parent is placed before its children
        for child in node.edges:
            if child is not None:
                depth[child] = max(depth[child], depth[node.index] + 1)
    edges = list(dict.fromkeys((n.index, c) for n in model.nodes for c in n.edges if c is not None))
    layers: list[list[tuple]] = [[] for _ in range(max(depth) + 1)]
    above: dict[tuple, list[tuple]] = {}
    width: dict[tuple, float] = {}
    for node in model.nodes:
        layers[depth[node.index]].append(("node", node.index))
        above[("node", node.index)] = []
        width[("node", node.index)] = _box_width(node, show_saved, look)
    for k, (parent, child) in enumerate(edges):
        last = ("node", parent)
        for layer in range(depth[parent] + 1, depth[child]):
            bend = ("bend", k, layer)
            layers[layer].append(bend)
            above[bend], width[bend] = [last], look.bend
            last = bend
        above[("node", child)].append(last)
    x: dict[tuple, float] = {}
    for members in layers:
        wanted = {m: float(np.mean([x[a] for a in above[m]])) if above[m] else 0.0 for m in members}
        members.sort(key=lambda m: (wanted[m], m))
        gaps = [(width[a] + width[b]) / 2 + look.gap for a, b in zip(members, members[1:])]
        pushed_right = [wanted[members[0]]]  # each item at its wanted x, or pushed right by its left neighbour
        for m, gap in zip(members[1:], gaps):
            pushed_right.append(max(wanted[m], pushed_right[-1] + gap))
        pushed_left = [wanted[members[-1]]]  # the same from the right; the mean of the two keeps every gap
        for m, gap in zip(members[-2::-1], gaps[::-1]):
            pushed_left.append(min(wanted[m], pushed_left[-1] - gap))
        x.update({m: (r + l) / 2 for m, r, l in zip(members, pushed_right, pushed_left[::-1])})
    pos = {n.index: (x[("node", n.index)], -depth[n.index] * look.layer) for n in model.nodes}
    routes = [(p, c, [(x[("bend", k, layer)], -layer * look.layer) for layer in range(depth[p] + 1, depth[c])])
              for k, (p, c) in enumerate(edges)]
    return pos, routes


def _extent(model: Graph, show_saved: bool, look: _Look = _DRAWING) -> tuple[float, float, float, float]:
    """(left, right, bottom, top) in inches: the drawing and a margin around it."""
    pos, routes = _layout(model, show_saved, look)
    half = {n.index: _box_width(n, show_saved, look) / 2 + 0.1 for n in model.nodes}
    bends = [point for _, _, route in routes for point in route]
    lefts = [pos[i][0] - half[i] for i in pos] + [x - look.bend for x, _ in bends]
    rights = [pos[i][0] + half[i] for i in pos] + [x + look.bend for x, _ in bends]
    ys = [y for _, y in [*pos.values(), *bends]]
    return min(lefts), max(rights), min(ys) - look.layer / 2, max(ys) + look.layer / 2


def _draw(model: Graph, ax: Any, show_saved: bool = True, states: dict[int, str] | None = None,
          look: _Look = _DRAWING) -> Any:
    """Draw model on ax: one box per node, arrows along next_functions (the way gradients flow)."""
    pos, routes = _layout(model, show_saved, look)
    states = states or {}
    boxes = {}
    for node in model.nodes:
        face, edge, alpha = _STYLES[states.get(node.index, "recorded")]
        boxes[node.index] = ax.text(*pos[node.index], node.label(show_saved), ha="center", va="center",
                                    fontsize=look.font, family="monospace", alpha=alpha, zorder=3,
                                    bbox=dict(boxstyle="round,pad=0.4", fc=face, ec=edge, alpha=alpha))
    for parent, child, bends in routes:
        alpha = min(_STYLES[states.get(i, "recorded")][2] for i in (parent, child))
        colour = dict(color="#555555", alpha=alpha)
        # from the bottom of the parent's box (0.5, 0), through the bends, to the top of the child's (0.5, 1)
        if bends:
            ax.annotate("", xy=bends[0], xytext=(0.5, 0), textcoords=boxes[parent],
                        arrowprops=dict(arrowstyle="-", shrinkA=6, shrinkB=0, **colour))
            ax.plot(*zip(*bends), lw=1, zorder=1, **colour)
            ax.annotate("", xy=(0.5, 1), xycoords=boxes[child], xytext=bends[-1], textcoords="data",
                        arrowprops=dict(arrowstyle="-|>", shrinkA=0, shrinkB=6, **colour))
        else:
            ax.annotate("", xy=(0.5, 1), xycoords=boxes[child], xytext=(0.5, 0), textcoords=boxes[parent],
                        arrowprops=dict(arrowstyle="-|>", shrinkA=6, shrinkB=6, **colour))
    left, right, bottom, top = _extent(model, show_saved, look)
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)
    ax.axis("off")
    return ax


def _figure_size(model: Graph, show_saved: bool, look: _Look = _DRAWING) -> tuple[float, float]:
    """The figure size (inches) at which one data unit is one inch, so boxes fit their slots."""
    left, right, bottom, top = _extent(model, show_saved, look)
    return right - left, top - bottom


def draw_graph(output: Any, ax: Any = None, show_saved: bool = True, names: Mapping[str, Any] | None = None) -> Any:
    """Draw the graph behind output (or a Graph): root at the top, arrows down to the leaves' AccumulateGrad.

    Leaves are named as in graph(). Without ax, a figure is made at the drawing's natural size; a given ax
    should be about that size too (boxes are in points, positions in data units).
    """
    model = output if isinstance(output, Graph) else graph(output, names)
    if ax is None:
        import matplotlib.pyplot as plt
        ax = plt.figure(figsize=_figure_size(model, show_saved)).add_axes((0, 0, 1, 1))
    return _draw(model, ax, show_saved)


# -- the step-through -------------------------------------------------------------
@dataclass
class Step:
    """One step of the step-through: which nodes exist (forward) or have run (backward), and the gradients."""

    phase: str  # "forward" or "backward"
    title: str
    graph: Graph
    current: int  # the node just recorded (forward) or just run (backward)
    shown: tuple[int, ...]  # forward: the nodes recorded so far; backward: the nodes run so far, in order
    grads: dict[int, np.ndarray] = field(default_factory=dict)  # node -> the gradient that arrived at it
    leaf_grads: dict[int, np.ndarray | None] = field(default_factory=dict)  # AccumulateGrad node -> leaf .grad


def _torch_backward(output: Any, nodes: list[Any], gradient: Any) -> list[tuple[int, np.ndarray]]:
    """Run torch's backward with a prehook on every node; return (node index, gradient arriving) in run order."""
    calls: list[tuple[int, np.ndarray]] = []

    def prehook_for(i: int) -> Any:
        def prehook(grad_outputs: tuple[Any, ...]) -> None:
            grad = grad_outputs[0]  # torch passes None for an output that received no gradient
            calls.append((i, np.zeros(0) if grad is None else _to_numpy(grad)))
        return prehook

    handles = [node.register_prehook(prehook_for(i)) for i, node in enumerate(nodes)]
    if gradient is not None and not hasattr(gradient, "detach"):
        gradient = output.new_tensor(np.asarray(gradient))
    try:
        output.backward(gradient)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _course_backward(output: Any, nodes: list[Any], gradient: Any) -> list[tuple[int, np.ndarray]]:
    """Run the course engine's backward and watch it: a profile function sees each node's apply(grad) start.
    Return (node index, gradient arriving) in run order; the engine and its nodes are left untouched."""
    index = {id(node): i for i, node in enumerate(nodes)}
    calls: list[tuple[int, np.ndarray]] = []
    running: dict[int, int] = {}  # node index -> apply frames open (a subclass may call super().apply)

    def watch(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if code.co_name != "apply" or event not in ("call", "return") or code.co_argcount < 2:
            return
        i = index.get(id(frame.f_locals.get("self")))
        if i is None:
            return
        if event == "call":
            if not running.get(i):
                calls.append((i, _to_numpy(frame.f_locals[code.co_varnames[1]])))
            running[i] = running.get(i, 0) + 1
        else:
            running[i] -= 1

    before = sys.getprofile()
    sys.setprofile(watch)
    try:
        output.backward(gradient)
    finally:
        sys.setprofile(before)
    return calls


def trace(output: Any, gradient: Any = None, names: Mapping[str, Any] | None = None) -> list[Step]:
    """The forward steps (nodes in recording order), then the steps of one real backward pass.

    This runs output.backward(gradient) once: afterwards the leaves' .grad are
    filled as after a normal backward (and torch has freed the saved tensors).
    Leaves are named as in graph().
    """
    nodes = _nodes(_root(output))
    model = _model(nodes, names)
    leaves = {i: node.variable for i, node in enumerate(nodes) if getattr(node, "variable", None) is not None}
    before = {i: None if leaf.grad is None else _to_numpy(leaf.grad) for i, leaf in leaves.items()}
    run = _torch_backward if _is_torch_node(nodes[0]) else _course_backward
    calls = run(output, nodes, gradient)
    steps = []
    recorded = list(range(len(nodes)))[::-1]  # children are recorded before the nodes that use them
    for k, i in enumerate(recorded, 1):
        steps.append(Step("forward", f"Forward {k}/{len(recorded)}: {model.nodes[i].title()} is recorded",
                          model, i, tuple(recorded[:k]), {}, dict(before)))
    grads: dict[int, np.ndarray] = {}
    leaf_grads = dict(before)
    for k, (i, grad) in enumerate(calls, 1):
        grads[i] = grad
        if i in leaves:
            leaf_grads[i] = grad if before[i] is None else before[i] + grad
        steps.append(Step("backward", f"Backward {k}/{len(calls)}: {model.nodes[i].title()} runs",
                          model, i, tuple(j for j, _ in calls[:k]), dict(grads), dict(leaf_grads)))
    return steps


def _values(array: np.ndarray) -> str:
    """The first few values: '[1, 0.5, 2, 1, ...]'."""
    flat = np.asarray(array).ravel()
    return "[" + ", ".join(f"{v:.4g}" for v in flat[:4]) + (", ...]" if flat.size > 4 else "]")


def _fmt(array: np.ndarray) -> str:
    """Shape and the first few values: '(3, 4) [1, 0.5, 2, 1, ...]'."""
    return f"{tuple(np.shape(array))} {_values(array)}"


def step_figure(step: Step) -> Any:
    """The step's drawing as a matplotlib Figure (made without pyplot, so nothing else is displayed)."""
    from matplotlib.figure import Figure
    if step.phase == "forward":
        states = {n.index: ("recorded" if n.index in step.shown else "pending") for n in step.graph.nodes}
    else:
        states = {n.index: ("ran" if n.index in step.shown else "recorded") for n in step.graph.nodes}
    states[step.current] = "current"
    figure = Figure(figsize=_figure_size(step.graph, True, _STEP), dpi=STEP_DPI)
    _draw(step.graph, figure.add_axes((0, 0, 1, 1)), True, states, _STEP)
    return figure


def _picture(step: Step) -> str:
    """The step's drawing as an <img> tag, a PNG at STEP_DPI shown at its own size."""
    buffer = io.BytesIO()
    step_figure(step).savefig(buffer, format="png", dpi=STEP_DPI, bbox_inches="tight")
    return f'<img style="max-width:none" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}"/>'


_CELL = "padding:2px 8px;text-align:left;vertical-align:top;white-space:nowrap"


def step_html(step: Step, picture: bool = True) -> str:
    """One step as HTML: a title, then the drawing (optional) with, beside it, a sentence and a table of the
    nodes and their gradients (beside, not below: the page does not grow, so Next stays under the pointer).
    The table lists what each node saved only when there is no drawing (the drawing's boxes show it)."""
    if step.phase == "forward":
        note = ("Forward only records: each node keeps what its backward rule will need. "
                "No gradient exists yet, and every leaf's .grad is None.")
        rows = step.shown
    else:
        note = ("Backward runs each node once, with the sum of the gradients sent by its parents; "
                "an AccumulateGrad adds what arrives into its leaf's .grad.")
        rows = tuple(n.index for n in step.graph.nodes)[::-1]
    headers = ("node", *(() if picture else ("saved for backward",)), "gradient arrived", "leaf's .grad")
    cells = ["<tr>" + "".join(f'<th style="{_CELL}">{h}</th>' for h in headers) + "</tr>"]
    for i in rows:
        node = step.graph.nodes[i]
        row = [html.escape(node.title())]
        if not picture:
            row.append("<br>".join(html.escape(s.label()) for s in node.saved) or "nothing")
        row.append(html.escape(_fmt(step.grads[i]) if i in step.grads else "not yet"))
        leaf = ""
        if node.leaf_shape is not None:
            value = step.leaf_grads.get(i)
            leaf = f"{node.leaf_name or 'leaf'}.grad " + ("None" if value is None else f"= {_values(value)}")
        row.append(html.escape(leaf))
        style = ' style="background:#ffd98a"' if i == step.current else ""
        cells.append(f"<tr{style}>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in row) + "</tr>")
    table = (f'<table style="font-family:monospace;font-size:12px;border-collapse:collapse">{"".join(cells)}'
             "</table>")
    image = f'<div style="flex:none">{_picture(step)}</div>' if picture else ""
    return (f"<div><b>{html.escape(step.title)}</b>"
            '<div style="display:flex;align-items:flex-start;gap:20px">'
            f'{image}<div style="min-width:0;overflow-x:auto"><p style="margin-top:0;max-width:34em">{note}</p>'
            f"{table}</div></div></div>")


def caption_of(output: Any) -> str:
    """Which engine recorded the graph behind output, in words."""
    return "Recorded by PyTorch" if _is_torch_node(_root(output)) else "Recorded by this notebook's engine"


def step_through(output: Any, gradient: Any = None, picture: bool = True, names: Mapping[str, Any] | None = None,
                 caption: str | None = None) -> Any:
    """A widget over trace(output, gradient): a caption (which engine, or yours), Previous/Next buttons, a step
    slider, and the step as HTML. Leaves are named as in graph()."""
    import ipywidgets as widgets
    title = widgets.HTML(f"<b>{html.escape(caption or caption_of(output))}</b>")
    steps = trace(output, gradient, names)
    slider = widgets.IntSlider(value=0, min=0, max=len(steps) - 1, description="step")
    previous = widgets.Button(description="Previous")
    following = widgets.Button(description="Next")
    view = widgets.HTML()
    rendered: dict[int, str] = {}

    def show(_: Any = None) -> None:
        if slider.value not in rendered:
            rendered[slider.value] = step_html(steps[slider.value], picture)
        view.value = rendered[slider.value]

    def move(delta: int) -> None:
        slider.value = min(max(slider.value + delta, slider.min), slider.max)

    previous.on_click(lambda _: move(-1))
    following.on_click(lambda _: move(+1))
    slider.observe(show, names="value")
    show()
    return widgets.VBox([title, widgets.HBox([previous, following, slider]), view])
