"""Streaming readers for MIMIC note exports.

Two layouts are recognised by their header (plain ``.csv`` or gzipped)::

    MIMIC-III NOTEEVENTS.csv[.gz]
    ROW_ID,SUBJECT_ID,HADM_ID,CHARTDATE,CHARTTIME,STORETIME,CATEGORY,DESCRIPTION,CGID,ISERROR,TEXT
    174,22532,167853,2151-08-04,,,"Discharge summary","Report",,,"Admission Date:  [**2151-7-16**] ..."

    MIMIC-IV-Note discharge.csv.gz / radiology.csv.gz
    note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text
    10000032-DS-21,10000032,22595853,DS,21,2180-05-07 00:00:00,2180-05-09 15:26:00,"..."

The note id is ``ROW_ID`` (MIMIC-III) or ``note_id`` (MIMIC-IV); the category
is ``CATEGORY`` or ``note_type``. ``TEXT`` is kept exactly as in the CSV field
(``\\r`` and de-identification placeholders included), so mention offsets are
offsets into that field. Rows are read one at a time: memory does not grow
with the file. A bad row is yielded as a :class:`CsvRecord` carrying a reason
instead of a document, and reading goes on; a truncated or corrupt ``.gz``
ends the file with one such record.
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, NamedTuple

from share_ner.document import Document
from share_ner.errors import InputError

# MIMIC-III discharge summaries reach a few hundred kB; leave room for 5 MB+ notes.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv.gz")
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Layout:
    """Which columns of a note export hold the id, the text, the category and the error flag."""

    name: str
    id_column: str
    text_column: str
    category_column: str
    error_column: str | None


MIMIC_III = Layout("MIMIC-III NOTEEVENTS", "ROW_ID", "TEXT", "CATEGORY", "ISERROR")
MIMIC_IV = Layout("MIMIC-IV-Note", "note_id", "text", "note_type", None)


class CsvRecord(NamedTuple):
    """One data row: its 1-based row number (header excluded), physical line, note id, and a document or a reason.

    Exactly one of ``doc`` and ``reason`` is set. ``fatal`` marks the record
    that ends a file early (truncated or corrupt gzip): no row follows it.
    """

    row: int
    line: int
    note_id: str
    doc: Document | None
    reason: str | None
    fatal: bool = False
    offset: int = 0  # bytes of the (compressed) file read so far, for progress estimates


def is_csv_path(path: str | Path) -> bool:
    """True for files handled as note exports: ``*.csv``, ``*.csv.gz`` or any gzip file."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES) or name.endswith(".gz"):
        return True
    return False


def _open_text(path: Path, encoding: str) -> tuple[IO[str], IO[bytes]]:
    """Open plain or gzipped CSV as text without newline translation; also return the raw file (to close, and
    whose position tells how far reading got).

    Undecodable bytes become lone surrogates (``surrogateescape``) so that one
    bad note is rejected by itself instead of stopping the whole file.
    """
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        magic = raw.read(2)
        raw.seek(0)
        binary: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if magic == GZIP_MAGIC else raw
        if magic != GZIP_MAGIC and path.name.lower().endswith(".gz"):
            raise InputError(path, "not a gzip file (name ends with .gz but the data does not start like gzip)")
        return io.TextIOWrapper(binary, encoding=encoding, errors="surrogateescape", newline=""), raw
    except LookupError:
        raw.close()
        raise InputError(path, f"unknown encoding {encoding!r}") from None
    except BaseException:
        raw.close()
        raise


def _detect_layout(header: list[str], path: Path) -> tuple[Layout, dict[str, int]]:
    columns = {name.strip(): i for i, name in enumerate(header)}
    upper = {name.upper(): i for name, i in columns.items()}
    shown = ",".join(header)[:200]
    for layout in (MIMIC_III, MIMIC_IV):
        if layout.id_column.upper() in upper:
            break
    else:
        raise InputError(
            path, f"not a MIMIC-III NOTEEVENTS or MIMIC-IV-Note export: no ROW_ID or note_id column in header {shown!r}", 1
        )
    missing = [c for c in (layout.text_column,) if c.upper() not in upper]
    if missing:
        raise InputError(path, f"{layout.name} export has no {layout.text_column} column; header is {shown!r}", 1)
    wanted = [layout.id_column, layout.text_column, layout.category_column] + (
        [layout.error_column] if layout.error_column else []
    )
    index = {c: upper[c.upper()] for c in wanted if c.upper() in upper}
    return layout, index


