"""Reading notes exactly as stored.

Offsets in every annotation format count characters of the text as stored,
``\\r`` included, so notes are always read with ``newline=""``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Sequence

from share_ner.document import Document
from share_ner.errors import InputError

GOLD_SUFFIXES = (".pipe.txt", ".txt.pipe", ".pipe")


def doc_id_from_path(path: str | Path) -> str:
    """The note id of a note or annotation file: its name without ``.txt``/``.pipe.txt``/``.ann``... suffixes."""
    name = Path(path).name
    for suffix in GOLD_SUFFIXES + (".txt", ".ann", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def decode_note(data: bytes, source: str | Path, encoding: str = "utf-8") -> str:
    """Decode note bytes, or raise an :class:`InputError` naming ``source`` and the bad byte offset."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(
            source, f"not valid {encoding} (byte {exc.start}); pass --encoding for another encoding"
        ) from None
    except LookupError:
        raise InputError(source, f"unknown encoding {encoding!r}") from None


def read_text_file(path: str | Path, what: str = "file") -> str:
    """A UTF-8 text file (annotations, settings, lists) as a string; a leading byte-order mark is dropped.

    Errors name the file and say what it was read as: ``cannot read cluster file: ...``,
    ``cluster file is not valid UTF-8 (byte 12)``.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not valid UTF-8 (byte {exc.start})") from None


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write a file by temporary file + rename in the same folder, so a reader never sees half of it.

    The temporary file is ``.<name>.tmp<pid>``; it is removed when the write fails.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: str | Path, text: str) -> None:
    """:func:`atomic_write_bytes` of UTF-8 text, newlines written as given."""
    atomic_write_bytes(path, text.encode("utf-8"))


def read_note(path: str | Path, encoding: str = "utf-8", doc_id: str | None = None) -> Document:
    """Read one note without newline translation."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read note: {exc.strerror or exc}") from None
    return Document(doc_id or doc_id_from_path(path), decode_note(data, path, encoding))


def is_gold_file(path: Path) -> bool:
    return path.name.endswith(GOLD_SUFFIXES)


def iter_note_paths(path: str | Path) -> Iterator[Path]:
    """Note files under ``path`` (a file, or a directory searched recursively), sorted; gold files are skipped."""
    path = Path(path)
    if path.is_file():
        yield path
        return
    if not path.is_dir():
        raise InputError(path, "no such file or directory")
    for p in sorted(path.rglob("*.txt")):
        if p.is_file() and not is_gold_file(p):
            yield p


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
