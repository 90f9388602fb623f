"""Body location (ShARe/CLEF 2014): the anatomical site of a disorder mention, its CUI and its span.

An anatomy lexicon (the lexicon TSV format of :mod:`share_ner.lexicons.lexicon`) names the sites: the packaged
``share_ner/data/anatomy.tsv``, a short general list of common body sites written for this package (never taken
from an evaluation corpus; CUI-less where no CUI is certain), or a site's own, e.g. built from UMLS with
``share-ner lexicon build --umls META --anatomy``. :class:`share_ner.attributes.ContextMatcher` compiles every
name into the regular expression of its triggers (a character trie), so that a note is scanned once for both;
:meth:`AnatomyMatcher.sites` alone compiles a regex of the names only.

A mention's location is, per the 2014 template (the site the disorder is at, the cue being the site's own span):

* an anatomy name inside the mention's own span ("lung mass", "left ventricular hypertrophy"), unless the name
  is the whole mention (then it names no site of something else);
* else the nearest anatomy name in the same sentence outside every mention, at most :data:`WINDOW` words away,
  with no punctuation that ends a clause (``, ; : . ! ?``), line break or conjunction (``and``, ``or``, ``but``:
  the site belongs to the other conjunct) between ("mass in the left lung").
"""

from __future__ import annotations

import re
from bisect import bisect_left
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from share_ner.attributes.patterns import _trie_pattern, more_words
from share_ner.document import Mention, Span
from share_ner.lexicons.lexicon import LexiconEntry, parse_lexicon
from share_ner.lexicons.loader import load_lexicon

PACKAGED_ANATOMY = "anatomy.tsv"
# The most words between a mention and a site outside it: a preposition phrase ("in the left lung") and no more,
# a ConText-style window that keeps a site of the next clause from being taken.
WINDOW = 3
_STOP = re.compile(r"[,;:.!?\n\r]|\b(?:and|or|but)\b", re.IGNORECASE)

__all__ = ["AnatomyMatcher", "PACKAGED_ANATOMY", "WINDOW"]


def _trie(names: Iterable[str]) -> str:
    return _trie_pattern(names)  # one trie builder for triggers and sites


class AnatomyMatcher:
    """Compiled anatomy names; :meth:`locate` gives each mention its site (CUI, span) or None."""

    def __init__(self, entries: Sequence[LexiconEntry], window: int = WINDOW) -> None:
        self.entries = list(entries)
        self.window = window
        cuis: dict[str, str] = {}
        for entry in self.entries:
            key = " ".join(entry.name.lower().split())
            if key:
                cuis.setdefault(key, entry.cui)  # of two concepts sharing a name, the first listed keeps it
        self.cuis = cuis
        # compiled when first used: ContextMatcher matches the names with its own triggers, in one pass
        self._regex: tuple[re.Pattern[str], re.Pattern[str]] | None = None

    @classmethod
    def load(cls, path: str | Path | None = None) -> "AnatomyMatcher":
        """The packaged list, or the anatomy lexicon at ``path`` (errors name the file and line)."""
        if path is None:
            text = resources.files("share_ner").joinpath("data", PACKAGED_ANATOMY).read_text(encoding="utf-8")
            return cls(parse_lexicon(text, PACKAGED_ANATOMY))
        return cls(load_lexicon(path).entries)

    def __reduce__(self) -> tuple[Any, tuple[list[LexiconEntry], int]]:
        return (AnatomyMatcher, (self.entries, self.window))

    def sites(self, text: str, lower: str | None = None) -> list[tuple[int, int, str]]:
        """Every anatomy name in ``text``: (start, end, CUI), in text order."""
        if self._regex is None:
            pattern = _trie(self.cuis)
            # over the lower-cased note; case-insensitively over a note whose lower case changes its length
            self._regex = (re.compile(pattern), re.compile(pattern, re.IGNORECASE))
        lower = text.lower() if lower is None else lower
        regex, over = (self._regex[0], lower) if len(lower) == len(text) else (self._regex[1], text)
        out = []
        for m in regex.finditer(over):
            cui = self.cui_of(m.group())
            if cui is not None:
                out.append((m.start(), m.end(), cui))
        return out

    def cui_of(self, name: str) -> str | None:
        """The CUI of an anatomy name as matched in a note (any case and spacing), or None."""
        cuis = self.cuis
        cui = cuis.get(name)
        if cui is None:
            name = name.lower()
            cui = cuis.get(name) or cuis.get(" ".join(name.split()))
        return cui

    def locate(self, text: str, mentions: Sequence[Mention], lower: str | None = None,
               found: list[tuple[int, int, str]] | None = None) -> list[tuple[str, Span] | None]:
        """For each of ``mentions``: (CUI, span) of its body location, or None. ``found``: the anatomy names of
        the note (:meth:`sites`) when already matched."""
        if found is None:
            found = self.sites(text, lower) if mentions else []
        if not found:
            return [None] * len(mentions)
        starts = [s for s, _, _ in found]
        # other mentions' fragments (a lone mention's own are skipped by position)
        fragments = sorted(f for m in mentions for f in m.spans) if len(mentions) > 1 else []
        frag_starts = [s for s, _ in fragments]
        return [self._site(text, m, found, starts, fragments, frag_starts) for m in mentions]

    def _site(self, text: str, mention: Mention, found: list[tuple[int, int, str]], starts: list[int],
              fragments: list[Span], frag_starts: list[int]) -> tuple[str, Span] | None:
        spans = mention.spans
        for fs, fe in spans:  # inside the mention's own span
            i = bisect_left(starts, fs)
            while i < len(found) and found[i][0] < fe:
                s, e, cui = found[i]
                if e <= fe and not (len(spans) == 1 and (s, e) == (fs, fe)):
                    return cui, (s, e)
                i += 1
        best: tuple[int, str, Span] | None = None
        first, last = spans[0][0], spans[-1][1]
        i = bisect_left(starts, first)
        for j in (i - 1, i):  # the nearest before, then the nearest after (skipping any inside the mention)
            while 0 <= j < len(found) and first <= found[j][0] < last:
                j += 1
            if not 0 <= j < len(found):
                continue
            s, e, cui = found[j]
            a, b = (e, first) if e <= first else (last, s)
            if a > b or more_words(text, a, b, self.window) or _STOP.search(text, a, b):
                continue
            if fragments and _in_mention(s, e, fragments, frag_starts):
                continue  # another mention's own site ("mass and lung nodule")
            if best is None or b - a < best[0]:
                best = (b - a, cui, (s, e))
        return None if best is None else (best[1], best[2])


def _in_mention(s: int, e: int, fragments: list[Span], frag_starts: list[int]) -> bool:
    """True when ``s:e`` overlaps a mention fragment (fragments sorted by start; none is longer than 1,000
    characters that matters here: a site is looked for within a few words)."""
    k = bisect_left(frag_starts, e) - 1
    while k >= 0 and frag_starts[k] > s - 1000:
        if fragments[k][1] > s:
            return True
        k -= 1
    return False
