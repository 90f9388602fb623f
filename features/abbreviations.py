"""Abbreviations defined inside a note: the algorithm of Schwartz & Hearst (2003), as scispaCy 0.6.2 runs it.

The paper: "A simple algorithm for identifying abbreviation definitions in biomedical text", Pacific Symposium on
Biocomputing 2003. scispaCy's ``AbbreviationDetector`` runs it on spaCy tokens; it is rebuilt here with the same
results (scispaCy's pins keep it off Python 3.13 and NumPy 2), which ``tests/test_scispacy_oracle.py`` checks
against scispaCy wherever scispaCy installs:

* :func:`_candidates`: between a ``(`` token and a later ``)`` token, 1-3 tokens are a short form and the words
  before the bracket its long form candidate (``long form (SF)``); 4-8 tokens are a long form and the token before
  the bracket its short form (``SF (long form)``);
* :func:`_long_form`: the short form's letters and digits are found in order in the candidate, from the end,
  the first at a word's start; the long form starts at that word;
* :func:`_definitions`: the first definition of each short form and of each long form is kept, and every
  occurrence of a kept short form in the note is paired with its long form.

It runs on the tokens of English's own spaCy tokenizer, as in ``spacy.blank("en")`` (no model download), built
once per process.

Most notes with parentheses define nothing, and the detector tokenizes a whole note and pairs
every ``(`` with every later ``)``. So it runs only on a note that defines an abbreviation,
which :func:`defines_abbreviation` tells exactly, in two steps:

1. :func:`_may_open_definition`, on the characters around each ``(``: the conditions the
   detector puts on a candidate (at most 8 tokens between the brackets; a short form of 1-3
   tokens of 2-9 characters, beginning with a letter, at least half letters; its letters and
   digits, in order, within the words the detector reads before the bracket, or inside it),
   each loosened to what holds however the characters are tokenized: it never drops a ``(``
   whose candidate the detector accepts;
2. :func:`_opens_definition`, on the tokens of a window around each ``(`` left: the
   detector's :func:`_candidates` and :func:`_long_form` on each bracket pair it forms there
   with at most 8 tokens inside (it drops the others). The detector defines an abbreviation
   exactly when one of them finds a long form (the first it finds is always kept).

Both steps rest on how spaCy's tokenizer splits text: every character is in a token, except
single spaces after a token; a token is all whitespace or has none; and a run of non-space
characters is tokenized alone, the same whatever surrounds it. So ``k`` runs of non-space
characters hold at least ``k`` tokens, and a window that starts and ends at the edges of such
runs has the note's tokens.
"""

from __future__ import annotations

import bisect
from typing import Any, NamedTuple

import numpy as np

from share_ner.spacy_import import import_spacy
from share_ner.text import english as text_english

Span = tuple[int, int]

_MAKE_DOC: Any = None

# The detector's limits (scispaCy's filter_matches and short_form_filter).
_MAX_INSIDE = 8  # tokens between the brackets
_SHORT_TOKENS = 3  # at most this many inside: they are the short form; more: the long form
_SHORT_CHARS = (2, 9)  # characters of each short-form token
_MAX_LENGTH = 10**6  # characters: spaCy's limit on one text (Language.max_length)
_MAX_WORDS = min(_SHORT_TOKENS * _SHORT_CHARS[1] + 5, 2 * _SHORT_TOKENS * _SHORT_CHARS[1])  # tokens read before "("

# Whether a code point is a space (str.isspace), up to U+3001; every space is below it, and U+3001 is not one.
_SPACE = np.array([chr(c).isspace() for c in range(0x3002)], dtype=bool)


def _tokenizer() -> Any:
    """English's own spaCy tokenizer, as ``spacy.blank("en")`` builds it, built once. Without a spaCy ``Language``,
    whose creation imports the spaCy factories of every installed package (share-ner's own component with all it
    imports) and resolves a config: start-up time."""
    global _MAKE_DOC
    if _MAKE_DOC is None:
        import_spacy()  # without spaCy's command line (start-up time)
        from spacy.language import create_tokenizer

        _MAKE_DOC = create_tokenizer()(text_english())
    return _MAKE_DOC


class _Words(NamedTuple):
    """A text's tokens (whitespace tokens included): their texts, start offsets and 1 where a space follows."""

    text: str
    texts: list[str]
    starts: list[int]
    spaced: list[int]

    def span(self, first: int, end: int) -> Span:
        """The characters of tokens ``first`` .. ``end`` - 1."""
        return self.starts[first], self.starts[end - 1] + len(self.texts[end - 1])


def _words(text: str) -> _Words:
    doc = _tokenizer()(text)
    starts, spaced = doc.to_array(["IDX", "SPACY"]).T.tolist() if len(doc) else ([], [])
    return _Words(text, [t.text for t in doc], starts, spaced)


def find_definitions(text: str) -> list[tuple[Span, Span]]:
    """Every occurrence of a short form defined in ``text``, as ``(short-form span, long-form span)``.

    Spans are half-open character offsets into ``text``; the long-form span is the one of the
    definition (``"congestive heart failure (CHF) ... CHF"`` gives two pairs with the same long
    form). Sorted by short-form start. Text without a parenthesis has no definition, and is
    not even tokenized; the detector runs only on text that :func:`defines_abbreviation`.
    """
    if "(" not in text or ")" not in text:
        return []
    if len(text) > _MAX_LENGTH:  # refused, as by a spaCy Language
        import_spacy()
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
    own = bisect.bisect_right(starts, p) - 1  # the run of p
    k = own - (_MAX_WORDS + 1)
    start = starts[k] if k > 0 else 0
    k = own + _MAX_INSIDE + 1
    words = _words(text[start:ends[k] if k < len(ends) else len(text)])
    at = bisect.bisect_left(words.starts, p - start)
    if at == len(words.texts) or words.starts[at] != p - start or words.texts[at] != "(":
        return False
    texts = words.texts
    pairs = [(at + 1, j) for j in range(at + 2, min(at + _MAX_INSIDE + 2, len(texts))) if texts[j] == ")"]
    return any(_long_form(words, long, short) is not None for long, short in _candidates(words, pairs))


