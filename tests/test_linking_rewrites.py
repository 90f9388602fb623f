"""Learned word swaps, note consistency of ambiguous training strings, and the tie-break among CUIs of one name."""

from __future__ import annotations

import pytest

import share_ner.linking.normalizer as normalizer_mod
from share_ner.document import Document, Mention
from share_ner.lexicons import Lexicon, LexiconEntry
from share_ner.lexicons.rewrites import learn_rewrites
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer


@pytest.fixture(autouse=True)
def no_clinical_abbreviations(monkeypatch):
    monkeypatch.setattr(normalizer_mod, "_clinical_abbreviations", lambda: {})


def corpus(labelled: list[tuple[str, str]]) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """One note per (string, label), the whole note being the mention."""
    docs = {f"t{i}": Document(f"t{i}", s) for i, (s, _) in enumerate(labelled)}
    gold = {f"t{i}": [Mention(f"t{i}", ((0, len(s)),), c)] for i, (s, c) in enumerate(labelled)}
    return docs, gold


def spans(doc: Document, *phrases: str) -> list[Mention]:
    return [Mention(doc.id, ((doc.text.index(p), doc.text.index(p) + len(p)),)) for p in phrases]


def test_learn_rewrites_counts_concepts_not_pairs():
    rewrites = learn_rewrites([
        ("C1", "dysfunction kidney"), ("C1", "impairment kidney"), ("C1", "impairment kidney"),
        ("C2", "dysfunction heart"), ("C2", "heart impairment"),
        ("C3", "failure liver"), ("C3", "acute failure liver"),  # a word more, not a swap
        ("C4", "a b"), ("C4", "c d"),  # two words differ: nothing
        ("CUI-less", "failure kidney"), ("CUI-less", "kidney pain"),  # CUI-less strings are no concept's names
    ])
    assert rewrites.swap == {"dysfunction": {"impairment": 2}, "impairment": {"dysfunction": 2}}


def test_rewrite_step_swaps_a_word_learned_from_other_concepts():
    docs, gold = corpus([("renal dysfunction", "D1"), ("renal impairment", "D1"),
                         ("cardiac dysfunction", "D2"), ("cardiac impairment", "D2"), ("hepatic dysfunction", "D3")])
    doc = Document("d", "hepatic impairment")
    norm = Normalizer.fit(None, docs, gold)
    d = norm.decide(doc, spans(doc, "hepatic impairment"))[0]
    assert (d.cui, d.method) == ("D3", "rewrite")
    # seen in one concept only: below a minimum of two, the swap is not learned
    strict = Normalizer.fit(None, *corpus([("renal dysfunction", "D1"), ("renal impairment", "D1"),
                                           ("hepatic dysfunction", "D3")]), NormalizerConfig(rewrite_min_count=2))
    assert strict.decide(doc, spans(doc, "hepatic impairment"))[0].method == "tfidf"
    off = Normalizer.fit(None, docs, gold, NormalizerConfig(use_rewrites=False))
    assert off.decide(doc, spans(doc, "hepatic impairment"))[0].method == "tfidf"


def test_ambiguous_training_string_takes_the_label_its_note_uses():
    # "hbc" was annotated A twice and B once; "ovarian tumour" is always B.
    docs, gold = corpus([("hbc", "A"), ("hbc", "A"), ("hbc", "B"), ("ovarian tumour", "B")])
    norm = Normalizer.fit(None, docs, gold)
    with_b = Document("d1", "hbc and ovarian tumour")
    assert [m.cui for m in norm.normalize(with_b, spans(with_b, "hbc", "ovarian tumour"))] == ["B", "B"]
    alone = Document("d2", "hbc only")
    assert norm.normalize(alone, spans(alone, "hbc"))[0].cui == "A"
    off = Normalizer.fit(None, docs, gold, NormalizerConfig(note_consistency=False))
    assert [m.cui for m in off.normalize(with_b, spans(with_b, "hbc", "ovarian tumour"))] == ["A", "B"]


def test_cuis_tied_on_a_name_go_by_lexicon_order():
    # One HPO-like term citing two CUIs; the first is also cited by another term. Lexicon order decides.
    lex = Lexicon.from_entries([LexiconEntry("C0006826", "Neoplasm", "HPO", (), True),
                                LexiconEntry("C0027651", "Neoplasm", "HPO", (), True),
                                LexiconEntry("C0006826", "Malignant neoplasm", "HPO", (), True)], "tie")
    doc = Document("d", "Neoplasms were seen.")
    assert Normalizer(lex).normalize(doc, spans(doc, "Neoplasms"))[0].cui == "C0006826"


def test_coordination_parts_share_leading_words():
    docs, gold = corpus([("ventricular tachycardia", "D1"), ("ventricular fibrillation", "D2")])
    norm = Normalizer.fit(None, docs, gold)
    doc = Document("d", "ventricular tachycardia and fibrillation")
    d = norm.decide(doc, spans(doc, "ventricular tachycardia and fibrillation"))[0]
    assert (d.cui, d.method) == ("D1+D2", "partial")


