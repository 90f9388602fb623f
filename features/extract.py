"""What the token features read: :class:`FeatureResources` (the lexicon matcher, word clusters and the clinical
abbreviation list, passed in: nothing here reads a file), a note's own abbreviation definitions
(:func:`note_abbreviations`) and the position marks of a sentence's tokens (:func:`position_names`).

The features themselves are built by :mod:`share_ner.features.items`: as CRFsuite attribute lists, and as one
dict per token (``{"lw": "pain", "is_upper": 1.0}``) read from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence

from share_ner.document import Sentence
from share_ner.features.abbreviations import find_definitions
from share_ner.features.clusters import cluster_key, parse_cluster_ids
from share_ner.features.matcher import TermMatcher
from share_ner.lexicons.abbreviations import load_abbreviations

FeatureDict = dict[str, "str | float"]

# Tokens that open an item of a list when they start a line ("1." is often split in two).
_BULLETS = frozenset({"-", "*", "+", "•", "·", "o", ">", "#", "–", "—"})


@dataclass(frozen=True, eq=False)
class FeatureResources:
    """External knowledge the features use; every part is optional (its features are then absent).

    ``term_matcher``: a :class:`TermMatcher` of disorder terms with semantic types.
    ``clusters``: ``{word: cluster_ids}`` as returned by :func:`share_ner.features.clusters.load_clusters`.
    ``abbreviations``: ``{abbreviation: [expansion, ...]}`` as returned by
    :func:`share_ner.lexicons.abbreviations.load_abbreviations`.
    """

    term_matcher: TermMatcher | None = None
    clusters: Mapping[str, str] | None = None
    abbreviations: Mapping[str, Sequence[str]] | None = None
    _cluster_features: dict[str, dict[str, str]] = field(init=False, repr=False, compare=False)
    _abbreviation_exact: dict[str, FeatureDict] = field(init=False, repr=False, compare=False)
    _abbreviation_folded: dict[str, FeatureDict] = field(init=False, repr=False, compare=False)
    _abbreviation_lex: dict[str, FeatureDict] = field(init=False, repr=False, compare=False)
    # Per feature config, each word type's CRFsuite attributes (share_ner.features.items), built as met.
    _items: dict[Any, dict[str, tuple]] = field(init=False, repr=False, compare=False)
    # Conjunction attributes of word pairs and shape triples (share_ner.features.items), built as met.
    _conjunctions: tuple[dict, dict] = field(init=False, repr=False, compare=False)
    # The attributes a loaded CRF model has weights for (None: all, as in training); see keep_only.
    _known: frozenset[bytes] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Parse cluster ids and abbreviation entries once, not once per token.
        clusters = {word: parse_cluster_ids(ids) for word, ids in (self.clusters or {}).items()}
        exact: dict[str, FeatureDict] = {}
        folded: dict[str, FeatureDict] = {}
        lex_types: dict[str, FeatureDict] = {}
        for abbreviation, expansions in (self.abbreviations or {}).items():
            feats: FeatureDict = {"abbr.n_exp": "1" if len(expansions) == 1 else "2+"}
            lex: FeatureDict = {}
            if self.term_matcher is not None:
                for expansion in expansions:
                    for semtype in self.term_matcher.lookup(expansion):
                        lex[f"abbr.exp_lex={semtype or 'term'}"] = 1.0
            exact[abbreviation] = {"abbr.list": "exact", **feats}
            folded.setdefault(abbreviation.lower(), {}).update(feats)
            if lex:
                lex_types[abbreviation] = lex
                lex_types.setdefault(abbreviation.lower(), {}).update(lex)
        object.__setattr__(self, "_cluster_features", clusters)
        object.__setattr__(self, "_abbreviation_exact", exact)
        object.__setattr__(self, "_abbreviation_folded", folded)
        object.__setattr__(self, "_abbreviation_lex", lex_types)
        object.__setattr__(self, "_items", {})
        object.__setattr__(self, "_conjunctions", ({}, {}))
        object.__setattr__(self, "_known", None)

    def keep_only(self, attributes: frozenset[bytes] | None) -> None:
        """Build attribute lists (:mod:`share_ner.features.items`) with only these attributes: those a model has
        weights for. CRFsuite skips every other attribute when tagging, so the tags are the same."""
        object.__setattr__(self, "_known", attributes)
        self._items.clear()
        for memo in self._conjunctions:
            memo.clear()

    @classmethod
    def build(
        cls,
        lexicon: Any = None,
        clusters: Mapping[str, str] | None = None,
        abbreviations: Mapping[str, Sequence[str]] | None = None,
        *,
        default_abbreviations: bool = True,
    ) -> "FeatureResources":
        """Resources from a lexicon (anything with ``entries`` of ``name``/``semtypes``), clusters and abbreviations.

        Without ``abbreviations``, the packaged clinical list is loaded unless
        ``default_abbreviations`` is false.
        """
        if abbreviations is None and default_abbreviations:
            abbreviations = load_abbreviations()
        matcher = TermMatcher.from_lexicon(lexicon) if lexicon is not None else None
        return cls(matcher, clusters, abbreviations)

    def __getstate__(self) -> dict[str, Any]:
        # The per-word caches are rebuilt on use; workers need not receive them.
        return {**self.__dict__, "_items": {}, "_conjunctions": ({}, {})}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def cluster_features(self, word: str) -> dict[str, str] | None:
        return self._cluster_features.get(cluster_key(word))

    def abbreviation_features(self, word: str) -> FeatureDict | None:
        feats = self._abbreviation_exact.get(word)
        if feats is not None:
            return feats
        folded = self._abbreviation_folded.get(word.lower())
        if folded is None:
            return None
        # A lowercase "sob" is still an abbreviation; a lowercase "as" usually is not: let the weights tell.
        return {"abbr.list": "lower" if word.islower() else "case", **folded}

    def abbreviation_lexicon_features(self, word: str) -> FeatureDict | None:
        """``abbr.exp_lex=<semantic type>`` for an abbreviation one of whose expansions is a lexicon term."""
        found = self._abbreviation_lex.get(word)
        if found is None and word not in self._abbreviation_exact:
            found = self._abbreviation_lex.get(word.lower())
        return found


EMPTY_RESOURCES = FeatureResources()


@dataclass(frozen=True, slots=True)
class NoteAbbreviations:
    """Abbreviation definitions found in one note, by character offset."""

    short_forms: frozenset[str] = frozenset()
    # character offset inside a long form -> "B" (its first character) or "I"
    long_form_starts: Mapping[int, str] = field(default_factory=dict)
    # short form text -> semantic types of its long form in the lexicon
    short_form_types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def note_abbreviations(text: str, matcher: TermMatcher | None = None) -> NoteAbbreviations:
    """The short forms defined in ``text``, where their long forms are, and the long forms' lexicon types."""
    definitions = find_definitions(text)
    if not definitions:
        return NoteAbbreviations()
    shorts: set[str] = set()
    starts: dict[int, str] = {}
    types: dict[str, tuple[str, ...]] = {}
    for (ss, se), (ls, le) in definitions:
        short = text[ss:se]
        shorts.add(short)
        long_text = text[ls:le]
        if matcher is not None and short not in types:
            types[short] = matcher.lookup(long_text)
        # Every character offset of the long form, so that any tokenizer's tokens find theirs.
        for pos in range(ls, le):
            starts.setdefault(pos, "B" if pos == ls else "I")
    return NoteAbbreviations(frozenset(shorts), starts, types)


