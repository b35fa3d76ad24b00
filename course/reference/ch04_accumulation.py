# STAND-IN: the engine draft of ch04_accumulation, until its source notebook lands
"""Reference engine for ch04_accumulation (draft): gradients add, graphs die.

Builds on the engine of chapters 2 and 3 (course.reference.ch02_tape and
ch03_vjp_rules) and extends it, never edits it:
- a live-bytes meter of the arrays that recorded nodes keep for backward;
- backward(tensor, gradient=None, retain_graph=False) that frees each node's
  saved arrays after use; a second backward through a freed node raises
  torch's error, naming retain_graph;
- zero_grad, micro-batch accumulation, SGD, AdamW, clip_grad_norm_ and the
  training loop (the training step moves here from chapter 3).

Extension points used (each an explicit, documented assignment):
  Context.saved_tensors  becomes a property that raises once backward freed the arrays
  Context.save_for_backward  keeps the arrays in a SavedArrays record
  Function.apply         chapter 2's apply, then the node's saved bytes go on the meter
  Node.__call__          the engine calls every node through it (chapter 5 adds hooks there)
  Tensor.backward        gains retain_graph

Graded pieces proposed (rising difficulty), with mistakes students really make;
each mistake is swapped in by drafts/test_ch04.py and shown to disagree with torch:
 1. SavedBytesMeter (add/release/reset_peak; live and peak)
    - peak not updated on add (peak stays 0); reset_peak sets peak to 0 instead of live;
      release also lowers peak; release forgotten (live only grows)
 2. backward(tensor, gradient, retain_graph) [with free_saved]
    - never frees (a second backward silently doubles .grad); frees even with retain_graph=True;
      frees every node before running any rule (first backward fails);
      no check for a non-scalar root without gradient; accepts a broadcastable gradient shape
 3. zero_grad + the training loop (train_step)
    - no zero_grad (the forgotten zero_grad: each step applies the sum of all gradients so far);
      zero_grad after backward (the step uses nothing); loss returned after the update (a second
      forward); clipping after the step
 4. accumulate_microbatches(params, loss_fn, X, y, k)
    - no division (k times the gradient); divides by k with unequal micro-batches (np.array_split);
      zero_grad inside the loop (only the last micro-batch survives); = instead of += (same effect)
 5. SGD(lr, momentum, dampening, weight_decay, nesterov)
    - momentum buffer initialised to zero (first step lr*(1-dampening)*g); weight decay added after
      momentum; dampening applied on the first step; nesterov uses buf instead of g + momentum*buf;
      weight decay written into p.grad (changes .grad in place)
 6. AdamW(lr, betas, eps, weight_decay, amsgrad)
    - L2 decay (added to the gradient: that is Adam, not AdamW); no bias correction;
      eps inside the square root; amsgrad keeps the max of the bias-corrected v; decay after the update
 7. clip_grad_norm_(params, max_norm, norm_type=2.0)
    - clipping per parameter; sum of per-parameter norms; no 1e-6 in the coefficient;
      coefficient not clamped to 1 (small gradients scaled up); returns the norm after clipping;
      inf norm computed as a 2-norm
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from course.reference.ch02_tape import (  # the engine of Chapter 2
    BackwardNode, Context, Function, Node, Tensor, gradient_edge, topological_order,
)
from course.reference.ch03_vjp_rules import cross_entropy  # noqa: F401  (chapter 3's rules are registered on import)

__all__ = [
    "SavedBytesMeter", "MEMORY", "saved_bytes", "max_saved_bytes", "reset_peak_saved_bytes", "SavedArrays",
    "SECOND_BACKWARD_MESSAGE", "count_saved", "free_saved", "root_gradient", "backward", "zero_grad",
    "Optimizer", "SGD", "AdamW", "clip_grad_norm_", "grad_norms", "train_step", "sgd_step", "train",
    "accumulate_microbatches", "init_mlp", "mlp", "eval_losses",
]


# ---------------------------------------------------------------------------------------------
# 1. The live-bytes meter
# ---------------------------------------------------------------------------------------------
class SavedBytesMeter:
    """Bytes held by the arrays recorded nodes saved for backward: live now, and the peak since reset_peak()."""

    # EXERCISE: meter
    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    def add(self, nbytes: int) -> None:
        """A node saved nbytes more: live grows, and peak follows it up."""
        self.live += nbytes
        self.peak = max(self.peak, self.live)

    def release(self, nbytes: int) -> None:
        """nbytes were freed (by backward, or because the graph was garbage-collected)."""
        self.live -= nbytes

    def reset_peak(self) -> None:
        """Start a new peak measurement from what is live now (torch.cuda.reset_peak_memory_stats)."""
        self.peak = self.live


MEMORY = SavedBytesMeter()
"""The engine's one meter. What it counts: for every node the engine records, the sum of
`array.nbytes` over the arrays its rule passed to ctx.save_for_backward, except arrays that are
the data of a parameter (a leaf that requires grad: the parameter holds it anyway). An array
saved twice counts twice (x * x saves x twice, as torch's saved_tensors_hooks sees two saves);
a view counts its own nbytes. Plain attributes on ctx (shapes, axes) are not counted. Bytes are
added when the node is recorded and released when backward frees the node (unless
retain_graph=True) or when the graph is garbage-collected."""


# GIVEN
def saved_bytes() -> int:
    """Bytes held by saved arrays now (the engine's torch.cuda.memory_allocated)."""
    return MEMORY.live


# GIVEN
def max_saved_bytes() -> int:
    """The most bytes held by saved arrays since the last reset (torch.cuda.max_memory_allocated)."""
    return MEMORY.peak


# GIVEN
def reset_peak_saved_bytes() -> None:
    """Start a new peak measurement (torch.cuda.reset_peak_memory_stats)."""
    MEMORY.reset_peak()


# ---------------------------------------------------------------------------------------------
# Saved arrays that backward can free
# ---------------------------------------------------------------------------------------------
SECOND_BACKWARD_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved tensors after calling backward.")
"""torch's message, word for word except that this engine has no autograd.grad."""


# GIVEN
class SavedArrays:
    """The arrays one node keeps for backward, the bytes they put on the meter, and whether they were freed."""

    def __init__(self, arrays: tuple[Any, ...]) -> None:
        self.arrays = arrays
        self.nbytes = 0          # set by count_saved when the node is recorded; 0 until then
        self.freed = False

    def free(self) -> None:
        """Drop the arrays and give their bytes back to the meter (a second call does nothing)."""
        if not self.freed:
            MEMORY.release(self.nbytes)
            self.nbytes = 0
            self.arrays = None
            self.freed = True


# GIVEN
def save_for_backward(self: Context, *arrays: Any) -> None:
    """Keep these arrays (None allowed) for the backward rule, in a record backward can free."""
    self._saved = SavedArrays(tuple(arrays))


# GIVEN
def get_saved_tensors(self: Context) -> tuple[Any, ...]:
    """The saved arrays; after backward freed them, torch's error (even if nothing was saved, as torch)."""
    if self._saved.freed:
        raise RuntimeError(SECOND_BACKWARD_MESSAGE)
    return self._saved.arrays


# GIVEN
def set_saved_tensors(self: Context, arrays: tuple[Any, ...]) -> None:
    """Chapter 2's Context.__init__ assigns ctx.saved_tensors = (): keep that working."""
    save_for_backward(self, *arrays)


# Explicit extension of chapter 2's Context: saved arrays now live in a SavedArrays record.
Context.save_for_backward = save_for_backward
Context.saved_tensors = property(get_saved_tensors, set_saved_tensors)


# GIVEN
def count_saved(ctx: Context, parameters: Sequence[np.ndarray] = ()) -> int:
    """Put a just-recorded node's saved bytes on the meter (parameters' arrays excluded); return them."""
    saved = ctx._saved
    nbytes = sum(a.nbytes for a in saved.arrays
                 if isinstance(a, np.ndarray) and not any(a is p for p in parameters))
    saved.nbytes = nbytes
    MEMORY.add(nbytes)
    if nbytes:
        weakref.finalize(ctx, saved.free)   # the graph died without backward: give the bytes back
    return nbytes


_apply_chapter2 = Function.apply.__func__


# GIVEN
def apply_and_count(cls: type[Function], *inputs: Tensor, **settings: Any) -> Tensor:
    """Chapter 2's Function.apply, then the recorded node's saved bytes go on the meter."""
    out = _apply_chapter2(cls, *inputs, **settings)
    if out.grad_fn is not None:
        parameters = [t.data for t in inputs if isinstance(t, Tensor) and t.is_leaf and t.requires_grad]
        count_saved(out.grad_fn.ctx, parameters)
    return out


Function.apply = classmethod(apply_and_count)


# GIVEN
def call_node(node: Node, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
    """Run one node's rule. backward calls every node through node(grad), so chapter 5 can add steps here."""
    return node.apply(grad)


Node.__call__ = call_node


# ---------------------------------------------------------------------------------------------
# 2. backward that frees the graph
# ---------------------------------------------------------------------------------------------
# EXERCISE: free_saved (part of the backward exercise)
def free_saved(node: Node) -> None:
    """Free what a node saved (AccumulateGrad saves nothing); its ctx attributes such as shapes stay."""
    if isinstance(node, BackwardNode):
        node.ctx._saved.free()


# GIVEN
def root_gradient(tensor: Tensor, gradient: Any = None) -> np.ndarray:
    """The gradient backward starts from, checked as torch checks it: a root that requires grad, the right shape."""
    if not tensor.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn: "
                           "no input of the computation had requires_grad=True (or it ran under no_grad)")
    if gradient is None:
        if tensor.data.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs: this tensor has shape "
                               f"{tensor.shape}; pass gradient=, an array of that shape")
        return np.ones_like(tensor.data)
    gradient = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {gradient.shape} and output[0] has "
                           f"a shape of {tensor.shape}: pass a gradient of exactly the output's shape")
    return gradient.astype(tensor.dtype, copy=False)   # torch casts the gradient to the output's dtype