def read_header(path: str | Path, encoding: str = "utf-8") -> Layout:
    """Check that ``path`` is a readable note export and return its layout (an :class:`InputError` if not)."""
    path = Path(path)
    f, raw = _open_text(path, encoding)
    try:
        header = next(csv.reader(f), None)
    except (EOFError, OSError, zlib.error, csv.Error) as exc:
        raise InputError(path, f"cannot read the header: {_describe(exc)}", 1) from None
    finally:
        f.close()
        raw.close()
    if not header:
        raise InputError(path, "empty file: no CSV header")
    return _detect_layout(header, path)[0]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the gzip stream ends early (truncated file)"
    if isinstance(exc, gzip.BadGzipFile):
        return f"corrupt gzip data ({exc})"
    if isinstance(exc, zlib.error):
        return f"corrupt gzip data ({exc})"
    return str(exc) or type(exc).__name__


def _first_bad_char(text: str) -> int | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def text_problem(text: str, column: str, encoding: str = "utf-8") -> str | None:
    """Why a note's text field (decoded with ``surrogateescape``) cannot be tagged, or None: empty, undecodable
    bytes, NUL bytes. The reason names the column and a character offset, never the text."""
    if not text:
        return f"{column} is empty"
    bad = _first_bad_char(text)
    if bad is not None:
        return f"{column} is not valid {encoding} at character {bad}"
    if "\x00" in text:
        return f"{column} contains NUL bytes at character {text.index(chr(0))}"
    return None


def iter_csv_notes(
    path: str | Path,
    *,
    categories: Iterable[str] | None = None,
    include_errors: bool = False,
    encoding: str = "utf-8",
) -> Iterator[CsvRecord]:
    """Yield the notes of a MIMIC export one row at a time.

    Rows flagged ``ISERROR == "1"`` are skipped unless ``include_errors``;
    ``categories`` keeps rows whose category matches one of them (case and
    surrounding spaces ignored). Skipped rows yield nothing; malformed rows,
    empty and undecodable notes yield a record with a ``reason``.
    """
    path = Path(path)
    wanted = {c.strip().casefold() for c in categories} if categories else None
    f, raw = _open_text(path, encoding)
    with f, raw:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
        except (EOFError, OSError, zlib.error, csv.Error) as exc:
            raise InputError(path, f"cannot read the header: {_describe(exc)}", 1) from None
        if not header:
            raise InputError(path, "empty file: no CSV header")
        layout, index = _detect_layout(header, path)
        i_id, i_text = index[layout.id_column], index[layout.text_column]
        i_cat = index.get(layout.category_column)
        i_err = index.get(layout.error_column) if layout.error_column else None
        width = len(header)
        row = 0
        while True:
            line = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except (EOFError, OSError, zlib.error) as exc:
                yield CsvRecord(row + 1, line, "", None, f"{_describe(exc)} after row {row}; later rows are lost", True)
                return
            except csv.Error as exc:
                row += 1
                yield CsvRecord(row, line, "", None, f"line {line}: malformed CSV ({exc})")
                continue
            row += 1
            if len(fields) != width:
                note_id = fields[i_id].strip() if len(fields) > i_id else ""
                yield CsvRecord(row, line, note_id, None, f"line {line}: {len(fields)} fields, expected {width}")
                continue
            note_id = fields[i_id].strip()
            if i_err is not None and not include_errors and fields[i_err].strip() == "1":
                continue
            if wanted is not None and (i_cat is None or fields[i_cat].strip().casefold() not in wanted):
                continue
            if not note_id:
                yield CsvRecord(row, line, "", None, f"line {line}: empty {layout.id_column}")
                continue
            text = fields[i_text]
            problem = text_problem(text, layout.text_column, encoding)
            if problem is not None:
                yield CsvRecord(row, line, note_id, None, problem)
                continue
            yield CsvRecord(row, line, note_id, Document(note_id, text), None, offset=raw.tell())
