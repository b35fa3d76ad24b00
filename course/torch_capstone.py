"""Chapter 8's model and training loop written with torch's own building blocks (scaled_dot_product_attention,
F.layer_norm, F.gelu, F.linear, F.cross_entropy), as the chapter's torch side trains it: the other side of
`make bench-capstone` on the CPU and of course.gpu_engine on a GPU."""
from __future__ import annotations

import numpy as np


def torch_loss(W: dict, x: np.ndarray, y: np.ndarray, n_heads: int):
    """Chapter 8's model written with torch's fused building blocks; W holds torch tensors (on any one device)."""
    import torch
    import torch.nn.functional as F

    T = x.shape[1]
    device = W["tok_emb"].device
    h = W["tok_emb"][torch.as_tensor(x, device=device)] + W["pos_emb"][:T]

    def ln(v, w, b):
        return F.layer_norm(v, v.shape[-1:], w, b, eps=1e-5)

    blocks = sorted({int(n.split(".")[1]) for n in W if n.startswith("blocks.")})
    for i in blocks:
        p = f"blocks.{i}."
        a = ln(h, W[p + "ln1.weight"], W[p + "ln1.bias"])
        q, k, v = (F.linear(a, W[p + f"attn.{n}.weight"].T, W[p + f"attn.{n}.bias"]).unflatten(-1, (n_heads, -1))
                   .transpose(1, 2) for n in "qkv")
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(-2)
        h = h + F.linear(o, W[p + "attn.proj.weight"].T, W[p + "attn.proj.bias"])
        m = F.gelu(F.linear(ln(h, W[p + "ln2.weight"], W[p + "ln2.bias"]), W[p + "mlp.fc.weight"].T,
                            W[p + "mlp.fc.bias"]))
        h = h + F.linear(m, W[p + "mlp.proj.weight"].T, W[p + "mlp.proj.bias"])
    out = ln(h, W["ln_f.weight"], W["ln_f.bias"]) @ (W["head.weight"] if "head.weight" in W else W["tok_emb"].T)
    return F.cross_entropy(out.flatten(0, 1), torch.as_tensor(y, device=device).flatten())


def torch_train(weights: dict[str, np.ndarray], config, batches, steps: int, device: str = "cpu") -> list[float]:
    """torch's loop with chapter 8's recipe (the engine's defaults): AdamW in two groups, clipping at 1.0."""
    import torch

    from course.model import decay_names

    W = {n: torch.tensor(np.array(w), device=device, requires_grad=True) for n, w in weights.items()}
    decayed = set(decay_names(config))
    opt = torch.optim.AdamW([{"params": [W[n] for n in W if n in decayed], "weight_decay": 0.1},
                             {"params": [W[n] for n in W if n not in decayed], "weight_decay": 0.0}],
                            lr=5e-3, betas=(0.9, 0.99), eps=1e-8)
    losses, it = [], iter(batches)
    for _ in range(steps):
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        loss = torch_loss(W, x, y, config.n_heads)
        torch.autograd.backward(loss)
        torch.nn.utils.clip_grad_norm_(list(W.values()), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    return losses
