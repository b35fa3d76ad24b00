"""Chapter 8's solution (course/reference/ch08_capstone.py, exported from the notebook's answer and given cells) trains
the capstone's transformer on the engine step for step as the torch oracle (autograde/hidden/ch08_capstone.py) trains
it, and its new rules agree with torch. These are the notebook's pieces tested as a module, over more recipes and sizes
than the notebook's own cells run."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import course.reference.ch08_capstone as P
from autograde.hidden import ch08_capstone as oracle
from course import text
from course.reference.ch02_tape import Tensor
from course.reference.ch04_accumulation import max_saved_bytes, reset_peak_saved_bytes, saved_bytes

DATA = text.encode(text.corpus(20_000))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _leaf(a):
    return Tensor(np.array(a), requires_grad=True)


def _torch_leaf(a):
    return torch.tensor(np.array(a), requires_grad=True)


# -- the new rules against torch -------------------------------------------------------------------------------
def test_embedding_gathers_rows_and_scatter_adds_repeated_ids():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(6, 3))
    ids = np.array([[1, 4, 1], [1, 0, 5]])                      # id 1 three times: its gradient is a sum
    g = rng.normal(size=(2, 3, 3))
    ours, theirs = _leaf(table), _torch_leaf(table)
    out = P.embedding(ours, ids)
    ref = F.embedding(torch.as_tensor(ids), theirs)
    np.testing.assert_array_equal(out.data, ref.detach().numpy())
    out.backward(g)
    ref.backward(torch.as_tensor(g))
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(ours.grad.data[1], g[0, 0] + g[0, 2] + g[1, 0], rtol=1e-14)   # derived by hand
    assert np.all(ours.grad.data[[2, 3]] == 0)                  # ids never used get zero
    assert out.grad_fn.name() == "EmbeddingBackward0"


def test_embedding_refuses_bad_ids_with_a_message():
    table = _leaf(np.zeros((4, 2)))
    with pytest.raises(IndexError, match=r"in \[0, 4\), got values from 0 to 4"):
        P.embedding(table, np.array([0, 4]))
    with pytest.raises(TypeError, match="must be integers, got dtype float64"):
        P.embedding(table, np.array([0.0, 1.0]))


@pytest.mark.parametrize("shape", [(2, 3, 5, 5), (1, 1, 1, 1), (4, 7, 7)])
def test_causal_softmax_matches_torchs_masked_softmax(shape):
    rng = np.random.default_rng(1)
    s = rng.normal(size=shape) * 3
    g = rng.normal(size=shape)
    ours, theirs = _leaf(s), _torch_leaf(s)
    out = P.causal_softmax(ours)
    T = shape[-1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    ref = torch.softmax(theirs.masked_fill(mask, float("-inf")), dim=-1)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-13, atol=1e-15)
    assert np.all(out.data[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)   # exactly 0 in the future
    out.backward(g)
    ref.backward(torch.as_tensor(g))
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_gelu_is_torchs_default_exact_gelu_forward_and_backward():
    x = np.concatenate([np.linspace(-9, 9, 181), [0.0, -1e-8, 1e-8]])
    ours, theirs = _leaf(x), _torch_leaf(x)
    out = P.gelu(ours)
    ref = F.gelu(theirs)                                        # approximate="none": erf
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-14, atol=1e-16)
    out.backward(np.ones_like(x))
    ref.backward(torch.ones(len(x), dtype=torch.float64))
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-13, atol=1e-16)
    assert P.gelu(Tensor(x.astype(np.float32))).dtype == np.float32   # float32 stays float32


# -- the whole model ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tied", [True, False])
def test_one_forward_and_backward_match_the_oracle(tied):
    config = oracle.Config(vocab=30, block=9, d_model=16, n_heads=4, n_layers=2, d_ff=24, tied=tied)
    weights = oracle.init_weights(config, seed=3, perturb_norms=True, std=0.3)
    x, y = next(text.batches(DATA, 8, 5, seed=4))
    W = {n: _leaf(w) for n, w in weights.items()}
    Wt = oracle.to_torch(weights)
    ours, theirs = P.loss_fn(W, x, y, config.n_heads), oracle.loss_fn(Wt, x, y, config)
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-13)
    ours.backward()
    theirs.backward()
    for name in weights:
        np.testing.assert_allclose(W[name].grad.data, Wt[name].grad.numpy(), rtol=1e-9, atol=1e-13, err_msg=name)


RECIPES = {
    "plain": dict(),
    "micro-batches and checkpoint": dict(micro_batches=4, checkpoint=True),
    "clipping that bites, no decay": dict(max_norm=0.05, weight_decay=0.0),
    "untied, no clipping": dict(max_norm=None, tied=False),
}


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_twenty_float64_steps_give_torchs_loss_at_every_step(recipe):
    settings = dict(RECIPES[recipe])
    tied = settings.pop("tied", True)
    config = oracle.Config(vocab=30, block=16, d_model=32, n_heads=4, n_layers=2, d_ff=64, tied=tied)
    weights = oracle.init_weights(config, seed=7, perturb_norms=True)
    engine_losses, engine_weights = P.train(weights, config.n_heads, text.batches(DATA, 16, 8, seed=5), 20,
                                            lr=1e-2, **settings)
    torch_settings = {k: v for k, v in settings.items()}
    torch_losses, torch_weights = oracle.train(weights, config, text.batches(DATA, 16, 8, seed=5), 20,
                                               oracle.TrainSettings(lr=1e-2, **torch_settings))
    assert len(engine_losses) == 20
    np.testing.assert_allclose(engine_losses, torch_losses, rtol=1e-6, atol=0)
    assert torch_losses[-1] < torch_losses[0] - 0.3             # the comparison is over a run that learns
    for name in weights:
        np.testing.assert_allclose(engine_weights[name], torch_weights[name], rtol=1e-6, atol=1e-9, err_msg=name)
        assert not np.array_equal(engine_weights[name], weights[name]), f"{name} never changed"


def test_the_parity_test_can_tell_a_wrong_recipe():
    # The same comparison with weight decay on every parameter (a plausible mistake) fails it: the test above is
    # not passing by construction.
    config = oracle.Config(vocab=30, block=16, d_model=32, n_heads=4, n_layers=2, d_ff=64)
    weights = oracle.init_weights(config, seed=7, perturb_norms=True)
    original = P.decayed
    P.decayed = lambda W: list(W)
    try:
        wrong, _ = P.train(weights, config.n_heads, text.batches(DATA, 16, 8, seed=5), 20, lr=1e-2)
    finally:
        P.decayed = original
    right, _ = oracle.train(weights, config, text.batches(DATA, 16, 8, seed=5), 20, oracle.TrainSettings(lr=1e-2))
    assert np.max(np.abs(np.array(wrong) / np.array(right) - 1)) > 1e-6


def test_checkpointing_every_block_lowers_the_peak_saved_bytes_and_changes_no_gradient():
    config = oracle.Config(vocab=30, block=16, d_model=32, n_heads=4, n_layers=3, d_ff=64)
    weights = oracle.init_weights(config, seed=8)
    x, y = next(text.batches(DATA, 16, 8, seed=6))
    peaks, grads = {}, {}
    for ckpt in (False, True):
        W = {n: _leaf(w) for n, w in weights.items()}
        reset_peak_saved_bytes()
        P.loss_fn(W, x, y, config.n_heads, checkpoint=ckpt).backward()
        peaks[ckpt], grads[ckpt] = max_saved_bytes(), {n: t.grad.data for n, t in W.items()}
    assert peaks[True] < 0.6 * peaks[False], peaks
    for name in weights:
        np.testing.assert_array_equal(grads[True][name], grads[False][name])


def test_float16_autocast_with_the_scaler_follows_float32_training():
    config = oracle.Config(vocab=30, block=16, d_model=32, n_heads=4, n_layers=2, d_ff=64)
    weights = oracle.init_weights(config, seed=6, dtype=np.float32)
    full, _ = P.train(weights, 4, text.batches(DATA, 16, 8), 10, lr=1e-2)
    low, low_weights = P.train(weights, 4, text.batches(DATA, 16, 8), 10, lr=1e-2, autocast=np.float16)
    assert all(w.dtype == np.float32 for w in low_weights.values())
    np.testing.assert_allclose(low, full, rtol=1e-3)
    assert low != full


def test_sampling_and_bad_input():
    config = oracle.Config(vocab=30, block=8, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    weights = oracle.init_weights(config, seed=0)
    ids = P.sample(weights, 2, text.encode("the "), 12, seed=3)
    assert len(ids) == 16 and np.array_equal(ids, P.sample(weights, 2, text.encode("the "), 12, seed=3))
    # with the same probabilities and the same generator, the oracle draws the same characters
    np.testing.assert_array_equal(ids, oracle.sample(weights, config, text.encode("the "), 12, seed=3))
    W = {n: Tensor(w) for n, w in weights.items()}
    with pytest.raises(ValueError, match=r"T <= 8, got shape \(1, 9\)"):
        P.logits(W, np.zeros((1, 9), dtype=np.int64), 2)
    with pytest.raises(ValueError, match="divides the batch size 8"):
        P.train(weights, 2, text.batches(DATA, 8, 8), 1, micro_batches=3)


def test_erf_float32_fit_stays_within_its_bound_and_float64_is_exact():
    import math

    x = np.linspace(-7, 7, 14001)
    exact = np.array([math.erf(v) for v in x])
    np.testing.assert_array_equal(P.erf(x), exact)
    x32 = x.astype(np.float32)
    fit = P.erf(x32)
    exact = np.array([math.erf(v) for v in x32.astype(np.float64)])    # of the float32 inputs themselves
    assert fit.dtype == np.float32
    # 1.5e-7 is Abramowitz and Stegun's bound for 7.1.26; the final rounding to float32 adds half an ulp (<= 6e-8)
    assert np.max(np.abs(fit.astype(np.float64) - exact)) < 1.5e-7 + 6e-8
    z = torch.linspace(-7, 7, 1401)
    # |fit - gelu| <= |x| (1.5e-7 + 6e-8) / 2 from erf, plus float32 rounding of both results (<= 1.2e-7 |gelu|)
    np.testing.assert_allclose(P.gelu(Tensor(z.numpy())).data, F.gelu(z).numpy(), rtol=2.5e-7, atol=1.1e-7 * 7)


def test_float16_autocast_follows_torchs_float16_autocast_and_skips_the_same_overflowing_steps():
    import itertools
    import warnings

    config = oracle.Config(vocab=30, block=16, d_model=32, n_heads=4, n_layers=2, d_ff=64)
    weights = oracle.init_weights(config, seed=6, dtype=np.float32)
    x, y = next(text.batches(DATA, 16, 8, seed=9))
    # The same batch at every step: a skipped step leaves the weights, so the next loss repeats exactly.
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # an overflow must not print a NumPy warning
        ours, _ = P.train(weights, 4, itertools.repeat((x, y)), 12, lr=1e-2, autocast=np.float16, init_scale=2.0 ** 24)
    theirs, _ = oracle.train(weights, config, itertools.repeat((x, y)), 12,
                             oracle.TrainSettings(lr=1e-2, autocast=torch.float16, init_scale=2.0 ** 24))

    def skipped(losses):
        return next(i for i in range(1, len(losses)) if losses[i] != losses[0])

    assert skipped(ours) == skipped(theirs) >= 2, (ours, theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)
    assert ours[-1] < ours[0] - 0.1                             # and after the skips it trains


@pytest.mark.parametrize("tied,dtype,T,B,H,layers", [(True, np.float64, 12, 5, 4, 3), (False, np.float32, 16, 2, 2, 1),
                                                     (True, np.float32, 7, 3, 8, 2), (False, np.float64, 1, 4, 1, 2)])
def test_the_saved_bytes_formula_predicts_the_meter_with_and_without_checkpointing(tied, dtype, T, B, H, layers):
    config = oracle.Config(vocab=30, block=16, d_model=32, n_heads=H, n_layers=layers, d_ff=48, tied=tied)
    weights = oracle.init_weights(config, seed=1, dtype=dtype)
    x, y = next(text.batches(DATA, T, B, seed=2))
    for ckpt in (False, True):
        W = {n: _leaf(w) for n, w in weights.items()}
        reset_peak_saved_bytes()
        before = saved_bytes()
        loss = P.loss_fn(W, x, y, H, checkpoint=ckpt) / 2
        after_forward = saved_bytes() - before
        loss.backward()
        measured = {"after forward": after_forward, "peak": max_saved_bytes() - before}
        predicted = P.saved_bytes_formula(config.vocab, B, T, config.d_model, H, config.d_ff, layers, tied, dtype, ckpt)
        assert measured == predicted, (ckpt, measured, predicted)
        assert saved_bytes() == before                         # backward gave every byte back


def test_the_new_rules_pass_the_engines_gradcheck():
    from course.reference.ch03_vjp_rules import gradcheck

    rng = np.random.default_rng(11)
    x = _leaf(rng.normal(size=(3, 4)) * 2)
    assert gradcheck(P.gelu, [x], atol=1e-7, rtol=1e-6)
    scores = _leaf(rng.normal(size=(2, 4, 4)))
    assert gradcheck(P.causal_softmax, [scores], atol=1e-7, rtol=1e-6)
    table = _leaf(rng.normal(size=(5, 3)))
    assert gradcheck(lambda t: P.embedding(t, np.array([[0, 3, 3], [4, 0, 3]])), [table], atol=1e-7, rtol=1e-6)
    config = oracle.Config(vocab=30, block=4, d_model=8, n_heads=2, n_layers=1, d_ff=8, tied=True)
    W = {n: Tensor(w) for n, w in oracle.init_weights(config, seed=2, perturb_norms=True, std=0.5).items()}
    h = _leaf(rng.normal(size=(1, 4, 8)))
    assert gradcheck(lambda h: P.block(h, W, "blocks.0.", 2), [h], atol=1e-6, rtol=1e-5)


def test_time_by_op_accounts_for_the_families_of_a_training_step():
    config = oracle.Config(vocab=30, block=8, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    weights = oracle.init_weights(config, seed=0)
    profile = P.time_by_op(lambda: P.train(weights, 2, text.batches(DATA, 8, 4), 2))
    for family in ("matmul", "gelu", "causal softmax", "layer norm", "embedding", "cross-entropy", "AdamW",
                   "clip_grad_norm_", "recording, backward driver, Python"):
        assert profile.get(family, -1) >= 0, (family, profile)
    assert list(profile.values()) == sorted(profile.values(), reverse=True)
