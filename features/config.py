"""Which feature groups the tagger uses.

Every group can be switched off so that its gain can be measured:
``FeatureConfig(clusters=False)`` or ``FeatureConfig.from_dict({"clusters": False})``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from share_ner.errors import ShareNerError
from share_ner.settings import checked_settings

GROUPS = (
    "word",
    "affix",
    "shape",
    "window",
    "conjunctions",
    "section",
    "position",
    "lexicon",
    "abbreviation",
    "clusters",
)


@dataclass(frozen=True, slots=True)
class FeatureConfig:
    """On/off switches of the feature groups, and the size of the context window.

    ``word``: the token and its lowercase form. ``affix``: prefixes and suffixes of 2-4
    characters. ``shape``: full and short shape, digit/punctuation/case flags, length.
    ``window``: lowercase form and short shape of the tokens up to ``window_size`` away.
    ``conjunctions``: word bigrams and the short-shape trigram around the token.
    ``section``: the section header the sentence falls under. ``position``: first token of
    a line, after a list marker, index in the sentence. ``lexicon``: longest match against
    the disorder lexicon (B/I and semantic type). ``abbreviation``: in-note definitions and
    the clinical abbreviation list. ``clusters``: word cluster ids at each granularity.
    ``coordination_lists``: with the tagger's coordination marks, the list features of
    ``share_ner.features.lists`` (off: no gain on chia/dev nor on cross-validation, docs/encoding.md).
    """

    word: bool = True
    affix: bool = True
    shape: bool = True
    window: bool = True
    conjunctions: bool = True
    section: bool = True
    position: bool = True
    lexicon: bool = True
    abbreviation: bool = True
    clusters: bool = True
    window_size: int = 2
    # In a sentence without lower-case letters ("LEFT ATRIAL SIZE IS ENLARGED.") case says nothing: leave out the
    # features that carry it (the token as written, its shapes and case flags, its neighbours' shapes).
    caseless_capitals: bool = False
    # With the tagger's coordination marks: a far conjunct's place in its list and the list's shared head
    # (share_ner.features.lists), which the window cannot see from there.
    coordination_lists: bool = False

    def __post_init__(self) -> None:
        for name in GROUPS:
            if not isinstance(getattr(self, name), bool):
                raise ShareNerError(f"feature setting {name!r} must be true or false, got {getattr(self, name)!r}")
        for name in ("caseless_capitals", "coordination_lists"):
            if not isinstance(getattr(self, name), bool):
                raise ShareNerError(f"feature setting {name!r} must be true or false, got {getattr(self, name)!r}")
        if isinstance(self.window_size, bool) or not isinstance(self.window_size, int) or not 0 <= self.window_size <= 5:
            raise ShareNerError(f"feature setting 'window_size' must be an integer from 0 to 5, got {self.window_size!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "FeatureConfig":
        """Build a config from a mapping (e.g. JSON); unknown keys are an error that lists the allowed ones."""
        return cls(**checked_settings(cls, data, "feature"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def without(self, *groups: str) -> "FeatureConfig":
        """A copy with the named groups switched off (for ablation runs)."""
        unknown = [g for g in groups if g not in GROUPS]
        if unknown:
            raise ShareNerError(f"unknown feature group(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(GROUPS)}")
        data = self.to_dict()
        data.update({g: False for g in groups})
        return FeatureConfig(**data)
