"""The one check that a mention lies within its note, and the callers that raise it."""

from __future__ import annotations

import pytest

from share_ner.document import Document, Mention, span_past_end
from share_ner.errors import InputError
from share_ner.lexicons.gazetteer import gazetteer_counts


def test_span_past_end_names_the_last_span_and_the_note_length():
    doc = Document("n", "Chest pain.")
    assert span_past_end(doc, Mention("n", ((0, 11),))) is None  # ends exactly at the end
    assert span_past_end(doc, Mention("n", ((0, 5), (6, 12)))) == (
        "span 6-12 of note n ends past the note's end (11 characters)")


def test_gazetteer_counts_rejects_a_mention_past_the_note():
    docs = {"n": Document("n", "fever")}
    assert gazetteer_counts(docs, {"n": [Mention("n", ((0, 5),), "C1")]}) == {("fever", "C1"): 1}
    with pytest.raises(InputError, match=r"span 0-9 of note n ends past the note's end \(5 characters\)"):
        gazetteer_counts(docs, {"n": [Mention("n", ((0, 9),), "C1")]})