# EXERCISE: backward
def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    """Backpropagate from tensor; unless retain_graph, free each node's saved arrays right after its rule ran."""
    grad = root_gradient(tensor, gradient)
    root, _ = gradient_edge(tensor)
    grads: dict[int, np.ndarray] = {id(root): grad}      # node -> sum of the gradients sent to it so far
    for node in topological_order(root):
        grad = grads.pop(id(node), None)
        if grad is None:
            continue                                     # not on a path from the root: not run, not freed
        child_grads = node(grad)
        if not retain_graph:
            free_saved(node)
        for (child, _), child_grad in zip(node.next_functions, child_grads):
            if child is None or child_grad is None:
                continue
            key = id(child)
            grads[key] = child_grad if key not in grads else grads[key] + child_grad


# GIVEN
def tensor_backward(self: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    """Backpropagate from this tensor (torch's Tensor.backward(gradient=None, retain_graph=None))."""
    backward(self, gradient, retain_graph=retain_graph)


Tensor.backward = tensor_backward


# ---------------------------------------------------------------------------------------------
# 3. zero_grad and optimisers
# ---------------------------------------------------------------------------------------------
# EXERCISE: zero_grad
def zero_grad(params: Iterable[Tensor]) -> None:
    """Forget every parameter's gradient: .grad = None (no memory until the next backward writes one)."""
    for p in params:
        p.grad = None


# GIVEN
class Optimizer:
    """What SGD and AdamW share: the parameter list, checked as torch checks it, per-parameter state, zero_grad."""

    def __init__(self, params: Iterable[Tensor]) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got Tensor: pass [tensor]")
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but parameter {i} is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor: optimise the leaf it was computed from")
            if not p.requires_grad:
                # torch accepts such a tensor and never updates it (its .grad stays None); the engine says so
                raise ValueError(f"parameter {i} does not require grad, so it would never be updated: "
                                 f"create it with requires_grad=True")
        self.state: dict[int, dict[str, Any]] = {}     # id(param) -> that parameter's state

    def zero_grad(self) -> None:
        """Set every parameter's .grad to None (torch's default set_to_none=True)."""
        zero_grad(self.params)

    def step(self) -> None:
        """Update every parameter that has a gradient (parameters whose .grad is None are skipped, as torch)."""
        for p in self.params:
            if p.grad is not None:
                self.update(p, p.grad.data, self.state.setdefault(id(p), {}))

    def update(self, p: Tensor, grad: np.ndarray, state: dict[str, Any]) -> None:
        """Change p.data in place, given its gradient and its state dict."""
        raise NotImplementedError


class SGD(Optimizer):
    """torch.optim.SGD: weight decay, momentum (first buffer = the gradient), dampening, nesterov."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params)
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov

    # EXERCISE: sgd
    def update(self, p: Tensor, grad: np.ndarray, state: dict[str, Any]) -> None:
        """One SGD step for p, in torch's order: decay into the gradient, then momentum, then the update."""
        if self.weight_decay != 0:
            grad = grad + self.weight_decay * p.data              # a new array: p.grad is never changed
        if self.momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.copy()     # first step: the gradient itself, no dampening
            else:
                buf *= self.momentum
                buf += (1 - self.dampening) * grad
            grad = grad + self.momentum * buf if self.nesterov else buf
        p.data -= self.lr * grad                                  # in place: p stays the same leaf


class AdamW(Optimizer):
    """torch.optim.AdamW: Adam with decoupled weight decay, bias correction, optional amsgrad."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params)
        self.lr, self.betas, self.eps, self.weight_decay, self.amsgrad = lr, betas, eps, weight_decay, amsgrad

    # EXERCISE: adamw
    def update(self, p: Tensor, grad: np.ndarray, state: dict[str, Any]) -> None:
        """One AdamW step for p, in torch's order (decay the weights, then the moments, then the bias-corrected step)."""
        beta1, beta2 = self.betas
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p.data)
            state["exp_avg_sq"] = np.zeros_like(p.data)
            if self.amsgrad:
                state["max_exp_avg_sq"] = np.zeros_like(p.data)
        state["step"] += 1
        step = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        p.data *= 1 - self.lr * self.weight_decay                 # decoupled: the decay never enters m or v
        m += (grad - m) * (1 - beta1)                             # torch: exp_avg.lerp_(grad, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
        if self.amsgrad:
            np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])   # the max of the raw v
            denom = np.sqrt(state["max_exp_avg_sq"]) / bias_correction2_sqrt + self.eps
        else:
            denom = np.sqrt(v) / bias_correction2_sqrt + self.eps
        p.data -= (self.lr / bias_correction1) * (m / denom)    # torch: param.addcdiv_(m, denom, value=-step_size)


