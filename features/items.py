"""The token features of a note's sentences (docs/features.md lists them), built once, as CRFsuite attribute lists;
the same features as one dict per token are read from those lists.

A feature is a key with a string value (``lw: pain``), which CRFsuite names ``key:value``, or a key with weight 1.0
(``is_upper``), named ``key``; no feature has another weight. :func:`sentence_items` builds those attribute names
directly, as UTF-8 bytes, so that pycrfsuite has nothing to convert and no dict is made per token: what depends on
the word alone (word, affixes, shape, the strings the word gives its neighbours' window features,
abbreviation-list and cluster features) is built once per distinct string per run (a bounded cache) and reused;
only what depends on the sentence (conjunctions, section, position, lexicon matches, in-note abbreviations) is
built per token. Training reads these lists, and tagging sums the CRF weights of the same bundles
(:mod:`share_ner.features.scores`).

:func:`sentence_features` gives each token's attributes as a dict, ``{key: value}`` in the same order, for
sklearn-crfsuite and for reading (``tests/test_features.py`` checks the features in that form); pycrfsuite makes
the same attributes of it, so a model trained on either is the same.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Hashable, Mapping, NamedTuple, Sequence

from share_ner.document import Document, Sentence
from share_ner.features.config import FeatureConfig
from share_ner.features.extract import (
    EMPTY_RESOURCES,
    POSITION_NAMES,
    FeatureDict,
    FeatureResources,
    NoteAbbreviations,
    _all_capitals,
    note_abbreviations,
    position_names,
)
from share_ner.features.tokens import WordFeatures, word_features

Items = list[list[bytes]]  # one list of attribute names per token
# Distinct strings whose attributes are kept; past this the cache starts afresh (bounded memory, ~2 kB a word).
WORD_CACHE_SIZE = 50_000
CONJUNCTION_CACHE_SIZE = 200_000  # word pairs (and shape triples) whose conjunction attributes are kept
_BIAS = b"bias"
_LEFT_PAD, _RIGHT_PAD = b"<s>", b"</s>"
_BIGRAM_BEFORE, _BIGRAM_AFTER, _SHAPE_TRIGRAM = b"lw-1|lw:", b"lw|lw+1:", b"ss-1|ss|ss+1:"
# The shape features a sentence in capitals changes (caseless_capitals)
_CASE_KEYS = frozenset({"shape", "sshape", "is_upper", "is_title"})


@lru_cache(maxsize=4096)
def attribute_name(key: str, value: "str | float") -> bytes:
    """The CRFsuite attribute pycrfsuite makes of the feature ``key: value`` (``key:value``, or ``key`` for 1.0)."""
    if isinstance(value, str):
        return f"{key}:{value}".encode()
    if value != 1.0:
        raise ValueError(f"feature {key!r} has weight {value!r}; attribute lists carry weight 1.0 only")
    return key.encode()


def _uncased(shape: str) -> str:
    return shape.replace("X", "x")


def _names(features: Mapping[str, "str | float"]) -> tuple[bytes, ...]:
    return tuple(attribute_name(k, v) if not isinstance(v, str) else f"{k}:{v}".encode() for k, v in features.items())


class _Word(NamedTuple):
    """The attributes of one word type under one feature config (and sentence case)."""

    lower: bytes
    sshape: bytes
    own: tuple[bytes, ...]  # word, affix and shape attributes
    left: tuple[tuple[bytes, ...], ...]  # [d - 1]: what the token d places to the right gets (-d:lw, -d:ss)
    right: tuple[tuple[bytes, ...], ...]  # [d - 1]: what the token d places to the left gets (+d:lw, +d:ss)
    abbreviation: tuple[bytes, ...]  # from the clinical abbreviation list
    clusters: tuple[bytes, ...]
    tail: tuple[bytes, ...]  # abbreviation + clusters: what follows the lexicon features when the note defines none


def _word(word: str, resources: FeatureResources, config: FeatureConfig, caseless: bool,
          features: Callable[[str], WordFeatures] = word_features) -> _Word:
    b = features(word)  # word_features' cache outlives this one's: training builds one FeatureResources per fold
    lower = b.lower.encode()
    sshape = _uncased(b.short_shape) if caseless else b.short_shape
    own: list[bytes] = []
    if config.word:
        own.extend(_names({"lw": b.lower} if caseless else b.word))
    if config.affix:
        own.extend(_names(b.affix))
    if config.shape:
        if caseless:
            own.extend(_names({k: v for k, v in b.shape.items() if k not in _CASE_KEYS}))
            own.extend(_names({"shape": _uncased(b.shape["shape"]), "sshape": sshape}))
        else:
            own.extend(_names(b.shape))
    ss = sshape.encode()
    sizes = range(1, (config.window_size if config.window else 0) + 1)
    left = tuple((b"-%d:lw:" % d + lower, b"-%d:ss:" % d + ss) for d in sizes)
    right = tuple((b"+%d:lw:" % d + lower, b"+%d:ss:" % d + ss) for d in sizes)
    abbreviation: tuple[bytes, ...] = ()
    if config.abbreviation and resources.abbreviations:
        extra = resources.abbreviation_features(word)
        if extra:
            abbreviation = _names(extra)
            lex = resources.abbreviation_lexicon_features(word)
            if lex and config.lexicon:
                abbreviation += _names(lex)
    clusters: tuple[bytes, ...] = ()
    if config.clusters and resources.clusters:
        cl = resources.cluster_features(word)
        if cl:
            clusters = _names(cl)
    known = resources._known
    if known is not None:  # what the model has no weight for, CRFsuite would skip
        own = [a for a in own if a in known]
        left = tuple(tuple(a for a in pair if a in known) for pair in left)
        right = tuple(tuple(a for a in pair if a in known) for pair in right)
        abbreviation = tuple(a for a in abbreviation if a in known)
        clusters = tuple(a for a in clusters if a in known)
    return _Word(lower, ss, tuple(own), left, right, abbreviation, clusters, abbreviation + clusters)


def _edge(size: int) -> _Word:
    """A stand-in for the words beyond the sentence's ends: it gives its neighbours no window features."""
    none = ((),) * size
    return _Word(b"", b"", (), none, none, (), (), ())


