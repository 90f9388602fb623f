"""The packaged ConText cues, one class at a time (ShARe/CLEF 2014 negation and uncertainty; ConText's pre- and
post-condition triggers, pseudo-triggers and terminators), on sentences written for these tests: each case names the
mentions, the value each must get and the words of its cue, counted by hand."""

from __future__ import annotations

import pytest
from helpers import mention_of as mention

from share_ner.attributes import ContextMatcher
from share_ner.document import Document
from share_ner.features import TermMatcher

_MATCHER = ContextMatcher()


def check(text: str, attribute: str, expected: dict[str, str | None], matcher: ContextMatcher = _MATCHER) -> None:
    """``expected``: mention text -> the words of the cue that must set ``attribute``, or None (default value)."""
    mentions = [mention(text, m) for m in expected]
    got = matcher.attributes(Document("d", text), mentions)
    for (name, cue), a in zip(expected.items(), got):
        spans = a.cues.get(attribute)
        words = " ".join(text[s:e] for s, e in spans) if spans else None
        assert words == cue, f"{name!r} in {text!r}: {attribute} cue {words!r}, expected {cue!r}"
        default = attribute in ("negation", "uncertainty") and getattr(a, attribute) == "no"
        assert default == (cue is None)


# ---------------------------------------------------------------- negation before the mention (NegEx pre-negation)

@pytest.mark.parametrize("text,expected", [
    ("No fever, chills, or night sweats.", {"fever": "No", "chills": "No", "night sweats": "No"}),
    ("She denied chest pain or palpitations.", {"chest pain": "denied", "palpitations": "denied"}),
    ("Ultrasound without evidence of DVT.", {"DVT": "without"}),
    ("Negative for pneumonia.", {"pneumonia": "Negative for"}),
    ("Ruled him out for myocardial infarction.", {"myocardial infarction": "Ruled him out for"}),
])
def test_negation_before_the_mention(text, expected):
    check(text, "negation", expected)


# ---------------------------------------------------------------- negation after the mention (post-negation)

@pytest.mark.parametrize("text,expected", [
    ("Pneumothorax was ruled out.", {"Pneumothorax": "was ruled out"}),
    ("A fracture is not seen.", {"fracture": "not seen"}),
    ("Pedal pulses present, edema absent.", {"edema": "absent"}),
    ("Cultures for tuberculosis were negative.", {"tuberculosis": "were negative"}),
])
def test_negation_after_the_mention(text, expected):
    check(text, "negation", expected)


# ---------------------------------------------------------------- uncertainty before the mention

@pytest.mark.parametrize("text,expected", [
    ("She had suspected sarcoidosis.", {"sarcoidosis": "suspected"}),
    ("Findings suggestive of pneumonia.", {"pneumonia": "suggestive of"}),
    ("CT findings consistent with appendicitis.", {"appendicitis": "consistent with"}),
    ("A fat density lesion compatible with lipoma.", {"lipoma": "compatible with"}),
    ("The mass is concerning for malignancy.", {"malignancy": "concerning for"}),
    ("She was admitted to rule out myocardial infarction.", {"myocardial infarction": "rule out"}),
    ("Probable viral meningitis.", {"viral meningitis": "Probable"}),
    ("Likely pulmonary embolism.", {"pulmonary embolism": "Likely"}),
    ("The differential diagnosis included lymphoma and tuberculosis.",
     {"lymphoma": "differential diagnosis included", "tuberculosis": "differential diagnosis included"}),
    ("Biopsy to exclude amyloidosis.", {"amyloidosis": "to exclude"}),
    ("It appeared to be the start of impetigo.", {"impetigo": "appeared to be"}),
])
def test_uncertainty_before_the_mention(text, expected):
    check(text, "uncertainty", expected)


# ---------------------------------------------------------------- uncertainty after the mention

