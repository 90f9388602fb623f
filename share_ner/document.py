"""The document model every stage shares.

A :class:`Document` is a note id and its text exactly as stored (``\\r`` kept).
A :class:`Mention` is frozen: doc id, sorted half-open character spans, a CUI
(or ``CUI-less``) and the type ``Disease_Disorder``. Discontiguous mentions
have several spans, in text order. A mention may carry :class:`Attributes`
(negation, subject, DocTime ... as in ShARe/CLEF 2014 Task 2) and the
preferred name of its CUI's concept in the normalizer's lexicon; they take no
part in equality, ordering or hashing, so scoring Task 1 ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

CUI_LESS = "CUI-less"
DISORDER = "Disease_Disorder"

Span = tuple[int, int]

# ShARe/CLEF 2014 Task 2 attribute names and their allowed values, the default first.
ATTRIBUTE_VALUES: dict[str, tuple[str, ...]] = {
    "negation": ("no", "yes"),
    "uncertainty": ("no", "yes"),
    "subject": ("patient", "family_member", "donor_family_member", "donor_other", "other", "null"),
    "conditional": ("false", "true"),
    "generic": ("false", "true"),
    "course": ("unmarked", "changed", "increased", "decreased", "improved", "worsened", "resolved"),
    "severity": ("unmarked", "slight", "moderate", "severe"),
    "doctime": ("unknown", "before", "after", "overlap", "before_overlap"),
}
BODY_LOCATION_NULL = "NULL"
ATTRIBUTE_NAMES: tuple[str, ...] = (*ATTRIBUTE_VALUES, "body_location")


@dataclass(frozen=True, slots=True)
class Attributes:
    """A disorder mention's ShARe/CLEF 2014 attributes.

    Each value is one of :data:`ATTRIBUTE_VALUES` (the first is the default); ``body_location`` is a CUI, ``CUI-less``
    or ``NULL`` (none). ``cues`` maps an attribute whose value is not the default to the character spans of the cue
    that set it (for ``body_location``: the location's own spans).
    """

    negation: str = "no"
    uncertainty: str = "no"
    subject: str = "patient"
    conditional: str = "false"
    generic: str = "false"
    course: str = "unmarked"
    severity: str = "unmarked"
    doctime: str = "unknown"
    body_location: str = BODY_LOCATION_NULL
    cues: Mapping[str, tuple[Span, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, allowed in ATTRIBUTE_VALUES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{name} value {value!r} is not one of {', '.join(allowed)}")
        for name in self.cues:
            if name not in ATTRIBUTE_NAMES:
                raise ValueError(f"cue for unknown attribute {name!r} (known: {', '.join(ATTRIBUTE_NAMES)})")

    def non_default(self) -> dict[str, str]:
        """The attributes whose value is not the default, in :data:`ATTRIBUTE_NAMES` order."""
        out = {n: getattr(self, n) for n, allowed in ATTRIBUTE_VALUES.items() if getattr(self, n) != allowed[0]}
        if self.body_location != BODY_LOCATION_NULL:
            out["body_location"] = self.body_location
        return out

    def values(self) -> dict[str, str]:
        """Every attribute's value, in :data:`ATTRIBUTE_NAMES` order (no cues)."""
        return {n: getattr(self, n) for n in ATTRIBUTE_NAMES}

    def cue_lists(self) -> dict[str, list[list[int]]]:
        """The cues, JSON-ready: name -> list of ``[start, end]``."""
        return {n: [list(sp) for sp in spans] for n, spans in self.cues.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: :meth:`values`, plus ``cues`` (:meth:`cue_lists`) when there are any."""
        out: dict[str, Any] = self.values()
        if self.cues:
            out["cues"] = self.cue_lists()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Attributes":
        """The inverse of :meth:`to_dict`; raises ``ValueError`` naming an unknown key or value."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown attribute {unknown[0]!r} (known: {', '.join(ATTRIBUTE_NAMES)}, cues)")
        values = {k: v for k, v in data.items() if k != "cues"}
        cues = {str(n): tuple((int(s), int(e)) for s, e in spans) for n, spans in (data.get("cues") or {}).items()}
        return cls(**values, cues=cues)


@dataclass(frozen=True, slots=True)
class Document:
    """A note: its id (file name without ``.txt``) and its text as stored."""

    id: str
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise TypeError(f"a note id must be a str, got {type(self.id).__name__}")
        if not isinstance(self.text, str):
            raise TypeError(f"note {self.id!r}: its text must be a str, got {type(self.text).__name__}")


@dataclass(frozen=True, slots=True, order=True)
class Mention:
    """A disorder mention: ``spans`` are sorted, non-overlapping ``(start, end)`` pairs, end exclusive."""

    doc_id: str
    spans: tuple[Span, ...]
    cui: str = CUI_LESS
    type: str = DISORDER
    attributes: Attributes | None = field(default=None, compare=False)
    name: str | None = field(default=None, compare=False)  # the concept's preferred name (None: unknown, CUI-less)

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
        """The mention's words: its spans' text joined by ``joiner``, or by nothing where a span ends before a
        hyphen and the next starts inside a word: the stem of a suspended prefix ("hyper- or hypothyroidism":
        "hyper" + "thyroidism"), so that the normalizer and the gazetteer see the word the mention names. A span
        that starts inside a word for another reason ("CNS or epiduraltumor") is joined as any other."""
        if len(self.spans) == 1:
            s, e = self.spans[0]
            return doc_text[s:e]
        parts = []
        end = 0
        for k, (s, e) in enumerate(self.spans):
            if k and not (doc_text[end:end + 1] == "-" and doc_text[s - 1:s].isalpha() and doc_text[s:s + 1].isalpha()):
                parts.append(joiner)
            parts.append(doc_text[s:e])
            end = e
        return "".join(parts)

    def with_cui(self, cui: str, name: str | None = None) -> "Mention":
        """The same mention with ``cui`` and its concept's preferred ``name`` (None: unknown)."""
        # The spans were checked when this mention was made: copy the fields without checking them again
        # (a normalizer gives every mention of a run its CUI this way).
        return self._copy(cui, self.attributes, name)

    def with_attributes(self, attributes: Attributes | None) -> "Mention":
        """The same mention carrying ``attributes``."""
        return self._copy(self.cui, attributes, self.name)

    def _copy(self, cui: str, attributes: Attributes | None, name: str | None) -> "Mention":
        new = object.__new__(Mention)
        for field_name, value in (("doc_id", self.doc_id), ("spans", self.spans), ("cui", cui), ("type", self.type),
                                  ("attributes", attributes), ("name", name)):
            object.__setattr__(new, field_name, value)
        return new

    def overlaps(self, other: "Mention") -> bool:
        """True when the two mentions share at least one character."""
        return any(s1 < e2 and s2 < e1 for s1, e1 in self.spans for s2, e2 in other.spans)


def span_past_end(doc: Document, mention: Mention) -> str | None:
    """The one check that a mention lies within its note: ``None`` when it does, else the reason in one line
    (the span that ends past the note's end), for the caller to raise with its file and line."""
    size = len(doc.text)
    if mention.end <= size:
        return None
    return f"span {mention.spans[-1][0]}-{mention.end} of note {doc.id} ends past the note's end ({size} characters)"


def trimmed(text: str, mention: Mention) -> Mention | None:
    """``mention`` with the whitespace at each span's ends cut off (a gold span taking in its line's closing
    ``\r``), ``mention`` itself when it has none, None when a span is whitespace only."""
    spans = []
    for s, e in mention.spans:
        piece = text[s:e]
        stripped = piece.strip()
        if not stripped:
            return None
        s += len(piece) - len(piece.lstrip())
        spans.append((s, s + len(stripped)))
    return mention if tuple(spans) == mention.spans else replace(mention, spans=tuple(spans))


# Not frozen (treat it as immutable: it hashes by its fields): a frozen dataclass's __init__ costs three times as
# much, and a note makes one Token per word.
@dataclass(slots=True, unsafe_hash=True)
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
