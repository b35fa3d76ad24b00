"""course.graphs: the graph model, the drawing, the trace and the step-through, on both engines."""
from __future__ import annotations

import html

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.text import Annotation, Text  # noqa: E402

from course import graphs  # noqa: E402
from course.reference import ch02_tape  # noqa: E402
from course.reference.ch02_tape import Tensor  # noqa: E402

EXPECTED_NAMES = ["SumBackward0", "SubBackward0", "ExpBackward0", "AddBackward0", "MulBackward0",
                  "AccumulateGrad", "AccumulateGrad"]


def diamond(make, seed: int = 0):
    """((x*y + x).exp() - y).sum(): x and y are each used twice, so the graph is a DAG, not a tree."""
    rng = np.random.default_rng(seed)
    x, y = make(rng.normal(size=(3, 4))), make(rng.normal(size=(3, 4)))
    return ((x * y + x).exp() - y).sum(), (x, y)


def ours(array):
    return Tensor(array, requires_grad=True)


def theirs(array):
    return torch.tensor(array, requires_grad=True)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def tensor_saves(node: graphs.GraphNode) -> list[tuple]:
    """(shape, dtype, bytes) of what a node saved, sorted: the engines name and order saves differently."""
    return sorted((s.shape, s.dtype, s.nbytes) for s in node.saved if s.shape is not None)


def test_node_name_drops_torchs_namespace():
    out, (x, _) = diamond(theirs)
    accumulate = out.grad_fn.next_functions[0][0].next_functions[1][0]  # SubBackward0 -> y's sink
    assert accumulate.name() == "torch::autograd::AccumulateGrad"
    assert graphs.node_name(accumulate) == "AccumulateGrad"
    assert graphs.node_name(diamond(ours)[0].grad_fn) == "SumBackward0"


def test_graph_of_the_diamond_agrees_with_torch():
    mine, theirs_ = graphs.graph(diamond(ours)[0]), graphs.graph(diamond(theirs)[0])
    assert [n.name for n in mine.nodes] == EXPECTED_NAMES
    assert [n.name for n in theirs_.nodes] == EXPECTED_NAMES
    assert [n.edges for n in mine.nodes] == [n.edges for n in theirs_.nodes]
    assert mine.nodes[4].edges == (5, 6) and mine.nodes[1].edges == (2, 6), "y's sink is shared by Mul and Sub"
    for a, b in zip(mine.nodes, theirs_.nodes):
        assert tensor_saves(a) == tensor_saves(b), f"{a.name} saves {a.saved}, torch's saves {b.saved}"
        assert a.leaf_shape == b.leaf_shape
    assert tensor_saves(mine.nodes[4]) == [((3, 4), "float64", 96)] * 2
    assert mine.nodes[5].leaf_shape == (3, 4) and mine.nodes[0].leaf_shape is None
    assert mine.saved_bytes() == theirs_.saved_bytes() == 3 * 96


def test_graph_lists_plain_saved_values_by_where_they_live(monkeypatch):
    # chapter 2's own sum rule: importing a later chapter's reference re-registers "sum" in the shared OPS
    monkeypatch.setitem(ch02_tape.OPS, "sum", ch02_tape.Sum)
    mine, theirs_ = graphs.graph(diamond(ours)[0]), graphs.graph(diamond(theirs)[0])
    assert [(s.name, s.value) for s in mine.nodes[0].saved] == [("ctx.shape", (3, 4))]
    assert ("_saved_alpha", 1) in [(s.name, s.value) for s in theirs_.nodes[1].saved]
    assert [s.name for s in theirs_.nodes[4].saved] == ["_saved_other", "_saved_self"]
    assert [s.label() for s in mine.nodes[2].saved] == ["saved_tensors[0]: float64 (3, 4)"]


def test_graph_marks_an_input_that_needs_no_gradient():
    rng = np.random.default_rng(1)
    x, c = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    mine = graphs.graph((ours(x) * Tensor(c)).sum())
    theirs_ = graphs.graph((theirs(x) * torch.tensor(c)).sum())
    assert [n.edges for n in mine.nodes] == [n.edges for n in theirs_.nodes] == [(1,), (2, None), ()]


