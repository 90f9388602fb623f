"""The ShARe/CLEF eHealth 2014 Task 2 pipe format: each disorder with its attribute template.

One mention a line, 22 fields joined by ``|``::

    <doc>.txt|<spans>|<CUI>|<negation>|<cue>|<subject>|<cue>|<uncertainty>|<cue>|<course>|<cue>|<severity>|<cue>|
    <conditional>|<cue>|<generic>|<cue>|<body location>|<cue>|<doctime>|<temporal expression>|<cue>

``<spans>`` is ``start-end``, the fragments of a discontiguous mention joined by ``,``; each cue is ``null`` or
spans written the same way. The temporal expression (``none``, ``date``, ``time``, ``duration``, ``set``) is not
an attribute share-ner fills: it is read, checked and written as ``none|null``. Values are read in any case, with
``-`` or ``_`` in ``before_overlap``, and written as :data:`share_ner.document.ATTRIBUTE_VALUES` spells them.
Files are named ``<doc>.pipe.txt`` like the 2013 files (the field separator tells them apart). Reading a file
and writing its mentions back with the same newline gives the same bytes when it is written that way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from share_ner.document import ATTRIBUTE_VALUES, BODY_LOCATION_NULL, Attributes, Mention, Span
from share_ner.errors import InputError
from share_ner.formats.share import detect_newline
from share_ner.io import atomic_write_text, doc_id_from_path, read_text_file

SEP = "|"
NULL = "null"
DOC_SUFFIX = ".txt"
# the attribute of each (value, cue) pair of fields 4-19, in file order
FIELDS = ("negation", "subject", "uncertainty", "course", "severity", "conditional", "generic", "body_location")
N_FIELDS = 22
TEMPORAL_TYPES = ("none", "date", "time", "duration", "set")
_SPAN = re.compile(r"^(\d+)-(\d+)$")
_EXPECTED = "expected doc.txt|start-end[,start-end]|CUI|then 19 attribute fields (ShARe/CLEF 2014 Task 2)"


def looks_like(line: str) -> bool:
    """True when a pipe line has the 2014 layout (single ``|`` separators, 22 fields)."""
    return "||" not in line and line.count(SEP) == N_FIELDS - 1


def _spans(raw: str, what: str, path: str | Path | None, lineno: int) -> tuple[Span, ...]:
    spans = []
    for frag in raw.split(","):
        m = _SPAN.match(frag)
        if not m or int(m.group(1)) >= int(m.group(2)):
            raise InputError(path, f"{what} {raw!r}: expected start-end[,start-end...] with start < end", lineno)
        spans.append((int(m.group(1)), int(m.group(2))))
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        if s2 < e1:
            raise InputError(path, f"{what} {raw!r}: fragments overlap or are out of text order", lineno)
    return tuple(spans)


def _value(raw: str, name: str, path: str | Path | None, lineno: int) -> str:
    value = raw.lower().replace("-", "_")
    allowed = ATTRIBUTE_VALUES[name]
    if value not in allowed:
        raise InputError(path, f"{name} value {raw!r} is not one of {', '.join(allowed)}", lineno)
    return value


def parse_line(line: str, path: str | Path | None = None, lineno: int = 0) -> Mention:
    """One 2014 pipe line (without its newline) as a :class:`Mention` carrying its :class:`Attributes`."""
    fields = line.split(SEP)
    if len(fields) != N_FIELDS:
        raise InputError(path, f"found {len(fields)} fields; {_EXPECTED}", lineno)
    doc, raw_spans, cui = fields[0], fields[1], fields[2]
    if not doc:
        raise InputError(path, "empty document name in field 1; expected <doc>.txt", lineno)
    if not cui or cui != cui.strip():
        raise InputError(path, f"CUI field {cui!r} is empty or padded; expected a CUI or 'CUI-less'", lineno)
    spans = _spans(raw_spans, "spans", path, lineno)
    values: dict[str, str] = {}
    cues: dict[str, tuple[Span, ...]] = {}
    for k, name in enumerate(FIELDS):
        raw, cue = fields[3 + 2 * k], fields[4 + 2 * k]
        if name == "body_location":
            if not raw or raw != raw.strip():
                raise InputError(path, f"body location {raw!r}: expected a CUI, CUI-less or NULL", lineno)
            values[name] = BODY_LOCATION_NULL if raw.upper() == BODY_LOCATION_NULL else raw
        else:
            values[name] = _value(raw, name, path, lineno)
        if cue != NULL:
            cues[name] = _spans(cue, f"{name} cue", path, lineno)
    values["doctime"] = _value(fields[19], "doctime", path, lineno)
    if fields[20].lower() not in TEMPORAL_TYPES:
        raise InputError(path, f"temporal expression {fields[20]!r} is not one of {', '.join(TEMPORAL_TYPES)}",
                         lineno)
    if fields[21] != NULL:
        _spans(fields[21], "temporal expression cue", path, lineno)
    doc_id = doc[: -len(DOC_SUFFIX)] if doc.endswith(DOC_SUFFIX) else doc
    return Mention(doc_id, spans, cui, attributes=Attributes(**values, cues=cues))


def read_share2014(path: str | Path, expect_doc: str | None = None) -> list[Mention]:
    """The mentions of a 2014 pipe file (blank lines skipped); ``expect_doc``: every line must name that note."""
    out = []
    for lineno, line in enumerate(read_text_file(path).split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        m = parse_line(line, path, lineno)
        if expect_doc is not None and m.doc_id != expect_doc:
            raise InputError(path, f"line names note {m.doc_id}, but the file is named for {expect_doc}", lineno)
        out.append(m)
    return out


def _write_spans(spans: Iterable[Span]) -> str:
    return ",".join(f"{s}-{e}" for s, e in spans)


def format_line(m: Mention) -> str:
    """One 2014 pipe line (no newline); a mention without attributes gets the defaults."""
    a = m.attributes or Attributes()
    fields = [f"{m.doc_id}{DOC_SUFFIX}", _write_spans(m.spans), m.cui]
    for name in FIELDS:
        cue = a.cues.get(name)
        fields += [getattr(a, name), _write_spans(cue) if cue else NULL]
    fields += [a.doctime, "none", NULL]
    return SEP.join(fields)


def format_share2014(mentions: Iterable[Mention], newline: str = "\n") -> str:
    return "".join(format_line(m) + newline for m in mentions)


def write_share2014(path: str | Path, mentions: Iterable[Mention], newline: str = "\n") -> None:
    """Write a 2014 pipe file atomically; ``newline`` ends every line (``"\\r\\n"`` for Windows-made files)."""
    atomic_write_text(path, format_share2014(mentions, newline))


def newline_of(path: str | Path) -> str:
    """The line ending a file uses (``"\\r\\n"`` or ``"\\n"``), to write it back the same way."""
    return detect_newline(read_text_file(path))


def doc_id_of(path: str | Path) -> str:
    return doc_id_from_path(path)