@pytest.mark.parametrize("text,expected", [
    ("Malignancy could not be excluded.", {"Malignancy": "could not be excluded"}),
    ("A pelvic abscess cannot be excluded.", {"pelvic abscess": "cannot be excluded"}),
    ("Sepsis was suspected.", {"Sepsis": "was suspected"}),
    ("Tuberculosis was considered.", {"Tuberculosis": "was considered"}),
    ("Lymphoma is likely.", {"Lymphoma": "is likely"}),
    # a copula and a hedge reach forward too
    ("It is likely that he had a stroke.", {"stroke": "is likely"}),
])
def test_uncertainty_after_the_mention(text, expected):
    check(text, "uncertainty", expected)


# ---------------------------------------------------------------- pseudo-triggers: contain a cue and are none

@pytest.mark.parametrize("text,attribute,expected", [
    ("No increase in pain since yesterday.", "negation", {"pain": None}),
    ("Not only fever but also cough.", "negation", {"fever": None, "cough": None}),
    ("She is not feeling well, with fatigue and nausea.", "negation", {"fatigue": None, "nausea": None}),
    ("No further workup for anemia is needed.", "negation", {"anemia": None}),
    ("No contraindications to surgery for the hernia.", "negation", {"hernia": None}),
    ("There is no doubt that this is pneumonia.", "negation", {"pneumonia": None}),
    ("Gram negative rods grew, consistent with sepsis.", "negation", {"sepsis": None}),
    ("Surgery as soon as possible for appendicitis.", "uncertainty", {"appendicitis": None}),
    ("It may be helpful to treat the anxiety.", "uncertainty", {"anxiety": None}),
    ("Neoplasm cannot be ruled out.", "negation", {"Neoplasm": None}),
])
def test_pseudo_triggers_set_nothing(text, attribute, expected):
    check(text, attribute, expected)


def test_a_pseudo_trigger_leaves_the_real_cue_after_it():
    # "cannot be ruled out" is no negation but is an uncertainty cue; "no further" alone still negates
    check("Neoplasm cannot be ruled out.", "uncertainty", {"Neoplasm": "cannot be ruled out"})
    check("No further episodes of syncope.", "negation", {"syncope": "No further"})


# ---------------------------------------------------------------- terminators: where a scope ends

@pytest.mark.parametrize("text,expected", [
    # the clause boundaries of narrative prose
    ("No fever was noted and a CT showed appendicitis.", {"fever": "No", "appendicitis": None}),
    ("She denied pain, was admitted with pneumonia.", {"pain": "denied", "pneumonia": None}),
    ("There was no sign of pneumothorax, and right pleural effusion was present.",
     {"pneumothorax": "no sign of", "pleural effusion": None}),
    ("He does not smoke and has hypertension.", {"hypertension": None}),
    ("No chest pain but reports dyspnea.", {"chest pain": "No", "dyspnea": None}),
    ("No rash; wheezing on exam.", {"rash": "No", "wheezing": None}),
    ("No rash, however, pruritus is present.", {"rash": "No", "pruritus": None}),
    ("No fever although she had chills.", {"fever": "No", "chills": None}),
    ("She could not walk because of arthritis.", {"arthritis": None}),
    ("Denies nausea, therefore dehydration is unlikely.", {"nausea": "Denies", "dehydration": "unlikely"}),
    # ", and" closing a list of three is no boundary: the comma before it says so
    ("No fever, chills, and night sweats.", {"fever": "No", "chills": "No", "night sweats": "No"}),
    # a line break flattened into ".," ends a sentence
    ("No fever.,Cough for three days.", {"fever": "No", "Cough": None}),
])
def test_terminators_end_negation(text, expected):
    check(text, "negation", expected)


@pytest.mark.parametrize("text,expected", [
    ("He most likely has a hypercoagulable state and has pulmonary emboli.",
     {"hypercoagulable state": "likely", "pulmonary emboli": None}),
    ("Possible pneumonia, no effusion.", {"pneumonia": "Possible", "effusion": None}),
    ("Possible sleep apnea, and osteoarthritis of the knees.", {"sleep apnea": "Possible", "osteoarthritis": None}),
    ("MRI showed a hemangioma versus degenerative changes at the C7 vertebral body and a disc protrusion.",
     {"hemangioma": "versus", "degenerative changes": "versus", "disc protrusion": None}),
])
def test_terminators_end_uncertainty(text, expected):
    check(text, "uncertainty", expected)


