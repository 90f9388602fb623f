"""Helpers shared by several test modules (pytest puts this folder on the import path)."""

from __future__ import annotations

from share_ner.document import Mention


def mention_of(text: str, *phrases: str, doc_id: str = "d") -> Mention:
    """A mention made of ``phrases`` (one fragment each), each found left to right in ``text``."""
    spans, pos = [], 0
    for p in phrases:
        s = text.index(p, pos)
        spans.append((s, s + len(p)))
        pos = s + len(p)
    return Mention(doc_id, tuple(spans))
