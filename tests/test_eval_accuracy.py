"""Task 1b accuracy on gold spans, counted by hand."""

from __future__ import annotations

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.eval.accuracy import accuracy


class Fixed:
    """Gives every mention the CUI its first span's start maps to."""

    def __init__(self, cuis: dict[int, str]):
        self.cuis = cuis

    def normalize(self, doc, mentions):
        return [Mention(m.doc_id, m.spans, self.cuis[m.spans[0][0]]) for m in mentions]


def test_accuracy_counts_gold_mentions_given_the_gold_cui():
    docs = {"a": Document("a", "x" * 40), "b": Document("b", "y" * 40)}
    gold = {"a": [Mention("a", ((0, 3),), "C1"), Mention("a", ((10, 13),), CUI_LESS)],
            "b": [Mention("b", ((20, 23),), "C2")]}
    # right, right (CUI-less is a label like any other), wrong
    assert accuracy(Fixed({0: "C1", 10: CUI_LESS, 20: "C3"}), docs, gold) == (2, 3)
    assert accuracy(Fixed({0: "C9", 10: "C1", 20: "C2"}), docs, gold) == (1, 3)
    assert accuracy(Fixed({}), docs, {}) == (0, 0)
