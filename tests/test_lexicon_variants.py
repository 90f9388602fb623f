"""Derivational variants: the adjectives of one-word disorder names, with the noun's CUI."""

from __future__ import annotations

import pytest

from share_ner.document import Document
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry
from share_ner.lexicons.variants import derived_entries, derived_name, with_derived_names
from share_ner.training.distant import DistantConfig, labelling_matcher, labelling_terms, lexicon_labels, model_lexicon


@pytest.mark.parametrize("noun, adjective", [
    ("Anemia", "anemic"), ("Osteoporosis", "osteoporotic"), ("Hypothyroidism", "hypothyroid"),
    ("Syncope", "syncopal"), ("Hypertension", "hypertensive"), ("Edema", "edematous"), ("Dyspnea", "dyspneic"),
    ("Neuropathy", "neuropathic"), ("Dysplasia", "dysplastic"), ("Atrophy", "atrophic"), ("Obesity", "obese"),
    ("Arthritis", "arthritic"), ("Hypoxia", "hypoxic")])
def test_a_one_word_disorder_name_gives_its_adjective(noun: str, adjective: str) -> None:
    assert derived_name(noun) == adjective


@pytest.mark.parametrize("name", ["Heart failure", "Fever", "Pain", "Ileus", "Hypoglycemia", "Eosinophilia",
                                  "Lordosis", "COVID-19", "osis"])
def test_no_adjective_for_names_of_several_words_other_endings_or_other_meanings(name: str) -> None:
    assert derived_name(name) is None


def test_derived_entries_take_the_first_nouns_cui_and_skip_names_the_lexicon_has() -> None:
    entries = [LexiconEntry("C0002871", "Anemia", "HPO", ("T047",)), LexiconEntry("C0000002", "anemia", "other"),
               LexiconEntry("C0039070", "Syncope", "HPO"), LexiconEntry("C0039071", "Syncopal", "HPO")]
    out = derived_entries(entries)
    assert [(e.cui, e.name, e.source, e.semtypes) for e in out] == [("C0002871", "anemic", "derived", ("T047",))]
    lexicon = with_derived_names(Lexicon.from_entries(entries, "fixture"))
    assert [e.name for e in lexicon.entries] == [e.name for e in entries] + ["anemic"]
    assert lexicon.name == "fixture+derived"


def test_distant_labels_and_the_model_lexicon_take_the_adjectives_when_asked() -> None:
    lexicon = Lexicon.from_entries([LexiconEntry("C0029456", "Osteoporosis", "HPO")], "fixture")
    plain = DistantConfig(project_lists=False, icd_names=False)
    derived = DistantConfig(project_lists=False, icd_names=False, derived_names=True)
    assert labelling_terms(lexicon, plain) == [("Osteoporosis", "C0029456")]
    assert labelling_terms(lexicon, derived) == [("Osteoporosis", "C0029456"), ("osteoporotic", "C0029456")]
    doc = Document("n", "A DEXA scan showed her to be osteoporotic.")
    assert lexicon_labels({"n": doc}, labelling_matcher(lexicon, plain))["n"] == []
    [label] = lexicon_labels({"n": doc}, labelling_matcher(lexicon, derived))["n"]
    assert (label.text(doc.text), label.cui) == ("osteoporotic", "C0029456")
    assert "osteoporotic" in {e.name for e in model_lexicon(lexicon, derived).entries}
    assert "osteoporotic" not in {e.name for e in model_lexicon(lexicon, plain).entries}
