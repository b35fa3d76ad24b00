"""The capstone benchmark runs and ends with the line the docs promise (a smoke test: the figures are measurements,
made on an idle machine with `make bench-capstone`, never asserted here)."""
from __future__ import annotations

import re

from autograde.bench import capstone


def test_bench_capstone_ends_with_tokens_per_second_and_the_ratio(capsys):
    assert capstone.main(["--repeats", "1", "--steps", "1", "--batch", "2", "--profile"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    last = re.fullmatch(r"capstone tokens/s: engine ([\d,]+), torch ([\d,]+), ratio (\d+\.\d\d)", lines[-1])
    assert last, lines[-1]
    engine, torch_, ratio = (float(g.replace(",", "")) for g in last.groups())
    assert engine > 0 and torch_ > 0 and abs(ratio - torch_ / engine) < 0.01 + 0.01 * ratio
    assert any("matrix products" in ln for ln in lines), lines
