"""20 training steps of the capstone's model on the student's engine, beside torch's, in float64 and float32.

The engine's side is chapter 8's own loop (train() of the capstone module, the course's code on the student's
chapters 2-7: GroupedAdamW, clip_grad_norm_, micro-batches, checkpoint); torch's is the chapter's oracle
(autograde.hidden.ch08_capstone.train: the same model in plain torch ops, torch.optim.AdamW with two groups,
torch.nn.utils.clip_grad_norm_). Both start from course.model's seeded weights and see the same batches of the
course's corpus; one thread each, as the chapter's hidden tests run.

The recipe is the chapter's (AdamW betas (0.9, 0.99), weight decay 0.1 on matrices, clipping at 1.0) with a learning
rate of 1e-3 instead of 5e-3: at 5e-3 a float32 run (torch's own, against torch in float64) can drift by several
percent within 20 steps on some batches (Adam's normalised steps amplify rounding), so no tolerance would tell a
correct engine from a wrong one; at 1e-3 torch's float32 stays within 3e-7 of float64 over 20 steps (six batch
seeds tried). The float32 run checkpoints every block (chapter 7's checkpoint inside the training).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from autograde.own_engine.checks import error_message, quiet
from autograde.own_engine.collect import CAPSTONE, Engine, OwnEngineError, time_limit

STEPS = 20
BATCH = 8
LR = 1e-3
SEED = 2
TRAIN_SECONDS = 300
"""The most one dtype's 20 steps may take on the student's engine (a few seconds on the solutions)."""
TOLERANCE = {"float64": 1e-8, "float32": 1e-3}
"""Relative tolerance on each step's loss. Measured on the solutions: float64 below 1e-13, float32 (checkpointed)
below 1e-6; torch's own float32 against float64 stays below 3e-7 with this recipe."""


@dataclass
class Run:
    label: str
    dtype: Any
    checkpoint: bool
    ours: list[float]
    theirs: list[float]

    @property
    def relative(self) -> np.ndarray:
        ours, theirs = np.asarray(self.ours, dtype=np.float64), np.asarray(self.theirs, dtype=np.float64)
        with np.errstate(all="ignore"):
            rel = np.abs(ours / theirs - 1)
        return np.where(np.isnan(rel), np.inf, rel)


def train_both(engine: Engine, say: Callable[[str], None] = print) -> list[Run]:
    """Train in float64 and float32 (checkpointed), print the losses side by side; raise OwnEngineError on a
    difference beyond TOLERANCE or an error in the student's code."""
    import autograde.hidden.ch08_capstone as oracle
    from course import text
    from course.model import Config, init_weights
    from course.threads import fix_threads

    fix_threads(1)
    m8 = engine.modules[CAPSTONE]
    config = Config()
    data = text.encode(text.corpus(20_000))
    say(f"own engine: {STEPS} training steps of the capstone's model ({config.n_layers} blocks, d_model "
        f"{config.d_model}, {config.n_heads} heads, vocabulary {config.vocab}), batches of {BATCH} x {config.block} "
        f"characters, AdamW lr {LR:g}; yours (chapter 8's loop on your chapters 2-7) beside torch's")
    runs: list[Run] = []
    for label, dtype, ckpt in (("float64", np.float64, False), ("float32", np.float32, True)):
        weights = init_weights(config, seed=0, dtype=dtype)
        try:
            with quiet(), time_limit(TRAIN_SECONDS):
                ours, _ = m8.train(weights, config.n_heads, text.batches(data, config.block, BATCH, seed=SEED), STEPS,
                                   lr=LR, checkpoint=ckpt)
        except Exception as exc:  # noqa: BLE001 - the student's code may raise anything
            raise OwnEngineError(error_message(engine, f"training the capstone in {label}", exc,
                                               "your engine")) from None
        theirs, _ = oracle.train(weights, config, text.batches(data, config.block, BATCH, seed=SEED), STEPS,
                                 oracle.TrainSettings(lr=LR, checkpoint=ckpt))
        runs.append(Run(label + (" with checkpointed blocks" if ckpt else ""), dtype, ckpt, [float(v) for v in ours],
                        [float(v) for v in theirs]))
    widths = {np.dtype(np.float64): (16, 12), np.dtype(np.float32): (11, 7)}
    header = f"{'step':>4}"
    for r in runs:
        w, _ = widths[np.dtype(r.dtype)]
        short = np.dtype(r.dtype).name + (" ckpt" if r.checkpoint else "")
        header += f"   {short + ' yours':>{w}} {'torch':>{w}} {'rel diff':>8}"
    say(header)
    for i in range(STEPS):
        row = f"{i + 1:>4}"
        for r in runs:
            w, digits = widths[np.dtype(r.dtype)]
            row += f"   {r.ours[i]:>{w}.{digits}f} {r.theirs[i]:>{w}.{digits}f} {r.relative[i]:>8.1e}"
        say(row)
    for r in runs:
        tol = TOLERANCE[np.dtype(r.dtype).name]
        bad = np.flatnonzero(~(r.relative <= tol))
        if bad.size:
            i = int(bad[0])
            raise OwnEngineError(
                f"own engine: your engine's capstone training in {r.label} differs from torch's at step {i + 1}: "
                f"expected loss {r.theirs[i]!r}, got {r.ours[i]!r} (relative difference {r.relative[i]:.1e}, tolerance "
                f"{tol:.0e}); every piece checked before matched torch, so look at what the training adds: "
                f"micro-batches, clipping, AdamW's state over steps, checkpoint")
    return runs
