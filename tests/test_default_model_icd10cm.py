"""The ICD-10-CM name list of the default model's templates."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.default_model.icd10cm import ICD10CM_PATH, names_of, read_icd10cm, short_name
from share_ner.default_model.synthetic import SynthConfig, generate_template_docs
from share_ner.default_model.terms import Term, icd_terms
from share_ner.document import CUI_LESS
from share_ner.errors import InputError


@pytest.mark.parametrize("title, name", [
    ("Mumps", "mumps"),
    ("Noninfective gastroenteritis and colitis, unspecified", None),  # "and": two disorders
    ("Gastroenteritis NOS", "gastroenteritis"),
    ("Streptococcal pharyngitis, unspecified", "streptococcal pharyngitis"),
    ("Essential (primary) hypertension", "essential hypertension"),
    ("Eczema NOS", "eczema"),
    ("Asperger's syndrome", "Asperger's syndrome"),
    ("Wolff-Parkinson-White syndrome", "Wolff-Parkinson-White syndrome"),
    ("HIV disease", "HIV disease"),
    ("Other specified urinary incontinence", None),              # a residual grouping
    ("Unspecified urinary incontinence", None),
    ("Cardiac, heart or myocardial failure NOS", None),         # a list of names
    ("Type 2 diabetes mellitus with hyperosmolarity", None),     # digits, a qualified title
    ("Lead-induced chronic gout", None),                         # named by the substance
    ("Toxic effect of ethanol", None),
    ("Malignant neoplasm of upper lobe of left bronchus", None),  # more than four words
])
def test_short_names_of_titles(title, name):
    assert short_name(title) == name


def test_names_keep_the_first_code_of_each_name():
    rows = names_of([("B26", ["Mumps"]), ("B26.9", ["Mumps without complication", "mumps"]),
                     ("I10", ["Essential (primary) hypertension", "Hypertension (arterial) (benign)"])])
    assert rows == [("essential hypertension", "I10"), ("hypertension", "I10"), ("mumps", "B26")]


def test_the_shipped_list_reads_and_names_common_disorders():
    rows = dict(read_icd10cm())
    assert len(rows) > 5000
    assert rows["mumps"] == "B26" and rows["gastroenteritis"] == "K52.9" and rows["scabies"] == "B86"
    assert all(short_name(name) == name for name in list(rows)[::50])  # what the generator writes


def test_a_bad_list_row_names_the_file_and_line(tmp_path: Path):
    bad = tmp_path / "icd.tsv"
    bad.write_text("term\ticd10cm\nmumps\tB26\nscabies\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_icd10cm(bad)
    assert str(err.value).startswith(f"{bad}:3:")
    bad.write_text("name\tcode\n", encoding="utf-8")
    with pytest.raises(InputError):
        read_icd10cm(bad)


def test_icd_terms_leave_out_known_names_and_carry_no_cui():
    terms = icd_terms([Term("Mumps", "C0026780")])
    names = {t.name for t in terms}
    assert "mumps" not in names and "scabies" in names
    assert {t.cui for t in terms} == {CUI_LESS}
    assert ICD10CM_PATH.is_file()


def test_icd_share_fills_hpo_slots_with_icd_names():
    project, hpo = [Term("chest pain", "C0008031")], [Term("short stature", "C0349588")]
    icd = {t.name for t in icd_terms([*project, *hpo])}

    def mentions(share: float) -> list[str]:
        config = SynthConfig(n_docs=40, seed=5, project_share=0.0, filler_share=0.0, icd_share=share)
        docs, gold = generate_template_docs(project, hpo, config)
        return [m.text(docs[d].text) for d in docs for m in gold[d] if not m.is_discontiguous]

    def icd_named(found: list[str]) -> int:  # the templates' own coordinations name a few ("heart failure")
        return sum(t in icd or t[:1].lower() + t[1:] in icd for t in found)

    none, half, every = mentions(0.0), mentions(0.5), mentions(1.0)
    assert icd_named(none) < 0.2 * len(none)
    assert icd_named(none) + 0.2 * len(half) < icd_named(half) < icd_named(every)
    assert "short stature" not in every


def test_with_icd_names_adds_the_names_the_lexicon_lacks():
    from share_ner.default_model.terms import with_icd_names
    from share_ner.lexicons.lexicon import Lexicon, LexiconEntry

    base = Lexicon.from_entries([LexiconEntry("C0026780", "Mumps", "hpo")], "hpo")
    grown = with_icd_names(base)
    names = {e.name: e for e in grown.entries}
    assert names["Mumps"].cui == "C0026780" and "mumps" not in names  # the lexicon's own entry is kept
    assert names["scabies"].cui == CUI_LESS and names["scabies"].source == "icd10cm"
    assert grown.name == "hpo+icd10cm" and grown.content_hash != base.content_hash


def test_with_hpo_names_adds_the_phenotype_names_the_lexicon_lacks():
    from share_ner.default_model.terms import hpo_terms, usable_hpo, with_hpo_names
    from share_ner.lexicons.lexicon import Lexicon, LexiconEntry

    phenotypes = usable_hpo(hpo_terms())
    with_cui = next(t for t in phenotypes if t.cui != CUI_LESS)
    base = Lexicon.from_entries([LexiconEntry(with_cui.cui, with_cui.name, "hpo")], "hpo")
    grown = with_hpo_names(base)
    added = grown.entries[1:]
    assert grown.entries[0] == base.entries[0] and grown.name == "hpo+phenotypes"
    assert with_cui.name.lower() not in {e.name.lower() for e in added}
    assert {e.cui for e in added} == {CUI_LESS}
    assert len(added) == len({t.name.lower() for t in phenotypes} - {with_cui.name.lower()})
