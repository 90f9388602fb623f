"""Suspended prefixes: "hyper- or hypothyroidism" names hyperthyroidism too.

A word that completes a suspended prefix ("hyper- or hypo|thyroidism", "intra- and extra|hepatic", "tachy- or
brady|cardia") shares its stem with the prefix before it. ShARe annotates the distributed reading as a
discontiguous mention that starts at the suspended prefix and takes in the stem from inside the later word
("Hyper ... thyroidism"). A token boundary there would hide the whole word from the tagger and its lexicon (the
word "hypotension" is a disorder, "hypo" and "tension" are not), so tokens stay whole: the tagger finds the whole
word, and :func:`complete_suspended` adds the distributed mention of each mention that starts with such a word.

The construction is English word formation, not a corpus's terms: both prefixes must be combining prefixes of
medical English (:data:`COMBINING_PREFIXES`), the gap a hyphen and ``and``, ``or``, ``and/or``, ``nor`` or ``&``
on one line, and the stem three letters or more.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from share_ner.document import Mention

COMBINING_PREFIXES = sorted((
    "ante", "anti", "auto", "bi", "brady", "chemo", "contra", "di", "dys", "echo", "electro", "endo", "epi", "extra",
    "hemi", "hetero", "homo", "hyper", "hypo", "infra", "inter", "intra", "ipsi", "iso", "macro", "micro", "mid",
    "mono", "multi", "neo", "normo", "oligo", "pan", "para", "penta", "peri", "poly", "post", "pre", "pseudo",
    "quadri", "radio", "retro", "semi", "sub", "super", "supra", "tachy", "tetra", "trans", "tri", "ultra", "uni",
), key=len, reverse=True)  # longest first: an alternation takes the first that fits
_ALTERNATION = "|".join(COMBINING_PREFIXES)
_LONGEST = len(COMBINING_PREFIXES[0])
# Found from the gap, which starts with a literal hyphen (fast to search for); the words on either side are checked.
_GAP = re.compile(r"-(?<=[A-Za-z]-)[ \t]+(?i:and/or|and|or|nor|&)[ \t]+(?=[A-Za-z])")
_PREFIX_BEFORE = re.compile(rf"(?i:\b(?:{_ALTERNATION}))\Z")
_PREFIX_AT = re.compile(rf"(?i:{_ALTERNATION})(?=[A-Za-z]{{3}})")

Spans = tuple[tuple[int, int], ...]


def suspended_prefixes(text: str) -> list[tuple[tuple[int, int], int, int]]:
    """Each suspended prefix of ``text``: (the prefix's span, without its hyphen; where the word that completes it
    starts; where that word's own prefix ends, so its stem starts)."""
    if "- " not in text and "-\t" not in text:
        return []
    out = []
    for m in _GAP.finditer(text):
        a = m.start()
        before = _PREFIX_BEFORE.search(text, max(0, a - _LONGEST - 1), a)
        if before is None:
            continue
        after = _PREFIX_AT.match(text, m.end())
        if after is not None:
            out.append(((before.start(), a), m.end(), after.end()))
    return out


def distributed_spans(text: str, found: Iterable[Spans]) -> set[Spans]:
    """The spans of the distributed mentions of ``found`` (mentions' spans): for each mention whose first span
    starts with a word that completes a suspended prefix and runs past its own prefix, the prefix's span followed
    by the mention's spans from the stem on."""
    prefixes = {word: (prefix, stem) for prefix, word, stem in suspended_prefixes(text)}
    if not prefixes:
        return set()
    out = set()
    for spans in found:
        (start, end), *rest = spans
        if start in prefixes:
            prefix, stem = prefixes[start]
            if end > stem:
                out.add((prefix, (stem, end), *rest))
    return out


def complete_suspended(text: str, mentions: Sequence[Mention]) -> list[Mention]:
    """``mentions`` and the distributed mentions (:func:`distributed_spans`) not among them, CUI-less."""
    if not mentions:
        return list(mentions)
    added = distributed_spans(text, (m.spans for m in mentions)) - {m.spans for m in mentions}
    if not added:
        return list(mentions)
    doc_id = mentions[0].doc_id
    return sorted([*mentions, *(Mention(doc_id, spans) for spans in added)], key=lambda m: (m.spans, m.cui))
