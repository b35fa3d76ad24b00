"""Finding the submissions: what a folder, a course folder or a zip of them holds, per chapter and student.

SUBMISSIONS (autograde/grade's argument) is one of:
- an nbgrader `submitted/` folder (submitted/<student>/<chapter>/<chapter>.ipynb,
  with an optional timestamp.txt beside each notebook), or a course folder holding one;
- a folder of loose notebooks, one per student and chapter, as an LMS hands
  them out (alice.ipynb, alice_ch01_chain_rule.ipynb, alice/ch01_chain_rule.ipynb...):
  the chapter is recognised from the notebook's cells, the student id is the
  file name without the chapter id (or the folder name when nothing is left);
- a .zip of either (nested folders, Windows separators and names that are not UTF-8 included).

A file that cannot be graded (empty, not a notebook, a notebook of another chapter, cells that lost their
nbgrader metadata) is not graded; `collect` says why, so that its student still gets a row.
"""
from __future__ import annotations

import functools
import hashlib
import io
import re
import shutil
import struct
import sys
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from course import CHAPTERS
from autograde import notebook as nbk


def available_chapters() -> tuple[str, ...]:
    """The chapters whose source notebook exists."""
    return tuple(ch for ch in CHAPTERS if (nbk.REPO / "source" / ch / f"{ch}.ipynb").exists())


@functools.lru_cache(maxsize=None)
def fingerprint(chapter: str) -> tuple[frozenset[str], frozenset[str]]:
    """(grade_ids, markdown texts) of a chapter's source notebook: what recognises a notebook of it."""
    cells = nbk.read(nbk.REPO / "source" / chapter / f"{chapter}.ipynb").cells
    return (frozenset(filter(None, map(nbk.grade_id, cells))),
            frozenset(nbk.normalised(c.source) for c in cells if c.cell_type == "markdown" and c.source.strip()))


def detect_chapter(nb, chapters: tuple[str, ...], name: str = "") -> str | None:
    """The chapter a notebook belongs to: most grade_ids in common, else most markdown cells in common (a notebook
    pasted into a new one keeps its text, not its metadata), the file name breaking ties; None if nothing matches."""
    ids = {nbk.grade_id(c) for c in nb.cells} - {None}
    texts = {nbk.normalised(c.source) for c in nb.cells if c.get("cell_type") == "markdown"}
    best = sorted(((len(ids & fingerprint(ch)[0]), len(texts & fingerprint(ch)[1]), ch in name, ch) for ch in chapters),
                  reverse=True)
    return best[0][3] if best and any(best[0][:3]) else None


def read_submission(path: Path) -> tuple[object, str | None]:
    """(notebook, None), or (None, why it is no notebook)."""
    import nbformat

    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"the file could not be read ({exc.strerror})"
    if not data.strip():
        return None, "the file is empty"
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except UnicodeDecodeError:
        return None, "the file is not a notebook (not UTF-8 text)"
    except Exception as exc:  # noqa: BLE001 - JSON or notebook-format errors of every kind
        return None, f"the file is not a valid notebook ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
    return nb, None


def safe_id(text: str) -> str:
    """A student id nbgrader accepts as a folder name: accents dropped, other characters replaced; when a
    character had no ASCII form, a short hash of the whole name keeps two such names apart."""
    folded = unicodedata.normalize("NFKD", text)
    kept = "".join(ch for ch in folded if ch.isascii() or unicodedata.combining(ch))
    out = re.sub(r"[^A-Za-z0-9_.@-]+", "_", "".join(ch for ch in kept if ch.isascii())).strip("._-") or "student"
    if kept != folded:
        out += "-" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    return out


def student_from_name(path: Path, chapters: tuple[str, ...]) -> str:
    """Student id of a loose notebook: the file name without a chapter id, else the nearest folder that is
    neither a chapter nor `submitted`."""
    stem = path.stem
    for chapter in chapters:
        stem = stem.replace(chapter, "")
    stem = re.sub(r"^[\W_]+|[\W_]+$", "", stem)
    if stem:
        return safe_id(stem)
    folder = next((p.name for p in path.parents if p.name and p.name not in (*chapters, "submitted")), "")
    return safe_id(folder)


