"""Reading notes exactly as stored.

Offsets in every annotation format count characters of the text as stored,
``\r`` included, so notes are always read with ``newline=""``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from share_ner.document import Document
from share_ner.errors import InputError, some_of
from share_ner.inputs.contract import FirstSeen, clean_id, file_id_problem, id_problem, text_problem
from share_ner.io import decode_note, doc_id_from_path, is_gold_file


def read_note(path: str | Path, encoding: str = "utf-8", doc_id: str | None = None, *,
              reject_empty: bool = False) -> Document:
    """Read one note without newline translation; an :class:`InputError` (naming the file and a byte offset, never
    the text) when it cannot be read, holds a NUL byte (a binary file), does not decode, or is empty and
    ``reject_empty``."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read note: {exc.strerror or exc}") from None
    return note_from_bytes(data, path, doc_id or doc_id_from_path(path), encoding, reject_empty=reject_empty)


def note_from_bytes(data: bytes, source: str | Path, doc_id: str, encoding: str = "utf-8", *,
                    reject_empty: bool = False) -> Document:
    """The note of a file's bytes (read here, or by Spark for ``share-ner spark``), or the
    :class:`InputError` of :func:`read_note` naming ``source``."""
    if reject_empty and not data:
        raise InputError(source, "empty file")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(source, f"binary file (NUL byte at byte {nul})")
    return Document(doc_id, decode_note(data, source, encoding))


@dataclass(frozen=True)
class NoteEntry:
    """A note file found by :func:`walk_note_files`, or (``problem`` set) a ``*.txt`` entry that cannot be one."""

    path: Path
    problem: str | None = None