def _bracket_pairs(texts: list[str]) -> list[Span]:
    """(first token inside, the ``)``) of each ``(`` token and later ``)`` token with 1 to _MAX_INSIDE tokens
    between them, but for a ``(`` that is the first token, in the detector's order: by ``)``, then the nearest
    ``(`` first (spaCy's Matcher reports the pattern ``( + )`` so; the order decides which definition of a short
    form is kept)."""
    pairs = []
    opened: list[int] = []
    for j, word in enumerate(texts):
        if word == ")":
            for i in reversed(opened):
                if j - i - 1 > _MAX_INSIDE:
                    break
                if i + 1 < j:
                    pairs.append((i + 1, j))
        elif word == "(" and j > 0:
            opened.append(j)
    return pairs


def _candidates(words: _Words, pairs: list[Span]) -> list[tuple[Span, Span]]:
    """(long form candidate, short form candidate) token ranges of the bracket ``pairs`` (first token inside,
    the ``)``) whose short form passes the detector's filter, in the pairs' order."""
    texts = words.texts
    out = []
    for first, end in pairs:
        if end - first > _MAX_INSIDE or first == 1:
            continue
        if end - first > _SHORT_TOKENS:  # SF (long form): the token before "(" is the short form
            short, long = (first - 2, first - 1), (first, end)
            depth = 0
            for word in texts[first:end]:
                if word == "(":
                    depth += 1
                elif word == ")":
                    depth -= 1
                    if depth < 0:
                        break
            if depth:  # brackets inside the long form must pair up
                continue
        else:  # long form (SF): as many words before "(" as the short form's characters plus 5, or twice them
            short = (first, end)
            chars = sum(map(len, texts[first:end]))
            long = (max(first - 1 - min(chars + 5, 2 * chars), 0), first - 1)
        if _short_form_passes(words, *short):
            out.append((long, short))
    return out


def _short_form_passes(words: _Words, first: int, end: int) -> bool:
    """Tokens of 2-9 characters, the text at least half letters and starting with one."""
    shortest, longest = _SHORT_CHARS
    if not all(shortest <= len(w) <= longest for w in words.texts[first:end]):
        return False
    text = words.text[slice(*words.span(first, end))]
    return 2 * sum(c.isalpha() for c in text) >= len(text) and text[0].isalpha()


def _long_form(words: _Words, long: Span, short: Span) -> Span | None:
    """The long form's tokens within the candidate ``long`` for the short form's tokens ``short``, or None.

    Both are read as their tokens joined by single spaces. Each letter or digit of the short form, from its last,
    is matched case-insensitively to the nearest character of the long form before the last match; the short
    form's first also needs a character before it that is no letter or digit (or none). The long form then starts
    at the first token whose text and trailing spaces (the note's own, so not the joined string's) reach past
    that character; the whole candidate when none does."""
    texts = words.texts
    long_text = " ".join(texts[long[0]:long[1]])
    short_text = " ".join(texts[short[0]:short[1]])
    k = len(long_text) - 1
    for i in range(len(short_text) - 1, -1, -1):
        c = short_text[i].lower()
        if not c.isalnum():
            continue
        while (k >= 0 and long_text[k].lower() != c) or (i == 0 and k > 0 and long_text[k - 1].isalnum()):
            k -= 1
        if k < 0:
            return None
        k -= 1
    k += 1
    reach = 0
    for t in range(long[0], long[1]):
        reach += len(texts[t]) + words.spaced[t]
        if reach > k:
            return t, long[1]
    return long


def _definitions(words: _Words) -> list[tuple[Span, Span]]:
    """(short form, long form) character spans of every definition in the text of ``words`` and of every other
    occurrence of its short form, sorted."""
    text = words.text
    long_seen: set[str] = set()
    short_seen: set[str] = set()
    forms: dict[tuple[str, ...], list[Span]] = {}  # a kept short form's tokens -> its long forms' spans
    pairs = set()
    for long, short in _candidates(words, _bracket_pairs(words.texts)):
        found = _long_form(words, long, short)
        if found is None:
            continue
        long_span, short_span = words.span(*found), words.span(*short)
        long_text, short_text = text[slice(*long_span)], text[slice(*short_span)]
        if long_text in long_seen or short_text in short_seen:
            continue
        long_seen.add(long_text)
        short_seen.add(short_text)
        forms.setdefault(tuple(words.texts[short[0]:short[1]]), []).append(long_span)
        pairs.add((short_span, long_span))
    # Every occurrence of a kept short form's tokens.
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for tokens in forms:
        by_first.setdefault(tokens[0], []).append(tokens)
    texts = words.texts
    for i, word in enumerate(texts):
        for tokens in by_first.get(word, ()):
            n = len(tokens)
            if tuple(texts[i:i + n]) == tokens:
                pairs.update((words.span(i, i + n), long_span) for long_span in forms[tokens])
    return sorted(pairs)


def _detect(text: str) -> list[tuple[Span, Span]]:
    """The detector's definitions in the whole of ``text``."""
    return _definitions(_words(text))
