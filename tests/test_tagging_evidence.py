"""The checks of a note's mentions against the note and the lexicon (share_ner.tagging.evidence), on hand-written
notes: whole names, lone generic heads, words folded onto short forms, short forms by their senses, and short
forms the note defines."""

from __future__ import annotations

import pytest

from share_ner.document import Document, Mention
from share_ner.lexicons.abbreviations import other_senses
from share_ner.tagging.evidence import Evidence
from share_ner.tagging.resources import acronym_only_keys, is_acronym, make_resources
from share_ner.text import split_sentences

TERMS = [("T-cell prolymphocytic leukemia", "lexicon"), ("leukemia", "lexicon"), ("tumoral calcinosis", "lexicon"),
         ("calcinosis", "lexicon"), ("Sturge-Weber syndrome", "lexicon"), ("chest pain", "lexicon"),
         ("pulmonary embolism", "lexicon"), ("DOE", "lexicon"), ("PAD", "lexicon"), ("pads", "train")]


@pytest.fixture(scope="module")
def evidence() -> Evidence:
    return Evidence(make_resources(TERMS, None), other_senses())


def check(evidence: Evidence, text: str, *words: str) -> list[str]:
    """The mentions left of ``text`` when the CRF tagged ``words`` (each at its first occurrence), as text."""
    doc = Document("n", text)
    mentions = []
    for w in words:
        at = text.index(w)
        mentions.append(Mention("n", ((at, at + len(w)),)))
    found = evidence.check(doc, split_sentences(doc), sorted(mentions))
    return [m.text(text) for m in found]


def test_a_mention_takes_in_the_whole_name_the_lexicon_knows(evidence):
    assert check(evidence, "Known T-cell prolymphocytic leukemia.", "leukemia") == ["T-cell prolymphocytic leukemia"]
    assert check(evidence, "A tumoral calcinosis of the hip.", "calcinosis") == ["tumoral calcinosis"]
    # not over another mention, nor over a severity word ShARe leaves out
    assert check(evidence, "Chest pain, tumoral calcinosis.", "Chest pain", "calcinosis") == ["Chest pain",
                                                                                            "tumoral calcinosis"]
    assert check(evidence, "Severe calcinosis.", "calcinosis") == ["calcinosis"]


def test_a_generic_head_takes_the_eponym_or_phrase_that_names_it(evidence):
    assert check(evidence, "She has Castleman's disease.", "disease") == ["Castleman's disease"]
    assert check(evidence, "Known Moya Moya disease.", "disease") == ["Moya Moya disease"]
    assert check(evidence, "Castleman's disease was found.", "disease") == ["Castleman's disease"]
    assert check(evidence, "History of liver disease.", "disease") == ["liver disease"]
    assert check(evidence, "Posttraumatic stress disorder.", "disorder") == ["Posttraumatic stress disorder"]


def test_a_generic_head_that_names_nothing_is_dropped_unless_an_anaphora(evidence):
    assert check(evidence, "HISTORY OF PRESENT ILLNESS: fever.", "ILLNESS") == []
    assert check(evidence, "No significant disease.", "disease") == []
    assert check(evidence, "The disease progressed.", "disease") == ["disease"]
    assert check(evidence, "Disease progressed.", "Disease") == ["Disease"]


def test_a_word_folded_onto_a_short_form_is_the_word(evidence):
    # "pads" folds to the key of PAD; PAD itself and a word in capitals stay
    assert check(evidence, "Gauze pads applied.", "pads") == []
    assert check(evidence, "Has PAD.", "PAD") == ["PAD"]
    assert check(evidence, "GAUZE PADS APPLIED.", "PADS") == ["PADS"]  # in capitals case tells nothing
    assert is_acronym("T-PLL") and not is_acronym("pads") and not is_acronym("DVT s")
    assert acronym_only_keys(["DOE", "AIDS", "aids", "chest pain"]) == {"doe"}


def test_short_forms_by_their_senses(evidence):
    # no disorder sense: a procedure
    assert check(evidence, "Status post CABG.", "CABG") == []
    # ambiguous, nothing in the note says which: dropped, unless it stands in a list of mentions
    assert check(evidence, "PE: afebrile.", "PE") == []
    assert check(evidence, "History of DVT and PE.", "DVT", "PE") == ["DVT", "PE"]
    assert check(evidence, "c/o SOB and CP.", "SOB", "CP") == ["SOB", "CP"]
    # ... or in a sentence with another mention (co-occurring evidence); a header sentence of its own has none
    assert check(evidence, "CT showed a left MCA CVA and carotid stenosis.", "CVA", "carotid stenosis") == [
        "CVA", "carotid stenosis"]
    assert check(evidence, "MS: alert. Chest pain.", "MS", "Chest pain") == ["Chest pain"]
    # the note writes out a sense: a disorder's keeps it, another's drops it
    assert check(evidence, "No chest pain before; CP today.", "chest pain", "CP") == ["chest pain", "CP"]
    assert check(evidence, "Physical examination: see below. PE: clear.", "PE") == []
    # one sense, a disorder: the tagger's call stands
    assert check(evidence, "Known CHF.", "CHF") == ["CHF"]


def test_short_forms_the_note_defines_recur(evidence):
    text = "Sturge-Weber syndrome (SWS) was known. The SWS was stable; SWS again."
    assert check(evidence, text, "Sturge-Weber syndrome") == ["Sturge-Weber syndrome", "SWS", "SWS", "SWS"]
    # scispaCy's detector misses a hyphenated short form; a mention followed by it in brackets defines it
    text = "T-cell prolymphocytic leukemia (T-PLL). The T-PLL relapsed."
    assert check(evidence, text, "T-cell prolymphocytic leukemia") == ["T-cell prolymphocytic leukemia", "T-PLL",
                                                                       "T-PLL"]
    # the short form spells a longer name than the mention: the note names the disorder whole
    text = "Known chronic obstructive lung disease (COLD); COLD worse."
    assert check(evidence, text, "obstructive lung disease") == ["chronic obstructive lung disease", "COLD", "COLD"]
    # a definition whose long form is no mention defines nothing to tag
    assert check(evidence, "The ejection fraction (EF) was low; EF 30%.", "low") == ["low"]
    # a short form of the list the note defines as a non-mention is dropped
    assert check(evidence, "Physical exam (PE) done. PE: clear.", "PE: clear") == ["PE: clear"]
