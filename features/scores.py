"""A note's emission scores for tagging: the CRF's label scores of its tokens' attributes, without a list of
attribute names per token.

A linear-chain CRF scores label ``y`` at a token as the sum of the weights ``(attribute, y)`` of the token's
attributes. Those attributes come in bundles that many tokens share, the same bundles
:func:`share_ner.features.items.sentence_items` joins into each token's list: a word type's own (bias, word,
affixes, shape, abbreviation list, clusters: ``_word``), what a word type gives the tokens ``d`` places to its
right and to its left (window), a word pair's and a shape triple's conjunctions, the sentence's section, the
token's index, its line and list marks (with ``BOS``/``EOS``), lexicon marks, in-note abbreviation marks and the
coordination marks added after extraction. :class:`ScoreTable` holds one row of summed label weights per
distinct bundle (row 0: no weight; a bundle of one attribute is that attribute's own row), made when first met
and kept for the run like the attribute caches of ``items``; a token carries the row of each of its bundles,
and its scores are the sum of those rows: a fixed number of rows a token, whatever its number of attributes.

The bundles are built by the functions that build the attribute lists (``_word``, :func:`pair_names`,
:func:`triple_names`, :func:`section_names`, :func:`position_marks`, ``_lexicon_names``, :func:`note_marks`,
:func:`extra_names`), so the two cannot tell tokens different attributes; ``tests/test_crf_scores.py`` checks
the scores against the sums of the weights of :func:`sentence_items`' attributes.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from share_ner.document import Document, Sentence
from share_ner.features.config import FeatureConfig
from share_ner.features.extract import _BOS, _EOS, FeatureResources, _all_capitals, position_index_name, position_marks
from share_ner.features.items import (
    _BIAS,
    _BIGRAM_AFTER,
    _BIGRAM_BEFORE,
    _LEFT_PAD,
    _RIGHT_PAD,
    WORD_CACHE_SIZE,
    _lexicon_names,
    _word,
    document_abbreviations,
    extra_names,
    memo_words,
    note_marks,
    pair_names,
    section_names,
    sentence_note,
    triple_names,
)
from share_ner.features.tokens import word_features

# A word type's text features, not kept by word_features' own cache: the table keeps what tagging needs of them
# (memory).
_word_features = word_features.__wrapped__

# Rows of bundles of more than one attribute kept before the table starts afresh (between notes): bounded memory,
# 56 bytes a row for 7 labels.
ROW_LIMIT = 400_000
# Word pairs (and shape triples) kept: each memo is emptied on its own past this, since a pair's entry is cheap
# to make again and a corpus meets many more distinct pairs than words (this memo moves peak memory).
PAIR_LIMIT = 100_000
_PAIR_SHIFT = 32  # a word pair's two rows (and two numbers), packed in one int
_LOW = (1 << _PAIR_SHIFT) - 1
_TRIPLE_SHIFT = 21  # a shape triple's three numbers, packed in one int while they fit


class _WordRows:
    """The rows of the word types met under one feature config and sentence case: ``index[word]`` is the word's
    row of ``rows`` (``ScoreTable.words`` describes the columns)."""

    __slots__ = ("index", "rows")

    def __init__(self, columns: int) -> None:
        self.index: dict[str, int] = {}
        self.rows = np.zeros((1024, columns), dtype=np.int64)

    def add(self, entry: tuple[int, ...]) -> int:
        i = len(self.index)
        if i == len(self.rows):
            self.rows = np.concatenate([self.rows, np.zeros_like(self.rows)])
        self.rows[i] = entry
        return i


class ScoreTable:
    """The summed label weights of attribute bundles, one row each, for a model's weights: ``state[attributes[a]]``
    are the label weights of the attribute ``a`` (attributes the model lacks weigh nothing, as CRFsuite skips
    them). Also the rows of each word type, word pair and shape triple met so far, per feature config; word pairs
    and shape triples are keyed by the numbers of their lowercase words and short shapes, packed in one int."""

    def __init__(self, attributes: Mapping[bytes, int], state: np.ndarray) -> None:
        self.attributes = attributes
        self.state = state
        self._base = 1 + len(state)  # row 0 is zero, rows 1.. are the attributes'
        self.matrix = np.zeros((self._base + 4096, state.shape[1]))
        self.matrix[1:self._base] = state
        self._used = self._base
        self._bundles: dict[tuple[bytes, ...], int] = {}
        self._words: dict[tuple[FeatureConfig, bool], _WordRows] = {}
        self._pairs: dict[int, int] = {}
        self._triples: dict[int, int] = {}
        self._names: list[bytes] = []  # the lowercase words and short shapes by number (the pads first)
        self._numbers: dict[bytes, int] = {}
        # Per number, whether its word can be the first (bit 1) / second (bit 2) word of a word pair the model
        # weighs: a pair of words not both so has no conjunction row, and needs no look-up.
        self._firsts, self._seconds = _pair_words(attributes)
        self._pairable = np.zeros(4096, dtype=np.uint8)
        self._forget()
        self._index_rows = np.array([self.row((position_index_name(i),)) for i in range(11)], dtype=np.intp)

    def _forget(self) -> None:
        self._bundles.clear()
        self._words.clear()
        self._pairs.clear()
        self._triples.clear()
        self._names[:] = [_LEFT_PAD, _RIGHT_PAD]
        self._numbers.clear()
        self._numbers.update({_LEFT_PAD: 0, _RIGHT_PAD: 1})
        for number, pad in enumerate(self._names):
            self._pairable[number] = (pad in self._firsts) | (pad in self._seconds) << 1
        self._used = self._base

    def row(self, names: Iterable[bytes]) -> int:
        """The row of the summed weights of ``names`` (its weights added in order, as CRFsuite adds them)."""
        ids = [i for i in map(self.attributes.get, names) if i is not None]
        if not ids:
            return 0
        if len(ids) == 1:
            return ids[0] + 1
        if self._used == len(self.matrix):
            grown = np.zeros((2 * len(self.matrix), self.matrix.shape[1]))
            grown[:self._used] = self.matrix[:self._used]
            self.matrix = grown
        row = self._used
        np.add.reduce(self.state[ids], axis=0, out=self.matrix[row])
        self._used += 1
        return row

    def one(self, name: bytes) -> int:
        """:meth:`row` of the one attribute ``name``."""
        i = self.attributes.get(name)
        return 0 if i is None else i + 1

    def bundle(self, names: tuple[bytes, ...]) -> int:
        """:meth:`row`, kept by ``names``: for the bundles many tokens share (sections, marks)."""
        row = self._bundles.get(names)
        if row is None:
            row = self._bundles[names] = self.row(names)
        return row

    def settle(self) -> None:
        """Start afresh if the rows or the word memos have outgrown their bounds, and empty the pair or triple memo
        that has outgrown its own. Only between notes: the rows a note's tokens carry stay valid until the next call.
        A pair's or triple's entry holds rows of single attributes and is keyed by word numbers, both kept when
        that memo alone is emptied (the word rows are the costly ones to make again)."""
        if (self._used - self._base > ROW_LIMIT
                or any(len(table.index) > WORD_CACHE_SIZE for table in self._words.values())):
            self._forget()
        if len(self._pairs) > PAIR_LIMIT:
            self._pairs.clear()
        if len(self._triples) > PAIR_LIMIT:
            self._triples.clear()

    def _number(self, name: bytes) -> int:
        number = self._numbers.get(name)
        if number is None:
            number = self._numbers[name] = len(self._names)
            self._names.append(name)
            if number == len(self._pairable):
                self._pairable = np.concatenate([self._pairable, np.zeros_like(self._pairable)])
            self._pairable[number] = (name in self._firsts) | (name in self._seconds) << 1
        return number

    def words(self, words: Sequence[str], resources: FeatureResources, config: FeatureConfig,
              caseless: bool) -> np.ndarray:
        """Per token (a row each), its word type's lowercase and short shape (numbers), own row, left rows...,
        right rows...: the rows of the bundles of ``share_ner.features.items._word`` (left ``[d - 1]``: what the
        token ``d`` places to the right gets; right: what the token ``d`` places to the left gets)."""
        key = (config, caseless)
        table = self._words.get(key)
        if table is None:
            table = self._words[key] = _WordRows(3 + 2 * (config.window_size if config.window else 0))

        def make(w: str) -> int:
            e = _word(w, resources, config, caseless, _word_features)
            return table.add((self._number(e.lower), self._number(e.sshape), self.row((_BIAS, *e.own, *e.tail)),
                              *map(self.row, e.left), *map(self.row, e.right)))

        got = memo_words(table.index, words, make)  # bounded by settle(), between notes
        return table.rows.take(np.array(got, dtype=np.intp), axis=0)

    def pair_rows(self, padded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each pair of neighbours of ``padded`` (sentences' lowercase words between their pads, as numbers),
        the rows of the second's ``lw-1|lw`` and of the first's ``lw|lw+1``."""
        names = self._names

        def make(key: int) -> int:
            (before,), (after,) = pair_names(names[key >> _PAIR_SHIFT], names[key & _LOW])
            return (self.one(before) << _PAIR_SHIFT) | self.one(after)

        first, second = padded[:-1], padded[1:]
        pairable = self._pairable
        live = np.flatnonzero((pairable[first] & 1) & (pairable[second] >> 1))  # the others: rows 0
        packed = np.zeros(len(first), dtype=np.int64)
        if len(live):
            keys, at = np.unique((first[live] << _PAIR_SHIFT) | second[live], return_inverse=True)  # each pair once
            packed[live] = np.array(memo_words(self._pairs, keys.tolist(), make), dtype=np.int64)[at]
        return packed >> _PAIR_SHIFT, packed & _LOW

    def triple_rows(self, padded: np.ndarray) -> np.ndarray:
        """For each middle of three neighbours of ``padded`` (short shapes between pads, as numbers), its
        ``ss-1|ss|ss+1`` row."""
        names = self._names
        if len(names) > 1 << _TRIPLE_SHIFT:  # too many to pack three in an int
            keys: list = list(zip(padded.tolist(), padded[1:].tolist(), padded[2:].tolist()))
            at = None

            def make(key: Any) -> int:
                return self.one(*triple_names(*(names[k] for k in key)))
        else:
            packed, at = np.unique((padded[:-2] << 2 * _TRIPLE_SHIFT) | (padded[1:-1] << _TRIPLE_SHIFT) | padded[2:],
                                   return_inverse=True)  # each triple once: a note repeats few shapes
            keys = packed.tolist()
            mask = (1 << _TRIPLE_SHIFT) - 1

            def make(key: Any) -> int:
                return self.one(*triple_names(names[key >> 2 * _TRIPLE_SHIFT], names[(key >> _TRIPLE_SHIFT) & mask],
                                              names[key & mask]))
        rows = np.array(memo_words(self._triples, keys, make), dtype=np.intp)
        return rows if at is None else rows[at]


