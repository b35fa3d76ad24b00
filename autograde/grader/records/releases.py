"""The record of what earlier releases of a chapter handed to students: autograde/releases/<chapter>.json.

A class that handed in a chapter before it changed must still be graded without a false tampering incident:
its read-only and test cells are an earlier release's versions, and the cells added since are missing. Before
publishing a changed release of a chapter whose old release students may still hand in, record the old one:

    .venv/bin/python -m autograde.grader.records.releases add CHAPTER path/to/old/release.ipynb --name "autumn 2026"

(the old release notebook, e.g. `git show REV:release/CHAPTER/CHAPTER.ipynb > old.ipynb`). The grader
(detect_tampering) reads the record; the record holds fingerprints of cell texts, no cell text.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from autograde import notebook as nbk
from autograde.notebook import normalised
from autograde.paths import REPO


def version_hash(source: str) -> str:
    """A short fingerprint of a read-only or test cell's release text (as normalised)."""
    return hashlib.sha256(normalised(source).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class EarlierReleases:
    """What earlier releases of a chapter handed to students (autograde/releases/<chapter>.json): per release,
    the grade_ids it had and the fingerprint of each read-only or test cell. A notebook handed in under an
    earlier release has that release's version of a cell, not an edited one, and lacks the cells added since."""

    releases: tuple[dict, ...] = ()

    def known_version(self, gid: str, source: str) -> bool:
        digest = version_hash(source)
        return any(digest in r.get("cells", {}).get(gid, ()) for r in self.releases)

    def release_of(self, present: dict[str, NotebookNode], today: dict[str, str]) -> dict | None:
        """The earlier release a submission came from: every cell it has of that release's read-only and test
        cells is that release's version, and either at least one of them is not today's, or it has none of the
        read-only and test cells added since that release (today: grade_id -> release text)."""
        for r in self.releases:
            cells = r.get("cells", {})
            mine = {gid: c for gid, c in present.items() if gid in cells}
            if not mine or not all(version_hash(c.source) in cells[gid] for gid, c in mine.items()):
                continue
            added_since = set(today) - set(r.get("ids", ()))
            if (any(gid not in today or normalised(c.source) != normalised(today[gid]) for gid, c in mine.items())
                    or (added_since and not added_since & set(present))):
                return r
        return None


FOLDER = REPO / "autograde" / "releases"


def record_path(chapter: str, folder: Path = FOLDER) -> Path:
    return Path(folder) / f"{chapter}.json"


def load(chapter: str, folder: Path = FOLDER) -> EarlierReleases:
    """The recorded earlier releases of a chapter (none when nothing was recorded), from `folder` (a grading
    workspace's copy) or the repository's record."""
    path = record_path(chapter, folder)
    if not chapter or not path.exists():
        return EarlierReleases()
    return EarlierReleases(tuple(json.loads(path.read_text()).get("releases", ())))


def describe(release: Path, name: str) -> dict:
    """One release: its grade_ids, the fingerprint of each read-only or test cell, and each test cell's points."""
    nb = nbk.read(release)
    ids = [nbk.grade_id(c) for c in nb.cells if nbk.grade_id(c)]
    cells = {nbk.grade_id(c): [version_hash(c.source)] for c in nb.cells
             if nbk.grade_id(c) and nbk.nbgrader_meta(c).get("locked") and not nbk.is_solution(c)}
    points = {nbk.grade_id(c): float(nbk.nbgrader_meta(c)["points"]) for c in nb.cells
              if nbk.is_test(c) and nbk.nbgrader_meta(c).get("points") is not None}
    return {"name": name, "ids": ids, "cells": cells, "points": points}


def add(chapter: str, release: Path, name: str) -> Path:
    path = record_path(chapter)
    data = json.loads(path.read_text()) if path.exists() else {"chapter": chapter, "releases": []}
    data["releases"] = [r for r in data["releases"] if r["name"] != name] + [describe(release, name)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add", help="record an earlier release notebook of a chapter")
    a.add_argument("chapter")
    a.add_argument("release", type=Path)
    a.add_argument("--name", required=True, help="what the release is called (replaces a record of that name)")
    args = parser.parse_args(argv)
    if not args.release.exists():
        print(f"no release notebook at {args.release}", file=sys.stderr)
        return 2
    print(add(args.chapter, args.release, args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
