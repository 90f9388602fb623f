"""BioC JSON (``*.bioc.json``): the BioNLP interchange format that PubTator and many text-mining tools speak.

A file is one BioC collection; each BioC document is a note (its ``id`` the
note id). share-ner writes one passage at offset 0 holding the whole note
(its ``text`` only when asked) and one annotation per mention::

    {"source": "share-ner", "date": "2026-01-31", "key": "share_ner.key", "infons": {},
     "documents": [{"id": "note1", "infons": {}, "relations": [], "passages": [
        {"offset": 0, "infons": {}, "text": "...", "sentences": [], "relations": [], "annotations": [
          {"id": "T1", "text": "left atrium dilated",
           "infons": {"type": "Disease_Disorder", "identifier": "C0011849"},
           "locations": [{"offset": 10, "length": 5}, {"offset": 20, "length": 9}]}]}]}]}

A discontiguous mention is one annotation with several locations, in text
order; its ``text`` is the fragments' words joined by one space. The CUI is
the ``identifier`` infon (``CUI-less`` when there is none; a ``UMLS:`` prefix
is dropped, and an identifier of another database, such as PubTator's
``MESH:D003920``, reads as ``CUI-less``), its preferred name, when known, the
``name`` infon. The type is the ``type`` infon.
Attributes, when a mention carries them, are infons named after them
(``negation``, ``subject`` ...; BioC infons are strings, so the cue spans are
one ``cues`` infon holding JSON).

Offsets are 0-based characters of the document (not of the passage), end
excluded, as in PubTator's BioC JSON. Annotations are read from passages,
their sentences and the document itself; relations are valid BioC and are
skipped. When a passage carries its text, every location must fall within the
passage and the annotation's ``text`` must be the document's words there.
Errors name the file and where in it: the JSON line and column, or the path of
the object (``documents[0].passages[1].annotations[3]``) and the note id.

Parsed with :mod:`json` here rather than with the ``bioc`` package: its decoder
raises a bare ``KeyError`` without file or position and pulls in lxml,
jsonlines, intervaltree and docopt, for a format of five kinds of JSON objects.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from share_ner.document import ATTRIBUTE_NAMES, CUI_LESS, DISORDER, Attributes, Mention
from share_ner.errors import InputError
from share_ner.formats.given_text import matches_note
from share_ner.io import atomic_write_text, read_text_file

SUFFIX = ".bioc.json"
SOURCE = "share-ner"
CUI_INFON = "identifier"
NAME_INFON = "name"  # the concept's preferred name, beside its identifier
TYPE_INFON = "type"
CUES_INFON = "cues"


class BiocDocument:
    """One BioC document: the note id, its text where passages carry it (``None`` otherwise), its mentions, and
    for each mention its annotation's ``text`` ("" when absent) and where it is in the file."""

    __slots__ = ("doc_id", "text", "mentions", "mention_texts", "where")

    def __init__(self, doc_id: str, text: str | None, mentions: list[Mention], mention_texts: list[str],
                 where: list[str]) -> None:
        self.doc_id = doc_id
        self.text = text
        self.mentions = mentions
        self.mention_texts = mention_texts
        self.where = where


def file_name(doc_id: str) -> str:
    return f"{doc_id}{SUFFIX}"


def is_bioc_name(name: str) -> bool:
    """True for ``*.bioc.json`` (any case: PubTator names its files ``*.BioC.JSON``)."""
    return name.lower().endswith(SUFFIX)


def looks_like_bioc(text: str) -> bool:
    """True when ``text`` is one JSON object with a ``documents`` list (a BioC collection)."""
    try:
        obj = json.loads(text.removeprefix("\ufeff"))
    except ValueError:
        return False
    return isinstance(obj, dict) and isinstance(obj.get("documents"), list)