@lru_cache(maxsize=200_000)
def _letter_case(word: str) -> tuple[bool, bool]:
    """(has a letter, has a lower-case letter) of one token string."""
    return _CASES[any(c.isalpha() for c in word), any(c.islower() for c in word)]


# The four answers of _letter_case, shared by every word its cache holds (not a tuple per word).
_CASES = {(a, b): (a, b) for a in (False, True) for b in (False, True)}


def _all_capitals(words: Sequence[str]) -> bool:
    """The sentence has letters and none is lower-case."""
    cases = list(map(_letter_case, words))
    return any(alpha for alpha, _ in cases) and not any(lower for _, lower in cases)


def _index_bucket(i: int) -> str:
    if i < 3:
        return str(i)
    if i < 5:
        return "3-4"
    if i < 10:
        return "5-9"
    return "10+"


_BOS, _EOS, _LINE_FIRST, _BULLET, _AFTER_BULLET, _AFTER_COLON = (
    b"BOS", b"EOS", b"line_first", b"bullet", b"after_bullet", b"after_colon")
_IDX = tuple(f"idx:{_index_bucket(i)}".encode() for i in range(10))
_IDX_LAST = f"idx:{_index_bucket(10)}".encode()
# Every attribute position_names gives.
POSITION_NAMES = frozenset({_BOS, _EOS, _LINE_FIRST, _BULLET, _AFTER_BULLET, _AFTER_COLON, *_IDX, _IDX_LAST})


