"""The engine's and the capstone's benchmarks run and ends with the line the docs promise (a smoke test: the figures are measurements,
made on an idle machine with `make bench-capstone`, never asserted here)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from autograde.bench import capstone, engine


def test_bench_capstone_ends_with_tokens_per_second_and_the_ratio(capsys):
    assert capstone.main(["--repeats", "1", "--steps", "1", "--batch", "2", "--profile"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    last = re.fullmatch(r"capstone tokens/s: engine ([\d,]+), torch ([\d,]+), ratio (\d+\.\d\d)", lines[-1])
    assert last, lines[-1]
    engine, torch_, ratio = (float(g.replace(",", "")) for g in last.groups())
    assert engine > 0 and torch_ > 0 and abs(ratio - torch_ / engine) < 0.01 + 0.01 * ratio
    assert any("matrix products" in ln for ln in lines), lines
    assert re.search(r"minor page faults a step: engine [\d,]+, torch [\d,]+", "\n".join(lines)), lines


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


FAULTS_OF_A_LOOP = """
import numpy as np
from course.threads import keep_freed_memory, minor_page_faults
if {keep}:
    print(keep_freed_memory())
def step():                                       # a step's temporaries: 40 arrays of 1 MiB alive at once, then freed
    arrays = [np.ones(1 << 17) for _ in range(40)]
    return sum(float(a[0]) for a in arrays)
step()
before = minor_page_faults()
for _ in range(10):
    step()
print((minor_page_faults() - before) // 10)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux only")
def test_keep_freed_memory_lets_the_next_array_reuse_the_pages_of_the_last():
    def faults(keep: bool) -> tuple[str, int]:
        out = subprocess.run([sys.executable, "-c", FAULTS_OF_A_LOOP.format(keep=keep)], capture_output=True,
                             text=True, check=True).stdout.splitlines()
        return out[0] if keep else "", int(out[-1])

    said, kept = faults(True)
    if said.startswith("allocator: not glibc"):
        pytest.skip(said)
    _, default = faults(False)
    assert said.startswith("allocator: freed memory kept"), said
    # 40 MiB a step is 10,240 pages: glibc's default gives them back to the OS and faults them in again each step
    assert default > 5000 and kept < 500, (default, kept)