def memo_words(table: dict[Any, Any], words: Sequence[Hashable], make: Callable[[Any], Any],
               limit: int | None = None) -> list[Any]:
    """``table``'s entry for each of ``words``, made by ``make`` for those it lacks (the table starts afresh when
    it holds ``limit`` entries; entries already given stay valid)."""
    out = list(map(table.get, words))
    if None in out:
        for k in [k for k, entry in enumerate(out) if entry is None]:
            w = words[k]
            entry = table.get(w)
            if entry is None:
                if limit is not None and len(table) >= limit:
                    table.clear()
                entry = table[w] = make(w)
            out[k] = entry
    return out


def _words(words: Sequence[str], resources: FeatureResources, config: FeatureConfig, caseless: bool) -> list[_Word]:
    key = (config, caseless)
    table = resources._items.get(key)
    if table is None:
        table = resources._items[key] = {}
    return memo_words(table, words, lambda w: _word(w, resources, config, caseless), WORD_CACHE_SIZE)


def _conjunctions(entries: Sequence[_Word], resources: FeatureResources
                  ) -> tuple[list[tuple[tuple[bytes, ...], tuple[bytes, ...]]], list[tuple[bytes, ...]]]:
    """The conjunction attributes the model keeps: for each word pair around and inside the sentence (padded),
    ``lw-1|lw`` of its second token and ``lw|lw+1`` of its first; for each token, ``ss-1|ss|ss+1``.

    Each word pair's and shape triple's attributes are kept for the run (a bounded cache), so a token costs a few
    dict look-ups instead of three new strings and their set look-ups."""
    known = resources._known
    pairs_memo, triples_memo = resources._conjunctions
    if len(pairs_memo) >= CONJUNCTION_CACHE_SIZE:
        pairs_memo.clear()
    if len(triples_memo) >= CONJUNCTION_CACHE_SIZE:
        triples_memo.clear()
    lower = [_LEFT_PAD, *[e.lower for e in entries], _RIGHT_PAD]
    shape = [_LEFT_PAD, *[e.sshape for e in entries], _RIGHT_PAD]
    pair_keys = list(zip(lower, lower[1:]))
    pairs = list(map(pairs_memo.get, pair_keys))
    if None in pairs:
        for k, got in enumerate(pairs):
            if got is None:
                pairs[k] = pairs_memo[pair_keys[k]] = pair_names(*pair_keys[k], known)
    triple_keys = list(zip(shape, shape[1:], shape[2:]))
    triples = list(map(triples_memo.get, triple_keys))
    if None in triples:
        for k, got in enumerate(triples):
            if got is None:
                triples[k] = triples_memo[triple_keys[k]] = triple_names(*triple_keys[k], known)
    return pairs, triples


