"""JSON Lines export: one note a line.

Each line is one object::

    {"doc_id": "note1", "text": "...", "mentions": [
        {"spans": [[10, 15], [20, 25]], "text": "left atrium dilated", "cui": "C0011849"}]}

``text`` (the note) is optional; each mention's ``text`` is its spans' words
joined by one space, written when the note text is known and ignored when read.
A mention's ``cui`` defaults to ``CUI-less`` and ``type`` to ``Disease_Disorder``;
``name`` beside the CUI is its concept's preferred name in the model's lexicon,
written when known (``"name": "Hypertension"``).
A mention whose ShARe/CLEF 2014 attributes are known carries ``"attributes"`` (``negation``, ``uncertainty``,
``subject``, ``conditional``, ``generic``, ``course``, ``severity``, ``doctime``, ``body_location``) and, for each
value that is not the default, its cue spans under ``"cues"``::

    {"spans": [[3, 12]], "text": "pneumonia", "cui": "C0032285",
     "attributes": {"negation": "yes", ..., "body_location": "NULL"}, "cues": {"negation": [[0, 2]]}}

Offsets are 0-based, end-exclusive characters of the note as stored. When a
line carries the note text, every span is checked against it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from share_ner.document import CUI_LESS, DISORDER, Attributes, Document, Mention
from share_ner.errors import InputError
from share_ner.io import atomic_write_text, read_text_file

SUFFIX = ".jsonl"
_EXPECTED = 'expected {"doc_id": ..., "mentions": [{"spans": [[start, end], ...], "cui": ...}, ...]}'


class Record:
    """One line: the note id, its text when the line carries it, its mentions, their ``text`` fields
    ("" when absent) and the line number."""

    __slots__ = ("doc_id", "text", "mentions", "mention_texts", "line")

    def __init__(
        self, doc_id: str, text: str | None, mentions: list[Mention], line: int, mention_texts: list[str] | None = None
    ) -> None:
        self.doc_id = doc_id
        self.text = text
        self.mentions = mentions
        self.mention_texts = mention_texts if mention_texts is not None else [""] * len(mentions)
        self.line = line

    @property
    def document(self) -> Document | None:
        return None if self.text is None else Document(self.doc_id, self.text)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    # split on "\n" only: str.splitlines() would also break at U+2028 or \x85 copied from a note;
    # a byte-order mark left by Windows editors is not part of the first line
    for lineno, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        yield lineno, line.removesuffix("\r")


def file_name(doc_id: str) -> str:
    return f"{doc_id}{SUFFIX}"


def iter_records(text: str, path: str | Path | None = None) -> Iterator[Record]:
    """Parse JSON Lines content; blank lines are skipped, a note id used twice is an error."""
    seen: dict[str, int] = {}
    for lineno, line in _lines(text):
        if not line.strip():
            continue
        rec = parse_record(line, path, lineno)
        if rec.doc_id in seen:
            raise InputError(path, f"note {rec.doc_id} already appears on line {seen[rec.doc_id]}", lineno)
        seen[rec.doc_id] = lineno
        yield rec


def parse_record(line: str, path: str | Path | None = None, lineno: int | None = None) -> Record:
    """Parse one JSON line into a :class:`Record`."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON at column {exc.colno} ({exc.msg}); {_EXPECTED}", lineno) from None
    if not isinstance(obj, dict):
        raise InputError(path, f"found a JSON {type(obj).__name__}; {_EXPECTED}", lineno)
    doc_id = obj.get("doc_id")
    if not isinstance(doc_id, str) or not doc_id:
        raise InputError(path, f"missing or empty \"doc_id\" string; {_EXPECTED}", lineno)
    note = obj.get("text")
    if note is not None and not isinstance(note, str):
        raise InputError(path, f"\"text\" of note {doc_id} is not a string", lineno)
    raw = obj.get("mentions", [])
    if not isinstance(raw, list):
        raise InputError(path, f"\"mentions\" of note {doc_id} is not a list; {_EXPECTED}", lineno)
    mentions = [_parse_mention(item, doc_id, k, note, path, lineno) for k, item in enumerate(raw, start=1)]
    words = [item.get("text") for item in raw]
    return Record(doc_id, note, mentions, lineno or 0, [w if isinstance(w, str) else "" for w in words])


