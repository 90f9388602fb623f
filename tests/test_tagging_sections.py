"""Section titles ("ALLERGIES:") are not disorder mentions; a problem written as a header is."""

from __future__ import annotations

import dataclasses

import pytest

from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.pipeline import Pipeline
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.sections import drop_section_titles, title_spans

NOTE = ("HISTORY OF PRESENT ILLNESS: Chest pain.\n\nALLERGIES: No known drug allergies.\n"
        "Complications :  none.\n\nASSESSMENT AND PLAN:\n1. Hypertension: continue lisinopril.\n"
        "INFECTIOUS DISEASE: afebrile.\nShe reports allergies: to cats.\n")


def _span(text: str, part: str, after: int = 0) -> tuple[int, int]:
    start = text.index(part, after)
    return (start, start + len(part))


def test_the_titles_of_standard_sections_are_found_without_their_colon():
    found = sorted(NOTE[s:e] for s, e in title_spans(NOTE))
    assert found == ["ALLERGIES", "ASSESSMENT AND PLAN", "Complications", "HISTORY OF PRESENT ILLNESS",
                     "INFECTIOUS DISEASE"]
    # a problem as a header names no section; "allergies:" inside a sentence heads nothing
    assert _span(NOTE, "Hypertension") not in title_spans(NOTE)
    assert _span(NOTE, "allergies", NOTE.index("reports")) not in title_spans(NOTE)
    assert title_spans("No colon here, ALLERGIES none") == set()


def test_a_mention_that_is_exactly_a_section_title_is_dropped():
    def mention(part: str, after: int = 0) -> Mention:
        return Mention("n1", (_span(NOTE, part, after),))

    header = mention("ALLERGIES")
    kept = [mention("Chest pain"), mention("drug allergies"), mention("Hypertension"),
            mention("allergies", NOTE.index("reports"))]
    longer = Mention("n1", ((header.start, NOTE.index("drug allergies") + 4),))  # the title and more
    split = Mention("n1", (_span(NOTE, "INFECTIOUS"), _span(NOTE, "afebrile")))  # a title part of a discontiguous one
    given = [header, mention("Complications"), mention("INFECTIOUS DISEASE"), *kept, longer, split]
    assert drop_section_titles(NOTE, given) == [*kept, longer, split]
    assert drop_section_titles(NOTE, []) == []


def test_the_tagger_drops_section_titles_unless_told_not_to(small_model, monkeypatch):
    tagger = Pipeline.load(small_model).tagger
    header = Mention("n1", (_span(NOTE, "ALLERGIES"),))
    problem = Mention("n1", (_span(NOTE, "Hypertension"),))
    monkeypatch.setattr(tagger, "_decode", lambda *args, **kwargs: [header, problem])
    assert tagger.config.section_titles
    assert tagger.tag(Document("n1", NOTE)) == [problem]
    monkeypatch.setattr(tagger, "config", dataclasses.replace(tagger.config, section_titles=False))
    assert tagger.tag(Document("n1", NOTE)) == [header, problem]


def test_the_setting_is_checked_and_read_from_a_settings_file():
    assert TaggerConfig.from_dict({"section_titles": False}).section_titles is False
    with pytest.raises(ShareNerError, match="'section_titles' must be true or false"):
        TaggerConfig.from_dict({"section_titles": "no"})
