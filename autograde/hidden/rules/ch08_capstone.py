"""The graded rules of ch08_capstone (see autograde/hidden/rules/__init__.py)."""
from autograde.hidden.rules import Rule

EMBEDDING = ("test_embedding_forward", "test_embedding_backward")
GELU = ("test_gelu_values", "test_gelu_gradient")

RULES = (
    # Exercise 1: embedding
    Rule("embedding.torch", ("test_embedding_forward",),
         "For ids of any shape (0-d, size-1, empty, a transposed view, a nested list) and any integer dtype, the "
         "output equals torch's `F.embedding(ids, table)`: shape `ids.shape + (d,)`, the table's dtype, one node named "
         "`EmbeddingBackward0`; a computed table (not a leaf) too."),
    Rule("embedding.errors", ("test_embedding_forward",),
         "Float or boolean ids raise `TypeError`; an id below 0, equal to `table.shape[0]` or above it raises "
         "`IndexError` naming the valid range `[0, rows)`, as torch's `F.embedding` refuses it (the given "
         "`checked_ids` does both)."),
    Rule("embedding.gradient", ("test_embedding_backward",),
         "The table's gradient equals torch's: shape `(rows, d)`, the gradient's dtype, every occurrence of a "
         "repeated id added, zero rows for unused ids and for an empty batch; a table looked up twice in one graph "
         "gets the gradients of both lookups."),
    Rule("embedding.unchanged", EMBEDDING,
         "Neither pass changes the table, the ids or the gradient it receives."),
    # Exercise 2: GELU
    Rule("gelu.values", ("test_gelu_values",),
         "Values equal torch's exact `F.gelu` (`approximate='none'`) within 1e-13 in float64 and 2e-6 in float32, in "
         "the input's dtype, for inputs of many shapes (0-d, size-1, empty and non-contiguous ones), values from -30 "
         "to 30, -0.0 and tiny ones, and NaN and infinities (finite where torch's is finite)."),
    Rule("gelu.node", ("test_gelu_values",),
         "The output is recorded by one node named `GeluBackward0`."),
    Rule("gelu.gradient", ("test_gelu_gradient",),
         "The input's gradient equals torch's within 1e-12 (float64) and 5e-6 (float32), in the input's dtype, on "
         "the same inputs and upstream gradients holding inf, NaN and 0, and inside a larger graph "
         "(`gelu(x * w) * x`, gradients of `x` and `w`)."),
    Rule("gelu.unchanged", GELU,
         "Neither pass changes its input or the gradient it receives."),
    # Exercise 3: causal softmax and attention
    Rule("causal_softmax.torch", ("test_causal_softmax",),
         "For square scores `(..., T, T)` with 0 to 2 leading axes (one position and an empty batch included), float64 "
         "and float32, and spreads up to 800, the probabilities equal torch's softmax of the scores masked with "
         "`-inf` above the diagonal, in the scores' dtype, with no overflow."),
    Rule("causal_softmax.zeros", ("test_causal_softmax",),
         "Every probability above the diagonal (a key after its query) is exactly 0."),
    Rule("causal_softmax.gradient", ("test_causal_softmax",),
         "The scores' gradient equals torch's, and neither pass changes the scores or the gradient it receives."),
    Rule("attention.torch", ("test_attention",),
         "For `a` `(B, T, d)` (one row, one position), float64 and float32, and any `n_heads` that divides `d` (one "
         "head, `d_head = 1`), the output, `(B, T, d)` in `a`'s dtype, equals torch's attention with heads split as "
         "in `nn.MultiheadAttention`, for any `prefix`."),
    Rule("attention.gradients", ("test_attention",),
         "The gradients of `a` and of every weight and bias equal torch's, in their dtypes."),
    # Exercise 4: block, logits, loss_fn
    Rule("block.torch", ("test_block",),
         "For `h` `(B, T, d)` in float64 and float32 (one position, one to four heads, the last block's prefix), the "
         "output in `h`'s dtype and the gradients of `h` and of every parameter equal torch's pre-norm block."),
    Rule("model.torch", ("test_loss",),
         "`logits` `(B, T, vocab)` and `loss_fn` (0-d, in the weights' dtype) equal torch's model, and so does every "
         "parameter's gradient: tied and untied, 1 to 21 blocks, `T` from 1 to the context, float64 and float32, `x` "
         "an array or a nested list."),
    Rule("model.errors", ("test_loss",),
         "Ids `x` that are not 2-D, or have more positions than `pos_emb` has rows, make `logits` and `loss_fn` raise "
         "`ValueError` naming `x`'s shape and the number of positions (the given `checked_x` does it)."),
    Rule("model.unchanged", ("test_loss",),
         "`x` and `y` are left unchanged."),
    # Exercise 5: decayed and step
    Rule("decayed.names", ("test_decayed",),
         "`decayed(W)` returns the names (str) of exactly the 2-D parameters other than `tok_emb` and "
         "`pos_emb`, for a dict of arrays or of Tensors of the chapter's model, tied and untied, one to three blocks."),
    Rule("step.torch", ("test_train_step",),
         "Twenty float64 steps of the given `train` with your `step` follow torch's loop (`zero_grad`, `k` "
         "micro-batches each divided by `k`, one clip after them, `torch.optim.AdamW` with two groups) in four recipes "
         "(plain; four micro-batches with checkpointing; clipping at 0.05 without decay; untied without clipping): the "
         "loss at every step within 1e-6, and the final weights."),
    Rule("step.returns", ("test_train_step",),
         "`step` returns the batch's mean loss as a Python `float`."),
    # Exercise 6: scaled_step
    Rule("scaled.skips", ("test_scaled_skips",),
         "From a scale of `2**24` on one repeated batch (one micro-batch, and two with checkpointing), the first step "
         "that is not skipped is the one torch's `torch.amp.GradScaler` takes."),
    Rule("scaled.torch", ("test_scaled_step",),
         "Ten float16 autocast steps (clipped at 0.05, or four micro-batches, tied and untied) give torch's loss "
         "(`torch.autocast` and `GradScaler`) at every step within `rtol = 10u`."),
    Rule("scaled.master", ("test_scaled_step",),
         "The master weights stay float32."),
    # Exercise 7: one block's saved bytes (the whole model's formula is an ungraded exercise in Going further)
    Rule("block_bytes.meter", ("test_block_bytes",),
         "`block_saved_bytes` equals the meter around the course's block for unseen shapes (one position, one row, one "
         "to five heads, `d_ff` below, at and above `4d`) with itemsizes 2, 4 and 8."),
    Rule("block_bytes.torch", ("test_block_bytes",),
         "Its `T^2` term (read from `T`, `2T` and `3T`) equals the bytes torch's autograd saves in `(B, H, T, T)` "
         "tensors for attention written out as `softmax(q k^T / sqrt(d_head)) @ v` in float32 and float64: the "
         "probabilities, saved by the softmax and again by the product with `v`."),
    Rule("block_bytes.returns", ("test_block_bytes",),
         "`block_saved_bytes` returns an int (a number of bytes)."),
)
