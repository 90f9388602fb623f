"""Word and phrase swaps learned from the names of each concept of a lexicon (:func:`learn_rewrites`), kept with its
compiled index, and the normalizer's views of them (:class:`WordSwaps`, :class:`PhraseSwaps`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator


@dataclass
class Rewrites:
    """Word swaps learned from the names of each concept, in normalized-key words.

    ``swap[a][b]``: in how many concepts two names differ only by the word ``a`` against ``b``
    ("renal dysfunction" / "renal impairment" → dysfunction↔impairment). Counting concepts, not name pairs,
    keeps one concept with many near-identical names from dominating.
    """

    swap: dict[str, dict[str, int]]
    # phrase["disease"]["abnormal morphology"] and back: any other words against words (sorted, space-joined;
    # one against one is ``swap``), counted the same way ("Abnormality of the sacrum" / "Abnormal sacrum
    # morphology", "distal phalanx" / "outermost bone")
    phrase: dict[str, dict[str, int]] = field(default_factory=dict)
    # each phrase of ``phrase`` under one of its words (:func:`file_phrases`), made with the index: not by every
    # process that loads it
    filed: dict[str, list[str]] | None = None

    def filing(self) -> dict[str, list[str]]:
        """:attr:`filed`, made now if it was not."""
        if self.filed is None:
            self.filed = file_phrases(self.phrase)
        return self.filed

    def merged(self, other: "Rewrites | None") -> "Rewrites":
        if other is None:
            return self
        # other's phrases where other files them, then this one's phrases that other lacks
        filed = dict(other.filing())
        for w, phrases in self.filing().items():
            extra = [a for a in phrases if a not in other.phrase]
            if extra:
                filed[w] = [*filed.get(w, ()), *extra]
        return Rewrites(_added(self.swap, other.swap), _added(self.phrase, other.phrase), filed)


def file_phrases(table: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    """Each phrase of ``table`` under the one of its words that starts fewest phrases of ``table`` (ties: the
    first in alphabetical order). A phrase applies to a mention only when the mention has all its words, so a
    mention that looks up its own words finds it once, and the short lists of rare words are most looked up."""
    words = [(a, set(a.split())) for a in table]
    spread = Counter(w for _, ws in words for w in ws)
    filed: dict[str, list[str]] = {}
    for a, ws in words:
        w = min(ws, key=lambda w: (spread[w], w)) if len(ws) > 1 else next(iter(ws))
        filed.setdefault(w, []).append(a)
    return filed


def _added(x: dict[str, dict[str, int]], y: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``x`` and ``y`` with the counts of a word in both summed, ``x``'s words first. A row that only one of them
    has is that row itself, not a copy (rows are not changed once learned): a large lexicon's rewrites are not held
    twice, in its index and in a normalizer's merged rewrites."""
    out = dict(x)
    for a, bs in y.items():
        row = out.get(a)
        if row is None:
            out[a] = bs
            continue
        row = out[a] = dict(row)
        for b, n in bs.items():
            row[b] = row.get(b, 0) + n
    return out


class WordSwaps:
    """The word swaps of :attr:`Rewrites.swap` seen in at least ``min_count`` concepts: ``get(word)`` is a list of
    (the other word, concepts), most concepts first (ties: by the other word). A word's list is made when it is
    first looked up, not for every word of the lexicon at load."""

    def __init__(self, table: dict[str, dict[str, int]], min_count: int) -> None:
        self._table = table
        self._min_count = min_count
        self._made: dict[str, list[tuple[str, int]]] = {}

    def get(self, word: str, default: tuple = ()) -> "list[tuple[str, int]] | tuple":
        made = self._made.get(word)
        if made is None:
            row = self._table.get(word)
            if row is None:
                return default
            made = self._made[word] = sorted(((b, n) for b, n in row.items() if n >= self._min_count),
                                             key=lambda bn: (-bn[1], bn[0]))
        return made or default


