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
with the file (except for the set of note ids seen, kept to reject duplicates).
A bad row is yielded as a :class:`CsvRecord` carrying a reason instead of a
document, and reading goes on; a truncated or corrupt ``.gz`` ends the file
with one such record.

Records are cut from physical lines here, not by the ``csv`` module alone: a
record whose quoted text is never closed would otherwise swallow the records
after it. While a quote is open, a line that starts like a record of the
layout (the columns before the text column in their expected form: integer
ids, dates) ends the open record, which is rejected by its own id; the line
starts the next record. Reasons name rows, lines and byte offsets, never note
text (``show_text=True`` adds the first characters of a bad record, for a
user who asks for them).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import re
import sys
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, NamedTuple

from share_ner.document import Document
from share_ner.errors import InputError, ShareNerError
from share_ner.inputs.contract import BAD_ID_RE, FirstSeen, clean_id, id_problem, text_problem

# MIMIC-III discharge summaries reach a few hundred kB; leave room for 5 MB+ notes.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv.gz")
GZIP_MAGIC = b"\x1f\x8b"
SHOWN_CHARS = 200  # of a bad record, with show_text

# Columns whose values are integers or dates in both layouts: checked when deciding whether a line starts a record.
_INTEGER_COLUMNS = {"ROW_ID", "SUBJECT_ID", "HADM_ID", "CGID", "ISERROR", "NOTE_SEQ"}
_DATE_COLUMNS = {"CHARTDATE", "CHARTTIME", "STORETIME"}


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
    ``note_id`` of a rejected row is empty unless the row's id could be read
    safely (it is never a piece of note text).
    """

    row: int
    line: int
    note_id: str
    doc: Document | None
    reason: str | None
    fatal: bool = False
    offset: int = 0  # bytes of the (compressed) file read so far, for progress estimates
    byte: int = 0  # byte offset of the record's first line in the (uncompressed) CSV
    claimed: bool = False  # the record holds its note id (a later record with that id is a duplicate)
    source: str = ""  # the file, when the input is a table of several (a Parquet directory)


def is_csv_path(path: str | Path) -> bool:
    """True for files handled as note exports: ``*.csv``, ``*.csv.gz`` or any gzip file."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES) or name.endswith(".gz"):
        return True
    return False


