"""The command: collect, check, train; one line for any problem, never a traceback."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from autograde.own_engine.collect import BadInput, OwnEngineError, one_line


def prepare(folder: Path, work: Path | None = None) -> tuple[Any, list[str]]:
    """Collect and import the student's chapters: (the engine, notes on what the capstone does not need), or
    OwnEngineError for the first answer it needs that is missing or unfinished (in chapter order) or that fails."""
    from autograde.own_engine.checks import REQUIRED, unanswered
    from autograde.own_engine.collect import collect, import_engine

    engine = collect(folder, work) if work is not None else collect(folder)
    try:
        import_engine(engine, needed=lambda block: (block.chapter, block.grade_id) in REQUIRED)
    except OwnEngineError as failure:
        missing, _ = unanswered(engine)     # an unanswered cell the capstone needs explains most import failures
        raise OwnEngineError(missing or str(failure)) from None
    missing, notes = unanswered(engine)
    if missing:
        raise OwnEngineError(missing)
    return engine, notes


def run(folder: Path, work: Path | None = None) -> int:
    """The whole command for one folder; raises OwnEngineError (or BadInput) with the line to print."""
    from autograde.own_engine.checks import run_checks
    from autograde.own_engine.training import STEPS, train_both

    start = time.perf_counter()
    engine, notes = prepare(folder, work)
    passed = run_checks(engine)
    where = engine.root / engine.package
    try:
        where = where.relative_to(Path.cwd())
    except ValueError:
        pass
    print(f"own engine: your chapters 2-7 from {folder}, collected into {where}/ and imported")
    for note in engine.notes + notes:
        print(f"own engine: note: {note}")
    print(f"own engine: {passed} checks of the pieces the capstone uses passed against torch (values, dtypes, "
          f"gradients)", flush=True)
    runs = train_both(engine, say=lambda line: print(line, flush=True))
    worst = {r.label: float(r.relative.max()) for r in runs}
    print("own engine: largest relative difference of the loss: "
          + ", ".join(f"{label} {value:.1e}" for label, value in worst.items())
          + f" ({time.perf_counter() - start:.0f} s)")
    print(f"own engine: capstone loss matches torch over {STEPS} steps (max relative difference "
          f"{max(worst.values()):.1e})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograde.own_engine",
                                     description="Your own engine (chapters 2-7 from your notebooks) trains the "
                                                 "capstone's transformer, beside torch.")
    parser.add_argument("folder", nargs="?", default="",
                        help="the folder of your notebooks: DIR/<chapter>/<chapter>.ipynb (make lab) or DIR/<chapter>.ipynb")
    parser.add_argument("--work", type=Path, default=None,
                        help="where to write the generated package (default: .work/own_engine/ in the repository)")
    args = parser.parse_args(argv)
    if not args.folder.strip():
        print("own engine: usage: make own-engine NB=DIR (the folder that holds your chapter notebooks)", file=sys.stderr)
        return 2
    os.environ.setdefault("MPLBACKEND", "Agg")       # a student's cell that plots must not open a window
    try:
        return run(Path(args.folder), args.work)
    except BadInput as problem:
        print(one_line(problem, 2000), file=sys.stderr)
        return 2
    except OwnEngineError as finding:
        print(one_line(finding, 2000), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("own engine: interrupted", file=sys.stderr)
        return 130
    except BaseException as exc:  # noqa: BLE001 - never a traceback: say what happened in one line
        print(f"own engine: stopped by {type(exc).__name__}: {one_line(exc, 300)} (a problem of the tool or of the "
              f"environment; the generated package is under .work/own_engine/)", file=sys.stderr)
        return 1
