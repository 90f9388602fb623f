"""Leave-one-name-out queries: a dev set for linking with a lexicon and no training data.

Take lexicon concepts (HPO terms) that have two or more names, remove one of
their synonyms from the lexicon, and ask the normalizer to link the removed
string with what is left: the answer is right when it is one of the term's
CUIs. The sample is seeded, so the set is reproducible.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Iterable, NamedTuple, Sequence

from share_ner.lexicons.hpo import HpoTerm
from share_ner.lexicons.index import exact_key
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry


class HeldOutName(NamedTuple):
    """One query: a synonym removed from the lexicon, the term it was removed from and that term's CUIs."""

    name: str
    term_id: str
    cuis: tuple[str, ...]


def leave_one_name_out(terms: Sequence[HpoTerm], n: int, seed: int) -> list[HeldOutName]:
    """Up to ``n`` queries from terms with a synonym, one per term, in a seeded random order.

    The removed synonym is drawn at random among the term's synonyms (its name stays); a synonym whose
    case-folded string also names another term is skipped, so the right answer is the term's CUIs alone.
    """
    owners: dict[str, set[str]] = defaultdict(set)
    for t in terms:
        for s in (t.name, *t.synonyms):
            owners[exact_key(s)].add(t.id)
    rng = random.Random(seed)
    eligible = [t for t in terms if t.synonyms]
    rng.shuffle(eligible)
    out: list[HeldOutName] = []
    for t in eligible:
        if len(out) >= n:
            break
        name = rng.choice(t.synonyms)
        if len(owners[exact_key(name)]) == 1:
            out.append(HeldOutName(name, t.id, t.cuis))
    return out


def lexicon_without(entries: Iterable[LexiconEntry], names: Iterable[str], label: str) -> Lexicon:
    """A lexicon of ``entries`` minus every entry whose string equals one of ``names`` (case-folded)."""
    drop = {exact_key(s) for s in names}
    return Lexicon.from_entries((e for e in entries if exact_key(e.name) not in drop), label)
