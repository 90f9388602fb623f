"""Task 1b accuracy on gold spans: link each gold mention and count those given the gold CUI.

This is the shared task's normalization accuracy when the spans are the gold ones (strict and relaxed accuracy
coincide); ``share-ner normalize`` on gold spans followed by ``share-ner evaluate`` gives the same count.
"""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence

from share_ner.document import Document, Mention


class Linker(Protocol):
    """Anything that gives mentions CUIs, note by note (a :class:`share_ner.linking.normalizer.Normalizer`)."""

    def normalize(self, doc: Document, mentions: Sequence[Mention]) -> list[Mention]: ...


def accuracy(linker: Linker, docs: Mapping[str, Document], gold: Mapping[str, list[Mention]]) -> tuple[int, int]:
    """(gold mentions given their gold CUI, gold mentions): each note's gold mentions linked by ``linker``."""
    correct = total = 0
    for doc_id, ms in gold.items():
        for m, p in zip(ms, linker.normalize(docs[doc_id], ms)):
            total += 1
            correct += p.cui == m.cui
    return correct, total
