"""The disease names of the HPO release's annotations (share_ner.default_model.diseases): registry titles written
as notes write them, and the names the default model's terms and labels take from them."""

from __future__ import annotations

import pytest

from share_ner.default_model.diseases import disease_names, registry_name
from share_ner.default_model.terms import disease_terms
from share_ner.errors import InputError
from share_ner.lexicons.variants import possessive_name

HEADS = frozenset({"calcinosis", "syndrome", "disease"})


def test_registry_titles_as_notes_write_them():
    assert registry_name("Dystonia 9") == "Dystonia"
    assert registry_name("Tumoral calcinosis, hyperphosphatemic, familial, 1", HEADS) == "Tumoral calcinosis"
    # an inverted title whose head is a body part, or ends with a preposition, names no disease by its head
    assert registry_name("Anus, imperforate", HEADS) is None
    assert registry_name("Phosphoglycerate mutase, muscle, deficiency of", HEADS) is None
    assert registry_name("Goiter, multinodular 1", HEADS) is None  # one word: HPO names it already
    assert registry_name("Hereditary Liability to Pressure Palsies (HNPP)") == "Hereditary Liability to Pressure Palsies"
    assert possessive_name("Castleman disease") == "Castleman's disease"
    assert possessive_name("macrophage activation syndrome") is None


def test_the_names_of_pyhpos_annotations():
    names = {t.name.lower() for t in disease_terms()}
    assert {"castleman disease", "castleman's disease", "macrophage activation syndrome", "tumoral calcinosis",
            "sturge-weber syndrome"} <= names
    assert not {"anus", "teeth", "renal", "cardiac", "magnesium"} & names
    assert all(len(n.split()) <= 5 for n in names)


def test_a_file_without_the_header_is_one_error(tmp_path):
    bad = tmp_path / "phenotype.hpoa"
    bad.write_text("#description: x\nid\tname\nOMIM:1\tFoo syndrome\n", encoding="utf-8")
    with pytest.raises(InputError, match="phenotype.hpoa:2: expected the header database_id"):
        disease_names(frozenset(), bad)
