"""Mutants and alternatives for ch08_capstone (loaded by autograde.authoring.catalogue.load).

Each mutant edits one answer cell of a perfect submission; `loses` lists exactly the test cells that must then
score 0, all of its own exercise (the grader runs each test cell on the course's solution of the other
exercises). Each alternative replaces a whole answer cell by another correct answer and must keep full marks.
"""
from autograde.authoring.catalogue import Alternative, ExampleStudent, Mutant

EF, EB = "test_embedding_forward", "test_embedding_backward"
GV, GG = "test_gelu_values", "test_gelu_gradient"
CS, AT = "test_causal_softmax", "test_attention"
BL, LO = "test_block", "test_loss"
DE, TS = "test_decayed", "test_train_step"
SK, SS = "test_scaled_skips", "test_scaled_step"
BB = "test_block_bytes"
DECAY = 'return [n for n, w in W.items() if len(w.shape) == 2 and n not in ("tok_emb", "pos_emb")]'
CLIP_ONCE = '''        total += float(part.item())
    if max_norm is not None:
        clip_grad_norm_(params, max_norm)
    optimizer.step()'''
CLIP_EACH = '''        total += float(part.item())
        if max_norm is not None:
            clip_grad_norm_(params, max_norm)
    optimizer.step()'''
RESET = '''    for p in params:
        p.grad = None
    total = 0.0
    for xm, ym in micro_splits(np.asarray(x), np.asarray(y), micro_batches):
'''

EMB_ADD = "np.add.at(grad_table, ids.reshape(-1), grad.reshape(-1, grad.shape[-1]))"
MASK = "future = np.triu(np.ones((T, T), dtype=bool), k=1)"
SPLIT = "return t.reshape(B, T, n_heads, d_head).transpose(1, 2)"
SCALE = "scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d_head))"

