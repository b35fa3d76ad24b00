"""course.torch_memory measures what it says: on the CPU with its own meter, and on a GPU (where there is one: the
last test, run on the device machine) with torch.cuda's allocator statistics."""
from __future__ import annotations

import pytest
import torch

import course.torch_memory
from course.torch_memory import Block, LiveTensorBytes, measure_torch, offloaded, run_segments, saved_costs, selective


@pytest.fixture
def on_the_cpu(monkeypatch):
    """measure_torch's CPU path, also on a machine with a GPU."""
    monkeypatch.setattr(course.torch_memory, "DEVICE", torch.device("cpu"))


def test_live_tensor_bytes_follows_each_storage_from_creation_to_death():
    with LiveTensorBytes() as meter:
        a = torch.ones(1000)                      # 4000 bytes
        b = a.view(10, 100)                       # a view: the same storage, counted once
        assert meter.live == 4000
        c = torch.mm(b, torch.ones(100, 3))       # 10 x 3 floats; the ones(100, 3) dies at once
        assert meter.live == 4000 + 120 and meter.matmuls == 1
        del a, b
        assert meter.live == 120
        del c
        assert meter.live == 0
    assert meter.peak == 4000 + 1200 + 120        # the ones(100, 3) was alive while mm ran


def test_measure_torch_sees_checkpointing_and_counts_products_in_backward(on_the_cpu):
    torch.manual_seed(0)
    weights = [torch.randn(32, 32, requires_grad=True) for _ in range(4)]
    layers = [lambda h, w=w: torch.relu(h @ w) for w in weights]
    x = torch.randn(16, 32)
    plain = measure_torch(lambda: run_segments(layers, x).sum(), weights, repeats=1)
    ckpt = measure_torch(lambda: run_segments(layers, x, [(0, 3)]).sum(), weights, repeats=1)
    keep = measure_torch(lambda: run_segments(layers, x, [(0, 3)], context_fn=selective()).sum(), weights, repeats=1)
    # 16 x 32 floats are 2048 bytes; the loss is 4
    assert plain["held"] == 4 * 2048 + 4          # each ReLU's output (also the next product's input)
    assert ckpt["held"] == 2 * 2048 + 4           # the segment's output and the last ReLU's output
    assert keep["held"] == 5 * 2048 + 4           # and the segment's three products, kept by the policy
    assert plain["matmuls"] == 7 and ckpt["matmuls"] == 7 + 3 and keep["matmuls"] == 7
    assert plain["time"] > 0 and all(w.grad is not None for w in weights)
    moved = measure_torch(offloaded(lambda: run_segments(layers, x).sum()), weights, repeats=1)
    assert moved["held"] == plain["held"]         # save_on_cpu moves nothing on a CPU


def test_run_segments_gives_the_plain_gradients_and_saved_costs_counts_storages_once():
    torch.manual_seed(1)
    blocks = [Block(16, 4, device="cpu") for _ in range(3)]
    x = torch.randn(2, 8, 16)
    grads = []
    for plan in ([], [(0, 2)], [(0, 1), (1, 3)]):
        for b in blocks:
            for p in b.params:
                p.grad = None
        run_segments(blocks, x, plan).pow(2).mean().backward()
        grads.append([p.grad.clone() for b in blocks for p in b.params])
    for other in grads[1:]:
        assert all(torch.allclose(g, e, atol=1e-6) for g, e in zip(other, grads[0]))
    weights = [torch.randn(8, 8, requires_grad=True) for _ in range(2)]
    act, inp, tail = saved_costs([lambda h: torch.relu(h @ weights[0]), lambda h: h @ weights[1]], torch.randn(4, 8),
                                 lambda h: h.pow(2).sum())
    assert inp == (128, 128)
    assert act == (128 + 128, 0) and tail == 128  # x and relu's output (the next product's input); pow keeps its input


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")
def test_measure_torch_on_a_gpu_reads_the_allocator_and_leaves_out_one_time_allocations():
    torch.manual_seed(0)
    weights = [torch.randn(256, 256, device="cuda", requires_grad=True) for _ in range(4)]
    layers = [lambda h, w=w: torch.relu(h @ w) for w in weights]
    x = torch.randn(512, 256, device="cuda")
    first = measure_torch(lambda: run_segments(layers, x).sum(), weights, repeats=1)   # the process's first product
    plain = measure_torch(lambda: run_segments(layers, x).sum(), weights, repeats=1)
    ckpt = measure_torch(lambda: run_segments(layers, x, [(0, 3)]).sum(), weights, repeats=1)
    assert first["peak"] == plain["peak"]        # cuBLAS's workspace, allocated once, is not the step's
    # 512 x 256 floats are 524,288 bytes; the allocator rounds the 4-byte loss up to a 512-byte block
    assert plain["held"] == 4 * 524288 + 512      # each ReLU's output, as on the CPU
    assert ckpt["held"] == 2 * 524288 + 512
    assert plain["matmuls"] is None and plain["time"] > 0
    # the gradients are in the peak (backward frees saved tensors as it goes, so less than held + gradients)
    assert plain["peak"] >= max(plain["held"], 4 * 256 * 256 * 4)
    moved = measure_torch(offloaded(lambda: run_segments(layers, x).sum()), weights, repeats=1)
    assert moved["held"] < plain["held"]          # save_on_cpu moves the saved tensors to host memory


