"""Plain-text reports: one system's scores, per-note counts, a two-system comparison, a ranking."""

from __future__ import annotations

from typing import Mapping, Sequence

from share_ner.eval.counting import COLUMNS
from share_ner.eval.ranking import RankedSystem
from share_ner.eval.scoring import PRF, Scores
from share_ner.eval.significance import Comparison

METRIC_LABELS = {
    "strict_f1": "strict F1",
    "relaxed_f1": "relaxed F1",
    "discontiguous_f1": "discontiguous F1",
    "strict_accuracy": "strict accuracy",
    "relaxed_accuracy": "relaxed accuracy",
}


def _prf_row(label: str, prf: PRF) -> str:
    return f"{label:<10}{prf.precision:>8.3f}{prf.recall:>8.3f}{prf.f1:>8.3f}{prf.tp:>8d}{prf.fp:>8d}{prf.fn:>8d}"


def format_scores(scores: Scores, title: str | None = None) -> str:
    """The Task 1a table (strict and relaxed P/R/F1 with counts) and the Task 1b accuracies."""
    lines = [title] if title else []
    lines.append(f"{'Task 1a':<10}{'P':>8}{'R':>8}{'F1':>8}{'TP':>8}{'FP':>8}{'FN':>8}")
    lines.append(_prf_row("strict", scores.strict))
    lines.append(_prf_row("relaxed", scores.relaxed))
    lines.append(_prf_row("disc.", scores.discontiguous))
    lines.append(f"(disc.: strict, discontiguous mentions alone: {scores.discontiguous.tp + scores.discontiguous.fn} "
                 f"gold, {scores.discontiguous.tp + scores.discontiguous.fp} predicted)")
    lines.append("")
    lines.append(f"{'Task 1b':<10}{'accuracy':>10}")
    lines.append(
        f"{'strict':<10}{scores.accuracy_strict:>10.3f}   "
        f"{scores.n_correct_cui} correct CUIs / {scores.n_gold} gold mentions"
    )
    lines.append(
        f"{'relaxed':<10}{scores.accuracy_relaxed:>10.3f}   "
        f"{scores.n_correct_cui} correct CUIs / {scores.strict.tp} strict matches"
    )
    lines.append("")
    lines.append(
        f"{len(scores.counts.doc_ids)} notes, {scores.n_gold} gold mentions, {scores.n_pred} predicted mentions"
    )
    return "\n".join(lines)


def format_by_doc(scores: Scores) -> str:
    """One row of counts per note."""
    width = max([len("note")] + [len(d) for d in scores.counts.doc_ids])
    lines = [f"{'note':<{width}}" + "".join(f"{c:>12}" for c in COLUMNS)]
    for doc_id, row in zip(scores.counts.doc_ids, scores.counts.table):
        lines.append(f"{doc_id:<{width}}" + "".join(f"{int(v):>12d}" for v in row))
    return "\n".join(lines)


def format_comparison(comparisons: Mapping[str, Comparison], name_a: str, name_b: str, n_shuffles: int) -> str:
    """Each metric for system A and B, their difference and its approximate-randomization p-value."""
    width = max([18] + [len(METRIC_LABELS.get(m, m)) + 1 for m in comparisons])
    lines = [
        f"Approximate randomization over notes, {n_shuffles} shuffles: A = {name_a}, B = {name_b}",
        f"{'metric':<{width}}{'A':>8}{'B':>8}{'A - B':>9}{'p':>9}",
    ]
    for metric, c in comparisons.items():
        lines.append(
            f"{METRIC_LABELS.get(metric, metric):<{width}}{c.a:>8.3f}{c.b:>8.3f}{c.diff:>+9.3f}{c.p_value:>9.4f}"
        )
    return "\n".join(lines)


def format_ranking(ranked: Sequence[RankedSystem], n_shuffles: int) -> str:
    """A table like Tables 3 and 4 of the ShARe/CLEF 2013 overview, ordered by strict F1."""
    width = max([len("System")] + [len(r.name) for r in ranked])

    def cell(value: float, marked: bool) -> str:
        return f"{value:>7.3f}{'*' if marked else ' '}"

    head = f"{'':<{width}}  {'Strict':<24}{'Relaxed':<24}{'Disc.':<8}{'Accuracy':<16}"
    sub = f"{'System':<{width}}  " + "".join(f"{h:>7} " for h in ("P", "R", "F1", "P", "R", "F1", "F1", "strict",
                                                                    "relaxed"))
    lines = [head.rstrip(), sub.rstrip()]
    for r in ranked:
        s = r.scores
        lines.append(
            (
                f"{r.name:<{width}}  "
                + cell(s.strict.precision, False)
                + cell(s.strict.recall, False)
                + cell(s.strict.f1, r.better_than_next("strict_f1"))
                + cell(s.relaxed.precision, False)
                + cell(s.relaxed.recall, False)
                + cell(s.relaxed.f1, r.better_than_next("relaxed_f1"))
                + cell(s.discontiguous.f1, r.better_than_next("discontiguous_f1"))
                + cell(s.accuracy_strict, r.better_than_next("strict_accuracy"))
                + cell(s.accuracy_relaxed, r.better_than_next("relaxed_accuracy"))
            ).rstrip()
        )
    alpha = ranked[0].alpha if ranked else 0.01
    lines.append("")
    lines.append("Disc.: strict F1 on the discontiguous mentions alone.")
    lines.append(
        f"* the system is significantly better than the one immediately below on that metric "
        f"(approximate randomization over notes, {n_shuffles} shuffles, p < {alpha:g})."
    )
    return "\n".join(lines)
