"""Derivational variants of one-word disorder names: the adjective a note writes for the noun a lexicon names.

"The patient is anemic", "osteoporotic", "a syncopal episode": ShARe annotates such an adjective as a mention
of the noun's concept (anemia, osteoporosis, syncope), and MetaMap matches them through the derivational
variants of the SPECIALIST lexicon. Lexicons name the nouns; :func:`derived_name` writes the adjective by the
suffix rules of medical word formation (:data:`DERIVATIONS`), so that the distant labels, the tagger's term
features and the normalizer's dictionary know it, with the noun's CUI.
"""

from __future__ import annotations

from typing import Iterable

from share_ner.lexicons.lexicon import Lexicon, LexiconEntry

# Noun ending -> adjective ending, the first that fits applies (a longer ending before a shorter one).
DERIVATIONS: tuple[tuple[str, str], ...] = (
    ("oidism", "oid"),  # hypothyroidism -> hypothyroid
    ("ension", "ensive"),  # hypertension -> hypertensive
    ("plasia", "plastic"),  # dysplasia -> dysplastic
    ("pathy", "pathic"),  # neuropathy -> neuropathic
    ("trophy", "trophic"),  # atrophy -> atrophic
    ("esity", "ese"),  # obesity -> obese
    ("osis", "otic"),  # osteoporosis -> osteoporotic
    ("itis", "itic"),  # arthritis -> arthritic
    ("ema", "ematous"),  # edema -> edematous
    ("nea", "neic"),  # dyspnea -> dyspneic
    ("ope", "opal"),  # syncope -> syncopal
    ("ia", "ic"),  # hypoxia -> hypoxic, anemia -> anemic
)
# Adjectives those rules write that notes use for something else: drug classes ("oral hypoglycemics",
# "narcotic"), solutions ("hypotonic saline"), cells ("eosinophilic infiltrate"), normal anatomy ("lordotic curve").
NOT_DISORDER_ADJECTIVES = frozenset(
    "hypoglycemic hyperglycemic narcotic hypnotic hypotonic hypertonic eosinophilic basophilic lordotic mitotic "
    "osmotic".split())
MIN_LETTERS = 5  # shorter names are abbreviations or too short to derive from


def derived_name(name: str) -> str | None:
    """The adjective of a one-word disorder name (``Anemia`` -> ``anemic``), None when no rule fits or the
    adjective names something else (:data:`NOT_DISORDER_ADJECTIVES`)."""
    word = name.lower()
    if len(word) < MIN_LETTERS or not word.isalpha() or not word.isascii():
        return None
    for noun, adjective in DERIVATIONS:
        if word.endswith(noun) and len(word) > len(noun):
            derived = word[: -len(noun)] + adjective
            return None if derived in NOT_DISORDER_ADJECTIVES else derived
    return None


def derived_entries(entries: Iterable[LexiconEntry]) -> list[LexiconEntry]:
    """Entries for the adjectives of ``entries``' one-word names that no entry names (case-insensitive), each
    with the CUI of the first entry it derives from, in the entries' order."""
    entries = list(entries)
    seen = {e.name.lower() for e in entries}
    out: list[LexiconEntry] = []
    for entry in entries:
        derived = derived_name(entry.name)
        if derived is not None and derived not in seen:
            seen.add(derived)
            out.append(LexiconEntry(entry.cui, derived, "derived", entry.semtypes))
    return out


def with_derived_names(lexicon: Lexicon) -> Lexicon:
    """``lexicon`` and its derived adjectives (:func:`derived_entries`), under its name plus ``+derived``."""
    entries = list(lexicon.entries)
    return Lexicon.from_entries([*entries, *derived_entries(entries)], f"{getattr(lexicon, 'name', 'memory')}+derived")


# The heads after which a name's first word is written as a possessive when it is an eponym ("Castleman disease",
# "Castleman's disease"); the variant of a name that is no eponym ("heart's disease") is never written, so it costs
# nothing.
POSSESSIVE_HEADS = ("disease", "syndrome")


def possessive_name(name: str) -> str | None:
    """The possessive spelling of a two-word eponym name ("Castleman disease" -> "Castleman's disease"), None for
    a name of another form."""
    words = name.split()
    if len(words) != 2 or words[1].lower() not in POSSESSIVE_HEADS or not words[0].isalpha():
        return None
    return f"{words[0]}'s {words[1]}"