class _Reader:
    def __init__(self, path: str | Path | None) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> InputError:
        return InputError(self.path, f"{where}: {message}")

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected a JSON object, found {_kind(value)}")
        return value

    def items(self, parent: dict[str, Any], key: str, where: str) -> list[Any]:
        value = parent.get(key, [])
        if not isinstance(value, list):
            raise self.fail(where, f"\"{key}\" is {_kind(value)}; expected a list")
        return value

    def infons(self, parent: dict[str, Any], where: str) -> dict[str, str]:
        value = parent.get("infons", {})
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self.fail(where, "\"infons\" must be an object of strings")
        return value

    def offset(self, parent: dict[str, Any], key: str, where: str) -> int:
        value = parent.get(key)
        if type(value) is not int or value < 0:
            raise self.fail(where, f"\"{key}\" is {json.dumps(value)[:20]}; expected an integer >= 0")
        return value

    def documents(self, text: str) -> Iterator[BiocDocument]:
        try:
            top = json.loads(text.removeprefix("\ufeff"))
        except json.JSONDecodeError as exc:
            raise InputError(self.path, f"invalid JSON at column {exc.colno} ({exc.msg}); expected a BioC "
                                        "collection {\"documents\": [...]}", exc.lineno) from None
        collection = self.obj(top, "top level")
        if "documents" not in collection:
            raise self.fail("top level", "no \"documents\" list; expected a BioC collection")
        seen: dict[str, str] = {}
        for k, raw in enumerate(self.items(collection, "documents", "top level")):
            doc = self.document(raw, f"documents[{k}]")
            if doc.doc_id in seen:
                raise self.fail(f"documents[{k}]", f"note {doc.doc_id} is also {seen[doc.doc_id]}")
            seen[doc.doc_id] = f"documents[{k}]"
            yield doc

    def document(self, raw: Any, where: str) -> BiocDocument:
        obj = self.obj(raw, where)
        doc_id = obj.get("id")
        if not isinstance(doc_id, str) or not doc_id:
            raise self.fail(where, "missing or empty document \"id\" string")
        where = f"{where} (note {doc_id})"
        pieces: list[tuple[int, str]] = []
        found: list[tuple[str, dict[str, Any], tuple[int, int] | None]] = []  # (where, annotation, passage range)
        for p, passage_raw in enumerate(self.items(obj, "passages", where)):
            pw = f"{where} passages[{p}]"
            passage = self.obj(passage_raw, pw)
            start = self.offset(passage, "offset", pw)
            ptext = passage.get("text")
            if ptext is not None and not isinstance(ptext, str):
                raise self.fail(pw, "\"text\" is not a string")
            bounds = None if ptext is None else (start, start + len(ptext))
            if ptext is not None:
                pieces.append((start, ptext))
            holders = [(pw, passage)]
            for s, sentence in enumerate(self.items(passage, "sentences", pw)):
                holders.append((f"{pw} sentences[{s}]", self.obj(sentence, f"{pw} sentences[{s}]")))
            for hw, holder in holders:
                for a, ann in enumerate(self.items(holder, "annotations", hw)):
                    found.append((f"{hw} annotations[{a}]", ann, bounds))
        for a, ann in enumerate(self.items(obj, "annotations", where)):
            found.append((f"{where} annotations[{a}]", ann, None))
        text = _assemble(pieces)
        mentions, words, places = [], [], []
        for aw, ann, bounds in found:
            m, w = self.annotation(ann, aw, doc_id, text, bounds)
            mentions.append(m)
            words.append(w)
            places.append(aw)
        return BiocDocument(doc_id, text, mentions, words, places)

    def annotation(self, raw: Any, where: str, doc_id: str, text: str | None,
                   bounds: tuple[int, int] | None) -> tuple[Mention, str]:
        ann = self.obj(raw, where)
        if isinstance(ann.get("id"), str) and ann["id"]:
            where = f"{where} (annotation {ann['id']})"
        locations = self.items(ann, "locations", where)
        if not locations:
            raise self.fail(where, "no \"locations\"; expected [{\"offset\": ..., \"length\": ...}, ...]")
        spans = []
        for k, loc_raw in enumerate(locations):
            lw = f"{where} locations[{k}]"
            loc = self.obj(loc_raw, lw)
            start, length = self.offset(loc, "offset", lw), self.offset(loc, "length", lw)
            if length == 0:
                raise self.fail(lw, "\"length\" is 0; a location covers at least one character")
            if bounds is not None and not (bounds[0] <= start and start + length <= bounds[1]):
                raise self.fail(lw, f"span {start}-{start + length} is outside its passage "
                                    f"({bounds[0]}-{bounds[1]}); offsets count from the document's start")
            spans.append((start, start + length))
        spans.sort()
        for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
            if s2 < e1:
                raise self.fail(where, f"locations {s1}-{e1} and {s2}-{e2} overlap")
        infons = self.infons(ann, where)
        words = ann.get("text")
        words = words if isinstance(words, str) else ""
        if text is not None and words and bounds is not None:
            if not matches_note(words, text, spans):
                at = ";".join(f"{s}-{e}" for s, e in spans)
                raise self.fail(where, f"the annotation text is not the text of note {doc_id} at {at}")
        try:
            attributes = _attributes(infons)
        except ValueError as exc:
            raise self.fail(where, str(exc)) from None
        type_ = infons.get(TYPE_INFON) or DISORDER
        cui = _cui(infons.get(CUI_INFON, ""))
        name = infons.get(NAME_INFON) if cui != CUI_LESS else None
        return Mention(doc_id, tuple(spans), cui, type_, attributes, name or None), words


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(value), "a number")


