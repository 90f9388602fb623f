"""The project's stop-word lists, in one place; each use takes the narrowest list that serves it.

- :data:`ENGLISH` (scikit-learn's English list, :func:`english`): words left out of the training-note vectors that tell apart the
  labels of an ambiguous string (``share_ner.linking.context``); a note's topic lives in its content words.
- :data:`TERM_STOP_WORDS`: a lexicon term made only of these is not matched in text (HPO has names such as "All"
  and "Abnormality"), so the list adds the words that mean nothing on their own in a clinical note.
- :func:`function_words` (spaCy's English list): words that are never a noun's plural, which the term matcher's
  plural folding (``share_ner.features.matcher.fold_plural``) leaves as they are (``does`` is no plural of ``doe``).
- :data:`NOT_MODIFIERS`: words ShARe leaves outside a disorder's span although they stand where its modifiers do
  (severity, course, certainty, time, quantity); :data:`MODIFIER_ADJECTIVE` the endings of the adjectives that
  belong to it (sites and qualifiers: "gastric", "renal", "ischemic").
- :data:`NAME_JOINERS`: words dropped from a name's normalized key, so that "carcinoma of the lung" and "lung
  carcinoma" can meet; only the words that join a disorder name's parts, plus "nos" (not otherwise specified),
  because a wider list would fold distinct names together.
"""

from __future__ import annotations

import re
from functools import lru_cache

from share_ner.spacy_import import import_spacy


@lru_cache(maxsize=1)
def english() -> frozenset[str]:
    """scikit-learn's English list, imported on first use: only note contexts need it, and importing
    scikit-learn costs more memory than the default model."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """spaCy's English stop words, imported on first use (with spaCy, which tokenizing needs anyway)."""
    import_spacy()  # without spaCy's command line (start-up time)
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def __getattr__(name: str) -> frozenset[str]:
    if name == "ENGLISH":  # the list as a module attribute, read on first use
        return english()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

TERM_STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again against all also an and any are as at be been before being below between
    both but by can could did do does doing down during each either few for from further had has have having
    he her here hers him his how i if in into is it its itself may me might more most much must my no nor
    not now of off on once one only or other our out over own same she should so some such than that the
    their them then there these they this those through to too under until up upon very was we were what
    when where which while who whom why will with within without would yet you your
    normal abnormal abnormality present absent""".split()
)

NAME_JOINERS: frozenset[str] = frozenset("of the a an and in on with to for by or at from as its nos".split())


# Words ShARe leaves outside a disorder's span although they look like its modifiers: severity, course,
# certainty, time and quantity (attributes in ShARe/CLEF 2014), and normal-finding words.
NOT_MODIFIERS = frozenset(
    "severe mild moderate chronic acute active other several significant known possible probable new old recent "
    "prior previous general total normal typical usual clinical medical potential initial final additional "
    "multiple primary secondary serial special actual individual natural real positive negative progressive "
    "intensive extensive effective relative sensitive similar regular bilateral lateral local central minimal "
    "maximal mental original equal stable critical physical interval overall functional partial marginal "
    "intermittent persistent residual recurrent occasional frequent episodic gradual sudden worsening "
    "increasing decreasing mildly moderately severely slight".split()
)
# Adjective endings of body sites and disorder qualifiers: gastric, renal, pulmonary, ischemic, infectious.
MODIFIER_ADJECTIVE = re.compile(r"^[a-z]{4,}(?:al|ic|ary|ous|oid|ive|ar|eal)$")