MUTANTS = [
    # -- Exercise 1: embedding ---------------------------------------------------------------------------------
    Mutant("emb_backward_assign", "the backward assigns with a fancy index: a repeated id keeps one contribution",
           "embedding", EMB_ADD, "grad_table[ids.reshape(-1)] = grad.reshape(-1, grad.shape[-1])", (EB,),
           visible=True),
    Mutant("emb_backward_plus_equals", "`+=` with a fancy index, which buffers: repeated ids still add only once",
           "embedding", EMB_ADD, "grad_table[ids.reshape(-1)] += grad.reshape(-1, grad.shape[-1])", (EB,),
           visible=True),
    Mutant("emb_unsigned_ids_refused", "only signed integers count as integers: uint8 ids raise TypeError",
           "embedding", 'if ids.dtype.kind not in "iu":', 'if ids.dtype.kind != "i":', (EF, EB), visible=False,
           hidden_because="the visible test's ids are signed (int32, int64, Python ints)"),
    Mutant("emb_negative_ids_wrap", "only ids too large are refused: a negative id silently picks a row from the end",
           "embedding", "(ids.min() < 0 or ids.max() >= rows)", "ids.max() >= rows", (EF,),
           visible=True),
    Mutant("emb_float_ids_accepted", "float ids are cast to int instead of refused", "embedding",
           'raise TypeError(f"embedding ids must be integers, got dtype {ids.dtype}")', "ids = ids.astype(np.int64)",
           (EF,), visible=True),
    Mutant("emb_flattens_ids", "the ids flattened in forward: (B, T) ids give (B*T, d) rows", "embedding",
           "return table[ids]", "return table[ids.reshape(-1)]", (EF, EB), visible=True),
    # -- Exercise 2: GELU ------------------------------------------------------------------------------------------
    Mutant("gelu_tanh_form", "GPT-2's tanh approximation in forward (not torch's default)", "gelu",
           "cdf = 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))",
           "cdf = 0.5 * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))", (GV, GG),
           visible=True),
    Mutant("gelu_erf_without_sqrt2", "erf(x) where erf(x / sqrt 2) belongs: the CDF of N(0, 1/2)", "gelu",
           "erf(x * (1.0 / math.sqrt(2.0)))", "erf(x)", (GV, GG), visible=True),
    Mutant("gelu_backward_cdf_only", "the derivative taken as Phi(x), forgetting the product rule's x phi(x)",
           "gelu", "return grad * (cdf + x * pdf)", "return grad * cdf", (GG,), visible=True),
    Mutant("gelu_pdf_constant", "the density normalised by sqrt(pi) instead of sqrt(2 pi)", "gelu",
           "(1.0 / math.sqrt(2.0 * math.pi))", "(1.0 / math.sqrt(math.pi))", (GG,), visible=True),
    Mutant("gelu_float64_out", "Phi computed from a float64 copy: a float32 input gives float64 out", "gelu",
           "cdf = 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))",
           "cdf = 0.5 * (1.0 + erf(x.astype(np.float64) * (1.0 / math.sqrt(2.0))))", (GV, GG), visible=True),
    # -- Exercise 3: causal softmax and attention ------------------------------------------------------------------
    Mutant("mask_diagonal_too", "mask off by one: a query cannot see its own key (the first row is all -inf: NaN)",
           "attention", MASK, "future = np.triu(np.ones((T, T), dtype=bool), k=0)", (CS, AT), visible=True),
    Mutant("mask_sees_next", "mask off by one the other way: each query sees one key of the future", "attention",
           MASK, "future = np.triu(np.ones((T, T), dtype=bool), k=2)", (CS, AT), visible=True),
    Mutant("mask_after_softmax", "the softmax over all keys, then the future zeroed: rows no longer sum to 1",
           "attention", "masked = np.where(future, -np.inf, scores)",
           "masked = scores", (CS, AT), visible=True),
    Mutant("softmax_unstable", "no maximum subtracted: large scores overflow to inf and NaN", "attention",
           "e = np.exp(masked - np.max(masked, axis=-1, keepdims=True))", "e = np.exp(masked)", (CS,),
           visible=True),
    Mutant("softmax_backward_no_probs", "the softmax's backward subtracts the plain sum of the gradient",
           "attention", "return probs * (grad - np.sum(grad * probs, axis=-1, keepdims=True))",
           "return probs * (grad - np.sum(grad, axis=-1, keepdims=True))", (CS, AT), visible=True),
    Mutant("scale_by_d", "the scores divided by d_head instead of its square root", "attention", SCALE,
           "scores = (q @ k.transpose(-2, -1)) * (1.0 / d_head)", (AT,), visible=True),
    Mutant("scale_by_sqrt_d_model", "the scores divided by sqrt(d), the model's width, not the head's", "attention",
           SCALE, "scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))", (AT,), visible=True),
    Mutant("heads_split_without_transpose", "heads split by reshaping straight to (B, H, T, d_head): positions "
           "mixed into heads", "attention", SPLIT, "return t.reshape(B, n_heads, T, d_head)", (AT,), visible=True),
    Mutant("heads_merged_without_transpose", "heads merged by reshaping (B, H, T, d_head) straight to (B, T, d)",
           "attention", "out = out.transpose(1, 2).reshape(B, T, d)", "out = out.reshape(B, T, d)", (AT,),
           visible=True),
    # -- Exercise 4: block, logits, loss -----------------------------------------------------------------------
    Mutant("block_post_norm", "post-norm: the attention branch reads h, and the sum is normalised", "model",
           '''    a = layer_norm(h, W[prefix + "ln1.weight"], W[prefix + "ln1.bias"], eps)
    h = h + attention(a, W, prefix, n_heads)''',
           '''    h = layer_norm(h + attention(h, W, prefix, n_heads), W[prefix + "ln1.weight"], W[prefix + "ln1.bias"], eps)''',
           (BL, LO), visible=True),
    Mutant("block_mlp_no_residual", "the MLP's output replaces the stream instead of adding to it", "model",
           'return h + (m @ W[prefix + "mlp.proj.weight"] + W[prefix + "mlp.proj.bias"])',
           'return m @ W[prefix + "mlp.proj.weight"] + W[prefix + "mlp.proj.bias"]', (BL, LO), visible=True),
    Mutant("block_ln1_twice", "the first norm's scale and shift used for the second norm too", "model",
           'm = layer_norm(h, W[prefix + "ln2.weight"], W[prefix + "ln2.bias"], eps)',
           'm = layer_norm(h, W[prefix + "ln1.weight"], W[prefix + "ln1.bias"], eps)', (BL, LO), visible=True),
    Mutant("positions_not_added", "the position embeddings are left out: the model sees a bag of characters",
           "model", 'h = embedding(W["tok_emb"], ids) + W["pos_emb"][:T]', 'h = embedding(W["tok_emb"], ids)', (LO,),
           visible=True),
    Mutant("positions_from_the_end", "the last T position embeddings instead of the first T", "model",
           'W["pos_emb"][:T]', 'W["pos_emb"][-T:]', (LO,), visible=True),
    Mutant("no_final_norm", "the final layer norm ln_f left out", "model",
           '    h = layer_norm(h, W["ln_f.weight"], W["ln_f.bias"])\n', "", (LO,), visible=True),
    Mutant("untied_head_ignored", "always the tied head, even when W has its own head.weight", "model",
           'head = W["head.weight"] if "head.weight" in W else W["tok_emb"].T', 'head = W["tok_emb"].T', (LO,),
           visible=True),
    Mutant("blocks_sorted_as_strings", "runs the blocks in the order of their names sorted as strings: from 11 "
           "blocks on, blocks.10. runs after blocks.1., before blocks.2.", "model",
           "    for i in range(n_layers_of(W)):\n        h = run_block(h, W, i, n_heads, checkpoint)",
           '    for p in sorted({n[:n.index(".", 7) + 1] for n in W if n.startswith("blocks.")}):  # blocks.0., ...\n'
           "        h = run_block(h, W, int(p[7:-1]), n_heads, checkpoint)", (LO,), visible=True),
    # -- Exercise 5: decayed and step ---------------------------------------------------------------------------
    Mutant("decay_everything", "weight decay on every parameter: norms, biases and embeddings shrink too",
           "training", DECAY, "return list(W)", (DE, TS), visible=True),
    Mutant("decay_norms_and_biases", "every parameter but the embeddings: the layer norms' scales and shifts and "
           "the biases decay", "training", DECAY, 'return [n for n in W if n not in ("tok_emb", "pos_emb")]',
           (DE, TS), visible=True),
    Mutant("decay_embeddings", "every matrix, the embedding tables included", "training", DECAY,
           "return [n for n, w in W.items() if len(w.shape) == 2]", (DE, TS), visible=True),
    Mutant("accumulate_without_dividing", "micro-batch losses not divided by k: gradients k times too large",
           "training", "part = loss_fn(W, xm, ym, n_heads, checkpoint) / micro_batches",
           "part = loss_fn(W, xm, ym, n_heads, checkpoint)", (TS,), visible=True),
    Mutant("clip_each_micro_batch", "clipping inside the loop, after each micro-batch's backward", "training",
           CLIP_ONCE, CLIP_EACH, (TS,), visible=True),
    Mutant("grads_not_reset", "gradients never set to None: each step adds to the last one's", "training",
           RESET + "        part = loss_fn(", RESET.replace("    for p in params:\n        p.grad = None\n", "")
           + "        part = loss_fn(", (TS,), visible=True),
    Mutant("loss_of_last_micro_batch", "the returned loss is the last micro-batch's, not the sum", "training",
           CLIP_ONCE, CLIP_ONCE.replace("total +=", "total ="), (TS,), visible=True),
    # -- Exercise 6: scaled_step -----------------------------------------------------------------------------
    Mutant("clip_before_unscale", "no unscale_ before clipping: the scaled gradients are clipped, then the scaler "
           "divides them by the scale in step()", "scaled_step",
           "    scaler.unscale_(optimizer)                           # true gradients before clipping\n", "",
           (SS,), visible=True),
    Mutant("scaler_not_updated", "scaler.update() forgotten: the scale never backs off after an overflow",
           "scaled_step", "    scaler.update()\n", "", (SK, SS), visible=True),
    Mutant("optimizer_step_despite_inf", "optimizer.step() instead of scaler.step(): steps taken with inf gradients",
           "scaled_step", "    scaler.step(optimizer)                               # skipped if any gradient is inf or NaN",
           "    optimizer.step()", (SK,), visible=True),
    Mutant("scaled_without_dividing", "micro-batch losses not divided by k under autocast", "scaled_step",
           "loss = loss_fn(W, xm, ym, n_heads, checkpoint) / micro_batches\n        scaler.scale",
           "loss = loss_fn(W, xm, ym, n_heads, checkpoint)\n        scaler.scale", (SK, SS), visible=True),
    Mutant("scaled_loss_returned", "the returned loss is the scaled one", "scaled_step",
           "        scaler.scale(loss).backward()\n        total += float(loss.item())",
           "        loss = scaler.scale(loss)\n        loss.backward()\n        total += float(loss.item())", (SK, SS),
           visible=True),
    # -- Exercise 7: one block's saved bytes --------------------------------------------------------------------------------
    Mutant("mem_probs_once", "the probabilities counted once: the input of probs @ v taken for free, being the same "
           "array as the softmax's output", "memory", "2 * B * n_heads * T * T", "B * n_heads * T * T",
           (BB,), visible=True),
    Mutant("mem_probs_linear_in_T", "the probabilities counted as T numbers a query, not T * T a head",
           "memory", "2 * B * n_heads * T * T", "2 * B * n_heads * T", (BB,), visible=True),
    Mutant("mem_probs_one_head", "the probabilities of one head only", "memory", "2 * B * n_heads * T * T",
           "2 * B * T * T", (BB,), visible=True),
    Mutant("mem_mlp_width_d", "the MLP's arrays counted at width d instead of d_ff", "memory",
           "2 * N * d_ff + N * d_ff", "2 * N * d + N * d", (BB,), visible=True),
    Mutant("mem_qkv_input_once", "the input of the q, k and v products counted once, being one array: the meter "
           "counts each save", "memory", "+ 3 * N * d + 2 * N * d + 1", "+ N * d + 2 * N * d + 1", (BB,), visible=True),
    Mutant("mem_norm_std_forgotten", "the layer norms' 1/std left out (only the (N, d) arrays counted)", "memory",
           "2 * (2 * N * d + N)", "2 * (2 * N * d)", (BB,), visible=True),
    Mutant("mem_scale_constant_forgotten", "the 0-d constant 1/sqrt(d_head) left out as too small to matter",
           "memory", "2 * N * d + 1 +", "2 * N * d +", (BB,), visible=True),
    # -- concept checks ----------------------------------------------------------------------------------------
    Mutant("concept_scatter_wrong", "a wrong answer to the concept check on a repeated token", "concept_scatter",
           'answer_scatter = "c"', 'answer_scatter = "a"', ("test_concept_scatter",), visible=False,
           hidden_because="the expected letter is only in the hidden test"),
    Mutant("concept_mask_wrong", "a wrong answer to the concept check on where the mask goes", "concept_mask",
           'answer_mask = "a"', 'answer_mask = "b"', ("test_concept_mask",), visible=False,
           hidden_because="the expected letter is only in the hidden test"),
    Mutant("concept_decay_wrong", "a wrong answer to the concept check on decay on a norm", "concept_decay",
           'answer_decay = "b"', 'answer_decay = "a"', ("test_concept_decay",), visible=False,
           hidden_because="the expected letter is only in the hidden test"),
    Mutant("concept_activations_wrong", "a wrong answer to the concept check on a popular estimate of activation "
           "memory", "concept_activations", 'answer_activations = "a"', 'answer_activations = "b"',
           ("test_concept_activations",), visible=False, hidden_because="the expected letter is only in the hidden test"),
]

