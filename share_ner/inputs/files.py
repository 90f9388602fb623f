"""Reading notes exactly as stored.

Offsets in every annotation format count characters of the text as stored,
``\r`` included, so notes are always read with ``newline=""``.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from share_ner.document import Document
from share_ner.errors import InputError
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


def walk_note_files(path: str | Path) -> Iterator[NoteEntry]:
    """Note files (``*.txt``, gold files left out) under ``path`` (a file, or a directory searched recursively),
    streamed in a fixed order: each directory's entries sorted by name, sub-directories walked where they sort.

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
    yield from _walk_dir(root, st, seen)


def _walk_dir(directory: Path, st: os.stat_result, seen: set[tuple[int, int]]) -> Iterator[NoteEntry]:
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return
    seen.add(key)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(directory, f"cannot list directory: {exc.strerror or exc}") from None
    for entry in entries:
        note_name = entry.name.endswith(".txt") and not is_gold_file(Path(entry.name))
        try:
            est = entry.stat()  # follows symbolic links
        except OSError as exc:
            if note_name:
                what = "symbolic link loop" if exc.errno == errno.ELOOP else "dangling symbolic link"
                yield NoteEntry(Path(entry.path), f"{what} ({exc.strerror or exc})")
            continue
        if stat.S_ISDIR(est.st_mode):
            yield from _walk_dir(Path(entry.path), est, seen)
        elif note_name:
            yield NoteEntry(Path(entry.path), _not_a_file(est.st_mode))


def iter_note_paths(path: str | Path) -> Iterator[Path]:
    """The paths of :func:`walk_note_files`; an entry that cannot be a note is an :class:`InputError`."""
    for entry in walk_note_files(path):
        if entry.problem is not None:
            raise InputError(entry.path, entry.problem)
        yield entry.path


def read_notes(path: str | Path | Sequence[str | Path], encoding: str = "utf-8") -> dict[str, Document]:
    """All notes under ``path`` (or under each of several paths) keyed by id; two notes with the same id are an
    error."""
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    docs: dict[str, Document] = {}
    origin: dict[str, Path] = {}
    for p in (p for root in paths for p in iter_note_paths(root)):
        doc = read_note(p, encoding)
        if doc.id in docs:
            raise InputError(p, f"note id {doc.id!r} also used by {origin[doc.id]}")
        docs[doc.id] = doc
        origin[doc.id] = p
    return docs
