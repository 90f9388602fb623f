"""Ranking several systems as the shared task's tables do.

Systems are ordered by strict F1 (then relaxed F1, then name); each is tested
against the one immediately below it by approximate randomization, and a
metric is marked significant when the upper system is better with p < ``alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from share_ner.document import Mention
from share_ner.eval.counting import count_corpus
from share_ner.eval.scoring import Scores
from share_ner.eval.significance import Comparison, approximate_randomization

ALPHA = 0.01


@dataclass(frozen=True)
class RankedSystem:
    """One row: the system's scores and its comparison with the next system down (none for the last)."""

    name: str
    scores: Scores
    vs_next: dict[str, Comparison] = field(default_factory=dict)
    alpha: float = ALPHA

    def better_than_next(self, metric: str) -> bool:
        c = self.vs_next.get(metric)
        return c is not None and c.diff > 0 and c.p_value < self.alpha

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, **self.scores.to_dict()}
        out["vs_next"] = {m: c.to_dict() for m, c in self.vs_next.items()}
        return out


def rank_systems(
    gold: Mapping[str, Sequence[Mention]],
    systems: Mapping[str, Mapping[str, Sequence[Mention]]],
    *,
    n_shuffles: int = 10_000,
    seed: int | None = 0,
    allow_extra: bool = False,
    alpha: float = ALPHA,
) -> list[RankedSystem]:
    """Score every system (name -> predictions) and test each against the next one down."""
    scored = [
        (name, Scores.from_counts(count_corpus(gold, pred, allow_extra=allow_extra)))
        for name, pred in systems.items()
    ]
    scored.sort(key=lambda ns: (-ns[1].strict.f1, -ns[1].relaxed.f1, ns[0]))
    ranked = []
    for k, (name, sc) in enumerate(scored):
        vs = {}
        if k + 1 < len(scored):
            below = scored[k + 1][1]
            vs = approximate_randomization(sc.counts.table, below.counts.table, n_shuffles=n_shuffles, seed=seed)
        ranked.append(RankedSystem(name, sc, vs, alpha))
    return ranked