def test_graph_of_a_leaf_raises_a_clear_error():
    with pytest.raises(ValueError, match="no grad_fn"):
        graphs.graph(ours(np.ones(3)))


def test_trace_forward_steps_record_nodes_children_first_and_no_gradient():
    out, (x, y) = diamond(ours)
    steps = graphs.trace(out)
    forward = [s for s in steps if s.phase == "forward"]
    assert [s.current for s in forward] == [6, 5, 4, 3, 2, 1, 0]
    assert [len(s.shown) for s in forward] == list(range(1, 8))
    assert all(s.grads == {} and set(s.leaf_grads) == {5, 6} for s in forward)
    assert all(v is None for s in forward for v in s.leaf_grads.values())
    assert "apply" not in vars(out.grad_fn), "the wrapped apply must be removed after the trace"
    assert x.grad is not None and y.grad is not None, "trace runs backward once"


@pytest.mark.parametrize("make", [ours, theirs], ids=["course", "torch"])
def test_trace_backward_runs_each_node_once_after_its_parents_and_matches_torch(make):
    out, leaves = diamond(make)
    expected_out, (tx, ty) = diamond(theirs)
    expected_out.backward()
    steps = graphs.trace(out)
    backward = [s for s in steps if s.phase == "backward"]
    order = [s.current for s in backward]
    assert sorted(order) == list(range(7)), f"each node runs exactly once, got {order}"
    model = steps[0].graph
    for node in model.nodes:
        for child in node.edges:
            assert order.index(node.index) < order.index(child), f"{node.name} must run before its children"
    last = backward[-1]
    assert np.array_equal(last.grads[0], np.ones(())), "the root receives d(out)/d(out) = 1"
    np.testing.assert_allclose(last.leaf_grads[5], tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(last.leaf_grads[6], ty.grad.numpy(), rtol=1e-12)
    for leaf, expected in zip(leaves, (tx, ty)):
        np.testing.assert_allclose(np.asarray(leaf.grad.numpy()), expected.grad.numpy(), rtol=1e-12)


def test_trace_sees_the_same_gradients_at_every_node_in_both_engines():
    mine, theirs_ = graphs.trace(diamond(ours)[0])[-1], graphs.trace(diamond(theirs)[0])[-1]
    assert set(mine.grads) == set(theirs_.grads) == set(range(7))
    for i, grad in mine.grads.items():
        np.testing.assert_allclose(grad, theirs_.grads[i], rtol=1e-12, err_msg=f"node {i}")


def test_trace_with_an_explicit_gradient_and_an_earlier_grad_accumulates():
    rng = np.random.default_rng(2)
    a, b, g, earlier = (rng.normal(size=(2, 3)) for _ in range(4))
    x, tx = ours(a), theirs(a)
    x.grad, tx.grad = Tensor(earlier.copy()), torch.tensor(earlier.copy())
    steps = graphs.trace((x * Tensor(b)).exp(), gradient=g)
    torch_steps = graphs.trace((tx * torch.tensor(b)).exp(), gradient=g)
    np.testing.assert_allclose(steps[0].leaf_grads[2], earlier)
    np.testing.assert_allclose(steps[-1].leaf_grads[2], tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(torch_steps[-1].leaf_grads[2], tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("make", [ours, theirs], ids=["course", "torch"])
def test_draw_graph_has_one_label_per_node_and_one_arrow_per_edge(make, tmp_path):
    out, _ = diamond(make)
    model = graphs.graph(out)
    ax = graphs.draw_graph(out)
    labels = [t.get_text() for t in ax.texts if t.get_text()]
    assert sorted(labels) == sorted(n.label() for n in model.nodes)
    assert sorted(label.split("\n")[0] for label in labels) == sorted(EXPECTED_NAMES)
    assert any("float64 (3, 4)" in label for label in labels)
    arrows = [a for a in ax.texts if isinstance(a, Annotation) and isinstance(a.xycoords, Text)]
    assert len(arrows) == 8, "one arrow head per edge: 1 + 2 + 1 + 2 + 2"
    ax.figure.savefig(tmp_path / "graph.png")
    plain = graphs.draw_graph(out, show_saved=False)
    assert not any("saved" in t.get_text() or "_saved_" in t.get_text() for t in plain.texts)
    fig, given = plt.subplots()
    assert graphs.draw_graph(model, ax=given) is given


@pytest.mark.parametrize("make", [ours, theirs], ids=["course", "torch"])
def test_step_through_shows_no_gradient_first_and_the_leaves_gradients_last(make):
    import ipywidgets as widgets

    out, leaves = diamond(make)
    box = graphs.step_through(out)
    caption, controls, view = box.children
    engine = "PyTorch" if make is theirs else "this notebook's engine"
    assert caption.value == f"<b>{html.escape('Recorded by ' + engine)}</b>"
    previous, following, slider = controls.children
    assert isinstance(slider, widgets.IntSlider) and slider.max == 13
    first = view.value
    assert "Forward 1/7" in first and ".grad None" in first and ".grad = " not in first
    following.click()
    assert slider.value == 1 and "Forward 2/7" in view.value
    previous.click()
    previous.click()
    assert slider.value == 0 and view.value == first
    slider.value = slider.max
    last = view.value
    assert "Backward 7/7" in last and ".grad None" not in last and "<img" in last
    x_grad = np.asarray(leaves[0].grad.numpy() if hasattr(leaves[0].grad, "numpy") else leaves[0].grad)
    assert f".grad = [{x_grad.ravel()[0]:.4g}," in last


@pytest.mark.parametrize("make", [ours, theirs], ids=["course", "torch"])
def test_leaves_are_named_by_the_callers_variables_or_by_names(make):
    x, w = make(np.ones(3)), make(np.full(3, 2.0))
    loss = (x * w).sum()
    model = graphs.graph(loss)
    leaves = {n.leaf_name: n for n in model.nodes if n.leaf_shape is not None}
    assert set(leaves) == {"x", "w"} and leaves["x"].label().split("\n")[1] == "leaf x (3,)"
    assert leaves["w"].title() == "AccumulateGrad (w)"
    named = graphs.graph(loss, names={"weight": w})
    assert sorted(str(n.leaf_name) for n in named.nodes if n.leaf_shape is not None) == ["None", "weight"]
    anonymous = graphs.graph((make(np.ones(2)) * 3.0).sum())
    assert [n.label().split("\n")[1] for n in anonymous.nodes if n.leaf_shape is not None] == ["leaf (2,)"]
    steps = graphs.trace(loss)
    assert any("AccumulateGrad (x)" in step.title for step in steps)
    assert "x.grad = [2, 2, 2]" in graphs.step_html(steps[-1], picture=False)


def test_step_picture_text_is_readable_at_100_percent_zoom():
    """The step-through's PNG is shown at its own size: every line of text at least 12 pixels high (JupyterLab's
    code is 13), where draw_graph's pictures at matplotlib's 8 points and 80 dpi were 9."""
    x, w = ours(np.ones(3)), ours(np.full(3, 2.0))
    step = graphs.trace((x * w).exp().sum())[-1]
    figure = graphs.step_figure(step)
    FigureCanvasAgg(figure)
    renderer = figure.canvas.get_renderer()
    assert figure.dpi == graphs.STEP_DPI
    heights = [t.get_window_extent(renderer).height / (t.get_text().count("\n") + 1)
               for t in figure.axes[0].texts if t.get_text()]
    assert heights and min(heights) >= 12, f"text lines {min(heights):.1f} pixels high"
    assert '<img style="max-width:none"' in graphs.step_html(step)


def test_the_table_stands_beside_the_picture():
    x = ours(np.ones(2))
    html = graphs.step_html(graphs.trace((x * x).sum())[-1])
    row = html.index('display:flex')
    assert row < html.index("<img") < html.index("<table"), "picture then table, in one flex row"
    assert "flex-wrap:wrap" not in html and "overflow-x:auto" in html
    assert "saved for backward" not in html, "the picture's boxes show the saves; the table stays narrow"
    assert "saved for backward" in graphs.step_html(graphs.trace((ours(np.ones(2)) * 2.0).sum())[-1], picture=False)