def position_names(sentence: Sentence, text: str | None) -> list[list[bytes]]:
    """The position features of each token of ``sentence`` as CRFsuite attribute names (``idx:3-4``,
    ``line_first``...), in the order they are set."""
    n = len(sentence.tokens)
    out = [[_IDX[i]] for i in range(min(n, 10))] + [[_IDX_LAST] for _ in range(n - 10)]
    out[-1].insert(0, _EOS)
    out[0].insert(0, _BOS)
    for i, name in position_marks(sentence, text):
        out[i].append(name)
    return out


def position_index_name(i: int) -> bytes:
    """The ``idx`` attribute of the token ``i`` of a sentence (:func:`position_names` gives it first, after
    ``BOS``/``EOS``)."""
    return _IDX[i] if i < 10 else _IDX_LAST


def position_marks(sentence: Sentence, text: str | None) -> list[tuple[int, bytes]]:
    """The line and list marks among the position features (``line_first``, ``bullet``, ``after_bullet``,
    ``after_colon``) as ``(token, attribute)``, in the order :func:`position_names` sets them after each token's
    ``BOS``, ``EOS`` and ``idx``."""
    tokens = sentence.tokens
    n = len(tokens)
    out: list[tuple[int, bytes]] = []
    add = out.append
    if text is None:
        lines, quiet = False, False
    else:
        span = text[tokens[0].start : tokens[-1].end]
        # No token holds a line break: without one in the sentence's span, only its first token can start a line,
        # and without a colon nothing past the first tokens of a line changes.
        lines = "\n" in span or "\r" in span
        quiet = not lines and ":" not in span
    line_index = 0  # index of the token within its line
    after_colon = False
    bullet_line = False
    for i, tok in enumerate(tokens):
        if i == 0:
            if text is None:
                first = True
            else:
                line_start = max(text.rfind("\n", 0, tok.start), text.rfind("\r", 0, tok.start)) + 1
                first = not text[line_start : tok.start].strip()
        elif not lines:
            first = False
        else:
            gap = text[tokens[i - 1].end : tok.start]  # type: ignore[index]
            first = "\n" in gap or "\r" in gap
        if first:
            line_index = 0
            after_colon = False
            bullet_line = False
        else:
            line_index += 1
        word = tok.text
        if line_index == 0:
            add((i, _LINE_FIRST))
            if word in _BULLETS or (word[:-1].isdigit() and word[-1:] in ".)" and len(word) <= 3):
                bullet_line = True
                add((i, _BULLET))
            elif word.isdigit() and len(word) <= 2 and i + 1 < n and tokens[i + 1].text in (".", ")"):
                bullet_line = True
                add((i, _BULLET))
        elif bullet_line:
            if line_index == 1 and word in (".", ")"):
                add((i, _BULLET))
            else:
                add((i, _AFTER_BULLET))
                bullet_line = False
        if after_colon:
            add((i, _AFTER_COLON))
        if word == ":":
            after_colon = True
        if quiet and not bullet_line:
            break  # the other tokens have their index only
    return out
