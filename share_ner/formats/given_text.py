"""The check every annotation reader makes of a mention's given text against the note at its offsets."""

from __future__ import annotations

from typing import Sequence


def matches_note(words: str, note_text: str, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether ``words``, a mention's text as an annotation file gives it, is the note's text at ``spans``.

    Whitespace is ignored: tools join a discontiguous mention's fragments with a space or without one (a suspended
    prefix's mention reads "hyperthyroidism" or "hyper thyroidism"), and a wrong offset still changes the letters.
    """
    return "".join(words.split()) == "".join("".join(note_text[s:e] for s, e in spans).split())
