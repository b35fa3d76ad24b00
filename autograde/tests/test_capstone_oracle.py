"""The capstone's oracle (autograde/hidden/ch08_capstone.py) against torch's own modules: the plain-op model is
proven independently before the chapter's hidden tests trust it to judge students."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograde.hidden import ch08_capstone as cap
from course import text

pytestmark = pytest.mark.usefixtures("one_torch_thread")


SMALL = cap.Config(vocab=30, block=7, d_model=16, n_heads=4, n_layers=2, d_ff=24, tied=True)


def _rand(*shape, seed=0):
    return torch.tensor(np.random.default_rng(seed).normal(size=shape), requires_grad=True)


def _encoder_layer(W: dict, i: int, config: cap.Config) -> nn.TransformerEncoderLayer:
    """torch's pre-norm encoder layer holding block i's weights (nn.Linear keeps the transposes of ours)."""
    d, p = config.d_model, f"blocks.{i}."
    layer = nn.TransformerEncoderLayer(d, config.n_heads, dim_feedforward=config.d_ff, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=True,
                                       layer_norm_eps=config.eps, dtype=torch.float64)
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([W[p + f"attn.{n}.weight"].T for n in "qkv"]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([W[p + f"attn.{n}.bias"] for n in "qkv"]))
        layer.self_attn.out_proj.weight.copy_(W[p + "attn.proj.weight"].T)
        layer.self_attn.out_proj.bias.copy_(W[p + "attn.proj.bias"])
        layer.linear1.weight.copy_(W[p + "mlp.fc.weight"].T)
        layer.linear1.bias.copy_(W[p + "mlp.fc.bias"])
        layer.linear2.weight.copy_(W[p + "mlp.proj.weight"].T)
        layer.linear2.bias.copy_(W[p + "mlp.proj.bias"])
        for ours, theirs in (("ln1", layer.norm1), ("ln2", layer.norm2)):
            theirs.weight.copy_(W[p + ours + ".weight"])
            theirs.bias.copy_(W[p + ours + ".bias"])
    return layer


def test_block_matches_torchs_pre_norm_encoder_layer_forward_and_backward():
    W = cap.to_torch(cap.init_weights(SMALL, seed=1, perturb_norms=True, std=0.3))
    layer = _encoder_layer(W, 0, SMALL)
    h1, h2 = _rand(3, 7, 16, seed=2), _rand(3, 7, 16, seed=2)
    mask = nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.float64)
    ours = cap.block(h1, W, 0, SMALL)
    theirs = layer(h2, src_mask=mask, is_causal=True)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    g = torch.tensor(np.random.default_rng(3).normal(size=(3, 7, 16)))
    ours.backward(g)
    theirs.backward(g)
    torch.testing.assert_close(h1.grad, h2.grad, rtol=1e-10, atol=1e-12)
    p = "blocks.0."
    torch.testing.assert_close(torch.cat([W[p + f"attn.{n}.weight"].grad.T for n in "qkv"]),
                               layer.self_attn.in_proj_weight.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(W[p + "mlp.fc.weight"].grad.T, layer.linear1.weight.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(W[p + "ln1.weight"].grad, layer.norm1.weight.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(W[p + "ln2.bias"].grad, layer.norm2.bias.grad, rtol=1e-10, atol=1e-12)


def test_the_causal_mask_matters_in_the_block():
    # The same layer without the mask gives another output: the comparison above can see a missing mask.
    W = cap.to_torch(cap.init_weights(SMALL, seed=1, perturb_norms=True, std=0.3))
    h = _rand(3, 7, 16, seed=2)
    unmasked = _encoder_layer(W, 0, SMALL)(h)
    assert not torch.allclose(cap.block(h, W, 0, SMALL), unmasked, atol=1e-6)
    # ... but the last position sees every key either way, so it agrees there
    torch.testing.assert_close(cap.block(h, W, 0, SMALL)[:, -1], unmasked[:, -1], rtol=1e-12, atol=1e-12)


def test_attention_matches_scaled_dot_product_attention():
    q1, k1, v1 = (_rand(2, 3, 5, 4, seed=s) for s in (1, 2, 3))
    q2, k2, v2 = (_rand(2, 3, 5, 4, seed=s) for s in (1, 2, 3))
    ours = cap.causal_attention(q1, k1, v1)
    theirs = F.scaled_dot_product_attention(q2, k2, v2, is_causal=True)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    g = torch.tensor(np.random.default_rng(4).normal(size=(2, 3, 5, 4)))
    ours.backward(g)
    theirs.backward(g)
    for a, b in ((q1, q2), (k1, k2), (v1, v2)):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12)


def test_layer_norm_and_gelu_match_torch():
    x, w, b = _rand(4, 6, seed=1), _rand(6, seed=2), _rand(6, seed=3)
    torch.testing.assert_close(cap.layer_norm(x, w, b, 1e-5), F.layer_norm(x, (6,), w, b, 1e-5), rtol=1e-12, atol=1e-12)
    z = torch.linspace(-8, 8, 401, dtype=torch.float64)
    torch.testing.assert_close(cap.gelu(z), nn.GELU()(z), rtol=1e-14, atol=1e-15)
    assert not torch.allclose(cap.gelu(z), F.gelu(z, approximate="tanh"), atol=1e-6)   # erf, not tanh


class ModuleLM(nn.Module):
    """The same language model made of torch's modules, loaded from the same arrays."""

    def __init__(self, weights: dict, config: cap.Config) -> None:
        super().__init__()
        W = cap.to_torch(weights, requires_grad=False)
        self.config = config
        self.tok = nn.Embedding(config.vocab, config.d_model, dtype=torch.float64)
        self.pos = nn.Embedding(config.block, config.d_model, dtype=torch.float64)
        self.layers = nn.ModuleList([_encoder_layer(W, i, config) for i in range(config.n_layers)])
        self.norm = nn.LayerNorm(config.d_model, eps=config.eps, dtype=torch.float64)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False, dtype=torch.float64)
        with torch.no_grad():
            self.tok.weight.copy_(W["tok_emb"])
            self.pos.weight.copy_(W["pos_emb"])
            self.norm.weight.copy_(W["ln_f.weight"])
            self.norm.bias.copy_(W["ln_f.bias"])
            if config.tied:
                self.head.weight = self.tok.weight                  # one Parameter, two uses
            else:
                self.head.weight.copy_(W["head.weight"].T)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(T))
        mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
        for layer in self.layers:
            h = layer(h, src_mask=mask, is_causal=True)
        return F.cross_entropy(self.head(self.norm(h)).reshape(-1, self.config.vocab), y.reshape(-1))