def pair_names(a: bytes, b: bytes, known: frozenset[bytes] | None = None
               ) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The conjunction attributes of the neighbouring lowercase words ``a b`` (or the pads ``<s>``, ``</s>``) the
    model keeps: ``lw-1|lw`` of the second token, ``lw|lw+1`` of the first."""
    joined = a + b"|" + b
    before, after = _BIGRAM_BEFORE + joined, _BIGRAM_AFTER + joined
    return ((before,) if known is None or before in known else (), (after,) if known is None or after in known else ())


def triple_names(a: bytes, b: bytes, c: bytes, known: frozenset[bytes] | None = None) -> tuple[bytes, ...]:
    """The ``ss-1|ss|ss+1`` attribute of the token of short shape ``b`` between ``a`` and ``c``, if kept."""
    name = _SHAPE_TRIGRAM + a + b"|" + b + b"|" + c
    return (name,) if known is None or name in known else ()


def section_names(sentence: Sentence, config: FeatureConfig, known: frozenset[bytes] | None = None
                  ) -> tuple[bytes, ...]:
    """The section attribute every token of ``sentence`` gets, if the config has it and the model keeps it."""
    if not config.section:
        return ()
    name = attribute_name("sec", sentence.section or "-")
    return (name,) if known is None or name in known else ()


def sentence_note(abbreviations: NoteAbbreviations | None, config: FeatureConfig) -> NoteAbbreviations | None:
    """The note's abbreviation definitions when its tokens get in-note abbreviation attributes, else None."""
    if config.abbreviation and abbreviations is not None and abbreviations.short_forms:
        return abbreviations
    return None


def note_marks(word: str, start: int, note: NoteAbbreviations, known: frozenset[bytes] | None = None
               ) -> list[bytes]:
    """The in-note abbreviation attributes of the token ``word`` at character ``start``: a defined short form
    (and its long form's lexicon types), or a token inside a long form (``abbr.long:B``/``I``)."""
    marks = []
    if word in note.short_forms:
        marks.append(b"abbr.defined")
        for semtype in note.short_form_types.get(word, ()):
            marks.append(attribute_name(f"abbr.def_lex={semtype or 'term'}", 1.0))
    tag = note.long_form_starts.get(start)
    if tag is not None:
        marks.append(attribute_name("abbr.long", tag))
    if known is not None:
        marks = [a for a in marks if a in known]
    return marks


