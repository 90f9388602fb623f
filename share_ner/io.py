"""Generic file I/O: UTF-8 text files with errors naming the file, atomic writes, and the note id of a file name.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from share_ner.errors import InputError

GOLD_SUFFIXES = (".pipe.txt", ".txt.pipe", ".pipe")


def doc_id_from_path(path: str | Path) -> str:
    """The note id of a note or annotation file: its name without ``.txt``/``.pipe.txt``/``.ann``... suffixes."""
    name = Path(path).name
    lower = name.lower()  # ECG.TXT is note ECG, as ecg.txt is note ecg
    for suffix in GOLD_SUFFIXES + (".txt", ".ann", ".jsonl"):
        if lower.endswith(suffix):
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


def read_json_file(path: str | Path, what: str = "file") -> Any:
    """A UTF-8 JSON file's value; invalid JSON is an error naming the file and line."""
    path = Path(path)
    try:
        return json.loads(read_text_file(path, what))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None


def read_tsv_pairs(path: str | Path, header: tuple[str, str], expected: str,
                   valid: Callable[[str, str], object] = lambda first, second: first.strip()) -> list[tuple[str, str]]:
    """The rows of a two-column TSV list (:func:`read_tsv_rows`)."""
    return [(a, b) for a, b in read_tsv_rows(path, header, expected, valid)]


def read_tsv_rows(path: str | Path, header: tuple[str, ...], expected: str,
                  valid: Callable[..., object] = lambda first, *rest: first.strip()) -> list[tuple[str, ...]]:
    """The rows of a TSV list whose first line that is not a ``#`` comment is ``header``; blank and ``#`` lines are
    skipped. A wrong header, or a row that has not one field per column or is not ``valid`` (called with the
    fields), is an error naming the file and line (``expected`` says what a row should be)."""
    path = Path(path)
    lines = read_text_file(path, "list").splitlines()
    start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    if start == len(lines) or tuple(lines[start].split("\t")) != header:
        raise InputError(path, f"expected the header '{'<TAB>'.join(header)}'", start + 1)
    rows = []
    for lineno, line in enumerate(lines[start + 1:], start=start + 2):
        if not line.strip() or line.startswith("#"):
            continue
        fields = tuple(line.split("\t"))
        if len(fields) != len(header) or not valid(*fields):
            raise InputError(path, f"expected {expected}", lineno)
        rows.append(fields)
    return rows


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read a MB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
    return path.name.lower().endswith(GOLD_SUFFIXES)