def _pair_words(attributes: Mapping[bytes, int]) -> tuple[frozenset[bytes], frozenset[bytes]]:
    """The words that can be the first and the second of the word pairs of the ``lw-1|lw`` and ``lw|lw+1``
    attributes among ``attributes`` (every split at a ``|``: a word may hold one)."""
    firsts: set[bytes] = set()
    seconds: set[bytes] = set()
    for name in attributes:
        for prefix in (_BIGRAM_BEFORE, _BIGRAM_AFTER):
            if not name.startswith(prefix):
                continue
            joined = name[len(prefix):]
            cut = joined.find(b"|")
            while cut != -1:
                firsts.add(joined[:cut])
                seconds.add(joined[cut + 1:])
                cut = joined.find(b"|", cut + 1)
    return frozenset(firsts), frozenset(seconds)


def capital_sentences(words: Sequence[str], starts: np.ndarray) -> np.ndarray:
    """``share_ner.features.extract._all_capitals`` of each sentence of ``words`` (non-empty sentences laid end
    to end, the ``k``-th from ``starts[k]``): an ASCII sentence by its joined text's case mappings."""
    bounds = starts.tolist()
    bounds.append(len(words))
    out = np.empty(len(bounds) - 1, dtype=bool)
    join = "".join
    for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
        text = join(words[a:b])
        if text.isascii():  # a letter: upper and lower case differ; none lower-case: upper-casing changes nothing
            upper = text.upper()
            out[k] = upper == text and upper != text.lower()
        else:
            out[k] = _all_capitals(words[a:b])
    return out


