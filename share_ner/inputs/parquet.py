"""Parquet tables of notes: a ``.parquet`` file, or a directory of them (a table as Spark writes it).

The columns are found as in a MIMIC CSV export (:func:`share_ner.inputs.mimic.layout_of`): ``ROW_ID`` and
``TEXT`` (MIMIC-III, with ``CATEGORY`` and ``ISERROR``) or ``note_id`` and ``text`` (MIMIC-IV, with
``note_type``), names matched ignoring case. Ids are strings or integers, texts strings or binary. A directory's
files are read in the order of :func:`share_ner.inputs.contract.path_order`, each in batches of rows, so memory
does not grow with the table (except for the ids seen, kept to reject duplicates across its files). Records follow
:mod:`share_ner.inputs.contract` and come as :class:`share_ner.inputs.mimic.CsvRecord` (``line`` 0, ``row`` the
row in its file, counted from 1, ``source`` the file); a file that cannot be read ends the table with a fatal
record, as a truncated ``.gz`` ends a CSV export. Needs ``pyarrow``, imported only when a table is read.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from share_ner.document import Document
from share_ner.errors import InputError, ShareNerError
from share_ner.inputs.contract import (
    FirstSeen,
    clean_id,
    column_kinds_problem,
    field_text,
    id_problem,
    is_hidden,
    path_order,
    text_problem,
)
from share_ner.inputs.mimic import CsvRecord, Layout, layout_of

SUFFIX = ".parquet"
BATCH_ROWS = 256


def is_parquet_path(path: str | Path) -> bool:
    """True for a Parquet input: a ``*.parquet`` file, or a directory holding Parquet files and no note files."""
    path = Path(path)
    if path.is_file():
        return path.name.lower().endswith(SUFFIX)
    if not path.is_dir():
        return False
    found = False
    for _, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not is_hidden(d)]
        for name in files:
            lower = name.lower()
            if lower.endswith(".txt"):
                return False
            found = found or lower.endswith(SUFFIX)
    return found


def table_files(path: str | Path) -> list[tuple[str, Path]]:
    """The files of a Parquet input (a file, or every file below a directory but hidden ones), each with its path
    below the input, in the contract's order."""
    path = Path(path)
    if not path.is_dir():
        return [(path.name, path)]
    found = []
    for top, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not is_hidden(d)]
        for name in files:
            if not is_hidden(name):
                full = Path(top) / name
                found.append((full.relative_to(path).as_posix(), full))
    return sorted(found, key=lambda item: path_order(item[0]))


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ShareNerError("Parquet input needs pyarrow: pip install 'share-ner[spark]'") from None
    return pq


def _kind(arrow_type: Any) -> str:
    import pyarrow as pa

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "binary"
    return str(arrow_type)


def _columns(schema: Any) -> dict[str, str]:
    """Upper-cased column name -> the column's name, for case-insensitive lookups."""
    return {name.strip().upper(): name for name in schema.names}