def sentence_items(
    sentence: Sentence,
    resources: FeatureResources = EMPTY_RESOURCES,
    config: FeatureConfig = FeatureConfig(),
    text: str | None = None,
    abbreviations: NoteAbbreviations | None = None,
) -> Items:
    """The CRFsuite attributes of each token of ``sentence``.

    One pass over the tokens; each token's list is, in order: bias, word/affix/shape, window (-1, +1, -2, +2 ...),
    conjunctions, section, position, lexicon, abbreviation list, in-note abbreviations, clusters.
    """
    tokens = sentence.tokens
    n = len(tokens)
    if n == 0:
        return []
    words = [t.text for t in tokens]
    caseless = config.caseless_capitals and _all_capitals(words)
    entries = _words(words, resources, config, caseless)
    size = config.window_size if config.window else 0
    around = [_edge(size)] * size
    around = around + entries + around
    if config.conjunctions:
        pairs, triples = _conjunctions(entries, resources)
    else:
        pairs, triples = [((), ())] * (n + 1), [()] * n
    known = resources._known
    sections = section_names(sentence, config, known)
    position = position_names(sentence, text) if config.position else None
    if known is not None and position is not None and not POSITION_NAMES <= known:
        position = [[a for a in names if a in known] for names in position]
    lexicon: dict[int, list[bytes]] = {}
    if config.lexicon and resources.term_matcher is not None:
        _lexicon_names(resources.term_matcher.find(words), n, config.window, known, lexicon)
    note = sentence_note(abbreviations, config)
    if note is None:
        tails = [e.tail for e in entries]
    else:
        tails = [(*e.abbreviation, *note_marks(words[i], tokens[i].start, note, known), *e.clusters)
                 for i, e in enumerate(entries)]
    empty = [()] * n
    lexicons = [lexicon.get(i, ()) for i in range(n)] if lexicon else empty
    if position is None:
        position = empty
    if size == 2:
        # one list display per token: the window attributes come from the neighbours' cached tuples
        edge = around[0]
        return [[_BIAS, *e.own, *p.left[0], *q.right[0], *pp.left[1], *qq.right[1], *before[0], *after[1], *tri,
                 *sections, *ps, *lx, *tl]
                for pp, p, e, q, qq, before, after, tri, ps, lx, tl in zip(
                    [edge, edge, *entries], [edge, *entries], entries, [*entries[1:], edge], [*entries[2:], edge, edge],
                    pairs, pairs[1:], triples, position, lexicons, tails)]
    items: Items = []
    for i, e in enumerate(entries):
        item = [_BIAS, *e.own]
        for d in range(size):
            item += around[i + size - d - 1].left[d]
            item += around[i + size + d + 1].right[d]
        item += pairs[i][0]
        item += pairs[i + 1][1]
        item += triples[i]
        item += sections
        item += position[i]
        item += lexicons[i]
        item += tails[i]
        items.append(item)
    return items


@lru_cache(maxsize=1024)
def _lexicon_token_names(tag: str, semtypes: tuple[str, ...], known: frozenset[bytes] | None) -> tuple[bytes, ...]:
    names = [attribute_name("lex", tag), *(attribute_name(f"lex.type={tag}-{t}", 1.0) for t in semtypes if t)]
    return tuple(a for a in names if known is None or a in known)


def _lexicon_names(matches: Sequence[Any], n: int, window: bool, known: frozenset[bytes] | None,
                   out: dict[int, list[bytes]]) -> None:
    """The lexicon attributes of a sentence of ``n`` tokens with term ``matches`` the model keeps, by token, in the
    order they are set (no attribute twice for a token)."""
    if not matches:
        return
    before = {tag: [a for a in (attribute_name("+1:lex", tag),) if known is None or a in known] for tag in "BI"}
    after = {tag: [a for a in (attribute_name("-1:lex", tag),) if known is None or a in known] for tag in "BI"}
    last = [a for a in (attribute_name("lex.last", 1.0),) if known is None or a in known]
    for m in matches:
        start = m.start
        for i in range(start, m.end):
            tag = "B" if i == start else "I"
            names = _lexicon_token_names(tag, m.semtypes, known)
            if names:
                out.setdefault(i, []).extend(names)
            if window:
                if i > 0 and before[tag]:
                    out.setdefault(i - 1, []).extend(before[tag])
                if i + 1 < n and after[tag]:
                    out.setdefault(i + 1, []).extend(after[tag])
        if last:
            out.setdefault(m.end - 1, []).extend(last)


def add_features(items: Items, extra: Mapping[int, Mapping[str, "str | float"]],
                 resources: FeatureResources = EMPTY_RESOURCES) -> None:
    """Append feature dicts made after extraction (``{token index: {key: value}}``) to those tokens' attributes
    (only those ``resources`` keep, see :meth:`FeatureResources.keep_only`)."""
    known = resources._known
    for i, features in extra.items():
        if features:
            items[i] += extra_names(features, known)