def _assemble(pieces: list[tuple[int, str]]) -> str | None:
    """The document text from its passages placed at their offsets (gaps as spaces), or None without any text."""
    if not pieces:
        return None
    out: list[str] = []
    pos = 0
    for start, ptext in sorted(pieces):
        if start < pos:  # overlapping passages: keep the first one's characters
            start, ptext = pos, ptext[pos - start:]
        out.append(" " * (start - pos))
        out.append(ptext)
        pos = start + len(ptext)
    return "".join(out)


def _cui(identifier: str) -> str:
    value = identifier.strip()
    if not value or any(ch.isspace() for ch in value):
        return CUI_LESS
    db, sep, ident = value.partition(":")
    if not sep:
        return value
    # only UMLS identifiers are CUIs; other databases are kept out of the CUI field
    return ident if db.upper() == "UMLS" and ident else CUI_LESS


def _attributes(infons: dict[str, str]) -> Attributes | None:
    named = {k: v for k, v in infons.items() if k in ATTRIBUTE_NAMES}
    if not named:
        return None
    if CUES_INFON in infons:
        try:
            named[CUES_INFON] = json.loads(infons[CUES_INFON])
        except ValueError:
            raise ValueError(f"the {CUES_INFON!r} infon is not JSON") from None
    return Attributes.from_dict(named)


def parse_bioc(text: str, path: str | Path | None = None) -> list[BiocDocument]:
    """The documents of BioC JSON content, in file order; a note id used twice is an error."""
    return list(_Reader(path).documents(text))


def read_bioc(path: str | Path) -> list[BiocDocument]:
    """All documents of a BioC JSON file."""
    return parse_bioc(read_text_file(path), path)


def _annotation(n: int, m: Mention, doc_text: str | None) -> dict[str, Any]:
    infons = {TYPE_INFON: m.type, CUI_INFON: m.cui}
    if m.name:
        infons[NAME_INFON] = m.name
    if m.attributes is not None:
        infons.update(m.attributes.values())
        if m.attributes.cues:
            infons[CUES_INFON] = json.dumps(m.attributes.cue_lists())
    return {
        "id": f"T{n}",
        "infons": infons,
        "text": "" if doc_text is None else m.text(doc_text),
        "locations": [{"offset": s, "length": e - s} for s, e in m.spans],
    }


def format_bioc(records: Iterable[tuple[str, Iterable[Mention], str | None]], with_text: bool = False,
                date: str | None = None) -> str:
    """A BioC collection for ``(doc_id, mentions, doc_text or None)`` triples; the note text goes into the passage
    with ``with_text``. ``date`` defaults to today (ISO)."""
    documents = []
    for doc_id, mentions, doc_text in records:
        passage: dict[str, Any] = {"offset": 0, "infons": {}}
        if with_text and doc_text is not None:
            passage["text"] = doc_text
        passage.update(sentences=[], annotations=[_annotation(n, m, doc_text) for n, m in enumerate(mentions, 1)],
                       relations=[])
        documents.append({"id": doc_id, "infons": {}, "passages": [passage], "relations": []})
    collection = {"source": SOURCE, "date": date or datetime.date.today().isoformat(), "key": "share_ner.key",
                  "infons": {}, "documents": documents}
    return json.dumps(collection, ensure_ascii=False, indent=1) + "\n"


def write_bioc(path: str | Path, records: Iterable[tuple[str, Iterable[Mention], str | None]],
               with_text: bool = False) -> None:
    """Write a BioC JSON file atomically (temporary file, then rename)."""
    atomic_write_text(path, format_bioc(records, with_text))


__all__ = ["SUFFIX", "BiocDocument", "format_bioc", "looks_like_bioc", "parse_bioc", "read_bioc", "write_bioc"]