def test_learn_rewrites_words_against_words():
    rewrites = learn_rewrites([
        ("C1", "disease sacrum"), ("C1", "abnormal morphology sacrum"),
        ("C2", "disease tragus"), ("C2", "abnormal morphology tragus"),
        ("C3", "a b"), ("C3", "c d e"),  # two words against three
        ("C4", "x"), ("C4", "x y"),  # a word more: nothing (no word against it)
        ("C5", "bone finger outermost"), ("C5", "distal finger phalanx"),  # two against two
        ("C6", "p"), ("C6", "q"),  # one against one: a word swap
    ])
    assert rewrites.phrase == {"disease": {"abnormal morphology": 2}, "abnormal morphology": {"disease": 2},
                               "a b": {"c d e": 1}, "c d e": {"a b": 1},
                               "bone outermost": {"distal phalanx": 1}, "distal phalanx": {"bone outermost": 1}}
    assert rewrites.swap == {"p": {"q": 1}, "q": {"p": 1}}


def test_rewrite_step_swaps_one_word_for_two_and_back():
    lex = Lexicon.from_entries([LexiconEntry("C1", "Abnormality of the sacrum", "HPO", (), True),
                                LexiconEntry("C1", "Abnormal sacrum morphology", "HPO", (), False),
                                LexiconEntry("C3", "Abnormal placenta morphology", "HPO", (), True),
                                LexiconEntry("C4", "Abnormality of the nephron", "HPO", (), True),
                                LexiconEntry("C5", "Short outermost bone of toe", "HPO", (), True),
                                LexiconEntry("C5", "Short distal phalanx of toe", "HPO", (), False),
                                LexiconEntry("C6", "Broad distal phalanx of thumb", "HPO", (), True)], "phrases")
    doc = Document("d", "Abnormality of the placenta; abnormal nephron morphology; broad outermost bone of thumb")
    ms = spans(doc, "Abnormality of the placenta", "abnormal nephron morphology", "broad outermost bone of thumb")
    got = [(d.cui, d.method) for d in Normalizer(lex).decide(doc, ms)]
    assert got == [("C3", "rewrite"), ("C4", "rewrite"), ("C6", "rewrite")]
    off = Normalizer(lex, config=NormalizerConfig(phrase_rewrites=False)).decide(doc, ms)
    assert all(d.method != "rewrite" for d in off)


def test_phrase_swaps_seen_equally_often_are_tried_in_one_order_whatever_the_table_order():
    # "outermost bone" can become "distal phalanx" (→ C6) or "terminal phalanx" (→ C7), each seen in one
    # concept: the tie goes to the variant first in sorted order, not to the table's (hash-seeded) order.
    lex = Lexicon.from_entries([LexiconEntry("C5", "outermost bone of toe", "HPO", (), True),
                                LexiconEntry("C5", "distal phalanx of toe", "HPO", (), False),
                                LexiconEntry("C8", "outermost bone of finger", "HPO", (), True),
                                LexiconEntry("C8", "terminal phalanx of finger", "HPO", (), False),
                                LexiconEntry("C6", "broad distal phalanx of thumb", "HPO", (), True),
                                LexiconEntry("C7", "broad terminal phalanx of thumb", "HPO", (), True)], "ties")
    doc = Document("d", "broad outermost bone of thumb")
    norm = Normalizer(lex)
    first = norm.decide(doc, spans(doc, "broad outermost bone of thumb"))[0]
    assert (first.cui, first.method) == ("C6", "rewrite")
    swaps, phrases = norm._rewrites
    norm._rewrites = swaps, {w: {other: list(reversed(entries)) for other, entries in reversed(filed.items())}
                             for w, filed in phrases.items()}
    assert norm.decide(doc, spans(doc, "broad outermost bone of thumb"))[0].cui == "C6"


def test_phrase_swap_whose_words_repeat_needs_them_all():
    # "half half" ↔ "quarter": a mention with one "half" must not take the swap, one with two must
    lex = Lexicon.from_entries([LexiconEntry("C1", "half half cup", "X", (), True),
                                LexiconEntry("C1", "quarter cup", "X", (), False),
                                LexiconEntry("C2", "quarter spoon", "X", (), True),
                                LexiconEntry("C3", "quarter half spoon", "X", (), True)], "repeats")
    norm = Normalizer(lex, config=NormalizerConfig(use_tfidf=False, use_partial=False))
    doc = Document("d", "half half spoon; half spoon")
    got = [(d.cui, d.method) for d in norm.decide(doc, spans(doc, "half half spoon", "half spoon"))]
    assert got == [("C2", "rewrite"), ("CUI-less", "none")]
