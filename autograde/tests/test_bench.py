"""The engine's and the capstone's benchmarks run and ends with the line the docs promise (a smoke test: the figures are measurements,
made on an idle machine with `make bench-capstone`, never asserted here)."""
from __future__ import annotations

import re

from autograde.bench import capstone, engine


def test_bench_capstone_ends_with_tokens_per_second_and_the_ratio(capsys):
    assert capstone.main(["--repeats", "1", "--steps", "1", "--batch", "2", "--profile"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    last = re.fullmatch(r"capstone tokens/s: engine ([\d,]+), torch ([\d,]+), ratio (\d+\.\d\d)", lines[-1])
    assert last, lines[-1]
    engine, torch_, ratio = (float(g.replace(",", "")) for g in last.groups())
    assert engine > 0 and torch_ > 0 and abs(ratio - torch_ / engine) < 0.01 + 0.01 * ratio
    assert any("matrix products" in ln for ln in lines), lines


def test_bench_engine_prints_each_phase_against_torch_and_the_page_faults(capsys):
    assert engine.main(["--repeats", "2", "--batch", "8", "--dtype", "float64"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    for phase in ("forward", "backward", "step"):
        row = next(ln for ln in lines if ln.startswith(phase))
        found = re.fullmatch(rf"{phase}\s+(\d+\.\d\d) \(\s*\d+\.\d\d\)\s+(\d+\.\d\d) \(\s*\d+\.\d\d\)\s+(\d+\.\d\d)x", row)
        assert found, row
        engine_ms, torch_ms, ratio = (float(g) for g in found.groups())
        assert torch_ms > 0 and abs(ratio - engine_ms / torch_ms) <= 0.01 + 0.01 / torch_ms * (1 + ratio), row
    assert re.fullmatch(r"faults\s+\d+\s+\d+\s+minor page faults per step", lines[-1]), lines[-1]
