"""Coordination features: conjuncts of a coordination ("renal or liver impairment") whose distributed reading is a known term.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from share_ner.features.matcher import TermMatcher, token_keys

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
    coord = lower in COORDINATORS
    content = not coord and lower not in _PHRASE_BREAKS and any(ch.isalnum() for ch in lower)
    return lower, coord, content, token_keys(word)


def coordination_features(words: Sequence[str], feats: list[dict], matcher: TermMatcher,
                          head_words: frozenset[str] = frozenset(),
                          first_keys: frozenset[str] | None = None, last_keys: frozenset[str] | None = None) -> None:
    """Mark coordinations whose distributed reading is a known term (added to ``feats`` in place).

    Coordination ellipsis is where most discontiguous disorder mentions come from:
    in "renal or liver impairment" the mention "renal ... impairment" borrows the head
    of the second conjunct, in "hepatitis B or C" the mention "hepatitis ... C" borrows
    the head of the first. For a conjunct next to a coordinator, the distributed
    string (conjunct + a head up to ``_HEAD_REACH`` tokens away) is looked up in the
    term matcher (lexicon and training-gazetteer terms); on a hit the conjunct tokens
    get ``co.mod``/``co.rmod`` and the head tokens ``co.head``/``co.lhead`` (B/I).
    Without a known term, a conjunct followed (within reach) by one of ``head_words``
    gets ``co.hw_mod`` and that word ``co.hw_head``: the weaker, more general signal.
    """
    n = len(words)
    if n < 3 or matcher is None:
        return
    lower, coord, content, keys = zip(*map(_coordination_word, words))
    if True not in coord:
        return
    lookup = matcher.lookup_keys  # the keys of the words joined by spaces, without joining and splitting them again
    # Could token i start / end a term? (Unknown key sets: assume it could.)
    starts = [bool(k) and (first_keys is None or k[0] in first_keys) for k in keys]
    ends = [bool(k) and (last_keys is None or k[-1] in last_keys) for k in keys]

    def mark(start: int, end: int, key: str) -> None:
        for j in range(start, end + 1):
            feats[j][key] = "B" if j == start else "I"

    for c in range(1, n - 1):
        if not coord[c]:
            continue
        # Head on the right: MOD <c> ... HEAD, with MOD + HEAD a term.
        for a in (c - 1, c - 2):
            if a < 0 or not content[a]:
                break
            if not starts[a]:
                continue
            left = keys[a:c]
            hit = None
            for h in range(c + 2, min(n, c + 1 + _HEAD_REACH)):
                if lower[h] in _PHRASE_BREAKS:
                    break
                if not content[h]:
                    continue
                for e in range(h, min(n, h + 3)):
                    if not content[e]:
                        break
                    if ends[e] and lookup(left + keys[h:e + 1]):
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
            if not ends[r]:
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
                    if starts[h] and lookup(keys[h:b + 1] + right):
                        hit = (h, b)
                if hit:
                    break
            if hit:
                mark(hit[0], hit[1], "co.lhead")
                mark(c + 1, r, "co.rmod")
                break
