"""Section titles: "ALLERGIES:" names what its section holds; it does not say the patient has an allergy.

A note's section headers (the ones :func:`share_ner.text.find_headers` finds: a line or clause start, up to seven
words, a colon) carry words a disorder tagger knows: "ALLERGIES", "COMPLICATIONS", "INFECTIOUS DISEASE". When the
title of such a header names a standard section of a clinical note (:data:`SECTION_TITLES`), a mention that is
exactly that title is no disorder mention, and :func:`drop_section_titles` takes it out. A problem written as a
header stays: "1. Hypertension: continue lisinopril" names a disorder of the patient, and "hypertension" names no
section.

The titles are the headings of clinical note templates (history and physical, discharge summary, operative and
procedure notes, problem-oriented and system-based plans), not a corpus's words; only a title a tagger could read
as a disorder matters, but the list holds the common headings so that it reads as what it is.
"""

from __future__ import annotations

from typing import Sequence

from share_ner.document import Mention
from share_ner.text import find_headers, normalize_section

SECTION_TITLES = frozenset((
    # allergies and reactions
    "allergies", "allergy", "allergies and adverse reactions", "allergies/adverse reactions", "adverse reactions",
    "drug allergies", "medication allergies", "known allergies", "allergies/sensitivities", "sensitivities",
    # diagnoses and problems
    "diagnosis", "diagnoses", "admission diagnosis", "admission diagnoses", "admitting diagnosis",
    "discharge diagnosis", "discharge diagnoses", "final diagnosis", "final diagnoses", "principal diagnosis",
    "primary diagnosis", "secondary diagnosis", "secondary diagnoses", "preoperative diagnosis",
    "postoperative diagnosis", "pre-operative diagnosis", "post-operative diagnosis", "pathologic diagnosis",
    "differential diagnosis", "problems", "problem list", "active problems", "medical problems",
    "impression", "assessment", "assessment and plan", "findings", "indications", "indication",
    # what happened
    "complications", "complication", "injuries", "symptoms", "presenting symptoms", "chief complaint",
    "complaint", "history", "history of present illness", "past medical history", "past surgical history",
    "family history", "social history", "hospital course", "clinical history", "interval history",
    # systems and specialties, as problem-oriented and system-based plans title them
    "cardiovascular", "cardiac", "pulmonary", "respiratory", "renal", "gastrointestinal", "hepatic",
    "neurologic", "neurological", "neurology", "psychiatric", "psychiatry", "endocrine", "hematologic",
    "hematology", "oncology", "hematology/oncology", "infectious disease", "infectious diseases", "id",
    "musculoskeletal", "skin", "dermatologic", "genitourinary", "fluids/electrolytes/nutrition", "fen",
    # the rest of a note
    "medications", "review of systems", "physical examination", "physical exam", "procedure", "procedures",
    "plan", "disposition", "condition on discharge", "discharge condition", "estimated blood loss",
    "specimens", "anesthesia", "drains",
))


def title_spans(text: str) -> set[tuple[int, int]]:
    """The (start, end) of each section header's title in ``text`` that is a :data:`SECTION_TITLES` entry (end
    before the colon and any space before it)."""
    if ":" not in text:
        return set()
    spans = set()
    for start, end, name in find_headers(text):
        if name in SECTION_TITLES:
            title = text[start:end].rstrip().removesuffix(":").rstrip()
            spans.add((start, start + len(title)))
    return spans


def drop_section_titles(text: str, mentions: Sequence[Mention]) -> list[Mention]:
    """``mentions`` without those that are exactly the title of a standard section's header in ``text``.

    The note's headers are looked for only when a mention's words are a section title: most notes have none, and
    the tagger runs this on every note."""
    kept = list(mentions)
    if not any(len(m.spans) == 1 and normalize_section(text[m.start:m.end]) in SECTION_TITLES for m in kept):
        return kept
    titles = title_spans(text)
    return [m for m in kept if len(m.spans) != 1 or m.spans[0] not in titles]
