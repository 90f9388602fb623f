"""Approximate randomization over notes, vectorised with numpy.

For two systems scored on the same gold notes, each shuffle swaps the two
systems' outputs for each note with probability 0.5 and recomputes every
metric from the summed per-note counts. ``c`` counts the shuffles whose absolute
difference is at least the observed one; the p-value is ``(c + 1) / (N + 1)``
(Noreen 1989; the test the ShARe/CLEF 2013 organizers used). Identical systems
give p = 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from share_ner.document import Mention
from share_ner.errors import ShareNerError
from share_ner.eval.counting import METRICS, count_corpus

METRIC_NAMES = tuple(METRICS)
# float error when a shuffle reproduces the observed sums exactly must not hide a tie
_TIE = 1e-12
# rows of the swap mask held at once: bounds memory to about 16 MB of float64
_CELLS_PER_CHUNK = 2_000_000


@dataclass(frozen=True)
class Comparison:
    """System ``a`` against system ``b`` on one metric."""

    a: float
    b: float
    diff: float
    p_value: float

    def to_dict(self) -> dict[str, float]:
        return {"a": self.a, "b": self.b, "diff": self.diff, "p_value": self.p_value}


def approximate_randomization(
    table_a: np.ndarray,
    table_b: np.ndarray,
    metrics: Iterable[str] = METRIC_NAMES,
    *,
    n_shuffles: int = 10_000,
    seed: int | None = 0,
    functions: Mapping[str, Callable[[np.ndarray], np.ndarray]] = METRICS,
) -> dict[str, Comparison]:
    """Compare two ``(notes, counts)`` tables (rows for the same notes, columns ``COLUMNS``).

    All metrics are tested on the same shuffles; ``seed`` fixes them. ``functions``: metric name -> function of
    summed counts, for tables of other columns (Task 2a's, :mod:`share_ner.eval.attributes`).
    """
    if functions is not METRICS and metrics is METRIC_NAMES:
        metrics = tuple(functions)
    if n_shuffles < 1:
        raise ShareNerError(f"number of shuffles must be at least 1, got {n_shuffles}")
    metrics = tuple(metrics)
    unknown = [m for m in metrics if m not in functions]
    if unknown:
        raise ShareNerError(f"unknown metric(s) {', '.join(unknown)}; expected {', '.join(functions)}")
    a = np.asarray(table_a, dtype=float)
    b = np.asarray(table_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"count tables differ in shape: {a.shape} vs {b.shape}")
    sum_a, sum_b = a.sum(axis=0), b.sum(axis=0)
    observed = {m: (float(functions[m](sum_a)), float(functions[m](sum_b))) for m in metrics}
    target = {m: abs(va - vb) - _TIE for m, (va, vb) in observed.items()}
    at_least = dict.fromkeys(metrics, 0)
    delta = b - a
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_shuffles, _CELLS_PER_CHUNK // max(1, len(a))))
    done = 0
    while done < n_shuffles:
        n = min(chunk, n_shuffles - done)
        swap = (rng.random((n, len(a))) < 0.5).astype(float)
        moved = swap @ delta  # what each shuffle moves from b's sums into a's
        shuffled_a, shuffled_b = sum_a + moved, sum_b - moved
        for m in metrics:
            d = np.abs(functions[m](shuffled_a) - functions[m](shuffled_b))
            at_least[m] += int(np.count_nonzero(d >= target[m]))
        done += n
    return {
        m: Comparison(va, vb, va - vb, (at_least[m] + 1) / (n_shuffles + 1)) for m, (va, vb) in observed.items()
    }


def compare(
    gold: Mapping[str, Sequence[Mention]],
    pred_a: Mapping[str, Sequence[Mention]],
    pred_b: Mapping[str, Sequence[Mention]],
    *,
    n_shuffles: int = 10_000,
    seed: int | None = 0,
    allow_extra: bool = False,
) -> dict[str, Comparison]:
    """Significance of the differences between two systems on every metric (keys: ``METRIC_NAMES``)."""
    counts_a = count_corpus(gold, pred_a, allow_extra=allow_extra)
    counts_b = count_corpus(gold, pred_b, allow_extra=allow_extra)
    return approximate_randomization(counts_a.table, counts_b.table, n_shuffles=n_shuffles, seed=seed)