ALTERNATIVES = [
    Alternative("embedding_one_hot", "the backward as a one-hot matrix product; the checks written differently",
                "embedding", '''class Embedding(Function):
    name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, table, ids):
        ctx.rows, ctx.ids = table.shape[0], ids
        return np.take(table, ids, axis=0)

    @staticmethod
    def backward(ctx, grad):
        flat = ctx.ids.reshape(-1)
        one_hot = (flat[:, None] == np.arange(ctx.rows)[None, :]).astype(grad.dtype)   # (N, rows)
        return one_hot.T @ grad.reshape(len(flat), grad.shape[-1])


def embedding(table, ids):
    ids = np.array(ids)
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError("ids must be integers")
    if np.any(ids < 0) or np.any(ids >= table.shape[0]):
        raise IndexError(f"an id is out of range: ids must lie in [0, {table.shape[0]})")
    return Embedding.apply(table, ids=ids.astype(np.int64))
'''),
    Alternative("embedding_loop", "the backward adds row by row in a Python loop", "embedding", '''class Embedding(Function):
    name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, table, ids):
        ctx.rows = len(table)
        ctx.save_for_backward(ids)
        return table[ids]

    @staticmethod
    def backward(ctx, grad):
        (ids,) = ctx.saved_tensors
        d = grad.shape[-1]
        out = np.zeros((ctx.rows, d), dtype=grad.dtype)
        for i, g in zip(ids.ravel(), grad.reshape(-1, d)):
            out[i] += g
        return out


def embedding(table, ids):
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"integer ids needed, got {ids.dtype}")
    if ids.size and not (0 <= ids.min() and ids.max() < table.shape[0]):
        raise IndexError(f"id out of range [0, {len(table.data)})")
    return Embedding.apply(table, ids=ids.astype(np.int64))
'''),
    Alternative("gelu_recompute", "saves only x; backward recomputes Phi; constants written out", "gelu", '''class GELU(Function):
    name = "GeluBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        Phi = 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
        phi = np.exp(-x * x / 2.0) / math.sqrt(2.0 * math.pi)
        return grad * (Phi + x * phi)


def gelu(x):
    return GELU.apply(x)
'''),
    Alternative("attention_additive_mask", "the mask added as a matrix of 0 and -inf with np.tril; the scale applied "
                "to q first; heads split with one helper for all three", "attention", '''class CausalSoftmax(Function):
    name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx, scores):
        T = scores.shape[-1]
        allowed = np.tril(np.ones((T, T), dtype=bool))
        bias = np.where(allowed, 0.0, -np.inf).astype(scores.dtype)
        z = scores + bias
        z = z - z.max(axis=-1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        dot = (grad * p).sum(axis=-1, keepdims=True)
        return p * grad - p * dot


def causal_softmax(scores):
    return CausalSoftmax.apply(scores)


def attention(a, W, prefix, n_heads):
    B, T, d = a.shape
    hd = d // n_heads
    proj = lambda n: a @ W[prefix + "attn." + n + ".weight"] + W[prefix + "attn." + n + ".bias"]
    heads = lambda t: t.reshape(B, T, n_heads, hd).transpose(1, 2)
    q = heads(proj("q")) * (1.0 / math.sqrt(hd))
    k, v = heads(proj("k")), heads(proj("v"))
    y = causal_softmax(q @ k.transpose(2, 3)) @ v
    y = y.transpose(1, 2).reshape(B, T, n_heads * hd)
    return y @ W[prefix + "attn.proj.weight"] + W[prefix + "attn.proj.bias"]
'''),
    Alternative("model_helpers", "the block's two branches as helper functions; positions gathered with "
                "np.arange; the loss reshaped with explicit sizes", "model", '''def block(h, W, prefix, n_heads, eps=1e-5):
    p = lambda n: W[prefix + n]

    def mlp(a):
        return gelu(a @ p("mlp.fc.weight") + p("mlp.fc.bias")) @ p("mlp.proj.weight") + p("mlp.proj.bias")

    h = h + attention(layer_norm(h, p("ln1.weight"), p("ln1.bias"), eps), W, prefix, n_heads)
    h = h + mlp(layer_norm(h, p("ln2.weight"), p("ln2.bias"), eps))
    return h


def logits(W, x, n_heads, checkpoint=False):
    x = np.array(x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (batch, T) with T <= {len(W['pos_emb'].data)}, got shape {x.shape}")
    B, T = x.shape
    if T > len(W["pos_emb"].data):
        raise ValueError(f"sequence longer than the context of {len(W['pos_emb'].data)} positions: x has shape {x.shape}")
    h = embedding(W["tok_emb"], x) + W["pos_emb"][np.arange(T)]
    for i in range(n_layers_of(W)):
        h = run_block(h, W, i, n_heads, checkpoint=checkpoint)
    h = layer_norm(h, W["ln_f.weight"], W["ln_f.bias"])
    if "head.weight" in W:
        return h @ W["head.weight"]
    return h @ W["tok_emb"].transpose(0, 1)


def loss_fn(W, x, y, n_heads, checkpoint=False):
    out = logits(W, x, n_heads, checkpoint)
    B, T, V = out.shape
    return cross_entropy(out.reshape(B * T, V), np.asarray(y).reshape(B * T).astype(np.int64))
'''),
]

