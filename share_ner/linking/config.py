"""The normalizer's settings (:class:`NormalizerConfig`), its step names, and one step's :class:`Decision`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping, Sequence

from share_ner.errors import ShareNerError
from share_ner.settings import checked_settings

FUZZ_SCORERS = ("ratio", "token_sort_ratio", "token_set_ratio", "WRatio", "QRatio", "partial_ratio")


# The steps in the order they run (the module docstring); "partial" covers steps 4 and 6.
STEPS = ("gazetteer", "normalized", "abbreviation", "partial", "rewrite", "tfidf", "threshold")


@dataclass(frozen=True)
class NormalizerConfig:
    """Settings of the normalizer; ``from_dict`` rejects unknown keys."""

    use_gazetteer: bool = True
    use_normalized: bool = True
    cuiless_min_count: int = 2  # a training string's CUI-less label beats an exact lexicon name from this many labels
    note_consistency: bool = True  # an ambiguous training string takes the label the rest of its note uses
    note_context: bool = False  # ... or the label it had in the most similar training note (kept by fit)
    use_rewrites: bool = True  # normalized match after one word swap learned from names of one concept
    rewrite_min_count: int = 1  # a word swap must have been seen in this many concepts
    phrase_rewrites: bool = True  # the rewrite step also swaps words for other words (not only one for one)
    use_abbreviations: bool = True
    use_partial: bool = True
    use_tfidf: bool = True
    use_threshold: bool = True
    defined_first: bool = True  # a short form defined in the note is expanded before the gazetteer is tried
    partial_min_words: int = 2  # shortest suffix the partial step tries
    top_k: int = 10  # tf-idf candidates per query and index
    fuzz_weight: float = 0.3  # score = (1 - w) * cosine + w * rapidfuzz score / 100
    use_ranker: bool = False  # re-rank tf-idf candidates by a logistic regression fitted on training notes
    context_bonus: float = 0.07  # added to a tf-idf candidate already decided by steps 1-6 in the same note
    fuzz_scorer: str = "token_sort_ratio"  # a rapidfuzz.fuzz function: ratio, token_sort_ratio, token_set_ratio, WRatio
    composite_needs_coordination: bool = True  # tf-idf gives a composite id (D1+D2) only to "X and Y", "X, Y"
    coverage_weight: float = 0.25  # tf-idf score = (1 - c) * score + c * share of the query's words in the name
    default_threshold: float = 0.37  # without training data to fit one; chosen on lexicon-only dev sets (docs)
    thesaurus: bool = True  # the other names of an HPO term named like the mention join its tf-idf queries
    thesaurus_weight: float = 0.9  # ... and their candidates' scores are multiplied by this
    negation_guard: bool = True  # tf-idf passes over a candidate with a negation word ("non") the query lacks
    dense: bool = False  # step 7 also compares sentence embeddings (share_ner.linking.dense; the optional `dense` extra)
    dense_weight: float = 0.35  # ... score = (1 - d) * score + d * embedding cosine
    dense_top_k: int = 10  # ... and the names nearest by embedding join the candidates
    folds: int = 5  # cross-validation folds for fitting the threshold
    seed: int = 13

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "NormalizerConfig":
        config = cls(**checked_settings(cls, data, "normalizer"))
        if config.fuzz_scorer not in FUZZ_SCORERS:
            raise ShareNerError(f"unknown fuzz_scorer {config.fuzz_scorer!r}; allowed: {', '.join(FUZZ_SCORERS)}")
        return config

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def up_to(self, step: str) -> "NormalizerConfig":
        """This config with the steps after ``step`` (one of :data:`STEPS`) switched off (for ablations)."""
        if step not in STEPS:
            raise ShareNerError(f"unknown normalizer step {step!r}; expected one of {', '.join(STEPS)}")
        return self.with_steps(STEPS[: STEPS.index(step) + 1])

    def with_steps(self, steps: Sequence[str]) -> "NormalizerConfig":
        """This config with exactly ``steps`` (names from :data:`STEPS`) switched on, the others off."""
        on = set(steps)
        if on - set(STEPS):
            raise ShareNerError(f"unknown normalizer step(s) {', '.join(sorted(on - set(STEPS)))}; "
                                f"expected {', '.join(STEPS)}")
        return replace(self, use_gazetteer="gazetteer" in on, use_normalized="normalized" in on,
                       use_rewrites="rewrite" in on,
                       use_abbreviations="abbreviation" in on, use_partial="partial" in on, use_tfidf="tfidf" in on,
                       use_threshold="threshold" in on)


@dataclass
class Decision:
    """How one mention got its label."""

    cui: str
    method: str  # gazetteer, normalized, abbreviation, partial, rewrite, tfidf, threshold, none, empty
    score: float = 1.0
    matched: str = ""  # the string that matched
    candidates: list[dict[str, Any]] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    features: list[tuple[str, list[float]]] = field(default_factory=list, repr=False)  # tf-idf candidates
    alternatives: tuple[str, ...] = ()  # other labels the matched training string carried
    # every label of the matched training string or lexicon name (an HPO term citing two CUIs, a string annotated
    # with two ids), whichever the tie-break chose: --explain lists the others as `other_labels`
    name_labels: tuple[str, ...] = ()
    context: dict[str, float] = field(default_factory=dict)  # label → cosine of its nearest training note
