"""The HPO OBO parser, a name linked by the rest of the lexicon when it is left out, and the no-training-data
CUI-less threshold."""

from __future__ import annotations

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.lexicons import Lexicon, LexiconEntry
from share_ner.lexicons.hpo import HpoTerm, parse_obo, parse_terms
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer

OBO = """format-version: 1.2

[Term]
id: HP:1
name: Seizure
synonym: "Epilepsy" RELATED layperson []
synonym: "Seizures" EXACT plural_form []
synonym: "seizure" EXACT []
synonym: "Fits" BROAD []
xref: UMLS:C0014544
xref: UMLS:C0036572

[Term]
id: HP:2
name: Headache
synonym: "Cephalgia" EXACT []
synonym: "Epilepsy" RELATED []
xref: UMLS:C0018681

[Term]
id: HP:3
name: Fever
synonym: "Pyrexia" EXACT []
synonym: "High temperature" EXACT []
xref: UMLS:C0015967

[Term]
id: HP:4
name: Gone
synonym: "Went" EXACT []
is_obsolete: true
xref: UMLS:C9999999
"""



def test_parse_terms_keeps_ids_synonyms_and_xref_order():
    terms = list(parse_terms(OBO))
    assert [t.id for t in terms] == ["HP:1", "HP:2", "HP:3"]  # the obsolete term is left out
    # BROAD synonyms and a case-only duplicate of the name are dropped
    assert terms[0] == HpoTerm("HP:1", "Seizure", ("Epilepsy", "Seizures"), ("C0014544", "C0036572"))
    # the lexicon entries are the terms' names and synonyms, once per CUI
    assert len(list(parse_obo(OBO))) == 2 * 3 + 3 + 3


def test_held_out_name_is_linked_by_the_rest_of_the_lexicon():
    entries = list(parse_obo(OBO))
    norm = Normalizer(Lexicon.from_entries([e for e in entries if e.name != "Seizures"], "held out"), None)
    doc = Document("q", "Seizures")
    (d,) = norm.decide(doc, [Mention("q", ((0, 8),))])
    assert d.method == "normalized" and d.cui == "C0014544"  # the plural folds onto the name


def test_default_threshold_without_training_data():
    lex = Lexicon.from_entries([LexiconEntry("C1", "Pyrexia", "X", (), True)], "one")
    text = "pyrexial fevers"
    doc = Document("d", text)
    m = Mention("d", ((0, len(text)),))
    (d,) = Normalizer(lex, None, NormalizerConfig(use_threshold=False)).decide(doc, [m])
    assert d.method == "tfidf" and 0 < d.score < 1
    norm = Normalizer(lex, None, NormalizerConfig())
    assert norm.threshold_ == NormalizerConfig().default_threshold
    # a decision is kept exactly when its score reaches the default threshold
    assert norm.normalize(doc, [m])[0].cui == ("C1" if d.score >= norm.threshold_ else CUI_LESS)
    for t in (d.score - 1e-6, d.score + 1e-6):
        got = Normalizer(lex, None, NormalizerConfig(default_threshold=t)).normalize(doc, [m])[0].cui
        assert got == ("C1" if d.score >= t else CUI_LESS)


def test_parse_stanzas_keeps_every_term_as_written():
    from share_ner.lexicons.hpo import parse_stanzas

    stanzas = {s.id: s for s in parse_stanzas(OBO)}
    assert list(stanzas) == ["HP:1", "HP:2", "HP:3", "HP:4"]  # the obsolete term too, flagged
    assert stanzas["HP:4"].obsolete and not stanzas["HP:1"].obsolete
    assert stanzas["HP:1"].synonyms[-1] == ("Fits", "BROAD")  # every scope, for the caller to choose
    assert stanzas["HP:1"].cuis == ("C0014544", "C0036572")