def check_encoding(encoding: str, source: str | Path | None = None) -> None:
    """Raise an :class:`InputError` unless ``encoding`` is known and writes ``"``, ``,`` and line breaks as ASCII
    does (records are cut on those bytes)."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        if source is None:
            raise ShareNerError(f"unknown encoding {encoding!r} (--encoding)") from None
        raise InputError(source, f"unknown encoding {encoding!r}") from None
    if '",\r\n'.encode(encoding, "replace") != b'",\r\n':
        message = f"encoding {encoding!r} is not ASCII-compatible; convert the file to UTF-8"
        raise ShareNerError(f"{message} (--encoding)") if source is None else InputError(source, message)


def _open_binary(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """The (decompressed) bytes of a plain or gzipped CSV, and the raw file (to close, and whose position tells
    how far reading got)."""
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    return _decompressed(raw, path), raw


def _decompressed(raw: IO[bytes], source: str | Path) -> IO[bytes]:
    """The bytes of ``raw`` (a file of a plain or gzipped CSV, at its start), decompressed when it is gzip."""
    magic = raw.read(2)
    raw.seek(0)
    if magic == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if str(source).lower().endswith(".gz"):
        raw.close()
        raise InputError(source, "not a gzip file (name ends with .gz but the data does not start like gzip)")
    return raw


def _describe(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the gzip stream ends early (truncated file)"
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return f"corrupt gzip data ({exc})"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__


def _shown(text: str, show_text: bool) -> str:
    if not show_text:
        return ""
    return f"; text: {text[:SHOWN_CHARS]!r}"


class _Lines:
    """Physical lines of the CSV bytes, with line numbers and byte offsets, and one line of push-back;
    ``readline`` gives the next line with its line break (b"" at the end)."""

    def __init__(self, readline: Callable[[], bytes]) -> None:
        self.readline = readline
        self.number = 0  # of the last line returned
        self.byte = 0  # offset just after the last line returned
        self.back: bytes | None = None

    def next(self) -> bytes:
        if self.back is not None:
            line, self.back = self.back, None
        else:
            line = self.readline()
        self.number += 1
        self.byte += len(line)
        return line

    def push_back(self, line: bytes) -> None:
        self.back = line
        self.number -= 1
        self.byte -= len(line)


# Python 3.10's csv refuses a NUL ("line contains NUL"), later ones read it as a character: on every Python a NUL
# is read as a character, a lone surrogate (which no text decoded with surrogateescape holds) standing in for it.
_NUL_STAND_IN = "\udc00"


def _csv_rows(text: str) -> list[list[str]]:
    """The CSV records of ``text``, NUL characters read as any other."""
    if "\x00" not in text:
        return list(csv.reader(io.StringIO(text, newline="")))
    rows = csv.reader(io.StringIO(text.replace("\x00", _NUL_STAND_IN), newline=""))
    return [[field.replace(_NUL_STAND_IN, "\x00") for field in row] for row in rows]


def _header_fields(lines: _Lines, path: str | Path, encoding: str, show_text: bool) -> list[str]:
    try:
        data = lines.next()
        while data.count(b'"') % 2:
            more = lines.next()
            if not more:
                raise InputError(path, "the header has an unterminated quote", 1)
            data += more
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError(path, f"cannot read the header: {_describe(exc)}", 1) from None
    if not data.strip():
        raise InputError(path, "empty file: no CSV header")
    text = data.decode(encoding, "surrogateescape").lstrip("\ufeff")
    try:
        rows = _csv_rows(text)
    except csv.Error as exc:
        raise InputError(path, f"the header is not valid CSV ({exc}){_shown(text, show_text)}", 1) from None
    return rows[0] if rows else []


def layout_of(columns: Iterable[str]) -> Layout | None:
    """The MIMIC layout whose id column is among ``columns`` (case and surrounding spaces ignored), or None."""
    upper = {name.strip().upper() for name in columns}
    return next((layout for layout in (MIMIC_III, MIMIC_IV) if layout.id_column.upper() in upper), None)


def _detect_layout(header: list[str], path: str | Path, show_text: bool = False,
                   layout: Layout | None = None) -> tuple[Layout, dict[str, int]]:
    """The layout of a header (``layout``: the one asked for, whose id and text columns must be there) and the
    index of each of its columns found."""
    columns = {name.strip(): i for i, name in enumerate(header)}
    upper = {name.upper(): i for name, i in columns.items()}
    # The first line may be a note, not a header: it is described by its size, not shown, unless asked for.
    shown = f"{len(header)} fields" + _shown(",".join(header), show_text)
    if layout is None:
        layout = layout_of(columns)
        if layout is None:
            raise InputError(
                path, f"not a MIMIC-III NOTEEVENTS or MIMIC-IV-Note export: no ROW_ID or note_id column in the "
                      f"first line ({shown}); the file needs its header row", 1)
    for column in (layout.id_column, layout.text_column):
        if column.upper() not in upper:
            raise InputError(path, f"{layout.name} export has no {column} column; header has {shown}", 1)
    wanted = [layout.id_column, layout.text_column, layout.category_column] + (
        [layout.error_column] if layout.error_column else []
    )
    index = {c: upper[c.upper()] for c in wanted if c.upper() in upper}
    return layout, index


def _record_start(header: list[str], layout: Layout, i_id: int, i_text: int) -> re.Pattern[bytes] | None:
    """A pattern matching the start of a line that begins a record: the columns before the text column, each in
    its expected form (the id non-empty, integer columns digits, date columns dates), then the comma."""
    if i_text == 0:
        return None
    simple = rb'(?:"[^"\r\n]*"|[^,"\r\n]*)'
    parts = []
    for i, name in enumerate(header[:i_text]):
        key = name.strip().upper()
        if key in _INTEGER_COLUMNS:
            body = rb"\d+" if key == layout.id_column.upper() else rb"\d*"
            parts.append(rb'(?:"' + body + rb'"|' + body + rb")")
        elif key in _DATE_COLUMNS:
            date = rb"(?:\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?)?"
            parts.append(rb'(?:"' + date + rb'"|' + date + rb")")
        elif key == layout.id_column.upper():
            parts.append(rb'(?:"[^"\r\n]+"|[^,"\r\n]+)')
        else:
            parts.append(simple)
        if i == i_id:
            parts[-1] = rb"(?P<id>" + parts[-1] + rb")"  # captured: the id of a record cut short
    return re.compile(rb",".join(parts) + rb",")


def _safe_id(value: str) -> str:
    """``value`` when it can be shown as a note id (short, no line break, no '||'), else an empty string."""
    value = value.strip().strip('"')
    if not value or len(value) > 64 or BAD_ID_RE.search(value) or " " in value:
        return ""
    return value


def read_header(path: str | Path, encoding: str = "utf-8", *, show_text: bool = False,
                layout: Layout | None = None) -> Layout:
    """Check that ``path`` is a readable note export and return its layout (an :class:`InputError` if not)."""
    path = Path(path)
    check_encoding(encoding, path)
    binary, raw = _open_binary(path)
    try:
        header = _header_fields(_Lines(binary.readline), path, encoding, show_text)
    finally:
        binary.close()
        raw.close()
    return _detect_layout(header, path, show_text, layout)[0]


def header_fields(lines: Iterable[bytes], source: str, encoding: str = "utf-8", *, show_text: bool = False
                  ) -> list[str]:
    """The column names of an export given as its first lines (each with its line break)."""
    check_encoding(encoding, source)
    it = iter(lines)
    return _header_fields(_Lines(lambda: next(it, b"")), source, encoding, show_text)


def header_layout(header: list[str], source: str, *, show_text: bool = False, layout: Layout | None = None) -> Layout:
    """The layout of an export with the columns ``header`` (``layout``: the columns asked for, checked to be
    there), or the :class:`InputError` of :func:`read_header`."""
    return _detect_layout(header, source, show_text, layout)[0]


def iter_csv_notes(
    path: str | Path,
    *,
    categories: Iterable[str] | None = None,
    include_errors: bool = False,
    encoding: str = "utf-8",
    show_text: bool = False,
    counts: Counter | None = None,
    layout: Layout | None = None,
) -> Iterator[CsvRecord]:
    """Yield the notes of a MIMIC export one row at a time.

    Rows flagged ``ISERROR == "1"`` are skipped unless ``include_errors``;
    ``categories`` keeps rows whose category matches one of them (case and
    surrounding spaces ignored). Skipped rows yield nothing and are counted in
    ``counts`` (``"iserror"``, ``"category"``); blank lines are not rows.
    Malformed rows, empty and undecodable notes, note ids that would break an
    output line and second copies of a note id yield a record with a ``reason``
    (the rules of :mod:`share_ner.inputs.contract`). ``layout``: the columns to
    read, instead of those the header's layout names.
    """
    path = Path(path)
    check_encoding(encoding, path)
    binary, raw = _open_binary(path)
    with binary, raw:
        yield from _records(_Lines(binary.readline), path, raw.tell, categories=categories,
                            include_errors=include_errors, encoding=encoding, show_text=show_text, counts=counts,
                            layout=layout)


def iter_csv_lines(lines: Iterable[bytes], source: str, **how: Any) -> Iterator[CsvRecord]:
    """:func:`iter_csv_notes` of an export given as its lines, each with its line break (``share-ner spark``
    reads a file's lines with Spark and parses them here); ``how``: :func:`iter_csv_notes`'s keywords."""
    check_encoding(how.get("encoding", "utf-8"), source)
    it = iter(lines)
    yield from _records(_Lines(lambda: next(it, b"")), source, None, **how)


def export_bytes(data: bytes, source: str) -> IO[bytes]:
    """The CSV of an export given as the bytes of its file, plain or gzipped (``share-ner spark`` reads a file Spark
    cannot decompress so, to read it as ``share-ner tag`` does): a binary file object of its lines."""
    return _decompressed(io.BytesIO(data), source)


def iter_csv_bytes(data: bytes, source: str, **how: Any) -> Iterator[CsvRecord]:
    """:func:`iter_csv_notes` of an export given as the bytes of its file (:func:`export_bytes`)."""
    check_encoding(how.get("encoding", "utf-8"), source)
    yield from _records(_Lines(export_bytes(data, source).readline), source, None, **how)


def _records(lines: _Lines, path: str | Path, tell: Callable[[], int] | None, *,
             categories: Iterable[str] | None = None, include_errors: bool = False, encoding: str = "utf-8",
             show_text: bool = False, counts: Counter | None = None, layout: Layout | None = None
             ) -> Iterator[CsvRecord]:
    counts = Counter() if counts is None else counts
    wanted = {c.strip().casefold() for c in categories} if categories else None
    header = _header_fields(lines, path, encoding, show_text)
    layout, index = _detect_layout(header, path, show_text, layout)
    i_id, i_text = index[layout.id_column], index[layout.text_column]
    i_cat = index.get(layout.category_column)
    i_err = index.get(layout.error_column) if layout.error_column else None
    start = _record_start(header, layout, i_id, i_text)
    width = len(header)
    seen = FirstSeen()
    row = 0
    while True:
        byte, line = lines.byte, lines.number + 1
        cut: str | None = None
        try:
            data = lines.next()
            if not data:
                return
            if not data.strip():
                continue
            quotes = data.count(b'"')
            parts = [data]
            while quotes % 2:
                more = lines.next()
                if not more:
                    cut = f"line {line}: unterminated quote (the record runs to the end of the file)"
                    break
                if start is not None and start.match(more):
                    lines.push_back(more)
                    cut = (f"line {line}: unterminated quote (the record runs into the next record, "
                           f"line {lines.number + 1}); cut there")
                    break
                parts.append(more)
                quotes += more.count(b'"')
        except (EOFError, OSError, zlib.error) as exc:
            yield CsvRecord(row + 1, line, "", None, f"{_describe(exc)} after row {row}; later rows are lost",
                            True, byte=byte)
            return
        row += 1
        text = b"".join(parts).decode(encoding, "surrogateescape")
        if cut is not None:
            m = start.match(parts[0]) if start is not None else None
            found = m.groupdict().get("id") if m else None
            note_id = _safe_id(found.decode(encoding, "surrogateescape")) if found else ""
            yield CsvRecord(row, line, note_id, None, cut + _shown(text, show_text), byte=byte)
            continue
        try:
            rows = _csv_rows(text)
        except csv.Error as exc:
            yield CsvRecord(row, line, "", None, f"line {line}: malformed CSV ({exc}){_shown(text, show_text)}",
                            byte=byte)
            continue
        fields = rows[0] if len(rows) == 1 else []
        if len(rows) != 1 or len(fields) != width:
            got = f"{len(fields)} fields" if len(rows) == 1 else f"{len(rows)} records on one line"
            note_id = _safe_id(fields[i_id]) if len(fields) > i_id else ""
            yield CsvRecord(row, line, note_id, None, f"line {line}: {got}, expected {width}"
                            + _shown(text, show_text), byte=byte)
            continue
        if i_err is not None and not include_errors and fields[i_err].strip() == "1":
            counts["iserror"] += 1
            continue
        if wanted is not None and (i_cat is None or fields[i_cat].strip().casefold() not in wanted):
            counts["category"] += 1
            continue
        note_id = clean_id(fields[i_id])
        problem = id_problem(note_id, layout.id_column)
        if problem is not None:
            yield CsvRecord(row, line, "", None, f"line {line}: {problem}"
                            + (_shown(note_id, show_text) if note_id else ""), byte=byte)
            continue
        duplicate = seen.claim(note_id, row)
        if duplicate is not None:
            yield CsvRecord(row, line, note_id, None, f"line {line}: {duplicate}", byte=byte)
            continue
        note = fields[i_text]
        problem = text_problem(note, layout.text_column, encoding)
        if problem is not None:
            yield CsvRecord(row, line, note_id, None, problem, byte=byte, claimed=True)
            continue
        yield CsvRecord(row, line, note_id, Document(note_id, note), None, offset=tell() if tell else 0, byte=byte,
                        claimed=True)