def test_clause_verbs_end_negation_and_uncertainty_not_a_condition():
    text = "If the EKG shows atrial fibrillation, call the cardiologist."
    (a,) = _MATCHER.attributes(Document("d", text), [mention(text, "atrial fibrillation")])
    assert a.conditional == "true" and text[slice(*a.cues["conditional"][0])] == "If"
    # being admitted ends DocTime "before" as well
    text = "He has a history of schizophrenia, was admitted for psychosis."
    schizophrenia, psychosis = _MATCHER.attributes(Document("d", text), [mention(text, "schizophrenia"),
                                                                          mention(text, "psychosis")])
    assert (schizophrenia.doctime, psychosis.doctime) == ("before", "unknown")


def test_negation_and_uncertainty_the_nearer_cue_decides():
    text = "No pneumonia, possible atelectasis."
    check(text, "negation", {"pneumonia": "No", "atelectasis": None})
    check(text, "uncertainty", {"pneumonia": None, "atelectasis": "possible"})
    # a cue tying a finding to a diagnosis keeps the negation: no ST depression means no sign of ischemia
    text = "No ST depression suggestive of ischemia."
    check(text, "negation", {"ST depression": "No", "ischemia": "No"})


# ---------------------------------------------------------------- "non-X" that is a name

_NAMES = TermMatcher.from_terms([("Non-Hodgkin lymphoma", "lexicon"), ("Hodgkin lymphoma", "lexicon"),
                                 ("non-small cell lung cancer", "lexicon"),
                                 ("non-ST elevation myocardial infarction", "lexicon"),
                                 ("denies cardiac disease", "train")])
_NAMED = _MATCHER.with_names(_NAMES)


@pytest.mark.parametrize("text,expected", [
    ("History of non-Hodgkin lymphoma with night sweats.", {"Hodgkin lymphoma": None, "night sweats": None}),
    ("Stage IV non-small cell lung cancer with brain metastases.",
     {"lung cancer": None, "brain metastases": None}),
    ("Admitted with non-ST elevation myocardial infarction and pneumonia.",
     {"myocardial infarction": None, "pneumonia": None}),
    # not a name: a "non-" of the lexicon's words only is still a negation
    ("Abdomen non-tender, no hepatomegaly.", {"tender": "non", "hepatomegaly": "no"}),
    # a training mention is no name: one may hold its own cue
    ("Patient denies cardiac disease and fever.", {"cardiac disease": "denies", "fever": "denies"}),
])
def test_a_non_x_that_is_a_lexicon_name_is_no_negation(text, expected):
    check(text, "negation", expected, _NAMED)


def test_without_names_a_non_x_is_a_negation():
    check("History of non-Hodgkin lymphoma with night sweats.", "negation", {"night sweats": "non"})
    assert _NAMED.names is _NAMES and _MATCHER.names is None  # with_names leaves the matcher it copies alone


# ---------------------------------------------------------------- the hand-annotated narrative sentences

def test_the_narrative_fixture_is_consistent():
    import csv
    from pathlib import Path

    root = Path(__file__).parent / "fixtures" / "narrative_attributes"
    for half, sentences, mentions in (("dev", 205, 363), ("check", 85, 137)):
        with open(root / half / "annotations.tsv", encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        texts = {p.stem: p.read_text(encoding="utf-8") for p in (root / half / "text").glob("*.txt")}
        assert (len(texts), len(rows)) == (sentences, mentions) and {r["doc"] for r in rows} == set(texts)
        for r in rows:  # every span is the mention it names, with values of the 2014 template
            assert texts[r["doc"]][int(r["start"]):int(r["end"])] == r["mention"]
            assert (r["negation"], r["uncertainty"], r["conditional"]) in {
                (n, u, c) for n in ("yes", "no") for u in ("yes", "no") for c in ("true", "false")}