def test_gpu_figures_run_here_and_the_recorded_ones_come_from_a_gpu(tmp_path):
    import json
    import subprocess
    import sys

    from course import gpu_figures
    out = tmp_path / "figures.json"
    subprocess.run([sys.executable, "-m", "course.gpu_figures", "--repeats", "1", "--out", str(out)], check=True,
                   capture_output=True, text=True, timeout=300)
    mine = json.loads(out.read_text())
    recorded = gpu_figures.recorded()
    for figures in (mine, recorded):
        kinds = set()
        for name, model in figures["models"].items():
            kinds.add(model["attention"])
            assert set(model["checkpointing"]) >= {"none", "every block"}, name
            for part in ("checkpointing", "precision"):
                for row, r in model[part].items():
                    assert r["peak_MiB"] > 0, (name, row)
                    if "source" in r:      # cited: the source is named, and only the recorded file cites
                        assert r["source"] in figures["sources"] and figures is recorded, (name, row)
                    elif model["timed"]:   # measured by the module, on a stack whose times mean something
                        assert r["ms"] > 0, (name, row)
                    else:
                        assert r["ms"] is None, (name, row)
        assert kinds == {"written out", "fused (SDPA)"}
    assert not mine["sources"]
    assert any("save_on_cpu (offloading)" in model["checkpointing"] for model in recorded["models"].values())
    assert "NVIDIA" in recorded["device"] and "cu" in recorded["torch"]
    table = gpu_figures.report()
    assert table.startswith("device: NVIDIA") and "every block" in table and "fused attention" in table
    assert all(f"[{key}]" in table for key in recorded["sources"])


def test_gpu_figures_sqrt_rows_use_chapter_7s_layout():
    """The sqrt(N) row runs torch's checkpoint_sequential with ceil(sqrt(n)) segments, the layout of chapter 7's
    sqrt_plan: the last segment is not checkpointed (12 blocks: 9 rerun; 8 blocks: 4; 2 blocks: 1)."""
    from course import gpu_figures
    loss = lambda h: h.pow(2).mean()   # noqa: E731
    for n, rerun in ((12, 9), (8, 4), (2, 1), (1, 0)):
        layers, x, _ = gpu_figures.stack(gpu_figures.Size(n, 8, 2, 4, 1))
        assert gpu_figures.blocks_rerun(layers, x, loss) == rerun, n
        torch.testing.assert_close(gpu_figures.sqrt_step(layers, x, loss), loss(run_segments(layers, x)))
    for name, model in gpu_figures.recorded()["models"].items():
        rows = [row for row in model["checkpointing"] if row.startswith("sqrt(N)")]
        assert all(row.startswith("sqrt(N), chapter 7's layout") for row in rows), name
        if model["blocks"] == 12:
            assert all("9 blocks rerun" in row for row in rows), name


def test_fused_block_is_the_same_function_as_the_written_out_one():
    from course.gpu_figures import FusedBlock
    torch.manual_seed(0)
    plain = Block(16, 4, torch.Generator().manual_seed(1), device="cpu")
    fused = FusedBlock(16, 4, torch.Generator().manual_seed(1), device="cpu")
    x = torch.randn(2, 8, 16)
    ins = [x.clone().requires_grad_() for _ in range(2)]
    outs = [plain(ins[0]), fused(ins[1])]
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    for out in outs:
        out.pow(2).sum().backward()
    torch.testing.assert_close(ins[1].grad, ins[0].grad, rtol=1e-4, atol=1e-4)
    for p, q in zip(plain.params, fused.params):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-4)
