"""Generic file I/O: UTF-8 text files with errors naming the file, atomic writes, and the note id of a file name.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def is_gold_file(path: Path) -> bool:
    return path.name.endswith(GOLD_SUFFIXES)
