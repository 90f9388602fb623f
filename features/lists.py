"""List features: where a token sits in a coordinated list ("breast, ovarian or lung cancer") and what the list's
shared head looks like, for conjuncts too far from the head for the context window to see it.

In "significant cardiac, vascular, renal, psychiatric, or metabolic disturbances" each adjective is a mention that
borrows the head "disturbances", but the window of two tokens shows "cardiac" only commas and adjectives. These
features give every conjunct its place in the list and the word after the list's last conjunct (the shared head on
the right), or the content word before the list (the shared head on the left, "cancer of the breast, ovary or
lung"), with what the term matcher knows of that word: a one-word term, the first or the last word of terms, a
frequent head of training mentions. They are general cues (coordinators, commas, parallel conjunct lengths, term
hits), no word list.
"""

from __future__ import annotations

from typing import Sequence

from share_ner.features.matcher import is_term, walk

# Word coordinators that close a list; commas separate its earlier conjuncts.
LIST_COORDINATORS = frozenset({"or", "and", "and/or", "or/and", "nor", "/", "&"})
_COMMA = ","
MAX_CONJUNCT = 3  # tokens of a conjunct between two separators
# Function words between a left head and its list ("cancer of the breast, ovary or lung").
_LEFT_LINKS = frozenset({"of", "the", "in", "on", "to", "a", "an", "at", "involving", "affecting"})


def _head_kind(keys: tuple[str, ...], root: dict, head_words: frozenset[str], last_keys: frozenset[str] | None,
               lower: str) -> str:
    """What the term matcher knows of a head word, as one string: ``T`` a one-word term, ``S`` terms start with
    it, ``E`` terms end with it, ``H`` a frequent head of training mentions; ``-`` none of these."""
    kind = ""
    node = walk(root, (keys,)) if keys else None
    if node is not None:
        kind += "T" if is_term(node) else ""
        kind += "S"
    if keys and last_keys is not None and keys[-1] in last_keys:
        kind += "E"
    if lower in head_words:
        kind += "H"
    return kind or "-"


def _size(n: int) -> str:
    return str(n) if n < 4 else "4+"


def list_marks(info: Sequence[tuple[str, bool, bool, tuple[str, ...]]], feats: list[dict] | dict, root: dict,
               head_words: frozenset[str] = frozenset(), last_keys: frozenset[str] | None = None) -> None:
    """Mark the far conjuncts of the lists of a sentence in ``feats`` (``{token: features}``), given each token's
    ``(lower case, coordinator, content word, term keys)``.

    A list ends with a word coordinator (``or``, ``and``, ``and/or``, ``/``...) at ``c``: its last conjunct starts at
    ``c + 1``; the conjunct before it ends at ``c - 1`` (or ``c - 2`` after an Oxford comma) and earlier ones are
    runs of 1-3 content words between commas. The leftmost conjunct counts only its last word (where it starts is
    not known). The two conjuncts next to the coordinator are in the context window of the coordinator and the
    head already; each word of the conjuncts before them gets ``cl.pos`` (``first``, ``mid``), ``cl.size``
    (conjuncts: 3, 4+), the right head ``cl.rh`` (the word after the last conjunct, taken as long as the conjunct
    before the coordinator) and its kind ``cl.rh.k`` (:func:`_head_kind`; ``none`` when the list ends there), and
    the left head ``cl.lh`` (the content word before the list, across up to two linking words like ``of the``)
    with its kind ``cl.lh.k`` and the linking word next to it ``cl.lh.link`` (``-``: none).
    """
    n = len(info)
    for c in range(1, n - 1):
        lower_c, coord_c = info[c][0], info[c][1]
        if not coord_c or lower_c not in LIST_COORDINATORS or not info[c + 1][2]:
            continue
        # the conjuncts before the coordinator, right to left, as (first, last) token ranges
        j = c - 1
        if info[j][0] == _COMMA:
            j -= 1
        conjuncts: list[tuple[int, int]] = []
        while j >= 0 and info[j][2]:
            end = j
            while j - 1 >= 0 and info[j - 1][2] and end - j + 1 < MAX_CONJUNCT:
                j -= 1
            if j - 1 >= 0 and info[j - 1][0] == _COMMA and j - 2 >= 0 and info[j - 2][2]:
                conjuncts.append((j, end))
                j -= 2  # on to the conjunct before the comma
            else:
                conjuncts.append((end, end))  # the leftmost: its last word only
                break
        if len(conjuncts) < 2:
            continue  # no conjunct beyond the window's reach
        conjuncts.reverse()
        size = len(conjuncts) + 1
        width = conjuncts[-1][1] - conjuncts[-1][0] + 1
        # the right conjunct as long as the one before the coordinator (parallel conjuncts), then the head
        last = c + width
        while last > c + 1 and not all(info[k][2] for k in range(c + 1, min(n, last + 1))):
            last -= 1
        last = min(last, n - 1)
        h = last + 1
        right = h if h < n and info[h][2] else None
        # the left head: the content word before the first conjunct, across linking words
        left = None
        link = "-"
        k = conjuncts[0][0] - 1
        links = 0
        while k >= 0 and info[k][0] in _LEFT_LINKS and links < 2:
            link = info[k][0]  # the one next to the head
            k -= 1
            links += 1
        if k >= 0 and info[k][2] and info[k][0] not in LIST_COORDINATORS:
            left = k
        shared: dict[str, str] = {"cl.size": _size(size)}
        if right is not None:
            shared["cl.rh"] = info[right][0]
            shared["cl.rh.k"] = _head_kind(info[right][3], root, head_words, last_keys, info[right][0])
        else:
            shared["cl.rh.k"] = "none"
        if left is not None:
            shared["cl.lh"] = info[left][0]
            shared["cl.lh.k"] = _head_kind(info[left][3], root, head_words, last_keys, info[left][0])
            shared["cl.lh.link"] = link
        for number, (a, b) in enumerate(conjuncts[:-1]):  # the near conjuncts the window sees are left alone
            for t in range(a, b + 1):
                feats[t].update(shared)
                feats[t]["cl.pos"] = "first" if number == 0 else "mid"
