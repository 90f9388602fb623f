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

from typing import Iterable, Mapping, Sequence

import numpy as np

from share_ner.document import Document, Sentence
from share_ner.features.config import FeatureConfig
from share_ner.features.extract import _BOS, _EOS, FeatureResources, _all_capitals, position_index_name, position_marks
from share_ner.features.items import (
    _BIAS,
    _LEFT_PAD,
    _RIGHT_PAD,
    CONJUNCTION_CACHE_SIZE,
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
_PAIR_SHIFT = 32  # a word pair's two rows, packed in one int


class ScoreTable:
    """The summed label weights of attribute bundles, one row each, for a model's weights: ``state[attributes[a]]``
    are the label weights of the attribute ``a`` (attributes the model lacks weigh nothing, as CRFsuite skips
    them). Also the rows of each word type, word pair and shape triple met so far, per feature config."""

    def __init__(self, attributes: Mapping[bytes, int], state: np.ndarray) -> None:
        self.attributes = attributes
        self.state = state
        self._base = 1 + len(state)  # row 0 is zero, rows 1.. are the attributes'
        self.matrix = np.zeros((self._base + 4096, state.shape[1]))
        self.matrix[1:self._base] = state
        self._used = self._base
        self._bundles: dict[tuple[bytes, ...], int] = {}
        self._words: dict[tuple[FeatureConfig, bool], dict[str, tuple]] = {}
        self._pairs: dict[tuple[bytes, bytes], int] = {}
        self._triples: dict[tuple[bytes, bytes, bytes], int] = {}
        self._index_rows = np.array([self.row((position_index_name(i),)) for i in range(11)], dtype=np.intp)

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

    def bundle(self, names: tuple[bytes, ...]) -> int:
        """:meth:`row`, kept by ``names``: for the bundles many tokens share (sections, marks)."""
        row = self._bundles.get(names)
        if row is None:
            row = self._bundles[names] = self.row(names)
        return row

    def settle(self) -> None:
        """Start afresh if the rows or the word, pair and triple memos have outgrown their bounds. Only between
        notes: the rows a note's tokens carry stay valid until the next call."""
        if (self._used - self._base > ROW_LIMIT or len(self._pairs) > CONJUNCTION_CACHE_SIZE
                or len(self._triples) > CONJUNCTION_CACHE_SIZE
                or any(len(table) > WORD_CACHE_SIZE for table in self._words.values())):
            self._bundles.clear()
            self._words.clear()
            self._pairs.clear()
            self._triples.clear()
            self._used = self._base

    def words(self, words: Sequence[str], resources: FeatureResources, config: FeatureConfig,
              caseless: bool) -> list[tuple]:
        """Per token, its word type's ``(lowercase, short shape, own row, left rows..., right rows...)``: the
        rows of the bundles of ``share_ner.features.items._word`` (left ``[d - 1]``: what the token ``d`` places
        to the right gets; right: what the token ``d`` places to the left gets)."""
        key = (config, caseless)
        table = self._words.get(key)
        if table is None:
            table = self._words[key] = {}

        def make(w: str) -> tuple:
            e = _word(w, resources, config, caseless, _word_features)
            return (e.lower, e.sshape, self.row((_BIAS, *e.own, *e.tail)), *map(self.row, e.left),
                    *map(self.row, e.right))

        return memo_words(table, words, make)  # bounded by settle(), between notes

    def pair_rows(self, padded: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """For each pair of neighbours of ``padded`` (sentences' lowercase words between their pads), the rows of
        the second's ``lw-1|lw`` and of the first's ``lw|lw+1``."""
        keys = list(zip(padded, padded[1:]))
        got = list(map(self._pairs.get, keys))
        if None in got:
            for k, packed in enumerate(got):
                if packed is None:
                    before, after = pair_names(*keys[k])
                    got[k] = self._pairs[keys[k]] = (self.row(before) << _PAIR_SHIFT) | self.row(after)
        packed = np.array(got, dtype=np.int64)
        return packed >> _PAIR_SHIFT, packed & ((1 << _PAIR_SHIFT) - 1)

    def triple_rows(self, padded: Sequence[bytes]) -> np.ndarray:
        """For each middle of three neighbours of ``padded`` (short shapes between pads), its ``ss-1|ss|ss+1``
        row."""
        keys = list(zip(padded, padded[1:], padded[2:]))
        got = list(map(self._triples.get, keys))
        if None in got:
            for k, row in enumerate(got):
                if row is None:
                    got[k] = self._triples[keys[k]] = self.row(triple_names(*keys[k]))
        return np.array(got, dtype=np.intp)


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
    """
    table.settle()
    if not sentences:
        return np.zeros((0, table.state.shape[1]))
    text = doc.text
    note = sentence_note(document_abbreviations(doc, resources, config), config)
    known = resources._known
    lexicon = config.lexicon and resources.term_matcher is not None
    size = config.window_size if config.window else 0
    entries: list[tuple] = []
    lengths: list[int] = []
    sections: list[int] = []
    # (token, row) of the bundles few tokens have: position marks, lexicon, in-note abbreviations, coordination
    sparse: tuple[list[tuple[int, int]], ...] = ([], [], [], [])
    marks_col, lexicon_col, note_col, extra_col = sparse
    bundle = table.bundle
    base = 0
    for k, sentence in enumerate(sentences):
        tokens = sentence.tokens
        n = len(tokens)
        words = [t.text for t in tokens]
        entries += table.words(words, resources, config, config.caseless_capitals and _all_capitals(words))
        lengths.append(n)
        if config.section:
            sections.append(bundle(section_names(sentence, config, known)))
        if config.position:
            marks: dict[int, list[bytes]] = {0: [_BOS]}
            marks.setdefault(n - 1, []).append(_EOS)
            for i, name in position_marks(sentence, text):
                marks.setdefault(i, []).append(name)
            marks_col += [(base + i, bundle(tuple(names))) for i, names in marks.items()]
        if lexicon:
            found: dict[int, list[bytes]] = {}
            _lexicon_names(resources.term_matcher.find(words), n, config.window, known, found)  # type: ignore[union-attr]
            lexicon_col += [(base + i, bundle(tuple(names))) for i, names in found.items()]
        if note is not None:
            shorts, longs = note.short_forms, note.long_form_starts
            for i, tok in enumerate(tokens):
                if tok.text in shorts or tok.start in longs:
                    note_col.append((base + i, bundle(tuple(note_marks(tok.text, tok.start, note, known)))))
        if extras is not None and extras[k]:
            extra_col += [(base + i, bundle(tuple(extra_names(features, known))))
                          for i, features in extras[k].items() if features]
        base += n

    n_tokens = base
    lengths_a = np.array(lengths, dtype=np.intp)
    starts = np.zeros(len(lengths), dtype=np.intp)
    np.cumsum(lengths_a[:-1], out=starts[1:])
    pos = np.arange(n_tokens) - np.repeat(starts, lengths_a)  # index within the sentence
    rest = np.repeat(lengths_a, lengths_a) - pos - 1  # tokens after it in the sentence
    matrix = table.matrix
    lower, shape, own, *window = zip(*entries)
    scores = matrix[np.array(own, dtype=np.intp)]
    for d in range(1, size + 1):
        left, right = np.array(window[d - 1], dtype=np.intp), np.array(window[size + d - 1], dtype=np.intp)
        scores[d:] += matrix[np.where(pos[d:] >= d, left[:-d], 0)]  # from the token d places to the left
        scores[:-d] += matrix[np.where(rest[:-d] >= d, right[d:], 0)]  # from the token d places to the right
    if config.conjunctions:
        padded_lower: list[bytes] = []
        padded_shape: list[bytes] = []
        for start, n in zip(starts.tolist(), lengths):
            padded_lower += (_LEFT_PAD, *lower[start:start + n], _RIGHT_PAD)
            padded_shape += (_LEFT_PAD, *shape[start:start + n], _RIGHT_PAD)
        at = np.arange(n_tokens) + 2 * np.repeat(np.arange(len(lengths)), lengths_a) + 1  # in the padded lists
        before, after = table.pair_rows(padded_lower)
        scores += matrix[before[at - 1]]
        scores += matrix[after[at]]
        scores += matrix[table.triple_rows(padded_shape)[at - 1]]
    if config.section:
        scores += matrix[np.repeat(np.array(sections, dtype=np.intp), lengths_a)]
    if config.position:
        scores += matrix[table._index_rows[np.minimum(pos, 10)]]
    for column in sparse:  # each token at most once in a column
        if column:
            token, row = zip(*column)
            scores[np.array(token, dtype=np.intp)] += matrix[np.array(row, dtype=np.intp)]
    return scores
