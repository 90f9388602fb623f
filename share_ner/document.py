"""The document model every stage shares.

A :class:`Document` is a note id and its text exactly as stored (``\\r`` kept).
A :class:`Mention` is frozen: doc id, sorted half-open character spans, a CUI
(or ``CUI-less``) and the type ``Disease_Disorder``. Discontiguous mentions
have several spans, in text order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

CUI_LESS = "CUI-less"
DISORDER = "Disease_Disorder"

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Document:
    """A note: its id (file name without ``.txt``) and its text as stored."""

    id: str
    text: str


@dataclass(frozen=True, slots=True, order=True)
class Mention:
    """A disorder mention: ``spans`` are sorted, non-overlapping ``(start, end)`` pairs, end exclusive."""

    doc_id: str
    spans: tuple[Span, ...]
    cui: str = CUI_LESS
    type: str = DISORDER

    def __post_init__(self) -> None:
        spans = tuple(sorted((int(s), int(e)) for s, e in self.spans))
        if not spans:
            raise ValueError("a mention needs at least one span")
        for s, e in spans:
            if s < 0 or s >= e:
                raise ValueError(f"span ({s}, {e}) must satisfy 0 <= start < end")
        for (_, e1), (s2, _) in zip(spans, spans[1:]):
            if s2 < e1:
                raise ValueError(f"spans of one mention overlap: {spans}")
        object.__setattr__(self, "spans", spans)

    @property
    def start(self) -> int:
        return self.spans[0][0]

    @property
    def end(self) -> int:
        return self.spans[-1][1]

    @property
    def is_discontiguous(self) -> bool:
        return len(self.spans) > 1

    def text(self, doc_text: str, joiner: str = " ") -> str:
        """The mention's words: its spans' text joined by ``joiner``."""
        return joiner.join(doc_text[s:e] for s, e in self.spans)

    def with_cui(self, cui: str) -> "Mention":
        # The spans were checked when this mention was made: copy the fields without checking them again
        # (a normalizer gives every mention of a run its CUI this way).
        new = object.__new__(Mention)
        for name, value in (("doc_id", self.doc_id), ("spans", self.spans), ("cui", cui), ("type", self.type)):
            object.__setattr__(new, name, value)
        return new

    def overlaps(self, other: "Mention") -> bool:
        """True when the two mentions share at least one character."""
        return any(s1 < e2 and s2 < e1 for s1, e1 in self.spans for s2, e2 in other.spans)


@dataclass(frozen=True, slots=True)
class Token:
    """A token with its half-open character offsets into the document text."""

    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Sentence:
    """A run of tokens of one document; ``section`` is the normalized header it falls under ("" if none)."""

    doc_id: str
    tokens: tuple[Token, ...]
    section: str = ""

    @property
    def start(self) -> int:
        return self.tokens[0].start if self.tokens else 0

    @property
    def end(self) -> int:
        return self.tokens[-1].end if self.tokens else 0


def mentions_by_doc(mentions: Iterable[Mention]) -> dict[str, list[Mention]]:
    """Group mentions by document id, keeping their order."""
    out: dict[str, list[Mention]] = {}
    for m in mentions:
        out.setdefault(m.doc_id, []).append(m)
    return out
