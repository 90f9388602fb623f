"""The embedded HPO as a thesaurus: a mention named like an HPO term is also searched under the term's other names."""

from __future__ import annotations

import json

import pytest

import share_ner.linking.normalizer as normalizer_mod
from share_ner.document import Document, Mention
from share_ner.lexicons import Lexicon, LexiconEntry
from share_ner.lexicons.hpo import synonym_sets
from share_ner.lexicons.index import normalized_key
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer

SETS = {normalized_key("nephroblastoma"): [("Nephroblastoma", "Wilms tumor", "Wilms tumour")]}


@pytest.fixture(autouse=True)
def fixed_resources(monkeypatch):
    monkeypatch.setattr(normalizer_mod, "_clinical_abbreviations", lambda: {})
    monkeypatch.setattr(normalizer_mod, "hpo_synonym_sets", lambda: SETS)


def corpus(labelled: list[tuple[str, str]]) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    docs = {f"t{i}": Document(f"t{i}", s) for i, (s, _) in enumerate(labelled)}
    gold = {f"t{i}": [Mention(f"t{i}", ((0, len(s)),), c)] for i, (s, c) in enumerate(labelled)}
    return docs, gold


def whole(doc: Document) -> list[Mention]:
    return [Mention(doc.id, ((0, len(doc.text)),))]


TRAIN = [("Wilms tumor", "D009396"), ("neuroblastoma", "D009447"), ("renal cell carcinoma", "D002292")]


def test_a_mention_named_like_an_hpo_term_is_searched_by_its_other_names():
    norm = Normalizer(None, Normalizer.fit(None, *corpus(TRAIN)).gazetteer, threshold=0.5)
    doc = Document("d", "Nephroblastomas")
    d = norm.decide(doc, whole(doc), trace=True)[0]
    assert (d.cui, d.method, d.matched) == ("D009396", "tfidf", "wilms tumor")
    # the synonym's exact name scores 1.0 before the weight
    assert d.score == pytest.approx(NormalizerConfig().thesaurus_weight)
    assert d.candidates[0]["source"] == "train via 'wilms tumor'"
    # without the thesaurus the letters decide: "nephroblastomas" looks like "neuroblastoma"
    off = Normalizer(None, norm.gazetteer, NormalizerConfig(thesaurus=False), threshold=0.5)
    assert off.decide(doc, whole(doc))[0].cui == "D009447"


def test_a_direct_match_beats_the_same_match_through_a_synonym():
    # "nephroblastoma" is itself a training string of another id: the mention's own name wins
    norm = Normalizer.fit(None, *corpus(TRAIN + [("nephroblastoma", "OTHER")]))
    doc = Document("d", "nephroblastoma.")
    assert norm.decide(doc, whole(doc))[0].cui == "OTHER"


def test_no_thesaurus_over_a_lexicon_that_holds_hpo_names():
    lex = Lexicon.from_entries([LexiconEntry("C1", "Wilms tumor", "HPO", (), True),
                                LexiconEntry("C2", "Neuroblastoma", "HPO", (), True)], "hpo-like")
    doc = Document("d", "Nephroblastoma")
    assert Normalizer(lex).decide(doc, whole(doc))[0].cui == "C2"  # letters only
    other = Lexicon.from_entries([LexiconEntry("C1", "Wilms tumor", "SNOMEDCT_US", (), True),
                                  LexiconEntry("C2", "Neuroblastoma", "SNOMEDCT_US", (), True)], "snomed-like")
    assert Normalizer(other).decide(doc, whole(doc))[0].cui == "C1"


def test_normalizers_saved_before_the_thesaurus_and_negation_guard_load_without_them(tmp_path):
    norm = Normalizer.fit(None, *corpus(TRAIN))
    norm.save(tmp_path / "n")
    meta_path = tmp_path / "n" / "normalizer.json"
    meta = json.loads(meta_path.read_text())
    assert meta["config"]["thesaurus"] is True
    assert Normalizer.load(tmp_path / "n").config.thesaurus is True
    del meta["config"]["thesaurus"], meta["config"]["negation_guard"]
    meta_path.write_text(json.dumps(meta))
    old = Normalizer.load(tmp_path / "n").config
    assert old.thesaurus is False and old.negation_guard is False


def test_the_real_hpo_thesaurus_and_its_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path))
    sets = synonym_sets.__wrapped__()
    assert ("Nephroblastoma", "Wilms tumor", "Wilms tumour") in sets[normalized_key("Wilms tumour")]
    cached = list(tmp_path.glob("hpo-thesaurus-*.pkl"))
    assert len(cached) == 1
    assert synonym_sets.__wrapped__() == sets  # read back from the cache file


def test_tfidf_passes_over_a_candidate_that_adds_a_negation():
    train = [("non-insulin dependent diabetes mellitus", "D003924"), ("juvenile diabetes", "D003922")]
    gaz = Normalizer.fit(None, *corpus(train)).gazetteer
    doc = Document("d", "insulin dependent diabetes mellitus")
    d = Normalizer(None, gaz, NormalizerConfig(thesaurus=False), threshold=0.0).decide(doc, whole(doc))[0]
    assert (d.cui, d.matched) == ("D003922", "juvenile diabetes")
    off = Normalizer(None, gaz, NormalizerConfig(thesaurus=False, negation_guard=False), threshold=0.0)
    assert off.decide(doc, whole(doc))[0].cui == "D003924"
    # a negation the mention has too is no reason to pass over
    neg = Document("n", "non insulin-dependent diabetes")
    assert Normalizer(None, gaz, NormalizerConfig(thesaurus=False), threshold=0.0).decide(neg, whole(neg))[0].cui \
        == "D003924"