def extra_names(features: Mapping[str, "str | float"], known: frozenset[bytes] | None = None) -> list[bytes]:
    """The attributes of a feature dict made after extraction (coordination marks) the model keeps, in order."""
    names = [attribute_name(k, v) for k, v in features.items()]
    return names if known is None else [a for a in names if a in known]


def document_items(
    doc: Document,
    sentences: Sequence[Sentence],
    resources: FeatureResources = EMPTY_RESOURCES,
    config: FeatureConfig = FeatureConfig(),
) -> list[Items]:
    """:func:`sentence_items` of every sentence of ``doc``."""
    abbreviations = document_abbreviations(doc, resources, config)
    return [sentence_items(s, resources, config, doc.text, abbreviations) for s in sentences]


def document_abbreviations(doc: Document, resources: FeatureResources, config: FeatureConfig
                           ) -> NoteAbbreviations | None:
    """The note's abbreviation definitions its features need (None: the config has no abbreviation features)."""
    if not config.abbreviation:
        return None
    return note_abbreviations(doc.text, resources.term_matcher if config.lexicon else None)


# Reading an attribute name back into its feature: the keys that hold a colon are the window's (``-1:lw``,
# ``+2:ss``, ``+1:lex``), and the weight-1 attributes named by an open set (semantic types, which may hold a
# colon) are these; any other name is ``key:value`` split at its first colon, or a key of weight 1.0.
_WINDOW_KEY = re.compile(r"[+-]\d+:[^:]*:")
_TYPED_KEYS = ("lex.type=", "abbr.exp_lex=", "abbr.def_lex=")
FEATURE_CACHE_SIZE = 200_000  # attribute names whose features are kept; past this the cache starts afresh
_FEATURES: dict[bytes, tuple[str, "str | float"]] = {}  # attribute name → its feature, as read


def _feature(name: bytes) -> tuple[str, "str | float"]:
    """The feature ``(key, value)`` an attribute name stands for."""
    text = name.decode()
    if text.startswith(_TYPED_KEYS):
        return text, 1.0
    window = _WINDOW_KEY.match(text)
    if window is not None:
        return text[:window.end() - 1], text[window.end():]
    key, colon, value = text.partition(":")
    return (key, value) if colon else (key, 1.0)


def as_features(items: Items) -> list[FeatureDict]:
    """Each token's attributes as a feature dict (``{"lw": "pain", "is_upper": 1.0}``), in their order."""
    read = _FEATURES.__getitem__
    out = []
    for item in items:
        try:
            out.append(dict(map(read, item)))
        except KeyError:  # a name not read before
            if len(_FEATURES) + len(item) > FEATURE_CACHE_SIZE:
                _FEATURES.clear()
            for name in item:
                if name not in _FEATURES:
                    _FEATURES[name] = _feature(name)
            out.append(dict(map(read, item)))
    return out


def sentence_features(
    sentence: Sentence,
    resources: FeatureResources = EMPTY_RESOURCES,
    config: FeatureConfig = FeatureConfig(),
    text: str | None = None,
    abbreviations: NoteAbbreviations | None = None,
) -> list[FeatureDict]:
    """Feature dicts of the tokens of one sentence: :func:`sentence_items` as dicts (so, like the lists, only with
    the attributes ``resources`` keeps: :meth:`FeatureResources.keep_only`).

    ``text`` is the document text (needed for the line-position features; without it a
    token is first of its line only when it is the first of the sentence).
    ``abbreviations`` are the note's in-note definitions (:func:`note_abbreviations`).
    """
    return as_features(sentence_items(sentence, resources, config, text, abbreviations))


def document_features(
    doc: Document,
    sentences: Sequence[Sentence],
    resources: FeatureResources = EMPTY_RESOURCES,
    config: FeatureConfig = FeatureConfig(),
) -> list[list[FeatureDict]]:
    """Feature dicts of every token of every sentence of ``doc``: one list per sentence, one dict per token."""
    return [as_features(items) for items in document_items(doc, sentences, resources, config)]