# EXERCISE: clip_grad_norm
def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients together so their joint norm is at most max_norm; return the norm before clipping."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return Tensor(np.asarray(0.0, dtype=np.float32))
    if norm_type == math.inf:
        norms = [np.max(np.abs(g.data)) if g.data.size else np.zeros((), g.dtype) for g in grads]
        total = np.max(np.stack(norms))
    else:
        norms = [np.sum(np.abs(g.data) ** norm_type) ** (1.0 / norm_type) for g in grads]
        total = np.sum(np.stack(norms) ** norm_type) ** (1.0 / norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    coef = np.minimum(max_norm / (total + 1e-6), 1.0)             # torch always multiplies, by at most 1
    with np.errstate(invalid="ignore"):                           # inf * 0 = nan, as in torch: no warning
        for g in grads:
            g.data *= coef                                        # in place, as torch's g.mul_(coef)
    return Tensor(np.asarray(total))


# GIVEN
def grad_norms(named_params: dict[str, Tensor]) -> dict[str, float]:
    """The 2-norm of each parameter's gradient (None if it has none): a monitoring table."""
    return {name: (None if p.grad is None else float(np.sqrt(np.sum(p.grad.data.astype(np.float64) ** 2))))
            for name, p in named_params.items()}


# ---------------------------------------------------------------------------------------------
# 4. Training: one step, the loop, micro-batches
# ---------------------------------------------------------------------------------------------
# EXERCISE: train_step
def train_step(optimizer: Optimizer, compute_loss: Callable[[], Tensor], max_norm: float | None = None,
               zero_grads: bool = True) -> float:
    """zero_grad, forward, backward, (clip), step; return the loss before the update as a Python float."""
    if zero_grads:
        optimizer.zero_grad()
    loss = compute_loss()
    loss.backward()
    if max_norm is not None:
        clip_grad_norm_(optimizer.params, max_norm)
    optimizer.step()
    return float(loss.item())


# GIVEN
def sgd_step(params: Sequence[Tensor], compute_loss: Callable[[], Tensor], lr: float) -> float:
    """Chapter 3's training step, now one plain SGD step: fresh gradients, p -= lr * grad, the loss before it."""
    return train_step(SGD(params, lr=lr), compute_loss)


# GIVEN
def train(optimizer: Optimizer, compute_loss: Callable[[], Tensor], steps: int, max_norm: float | None = None,
          zero_grads: bool = True) -> list[float]:
    """The loss at each of `steps` training steps (zero_grads=False reproduces the forgotten zero_grad)."""
    return [train_step(optimizer, compute_loss, max_norm, zero_grads) for _ in range(steps)]


# EXERCISE: microbatches
def accumulate_microbatches(params: Sequence[Tensor], loss_fn: Callable[[Any, Any], Tensor], X: np.ndarray,
                            y: np.ndarray, k: int) -> float:
    """Full-batch gradients of a mean loss from k micro-batches: each mean loss weighted by its share n_i / N.

    With equal micro-batches the weight is 1/k ("mean loss divided by k"); np.array_split gives
    unequal ones when k does not divide N, and only n_i / N is then exact. Returns the full-batch loss.
    """
    zero_grad(params)
    total = 0.0
    n = len(X)
    for idx in np.array_split(np.arange(n), k):
        loss = loss_fn(X[idx], y[idx]) * (len(idx) / n)
        loss.backward()                                   # .grad accumulates across the k backward calls
        total += float(loss.item())
    return total


# GIVEN
def init_mlp(sizes: Sequence[int], seed: int = 0, dtype: Any = np.float64) -> list[np.ndarray]:
    """He-initialised weights and zero biases for an MLP with these layer sizes, as arrays [W1, b1, W2, b2, ...]."""
    rng = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        arrays.append((rng.normal(size=(fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(dtype))
        arrays.append(np.zeros(fan_out, dtype=dtype))
    return arrays


# GIVEN
def mlp(params: Sequence[Any], inputs: Any) -> Any:
    """relu(... relu(inputs @ W1 + b1) ...) @ Wn + bn, for this engine's Tensors or torch's."""
    h = inputs
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.relu()
    return h


# GIVEN
def eval_losses(params: Sequence[Tensor], batches: Iterable[tuple[Any, Any]], store_tensors: bool) -> list[Any]:
    """Evaluate the loss of each batch without backward; return loss tensors (store_tensors) or Python floats.

    Storing the tensors keeps every batch's graph, and its saved arrays, alive: watch saved_bytes().
    """
    losses = []
    for X, y in batches:
        loss = cross_entropy(mlp(params, Tensor(X)), y)
        losses.append(loss if store_tensors else loss.item())
    return losses
