"""Abbreviations defined inside a note, found with scispaCy's ``AbbreviationDetector``.

The detector implements Schwartz & Hearst (2003): ``long form (SF)`` and ``SF (long form)``
patterns, then every later occurrence of each defined short form. It runs on the tokens of
English's own spaCy tokenizer, as in ``spacy.blank("en")`` (no model download), built once
per process.

Most notes with parentheses define nothing, and the detector tokenizes a whole note and pairs
every ``(`` with every later ``)``. So it runs only on a note that defines an abbreviation,
which :func:`defines_abbreviation` tells exactly, in two steps:

1. :func:`_may_open_definition`, on the characters around each ``(``: the conditions the
   detector puts on a candidate (at most 8 tokens between the brackets; a short form of 1-3
   tokens of 2-9 characters, beginning with a letter, at least half letters; its letters and
   digits, in order, within the words the detector reads before the bracket, or inside it),
   each loosened to what holds however the characters are tokenized: it never drops a ``(``
   whose candidate the detector accepts;
2. :func:`_opens_definition`, on the tokens of a window around each ``(`` left: scispaCy's
   own ``filter_matches`` and ``find_abbreviation`` on each bracket pair the detector's
   matcher forms there with at most 8 tokens inside (``filter_matches`` drops the others).
   The detector defines an abbreviation exactly when one of them finds a long form (the
   first it finds is always kept).

Both steps rest on how spaCy's tokenizer splits text: every character is in a token, except
single spaces after a token; a token is all whitespace or has none; and a run of non-space
characters is tokenized alone, the same whatever surrounds it. So ``k`` runs of non-space
characters hold at least ``k`` tokens, and a window that starts and ends at the edges of such
runs has the note's tokens.
"""

from __future__ import annotations

import bisect
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np

from share_ner.spacy_import import import_spacy
from share_ner.text import english as text_english

Span = tuple[int, int]

_NLP: Any = None

# The detector's limits (scispacy.abbreviation.filter_matches and short_form_filter).
_MAX_INSIDE = 8  # tokens between the brackets
_SHORT_TOKENS = 3  # at most this many inside: they are the short form; more: the long form
_SHORT_CHARS = (2, 9)  # characters of each short-form token
_MAX_LENGTH = 10**6  # characters: spaCy's limit on one text (Language.max_length)
_MAX_WORDS = min(_SHORT_TOKENS * _SHORT_CHARS[1] + 5, 2 * _SHORT_TOKENS * _SHORT_CHARS[1])  # tokens read before "("

# Whether a code point is a space (str.isspace), up to U+3001; every space is below it, and U+3001 is not one.
_SPACE = np.array([chr(c).isspace() for c in range(0x3002)], dtype=bool)


def _pipeline() -> Any:
    """The detector's pipeline, built once: ``make_doc`` (English's own tokenizer, as ``spacy.blank("en")`` builds
    it) and ``detector``. Without a spaCy ``Language``, whose creation imports the spaCy factories of every
    installed package (share-ner's own component with all it imports) and resolves a config: start-up time."""
    global _NLP
    if _NLP is None:
        import_spacy()  # without spaCy's command line (start-up time)
        from scispacy.abbreviation import AbbreviationDetector
        from spacy.language import create_tokenizer

        english = text_english()
        _NLP = SimpleNamespace(make_doc=create_tokenizer()(english), detector=AbbreviationDetector(english))
    return _NLP


def find_definitions(text: str) -> list[tuple[Span, Span]]:
    """Every occurrence of a short form defined in ``text``, as ``(short-form span, long-form span)``.

    Spans are half-open character offsets into ``text``; the long-form span is the one of the
    definition (``"congestive heart failure (CHF) ... CHF"`` gives two pairs with the same long
    form). Sorted by short-form start. Text without a parenthesis has no definition, and is
    not even tokenized; the detector runs only on text that :func:`defines_abbreviation`.
    """
    if "(" not in text or ")" not in text:
        return []
    if len(text) > _MAX_LENGTH:  # refused, as by the spaCy Language the detector ran in
        _pipeline()
        from spacy.errors import Errors

        raise ValueError(Errors.E088.format(length=len(text), max_length=_MAX_LENGTH))
    # The tagger's features and the normalizer both ask for the definitions of each note: the detector runs
    # once, and the other asks the memo of the last notes (more than a batch of `share-ner tag`).
    found = _RECENT.get(text)
    if found is None:
        found = _RECENT[text] = tuple(_detect(text)) if defines_abbreviation(text) else ()
        if len(_RECENT) > RECENT_NOTES:
            del _RECENT[next(iter(_RECENT))]
    return list(found)


RECENT_NOTES = 64
_RECENT: dict[str, tuple[tuple[Span, Span], ...]] = {}


def defines_abbreviation(text: str) -> bool:
    """Whether the detector finds a definition in ``text``, told by the two steps of the module docstring
    without running the detector on the whole text."""
    if "(" not in text or ")" not in text:
        return False
    starts, ends = _runs(text)
    opens = [p for p in _positions(text) if _may_open_definition(text, p, starts)]
    return any(_opens_definition(text, p, starts, ends) for p in opens)


def _positions(text: str) -> list[int]:
    out = []
    p = text.find("(")
    while p >= 0:
        out.append(p)
        p = text.find("(", p + 1)
    return out


