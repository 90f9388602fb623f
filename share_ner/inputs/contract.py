"""The input contract: which records of an input are notes, what their ids are, and why any other one is rejected.

``share-ner tag`` (:mod:`share_ner.batch.runner`) and ``share-ner spark`` (:mod:`share_ner.spark.inputs`) read
MIMIC CSV exports, Parquet tables and directories of note files through these rules, so that for the same input
they give the same notes, the same ids, the same rejects with the same reasons and the same counts (the JSON Lines
of ``tag -`` follow them too, a line for a row, and refuse ids that cannot name an output file):

- **Ids.** A record's id is its id field without surrounding whitespace (an integer column: its digits), so
  ``' x '`` and ``'x'`` are one id. An empty id, or one holding ``||`` (the ShARe pipe separator) or a control
  character (tab, line break: they split the lines of every output format), is rejected, and claims nothing.
- **One id, one note.** The first record with an id, in input order (a table's files by path, then rows in file
  order), is the note; every later record with that id is rejected as ``duplicate note id (first at row N)``
  (``... row N of FILE`` when the first is in another file of the table). The first is kept rather than the id
  suffixed: a suffixed id is not the id the hospital's other systems know. A record that claimed its id keeps it
  even when its text is then rejected.
- **Text.** An empty text, bytes that do not decode, NUL bytes: rejected, by a reason naming a character offset.
- **Note files.** A note file's id is its name without ``.txt``. A name starting with ``.`` or ``_`` is rejected
  unread (Hadoop's and Spark's listings skip such files, so neither command reads them); so is a name holding
  ``||`` or a control character, and a 0-byte file (``empty file``). Where one table holds the notes of a whole
  directory (Spark's mentions, the JSON Lines ``tag`` writes to stdout) a note below a sub-directory is named by
  its path below the input, ``2019/note1``, as ``tag --out`` keeps it apart in ``OUT/2019/note1.pipe.txt``.
- **Files of a table**, in order: every file below a Parquet directory but hidden ones (a name, or a directory's
  name, starting with ``.`` or ``_``, as Spark reads a table), ordered by their path's parts.

Reasons name rows, lines, columns and offsets, never note text.
"""

from __future__ import annotations

import re
from typing import Any

# '||' separates ShARe pipe fields; control characters (tab, line breaks) split the lines of every output format.
BAD_ID_RE = re.compile(r"\|\||[\x00-\x1f\x7f]")
HIDDEN_PREFIXES = (".", "_")


def clean_id(value: Any) -> str:
    """A record's id field as its id: surrounding whitespace removed; an integer as its digits; None as ''."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "surrogateescape")
    return str(value).strip()


def id_problem(note_id: str, column: str) -> str | None:
    """Why ``note_id`` (cleaned) cannot be a note's id, or None. The reason never quotes the id."""
    if not note_id:
        return f"empty {column}"
    if BAD_ID_RE.search(note_id):
        return f"{column} contains '||' or a control character (it would break the output lines)"
    bad = _first_bad_char(note_id)
    if bad is not None:
        return f"{column} is not valid utf-8 at character {bad}"
    return None


def duplicate_reason(first_row: int, first_source: str | None = None, unit: str = "row") -> str:
    """The reason of a record whose id an earlier record claimed (``first_source``: that record's file, when it is
    not the record's own; ``unit``: what a record is called, "row" of a table or "line" of JSON Lines)."""
    at = f"{unit} {first_row}" + (f" of {first_source}" if first_source else "")
    return f"duplicate note id (first at {at})"


class FirstSeen:
    """The record that first claimed each id: ``claim`` it for a record, and get None (the id is the record's) or
    the duplicate reason. Memory grows with the ids seen."""

    def __init__(self, unit: str = "row") -> None:
        self._first: dict[str, tuple[str | None, int]] = {}
        self._unit = unit

    def claim(self, note_id: str, row: int, source: str | None = None) -> str | None:
        first = self._first.setdefault(note_id, (source, row))
        if first == (source, row):
            return None
        return duplicate_reason(first[1], first[0] if first[0] != source else None, self._unit)


def field_text(value: Any, encoding: str = "utf-8") -> str:
    """A text field as a string: bytes decoded with ``surrogateescape`` (so that :func:`text_problem` finds the
    first byte that does not decode), None as ''."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode(encoding, "surrogateescape")
    return str(value)


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


def file_id_problem(note_id: str) -> str | None:
    """Why ``note_id`` cannot name a note's output file (``tag --out`` writes ``OUT/<id>.pipe.txt``), or None."""
    if re.search(r"[/\\]", note_id) or note_id in (".", ".."):
        return "id holds '/' or '\\', or is . or .. (it names the note's output file)"
    return None


def is_hidden(name: str) -> bool:
    """Whether a file or directory name is one Hadoop's and Spark's listings skip."""
    return name.startswith(HIDDEN_PREFIXES)


def note_name_problem(name: str) -> str | None:
    """Why a note file named ``name`` is rejected unread, or None."""
    if is_hidden(name):
        return "hidden file name (starts with '.' or '_'; Spark and Hadoop skip such files)"
    if BAD_ID_RE.search(name):
        return "the file name contains '||' or a control character (it would break the output lines)"
    return None


def table_note_id(directory: str, doc_id: str) -> str:
    """The id, in a table of a directory's notes, of note ``doc_id`` found in the sub-directory ``directory`` (a
    '/'-separated path below the input; '' or '.' for the input itself): ``2019/note1``; '' when the id would
    break an output line (the reject names the file instead, as a CSV reject names its row)."""
    if BAD_ID_RE.search(doc_id):
        return ""
    return doc_id if directory in ("", ".") else f"{directory}/{doc_id}"


def path_order(relative: str) -> tuple[str, ...]:
    """The sort key of a file below an input: its path's parts, so that a directory's files come where its name
    sorts among its siblings (the order in which :func:`share_ner.inputs.files.walk_note_files` walks)."""
    return tuple(relative.split("/"))


def column_kinds_problem(id_column: str, id_kind: str, text_column: str, text_kind: str) -> str | None:
    """Why a table whose id and text columns hold values of these kinds ("string", "integer", "binary" or a type's
    name) cannot be read as notes, or None: ids are strings or integers, texts strings or bytes."""
    if id_kind not in ("string", "integer"):
        return f"column {id_column} holds {id_kind}; note ids must be strings or integers"
    if text_kind not in ("string", "binary"):
        return f"column {text_column} holds {text_kind}; note texts must be strings or binary"
    return None
