"""Mentions as a Parquet table: one row per mention, the layout shared by ``share-ner tag --format parquet`` and
``share-ner spark``.

Columns::

    note_id   string                              the note's id
    mention   int32                               the mention's index in its note (0, 1, ...), in output order
    spans     list<struct<start: int32, end: int32>>  0-based, end-exclusive character offsets, text order
    text      string                              the spans' words joined by one space
    cui       string                              a UMLS CUI or "CUI-less"
    name      string                              the concept's preferred name; null when unknown (read when present)
    negation, uncertainty, subject, conditional, generic, course, severity, doctime, body_location
              string                              ShARe/CLEF 2014 attributes; null when they were not computed

A note without mentions has no row (the run's manifest and summary count it). Needs ``pyarrow``
(``pip install 'share-ner[spark]'``); it is imported only when a table is written or read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from share_ner.document import ATTRIBUTE_NAMES, Attributes, Mention
from share_ner.errors import InputError, ShareNerError

SUFFIX = ".parquet"
BASE_COLUMNS = ("note_id", "mention", "spans", "text", "cui", "name")
_OPTIONAL = ("name",)  # tables written before the column existed are read without it
COLUMNS = (*BASE_COLUMNS, *ATTRIBUTE_NAMES)


def require_pyarrow() -> Any:
    """The ``pyarrow`` module, or a one-line error saying which extra installs it."""
    try:
        import pyarrow
    except ImportError:
        raise ShareNerError("Parquet output needs pyarrow: pip install 'share-ner[spark]'") from None
    return pyarrow


def arrow_schema(attributes: bool = True) -> Any:
    """The table's Arrow schema (without the attribute columns when ``attributes`` is False)."""
    pa = require_pyarrow()
    span = pa.struct([pa.field("start", pa.int32()), pa.field("end", pa.int32())])
    fields = [pa.field("note_id", pa.string()), pa.field("mention", pa.int32()), pa.field("spans", pa.list_(span)),
              pa.field("text", pa.string()), pa.field("cui", pa.string()), pa.field("name", pa.string())]
    if attributes:
        fields += [pa.field(name, pa.string()) for name in ATTRIBUTE_NAMES]
    return pa.schema(fields)


def mention_rows(doc_id: str, mentions: Sequence[Mention], text: str, attributes: bool = True) -> list[dict[str, Any]]:
    """The table rows of one note's mentions (``text``: the note, for each mention's words)."""
    rows = []
    for k, m in enumerate(mentions):
        row: dict[str, Any] = {"note_id": doc_id, "mention": k,
                               "spans": [{"start": s, "end": e} for s, e in m.spans],
                               "text": m.text(text), "cui": m.cui, "name": m.name}
        if attributes:
            values = m.attributes.to_dict() if m.attributes is not None else {}
            row.update({name: values.get(name) for name in ATTRIBUTE_NAMES})
        rows.append(row)
    return rows


def rows_table(rows: Iterable[dict[str, Any]], attributes: bool = True) -> Any:
    """A ``pyarrow.Table`` of :func:`mention_rows` rows."""
    pa = require_pyarrow()
    return pa.Table.from_pylist(list(rows), schema=arrow_schema(attributes))


def write_parquet(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write :func:`mention_rows` rows as one Parquet file (the caller makes it atomic)."""
    import pyarrow.parquet as pq

    pq.write_table(rows_table(rows), str(path))


def read_parquet(path: str | Path) -> dict[str, list[Mention]]:
    """Mentions keyed by note id from a Parquet file or a directory of them (a ``share-ner tag`` shard directory or a
    ``share-ner spark`` table; hidden files, ``_SUCCESS`` and other ``_`` files are skipped), each note's mentions
    in ``mention`` order. Attributes are restored when the table carries them."""
    require_pyarrow()
    import pyarrow.dataset as ds

    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file or directory")
    try:
        table = ds.dataset(str(path), format="parquet", partitioning="hive",
                           exclude_invalid_files=True).to_table()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for unreadable files
        raise InputError(path, f"not a readable Parquet table ({type(exc).__name__})") from None
    missing = [c for c in BASE_COLUMNS if c not in table.column_names and c not in _OPTIONAL]
    if missing:
        raise InputError(path, f"no {missing[0]} column in this Parquet table; columns: {', '.join(table.column_names)}")
    names = [n for n in ATTRIBUTE_NAMES if n in table.column_names]
    found: dict[str, list[tuple[int, Mention]]] = {}
    for row in table.to_pylist():
        attrs = None
        if names and any(row[n] is not None for n in names):
            attrs = Attributes.from_dict({n: row[n] for n in names if row[n] is not None})
        spans = tuple((int(s["start"]), int(s["end"])) for s in row["spans"])
        found.setdefault(row["note_id"], []).append((row["mention"], Mention(row["note_id"], spans, row["cui"],
                                                                              attributes=attrs,
                                                                              name=row.get("name"))))
    return {doc_id: [m for _, m in sorted(ms, key=lambda x: x[0])] for doc_id, ms in found.items()}