ALTERNATIVES += [
    Alternative("training_loop_helpers", "decayed by what a name says; the micro-batches' losses collected in a "
                "list and summed", "training", '''def decayed(W):
    linear = ("attn.", "mlp.", "head.")
    return [n for n in W if n.endswith(".weight") and any(part in n for part in linear)]


def step(W, optimizer, x, y, n_heads, max_norm, micro_batches, checkpoint=False):
    for t in W.values():
        t.grad = None
    losses = []
    for xm, ym in micro_splits(np.asarray(x), np.asarray(y), micro_batches):
        part = loss_fn(W, xm, ym, n_heads, checkpoint=checkpoint) * (1.0 / micro_batches)
        part.backward()
        losses.append(part.item())
    if max_norm is not None:
        clip_grad_norm_(list(W.values()), max_norm)
    optimizer.step()
    return float(sum(losses))
'''),
    Alternative("scaled_step_by_step", "the parameters listed by name; the loss summed before scaling; the scaled "
                "loss held in its own variable", "scaled_step", '''def scaled_step(W, optimizer, scaler, x, y, n_heads, max_norm, micro_batches, dtype, checkpoint=False):
    params = [W[n] for n in W]
    for p in params:
        p.grad = None
    total = 0.0
    k = micro_batches
    for xm, ym in micro_splits(np.asarray(x), np.asarray(y), k):
        with ch6.autocast(dtype=dtype):
            loss = loss_fn(W, xm, ym, n_heads, checkpoint) / k
        total = total + float(loss.item())
        scaled = scaler.scale(loss)
        scaled.backward()
    scaler.unscale_(optimizer)
    if max_norm is not None:
        clip_grad_norm_(params, max_norm)
    scaler.step(optimizer)
    scaler.update()
    return total
'''),
]

