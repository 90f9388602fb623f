"""Per-note counts, and the metrics computed from summed counts.

Every metric of Task 1a/1b is a ratio of sums of per-note counts, so the
significance test can recompute it for thousands of shuffles at once from a
``(notes, columns)`` integer array. The columns are :data:`COLUMNS`; the last three count the discontiguous
mentions alone (gold, predicted, strict matches among them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np

from share_ner.document import Mention
from share_ner.errors import ShareNerError, some_of
from share_ner.eval.matching import cui_matches, relaxed_matches, strict_matches

COLUMNS = ("n_gold", "n_pred", "strict_tp", "relaxed_tp", "cui_correct", "disc_gold", "disc_pred", "disc_tp")
N_GOLD, N_PRED, STRICT_TP, RELAXED_TP, CUI_CORRECT, DISC_GOLD, DISC_PRED, DISC_TP = range(len(COLUMNS))


class DocCounts(NamedTuple):
    """The counts of one note."""

    n_gold: int
    n_pred: int
    strict_tp: int
    relaxed_tp: int
    cui_correct: int
    disc_gold: int
    disc_pred: int
    disc_tp: int


def count_document(gold: Sequence[Mention], pred: Sequence[Mention]) -> DocCounts:
    """Match one note's predicted mentions to its gold mentions and count.

    The discontiguous counts compare the discontiguous gold mentions with the discontiguous predicted ones (a
    contiguous prediction can never match a discontiguous gold mention strictly).
    """
    disc_gold = [m for m in gold if m.is_discontiguous]
    disc_pred = [m for m in pred if m.is_discontiguous]
    return DocCounts(
        len(gold), len(pred), strict_matches(gold, pred), relaxed_matches(gold, pred), cui_matches(gold, pred),
        len(disc_gold), len(disc_pred), strict_matches(disc_gold, disc_pred),
    )


@dataclass(frozen=True, eq=False)
class CorpusCounts:
    """Counts for every gold note (rows in ``doc_ids`` order, columns :data:`COLUMNS`)."""

    doc_ids: tuple[str, ...]
    table: np.ndarray
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = field(default=())

    @property
    def totals(self) -> np.ndarray:
        return self.table.sum(axis=0)


def count_corpus(
    gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]], *, allow_extra: bool = False
) -> CorpusCounts:
    """Count every gold note; a gold note missing from ``pred`` predicts nothing.

    A predicted note that gold does not have is an error, unless ``allow_extra``
    (then it is left out of the scores and listed in ``extra``).
    """
    extra = tuple(sorted(d for d in pred if d not in gold))
    if extra and not allow_extra:
        raise ShareNerError(
            f"{len(extra)} predicted note(s) have no gold annotations: {some_of(extra)} "
            "(allow extra notes to leave them out of the scores)"
        )
    doc_ids = tuple(sorted(gold))
    missing = tuple(d for d in doc_ids if d not in pred)
    table = np.array([count_document(gold[d], pred.get(d, ())) for d in doc_ids], dtype=np.int64)
    return CorpusCounts(doc_ids, table.reshape(len(doc_ids), len(COLUMNS)), missing, extra)


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, 0 where ``den`` is 0."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


def precision(totals: np.ndarray, tp: int) -> np.ndarray:
    return ratio(totals[..., tp], totals[..., N_PRED])


def recall(totals: np.ndarray, tp: int) -> np.ndarray:
    return ratio(totals[..., tp], totals[..., N_GOLD])


def f1(totals: np.ndarray, tp: int) -> np.ndarray:
    # the harmonic mean of P = tp/pred and R = tp/gold is 2 tp / (gold + pred), 0 when tp is 0
    return ratio(2 * totals[..., tp], totals[..., N_GOLD] + totals[..., N_PRED])


# metric name -> function of summed counts (any leading shape, last axis COLUMNS)
METRICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "strict_f1": lambda t: f1(t, STRICT_TP),
    "relaxed_f1": lambda t: f1(t, RELAXED_TP),
    "discontiguous_f1": lambda t: ratio(2 * t[..., DISC_TP], t[..., DISC_GOLD] + t[..., DISC_PRED]),
    "strict_accuracy": lambda t: ratio(t[..., CUI_CORRECT], t[..., N_GOLD]),
    "relaxed_accuracy": lambda t: ratio(t[..., CUI_CORRECT], t[..., STRICT_TP]),
}
