"""Word coverage in the tf-idf score, and normalizers saved before it existed."""

from __future__ import annotations

import json

import pytest

from share_ner.document import Document, Mention
from share_ner.lexicons import Lexicon, LexiconEntry
from share_ner.linking.candidates import word_coverage
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer


def test_word_coverage_hand_counted():
    assert word_coverage("spotty increased pigmentation", "spotty decreased pigmentation") == pytest.approx(2 / 3)
    # stop words are not counted; words agree on their first six letters (abnormality / abnormal)
    assert word_coverage("abnormality of the ethmoid bone", "abnormal ethmoid bone morphology") == 1.0
    assert word_coverage("abnormality of the ethmoid bone", "abnormality of ethmoid sinus") == pytest.approx(2 / 3)
    assert word_coverage("hemiplegia", "hemiparesis") == 0.0
    assert word_coverage("of the", "anything") == 0.0


def test_coverage_prefers_the_name_that_keeps_every_query_word():
    lex = Lexicon.from_entries([LexiconEntry("C1", "Abnormality of ethmoid sinus", "HPO", (), True),
                                LexiconEntry("C2", "Abnormal ethmoid bone morphology", "HPO", (), True)], "two")
    text = "Abnormality of ethmoid bone"
    doc = Document("d", text)
    m = Mention("d", ((0, len(text)),))
    (without,) = Normalizer(lex, None, NormalizerConfig(coverage_weight=0.0)).decide(doc, [m])
    # (a two-name lexicon gives "bone" a high idf, hence a wide cosine gap: a high weight closes it)
    (with_,) = Normalizer(lex, None, NormalizerConfig(coverage_weight=0.5)).decide(doc, [m])
    assert without.method == with_.method == "tfidf"
    assert (without.cui, with_.cui) == ("C1", "C2")


def test_normalizer_saved_without_coverage_loads_without_it(tmp_path):
    lex = Lexicon.from_entries([LexiconEntry("C1", "Headache", "X", (), True)], "one")
    Normalizer(lex, None, NormalizerConfig(coverage_weight=0.3)).save(tmp_path)
    assert Normalizer.load(tmp_path).config.coverage_weight == 0.3
    meta_path = tmp_path / "normalizer.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    del meta["config"]["coverage_weight"]  # as written by share-ner before the setting existed
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    assert Normalizer.load(tmp_path).config.coverage_weight == 0.0


def test_tfidf_gives_a_composite_id_only_to_a_coordination():
    from share_ner.lexicons.gazetteer import gazetteer_lexicon

    train = Document("t", "optic and peripheral neuropathy; neuropathy")
    gold = {"t": [Mention("t", ((0, 31),), "D1+D2"), Mention("t", ((33, 43),), "D2")]}
    gaz = gazetteer_lexicon({"t": train}, gold)
    text = "retinal peripheral neuropathies; retinal or peripheral neuropathies"
    doc = Document("d", text)
    ms = [Mention("d", ((0, 31),)), Mention("d", ((33, len(text)),))]
    on = Normalizer(None, gaz, NormalizerConfig(use_threshold=False)).decide(doc, ms)
    off = Normalizer(None, gaz, NormalizerConfig(use_threshold=False, composite_needs_coordination=False)).decide(
        doc, ms)
    assert [d.method for d in on] == [d.method for d in off] == ["tfidf", "tfidf"]
    assert off[0].cui == "D1+D2" and on[0].cui == "D2"  # no "and"/"or"/comma: one concept
    assert on[1].cui == off[1].cui == "D1+D2"  # a coordination may take the composite id