def document_scores(
    doc: Document,
    sentences: Sequence[Sentence],
    resources: FeatureResources,
    config: FeatureConfig,
    table: ScoreTable,
    extras: Sequence[Mapping[int, Mapping[str, "str | float"]]] | None = None,
) -> np.ndarray:
    """The emission scores (tokens x labels) of the tokens of ``sentences`` (of ``doc``, none empty), laid end to
    end: for each token, the sum of the weights of the attributes
    :func:`share_ner.features.items.sentence_items` gives it, plus those of its entry in ``extras`` (one
    ``{token: features}`` per sentence, as :func:`share_ner.features.items.add_features` takes).

    The whole note at once: one memo look-up of its words, one lexicon pass, its bundles' rows summed by numpy.
    """
    table.settle()
    if not sentences:
        return np.zeros((0, table.state.shape[1]))
    text = doc.text
    note = sentence_note(document_abbreviations(doc, resources, config), config)
    known = resources._known
    size = config.window_size if config.window else 0
    bundle = table.bundle
    lengths = [len(s.tokens) for s in sentences]
    tokens = [t for s in sentences for t in s.tokens]
    words = [t.text for t in tokens]
    n_tokens = len(tokens)
    lengths_a = np.array(lengths, dtype=np.intp)
    starts = np.zeros(len(lengths), dtype=np.intp)
    np.cumsum(lengths_a[:-1], out=starts[1:])
    firsts = starts.tolist()
    caseless = capital_sentences(words, starts) if config.caseless_capitals else None
    if caseless is None or not caseless.any():
        entries = table.words(words, resources, config, False)
    else:
        capitals = np.repeat(caseless, lengths_a)
        entries = np.empty((n_tokens, 3 + 2 * size), dtype=np.int64)
        for case in (False, True):
            at = np.flatnonzero(capitals == case)
            if len(at):
                entries[at] = table.words([words[i] for i in at.tolist()], resources, config, case)
    # (token, row) of the bundles few tokens have: position marks, lexicon, in-note abbreviations, coordination
    sparse: tuple[list[tuple[int, int]], ...] = ([], [], [], [])
    marks_col, lexicon_col, note_col, extra_col = sparse
    if config.position:
        for sentence, base, n in zip(sentences, firsts, lengths):
            marks: dict[int, list[bytes]] = {0: [_BOS]}
            marks.setdefault(n - 1, []).append(_EOS)
            for i, name in position_marks(sentence, text):
                marks.setdefault(i, []).append(name)
            marks_col += [(base + i, bundle(tuple(names))) for i, names in marks.items()]
    if config.lexicon and resources.term_matcher is not None:
        for k, matches in resources.term_matcher.find_sentences(words, lengths):
            found: dict[int, list[bytes]] = {}
            _lexicon_names(matches, lengths[k], config.window, known, found)
            base = firsts[k]
            lexicon_col += [(base + i, bundle(tuple(names))) for i, names in found.items()]
    if note is not None:
        shorts, longs = note.short_forms, note.long_form_starts
        note_col += [(i, bundle(tuple(note_marks(tok.text, tok.start, note, known))))
                     for i, tok in enumerate(tokens) if tok.text in shorts or tok.start in longs]
    if extras is not None:
        for extra, base in zip(extras, firsts):
            if extra:
                extra_col += [(base + i, bundle(tuple(extra_names(features, known))))
                              for i, features in extra.items() if features]

    pos = np.arange(n_tokens) - np.repeat(starts, lengths_a)  # index within the sentence
    rest = np.repeat(lengths_a, lengths_a) - pos - 1  # tokens after it in the sentence
    matrix = table.matrix
    take = matrix.take  # rows by number (with axis=0: a gather several times faster than matrix[rows])
    scores = take(entries[:, 2], axis=0)
    for d in range(1, size + 1):
        left, right = entries[:, 2 + d], entries[:, 2 + size + d]
        scores[d:] += take(np.where(pos[d:] >= d, left[:-d], 0), axis=0)  # from the token d places to the left
        scores[:-d] += take(np.where(rest[:-d] >= d, right[d:], 0), axis=0)  # from the token d places to the right
    if config.conjunctions:
        # each sentence's words between its pads (<s> is number 0, </s> 1)
        at = np.arange(n_tokens) + 2 * np.repeat(np.arange(len(lengths)), lengths_a) + 1  # in the padded arrays
        padded_lower = np.ones(n_tokens + 2 * len(lengths), dtype=np.int64)
        padded_lower[starts + 2 * np.arange(len(lengths))] = 0
        padded_shape = padded_lower.copy()
        padded_lower[at] = entries[:, 0]
        padded_shape[at] = entries[:, 1]
        before, after = table.pair_rows(padded_lower)
        scores += take(before[at - 1], axis=0)
        scores += take(after[at], axis=0)
        scores += take(table.triple_rows(padded_shape)[at - 1], axis=0)
    if config.section:
        rows: dict[str | None, int] = {}
        for sentence in sentences:
            if sentence.section not in rows:
                rows[sentence.section] = bundle(section_names(sentence, config, known))
        scores += take(np.repeat(np.array([rows[s.section] for s in sentences], dtype=np.intp), lengths_a), axis=0)
    if config.position:
        scores += take(table._index_rows[np.minimum(pos, 10)], axis=0)
    for column in sparse:  # each token at most once in a column
        if column:
            token, row = zip(*column)
            scores[np.array(token, dtype=np.intp)] += take(np.array(row, dtype=np.intp), axis=0)
    return scores