def _runs(text: str) -> tuple[list[int], list[int]]:
    """The starts and ends of the runs of non-space characters of ``text``."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    solid = np.zeros(len(codes) + 2, dtype=bool)
    np.logical_not(_SPACE[np.minimum(codes, len(_SPACE) - 1)], out=solid[1:-1])
    edges = np.flatnonzero(solid[1:] != solid[:-1])
    return edges[0::2].tolist(), edges[1::2].tolist()


def _may_open_definition(text: str, p: int, starts: list[int]) -> bool:
    """Step 1: a ``)`` after the ``(`` at ``p`` whose brackets may hold a short form or a long form."""
    after = bisect.bisect_right(starts, p)  # the first run that starts after p
    # Runs hold a token or more each: the 8 tokens inside at most end before the 9th run after p starts.
    limit = starts[after + _MAX_INSIDE] if after + _MAX_INSIDE < len(starts) else len(text)
    before = bisect.bisect_left(starts, p) - 1  # the last run that starts before p
    q = text.find(")", p + 1)
    while 0 <= q <= limit:
        inside = text[p + 1:q]
        if inside and (_may_be_short_inside(text, p, inside, starts, before) or _may_be_long_inside(text, p, inside)):
            return True
        q = text.find(")", q + 1)
    return False


def _may_be_short_inside(text: str, p: int, inside: str, starts: list[int], before: int) -> bool:
    """``long form (SF)``: ``inside`` may be 1-3 tokens of a short form that the words before ``p`` spell."""
    n = len(inside)
    shortest, longest = _SHORT_CHARS
    if before < 0 or n > _SHORT_TOKENS * (longest + 1) + 1:  # the tokens, a space after each, and one after "("
        return False
    words = inside.split()
    if len(words) > _SHORT_TOKENS or any(len(w) < shortest for w in words):  # a 1-character run is a token
        return False
    first = inside[1] if inside[0] == " " and n > 1 else inside[0]  # the short form starts after "(" or "( "
    # At least half letters, in the short form: `inside` without at most one space at each end.
    if not first.isalpha() or 2 * sum(c.isalpha() for c in inside) < n - 2:
        return False
    # The tokens' characters: all but the spaces that end a token (a space after a non-space character).
    chars = n - sum(1 for i, c in enumerate(inside) if c == " " and (i == 0 or not inside[i - 1].isspace()))
    max_words = min(chars + 5, 2 * chars)  # how many tokens before "(" the detector reads
    start = starts[max(before - max_words + 1, 0)]  # they lie within the last max_words runs
    return _spells(inside, text[start:p])


def _may_be_long_inside(text: str, p: int, inside: str) -> bool:
    """``SF (long form)``: the token before ``p`` may be a short form whose letters ``inside`` spells."""
    end = p - 1 if p > 0 and text[p - 1] == " " else p  # the token before "(" ends at it or one space before
    if end == 0 or text[end - 1].isspace():
        return False
    shortest, longest = _SHORT_CHARS
    for start in range(max(end - longest, 0), end - shortest + 1):  # the token ends its run
        short = text[start:end]
        if (short[0].isalpha() and 2 * sum(c.isalpha() for c in short) >= len(short)
                and not any(c.isspace() for c in short) and _spells(short, inside)):
            return True
    return False


def _spells(short: str, text: str) -> bool:
    """The letters and digits of ``short`` appear in ``text`` in order, compared a character at a time in lower
    case, as ``find_abbreviation`` compares them (which also asks the first to start a word: left out here). As
    there, a character counts if its lower case is a letter or digit ("İ" is not: its lower case ends in a mark)."""
    short = "".join(c for c in short if c.lower().isalnum())
    if short.isascii() and text.isascii():
        lowered, pos = text.lower(), 0
        for ch in short.lower():
            pos = lowered.find(ch, pos) + 1
            if not pos:
                return False
        return True
    rest = iter([c.lower() for c in text])
    return all(any(c.lower() == x for x in rest) for c in short)


def _opens_definition(text: str, p: int, starts: list[int], ends: list[int]) -> bool:
    """Step 2: whether the detector finds a long form for a bracket pair opened by the ``(`` at ``p``.

    The window starts at a run _MAX_WORDS + 1 runs before the one of ``p`` (else at the note's start), so that
    the detector's look-back and its test for a note's first token see the note's tokens, and ends with the
    run _MAX_INSIDE + 1 runs after it (else at the note's end): the tokens of every pair it forms."""
    nlp = _pipeline()
    from scispacy.abbreviation import filter_matches, find_abbreviation  # imported by _pipeline

    own = bisect.bisect_right(starts, p) - 1  # the run of p
    k = own - (_MAX_WORDS + 1)
    start = starts[k] if k > 0 else 0
    k = own + _MAX_INSIDE + 1
    doc = nlp.make_doc(text[start:ends[k] if k < len(ends) else len(text)])
    at = np.flatnonzero(doc.to_array("IDX") == p - start)
    if not at.size or doc[int(at[0])].text != "(":
        return False
    opening = int(at[0])
    orth = doc.to_array("ORTH")
    closing = doc.vocab.strings.add(")")
    # The matcher's pairs as filter_matches takes them: (match id, first token inside, the ")").
    pairs = [(0, opening + 1, j) for j in range(opening + 2, min(opening + _MAX_INSIDE + 2, len(doc)))
             if orth[j] == closing]
    return any(find_abbreviation(long, short)[1] is not None for long, short in filter_matches(pairs, doc))


def _detect(text: str) -> list[tuple[Span, Span]]:
    """The detector's definitions in the whole of ``text``."""
    nlp = _pipeline()
    with warnings.catch_warnings():
        # W036: the detector's global matcher is empty when no definition was found.
        warnings.filterwarnings("ignore", message=r"\[W036\]")
        doc = nlp.detector(nlp.make_doc(text))
    pairs = set()
    for short in doc._.abbreviations:
        long = short._.long_form
        pairs.add(((short.start_char, short.end_char), (long.start_char, long.end_char)))
    return sorted(pairs)
