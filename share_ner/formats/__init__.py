"""Annotation file formats: one module per format, and dispatch by file name.

- ``share`` — the ShARe/CLEF pipe format, ``<doc>.pipe.txt`` (:mod:`share_ner.formats.share`)
- ``brat`` — BRAT standoff, ``<doc>.ann`` (:mod:`share_ner.formats.brat`)
- ``jsonl`` — JSON Lines, one note a line, ``*.jsonl`` (:mod:`share_ner.formats.jsonl`)
- ``share2014`` — the ShARe/CLEF 2014 Task 2 pipe format with attributes, ``<doc>.pipe.txt`` too
  (:mod:`share_ner.formats.share2014`; told from the 2013 format by its first line)
- ``bioc`` — BioC JSON, a collection of notes, ``*.bioc.json`` (:mod:`share_ner.formats.bioc`)

:func:`read_annotations` reads a directory (searched recursively, formats may be
mixed) or a single file into ``{doc_id: [Mention, ...]}``; a per-note file with
no mentions is a note with no mentions. :func:`write_annotations` writes one
note's mentions in any of these formats; reading back gives the same mentions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from share_ner.document import Document, Mention, span_past_end
from share_ner.errors import InputError, ShareNerError
from share_ner.formats import bioc, brat, jsonl, share, share2014
from share_ner.formats.given_text import matches_note
from share_ner.io import doc_id_from_path, is_gold_file, read_text_file

FORMATS = ("share", "brat", "jsonl", "share2014", "bioc")
# Written by share-ner tag only, as one table per shard of a CSV export (share_ner.formats.parquet, needs pyarrow).
TABLE_FORMATS = ("parquet",)
OUTPUT_FORMATS = FORMATS + TABLE_FORMATS
SUFFIXES = {"share": ".pipe.txt", "brat": brat.SUFFIX, "jsonl": jsonl.SUFFIX, "share2014": ".pipe.txt",
            "bioc": bioc.SUFFIX}

# per note: the file it came from and (line number or None, mention, the file's text for it or "")
_Located = dict[str, tuple[Path, list[tuple[int | None, Mention, str]]]]


def format_of(path: str | Path) -> str | None:
    """The format a file name announces (``share``, ``brat``, ``jsonl``, ``bioc``), or None."""
    path = Path(path)
    if is_gold_file(path):
        return "share"
    if path.name.endswith(brat.SUFFIX):
        return "brat"
    if path.name.endswith(jsonl.SUFFIX):
        return "jsonl"
    if bioc.is_bioc_name(path.name):
        return "bioc"
    return None


def _sniff(path: Path) -> str:
    text = read_text_file(path)
    first = next((line for line in text.split("\n") if line.strip()), "")
    if first.lstrip().startswith("{"):
        return "bioc" if bioc.looks_like_bioc(text) else "jsonl"
    if share.SEP in first:
        return "share"
    if share2014.looks_like(first):
        return "share2014"
    if first[:1] == "T" and "\t" in first:
        return "brat"
    if not first:
        raise InputError(path, "empty file of unknown format; name it <doc>.pipe.txt, <doc>.ann, *.jsonl or "
                               "*.bioc.json")
    raise InputError(
        path, "not a pipe (doc.txt||Disease_Disorder||...), BRAT (T1<TAB>...), JSON Lines ({...}) or BioC JSON file", 1
    )


def _pipe_lines(path: Path) -> list[int]:
    # read_pipe skips blank lines; these are the line numbers of the mentions it returns
    text = read_text_file(path)
    return [i for i, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _first_line(path: Path) -> str:
    return next((line.removesuffix("\r") for line in read_text_file(path).split("\n") if line.strip()), "")


def _read_file(path: Path, fmt: str, per_note: bool, out: _Located) -> None:
    """Read one file into ``out``; ``per_note`` files hold one note named by the file."""
    found: dict[str, list[tuple[int | None, Mention, str]]] = {}
    if fmt == "share" and share2014.looks_like(_first_line(path)):
        fmt = "share2014"
    if fmt == "share2014":
        lines = _pipe_lines(path)
        for lineno, m in zip(lines, share2014.read_share2014(path, doc_id_from_path(path) if per_note else None)):
            found.setdefault(m.doc_id, []).append((lineno, m, ""))
        if per_note:
            found.setdefault(doc_id_from_path(path), [])
    elif fmt == "share":
        if per_note:
            doc_id = doc_id_from_path(path)
            found[doc_id] = [(n, m, "") for n, m in zip(_pipe_lines(path), share.read_pipe(path, expect_doc=doc_id))]
        else:
            for lineno, m in zip(_pipe_lines(path), share.read_pipe(path)):
                found.setdefault(m.doc_id, []).append((lineno, m, ""))
    elif fmt == "brat":
        doc_id = doc_id_from_path(path)
        found[doc_id] = list(brat.iter_ann(read_text_file(path), doc_id, path))
    elif fmt == "bioc":
        for doc in bioc.read_bioc(path):
            found[doc.doc_id] = [(None, m, w) for m, w in zip(doc.mentions, doc.mention_texts)]
    else:
        for rec in jsonl.read_jsonl(path):
            found[rec.doc_id] = [(rec.line, m, w) for m, w in zip(rec.mentions, rec.mention_texts)]
    for doc_id, located in found.items():
        if doc_id in out:
            raise InputError(path, f"note {doc_id} is also annotated in {out[doc_id][0]}")
        out[doc_id] = (path, located)


def annotation_files(path: str | Path) -> list[Path]:
    """Annotation files under a directory (recursively, sorted), by file name; hidden files are skipped."""
    root = Path(path)
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".") and format_of(p) is not None
    ]


def read_annotations(path: str | Path, notes: Mapping[str, Document] | None = None) -> dict[str, list[Mention]]:
    """Mentions keyed by note id from a directory or a single file of pipe / ``.ann`` / ``.jsonl`` / ``.bioc.json``
    annotations.

    A single file of unknown suffix is recognised by its first line. With
    ``notes``, every span of a note found there is checked to end within its
    text, and the mention text a BRAT, JSON Lines or BioC file carries must be the
    note's text at those offsets (whitespace aside) — offsets counted on a copy
    with ``\r\n`` turned into ``\n`` are caught this way. Errors name the
    annotation file and line, never the text.
    """
    path = Path(path)
    located: _Located = {}
    if path.is_file():
        fmt = format_of(path) or _sniff(path)
        _read_file(path, fmt, per_note=False, out=located)
    elif path.is_dir():
        files = annotation_files(path)
        if not files:
            raise InputError(path, "no annotation files (*.pipe.txt, *.ann, *.jsonl, *.bioc.json) in this directory")
        for p in files:
            _read_file(p, format_of(p) or "share", per_note=True, out=located)
    else:
        raise InputError(path, "no such file or directory")
    if notes is not None:
        check_offsets(located, notes)
    return {doc_id: [m for _, m, _ in ms] for doc_id, (_, ms) in located.items()}


def check_offsets(located: _Located, notes: Mapping[str, Document]) -> None:
    for doc_id, (path, mentions) in located.items():
        doc = notes.get(doc_id)
        if doc is None:
            continue
        for lineno, m, words in mentions:
            if problem := span_past_end(doc, m):
                raise InputError(path, problem, lineno)
            if words and not matches_note(words, doc.text, m.spans):
                where = ";".join(f"{s}-{e}" for s, e in m.spans)
                raise InputError(
                    path,
                    f"the mention text given for {where} is not the text of note {doc_id} there; "
                    "expected offsets into the note as stored (a CRLF counts two characters)",
                    lineno,
                )


def write_annotations(
    out_dir: str | Path, doc: Document, mentions: Iterable[Mention], fmt: str, *, with_text: bool = False
) -> Path:
    """Write one note's mentions as ``<doc>.pipe.txt``, ``<doc>.ann``, ``<doc>.jsonl`` or ``<doc>.bioc.json`` in
    ``out_dir``.

    With ``with_text`` the note text travels too: in the JSON line or the BioC passage, or as
    ``<doc>.txt`` beside the ``.ann`` (brat needs it to display the note).
    Returns the annotation file's path.
    """
    if fmt not in FORMATS:
        raise ShareNerError(f"unknown annotation format {fmt!r}; expected one of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    mentions = list(mentions)
    if fmt == "share":
        target = out_dir / share.gold_file_name(doc.id)
        share.write_pipe(target, mentions)
    elif fmt == "share2014":
        target = out_dir / share.gold_file_name(doc.id)
        share2014.write_share2014(target, mentions)
    elif fmt == "brat":
        target = out_dir / brat.file_name(doc.id)
        brat.write_brat(target, mentions, doc.text)
        if with_text:
            with open(out_dir / f"{doc.id}.txt", "w", encoding="utf-8", newline="") as f:
                f.write(doc.text)
    elif fmt == "bioc":
        target = out_dir / bioc.file_name(doc.id)
        bioc.write_bioc(target, [(doc.id, mentions, doc.text)], with_text=with_text)
    else:
        target = out_dir / jsonl.file_name(doc.id)
        jsonl.write_jsonl(target, [(doc.id, mentions, doc.text)], with_text=with_text)
    return target


__all__ = [
    "FORMATS",
    "OUTPUT_FORMATS",
    "TABLE_FORMATS",
    "SUFFIXES",
    "annotation_files",
    "check_offsets",
    "format_of",
    "read_annotations",
    "write_annotations",
]