ALTERNATIVES += [
    Alternative("memory_term_table", "each block's arrays as a table of (count, numbers) pairs", "memory", '''def block_saved_bytes(B, T, d, n_heads, d_ff, itemsize):
    N = B * T
    table = [(2, N * d), (2, N), (2, N * d),            # ln1, ln2: x-hat, 1/std, x-hat again
             (3, N * d), (2, N * d), (1, 1),            # the q, k, v input; q and k^T; the constant
             (2, B * n_heads * T * T), (1, N * d),      # the probabilities twice; v
             (2, N * d), (2, N * d_ff), (1, N * d_ff)]  # proj's and fc's inputs; GELU; mlp.proj's input
    return itemsize * sum(count * size for count, size in table)
'''),
    Alternative("memory_dict_of_terms", "named terms in a dict, summed", "memory",
                '''def block_saved_bytes(B, T, d, n_heads, d_ff, itemsize):
    rows = B * T
    terms = {"layer norms": 2 * (rows * d + rows + rows * d), "inputs of q, k, v, proj, fc": 5 * rows * d,
             "q, k^T and v": 3 * rows * d, "scale": 1, "probabilities": 2 * B * n_heads * T ** 2, "mlp": 3 * rows * d_ff}
    return int(sum(terms.values())) * itemsize
'''),
]

EXAMPLE_STUDENTS = [
    ExampleStudent("alice", "solution"),
    ExampleStudent("bob", "blank"),
    ExampleStudent("carol", "mutants", ("emb_backward_plus_equals", "mask_after_softmax", "clip_before_unscale")),
    # every answer cell changed: an alternative where the catalogue has one, else a mutant (Catalogue.sample)
    ExampleStudent("erin", "sample"),
]
