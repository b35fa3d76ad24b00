"""make mutation [CHAPTER=...]: generate and grade every chapter's mutants; rewrite report.json and survivors.json.

With chapters named, only their rows change; the other chapters' rows stay as committed.
--list prints each chapter's mutants (id, line before and after) without grading them.
--dry grades them and prints each chapter's row and survivors, and writes nothing.
"""
from __future__ import annotations

import json
import sys
import time

from autograde import mutation


def main(argv: list[str]) -> int:
    from course import CHAPTERS

    listing, dry = "--list" in argv, "--dry" in argv
    chapters = [a for a in argv if not a.startswith("--")] or list(CHAPTERS)
    unknown = [c for c in chapters if c not in CHAPTERS]
    if unknown:
        print(f"unknown chapter {', '.join(unknown)}: expected one of {', '.join(CHAPTERS)}", file=sys.stderr)
        return 2
    if listing:
        for chapter in chapters:
            for m in mutation.generate(chapter):
                print(f"{chapter} {m.id} line {m.line}: {m.before}  ->  {m.after}")
        return 0
    report: dict = {"chapters": {}}
    for chapter in chapters:
        t0 = time.perf_counter()
        row, left = mutation.measure_chapter(chapter)
        if dry:
            print(f"{chapter}: {row}, score {mutation.score(row):.1%}")
            for m in left:
                print(f"  survived {m['cell']} {m['operator'].split('/', 1)[1]} line {m['line']}: {m['before']}  ->  "
                      f"{m['after']}")
            continue
        # read again before writing: another run (another chapter) may have written its rows meanwhile
        report = json.loads(mutation.REPORT.read_text()) if mutation.REPORT.exists() else {"chapters": {}}
        survivors = json.loads(mutation.SURVIVORS.read_text()) if mutation.SURVIVORS.exists() else {}
        report["chapters"][chapter] = row
        survivors[chapter] = left
        print(f"{chapter}: {row['generated']} generated, {row['killed']} killed, {row['equivalent']} equivalent, "
              f"{row['survived']} survived: score {mutation.score(row):.1%} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
        # written after each chapter, so that an interrupted run keeps what it measured
        report["chapters"] = {c: report["chapters"][c] for c in CHAPTERS if c in report["chapters"]}
        mutation.REPORT.write_text(json.dumps(report, indent=2) + "\n")
        mutation.SURVIVORS.write_text(json.dumps({c: survivors[c] for c in CHAPTERS if c in survivors},
                                                 indent=1) + "\n")
    if dry or not report["chapters"]:
        return 0
    worst = min(report["chapters"].items(), key=lambda kv: mutation.score(kv[1]))
    print(f"lowest score: {worst[0]} {mutation.score(worst[1]):.1%} (goal: 95% in every chapter)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
