"""BRAT standoff (``.ann``): the format annotation teams edit in the brat tool.

One text-bound annotation a line, with the CUI in an AnnotatorNotes line and, when the concept's preferred
name is known, a brat normalization line that carries it (brat shows it beside the annotation)::

    T1<TAB>Disease_Disorder 10 15;20 25<TAB>left atrium dilated
    #1<TAB>AnnotatorNotes T1<TAB>C0011849
    N1<TAB>Reference T1 UMLS:C0011849<TAB>Diabetes mellitus

Offsets are 0-based, end-exclusive characters of the note as stored (``\\r``
counted); fragments of a discontiguous mention are joined by ``;`` and their
text by one space. A text-bound annotation without a note is ``CUI-less``; a
brat normalization line (``N1<TAB>Reference T1 UMLS:C0011849<TAB>...``) is read
too when there is no note. ShARe/CLEF 2014 attributes that are not the default
are ``A`` lines naming the attribute as share-ner does and its value::

    A1<TAB>negation T1 yes

A file with any such line gives every mention its attributes (the default where it has no line); cue spans are
not kept in brat. Relations, events, modifications and other attributes (``R``, ``E``, ``M``, ``*``, ``A`` with
another name) are valid brat and are skipped. The file holds one note; its id is the file name without ``.ann``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from share_ner.document import ATTRIBUTE_NAMES, ATTRIBUTE_VALUES, CUI_LESS, DISORDER, Attributes, Mention
from share_ner.errors import InputError
from share_ner.io import atomic_write_text, doc_id_from_path, read_text_file

SUFFIX = ".ann"
_OFFSETS = re.compile(r"^(\d+) (\d+)$")
_SKIPPED = ("R", "E", "A", "M", "*")
_ATTRIBUTE = "expected A<n><TAB><attribute> T<n> <value>"
_TEXT_BOUND = "expected T<n><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>"


def _lines(text: str) -> Iterator[tuple[int, str]]:
    # split on "\n" only: str.splitlines() would also break at U+2028 or \x85 copied from a note;
    # a byte-order mark left by Windows editors is not part of the first line
    for lineno, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        yield lineno, line.removesuffix("\r")


def file_name(doc_id: str) -> str:
    return f"{doc_id}{SUFFIX}"


def iter_ann(text: str, doc_id: str, path: str | Path | None = None) -> Iterator[tuple[int, Mention, str]]:
    """``(line number, Mention, text column)`` for each text-bound annotation of ``.ann`` content, in file order."""
    bound: dict[str, tuple[int, str, tuple[tuple[int, int], ...], str]] = {}
    cuis: dict[str, str] = {}
    noted: set[str] = set()
    refs: list[tuple[int, str]] = []
    names: dict[str, str] = {}
    attrs: dict[str, dict[str, str]] = {}
    attr_lines: dict[str, int] = {}
    for lineno, line in _lines(text):
        if not line.strip():
            continue
        ident = line.split("\t", 1)[0]
        if ident.startswith("T"):
            tid, type_, spans = _parse_text_bound(line, path, lineno)
            if tid in bound:
                raise InputError(path, f"annotation id {tid} is used twice (first on line {bound[tid][0]})", lineno)
            fields = line.split("\t")
            bound[tid] = (lineno, type_, spans, fields[2] if len(fields) == 3 else "")
        elif ident.startswith("#"):
            tid, cui = _parse_note(line, path, lineno)
            if tid in noted:
                raise InputError(path, f"second AnnotatorNotes line for {tid}; expected one CUI per annotation", lineno)
            noted.add(tid)
            cuis[tid] = cui
            refs.append((lineno, tid))
        elif ident.startswith("N"):
            parsed = _parse_normalization(line, path, lineno)
            if parsed is not None:
                refs.append((lineno, parsed[0]))
                cuis.setdefault(parsed[0], parsed[1])
                if parsed[2] and cuis[parsed[0]] == parsed[1]:
                    names.setdefault(parsed[0], parsed[2])
        elif ident.startswith("A") and _attribute_name(line) in ATTRIBUTE_NAMES:
            tid, name, value = _parse_attribute(line, path, lineno)
            if name in attrs.setdefault(tid, {}):
                raise InputError(path, f"second {name} line for {tid}", lineno)
            attrs[tid][name] = value
            attr_lines.setdefault(tid, lineno)
            refs.append((lineno, tid))
        elif not ident.startswith(_SKIPPED):
            raise InputError(
                path, "line does not start with a brat annotation id; expected T, #, N, R, E, A, M or * then a number", lineno
            )
    for lineno, tid in refs:
        if tid not in bound:
            raise InputError(path, f"note refers to {tid}, which is not a text-bound annotation of this file", lineno)
    for tid, (lineno, type_, spans, words) in bound.items():
        attributes = None
        if attrs:
            try:
                attributes = Attributes.from_dict(attrs.get(tid, {}))
            except ValueError as exc:
                raise InputError(path, str(exc), attr_lines[tid]) from None
        yield lineno, Mention(doc_id, spans, cuis.get(tid, CUI_LESS), type_, attributes, names.get(tid)), words


def _attribute_name(line: str) -> str:
    fields = line.split("\t")
    return fields[1].split(" ", 1)[0] if len(fields) >= 2 else ""


def _parse_attribute(line: str, path: str | Path | None, lineno: int) -> tuple[str, str, str]:
    fields = line.split("\t")
    head = fields[1].split(" ")
    if len(fields) != 2 or len(head) != 3 or not re.fullmatch(r"A\d+", fields[0]):
        raise InputError(path, f"malformed attribute line; {_ATTRIBUTE}", lineno)
    return head[1], head[0], head[2]


def _parse_text_bound(line: str, path: str | Path | None, lineno: int) -> tuple[str, str, tuple[tuple[int, int], ...]]:
    fields = line.split("\t")
    if len(fields) < 2 or len(fields) > 3:
        raise InputError(path, f"found {len(fields)} tab-separated fields; {_TEXT_BOUND}", lineno)
    tid, body = fields[0], fields[1]
    if not re.fullmatch(r"T\d+", tid):
        raise InputError(path, f"first field is not an annotation id; {_TEXT_BOUND}", lineno)
    type_, _, offsets = body.partition(" ")
    if not type_ or not offsets:
        raise InputError(path, f"no offsets after the type; {_TEXT_BOUND}", lineno)
    spans = []
    for frag in offsets.split(";"):
        m = _OFFSETS.match(frag)
        if not m:
            raise InputError(path, f"fragment {frag!r} is not '<start> <end>'; {_TEXT_BOUND}", lineno)
        s, e = int(m.group(1)), int(m.group(2))
        if s >= e:
            raise InputError(path, f"span {s}-{e}: expected start < end", lineno)
        spans.append((s, e))
    # brat allows fragments in any order; touching or overlapping ones are not one mention's words
    spans.sort()
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        if s2 < e1:
            raise InputError(path, f"fragments {s1}-{e1} and {s2}-{e2} overlap", lineno)
    return tid, type_, tuple(spans)


def _parse_note(line: str, path: str | Path | None, lineno: int) -> tuple[str, str]:
    fields = line.split("\t")
    head = fields[1].split(" ") if len(fields) >= 2 else []
    if len(fields) not in (2, 3) or len(head) != 2 or head[0] != "AnnotatorNotes":
        raise InputError(path, "malformed note line; expected #<n><TAB>AnnotatorNotes T<n><TAB><CUI>", lineno)
    cui = fields[2].strip() if len(fields) == 3 else ""
    if not cui:
        return head[1], CUI_LESS
    if any(ch.isspace() for ch in cui):
        raise InputError(path, f"note for {head[1]} holds several words; expected one CUI or {CUI_LESS}", lineno)
    return head[1], cui


def _parse_normalization(line: str, path: str | Path | None, lineno: int) -> tuple[str, str, str] | None:
    """(annotation id, CUI, the entry's name or "") of a UMLS normalization line; None for another database."""
    fields = line.split("\t")
    head = fields[1].split(" ") if len(fields) >= 2 else []
    if len(head) != 3 or head[0] != "Reference":
        raise InputError(path, "malformed normalization; expected N<n><TAB>Reference T<n> <db>:<id><TAB><text>", lineno)
    db, _, ident = head[2].partition(":")
    if not ident:
        raise InputError(path, f"reference {head[2]!r}; expected <db>:<id> such as UMLS:C0011849", lineno)
    # only UMLS references are CUIs; other databases are kept out of the CUI field
    name = fields[2].strip() if len(fields) >= 3 else ""
    return (head[1], ident, name) if db.upper() == "UMLS" else None


def parse_ann(text: str, doc_id: str, path: str | Path | None = None) -> list[Mention]:
    """The mentions of an ``.ann`` file's content, in file order."""
    return [m for _, m, _ in iter_ann(text, doc_id, path)]


def read_brat(path: str | Path, doc_id: str | None = None) -> list[Mention]:
    """Read one ``.ann`` file; the note id defaults to the file name without ``.ann``."""
    return parse_ann(read_text_file(path), doc_id or doc_id_from_path(path), path)


def _fragment_text(doc_text: str, s: int, e: int) -> str:
    return _clean(doc_text[s:e])


def _clean(text: str) -> str:
    # a tab or newline inside a span or a name would break the line format
    return re.sub(r"[\t\r\n]", " ", text)


def format_brat(mentions: Iterable[Mention], doc_text: str | None = None) -> str:
    """``.ann`` content: ``T<n>`` then ``#<n>`` (its CUI) for each mention, and ``N<n>`` (its CUI and name) for a
    mention whose name is known; the text column is empty without ``doc_text``."""
    out = []
    mentions = list(mentions)
    for n, m in enumerate(mentions, start=1):
        offsets = ";".join(f"{s} {e}" for s, e in m.spans)
        words = "" if doc_text is None else " ".join(_fragment_text(doc_text, s, e) for s, e in m.spans)
        out.append(f"T{n}\t{m.type} {offsets}\t{words}\n")
        out.append(f"#{n}\tAnnotatorNotes T{n}\t{m.cui}\n")
        if m.name and m.cui != CUI_LESS:
            out.append(f"N{n}\tReference T{n} UMLS:{m.cui}\t{_clean(m.name)}\n")
    k = 0
    for n, m in enumerate(mentions, start=1):
        if m.attributes is not None:
            for name, value in m.attributes.non_default().items():
                k += 1
                out.append(f"A{k}\t{name} T{n} {value}\n")
    return "".join(out)


def write_brat(path: str | Path, mentions: Iterable[Mention], doc_text: str | None = None) -> None:
    """Write an ``.ann`` file atomically (temporary file, then rename)."""
    atomic_write_text(path, format_brat(mentions, doc_text))


ANNOTATION_CONF = "annotation.conf"
VISUAL_CONF = "visual.conf"


def _collection_types(directory: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The entity types and the attribute values (:data:`ATTRIBUTE_NAMES` only) the ``.ann`` files under
    ``directory`` use; a file that does not parse is left to the tools that read it."""
    types: set[str] = set()
    values: dict[str, set[str]] = {name: set() for name in ATTRIBUTE_NAMES}
    for path in sorted(directory.rglob(f"*{SUFFIX}")):
        try:
            mentions = read_brat(path)
        except (InputError, OSError):
            continue
        for m in mentions:
            types.add(m.type)
            if m.attributes is not None:
                for name, value in m.attributes.non_default().items():
                    values[name].add(value)
    return sorted(types), {name: sorted(v) for name, v in values.items()}


def format_annotation_conf(types: Iterable[str], values: Mapping[str, Iterable[str]]) -> str:
    """brat's ``annotation.conf`` for mentions of ``types`` with share-ner's attribute lines: each attribute of
    :data:`ATTRIBUTE_VALUES` with its values (a closed list), ``body_location`` with the values of ``values`` (CUIs,
    an open list). ``#`` (AnnotatorNotes) and ``N`` (normalization) lines need no declaration."""
    lines = ["# The annotation types of share-ner's BRAT output: disorder mentions and their ShARe/CLEF 2014 "
             "attributes.", "", "[entities]", ""]
    lines += [t for t in sorted(set(types)) or [DISORDER]]
    lines += ["", "[relations]", "", "<OVERLAP>\tArg1:<ENTITY>, Arg2:<ENTITY>, <OVL-TYPE>:<ANY>", "", "[events]", "",
              "[attributes]", ""]
    for name in ATTRIBUTE_NAMES:
        allowed = ATTRIBUTE_VALUES.get(name) or tuple(sorted(set(values.get(name, ())))) or (CUI_LESS,)
        lines.append(f"{name}\tArg:<ENTITY>, Value:{'|'.join(allowed)}")
    return "\n".join(lines) + "\n"


def format_visual_conf(types: Iterable[str]) -> str:
    """brat's ``visual.conf``: readable labels of the mention types and attributes, a colour for the mentions, a
    crossed box for negated ones and a dashed one for uncertain ones."""
    lines = ["[labels]", ""]
    for t in sorted(set(types)) or [DISORDER]:
        words = t.replace("_", " ")
        lines.append(f"{t} | {words} | {words.split(' ')[0]}")
    lines += [f"{name} | {name.replace('_', ' ')}" for name in ATTRIBUTE_NAMES]
    lines += ["", "[drawing]", "", "SPAN_DEFAULT\tfgColor:black, bgColor:#ffd8a8, borderColor:darken",
              "ARC_DEFAULT\tcolor:black, dashArray:-", "",
              # a mention has an A line only for a value other than the default: yes, for these two
              "negation\tbox:crossed, glyph:<NONE>, dashArray:<NONE>", "uncertainty\tdashArray:3-3, glyph:<NONE>"]
    return "\n".join(lines) + "\n"


def write_collection_conf(directory: str | Path) -> None:
    """Write ``annotation.conf`` and ``visual.conf`` into ``directory`` for the ``.ann`` files under it, so that
    brat opens the folder (and its sub-folders) as a collection."""
    directory = Path(directory)
    types, values = _collection_types(directory)
    atomic_write_text(directory / ANNOTATION_CONF, format_annotation_conf(types, values))
    atomic_write_text(directory / VISUAL_CONF, format_visual_conf(types))
