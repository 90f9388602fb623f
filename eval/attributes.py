"""ShARe/CLEF 2014 Task 2a scores: each attribute's accuracy, and P/R/F1 of its values other than the default.

Only gold mentions that carry attributes count, each paired one-to-one with the predicted mention of the same
span set (strict match; on gold spans, as ``share-ner attributes`` runs, every gold mention is paired). A
predicted mention without attributes counts as having the defaults. Over the ``n`` pairs:

- ``accuracy`` of an attribute: the pairs whose values agree, over ``n``; ``overall``: all attributes' agreements
  over ``9 n`` (the mean of the nine accuracies);
- ``precision``: pairs where the prediction is not the default and equals gold, over pairs where the prediction
  is not the default; ``recall``: the same agreements over pairs where gold is not the default; ``f1`` their
  harmonic mean.

Every figure is a ratio of sums of per-note counts, so approximate randomization recomputes it from the
``(notes, columns)`` table as for Task 1 (:mod:`share_ner.eval.significance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from share_ner.document import ATTRIBUTE_NAMES, ATTRIBUTE_VALUES, BODY_LOCATION_NULL, Attributes, Mention
from share_ner.eval.counting import ratio
from share_ner.eval.matching import strict_pairs
from share_ner.eval.significance import Comparison, approximate_randomization

# per attribute: agreements, agreements on a value other than the default, gold not default, predicted not default
_PER = ("correct", "tp", "gold_pos", "pred_pos")
COLUMNS: tuple[str, ...] = ("n",) + tuple(f"{a}.{c}" for a in ATTRIBUTE_NAMES for c in _PER)
_COL = {c: i for i, c in enumerate(COLUMNS)}
_DEFAULT = Attributes()


def _default(name: str) -> str:
    return BODY_LOCATION_NULL if name == "body_location" else ATTRIBUTE_VALUES[name][0]


def has_attributes(gold: Mapping[str, Sequence[Mention]]) -> bool:
    """True when any gold mention carries attributes."""
    return any(m.attributes is not None for ms in gold.values() for m in ms)


def count_document(gold: Sequence[Mention], pred: Sequence[Mention]) -> np.ndarray:
    """One note's row of :data:`COLUMNS`."""
    row = np.zeros(len(COLUMNS), dtype=np.int64)
    for i, j in strict_pairs(gold, pred):  # the strict pairing Task 1 and the error report use
        g = gold[i]
        if g.attributes is None:
            continue
        pa = pred[j].attributes or _DEFAULT
        row[0] += 1
        for name in ATTRIBUTE_NAMES:
            gv, pv, d = getattr(g.attributes, name), getattr(pa, name), _default(name)
            base = _COL[f"{name}.correct"]
            row[base] += gv == pv
            row[base + 1] += gv == pv and gv != d
            row[base + 2] += gv != d
            row[base + 3] += pv != d
    return row


def count_corpus(gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]]) -> np.ndarray:
    """Rows for every gold note, in sorted note order (a note missing from ``pred`` predicts nothing)."""
    ids = sorted(gold)
    table = np.array([count_document(gold[d], pred.get(d, ())) for d in ids], dtype=np.int64)
    return table.reshape(len(ids), len(COLUMNS))


def _col(t: np.ndarray, name: str) -> np.ndarray:
    return t[..., _COL[name]]


def _metric_functions() -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {}
    for a in ATTRIBUTE_NAMES:
        fns[f"attributes.{a}.accuracy"] = lambda t, a=a: ratio(_col(t, f"{a}.correct"), _col(t, "n"))
        fns[f"attributes.{a}.precision"] = lambda t, a=a: ratio(_col(t, f"{a}.tp"), _col(t, f"{a}.pred_pos"))
        fns[f"attributes.{a}.recall"] = lambda t, a=a: ratio(_col(t, f"{a}.tp"), _col(t, f"{a}.gold_pos"))
        fns[f"attributes.{a}.f1"] = lambda t, a=a: ratio(
            2 * _col(t, f"{a}.tp"), _col(t, f"{a}.gold_pos") + _col(t, f"{a}.pred_pos"))
    fns["attributes.overall.accuracy"] = lambda t: ratio(
        sum(_col(t, f"{a}.correct") for a in ATTRIBUTE_NAMES), len(ATTRIBUTE_NAMES) * _col(t, "n"))
    return fns


# metric name ("attributes.negation.f1") -> function of summed counts (last axis COLUMNS)
METRICS: dict[str, Callable[[np.ndarray], np.ndarray]] = _metric_functions()


@dataclass(frozen=True)
class AttributeScores:
    """Task 2a scores of one system from its count table."""

    table: np.ndarray

    @property
    def totals(self) -> np.ndarray:
        return self.table.sum(axis=0)

    def metric(self, name: str) -> float:
        return float(METRICS[name](self.totals))

    def to_dict(self) -> dict[str, dict[str, float | int]]:
        """``{"negation": {"accuracy": ..., "precision": ..., "recall": ..., "f1": ..., counts}, ...,
        "overall": {"accuracy": ..., "n": ...}}``."""
        t = self.totals
        out: dict[str, dict[str, float | int]] = {}
        for a in ATTRIBUTE_NAMES:
            out[a] = {k: self.metric(f"attributes.{a}.{k}") for k in ("accuracy", "precision", "recall", "f1")}
            out[a].update({c: int(_col(t, f"{a}.{c}")) for c in _PER})
        out["overall"] = {"accuracy": self.metric("attributes.overall.accuracy"), "n": int(_col(t, "n"))}
        return out


def score_attributes(gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]]
                     ) -> AttributeScores:
    return AttributeScores(count_corpus(gold, pred))


def compare_attributes(gold: Mapping[str, Sequence[Mention]], pred_a: Mapping[str, Sequence[Mention]],
                       pred_b: Mapping[str, Sequence[Mention]], *, n_shuffles: int = 10_000,
                       seed: int | None = 0) -> dict[str, Comparison]:
    """System ``a`` against ``b`` on every metric of :data:`METRICS`, by approximate randomization over notes."""
    return approximate_randomization(count_corpus(gold, pred_a), count_corpus(gold, pred_b), n_shuffles=n_shuffles,
                                     seed=seed, functions=METRICS)


def format_attribute_scores(scores: AttributeScores) -> str:
    """The Task 2a table: per attribute accuracy, then P/R/F1 of its values other than the default."""
    d = scores.to_dict()
    lines = [f"{'Task 2a':<14}{'accuracy':>9}{'P':>8}{'R':>8}{'F1':>8}{'gold':>7}{'pred':>7}"]
    for a in ATTRIBUTE_NAMES:
        r = d[a]
        lines.append(f"{a:<14}{r['accuracy']:>9.3f}{r['precision']:>8.3f}{r['recall']:>8.3f}{r['f1']:>8.3f}"
                     f"{r['gold_pos']:>7d}{r['pred_pos']:>7d}")
    lines.append(f"{'overall':<14}{d['overall']['accuracy']:>9.3f}   over {d['overall']['n']} gold mentions "
                 "matched by span (gold/pred: values other than the default)")
    return "\n".join(lines)
