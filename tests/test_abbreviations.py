"""The clinical abbreviation list and in-note abbreviation definitions."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ABBREVIATION_EDGE_CASES, ABBREVIATION_TEXTS
from hypothesis import given, settings

import share_ner.features.abbreviations as abbreviations
from share_ner.errors import InputError
from share_ner.features.abbreviations import find_definitions
from share_ner.lexicons.abbreviations import ABBREVIATIONS_PATH, load_abbreviations, other_senses


def test_packaged_list_loads_with_common_disorders() -> None:
    abbreviations = load_abbreviations()
    assert len(abbreviations) >= 300
    assert abbreviations["CHF"] == ["congestive heart failure"]
    assert abbreviations["COPD"] == ["chronic obstructive pulmonary disease"]
    assert abbreviations["PE"] == ["pulmonary embolism", "physical examination"]
    for key in ("DVT", "MI", "CAD", "HTN", "DM", "SOB", "UTI", "AFib", "ESRD", "CKD", "GERD"):
        assert key in abbreviations, key


def test_packaged_file_has_the_header_and_three_columns() -> None:
    lines = [line for line in ABBREVIATIONS_PATH.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    assert lines[0] == "abbreviation\texpansion\tsense"
    assert all(line.count("\t") == 2 for line in lines)


def test_senses_that_are_no_disorder_are_data() -> None:
    other = other_senses()
    # a procedure, an examination, a state: the short form is no disorder in these senses
    assert {("CABG", "coronary artery bypass graft"), ("PE", "physical examination"), ("MS", "mental status")} <= other
    assert ("PE", "pulmonary embolism") not in other and ("CHF", "congestive heart failure") not in other


def test_sense_column_is_optional_and_checked(tmp_path: Path) -> None:
    p = tmp_path / "abbr.tsv"
    p.write_text("abbreviation\texpansion\tsense\nPE\tpulmonary embolism\t\nPE\tphysical exam\tother\n",
                 encoding="utf-8")
    assert load_abbreviations(p) == {"PE": ["pulmonary embolism", "physical exam"]}
    assert other_senses(p) == {("PE", "physical exam")}  # an empty sense is a disorder's
    p.write_text("abbreviation\texpansion\tsense\nPE\tphysical exam\tprocedure\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"abbr.tsv:2: sense 'procedure' is not one of disorder, other"):
        load_abbreviations(p)


def test_unknown_column_is_rejected_with_the_allowed_list(tmp_path: Path) -> None:
    p = tmp_path / "abbr.tsv"
    p.write_text("abbreviation\texpansion\tcui\nCHF\tcongestive heart failure\tC0018802\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_abbreviations(p)
    assert str(err.value) == f"{p}:1: unknown column(s) 'cui'; allowed: abbreviation, expansion, sense"


def test_missing_column_wrong_field_count_and_empty_field(tmp_path: Path) -> None:
    p = tmp_path / "abbr.tsv"
    p.write_text("abbreviation\nCHF\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"abbr.tsv:1: the header must name each of the columns"):
        load_abbreviations(p)
    p.write_text("# comment\nabbreviation\texpansion\nCHF\tcongestive heart failure\n\nHTN\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"abbr.tsv:5: expected 2 tab-separated fields, got 1"):
        load_abbreviations(p)
    p.write_text("abbreviation\texpansion\nCHF\t \n", encoding="utf-8")
    with pytest.raises(InputError, match=r"abbr.tsv:2: empty abbreviation or expansion"):
        load_abbreviations(p)


def test_columns_in_any_order_and_duplicates_kept_once(tmp_path: Path) -> None:
    p = tmp_path / "abbr.tsv"
    p.write_text(
        "expansion\tabbreviation\nmultiple sclerosis\tMS\nmitral stenosis\tMS\nmultiple sclerosis\tMS\n", encoding="utf-8"
    )
    assert load_abbreviations(p) == {"MS": ["multiple sclerosis", "mitral stenosis"]}


def test_unreadable_list_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read abbreviation list"):
        load_abbreviations(tmp_path / "missing.tsv")


def test_find_definitions_long_form_then_short_form() -> None:
    text = "Hx of chronic obstructive pulmonary disease (COPD) and CHF. COPD is stable."
    pairs = find_definitions(text)
    long_span = (text.index("chronic"), text.index(" (COPD"))
    assert pairs == [
        ((text.index("COPD"), text.index("COPD") + 4), long_span),
        ((text.rindex("COPD"), text.rindex("COPD") + 4), long_span),
    ]
    assert text[slice(*long_span)] == "chronic obstructive pulmonary disease"


def test_find_definitions_without_parentheses_or_definitions() -> None:
    assert find_definitions("No fever, no chills.") == []
    assert find_definitions("Blood pressure (120/80) normal.") == []


# --- the detector runs only where a definition is possible ---------------------------------------------------
# (the detector against scispaCy's, on these texts and on every corpus: tests/test_scispacy_oracle.py)


@settings(max_examples=400, deadline=None)
@given(ABBREVIATION_TEXTS)
def test_the_screening_steps_tell_exactly_which_texts_the_detector_finds_definitions_in(text):
    found = abbreviations._detect(text)  # the detector on the whole text
    assert abbreviations.defines_abbreviation(text) == bool(found)
    assert find_definitions(text) == found


@pytest.mark.parametrize("text", ABBREVIATION_EDGE_CASES)
def test_the_screening_steps_agree_with_the_detector_on_edge_cases(text: str) -> None:
    found = abbreviations._detect(text)
    assert abbreviations.defines_abbreviation(text) == bool(found)
    assert find_definitions(text) == found


def test_definitions_are_found_past_the_screening_steps() -> None:
    # The cases above must not all be empty: the screening would then pass by rejecting everything.
    assert abbreviations.defines_abbreviation("congestive heart failure (CHF)")
    assert abbreviations.defines_abbreviation("chronic kidney disease\n\n(CKD)")
    assert abbreviations.defines_abbreviation("CHF (the congestive heart failure here)")
    assert not abbreviations.defines_abbreviation("pain (see below)")
    assert not abbreviations.defines_abbreviation("POSTOPERATIVE DIAGNOSIS (ES): fracture")


def test_the_detector_does_not_run_where_no_definition_is_possible(monkeypatch) -> None:
    texts: list[str] = []
    real = abbreviations._detect
    monkeypatch.setattr(abbreviations, "_detect", lambda text: texts.append(text) or real(text))
    monkeypatch.setattr(abbreviations, "_RECENT", {})
    assert find_definitions("Blood pressure (120/80) normal, pain (see below).") == []
    assert texts == []
    text = "History of chronic kidney disease (CKD); CKD stable."
    assert len(find_definitions(text)) == 2 and texts == [text]


def test_a_text_over_spacy_length_limit_is_refused_as_spacy_refuses_it() -> None:
    text = "congestive heart failure (CHF) " + "x" * 1_000_000
    import spacy

    with pytest.raises(ValueError, match=r"\[E088\]"):
        spacy.blank("en")(text)
    with pytest.raises(ValueError, match=r"\[E088\]"):
        find_definitions(text)
    assert find_definitions("x" * 1_000_001) == []  # without brackets it is not tokenized