@pytest.mark.parametrize("tied", [True, False])
def test_whole_model_matches_a_model_of_torch_modules(tied):
    config = cap.Config(vocab=30, block=7, d_model=16, n_heads=2, n_layers=2, d_ff=24, tied=tied)
    weights = cap.init_weights(config, seed=5, perturb_norms=True, std=0.2)
    x, y = next(text.batches(text.encode(text.corpus(2000)), 6, 4, seed=1))   # T = 6 < block: positions sliced
    W = cap.to_torch(weights)
    ours = cap.loss_fn(W, x, y, config)
    module = ModuleLM(weights, config)
    theirs = module(torch.as_tensor(x), torch.as_tensor(y))
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    ours.backward()
    theirs.backward()
    torch.testing.assert_close(W["tok_emb"].grad, module.tok.weight.grad, rtol=1e-10, atol=1e-12)   # both paths if tied
    torch.testing.assert_close(W["pos_emb"].grad, module.pos.weight.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(W["ln_f.weight"].grad, module.norm.weight.grad, rtol=1e-10, atol=1e-12)
    if not tied:
        torch.testing.assert_close(W["head.weight"].grad.T, module.head.weight.grad, rtol=1e-10, atol=1e-12)
    assert set(W) == set(cap.param_names(config)) and ("head.weight" in W) == (not tied)


def test_initial_loss_is_that_of_a_uniform_guess():
    # Untied, with N(0, 0.02) weights, each logit is a sum of d_model products of a unit-variance normalised
    # feature and an independent N(0, 0.02) head weight: variance s2 = 0.02**2 * d_model. For small independent
    # logits, E[loss] = log(vocab) + s2 / 2 (second order in the logits): derived, not run.
    config = cap.Config(tied=False)
    weights = cap.init_weights(config, seed=0)
    x, y = next(text.batches(text.encode(text.corpus(20_000)), config.block, 16, seed=0))
    loss = cap.loss_fn(cap.to_torch(weights, requires_grad=False), x, y, config).item()
    s2 = 0.02 ** 2 * config.d_model
    assert abs(loss - (math.log(config.vocab) + s2 / 2)) < 0.01, (loss, math.log(config.vocab) + s2 / 2)


def test_weight_decay_falls_on_linear_matrices_only():
    config = cap.Config(vocab=30, block=7, d_model=16, n_heads=2, n_layers=2, d_ff=24, tied=False)
    expected = {n for n, w in cap.init_weights(config).items() if w.ndim == 2 and n not in ("tok_emb", "pos_emb")}
    assert set(cap.decay_names(config)) == expected and len(expected) == 2 * 6 + 1
    # One AdamW step with and without decay: the moments are the same (decoupled decay), so the weights differ by
    # exactly lr * wd * w0 on the decayed parameters and not at all on the others.
    weights = cap.init_weights(config, seed=2, perturb_norms=True)
    data = text.encode(text.corpus(5000))
    lr, wd = 1e-2, 0.5
    _, decayed = cap.train(weights, config, text.batches(data, 7, 4), 1, cap.TrainSettings(lr=lr, weight_decay=wd))
    _, plain = cap.train(weights, config, text.batches(data, 7, 4), 1, cap.TrainSettings(lr=lr, weight_decay=0.0))
    for name, w0 in weights.items():
        want = -lr * wd * w0 if name in expected else np.zeros_like(w0)
        np.testing.assert_allclose(decayed[name] - plain[name], want, rtol=1e-9, atol=1e-15, err_msg=name)


def test_micro_batches_divided_by_k_give_the_full_batch_training():
    weights = cap.init_weights(SMALL, seed=3)
    data = text.encode(text.corpus(5000))
    one, w_one = cap.train(weights, SMALL, text.batches(data, 7, 8), 4, cap.TrainSettings())
    four, w_four = cap.train(weights, SMALL, text.batches(data, 7, 8), 4, cap.TrainSettings(micro_batches=4))
    np.testing.assert_allclose(four, one, rtol=1e-12)
    for name in weights:
        np.testing.assert_allclose(w_four[name], w_one[name], rtol=1e-9, atol=1e-12, err_msg=name)
    with pytest.raises(ValueError, match="divides the batch size 8"):
        cap.train(weights, SMALL, text.batches(data, 7, 8), 1, cap.TrainSettings(micro_batches=3))


def test_checkpointing_each_block_changes_no_number():
    weights = cap.init_weights(SMALL, seed=4)
    data = text.encode(text.corpus(5000))
    plain, w_plain = cap.train(weights, SMALL, text.batches(data, 7, 4), 3, cap.TrainSettings())
    ckpt, w_ckpt = cap.train(weights, SMALL, text.batches(data, 7, 4), 3, cap.TrainSettings(checkpoint=True))
    assert plain == ckpt
    for name in weights:
        np.testing.assert_array_equal(w_plain[name], w_ckpt[name])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_with_a_scaler_tracks_float32_training(dtype):
    config = cap.Config(vocab=30, block=16, d_model=32, n_heads=4, n_layers=2, d_ff=64)
    weights = cap.init_weights(config, seed=6, dtype=np.float32)
    data = text.encode(text.corpus(20_000))
    full, _ = cap.train(weights, config, text.batches(data, 16, 8), 15, cap.TrainSettings(lr=1e-2))
    low, w_low = cap.train(weights, config, text.batches(data, 16, 8), 15, cap.TrainSettings(lr=1e-2, autocast=dtype))
    assert all(np.isfinite(low)) and all(w.dtype == np.float32 for w in w_low.values())   # float32 master weights
    assert full[-1] < full[0] - 0.3                                  # it trains ...
    np.testing.assert_allclose(low, full, rtol=0.03)                 # ... and the low precision follows closely
    assert low != full                                               # but it did run in the low precision


def test_sampling_is_seeded_and_in_the_vocabulary():
    config = cap.Config(vocab=30, block=8, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    weights = cap.init_weights(config, seed=0)
    prompt = text.encode("the ")
    a = cap.sample(weights, config, prompt, 20, seed=1)
    assert np.array_equal(a, cap.sample(weights, config, prompt, 20, seed=1))
    assert len(a) == 24 and np.array_equal(a[:4], prompt) and a.max() < 30
    assert not np.array_equal(a, cap.sample(weights, config, prompt, 20, seed=2))


def test_bad_configs_and_inputs_are_refused_with_a_message():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be a multiple of n_heads \(4\)"):
        cap.Config(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="Config.n_layers must be a positive int"):
        cap.Config(n_layers=0)
    W = cap.to_torch(cap.init_weights(SMALL))
    with pytest.raises(ValueError, match=r"T <= 7, got shape \(2, 8\)"):
        cap.logits(W, np.zeros((2, 8), dtype=np.int64), SMALL)
