"""An ambiguous training string takes the label it carried in the most similar training note."""

from __future__ import annotations

import json

import numpy as np
import pytest

import share_ner.linking.normalizer as normalizer_mod
from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.context import NoteContexts, word_counts
from share_ner.linking.normalizer import Normalizer
from share_ner.model import NORMALIZER_FILES


@pytest.fixture(autouse=True)
def no_clinical_abbreviations(monkeypatch):
    monkeypatch.setattr(normalizer_mod, "_clinical_abbreviations", lambda: {})


def mention(doc: Document, phrase: str, cui: str = "") -> Mention:
    start = doc.text.index(phrase)
    return Mention(doc.id, ((start, start + len(phrase)),), cui)


ON = NormalizerConfig(note_context=True)  # off by default

# "psychosis" means DRUG in the two notes about drugs and PSY in the three about schizophrenia (so PSY is its
# most frequent label); the drug notes share "cocaine", "amphetamine"; the others "schizophrenia", "familial".
TRAIN = {
    "n1": ("Cocaine and amphetamine use led to psychosis within days.", "DRUG"),
    "n2": ("Psychosis after amphetamine and cocaine abuse resolved on withdrawal.", "DRUG"),
    "n3": ("Familial schizophrenia: psychosis in siblings, onset in adolescence.", "PSY"),
    "n4": ("A familial form of schizophrenia with early psychosis and siblings affected.", "PSY"),
    "n5": ("Schizophrenia and psychosis in a familial cohort of adolescence onset.", "PSY"),
}


def training() -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    docs = {i: Document(i, text) for i, (text, _) in TRAIN.items()}
    gold = {i: [mention(docs[i], "sychosis" if "Psychosis" in text else "psychosis", cui)]
            for i, (text, cui) in TRAIN.items()}
    # the whole word, whatever its case
    gold = {i: [Mention(i, ((ms[0].start - 1, ms[0].end),), ms[0].cui)] for i, ms in gold.items()}
    return docs, gold


def test_ambiguous_string_takes_the_label_of_the_nearest_training_note():
    docs, gold = training()
    norm = Normalizer.fit(None, docs, gold, ON)
    drug = Document("d1", "Psychosis followed heavy cocaine and amphetamine use.")
    fam = Document("d2", "Psychosis in two siblings with familial schizophrenia.")
    d_drug = norm.decide(drug, [mention(drug, "Psychosis")], trace=True)[0]
    assert (d_drug.cui, d_drug.method) == ("DRUG", "gazetteer")
    assert d_drug.context["DRUG"] > d_drug.context["PSY"] > 0
    assert norm.decide(fam, [mention(fam, "Psychosis")])[0].cui == "PSY"
    # a note like none of them keeps the most frequent label
    other = Document("d3", "Psychosis.")
    assert norm.decide(other, [mention(other, "Psychosis")])[0].cui == "PSY"
    off = Normalizer.fit(None, docs, gold)  # off by default (docs/normalizer.md says why)
    assert off.contexts_ is None
    assert off.decide(drug, [mention(drug, "Psychosis")])[0].cui == "PSY"
    assert norm.explain(drug, mention(drug, "Psychosis"))["note_context"]["DRUG"] == pytest.approx(
        d_drug.context["DRUG"], abs=1e-4)


def test_only_ambiguous_strings_and_their_notes_are_kept():
    docs, gold = training()
    docs["n6"] = Document("n6", "Migraine only.")
    gold["n6"] = [mention(docs["n6"], "Migraine", "MIG")]
    contexts = NoteContexts.fit(docs, gold)
    assert contexts is not None
    assert list(contexts.where) == ["psychosis"]
    assert contexts.vectors.shape[0] == 5  # n6 is not kept
    assert {label: len(rows) for label, rows in contexts.where["psychosis"].items()} == {"DRUG": 2, "PSY": 3}
    unambiguous = {i: gold[i] for i in ("n3", "n4", "n6")}
    assert NoteContexts.fit(docs, unambiguous) is None


def test_words_of_a_single_training_note_carry_no_weight():
    docs, gold = training()
    contexts = NoteContexts.fit(docs, gold)
    # "withdrawal" occurs in n2 only: a note made of it resembles no training note
    assert not contexts.similarities(word_counts("withdrawal withdrawal")).any()
    assert contexts.similarities(word_counts("cocaine")).max() > 0


def test_saved_and_loaded_with_the_normalizer(tmp_path):
    docs, gold = training()
    norm = Normalizer.fit(None, docs, gold, ON)
    norm.save(tmp_path / "norm")
    meta = json.loads((tmp_path / "norm" / "normalizer.json").read_text())
    assert meta["contexts"] == NORMALIZER_FILES.contexts
    again = Normalizer.load(tmp_path / "norm")
    drug = Document("d1", "Psychosis followed heavy cocaine and amphetamine use.")
    assert again.decide(drug, [mention(drug, "Psychosis")])[0].cui == "DRUG"
    assert np.allclose(again.contexts_.similarities(word_counts(drug.text)), norm.contexts_.similarities(word_counts(drug.text)))
    # the saved file holds hashed counts, not words
    assert b"cocaine" not in (tmp_path / "norm" / NORMALIZER_FILES.contexts).read_bytes()
    # a normalizer saved without contexts (older, or note_context off) loads without them
    meta["contexts"] = None
    (tmp_path / "norm" / "normalizer.json").write_text(json.dumps(meta))
    assert Normalizer.load(tmp_path / "norm").decide(drug, [mention(drug, "Psychosis")])[0].cui == "PSY"


def test_a_damaged_contexts_file_is_a_clear_error(tmp_path):
    docs, gold = training()
    Normalizer.fit(None, docs, gold, ON).save(tmp_path / "norm")
    (tmp_path / "norm" / NORMALIZER_FILES.contexts).write_bytes(b"not a zip")
    with pytest.raises(ShareNerError, match=NORMALIZER_FILES.contexts):
        Normalizer.load(tmp_path / "norm")
