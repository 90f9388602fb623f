"""The ShARe/CLEF eHealth 2013 Task 1 pipe format.

One mention a line::

    <doc>.txt||Disease_Disorder||<CUI or CUI-less>||start1||end1[||start2||end2...]

Offsets are 0-based, end-exclusive character offsets into the note as stored;
a discontiguous mention appends more pairs in text order. Gold files are named
``<doc>.pipe.txt`` (``<doc>.pipe`` and ``<doc>.txt.pipe`` are accepted too).
Reading a file and writing its mentions back with the same newline gives the
same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from share_ner.document import DISORDER, Mention
from share_ner.errors import InputError
from share_ner.io import GOLD_SUFFIXES, atomic_write_text, doc_id_from_path, is_gold_file, read_text_file

SEP = "||"
DOC_SUFFIX = ".txt"


def parse_line(line: str, path: str | Path | None = None, lineno: int | None = None) -> Mention:
    """Parse one pipe line (without its newline) into a :class:`Mention`."""
    fields = line.split(SEP)
    if len(fields) < 5 or (len(fields) - 3) % 2:
        if len(fields) >= 5:
            what = f"an odd number of offsets ({len(fields) - 3})"
        else:
            what = f"{len(fields)} fields"
        raise InputError(
            path, f"found {what}; expected doc||Disease_Disorder||CUI||start||end[||start||end...]", lineno
        )
    doc, type_, cui = fields[0], fields[1], fields[2]
    if not doc:
        raise InputError(path, "empty document name in field 1; expected <doc>.txt", lineno)
    if type_ != DISORDER:
        raise InputError(path, f"type {type_!r} in field 2; expected {DISORDER!r}", lineno)
    if not cui or cui != cui.strip():
        raise InputError(path, f"CUI field {cui!r} is empty or padded; expected a CUI or 'CUI-less'", lineno)
    offsets: list[int] = []
    for k, raw in enumerate(fields[3:], start=4):
        try:
            if raw != raw.strip():
                raise ValueError
            offsets.append(int(raw))
        except ValueError:
            raise InputError(path, f"offset {raw!r} in field {k} is not an integer", lineno) from None
    spans = list(zip(offsets[::2], offsets[1::2]))
    for s, e in spans:
        if s < 0 or s >= e:
            raise InputError(path, f"span {s}-{e}: expected 0 <= start < end", lineno)
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        if s2 < e1:
            raise InputError(path, f"spans {s1}-{e1} and {s2}-{e2} overlap or are out of text order", lineno)
    doc_id = doc[: -len(DOC_SUFFIX)] if doc.endswith(DOC_SUFFIX) else doc
    return Mention(doc_id, tuple(spans), cui, type_)


def format_line(mention: Mention) -> str:
    offsets = SEP.join(f"{s}{SEP}{e}" for s, e in mention.spans)
    return f"{mention.doc_id}{DOC_SUFFIX}{SEP}{mention.type}{SEP}{mention.cui}{SEP}{offsets}"


def parse_text(text: str, path: str | Path | None = None) -> list[Mention]:
    """Parse the content of a pipe file; blank lines are skipped."""
    mentions = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            mentions.append(parse_line(line, path, lineno))
    return mentions


def detect_newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def read_pipe(path: str | Path, expect_doc: str | None = None) -> list[Mention]:
    """Read one pipe file. With ``expect_doc``, every line must name that document."""
    text = read_text_file(path)
    mentions = parse_text(text, path)
    if expect_doc is not None:
        for lineno, m in _numbered(text, mentions):
            if m.doc_id != expect_doc:
                raise InputError(
                    path, f"line names document {m.doc_id}.txt but the file is for {expect_doc}.txt", lineno
                )
    return mentions


def _numbered(text: str, mentions: list[Mention]) -> Iterable[tuple[int, Mention]]:
    numbers = [i for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
    return zip(numbers, mentions)


def format_pipe(mentions: Iterable[Mention], newline: str = "\n") -> str:
    return "".join(format_line(m) + newline for m in mentions)


def write_pipe(path: str | Path, mentions: Iterable[Mention], newline: str = "\n") -> None:
    """Write mentions atomically (temporary file, then rename)."""
    atomic_write_text(path, format_pipe(mentions, newline))


def gold_file_name(doc_id: str) -> str:
    return f"{doc_id}{GOLD_SUFFIXES[0]}"


def read_pipe_dir(path: str | Path) -> dict[str, list[Mention]]:
    """Annotations keyed by document id.

    ``path`` is a directory of per-note files (``<doc>.pipe.txt`` etc.; an empty
    file is a note with no mentions) or one pipe file naming its documents on
    each line.
    """
    path = Path(path)
    if path.is_file():
        out: dict[str, list[Mention]] = {}
        for m in read_pipe(path):
            out.setdefault(m.doc_id, []).append(m)
        return out
    if not path.is_dir():
        raise InputError(path, "no such file or directory")
    out = {}
    origin: dict[str, Path] = {}
    for p in sorted(path.rglob("*")):
        if not (p.is_file() and is_gold_file(p)):
            continue
        doc_id = doc_id_from_path(p)
        if doc_id in out:
            raise InputError(p, f"document {doc_id} already read from {origin[doc_id]}")
        out[doc_id] = read_pipe(p, expect_doc=doc_id)
        origin[doc_id] = p
    return out
