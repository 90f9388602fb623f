"""The training gazetteer: mention strings of annotated notes with how often each carried each CUI.

A discontiguous mention's string is its spans' text joined by one space. The
gazetteer is a :class:`~share_ner.lexicons.Lexicon` whose entries have source
``TRAIN`` and a ``count``; ``CUI-less`` is a label like any other.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Mapping

from share_ner.document import Document, Mention, span_past_end
from share_ner.errors import InputError
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry

SOURCE = "TRAIN"


def mention_string(doc: Document, mention: Mention) -> str:
    """The mention's words, spans joined by a space, whitespace collapsed."""
    return " ".join(mention.text(doc.text, " ").split())


def gazetteer_counts(docs: Mapping[str, Document], gold: Mapping[str, list[Mention]]) -> Counter[tuple[str, str]]:
    """Counts of (mention string, CUI) over the annotated notes; a gold note without text is an error."""
    counts: Counter[tuple[str, str]] = Counter()
    for doc_id, mentions in gold.items():
        if not mentions:
            continue
        doc = docs.get(doc_id)
        if doc is None:
            raise InputError(None, f"gold mentions for note {doc_id} but no note text with that id")
        for m in mentions:
            if problem := span_past_end(doc, m):
                raise InputError(None, problem)
            s = mention_string(doc, m)
            if s:
                counts[(s, m.cui)] += 1
    return counts


def gazetteer_lexicon(docs: Mapping[str, Document], gold: Mapping[str, list[Mention]],
                      name: str = "training gazetteer") -> Lexicon:
    """The gazetteer as a lexicon (source ``TRAIN``, with counts), most frequent strings first."""
    counts = gazetteer_counts(docs, gold)
    entries = [LexiconEntry(cui, s, SOURCE, (), False, n)
               for (s, cui), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return Lexicon.from_entries(entries, name)


def build_gazetteer_lexicon(gold_path: str | Path, text_path: str | Path) -> Lexicon:
    """Read gold annotations (ShARe pipe files, or any format :func:`read_annotations` reads) and their notes and
    return their gazetteer; a span past its note's end is an error naming the annotation file and line."""
    docs = read_notes(text_path)
    return gazetteer_lexicon(docs, read_annotations(gold_path, docs), f"gazetteer of {Path(gold_path).name}")
