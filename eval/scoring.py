"""Task 1a and 1b scores, as defined by the ShARe/CLEF eHealth 2013 overview.

Mentions are compared note by note; counts are summed over notes (micro average).

Task 1a (finding mentions):

- **strict**: a predicted mention is a true positive when its span set is
  identical to a gold mention's, one-to-one (a span set predicted twice but
  annotated once gives one true positive and one false positive);
- **relaxed**: the true positives are the size of a maximum one-to-one matching
  between gold and predicted mentions that share at least one character
  (``scipy.sparse.csgraph.maximum_bipartite_matching``), so two predictions
  overlapping one gold mention give one true positive and one false positive;
- **discontiguous**: strict matching of the discontiguous gold mentions against the discontiguous predicted
  ones alone (a mention of two or more spans), so a system's precision there counts only the discontiguous
  mentions it predicted;
- precision = TP / predicted, recall = TP / gold, F1 = their harmonic mean
  (= 2 TP / (gold + predicted)); each is 0 where its denominator is 0.
  FP = predicted - TP, FN = gold - TP.

Task 1b (normalization):

- among the strict matches (Dtp), Ncorrect counts those whose CUI equals the
  gold CUI; ``CUI-less`` is a label like any other; when one span set occurs more
  than once, equal CUIs are paired first;
- strict accuracy = Ncorrect / number of gold mentions;
  relaxed accuracy = Ncorrect / Dtp (0 when Dtp is 0).

A note present in gold but missing from the predictions counts as predicting
nothing. A predicted note absent from gold is an error unless ``allow_extra``,
which leaves it out of the scores. Mention types are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from share_ner.document import Mention
from share_ner.eval.counting import (
    COLUMNS,
    CUI_CORRECT,
    DISC_GOLD,
    DISC_PRED,
    DISC_TP,
    N_GOLD,
    N_PRED,
    RELAXED_TP,
    STRICT_TP,
    CorpusCounts,
    count_corpus,
    ratio,
)


@dataclass(frozen=True)
class PRF:
    """Precision, recall and F1 with the counts they come from."""

    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int

    @classmethod
    def from_counts(cls, tp: int, n_gold: int, n_pred: int) -> "PRF":
        p = float(ratio(tp, n_pred))
        r = float(ratio(tp, n_gold))
        f = float(ratio(2 * tp, n_gold + n_pred))
        return cls(p, r, f, int(tp), int(n_pred - tp), int(n_gold - tp))

    def to_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "tp": self.tp, "fp": self.fp, "fn": self.fn}


@dataclass(frozen=True)
class Scores:
    """Task 1a (``strict``, ``relaxed``, ``discontiguous``) and Task 1b (``accuracy_*``) scores of one system."""

    strict: PRF
    relaxed: PRF
    discontiguous: PRF
    accuracy_strict: float
    accuracy_relaxed: float
    n_gold: int
    n_pred: int
    n_correct_cui: int
    counts: CorpusCounts = field(compare=False, repr=False)

    @classmethod
    def from_counts(cls, counts: CorpusCounts) -> "Scores":
        t = counts.totals
        n_gold, n_pred = int(t[N_GOLD]), int(t[N_PRED])
        return cls(
            strict=PRF.from_counts(int(t[STRICT_TP]), n_gold, n_pred),
            relaxed=PRF.from_counts(int(t[RELAXED_TP]), n_gold, n_pred),
            discontiguous=PRF.from_counts(int(t[DISC_TP]), int(t[DISC_GOLD]), int(t[DISC_PRED])),
            accuracy_strict=float(ratio(t[CUI_CORRECT], n_gold)),
            accuracy_relaxed=float(ratio(t[CUI_CORRECT], t[STRICT_TP])),
            n_gold=n_gold,
            n_pred=n_pred,
            n_correct_cui=int(t[CUI_CORRECT]),
            counts=counts,
        )

    @property
    def missing(self) -> tuple[str, ...]:
        """Gold notes with no predictions at all (scored as predicting nothing)."""
        return self.counts.missing

    @property
    def extra(self) -> tuple[str, ...]:
        """Predicted notes without gold, left out of the scores."""
        return self.counts.extra

    def by_doc(self) -> dict[str, dict[str, int]]:
        """Per-note counts (:data:`~share_ner.eval.counting.COLUMNS`): ``n_gold``, ``n_pred``, ``strict_tp``,
        ``relaxed_tp``, ``cui_correct`` and the discontiguous ``disc_gold``, ``disc_pred``, ``disc_tp``."""
        return {
            d: dict(zip(COLUMNS, (int(v) for v in row))) for d, row in zip(self.counts.doc_ids, self.counts.table)
        }

    def to_dict(self, by_doc: bool = False) -> dict[str, Any]:
        """The ``--json`` object; ``by_doc`` adds ``"by_doc": {note id: counts}``."""
        out: dict[str, Any] = {
            "strict": self.strict.to_dict(),
            "relaxed": self.relaxed.to_dict(),
            "discontiguous": self.discontiguous.to_dict(),
            "accuracy": {"strict": self.accuracy_strict, "relaxed": self.accuracy_relaxed},
            "n_gold": self.n_gold,
            "n_pred": self.n_pred,
        }
        if by_doc:
            out["by_doc"] = self.by_doc()
        return out


def score(
    gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]], *, allow_extra: bool = False
) -> Scores:
    """Score predicted mentions against gold, both keyed by note id (see the module docstring)."""
    return Scores.from_counts(count_corpus(gold, pred, allow_extra=allow_extra))


__all__ = ["PRF", "Scores", "score"]
