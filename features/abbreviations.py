"""Abbreviations defined inside a note, found with scispaCy's ``AbbreviationDetector``.

The detector implements Schwartz & Hearst (2003): ``long form (SF)`` and ``SF (long form)``
patterns, then every later occurrence of each defined short form. It runs on a blank
English spaCy pipeline (no model download), built once per process.
"""

from __future__ import annotations

import warnings
from typing import Any

from share_ner.spacy_import import import_spacy

Span = tuple[int, int]

_NLP: Any = None


def _pipeline() -> Any:
    global _NLP
    if _NLP is None:
        import_spacy()  # without spaCy's command line (start-up time)
        import scispacy.abbreviation  # noqa: F401  (registers the "abbreviation_detector" factory)
        import spacy

        nlp = spacy.blank("en")
        nlp.add_pipe("abbreviation_detector")
        _NLP = nlp
    return _NLP


def find_definitions(text: str) -> list[tuple[Span, Span]]:
    """Every occurrence of a short form defined in ``text``, as ``(short-form span, long-form span)``.

    Spans are half-open character offsets into ``text``; the long-form span is the one of the
    definition (``"congestive heart failure (CHF) ... CHF"`` gives two pairs with the same long
    form). Sorted by short-form start. Text without a parenthesis has no definition, and is
    not even tokenized.
    """
    if "(" not in text or ")" not in text:
        return []
    # The tagger's features and the normalizer both ask for the definitions of each note: the detector runs
    # once, and the other asks the memo of the last notes (more than a batch of `share-ner tag`).
    found = _RECENT.get(text)
    if found is None:
        found = _RECENT[text] = tuple(_detect(text))
        if len(_RECENT) > RECENT_NOTES:
            del _RECENT[next(iter(_RECENT))]
    return list(found)


RECENT_NOTES = 64
_RECENT: dict[str, tuple[tuple[Span, Span], ...]] = {}


def _detect(text: str) -> list[tuple[Span, Span]]:
    with warnings.catch_warnings():
        # W036: the detector's global matcher is empty when no definition was found.
        warnings.filterwarnings("ignore", message=r"\[W036\]")
        doc = _pipeline()(text)
    pairs = set()
    for short in doc._.abbreviations:
        long = short._.long_form
        pairs.add(((short.start_char, short.end_char), (long.start_char, long.end_char)))
    return sorted(pairs)
