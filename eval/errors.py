"""Error analysis: every gold and predicted mention of a note put into one class.

Mentions are paired in two steps, with the matching of :mod:`share_ner.eval.matching`:

1. the strict matching (identical span sets, equal CUIs paired first): a pair is
   **correct** when the CUIs agree, else ``wrong_cui`` (two different CUIs),
   ``cui_for_cui_less`` (gold CUI-less, a CUI predicted) or ``cui_less_for_cui``
   (gold has a CUI, CUI-less predicted);
2. among the mentions left, a maximum matching of overlapping mentions: a pair
   of two contiguous mentions is a ``boundary`` error (detail ``too_long``,
   ``too_short`` or ``shifted``); a pair where either is discontiguous is a
   ``discontiguous`` error (detail in :data:`DISCONTIGUOUS_DETAILS`).

A gold mention still unpaired is a ``false_negative``, a predicted one a
``false_positive``. So the strict true positives are the correct pairs plus the
CUI errors, and strict FP = predicted − strict TP = boundary + discontiguous +
false positives (FN likewise). The relaxed score's own matching is a maximum
over all overlaps at once; where an identical pair blocks a chain of overlaps,
it can pair one more than step 2 does (:attr:`ErrorSummary.relaxed_gap` counts these).

Everything here is pure: mentions and note texts in, dataclasses out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from share_ner.document import CUI_LESS, Mention
from share_ner.eval.counting import count_corpus
from share_ner.eval.matching import relaxed_pairs, strict_pairs

ERROR_KINDS = (
    "false_positive",
    "false_negative",
    "boundary",
    "discontiguous",
    "wrong_cui",
    "cui_for_cui_less",
    "cui_less_for_cui",
)
KIND_LABELS = {
    "false_positive": "false positive",
    "false_negative": "false negative",
    "boundary": "boundary (overlap, not exact)",
    "discontiguous": "discontiguous mistake",
    "wrong_cui": "wrong CUI",
    "cui_for_cui_less": "CUI given, gold CUI-less",
    "cui_less_for_cui": "CUI-less given, gold has a CUI",
}
BOUNDARY_DETAILS = ("too_long", "too_short", "shifted")
DISCONTIGUOUS_DETAILS = (
    "fragment_missing",  # the prediction has some of the gold fragments and nothing else
    "extra_fragment",  # the prediction has every gold fragment and more
    "wrong_pairing",  # they share a fragment, and each has one the other lacks
    "fragments_joined",  # gold is discontiguous, the prediction one span
    "split",  # gold is one span, the prediction discontiguous
    "fragment_boundary",  # both discontiguous, no fragment in common
)
# Which mention's words stand for an error in the list of frequent wrong strings.
_STRING_SIDE = {"false_positive": "pred"}


@dataclass(frozen=True)
class MentionError:
    """One error of a note: ``gold`` and ``pred`` index the note's sorted mentions (None for the side absent)."""

    kind: str
    doc_id: str
    gold: int | None
    pred: int | None
    detail: str = ""


@dataclass(frozen=True)
class NoteErrors:
    """One note's mentions (sorted), its correct strict pairs and its errors."""

    doc_id: str
    gold: tuple[Mention, ...]
    pred: tuple[Mention, ...]
    correct: tuple[tuple[int, int], ...]
    errors: tuple[MentionError, ...]
    relaxed_gap: int = 0

    @property
    def has_errors(self) -> bool:
        return bool(self.errors)

    def kinds(self) -> Counter[str]:
        return Counter(e.kind for e in self.errors)


def _cui_kind(gold_cui: str, pred_cui: str) -> str | None:
    if gold_cui == pred_cui:
        return None
    if gold_cui == CUI_LESS:
        return "cui_for_cui_less"
    if pred_cui == CUI_LESS:
        return "cui_less_for_cui"
    return "wrong_cui"


def _boundary_detail(g: Mention, p: Mention) -> str:
    (gs, ge), (ps, pe) = g.spans[0], p.spans[0]
    if ps <= gs and pe >= ge:
        return "too_long"
    if ps >= gs and pe <= ge:
        return "too_short"
    return "shifted"


def _discontiguous_detail(g: Mention, p: Mention) -> str:
    gset, pset = set(g.spans), set(p.spans)
    if pset < gset:
        return "fragment_missing"
    if gset < pset:
        return "extra_fragment"
    if gset & pset:
        return "wrong_pairing"
    if not p.is_discontiguous:
        return "fragments_joined"
    if not g.is_discontiguous:
        return "split"
    return "fragment_boundary"


def overlap_kind(g: Mention, p: Mention) -> tuple[str, str]:
    """(kind, detail) of an overlapping, non-identical gold/predicted pair."""
    if g.is_discontiguous or p.is_discontiguous:
        return "discontiguous", _discontiguous_detail(g, p)
    return "boundary", _boundary_detail(g, p)


