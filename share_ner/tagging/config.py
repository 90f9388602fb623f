"""Training settings of the CRF tagger: a frozen dataclass saved beside the model.

:class:`TaggerConfig` holds everything that decides what a trained model is:
the tag scheme, the training algorithm and its settings, the feature groups
(``share_ner.features.FeatureConfig``) and how the training-set gazetteer is built. It is read from
and written to JSON; unknown keys are rejected with the allowed list, so a typo
in ``--config`` never silently trains a different model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from share_ner.errors import ShareNerError
from share_ner.features.config import FeatureConfig
from share_ner.settings import checked_settings, load_settings

SCHEMES = ("biohd", "bio")
PAIRINGS = ("learned", "rules")
# CRFsuite training algorithms offered, and their iteration counts when the config gives none.
# Passive-aggressive (type I) was chosen over L-BFGS by mean strict F1 on the dev splits of chia,
# ncbi_disease and bc5cdr (see docs/tagger.md).
ALGORITHMS = ("pa", "lbfgs")
DEFAULT_ITERATIONS = {"pa": 30, "lbfgs": 150}


@dataclass(frozen=True)
class TaggerConfig:
    """Settings of one training run.

    Attributes:
        scheme: ``"biohd"`` (B/I/O/DB/DI/HB/HI, discontiguous and shared-head
            mentions) or ``"bio"`` (discontiguous mentions flattened to their hull).
        algorithm: CRFsuite's training algorithm: ``"pa"`` (passive-aggressive,
            type I, averaged weights) or ``"lbfgs"`` (L-BFGS with elastic-net
            regularization ``c1``/``c2``).
        c1: L1 regularization coefficient of L-BFGS (not used by ``"pa"``).
        c2: L2 regularization coefficient of L-BFGS (not used by ``"pa"``).
        max_iterations: iteration cap; ``None`` = the algorithm's default
            (:data:`DEFAULT_ITERATIONS`: 30 for ``"pa"``, 150 for ``"lbfgs"``).
        min_feature_freq: features seen fewer times than this in training are dropped.
        all_possible_transitions: let CRFsuite weight tag transitions never seen in training.
        train_gazetteer: add the training mentions' strings as a term-matcher
            source (semantic type ``"train"``).
        gazetteer_folds: build the training-set gazetteer feature of each
            training note from the other folds only (jackknifing), so the CRF
            learns how far to trust a gazetteer hit on unseen text; 1 = no folds.
        gazetteer_reliability: label a training term ``train-weak`` when fewer than half
            of its occurrences in the (other folds') training notes are gold mentions.
        coordination: mark coordinations whose distributed reading is a known term
            ("renal or liver impairment" → "renal impairment"), the source of most
            discontiguous mentions (needs a lexicon or the training gazetteer).
        pairing: how the biohd scheme's D/H fragments become mentions: ``"learned"`` (fragment tags that hold
            overlapping mentions, joined by a classifier trained on the training mentions,
            ``share_ner.tagging.pairing``) or ``"rules"`` (the decoding rules of ``share_ner.tagging.scheme``).
        expand_coordinations: after tagging, complete a coordination next to a tagged
            mention: with learned pairing when the classifier accepts the conjunct's distributed reading, with
            the rules when it is a known term (biohd scheme only).
        learned_coordinations: with learned pairing, complete coordinations with the pairing's coordination
            classifier instead of the known-term rule (off: the rule scored higher on chia/dev, docs/tagger.md).
        list_walk: with learned pairing, train the pairing's list classifier and let it add the far conjuncts of a
            list whose near conjunct the pairing joined with a head (``share_ner.tagging.pairing.extend_lists``; off:
            its gain on chia/dev sits in one note and is within the noise on cross-validation, docs/encoding.md).
        balance_brackets: after tagging, repair mentions whose round brackets do not
            pair up (close with the next token or cut before the unpaired bracket).
        evidence: after tagging, check each note's mentions against the note and the lexicon
            (``share_ner.tagging.evidence``): whole disease names, lone generic heads, acronyms
            written in lower case, ambiguous short forms, short forms the note defines.
        section_titles: after tagging, drop a mention that is exactly the title of a section header naming a
            standard note section ("ALLERGIES:", ``share_ner.tagging.sections``); a title names what its section
            holds, not a disorder of the patient.
        oversample_discontiguous: give CRFsuite each training sentence with D/H tags this many times (1: once,
            as every other sentence; more did not help on chia/dev, docs/tagger.md).
        features: ``share_ner.features.FeatureConfig`` (feature groups on/off).
    """

    scheme: str = "biohd"
    algorithm: str = "pa"
    c1: float = 0.05
    c2: float = 0.05
    max_iterations: int | None = None
    min_feature_freq: int = 1
    all_possible_transitions: bool = True
    train_gazetteer: bool = True
    gazetteer_folds: int = 5
    gazetteer_reliability: bool = False
    coordination: bool = True
    pairing: str = "learned"
    expand_coordinations: bool = True
    learned_coordinations: bool = False
    list_walk: bool = False
    balance_brackets: bool = True
    evidence: bool = False
    section_titles: bool = True
    oversample_discontiguous: int = 1
    features: FeatureConfig = field(default_factory=FeatureConfig)

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ShareNerError(f"tagger config: scheme {self.scheme!r} is not one of {', '.join(SCHEMES)}")
        if self.pairing not in PAIRINGS:
            raise ShareNerError(f"tagger config: pairing {self.pairing!r} is not one of {', '.join(PAIRINGS)}")
        if self.algorithm not in ALGORITHMS:
            raise ShareNerError(f"tagger config: algorithm {self.algorithm!r} is not one of {', '.join(ALGORITHMS)}")
        for name in ("c1", "c2"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ShareNerError(f"tagger config: {name} must be a number >= 0, got {value!r}")
        for name, low in (("max_iterations", 1), ("min_feature_freq", 0), ("gazetteer_folds", 1),
                          ("oversample_discontiguous", 1)):
            value = getattr(self, name)
            if name == "max_iterations" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ShareNerError(f"tagger config: {name} must be an integer >= {low}, got {value!r}")
        for name in ("all_possible_transitions", "train_gazetteer", "gazetteer_reliability", "coordination",
                     "expand_coordinations", "learned_coordinations", "list_walk", "balance_brackets", "evidence",
                     "section_titles"):
            if not isinstance(getattr(self, name), bool):
                raise ShareNerError(f"tagger config: {name} must be true or false, got {getattr(self, name)!r}")

    @property
    def iterations(self) -> int:
        """The iteration cap training uses: ``max_iterations`` or the algorithm's default."""
        return self.max_iterations if self.max_iterations is not None else DEFAULT_ITERATIONS[self.algorithm]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TaggerConfig":
        """Build a config from a mapping; unknown keys are an error naming the allowed ones."""
        values = checked_settings(cls, data, "tagger")
        if "features" in values:
            feats = values["features"]
            if not isinstance(feats, FeatureConfig):
                try:
                    values["features"] = FeatureConfig.from_dict(feats)
                except ShareNerError as exc:
                    raise ShareNerError(f"tagger config: features: {exc}") from None
                except (TypeError, ValueError) as exc:
                    raise ShareNerError(f"tagger config: features: {exc}") from None
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if f.name == "features" else value
        return out

    def replace(self, **changes: Any) -> "TaggerConfig":
        return replace(self, **changes)


def load_config(path: str | Path) -> TaggerConfig:
    """Read a :class:`TaggerConfig` from a JSON file (``--config``)."""
    return load_settings(TaggerConfig, path, "config")
