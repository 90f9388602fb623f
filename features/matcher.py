"""Longest-match lookup of lexicon terms in token sequences.

Terms and tokens are compared on the same normalization: lowercased runs of letters and
digits (punctuation is ignored), so ``"Crohn's disease"`` matches the tokens
``Crohn 's disease`` and ``"diabetes mellitus, type 2"`` matches ``diabetes mellitus type 2``
whatever the tokenizer did with the apostrophe or the comma; plurals are folded to a crude
singular on both sides (``pleural effusions`` matches ``pleural effusion``). Terms made only
of stop words are left out. The terms are kept in a trie of those word keys, so a lookup
walks only as far as the text agrees with some term.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Any, Iterable, Sequence

from share_ner.features.stopwords import TERM_STOP_WORDS, function_words

_WORD = re.compile(r"[^\W_]+")
_END = ""  # trie key under which a node stores the semantic types of the term ending there


# Words whose final "s" is no plural's, each its own key: the Greek and Latin singulars of clinical language that
# end like an English plural (English function words are the other such words: see _kept).
CLASSICAL_SINGULARS = frozenset(
    "diabetes herpes ascites caries rabies scabies facies feces faeces menses species series tabes lues pancreas "
    "erysipelas hypospadias epispadias".split()
)


@lru_cache(maxsize=1)
def _kept() -> frozenset[str]:
    """The words :func:`fold_plural` leaves alone: :data:`CLASSICAL_SINGULARS` and the function words
    (:func:`~share_ner.features.stopwords.function_words`: ``does``, ``was``, ``its``, ``always``, ``whereas``)."""
    return CLASSICAL_SINGULARS | function_words()


@lru_cache(maxsize=100_000)  # terms and notes repeat their words; a miss takes two steps at least
def fold_plural(key: str) -> str:
    """A crude singular, applied alike to terms and text, so that a word and its plural get one key.

    ``allergies`` and ``allergy`` → ``allergy``; ``lesions`` → ``lesion``; ``masses`` → ``mass``; ``rashes`` →
    ``rash``; and the Greek and Latin plurals of clinical notes: ``metastases`` and ``metastasis`` →
    ``metastase``, ``calculi`` → ``calculus``, ``bullae`` → ``bulla``. Where a plural's ending does not tell its
    singular's (``-uses``: ``virus`` or ``cause``; ``-ches``: ``patch`` or ``headache``; ``-ices``: ``apex`` or
    ``device``), both singulars get the same key (``caus``, ``headach``, ``apix``, ``devix``; ``-ix``, not ``-ic``, so
    that a stemmer cutting ``-ical`` to ``-ic`` keeps ``cervix`` and ``cervical`` apart). The key need not be a word,
    since both sides get it. Words of three letters or fewer, function words and the words of
    :data:`CLASSICAL_SINGULARS` (``does``, ``this``, ``diabetes``, ``pancreas``) are kept as they are.

    The key is the fixed point of one folding step (:func:`_fold_step`), so a key is its own key: a step never
    lengthens a word but to end it in ``-us`` (``calculi`` → ``calculus``), which no step changes, and keeps its
    length only to turn ``-ex`` into ``-ix``, which no step changes either, so the steps end.
    """
    while True:
        folded = _fold_step(key)
        if folded == key:
            return key
        key = folded


def _fold_step(key: str) -> str:
    n = len(key)
    if n <= 3 or key in _kept():
        return key
    if n > 4 and key.endswith("ies"):
        return key[:-3] + "y"
    if n > 5 and key.endswith("ices"):
        return key[:-4] + "ix"
    if n > 4 and key.endswith(("sses", "ches", "shes", "xes", "uses", "ises")):
        key = key[:-2]
    elif n > 4 and key.endswith("ae"):
        return key[:-1]
    elif n > 4 and key.endswith("sis"):
        key = key[:-2] + "e"
    elif key[-1] == "s" and key[-2] not in "sui":
        key = key[:-1]
    if key[-1] == "i":  # calculi, thrombi, rhonchi
        return key[:-1] + "us"
    if len(key) > 3:
        if key.endswith(("che", "she", "use", "ise")):
            return key[:-1]
        if key.endswith("ice"):
            return key[:-3] + "ix"
        if key.endswith("ex"):
            return key[:-2] + "ix"
    return key


def term_keys(text: str) -> list[str]:
    """The normalized word keys of ``text``: lowercased alphanumeric runs, plurals folded."""
    return [fold_plural(k) for k in _WORD.findall(text.lower())]


def contains_keys(keys: Sequence[str], phrase: Sequence[str]) -> bool:
    """The word keys ``phrase`` occur in a row in ``keys`` (a name written in a note: :func:`term_keys` of both)."""
    n = len(phrase)
    return n > 0 and any(keys[k:k + n] == list(phrase) for k in range(len(keys) - n + 1) if keys[k] == phrase[0])


@lru_cache(maxsize=200_000)
def token_keys(word: str) -> tuple[str, ...]:
    """:func:`term_keys` of one token, cached (the term matcher and the coordination features share it)."""
    return tuple(word if k == word else k for k in term_keys(word))  # the cache's key string, not a copy of it


def walk(node: dict[str, Any], parts: Iterable[Sequence[str]]) -> dict[str, Any] | None:
    """The trie node (:attr:`TermMatcher.root`) reached from ``node`` by the word keys ``parts`` (one sequence per
    word), or None when no term goes that way."""
    for keys in parts:
        for key in keys:
            node = node.get(key)  # type: ignore[assignment]
            if node is None:
                return None
    return node


def is_term(node: dict[str, Any]) -> bool:
    """A term ends at this trie node."""
    return _END in node


@dataclass(frozen=True, slots=True)
class Match:
    """A lexicon match over tokens ``start`` .. ``end`` - 1 of a sentence."""

    start: int
    end: int
    semtypes: tuple[str, ...]


def _compact(node: dict[str, Any], keys: dict[str, str], types: dict[tuple[str, ...], tuple[str, ...]],
             leaves: dict[tuple[str, ...], dict[str, Any]]) -> dict[str, Any]:
    """A copy of the trie under ``node`` whose equal word keys, type tuples and leaves ({_END: types}) are one
    object each (the three dicts hold the ones met so far)."""
    out: dict[str, Any] = {}
    for key, child in node.items():
        if key == _END:
            out[key] = types.setdefault(child, child)
            continue
        if len(child) == 1 and _END in child:
            tagged = types.setdefault(child[_END], child[_END])
            out[keys.setdefault(key, key)] = leaves.setdefault(tagged, {_END: tagged})
        else:
            out[keys.setdefault(key, key)] = _compact(child, keys, types, leaves)
    return out


class TermMatcher:
    """A trie of normalized lexicon terms, each with the semantic types it was given."""

    __slots__ = ("_trie", "n_terms", "max_words")

    def __init__(self) -> None:
        self._trie: dict[str, Any] = {}
        self.n_terms = 0
        self.max_words = 0

    @classmethod
    def from_terms(cls, terms: Iterable[tuple[str, str]]) -> "TermMatcher":
        """Build from ``(term, semantic type)`` pairs; a term given several types keeps them all."""
        matcher = cls()
        for term, semtype in terms:
            matcher.add(term, semtype)
        return matcher

    @classmethod
    def from_lexicon(cls, lexicon: Any) -> "TermMatcher":
        """Build from a lexicon whose ``entries`` have ``name`` and ``semtypes`` (``share_ner.lexicons.Lexicon``)."""
        return cls.from_terms(
            (entry.name, semtype) for entry in lexicon.entries for semtype in (tuple(entry.semtypes) or ("",))
        )

    def add(self, term: str, semtype: str = "") -> bool:
        """Add one term; a term of stop words only (HPO's "All") is skipped, and ``False`` returned."""
        raw = _WORD.findall(term.lower())
        if not raw or all(k in TERM_STOP_WORDS for k in raw):
            return False
        keys = [fold_plural(k) for k in raw]
        node = self._trie
        for key in keys:
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            elif len(child) == 1 and _END in child:
                child = node[key] = dict(child)  # a leaf may be shared by several terms (__getstate__): copy it first
            node = child
        types = node.get(_END)
        if types is None:
            node[_END] = (semtype,)
            self.n_terms += 1
        elif semtype not in types:
            node[_END] = tuple(sorted(types + (semtype,)))
        self.max_words = max(self.max_words, len(keys))
        return True

    def __len__(self) -> int:
        return self.n_terms

    @property
    def root(self) -> dict[str, Any]:
        """The trie's root node: each node maps a word key to the next node (:func:`walk`)."""
        return self._trie

    def __getstate__(self) -> tuple:
        # Pickled with each word key, semantic-type tuple and leaf node once, so that the unpickled trie shares
        # them (pickle keeps shared objects shared): a third of the memory of one object per occurrence.
        return _compact(self._trie, {}, {}, {}), self.n_terms, self.max_words

    def __setstate__(self, state: tuple) -> None:
        self._trie, self.n_terms, self.max_words = state

    def lookup(self, text: str) -> tuple[str, ...]:
        """The semantic types of ``text`` when the whole of it is a term, else ``()``."""
        node = self._trie
        keys = term_keys(text)
        if not keys:
            return ()
        for key in keys:
            node = node.get(key)
            if node is None:
                return ()
        return node.get(_END, ())

    def lookup_keys(self, parts: Iterable[Sequence[str]]) -> tuple[str, ...]:
        """:meth:`lookup` of the words whose word keys are ``parts`` (one sequence per word), joined by spaces:
        a word's keys are those of the joined text (no key crosses a space), so nothing is split again."""
        node = self._trie
        empty = True
        for keys in parts:
            for key in keys:
                node = node.get(key)
                if node is None:
                    return ()
                empty = False
        return () if empty else node.get(_END, ())

    def find(self, words: Sequence[str]) -> list[Match]:
        """Greedy left-to-right longest non-overlapping matches over a sentence's token texts.

        A match starts at a token's first word key and ends at a token's last one, so it
        always covers whole tokens; tokens with no word key (punctuation) never start or
        end a match.
        """
        return self._find(list(map(token_keys, words)))

    def find_sentences(self, words: Sequence[str], lengths: Sequence[int]) -> list[tuple[int, list[Match]]]:
        """:meth:`find` of each sentence of ``words`` (sentences of ``lengths`` tokens laid end to end) in one
        pass: ``(sentence, its matches)`` for the sentences with a match."""
        ends = list(accumulate(lengths))
        out: list[tuple[int, list[Match]]] = []
        k = 0
        for m in self._find(list(map(token_keys, words)), ends):
            while m.start >= ends[k]:
                k += 1
            base = ends[k] - lengths[k]
            if not out or out[-1][0] != k:
                out.append((k, []))
            out[-1][1].append(Match(m.start - base, m.end - base, m.semtypes))
        return out

    def _find(self, parts: Sequence[Sequence[str]], ends: Sequence[int] | None = None) -> list[Match]:
        """:meth:`find` over the tokens' word keys; with ``ends`` (where each sentence ends, in order), of each
        sentence of them: no match crosses a sentence's end."""
        # A walk from each token whose first key starts a term, through its keys and those of the tokens after it
        # (tokens without keys are passed over); an end is accepted only after a token's last key.
        trie = self._trie
        matches: list[Match] = []
        n = len(parts)
        free = 0  # the first token not inside a match
        k = 0
        for i in [i for i, ks in enumerate(parts) if ks and ks[0] in trie]:
            if i < free:
                continue
            if ends is not None:
                while i >= ends[k]:
                    k += 1
                n = ends[k]
            ks = parts[i]
            node = trie[ks[0]]
            best_end = -1
            best_types: tuple[str, ...] = ()
            j, pos = i, 1
            while True:
                if pos == len(ks):
                    types = node.get(_END)
                    if types is not None:
                        best_end, best_types = j + 1, types
                    j += 1
                    while j < n and not parts[j]:
                        j += 1
                    if j == n:
                        break
                    ks = parts[j]
                    pos = 0
                node = node.get(ks[pos])
                if node is None:
                    break
                pos += 1
            if best_end > 0:
                matches.append(Match(i, best_end, best_types))
                free = best_end
        return matches