def classify_note(doc_id: str, gold: Sequence[Mention], pred: Sequence[Mention]) -> NoteErrors:
    """Pair one note's mentions (see the module docstring) and classify every one of them."""
    gold_s, pred_s = tuple(sorted(gold)), tuple(sorted(pred))
    correct: list[tuple[int, int]] = []
    errors: list[MentionError] = []
    for i, j in strict_pairs(gold_s, pred_s):
        kind = _cui_kind(gold_s[i].cui, pred_s[j].cui)
        if kind is None:
            correct.append((i, j))
        else:
            errors.append(MentionError(kind, doc_id, i, j))
    paired = {("g", i) for i, _ in correct} | {("p", j) for _, j in correct}
    paired |= {("g", e.gold) for e in errors} | {("p", e.pred) for e in errors}
    rest_g = [i for i in range(len(gold_s)) if ("g", i) not in paired]
    rest_p = [j for j in range(len(pred_s)) if ("p", j) not in paired]
    overlapping = relaxed_pairs([gold_s[i] for i in rest_g], [pred_s[j] for j in rest_p])
    for a, b in overlapping:
        i, j = rest_g[a], rest_p[b]
        kind, detail = overlap_kind(gold_s[i], pred_s[j])
        errors.append(MentionError(kind, doc_id, i, j, detail))
    used_g = {rest_g[a] for a, _ in overlapping}
    used_p = {rest_p[b] for _, b in overlapping}
    errors += [MentionError("false_negative", doc_id, i, None) for i in rest_g if i not in used_g]
    errors += [MentionError("false_positive", doc_id, None, j) for j in rest_p if j not in used_p]
    errors.sort(key=lambda e: (min(_start(gold_s, e.gold), _start(pred_s, e.pred)), ERROR_KINDS.index(e.kind)))
    n_pairs = len(correct) + len(errors) - sum(e.kind in ("false_positive", "false_negative") for e in errors)
    gap = len(relaxed_pairs(gold_s, pred_s)) - n_pairs
    return NoteErrors(doc_id, gold_s, pred_s, tuple(correct), tuple(errors), gap)


def _start(mentions: Sequence[Mention], index: int | None) -> int:
    return mentions[index].start if index is not None else 1 << 62


@dataclass(frozen=True)
class ErrorSummary:
    """Errors of a whole run: each note's :class:`NoteErrors`, in note-id order, and the totals by kind."""

    notes: tuple[NoteErrors, ...]

    def by_kind(self) -> dict[str, int]:
        """Every kind of :data:`ERROR_KINDS`, with 0 for a kind that never occurs."""
        total: Counter[str] = Counter()
        for n in self.notes:
            total.update(n.kinds())
        return {k: total[k] for k in ERROR_KINDS}

    def by_detail(self, kind: str) -> dict[str, int]:
        """How many errors of ``kind`` have each detail (boundary and discontiguous errors have one)."""
        return dict(Counter(e.detail for n in self.notes for e in n.errors if e.kind == kind).most_common())

    @property
    def n_correct(self) -> int:
        return sum(len(n.correct) for n in self.notes)

    @property
    def relaxed_gap(self) -> int:
        return sum(n.relaxed_gap for n in self.notes)

    def of_kind(self, kind: str) -> list[tuple[NoteErrors, MentionError]]:
        return [(n, e) for n in self.notes for e in n.errors if e.kind == kind]


def classify_corpus(
    gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]], *, allow_extra: bool = False
) -> ErrorSummary:
    """Classify every gold note's mentions; notes are those :func:`~share_ner.eval.counting.count_corpus` scores
    (a gold note missing from ``pred`` predicts nothing; extra predicted notes are an error unless ``allow_extra``)."""
    # the scorer decides which notes count (and rejects extra ones); counting empty notes costs nothing
    doc_ids = count_corpus(dict.fromkeys(gold, ()), dict.fromkeys(pred, ()), allow_extra=allow_extra).doc_ids
    return ErrorSummary(tuple(classify_note(d, gold[d], pred.get(d, ())) for d in doc_ids))


_SPACE = re.compile(r"\s+")


def mention_string(mention: Mention, text: str) -> str:
    """A mention's words as a key for counting: lower case, runs of white space as one space,
    fragments joined by `` … ``."""
    return _SPACE.sub(" ", mention.text(text, " … ")).strip().lower()


def frequent_strings(
    summary: ErrorSummary, texts: Mapping[str, str], *, top: int = 20, kinds: Iterable[str] = ERROR_KINDS
) -> dict[str, list[tuple[str, int]]]:
    """The ``top`` most frequent strings of each kind's errors, as (string, count), most frequent first.

    A false positive counts the predicted words, every other kind the gold words. Notes absent from ``texts``
    are skipped.
    """
    out: dict[str, list[tuple[str, int]]] = {}
    for kind in kinds:
        side = _STRING_SIDE.get(kind, "gold")
        c: Counter[str] = Counter()
        for note, e in summary.of_kind(kind):
            text = texts.get(note.doc_id)
            if text is None:
                continue
            m = note.pred[e.pred] if side == "pred" else note.gold[e.gold]  # type: ignore[index]
            c[mention_string(m, text)] += 1
        out[kind] = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return out


__all__ = [
    "BOUNDARY_DETAILS",
    "DISCONTIGUOUS_DETAILS",
    "ERROR_KINDS",
    "KIND_LABELS",
    "ErrorSummary",
    "MentionError",
    "NoteErrors",
    "classify_corpus",
    "classify_note",
    "frequent_strings",
    "mention_string",
    "overlap_kind",
]
