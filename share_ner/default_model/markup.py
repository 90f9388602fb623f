"""The hand-annotated corpus of the default model: invented clinical notes authored in an inline markup
(``share_ner/data/default_corpus/markup/<doc>.markup``), converted to the ShARe layout (``share/text/<doc>.txt`` and
``share/gold/<doc>.pipe.txt``) by :func:`parse_markup`; the template generator
(:mod:`share_ner.default_model.synthetic`) writes its documents in the same markup.

The markup::

    [[chest pain|C0008031]]            contiguous mention with a CUI
    [[dyspnea]]                        contiguous mention, CUI-less
    {{m1:left atrium}} is moderately {{m1:dilated}}
                                       one discontiguous mention, fragments share id m1
    {{a:aortic root}} and {{b:ascending aorta}} are {{a,b:dilated}}
                                       shared head: two mentions share the fragment
    {{m2:tumor|C0027651}} ...          a CUI may follow the text of any fragment
    {{h:hepatic}} or {{c:cardiac}} {{h,c:disease}}
                                       fragments of one id split only by spaces
                                       merge into one span ("cardiac disease")

Everything outside the brackets is note text, byte for byte (CRLF kept).
Regenerate the ShARe files with ``python -m share_ner.default_model.markup``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Mapping, Sequence

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import InputError
from share_ner.formats.share import read_pipe_dir, write_pipe
from share_ner.inputs.files import read_notes
from share_ner.io import read_text_file

DATA_DIR = Path(__file__).parent.parent / "data"
CORPUS_DIR = DATA_DIR / "default_corpus"
MARKUP_DIR = CORPUS_DIR / "markup"
SHARE_DIR = CORPUS_DIR / "share"
MARKUP_SUFFIX = ".markup"

CUI_RE = re.compile(r"^(C\d{7}|CUI-less)$")
_ID_RE = re.compile(r"^[A-Za-z0-9_]+$")
_TOKEN_RE = re.compile(r"\[\[(.*?)\]\]|\{\{(.*?)\}\}", re.S)


def _split_cui(body: str, path: str | Path | None, line: int) -> tuple[str, str | None]:
    if "|" not in body:
        return body, None
    text, cui = body.rsplit("|", 1)
    if not CUI_RE.match(cui):
        raise InputError(path, f"markup CUI {cui!r} is not C<7 digits> or CUI-less", line)
    return text, cui


def parse_markup(markup: str, doc_id: str, path: str | Path | None = None) -> tuple[Document, list[Mention]]:
    """Turn an annotated markup text into the plain note and its mentions (sorted by offsets).

    Raises :class:`InputError` naming ``path`` and the line for malformed markup
    (empty mention, bad fragment id, conflicting CUIs, stray brackets).
    """
    out: list[str] = []
    pos = 0  # offset in the plain text being built
    last = 0  # offset in the markup
    contiguous: list[Mention] = []
    fragments: dict[str, list[tuple[int, int]]] = {}
    cuis: dict[str, str] = {}
    first_line: dict[str, int] = {}

    def line_of(offset: int) -> int:
        return markup.count("\n", 0, offset) + 1

    for match in _TOKEN_RE.finditer(markup):
        plain = markup[last : match.start()]
        out.append(plain)
        pos += len(plain)
        last = match.end()
        line = line_of(match.start())
        if match.group(1) is not None:
            text, cui = _split_cui(match.group(1), path, line)
            if not text.strip() or text != text.strip():
                raise InputError(path, "empty or space-padded [[mention]]", line)
            contiguous.append(Mention(doc_id, ((pos, pos + len(text)),), cui or CUI_LESS))
        else:
            body = match.group(2)
            if ":" not in body:
                raise InputError(path, "fragment {{...}} needs ids: {{id:text}}", line)
            ids_part, rest = body.split(":", 1)
            text, cui = _split_cui(rest, path, line)
            if not text.strip() or text != text.strip():
                raise InputError(path, "empty or space-padded {{fragment}}", line)
            for frag_id in ids_part.split(","):
                if not _ID_RE.match(frag_id):
                    raise InputError(path, f"bad fragment id {frag_id!r}", line)
                fragments.setdefault(frag_id, []).append((pos, pos + len(text)))
                first_line.setdefault(frag_id, line)
                if cui is not None:
                    if cuis.setdefault(frag_id, cui) != cui:
                        raise InputError(path, f"fragment id {frag_id!r} has two CUIs", line)
        out.append(text)
        pos += len(text)
    tail = markup[last:]
    out.append(tail)
    plain_text = "".join(out)
    for bracket in ("[[", "]]", "{{", "}}"):
        if bracket in plain_text:
            k = plain_text.index(bracket)
            raise InputError(path, f"unbalanced {bracket!r} in markup", plain_text.count("\n", 0, k) + 1)
    mentions = list(contiguous)
    for frag_id, spans in fragments.items():
        if len(spans) < 2:
            # A single-fragment id is legal (e.g. a head noun later shared) but usually a typo.
            raise InputError(path, f"fragment id {frag_id!r} has only one fragment; use [[...]]", first_line[frag_id])
        mentions.append(Mention(doc_id, _merge_adjacent(spans, plain_text), cuis.get(frag_id, CUI_LESS)))
    mentions.sort(key=lambda m: (m.spans, m.cui))
    return Document(doc_id, plain_text), mentions


def _merge_adjacent(spans: list[tuple[int, int]], text: str) -> tuple[tuple[int, int], ...]:
    # "{{cd:cardiac}} {{hd,cd:disease}}": fragments split only by spaces are one span of the mention.
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and text[merged[-1][1] : s].strip(" ") == "":
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return tuple(merged)


def read_markup_dir(path: str | Path = MARKUP_DIR) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """Parse every ``*.markup`` file under ``path`` (bytes decoded as UTF-8, newlines kept)."""
    docs: dict[str, Document] = {}
    gold: dict[str, list[Mention]] = {}
    for p in sorted(Path(path).glob(f"*{MARKUP_SUFFIX}")):
        markup = read_text_file(p, "markup file")
        doc, mentions = parse_markup(markup, p.name[: -len(MARKUP_SUFFIX)], p)
        docs[doc.id], gold[doc.id] = doc, mentions
    return docs, gold


def write_share(out_dir: str | Path, docs: Mapping[str, Document], gold: Mapping[str, list[Mention]]) -> None:
    """Write ``text/<doc>.txt`` and ``gold/<doc>.pipe.txt`` under ``out_dir``."""
    out_dir = Path(out_dir)
    (out_dir / "text").mkdir(parents=True, exist_ok=True)
    (out_dir / "gold").mkdir(parents=True, exist_ok=True)
    for doc_id, doc in docs.items():
        (out_dir / "text" / f"{doc_id}.txt").write_bytes(doc.text.encode("utf-8"))
        write_pipe(out_dir / "gold" / f"{doc_id}.pipe.txt", gold.get(doc_id, []))


def load_default_corpus(share_dir: str | Path = SHARE_DIR) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """The committed hand-annotated corpus in the ShARe layout: (notes by id, gold mentions by id)."""
    share_dir = Path(share_dir)
    docs = read_notes(share_dir / "text")
    gold = read_pipe_dir(share_dir / "gold")
    return docs, {doc_id: gold.get(doc_id, []) for doc_id in docs}


def build_share_corpus(markup_dir: str | Path = MARKUP_DIR, out_dir: str | Path = SHARE_DIR) -> tuple[int, int]:
    """Regenerate the ShARe files of the corpus from its markup; returns (notes, mentions)."""
    docs, gold = read_markup_dir(markup_dir)
    out_dir = Path(out_dir)
    for sub in ("text", "gold"):
        if (out_dir / sub).is_dir():
            for old in (out_dir / sub).iterdir():
                if old.is_file():
                    old.unlink()
    write_share(out_dir, docs, gold)
    return len(docs), sum(len(v) for v in gold.values())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m share_ner.default_model.markup``: regenerate ``default_corpus/share`` from the markup."""
    n_docs, n_mentions = build_share_corpus()
    print(f"wrote {n_docs} notes, {n_mentions} mentions to {SHARE_DIR}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