def _parse_mention(
    item: Any, doc_id: str, k: int, note: str | None, path: str | Path | None, lineno: int | None
) -> Mention:
    where = f"mention {k} of note {doc_id}"
    if not isinstance(item, dict):
        raise InputError(path, f"{where} is not an object; expected {{\"spans\": [[start, end], ...], \"cui\": ...}}", lineno)
    spans = item.get("spans")
    if not isinstance(spans, list) or not spans:
        raise InputError(path, f"{where} has no \"spans\" list; expected [[start, end], ...]", lineno)
    pairs = []
    for span in spans:
        ok = isinstance(span, list) and len(span) == 2 and all(type(v) is int for v in span)
        if not ok:
            raise InputError(path, f"{where}: span {json.dumps(span)[:40]} is not [start, end] with integer offsets", lineno)
        s, e = span
        if s < 0 or s >= e:
            raise InputError(path, f"{where}: span {s}-{e}; expected 0 <= start < end", lineno)
        if note is not None and e > len(note):
            raise InputError(path, f"{where}: span {s}-{e} ends past the note's end ({len(note)} characters)", lineno)
        pairs.append((s, e))
    for (s1, e1), (s2, e2) in zip(pairs, pairs[1:]):
        if s2 < e1:
            raise InputError(path, f"{where}: spans {s1}-{e1} and {s2}-{e2} overlap or are out of text order", lineno)
    cui = item.get("cui", CUI_LESS)
    if not isinstance(cui, str) or not cui or cui != cui.strip():
        raise InputError(path, f"{where}: \"cui\" is not a non-empty string; expected a CUI or {CUI_LESS!r}", lineno)
    type_ = item.get("type", DISORDER)
    if not isinstance(type_, str) or not type_:
        raise InputError(path, f"{where}: \"type\" is not a non-empty string", lineno)
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(path, f"{where}: \"name\" is not a string", lineno)
    return Mention(doc_id, tuple(pairs), cui, type_, _parse_attributes(item, where, path, lineno), name or None)


def _parse_attributes(item: dict, where: str, path: str | Path | None, lineno: int | None) -> Attributes | None:
    raw, cues = item.get("attributes"), item.get("cues")
    if raw is None:
        if cues is not None:
            raise InputError(path, f"{where}: \"cues\" without \"attributes\"", lineno)
        return None
    if not isinstance(raw, dict) or not (cues is None or isinstance(cues, dict)):
        raise InputError(path, f"{where}: \"attributes\" and \"cues\" must be objects", lineno)
    if "cues" in raw:
        raise InputError(path, f"{where}: \"cues\" belongs beside \"attributes\", not inside it", lineno)
    try:
        for spans in (cues or {}).values():
            if not isinstance(spans, list) or not all(
                    isinstance(sp, list) and len(sp) == 2 and all(type(v) is int for v in sp) for sp in spans):
                raise ValueError("a cue is not a list of [start, end] integer pairs")
        return Attributes.from_dict({**raw, "cues": cues or {}})
    except (TypeError, ValueError) as exc:
        raise InputError(path, f"{where}: {exc}", lineno) from None


def read_jsonl(path: str | Path) -> list[Record]:
    """All records of a ``.jsonl`` file, in file order."""
    return list(iter_records(read_text_file(path), path))


def format_record(doc_id: str, mentions: Iterable[Mention], doc_text: str | None = None, with_text: bool = False) -> str:
    """One JSON line (no newline). Mention texts need ``doc_text``; the note itself is included with ``with_text``."""
    obj: dict[str, Any] = {"doc_id": doc_id}
    if with_text and doc_text is not None:
        obj["text"] = doc_text
    items = []
    for m in mentions:
        item: dict[str, Any] = {"spans": [[s, e] for s, e in m.spans]}
        if doc_text is not None:
            item["text"] = m.text(doc_text)
        item["cui"] = m.cui
        if m.name:
            item["name"] = m.name
        if m.type != DISORDER:
            item["type"] = m.type
        if m.attributes is not None:
            item["attributes"] = m.attributes.values()
            if m.attributes.cues:
                item["cues"] = m.attributes.cue_lists()
        items.append(item)
    obj["mentions"] = items
    return json.dumps(obj, ensure_ascii=False)


def format_jsonl(records: Iterable[tuple[str, Iterable[Mention], str | None]], with_text: bool = False) -> str:
    """JSON Lines content for ``(doc_id, mentions, doc_text or None)`` triples."""
    return "".join(format_record(d, ms, t, with_text) + "\n" for d, ms, t in records)


def write_jsonl(
    path: str | Path, records: Iterable[tuple[str, Iterable[Mention], str | None]], with_text: bool = False
) -> None:
    """Write JSON Lines atomically (temporary file, then rename)."""
    atomic_write_text(path, format_jsonl(records, with_text))