def read_table_layout(path: str | Path, layout: Layout | None = None) -> Layout:
    """Check that ``path`` is a Parquet table of notes and return its layout: an :class:`InputError` naming the
    first file when it cannot be read, has no id or text column, or holds them in other types."""
    pq = _pyarrow()
    files = table_files(path)
    if not files:
        raise InputError(path, "no Parquet files")
    first = files[0][1]
    try:
        schema = pq.read_schema(first)
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a file that is no Parquet: one line
        raise InputError(first, f"cannot read as Parquet ({_first_line(exc)})") from None
    columns = _columns(schema)
    layout = layout or layout_of(schema.names)
    if layout is None:
        raise InputError(first, "not a table of notes: no ROW_ID or note_id column; columns: "
                                + (", ".join(schema.names) or "(none)"))
    for column in (layout.id_column, layout.text_column):
        if column.upper() not in columns:
            raise InputError(first, f"no column {column}; columns: {', '.join(schema.names)}")
    kinds = [_kind(schema.field(columns[c.upper()]).type) for c in (layout.id_column, layout.text_column)]
    problem = column_kinds_problem(layout.id_column, kinds[0], layout.text_column, kinds[1])
    if problem is not None:
        raise InputError(first, problem)
    return layout


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n", 1)[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def iter_parquet_notes(
    path: str | Path,
    *,
    categories: Iterable[str] | None = None,
    include_errors: bool = False,
    encoding: str = "utf-8",
    show_text: bool = False,
    counts: Counter | None = None,
    layout: Layout | None = None,
) -> Iterator[CsvRecord]:
    """The notes of a Parquet input, one row at a time, as :func:`share_ner.inputs.mimic.iter_csv_notes` gives a
    CSV export's (the same arguments; ``show_text`` has nothing to show: rows are never malformed)."""
    pq = _pyarrow()
    layout = read_table_layout(path, layout)
    counts = Counter() if counts is None else counts
    wanted = {c.strip().casefold() for c in categories} if categories else None
    seen = FirstSeen()
    several = Path(path).is_dir()
    files = table_files(path)
    for label, file in files:
        row = 0
        source = str(file)
        try:
            reader = pq.ParquetFile(file)
            columns = _columns(reader.schema_arrow)
            names = {role: columns.get(column.upper()) for role, column in (
                ("id", layout.id_column), ("text", layout.text_column), ("category", layout.category_column),
                ("error", layout.error_column or ""))}
            read = sorted({n for n in names.values() if n})
            for batch in reader.iter_batches(batch_size=BATCH_ROWS, columns=read):
                values = {role: _values(batch.column(read.index(n))) if n else None for role, n in names.items()}
                for k in range(batch.num_rows):
                    row += 1
                    got = _record(values, k, row, source, label if several else None, layout, seen, wanted,
                                  include_errors, encoding, counts)
                    if got is not None:
                        yield got
        except Exception as exc:  # noqa: BLE001 - a corrupt file: pyarrow raises OSError, ArrowInvalid and others
            yield CsvRecord(row + 1, 0, "", None, f"cannot read {label} ({_first_line(exc)}) after row {row} of it; "
                            "later rows are lost", True, source=source)
            return


def _values(column: Any) -> list[Any]:
    """A column's values; strings as their bytes (a string column may hold bytes that are not UTF-8, which the
    contract rejects by offset rather than fail on)."""
    if _kind(column.type) == "string":
        import pyarrow as pa

        column = column.cast(pa.large_binary() if "large" in str(column.type) else pa.binary())
    return column.to_pylist()


def _record(values: dict[str, list[Any] | None], k: int, row: int, source: str, label: str | None, layout: Layout,
            seen: FirstSeen, wanted: set[str] | None, include_errors: bool, encoding: str,
            counts: Counter) -> CsvRecord | None:
    def value(role: str) -> Any:
        column = values[role]
        return None if column is None else column[k]

    if layout.error_column and not include_errors and clean_id(value("error")) == "1":
        counts["iserror"] += 1
        return None
    if wanted is not None and clean_id(value("category")).casefold() not in wanted:
        counts["category"] += 1
        return None
    return check_row(value("id"), value("text"), row, source, label, layout, seen, encoding)


def check_row(raw_id: Any, raw_text: Any, row: int, source: str, label: str | None, layout: Layout,
              seen: FirstSeen | None, encoding: str = "utf-8", duplicate: str | None = None) -> CsvRecord:
    """The record of one selected table row under the contract: its id checked, claimed in ``seen`` (``label``:
    its file's path below the table, None for a table of one file), its text checked. ``duplicate``: the reason
    when the row is known to be a duplicate (``share-ner spark`` finds them in a pass over all the ids)."""
    note_id = clean_id(raw_id)
    problem = id_problem(note_id, layout.id_column)
    if problem is not None:
        return CsvRecord(row, 0, "", None, problem, source=source)
    if seen is not None:
        duplicate = seen.claim(note_id, row, label)
    if duplicate is not None:
        return CsvRecord(row, 0, note_id, None, duplicate, source=source)
    text = field_text(raw_text, encoding)
    problem = text_problem(text, layout.text_column, encoding)
    if problem is not None:
        return CsvRecord(row, 0, note_id, None, problem, source=source, claimed=True)
    return CsvRecord(row, 0, note_id, Document(note_id, text), None, source=source, claimed=True)
