"""Coordination features: conjuncts of a coordination ("renal or liver impairment") whose distributed reading is a known term.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from functools import lru_cache
from itertools import accumulate
from types import MappingProxyType
from typing import Mapping, Sequence

from share_ner.features.lists import list_marks
from share_ner.features.matcher import TermMatcher, is_term, token_keys, walk

# --------------------------------------------------------------------------------------------
# Sequences.
# --------------------------------------------------------------------------------------------


# Tokens that join the conjuncts of a coordination ("renal or liver impairment").
COORDINATORS = frozenset({"or", "and", "and/or", "or/and", "/", ",", "&", "nor", "vs", "versus"})


# Tokens a coordinated phrase does not cross.
_PHRASE_BREAKS = frozenset({".", ";", ":", "(", ")", "[", "]", "with", "without", "who", "which", "that", "for"})


_HEAD_REACH = 15  # tokens scanned for the shared head of a coordination


@lru_cache(maxsize=200_000)
def _coordination_word(word: str) -> tuple[str, bool, bool, tuple[str, ...]]:
    """(lower case, a coordinator, a content word, term keys) of a token, for :func:`coordination_features`."""
    lower = word.lower()
    keys = token_keys(word)
    if lower == word:  # the strings the caches hold already, not one more copy per word
        lower = word
    elif len(keys) == 1 and keys[0] == lower:
        lower = keys[0]
    coord = lower in COORDINATORS
    content = not coord and lower not in _PHRASE_BREAKS and any(ch.isalnum() for ch in lower)
    return lower, coord, content, keys


def coordination_features(words: Sequence[str], feats: list[dict], matcher: TermMatcher,
                          head_words: frozenset[str] = frozenset(),
                          first_keys: frozenset[str] | None = None, last_keys: frozenset[str] | None = None,
                          lists: bool = False) -> None:
    """Mark coordinations whose distributed reading is a known term (added to ``feats`` in place).

    Coordination ellipsis is where most discontiguous disorder mentions come from:
    in "renal or liver impairment" the mention "renal ... impairment" borrows the head
    of the second conjunct, in "hepatitis B or C" the mention "hepatitis ... C" borrows
    the head of the first. For a conjunct next to a coordinator, the distributed
    string (conjunct + a head up to ``_HEAD_REACH`` tokens away) is looked up in the
    term matcher (lexicon and training-gazetteer terms); on a hit the conjunct tokens
    get ``co.mod``/``co.rmod`` and the head tokens ``co.head``/``co.lhead`` (B/I).
    Without a known term, a conjunct followed (within reach) by one of ``head_words``
    gets ``co.hw_mod`` and that word ``co.hw_head``: the weaker, more general signal. With ``lists``, the lists'
    conjuncts and heads get the marks of :func:`share_ner.features.lists.list_marks` too.
    """
    if len(words) < 3 or matcher is None:
        return
    _mark_sentence(list(map(_coordination_word, words)), feats, matcher, head_words, first_keys, last_keys, lists)


# The marks of a sentence with none: one read-only empty mapping for all of them.
_NO_MARKS: Mapping[int, dict] = MappingProxyType({})


def note_coordination(words: Sequence[str], lengths: Sequence[int], matcher: TermMatcher,
                      head_words: frozenset[str] = frozenset(), first_keys: frozenset[str] | None = None,
                      last_keys: frozenset[str] | None = None, lists: bool = False) -> list[Mapping[int, dict]]:
    """:func:`coordination_features` of each sentence of ``words`` (sentences of ``lengths`` tokens laid end to
    end), one ``{token: features}`` each (read-only and empty for a sentence without marks); only the sentences
    with a coordinator between their first and last token are looked at."""
    out = [_NO_MARKS] * len(lengths)
    if matcher is None:
        return out
    info = list(map(_coordination_word, words))
    coordinators = [i for i, w in enumerate(info) if w[1]]
    if not coordinators:
        return out
    ends = list(accumulate(lengths))
    k = -1
    for i in coordinators:
        if k >= 0 and i < ends[k]:
            continue  # that sentence is done
        k = bisect_right(ends, i)
        end = ends[k]
        start = end - lengths[k]
        j = bisect_right(coordinators, start)  # the sentence's first coordinator after its first token
        if j == len(coordinators) or coordinators[j] >= end - 1:
            continue  # none between its first and last token: _mark_sentence would find nothing
        feats: defaultdict[int, dict] = defaultdict(dict)
        _mark_sentence(info[start:end], feats, matcher, head_words, first_keys, last_keys, lists)
        if feats:
            out[k] = feats
    return out


def _mark_sentence(info: Sequence[tuple[str, bool, bool, tuple[str, ...]]], feats: list[dict] | defaultdict,
                   matcher: TermMatcher, head_words: frozenset[str], first_keys: frozenset[str] | None,
                   last_keys: frozenset[str] | None, lists: bool = False) -> None:
    """:func:`coordination_features` of a sentence of at least 3 tokens, by its tokens' ``_coordination_word``."""
    n = len(info)
    lower, coord, content, keys = zip(*info)
    if True not in coord[1:n - 1]:
        return
    root = matcher.root
    if lists:
        list_marks(info, feats, root, head_words, last_keys)
    # Could token i start / end a term? (Unknown key sets: assume it could.) Asked of few tokens: not listed.
    def can_start(i: int) -> bool:
        return bool(keys[i]) and (first_keys is None or keys[i][0] in first_keys)

    def can_end(i: int) -> bool:
        return bool(keys[i]) and (last_keys is None or keys[i][-1] in last_keys)

    def mark(start: int, end: int, key: str) -> None:
        for j in range(start, end + 1):
            feats[j][key] = "B" if j == start else "I"

    for c in range(1, n - 1):
        if not coord[c]:
            continue
        # Head on the right: MOD <c> ... HEAD, with MOD + HEAD a term. The words are looked up as a walk down the
        # matcher's trie: from the modifier's node, one word more at a time.
        for a in (c - 1, c - 2):
            if a < 0 or not content[a]:
                break
            if not can_start(a):
                continue
            modifier = walk(root, keys[a:c])
            if modifier is None:
                continue  # no term starts so
            hit = None
            for h in range(c + 2, min(n, c + 1 + _HEAD_REACH)):
                if lower[h] in _PHRASE_BREAKS:
                    break
                if not content[h] or keys[h][0] not in modifier:
                    continue  # (a content word has keys) no term goes on with this word
                node: dict | None = modifier
                for e in range(h, min(n, h + 3)):
                    if not content[e]:
                        break
                    node = walk(node, (keys[e],))  # type: ignore[arg-type]
                    if node is None:
                        break  # nor with more words
                    if can_end(e) and is_term(node):
                        hit = (h, e)
                if hit:
                    break
            if hit:
                mark(a, c - 1, "co.mod")
                mark(hit[0], hit[1], "co.head")
                break
        if head_words and content[c - 1]:
            for h in range(c + 2, min(n, c + 1 + _HEAD_REACH)):
                if lower[h] in _PHRASE_BREAKS:
                    break
                if lower[h] in head_words:
                    feats[c - 1]["co.hw_mod"] = 1.0
                    feats[h]["co.hw_head"] = 1.0
                    break
        # Head on the left: HEAD ... MOD <c> MOD', with HEAD + MOD' a term ("hepatitis B or C").
        for r in (c + 1, c + 2):
            if r >= n or not content[r]:
                break
            if not can_end(r):
                continue
            right = keys[c + 1:r + 1]
            hit = None
            for b in range(c - 2, max(-1, c - 1 - _HEAD_REACH), -1):
                if lower[b] in _PHRASE_BREAKS:
                    break
                if not content[b]:
                    continue
                for h in range(b, max(-1, b - 3), -1):
                    if not content[h]:
                        break
                    if can_start(h):
                        node = walk(root, keys[h:b + 1])
                        if node is not None:
                            node = walk(node, right)
                            if node is not None and is_term(node):
                                hit = (h, b)
                if hit:
                    break
            if hit:
                mark(hit[0], hit[1], "co.lhead")
                mark(c + 1, r, "co.rmod")
                break