def _open_zip(path: Path) -> zipfile.ZipFile:
    """A zip, even one whose names are flagged UTF-8 but are not: those are read as cp437, like unflagged names."""
    try:
        return zipfile.ZipFile(path)
    except UnicodeDecodeError:
        pass
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")  # end of central directory: entry count, its size, its offset
    count, _, at = struct.unpack_from("<HII", data, end + 10)
    for _ in range(count):
        name, extra, comment = struct.unpack_from("<HHH", data, at + 28)
        try:
            bytes(data[at + 46:at + 46 + name]).decode("utf-8")
        except UnicodeDecodeError:  # clear the flag in the central and the local header
            local, = struct.unpack_from("<I", data, at + 42)
            for flags_at in (at + 8, local + 6):
                struct.pack_into("<H", data, flags_at, struct.unpack_from("<H", data, flags_at)[0] & ~0x800)
        at += 46 + name + extra + comment
    return zipfile.ZipFile(io.BytesIO(bytes(data)))


def _extract(archive: Path, scratch: Path) -> None:
    """Unzip into scratch: no path leaves it (.., absolute names), Windows separators become folders."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    with _open_zip(archive) as zf:
        for member in zf.infolist():
            parts = [p for p in re.split(r"[\\/]+", member.filename) if p not in ("", ".", "..")]
            if not parts or member.is_dir() or parts[0] == "__MACOSX":
                continue
            target = scratch.joinpath(*(p.replace("\0", "_")[:200] for p in parts))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(member))


@dataclass
class Collected:
    """What a folder or zip of submissions holds, sorted out."""

    found: dict[str, dict[str, Path]] = field(default_factory=dict)
    """per chapter, per student, the notebook to grade"""
    ungradable: dict[str, dict[str, str]] = field(default_factory=dict)
    """per chapter ('' when none could be told), per student, why what they handed in cannot be graded"""
    ignored: dict[Path, tuple[str, ...]] = field(default_factory=dict)
    """per notebook (nbgrader layout), the files handed in beside it: never copied, reported as an incident"""


def collect(source: Path, chapters: tuple[str, ...], scratch: Path) -> Collected:
    """Per chapter, per student, the submitted notebook (a zip is extracted into scratch first).

    What cannot be graded (an empty file, no notebook, a notebook of another chapter, one of no chapter)
    goes to `ungradable` instead, with the reason.
    """
    result = Collected()
    UNGRADABLE = result.ungradable
    source = Path(source).resolve()
    if source.is_file() and zipfile.is_zipfile(source):
        _extract(source, scratch)
        source = scratch
    if not source.is_dir():
        raise FileNotFoundError(f"no folder or zip of submissions at {source}")
    out: dict[str, dict[str, Path]] = {ch: {} for ch in chapters}

    known = tuple(dict.fromkeys((*available_chapters(), *chapters)))  # a notebook of a chapter not graded is told too

    def take(path: Path, chapter: str | None, student: str) -> None:
        """chapter: the one the nbgrader layout names; None for a loose notebook (recognised from its cells)."""
        nb, why = read_submission(path)
        found = None if nb is None else detect_chapter(nb, known, path.name)
        if chapter is None and found not in (None, *chapters):
            return  # a notebook of a chapter not being graded
        if why is None and chapter is None and found is None:
            why = f"not a notebook of any chapter ({', '.join(chapters)})"
        elif why is None and chapter is not None and found not in (None, chapter):
            why = f"this is a notebook of {found}, handed in as {chapter}"
        elif why is None and not {nbk.grade_id(c) for c in nb.cells} & fingerprint(chapter or found)[0]:
            why = ("none of its cells is a cell of the assignment (they lost their nbgrader metadata: pasted into a "
                   "new notebook?); download the assignment again and copy the answers into it")
        chapter = chapter or found or next((ch for ch in chapters if ch in path.name),
                                           chapters[0] if len(chapters) == 1 else "")
        if why is None:
            if student in out[chapter]:
                print(f"warning: {student} handed in {chapter} twice; grading {path.name}, not "
                      f"{out[chapter][student].name}", file=sys.stderr)
            out[chapter][student] = path
            UNGRADABLE.get(chapter, {}).pop(student, None)
        elif student not in out.get(chapter, {}):
            UNGRADABLE.setdefault(chapter, {})[student] = why

    # nbgrader's layout, at any depth (an LMS export may wrap it in folders): <student>/<chapter>/<chapter>.ipynb
    layout = [p for ch in chapters for p in source.glob(f"**/{ch}/{ch}.ipynb") if "__MACOSX" not in p.parts]
    if layout:
        for path in sorted(layout):
            take(path, path.parent.name, safe_id(path.parent.parent.name))
            extras = sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*")
                            if p.is_file() and p != path and p.name != "timestamp.txt")
            if extras:
                result.ignored[path] = tuple(extras)
    else:
        for path in sorted(p for p in source.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
                           and "__MACOSX" not in p.parts and not p.name.startswith(".")):
            take(path, None, student_from_name(path.relative_to(source), chapters))
    result.found = {ch: s for ch, s in out.items() if s}
    return result