def _not_a_file(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    return "not a regular file"


def is_note_name(name: str) -> bool:
    """A note file's name: ``*.txt`` in any case (``ECG.TXT``), not a gold file (``*.pipe.txt``)."""
    return name.lower().endswith(".txt") and not is_gold_file(Path(name))


def walk_note_files(path: str | Path, skipped: list[Path] | None = None) -> Iterator[NoteEntry]:
    """Note files (``*.txt`` in any case, gold files left out) under ``path`` (a file, or a directory searched
    recursively), streamed in a fixed order: each directory's entries sorted by name, sub-directories walked where
    they sort. ``skipped`` (when given) receives the other regular files met in the directories: neither notes nor
    files expected beside them (gold, ``.ann``, hidden and run files; :func:`skipped_files_line` words them for a
    warning).

    Each real directory is walked once (by device and inode), so a symbolic link back up the tree is not
    followed into a loop, and a directory linked twice is read once, under the first name met. A ``*.txt``
    entry that is a dangling or looping symbolic link, a FIFO, a socket or a device comes with its ``problem``
    instead of being skipped silently (reading a FIFO would block). Memory stays bounded by the largest single
    directory plus the set of directories walked, whatever the size of the tree.
    """
    root = Path(path)
    try:
        st = os.stat(root)
    except OSError as exc:
        if root.is_symlink():
            yield NoteEntry(root, f"broken symbolic link ({exc.strerror or exc})")
            return
        raise InputError(root, "no such file or directory") from None
    if not stat.S_ISDIR(st.st_mode):
        yield NoteEntry(root, _not_a_file(st.st_mode))
        return
    seen: set[tuple[int, int]] = set()
    yield from _walk_dir(root, st, seen, skipped)


def _walk_dir(directory: Path, st: os.stat_result, seen: set[tuple[int, int]],
              skipped: list[Path] | None) -> Iterator[NoteEntry]:
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return
    seen.add(key)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(directory, f"cannot list directory: {exc.strerror or exc}") from None
    for entry in entries:
        note_name = is_note_name(entry.name)
        try:
            est = entry.stat()  # follows symbolic links
        except OSError as exc:
            if note_name:
                what = "symbolic link loop" if exc.errno == errno.ELOOP else "dangling symbolic link"
                yield NoteEntry(Path(entry.path), f"{what} ({exc.strerror or exc})")
            continue
        if stat.S_ISDIR(est.st_mode):
            yield from _walk_dir(Path(entry.path), est, seen, skipped)
        elif note_name:
            yield NoteEntry(Path(entry.path), _not_a_file(est.st_mode))
        elif skipped is not None and stat.S_ISREG(est.st_mode) and not _expected_beside_notes(entry.name):
            skipped.append(Path(entry.path))


# Files a folder of notes holds by convention, that are not worth a warning: brat's configuration and share-ner's own
# run files (an output folder inside the input, a brat collection given as input).
_EXPECTED_NAMES = frozenset({"annotation.conf", "visual.conf", "tools.conf", "kb_shortcuts.conf", "run.json",
                             "summary.json", "rejects.tsv", "manifest.ndjson"})


def _expected_beside_notes(name: str) -> bool:
    """Hidden files, gold files and brat annotations (``.ann`` beside their notes), and :data:`_EXPECTED_NAMES`."""
    return (name.startswith(".") or is_gold_file(Path(name)) or name.lower().endswith(".ann")
            or name in _EXPECTED_NAMES)


def skipped_files_line(skipped: Sequence[Path], shown: int = 3) -> str | None:
    """One warning line naming the files of an input folder that are not notes (at most ``shown`` of them, then
    how many more), or None when there are none."""
    if not skipped:
        return None
    files = "file that is not a .txt note" if len(skipped) == 1 else "files that are not .txt notes"
    return f"skipped {len(skipped)} {files}: {some_of([p.name for p in skipped], shown)}"


def iter_note_paths(path: str | Path, skipped: list[Path] | None = None) -> Iterator[Path]:
    """The paths of :func:`walk_note_files`; an entry that cannot be a note is an :class:`InputError`."""
    for entry in walk_note_files(path, skipped):
        if entry.problem is not None:
            raise InputError(entry.path, entry.problem)
        yield entry.path


def read_notes(path: str | Path | Sequence[str | Path], encoding: str = "utf-8",
               skipped: list[Path] | None = None) -> dict[str, Document]:
    """All notes under ``path`` (or under each of several paths) keyed by id; two notes with the same id are an
    error. ``skipped``: as for :func:`walk_note_files`."""
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    docs: dict[str, Document] = {}
    origin: dict[str, Path] = {}
    for p in (p for root in paths for p in iter_note_paths(root, skipped)):
        doc = read_note(p, encoding)
        if doc.id in docs:
            raise InputError(p, f"note id {doc.id!r} also used by {origin[doc.id]}")
        docs[doc.id] = doc
        origin[doc.id] = p
    return docs


STDIN = "-"  # the input name that reads notes from the standard input
STDIN_NOTE_ID = "stdin"  # the id of the note read from the whole standard input
STDIN_FORMATS = ("text", "jsonl")


@dataclass(frozen=True)
class StdinNote:
    """A note read from the standard input, or (``problem`` set) a line that holds none."""

    note_id: str
    line: int | None
    doc: Document | None = None
    problem: str | None = None


def iter_stdin_notes(data: bytes, fmt: str = "text", encoding: str = "utf-8") -> Iterator[StdinNote]:
    """The notes of standard input ``data``: with ``fmt="text"`` the whole input is one note, id ``stdin``, read as
    stored (``\\r`` kept); with ``fmt="jsonl"`` each non-blank line is one JSON object ``{"id": ..., "text": ...}``
    (``doc_id`` is taken for ``id`` too). A line that holds no note
    comes with its ``problem`` (naming the line, never its text)."""
    if fmt == "text":
        if not data:
            yield StdinNote(STDIN_NOTE_ID, None, problem="empty standard input")
            return
        nul = data.find(b"\x00")
        if nul >= 0:
            yield StdinNote(STDIN_NOTE_ID, None, problem=f"binary input (NUL byte at byte {nul})")
            return
        try:
            yield StdinNote(STDIN_NOTE_ID, None, Document(STDIN_NOTE_ID, decode_note(data, "<stdin>", encoding)))
        except InputError as exc:
            yield StdinNote(STDIN_NOTE_ID, None, problem=exc.message)
        return
    if fmt != "jsonl":
        raise ValueError(f"unknown standard input format {fmt!r}; expected one of {', '.join(STDIN_FORMATS)}")
    seen = FirstSeen(unit="line")
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode(encoding))
        except (UnicodeDecodeError, LookupError):
            yield StdinNote("", lineno, problem=f"line {lineno}: not valid {encoding}")
            continue
        except ValueError:
            record = None
        if not isinstance(record, dict):
            yield StdinNote("", lineno, problem=f"line {lineno}: not a JSON object")
            continue
        raw_id = record.get("id", record.get("doc_id"))
        if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
            yield StdinNote("", lineno, problem=f'line {lineno}: no "id" (a string or number)')
            continue
        # the input contract's rules (share_ner.inputs.contract), as for a CSV or Parquet record
        note_id = clean_id(raw_id)
        problem = id_problem(note_id, '"id"') or file_id_problem(note_id)
        if problem is not None:
            yield StdinNote("", lineno, problem=f"line {lineno}: {problem}")
            continue
        text = record.get("text")
        problem = seen.claim(note_id, lineno) or (
            text_problem(text, '"text"', encoding) if isinstance(text, str) else 'no "text" string')
        if problem is not None:
            yield StdinNote(note_id, lineno, problem=f"line {lineno}: {problem}")
        else:
            yield StdinNote(note_id, lineno, Document(note_id, text))