class PhraseSwaps:
    """The phrase swaps of :attr:`Rewrites.phrase` seen in at least ``min_count`` concepts, by the word of the
    replaced phrase it is filed under (:func:`file_phrases`; a mention looks up only its own words): ``get(word)``
    is a dict from another word of the phrase (the first in alphabetical order; None for a phrase of no other
    word) to a list of (the phrase's words as a set, the phrase as a bag when it repeats a word, else None, its
    words, and its swaps: (the other phrase's words, concepts), most concepts first). A mention then reads only
    the lists of its own words: most phrases filed under a word need a word the mention lacks. A word's lists are
    made when it is first looked up: the lists of every word of a large lexicon's phrases took more memory than
    the rest of the normalizer."""

    def __init__(self, table: dict[str, dict[str, int]], min_count: int,
                 filed: dict[str, list[str]] | None = None) -> None:
        self._table = table
        self._min_count = min_count
        self._filed = file_phrases(table) if filed is None else filed
        self._made: dict[str, dict[str | None, list[tuple[frozenset[str], Counter | None, tuple[str, ...],
                                                          list[tuple[tuple[str, ...], int]]]]]] = {}

    def __bool__(self) -> bool:
        return bool(self._filed)

    def items(self) -> Iterator[tuple[str, dict]]:
        """Every word and its lists (each made now if they were not)."""
        for word in self._filed:
            yield word, self.get(word)

    def get(self, word: str) -> dict:
        made = self._made.get(word)
        if made is None:
            if word not in self._filed:
                return {}
            made = self._made[word] = {}
            for a in self._filed[word]:
                swaps = [(tuple(b.split()), n) for b, n in sorted(self._table[a].items(), key=lambda bn: (-bn[1], bn[0]))
                         if n >= self._min_count]
                if not swaps:
                    continue
                a_words = tuple(a.split())
                bag = Counter(a_words)
                other = min((w for w in bag if w != word), default=None)
                made.setdefault(other, []).append((frozenset(bag), bag if len(bag) < len(a_words) else None, a_words,
                                                   swaps))
        return made


# Concepts with more names than this are skipped when learning rewrites (pairwise comparison cost).
_REWRITE_MAX_NAMES = 40


def learn_rewrites(cui_keys: Iterable[tuple[str, str]]) -> Rewrites:
    """:class:`Rewrites` from (concept, normalized key) pairs; ``CUI-less`` rows are not names of a concept."""
    by_cui: dict[str, set[str]] = {}
    for cui, k in cui_keys:
        if k and cui != "CUI-less":
            by_cui.setdefault(cui, set()).add(k)
    swap_pairs: set[tuple[str, str, str]] = set()
    phrase_pairs: set[tuple[str, str, str]] = set()
    for cui, keys in by_cui.items():
        if len(keys) < 2 or len(keys) > _REWRITE_MAX_NAMES:
            continue
        bags = [Counter(k.split()) for k in keys]
        for i in range(len(bags)):
            for j in range(i + 1, len(bags)):
                a, b = bags[i] - bags[j], bags[j] - bags[i]
                sizes = (sum(a.values()), sum(b.values()))
                if sizes == (1, 1):
                    (wa,), (wb,) = a, b
                    swap_pairs.add((cui, wa, wb))
                    swap_pairs.add((cui, wb, wa))
                elif min(sizes) >= 1:
                    pa, pb = " ".join(sorted(a.elements())), " ".join(sorted(b.elements()))
                    phrase_pairs.add((cui, pa, pb))
                    phrase_pairs.add((cui, pb, pa))
    phrases = _counted(phrase_pairs)
    return Rewrites(_counted(swap_pairs), phrases, file_phrases(phrases))


def _counted(pairs: set[tuple[str, str, str]]) -> dict[str, dict[str, int]]:
    """(concept, a, b) triples → ``out[a][b]``: the number of concepts."""
    out: dict[str, dict[str, int]] = {}
    for _, a, b in pairs:
        row = out.setdefault(a, {})
        row[b] = row.get(b, 0) + 1
    return out
